"""Wall time of ``passmix estimate --example``, as a user starts it.

Run:  python benchmarks/bench_cli.py [--repeats 3] [--baseline REV] [--cold]

Each run is a fresh process (import, fits of the 7 Pythia models at
k = 1, 10, 100, 1000, intervals, printing). One untimed run of each variant
first warms PyTensor's compile cache (and passmix's compiled objective
kept beside it). Variants: this checkout as a user runs it (the example is a
panel, so the pooled model with profile-likelihood intervals; groups in
parallel processes, the compiled objective read from disk); the per-system
mixture (``--method mixture``), the reference of the pooled/mixture ratio;
the default with ``--jobs 1`` (one process); and with delta-method intervals;
with ``--baseline REV``, the command of an earlier commit (checked out with
``git worktree`` in a temporary folder), e.g. ``85385e1``, the state before
issues 7 and 8. Runs alternate between variants so that machine load affects
all alike; the table gives each median and its ratio to the baseline.
Also the pooled model at three horizons (``--method pooled --k 1,100,1000``).
``--cold`` also times one run of each with fresh caches (PyTensor's
``base_compiledir``, ``NUMBA_CACHE_DIR`` and ``HOME`` in new temporary
folders) and prints the ratios: cold over warm, pooled over mixture, and
``import passmix`` over ``import numpy, scipy, pandas``. ``--c`` adds the
default and the mixture with ``PASSMIX_BACKEND=c`` (PyTensor's C virtual
machine); ``benchmarks/bench_backends.py`` times each compiled function
alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_backends import fresh_caches  # one definition of "fresh caches"

ROOT = Path(__file__).resolve().parents[1]
POOLED = ["--method", "pooled", "--k", "1,100,1000"]


def run(src: Path, extra: list[str], flags: str = "", cold: bool = False,
        env_extra: dict[str, str] | None = None) -> float:
    env = dict(os.environ, PYTHONPATH=str(src), **(env_extra or {}))
    if cold:
        fresh = fresh_caches()
        flags = ",".join(f for f in (flags, fresh.pop("PYTENSOR_FLAGS")) if f)
        env.update(fresh)
    if flags:
        env["PYTENSOR_FLAGS"] = flags
    cmd = [sys.executable, "-m", "passmix.cli", "estimate", "--example", "--quiet", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True, env=env,
                   cwd=tempfile.gettempdir())
    return time.perf_counter() - start


def import_time(code: str, repeats: int = 7) -> float:
    """Median wall time of `code` in a fresh interpreter, measured inside it."""
    probe = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             check=True, env=env).stdout) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="also time the command at this git revision")
    parser.add_argument("--cold", action="store_true", help="also time fresh caches")
    parser.add_argument("--c", action="store_true", help="also time PASSMIX_BACKEND=c")
    args = parser.parse_args()

    variants: dict[str, tuple[Path, list[str], str, dict[str, str]]] = {
        "this checkout (default: pooled)": (ROOT / "src", [], "", {}),
        "this checkout, --method mixture": (ROOT / "src", ["--method", "mixture"], "", {}),
        "this checkout, --jobs 1": (ROOT / "src", ["--jobs", "1"], "", {}),
        "this checkout, --interval delta": (ROOT / "src", ["--interval", "delta"], "", {}),
        "this checkout, --method pooled --k 1,100,1000": (ROOT / "src", POOLED, "", {}),
    }
    if args.c:
        c = {"PASSMIX_BACKEND": "c"}
        variants["C backend"] = (ROOT / "src", [], "", c)
        variants["C backend, --method mixture"] = (ROOT / "src", ["--method", "mixture"], "", c)
    worktree = None
    if args.baseline:
        worktree = Path(tempfile.mkdtemp(prefix="passmix-baseline-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree),
                        args.baseline], check=True, capture_output=True)
        variants = {f"baseline {args.baseline}": (worktree / "src", [], "", {}), **variants}
    try:
        for src, extra, flags, env in variants.values():
            run(src, extra, flags, env_extra=env)  # compile cache
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeats):
            for name, (src, extra, flags, env) in variants.items():
                times[name].append(run(src, extra, flags, env_extra=env))
        cold = {name: run(src, extra, flags, cold=True, env_extra=env)
                for name, (src, extra, flags, env) in variants.items()} if args.cold else {}
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(worktree)], check=False, capture_output=True)

    median = {k: statistics.median(v) for k, v in times.items()}
    base = next(iter(median.values()))
    print("passmix estimate --example (7 models x 3 metrics x 4 horizons), fresh processes")
    width = max(len(n) for n in variants)
    head = f"{'variant':<{width}} {'median (s)':>11} {'ratio':>6} {'runs (s)':>20}"
    if cold:
        head += f" {'empty cache (s)':>16}"
    print(head)
    print("-" * len(head))
    for name, values in times.items():
        line = (f"{name:<{width}} {median[name]:>11.2f} {median[name] / base:>6.2f} "
                f"{', '.join(f'{v:.1f}' for v in values):>20}")
        if cold:
            line += f" {cold[name]:>16.1f}"
        print(line)
    print(f"ratio: to the first row, measured in this run ({os.cpu_count()} CPUs)")
    if cold:
        plain = import_time("import numpy, scipy, pandas")
        ours = import_time("import passmix")
        pooled, mix = "this checkout (default: pooled)", "this checkout, --method mixture"
        print()
        print(f"{'ratio':<62} {'value':>6} {'target':>7}")
        for label, value, target in [
                ("cold / warm, passmix estimate --example (pooled)",
                 cold[pooled] / median[pooled], 3.0),
                ("cold / warm, --method mixture", cold[mix] / median[mix], 3.0),
                ("pooled warm / mixture warm", median[pooled] / median[mix], 1.5),
                (f"import passmix ({ours:.3f} s) / numpy+scipy+pandas ({plain:.3f} s)",
                 ours / plain, 1.5)]:
            print(f"{label:<62} {value:>6.2f} {'<= ' + str(target):>7}")


if __name__ == "__main__":
    main()
