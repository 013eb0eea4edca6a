"""Do paired comparisons cover where successes are rare? Pairs of the rare-success panel.

Run from the repository root:
``python docs/results/compare/compare_rare.py [--reps 20] [--jobs 2] [--report]``.
It writes docs/results/compare/rare.md and the rows in compare_rare.csv.gz.

The design is ``docs/results/rare_coverage.py``'s (7 systems x 159 tasks,
m = 60 trials, each system's mean success rate over the drawn tasks set
log-evenly from 1e-4 to 1e-2, three shapes of the task difficulties:
``logistic``, ``heavy`` and ``impossible``). Each replicate compares the
three neighbouring pairs of its four strongest systems (rates 1e-3, 2.2e-3,
4.6e-3 and 1e-2: ``PAIRS``), b minus a, at k = 60 (the trials), 600 and
6000.
The target is the difference of the two systems' Pass@k over the
replicate's own 159 tasks.

Methods: ``auto`` is what ``passmix compare`` did by default here when the
committed rows were made (past 20 trials per task: each system's own Beta
mixture, the intervals joined by MOVER); ``pooled`` is the pooled model's
profile difference (one joint fit of the seven systems per replicate);
``union`` (in the tables, from the two) is auto's within the trials and
spans both beyond them. Since this study ``compare``'s auto is that union
itself (``MixtureMethod(pooled_beyond=True)``): re-run, the ``auto`` rows
are the union, and ``method="mixture"`` gives the mixtures alone.
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
sys.path.insert(0, str(HERE.parent))
from rare_coverage import M, N_SYS, TARGETS, draw_panel, pass_at_k_over_tasks  # noqa: E402

K = (60, 600, 6000)
PAIRS = ((3, 4), (4, 5), (5, 6))
TRUTHS = ("logistic", "heavy", "impossible")


def replicate(truth: str, rep: int, methods) -> list[dict]:
    import passmix

    theta, y = draw_panel(truth, rep)
    systems = [f"r{i}" for i in range(N_SYS)]
    panel = passmix.Panel(y, np.full(y.shape, M), systems=systems)
    k = np.array(K)
    truths = np.array([pass_at_k_over_tasks(theta, kv) for kv in K]).T  # (I, K)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in methods:
            started = time.process_time()
            data = passmix.fit_pooled(panel, seed=rep) if method == "pooled" else panel
            found = [passmix.compare(data, systems[a], systems[b], k=k, method=method,
                                     seed=rep) for a, b in PAIRS]
            seconds = (time.process_time() - started) / len(PAIRS)
            for (a, b), res in zip(PAIRS, found):
                used = res.summary()["method"].iloc[0]
                for c, kv in enumerate(K):
                    target = truths[b, c] - truths[a, c]
                    lo, hi = float(res.lower[0, c]), float(res.upper[0, c])
                    rows.append({"truth": truth, "rep": rep, "method": method, "used": used,
                                 "a": systems[a], "b": systems[b], "rate_b": TARGETS[b],
                                 "k": kv, "target": target,
                                 "estimate": float(res.estimate[0, c]), "lower": lo,
                                 "upper": hi, "certified": int(res.certified[0, c]),
                                 "cpu_s_per_pair": seconds})
    return rows


def with_union(df: pd.DataFrame) -> pd.DataFrame:
    """The rows plus auto's and the pooled model's union beyond the trials."""
    key = ["truth", "rep", "a", "b", "k"]
    both = df[df["method"] == "auto"].merge(df[df["method"] == "pooled"], on=key,
                                            suffixes=("", "_pooled"))
    if both.empty:
        return df
    beyond = both["k"] > M
    lower = np.where(beyond, np.minimum(both["lower"], both["lower_pooled"]), both["lower"])
    upper = np.where(beyond, np.maximum(both["upper"], both["upper_pooled"]), both["upper"])
    union = both[df.columns].assign(
        method="union", used="auto+pooled", lower=lower, upper=upper,
        certified=np.where(lower > 0, 1, np.where(upper < 0, -1, 0)),
        cpu_s_per_pair=both["cpu_s_per_pair"] + both["cpu_s_per_pair_pooled"])
    return pd.concat([df, union], ignore_index=True)


def report(df: pd.DataFrame, command: str) -> str:
    df = with_union(df)
    covered = (df["lower"] <= df["target"]) & (df["target"] <= df["upper"])
    df = df.assign(covered=covered, below=df["target"] < df["lower"],
                   width=100 * (df["upper"] - df["lower"]),
                   error=100 * (df["estimate"] - df["target"]),
                   wrong=(df["certified"] != 0) & (np.sign(df["target"]) != df["certified"]))
    table = (df.groupby(["truth", "method", "k"], sort=False)
             .agg(coverage=("covered", "mean"), below=("below", "mean"),
                  width=("width", "mean"), mae=("error", lambda e: e.abs().mean()),
                  certified=("certified", lambda c: int((c != 0).sum())),
                  wrong=("wrong", "sum"), n=("covered", "size"),
                  cpu=("cpu_s_per_pair", "mean")).reset_index())
    by_pair = (df[df["k"] == K[-1]].groupby(["truth", "method", "b"], sort=False)
               ["covered"].mean().unstack("b"))
    by_pair.columns = [f"{c} (rate {TARGETS[int(c[1:])]:.1e})" for c in by_pair.columns]
    reps = df.groupby("truth")["rep"].nunique().to_dict()
    return ("# Paired comparisons where successes are rare\n\n" + command + "\n\n"
            + " ".join(__doc__.split("\n\n")[2].split()) + " "
            + " ".join(__doc__.split("\n\n")[3].split()) + "\n\n"
            "Coverage of 95% intervals of the difference; the share of targets below the "
            "lower end; mean width and MAE in points; signs certified (the band's) and how "
            "many were wrong; CPU seconds per pair; n intervals a cell (3 pairs a "
            f"replicate; replicates: {reps}).\n\n"
            + table.round({"coverage": 2, "below": 2, "width": 1, "mae": 2, "cpu": 1})
            .to_markdown(index=False)
            + f"\n\nCoverage at k = {K[-1]} by pair (named by b, the stronger system):\n\n"
            + by_pair.round(2).to_markdown() + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--truths", nargs="+", choices=TRUTHS, default=list(TRUTHS))
    parser.add_argument("--methods", nargs="+", choices=("auto", "pooled"),
                        default=["auto", "pooled"])
    parser.add_argument("--jobs", type=int, default=1, help="processes (joblib)")
    parser.add_argument("--report", action="store_true", help="remake the table from the csv")
    args = parser.parse_args()
    rows, out = HERE / "compare_rare.csv.gz", HERE / "rare.md"
    if args.report:
        df = pd.read_csv(rows)
        command = out.read_text().split("\n\n")[1]
    else:
        from joblib import Parallel, delayed

        started = time.perf_counter()
        cases = [(truth, rep) for rep in range(args.reps) for truth in args.truths]
        parts = Parallel(n_jobs=args.jobs)(delayed(replicate)(truth, rep, args.methods)
                                           for truth, rep in cases)
        df = pd.DataFrame([row for part in parts for row in part])
        df.to_csv(rows, index=False)
        command = (f"Made by `python docs/results/compare/compare_rare.py --reps {args.reps} "
                   f"--truths {' '.join(args.truths)} --methods {' '.join(args.methods)} "
                   f"--jobs {args.jobs}` "
                   f"({(time.perf_counter() - started) / 60:.0f} minutes with {args.jobs} "
                   f"process{'es' if args.jobs > 1 else ''}).")
    text = report(df, command)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
