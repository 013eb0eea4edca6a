"""Coverage where successes are rare: 7 systems x 159 tasks, m = 60, rates 1e-4 to 1e-2.

Run:  python docs/results/rare_coverage.py [--reps 40] [--truths logistic heavy impossible]
                                           [--methods mixture pooled] [--jobs 2] [--report]
                                           [--update]

Issue 49's rare-success regime (jailbreak attacks, hard agentic tasks), the
design of ``benchmarks/bench_rare.py``: each replicate draws 159 task
difficulties, sets each system's ability so that its mean success over the
drawn tasks is its target rate (1e-4 to 1e-2, log-evenly over 7 systems),
and runs m = 60 trials of every task, with success probability
``expit(a_i - d_j)``. The truths differ in the difficulties' shape:

* ``logistic``: d ~ N(0, 1.5): the pooled model's own shape, at its binomial
  limit;
* ``heavy``: d ~ 1.5 t(3): more tasks far from the middle than a normal (or a
  Beta tail) puts there, the shape of the misses on held-back attack data,
  where rates below 1/60 were more common than the fitted tail said;
* ``impossible``: 20% of the tasks can never be solved (rate 0 for every
  system: a broken environment, a wrong reference), the rest as ``logistic``.

Methods: ``mixture`` is what ``passmix estimate`` does by default here (auto
fits each system's own Beta mixture beyond 20 trials per task): each
system's ``passmix.fit(...).interval`` (its default: beyond the trials it
also spans an atom at 0 and the metric over these tasks); ``pooled`` is
``passmix.fit_pooled(panel).system(s).interval`` (profile); ``union`` (in
the tables, from the two) spans both beyond the trials and is the mixture's
within them: what ``passmix estimate``'s auto gives here since this study
(the mixture's estimate; beyond each system's trials its intervals also span
the pooled model's). The target is
each system's Pass@k over the replicate's own 159 tasks, at k = 60 (the
trials), 600, 1200 and 6000 (issue 49's horizons). Writes
``rare_coverage.csv.gz`` (every interval) and ``rare_coverage.md`` beside this
script; ``--report`` remakes the table from the csv, and ``--update`` replaces only
the rows of the truths and methods run (the others keep theirs, and the table lists
every command that made its rows).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
N_SYS, N_TASKS, M = 7, 159, 60
K = (60, 600, 1200, 6000)
TARGETS = np.geomspace(1e-4, 1e-2, N_SYS)


def draw_panel(truth: str, rep: int):
    """One replicate's true success probabilities (systems x tasks) and counts."""
    from scipy.optimize import brentq
    from scipy.special import expit

    rng = np.random.default_rng([49, rep, sum(map(ord, truth))])
    if truth == "heavy":
        d = 1.5 * rng.standard_t(3, N_TASKS)
    elif truth in ("logistic", "impossible"):
        d = rng.normal(0.0, 1.5, N_TASKS)
    else:
        raise ValueError(f"unknown truth {truth!r}")
    solvable = np.ones(N_TASKS) if truth != "impossible" else (rng.random(N_TASKS) >= 0.2)
    a = np.array([brentq(lambda x, t=t: (solvable * expit(x - d)).mean() - t, -60.0, 20.0)
                  for t in TARGETS])
    theta = solvable * expit(a[:, None] - d[None, :])
    return theta, rng.binomial(M, theta)


def pass_at_k_over_tasks(theta: np.ndarray, k: int) -> np.ndarray:
    """Each system's Pass@k over these tasks."""
    return np.mean(-np.expm1(k * np.log1p(-theta)), axis=1)


def replicate(truth: str, rep: int, methods) -> list[dict]:
    import passmix

    theta, y = draw_panel(truth, rep)
    trials = np.full(y.shape, M)
    systems = [f"r{i}" for i in range(N_SYS)]
    k = np.array(K)
    truths = np.array([pass_at_k_over_tasks(theta, kv) for kv in K]).T  # (I, K)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in methods:
            started = time.process_time()
            if method == "pooled":
                fit = passmix.fit_pooled(passmix.Panel(y, trials, systems=systems), seed=rep)
                found = [(fit.system(s).metric("pass@k", k),
                          fit.system(s).interval("pass@k", k)) for s in systems]
            elif method == "mixture":
                found = []
                for i in range(N_SYS):
                    res = passmix.fit(passmix.Counts(y[i], trials[i]), seed=rep)
                    found.append((res.metric("pass@k", k), res.interval("pass@k", k)))
            else:
                raise ValueError(f"unknown method {method!r}")
            seconds = (time.process_time() - started) / N_SYS
            for i, (est, (lo, hi)) in enumerate(found):
                for c, kv in enumerate(K):
                    rows.append({"truth": truth, "rep": rep, "method": method,
                                 "system": systems[i], "rate": TARGETS[i], "k": kv,
                                 "successes": int(y[i].sum()), "truth_value": truths[i, c],
                                 "estimate": float(est[c]), "lower": float(lo[c]),
                                 "upper": float(hi[c]),
                                 "covered": bool(lo[c] <= truths[i, c] <= hi[c]),
                                 "below": bool(truths[i, c] < lo[c]),
                                 "cpu_s_per_system": seconds})
    return rows


def with_union(df: pd.DataFrame) -> pd.DataFrame:
    """The rows plus, where a replicate has both methods, their union beyond the trials (the
    smaller lower end, the larger upper end; the mixture's estimate, and its ends within the
    trials): what ``passmix estimate``'s auto gives."""
    key = ["truth", "rep", "system", "k"]
    both = df[df["method"] == "mixture"].merge(df[df["method"] == "pooled"], on=key,
                                               suffixes=("", "_pooled"))
    if both.empty:
        return df
    beyond = both["k"] > M
    union = both[df.columns].assign(
        method="union",
        lower=np.where(beyond, np.minimum(both["lower"], both["lower_pooled"]), both["lower"]),
        upper=np.where(beyond, np.maximum(both["upper"], both["upper_pooled"]), both["upper"]),
        cpu_s_per_system=both["cpu_s_per_system"] + both["cpu_s_per_system_pooled"])
    union["covered"] = (union["lower"] <= union["truth_value"]) & (
        union["truth_value"] <= union["upper"])
    union["below"] = union["truth_value"] < union["lower"]
    return pd.concat([df, union], ignore_index=True)


def report(df: pd.DataFrame, commands: list[str]) -> str:
    df = with_union(df)
    df = df.assign(width=100 * (df["upper"] - df["lower"]),
                   error=100 * (df["estimate"] - df["truth_value"]))
    table = (df.groupby(["truth", "method", "k"], sort=False)
             .agg(coverage=("covered", "mean"), below=("below", "mean"),
                  width=("width", "mean"), bias=("error", "mean"),
                  mae=("error", lambda e: e.abs().mean()), n=("covered", "size"),
                  cpu=("cpu_s_per_system", "mean")).reset_index())
    by_rate = (df[df["k"] == K[-1]].groupby(["truth", "method", "rate"], sort=False)
               ["covered"].mean().unstack("rate"))
    by_rate.columns = [f"{r:.0e}" for r in by_rate.columns]
    reps = ", ".join(f"{t} {m} {n}" for (t, m), n in
                     df.groupby(["truth", "method"], sort=False)["rep"].nunique().items())
    return ("# Coverage where successes are rare\n\n" + "\n".join(commands) + "\n\n"
            "See the script's docstring for the simulation. Coverage of 95% intervals of "
            "each system's Pass@k over its replicate's own 159 tasks; the share of truths "
            "below the lower end; mean width, bias and MAE in points; CPU seconds per "
            f"system (fit and intervals); n intervals a cell (7 systems a replicate; "
            f"replicates of each truth and method: {reps}).\n\n"
            + table.round({"coverage": 2, "below": 2, "width": 1, "bias": 2, "mae": 2,
                           "cpu": 1}).to_markdown(index=False)
            + f"\n\nCoverage at k = {K[-1]} by each system's rate:\n\n"
            + by_rate.round(2).to_markdown() + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--truths", nargs="+", default=["logistic", "heavy", "impossible"])
    parser.add_argument("--methods", nargs="+", default=["mixture", "pooled"])
    parser.add_argument("--jobs", type=int, default=1, help="processes (joblib)")
    parser.add_argument("--report", action="store_true", help="remake the table from the csv")
    parser.add_argument("--update", action="store_true",
                        help="replace only the rows of these truths and methods in the csv")
    parser.add_argument("--out", default=str(HERE / "rare_coverage"))
    args = parser.parse_args()
    if args.report or args.update:
        text = Path(f"{args.out}.md").read_text().split("\n\n")[1]
        df = pd.read_csv(f"{args.out}.csv.gz")
        commands = text.splitlines()
    if not args.report:
        from joblib import Parallel, delayed

        started = time.perf_counter()
        jobs = [(truth, rep) for rep in range(args.reps) for truth in args.truths]
        parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(truth, rep, args.methods)
                                           for truth, rep in jobs)
        new = pd.DataFrame([row for part in parts for row in part])
        command = (f"`python docs/results/rare_coverage.py --reps {args.reps} "
                   f"--truths {' '.join(args.truths)} --methods {' '.join(args.methods)} "
                   f"--jobs {args.jobs}{' --update' if args.update else ''}` "
                   f"({(time.perf_counter() - started) / 60:.0f} minutes on 2 cores).")
        if args.update:
            kept = ~(df["truth"].isin(args.truths) & df["method"].isin(args.methods))
            df = pd.concat([df[kept], new], ignore_index=True)
            commands = [*commands, "Then " + command]
        else:
            df, commands = new, ["Made by " + command]
        df.to_csv(f"{args.out}.csv.gz", index=False)
    text = report(df, commands)
    Path(f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
