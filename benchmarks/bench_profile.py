"""Cost of the profile-likelihood intervals: time per interval end.

Run:  python benchmarks/bench_profile.py [--repeats 3]

For each data set the fit is made once (not timed); then
``fit.summary(k=(1, 10, 100, 1000))`` (three metrics, profile intervals,
23 searched ends: Pass@1 is searched once for all three metrics) and
``fit.profile("pass@k", 100)`` (2 ends) are timed, the median over
`--repeats` runs, each on a fresh fit object so nothing is reused from an
earlier call. The table gives the time per end (the summary's time over its
23 ends, the region's set-up included), the median time of one end's search
in the summary (each search timed alone; the region's set-up, about 0.1 s
at H = 2, is in the first one) and, for the cases that the issue
"intervals you can trust" found, the Pass@1 interval, so a run of this
script on an older checkout (``PYTHONPATH=<old>/src``) gives the "before"
column in the same session.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def data_sets():
    import passmix
    from passmix.examples import example_path

    rng = np.random.default_rng(12)
    comp = rng.choice(2, 400, p=[0.6, 0.4])
    theta = rng.beta(np.array([1.0, 6.0])[comp], np.array([8.0, 2.0])[comp])
    bimodal = passmix.Counts(rng.binomial(10, theta), np.full(400, 10))
    math = passmix.read_counts(example_path("math_m10"), group_by="model")
    return {
        "mirror pair [300, 700] / 1000": passmix.Counts([300, 700], [1000, 1000]),
        "[0, 10] / 11": passmix.Counts([0, 10], [11, 11]),
        "[0, 0, 3, 4, 4, 4] / 6": passmix.Counts([0, 0, 3, 4, 4, 4], [6] * 6),
        "bimodal J=400 m=10": bimodal,
        "MATH Pythia 2.8B m=10": math[("Pythia 2.8B",)],
        "MATH Pythia 160M m=10 (binomial limit)": math[("Pythia 160M",)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import passmix
    from passmix.inference.profile import LikelihoodRegion

    # each end's search timed alone: the region's search for one extreme
    end_times: list[float] = []
    search = LikelihoodRegion.extreme

    def timed(self, *a, **kw):
        t = time.perf_counter()
        try:
            return search(self, *a, **kw)
        finally:
            end_times.append(time.perf_counter() - t)

    rows = []
    for name, counts in data_sets().items():
        passmix.fit(counts, seed=0).summary()  # warm: compile, first calls
        summary_t, single_t, ends_t = [], [], []
        for _ in range(args.repeats):
            fit = passmix.fit(counts, seed=0)
            end_times.clear()
            LikelihoodRegion.extreme = timed
            t = time.perf_counter()
            try:
                fit.summary(k=(1, 10, 100, 1000))
            finally:
                LikelihoodRegion.extreme = search
            summary_t.append(time.perf_counter() - t)
            ends_t.append(np.median(end_times))
            fit = passmix.fit(counts, seed=0)
            t = time.perf_counter()
            fit.profile("pass@k", 100)
            single_t.append(time.perf_counter() - t)
        lo, hi = fit.interval("pass@k", 1)
        rows.append((name, fit.n_components, 1e3 * np.median(summary_t) / 23,
                     1e3 * np.median(ends_t), 1e3 * np.median(single_t) / 2,
                     f"({lo:.3f}, {hi:.3f})"))
    header = ("data", "H", "summary: ms/end", "median end: ms", "pass@100: ms/end",
              "Pass@1 interval")
    widths = [max(len(str(r[i])) if not isinstance(r[i], float) else 8 for r in rows + [header])
              for i in range(len(header))]
    print("  ".join(f"{h:<{w}}" for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [f"{c:.1f}" if isinstance(c, float) else str(c) for c in r]
        print("  ".join(f"{c:<{w}}" for c, w in zip(cells, widths)))


if __name__ == "__main__":
    main()
