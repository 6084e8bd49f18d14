#!/usr/bin/env bash
# On the GPU: how far apart processes read the QuantVLA native kernel, and what `--processes`
# makes of it. Builds kjudge, then runs $N (default 3) plain evaluations one after another (each
# one process: their medians and intervals side by side) and $M (default 2) evaluations with
# `--processes $K` (default 5), whose pooled medians should agree more closely than the plain
# ones and whose intervals should cover each other. One line per evaluation (status, candidate
# and reference device medians, each process's medians, the device speedup and its interval);
# results under $L/processes (session_lib.sh: packed into $OUT/logs.tar.gz).
set -u
source "$(dirname "$0")/session_lib.sh"
N=${N:-3} M=${M:-2} K=${K:-5}
P=problems/level2/quantvla_selective_layout_fusion.py
C=examples/quantvla/fused.cu
dir=$L/processes
mkdir -p "$dir"
[ -x build/kjudge ] || build_kjudge
line() {  # one result JSON: a line
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing") or {}
def dev(side):
    return (t.get(side) or {}).get("device") or {}
c, ref = dev("candidate"), dev("reference")
sp = next((s for s in t.get("speedups") or [] if s.get("kind") == "device"), {})
fmt = lambda v: "-" if v is None else "%.3f" % v
print("%-14s %-8s cand %s (processes %s, rse %s%%) ref %s  speedup %s [%s, %s] %s" % (
    sys.argv[1].split("/")[-1], r.get("status"), fmt(c.get("median_us")),
    ", ".join(fmt(m) for m in c.get("process_medians_us") or []) or "1",
    fmt(c.get("rse_pct")), fmt(ref.get("median_us")), fmt(sp.get("ratio")),
    fmt(sp.get("ci_lo")), fmt(sp.get("ci_hi")),
    sp.get("resampled", "") + (" + processes" if sp.get("over_processes") else "")))
PY
}
for i in $(seq 1 "$N"); do
  timed plain_$i build/kjudge eval $P $C --json "$dir/plain_$i.json"
  line "$dir/plain_$i.json" | tee -a "$dir/summary.txt"
done
for i in $(seq 1 "$M"); do
  timed pooled_$i build/kjudge eval $P $C --processes "$K" --json "$dir/pooled_$i.json"
  line "$dir/pooled_$i.json" | tee -a "$dir/summary.txt"
done
