#!/usr/bin/env bash
# One device call for issue 3 and the remaining issue-2 checks: build, GPU tests (without the
# bundled-problem sweep, which has a call of its own: KJ_SWEEP=1), the QuantVLA evaluations (wall
# clock) and `kjudge profile` of QuantVLA with ncu's raw report kept as a fixture.
# Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
if [ "${KJ_SWEEP:-0}" = 1 ]; then
  (cd build && timeout 560 ctest -R NoBundledProblem --output-on-failure -V --timeout 540) > $L/sweep.log 2>&1
  echo "sweep rc=$?"; grep -E "Failure|error|Passed|Skipped|FAILED|OK \]" $L/sweep.log | tail -30
  exit 0
fi
eval_run fused_cold $P examples/quantvla/fused.cu
eval_run fused_warm1 $P examples/quantvla/fused.cu
eval_run fused_warm2 $P examples/quantvla/fused.cu
eval_run fused_warm3 $P examples/quantvla/fused.cu -v
eval_run fused_warm4 $P examples/quantvla/fused.cu
KJUDGE_NCU_KEEP=$L/ncu_keep timed profile_quantvla build/kjudge profile $P examples/quantvla/fused.cu --json $L/profile_quantvla.json
timed profile_quantvla2 build/kjudge profile $P examples/quantvla/fused.cu --json $L/profile_quantvla2.json
timed eval_profile_naive build/kjudge eval $P examples/quantvla/naive.py --profile --json $L/eval_profile_naive.json
(cd build && timeout 300 ctest -L gpu -E NoBundledProblem --output-on-failure -V --timeout 200) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)" $L/gpu_tests.log | tail -20
cat $L/summary.txt
grep -E "device +(reference|candidate)|wall " $L/fused_warm*.txt | head -30
cat $L/profile_quantvla.txt | head -120
