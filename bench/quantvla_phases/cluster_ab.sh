#!/usr/bin/env bash
# On the GPU: the phase harness (run.sh) on examples/quantvla/fused.cu as shipped (column strips
# in clusters of kStripCluster = 16 blocks of 32-row tiles; at the nominal shape on an H200,
# 6 strips of 24 columns, since only 7 clusters of 16 fit one block an SM), on a copy that keeps
# strips of 16 columns (8 clusters of 16: the eighth shares SMs with the others), on a copy that
# takes the fallback, clusters of 8 (two passes at the nominal shape), on a copy that publishes
# the running maxima's 0 with a release cluster arrival (a GPU-scope memory barrier before the
# loads: 0.27-0.28 us slower to the block maximum in the fourteenth session) instead of the
# restricted release fence, and on any further kernel sources given as arguments (e.g. an
# earlier fused.cu for an A/B on the same machine).
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
# The running maxima's 0 published by a release arrival instead of the restricted fence.
sed -e '/fence.release.sync_restrict::shared::cta.cluster/d' \
  -e 's|^  cluster_arrive_relaxed();  // the set-up precedes any push.*|  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");|' \
  "$src" > "$tmp/release_arrival.cu"
grep -q "barrier.cluster.arrive.release.aligned" "$tmp/release_arrival.cu" &&
  ! grep -q "sync_restrict" "$tmp/release_arrival.cu" || { echo "cannot make the release copy"; exit 1; }
KJ_QV_DIVCHECK=${KJ_QV_DIVCHECK:-0} \
  KJ_QV_SOURCES="$src $tmp/strips16.cu $tmp/fallback8.cu $tmp/release_arrival.cu $*" \
  bash "$here/run.sh" "$samples"
