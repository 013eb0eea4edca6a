"""Wall time of paired comparisons and rankings, against the pooled fit they start from.

Run:  python benchmarks/bench_compare.py [--data math_m10 livecodebench] [--repeats 2]

For each bundled panel (MATH: 7 models x 128 problems, 10 trials;
LiveCodeBench: 43 x 400, 10 samples) the table gives the median over
`--repeats` runs, in one process after a warm-up, of:

* the pooled fit alone (``fit_pooled``, the baseline);
* ``compare`` of one pair and of every pair at k = 1, 10, 100, 1000, each
  method (``pooled`` from a given fit, so the column is the comparison's own
  cost, with profile and with delta intervals; ``auto`` from the same fit,
  with its per-pair check; ``direct`` at k <= 10; ``mixture`` with its
  per-system fits; ``posterior`` from draws made once, on the smaller panel);
* ``rank`` at k = 10 from the given fit;

and each time as a ratio to the pooled fit measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def timed(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cases(passmix, panel, fit, a, b, k) -> dict:
    return {
        "fit_pooled (baseline)": lambda: passmix.fit_pooled(panel, seed=0),
        "compare one pair, pooled (profile)": lambda: passmix.compare(fit, a, b, k=k,
                                                                      method="pooled"),
        "compare one pair, pooled (delta)": lambda: passmix.compare(
            fit, a, b, k=k, method="pooled", interval="delta"),
        "compare one pair, auto (with the check)": lambda: passmix.compare(fit, a, b, k=k),
        "compare every pair, pooled (default interval)": lambda: passmix.compare(
            fit, k=k, method="pooled"),
        "compare every pair, pooled (delta)": lambda: passmix.compare(
            fit, k=k, method="pooled", interval="delta"),
        "compare one pair, direct (k <= 10)": lambda: passmix.compare(
            panel, a, b, k=[1, 10], method="direct"),
        "compare every pair, direct (k <= 10)": lambda: passmix.compare(
            panel, k=[1, 10], method="direct"),
        "compare one pair, mixture": lambda: passmix.compare(panel, a, b, k=k,
                                                             method="mixture"),
        "rank at k = 10, pooled": lambda: passmix.rank(fit, 10),
    }


def _posterior_cases(passmix, panel, a, b, k) -> dict:
    # NUTS once (not repeated), then the comparison from its draws
    post = passmix.sample_pooled(panel, draws=500, tune=500, seed=0)
    return {"compare every pair, posterior (from 2 x 500 draws)":
            lambda: passmix.compare(post, k=k),
            "compare one pair, posterior (from 2 x 500 draws)":
            lambda: passmix.compare(post, a, b, k=k)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["math_m10", "livecodebench"])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import passmix
    from passmix.examples import example_path

    k = [1, 10, 100, 1000]
    print("| data | systems x tasks | case | seconds | / pooled fit |")
    print("|---|---|---|---|---|")
    for name in args.data:
        panel = passmix.Panel.read(example_path(name), "model")
        a, b = panel.systems[0], panel.systems[1]
        passmix.fit_pooled(panel, seed=0)  # warm-up: compiled objective
        fit = passmix.fit_pooled(panel, seed=0)
        cases = _cases(passmix, panel, fit, a, b, k)
        if panel.shape[0] * panel.shape[1] <= 2000:  # NUTS on a leaderboard takes long
            started = time.perf_counter()
            cases.update(_posterior_cases(passmix, panel, a, b, k))
            print(f"| {name} | {panel.shape[0]} x {panel.shape[1]} | sample_pooled "
                  f"(2 x 500 draws, once) | {time.perf_counter() - started:.2f} | |",
                  flush=True)
        base = None
        for case, call in cases.items():
            seconds = timed(call, args.repeats)
            base = seconds if base is None else base
            print(f"| {name} | {panel.shape[0]} x {panel.shape[1]} | {case} | {seconds:.2f} | "
                  f"{seconds / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
