#!/usr/bin/env bash
# On the GPU: an A/B of QuantVLA kernel sources by kjudge's own figure. Builds kjudge (incremental
# on a warm machine), then evaluates the bundled QuantVLA problem against every source given, round
# after round in turn (A B C, A B C, ...: drift on the machine hits each alike), each evaluation in
# a fresh worker (--no-pool), and prints each one's device median and CUPTI kernel time, then each
# source's range (bench/summarize_evals.py). The thirty-sixth session's A/Bs in docs/benchmarks.md
# were taken this way. Usage:
#   bash bench/quantvla_ab.sh [rounds] examples/quantvla/fused.cu draft.cu ...
# KJ_EVAL_ARGS adds options to every evaluation (e.g. --no-graph). Logs: $OUT/logs.tar.gz.
set -u
source "$(dirname "$0")/session_lib.sh"
rounds=${1:-3}
shift || true
[ $# -ge 1 ] || { echo "usage: bash bench/quantvla_ab.sh [rounds] source.cu..."; exit 2; }
build_kjudge
P=problems/level2/quantvla_selective_layout_fusion.py
for r in $(seq 1 "$rounds"); do
  i=0
  for src in "$@"; do
    i=$((i + 1))
    eval_run "ab_${i}_$(basename "$src" .cu)_r$r" $P "$src" --no-pool ${KJ_EVAL_ARGS:-}
  done
done
python3 bench/summarize_evals.py $L/ab_*.json | grep -v "start-up" | tee $L/ab.txt
# Each source's candidate device medians over the rounds.
python3 - "$L" "$@" <<'PY'
import glob, json, os, sys
logs, sources = sys.argv[1], sys.argv[2:]
for i, src in enumerate(sources, 1):
    tag = "ab_%d_%s_r" % (i, os.path.splitext(os.path.basename(src))[0])
    med = []
    for f in sorted(glob.glob(os.path.join(logs, tag + "*.json"))):
        d = (((json.load(open(f)).get("timing") or {}).get("candidate") or {}).get("device") or {})
        if d.get("median_us") is not None:
            med.append(d["median_us"])
    s = sorted(med)
    print("%-40s n=%d  median of medians %s  range %s" % (
        src, len(s), "%.2f us" % s[len(s) // 2] if s else "n/a",
        "%.2f-%.2f us" % (s[0], s[-1]) if s else "n/a"))
PY
