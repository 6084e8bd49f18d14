#!/usr/bin/env bash
# On the GPU, from the repository root with kjudge built (build/kjudge): which device figures
# another program's kernels move. QuantVLA evaluations alone and next to
# build/tests/e2e/kj_busy_gpu (an empty kernel every `period` µs), by graph replay (the default),
# --no-graph and --warm, and vector_add_large (memory-bound) alone and busy; then, alone, with
# CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue). nvidia-smi samples the P-state and clocks
# every 100 ms throughout. Results: <outdir>/*.json, a summary table on stdout.
# Usage: bash bench/gpu_idle/neighbour_methods.sh [period_us] [outdir]
set -u
period=${1:-1000}
out=${2:-${TMPDIR:-/tmp}/neighbour_methods}
mkdir -p "$out"
busy=build/tests/e2e/kj_busy_gpu
quantvla=(problems/level2/quantvla_selective_layout_fusion.py examples/quantvla/fused.cu)
vadd=(problems/level1/vector_add_large.py examples/vector_add_large/naive.py)
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw \
  --format=csv -lms 100 > "$out/nvml.csv" 2>&1 &
smi=$!
holder=
stop_holder() {
  [ -n "$holder" ] && { kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; }
  holder=
}
trap 'stop_holder; kill $smi 2>/dev/null || true' EXIT
start_holder() {
  "$busy" "$period" 300 > "$out/holder.txt" 2>&1 &
  holder=$!
  for _ in $(seq 1 200); do grep -q ready "$out/holder.txt" 2>/dev/null && break; sleep 0.05; done
}
evaluate() {  # name, then kjudge eval arguments
  local name=$1
  shift
  KJUDGE_POOL=0 build/kjudge eval "$@" --json "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "$name: exit $?"
}
build/kjudge eval "${quantvla[@]}" --no-pool > /dev/null 2>&1  # the build cache, warm
for variant in graph no-graph warm; do
  extra=()
  [ "$variant" = graph ] || extra=(--"$variant")
  evaluate "$variant-alone" "${quantvla[@]}" "${extra[@]}"
  start_holder
  evaluate "$variant-busy" "${quantvla[@]}" "${extra[@]}"
  stop_holder
done
evaluate vadd-alone "${vadd[@]}"
start_holder
evaluate vadd-busy "${vadd[@]}"
stop_holder
CUDA_DEVICE_MAX_CONNECTIONS=1 evaluate one-queue-alone "${quantvla[@]}"
python3 bench/summarize_evals.py "$out"/*.json
