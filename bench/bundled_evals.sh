#!/usr/bin/env bash
# On the GPU: every bundled problem evaluated against itself (the problem's source with
# `ModelNew = Model` appended) and against each bundled Python candidate whose directory names a
# problem (examples/<problem>/*.py; examples/faulty names none, native .cu candidates are left
# out), with the default timing plus the flags in $KJ_EVAL_ARGS (e.g. --no-graph). One line per
# evaluation: status, and per side the device figure's method, median and note; a missing result
# is a line too. Exits 1 when any evaluation failed or was not correct. Needs build/kjudge; uses
# the worker pool, which it stops at the end. Results (JSON, terminal output, summary.txt) go to
# $L/bundled (session_lib.sh: packed into $OUT/logs.tar.gz).
set -u
source "$(dirname "$0")/session_lib.sh"
dir=$L/bundled
tmp=$(mktemp -d)
mkdir -p "$dir"
failed=0
run() {  # name, then kjudge eval arguments
  local name=$1 rc
  shift
  # shellcheck disable=SC2086  # KJ_EVAL_ARGS: flags, split on spaces
  build/kjudge eval "$@" --pool ${KJ_EVAL_ARGS:-} --json "$dir/$name.json" > "$dir/$name.txt" 2>&1
  rc=$?
  echo "$name rc=$rc"
  [ $rc = 0 ] || failed=1
}
for p in problems/level*/*.py; do
  n=$(basename "$p" .py)
  { cat "$p"; printf '\n\nModelNew = Model\n'; } > "$tmp/self_$n.py"
  run "$n" "$p" "$tmp/self_$n.py" --trials 1 --budget 0.3 --timeout 60
done
for c in examples/*/*.py; do
  d=$(basename "$(dirname "$c")")
  p=
  for q in problems/level*/"$d".py problems/level*/"$d"*.py; do
    [ -e "$q" ] && { p=$q; break; }
  done
  [ -z "$p" ] && continue
  run "cand_${d}_$(basename "$c" .py)" "$p" "$c" --budget 0.5 --timeout 120
done
pool=$(sed -n 's/.*worker-pool: pid \([0-9]*\) ready.*/\1/p' "$KJUDGE_CACHE_DIR/worker-pool.log" 2>/dev/null | tail -1)
[ -n "$pool" ] && kill "$pool" 2>/dev/null
python3 - "$dir"/*.txt > "$dir/summary.txt" <<'PY'
import json, os, sys
bad = 0
for txt in sys.argv[1:]:
    name = os.path.basename(txt)[:-4]
    if name == "summary":
        continue
    try:
        j = json.load(open(txt[:-4] + ".json"))
    except Exception as e:
        print(name, "no result:", e)
        bad = 1
        continue
    bad |= j.get("status") != "correct"
    t = j.get("timing") or {}
    row = [name, j.get("status")]
    for s in ("reference", "candidate"):
        d = (t.get(s) or {}).get("device") or {}
        m = d.get("median_us")
        row += [s[:3], d.get("method") or "-", m and round(m, 2), d.get("note") or ""]
    print(*row)
sys.exit(bad)
PY
summary_rc=$?
cat "$dir/summary.txt"
rm -rf "$tmp"
[ $failed = 0 ] && [ $summary_rc = 0 ]
