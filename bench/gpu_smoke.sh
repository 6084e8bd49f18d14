#!/usr/bin/env bash
# The shortest device call that re-checks a tree on the GPU (about four minutes): build, the
# QuantVLA native kernel, its naive Python candidate and the Triton softmax by default (exec'd
# worker), the comparison's speed (compare_speed.sh), and five GPU evaluation tests of the
# native and Python paths (graph replay, the reference's graph check, host sync, settings kept
# to the candidate). Logs: $OUT/logs.tar.gz; the last lines printed are a summary.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
eval_run fused $P examples/quantvla/fused.cu
eval_run naive $P examples/quantvla/naive.py
eval_run softmax_triton problems/level1/softmax.py examples/softmax/triton_rowwise.py
bash bench/compare_speed.sh build > "$L/compare_speed.txt" 2>&1; tail -1 "$L/compare_speed.txt"
(cd build && timeout "${KJ_TEST_S:-100}" ctest -R "EvalGpu.(NativeKernelIsCorrect|ReferenceGraphThatDiffers|HostSyncInForwardIsDetected|Tf32Set|SettingsChangedAtImport)" \
   --output-on-failure --timeout 90) > "$L/gpu_tests.log" 2>&1
echo "tests rc=$?"
grep -E "Test +#.*(Passed|Failed|Timeout)|tests passed|tests failed" "$L/gpu_tests.log"
cat "$L/summary.txt"
python3 bench/summarize_evals.py "$L"/*.json
tail -1 "$L/nvidia-smi.txt"
