#!/usr/bin/env bash
# On the GPU: every bundled problem evaluated against itself (the problem's source with
# `ModelNew = Model` appended) and against each bundled Python candidate, with the default timing
# (CUDA graph replay where both sides capture), one line per evaluation: status, and per side the
# device figure's method, median and note. Needs build/kjudge; uses the worker pool. Results
# (JSON and terminal output) under ${OUT:-/tmp/kjudge-out}/logs/bundled/.
set -u
source "$(dirname "$0")/session_lib.sh"
dir=$L/bundled
tmp=$(mktemp -d)
mkdir -p "$dir"
for p in problems/level*/*.py; do
  n=$(basename "$p" .py)
  { cat "$p"; printf '\n\nModelNew = Model\n'; } > "$tmp/self_$n.py"
  timeout 60 build/kjudge eval "$p" "$tmp/self_$n.py" --pool --trials 1 --budget 0.3 \
    --json "$dir/$n.json" > "$dir/$n.txt" 2>&1
  echo "self $n rc=$?"
done
for c in examples/*/*.py; do
  d=$(basename "$(dirname "$c")")
  p=$(ls problems/level*/"$d".py problems/level*/"$d"*.py 2>/dev/null | head -1)
  [ -z "$p" ] && continue  # examples/faulty: no problem of that name
  n=$(basename "$c" .py)
  timeout 120 build/kjudge eval "$p" "$c" --pool --budget 0.5 --json "$dir/cand_${d}_$n.json" \
    > "$dir/cand_${d}_$n.txt" 2>&1
  echo "cand $d/$n rc=$?"
done
pkill -f "kjudge worker-pool" || true
python3 - "$dir"/*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f, "unreadable:", e)
        continue
    t = j.get("timing") or {}
    row = [f.split("/")[-1][:-5], j.get("status")]
    for s in ("reference", "candidate"):
        d = (t.get(s) or {}).get("device") or {}
        m = d.get("median_us")
        row += [s[:3], d.get("method") or "-", m and round(m, 2), d.get("note") or ""]
    print(*row)
PY
rm -rf "$tmp"
