#!/usr/bin/env python3
"""The median's relative standard error over input sets, recomputed from `kjudge eval --json`
results (each figure's `samples_us` and `samples_set`), next to the error over samples taken as
independent: how many figures each puts at or above a target. Where a result has no
`rse_sets_pct` (written before kjudge reported it, or null) it is recomputed as kjudge computes
it (resamples of whole sets, docs/methodology.md, Timing 6), with Python's own random draws: within
a few percent of what kjudge would report.

    python3 bench/rse_by_sets.py [--target 0.5] [--list] out/*.json
"""
import argparse
import json
import math
import random
import statistics


def sets_rse_pct(samples, sets, resamples=200, seed=1):
    """Standard deviation of the median over resamples of whole sets, times sqrt(G / (G - 1)),
    over the median, in percent; NaN with samples on fewer than four sets."""
    groups = {}
    for v, g in zip(samples, sets):
        groups.setdefault(g, []).append(v)
    members = list(groups.values())
    g = len(members)
    if g < 4 or len(samples) != len(sets):
        return float("nan")
    centre = statistics.median(samples)
    if centre == 0:
        return float("inf")
    rng = random.Random(seed)
    medians = []
    for _ in range(resamples):
        pick = []
        for _ in range(g):
            pick += members[rng.randrange(g)]
        medians.append(statistics.median(pick))
    return 100.0 * statistics.stdev(medians) * math.sqrt(g / (g - 1)) / abs(centre)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--target", type=float, default=0.5, help="percent (the agent preset's)")
    ap.add_argument("--list", action="store_true", help="one line per figure")
    args = ap.parse_args()
    counts = {}
    for path in args.results:
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError) as exc:
            print("skipped %s: %s" % (path, exc))
            continue
        timing = r.get("timing") or {}
        for side in ("reference", "candidate"):
            for kind in ("device", "stream", "host_wall"):
                fig = (timing.get(side) or {}).get(kind) or {}
                if not fig.get("valid") or not fig.get("samples_us"):
                    continue
                # null: infinite (fewer than two samples, a median of 0) or not computed
                by_samples = fig.get("rse_samples_pct", fig.get("rse_pct"))
                if by_samples is None:
                    by_samples = float("inf")
                by_sets = fig.get("rse_sets_pct")
                if by_sets is None:
                    by_sets = sets_rse_pct(fig["samples_us"], fig.get("samples_set", []))
                total = by_samples if math.isnan(by_sets) else max(by_samples, by_sets)
                c = counts.setdefault(kind, [0, 0, 0])
                c[0] += 1
                c[1] += by_samples >= args.target
                c[2] += total >= args.target
                if args.list:
                    print("%-60s %-9s %-9s n=%5d samples %.3f%% sets %.3f%%" %
                          (path[-60:], side, kind, len(fig["samples_us"]), by_samples, by_sets))
    for kind, (n, a, b) in counts.items():
        print("%-9s %3d figures: %3d at or above %.2g%% over samples, %3d over samples and sets" %
              (kind, n, a, args.target, b))


if __name__ == "__main__":
    main()
