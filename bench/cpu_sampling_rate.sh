#!/usr/bin/env bash
# How many samples a side's timing budget buys, for two kjudge builds side by side (the cost of
# what kjudge does around each sample: rewrites, checks, bookkeeping). On the CPU, QuantVLA's
# naive candidate against its reference with an unreachable noise target, so that the budget
# stops every run; the builds alternate, RUNS times. Usage:
#   bash bench/cpu_sampling_rate.sh <kjudge A> <kjudge B> [RUNS=3] [BUDGET=0.5]
# Prints, per run: build, status, samples per side (host wall), and the sides' medians in us.
set -u
a=${1:?kjudge A}
b=${2:?kjudge B}
runs=${3:-3}
budget=${4:-0.5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for k in "$a" "$b"; do
    "$k" eval problems/level2/quantvla_selective_layout_fusion.py examples/quantvla/naive.py \
      --device cpu --budget "$budget" --target-rse 0.001 --trials 1 --json "$out/r.json" \
      > /dev/null 2>&1
    python3 - "$k" "$out/r.json" <<'EOF'
import json
import sys

r = json.load(open(sys.argv[2]))
t = r.get("timing") or {}
ref, cand = (t.get(s, {}).get("host_wall", {}) for s in ("reference", "candidate"))
print("%-40s %-9s n %5s %5s  median us %7.1f %7.1f" % (
    sys.argv[1][-40:], r["status"], ref.get("n"), cand.get("n"),
    ref.get("median_us") or float("nan"), cand.get("median_us") or float("nan")))
EOF
  done
done
