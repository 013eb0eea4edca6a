"""Coverage of the pooled model's delta-method intervals, by simulation.

Run:  python benchmarks/coverage_pooled.py [--reps 100] [--tasks 200] [--m 5]
                                           [--kappa spread|equal]

Each replicate simulates a panel from the pooled model itself with known
parameters (5 systems with abilities -1 .. 1 and concentrations 3 .. 1e4, or
all 20 with ``--kappa equal``; difficulties from N(1, 1.5), m trials per
cell), fits ``fit_pooled`` with its defaults (normal family; per-system or
shared concentration by AIC; the share of fits that chose a shared one is
printed) and asks each system's 95% interval for Pass@k, Pass^k and
AUC@k at k = 1, 5, 25, 125. The truth is the metric of the simulated tasks'
own success probabilities (the benchmark-level quantity the harness's
reference measures). Prints coverage (percent) per metric and k, with its
binomial standard error, and the mean width.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.special import expit

K = np.array([1, 5, 25, 125])
ABILITY = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
KAPPAS = {"spread": np.array([3.0, 10.0, 30.0, 100.0, 1e4]), "equal": np.full(5, 20.0)}


def truth(p: np.ndarray, metric: str, k: np.ndarray) -> np.ndarray:
    """(I, K) metric of each system over the tasks' true success probabilities."""
    kk = k[None, None, :]
    pp = p[:, :, None]
    if metric == "pass@k":
        return np.mean(1 - (1 - pp) ** kk, axis=1)
    if metric == "pass^k":
        return np.mean(pp ** kk, axis=1)
    # AUC@k: mean over horizons 1..k of Pass@j
    out = np.empty((p.shape[0], k.size))
    for n, kv in enumerate(k):
        j = np.arange(1, kv + 1)[None, None, :]
        out[:, n] = np.mean(1 - (1 - pp) ** j, axis=(1, 2))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--kappa", choices=sorted(KAPPAS), default="spread",
                        help="the systems' concentrations: 3 .. 1e4, or all 20")
    args = parser.parse_args()
    import passmix
    from passmix.data.panel import Panel

    warnings.filterwarnings("ignore")
    rows, shared = [], []
    kappa = KAPPAS[args.kappa]
    started = time.perf_counter()
    for rep in range(args.reps):
        rng = np.random.default_rng([2026, rep])
        d = rng.normal(1.0, 1.5, args.tasks)
        mu = expit(ABILITY[:, None] - d[None, :])
        p = rng.beta(mu * kappa[:, None], (1 - mu) * kappa[:, None])
        y = rng.binomial(args.m, p)
        fit = passmix.fit_pooled(Panel(y, np.full(y.shape, args.m)), seed=rep)
        shared.append(fit.concentration == "shared")
        for metric in ("pass@k", "pass^k", "auc@k"):
            table = fit.delta(metric, K)
            true = truth(p, metric, K).ravel()  # system-major, as the table
            rows.append(pd.DataFrame({
                "rep": rep, "metric": metric, "k": table["k"], "system": table["system"],
                "covered": (table["lower"] <= true) & (true <= table["upper"]),
                "width": 100 * (table["upper"] - table["lower"]),
                "error": 100 * (table["estimate"] - true)}))
    df = pd.concat(rows, ignore_index=True)
    out = df.groupby(["metric", "k"]).agg(coverage=("covered", "mean"),
                                          mean_width=("width", "mean"),
                                          bias=("error", "mean"),
                                          n=("covered", "size")).reset_index()
    out["se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["n"]) * 100
    out["coverage"] *= 100
    print(f"fit_pooled delta intervals (95%): {args.reps} replicates, 5 systems x "
          f"{args.tasks} tasks, m = {args.m}, concentrations {args.kappa} "
          f"({', '.join(f'{v:g}' for v in kappa)}); a shared one chosen in "
          f"{100 * np.mean(shared):.0f}% of fits; {time.perf_counter() - started:.0f} s")
    print(out.round(2).to_string(index=False))


if __name__ == "__main__":
    main()
