"""Speed of one full BIC fit (H = 1..4, ten initialisations each, plus splits).

Run:  python benchmarks/bench_fit.py [--repeats 7] [--cold]

Prints a table: the median wall time of ``passmix.fit`` over the runs after
the first, for J = 30 / m = 5, J = 3600 / m = 5 and J = 3600 / m = 80; the
first-call time in a fresh process (model build + compile + fit), with the
PyTensor compile cache warm and, with ``--cold``, empty; the same BIC fit
with ``optimizer="find_MAP"`` (PyMC's own optimiser from every start); and, as
a baseline measured in the same run, one call of ``pymc.find_MAP`` on the
H = 1 model (it compiles its objective on every call).

Each backend's compile, first and steady call, cold and warm:
``benchmarks/bench_backends.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np
from bench_backends import fresh_caches  # one definition of "fresh caches"

FIRST_CALL = """
import time, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
import numpy as np, passmix
t1 = time.perf_counter()
rng = np.random.default_rng(0)
counts = passmix.Counts(rng.binomial(5, rng.beta(1, 2, 30)), np.full(30, 5))
passmix.fit(counts, seed=0)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def simulate(rng, j, m):
    comp = rng.choice(2, size=j, p=[0.6, 0.4])
    theta = rng.beta(np.array([1.0, 8.0])[comp], np.array([6.0, 2.0])[comp])
    import passmix

    return passmix.Counts(rng.binomial(m, theta), np.full(j, m))


def first_call(cold: bool) -> tuple[float, float]:
    env = dict(os.environ, **(fresh_caches() if cold else {}))
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def find_map_baseline(counts) -> float:
    """One ``pm.find_MAP`` call (H = 1, one start) on passmix's own model and data."""
    import pymc as pm

    from passmix.models.mixture.graph import get_sampling_model

    flat = get_sampling_model(1, "flat")
    flat.set_data(*counts.pairs())
    t = time.perf_counter()
    pm.find_MAP(model=flat.model, progressbar=False, jitter=False, return_inferencedata=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="also time a cold compile cache")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import passmix

    rows = []
    warm_import, warm_first = first_call(cold=False)
    rows.append(("first call, warm compile cache (import; fit)",
                 f"{warm_import:.2f} s; {warm_first:.2f} s"))
    if args.cold:
        cold_import, cold_first = first_call(cold=True)
        rows.append(("first call, empty compile cache (import; fit)",
                     f"{cold_import:.2f} s; {cold_first:.2f} s"))
    rng = np.random.default_rng(1)
    medians = {}
    for j, m in [(30, 5), (3600, 5), (3600, 80)]:
        counts = simulate(rng, j, m)
        times = []
        for rep in range(args.repeats):
            t = time.perf_counter()
            passmix.fit(counts, seed=rep)
            times.append(time.perf_counter() - t)
        medians[(j, m)] = float(np.median(times[1:]))
        rows.append((f"BIC fit J={j} m={m} (median of {args.repeats - 1} after first)",
                     f"{medians[(j, m)]:.3f} s"))
    small = simulate(rng, 30, 5)
    passmix.fit(small, seed=0, optimizer="find_MAP")  # builds the flat models
    with_pymc = []
    for rep in range(3):
        t = time.perf_counter()
        passmix.fit(small, seed=rep, optimizer="find_MAP")
        with_pymc.append(time.perf_counter() - t)
    default = []
    for rep in range(3):
        t = time.perf_counter()
        passmix.fit(small, seed=rep)
        default.append(time.perf_counter() - t)
    rows.append(("BIC fit J=30 m=5, optimizer='find_MAP' (median of 3)",
                 f"{np.median(with_pymc):.3f} s"))
    rows.append(("ratio: optimizer='find_MAP' / default, same data and seeds",
                 f"{np.median(with_pymc) / np.median(default):.1f}"))
    base = [find_map_baseline(simulate(rng, 30, 5)) for _ in range(2)]
    rows.append(("baseline: one pm.find_MAP call, H=1, one init (min of 2)",
                 f"{min(base):.3f} s"))
    rows.append(("ratio: one passmix BIC fit (44 optimisations) / one find_MAP call, J=30 m=5",
                 f"{medians[(30, 5)] / min(base):.3f}"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  value")
    print("-" * (width + 20))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
