"""Do paired comparisons cover where the truth is known? Simulated pairs, with and without a shared task order.

Run from the repository root (about 10 minutes on one core):
``python docs/results/compare/compare_simulated.py [--reps 40]``. It writes
docs/results/compare/simulated.md and the rows in compare_simulated.csv.gz.

Each replicate draws 100 tasks and 10 trials per task for two systems, in
one of three scenarios, and compares them with each method at k = 1, 10,
100, 1000 (the direct method at k <= 10); ``auto`` is pooled with the
per-pair check, which widens a refuted pair's intervals to take in the
mixture's ("pooled+mixture"). The target is the difference of
the two systems' metric over the simulated tasks' true success
probabilities.

* ``shared order``: the pooled model holds (abilities -0.5 and 0.5, one
  normal difficulty, Beta concentration 15): b is better at every k.
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
    d = rng.normal(1.0, 2.0, size=N_TASKS)
    base = rng.beta(expit(-d) * 10, expit(d) * 10)
    if scenario == "equal":
        return np.stack([base, base])
    lb = logit(np.clip(base, 1e-9, 1 - 1e-9))
    return np.stack([base, expit(np.where(base > 0.2, lb + 1.5,
                                          np.where(base < 0.05, lb - 2.5, lb)))])


def run(reps: int) -> pd.DataFrame:
    rows = []
    for scenario in ("shared order", "sharpened", "equal"):
        for rep in range(reps):
            rng = np.random.default_rng(1000 * len(scenario) + rep)
            p = draw(scenario, rng)
            truth = (1 - (1 - p[:, :, None]) ** K).mean(axis=1)
            panel = passmix.Panel(rng.binomial(TRIALS, p), np.full(p.shape, TRIALS))
            for method in ("auto", "pooled", "mixture", "direct"):
                k = K[K <= TRIALS] if method == "direct" else K
                res = passmix.compare(panel, 0, 1, k=k, method=method, seed=rep)
                target = (truth[1] - truth[0])[:k.size]
                whole = bool(np.all((res.band_lower[0] <= target)
                                    & (target <= res.band_upper[0])))
                rows += [{"scenario": scenario, "rep": rep, "method": method, "k": kv,
                          "target": target[c], "estimate": res.estimate[0, c],
                          "lower": res.lower[0, c], "upper": res.upper[0, c],
                          "certified": int(res.certified[0, c]), "band_covers": whole,
                          "used": res.summary()["method"].iloc[0]}
                         for c, kv in enumerate(k)]
        print(f"{scenario} done", flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--from-csv", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.from_csv is not None:
        table = pd.read_csv(args.from_csv)
    else:
        warnings.simplefilter("ignore")
        table = run(args.reps)
        table.to_csv(HERE / "compare_simulated.csv.gz", index=False, float_format="%.6g")
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
