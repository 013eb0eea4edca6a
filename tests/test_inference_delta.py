"""Delta-method gradients and intervals against finite differences and simulation."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import norm

import passmix
from conftest import simulate_mixture
from passmix import FitWarning
from passmix.inference import wald_edge_excess
from passmix.metrics import metric_value
from passmix.models.mixture.delta import delta_method, metric_gradient, metric_logit_gradient
from passmix.models.mixture.graph import n_free_parameters, unpack


@pytest.mark.unit
class TestGradient:
    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    @pytest.mark.parametrize("h", [1, 2, 3])
    def test_equals_finite_differences(self, metric, h):
        rng = np.random.default_rng(100 * h + len(metric))
        z = rng.normal(0, 0.8, n_free_parameters(h))
        k = np.array([1, 5, 60, 1000])
        values, grad = metric_gradient(z, h, metric, k)
        def central(e, step):
            return (metric_value(metric, *unpack(z + step * e, h), k)
                    - metric_value(metric, *unpack(z - step * e, h), k)) / (2 * step)

        # Richardson-extrapolated central differences: theta^1000 is steep in z
        step = 2e-5
        fd = np.column_stack([(4 * central(e, step / 2) - central(e, step)) / 3
                              for e in np.eye(z.size)])
        assert_allclose(values, metric_value(metric, *unpack(z, h), k), rtol=1e-12)
        assert_allclose(grad, fd, rtol=1e-5, atol=1e-9)

    def test_auc_gradient_is_mean_of_pass_at_r_gradients(self):
        # the covariance of AUC@k includes the covariance between horizons r = 1..k
        z = np.array([0.3, -1.0, 0.2, 1.5, 2.0])
        k = 25
        _, g_auc = metric_gradient(z, 2, "auc@k", k)
        _, g_pass = metric_gradient(z, 2, "pass@k", np.arange(1, k + 1))
        assert_allclose(g_auc[0], g_pass.mean(axis=0), rtol=1e-9, atol=1e-12)


@pytest.mark.unit
class TestDeltaMethod:
    def test_matches_hand_computation(self):
        z = np.array([-0.5, np.log(6.0)])
        cov = np.array([[0.02, 0.005], [0.005, 0.05]])
        k = np.array([1, 10, 100])
        res = delta_method(z, cov, 1, "pass@k", k, level=0.9, scale="identity")
        values, grad = metric_gradient(z, 1, "pass@k", k)
        full = grad @ cov @ grad.T
        assert_allclose(res.covariance, full)
        assert_allclose(res.standard_error, np.sqrt(np.diag(full)))
        zq = norm.ppf(0.95)
        assert_allclose(res.lower, np.clip(values - zq * res.standard_error, 0, 1))
        assert_allclose(res.upper, np.clip(values + zq * res.standard_error, 0, 1))
        assert list(res.summary().columns) == ["metric", "k", "estimate", "se", "lower", "upper"]

    def test_logit_scale_by_hand(self):
        z = np.array([-0.5, np.log(6.0)])
        cov = np.array([[0.02, 0.005], [0.005, 0.05]])
        k = np.array([1, 10, 100])
        res = delta_method(z, cov, 1, "pass^k", k, level=0.9)
        est, se = res.estimate, res.standard_error
        half = norm.ppf(0.95) * se / (est * (1 - est))
        logit = np.log(est / (1 - est))
        assert_allclose(res.lower, 1 / (1 + np.exp(-(logit - half))), rtol=1e-12)
        assert_allclose(res.upper, 1 / (1 + np.exp(-(logit + half))), rtol=1e-12)
        assert np.all((0 < res.lower) & (res.upper < 1))

    def test_clipped_to_unit_interval(self):
        res = delta_method(np.array([3.0, 1.0]), np.eye(2) * 4.0, 1, "pass@k", 50,
                           scale="identity")
        assert res.upper[0] == 1.0 and 0.0 <= res.lower[0] <= res.estimate[0]
        res = delta_method(np.array([3.0, 1.0]), np.eye(2) * 4.0, 1, "pass@k", 50)
        assert 0.0 <= res.lower[0] <= res.estimate[0] <= res.upper[0] <= 1.0

    def test_bad_scale(self):
        with pytest.raises(ValueError, match="unknown scale"):
            delta_method(np.zeros(2), np.eye(2), 1, "pass@k", 5, scale="log")

    def test_bad_level(self):
        with pytest.raises(ValueError, match="level"):
            delta_method(np.zeros(2), np.eye(2), 1, "pass@k", 5, level=1.5)




def clipped_logit(p):
    """logit of interval ends given as doubles, capped at that of the largest double below 1.

    Near 1 an end carries its distance from 1 only to the spacing of doubles
    (1.1e-16), so ends are compared on this scale: two ends that both round
    to 1 are equal here, as they are to any user of the interval.
    """
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore"):
        return np.minimum(np.log(p) - np.log1p(-p), -np.log(2.0 ** -53))


@pytest.fixture(scope="module")
def saturating_fit():
    """200 tasks, 10 trials, rates from Beta(0.75, 0.5) (see :class:`TestHugeHorizons`)."""
    rng = np.random.default_rng(1)
    counts = passmix.Counts(rng.binomial(10, rng.beta(0.75, 0.5, 200)), np.full(200, 10))
    return passmix.fit(counts, seed=0)


class TestHugeHorizons:
    """At k = 1e12 and 1e18 Pass@k and AUC@k are within 1e-10 of 1 or round to it.

    The interval used to be formed from M itself: ``se / (M (1 - M))`` is
    0 / 0 where M rounds to 1, and AUC@k's gradient, differenced on
    ``1 - tail``, cancelled to 0 once the tail fell below ~1e-12, so the
    interval collapsed onto the estimate while the profile interval spanned
    ~10 units of logit. The data: 200 tasks, 10 trials, rates from
    Beta(0.75, 0.5), so the metrics' complements at 1e12 and 1e18 are
    1e-9 to 1e-16, at and past the edge of double precision.
    """

    KS = np.array([10**12, 10**18])

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_delta_agrees_with_profile(self, saturating_fit, metric):
        """With 200 tasks the log-likelihood is close to quadratic, so the delta and
        profile intervals should nearly agree on the logit scale (the delta method's
        own scale). Tolerance: each end within 0.25 of the profile interval's logit
        width, and the widths within a factor 0.75..1.5. The logit of M at these
        horizons is ~alpha log k, curved in the fit's coordinates, which puts the
        two methods' ends up to ~0.15 of the width apart here (0.02-0.05 at
        k = 10, 100); a collapsed interval (ends at the estimate, mid-interval) is
        ~0.5 of the width off at one end and has width ~0."""
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)  # and the fit supports the interval
            delta = saturating_fit.interval(metric, self.KS, method="delta")
        profile = saturating_fit.interval(metric, self.KS, method="profile")
        d_lo, d_hi = clipped_logit(delta.lower), clipped_logit(delta.upper)
        p_lo, p_hi = clipped_logit(profile.lower), clipped_logit(profile.upper)
        width = p_hi - p_lo
        assert np.all(width > 5.0)  # the data leave the metric uncertain at these horizons
        assert np.all(delta.lower < delta.upper)
        assert np.all(np.abs(d_lo - p_lo) <= 0.25 * width), (delta, profile)
        assert np.all(np.abs(d_hi - p_hi) <= 0.25 * width), (delta, profile)
        assert np.all((d_hi - d_lo >= 0.75 * width) & (d_hi - d_lo <= 1.5 * width))

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_positive_width_up_to_the_largest_horizon(self, saturating_fit, metric):
        """Past 1e18 the metric rounds to 1 (or far below 1e-300) and so may both ends; the
        interval then keeps one end a double away rather than claim a point."""
        k = np.array([10**12, 10**15, 10**18, 2**62, 2**63 - 1])
        res = saturating_fit.delta(metric, k)
        assert np.all(res.lower < res.upper)
        assert np.all((res.lower <= res.estimate) & (res.estimate <= res.upper))
        # the standard error of M itself, ~(1 - M) times that of its logit: tiny, not 0
        # (it was 0 where M rounds to 1); Pass^k's may underflow with M
        assert np.all(np.isfinite(res.standard_error))
        if metric != "pass^k":
            assert np.all((res.standard_error > 0) & (res.standard_error < 1e-8))

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_moderate_horizons_unchanged(self, saturating_fit, metric):
        """Where M is well inside (0, 1) the interval is the logit-scale Wald interval formed
        from M and its standard error as before, ``expit(logit M -+ z se / (M (1 - M)))``,
        to 1e-9 (the two routes differ by rounding, ~1e-13 here)."""
        k = np.array([1, 10, 100])
        res = saturating_fit.delta(metric, k)
        est, se = res.estimate, res.standard_error
        half = norm.ppf(0.975) * se / (est * (1 - est))
        centre = np.log(est) - np.log1p(-est)
        assert_allclose(res.lower, 1 / (1 + np.exp(-(centre - half))), rtol=1e-9)
        assert_allclose(res.upper, 1 / (1 + np.exp(-(centre + half))), rtol=1e-9)
        identity = saturating_fit.delta(metric, k, scale="identity")
        assert_allclose(identity.lower, np.clip(est - norm.ppf(0.975) * se, 0, 1), rtol=1e-12)

    @pytest.mark.unit
    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    @pytest.mark.parametrize("h", [1, 2])
    def test_logit_gradient_equals_differences_of_the_logit(self, metric, h):
        """The gradient of logit M at huge k against central differences of logit M itself
        (both exact there, where M and 1 - M are not), to the differences' accuracy."""
        rng = np.random.default_rng(7 * h + len(metric))
        z = rng.normal(0, 0.5, n_free_parameters(h))
        k = np.array([10, 10**12, 10**18])
        logits, grad = metric_logit_gradient(z, h, metric, k)
        step = 1e-4
        fd = np.column_stack([
            (metric_logit_gradient(z + step * e, h, metric, k)[0]
             - metric_logit_gradient(z - step * e, h, metric, k)[0]) / (2 * step)
            for e in np.eye(z.size)])
        assert np.all(np.isfinite(logits))
        assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


class TestUnsupportedIntervals:
    """Where the delta method's linearisation fails, it says so."""

    @pytest.mark.unit
    def test_edge_excess_by_hand(self):
        # logit M = exp(z0): the tangent at 0 is 1 + z0, the Wald region's edge along
        # the gradient is z0 = -+1.96, where exp is 0.141 and 7.10 and the tangent
        # -0.96 and 2.96
        q = norm.ppf(0.975)
        out = wald_edge_excess(lambda z, i: float(np.exp(z[0])), np.zeros(2), np.eye(2),
                               np.array([[1.0, 0.0]]))
        assert_allclose(out, [[((1 - q) - np.exp(-q)) / q, (np.exp(q) - (1 + q)) / q]],
                        rtol=1e-12)

    def test_few_tasks_at_huge_k_warn_and_the_profile_shows_why(self):
        """Six tasks, alpha estimated at 1.37: AUC@1e18 is 1 - ~1e-18, and its delta
        interval stays within 1e-14 of 1 (on the logit scale it is 40 +- 6), but the
        Wald region reaches alpha < 1, where 1 - AUC@k is ~k^-alpha: there the metric
        is ~0.999, far outside the interval, and the profile interval reaches 0.9998."""
        fit = passmix.fit(passmix.Counts([2, 3, 5, 2, 0, 4], np.full(6, 5)), seed=0)
        with pytest.warns(FitWarning, match=r"not supported by the data \(auc@k at k = 1e\+18\)"):
            lower, upper = fit.interval("auc@k", 10**18, method="delta", conditional=True)
        assert 1 - 1e-14 < lower < upper
        profile_lower, _ = fit.interval("auc@k", 10**18, conditional=True)
        assert profile_lower < 0.9999
        with pytest.warns(FitWarning, match="auc@k at k = 1e"):
            fit.summary([10, 10**18], method="delta")


@pytest.mark.slow
class TestCoverage:
    """Coverage of 95% delta-method intervals for the population metric.

    J = 200 tasks, m = 10 trials, k in {10, 60}, 200 replicates with BIC
    selection in every replicate. The truth is a single Beta, which BIC
    recovers; where BIC under-selects a mixture, the interval (conditional on
    the selected H) is biased and covers less, as the closing note reports.
    """

    TRUE = ([1.0], [0.8], [2.5])

    @pytest.mark.study
    def test_coverage_90_to_99_percent(self):
        rng = np.random.default_rng(2024)
        ks = np.array([10, 60])
        truth = {m: metric_value(m, *self.TRUE, ks) for m in ("pass@k", "pass^k", "auc@k")}
        hits = {m: np.zeros(ks.size) for m in truth}
        n_rep = 200
        for rep in range(n_rep):
            res = passmix.fit(simulate_mixture(rng, 200, 10, *self.TRUE), seed=rep)
            for metric in truth:
                d = res.delta(metric, ks)
                hits[metric] += (d.lower <= truth[metric]) & (truth[metric] <= d.upper)
        for metric, h in hits.items():
            cover = h / n_rep
            assert np.all((cover >= 0.90) & (cover <= 0.99)), (metric, cover)


@pytest.mark.unit
class TestWaldEnds:
    """The one Wald interval every model's delta method uses, against the normal formulas."""

    def test_identity_and_logit_scales(self):
        from passmix.inference import logit_wald_ends, normal_quantile, wald_ends

        z = norm.ppf(0.975)
        assert normal_quantile(0.95) == pytest.approx(z, rel=1e-15)
        p, se = np.array([0.02, 0.5, 0.9]), np.array([0.01, 0.05, 0.04])
        lower, upper = wald_ends(p, se, 0.95, "identity")
        assert_allclose(lower, np.clip(p - z * se, 0, 1), rtol=1e-14)
        assert_allclose(upper, np.clip(p + z * se, 0, 1), rtol=1e-14)
        lower, upper = wald_ends(p, se, 0.95, "logit")
        centre, half = np.log(p / (1 - p)), z * se / (p * (1 - p))
        assert_allclose(lower, 1 / (1 + np.exp(-(centre - half))), rtol=1e-13)
        assert_allclose(upper, 1 / (1 + np.exp(-(centre + half))), rtol=1e-13)
        # an estimate whose own value underflows: its exact logit still gives ends
        lo, hi = logit_wald_ends(np.array([-900.0]), np.array([1.0]), 0.95)
        assert lo[0] == 0.0 and hi[0] == pytest.approx(np.exp(-900.0 + z), rel=1e-12)

    def test_estimates_at_zero_or_one_keep_identity_ends(self):
        from passmix.inference import wald_ends

        lower, upper = wald_ends(np.array([0.0, 1.0]), np.array([0.1, 0.1]), 0.9, "logit")
        assert_allclose(lower, [0.0, 1 - norm.ppf(0.95) * 0.1], rtol=1e-14)
        assert_allclose(upper, [norm.ppf(0.95) * 0.1, 1.0], rtol=1e-14)
        with pytest.raises(ValueError, match="unknown scale 'probit'"):
            wald_ends(np.array([0.5]), np.array([0.1]), 0.95, "probit")

    def test_scalars_and_broadcasting_keep_their_shapes(self):
        from passmix.inference import wald_ends

        lower, upper = wald_ends(0.5, 0.1, 0.95)
        assert lower.shape == () and 0 < lower < 0.5 < upper < 1
        lower, upper = wald_ends(np.array([[0.2, 0.5]]), 0.05, 0.95)
        assert lower.shape == (1, 2)
        assert_allclose(lower[0, 1], wald_ends(0.5, 0.05, 0.95)[0], rtol=1e-15)
