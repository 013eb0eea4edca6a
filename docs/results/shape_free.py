"""What the counts alone say: the shape-free interval beside the default, on the same data.

Run:  python docs/results/shape_free.py [--reps 100] [--jobs 2]

``passmix.shape_free_interval`` is the range of a metric over every task
distribution whose distribution of successes lies within the
Dvoretzky-Kiefer-Wolfowitz band of the counts (issue 48's "shape-free
envelope", with a finite-sample calibration instead of a likelihood-ratio cut).
This study puts it beside the default interval of ``passmix.fit`` on the very
data the two earlier studies scored:

* **simulated** (``shape_coverage.py``'s suite): the same replicates, re-drawn
  from the same seeds (75 tasks, m = 5, 10, 50; bimodal, 30% impossible, a
  power-law tail), 95% intervals of Pass@k at k = 10, 100, 1000 and Pass^k at
  k = 10, 100, 1000, scored as that study scores them (over the replicate's
  own tasks; Pass^1000 against the population), and against the population
  (the band's own target); the default's ends are read from
  ``shape_coverage.csv`` (method ``profile``);
* **real** (``beyond_the_trials/math_coverage.py``'s cases): the bundled 10k
  MATH data, 7 models x 10 subsamples at m = 10 and 50, Pass@k, Pass^k and
  AUC@k at k = 10, 100, 1000 against all 10,000 trials; the default's ends
  from ``beyond_the_trials/math_coverage_M.csv`` (method ``profile``);
* **rare** (``rare_coverage.py``'s panels, re-drawn from its seeds): 7
  systems x 159 tasks, m = 60, rates 1e-4 to 1e-2, Pass@k at k = 60, 600,
  1200, 6000 over the drawn tasks, 20 replicates a truth; beside each
  system's own mixture, the pooled model and their union (what ``estimate``'s
  auto gives there), from ``rare_coverage.csv.gz``.

Writes ``shape_free.csv.gz`` (every shape-free interval with the default's
ends beside it) and ``shape_free.md`` beside this script.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from shape_coverage import (CELLS, POPULATION_CELLS, draw_truth,  # noqa: E402
                            metric_of, population_value)

SIM_M = (5, 10, 50)
REAL_M = (10, 50)
REAL_K = [10, 100, 1000]


def simulated(truth: str, m: int, rep: int, n_tasks: int = 75) -> list[dict]:
    """One replicate of shape_coverage.py (same seed, same counts), shape-free intervals."""
    import passmix

    rng = np.random.default_rng([48, m, rep, sum(map(ord, truth))])
    theta = draw_truth(truth, rng, n_tasks)
    counts = passmix.Counts(rng.binomial(m, theta), np.full(n_tasks, m))
    rows = []
    for metric in ("pass@k", "pass^k"):
        ks = [k for name, k in CELLS if name == metric]
        result = passmix.shape_free_interval(counts, ks, metric)
        for k, lo, hi in zip(ks, result.lower, result.upper, strict=True):
            value = population_value(truth, metric, k) if (metric, k) in POPULATION_CELLS \
                else metric_of(theta, metric, k)
            rows.append({"data": "simulated", "case": truth, "replicate": f"{truth} / {rep}",
                         "m": m, "rep": rep,
                         "metric": metric, "k": k, "truth": value,
                         "population": population_value(truth, metric, k),
                         "lower": lo, "upper": hi,
                         "never_solved": result.never_solved})
    return rows


def real(case, m: int) -> list[dict]:
    """One MATH subsample: shape-free intervals of every metric."""
    import passmix

    rows = []
    for metric in ("pass@k", "pass^k", "auc@k"):
        result = passmix.shape_free_interval(case.counts, REAL_K, metric)
        for i, k in enumerate(REAL_K):
            rows.append({"data": "MATH", "case": case.replicate.split(" / ")[0],
                         "replicate": case.replicate, "m": m, "rep": -1,
                         "metric": metric, "k": k, "truth": float(case.truth[metric][i]),
                         "population": np.nan, "lower": result.lower[i],
                         "upper": result.upper[i], "never_solved": result.never_solved})
    return rows


def rare(truth: str, rep: int) -> list[dict]:
    """One panel of rare_coverage.py (same seed, same counts): each system's shape-free
    Pass@k."""
    import passmix
    from rare_coverage import K, M, TARGETS, draw_panel, pass_at_k_over_tasks

    theta, y = draw_panel(truth, rep)
    rows = []
    for i in range(y.shape[0]):
        result = passmix.shape_free_interval(passmix.Counts(y[i], np.full(y.shape[1], M)), K)
        for c, k in enumerate(K):
            rows.append({"data": "rare", "case": truth, "replicate": f"{truth} / {rep} / r{i}",
                         "m": M, "rep": rep, "metric": "pass@k", "k": k,
                         "truth": float(pass_at_k_over_tasks(theta[i:i + 1], k)[0]),
                         "population": np.nan, "lower": result.lower[c],
                         "upper": result.upper[c], "never_solved": result.never_solved,
                         "rate": TARGETS[i]})
    return rows


def _rare_methods(df: pd.DataFrame) -> pd.DataFrame:
    """The rare panels' other intervals (mixture, pooled, union) beside the shape-free one."""
    from rare_coverage import with_union

    other = with_union(pd.read_csv(HERE / "rare_coverage.csv.gz"))
    other = other.assign(replicate=other.truth + " / " + other.rep.astype(str) + " / "
                         + other.system)
    wide = other.pivot_table(index=["replicate", "k"], columns="method",
                             values=["lower", "upper"])
    wide.columns = [f"{method}_{end}" for end, method in wide.columns]
    return df.merge(wide.reset_index(), on=["replicate", "k"], how="left")


def _with_default(df: pd.DataFrame) -> pd.DataFrame:
    """The default (profile) ends of the same data, from the earlier studies' csvs."""
    sim = pd.read_csv(HERE / "shape_coverage.csv").query("method == 'profile'")
    sim = sim.assign(replicate=sim.truth + " / " + sim.rep.astype(str))[
        ["replicate", "m", "metric", "k", "lower", "upper", "never_solved"]]
    real_parts = []
    for m in REAL_M:
        part = pd.read_csv(HERE / "beyond_the_trials" / f"math_coverage_{m}.csv")
        part = part.query("method == 'profile'").assign(m=m)
        real_parts.append(part[["replicate", "m", "metric", "k", "lower", "upper",
                                "never_solved"]])
    default = pd.concat([sim, *real_parts]).rename(
        columns={"lower": "default_lower", "upper": "default_upper",
                 "never_solved": "default_never_solved"})
    out = df.merge(default, on=["replicate", "m", "metric", "k"], how="left")
    # the same counts: the never-solved tally must agree wherever the default was run
    paired = out.default_never_solved.notna()
    if not (out.never_solved[paired] == out.default_never_solved[paired]).all():
        raise RuntimeError("the re-drawn replicates differ from the earlier study's")
    return out.drop(columns="default_never_solved")


def _covers(df: pd.DataFrame, prefix: str = "") -> pd.Series:
    return ((df[f"{prefix}lower"] - 1e-6 <= df.truth) & (df.truth <= df[f"{prefix}upper"] + 1e-6))


def _inside(df: pd.DataFrame, prefix: str) -> pd.Series:
    """The other interval within the shape-free one (to 1e-3): it claims nothing the counts
    alone rule out."""
    return (df[f"{prefix}lower"] >= df.lower - 1e-3) & (df[f"{prefix}upper"] <= df.upper + 1e-3)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The study's tables: coverage, mean width (points) and containment per cell."""
    out = {}
    for data, keys in (("simulated", ["case", "m", "metric", "k"]), ("MATH", ["m", "metric", "k"])):
        part = df[df.data == data]
        part = part.assign(covered=_covers(part), default_covered=_covers(part, "default_"),
                           width=100 * (part.upper - part.lower),
                           default_width=100 * (part.default_upper - part.default_lower),
                           inside=_inside(part, "default_"))
        agg = part.groupby(keys, sort=False).agg(
            n=("truth", "size"), covered=("covered", "mean"),
            default_covered=("default_covered", "mean"), width=("width", "mean"),
            default_width=("default_width", "mean"), inside=("inside", "mean"))
        agg["width_ratio"] = agg.default_width / agg.width
        out[data] = agg.round(3)
    sim = df[df.data == "simulated"]
    sim = sim.assign(population_covered=(sim.lower - 1e-9 <= sim.population)
                     & (sim.population <= sim.upper + 1e-9))
    out["population"] = (sim.groupby(["case", "m", "metric", "k"], sort=False)
                         .population_covered.mean().unstack(["metric", "k"]).round(3))
    part = df[df.data == "rare"]
    columns = {"covered": _covers(part), "width": 100 * (part.upper - part.lower)}
    for method in ("mixture", "pooled", "union"):
        columns[f"{method}_covered"] = _covers(part, f"{method}_")
        columns[f"{method}_width"] = 100 * (part[f"{method}_upper"] - part[f"{method}_lower"])
    columns["union_inside"] = _inside(part, "union_")
    out["rare"] = (part.assign(**columns).groupby(["case", "k"], sort=False)[list(columns)]
                   .mean().round(3))
    return out


def main() -> None:
    from joblib import Parallel, delayed

    from passmix.experiments.coverage import math_cases
    from shape_coverage import TRUTHS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--rare-reps", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    jobs = [delayed(simulated)(truth, m, rep) for truth in TRUTHS for m in SIM_M
            for rep in range(args.reps)]
    jobs += [delayed(real)(case, m) for m in REAL_M for case in math_cases(range(10), m, REAL_K)]
    jobs += [delayed(rare)(truth, rep) for truth in ("logistic", "heavy", "impossible")
             for rep in range(args.rare_reps)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = Parallel(n_jobs=args.jobs)(jobs)
    df = _rare_methods(_with_default(pd.DataFrame([row for part in parts for row in part])))
    elapsed = time.perf_counter() - started
    df.to_csv(HERE / "shape_free.csv.gz", index=False)
    found = tables(df)
    lines = [
        "# What the counts alone say: shape-free intervals beside the default",
        "",
        f"`python docs/results/shape_free.py --reps {args.reps} --rare-reps {args.rare_reps} "
        f"--jobs {args.jobs}` ({elapsed:.0f} s)",
        "",
        "`passmix.shape_free_interval` (95%: the DKW band of the counts, no shape) beside "
        "the default interval on the same data. `covered` is the shape-free interval's "
        "coverage of the metric over the drawn tasks (Pass^1000: the population's; MATH: "
        "all 10,000 trials), to 1e-6; `default_covered` the default profile interval's; "
        "widths in points; `width_ratio` the default's width over the shape-free one's; "
        "`inside` the share of cases where the default interval lies within the shape-free "
        "one (to 1e-3).",
        "",
        "## Simulated: shapes the fit does not assume (`shape_coverage.md`'s replicates)",
        "",
        found["simulated"].to_markdown(),
        "",
        "Coverage of the population's value (the band's own target):",
        "",
        found["population"].to_markdown(),
        "",
        "## MATH: 7 models x 10 subsamples (`beyond_the_trials/`'s cases)",
        "",
        found["MATH"].to_markdown(),
        "",
        "## Rare successes: 7 systems x 159 tasks, m = 60 (`rare_coverage.md`'s panels)",
        "",
        "Pass@k over the drawn tasks, 20 replicates a truth (140 intervals a cell): the "
        "shape-free interval, each system's mixture, the pooled model and their union "
        "(`estimate`'s auto there); `union_inside` as `inside` above.",
        "",
        found["rare"].to_markdown(),
        "",
    ]
    (HERE / "shape_free.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
