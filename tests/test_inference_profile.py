"""Profile-likelihood intervals against brute-force scans of the profile likelihood.

Independent truths: a gridded H = 1 likelihood region (scipy's beta-binomial),
an independently computed H = 2 profile likelihood, and for H = 2 a brute-force
search of the region (many constrained solves from a Sobol design, in a
parameterisation and code of their own).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import brentq, minimize
from scipy.special import betaln, expit, gammaln, logsumexp
from scipy.stats import betabinom, chi2, qmc

import passmix
from passmix import FitWarning
from passmix.examples import example_path
from passmix.metrics import metric_value
from passmix.testing import one_component_region_extremes
from passmix.models.mixture.graph import PARAMETER_BOUNDS
from passmix.inference.delta import widen_degenerate
from passmix.inference.profile import repair_across_metrics

DROP = chi2.ppf(0.95, 1) / 2


@pytest.fixture(scope="module")
def math_m10():
    return passmix.read_counts(example_path("math_m10"), group_by="model")


def grid_extremes(counts, metric, k, top, n=600):
    """Smallest and largest metric over the H = 1 likelihood region, by slicing a grid
    (scipy's beta-binomial; passmix.testing.one_component_region_extremes, checked
    in TestRegionScan); `top` is the maximum log-likelihood."""
    lo, hi = one_component_region_extremes(counts, metric, [k], top, n=n)
    return float(lo[0]), float(hi[0])


@pytest.mark.unit
class TestRegionScan:
    """The brute-force region scan against random points of the same region."""

    def test_random_points_stay_within_and_reach_the_extremes(self):
        counts = passmix.Counts([0, 1, 3, 5, 2, 0, 4, 1], [5, 5, 5, 5, 5, 6, 6, 6])
        y, m, w = counts.pairs()

        def loglik(e, c):
            a, b = np.exp(c) * expit(e), np.exp(c) * expit(-e)
            return sum(wi * betabinom.logpmf(yi, mi, a, b) for yi, mi, wi in zip(y, m, w))

        best = minimize(lambda t: -loglik(t[0], t[1]), [0.0, 1.0], method="Nelder-Mead",
                        options={"xatol": 1e-10, "fatol": 1e-12}).fun
        k = np.array([1, 10, 100])
        lo, hi = one_component_region_extremes(counts, "pass@k", k, -best, n=300)
        rng = np.random.default_rng(5)
        e = rng.uniform(-4, 3, 400_000)
        c = rng.uniform(-3, 6, 400_000)
        inside = loglik(e, c) >= -best - DROP
        a, b = np.exp(c[inside]) * expit(e[inside]), np.exp(c[inside]) * expit(-e[inside])
        values = metric_value("pass@k", np.ones(a.shape + (1,)), a[:, None], b[:, None], k)
        assert inside.sum() > 1000
        assert np.all(values.min(axis=0) >= lo - 1e-9)
        assert np.all(values.max(axis=0) <= hi + 1e-9)
        # random points come close to the scan's extremes (the region is a 2-d blob)
        assert_allclose(values.min(axis=0), lo, atol=0.01)
        assert_allclose(values.max(axis=0), hi, atol=0.01)


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

    @pytest.mark.slow
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
        lo, hi = fit.interval("pass^k", 100, conditional=True)
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
        # linearised at the bound the delta method saw no spread (its lower end was
        # 0.20); it cannot see that coordinate, so it takes the profile's ends (issue 48)
        with pytest.warns(FitWarning, match="cannot see log_concentration"):
            d_lo, d_hi = fit.interval("pass@k", 1000, method="delta")
        assert (d_lo, d_hi) == pytest.approx((lo, hi))

    def test_all_failures_has_an_honest_upper_end(self):
        # no success in 50 x 20 trials. Tasks that are each all-or-nothing
        # (concentration -> 0) explain that best for a given mean mu, with
        # likelihood (1 - mu)^50 -> mu up to 1 - exp(-DROP / 50); the box stops
        # the concentration at e^-16, which lowers that by ~1e-7
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


@pytest.mark.unit
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


# -- H = 2: brute force over the likelihood region ----------------------------------
# the same box as the fit's coordinates allow: weight logits, logit means, log
# concentrations (the ordering of the means, which the fit imposes, is left free)
_BF_LOW = np.array([-15.0, -20.0, -20.0, -7.0, -7.0])
_BF_HIGH = np.array([15.0, 20.0, 20.0, 14.0, 14.0])


def _bf_mixture(t):
    w2, mu, kappa = expit(t[0]), expit(t[1:3]), np.exp(t[3:5])
    return np.array([1 - w2, w2]), kappa * mu, kappa * (1 - mu)


def _bf_loglik(t, y, m, n):
    w, a, b = _bf_mixture(t)
    log_comb = gammaln(m + 1) - gammaln(y + 1) - gammaln(m - y + 1)
    comp = (log_comb[:, None] + betaln(a + y[:, None], b + (m - y)[:, None]) - betaln(a, b))
    return float(np.sum(n * logsumexp(comp + np.log(w), axis=1)))


def _bf_metric(t, metric, k):
    """Pass@k and Pass^k of the mixture, from Beta moments (not passmix.metrics)."""
    w, a, b = _bf_mixture(t)
    if metric == "pass@k":
        return float(1 - np.sum(w * np.exp(betaln(a, b + k) - betaln(a, b))))
    return float(np.sum(w * np.exp(betaln(a + k, b) - betaln(a, b))))


def brute_force_ends(counts, metric, k, top, n_starts=64, seed=0):
    """Smallest and largest metric over {l >= top - chi2(1).ppf(.95)/2}, H = 2.

    SLSQP from every point of a scrambled Sobol design over the box, feasible
    or not, with numerical gradients; the extremes over the feasible ends.
    Also returns the largest log-likelihood seen (a check that `top`, the
    fit's maximum, is the maximum).
    """
    pairs, n = np.unique(np.column_stack([counts.successes, counts.trials]), axis=0,
                         return_counts=True)
    y, m = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    threshold = top - DROP
    design = qmc.scale(qmc.Sobol(5, scramble=True, seed=seed).random(n_starts),
                       [-4, -6, -6, -3, -3], [4, 6, 6, 10, 10])
    ends, best_loglik = [], -np.inf
    for sign in (1.0, -1.0):
        best = np.inf
        for start in design:
            res = minimize(lambda t: sign * _bf_metric(t, metric, k), start, method="SLSQP",
                           bounds=list(zip(_BF_LOW, _BF_HIGH)),
                           constraints=[{"type": "ineq",
                                         "fun": lambda t: _bf_loglik(t, y, m, n) - threshold}],
                           options={"maxiter": 300, "ftol": 1e-10})
            loglik = _bf_loglik(res.x, y, m, n)
            best_loglik = max(best_loglik, loglik)
            if loglik >= threshold - 1e-7:
                best = min(best, sign * _bf_metric(res.x, metric, k))
        ends.append(sign * best)
    return ends[0], ends[1], best_loglik


def assert_matches_brute_force(y, m, metric, k, n_starts=64):
    counts = passmix.Counts(y, m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = passmix.fit(counts, n_components=2, seed=0)
        # the mixture's own region: the default also spans an atom at 0 beyond the trials
        lo, hi = fit.interval(metric, k, conditional=True)
    bf_lo, bf_hi, top = brute_force_ends(counts, metric, k, fit.loglik, n_starts)
    assert top <= fit.loglik + 1e-6  # the fit found the maximum
    # the brute force only finds points of the region: the interval must reach them
    # (and, being a search of the same region, not overshoot them by much)
    assert lo <= bf_lo + 0.01 and hi >= bf_hi - 0.01, (y, m, metric, k, (lo, hi), (bf_lo, bf_hi))
    assert lo >= bf_lo - 0.01 and hi <= bf_hi + 0.01, (y, m, metric, k, (lo, hi), (bf_lo, bf_hi))


def assert_no_collapsed_end(estimate, lower, upper):
    """An estimate inside (0, 1) is not an end of its own interval: on the logit
    scale each end is at least 1e-4 from it (a collapsed end was 4e-6 away). An
    estimate within 1e-6 of 0 or 1 can be one (no success at all puts the mean
    on its bound)."""
    est, lo, hi = (np.asarray(v, dtype=float) for v in (estimate, lower, upper))
    inner = (est > 1e-6) & (est < 1 - 1e-6)
    with np.errstate(divide="ignore"):
        lg = lambda v: np.log(v) - np.log1p(-v)  # noqa: E731
        gap = np.minimum(lg(est) - lg(lo), lg(hi) - lg(est))
    assert np.all(gap[inner] > 1e-4), (est[inner], lo[inner], hi[inner])


#: the cases that a fuzzing session found too narrow or seed-dependent
FOUND = {"mirror pair": ([300, 700], [1000, 1000]), "one solved": ([0, 10], [11, 11]),
         "six tasks": ([0, 0, 3, 4, 4, 4], [6] * 6)}


class TestBruteForceH2:
    """H = 2 ends against a brute-force search of the region (to 0.01)."""

    @pytest.mark.slow
    @pytest.mark.parametrize("case", ["one solved", "six tasks"])
    def test_found_cases(self, case):
        assert_matches_brute_force(*FOUND[case], "pass@k", 1, n_starts=32)

    @pytest.mark.slow
    @pytest.mark.parametrize("case", list(FOUND))
    @pytest.mark.parametrize("metric,k", [pytest.param("pass@k", 1, marks=pytest.mark.study),
                                          pytest.param("pass@k", 10, marks=pytest.mark.study),
                                          pytest.param("pass@k", 100, marks=pytest.mark.study),
                                          pytest.param("pass^k", 5, marks=pytest.mark.study)])
    def test_found_cases_far(self, case, metric, k):
        assert_matches_brute_force(*FOUND[case], metric, k)

    @pytest.mark.slow
    @pytest.mark.parametrize("draw", [d if d in (2, 3, 4) else
                                      pytest.param(d, marks=pytest.mark.study) for d in range(12)])
    def test_random_small_data(self, draw):
        # J = 2..12 tasks, m = 3..20 trials: where the region is large and curved
        rng = np.random.default_rng([2026, draw])
        j, m = int(rng.integers(2, 13)), int(rng.integers(3, 21))
        p = rng.beta(0.5, 0.5, j) if draw % 2 else rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], j)
        y = rng.binomial(m, p).tolist()
        for metric, k in (("pass@k", 1), ("pass@k", 100), ("pass^k", 5)):
            assert_matches_brute_force(y, [m] * j, metric, k)


class TestFoundCases:
    """The fuzzing session's cases: symmetric, seed-independent, no collapsed end."""

    def test_mirror_pair_is_symmetric(self):
        # y = 300 and 700 of 1000: the data are their own mirror image, so the
        # Pass@1 interval is symmetric about 0.5 (it was (0.310, 0.49999))
        fit = passmix.fit(passmix.Counts(*FOUND["mirror pair"]), seed=0)
        lo, hi = fit.interval("pass@k", 1)
        assert abs(lo + hi - 1.0) < 0.01 and hi - 0.5 > 0.1
        # Pass^k's interval is Pass@k's of the mirror image, reflected
        for k in (5, 50):
            a = fit.interval("pass^k", k, conditional=True)
            b = fit.interval("pass@k", k, conditional=True)
            assert abs(a[0] - (1 - b[1])) < 0.01 and abs(a[1] - (1 - b[0])) < 0.01

    @pytest.mark.slow
    @pytest.mark.parametrize("case", ["one solved", "six tasks"])
    def test_seed_independent(self, case):
        fits = [passmix.fit(passmix.Counts(*FOUND[case]), seed=s) for s in range(4)]
        tops = [f.loglik for f in fits]
        assert max(tops) - min(tops) < 1e-5  # the same optimum ...
        ends = np.array([[f.interval(m, k) for m, k in (("pass@k", 1), ("pass@k", 20),
                                                         ("pass^k", 3))] for f in fits])
        assert np.ptp(ends, axis=0).max() < 0.01  # ... the same intervals

    @pytest.mark.parametrize("case", list(FOUND))
    def test_no_collapsed_end(self, case):
        fit = passmix.fit(passmix.Counts(*FOUND[case]), seed=0)
        table = fit.summary()
        assert_no_collapsed_end(table["estimate"], table["lower"], table["upper"])

    def test_h1_end_that_a_warm_start_missed(self, math_m10):
        # Pythia 70M: Pass@10 searched after Pass@1 stopped at 0.019 from the
        # neighbouring horizon's end; the gridded region reaches 0.034
        counts = math_m10[("Pythia 70M",)]
        fit = passmix.fit(counts, seed=0)
        table = fit.summary(k=[1, 10, 100])
        row = table[(table["metric"] == "pass@k") & (table["k"] == 10)].iloc[0]
        lo, hi = grid_extremes(counts, "pass@k", 10, fit.loglik)
        assert abs(row["upper"] - hi) < 1e-3 and abs(row["lower"] - lo) < 1e-3


class _Quadratic:
    """``-x' A x / 2``: its region at ``-c`` is the ellipse ``x' A x <= 2c``."""

    def __init__(self, precision):
        self.precision = np.asarray(precision, dtype=float)
        self.calls = 0

    def logp_dlogp(self, z):
        self.calls += 1
        g = self.precision @ z
        return -0.5 * float(z @ g), -g


@pytest.mark.unit
class TestRegionEngine:
    """The search's parts against closed forms: the ray's edge, a linear function's
    extremes over an ellipse (``c'x +- sqrt(2 drop c' A^-1 c)``), the lower-end floor."""

    precision = np.array([[40.0, 12.0], [12.0, 5.0]])  # correlated, scales ~10x apart
    box = np.array([[-50.0, 50.0], [-50.0, 50.0]])

    def region(self, **attrs):
        from passmix.inference.profile import LikelihoodRegion
        region = LikelihoodRegion(_Quadratic(self.precision), np.zeros(2), -DROP,
                                  np.linalg.inv(self.precision), self.box)
        for name, value in attrs.items():
            setattr(region, name, value)
        return region

    @pytest.mark.parametrize("power", [2.0, 4.0])
    def test_ray_edge(self, power):
        from passmix.inference._search import _boundary_point

        def logp(x):  # -|x|^power / 2 along any ray: the edge at (2 DROP)^(1/power)
            r = float(np.linalg.norm(x))
            return -0.5 * r ** power, -0.5 * power * r ** (power - 2) * x

        direction = np.array([3.0, -4.0])
        point = _boundary_point(logp, np.zeros(2), direction, -DROP, self.box, rel_tol=1e-10)
        assert np.linalg.norm(point) == pytest.approx((2 * DROP) ** (1 / power), rel=1e-8)
        assert logp(point)[0] >= -DROP
        # cut at `reach`: a point short of the edge is inside, and returned as is
        short = _boundary_point(logp, np.zeros(2), direction, -DROP, self.box, reach=0.5)
        assert np.linalg.norm(short) == pytest.approx(0.5)

    def test_inside_pulls_a_point_in_along_the_segment(self):
        region = self.region()
        far = np.array([2.0, -3.0])
        x = region.inside(far)
        assert region.logp(x)[0] == pytest.approx(-DROP, abs=1e-3)
        assert x[0] * far[1] - x[1] * far[0] == pytest.approx(0.0, abs=1e-12) and x @ far > 0
        near = 0.01 * far
        assert_allclose(region.inside(near), near)

    @pytest.mark.parametrize("scaled", [False, True])
    def test_linear_extremes_over_an_ellipse(self, scaled):
        c = np.array([1.0, 2.0])
        half = np.sqrt(2 * DROP * c @ np.linalg.solve(self.precision, c))
        region = self.region(scaled=scaled)
        lower, upper, _ = region.extremes(lambda z, t: (float(t * c @ z), t * c),
                                          lambda z, t: float(t * c @ z), [1.0, 2.0])
        assert_allclose(lower, [-half, -2 * half], rtol=1e-5)
        assert_allclose(upper, [half, 2 * half], rtol=1e-5)
        # warm starts from another horizon's ends (pulled into the region) agree
        warm = {sign: 3.0 * x for sign, x in region.end_points.items()}
        again = region.extremes(lambda z, t: (float(c @ z), c), lambda z, t: float(c @ z),
                                [1.0], warm=warm)
        assert_allclose([again[0][0], again[1][0]], [-half, half], rtol=1e-5)

    def test_scaling_saves_evaluations(self):
        c = np.array([1.0, 2.0])
        calls = []
        for scaled in (False, True):
            region = self.region(scaled=scaled)
            region.extremes(lambda z, t: (float(c @ z), c), lambda z, t: float(c @ z), [1.0])
            calls.append(region.objective.calls)
        assert calls[1] < calls[0]

    def test_floor_reports_a_negligible_lower_end_as_zero(self):
        c = np.array([1.0, 2.0])
        half = np.sqrt(2 * DROP * c @ np.linalg.solve(self.precision, c))
        # the "logit" c'x - 100 + ...: its lower end -100 - half is below a floor of -99
        region = self.region(floor=-99.0)
        lower, upper, _ = region.extremes(lambda z, t: (float(c @ z) - 100.0, c),
                                          lambda z, t: float(c @ z) - 100.0, [1.0])
        assert lower[0] == 0.0
        assert upper[0] == pytest.approx(half - 100.0, rel=1e-6)
        # a floor below the lower end changes nothing
        region = self.region(floor=-200.0)
        lower, _, _ = region.extremes(lambda z, t: (float(c @ z) - 100.0, c),
                                      lambda z, t: float(c @ z) - 100.0, [1.0])
        assert lower[0] == pytest.approx(-half - 100.0, rel=1e-6)
