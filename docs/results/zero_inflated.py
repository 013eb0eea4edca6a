"""The zero-inflated Beta mixture against the plain mixture: simulation and the bundled MATH data.

Run from the repository root (about five minutes on 2 cores):
``python docs/results/zero_inflated.py [--seeds 3] [--replicates 10]``. It writes
docs/results/zero_inflated.md.

* **Simulation**: J = 300 tasks, m = 50 trials each; a share of the tasks
  (30%, or none) is impossible (success rate 0) and the rest draw their rate
  from Beta(1, 3), so Pass@k = (1 - share) (1 - 3 / (3 + k)) exactly.
  Replicates use seeds 1000.. (with the atom) and 2000.. (without). Each is
  fitted by the plain mixture (``passmix.fit``), the zero-inflated mixture
  (``zero_inflated=True``) and BIC's choice between them (``"auto"``, the
  registered ``zi_mixture``), and the zero-inflated fit's posterior
  (``passmix.sample``, weak priors, 2 chains x 500 draws: its posterior
  mean and 95% equal-tailed credible interval); the table gives the mean
  absolute error of Pass@1000 and Pass@100, how often the 95% interval
  covers, and the mean and largest absolute difference from the plain
  mixture's estimate.
* **MATH** (Large Language Monkeys, 7 Pythia models x 128 problems x 10,000
  samples; ``src/passmix/example_data``): the repeated-trial protocol of
  ``passmix experiment repeated`` at m = 10 and 50 with its seeds, the
  plain mixture, the zero-inflated fit and ``zi_mixture`` (BIC's choice); the error and the 95% profile
  interval's coverage of Pass@k at k = 100 and 1000 against the
  combinatorial estimate on all 10,000 samples.
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

import passmix
from passmix.examples import example_path
from passmix.estimators.registry import register_estimator, unregister_estimator
from passmix.experiments import load_repeated, run_repeated

OUT = Path(__file__).with_suffix(".md")


def simulate(seed: int, share: float, n_tasks: int = 300, trials: int = 50) -> passmix.Counts:
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(n_tasks) < share, 0.0, rng.beta(1.0, 3.0, n_tasks))
    return passmix.Counts(rng.binomial(trials, theta), np.full(n_tasks, trials))


def simulation(replicates: int) -> pd.DataFrame:
    rows = []
    for share, first in ((0.3, 1000), (0.0, 2000)):
        for rep in range(replicates):
            counts = simulate(first + rep, share)
            plain = passmix.fit(counts)
            forced = passmix.fit(counts, zero_inflated=True)
            auto = forced if forced.bic < plain.bic else plain
            post = passmix.sample(forced, draws=500, chains=2, tune=500, seed=rep,
                                  k=[100, 1000], check=False)
            for k in (100, 1000):
                truth = (1.0 - share) * (1.0 - 3.0 / (3.0 + k))
                estimates = {name: (res.pass_at_k(k), *res.interval("pass@k", k), res is forced)
                             for name, res in (("mixture", plain), ("zero-inflated", forced),
                                               ("zi_mixture (BIC)", auto))}
                draws = post.posterior["pass_at_k"].sel(k=k).values.ravel()
                estimates["zero-inflated, posterior"] = (
                    float(draws.mean()), *np.quantile(draws, [0.025, 0.975]), True)
                for name, (value, lo, hi, chosen) in estimates.items():
                    rows.append({"impossible": f"{share:.0%}", "k": k, "method": name,
                                 "abs_error": abs(value - truth),
                                 "covered": lo <= truth <= hi,
                                 "vs_plain": abs(value - plain.pass_at_k(k)),
                                 "zero_inflated_chosen": chosen})
    return pd.DataFrame(rows)


def math_study(seeds: int) -> pd.DataFrame:
    groups = load_repeated(example_path("math_10k"), group_by="model")
    # the zero-inflated fit itself, beside BIC's choice (registered for this run only)
    register_estimator("zero_inflated", partial(passmix.fit, zero_inflated=True),
                       options=("seed", "max_components", "n_init"), in_all=False,
                       replace=True)
    try:
        res = run_repeated(groups, group_cols=["model"], m=[10, 50], k=[100, 1000],
                           seeds=seeds, methods=["mixture", "zero_inflated", "zi_mixture"],
                           jobs=1)
    finally:
        unregister_estimator("zero_inflated")
    return res.errors[res.errors["metric"] == "pass@k"].assign(
        covered=lambda d: (d["lower"] <= d["reference"]) & (d["reference"] <= d["upper"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=10)
    args = parser.parse_args()
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulation(args.replicates)
        math = math_study(args.seeds)
    sim_table = sim.groupby(["impossible", "k", "method"], sort=False).agg(
        mae=("abs_error", "mean"), coverage=("covered", "mean"),
        mean_vs_plain=("vs_plain", "mean"), max_vs_plain=("vs_plain", "max"),
        zi_chosen=("zero_inflated_chosen", "mean")).reset_index()
    math_table = math.groupby(["m", "k", "method"]).agg(
        mae_pp=("abs_error", "mean"), coverage=("covered", "mean"),
        n=("covered", "size")).reset_index()
    lines = [
        "# The zero-inflated mixture against the plain mixture",
        "",
        f"Made by `python docs/results/zero_inflated.py --seeds {args.seeds} --replicates "
        f"{args.replicates}` in {time.time() - start:.0f} s; see the script's docstring for "
        "the set-up.",
        "",
        f"## Simulation (J = 300, m = 50, rest Beta(1, 3), {args.replicates} replicates)",
        "",
        "`mae` is the mean absolute error of Pass@k, `coverage` the share of 95% profile "
        "intervals (credible intervals for the posterior) that hold the true value, "
        "`mean_vs_plain` and `max_vs_plain` the mean and largest absolute difference from "
        "the plain mixture's estimate, `zi_chosen` how often the result is the "
        "zero-inflated model.",
        "",
        sim_table.to_markdown(index=False, floatfmt=".4f"),
        "",
        "The posterior's prior on the atom's logit is Normal(-6, 3) (median weight "
        "0.25%). With the first prior, Normal(-2, 2) (median "
        "12%), the same replicates without impossible tasks gave the posterior a coverage "
        "of 0.8 at k = 100 and 0.2 at k = 1000 (mean absolute error 0.0150 and 0.0176): "
        "a prior that expects an atom put one where there was none, and Pass@1000, near "
        "1, lost its upper reach. With 30% impossible tasks both priors covered 10 of 10.",
        "",
        f"## MATH, 7 Pythia models x 128 problems, seeds 0-{args.seeds - 1}",
        "",
        "`mae_pp` is the mean absolute error of Pass@k in percentage points against the "
        "combinatorial estimate on all 10,000 samples; `coverage` that of the 95% profile "
        "intervals; `zero_inflated` is the zero-inflated fit, `zi_mixture` BIC's choice "
        "between it and the plain mixture.",
        "",
        math_table.to_markdown(index=False, floatfmt=".3f"),
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
