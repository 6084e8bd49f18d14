#!/usr/bin/env bash
# On the GPU: what evaluations running side by side on one GPU do to each other's figures, with
# and without kjudge's per-GPU timing lock. N evaluations (default 4) of the QuantVLA native
# kernel start together three ways: one after another (the baseline), side by side each with a
# lock directory of its own (so none waits: what kjudge did before the lock), and side by side
# sharing the lock (they take turns). Exec'd workers (--no-pool), so that all start at once.
# One line per evaluation: reference and candidate device medians, the lock wait and wall clock.
# Needs build/kjudge; results go to $L/turns (session_lib.sh).
set -u
source "$(dirname "$0")/session_lib.sh"
N=${N:-4}
P=problems/level2/quantvla_selective_layout_fusion.py
S=examples/quantvla/fused.cu
dir=$L/turns
mkdir -p "$dir"
one() {  # name, lock dir; the launch time goes to <name>.start (arrival order at the lock)
  date +%s.%N > "$dir/$1.start"
  KJUDGE_LOCK_DIR=$2 build/kjudge eval $P $S --no-pool --json "$dir/$1.json" > "$dir/$1.txt" 2>&1
}
build/kjudge eval $P $S --no-pool > /dev/null 2>&1  # the build cache warm
for i in $(seq 1 "$N"); do one "seq_$i" /tmp; done
for i in $(seq 1 "$N"); do mkdir -p "/tmp/kjlock_$i"; one "apart_$i" "/tmp/kjlock_$i" & done
wait
for i in $(seq 1 "$N"); do one "turns_$i" /tmp & done
wait
python3 - "$dir" "$N" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])


def turn(name):
    """(arrival at the lock, lock taken): seconds since the epoch, from the launch time and the
    worker's phase clock (which starts a few ms after the launch)."""
    r = json.load(open("%s/%s.json" % (d, name)))
    start = float(open("%s/%s.start" % (d, name)).read())
    phase = [p["start_s"] for p in r["worker"]["phases"] if p["name"] == "wait_gpu_lock"]
    arrival = start + phase[0]
    return arrival, arrival + r["worker"].get("gpu_lock_wait_s", 0)


for way in ("seq", "apart", "turns"):
    for i in range(1, n + 1):
        try:
            r = json.load(open("%s/%s_%d.json" % (d, way, i)))
        except Exception as e:
            print("%-8s no result: %s" % ("%s_%d" % (way, i), e))
            continue
        t = r.get("timing") or {}
        med = lambda s: ((t.get(s) or {}).get("device") or {}).get("median_us") or float("nan")
        print("%-8s %-8s ref %6.2f us  cand %5.2f us  lock wait %5.2f s  wall %5.2f s  flags %s" % (
            "%s_%d" % (way, i), r["status"], med("reference"), med("candidate"),
            r["worker"].get("gpu_lock_wait_s", 0), r["wall_s"], [f["code"] for f in r["flags"]]))
try:
    turns = sorted(turn("turns_%d" % i) for i in range(1, n + 1))
    taken = [t for _, t in turns]
    print("turns: in order of arrival at the lock, taken %s s after the first arrival: %s" % (
        ", ".join("%.2f" % (t - turns[0][0]) for t in taken),
        "in order" if taken == sorted(taken) else "NOT in order of arrival"))
except Exception as e:
    print("turns: order not known: %s" % e)
PY
