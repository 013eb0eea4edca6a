"""Coverage of one system's intervals when the truth has a shape the fit does not assume.

Run:  python docs/results/shape_coverage.py [--reps 100] [--tasks 75] [--m 5 10 50]
                                            [--truths bimodal impossible power_law]
                                            [--methods profile delta model zi_auto]
                                            [--cells pass@k:10 ... pass^k:1000]
                                            [--update] [--jobs 2]

Each replicate draws J tasks' success probabilities from a truth, m trials of
each, fits ``passmix.fit`` with its defaults (BIC over H = 1..4, no atom at 0)
and asks the 95% intervals of Pass@k at k = 10, 100, 1000 and Pass^k at
k = 10, 100, 1000. The truth of a replicate is the metric over its own drawn
tasks, the benchmark-level quantity a user's reference would measure, except
for Pass^1000: one or two tasks carry it, so it is scored against the
population's value (from log-Beta values). The truths (issue 48's suite):

* ``bimodal``: 0.4 Beta(0.5, 8) + 0.6 Beta(5, 2), which BIC often calls one Beta;
* ``impossible``: 30% of tasks at success rate 0, the rest Beta(1, 2);
* ``power_law``: 10% at 0 and 90% Beta(0.1, 1.5), a heavy tail near 0.

Methods: ``profile`` (the default interval: beyond the trials it joins the
metric over the observed tasks and, where some task was never solved, the
zero-inflated fit's, see ``MixtureFit.beyond_the_trials``), ``delta`` (the same
with delta-method parts), ``model`` (``conditional=True``: the Beta mixture's
own profile interval, the default before issue 48) and ``zi_auto``
(``zero_inflated="auto"``, its conditional profile intervals). ``--cells``
runs some cells alone; with ``--update`` their rows replace those of the
existing csv (the other cells' rows are kept) before the tables are made.
Prints and writes
``shape_coverage.csv`` (every interval) and ``shape_coverage.md`` (coverage,
mean width in points and the share of fits with H = 1, per cell) beside this
script.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CELLS = [("pass@k", 10), ("pass@k", 100), ("pass@k", 1000), ("pass^k", 10), ("pass^k", 100),
         ("pass^k", 1000)]
#: cells scored against the population's value, not the drawn tasks'
POPULATION_CELLS = {("pass^k", 1000)}
#: each truth as (weight of an atom at 0, [(weight, a, b), ...] of its Beta parts)
TRUTHS = {"bimodal": (0.0, [(0.4, 0.5, 8.0), (0.6, 5.0, 2.0)]),
          "impossible": (0.3, [(0.7, 1.0, 2.0)]),
          "power_law": (0.1, [(0.9, 0.1, 1.5)])}


def draw_truth(name: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n success probabilities from the truth called `name`."""
    if name == "bimodal":
        first = rng.random(n) < 0.4
        return np.where(first, rng.beta(0.5, 8.0, n), rng.beta(5.0, 2.0, n))
    if name == "impossible":
        return np.where(rng.random(n) < 0.3, 0.0, rng.beta(1.0, 2.0, n))
    if name == "power_law":
        return np.where(rng.random(n) < 0.1, 0.0, rng.beta(0.1, 1.5, n))
    raise ValueError(f"unknown truth {name!r}")


def population_value(name: str, metric: str, k: int) -> float:
    """The metric of the truth called `name` itself: E[p^k] or 1 - E[(1 - p)^k] over it."""
    from scipy.special import betaln

    zero, parts = TRUTHS[name]
    if metric == "pass^k":
        return float(sum(w * np.exp(betaln(a + k, b) - betaln(a, b)) for w, a, b in parts))
    return float(1.0 - zero - sum(w * np.exp(betaln(a, b + k) - betaln(a, b))
                                  for w, a, b in parts))


def metric_of(theta: np.ndarray, metric: str, k: int) -> float:
    """The metric over these tasks' probabilities."""
    if metric == "pass@k":
        return float(np.mean(-np.expm1(k * np.log1p(-theta))))
    return float(np.mean(theta ** k))


def replicate(truth: str, m: int, rep: int, n_tasks: int, methods, cells=CELLS) -> list[dict]:
    """Every method's intervals in one replicate."""
    import passmix

    rng = np.random.default_rng([48, m, rep, sum(map(ord, truth))])
    theta = draw_truth(truth, rng, n_tasks)
    counts = passmix.Counts(rng.binomial(m, theta), np.full(n_tasks, m))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = passmix.fit(counts, seed=rep)
        fits = {"profile": (plain, "profile", False), "delta": (plain, "delta", False),
                "model": (plain, "profile", True)}
        if "zi_auto" in methods:
            fits["zi_auto"] = (passmix.fit(counts, seed=rep, zero_inflated="auto"), "profile",
                               True)
        for method in methods:
            res, how, conditional = fits[method]
            for metric, k in cells:
                lo, hi = res.interval(metric, k, method=how, conditional=conditional)
                value = population_value(truth, metric, k) if (metric, k) in POPULATION_CELLS \
                    else metric_of(theta, metric, k)
                rows.append({"truth": truth, "m": m, "rep": rep, "method": method,
                             "metric": metric, "k": k, "truth_value": value,
                             "estimate": res.metric(metric, k), "lower": lo, "upper": hi,
                             "covered": bool(lo <= value <= hi),
                             "n_components": res.n_components,
                             "zero_inflated": type(res).__name__ == "ZeroInflatedFit",
                             "never_solved": int(np.sum(counts.successes == 0))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=75)
    parser.add_argument("--m", type=int, nargs="+", default=[5, 10, 50])
    parser.add_argument("--truths", nargs="+", default=["bimodal", "impossible", "power_law"])
    parser.add_argument("--methods", nargs="+", default=["profile", "delta", "model"])
    parser.add_argument("--cells", nargs="+", default=[f"{m}:{k}" for m, k in CELLS],
                        help="metric:k cells to run")
    parser.add_argument("--update", action="store_true",
                        help="replace these cells' rows in the existing csv")
    parser.add_argument("--jobs", type=int, default=1, help="processes (joblib)")
    parser.add_argument("--out", default=str(HERE / "shape_coverage"))
    args = parser.parse_args()
    started = time.perf_counter()
    from joblib import Parallel, delayed

    jobs = [(truth, m, rep) for truth in args.truths for m in args.m for rep in range(args.reps)]
    cells = [(cell.split(":")[0], int(cell.split(":")[1])) for cell in args.cells]
    parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(truth, m, rep, args.tasks, args.methods,
                                                          cells)
                                       for truth, m, rep in jobs)
    df = pd.DataFrame([row for part in parts for row in part])
    command = (f"`python docs/results/shape_coverage.py --reps {args.reps} --tasks {args.tasks}"
               f" --m {' '.join(map(str, args.m))} --truths {' '.join(args.truths)} --methods "
               f"{' '.join(args.methods)} --cells {' '.join(args.cells)}"
               f"{' --update' if args.update else ''}` "
               f"({time.perf_counter() - started:.0f} s)")
    commands = [command]
    if args.update:
        old = pd.read_csv(f"{args.out}.csv")
        keep = ~pd.Series(list(zip(old["metric"], old["k"]))).isin(cells).to_numpy()
        df = pd.concat([old[keep], df], ignore_index=True)
        made = Path(f"{args.out}.md").read_text().split("\n\n")[1]
        commands = [line.split(". Coverage of")[0] for line in made.splitlines()
                    if line.startswith("`")] + commands
    df.to_csv(f"{args.out}.csv", index=False)
    df["width"] = 100 * (df["upper"] - df["lower"])
    df["h1"] = df["n_components"] == 1
    table = (df.groupby(["truth", "m", "method", "metric", "k"], sort=False)
             .agg(coverage=("covered", "mean"), width=("width", "mean"), h1=("h1", "mean"),
                  n=("covered", "size")).reset_index())
    wide = table.pivot_table(index=["truth", "m", "method"], columns=["metric", "k"],
                             values="coverage", sort=False)
    wide.columns = [f"{metric.replace('^', '^')} {k}" for metric, k in wide.columns]
    h1 = table.groupby(["truth", "m", "method"], sort=False)["h1"].first()
    wide["share H = 1"] = h1
    text = (f"# Coverage of 95% intervals when the truth has another shape\n\n"
            + "\n".join(commands) + "\n\n"
            f"Coverage of the metric over each replicate's own {args.tasks} drawn tasks "
            "(Pass^1000: of the population's), "
            f"{args.reps} replicates per cell.\n\n" + wide.round(2).to_markdown() + "\n\nMean width "
            "(points):\n\n" + table.pivot_table(index=["truth", "m", "method"],
                                                columns=["metric", "k"], values="width",
                                                sort=False).round(1).to_markdown() + "\n")
    Path(f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
