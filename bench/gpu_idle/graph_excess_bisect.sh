#!/usr/bin/env bash
# On the GPU, from the repository root: which part of kjudge's process makes its graph replay of
# the QuantVLA kernel read 0.2-0.5 us above the kernel's own launches, when
# bench/quantvla_phases/sample_context.cu (the same sample, in a bare CUDA program) reads them
# level. Runs sample_context alone and with each of kjudge's extras (NVML read every sample, 4 GiB
# more device memory, cuBLAS loaded), then all of them; each run prints its eager and replayed
# kinds (the lines to compare: "eager, 8 sets" and "graph 8 (a graph a set)", own eager forward
# before, host at once: kjudge's way). With build/kjudge present, one kjudge evaluation of the
# same kernel alone and with --no-graph for the figure to explain.
# Usage: bash bench/gpu_idle/graph_excess_bisect.sh [samples] [outdir]
set -eu
n=${1:-300}
out=${2:-${TMPDIR:-/tmp}/graph_excess}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
bin=$out/sample_context
rm -f "$bin"
nvcc -O3 -std=c++17 -arch=sm_$arch -I"$root/include" -I"$root/bench/quantvla_phases" -o "$bin" \
  "$root/bench/quantvla_phases/sample_context.cu" "$root/examples/quantvla/fused.cu"
pick() { grep -E "eager, 8 sets +own eager forward before +host, at once|graph 8 \(a graph a set\) +own eager forward before +host, at once|NVML read"; }
run() {  # label, then environment assignments
  local label=$1
  shift
  env "$@" "$bin" "$label" "$n" > "$out/$label.txt" 2>&1 || { echo "$label: failed"; tail -3 "$out/$label.txt"; return 0; }
  pick < "$out/$label.txt"
}
run plain
run nvml KJ_SC_NVML=1
run reserve KJ_SC_RESERVE_MIB=4096
run cublas KJ_SC_CUBLAS=1
run all KJ_SC_NVML=1 KJ_SC_RESERVE_MIB=4096 KJ_SC_CUBLAS=1
run plain-again
if [ -x build/kjudge ]; then
  p=(problems/level2/quantvla_selective_layout_fusion.py examples/quantvla/fused.cu)
  KJUDGE_POOL=0 build/kjudge eval "${p[@]}" --json "$out/kjudge.json" > "$out/kjudge.txt" 2>&1 || true
  KJUDGE_POOL=0 build/kjudge eval "${p[@]}" --no-graph --json "$out/kjudge-no-graph.json" \
    > "$out/kjudge-no-graph.txt" 2>&1 || true
  python3 bench/summarize_evals.py "$out"/kjudge*.json | grep -v start-up
fi
