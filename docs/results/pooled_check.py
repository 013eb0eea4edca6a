"""Can a check within the trials see systems that order the tasks differently?

Run:  python docs/results/pooled_check.py [--reps 40] [--m 10 50] [--rho 1 0.9 0.7]
                                         [--jobs 2] [--out docs/results/pooled_check.md]

The simulation of ``pooled_reorder.py`` (6 systems x 128 tasks; each system's
task difficulties correlate by rho^2 with another's; rho = 1 is the pooled
model itself). Each replicate fits ``fit_pooled`` with its defaults and runs
``compare``'s per-pair check (:func:`passmix.compare.methods.pooled_check`: a
Hausman test of the pooled difference of Pass@k against the direct one at
horizons within the trials) on all 15 pairs. Reports how often a pair is
refuted at compare's level (``CHECK_LEVEL``) and at 0.05, and how often some
pair of the replicate is, plain and with Bonferroni's correction over the
pairs. A check that sees the reordering refutes more often at rho < 1 than at
rho = 1.
"""

from __future__ import annotations

import argparse
import time
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from pooled_reorder import simulate


def replicate(m: int, rho: float, rep: int) -> list[dict]:
    import passmix
    from passmix.compare.methods import pooled_check

    warnings.simplefilter("ignore")
    rng = np.random.default_rng([2026, m, int(round(100 * rho)), rep])
    y, _ = simulate(rng, rho, m)
    panel = passmix.Panel(y, np.full(y.shape, m))
    fit = passmix.fit_pooled(panel, seed=rep)
    shared = np.ones(y.shape[1], dtype=bool)
    return [{"m": m, "rho": rho, "rep": rep, "a": a, "b": b,
             "p_value": pooled_check(fit, panel, a, b, shared, "pass@k")}
            for a, b in combinations(range(y.shape[0]), 2)]


def report(df: pd.DataFrame, level: float) -> pd.DataFrame:
    pairs = df.assign(at_level=df["p_value"] < level, at_05=df["p_value"] < 0.05)
    per_rep = df.groupby(["m", "rho", "rep"])["p_value"].agg(["min", "size"]).reset_index()
    per_rep = per_rep.assign(any_level=per_rep["min"] < level,
                             bonferroni=per_rep["min"] * per_rep["size"] < level)
    return (pairs.groupby(["m", "rho"])[["at_level", "at_05"]].mean()
            .join(per_rep.groupby(["m", "rho"])[["any_level", "bonferroni"]].mean())
            .join(per_rep.groupby(["m", "rho"]).size().rename("replicates"))
            .reset_index())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--m", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--rho", type=float, nargs="+", default=[1.0, 0.9, 0.7])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).with_name("pooled_check.md"))
    args = parser.parse_args(argv)
    from joblib import Parallel, delayed

    from passmix.compare.methods import CHECK_LEVEL

    started = time.perf_counter()
    cases = [(m, rho, rep) for m in args.m for rho in args.rho for rep in range(args.reps)]
    parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(*case) for case in cases)
    df = pd.DataFrame([row for part in parts for row in part])
    df.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")
    table = report(df, CHECK_LEVEL)
    minutes = (time.perf_counter() - started) / 60
    lines = [
        "# Can a check within the trials see systems that order the tasks differently?", "",
        f"Made by `python docs/results/pooled_check.py --reps {args.reps} --m "
        f"{' '.join(map(str, args.m))} --rho {' '.join(f'{r:g}' for r in args.rho)}` "
        f"({minutes:.0f} minutes on {args.jobs} processes; rows: `pooled_check.csv`). "
        "See the script's docstring. Share of pairs refuted by compare's check at its "
        f"level ({CHECK_LEVEL:g}) and at 0.05; share of replicates (15 pairs each) with "
        f"some pair refuted at {CHECK_LEVEL:g}, plain and with Bonferroni's correction.", "",
        f"| m | rho | pairs refuted at {CHECK_LEVEL:g} | at 0.05 | replicates with one "
        f"at {CHECK_LEVEL:g} | Bonferroni | replicates |",
        "|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.m} | {row.rho:g} | {row.at_level:.3f} | {row.at_05:.3f} | "
                     f"{row.any_level:.2f} | {row.bonferroni:.2f} | {row.replicates} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
