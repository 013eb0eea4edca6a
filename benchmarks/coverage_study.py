"""Coverage and width of 95% intervals: profile likelihood, delta method, posterior.

Run:  python benchmarks/coverage_study.py [--replicates 200] [--seeds 20]
                                          [--posterior-replicates 60] [--jobs 2]
                                          [--out docs/results/coverage]

Scenarios (see passmix.experiments.coverage): data simulated near the
binomial limit (J = 128, m = 10, 0.9 Beta(0.05, 40) + 0.1 Beta(1, 3)), data
simulated from one Beta(0.8, 2.5) (J = 200, m = 10), and the bundled MATH
data (7 Pythia models x 128 problems) subsampled to m = 10 against all
10,000 trials. Horizons k = 10, 100, 1000. The posterior (NUTS, weak prior,
4 x 1000 draws) is run on the first --posterior-replicates cases of each
scenario only, as it costs seconds per case. Prints one table per scenario
(coverage in percent with its Monte Carlo standard error, mean width in
points) and writes the rows and the table as CSV to --out.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed

from passmix.experiments.coverage import (coverage_table, interior_cases, interval_coverage,
                                          math_cases, near_limit_cases)

KS = (10, 100, 1000)


def _run(case, methods):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return interval_coverage([case], KS, methods=methods)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200,
                        help="simulated data sets per simulated scenario")
    parser.add_argument("--seeds", type=int, default=20, help="subsamples per MATH model")
    parser.add_argument("--posterior-replicates", type=int, default=60,
                        help="cases per scenario that also get the posterior interval")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="folder for the CSV files")
    args = parser.parse_args()

    scenarios = [list(near_limit_cases(args.replicates, KS)),
                 list(interior_cases(args.replicates, KS)),
                 list(math_cases(range(args.seeds), 10, KS))]
    work = []
    for cases in scenarios:
        for i, case in enumerate(cases):
            with_posterior = i < args.posterior_replicates
            methods = ("profile", "delta", "posterior") if with_posterior else ("profile", "delta")
            work.append((case, methods))
    start = time.perf_counter()
    parts = Parallel(n_jobs=args.jobs)(delayed(_run)(c, m) for c, m in work)
    rows = pd.concat(parts, ignore_index=True)
    seconds = time.perf_counter() - start
    table = coverage_table(rows)

    pd.set_option("display.width", 200)
    for scenario, part in table.groupby("scenario", sort=False):
        print(f"\n{scenario}")
        shown = part.drop(columns="scenario").copy()
        shown["coverage"] = [f"{c:5.1f} ± {s:.1f}" for c, s in zip(shown["coverage"],
                                                                     shown["mc_se"])]
        print(shown.drop(columns="mc_se").round(1).to_string(index=False))
    print(f"\n{len(work)} cases in {seconds:.0f} s with {args.jobs} jobs")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        rows.to_csv(args.out / "coverage_rows.csv.gz", index=False)
        table.to_csv(args.out / "coverage.csv", index=False)
        print(f"wrote {args.out / 'coverage.csv'}")


if __name__ == "__main__":
    main()
