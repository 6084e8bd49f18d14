#!/usr/bin/env bash
# On the GPU: placement.cu (where a cold QuantVLA forward's buffers lie, and its device time) for
# each kernel source given (default examples/quantvla/fused.cu), twice each, alternating.
# Usage: bash bench/quantvla_phases/placement.sh [samples] [source...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
samples=${1:-300}
shift || true
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=("$root/examples/quantvla/fused.cu")
out=${TMPDIR:-/tmp}/quantvla_placement
mkdir -p "$out"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
pids=()
for src in "${sources[@]}"; do
  label=$(basename "$src" .cu)
  rm -f "$out/$label"
  nvcc -O3 -std=c++17 -arch=sm_"$arch" -I"$root/include" -I"$here" -o "$out/$label" \
    "$here/placement.cu" "$src" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for run in 1 2; do
  for src in "${sources[@]}"; do
    label=$(basename "$src" .cu)
    timeout 120 "$out/$label" "$label-$run" "$samples" || echo "$label-$run: FAILED ($?)"
  done
done
