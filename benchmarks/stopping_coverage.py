"""Coverage of passmix.evaluate's final interval, with and without the stopping rule.

Run:  python benchmarks/stopping_coverage.py [--reps 60] [--k 100] [--target 0.05]

Each replicate draws 100 tasks' success probabilities from Beta(0.6, 2.5),
runs ``passmix.evaluate`` against an oracle system (uniform sampler,
beta-binomial predictor, delta intervals, a refit every 100 attempts, budget
3,000) three times: stopping when the half-width at k falls below the target
with alpha spending (the default: each look at a higher level, so that the
interval stopped on keeps 95%); stopping with every look at 95%
(``alpha_spending=None``); and spending the whole budget. The truth is the
tasks' own Pass@k. Prints the share of final intervals that contain it (with
its binomial standard error), the mean attempts spent and the mean width.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import passmix
from passmix.scaling import OracleSystem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--target", type=float, default=0.05)
    parser.add_argument("--budget", type=int, default=3000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    modes = {"stop, spending": {"target_halfwidth": args.target},
             "stop, every look": {"target_halfwidth": args.target, "alpha_spending": None},
             "whole budget": {}}
    rows: dict[str, list] = {mode: [] for mode in modes}
    for rep in range(args.reps):
        p = np.random.default_rng(rep).beta(0.6, 2.5, 100)
        truth = OracleSystem(p).pass_at_k(args.k)
        for mode, extra in modes.items():
            res = passmix.evaluate(OracleSystem(p, seed=rep), 100, budget=args.budget,
                                   k=args.k, seed=rep, progress=False,
                                   predictor="beta_binomial", sampler="uniform",
                                   refit_every=100, **extra)
            lo, hi = res.interval
            rows[mode].append((lo <= truth <= hi, res.attempts, hi - lo))
    print(f"{args.reps} replicates, k = {args.k}, target half-width {args.target} "
          f"({time.perf_counter() - started:.0f} s)")
    print(f"{'':16} {'coverage':>9} {'se':>6} {'attempts':>9} {'width':>7}")
    for mode, values in rows.items():
        v = np.array(values, dtype=float)
        cov = v[:, 0].mean()
        se = np.sqrt(cov * (1 - cov) / len(v))
        print(f"{mode:16} {cov:9.3f} {se:6.3f} {v[:, 1].mean():9.0f} {v[:, 2].mean():7.3f}")


if __name__ == "__main__":
    main()
