"""PyTensor 3's backends for passmix's compiled functions, cold and warm, and the CLI.

Run:  python benchmarks/bench_backends.py [--repeats 3] [--backends numba c] [--functions ...] [--skip-cli]

For each backend (``PASSMIX_BACKEND``: ``numba``, PyTensor 3's default mode,
and ``c``, its C virtual machine), each in fresh processes:

* the mixture's objective (H = 4 capacity), the pooled model's objective
  (normal family, the bundled 7 x 128 panel) and the log-density and
  gradient NUTS samples (the mixture's weak-prior model, H = 2): build and
  compile, first call, steady call (median of many);
* cold (empty PyTensor and numba caches: ``base_compiledir``,
  ``NUMBA_CACHE_DIR`` and ``HOME`` in new temporary folders) and warm (the
  same caches, filled by the cold process and one more);
* ``passmix estimate --example`` (the pooled model, profile intervals) and
  ``--method mixture``, cold once and warm (median of ``--repeats``).

Times are wall seconds and CPU seconds (the process and its children: the C
compiler runs as a child). Last, ``import passmix`` against ``import numpy,
scipy, pandas`` (median of 7 fresh interpreters each) and the ratios issue
35 asks about: cold over warm for the CLI, and the import ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
what = sys.argv[1]
t0 = time.perf_counter(); c0 = time.process_time()
import pymc as pm
from passmix.examples import example_path
import passmix
t1 = time.perf_counter(); c1 = time.process_time()
if what == "mixture":
    from passmix.models.mixture.graph import get_objective
    fn = get_objective(4)
    rng = np.random.default_rng(0)
    m = np.full(40, 10); y = rng.binomial(10, rng.beta(1, 2, 40))
    fn.lock.acquire(); fn.set_data(y, m, np.ones(40))
    z = np.zeros(11)
    call, n = (lambda: fn.logp_dlogp(z)), 3000
elif what == "pooled":
    from passmix.models.pooled import DEFAULT_GRID, get_pooled_objective, panel_layout
    panel = passmix.Panel.read(example_path("math_m10"), "model")
    layout = panel_layout(panel)
    fn = get_pooled_objective(layout, "normal", DEFAULT_GRID, 1)
    fn.lock.acquire()
    z = np.concatenate([np.zeros(7), np.ones(7), [0.0, 0.0]])
    call, n = (lambda: fn.logp_dlogp(z)), 200
else:  # the log-density and gradient NUTS samples, compiled as pymc.sample compiles it
    from passmix._pytensor import compile_mode
    from passmix.models.mixture.graph import build_model, pair_data
    model = build_model(2, prior="weak")
    rng = np.random.default_rng(0)
    m = np.full(40, 10); y = rng.binomial(10, rng.beta(1, 2, 40))
    pm.set_data(pair_data(y, m, np.ones(40)), model=model)
    f = model.logp_dlogp_function(ravel_inputs=True, mode=compile_mode())
    f.set_extra_values({})
    x = np.zeros(sum(np.size(v) for v in model.initial_point().values()))
    call, n = (lambda: f(x)), 3000
t2 = time.perf_counter(); c2 = time.process_time()
call()
t3 = time.perf_counter(); c3 = time.process_time()
ts = []
for _ in range(5):
    s = time.perf_counter()
    for _ in range(n // 5):
        call()
    ts.append((time.perf_counter() - s) / (n // 5))
print(json.dumps({"import": t1 - t0, "compile": t2 - t1, "first": t3 - t2,
                  "steady_us": 1e6 * sorted(ts)[2]}))
"""


def fresh_caches() -> dict[str, str]:
    """Environment of a process with empty PyTensor, numba and home caches."""
    root = tempfile.mkdtemp(prefix="passmix-fresh-")
    return {"PYTENSOR_FLAGS": f"base_compiledir={root}/pytensor",
            "NUMBA_CACHE_DIR": f"{root}/numba", "HOME": f"{root}/home"}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (the child and its children) of one command, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env,
                         cwd=tempfile.gettempdir()).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def environment(backend: str, caches: dict[str, str]) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), PASSMIX_BACKEND=backend, **caches)


def probe(backend: str, what: str, repeats: int) -> list[dict]:
    """Cold, then warm (the third process: the caches filled by two)."""
    caches = fresh_caches()
    rows = []
    for n in range(2 + repeats):
        wall, cpu, out = timed([sys.executable, "-c", PROBE, what], environment(backend, caches))
        if n == 1:
            continue  # the second process may still fill the cache
        rows.append({**json.loads(out), "wall": wall, "cpu": cpu,
                     "state": "cold" if n == 0 else "warm"})
    return rows


def cli(backend: str, extra: list[str], repeats: int) -> dict[str, float]:
    caches = fresh_caches()
    cmd = [sys.executable, "-m", "passmix.cli", "estimate", "--example", "--quiet", *extra]
    cold_wall, cold_cpu, _ = timed(cmd, environment(backend, caches))
    timed(cmd, environment(backend, caches))
    warm = [timed(cmd, environment(backend, caches))[:2] for _ in range(repeats)]
    return {"cold_wall": cold_wall, "cold_cpu": cold_cpu,
            "warm_wall": statistics.median(w for w, _ in warm),
            "warm_cpu": statistics.median(c for _, c in warm)}


def import_time(code: str, repeats: int = 7) -> float:
    """Median wall time of `code` in a fresh interpreter, measured inside it."""
    test = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", test], capture_output=True, text=True,
                             check=True, env=env).stdout) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["numba", "c"])
    parser.add_argument("--functions", nargs="*", default=["mixture", "pooled", "nuts"],
                        choices=["mixture", "pooled", "nuts"])
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()

    print(f"compiled functions, fresh processes ({os.cpu_count()} CPUs; seconds but steady)")
    head = (f"{'backend':<7} {'function':<22} {'state':<5} {'compile':>8} {'1st call':>9} "
            f"{'steady us':>10} {'process':>8} {'cpu':>7}")
    print(head)
    print("-" * len(head))
    for backend in args.backends:
        for what, label in (("mixture", "mixture objective"), ("pooled", "pooled objective"),
                            ("nuts", "NUTS log-density")):
            if what not in args.functions:
                continue
            rows = probe(backend, what, args.repeats)
            warm = [r for r in rows if r["state"] == "warm"]
            for state, group in (("cold", rows[:1]), ("warm", warm)):
                med = {key: statistics.median(r[key] for r in group)
                       for key in ("compile", "first", "steady_us", "wall", "cpu")}
                print(f"{backend:<7} {label:<22} {state:<5} {med['compile']:>8.2f} "
                      f"{med['first']:>9.2f} {med['steady_us']:>10.1f} {med['wall']:>8.1f} "
                      f"{med['cpu']:>7.1f}")
    if args.skip_cli:
        return
    print()
    print("passmix estimate --example, fresh processes (seconds)")
    head = (f"{'backend':<7} {'command':<22} {'cold wall':>9} {'cold cpu':>9} "
            f"{'warm wall':>9} {'warm cpu':>9} {'cold/warm':>9}")
    print(head)
    print("-" * len(head))
    for backend in args.backends:
        for label, extra in (("pooled (default)", []), ("--method mixture", ["--method",
                                                                               "mixture"])):
            r = cli(backend, extra, args.repeats)
            print(f"{backend:<7} {label:<22} {r['cold_wall']:>9.1f} {r['cold_cpu']:>9.1f} "
                  f"{r['warm_wall']:>9.1f} {r['warm_cpu']:>9.1f} "
                  f"{r['cold_wall'] / r['warm_wall']:>9.2f}")
    plain = import_time("import numpy, scipy, pandas")
    ours = import_time("import passmix")
    print()
    print(f"import passmix {ours:.3f} s / import numpy, scipy, pandas {plain:.3f} s = "
          f"{ours / plain:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
