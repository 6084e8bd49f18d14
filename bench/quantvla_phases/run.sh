#!/usr/bin/env bash
# On the GPU: builds bench/quantvla_phases against a QuantVLA kernel source (plain, and with the
# phase stamps), runs divcheck (the kernel's division against __fdiv_rn; KJ_QV_DIVCHECK=0 skips
# it), both harness builds twice, graph_paths.cu (what eager launch and graph replay add to a
# device figure) and sample_context.cu (what the work before a sample and kjudge's graph per input
# set add) once a run. Usage: bash bench/quantvla_phases/run.sh [samples].
# KJ_QV_SOURCES lists the kernel sources to compare (default examples/quantvla/fused.cu); each is
# labelled by its file name and the runs alternate between them; each run is limited to
# KJ_QV_TIMEOUT seconds (default 120). KJ_QV_PROBES lists probe sites (qv_probe.cuh: 1 before the
# push, 2 after it, 3 after the wait): each source is also built with a 0.1 us delay at each site,
# labelled <name>+probe<site>. Needs nvcc and a GPU.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${TMPDIR:-/tmp}/quantvla_phases
mkdir -p "$out"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
flags=(-O3 -std=c++17 -arch=sm_$arch -I"$root/include" -I"$here")
read -r -a sources <<< "${KJ_QV_SOURCES:-$root/examples/quantvla/fused.cu}"
labels=()
pids=()
# Binaries of an earlier run are removed first, so a build that fails cannot leave one to run.
rm -f "$out"/*-plain "$out"/*-traced "$out/graph_paths" "$out/sample_context" "$out/divcheck"
read -r -a probes <<< "${KJ_QV_PROBES:-}"
for src in "${sources[@]}"; do
  for probe in "" "${probes[@]}"; do
    label=$(basename "$src" .cu)
    extra=()
    if [ -n "$probe" ]; then
      label="$label+probe$probe"
      extra=(-DKJ_QV_PROBE="$probe")
    fi
    labels+=("$label")
    nvcc "${flags[@]}" "${extra[@]}" -o "$out/$label-plain" "$here/main.cu" "$src" &
    pids+=($!)
    nvcc "${flags[@]}" "${extra[@]}" -DKJ_QUANTVLA_TRACE -o "$out/$label-traced" "$here/main.cu" \
      "$src" &
    pids+=($!)
  done
done
nvcc "${flags[@]}" -o "$out/graph_paths" "$here/graph_paths.cu" "${sources[0]}" &
pids+=($!)
nvcc "${flags[@]}" -o "$out/sample_context" "$here/sample_context.cu" "${sources[0]}" &
pids+=($!)
divcheck=${KJ_QV_DIVCHECK:-1}
if [ "$divcheck" = 1 ]; then
  nvcc -O3 -arch=sm_$arch -o "$out/divcheck" "$here/divcheck.cu" &
  pids+=($!)
fi
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed build stops here
[ "$divcheck" = 1 ] && "$out/divcheck"
# Each run under a time limit (KJ_QV_TIMEOUT seconds, default 120): a draft kernel that hangs or
# fails is reported and the other sources still run.
bounded() {
  local rc=0
  timeout "${KJ_QV_TIMEOUT:-120}" "$@" || rc=$?
  if [ "$rc" = 124 ]; then
    echo "$2: FAILED (timed out)"
  elif [ "$rc" != 0 ]; then
    echo "$2: FAILED (exit $rc)"
  fi
}
for run in 1 2; do
  for label in "${labels[@]}"; do
    bounded "$out/$label-plain" "$label plain, run $run" "${1:-400}"
    bounded "$out/$label-traced" "$label traced, run $run" "${1:-400}"
  done
  bounded "$out/graph_paths" "${labels[0]}, run $run" "${1:-400}"
  bounded "$out/sample_context" "${labels[0]}, run $run" "${1:-400}"
done
