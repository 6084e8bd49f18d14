#!/usr/bin/env bash
# On the GPU, after kjudge's build (build/): builds cost.cu against kjudge's CUPTI library and runs
# it three times in each mode, the modes alternating (one line a run; see cost.cu).
set -eu
cupti=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so' 2>/dev/null | head -1)")
lib=build/lib
nvcc -O2 -std=c++20 -arch=sm_90 -I. -o /tmp/kj_watch_cost bench/gpu_work_watch/cost.cu \
  -Xlinker --start-group $lib/profile/libkjudge_profile_cupti.a $lib/profile/libkjudge_profile.a \
  $lib/core/libkjudge_core.a $lib/cuda/libkjudge_cuda.a -Xlinker --end-group \
  -lfmt -L"$cupti" -Xlinker -rpath="$cupti" -lcupti
for i in 1 2 3; do
  /tmp/kj_watch_cost watch
  /tmp/kj_watch_cost cupti
  /tmp/kj_watch_cost none
done
