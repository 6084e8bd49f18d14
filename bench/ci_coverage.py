#!/usr/bin/env python3
"""How often the speedup's bootstrap interval covers the true ratio, by simulation: resampling
whole input sets, each side's resampled medians widened by sqrt(G / (G - 1)) on the log scale
(kjudge's interval, docs/methodology.md "Statistics"), against the same unwidened and against
resampling single samples, when an input set can be slower than the others as a whole (where
its buffers lie).

Each simulated evaluation: a reference of `--sets` sets with no set effect, and a candidate
whose every set is `--slow-pct` slower with probability `--slow-prob`; `--per-set` samples a set
with normal noise. The truth is the ratio of the two sides' population medians (over infinitely
many sets). Needs numpy (the project venv has it): .venv/bin/python3 bench/ci_coverage.py
"""
import argparse

import numpy as np


def sides(rng, sets, per_set, centre, sigma, slow_pct, slow_prob):
    slow = rng.random(sets) < slow_prob
    shift = np.where(slow, centre * slow_pct / 100.0, 0.0)
    return centre + shift[:, None] + rng.normal(0.0, sigma, (sets, per_set))


def by_sets(rng, groups, resamples):
    picks = rng.integers(0, groups.shape[0], size=(resamples, groups.shape[0]))
    return np.median(groups[picks].reshape(resamples, -1), axis=1)


def widened(medians, groups):
    """Resampled medians moved from the side's median by sqrt(G / (G - 1)) on the log scale."""
    g = groups.shape[0]
    centre = np.median(groups)
    return centre * (medians / centre) ** np.sqrt(g / (g - 1.0))


def by_samples(rng, groups, resamples):
    flat = groups.ravel()
    return np.median(flat[rng.integers(0, flat.size, size=(resamples, flat.size))], axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--per-set", type=int, default=100)
    ap.add_argument("--slow-pct", type=float, default=3.0)
    ap.add_argument("--slow-prob", type=float, default=1 / 8)
    ap.add_argument("--noise-pct", type=float, default=0.8, help="within-set sd, % of the centre")
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    ref_c, cand_c = 38.0, 6.3
    ref_sd, cand_sd = ref_c * a.noise_pct / 100, cand_c * a.noise_pct / 100
    population = sides(rng, 20000, 50, cand_c, cand_sd, a.slow_pct, a.slow_prob)
    truth = ref_c / np.median(population)
    for sets in a.sets:
        names = ("input sets, widened", "input sets", "samples")
        covered = dict.fromkeys(names, 0)
        for _ in range(a.trials):
            ref = sides(rng, sets, a.per_set, ref_c, ref_sd, 0.0, 0.0)
            cand = sides(rng, sets, a.per_set, cand_c, cand_sd, a.slow_pct, a.slow_prob)
            ref_sets, cand_sets = by_sets(rng, ref, a.resamples), by_sets(rng, cand, a.resamples)
            ratios = {  # the widened interval from the same draws as the plain one
                "input sets, widened": widened(ref_sets, ref) / widened(cand_sets, cand),
                "input sets": ref_sets / cand_sets,
                "samples": by_samples(rng, ref, a.resamples) / by_samples(rng, cand, a.resamples),
            }
            for name, r in ratios.items():
                lo, hi = np.quantile(r, [0.025, 0.975])
                covered[name] += lo <= truth <= hi
        print("%d sets: 95%% interval covered the true ratio, resampling %s (%d evaluations)"
              % (sets, ", ".join("%s %.1f%%" % (name, 100 * covered[name] / a.trials)
                                 for name in names), a.trials))


if __name__ == "__main__":
    main()
