"""The generic result with a units axis (:mod:`passmix.inference.units`).

A toy model of two independent Beta mixtures, written only from the hooks,
must give each unit the single-system result's delta and profile intervals;
the pooled model's profile of any function must agree with the Wald interval
where its likelihood is quadratic and with its own metric search.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit
from scipy.stats import norm

import passmix
from passmix.inference import Unit, UnitsResult


@dataclass(frozen=True)
class _TwoMixtures(UnitsResult):
    """Two systems fitted apart, stacked: unit i's metric moves only with its own block."""

    fits: tuple
    robust: bool = False
    _cache: dict = field(default_factory=dict)

    @property
    def units(self):
        return ["a", "b"]

    def unit_position(self, label) -> int:
        return self.units.index(label)

    @property
    def params(self):
        return np.concatenate([f.params for f in self.fits])

    @property
    def loglik(self):
        return sum(f.loglik for f in self.fits)

    def blocks(self):
        edges = np.cumsum([0] + [f.params.size for f in self.fits])
        return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]

    def covariance_matrix(self, robust: bool = False):
        cov = np.zeros((self.params.size,) * 2)
        for f, s in zip(self.fits, self.blocks()):
            cov[s, s] = f.covariance
        return cov

    def metric_values(self, metric, k_arr, z=None, rows=None):
        rows = range(2) if rows is None else rows
        return np.array([self.fits[i].metric(metric, k_arr) for i in rows])

    def logit_gradients(self, metric, k_arr, active=None, z=None, rows=None):
        rows = list(range(2)) if rows is None else list(rows)
        grads = np.zeros((self.params.size, len(rows), k_arr.size))
        logits = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            logit, _, _ = self.fits[i].metric_functions(metric)
            for c, k in enumerate(k_arr):
                logits[n, c], grads[self.blocks()[i], n, c] = logit(self.fits[i].params, k)
        return grads, logits

    def region_ends(self, metric, k_arr, level, i, scale, warm=None):
        res = self.fits[i].profile(metric, k_arr, level)
        return res.lower, res.upper, {}


@pytest.fixture(scope="module")
def two_mixtures():
    rng = np.random.default_rng(3)
    counts = [passmix.Counts(rng.binomial(8, rng.beta(a, b, 120)), np.full(120, 8))
              for a, b in ((1.0, 3.0), (2.0, 1.5))]
    return [passmix.fit(c, max_components=1, seed=0) for c in counts]


class TestGenericUnits:
    def test_each_unit_gets_the_single_system_delta_interval(self, two_mixtures):
        toy = _TwoMixtures(tuple(two_mixtures))
        k = [1, 10, 100]
        table = toy.delta("pass@k", k, 0.9)
        for label, fit in zip("ab", two_mixtures):
            alone = fit.delta("pass@k", k, 0.9)
            rows = table[table["system"] == label]
            assert_allclose(rows["estimate"], alone.estimate, rtol=1e-12)
            assert_allclose(rows["se"], alone.standard_error, rtol=1e-9)
            assert_allclose(rows["lower"], alone.lower, rtol=1e-9)
            assert_allclose(rows["upper"], alone.upper, rtol=1e-9)

    def test_each_unit_gets_the_single_system_profile_interval(self, two_mixtures):
        toy = _TwoMixtures(tuple(two_mixtures))
        k = [1, 10, 100]
        for label, fit in zip("ab", two_mixtures):
            alone = fit.profile("pass@k", k)
            lower, upper = toy.unit(label).interval("pass@k", k)
            assert_allclose(lower, alone.lower, rtol=1e-9)
            assert_allclose(upper, alone.upper, rtol=1e-9)

    def test_the_unit_view_reads_its_rows(self, two_mixtures):
        toy = _TwoMixtures(tuple(two_mixtures))
        unit = toy.unit("b")
        assert isinstance(unit, Unit) and unit.name == "b" and unit == toy.unit("b")
        assert unit.metric("pass^k", 5) == pytest.approx(two_mixtures[1].pass_hat_k(5),
                                                         rel=1e-12)
        assert unit.standard_error("pass@k", 10) == pytest.approx(
            two_mixtures[1].standard_error("pass@k", 10), rel=1e-9)
        summary = unit.summary(k=[1, 10], method="delta")
        assert list(summary.columns) == ["metric", "k", "estimate", "se", "lower", "upper"]
        assert (summary["lower"] <= summary["estimate"]).all()

    def test_no_spread_leaves_the_model_ends(self):
        from passmix.inference import with_metric_spread
        base = np.array([0.2, 0.7])
        lower, upper = with_metric_spread(base, base - 0.1, base + 0.1, np.zeros(2), 1.96)
        assert_allclose(lower, base - 0.1)
        assert_allclose(upper, base + 0.1)


@pytest.fixture(scope="module")
def wide_panel():
    rng = np.random.default_rng(8)
    d = rng.normal(0.0, 1.5, 300)
    p = expit(np.array([[-0.6], [0.0], [0.8]]) - d)
    return passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["a", "b", "c"])


class TestPooledProfileFunction:
    def test_an_ability_gap_matches_the_wald_interval(self, wide_panel):
        # 3 systems x 300 tasks x 10 trials: the likelihood is near quadratic in the
        # abilities, so the profile interval of a gap is the Wald interval's
        fit = replace(passmix.fit_pooled(wide_panel, seed=0), robust=False, _cache={})
        g = np.zeros(fit.params.size)
        g[0], g[2] = -1.0, 1.0                               # a_c - a_a, shift-free
        lower, upper = fit.profile_function(lambda z, t: (g @ z, g), lambda z, t: g @ z,
                                            [0], 0.95)
        centre = g @ fit.params
        half = norm.ppf(0.975) * np.sqrt(g @ fit.covariance_matrix() @ g)
        assert centre - lower[0] == pytest.approx(half, rel=0.02)
        assert upper[0] - centre == pytest.approx(half, rel=0.02)

    def test_a_metric_through_it_is_the_metric_search(self, wide_panel):
        fit = replace(passmix.fit_pooled(wide_panel, seed=0), robust=False, _cache={})
        i, k = 1, 50

        def logit(z, t):
            grads, logits = fit.logit_gradients("pass^k", np.array([t]),
                                                np.ones(fit.params.size, dtype=bool), z,
                                                rows=[i])
            return float(logits[0, 0]), grads[:, 0, 0]

        def value(z, t):
            return float(fit.metric_values("pass^k", np.array([t]), z, rows=[i])[0, 0])

        lower, upper = fit.profile_function(logit, value, [k])
        ends = fit.model_ends("pass^k", np.array([k]), 0.95, i)
        assert_allclose([lower[0], upper[0]], [ends[0][0], ends[1][0]], rtol=1e-3)
        assert lower[0] < fit.metric("pass^k", k)[i] < upper[0]
