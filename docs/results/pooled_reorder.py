"""Pooled intervals where the model is wrong: systems that order the tasks differently.

Run:  python docs/results/pooled_reorder.py [--reps 40] [--m 10 50] [--rho 1 0.9 0.7]
                                           [--jobs 2] [--update] [--models pooled]
                                           [--report "Made by ..."]
                                           [--out docs/results/pooled_reorder.md]

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
95% interval of Pass@k and Pass^k at k = 10, 100, 1000: the pooled model's
profile intervals (its default here: 768 cells) and its delta intervals, and
the per-system Beta mixture's default intervals (``passmix.fit``), and from
the two the intervals of ``passmix estimate``'s default (auto: the pooled ones,
beyond the trials widened to hold the mixture's). The truth is the metric of
the tasks' own success probabilities. Writes the rows
(``pooled_reorder.csv``) and a table of coverage, mean width and bias
(points) per m, rho, metric, k and method. ``--update`` keeps the rows of the
(m, rho) cells not re-run (rows made before Pass^k was added are Pass@k's).
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
METRICS = ("pass@k", "pass^k")
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


def replicate(m: int, rho: float, rep: int, models=("pooled", "mixture")) -> list[dict]:
    import passmix

    warnings.simplefilter("ignore")
    rng = np.random.default_rng([2026, m, int(round(100 * rho)), rep])
    y, p = simulate(rng, rho, m)
    truths = {"pass@k": np.mean(1.0 - (1.0 - p[:, :, None]) ** K[None, None, :], axis=1),
              "pass^k": np.mean(p[:, :, None] ** K[None, None, :], axis=1)}  # (I, K) each
    trials = np.full(y.shape, m)
    rows = []

    def add(method, metric, i, estimate, lower, upper):
        rows.extend({"m": m, "rho": rho, "rep": rep, "system": i, "metric": metric,
                     "k": int(k), "method": method, "estimate": e, "lower": lo,
                     "upper": hi, "truth": t}
                    for k, e, lo, hi, t in zip(K, estimate, lower, upper, truths[metric][i]))

    fit = passmix.fit_pooled(passmix.Panel(y, trials), seed=rep)
    for method in ("profile", "delta") if "pooled" in models else ():
        table = fit.summary(K, method=method)
        for metric in METRICS:
            for i, system in enumerate(fit.systems):
                part = table[(table["system"] == system) & (table["metric"] == metric)]
                add(f"pooled {method}", metric, i, part["estimate"], part["lower"],
                    part["upper"])
    for i in range(ABILITY.size if "mixture" in models else 0):
        mix = passmix.fit(passmix.Counts(y[i], trials[i]), seed=rep)
        for metric in METRICS:
            ends = mix.interval(metric, K)
            add("mixture profile", metric, i, mix.metric(metric, K), ends.lower, ends.upper)
    return rows


#: the absolute slack of the second coverage column: Pass^k far beyond the trials of
#: systems whose rates are a few percent is 1e-9 to 1e-300, and no reading of it moves
RESOLUTION = 1e-6


#: estimate's default on such a panel: the pooled rows, their ends beyond the trials
#: widened to hold the system's own mixture's
AUTO = "auto (pooled, with the own mixture beyond the trials)"


def with_auto(df: pd.DataFrame) -> pd.DataFrame:
    """`df` and the rows of :data:`AUTO`, wherever a replicate has both models' rows;
    auto pools only up to a median of ``POOLED_MAX_TRIALS`` trials per task, so beyond
    that (m = 50) its rows are the mixture's."""
    from passmix._defaults import POOLED_MAX_TRIALS

    keys = ["m", "rho", "rep", "system", "metric", "k"]
    pooled = df[df["method"] == "pooled profile"].set_index(keys)
    own = df[df["method"] == "mixture profile"].set_index(keys)
    both = pooled.index.intersection(own.index)
    auto = pooled.loc[both].copy()
    m = auto.index.get_level_values("m")
    beyond = auto.index.get_level_values("k") > m
    auto.loc[beyond, "lower"] = np.minimum(auto["lower"], own.loc[both, "lower"])[beyond]
    auto.loc[beyond, "upper"] = np.maximum(auto["upper"], own.loc[both, "upper"])[beyond]
    mixture = m > POOLED_MAX_TRIALS
    auto.loc[mixture, ["estimate", "lower", "upper"]] = own.loc[both].loc[
        mixture, ["estimate", "lower", "upper"]].to_numpy()
    auto["method"] = AUTO
    return pd.concat([df, auto.reset_index()[df.columns]], ignore_index=True)


def report(df: pd.DataFrame) -> pd.DataFrame:
    df = with_auto(df)
    df = df.assign(covered=(df["lower"] <= df["truth"]) & (df["truth"] <= df["upper"]),
                   resolved=(df["lower"] - RESOLUTION <= df["truth"])
                   & (df["truth"] <= df["upper"] + RESOLUTION),
                   below=df["truth"] < df["lower"],
                   width=100 * (df["upper"] - df["lower"]),
                   error=100 * (df["estimate"] - df["truth"]))
    return (df.groupby(["m", "rho", "metric", "k", "method"])
            .agg(coverage=("covered", "mean"), resolved=("resolved", "mean"),
                 below=("below", "mean"), width=("width", "mean"),
                 bias=("error", "mean"), mae=("error", lambda e: e.abs().mean()),
                 n=("covered", "size"))
            .reset_index())


def write(df: pd.DataFrame, made_by: str, out: Path) -> str:
    """The markdown table of `df`'s rows, under `made_by` (how they were made)."""
    lines = [
        "# Pooled intervals where the model is wrong: systems that reorder tasks", "",
        f"{made_by} See the script's docstring for the simulation. Coverage of the 95% "
        f"intervals, and within an absolute {RESOLUTION:g} of the truth; the share of "
        "truths below the lower end; mean width, bias and MAE in points; n intervals a "
        "cell (6 systems a replicate, which share their tasks). With `--update`, the cells "
        "not re-run keep their rows (made earlier, with the code of their time, and fewer "
        "replicates: their n says; before Pass^k was added, Pass@k alone). "
        f"\"{AUTO}\" is `passmix estimate`'s default on such a panel, made from the two "
        "models' rows of the replicates that have both: the pooled estimate and ends, "
        "beyond the trials widened to hold the mixture's (at m = 50, beyond the 20 trials "
        "per task auto pools up to, the mixture's).", "",
        f"| m | rho | metric | k | method | coverage | within {RESOLUTION:g} | below | "
        "width | bias | MAE | n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report(df).itertuples(index=False):
        lines.append(f"| {row.m} | {row.rho:g} | {row.metric} | {row.k} | {row.method} | "
                     f"{row.coverage:.2f} | {row.resolved:.2f} | {row.below:.2f} | "
                     f"{row.width:.1f} | {row.bias:+.2f} | {row.mae:.2f} | {row.n} |")
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    return text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--m", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--rho", type=float, nargs="+", default=[1.0, 0.9, 0.7])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--update", action="store_true",
                        help="keep the existing rows of the (m, rho) cells not re-run")
    parser.add_argument("--models", nargs="+", choices=("pooled", "mixture"),
                        default=["pooled", "mixture"],
                        help="which models to run (with --update the other's rows are kept)")
    parser.add_argument("--report", metavar="MADE_BY",
                        help="rebuild the table from the rows alone, under this line")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).with_name("pooled_reorder.md"))
    args = parser.parse_args(argv)
    csv = args.out.with_suffix(".csv")
    if args.report:
        print(write(pd.read_csv(csv), args.report, args.out))
        return
    from joblib import Parallel, delayed

    started = time.perf_counter()
    cases = [(m, rho, rep) for m in args.m for rho in args.rho for rep in range(args.reps)]
    parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(*case, models=args.models)
                                       for case in cases)
    df = pd.DataFrame([row for part in parts for row in part])
    if args.update and csv.exists():
        kept = pd.read_csv(csv)
        if "metric" not in kept:
            kept.insert(4, "metric", "pass@k")
        rerun = kept.set_index(["m", "rho"]).index.isin(
            df.set_index(["m", "rho"]).index.unique()) & kept["method"].str.split().str[
            0].isin(args.models).to_numpy()
        df = pd.concat([kept[~rerun], df], ignore_index=True)
    df.to_csv(csv, index=False, float_format="%.6g")
    minutes = (time.perf_counter() - started) / 60
    options = (f"--reps {args.reps} --m {' '.join(map(str, args.m))} "
               f"--rho {' '.join(f'{r:g}' for r in args.rho)}"
               f"{' --update' if args.update else ''}"
               f"{'' if len(args.models) == 2 else ' --models ' + ' '.join(args.models)}")
    print(write(df, f"Made by `python docs/results/pooled_reorder.py {options}` ({minutes:.0f} "
                    f"minutes on {args.jobs} processes; rows: `pooled_reorder.csv`).", args.out))


if __name__ == "__main__":
    main()
