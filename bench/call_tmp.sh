#!/usr/bin/env bash
# Session 18 call 9: sample_context.cu with kjudge's flush size (120 MiB) and 256 MiB; kjudge
# --warm by graph replay and --no-graph (is the replay's excess a cold-memory cost?).
set -u
source bench/session_lib.sh
P=problems/level2/quantvla_selective_layout_fusion.py
S=examples/quantvla/fused.cu
nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -Ibench/quantvla_phases -o /tmp/sc bench/quantvla_phases/sample_context.cu $S
timed sc120 /tmp/sc "flush 120 MiB" 300 120; grep -h "graph 8 (a\|eager" $L/sc120.txt | grep -v "host,"
timed sc256 /tmp/sc "flush 256 MiB" 300 256; grep -h "graph 8 (a\|eager" $L/sc256.txt | grep -v "host,"
build_kjudge
for i in 1 2; do eval_run w_g$i $P $S --warm; done
eval_run w_ng1 $P $S --warm --no-graph
python3 bench/summarize_evals.py $L/*.json > $L/evals_summary.txt 2>&1
grep -v start-up $L/evals_summary.txt
