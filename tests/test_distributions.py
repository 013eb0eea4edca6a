"""BetaMixture and the W1 distances, against quadrature, scipy and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import passmix
from passmix.distributions import BetaMixture, wasserstein1, wasserstein1_midpoint

MIXTURES = [
    BetaMixture([1.0], [2.0], [5.0]),
    BetaMixture([0.3, 0.7], [1.0, 8.0], [9.0, 2.0]),
    BetaMixture([0.2, 0.5, 0.3], [0.3, 5.0, 40.0], [3.0, 5.0, 2.0]),
    BetaMixture([0.5, 0.5], [0.05, 2e4], [5.0, 3e4]),  # a spike near 0 and a near-point mass
    BetaMixture([0.25, 0.25, 0.25, 0.25], [0.5, 3.0, 30.0, 300.0], [0.5, 30.0, 3.0, 100.0]),
]


@pytest.mark.unit
@pytest.mark.parametrize("g", MIXTURES, ids=range(len(MIXTURES)))
def test_ppf_inverts_cdf_to_1e10(g):
    u = np.concatenate([np.linspace(0, 1, 2001), np.logspace(-12, -1, 60),
                        1 - np.logspace(-6, -1, 60)])
    x = g.ppf(u)
    assert np.all((x >= 0) & (x <= 1))
    assert np.max(np.abs(g.cdf(x) - u)) < 1e-10
    assert np.all(np.diff(g.ppf(np.linspace(0, 1, 501))) >= 0)


@pytest.mark.unit
@pytest.mark.parametrize("g", MIXTURES, ids=range(len(MIXTURES)))
def test_ppf_is_the_smallest_double_reaching_the_level(g):
    # closer to 1 than ~1e-9 a density that is infinite at 1 moves the CDF by
    # more than 1e-10 between adjacent doubles: there the root is bracketed
    u = np.concatenate([np.linspace(0.001, 0.999, 999), 1 - np.logspace(-15, -6, 40)])
    x = g.ppf(u)
    assert np.all(g.cdf(x) >= u - 1e-15)
    assert np.all(g.cdf(np.nextafter(x, 0.0)) <= u + 1e-15)


@pytest.mark.unit
@pytest.mark.parametrize("g", MIXTURES[:3], ids=range(3))
def test_cdf_and_moments_match_quadrature_of_the_density(g):
    for x in (0.05, 0.3, 0.5, 0.9):
        num, _ = integrate.quad(g.pdf, 0, x, limit=200, points=[x / 2])
        assert g.cdf(x) == pytest.approx(num, abs=1e-8)
        assert g.sf(x) == pytest.approx(1 - num, abs=1e-8)
    m1, _ = integrate.quad(lambda t: t * g.pdf(t), 0, 1, limit=200)
    m2, _ = integrate.quad(lambda t: t * t * g.pdf(t), 0, 1, limit=200)
    assert g.mean == pytest.approx(m1, abs=1e-9)
    assert g.var == pytest.approx(m2 - m1 ** 2, abs=1e-9)
    assert g.std == pytest.approx(np.sqrt(m2 - m1 ** 2), abs=1e-8)


@pytest.mark.unit
def test_pmf_is_the_binomial_averaged_over_the_mixture():
    g = MIXTURES[1]
    for m in (1, 5, 12):
        brute = [integrate.quad(lambda t: stats.binom.pmf(y, m, t) * g.pdf(t), 0, 1,
                                limit=200)[0] for y in range(m + 1)]
        np.testing.assert_allclose(g.pmf(np.arange(m + 1), m), brute, atol=1e-9)
        assert g.pmf(np.arange(m + 1), m).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.unit
def test_draws_follow_the_mixture():
    g = MIXTURES[2]
    draws = g.rvs(20000, seed=3)
    assert stats.kstest(draws, g.cdf).pvalue > 0.01
    np.testing.assert_array_equal(draws, g.rvs(20000, seed=3))


def test_metric_matches_the_metric_functions_and_the_fit():
    g = MIXTURES[2]
    k = [1, 10, 1000]
    np.testing.assert_allclose(g.metric("pass@k", k), passmix.pass_at_k(g.weights, g.alpha,
                                                                         g.beta, k))
    rng = np.random.default_rng(0)
    counts = passmix.Counts(rng.binomial(10, rng.beta(2, 3, 200)), np.full(200, 10))
    fit = passmix.fit(counts, seed=0)
    assert fit.distribution == BetaMixture(fit.weights, fit.alpha, fit.beta)
    assert fit.distribution.metric("pass^k", 7) == pytest.approx(fit.pass_hat_k(7), rel=1e-12)


@pytest.mark.unit
def test_discrete_w1_matches_scipy():
    rng = np.random.default_rng(0)
    for _ in range(30):
        u = rng.random(rng.integers(1, 40))
        v = np.round(rng.random(rng.integers(1, 40)), 1)  # ties
        uw = rng.random(u.size) + 0.1
        assert wasserstein1(u, v) == pytest.approx(stats.wasserstein_distance(u, v),
                                                   abs=1e-13)
        assert wasserstein1(u, v, uw) == pytest.approx(
            stats.wasserstein_distance(u, v, uw), abs=1e-13)


@pytest.mark.unit
@pytest.mark.parametrize("g", MIXTURES, ids=range(len(MIXTURES)))
def test_mixture_to_sample_w1_is_the_area_between_the_cdfs(g):
    rng = np.random.default_rng(1)
    s = np.sort(np.concatenate([rng.beta(2, 3, 25), [0.0, 1.0, 0.5, 0.5]]))
    area, _ = integrate.quad(lambda t: abs(g.cdf(t) - np.mean(s <= t)), 0, 1,
                             points=np.unique(s), limit=1000, epsabs=1e-12)
    assert wasserstein1(g, s) == pytest.approx(area, abs=1e-8)
    assert wasserstein1(s, g) == pytest.approx(area, abs=1e-8)
    # the quantile form of the same distance
    via_ppf, _ = integrate.quad(
        lambda u: abs(g.ppf(u) - s[min(int(np.ceil(u * s.size)) - 1, s.size - 1)]), 0, 1,
        points=np.arange(1, s.size) / s.size, limit=1000)
    assert wasserstein1(g, s) == pytest.approx(via_ppf, abs=1e-6)


@pytest.mark.unit
def test_mixture_to_mixture_w1_and_identities():
    a, b = BetaMixture([1.0], [2.0], [5.0]), BetaMixture([1.0], [5.0], [2.0])
    via_ppf, _ = integrate.quad(lambda u: abs(a.ppf(u) - b.ppf(u)), 0, 1, limit=200)
    assert wasserstein1(a, b) == pytest.approx(via_ppf, abs=1e-9)
    assert wasserstein1(a, a) == pytest.approx(0.0, abs=1e-12)
    # a shift-free pair: W1 of ordered distributions is the difference of means
    assert wasserstein1(a, b) == pytest.approx(b.mean - a.mean, abs=1e-9)
    # a point mass: the mixture's mean absolute deviation around it
    g = MIXTURES[1]
    mad, _ = integrate.quad(lambda t: abs(t - 0.4) * g.pdf(t), 0, 1, points=[0.4], limit=200)
    assert wasserstein1(g, [0.4]) == pytest.approx(mad, abs=1e-9)


@pytest.mark.unit
def test_midpoint_w1_approaches_the_exact_value():
    g = MIXTURES[2]
    for seed in range(3):
        s = np.random.default_rng(seed).beta(3, 4, 2000)
        exact = wasserstein1(g, s)
        assert wasserstein1_midpoint(g, s) == pytest.approx(exact, abs=2e-3)
    # a uniform G and scores at the midpoints: 0 by construction
    u = BetaMixture([1.0], [1.0], [1.0])
    assert wasserstein1_midpoint(u, (np.arange(10) + 0.5) / 10) == pytest.approx(0, abs=1e-14)


@pytest.mark.unit
def test_bad_input_is_named():
    with pytest.raises(ValueError, match="sum to 1"):
        BetaMixture([0.5, 0.6], [1, 1], [1, 1])
    with pytest.raises(ValueError, match="positive"):
        BetaMixture([1.0], [-1.0], [1.0])
    with pytest.raises(ValueError, match="1-d"):
        BetaMixture([[1.0]], [[1.0]], [[1.0]])
    g = MIXTURES[0]
    with pytest.raises(ValueError, match="NaN"):
        g.cdf([0.2, np.nan])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        g.ppf(1.5)
    with pytest.raises(ValueError, match="empty"):
        wasserstein1(g, [])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        wasserstein1(g, [0.2, 1.3])
    with pytest.raises(ValueError, match="NaN"):
        wasserstein1([0.1], [np.nan])
    with pytest.raises(AttributeError):
        g.weights = np.array([1.0])
    assert not g.weights.flags.writeable
