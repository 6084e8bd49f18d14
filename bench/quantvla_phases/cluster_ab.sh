#!/usr/bin/env bash
# On the GPU: the phase harness (run.sh) on examples/quantvla/fused.cu as shipped (column strips
# in clusters of kStripCluster = 16 blocks of 32-row tiles; at the nominal shape on an H200,
# 6 strips of 24 columns, since only 7 clusters of 16 fit one block an SM), on a copy that keeps
# strips of 16 columns (8 clusters of 16: the eighth shares SMs with the others), on a copy that
# takes the fallback, clusters of 8 (two passes at the nominal shape), on a copy that launches the
# strips of 24 with shared memory that allows one block an SM, and on any further kernel
# sources given as arguments (e.g. an earlier fused.cu for an A/B on the same machine).
# Usage: bash bench/quantvla_phases/cluster_ab.sh [samples] [source...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
samples=${1:-300}
shift || true
tmp=${TMPDIR:-/tmp}/quantvla_cluster_ab
mkdir -p "$tmp"
src=$root/examples/quantvla/fused.cu
sed "s/>= (tiles + 2) \/ 3) nt = 3;/>= (tiles + 2) \/ 3) nt = 2;/" "$src" > "$tmp/strips16.cu"
grep -q ">= (tiles + 2) / 3) nt = 2;" "$tmp/strips16.cu" || { echo "cannot keep strips of 16"; exit 1; }
# The fallback as a device without clusters of 16 takes it: the first size skipped.
sed "s/    if (passes > kStripMaxPasses) continue;/    if (passes > kStripMaxPasses || c == 0) continue;/" \
  "$src" > "$tmp/fallback8.cu"
grep -q "kStripMaxPasses || c == 0) continue;" "$tmp/fallback8.cu" ||
  { echo "cannot skip clusters of 16"; exit 1; }
# Strips of 24 launched with the shared memory that allows one block an SM (the query's size):
# 0.07-0.12 us slower launched eagerly (twelfth session); the harness now also replays a graph.
sed "s/^    const long long clusters = (tiles + nt - 1) \/ nt;/    if (nt == 3) cfg.dynamicSmemBytes = exclusive_smem(fn3, device, g_strip_reserve[device][v][1]);\n&/" \
  "$src" > "$tmp/reserve24.cu"
grep -q "if (nt == 3) cfg.dynamicSmemBytes" "$tmp/reserve24.cu" || { echo "cannot reserve"; exit 1; }
KJ_QV_DIVCHECK=${KJ_QV_DIVCHECK:-0} \
  KJ_QV_SOURCES="$src $tmp/strips16.cu $tmp/fallback8.cu $tmp/reserve24.cu $*" \
  bash "$here/run.sh" "$samples"
