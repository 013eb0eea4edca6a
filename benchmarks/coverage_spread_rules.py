"""Coverage of the pooled delta intervals under other rules for adding the tasks' spread.

Run:  python benchmarks/coverage_spread_rules.py [--reps 30]

The pooled intervals add to the parameters' ends the spread each metric has
given the parameters (the benchmark's own tasks' success probabilities stay
uncertain), with :func:`passmix.inference.with_metric_spread`: a log-normal of
the metric's mean and variance, on ``log M`` for the lower end and on
``log(1 - M)`` for the upper, so that no end reaches 0 or 1. Far beyond the
trials (Pass^125 from 5 trials a task) the metric's distribution given the
parameters has most of its mass near 0 (one or two tasks carry it), and the
log-normal's lower end stays well above it: ``coverage_pooled.py`` measures
70% there. This replays the simulation of ``coverage_pooled.py`` (its
defaults: 5 systems x 200 tasks, m = 5, concentrations 3 .. 1e4, the same
seeds), keeps each delta interval's parameters' ends and spread, and prints
the coverage (percent) of four rules for the spread:

* ``log-normal``: the current rule;
* ``probability scale``: the two parts in quadrature on the probability
  scale, cut at 0 and 1 (the rule before 2026-12-01's commit ab17cc6);
* ``gamma lower end``: the lower end's spread part the quantile of a
  moment-matched gamma (heavier mass near 0 than the log-normal's), on
  ``log M`` as now;
* ``wider of the two``: each end the farther of the log-normal's and the
  probability scale's.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats
from scipy.special import expit

from coverage_pooled import ABILITY, KAPPAS, truth

K = np.array([1, 5, 25, 125])


def probability_scale(base, lower, upper, variance, z):
    s = z * np.sqrt(variance)
    return (np.maximum(base - np.hypot(base - lower, s), 0.0),
            np.minimum(base + np.hypot(upper - base, s), 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    import passmix
    import passmix.inference.units as units
    from passmix.data.panel import Panel

    warnings.filterwarnings("ignore")
    log_normal = units.with_metric_spread
    kept = {}

    def keep(base, lower, upper, variance, z):
        kept["args"] = tuple(np.array(a, dtype=float) for a in (base, lower, upper, variance))
        return log_normal(base, lower, upper, variance, z)

    def gamma_lower(base, lower, upper, variance, z):
        with np.errstate(all="ignore"):
            shape = base ** 2 / variance
            q = stats.gamma.ppf(stats.norm.cdf(-z), shape, scale=base / shape)
            spread = np.nan_to_num(np.log(base) - np.log(q), posinf=50.0)
            model = np.nan_to_num(np.log(base) - np.log(np.maximum(lower, 0.0)), posinf=50.0)
            new = np.where(base > 0, base * np.exp(-np.hypot(model, spread)), lower)
        return np.minimum(new, lower), log_normal(base, lower, upper, variance, z)[1]

    def wider(base, lower, upper, variance, z):
        a, b = log_normal(base, lower, upper, variance, z), probability_scale(
            base, lower, upper, variance, z)
        return np.minimum(a[0], b[0]), np.maximum(a[1], b[1])

    rules = {"log-normal": log_normal, "probability scale": probability_scale,
             "gamma lower end": gamma_lower, "wider of the two": wider}
    units.with_metric_spread = keep
    z = stats.norm.ppf(0.975)
    kappa = KAPPAS["spread"]
    hits = {(r, m): [] for r in rules for m in ("pass@k", "pass^k")}
    started = time.perf_counter()
    try:
        for rep in range(args.reps):
            rng = np.random.default_rng([2026, rep])
            d = rng.normal(1.0, 1.5, 200)
            mu = expit(ABILITY[:, None] - d[None, :])
            p = rng.beta(mu * kappa[:, None], (1 - mu) * kappa[:, None])
            y = rng.binomial(5, p)
            fit = passmix.fit_pooled(Panel(y, np.full(y.shape, 5)), seed=rep)
            for metric in ("pass@k", "pass^k"):
                fit.delta(metric, K)
                true = truth(p, metric, K)
                for name, rule in rules.items():
                    lo, hi = rule(*kept["args"], z)
                    hits[name, metric].append((lo <= true) & (true <= hi))
    finally:
        units.with_metric_spread = log_normal
    print(f"pooled delta intervals (95%), {args.reps} replicates of coverage_pooled.py's "
          f"defaults; coverage in percent at k = {', '.join(map(str, K))}; "
          f"{time.perf_counter() - started:.0f} s")
    for (name, metric), h in hits.items():
        cov = 100 * np.mean(np.stack(h), axis=(0, 1))
        print(f"{name:18s} {metric:7s} " + "  ".join(f"{c:5.1f}" for c in cov))


if __name__ == "__main__":
    main()
