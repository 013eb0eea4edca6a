"""The pooled fit on a local Dask cluster against the same fit in one process.

Run:  python benchmarks/bench_dask_pooled.py [--systems 1000 --tasks 2500 --trials 8
                                             --missing 0.2 --workers 2]

A panel simulated from the pooled model (abilities ~ N(0, 1), difficulties
~ N(0, 1.5), concentrations ``exp(N(1, 0.5))``, a share of cells missing) is
fitted twice with ``concentration="system"``: in this process, and with
``client=`` on a ``LocalCluster`` of `workers` worker processes (one thread
each), the tasks split into one shard per worker
(:mod:`passmix.models.pooled.sharded`). Both are warm (a small fit first, in
this process and on every worker). The table gives each run's wall seconds
and CPU seconds (this process, plus the workers' for the Dask run), and
the answer's agreement: the difference of the maximised log-likelihoods and
the largest difference of the estimates.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _panels import simulate


def _warm() -> float:
    """A small pooled fit (compiles or loads the graph) on a worker; its CPU clock."""
    import passmix

    passmix.fit_pooled(simulate(4, 12, 8, 0.1, 1)[0], seed=0, concentration="system")
    return time.process_time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=2500)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--missing", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    import passmix
    from dask.distributed import Client, LocalCluster

    panel, _ = simulate(args.systems, args.tasks, args.trials, args.missing)
    cells = int((panel.trials > 0).sum())
    print(f"panel: {args.systems} systems x {args.tasks} tasks, m = {args.trials}, "
          f"{cells:,} cells run")
    _warm()
    rows = []
    cpu, wall = time.process_time(), time.perf_counter()
    local = passmix.fit_pooled(panel, seed=0, concentration="system")
    rows.append(("in process", time.perf_counter() - wall, time.process_time() - cpu))
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_warm)
        before = client.run(time.process_time)
        cpu, wall = time.process_time(), time.perf_counter()
        sharded = passmix.fit_pooled(panel, seed=0, concentration="system", client=client)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        after = client.run(time.process_time)
        workers = sum(after[w] - before[w] for w in after)
        rows.append((f"Dask, {args.workers} workers", wall, cpu + workers))
    print(f"{'run':<20}{'wall s':>10}{'CPU s':>10}")
    print("-" * 40)
    for name, w, c in rows:
        print(f"{name:<20}{w:>10.1f}{c:>10.1f}")
    print(f"\nlog-likelihood: {local.loglik:.6f} in process, {sharded.loglik:.6f} on Dask "
          f"(difference {sharded.loglik - local.loglik:.2e})")
    print(f"largest difference of the estimates: {np.abs(sharded.params - local.params).max():.2e}")


if __name__ == "__main__":
    main()
