#!/usr/bin/env bash
# `make demo`: judge the bundled QuantVLA problem. On a GPU, the fast native kernel; without one,
# the plain PyTorch candidate on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
problem=problems/level2/quantvla_selective_layout_fusion.py
if [ -e /proc/driver/nvidia/version ] || [ -e /dev/nvidiactl ]; then
  exec build/kjudge eval "$problem" examples/quantvla/fused.cu "$@"
fi
echo "demo: no NVIDIA driver here, judging the Python candidate on the CPU" >&2
exec build/kjudge eval "$problem" examples/quantvla/naive.py --device cpu "$@"
