"""Delta-method gradients and intervals against finite differences and simulation."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import norm

import passmix
from conftest import simulate_mixture
from passmix.inference.delta import delta_method, metric_gradient
from passmix.metrics import metric_value
from passmix.models.mixture.graph import n_free_parameters, unpack


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




@pytest.mark.slow
class TestCoverage:
    """Coverage of 95% delta-method intervals for the population metric.

    J = 200 tasks, m = 10 trials, k in {10, 60}, 200 replicates with BIC
    selection in every replicate. The truth is a single Beta, which BIC
    recovers; where BIC under-selects a mixture, the interval (conditional on
    the selected H) is biased and covers less, as the closing note reports.
    """

    TRUE = ([1.0], [0.8], [2.5])

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
