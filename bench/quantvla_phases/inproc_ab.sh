#!/usr/bin/env bash
# On the GPU: an in-process A/B of QuantVLA kernel sources (inproc_ab.cu): the first source is
# the baseline (default examples/quantvla/fused.cu), up to three drafts after it; each source is
# built with its entry points renamed (kj_forward_vN) and all are linked into one program, which
# runs KJ_AB_PROCESSES times (default 3, a process each: where a process's buffers lie differs).
# KJ_AB_LOAD=library builds each source instead into a shared library with kjudge's nvcc options
# for a native candidate (kjudge/compile/nvcc.cpp) and has the program dlopen them, as kjudge
# loads a candidate: each then runs with its own static CUDA runtime.
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
rm -f "$out"/*.o "$out"/*.so "$out/inproc_ab"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
flags=(-O3 -std=c++17 -arch=sm_$arch -I"$root/include" -I"$here")
library=0
case "${KJ_AB_LOAD:-linked}" in
  linked) ;;
  library) library=1 ;;
  *) echo "KJ_AB_LOAD: linked or library, not ${KJ_AB_LOAD}"; exit 2 ;;
esac
# kjudge's options for a native candidate's library (kjudge/compile/nvcc.cpp).
library_flags=(-O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -Xlinker --no-undefined
  -gencode "arch=compute_$arch,code=sm_$arch" -I"$root/include"
  -include "$root/include/kjudge/detail/launch_probe.h")
labels=()
objects=()
pids=()
for i in "${!sources[@]}"; do
  labels+=("$(basename "${sources[$i]}" .cu)")
  if [ $library = 1 ]; then
    export "KJ_AB_LIB$i=$out/v$i.so"
    nvcc "${library_flags[@]}" -o "$out/v$i.so" "${sources[$i]}" &
  else
    objects+=("$out/v$i.o")
    nvcc "${flags[@]}" -Dkj_forward=kj_forward_v$i -Dkj_workspace_bytes=kj_workspace_bytes_v$i \
      -c -o "$out/v$i.o" "${sources[$i]}" &
  fi
  pids+=($!)
done
main_defines=(-DKJ_AB_N=${#sources[@]})
[ $library = 1 ] && main_defines+=(-DKJ_AB_LIBRARIES)
nvcc "${flags[@]}" "${main_defines[@]}" -c -o "$out/main.o" "$here/inproc_ab.cu" &
pids+=($!)
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed build stops here
nvcc -arch=sm_$arch -o "$out/inproc_ab" "$out/main.o" "${objects[@]}" -ldl
for p in $(seq 1 "${KJ_AB_PROCESSES:-3}"); do
  echo "== process $p"
  timeout "${KJ_AB_TIMEOUT:-120}" "$out/inproc_ab" "$rounds" "$sets" "${labels[@]}" ||
    echo "process $p: FAILED (exit $?)"
done
