"""Do per-system slopes (2PL) help the pooled model on the bundled real data?

Run from the repository root (about 10 minutes on 2 cores):
``python docs/results/pooled_slopes.py``. It writes docs/results/pooled_slopes.md
and the per-seed rows in pooled_slopes.csv.

Each seed draws the harness's own
subsets (``passmix experiment repeated`` streams, so the per-model mixture
and the pooled fits see the same trials as in docs/results/pooled.md) and
fits, on the subsample alone: the per-system Beta mixture; the pooled model
as by default (no slopes; per-system or shared concentration, AIC's choice);
with ``slope="auto"`` (AIC keeps slopes only if they pay for their I - 1
parameters); and with ``slope=True`` (always). The
reference is the combinatorial Pass@k of every recorded trial. Errors are
absolute, in points, averaged over systems.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import passmix
from passmix import Counts
from passmix.examples import example_path
from passmix.experiments import load_repeated, nested_subsets
from passmix.experiments._harness import group_id, stream
from passmix.experiments._subsets import _full_counts
from passmix.estimators import combinatorial_estimate

VARIANTS = {"mixture (per system)": None, "pooled": {}, 'pooled, slope="auto"': {"slope": "auto"},
            "pooled, slope=True": {"slope": True}}
CASES = [("MATH (7 Pythia models x 128)", "math_10k", 10, [1000], [0, 1, 2]),
         ("LiveCodeBench (43 models x 400)", "livecodebench", 3, [2, 3, 5, 10], [0, 1])]


def run_case(name: str, data: str, m: int, ks: list[int], seeds: list[int]) -> pd.DataFrame:
    groups = load_repeated(example_path(data), group_by="model", with_tasks=True)
    rows = []
    for seed in seeds:
        counts, refs = {}, {}
        for key, (trials, tasks) in groups.items():
            sub = nested_subsets(trials, [m], stream(seed, group_id(key), 0))[m]
            counts[key] = Counts(sub.successes, sub.trials, tasks)
            full = _full_counts(trials)
            refs[key] = np.asarray(combinatorial_estimate(full, "pass@k", ks))
        for variant, options in VARIANTS.items():
            started = time.perf_counter()
            if options is None:
                est = {key: passmix.fit(c, seed=stream(seed, group_id(key), 1, m))
                       .metric("pass@k", ks) for key, c in counts.items()}
                chosen = ""
            else:
                panel = passmix.Panel.from_counts(counts, unpack=False)
                fit = passmix.fit_pooled(panel, seed=stream(seed, 0, 2, m), **options)
                est = {key: fit.system(key).metric("pass@k", ks) for key in counts}
                chosen = ("slopes" if fit.slope else "no slopes") + f", {fit.concentration}"
            err = np.mean([np.abs(est[key] - refs[key]) for key in counts], axis=0) * 100
            rows += [{"data": name, "m": m, "seed": seed, "k": k, "variant": variant,
                      "mae": e, "chosen": chosen, "seconds": time.perf_counter() - started}
                     for k, e in zip(ks, err)]
            print(name, seed, variant, chosen, np.round(err, 2), flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("pooled_slopes.md"),
                        help="the report (the rows go beside it, as .csv)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    table = pd.concat([run_case(*case) for case in CASES], ignore_index=True)
    table.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.6g")
    about = " ".join(__doc__.split("\n\n")[2].split())
    lines = ["# Per-system slopes (2PL) in the pooled model", "",
             f"Made by `python docs/results/pooled_slopes.py` (rows: `pooled_slopes.csv`). "
             f"{about}", ""]
    for name, part in table.groupby("data", sort=False):
        seeds = sorted(part["seed"].unique())
        lines += [f"## {name}, m = {part['m'].iloc[0]}, seeds {', '.join(map(str, seeds))}", "",
                  "Pass@k MAE (points), mean over seeds:", ""]
        wide = part.pivot_table(index="variant", columns="k", values="mae", sort=False)
        secs = part.drop_duplicates(["seed", "variant"]).groupby("variant", sort=False)[
            "seconds"].mean()
        lines += ["| variant | " + " | ".join(f"k = {k}" for k in wide.columns)
                  + " | fit time (s) |", "|---|" + "---|" * (wide.shape[1] + 1)]
        lines += [f"| {v} | " + " | ".join(f"{x:.2f}" for x in row) + f" | {secs[v]:.1f} |"
                  for v, row in wide.iterrows()]
        auto = part[part["variant"] == 'pooled, slope="auto"'].drop_duplicates("seed")
        lines += ["", "AIC's choice with `slope=\"auto\"` (slopes, concentration), per seed: "
                  + ", ".join(f"{s}: {c}" for s, c in zip(auto["seed"], auto["chosen"])), ""]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
