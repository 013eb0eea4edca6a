"""Wall time of ``passmix estimate --example``: profile-likelihood vs delta-method intervals.

Run:  python benchmarks/bench_cli.py [--repeats 3]

Each run is a fresh process (import, fits of the 7 Pythia models at
k = 1, 10, 100, 1000, intervals, printing), as a user would start it; one
untimed run first warms PyTensor's compile cache. Prints the median wall
time of each interval method over the repeats, run alternately so that
machine load affects both alike, and their ratio (issue 7 asks for profile
<= 3x delta).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def run(interval: str) -> float:
    cmd = [sys.executable, "-m", "passmix.cli", "estimate", "--example", "--interval", interval,
           "--quiet"]
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run("delta")  # compile cache
    times: dict[str, list[float]] = {"delta": [], "profile": []}
    for _ in range(args.repeats):
        for interval in times:
            times[interval].append(run(interval))
    median = {k: statistics.median(v) for k, v in times.items()}
    print("passmix estimate --example (7 models x 3 metrics x 4 horizons), fresh processes")
    print(f"{'interval':<10} {'median (s)':>11} {'runs (s)':>30}")
    for interval, values in times.items():
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"{interval:<10} {median[interval]:>11.2f} {shown:>30}")
    print(f"ratio profile / delta: {median['profile'] / median['delta']:.2f}")


if __name__ == "__main__":
    main()
