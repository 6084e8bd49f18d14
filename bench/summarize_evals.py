#!/usr/bin/env python3
"""One line per `kjudge eval --json` result: status, device and stream medians of both sides,
the candidate's CUPTI kernel time (one recorded forward), the speedup and the wall clock; then
the worker's start-up phases (seconds each, up to the first trial).

    python3 bench/summarize_evals.py out/*.json
"""
import json
import os
import sys


def median(timing, side, figure):
    f = (timing.get(side) or {}).get(figure) or {}
    return f.get("median_us")


def fmt(v, unit="us"):
    return "n/a" if v is None else "%.2f %s" % (v, unit)


def phase_spans(r):
    """Seconds from each worker phase to the next, for the phases before the trials."""
    phases = ((r.get("worker") or {}).get("phases")) or []
    spans = []
    for a, b in zip(phases, phases[1:]):
        if a["name"].startswith("trial"):
            break
        spans.append("%s %.2f" % (a["name"], b["start_s"] - a["start_s"]))
    return ", ".join(spans)


def main(paths):
    print("%-22s %-10s %-14s %-14s %-14s %-14s %-10s %s" % (
        "result", "status", "ref device", "cand device", "cand stream", "cand kernels", "speedup",
        "wall"))
    for p in paths:
        try:
            r = json.load(open(p))
        except (OSError, ValueError) as e:
            print("%-22s unreadable: %s" % (os.path.basename(p), e))
            continue
        t = r.get("timing") or {}
        cand = ((r.get("launches") or {}).get("candidate") or {})
        kern = sum(k.get("duration_ns", 0.0) for k in cand.get("kernels", [])) / 1000.0 \
            if cand.get("kernels") else None
        sp = next((s.get("ratio") for s in t.get("speedups") or []
                   if s.get("kind") == "device" and s.get("valid")), None)
        print("%-22s %-10s %-14s %-14s %-14s %-14s %-10s %.2f s" % (
            os.path.basename(p)[:-5], r.get("status"), fmt(median(t, "reference", "device")),
            fmt(median(t, "candidate", "device")), fmt(median(t, "candidate", "stream")),
            fmt(kern), "n/a" if sp is None else "%.2fx" % sp, r.get("wall_s") or 0.0))
        print("    start-up (s): " + phase_spans(r))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: summarize_evals.py RESULT.json ...")
    main(sys.argv[1:])
