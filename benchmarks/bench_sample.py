"""Wall time of NUTS on the Beta mixture (passmix.bayes.sample.sample).

Run:  python benchmarks/bench_sample.py [--repeats 3] [--draws 1000] [--chains 4]
                                        [--backends numba c]

Prints a table: for H = 1 on J = 30 and J = 3600 tasks (m = 5), and H = 2
on J = 3600 (m = 10), the wall time of ``passmix.bayes.sample.sample`` with
4 chains x 1000 draws after 1000 warm-up steps on 2 cores: the first call in
the process (model build and compile included) and the median of the
repeats after it; the same with nutpie when it is installed, and for each
PyTensor backend asked for (``PASSMIX_BACKEND``: the mode PyMC compiles
NUTS's log-density with; the first call compiles it, from the cache a warm
process keeps). The likelihood
runs on the distinct (y, m) pairs, so the time does not grow with J. The
maximum-likelihood fit that supplies the starting point is not timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
import warnings

import numpy as np


def simulate(rng, j, m, h):
    import passmix

    if h == 1:
        theta = rng.beta(0.64, 0.86, j)
    else:
        comp = rng.choice(2, size=j, p=[0.6, 0.4])
        theta = rng.beta(np.array([1.0, 8.0])[comp], np.array([6.0, 2.0])[comp])
    return passmix.Counts(rng.binomial(m, theta), np.full(j, m))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--backends", nargs="+", default=["numba"], choices=["numba", "c"])
    args = parser.parse_args()

    import passmix
    from passmix.bayes.sample import diagnose, sample

    samplers = [("pymc", b) for b in args.backends] + (
        [("nutpie", "")] if importlib.util.find_spec("nutpie") else [])
    cases = [(1, 30, 5), (1, 3600, 5), (2, 3600, 10)]
    rows = []
    for sampler, backend in samplers:
        os.environ["PASSMIX_BACKEND"] = backend or "numba"
        for h, j, m in cases:
            counts = simulate(np.random.default_rng(0), j, m, h)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = passmix.fit(counts, n_components=h, seed=0)
                times = []
                for rep in range(args.repeats + 1):
                    t0 = time.perf_counter()
                    idata = sample(fit, draws=args.draws, chains=args.chains, tune=1000,
                                   seed=rep, sampler=sampler, check=False)
                    times.append(time.perf_counter() - t0)
            diag = diagnose(idata)
            rows.append((f"{sampler} {backend}".strip(), h, j, m, len(counts.pairs()[0]), times[0],
                         float(np.median(times[1:])) if len(times) > 1 else float("nan"),
                         diag["r_hat"].max(), diag["ess_bulk"].min(), diag.attrs["divergences"]))
    print(f"NUTS, {args.chains} chains x {args.draws} draws (+1000 warm-up), cores = "
          f"min(chains, 2); wall seconds")
    header = (f"{'sampler':11} {'H':>2} {'J':>5} {'m':>3} {'pairs':>5} {'first call':>10} "
              f"{'median':>8} {'max r_hat':>9} {'min ESS':>8} {'div':>4}")
    print(header)
    print("-" * len(header))
    for s, h, j, m, p, first, med, rhat, ess, div in rows:
        print(f"{s:11} {h:>2} {j:>5} {m:>3} {p:>5} {first:>10.2f} {med:>8.2f} {rhat:>9.4f} "
              f"{ess:>8.0f} {div:>4}")


if __name__ == "__main__":
    main()
