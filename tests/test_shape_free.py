"""shape_free_interval: ends against the moment problem solved by hand and by brute force,
coverage by simulation from shapes no model here assumes, and its edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaln

import passmix
from passmix import DegenerateDataWarning
from passmix.inference import shape_free
from passmix.metrics import metric_at_rate

#: linear programs only: the unit lane
pytestmark = pytest.mark.unit


def _one_trial(successes: int, tasks: int) -> passmix.Counts:
    return passmix.Counts(np.r_[np.ones(successes), np.zeros(tasks - successes)].astype(int),
                          np.ones(tasks, dtype=int))


def test_one_trial_per_task_gives_the_moment_problems_ends():
    # m = 1: the band holds the mean rate mu in [y_bar - eps, y_bar + eps]. Given mu, Pass@k
    # ranges from mu (rates 0 and 1) to 1 - (1 - mu)^k (every task at mu, by Jensen), and
    # Pass^k from mu^k to mu.
    counts = _one_trial(30, 100)
    eps = np.sqrt(np.log(2 / 0.05) / 200)
    lo, hi = 0.3 - eps, 0.3 + eps
    k = np.array([1, 2, 5, 50])
    at = passmix.shape_free_interval(counts, k)
    np.testing.assert_allclose(at.lower, lo, atol=1e-6)
    np.testing.assert_allclose(at.upper, 1 - (1 - hi) ** k, atol=2e-4)
    hat = passmix.shape_free_interval(counts, k, "pass^k")
    np.testing.assert_allclose(hat.lower, lo**k, atol=2e-4)
    np.testing.assert_allclose(hat.upper, hi, atol=1e-6)
    assert at.band == {1: pytest.approx(eps)}


def test_two_trials_per_task_match_brute_force_over_the_moments():
    # m = 2: the band bounds P(y = 0) = 1 - 2 mu1 + mu2 and P(y <= 1) = 1 - mu2. Pass@3 =
    # 3 mu1 - 3 mu2 + mu3, and given (mu1, mu2) the third moment of a distribution on [0, 1]
    # runs from mu2^2 / mu1 to mu2 - (mu1 - mu2)^2 / (1 - mu1). Brute force over a mesh of
    # (mu1, mu2) gives the range.
    y = np.repeat([0, 1, 2], [50, 30, 40])
    counts = passmix.Counts(y, np.full(y.size, 2))
    eps = np.sqrt(np.log(2 / 0.05) / (2 * y.size))
    f0, f1 = 50 / 120, 80 / 120
    mu1, mu2 = np.meshgrid(np.linspace(1e-4, 1 - 1e-4, 1500), np.linspace(0, 1, 1500))
    ok = ((mu2 >= mu1**2) & (mu2 <= mu1) & (np.abs(1 - 2 * mu1 + mu2 - f0) <= eps)
          & (np.abs(1 - mu2 - f1) <= eps))
    low3 = mu2**2 / mu1
    high3 = mu2 - (mu1 - mu2) ** 2 / (1 - mu1)
    brute = (np.min((3 * mu1 - 3 * mu2 + low3)[ok]), np.max((3 * mu1 - 3 * mu2 + high3)[ok]))
    result = passmix.shape_free_interval(counts, 3)
    assert result.lower[0] == pytest.approx(brute[0], abs=3e-3)
    assert result.upper[0] == pytest.approx(brute[1], abs=3e-3)


def _power_law_pass_at(k):
    """Pass@k of 10% impossible tasks and 90% Beta(0.1, 1.5): 1 - B(a, b + k) / B(a, b)."""
    return 0.9 * (1 - np.exp(betaln(0.1, 1.5 + k) - betaln(0.1, 1.5)))


def test_covers_a_heavy_tail_near_zero_at_every_horizon():
    # a shape none of passmix's models has; the band's guarantee is for the population
    rng = np.random.default_rng(20261207)
    k = np.array([1, 10, 100, 1000])
    truth = _power_law_pass_at(k)
    covered = np.zeros(k.size)
    for _ in range(40):
        p = np.where(rng.random(75) < 0.1, 0.0, rng.beta(0.1, 1.5, 75))
        result = passmix.shape_free_interval(passmix.Counts(rng.binomial(10, p),
                                                            np.full(75, 10)), k)
        covered += (result.lower <= truth + 1e-9) & (truth <= result.upper + 1e-9)
    assert np.all(covered / 40 >= 0.925), covered / 40


def test_ends_are_reached_by_their_distributions_and_the_grid_is_fine_enough(monkeypatch):
    rng = np.random.default_rng(3)
    p = np.where(rng.random(120) < 0.25, 0.0, rng.beta(0.6, 1.5, 120))
    counts = passmix.Counts(rng.binomial(8, p), np.full(120, 8))
    k = [4, 40, 4000]
    for metric in ("pass@k", "pass^k", "auc@k"):
        result = passmix.shape_free_interval(counts, k, metric)
        ends = result.extremes()
        for (horizon, end), atoms in ends.groupby(["k", "end"]):
            assert atoms.weight.sum() == pytest.approx(1.0)
            value = atoms.weight @ metric_at_rate(metric, atoms.rate.to_numpy(), horizon)
            reported = result.summary().loc[horizon, end]
            assert value == pytest.approx(reported, abs=1e-6)
        # a grid three times finer moves no end by more than a fraction of a point
        monkeypatch.setattr(shape_free, "_MIN_GRID", 3 * shape_free._MIN_GRID)
        monkeypatch.setattr(shape_free, "_METRIC_POINTS", 3 * shape_free._METRIC_POINTS)
        finer = passmix.shape_free_interval(counts, k, metric)
        monkeypatch.undo()
        np.testing.assert_allclose(finer.lower, result.lower, atol=2e-3)
        np.testing.assert_allclose(finer.upper, result.upper, atol=2e-3)
        assert np.all(result.lower <= result.upper)


def test_the_never_solved_tasks_decide_the_ends_far_beyond_the_trials():
    counts = passmix.Counts(np.r_[np.zeros(60), np.full(40, 3)].astype(int), np.full(100, 10))
    result = passmix.shape_free_interval(counts, [1000])
    ends = result.extremes()
    lower, upper = ends[ends.end == "lower"], ends[ends.end == "upper"]
    assert result.never_solved == 60
    # the lower end makes (most of) them impossible, the upper puts them near 1 / k or above
    assert lower.weight[lower.rate == 0].sum() > 0.4
    assert upper.weight[upper.rate == 0].sum() < 1e-6
    assert result.upper[0] > 0.99


def test_all_failures_and_too_few_tasks():
    counts = passmix.Counts(np.zeros(40, dtype=int), np.full(40, 10))
    eps = np.sqrt(np.log(40) / 80)
    at = passmix.shape_free_interval(counts, [1, 10, 100])
    hat = passmix.shape_free_interval(counts, [10, 100], "pass^k")
    np.testing.assert_allclose(at.lower, 0.0, atol=1e-9)
    # Pass@10 = 1 - P(y = 0) <= eps, reached by mass eps at rate 1, which gives Pass@1 eps too;
    # past the trials the never-solved tasks may sit at rates near 1 / k
    np.testing.assert_allclose(at.upper[:2], eps, atol=1e-6)
    assert 0.9 < at.upper[2] < 1.0
    # E[p^10] <= eps is the band's last constraint: Pass^k for k >= 10 reaches eps (mass at 1)
    np.testing.assert_allclose(hat.upper, eps, atol=1e-6)
    with pytest.warns(DegenerateDataWarning, match="too few"):
        one = passmix.shape_free_interval(passmix.Counts([2], [5]), [1, 100])
    np.testing.assert_allclose(one.lower, 0.0, atol=1e-9)
    np.testing.assert_allclose(one.upper, 1.0, atol=1e-9)


def test_groups_of_trial_counts_share_the_level():
    counts = passmix.Counts(np.r_[np.arange(6), np.arange(11)], np.r_[np.full(6, 5), np.full(11, 10)])
    result = passmix.shape_free_interval(counts, 20, level=0.9)
    assert result.band == {5: pytest.approx(np.sqrt(np.log(2 / 0.05) / 12)),
                           10: pytest.approx(np.sqrt(np.log(2 / 0.05) / 22))}
    assert result.n_tasks == 17 and result.never_solved == 2


def test_counts_no_binomial_mixture_can_give_are_an_error():
    # every task 5 of 10: independent trials cannot be this regular
    with pytest.raises(ValueError, match="vary less than independent trials"):
        passmix.shape_free_interval(passmix.Counts(np.full(400, 5), np.full(400, 10)), 10)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"k": 0}, ValueError, "k must be >= 1"),
    ({"k": 2.5}, ValueError, "whole numbers"),
    ({"k": 10, "metric": "pass@x"}, ValueError, "unknown metric"),
    ({"k": 10, "level": 1.0}, ValueError, "level must be in"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        passmix.shape_free_interval(passmix.Counts([1, 2], [3, 3]), **kwargs)


def test_counts_with_no_trial_are_an_error():
    with pytest.raises(ValueError, match="no task with a trial"):
        passmix.shape_free_interval(passmix.Counts([0, 0], [0, 0]), 10)
