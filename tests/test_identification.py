"""Fits where the data leave a direction open: one trial per task, no success at all, an
optimum held on a bound, a BIC tie near 0 (issue 48, section 4).

Every expected value is independent of the code under test: the region's extremes
follow in closed form from the likelihood (a mean alone with one trial per task; a
two-point limit with no success), or come from a brute-force grid over the H = 1
parameters scored with scipy's beta-binomial.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import betabinom, binom, chi2

import passmix
from passmix import DegenerateDataWarning, FitWarning

CUT = chi2.ppf(0.95, 1) / 2.0


def _quiet_fit(counts, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return passmix.fit(counts, **options)


def _mean_ends(y: np.ndarray, n: int) -> tuple[float, float]:
    """Ends of the mean's likelihood region for n Bernoulli trials with y.sum() successes
    (the binomial log-likelihood within CUT of its maximum), by bisection."""
    s = int(np.sum(y))
    top = binom.logpmf(s, n, s / n)

    def inside(p):
        return binom.logpmf(s, n, p) >= top - CUT

    def edge(a, b):  # a inside, b outside
        for _ in range(80):
            mid = 0.5 * (a + b)
            a, b = (mid, b) if inside(mid) else (a, mid)
        return a

    return edge(s / n, 1e-12), edge(s / n, 1 - 1e-12)


@pytest.fixture(scope="module")
def data():
    """40 tasks of one trial each."""
    rng = np.random.default_rng(1)
    return rng.binomial(1, 0.3, 40), np.ones(40, dtype=int)


@pytest.fixture(scope="module")
def fit():
    """A fit at the binomial limit: rare successes, no spread beyond binomial."""
    rng = np.random.default_rng(0)
    counts = passmix.Counts(rng.binomial(10, 0.05, 60), np.full(60, 10))
    res = _quiet_fit(counts, seed=0)
    assert res.binomial_limit == (1,)
    return res


class TestOneTrialPerTask:
    """With m = 1 only the mean is identified; Pass@k at k > 1 ranges over every spread."""

    def test_estimates_do_not_depend_on_the_seed(self, data):
        y, m = data
        fits = [_quiet_fit(passmix.Counts(y, m), seed=s) for s in range(4)]
        values = np.array([f.metric("pass@k", [2, 10, 100]) for f in fits])
        # the mean to the optimiser's tolerance; the concentration fixed, so the spread too
        np.testing.assert_allclose(values, np.broadcast_to(values[0], values.shape), atol=1e-6)

    def test_mirror_symmetric(self, data):
        y, m = data
        fit = _quiet_fit(passmix.Counts(y, m), seed=0)
        mirror = _quiet_fit(passmix.Counts(m - y, m), seed=3)
        ks = [2, 10, 100]
        np.testing.assert_allclose(fit.metric("pass^k", ks), 1 - mirror.metric("pass@k", ks),
                                   atol=1e-6)
        # the model's own intervals: the default's atom at 0 has no mirror (issue 48)
        lo, hi = fit.interval("pass^k", ks, conditional=True)
        mlo, mhi = mirror.interval("pass@k", ks, conditional=True)
        np.testing.assert_allclose(lo, 1 - mhi, atol=1e-3)
        np.testing.assert_allclose(hi, 1 - mlo, atol=1e-3)

    def test_status_says_so(self, data):
        fit = _quiet_fit(passmix.Counts(*data), seed=0)
        assert fit.single_trial
        assert "identifies only the mean" in fit.status()
        assert "log_concentration[0]" in fit.unidentified

    @pytest.mark.parametrize("method", ["profile", "delta"])
    def test_intervals_span_every_spread(self, data, method):
        # the region is {mean within its binomial ends} x {any concentration}: Pass@k runs
        # from the lower mean (all-or-nothing tasks) to 1 - (1 - upper mean)^k (one rate)
        y, m = data
        fit = _quiet_fit(passmix.Counts(y, m), seed=0)
        mu_lo, mu_hi = _mean_ends(y, y.size)
        ks = np.array([2, 10, 100])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            lo, hi = fit.interval("pass@k", ks, method=method, conditional=True)
            wide_lo, wide_hi = fit.interval("pass@k", ks, method=method)
        np.testing.assert_allclose(lo, mu_lo, atol=2e-3)
        # the default also holds these tasks' metric and the atom at 0: never narrower
        assert np.all(wide_lo <= lo + 1e-12) and np.all(wide_hi >= hi - 1e-12)
        np.testing.assert_allclose(hi, 1 - (1 - mu_hi) ** ks, atol=2e-3)


class TestNoSuccess:
    """All failures: the region's sup of Pass^k is the two-point limit's, 1 - e^(-CUT/J)."""

    @pytest.mark.parametrize("j,m", [(12, 2), (30, 3), (5, 10)])
    def test_pass_hat_k_upper_end_reaches_the_supremum(self, j, m):
        fit = _quiet_fit(passmix.Counts(np.zeros(j, int), np.full(j, m)), seed=0)
        sup = 1 - np.exp(-CUT / j)
        _, hi = fit.interval("pass^k", [10, 1000], conditional=True)
        # the box's smallest concentration (e^-16) leaves ~1e-6; e^-7 had left ~1e-3
        np.testing.assert_allclose(hi, sup, atol=2e-5)
        assert np.all(hi <= sup + 1e-6)

    def test_zero_inflated_weight_is_not_identified(self):
        counts = passmix.Counts(np.zeros(12, int), np.full(12, 5))
        fits = [_quiet_fit(counts, zero_inflated=True, seed=s) for s in range(3)]
        for res in fits:
            assert not res.zero_weight_identified
            assert "not identified" in res.status()
            assert res.unidentified == ("logit_zero",)
            # set to no atom, whatever the start: the plain mixture's fit
            assert res.zero_weight < 1e-9
            assert res.loglik == pytest.approx(res.plain.loglik, abs=1e-6)
        assert len({f.zero_weight for f in fits}) == 1
        # with a success somewhere the atom is estimated as before
        some = passmix.Counts([0, 0, 0, 3, 5, 0, 4, 0], [5] * 8)
        assert _quiet_fit(some, zero_inflated=True, seed=0).zero_weight_identified

    @pytest.mark.parametrize("y,m", [([0], [10]), ([0, 0, 0], [5, 5, 5])])
    def test_auto_ties_near_zero_go_to_the_plain_mixture(self, y, m):
        # both BICs are ~1e-8: a rounding difference must not pick the bigger model
        res = _quiet_fit(passmix.Counts(y, m), zero_inflated="auto", seed=0)
        assert isinstance(res, passmix.MixtureFit)


def _grid_extremes(counts: passmix.Counts, metric_at, loglik_max: float):
    """Smallest and largest metric over a brute-force (mean, log concentration) grid of
    H = 1 points inside the 95% region, the log-likelihood from scipy's betabinom."""
    y, m = np.asarray(counts.successes), np.asarray(counts.trials)
    mus = np.linspace(1e-3, 1 - 1e-3, 400)
    log_kappas = np.linspace(-6.0, 14.0, 161)
    mu, lk = np.meshgrid(mus, log_kappas, indexing="ij")
    a, b = (mu * np.exp(lk))[..., None], ((1 - mu) * np.exp(lk))[..., None]
    ll = betabinom.logpmf(y, m, a, b).sum(axis=-1)
    inside = ll >= loglik_max - CUT
    values = metric_at(a[..., 0], b[..., 0])
    return values[inside].min(), values[inside].max()


class TestDeltaOnABound:
    """At the binomial limit the delta method cannot see the concentration: its ends are
    the profile's, which hold every point of a brute-force region."""

    def test_delta_holds_the_brute_force_region(self, fit):
        k = 200
        # Pass@k of Beta(a, b): 1 - B(a, b + k) / B(a, b)
        from scipy.special import betaln

        lo_grid, hi_grid = _grid_extremes(
            fit.counts, lambda a, b: 1 - np.exp(betaln(a, b + k) - betaln(a, b)), fit.loglik)
        with pytest.warns(FitWarning, match="cannot see"):
            lo, hi = fit.interval("pass@k", k, method="delta")
        # the grid's points are inside the region, so no end may be inside the grid's range
        assert lo <= lo_grid + 1e-6 and hi >= hi_grid - 1e-6
        # and the spread the concentration allows is wide: the linearisation had missed it
        assert lo_grid < fit.pass_at_k(k) - 0.02
        plo, phi = fit.interval("pass@k", k)
        assert (lo, hi) == pytest.approx((plo, phi))

    def test_summary_delta_uses_the_same_ends(self, fit):
        with pytest.warns(FitWarning, match="cannot see"):
            table = fit.summary(k=[10, 200], method="delta")
        row = table[(table["metric"] == "pass@k") & (table["k"] == 200)].iloc[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            lo, hi = fit.interval("pass@k", 200, method="delta")
        assert table.attrs["method"] == "delta"
        assert row["lower"] <= lo + 1e-9 and row["upper"] >= hi - 1e-9
        # the standard error stays the linearisation's, with no profile behind it
        assert row["se"] == pytest.approx(fit.standard_error("pass@k", 200))


# Two-component data sets (m = 5) on which the profile search's ends fell short of the
# mirror image's by 0.01-0.04 (201 at seed 1 fails on bc6f1df; 106 did in a
# helper's runs of it, at every seed). The search's distances were scaled by standard errors up
# to 1e3 times the box, which merged distinct optima, starts and ends (issue 48). Still
# open: on 137 a fit from seed 1 reaches the same optimum and an upper end of Pass^10
# 0.010 short of seed 0's (the region's anchors are the fit's own local optima).
SHORT_ENDS = {  # data set: (successes of 5 trials, the fit's seed)
    106: ([3, 4, 3, 5, 1, 1, 2, 4, 0, 5, 4, 3, 2, 3, 3, 4, 5, 2, 2, 1, 5, 2, 3, 5, 2, 2, 3, 5,
           4, 1], 0),
    201: ([4, 0, 0, 2, 2, 2, 0, 4, 5, 4, 0, 0, 0, 1, 3, 5, 2, 5, 5, 5, 2, 0, 1, 0, 1, 5, 0, 0,
           5, 4, 4, 0, 1, 5, 0, 2, 0, 5, 5, 0, 0, 0, 4, 0, 2, 0, 0, 3, 0, 4], 1),
}


@pytest.mark.parametrize("name", sorted(SHORT_ENDS))
def test_two_components_mirror(name):
    y, seed = np.array(SHORT_ENDS[name][0]), SHORT_ENDS[name][1]
    m = np.full(y.size, 5)
    ks = [5, 10]
    fit = passmix.fit(passmix.Counts(y, m), n_components=2, seed=seed)
    mirror = passmix.fit(passmix.Counts(m - y, m), n_components=2, seed=seed)
    assert abs(fit.loglik - mirror.loglik) < 1e-3
    for here, there in (("pass^k", "pass@k"), ("pass@k", "pass^k")):
        # the model's own: the default's atom at 0 has no mirror, an atom at 1 (issue 48)
        lo, hi = fit.interval(here, ks, conditional=True)
        mlo, mhi = mirror.interval(there, ks, conditional=True)
        np.testing.assert_allclose(lo, 1 - mhi, atol=0.01)
        np.testing.assert_allclose(hi, 1 - mlo, atol=0.01)


def test_never_solved_is_named():
    # issue 48, section 2: the tasks that decide Pass@k far beyond the trials are counted,
    # and the text table says what the estimate assumes of them
    y = np.array([0, 0, 3, 0, 5, 1, 0, 2])
    fit = _quiet_fit(passmix.Counts(np.append(y, 0), np.append(np.full(8, 5), 0)), seed=0)
    assert fit.never_solved == 4  # the task without trials is not counted
    assert fit.info()["never_solved"] == 4
    zi = _quiet_fit(passmix.Counts(y, np.full(8, 5)), seed=0, zero_inflated=True)
    assert zi.info()["never_solved"] == 4
    # half the tasks never solved in 20 trials, the others solved most of the time: BIC
    # (zi_mixture is zero_inflated="auto") keeps the atom
    atom = passmix.Counts(np.r_[np.zeros(20, int), np.full(20, 16)], np.full(40, 20))
    for counts, method, clause in (
            (passmix.Counts(y, np.full(8, 5)), "mixture",
             "4 tasks never solved: beyond the trials the intervals also span an atom at 0"),
            (atom, "zi_mixture", "20 tasks never solved, an atom at 0 of weight")):
        groups = {("a",): counts}
        table = passmix.estimate_table(groups, ["model"], k=[100], method=method, seed=0)
        assert clause in passmix.tables.format_table(table, groups, ["model"], 0.95)
