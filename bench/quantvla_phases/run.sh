#!/usr/bin/env bash
# On the GPU: builds bench/quantvla_phases against examples/quantvla/fused.cu (plain, and with
# the phase stamps), runs divcheck (the kernel's division against __fdiv_rn) and both harness
# builds twice. Usage: bash bench/quantvla_phases/run.sh [samples]. Needs nvcc and a GPU.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${TMPDIR:-/tmp}/quantvla_phases
mkdir -p "$out"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
flags=(-O3 -std=c++17 -arch=sm_$arch -I"$root/include" -I"$here")
nvcc "${flags[@]}" -o "$out/plain" "$here/main.cu" "$root/examples/quantvla/fused.cu" &
nvcc "${flags[@]}" -DKJ_QUANTVLA_TRACE -o "$out/traced" "$here/main.cu" \
  "$root/examples/quantvla/fused.cu" &
nvcc -O3 -arch=sm_$arch -o "$out/divcheck" "$here/divcheck.cu" &
wait
"$out/divcheck"
for run in 1 2; do
  "$out/plain" "plain, run $run" "${1:-400}"
  "$out/traced" "traced, run $run" "${1:-400}"
done
