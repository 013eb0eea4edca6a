"""Profile-likelihood intervals against brute-force scans of the profile likelihood."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import brentq, minimize
from scipy.special import expit, logsumexp
from scipy.stats import betabinom, chi2

import passmix
from passmix import FitWarning
from passmix.examples import example_path
from passmix.metrics import metric_value
from passmix.model import PARAMETER_BOUNDS
from passmix.intervals import widen_degenerate
from passmix.profile import repair_across_metrics

DROP = chi2.ppf(0.95, 1) / 2


@pytest.fixture(scope="module")
def math_m10():
    return passmix.read_counts(example_path("math_m10"), group_by="model")


def grid_extremes(counts, metric, k, top, n=600):
    """Smallest and largest metric over the H = 1 likelihood region, by slicing.

    For each log concentration on a grid the feasible logit means form an
    interval (found on a grid of means, its ends refined by bisection); every
    metric rises with the mean at fixed concentration, so its extremes over
    the region are at those ends. The log-likelihood is scipy's
    beta-binomial, the metric passmix.metric_value (checked against
    quadrature in test_metrics); `top` is the maximum log-likelihood.
    """
    y, m, w = counts.pairs()
    (e_lo, e_hi), (c_lo, c_hi) = (PARAMETER_BOUNDS["logit_mean_first"],
                                  PARAMETER_BOUNDS["log_concentration"])

    def loglik(e, c):
        a, b = np.exp(c) * expit(e), np.exp(c) * expit(-e)
        return sum(wi * betabinom.logpmf(yi, mi, a, b) for yi, mi, wi in zip(y, m, w))

    def value(e, c):
        a, b = np.exp(c) * expit(e), np.exp(c) * expit(-e)
        return metric_value(metric, np.ones(a.shape + (1,)), a[..., None], b[..., None], k)

    threshold = top - DROP
    c = np.linspace(c_lo, c_hi, n)
    e = np.linspace(e_lo, e_hi, n)
    ok = loglik(e[:, None], c[None, :]) >= threshold  # (mean, concentration)
    rows = ok.any(axis=0)
    c = c[rows]
    first = np.argmax(ok[:, rows], axis=0)
    last = n - 1 - np.argmax(ok[::-1, rows], axis=0)
    step = e[1] - e[0]
    ends = []
    for inside, outward in ((e[first], -step), (e[last], step)):
        # bisection between a feasible grid mean and the next one out (or the box)
        out = np.clip(inside + outward, e_lo, e_hi)
        closed = loglik(out, c) >= threshold
        a, b = np.where(closed, out, inside), out
        for _ in range(40):
            mid = 0.5 * (a + b)
            good = loglik(mid, c) >= threshold
            a, b = np.where(good, mid, a), np.where(good, b, mid)
        ends.append(value(a, c))
    return float(np.min(ends[0])), float(np.max(ends[1]))


class TestAgainstGrid:
    """H = 1: the interval equals the metric's range over a gridded likelihood region."""

    @pytest.mark.parametrize("model", ["Pythia 160M", "Pythia 12B", "Pythia 70M"])
    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_h1(self, math_m10, model, metric):
        counts = math_m10[(model,)]
        fit = passmix.fit(counts, n_components=1, seed=0)
        ks = [10, 1000]
        res = fit.profile(metric, ks)
        for i, k in enumerate(ks):
            lo, hi = grid_extremes(counts, metric, k, fit.loglik)
            assert abs(res.lower[i] - lo) < 1e-3, (k, res.lower[i], lo)
            assert abs(res.upper[i] - hi) < 1e-3, (k, res.upper[i], hi)

    def test_binomial_limit_is_in_the_grid_case(self, math_m10):
        assert passmix.fit(math_m10[("Pythia 160M",)], n_components=1, seed=0).binomial_limit


def scipy_loglik(theta, y, m, n):
    """Two-component log-likelihood in (log a1, log a2, log b1, log b2, logit w2)."""
    a, b = np.exp(theta[:2]), np.exp(theta[2:4])
    log_w = np.array([0.0, theta[4]]) - np.logaddexp(0.0, theta[4])
    comp = betabinom.logpmf(y[:, None], m[:, None], a, b)
    return float(np.sum(n * logsumexp(comp + log_w, axis=1)))


def mixture_of(theta):
    w2 = expit(theta[4])
    return np.array([1 - w2, w2]), np.exp(theta[:2]), np.exp(theta[2:4])


def profile_loglik(target, metric, k, y, m, n, starts):
    """max log-likelihood subject to metric == target, from several starts (SLSQP)."""
    best = -np.inf
    for start in starts:
        res = minimize(lambda t: -scipy_loglik(t, y, m, n), start, method="SLSQP",
                       bounds=[(-10.0, 14.0)] * 4 + [(-15.0, 15.0)],
                       constraints=[{"type": "eq",
                                     "fun": lambda t: metric_value(metric, *mixture_of(t), k)
                                     - target}],
                       options={"maxiter": 500, "ftol": 1e-12})
        if res.success or abs(metric_value(metric, *mixture_of(res.x), k) - target) < 1e-9:
            best = max(best, -res.fun)
    return best


@pytest.fixture(scope="module")
def bimodal_h2():
    rng = np.random.default_rng(12)
    comp = rng.choice(2, 400, p=[0.6, 0.4])
    theta = rng.beta(np.array([1.0, 6.0])[comp], np.array([8.0, 2.0])[comp])
    counts = passmix.Counts(rng.binomial(10, theta), np.full(400, 10))
    fit = passmix.fit(counts, n_components=2, seed=0)
    pairs, n = np.unique(np.column_stack([counts.successes, counts.trials]), axis=0,
                         return_counts=True)
    y, m = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    mle = np.concatenate([np.log(fit.alpha), np.log(fit.beta),
                          [np.log(fit.weights[1] / fit.weights[0])]])
    assert scipy_loglik(mle, y, m, n) == pytest.approx(fit.loglik, abs=1e-6)
    return fit, y, m, n, mle


class TestAgainstProfileScan:
    """H = 2: the ends are where an independently computed profile likelihood,
    max {l : metric = m}, crosses l_hat - chi2(1).ppf(0.95) / 2."""

    @pytest.mark.parametrize("metric,k", [("pass@k", 100), ("pass^k", 20), ("auc@k", 100)])
    def test_h2(self, bimodal_h2, metric, k):
        fit, y, m, n, mle = bimodal_h2
        res = fit.profile(metric, k)
        threshold = fit.loglik - DROP
        rng = np.random.default_rng(0)
        starts = [mle, mle + rng.normal(0, 0.05, 5)]
        for end, inside in ((res.upper[0], res.estimate[0]), (res.lower[0], res.estimate[0])):
            # bisection between the estimate (inside) and a point beyond the end
            outside = np.clip(end + 3 * (end - inside), 1e-12, 1 - 1e-12)
            assert profile_loglik(outside, metric, k, y, m, n, starts) < threshold
            a, b = inside, outside
            for _ in range(12):
                mid = 0.5 * (a + b)
                if profile_loglik(mid, metric, k, y, m, n, starts) >= threshold:
                    a = mid
                else:
                    b = mid
            assert abs(0.5 * (a + b) - end) < 1e-3, (metric, k, end, a, b)


@pytest.fixture(scope="module")
def fit(math_m10):
    return passmix.fit(math_m10[("Pythia 2.8B",)], seed=0)


class TestProperties:
    def test_invariant_to_reparameterisation(self, fit):
        # logit(M), M and 1 - M have the same profile interval, mapped
        res = fit.profile("pass@k", [10, 100])
        complement = 1.0 - fit.pass_at_k(np.array([10, 100]))
        assert np.all(res.lower <= res.estimate) and np.all(res.estimate <= res.upper)
        assert np.all(1 - res.upper <= complement) and np.all(complement <= 1 - res.lower)

    def test_wider_at_higher_level(self, fit):
        narrow, wide = fit.profile("auc@k", 100, 0.8), fit.profile("auc@k", 100, 0.99)
        assert wide.lower[0] < narrow.lower[0] and wide.upper[0] > narrow.upper[0]

    def test_close_to_delta_when_interior_and_large(self):
        # many tasks, interior optimum: the likelihood is nearly quadratic
        rng = np.random.default_rng(5)
        counts = passmix.Counts(rng.binomial(20, rng.beta(2, 3, 3000)), np.full(3000, 20))
        fit = passmix.fit(counts, seed=0)
        prof = fit.profile("pass@k", [5, 50])
        delta = fit.delta("pass@k", [5, 50])
        assert_allclose(prof.lower, delta.lower, rtol=0.02)
        assert_allclose(prof.upper, delta.upper, rtol=0.02)

    def test_summary_orderings(self, fit):
        table = fit.summary(k=[1, 10, 100, 1000])
        assert table.attrs["method"] == "profile"
        at = {m: part for m, part in table.groupby("metric")}
        p1 = at["pass@k"].iloc[0]
        assert np.all(at["pass^k"]["upper"] <= p1["upper"])
        assert np.all(at["auc@k"]["lower"] >= p1["lower"] - 1e-15)
        for m in ("pass@k", "auc@k"):
            assert np.all(np.diff(at[m]["lower"]) >= 0) and np.all(np.diff(at[m]["upper"]) >= 0)
        assert np.all(np.diff(at["pass^k"]["upper"]) <= 0)
        assert np.all(at["auc@k"]["upper"].to_numpy() <= at["pass@k"]["upper"].to_numpy())

    def test_interval_default_is_profile(self, fit):
        lo, hi = fit.interval("pass^k", 100)
        res = fit.profile("pass^k", 100)
        assert (lo, hi) == (res.lower[0], res.upper[0])
        with pytest.raises(ValueError, match="unknown interval method"):
            fit.interval("pass^k", 100, method="bootstrap")


class TestBoundary:
    def test_binomial_limit_is_honest(self, math_m10):
        # 160M: 2 successes in 1,280 trials; the MLE says every task shares
        # p = 0.0016, but the data cannot tell that from a few solvable tasks
        fit = passmix.fit(math_m10[("Pythia 160M",)], seed=0)
        assert fit.binomial_limit == (1,) and fit.converged
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)
            lo, hi = fit.interval("pass@k", 1000)
        assert lo < 0.05 and hi > 0.9
        with pytest.warns(FitWarning, match="box bound"):
            d_lo, d_hi = fit.interval("pass@k", 1000, method="delta")
        assert lo < d_lo

    def test_all_failures_has_an_honest_upper_end(self):
        # no success in 50 x 20 trials. Tasks that are each all-or-nothing
        # (concentration -> 0) explain that best for a given mean mu, with
        # likelihood (1 - mu)^50 -> mu up to 1 - exp(-DROP / 50); the box stops
        # the concentration at e^-7, which lowers that a little
        fit = passmix.fit(passmix.Counts(np.zeros(50, int), np.full(50, 20)), seed=0,
                          max_components=1)
        lo, hi = fit.interval("pass@k", 1)
        kappa = np.exp(PARAMETER_BOUNDS["log_concentration"][0])
        edge = brentq(lambda mu: 50 * betabinom.logpmf(0, 20, kappa * mu, kappa * (1 - mu))
                      + DROP, 1e-6, 0.5)
        assert lo < 1e-8
        assert hi == pytest.approx(edge, rel=1e-4)
        assert edge == pytest.approx(-np.expm1(-DROP / 50), rel=0.01)

    def test_underflowing_pass_hat_k_is_zero_with_a_positive_upper_end(self, math_m10):
        fit = passmix.fit(math_m10[("Pythia 70M",)], seed=0)
        res = fit.profile("pass^k", [100, 1000])
        assert np.all(res.lower == 0.0) and np.all(res.upper > 0.0)
        assert np.all(res.upper <= fit.profile("pass@k", 1).upper[0])


class TestRepairs:
    def test_widen_degenerate(self):
        lo, hi = widen_degenerate(np.array([3e-320, 0.2, 1.0, 0.0]),
                                  np.array([5e-320, 0.2, 1.0, 0.0]))
        assert lo[0] == 0.0 and hi[0] == np.finfo(float).tiny
        assert lo[1] == 0.2 and hi[1] > 0.2
        assert lo[2] < 1.0 and hi[2] == 1.0
        assert lo[3] == 0.0 and hi[3] > 0.0

    def test_only_widens(self):
        k = np.array([1, 10, 100])
        ends = {"pass@k": (k, np.array([.1, .3, .5]), np.array([.05, .2, .15]),
                           np.array([.2, .4, .35])),
                "pass^k": (k, np.array([.1, .01, .001]), np.array([.05, .001, .002]),
                           np.array([.2, .25, .01]))}
        out = repair_across_metrics(ends)
        # pass@k: the lower end at 10 falls to the one at 100, the upper end at 100
        # rises to its estimate; Pass@1's upper end rises to Pass^10's
        assert_allclose(out["pass@k"][0], [.05, .15, .15])
        assert_allclose(out["pass@k"][1], [.25, .4, .5])
        assert_allclose(out["pass^k"][0], [.05, .001, .001])
        assert_allclose(out["pass^k"][1], [.25, .25, .01])
        for m, (_, est, lo, hi) in ends.items():
            assert np.all(out[m][0] <= lo) and np.all(out[m][1] >= hi)
