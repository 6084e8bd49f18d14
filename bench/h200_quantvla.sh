#!/usr/bin/env bash
# The QuantVLA native kernel's forms on the H200: correctness on many shapes
# (bench/quantvla_native.py, with do_bench figures), then `kjudge eval` of the shipped kernel and
# of variants made here with sed (other output tiles for the nominal shape: KJ_TILES, default
# 32 x 32 and 16 x 64 instead of 16 x 32) and a repeat of the shipped one. Prints device medians
# and CUPTI kernel times (bench/summarize_evals.py). KJ_SKIP_CHECK=1 skips the many-shape check
# and the stress run; KJ_EVAL_ARGS adds options to every evaluation. Builds kjudge first (incremental on a warm machine).
# Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
F=examples/quantvla/fused.cu
V=$L/variants
mkdir -p "$V"
cp $F $V/shipped.cu
# Variants: KJ_TILES lists small_cfg template arguments (BM,BN,BK,TM,TN,KS), one variant each.
CFG='s/^using small_cfg = tile_cfg<16, 32, 128, 4, 4, 8>;/using small_cfg = tile_cfg<'
VARIANTS=shipped
for t in ${KJ_TILES:-32,32,128,4,4,4 16,64,128,4,4,4}; do
  v=tiles_${t//,/_}
  sed "${CFG}${t//,/, }>;/" $F > $V/$v.cu
  cmp -s $F $V/$v.cu && echo "variant $v: sed matched nothing"
  VARIANTS="$VARIANTS $v"
done
[ "${KJ_SKIP_CHECK:-0}" = 1 ] || timed native_check timeout 240 python3 bench/quantvla_native.py \
  --skip-compile --skip-inline --out $L/native_check.json
for v in $VARIANTS; do
  eval_run "eval_$v" $P $V/$v.cu ${KJ_EVAL_ARGS:-}
done
[ "${KJ_SKIP_CHECK:-0}" = 1 ] || eval_run eval_stress $P $F --shapes stress
eval_run eval_shipped_again $P $F ${KJ_EVAL_ARGS:-}
[ -f $L/native_check.txt ] && tail -30 $L/native_check.txt
python3 bench/summarize_evals.py $L/eval_*.json
