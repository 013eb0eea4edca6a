"""Wall time of the pooled model (``passmix.fit_pooled``) as the panel grows.

Run:  python benchmarks/bench_pooled.py [--shapes 7x128,43x400,200x50] [--m 10] [--family normal]
      [--slope]

Panels are simulated (abilities ~ N(0, 1), difficulties ~ N(1.5, 1.5),
concentrations 20, m = 10 trials per cell). For each shape the table gives
the first fit (which compiles the model for that number of systems, unless
PyTensor's disk cache already has it), a second fit of fresh data of the same
shape (compiled function reused), the time of one log-likelihood and gradient
evaluation, and how many evaluations the fit took. The cost of an
evaluation grows as I x J x P (P distinct (y, m) pairs, at most m + 1 per
system) for the product with the incidence matrix, plus I x G x P
Beta-binomial terms (G grid points). The default fit has two candidates
(per-system and shared concentrations), so it costs about two single fits;
the evaluation column times the chosen one. The summary column is the second
fit's ``summary(k=(1, 10, 100, 1000), method="delta")`` (delta-method
intervals of every system, from the analytic observed information); the
profile column its profile-likelihood intervals, the default on panels of up
to ``PROFILE_CELLS`` cells (and only timed there). ``--slope`` fits per-system
slopes (``slope=True``): I more coordinates, each fit started from the Rasch
one's optimum, so its time includes the Rasch fit's. The "intervals you can
trust" issue's panel is ``--shapes 200x50 --m 5`` (fit and summary within 20 s
on 2 cores).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import expit


def simulate(rng: np.random.Generator, n_sys: int, n_tasks: int, m: int = 10):
    from passmix.data.panel import Panel

    a = rng.normal(0.0, 1.0, n_sys)
    d = rng.normal(1.5, 1.5, n_tasks)
    mu = expit(a[:, None] - d[None, :])
    p = rng.beta(mu * 20.0, (1 - mu) * 20.0)
    return Panel(rng.binomial(m, p), np.full(p.shape, m))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="7x128,43x400,200x50",
                        help="comma-separated IxJ panel shapes (e.g. 7x128,43x400,200x2000)")
    parser.add_argument("--m", type=int, default=10, help="trials per cell")
    parser.add_argument("--family", default="normal", choices=["normal", "grid"])
    parser.add_argument("--slope", action="store_true", help="per-system slopes (2PL)")
    args = parser.parse_args()

    start = time.perf_counter()
    import passmix
    from passmix.models.pooled import DEFAULT_GRID, PROFILE_CELLS, get_pooled_objective, panel_layout

    print(f"import passmix: {time.perf_counter() - start:.2f} s")
    rng = np.random.default_rng(0)
    head = (f"{'I x J':>10} {'first fit (s)':>14} {'second fit (s)':>15} "
            f"{'summary (s)':>12} {'profile (s)':>12} {'eval (ms)':>10} {'evals':>7} "
            f"{'converged':>10}")
    print(f"fit_pooled(family={args.family!r}, slope={args.slope}, n_init=3; concentration "
          f"per system and shared, AIC chooses), m = {args.m} trials per cell")
    print(head)
    print("-" * len(head))
    for shape in args.shapes.split(","):
        n_sys, n_tasks = (int(v) for v in shape.lower().split("x"))
        times = []
        for _ in range(2):
            panel = simulate(rng, n_sys, n_tasks, args.m)
            t0 = time.perf_counter()
            fit = passmix.fit_pooled(panel, family=args.family, slope=args.slope, seed=0)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fit.summary(k=(1, 10, 100, 1000), method="delta")
        summary = time.perf_counter() - t0
        profile = float("nan")
        if n_sys * n_tasks <= PROFILE_CELLS:  # the default there
            t0 = time.perf_counter()
            fit.summary(k=(1, 10, 100, 1000), method="profile")
            profile = time.perf_counter() - t0
        layout = panel_layout(panel)
        # the chosen candidate's objective (the default also fits a shared concentration)
        obj = get_pooled_objective(layout, fit.family, DEFAULT_GRID, fit.n_components,
                                   fit.slope, fit.concentration == "shared")
        z = fit.params
        t0 = time.perf_counter()
        n_eval = 20
        for _ in range(n_eval):
            obj.logp_dlogp(z)
        per_eval = (time.perf_counter() - t0) / n_eval
        evals = int(round(times[1] / per_eval))
        print(f"{shape:>10} {times[0]:>14.2f} {times[1]:>15.2f} {summary:>12.2f} {profile:>12.2f} "
              f"{per_eval * 1e3:>10.2f} "
              f"{'~' + str(evals):>7} {str(fit.converged):>10}")
    print("evals: the second fit's time over one evaluation's (an estimate)")


if __name__ == "__main__":
    main()
