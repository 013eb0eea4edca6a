"""Are paired comparisons honest on real data? Every pair's difference from a subsample against all trials.

Run from the repository root (about 40 minutes on one core; ``--data math_10k``
and ``--data livecodebench`` in two processes, then ``--from-csv`` of both, as
the committed rows were made): ``python docs/results/compare/compare_real.py``. It writes
docs/results/compare/report.md and the per-pair rows in compare_real.csv.gz.

Each seed draws the harness's own subsets (the ``passmix experiment
repeated`` streams) of m trials per task: the bundled 10,000-trial MATH data
(7 Pythia models x 128 problems) at m = 10 and 50, and LiveCodeBench (43
models x 400 problems, 10 samples each) at m = 3. ``passmix.compare`` then
compares every pair of systems on the subsample alone, with each method and
its default intervals (the pooled ones: the difference's profile likelihood
for MATH's 21 pairs, the delta method for LiveCodeBench's 903); the
reference is the difference of the two systems' combinatorial metric on all
recorded trials (so LiveCodeBench stops at k = 10). The seconds were
measured with the two data sets run at once on two cores. Per method,
horizon and data set:

* coverage: the share of (pair, seed) whose 95% pointwise interval holds the
  reference difference;
* band: the share whose simultaneous band holds the whole reference curve
  over the horizons;
* wrong signs: the share of certified (pair, k) whose sign is wrong;
* power: the share of (pair, k) that truly differ by at least 0.1 that are
  certified with the right sign;
* width: mean width of the pointwise interval.

``mixture`` is two separate per-system intervals joined (MOVER): the
baseline the paired methods are to beat in width and power.
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
from passmix.estimators import combinatorial_estimate
from passmix.examples import example_path
from passmix.experiments import load_repeated, nested_subsets
from passmix.experiments._harness import group_id, stream
from passmix.experiments._subsets import _full_counts

HERE = Path(__file__).parent
CASES = {  # data set: (example name, m values, horizons, methods)
    "math_10k": ("math_10k", [10, 50], [10, 100, 1000], ["auto", "pooled", "mixture", "direct"]),
    "livecodebench": ("livecodebench", [3], [1, 3, 5, 10], ["auto", "pooled", "mixture"]),
}


def run_case(name: str, seeds: int) -> list[dict]:
    example, ms, ks, methods = CASES[name]
    groups = load_repeated(example_path(example), group_by="model", with_tasks=True)
    refs = {key[0]: np.asarray(combinatorial_estimate(_full_counts(trials), "pass@k", ks))
            for key, (trials, _) in groups.items()}
    rows = []
    for m in ms:
        for seed in range(seeds):
            counts = {}
            for key, (trials, tasks) in groups.items():
                sub = nested_subsets(trials, [m], stream(seed, group_id(key), 0))[m]
                counts[key[0]] = Counts(sub.successes, sub.trials, tasks)
            panel = passmix.Panel.from_counts(counts)
            for method in methods:
                k = [kv for kv in ks if kv <= m] if method == "direct" else ks
                if not k:
                    continue
                started = time.perf_counter()
                result = passmix.compare(panel, k=k, method=method, seed=seed)
                seconds = time.perf_counter() - started
                for n, (a, b) in enumerate(result.pairs):
                    truth = (refs[b] - refs[a])[[ks.index(kv) for kv in k]]
                    whole = bool(np.all((result.band_lower[n] <= truth)
                                        & (truth <= result.band_upper[n])))
                    for c, kv in enumerate(k):
                        rows.append({
                            "data": name, "m": m, "seed": seed, "method": method,
                            "used": result.method, "a": a, "b": b, "k": kv,
                            "reference": truth[c], "estimate": result.estimate[n, c],
                            "lower": result.lower[n, c], "upper": result.upper[n, c],
                            "band_lower": result.band_lower[n, c],
                            "band_upper": result.band_upper[n, c],
                            "certified": int(result.certified[n, c]), "band_covers": whole,
                            "seconds": seconds})
                print(f"{name} m = {m} seed {seed} {method}: {seconds:.1f} s", flush=True)
    return rows


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["covered"] = (table["lower"] <= table["reference"]) & (
        table["reference"] <= table["upper"])
    table["width"] = table["upper"] - table["lower"]
    certified = table["certified"] != 0
    table["wrong"] = certified & (np.sign(table["reference"]) != table["certified"])
    table["differs"] = table["reference"].abs() >= 0.1
    table["found"] = table["differs"] & certified & ~table["wrong"]
    out = table.groupby(["data", "m", "method", "k"], sort=False).agg(
        used=("used", lambda u: "/".join(sorted(set(u)))), coverage=("covered", "mean"),
        band=("band_covers", "mean"), certified=("certified", lambda c: int((c != 0).sum())),
        wrong=("wrong", "sum"), differs=("differs", "sum"), found=("found", "sum"),
        width=("width", "mean"), n=("covered", "size"), seconds=("seconds", "mean"))
    out["wrong_rate"] = out["wrong"] / out["certified"].where(out["certified"] > 0)
    out["power"] = out["found"] / out["differs"].where(out["differs"] > 0)
    return out.reset_index()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--from-csv", type=Path, nargs="+", default=None,
                        help="write the report from these rows (runs split over processes)")
    parser.add_argument("--out", type=Path, default=HERE / "report.md")
    args = parser.parse_args(argv)
    if args.from_csv:
        table = pd.concat([pd.read_csv(p) for p in args.from_csv], ignore_index=True)
    else:
        warnings.simplefilter("ignore")
        table = pd.DataFrame([row for name in args.data for row in run_case(name, args.seeds)])
        table.to_csv(HERE / ("compare_real.csv.gz" if len(args.data) == len(CASES)
                             else f"compare_real_{'_'.join(args.data)}.csv.gz"),
                     index=False, float_format="%.6g")
    summary = summarise(table)
    about = " ".join(__doc__.split("\n\n")[2].split())
    lines = ["# Paired comparisons on real data: coverage, signs, power and width", "",
             "Made by `python docs/results/compare/compare_real.py` (rows: `compare_real.csv.gz`). "
             + about, "",
             "| data | m | method (used) | k | coverage | band | wrong signs | power "
             "(\\|D\\| >= 0.1) | mean width | pairs x seeds | s per comparison |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        wrong = "-" if np.isnan(r.wrong_rate) else f"{r.wrong_rate:.3f} ({r.wrong}/{r.certified})"
        power = "-" if np.isnan(r.power) else f"{r.power:.2f} ({r.found}/{r.differs})"
        lines.append(f"| {r.data} | {r.m} | {r.method} ({r.used}) | {r.k} | {r.coverage:.2f} | "
                     f"{r.band:.2f} | {wrong} | {power} | {r.width:.3f} | {r.n} | "
                     f"{r.seconds:.1f} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
