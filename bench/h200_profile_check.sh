#!/usr/bin/env bash
# A device call for the profile work: build, the CUPTI and profile GPU tests, QuantVLA profiled
# with ncu's cache control `all` and `none` (durations against CUPTI's), then the sweep of every
# bundled problem (tests/e2e/profile_gpu_test.cpp). Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
(cd build && timeout 200 ctest -R "CuptiCollector|ProfileGpu.(Every|Quantvla)" --output-on-failure -V --timeout 150) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "tests passed|tests failed|\(Failed\)" $L/gpu_tests.log
KJUDGE_NCU_KEEP=$L/ncu_all timed profile_all build/kjudge profile $P examples/quantvla/fused.cu --json $L/profile_all.json
KJUDGE_NCU_KEEP=$L/ncu_none timed profile_none build/kjudge profile $P examples/quantvla/fused.cu --ncu-cache-control none --json $L/profile_none.json
timed summary build/kjudge profile $P examples/quantvla/naive.py --summary --baseline $L/profile_all.json
python3 - $L <<'PY'
import json, sys
for n in ("profile_all", "profile_none"):
    p = json.load(open(f"{sys.argv[1]}/{n}.json"))["profile"]
    for side in ("reference", "candidate"):
        s = p["sides"][side]
        print(n, side, "cupti", [round(k["duration_ns"]) for k in (s["cupti"] or {}).get("kernels", [])])
        print(n, side, "ncu  ", [round(k["counters"]["duration_ns"]) for k in s["kernels"]])
PY
(cd build && timeout 330 ctest -R NoBundledProblem --output-on-failure -V --timeout 320) > $L/sweep.log 2>&1
echo "sweep rc=$?"; grep -E "Failure|error:|\[  (PASSED|FAILED|SKIPPED)|Trace|problem" $L/sweep.log | head -40
cat $L/summary.txt
