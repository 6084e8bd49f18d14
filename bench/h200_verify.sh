#!/usr/bin/env bash
# A device call that re-checks main on the GPU: build, the QuantVLA evaluations (wall clock and
# repeatability, without (--no-pool) and with the worker pool), `kjudge roofline --refresh`,
# `kjudge profile` of QuantVLA, then the GPU tests (the bundled-problem sweep included unless KJ_FAST=1; the two
# slow isolation tests only with KJ_ALL=1). Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
eval_run fused_cold $P examples/quantvla/fused.cu --no-pool
eval_run fused_warm1 $P examples/quantvla/fused.cu --no-pool
eval_run fused_warm2 $P examples/quantvla/fused.cu --no-pool
eval_run pool_start $P examples/quantvla/fused.cu --pool
for i in $(seq 120); do grep -q ready $KJUDGE_CACHE_DIR/worker-pool.log 2>/dev/null && break; sleep 0.25; done
cp $KJUDGE_CACHE_DIR/worker-pool.log $L/ 2>/dev/null
for i in 1 2 3; do eval_run pool_$i $P examples/quantvla/fused.cu --pool; done
build/kjudge pool stop --force > $L/pool_stop.txt 2>&1  # not pkill -f, which can match the shell running this
timed roofline build/kjudge roofline --refresh
KJUDGE_NCU_KEEP=$L/ncu_keep timed profile_quantvla build/kjudge profile $P examples/quantvla/fused.cu --json $L/profile_quantvla.json
EXCL="PythonCudaCandidates|InfiniteKernel"
[ "${KJ_ALL:-0}" = 1 ] && EXCL="NOTHING_EXCLUDED"
[ "${KJ_FAST:-0}" = 1 ] && EXCL="$EXCL|NoBundledProblem"
(cd build && timeout ${KJ_TEST_S:-420} ctest -L gpu -E "$EXCL" --output-on-failure -V --timeout 330) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Timeout" $L/gpu_tests.log | tail -20
cat $L/summary.txt
python3 bench/summarize_evals.py $L/fused_*.json $L/pool_*.json
grep -A6 "latency " $L/roofline.txt
head -60 $L/profile_quantvla.txt
