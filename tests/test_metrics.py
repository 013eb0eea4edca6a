"""Closed-form metrics against numerical integration, asymptotics and brute force."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate
from scipy.special import betaln, digamma, gammaln

import passmix
from passmix import auc_at_k, pass_at_k, pass_hat_k
from passmix.metrics import metric_value

#: no test here compiles a graph: the unit lane (pytest -m unit)
pytestmark = pytest.mark.unit


def _quad_beta(f, a, b):
    """E[f(theta)] for theta ~ Beta(a, b) by quadrature with the Jacobi weight.

    ``weight="alg"`` integrates f(x) x^(a-1) (1-x)^(b-1) exactly at the
    endpoint singularities, so U-shaped Betas are handled.
    """
    val, _ = integrate.quad(f, 0.0, 1.0, weight="alg", wvar=(a - 1.0, b - 1.0),
                            epsabs=1e-14, epsrel=1e-13, limit=200)
    return val / np.exp(betaln(a, b))


def _quad_metric(metric, w, a, b, k):
    if metric == "pass^k":
        f = lambda x: x**k  # noqa: E731
    elif metric == "pass@k":
        # 1 - (1-x)^k, written with expm1/log1p to keep precision near x = 0
        def f(x):
            return -np.expm1(k * np.log1p(-x)) if x < 1 else 1.0
    else:
        def f(x):
            if x <= 0:
                return 0.0
            if x >= 1:
                return 1.0
            # (1/k) sum_r [1 - (1-x)^r] = 1 - (1-x)(1-(1-x)^k)/(k x)
            return 1.0 - (1.0 - x) * (-np.expm1(k * np.log1p(-x))) / (k * x)
    return sum(wh * _quad_beta(f, ah, bh) for wh, ah, bh in zip(w, a, b))


def _random_mixture(rng, h):
    w = rng.dirichlet(np.ones(h))
    a = np.exp(rng.uniform(np.log(0.3), np.log(20.0), h))
    b = np.exp(rng.uniform(np.log(0.3), np.log(20.0), h))
    return w, a, b


class TestAgainstQuadrature:
    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    @pytest.mark.parametrize("seed", range(6))
    def test_random_mixtures(self, metric, seed):
        rng = np.random.default_rng(seed)
        w, a, b = _random_mixture(rng, 1 + seed % 3)
        ks = np.array([1, 2, 7, 60, 1000])
        got = metric_value(metric, w, a, b, ks)
        want = [_quad_metric(metric, w, a, b, k) for k in ks]
        assert_allclose(got, want, rtol=0, atol=1e-8)

    @pytest.mark.parametrize("alpha", [1.0, 1.0 + 3e-6, 1.0 - 3e-6, 1.0 + 2e-5, 0.99, 1.01])
    def test_auc_near_alpha_one(self, alpha):
        # the closed form for AUC@k is 0/0 at alpha = 1; it must stay accurate around it
        for k in (1, 3, 60, 1000):
            got = auc_at_k([1.0], [alpha], [2.5], k)
            assert got == pytest.approx(_quad_metric("auc@k", [1.0], [alpha], [2.5], k),
                                        abs=1e-9)

    def test_extreme_shapes(self):
        w, a, b = [0.3, 0.7], [0.05, 300.0], [40.0, 0.2]
        for metric in ("pass@k", "pass^k", "auc@k"):
            for k in (1, 7, 1000):
                assert metric_value(metric, w, a, b, k) == pytest.approx(
                    _quad_metric(metric, w, a, b, k), abs=1e-8)


class TestBinomialLimit:
    """Huge concentrations (the MLE's binomial limit on sparse real data)."""

    @pytest.mark.parametrize("a,b", [(939.7, 1201664.6), (2.5e5, 7.5e5), (12.0, 4.0e6)])
    def test_against_exact_products(self, a, b):
        r = np.arange(1, 2001)
        # T_r = prod_{i<r} (b + i) / (a + b + i), accumulated term by term
        t = np.exp(np.cumsum(np.log1p(-a / (a + b + np.arange(r.size)))))
        u = np.exp(np.cumsum(np.log1p(-b / (a + b + np.arange(r.size)))))
        assert_allclose(pass_at_k([1.0], [a], [b], r), 1.0 - t, rtol=1e-10, atol=1e-14)
        # Pass^k here falls below 1e-200; its log (~ -460) is right to ~1e-10
        assert_allclose(pass_hat_k([1.0], [a], [b], r), u, rtol=1e-6, atol=1e-300)
        # AUC@k = 1 - S/k with S/k ~ 1 for tiny means: absolute accuracy ~1e-10
        assert_allclose(auc_at_k([1.0], [a], [b], r), np.cumsum(1.0 - t) / r,
                        rtol=1e-8, atol=1e-10)
        assert auc_at_k([1.0], [a], [b], 1) == pytest.approx(a / (a + b), rel=1e-4, abs=1e-12)


class TestAsymptotics:
    """One component at k = 10^6 against the leading-order tail formulas."""

    K = 10**6

    @pytest.mark.parametrize("a,b", [(0.4, 2.0), (2.0, 0.7), (3.0, 5.0), (0.8, 0.8)])
    def test_pass_hat_k(self, a, b):
        approx = np.exp(gammaln(a + b) - gammaln(a) - b * np.log(self.K))
        assert pass_hat_k([1.0], [a], [b], self.K) / approx == pytest.approx(1.0, rel=1e-4)

    # alpha kept small enough that 1 - Pass@k stays far above double rounding (1e-16)
    @pytest.mark.parametrize("a,b", [(0.4, 2.0), (1.2, 0.7), (1.5, 5.0), (0.8, 0.8)])
    def test_pass_at_k(self, a, b):
        approx = np.exp(gammaln(a + b) - gammaln(b) - a * np.log(self.K))
        assert (1.0 - pass_at_k([1.0], [a], [b], self.K)) / approx == pytest.approx(1.0, rel=1e-4)

    @pytest.mark.parametrize("a,b", [(0.4, 2.0), (0.8, 0.8)])
    def test_auc_heavy_tail(self, a, b):
        # alpha < 1: k (1 - AUC@k) = sum_r E[(1-theta)^r]
        #   ~ (Gamma(a+b)/Gamma(b) k^(1-a) - b) / (1-a), up to O(k^-a) relative terms
        lead = np.exp(gammaln(a + b) - gammaln(b) + (1.0 - a) * np.log(self.K))
        approx = (lead - b) / (1.0 - a) / self.K
        got = 1.0 - auc_at_k([1.0], [a], [b], self.K)
        assert got / approx == pytest.approx(1.0, rel=1e-3)

    @pytest.mark.parametrize("a,b", [(2.0, 0.7), (3.0, 5.0)])
    def test_auc_light_tail(self, a, b):
        # alpha > 1: the sum converges to b / (a - 1)
        got = 1.0 - auc_at_k([1.0], [a], [b], self.K)
        assert got * self.K == pytest.approx(b / (a - 1.0), rel=1e-4)

    def test_huge_k_finite_and_monotone(self):
        k = np.array([10**3, 10**5, 10**6, 10**8])
        for f in (pass_at_k, auc_at_k):
            v = f([0.5, 0.5], [0.3, 4.0], [5.0, 1.0], k)
            assert np.all(np.isfinite(v)) and np.all(np.diff(v) > 0)
        v = pass_hat_k([0.5, 0.5], [0.3, 4.0], [5.0, 1.0], k)
        assert np.all(np.isfinite(v)) and np.all(np.diff(v) < 0)


class TestIdentities:
    def test_k1_is_mean(self):
        w, a, b = [0.2, 0.8], [1.5, 6.0], [4.0, 2.0]
        mean = np.sum(np.array(w) * np.array(a) / (np.array(a) + np.array(b)))
        for f in (pass_at_k, pass_hat_k, auc_at_k):
            assert f(w, a, b, 1) == pytest.approx(mean, rel=1e-12)

    def test_auc_is_mean_of_pass_at_r(self):
        w, a, b = [0.4, 0.6], [0.7, 3.0], [2.0, 1.2]
        r = np.arange(1, 1001)
        running = np.cumsum(pass_at_k(w, a, b, r)) / r
        assert_allclose(auc_at_k(w, a, b, r), running, rtol=1e-11)

    def test_uniform_closed_forms(self):
        k = np.arange(1, 50)
        assert_allclose(pass_at_k([1.0], [1.0], [1.0], k), k / (k + 1.0), rtol=1e-12)
        assert_allclose(pass_hat_k([1.0], [1.0], [1.0], k), 1.0 / (k + 1.0), rtol=1e-12)


class TestBroadcasting:
    def test_draws_shape_and_values(self):
        rng = np.random.default_rng(3)
        w = rng.dirichlet(np.ones(2), size=(4, 25))
        a = rng.uniform(0.5, 5, size=(4, 25, 2))
        b = rng.uniform(0.5, 5, size=(4, 25, 2))
        k = np.array([1, 10, 100])
        for f in (pass_at_k, pass_hat_k, auc_at_k):
            out = f(w, a, b, k)
            assert out.shape == (4, 25, 3)
            assert f(w, a, b, 10).shape == (4, 25)
            assert out[2, 7, 1] == pytest.approx(f(w[2, 7], a[2, 7], b[2, 7], 10), rel=1e-13)

    def test_scalar_returns_float(self):
        assert isinstance(pass_at_k([1.0], [2.0], [3.0], 5), float)

    def test_inputs_not_mutated(self):
        w, a, b = np.array([0.5, 0.5]), np.array([1.0, 2.0]), np.array([3.0, 1.0])
        k = np.array([1, 5])
        copies = [x.copy() for x in (w, a, b, k)]
        auc_at_k(w, a, b, k)
        for x, c in zip((w, a, b, k), copies):
            assert np.array_equal(x, c)


class TestValidation:
    @pytest.mark.parametrize("k,match", [(0, ">= 1"), (-3, ">= 1"), (2.5, "whole"),
                                          (np.nan, "whole"), ([], "empty")])
    def test_bad_k(self, k, match):
        with pytest.raises(ValueError, match=match):
            pass_at_k([1.0], [1.0], [1.0], k)

    @pytest.mark.parametrize("k, shown", [(np.int64(0), "got 0."), (np.float64(2.5), "got 2.5."),
                                          (np.array([3, -1]), "got -1.")])
    def test_numpy_values_are_shown_as_numbers(self, k, shown):
        # as the user typed them, not as np.int64(0)
        with pytest.raises(ValueError) as info:
            pass_at_k([1.0], [1.0], [1.0], k)
        assert str(info.value).endswith(shown) and "np." not in str(info.value)

    def test_options_show_numpy_values_as_numbers(self):
        counts = passmix.Counts([1, 2], [3, 3])
        with pytest.raises(ValueError, match=r"got 1\.5\.$"):
            passmix.fit(counts, n_init=np.float64(1.5))
        with pytest.raises(ValueError, match=r"got 0\.$"):
            passmix.fit(counts, max_components=np.int64(0))

    def test_bad_parameters(self):
        with pytest.raises(ValueError, match="positive"):
            pass_at_k([1.0], [0.0], [1.0], 3)
        with pytest.raises(ValueError, match="non-negative"):
            pass_at_k([-0.1, 1.1], [1.0, 1.0], [1.0, 1.0], 3)
        with pytest.raises(ValueError, match="NaN"):
            pass_at_k([1.0], [np.nan], [1.0], 3)
        with pytest.raises(ValueError, match="broadcast"):
            pass_at_k([0.5, 0.5], [1.0, 2.0, 3.0], [1.0, 1.0], 3)

    def test_unknown_metric(self):
        with pytest.raises(ValueError, match="unknown metric"):
            metric_value("pass@q", [1.0], [1.0], [1.0], 1)

    def test_aliases(self):
        assert metric_value("pass_hat_k", [1.0], [2.0], [2.0], 3) == passmix.pass_hat_k(
            [1.0], [2.0], [2.0], 3)

    @pytest.mark.parametrize("weights,match", [
        ([0.3, 0.3], "sum to 1"), ([0.0, 0.0], "sum to 1"), ([0.5, 0.6], "sum to 1"),
    ])
    def test_weights_must_sum_to_one(self, weights, match):
        with pytest.raises(ValueError, match=match):
            pass_at_k(weights, [1.0, 2.0], [1.0, 2.0], 3)

    def test_empty_component_axis(self):
        with pytest.raises(ValueError, match="no components"):
            pass_at_k(np.empty(0), np.empty(0), np.empty(0), 3)

    @pytest.mark.parametrize("k", [2**63, 10**30, np.uint64(2**63), 2.0**63, [5, 2**64]])
    def test_k_beyond_int64_is_refused(self, k):
        with pytest.raises(ValueError, match="too large"):
            pass_at_k([1.0], [1.0], [1.0], k)

    def test_largest_k(self):
        # 2^63 - 1 is accepted: Beta(1, 1) gives k / (k + 1)
        assert pass_at_k([1.0], [1.0], [1.0], 2**63 - 1) == pytest.approx(1.0, abs=1e-18)
        assert pass_hat_k([1.0], [1.0], [1.0], 10**18) == pytest.approx(1e-18, rel=1e-12)


class TestFuzzedReproducers:
    """Inputs that once gave NaN or wrong values (issue 7's fuzzing)."""

    def test_tiny_shape_past_k_64(self):
        # alpha + 1e-17 == alpha: the moment ratio used to be inf - inf for k > 64
        got = pass_at_k([1.0], [1e-17], [1.0], 65)
        assert got == pytest.approx(1e-17 * (digamma(66.0) - digamma(1.0)), rel=1e-12)
        v = pass_hat_k([0.34, 0.66], [1.6, 2.97], [9.99, 6.5e-64], [64, 65, 100])
        assert np.all(np.isfinite(v))
        assert_allclose(v, 0.66 + 0.34 * pass_hat_k([1.0], [1.6], [9.99], [64, 65, 100]),
                        rtol=1e-12)

    def test_auc_at_alpha_one_large_beta(self):
        # exact: Beta(1, b) has Pass@r = 1 - b / (b + r) = r / (b + r)
        b, k = 1e6, np.array([1, 2, 10, 1000])
        r = np.arange(1, 1001)
        want = np.cumsum(r / (b + r))[k - 1] / k
        assert_allclose(auc_at_k([1.0], [1.0], [b], k), want, rtol=1e-10)
        assert_allclose(auc_at_k([1.0], [1.0], [b], [1, 2, 10]), [1e-6, 1.5e-6, 5.5e-6],
                        rtol=1e-5)

    @pytest.mark.parametrize("alpha", [1.0 - 1e-9, 1.0 + 1e-12, 0.999, 1.001])
    def test_auc_near_alpha_one_large_beta_against_summation(self, alpha):
        b, r = 3e5, np.arange(1, 401)
        log_t = np.cumsum(np.log1p(-alpha / (alpha + b + np.arange(r.size))))
        assert_allclose(auc_at_k([1.0], [alpha], [b], r), np.cumsum(-np.expm1(log_t)) / r,
                        rtol=1e-9)
