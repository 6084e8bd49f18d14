#!/usr/bin/env bash
# On the GPU: the phase harness (run.sh) on examples/quantvla/fused.cu as shipped (clusters of
# kClusterSize = 8 blocks), on a copy with clusters of 16 (beyond the portable size), and on any
# further kernel sources given as arguments (e.g. an earlier fused.cu for an A/B on the same
# machine).
# Usage: bash bench/quantvla_phases/cluster_ab.sh [samples] [source...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
samples=${1:-300}
shift || true
tmp=${TMPDIR:-/tmp}/quantvla_cluster_ab
mkdir -p "$tmp"
src=$root/examples/quantvla/fused.cu
sed "s/kClusterSize = 8;/kClusterSize = 16;/" "$src" > "$tmp/cluster16.cu"
grep -q "kClusterSize = 16;" "$tmp/cluster16.cu" || { echo "cannot set the cluster size"; exit 1; }
KJ_QV_DIVCHECK=${KJ_QV_DIVCHECK:-0} KJ_QV_SOURCES="$src $tmp/cluster16.cu $*" \
  bash "$here/run.sh" "$samples"
