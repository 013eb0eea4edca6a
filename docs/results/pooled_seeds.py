"""How much of the pooled intervals' shortfall at m = 50 is the seeds'? Coverage over many subsample seeds, against an oracle.

Run from the repository root (a few minutes per m on one core):
``python docs/results/pooled_seeds.py [--m 10 20 30 50] [--seeds 12]``. It writes
docs/results/pooled_seeds.md and the per-system rows in pooled_seeds.csv.

The subsamples are those of docs/results/pooled_intervals.py (the harness's
streams: seeds 0, 1, 2 there are seeds 0, 1, 2 here), m trials per problem of
the bundled 10,000-trial MATH data (7 Pythia models x 128 problems), and the
reference is the combinatorial Pass@k of every recorded trial. Variants:

* the pooled model (``fit_pooled`` with its defaults), profile and delta
  intervals;
* the per-system Beta mixture (``passmix.fit``), profile intervals, which
  ``method="auto"`` uses beyond ``POOLED_MAX_TRIALS`` trials per task;
* an **oracle** for k <= m: the unbiased estimate of the subsample (the
  combinatorial Pass@k of its m trials) +- 1.96 times its exact standard
  error, computed from the 10,000-trial rates (binomial in each problem, the
  problems independent): the width a 95% interval around the model-free
  estimate needs. Where it covers less than 95% on a set of seeds, those
  seeds' subsamples are far from the truth, for any estimate that follows
  the data.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import gammaln
from scipy.stats import binom

import passmix
from passmix.estimators import combinatorial_estimate
from passmix.examples import example_path
from passmix.experiments import load_repeated
from passmix.experiments._harness import group_id, stream
from passmix.experiments._subsets import _full_counts
from pooled_intervals import subsample_fit  # beside this script

K = [10, 100, 1000]

Z95 = 1.959963984540054


def _unbiased_pass_at_k(y: np.ndarray, m: int, k: int) -> np.ndarray:
    """Per task, 1 - C(m - y, k) / C(m, k) (1 where fewer than k failures)."""
    y = np.asarray(y, dtype=float)
    f = m - y
    out = 1.0 - np.exp(gammaln(f + 1) - gammaln(np.maximum(f - k, 0) + 1)
                       - gammaln(m + 1) + gammaln(m - k + 1))
    return np.where(f < k, 1.0, out)


def oracle(y: np.ndarray, m: int, rates: np.ndarray, k: int) -> tuple[float, float]:
    """The subsample's unbiased Pass@k and its exact standard error at the true rates."""
    values = _unbiased_pass_at_k(np.arange(m + 1), m, k)             # (m + 1,)
    pmf = binom.pmf(np.arange(m + 1)[None, :], m, rates[:, None])   # (J, m + 1)
    var = (pmf * values ** 2).sum(axis=1) - ((pmf * values).sum(axis=1)) ** 2
    return float(_unbiased_pass_at_k(y, m, k).mean()), float(np.sqrt(var.sum()) / rates.size)


def run(m: int, seed: int, groups, refs, rates) -> list[dict]:
    rows = []
    started = time.perf_counter()
    counts, fit = subsample_fit(m, seed, groups)
    for method in ("delta", "profile"):
        table = getattr(fit, method)("pass@k", K)
        for key in counts:
            part = table[table["system"] == key]
            rows += [{"m": m, "seed": seed, "system": key[0], "k": k,
                      "variant": f"pooled {method}", "estimate": e, "lower": lo, "upper": hi,
                      "reference": r, "weak": " ".join(fit.weak_coordinates)}
                     for k, e, lo, hi, r in zip(part["k"], part["estimate"], part["lower"],
                                                part["upper"], refs[key])]
    for key, c in counts.items():
        part = passmix.fit(c, seed=stream(seed, group_id(key), 1, m)).summary(K)
        part = part[part["metric"] == "pass@k"]
        rows += [{"m": m, "seed": seed, "system": key[0], "k": k, "variant": "mixture profile",
                  "estimate": e, "lower": lo, "upper": hi, "reference": r}
                 for k, e, lo, hi, r in zip(K, part["estimate"], part["lower"], part["upper"],
                                            refs[key])]
        for k, r in zip(K, refs[key]):
            if k <= m:
                e, se = oracle(np.asarray(c.successes), m, rates[key], k)
                rows.append({"m": m, "seed": seed, "system": key[0], "k": k,
                             "variant": "oracle (unbiased, true se)", "estimate": e,
                             "lower": max(0.0, e - Z95 * se), "upper": min(1.0, e + Z95 * se),
                             "reference": r})
    print(f"m = {m}, seed {seed}: {time.perf_counter() - started:.0f} s", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("pooled_seeds.md"))
    parser.add_argument("--m", type=int, nargs="+", default=[10, 20, 30, 50])
    parser.add_argument("--seeds", type=int, default=12, help="subsample seeds 0, 1, ...")
    parser.add_argument("--from-csv", type=Path, default=None,
                        help="write the report from these rows instead of computing them")
    args = parser.parse_args(argv)
    if args.from_csv is not None:
        table = pd.read_csv(args.from_csv)
    else:
        warnings.simplefilter("ignore")
        groups = load_repeated(example_path("math_10k"), group_by="model", with_tasks=True)
        refs, rates = {}, {}
        for key, (trials, _) in groups.items():
            full = _full_counts(trials)
            refs[key] = np.asarray(combinatorial_estimate(full, "pass@k", K))
            rates[key] = np.asarray(full.successes, float) / np.asarray(full.trials, float)
        rows = []
        for m in args.m:
            for seed in range(args.seeds):
                rows += run(m, seed, groups, refs, rates)
        table = pd.DataFrame(rows)
        table.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")
    table["covered"] = (table["lower"] <= table["reference"]) & (
        table["reference"] <= table["upper"])
    table["width"] = (table["upper"] - table["lower"]) * 100
    table["error"] = (table["estimate"] - table["reference"]) * 100
    table["first3"] = table["seed"] < 3

    def summarise(part: pd.DataFrame) -> pd.DataFrame:
        return part.groupby(["m", "k", "variant"], sort=False).agg(
            coverage=("covered", "mean"), width=("width", "mean"),
            mae=("error", lambda e: e.abs().mean()), n=("covered", "size")).reset_index()

    every, first = summarise(table), summarise(table[table["first3"]])
    about = "\n\n".join(" ".join(p.split()) if not p.lstrip().startswith("*") else p.strip()
                         for p in __doc__.split("\n\n")[2:])
    lines = ["# Pooled coverage over many seeds, against an oracle", "",
             f"Made by `python docs/results/pooled_seeds.py --m {' '.join(map(str, args.m))} "
             f"--seeds {args.seeds}` (rows: `pooled_seeds.csv`). {about}", "",
             "| m | k | variant | coverage, seeds 0-2 | coverage, all seeds | mean width "
             "(points) | MAE | n |", "|---|---|---|---|---|---|---|---|"]
    for r, f in zip(every.itertuples(), first.itertuples()):
        lines.append(f"| {r.m} | {r.k} | {r.variant} | {f.coverage:.2f} | {r.coverage:.2f} | "
                     f"{r.width:.1f} | {r.mae:.2f} | {r.n} |")
    # the pooled intervals apart where the fit has a weak shared coordinate (a flat ridge
    # to its bound, PooledFit.weak_coordinates), the delta method's hard case
    pooled = table[table["variant"].str.startswith("pooled")].copy()
    pooled["ridge"] = np.where(pooled["weak"].fillna("").astype(str).str.len() > 0,
                               "weak", "none")
    split = pooled.groupby(["m", "k", "variant", "ridge"], sort=False).agg(
        coverage=("covered", "mean"), width=("width", "mean"), n=("covered", "size"))
    lines += ["", "The pooled intervals split by whether the fit has a weak shared coordinate "
              "(`PooledFit.weak_coordinates`: held on its bound, or its 95% Wald interval "
              "past the box; the delta intervals are then widened along its ridge):", "",
              "| m | k | variant | ridge | coverage | mean width (points) | n |",
              "|---|---|---|---|---|---|---|"]
    for (m, k, variant, ridge), r in split.sort_index(level=[0, 1, 2, 3]).iterrows():
        lines.append(f"| {m} | {k} | {variant} | {ridge} | {r.coverage:.2f} | {r.width:.1f} | "
                     f"{int(r.n)} |")
    lines += ["", f"With n = {7 * args.seeds} intervals a cell, a coverage of 0.95 has a "
              f"standard error of about {np.sqrt(0.95 * 0.05 / (7 * args.seeds)):.3f} "
              "(the 7 systems of one seed share the problems, so somewhat more); with the "
              "21 of seeds 0-2, about 0.05.", ""]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
