"""Cost of the default intervals beyond the trials (issue 48) against the model's own.

Run:  python benchmarks/bench_beyond.py [--repeats 3]

For each data set the fit is made once per repeat (not timed); then
``fit.summary(k=(1, 10, 100, 1000))`` is timed with ``conditional=True`` (the
Beta mixture's own intervals, the default before issue 48) and with the
default (beyond the trials: the metric over these tasks, and the
zero-inflated fit where some task was never solved; for Pass^k from k = 2 the
mixture with one more component; each fitted on first use), on
fresh fit objects, in CPU seconds of this process (median over `--repeats`).
The ratio is the default's cost in units of the model's own, measured in the
same run. Profile and delta intervals both.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def data_sets():
    import passmix
    from passmix.examples import example_path

    rng = np.random.default_rng(48)
    theta = np.where(rng.random(75) < 0.3, 0.0, rng.beta(1.0, 2.0, 75))
    impossible = passmix.Counts(rng.binomial(10, theta), np.full(75, 10))
    comp = rng.choice(2, 400, p=[0.6, 0.4])
    theta = rng.beta(np.array([1.0, 6.0])[comp], np.array([8.0, 2.0])[comp])
    bimodal = passmix.Counts(rng.binomial(10, theta), np.full(400, 10))
    math = passmix.read_counts(example_path("math_m10"), group_by="model")
    return {
        "30% impossible J=75 m=10": impossible,
        "bimodal J=400 m=10": bimodal,
        "MATH Pythia 2.8B m=10": math[("Pythia 2.8B",)],
        "MATH Pythia 160M m=10 (binomial limit)": math[("Pythia 160M",)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import pandas as pd

    import passmix

    rows = []
    for name, counts in data_sets().items():
        passmix.fit(counts, seed=0).summary()  # warm: compile, first calls
        for method in ("profile", "delta"):
            times = {True: [], False: []}
            for _ in range(args.repeats):
                for conditional in (True, False):
                    fit = passmix.fit(counts, seed=0)
                    t = time.process_time()
                    fit.summary(k=(1, 10, 100, 1000), method=method, conditional=conditional)
                    times[conditional].append(time.process_time() - t)
            own, default = np.median(times[True]), np.median(times[False])
            rows.append({"data": name, "method": method, "H": fit.n_components,
                         "never solved": fit.never_solved, "model's own (CPU s)": own,
                         "default (CPU s)": default, "ratio": default / own})
    print(pd.DataFrame(rows).round(2).to_markdown(index=False))


if __name__ == "__main__":
    main()
