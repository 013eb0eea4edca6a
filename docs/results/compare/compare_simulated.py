"""Do paired comparisons cover where the truth is known? Simulated pairs, with and without a shared task order.

Run from the repository root (about 25 minutes on one core):
``python docs/results/compare/compare_simulated.py [--reps 40] [--jobs 2]``.
It writes docs/results/compare/simulated.md and the rows in
compare_simulated.csv.gz; ``--scenarios`` and ``--methods`` re-run some cells
and keep the others' rows, ``--from-csv`` rebuilds the table.

Each replicate draws 100 tasks and 10 trials per task for two systems, in
one of four scenarios, and compares them with each method at k = 1, 10,
100, 1000 (the direct method at k <= 10); ``auto`` is pooled with the
per-pair check, which widens a refuted pair's intervals to take in the
mixture's ("pooled+mixture"). The target is the difference of the two
systems' metric over the simulated tasks' true success probabilities.

* ``shared order``: the pooled model holds (abilities -0.5 and 0.5, one
  normal difficulty, Beta concentration 15): b is better at every k.
* ``reordered``: as ``shared order``, but each system sees its own difficulty
  of a task, ``1 + 1.5 (0.7 z_j + 0.71 z_ij)`` (z standard normal): the
  systems order the tasks alike only in part (difficulty correlation 0.49,
  as ``docs/results/pooled_reorder.py`` at rho = 0.7, where each system's
  own pooled Pass@100 interval covered 0.85), which the check within 10
  trials seldom sees.
* ``sharpened``: "RL" sharpening of a base system (easy tasks, base rate above
  0.2, gain 1.5 logits; rare solves, below 0.05, lose 2.5): b is better at k = 1
  and worse from k = 100, so the curves cross, and the two systems order the
  tasks differently.
* ``equal``: b is a copy of a's success probabilities (its own trials): no
  difference at any k, so every certified sign is wrong.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit

import passmix

HERE = Path(__file__).parent
K = np.array([1, 10, 100, 1000])
N_TASKS, TRIALS = 100, 10


def draw(scenario: str, rng: np.random.Generator) -> np.ndarray:
    """(2, J) the two systems' true success probabilities."""
    if scenario == "shared order":
        mu = expit(np.array([[-0.5], [0.5]]) - rng.normal(1.0, 1.5, N_TASKS)[None, :])
        return rng.beta(mu * 15, (1 - mu) * 15)
    if scenario == "reordered":
        z = 0.7 * rng.standard_normal(N_TASKS) + np.sqrt(1 - 0.49) * rng.standard_normal(
            (2, N_TASKS))
        mu = expit(np.array([[-0.5], [0.5]]) - (1.0 + 1.5 * z))
        return rng.beta(mu * 15, (1 - mu) * 15)
    d = rng.normal(1.0, 2.0, size=N_TASKS)
    base = rng.beta(expit(-d) * 10, expit(d) * 10)
    if scenario == "equal":
        return np.stack([base, base])
    lb = logit(np.clip(base, 1e-9, 1 - 1e-9))
    return np.stack([base, expit(np.where(base > 0.2, lb + 1.5,
                                          np.where(base < 0.05, lb - 2.5, lb)))])


SCENARIOS = ("shared order", "reordered", "sharpened", "equal")
METHODS = ("auto", "pooled", "mixture", "direct")


def replicate(scenario: str, rep: int, methods=METHODS) -> list[dict]:
    """One replicate's rows: each method's difference at each k."""
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(1000 * len(scenario) + rep)
    p = draw(scenario, rng)
    truth = (1 - (1 - p[:, :, None]) ** K).mean(axis=1)
    panel = passmix.Panel(rng.binomial(TRIALS, p), np.full(p.shape, TRIALS))
    rows = []
    for method in methods:
        k = K[K <= TRIALS] if method == "direct" else K
        res = passmix.compare(panel, 0, 1, k=k, method=method, seed=rep)
        target = (truth[1] - truth[0])[:k.size]
        whole = bool(np.all((res.band_lower[0] <= target) & (target <= res.band_upper[0])))
        rows += [{"scenario": scenario, "rep": rep, "method": method, "k": kv,
                  "target": target[c], "estimate": res.estimate[0, c],
                  "lower": res.lower[0, c], "upper": res.upper[0, c],
                  "certified": int(res.certified[0, c]), "band_covers": whole,
                  "used": res.summary()["method"].iloc[0]}
                 for c, kv in enumerate(k)]
    return rows


def run(reps: int, scenarios=SCENARIOS, methods=METHODS, jobs: int = 1) -> pd.DataFrame:
    from joblib import Parallel, delayed

    cases = [(scenario, rep) for scenario in scenarios for rep in range(reps)]
    parts = Parallel(n_jobs=jobs, verbose=5)(delayed(replicate)(sc, rep, methods)
                                             for sc, rep in cases)
    return pd.DataFrame([row for part in parts for row in part])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--from-csv", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = HERE / "compare_simulated.csv.gz"
    if args.from_csv is not None:
        table = pd.read_csv(args.from_csv)
    else:
        warnings.simplefilter("ignore")
        table = run(args.reps, args.scenarios, args.methods, args.jobs)
        if rows.exists():  # keep the cells not re-run
            old = pd.read_csv(rows)
            redone = old["scenario"].isin(args.scenarios) & old["method"].isin(args.methods)
            table = pd.concat([old[~redone], table], ignore_index=True)
        order = {s: n for n, s in enumerate(SCENARIOS)}
        table = table.sort_values(["scenario", "method", "rep", "k"], key=lambda c: (
            c.map(order) if c.name == "scenario" else c.map(METHODS.index)
            if c.name == "method" else c), kind="stable").reset_index(drop=True)
        table.to_csv(rows, index=False, float_format="%.6g")
    table["covered"] = (table["lower"] <= table["target"]) & (table["target"] <= table["upper"])
    certified = table["certified"] != 0
    table["wrong"] = certified & (np.sign(table["target"]) != table["certified"])
    table["width"] = table["upper"] - table["lower"]
    summary = table.groupby(["scenario", "method", "k"], sort=False).agg(
        used=("used", lambda u: ", ".join(f"{v} {n}" for v, n in u.value_counts().items())),
        target=("target", "mean"), coverage=("covered", "mean"), band=("band_covers", "mean"),
        certified=("certified", lambda c: int((c != 0).sum())), wrong=("wrong", "sum"),
        width=("width", "mean"), n=("covered", "size")).reset_index()
    parts = __doc__.split("\n\n")
    bullets = ["* " + " ".join(b.split()) for b in parts[3].split("* ") if b.strip()]
    about = " ".join(parts[2].split()) + "\n\n" + "\n".join(bullets)
    lines = ["# Paired comparisons in simulation: coverage, bands and signs", "",
             "Made by `python docs/results/compare/compare_simulated.py` (rows: "
             "`compare_simulated.csv.gz`). " + about, "",
             "| scenario | method (pairs using) | k | mean target | coverage | band | certified "
             "| wrong signs | mean width | n |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.scenario} | {r.method} ({r.used}) | {r.k} | {r.target:+.3f} | "
                     f"{r.coverage:.2f} | {r.band:.2f} | {r.certified} | {r.wrong} | "
                     f"{r.width:.3f} | {r.n} |")
    (HERE / "simulated.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
