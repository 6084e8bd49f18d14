#!/usr/bin/env bash
# On the GPU: the phase harness (run.sh) on examples/quantvla/fused.cu as shipped (column strips
# of 16 outputs in clusters of kStripCluster = 16 blocks of 32 x 16 tiles), on a copy that takes
# its fallback, clusters of 8 (the same tiles, two passes at the nominal shape), on a copy in
# clusters of 8 blocks of 64 x 8 tiles (the same outputs per block, one pass), and on any further
# kernel sources given as arguments (e.g. an earlier fused.cu for an A/B on the same machine).
# Usage: bash bench/quantvla_phases/cluster_ab.sh [samples] [source...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
samples=${1:-300}
shift || true
tmp=${TMPDIR:-/tmp}/quantvla_cluster_ab
mkdir -p "$tmp"
src=$root/examples/quantvla/fused.cu
sed "s/kStripCluster = 16;/kStripCluster = 8;/; s/kStripMT = 2, kStripNT = 2;/kStripMT = 4, kStripNT = 1;/" \
  "$src" > "$tmp/cluster8.cu"
[ "$(grep -c "kStripCluster = 8;\|kStripMT = 4, kStripNT = 1;" "$tmp/cluster8.cu")" = 2 ] ||
  { echo "cannot set the cluster size and tile"; exit 1; }
sed "s/kStripCluster = 16;/kStripCluster = 8;/" "$src" > "$tmp/fallback8.cu"
grep -q "kStripCluster = 8;" "$tmp/fallback8.cu" || { echo "cannot set the cluster size"; exit 1; }
KJ_QV_DIVCHECK=${KJ_QV_DIVCHECK:-0} KJ_QV_SOURCES="$src $tmp/fallback8.cu $tmp/cluster8.cu $*" \
  bash "$here/run.sh" "$samples"
