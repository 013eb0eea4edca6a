"""The rare-success regime: a 7 x 159 panel at m = 60, successes 1e-4 to 1e-2 per attempt.

Run:  python benchmarks/bench_rare.py [--seed 0] [--k 600 1200 6000]

Issue 49's target: ``fit_pooled`` + ``summary(k=[600, 1200, 6000])`` within
20 CPU-s and 1 GB. Each step runs in this process, warm (one untimed fit of a
small panel first loads the compiled model); the table gives CPU seconds
(``time.process_time``, all threads), wall seconds and the process's peak
resident memory after the step (``ru_maxrss``). The panel is
``benchmarks/_panels.py``'s ``rare``; the successes per system are printed.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, nargs="+", default=[600, 1200, 6000])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import passmix
    from _panels import rare, simulate

    panel, truth = rare(seed=args.seed)
    print("successes per system:", panel.successes.sum(axis=1).tolist())
    print("true mean success:", [f"{t:.1e}" for t in truth])
    small, _ = simulate(3, 20, 5, 0.0)
    passmix.fit_pooled(small, seed=0)  # loads the compiled model: not timed
    rows = []

    def step(name, func):
        cpu, wall = time.process_time(), time.perf_counter()
        out = func()
        rows.append((name, time.process_time() - cpu, time.perf_counter() - wall,
                     resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        return out

    fit = step("fit_pooled", lambda: passmix.fit_pooled(panel, seed=0))
    step(f"summary(k={args.k})", lambda: fit.summary(k=args.k))
    print(f"\n| step | CPU s | wall s | peak RSS MB |\n|---|---|---|---|")
    for name, cpu, wall, rss in rows:
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {rss:.0f} |")
    print(f"| total | {sum(r[1] for r in rows):.1f} | {sum(r[2] for r in rows):.1f} | |")


if __name__ == "__main__":
    main()
