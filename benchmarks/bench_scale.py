"""CPU seconds and peak memory of the pooled model, compare, rank and estimate at leaderboard scale.

Run:  python benchmarks/bench_scale.py [--cases 500x30,compare50x40] [--baseline REV]

Each case runs warm in its own process: the process first does the same
work on a tiny panel (so every PyTensor function it needs is compiled or
read from the disk cache), then the case is timed. The table gives the
case's CPU seconds (``time.process_time``: every thread of the process, and
any worker processes it forks; a busy machine does not inflate it as it
does wall time), its wall seconds, and the peak resident memory of the
process or its largest worker (``ru_maxrss``, which includes the
interpreter and the imported stack, about 0.4 GB).

``--baseline REV`` runs every case also on the commit REV (checked out
with ``git worktree`` in a temporary folder), so one run prints before and
after side by side. The panels are simulated from the pooled model with a
fixed seed: abilities ~ N(0, 1), difficulties ~ N(0, 1.5), concentrations
``exp(N(1, 0.5))``, and a share of cells missing (m = 0).

Cases (names for ``--cases``):

* ``500x30``: ``fit_pooled`` + ``summary(k=[1, 100])``, 500 systems x 30
  tasks, m = 5, 20% missing;
* ``200x50``: the same at 200 x 50, m = 10;
* ``500x1000``: ``fit_pooled`` + ``summary(k=[1, 10, 100])``, 500 x 1000,
  m = 8, 10% missing (minutes before issue 37's work); its last column is
  the correlation of the systems' Pass@1 estimates with their true mean
  success over the tasks (computed after the timing);
* ``compare50x40``: ``compare`` of every pair of 50 systems x 40 tasks,
  k = 1, 10, 100;
* ``rank43x100``, ``rank43x400``: ``rank`` of 43 systems, k = 1, 10;
* ``estimate24``: ``passmix estimate`` of 24 single-system groups
  (100 tasks x 10 trials each), ``--method all``, k = 10, 100, 1000;
* ``example``: ``passmix estimate --example``;
* ``readme_compare``: the README's ``compare`` of one pair.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SIMULATE = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
    import numpy as np
    import passmix
    from _panels import simulate

    TRUTH = {{}}

    def panel(*args):
        p, TRUTH["mean"] = simulate(*args)
        return p
""")

# name: (setup, warm-up, timed); CHECKS[name]: what the table's last column shows, after timing
CHECKS = {"500x1000": ("corr(Pass@1, true mean)",
                       "float(np.corrcoef(fit.metric('pass@k', 1), truth)[0, 1])")}
CASES = {
    "500x30": ("p = panel(500, 30, 5, 0.2)",
               "passmix.fit_pooled(panel(4, 12, 5, 0.2, 1), seed=0).summary(k=[1, 100])",
               "passmix.fit_pooled(p, seed=0).summary(k=[1, 100])"),
    "200x50": ("p = panel(200, 50, 10, 0.2)",
               "passmix.fit_pooled(panel(4, 12, 10, 0.2, 1), seed=0).summary(k=[1, 100])",
               "passmix.fit_pooled(p, seed=0).summary(k=[1, 100])"),
    "500x1000": ("p = panel(500, 1000, 8, 0.1); truth = TRUTH['mean']",
                 "passmix.fit_pooled(panel(4, 12, 8, 0.1, 1), seed=0).summary(k=[1, 10, 100])",
                 "fit = passmix.fit_pooled(p, seed=0); fit.summary(k=[1, 10, 100])"),
    "compare50x40": ("p = panel(50, 40, 10, 0.0)",
                     "passmix.compare(panel(4, 12, 10, 0.0, 1), k=[1, 10, 100]).summary()",
                     "passmix.compare(p, k=[1, 10, 100]).summary()"),
    "rank43x100": ("p = panel(43, 100, 10, 0.0)",
                   "passmix.rank(panel(4, 12, 10, 0.0, 1), k=[1, 10]).summary()",
                   "passmix.rank(p, k=[1, 10]).summary()"),
    "rank43x400": ("p = panel(43, 400, 10, 0.0)",
                   "passmix.rank(panel(4, 12, 10, 0.0, 1), k=[1, 10]).summary()",
                   "passmix.rank(p, k=[1, 10]).summary()"),
    "estimate24": (
        textwrap.dedent("""
            import tempfile, pandas as pd
            from click.testing import CliRunner
            from passmix.cli import main as cli
            def table(n_groups, n_tasks, seed):
                q = panel(n_groups, n_tasks, 10, 0.0, seed)
                return pd.DataFrame([{"model": s, "task": f"t{j}",
                                      "successes": int(q.successes[i, j]), "trials": 10}
                                     for i, s in enumerate(q.systems) for j in range(n_tasks)])
            folder = tempfile.mkdtemp()
            small, big = folder + "/small.csv", folder + "/big.csv"
            table(2, 20, 1).to_csv(small, index=False)
            table(24, 100, 0).to_csv(big, index=False)
            def run(path):
                out = CliRunner().invoke(cli, ["estimate", path, "--group-by", "model",
                                               "--method", "all", "--k", "10,100,1000"])
                assert out.exit_code == 0, out.output
        """),
        "run(small)", "run(big)"),
    "example": (
        "from click.testing import CliRunner\nfrom passmix.cli import main as cli",
        "CliRunner().invoke(cli, ['estimate', '--example'])",
        "out = CliRunner().invoke(cli, ['estimate', '--example']); assert out.exit_code == 0"),
    "readme_compare": (
        "panel = passmix.read_counts(passmix.examples.example_path('math_m10'), group_by='model')",
        "passmix.compare(panel, 'Pythia 70M', 'Pythia 160M', k=[10]).summary()",
        "passmix.compare(panel, 'Pythia 1B', 'Pythia 2.8B', k=[10, 100, 1000]).summary()"),
}

PROBE = textwrap.dedent("""
    import json, resource, time, warnings
    warnings.simplefilter("ignore")
    {simulate}
    import passmix.examples
    {setup}
    {warm}
    def children():
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        return use.ru_utime + use.ru_stime
    kids, cpu, wall = children(), time.process_time(), time.perf_counter()
    {timed}
    # worker processes (a fork pool) count too
    cpu = time.process_time() - cpu + children() - kids
    wall = time.perf_counter() - wall
    peak = max(resource.getrusage(who).ru_maxrss for who in
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1e6  # KB on Linux
    check = {check}
    print(json.dumps({{"cpu": cpu, "wall": wall, "peak_gb": peak, "check": check}}))
""")


def run_case(name: str, src: Path, threads: int) -> dict:
    setup, warm, timed = CASES[name]
    code = PROBE.format(simulate=SIMULATE, setup=setup, warm=warm, timed=timed,
                        check=CHECKS.get(name, ("", "None"))[1])
    env = {**os.environ, "PYTHONPATH": str(src),
           **{v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                        "MKL_NUM_THREADS")}}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tempfile.gettempdir())
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--baseline", help="a commit to run every case on too (before)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads per process")
    args = parser.parse_args()
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    trees = {"this tree": ROOT / "src"}
    worktree = None
    if args.baseline:
        worktree = Path(tempfile.mkdtemp(prefix="passmix-baseline-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree),
                        args.baseline], check=True, capture_output=True)
        trees = {f"baseline {args.baseline}": worktree / "src", **trees}
    try:
        head = f"{'case':<16} {'tree':<22} {'CPU s':>8} {'wall s':>8} {'peak GB':>8}  check"
        print(head)
        print("-" * len(head))
        for name in names:
            for label, src in trees.items():
                res = run_case(name, src, args.threads)
                if "error" in res:
                    print(f"{name:<16} {label:<22} failed: {res['error']}")
                else:
                    check = ("" if res.get("check") is None else
                             f"  {CHECKS[name][0]} = {res['check']:.4f}")
                    print(f"{name:<16} {label:<22} {res['cpu']:8.1f} {res['wall']:8.1f} "
                          f"{res['peak_gb']:8.2f}{check}", flush=True)
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(worktree)], capture_output=True)
            shutil.rmtree(worktree.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
