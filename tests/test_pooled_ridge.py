"""The pooled delta method on a flat ridge to a bound (``PooledFit.weak_coordinates``).

On MATH with 10 trials per problem (7 Pythia models x 128 problems, seed 8
of the coverage study's subsamples), the shared log-concentration stops at
13.85 of its bound 14 with a standard error of ~960: ten trials cannot tell
a concentration of 1e6 from one of 100. The delta method linearises where
the optimiser stopped, where no metric depends on the concentration, so its
k = 1000 lower ends sat up to 0.16 above the profile's. Its intervals are
now widened over the metric's values along that ridge
(``PooledFit.ridge_points``), which must lie inside the likelihood region
(checked with the numpy likelihood, itself checked by integration in
test_models_pooled.py) and so inside the profile's interval.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chi2

import passmix
from passmix.data._parse import natural_key
from passmix.examples import example_path
from passmix.experiments import load_repeated, nested_subsets
from passmix.experiments._harness import group_id, stream
from passmix.models.pooled.result import PooledFit
from passmix.models.pooled._layout import _system_parts, split_blocks
from passmix.models.pooled._likelihood import _log_grid_weights, task_grid_loglik

M = 10
K = [10, 100, 1000]


@pytest.fixture(scope="module")
def groups():
    return load_repeated(example_path("math_10k"), group_by="model", with_tasks=True)


def subsample_fit(groups, seed: int, order=sorted) -> PooledFit:
    counts = {}
    # the coverage study found this case with the systems string-sorted; in another order
    # the optimiser stops elsewhere on the flat ridge (the same log-likelihood to 1e-9)
    for key in order(groups):
        trials, tasks = groups[key]
        sub = nested_subsets(trials, [M], stream(seed, group_id(key), 0))[M]
        counts[key] = passmix.Counts(sub.successes, sub.trials, tasks)
    panel = passmix.Panel.from_counts(counts, unpack=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return passmix.fit_pooled(panel, seed=stream(seed, 0, 2, M))


@pytest.fixture(scope="module")
def ridge_fit(groups):
    return subsample_fit(groups, 8)


@pytest.fixture(scope="module")
def ridge_fit_natural(groups):
    """The same panel with its systems in natural order (70M before 160M)."""
    return subsample_fit(groups, 8, order=lambda g: sorted(g, key=natural_key))


def numpy_loglik(fit: PooledFit, z: np.ndarray) -> float:
    """The marginal log-likelihood at z, summed over tasks from the grid's terms."""
    parts = split_blocks(z, fit.blocks())
    a, log_kappa, log_s = _system_parts(parts)
    log_w = _log_grid_weights(fit.family, parts, fit.grid)
    return float(logsumexp(log_w + task_grid_loglik(fit.layout, a, log_kappa, fit.grid, log_s),
                           axis=1).sum())


def test_a_flat_concentration_is_weak_and_a_pinned_one_is_not(groups, ridge_fit):
    assert ridge_fit.concentration == "shared"
    assert ridge_fit.weak_coordinates == ["log_concentration"]
    assert ridge_fit.info()["weak_coordinates"] == ["log_concentration"]
    # seed 2: the same panel's shape, a concentration of ~65 with a standard error of 1
    pinned = subsample_fit(groups, 2)
    assert pinned.weak_coordinates == []
    assert pinned.ridge_points(0.95) == []


@pytest.fixture(scope="module")
def held_fit():
    """Binomial counts: the shared concentration held on its upper bound (the binomial limit)."""
    rng = np.random.default_rng(0)
    d = rng.normal(0.0, 1.5, size=60)
    mu = 1 / (1 + np.exp(-(np.array([[-1.0], [-0.3], [0.3], [1.0]]) - d)))
    panel = passmix.Panel(rng.binomial(10, mu), np.full(mu.shape, 10))
    return passmix.fit_pooled(panel, seed=0, concentration="shared")


def concentration_position(fit: PooledFit) -> int:
    block = [name for name, _ in fit.blocks()].index("log_concentration")
    return sum(size for _, size in fit.blocks()[:block])


def log_concentration(fit: PooledFit, z: np.ndarray) -> float:
    return float(z[concentration_position(fit)])


@pytest.mark.parametrize("which, reach", [("ridge_fit", 5.0), ("held_fit", 1.0)])
def test_the_ridge_points_lie_in_the_region_and_reach_down_the_ridge(which, reach, request):
    fit = request.getfixturevalue(which)
    points = fit.ridge_points(0.95)
    floor = fit.loglik - chi2(1).ppf(0.95) / 2
    # the fit's own log-likelihood is the numpy one's at the estimate
    assert numpy_loglik(fit, fit.params) == pytest.approx(fit.loglik, abs=1e-6)
    for z in points:
        assert numpy_loglik(fit, z) >= floor - 1e-6
    top = fit.box()[concentration_position(fit), 1]
    log_kappa = np.array([log_concentration(fit, z) for z in points])
    # the region holds concentrations far below the estimate's (~1e6 on seed 8; the
    # binomial limit, held on the bound, for the binomial counts: walked down only)
    assert log_kappa.min() < log_concentration(fit, fit.params) - reach
    if which == "held_fit":
        assert log_concentration(fit, fit.params) == pytest.approx(top)
        assert (log_kappa < top).all()


def test_the_ridge_does_not_depend_on_where_the_optimiser_stopped(ridge_fit,
                                                                  ridge_fit_natural):
    """The two orders stop at log-concentrations 13.85 and 13.35 of the same flat ridge.
    The walk profiles the other coordinates and bisects the region's edge to 0.01, so
    both reach the same depth and the same metric values there (before, a linear path
    bisected 4 times stopped at 3.83 and 4.17, and the k = 1000 lower ends the ridge
    sets differed by up to 0.04)."""
    assert ridge_fit_natural.loglik == pytest.approx(ridge_fit.loglik, abs=1e-6)
    c = concentration_position(ridge_fit)
    assert abs(ridge_fit.params[c] - ridge_fit_natural.params[c]) > 0.1
    depth = [min(log_concentration(f, z) for z in f.ridge_points(0.95))
             for f in (ridge_fit, ridge_fit_natural)]
    assert depth[0] == pytest.approx(depth[1], abs=0.02)
    # each system's extremes over the ridge, matched by name
    systems = ridge_fit.systems
    order = [list(ridge_fit_natural.systems).index(s) for s in systems]
    k = np.array([1000])
    lows = []
    for f, rows in ((ridge_fit, list(range(len(systems)))), (ridge_fit_natural, order)):
        values = np.stack([f.metric_values("pass@k", k, z, rows=rows)[:, 0]
                           for z in f.ridge_points(0.95)])
        lows.append(values.min(axis=0))
    np.testing.assert_allclose(lows[0], lows[1], atol=2e-3)


def test_a_fit_made_from_its_coordinates_alone_walks_the_same_ridge(ridge_fit):
    """Without a log-likelihood given (NaN), the walk takes the cut from the likelihood at
    the coordinates themselves, and reaches the same points."""
    again = PooledFit.from_parameters(ridge_fit.panel, ridge_fit.family, ridge_fit.grid,
                                      ridge_fit.params, n_components=ridge_fit.n_components,
                                      slope=ridge_fit.slope,
                                      concentration=ridge_fit.concentration)
    assert np.isnan(again.loglik)
    assert again.weak_coordinates == ridge_fit.weak_coordinates
    got, want = again.ridge_points(0.95), ridge_fit.ridge_points(0.95)
    assert len(got) == len(want)
    np.testing.assert_allclose(np.array(got), np.array(want), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["ridge_fit", "ridge_fit_natural"])
def test_the_widened_delta_reaches_toward_the_profile_not_past_it(which, monkeypatch, request):
    ridge_fit = request.getfixturevalue(which)
    widened = ridge_fit.delta("pass@k", K)
    profile = ridge_fit.profile("pass@k", K)
    # the profile's ends are the extremes over the whole region, the ridge is a part of it:
    # a ridge value below the profile's lower end would be a point outside the region
    ridge_values = np.stack([ridge_fit.metric_values("pass@k", np.array(K), z).ravel()
                             for z in ridge_fit.ridge_points(0.95)])
    assert (ridge_values.min(axis=0) >= profile["lower"].to_numpy() - 1e-3).all()
    assert (ridge_values.max(axis=0) <= profile["upper"].to_numpy() + 1e-3).all()
    monkeypatch.setattr(PooledFit, "ridge_points", lambda self, level: [])
    plain = replace(ridge_fit, _cache={}).delta("pass@k", K)
    at = (widened["k"] == 1000).to_numpy()
    gap_before = plain["lower"].to_numpy()[at] - profile["lower"].to_numpy()[at]
    gap_after = widened["lower"].to_numpy()[at] - profile["lower"].to_numpy()[at]
    # before: every k = 1000 lower end above the profile's by 0.05 or more
    assert (gap_before > 0.05).all(), gap_before
    # after: none farther, and 40% less in all (Pass@1000 of the weakest system rises as the
    # concentration falls, so its lower end has nothing to gain from the ridge)
    assert (gap_after <= gap_before + 1e-12).all(), (gap_before, gap_after)
    assert gap_after.sum() <= 0.6 * gap_before.sum(), (gap_before, gap_after)
    # within the trials the data pin the metric: k = 10 ends hardly move
    at10 = (widened["k"] == 10).to_numpy()
    assert np.abs(widened["lower"].to_numpy()[at10] - plain["lower"].to_numpy()[at10]).max() < 0.01


def test_compare_says_when_its_delta_differences_miss_the_ridge(ridge_fit):
    a, b = ridge_fit.systems[0], ridge_fit.systems[1]
    with pytest.warns(passmix.FitWarning, match="log_concentration flat to its bound"):
        passmix.compare(ridge_fit, a, b, k=[1000], method="pooled", interval="delta")
    assert "log_concentration" in ridge_fit.system(a).status()
