"""Pooled intervals where the model is wrong: systems that order the tasks differently.

Run:  python docs/results/pooled_reorder.py [--reps 40] [--m 10 50] [--rho 1 0.9 0.7]
                                           [--jobs 2] [--out docs/results/pooled_reorder.md]

The pooled model assumes one difficulty order for every system. Here each
system i sees its own difficulty of task j, ``d_ij = rho d_j + sqrt(1 - rho^2)
e_ij`` around their mean (``d_j`` and ``e_ij`` independent N(5, 2^2): every
system's difficulties have the same distribution, and any two correlate by
``rho^2``), with abilities -1.5 .. 1.5 (6 systems), ``p_ij ~ Beta(20 mu, 20 (1
- mu))``, ``mu = expit(a_i - d_ij)``, 128 tasks and m trials per cell: Pass@1
from 1% to 9% and Pass@1000 from 0.25 to 0.73, as the Pythia models' on MATH.
``rho = 1`` is the model itself; ``rho = 0.7`` is about the rank correlation of
the small and large Pythia models on MATH.

Each replicate fits ``fit_pooled`` with its defaults and asks each system's
95% interval of Pass@k at k = 10, 100, 1000: the pooled model's profile
intervals (its default here: 768 cells) and its delta intervals, and the
per-system Beta mixture's profile intervals (``passmix.fit``). The truth is
the metric of the tasks' own success probabilities. Writes the rows
(``pooled_reorder.csv``) and a table of coverage, mean width and bias
(points) per m, rho, k and method.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

K = np.array([10, 100, 1000])
ABILITY = np.linspace(-1.5, 1.5, 6)
N_TASKS = 128
KAPPA = 20.0
DIFFICULTY = (5.0, 2.0)  # mean and sd


def simulate(rng: np.random.Generator, rho: float, m: int):
    """Counts and the tasks' true success probabilities of one replicate."""
    shared = rng.normal(DIFFICULTY[0], DIFFICULTY[1], N_TASKS)
    own = rng.normal(DIFFICULTY[0], DIFFICULTY[1], (ABILITY.size, N_TASKS))
    # mixed around the mean, which rho * mean + sqrt(1 - rho^2) * mean would shift
    d = DIFFICULTY[0] + rho * (shared - DIFFICULTY[0]) + np.sqrt(1.0 - rho**2) * (
        own - DIFFICULTY[0])
    mu = expit(ABILITY[:, None] - d)
    p = rng.beta(mu * KAPPA, (1.0 - mu) * KAPPA)
    return rng.binomial(m, p), p


def replicate(m: int, rho: float, rep: int) -> list[dict]:
    import passmix

    warnings.simplefilter("ignore")
    rng = np.random.default_rng([2026, m, int(round(100 * rho)), rep])
    y, p = simulate(rng, rho, m)
    truth = np.mean(1.0 - (1.0 - p[:, :, None]) ** K[None, None, :], axis=1)  # (I, K)
    trials = np.full(y.shape, m)
    rows = []

    def add(method, i, estimate, lower, upper):
        rows.extend({"m": m, "rho": rho, "rep": rep, "system": i, "k": int(k),
                     "method": method, "estimate": e, "lower": lo, "upper": hi,
                     "truth": t} for k, e, lo, hi, t in zip(K, estimate, lower, upper,
                                                               truth[i]))

    fit = passmix.fit_pooled(passmix.Panel(y, trials), seed=rep)
    for method in ("profile", "delta"):
        table = fit.summary(K, method=method)
        table = table[table["metric"] == "pass@k"]
        for i, system in enumerate(fit.systems):
            part = table[table["system"] == system]
            add(f"pooled {method}", i, part["estimate"], part["lower"], part["upper"])
    for i in range(ABILITY.size):
        mix = passmix.fit(passmix.Counts(y[i], trials[i]), seed=rep)
        ends = mix.interval("pass@k", K)
        add("mixture profile", i, mix.metric("pass@k", K), ends.lower, ends.upper)
    return rows


def report(df: pd.DataFrame) -> pd.DataFrame:
    df = df.assign(covered=(df["lower"] <= df["truth"]) & (df["truth"] <= df["upper"]),
                   width=100 * (df["upper"] - df["lower"]),
                   error=100 * (df["estimate"] - df["truth"]))
    return (df.groupby(["m", "rho", "k", "method"])
            .agg(coverage=("covered", "mean"), width=("width", "mean"),
                 bias=("error", "mean"), mae=("error", lambda e: e.abs().mean()),
                 n=("covered", "size"))
            .reset_index())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--m", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--rho", type=float, nargs="+", default=[1.0, 0.9, 0.7])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).with_name("pooled_reorder.md"))
    args = parser.parse_args(argv)
    from joblib import Parallel, delayed

    started = time.perf_counter()
    cases = [(m, rho, rep) for m in args.m for rho in args.rho for rep in range(args.reps)]
    parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(*case) for case in cases)
    df = pd.DataFrame([row for part in parts for row in part])
    df.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")
    table = report(df)
    minutes = (time.perf_counter() - started) / 60
    lines = [
        "# Pooled intervals where the model is wrong: systems that reorder tasks", "",
        f"Made by `python docs/results/pooled_reorder.py --reps {args.reps} --m "
        f"{' '.join(map(str, args.m))} --rho {' '.join(f'{r:g}' for r in args.rho)}` "
        f"({minutes:.0f} minutes on {args.jobs} processes; rows: `pooled_reorder.csv`). "
        "See the script's docstring for the simulation. Coverage of the 95% intervals of "
        "Pass@k, mean width and bias in points; n intervals a cell (6 systems a "
        "replicate, which share their tasks).", "",
        "| m | rho | k | method | coverage | width | bias | MAE | n |",
        "|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.m} | {row.rho:g} | {row.k} | {row.method} | "
                     f"{row.coverage:.2f} | {row.width:.1f} | {row.bias:+.2f} | "
                     f"{row.mae:.2f} | {row.n} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
