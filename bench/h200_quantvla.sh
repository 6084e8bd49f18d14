#!/usr/bin/env bash
# The QuantVLA native kernel's forms on the H200: correctness on many shapes
# (bench/quantvla_native.py, with do_bench figures), then `kjudge eval` of the shipped kernel and
# of variants made here with sed (32 x 32 or 16 x 64 output tiles for the nominal shape instead of
# 16 x 32) and a repeat of the shipped one. Prints device medians and CUPTI kernel times
# (bench/summarize_evals.py). Builds kjudge first (incremental on a warm machine).
# Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
F=examples/quantvla/fused.cu
V=$L/variants
mkdir -p "$V"
cp $F $V/shipped.cu
CFG='s/^using small_cfg = tile_cfg<16, 32, 128, 4, 4, 8>;/using small_cfg = tile_cfg<'
sed "${CFG}32, 32, 128, 4, 4, 4>;/" $F > $V/tiles32x32.cu
sed "${CFG}16, 64, 128, 4, 4, 4>;/" $F > $V/tiles16x64.cu
for v in tiles32x32 tiles16x64; do cmp -s $F $V/$v.cu && echo "variant $v: sed matched nothing"; done
timed native_check timeout 240 python3 bench/quantvla_native.py --skip-compile --skip-inline \
  --out $L/native_check.json
for v in ${KJ_VARIANTS:-shipped tiles32x32 tiles16x64}; do
  eval_run "eval_$v" $P $V/$v.cu
done
eval_run eval_stress $P $F --shapes stress
eval_run eval_shipped_again $P $F
tail -30 $L/native_check.txt
python3 bench/summarize_evals.py $L/eval_*.json
