"""Coverage beyond the trials when the truth has a shape the fit does not assume (issue 48):
the fast subset of ``docs/results/shape_coverage.py`` that CI runs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import passmix

pytestmark = pytest.mark.slow

REPS, TASKS, M = 40, 75, 10


def _replicates():
    """30% impossible tasks, the rest Beta(1, 2): BIC keeps one Beta, and the mixture's own
    Pass@1000 interval sits above the truth."""
    for rep in range(REPS):
        rng = np.random.default_rng([48, M, rep, 1])
        theta = np.where(rng.random(TASKS) < 0.3, 0.0, rng.beta(1.0, 2.0, TASKS))
        yield theta, passmix.Counts(rng.binomial(M, theta), np.full(TASKS, M))


def test_impossible_tasks_are_covered_by_default():
    hits = {"default": [], "conditional": []}
    for theta, counts in _replicates():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = passmix.fit(counts, seed=0)
            truth = np.mean(-np.expm1(1000 * np.log1p(-theta)))  # Pass@1000 over these tasks
            for name, conditional in (("default", False), ("conditional", True)):
                lo, hi = fit.interval("pass@k", 1000, conditional=conditional)
                hits[name].append(lo <= truth <= hi)
    # at 95% coverage, 40 replicates fall below 34 hits with probability 0.03
    assert sum(hits["default"]) >= 34, sum(hits["default"])
    # the mixture alone misses: the default's coverage is the atom's doing
    assert sum(hits["conditional"]) <= 20, sum(hits["conditional"])


def test_a_thinner_tail_near_one_is_covered_by_default():
    """0.4 Beta(0.5, 8) + 0.6 Beta(5, 2), m = 10: BIC often keeps one Beta, whose tail near 1
    is heavier than the truth's, and the mixture's own Pass^100 interval sits above it; the
    default also spans one more component."""
    reps = 30
    hits = {"default": [], "conditional": []}
    for rep in range(reps):
        rng = np.random.default_rng([48, M, rep, 2])
        first = rng.random(TASKS) < 0.4
        theta = np.where(first, rng.beta(0.5, 8.0, TASKS), rng.beta(5.0, 2.0, TASKS))
        counts = passmix.Counts(rng.binomial(M, theta), np.full(TASKS, M))
        truth = np.mean(theta ** 100)  # Pass^100 over these tasks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = passmix.fit(counts, seed=0)
            for name, conditional in (("default", False), ("conditional", True)):
                lo, hi = fit.interval("pass^k", 100, conditional=conditional)
                hits[name].append(lo <= truth <= hi)
    print({name: sum(h) for name, h in hits.items()})
    # at 95% coverage, 30 replicates fall below 25 hits with probability 0.02
    assert sum(hits["default"]) >= 25, sum(hits["default"])
    assert sum(hits["conditional"]) <= 22, sum(hits["conditional"])
