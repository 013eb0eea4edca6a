"""Speed of one full BIC fit (H = 1..4, ten initialisations each, plus splits).

Run:  python benchmarks/bench_fit.py [--repeats 7] [--cold]

Prints a table: the median wall time of ``passmix.fit`` over the runs after
the first, for J = 30 / m = 5, J = 3600 / m = 5 and J = 3600 / m = 80; the
first-call time in a fresh process (model build + compile + fit), with the
PyTensor compile cache warm and, with ``--cold``, empty; the same BIC fit
with ``optimizer="find_MAP"`` (PyMC's own optimiser from every start); and, as
a baseline measured in the same run, one call of ``pymc.find_MAP`` on the
H = 1 model (it compiles its objective on every call).

``--cold`` also prints, for each backend (``PASSMIX_BACKEND=c``, with the C
modules built in parallel and, ``PASSMIX_BUILD_WORKERS=0``, one by one; and
``numba``), in fresh processes with fresh caches (PyTensor's
``base_compiledir``, ``NUMBA_CACHE_DIR`` and ``HOME`` in new temporary
folders): the mixture objective's build and compile, its first call (numba
compiles there) and its steady call; the first pooled fit of the bundled
example; each in an empty cache and again once the cache is filled (the
third process: PyTensor's numba backend fills its cache over two).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from bench_cli import fresh_caches  # one definition of "fresh caches" for both benchmarks

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


BACKEND_PROBE = """
import time, warnings
warnings.filterwarnings("ignore")
import numpy as np
t0 = time.perf_counter()
from passmix.models.mixture.graph import get_objective
obj = get_objective(4)
t1 = time.perf_counter()
rng = np.random.default_rng(0)
m = np.full(40, 10); y = rng.binomial(10, rng.beta(1, 2, 40))
obj.set_data(y, m, np.ones(40))
z = np.zeros(11)
obj.logp_dlogp(z)
t2 = time.perf_counter()
for _ in range(2000):
    obj.logp_dlogp(z)
t3 = time.perf_counter()
import passmix
from passmix.examples import example_path
passmix.fit_pooled(example_path(), system="model", seed=0)
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, (t3 - t2) / 2000 * 1e6, t4 - t3)
"""


def backend_rows() -> list[tuple[str, str]]:
    """Compile, first and steady call of the mixture objective, and a pooled fit, per backend
    (C with its modules built in parallel, the default; C one by one, as PyTensor builds
    them alone; numba)."""
    rows = []
    for backend, workers in (("c", ""), ("c, one by one", "0"), ("numba", "")):
        env = dict(os.environ, PASSMIX_BACKEND=backend.split(",")[0], **fresh_caches())
        if workers:
            env["PASSMIX_BUILD_WORKERS"] = workers
        for run in ("empty cache", "2nd process", "3rd process"):
            out = subprocess.run([sys.executable, "-c", BACKEND_PROBE], env=env,
                                 capture_output=True, text=True, check=True).stdout.split()
            build, first, steady, pooled = map(float, out)
            rows.append((f"backend {backend}, {run}: objective build+compile; first call; "
                         "steady call; first pooled fit",
                         f"{build:.2f} s; {first:.2f} s; {steady:.1f} us; {pooled:.2f} s"))
    return rows


def simulate(rng, j, m):
    comp = rng.choice(2, size=j, p=[0.6, 0.4])
    theta = rng.beta(np.array([1.0, 8.0])[comp], np.array([6.0, 2.0])[comp])
    import passmix

    return passmix.Counts(rng.binomial(m, theta), np.full(j, m))


def first_call(cold: bool) -> tuple[float, float]:
    env = dict(os.environ)
    if cold:
        env["PYTENSOR_FLAGS"] = f"compiledir={tempfile.mkdtemp(prefix='ptcold')}"
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
    pm.find_MAP(model=flat.model, progressbar=False)
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
    if args.cold:
        rows.extend(backend_rows())
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
