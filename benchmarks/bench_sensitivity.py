"""Speed of the sensitivity path, each against a baseline timed in the same run.

Run:  python benchmarks/bench_sensitivity.py [--repeats 5]

Rows (median wall time over the repeats, and the ratio to the row's baseline):

* quantiles: ``BetaMixture.ppf`` at 200 levels of a 3-component mixture,
  against scipy's ``brentq`` on the mixture CDF level by level (the obvious
  way to invert it);
* fit: ``passmix.sensitivity`` on 300 and 1500 stratified cells of a BBH
  matrix (budget sampling, BIC over H = 1..4), against ``passmix.fit`` on the
  same counts (the overhead of the sensitivity layer);
* percentile intervals: profile likelihood at 5 percentiles, against the
  delta method;
* W1: the exact mixture-to-sample distance, against the midpoint
  approximation.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from scipy.optimize import brentq

import passmix
from passmix.distributions import BetaMixture, wasserstein1, wasserstein1_midpoint
from passmix.examples import example_path
from passmix.sensitivity import read_configurations, sample_cells


def timed(func, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    r = args.repeats
    rows = []

    g = BetaMixture([0.2, 0.5, 0.3], [0.3, 5.0, 40.0], [3.0, 5.0, 2.0])
    u = np.linspace(0.001, 0.999, 200)
    ours = timed(lambda: g.ppf(u), r)
    base = timed(lambda: [brentq(lambda x, v=v: g.cdf(x) - v, 0.0, 1.0, xtol=1e-15)
                          for v in u], r)
    rows.append(("quantiles, 200 levels", "ppf", ours, "brentq per level", base))

    full = read_configurations(example_path("mizrahi_bbh"), group_by=["task", "model"])[
        ("sports_understanding", "airoboros-13b")]
    passmix.fit(full.counts(), seed=0)  # compile once, outside the timings
    for budget in (300, 1500):
        obs = sample_cells(full, budget, seed=0)
        ours = timed(lambda obs=obs: passmix.sensitivity(full, budget=budget, seed=0), r)
        base = timed(lambda obs=obs: passmix.fit(obs.counts(), seed=0), r)
        rows.append((f"fit, B = {budget}", "sensitivity", ours, "passmix.fit", base))

    res = passmix.sensitivity(full, budget=1500, seed=0)
    ours = timed(lambda: res.percentile(method="profile"), r)
    base = timed(lambda: res.percentile(method="delta"), r)
    rows.append((f"5 percentile intervals (H = {res.fit.n_components})", "profile", ours,
                 "delta", base))

    scores = full.scores()
    ours = timed(lambda: wasserstein1(res.distribution, scores), r)
    base = timed(lambda: wasserstein1_midpoint(res.distribution, scores), r)
    rows.append((f"W1 to {scores.size} scores", "exact", ours, "midpoint", base))

    print(f"{'case':<34} {'ours':<12} {'s':>9}   {'baseline':<18} {'s':>9}   ratio")
    for case, name, t, bname, bt in rows:
        print(f"{case:<34} {name:<12} {t:9.4f}   {bname:<18} {bt:9.4f}   {t / bt:6.2f}")


if __name__ == "__main__":
    main()
