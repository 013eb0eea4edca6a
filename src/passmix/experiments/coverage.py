"""Coverage of the mixture's intervals by simulation and on real data.

A *case* is counts together with the true value of each metric: counts
simulated from a known Beta mixture (the truth is the population metric of
that mixture), or a real data set subsampled to a few trials per task (the
truth is the combinatorial estimate on all its trials). For each case and
interval method (profile likelihood, delta method on the logit scale,
posterior credible interval with the weak prior) this records the interval
at each horizon and whether it covers the truth; :func:`coverage_table`
summarises coverage and width per method, metric and horizon.

The scenarios of the study behind passmix's default interval
(``benchmarks/coverage_study.py``, ``pytest -m slow``) are built here, so
the benchmark and the test run the same thing:

* :func:`near_limit_cases`: J = 128 tasks, m = 10 trials, 90% of tasks from
  Beta(0.05, 40) (nearly impossible) and 10% from Beta(1, 3); the fit sits at
  or near the binomial limit, as on weak models' real data;
* :func:`interior_cases`: J = 200, m = 10, one Beta(0.8, 2.5), where the
  delta method's asymptotics hold;
* :func:`math_cases`: the bundled MATH data (7 Pythia models x 128
  problems, 10,000 trials each) subsampled to m = 10, against all trials.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import METRICS, check_k, check_level
from ..data.counts import Counts
from ..data.read import read_counts
from ..estimators.direct import combinatorial_estimate
from ..examples import example_path
from ..models.mixture.fit import fit
from ..metrics import metric_value

__all__ = ["COVERAGE_METHODS", "Case", "coverage_table", "interior_cases", "interval_coverage",
           "math_cases", "near_limit_cases", "simulate_counts"]

#: Interval methods compared: profile likelihood, delta method (logit scale),
#: posterior credible interval (weak prior, equal-tailed).
COVERAGE_METHODS = ("profile", "delta", "posterior")
NEAR_LIMIT = ([0.9, 0.1], [0.05, 1.0], [40.0, 3.0])
#: Absolute slack of ``covered_tol``: a reference of exactly 0 (Pass^k of a
#: task with fewer than k successes in all its trials) is covered by an
#: interval of [1e-30, 1e-20].
COVERAGE_TOL = 1e-6
INTERIOR = ([1.0], [0.8], [2.5])


@dataclass(frozen=True)
class Case:
    """Counts and the true metrics they estimate.

    Attributes
    ----------
    scenario : str
        Name of the scenario.
    replicate : str
        Which draw or (group, seed) it is.
    counts : Counts
        The data an interval is computed from.
    truth : dict
        ``metric -> array`` of true values at the study's horizons.
    """

    scenario: str
    replicate: str
    counts: Counts
    truth: dict[str, np.ndarray]


def simulate_counts(weights, alpha, beta, n_tasks: int, n_trials: int, rng) -> Counts:
    """Counts of `n_tasks` tasks, `n_trials` each, with success rates from a Beta mixture.

    Examples
    --------
    >>> from passmix.experiments.coverage import simulate_counts
    >>> simulate_counts([1.0], [2.0], [2.0], 5, 10, 0).n_tasks
    5
    """
    rng = np.random.default_rng(rng)
    comp = rng.choice(len(weights), size=n_tasks, p=np.asarray(weights, dtype=float))
    theta = rng.beta(np.asarray(alpha, dtype=float)[comp], np.asarray(beta, dtype=float)[comp])
    trials = np.full(n_tasks, n_trials)
    return Counts(rng.binomial(trials, theta), trials)


def _simulated(scenario: str, mixture, n_tasks: int, n_trials: int, n_rep: int, k, seed: int
               ) -> Iterator[Case]:
    ks = check_k(k)[0]
    truth = {metric: metric_value(metric, *mixture, ks) for metric in METRICS}
    for rep in range(n_rep):
        counts = simulate_counts(*mixture, n_tasks, n_trials, np.random.default_rng([seed, rep]))
        yield Case(scenario, str(rep), counts, truth)


def near_limit_cases(n_rep: int, k=(10, 100, 1000), seed: int = 7) -> Iterator[Case]:
    """Simulated cases near the binomial limit (J = 128, m = 10; see the module docstring)."""
    return _simulated("near limit (sim)", NEAR_LIMIT, 128, 10, n_rep, k, seed)


def interior_cases(n_rep: int, k=(10, 100, 1000), seed: int = 11) -> Iterator[Case]:
    """Simulated cases from one Beta(0.8, 2.5) (J = 200, m = 10)."""
    return _simulated("interior (sim)", INTERIOR, 200, 10, n_rep, k, seed)


def math_cases(seeds: Sequence[int], m: int = 10, k=(10, 100, 1000)) -> Iterator[Case]:
    """The bundled MATH data subsampled to `m` trials per problem, one case per model and seed.

    The truth is the combinatorial estimate on all 10,000 trials.
    """
    ks = check_k(k)[0]
    groups = read_counts(example_path("math_10k"), group_by="model")
    for (model,), full in groups.items():
        truth = {metric: combinatorial_estimate(full, metric, ks) for metric in METRICS}
        for seed in seeds:
            sub = full.subsample(m, np.random.default_rng([seed, m]))
            yield Case(f"MATH m={m} (real)", f"{model} / seed {seed}", sub, truth)


def interval_coverage(cases: Iterable[Case], k=(10, 100, 1000), *,
                      methods: Sequence[str] = COVERAGE_METHODS, level: float = 0.95,
                      draws: int = 1000, chains: int = 4, seed: int = 0) -> pd.DataFrame:
    """Intervals of each method for each case, and whether they cover the truth.

    Parameters
    ----------
    cases : iterable of Case
        The data and truths (e.g. :func:`near_limit_cases`).
    k : int or sequence of int
        Horizons; the truths must be given at these.
    methods : sequence of {"profile", "delta", "posterior"}
        Interval methods.
    level : float, default 0.95
        Nominal level.
    draws, chains : int
        NUTS draws per chain and chains of the posterior method (weak prior).
    seed : int, default 0
        Seed of the fits and samplers.

    Returns
    -------
    pandas.DataFrame
        One row per case, method, metric and k: scenario, replicate, method,
        metric, k, truth, estimate, lower, upper, covered, covered_tol
        (within :data:`COVERAGE_TOL`), width, n_components, binomial_limit.

    Examples
    --------
    >>> from passmix.experiments.coverage import interval_coverage, interior_cases
    >>> rows = interval_coverage(interior_cases(1), k=[10], methods=["delta"])
    >>> rows[["method", "metric", "k"]].drop_duplicates().shape
    (3, 3)
    """
    ks = check_k(k)[0]
    level = check_level(level)
    unknown = set(methods) - set(COVERAGE_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; expected {COVERAGE_METHODS}.")
    rows = []
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit(case.counts, seed=seed)
            ends = {}
            if "profile" in methods:
                table = res.summary(ks, level, method="profile")
                ends["profile"] = {m: (part["estimate"].to_numpy(), part["lower"].to_numpy(),
                                       part["upper"].to_numpy())
                                   for m, part in table.groupby("metric", sort=False)}
            if "delta" in methods:
                ends["delta"] = {m: (d.estimate, d.lower, d.upper) for m, d in
                                 ((m, res.delta(m, ks, level)) for m in METRICS)}
            if "posterior" in methods:
                from ..bayes.sample import credible_interval, posterior_metrics, sample

                idata = sample(res, draws, chains, seed=seed, k=ks, cores=1, check=False)
                ends["posterior"] = {}
                for m in METRICS:
                    draws_m = posterior_metrics(idata, k=ks, metric=m)
                    lo, hi = credible_interval(idata, m, ks, level)
                    mean = draws_m.mean(("chain", "draw")).to_numpy()
                    ends["posterior"][m] = (mean, np.atleast_1d(lo), np.atleast_1d(hi))
        for method, per_metric in ends.items():
            for metric, (est, lo, hi) in per_metric.items():
                truth = np.asarray(case.truth[metric], dtype=float)
                for i, kk in enumerate(ks):
                    rows.append({
                        "scenario": case.scenario, "replicate": case.replicate,
                        "method": method, "metric": metric, "k": int(kk),
                        "truth": float(truth[i]), "estimate": float(est[i]),
                        "lower": float(lo[i]), "upper": float(hi[i]),
                        "covered": bool(lo[i] <= truth[i] <= hi[i]),
                        "covered_tol": bool(lo[i] - COVERAGE_TOL <= truth[i]
                                            <= hi[i] + COVERAGE_TOL),
                        "width": float(hi[i] - lo[i]),
                        "n_components": res.n_components,
                        "binomial_limit": bool(res.binomial_limit),
                    })
    return pd.DataFrame(rows)


def coverage_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Coverage (percent), its Monte Carlo standard error and mean width (points).

    ``coverage_tol`` counts a truth within :data:`COVERAGE_TOL` of an end as
    covered; ``at_limit`` is the percentage of fits at the binomial limit.

    One row per scenario, metric, k and method, from :func:`interval_coverage`.
    """
    keys = ["scenario", "metric", "k", "method"]
    grouped = rows.groupby(keys, sort=False)
    out = grouped.agg(n=("covered", "size"), coverage=("covered", "mean"),
                      coverage_tol=("covered_tol", "mean"),
                      mean_width=("width", "mean"), median_width=("width", "median"),
                      at_limit=("binomial_limit", "mean")).reset_index()
    out["mc_se"] = 100 * np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["n"])
    out["coverage"] *= 100
    out["coverage_tol"] *= 100
    out["mean_width"] *= 100
    out["median_width"] *= 100
    out["at_limit"] *= 100
    return out[keys + ["n", "coverage", "mc_se", "coverage_tol", "mean_width", "median_width",
                       "at_limit"]]
