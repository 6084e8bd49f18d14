#!/usr/bin/env bash
# On the GPU: bench/gpu_idle/idle_clock.cu alone, next to another process launching an empty
# kernel every millisecond, with a thread of its own doing that, and alone again; NVML's clock
# and power readings every 100 ms alongside. Usage: bash bench/gpu_idle/run.sh [samples] [outdir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-${TMPDIR:-/tmp}/gpu_idle}
mkdir -p "$out"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
bin=$out/idle_clock
rm -f "$bin"
nvcc -O3 -std=c++17 -arch=sm_$arch -o "$bin" "$here/idle_clock.cu"
n=${1:-150}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate \
  --format=csv -lms 100 > "$out/nvml.csv" 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null || true' EXIT
# KJ_IDLE_READ=read: the probe kernels read cold memory first.
rd=${KJ_IDLE_READ:-}
"$bin" measure alone-1 "$n" $rd
"$bin" neighbour 1000 120 > "$out/neighbour.txt" 2>&1 &
nb=$!
for i in $(seq 1 100); do grep -q ready "$out/neighbour.txt" 2>/dev/null && break; sleep 0.05; done
"$bin" measure neighbour "$n" $rd
kill "$nb"; wait "$nb" 2>/dev/null || true
"$bin" measure-thread thread "$n" $rd
"$bin" measure alone-2 "$n" $rd
