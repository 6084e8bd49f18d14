#!/usr/bin/env bash
# A device call that re-checks main on the GPU: build, every GPU test (the two slow isolation
# tests and the bundled-problem sweep included unless KJ_FAST=1), the QuantVLA evaluations (wall
# clock, repeatability) and `kjudge profile` of QuantVLA. Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
eval_run fused_cold $P examples/quantvla/fused.cu
eval_run fused_warm1 $P examples/quantvla/fused.cu
eval_run fused_warm2 $P examples/quantvla/fused.cu
KJUDGE_NCU_KEEP=$L/ncu_keep timed profile_quantvla build/kjudge profile $P examples/quantvla/fused.cu --json $L/profile_quantvla.json
EXCL="PythonCudaCandidates|InfiniteKernel"
[ "${KJ_FAST:-0}" = 1 ] && EXCL="$EXCL|NoBundledProblem"
(cd build && timeout ${KJ_TEST_S:-420} ctest -L gpu -E "$EXCL" --output-on-failure -V --timeout 330) > $L/gpu_tests.log 2>&1
echo "gpu tests rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Timeout" $L/gpu_tests.log | tail -20
cat $L/summary.txt
grep -E "device +(reference|candidate)|speedup|wall " $L/fused_warm*.txt | head -20
head -60 $L/profile_quantvla.txt
