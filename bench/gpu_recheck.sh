#!/usr/bin/env bash
# One device call that re-checks a tree on the GPU when device time is scarce (a single call):
# build, the QuantVLA native kernel by default (exec'd worker, twice; once with KJ_QUICK=1), every bundled problem and
# bundled Python candidate (bundled_evals.sh, through the pool; at most KJ_BUNDLED_S seconds if
# set), then as many GPU tests as fit
# before KJ_DEADLINE_S seconds from the start (default 560; the evaluation tests first, then
# the timing engine's, CUPTI's and the rest; the bundled-problem sweep and the two slow
# isolation tests left out). Logs: $OUT/logs.tar.gz; the last lines printed are a summary.
set -u
source "$(dirname "$0")/session_lib.sh"
start=$(stamp)
left() { python3 -c "import sys,time; print(max(0, int(float(sys.argv[1]) - (time.time() - float(sys.argv[2])))))" "${KJ_DEADLINE_S:-560}" "$start"; }
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
eval_run fused_exec1 $P examples/quantvla/fused.cu
[ "${KJ_QUICK:-0}" = 1 ] || eval_run fused_exec2 $P examples/quantvla/fused.cu
bash bench/compare_speed.sh build > $L/compare_speed.txt 2>&1; tail -1 $L/compare_speed.txt
b=$(left); [ -n "${KJ_BUNDLED_S:-}" ] && [ "$KJ_BUNDLED_S" -lt "$b" ] && b=$KJ_BUNDLED_S
if [ "$b" -ge 20 ]; then  # (timeout 0 would be no limit at all)
  timeout "$b" bash bench/bundled_evals.sh > "$L/bundled_run.txt" 2>&1
  rc=$?
  # This cache's pool, which bundled_evals.sh stops unless it was cut short.
  pool=$(sed -n 's/.*worker-pool: pid \([0-9]*\) ready.*/\1/p' "$KJUDGE_CACHE_DIR/worker-pool.log" 2>/dev/null | tail -1)
  [ -n "$pool" ] && kill "$pool" 2>/dev/null
  echo "bundled rc=$rc ($(grep -c 'rc=0' "$L/bundled_run.txt") of $(grep -c 'rc=' "$L/bundled_run.txt") rc=0)"
  grep -v "rc=0" "$L/bundled_run.txt" | head -20
else
  echo "no time left for the bundled evaluations"
fi
for set in "EvalGpu" "timing_gpu|cuda_|Cupti|GpuWorkWatch|ProfileGpu|RooflineGpu"; do
  s=$(left)
  [ "$s" -lt 20 ] && { echo "no time left for: $set"; continue; }
  (cd build && timeout "$s" ctest -R "$set" -E "PythonCudaCandidates|InfiniteKernel|NoBundledProblem" \
     --output-on-failure --timeout 150) >> $L/gpu_tests.log 2>&1
  echo "tests [$set] rc=$?"
done
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" $L/gpu_tests.log | tail -20
grep -cE "Test +#[0-9]+: .* Passed" $L/gpu_tests.log | sed 's/^/passed tests: /'
cat $L/summary.txt
python3 bench/summarize_evals.py $L/fused_*.json
tail -2 $L/nvidia-smi.txt
