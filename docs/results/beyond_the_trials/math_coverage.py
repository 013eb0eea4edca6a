"""Coverage and width of the default intervals beyond the trials on the bundled 10k MATH data.

Run:  python docs/results/beyond_the_trials/math_coverage.py M [--seeds 10] [--jobs 2]

7 models x `seeds` subsamples of M trials per problem; the truth is the
combinatorial estimate on all 10,000 trials. For each case, the 95% intervals
of Pass@k, Pass^k and AUC@k at k = 10, 100, 1000 from ``passmix.fit`` (seed 0):

* ``profile`` and ``delta``: the default ``summary()`` (since issue 48: beyond
  the trials it holds the population's metric and the metric over these tasks,
  and spans an atom at 0 where some task was never solved);
* ``profile_model`` and ``delta_model``: ``summary(conditional=True)``, the Beta
  mixture's own intervals (the default before issue 48).

Prints coverage (``covered_tol`` allows the reference's own rounding, 1e-6)
and mean width per method, metric and horizon, and writes every interval to
``math_coverage_M.csv`` beside this script.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
METHODS = {"profile": ("profile", False), "delta": ("delta", False),
           "profile_model": ("profile", True), "delta_model": ("delta", True)}


def one_case(case, ks) -> list[dict]:
    import passmix

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = passmix.fit(case.counts, seed=0)
        for name, (method, conditional) in METHODS.items():
            table = fit.summary(ks, method=method, conditional=conditional)
            for _, row in table.iterrows():
                truth = float(case.truth[row["metric"]][list(ks).index(row["k"])])
                rows.append({"model": case.replicate.split(" / ")[0],
                             "replicate": case.replicate, "method": name,
                             "metric": row["metric"], "k": int(row["k"]), "truth": truth,
                             "estimate": row["estimate"], "lower": row["lower"],
                             "upper": row["upper"],
                             "covered": bool(row["lower"] <= truth <= row["upper"]),
                             "covered_tol": bool(row["lower"] - 1e-6 <= truth
                                                 <= row["upper"] + 1e-6),
                             "width": row["upper"] - row["lower"],
                             "n_components": fit.n_components,
                             "never_solved": fit.never_solved})
    return rows


def main() -> None:
    from joblib import Parallel, delayed

    from passmix.experiments.coverage import math_cases

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    ks = [10, 100, 1000]
    started = time.perf_counter()
    cases = list(math_cases(range(args.seeds), args.m, ks))
    parts = Parallel(n_jobs=args.jobs)(delayed(one_case)(case, ks) for case in cases)
    df = pd.DataFrame([row for part in parts for row in part])
    df.to_csv(HERE / f"math_coverage_{args.m}.csv", index=False)
    table = (df.groupby(["metric", "k", "method"], sort=False)
             .agg(covered=("covered", "mean"), covered_tol=("covered_tol", "mean"),
                  width=("width", "mean")).round(3))
    print(f"m = {args.m}, {len(cases)} cases, {time.perf_counter() - started:.0f} s")
    print(table.unstack("method").to_string())


if __name__ == "__main__":
    main()
