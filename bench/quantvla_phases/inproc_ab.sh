#!/usr/bin/env bash
# On the GPU: an in-process A/B of QuantVLA kernel sources (inproc_ab.cu): the first source is
# the baseline (default examples/quantvla/fused.cu), up to three drafts after it; each source is
# built with its entry points renamed (kj_forward_vN) and all are linked into one program, which
# runs KJ_AB_PROCESSES times (default 3, a process each: where a process's buffers lie differs).
# Usage: bash bench/quantvla_phases/inproc_ab.sh <rounds> <sets> [source...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-200}
sets=${2:-8}
shift 2 || shift $#
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=("$root/examples/quantvla/fused.cu")
[ ${#sources[@]} -le 4 ] || { echo "at most four sources"; exit 2; }
out=${TMPDIR:-/tmp}/quantvla_inproc_ab
mkdir -p "$out"
rm -f "$out"/*.o "$out/inproc_ab"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
flags=(-O3 -std=c++17 -arch=sm_$arch -I"$root/include" -I"$here")
labels=()
objects=()
pids=()
for i in "${!sources[@]}"; do
  labels+=("$(basename "${sources[$i]}" .cu)")
  objects+=("$out/v$i.o")
  nvcc "${flags[@]}" -Dkj_forward=kj_forward_v$i -Dkj_workspace_bytes=kj_workspace_bytes_v$i \
    -c -o "$out/v$i.o" "${sources[$i]}" &
  pids+=($!)
done
nvcc "${flags[@]}" -DKJ_AB_N=${#sources[@]} -c -o "$out/main.o" "$here/inproc_ab.cu" &
pids+=($!)
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed build stops here
nvcc -arch=sm_$arch -o "$out/inproc_ab" "$out/main.o" "${objects[@]}"
for p in $(seq 1 "${KJ_AB_PROCESSES:-3}"); do
  echo "== process $p"
  timeout "${KJ_AB_TIMEOUT:-120}" "$out/inproc_ab" "$rounds" "$sets" "${labels[@]}" ||
    echo "process $p: FAILED (exit $?)"
done
