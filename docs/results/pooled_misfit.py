"""Can the data tell where the pooled model is wrong? Each system's fit, pooled against a free Beta mixture.

Run from the repository root (a few minutes on one core):
``python docs/results/pooled_misfit.py [--m 10 50] [--seeds 12]``. It writes
docs/results/pooled_misfit.md and the per-system rows in pooled_misfit.csv.

The subsamples are those of docs/results/pooled_seeds.py (m trials per problem
of the bundled 10,000-trial MATH data, 7 Pythia models x 128 problems, the
harness's streams). For each system, ``D = 2 (loglik of passmix.fit on its
counts - PooledFit.system_loglik)``: how much better a per-system Beta mixture,
chosen by BIC, describes the system's success rates than the distribution the
pooled fit implies for it. Where the pooled model's shared difficulty
distribution is right for a system, D is of the order of a chi-square with one
degree of freedom: the mixture's H = 1 has two parameters, the pooled system an
ability and a concentration within a difficulty distribution the other systems
fix. The rows are joined with pooled_seeds.csv's k = 1000 intervals: a
misfit the data can see would be large where the pooled intervals miss.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import chi2

import passmix
from passmix.examples import example_path
from passmix.experiments import load_repeated
from passmix.experiments._harness import group_id, stream
from pooled_intervals import subsample_fit  # beside this script

HERE = Path(__file__).parent


def run(m: int, seed: int, groups) -> list[dict]:
    counts, fit = subsample_fit(m, seed, groups)
    pooled = fit.system_loglik()
    rows = []
    for i, (key, c) in enumerate(counts.items()):
        mixture = passmix.fit(c, seed=stream(seed, group_id(key), 1, m))
        rows.append({"m": m, "seed": seed, "system": key[0], "pooled_loglik": pooled[i],
                     "mixture_loglik": mixture.loglik, "mixture_H": mixture.n_components,
                     "D": 2 * (mixture.loglik - pooled[i])})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--out", type=Path, default=HERE / "pooled_misfit.md")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    groups = load_repeated(example_path("math_10k"), group_by="model", with_tasks=True)
    rows = []
    for m in args.m:
        for seed in range(args.seeds):
            rows += run(m, seed, groups)
            print(f"m = {m}, seed {seed} done", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")

    seeds = pd.read_csv(HERE / "pooled_seeds.csv")
    far = seeds[(seeds["k"] == 1000) & (seeds["variant"] == "pooled profile")].copy()
    far["missed"] = (far["reference"] < far["lower"]) | (far["reference"] > far["upper"])
    joined = table.merge(far[["m", "seed", "system", "missed"]], on=["m", "seed", "system"])
    lines = ["# Can the data tell where the pooled model is wrong?", "",
             f"Made by `python docs/results/pooled_misfit.py --m {' '.join(map(str, args.m))} "
             f"--seeds {args.seeds}` (rows: `pooled_misfit.csv`). "
             + " ".join(__doc__.split("\n\n")[2].split()), "",
             "| m | systems x seeds | mixture H = 1 | mean D | sd D | 90% quantile | max | "
             "share D > 3.84 (chi2_1 5%) | mean D, pooled k = 1000 missed | "
             "mean D, covered | missed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, part in table.groupby("m"):
        j = joined[joined["m"] == m]
        missed, covered = j.loc[j["missed"], "D"], j.loc[~j["missed"], "D"]
        lines.append(
            f"| {m} | {len(part)} | {(part['mixture_H'] == 1).mean():.2f} | "
            f"{part['D'].mean():.2f} | {part['D'].std():.2f} | {part['D'].quantile(0.9):.2f} | "
            f"{part['D'].max():.2f} | {(part['D'] > chi2.ppf(0.95, 1)).mean():.3f} | "
            f"{missed.mean() if len(missed) else float('nan'):.2f} | {covered.mean():.2f} | "
            f"{len(missed)} of {len(j)} |")
    lines += ["", "A chi-square with one degree of freedom has mean 1, sd 1.41 and 90% quantile 2.71.",
              ""]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
