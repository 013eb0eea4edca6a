"""Wall time of the full repeated-trial configuration on the 10k-sample MATH data.

Runs ``passmix experiment repeated`` (7 Pythia models x 3 seeds x
m in {5, 10, 20, 50, 100, 200}, k on a log grid to 10,000: 126 BIC fits, then
the report and figures) as a fresh process, serially and with ``--jobs 2``,
then once more reading the cache, and prints a table. The whole command is
timed (start-up, PyTensor compilation, fits, report, figures); "fits" is the
time of the protocol itself as the command reports it.

Usage::

    python benchmarks/bench_repeated.py [--data PATH] [--jobs 2]
"""

from __future__ import annotations

import argparse
import filecmp
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "src" / "passmix" / "example_data" / "math_pythia_10k.csv"


def run(data: Path, out: Path, jobs: int) -> tuple[float, float, str]:
    cmd = [sys.executable, "-m", "passmix.cli", "experiment", "repeated", str(data),
           "--group-by", "model", "--jobs", str(jobs), "--out", str(out), "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    match = re.search(r"in ([\d.]+) s", done.stdout)
    return wall, float(match.group(1)) if match else float("nan"), done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        serial, parallel = Path(tmp) / "serial", Path(tmp) / "parallel"
        for label, out, jobs in (("serial (--jobs 1)", serial, 1),
                                 (f"--jobs {args.jobs}", parallel, args.jobs),
                                 ("rerun from cache", serial, 1)):
            wall, fits, _ = run(args.data, out, jobs)
            rows.append((label, wall, fits))
        same = filecmp.cmp(serial / "errors.csv", parallel / "errors.csv", shallow=False)
    print(f"full MATH configuration ({args.data.name}): 126 fits + report + figures")
    print(f"{'run':<20} {'wall (s)':>9} {'protocol (s)':>13}")
    for label, wall, fits in rows:
        print(f"{label:<20} {wall:>9.1f} {fits:>13.1f}")
    print(f"errors.csv identical serial vs --jobs {args.jobs}: {same}")


if __name__ == "__main__":
    main()
