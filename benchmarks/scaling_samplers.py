"""Samplers compared with one predictor, on seeds and populations the adaptive rule was not chosen on.

Run:  python benchmarks/scaling_samplers.py [--seeds 3,4,5] [--jobs 2] [--predictor beta_binomial]

The adaptive sampler's first stage (60% of the budget, uniform) was chosen on
the MATH replay with seeds 0-2. This prints, for fresh seeds, the MAE of
Pass@k (points) of each sampler with one predictor:

* on the MATH replay (7 Pythia models x 128 problems, 10,000 records each),
  B/n = 10 and 78, k = 100 and 1000 (the issue's four cells);
* on the second paper's oracle populations (uniform difficulties, half
  impossible, a hard outlier, a Beta mixture; 100 tasks, 3 draws each), B/n =
  10 and 50, k = 100 and 1000.

Each table also gives the ratio of the adaptive sampler's MAE to the better
of uniform and dynamic, measured in the same run.
"""

from __future__ import annotations

import argparse
import time
import warnings

import pandas as pd

from passmix import read_counts
from passmix.examples import example_path
from passmix.experiments.scaling import run_scaling
from passmix.scaling import oracle_population

CASES = ("uniform", "half_impossible", "hard_outlier", "beta_mixture")


def table(result, index) -> pd.DataFrame:
    errors = result.errors
    gcols = result.group_cols
    keys = list(dict.fromkeys([*gcols, *index, "sampler"]))
    per_group = errors.groupby(keys)["abs_error"].mean().reset_index()
    wide = per_group.groupby([*index, "sampler"])["abs_error"].mean().unstack("sampler")
    wide = wide[[s for s in ("uniform", "dynamic", "adaptive") if s in wide.columns]]
    if {"uniform", "dynamic", "adaptive"} <= set(wide.columns):
        wide["adaptive / best other"] = wide["adaptive"] / wide[["uniform", "dynamic"]].min(axis=1)
    return wide.round(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3,4,5")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--predictor", default="beta_binomial")
    parser.add_argument("--skip-math", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    warnings.filterwarnings("ignore")

    if not args.skip_math:
        started = time.perf_counter()
        groups = read_counts(example_path("math_10k"), group_by="model")
        res = run_scaling(groups, ["model"], budgets=(10, 78), k=(100, 1000), seeds=seeds,
                          estimators=[args.predictor], jobs=args.jobs)
        print(f"MATH replay, predictor {args.predictor}, seeds {seeds} "
              f"({time.perf_counter() - started:.0f} s): MAE of Pass@k, points")
        print(table(res, ["budget", "k"]).to_string())
        print()

    started = time.perf_counter()
    groups = {(case, draw): oracle_population(case, 100, seed=draw)
              for case in CASES for draw in range(3)}
    res = run_scaling(groups, ["case", "draw"], budgets=(10, 50), k=(100, 1000), seeds=seeds,
                      estimators=[args.predictor], jobs=args.jobs)
    print(f"Oracle populations, predictor {args.predictor}, seeds {seeds} "
          f"({time.perf_counter() - started:.0f} s): MAE of Pass@k, points")
    print(table(res, ["case", "budget", "k"]).to_string())


if __name__ == "__main__":
    main()
