"""The default interval beyond the trials (issue 48): for the metric over the tasks that
were run, spanning the Beta mixture and an atom at 0 where some task was never solved;
within the trials, the model's own."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import betaln
from scipy.stats import betabinom, chi2

import passmix
from passmix import ZeroInflatedFit

K_BEYOND = 1000
LEVEL = 0.95
DROP = chi2(1).ppf(LEVEL) / 2


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


@pytest.fixture(scope="module")
def impossible():
    """40 tasks, 30% of them impossible, m = 5: several never solved."""
    rng = np.random.default_rng(48)
    theta = np.where(rng.random(40) < 0.3, 0.0, rng.beta(1.0, 2.0, 40))
    counts = passmix.Counts(rng.binomial(5, theta), np.full(40, 5))
    return _quiet(passmix.fit, counts, seed=0)


@pytest.fixture(scope="module")
def all_solved():
    """Every task solved at least once: no shape but the mixture's to span."""
    rng = np.random.default_rng(7)
    return _quiet(passmix.fit, passmix.Counts(rng.integers(1, 6, 30), np.full(30, 5)), seed=0)


def _tasks_pass_at_k(y, m, a, b, k, zero=0.0):
    """Pass@k over these tasks given a Beta(a, b) prior with an atom `zero` at 0: each task's
    posterior mean of 1 - (1 - p)^k, from log-Beta values (not passmix)."""
    y, m = y[..., :], m[..., :]
    a_, b_ = a[..., None], b[..., None]
    log_evidence = betaln(a_ + y, b_ + m - y) - betaln(a_, b_)
    beta_share = (1 - zero[..., None]) * np.exp(log_evidence)
    atom = np.where(y == 0, zero[..., None], 0.0)
    post_beta = beta_share / (beta_share + atom)
    solved = 1 - np.exp(betaln(a_ + y, b_ + m - y + k) - betaln(a_ + y, b_ + m - y))
    return np.mean(post_beta * solved, axis=-1)


def _grid(fit, zero_weights):
    """The tasks' Pass@k at the points of a (zero weight, mean, log concentration) grid inside
    the 95% region of the H = 1 model with that atom, the log-likelihood from scipy."""
    y, m = fit.counts.successes.astype(float), fit.counts.trials.astype(float)
    mus = np.linspace(0.01, 0.99, 99)
    log_kappas = np.linspace(-4.0, 10.0, 71)
    z, mu, lk = np.meshgrid(np.asarray(zero_weights, float), mus, log_kappas, indexing="ij")
    a, b = mu * np.exp(lk), (1 - mu) * np.exp(lk)
    per_task = (1 - z[..., None]) * betabinom.pmf(y, m, a[..., None], b[..., None])
    per_task += np.where(y == 0, z[..., None], 0.0)
    ll = np.log(per_task).sum(axis=-1)
    values = _tasks_pass_at_k(y, m, a, b, K_BEYOND, z)
    return ll, values


class TestWithinTheTrials:
    @pytest.mark.parametrize("method", ["profile", "delta"])
    def test_the_models_own_interval(self, impossible, method):
        ks = [1, 3, 5]
        for metric in ("pass@k", "pass^k", "auc@k"):
            got = _quiet(impossible.interval, metric, ks, method=method)
            own = _quiet(impossible.interval, metric, ks, method=method, conditional=True)
            # Pass^k from k = 2 also spans one more component (TestOneMoreComponent)
            same = slice(None) if metric != "pass^k" else slice(0, 1)
            np.testing.assert_array_equal(got.lower[same], own.lower[same])
            np.testing.assert_array_equal(got.upper[same], own.upper[same])
            assert np.all(got.lower <= own.lower) and np.all(got.upper >= own.upper)

    def test_summary_rows_within_the_trials_unchanged(self, impossible):
        table = _quiet(impossible.summary, k=[1, 5, K_BEYOND])
        own = _quiet(impossible.summary, k=[1, 5, K_BEYOND], conditional=True)
        within = (table["k"] <= 5) & ((table["metric"] != "pass^k") | (table["k"] == 1))
        np.testing.assert_allclose(table.loc[within, ["lower", "upper"]],
                                   own.loc[within, ["lower", "upper"]], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(table["estimate"], own["estimate"])


class TestBeyondTheTrials:
    def test_the_atom_is_the_shape_beside_the_mixture(self, impossible):
        assert impossible.never_solved > 0
        (alt,) = impossible.shape_alternatives("pass@k")
        assert isinstance(alt, ZeroInflatedFit)
        assert alt.n_components == impossible.n_components
        assert alt.counts is impossible.counts

    def test_ends_hold_a_brute_force_region_of_both_shapes(self, impossible):
        if impossible.n_components != 1:
            pytest.skip("the grid is for H = 1")
        lo, hi = _quiet(impossible.interval, "pass@k", K_BEYOND)
        plain_ll, plain = _grid(impossible, [0.0])
        inside = plain_ll >= impossible.loglik - DROP
        assert inside.sum() > 20
        (alt,) = impossible.shape_alternatives("pass@k")
        zi_ll, zi = _grid(impossible, np.linspace(0.0, 0.6, 31))
        zi_inside = zi_ll >= alt.loglik - DROP
        assert zi_inside.sum() > 20 and alt.loglik >= zi_ll.max() - 1e-6
        # the grids' points are in the regions: no end may be inside their ranges
        assert lo <= min(plain[inside].min(), zi[zi_inside].min()) + 1e-6
        assert hi >= max(plain[inside].max(), zi[zi_inside].max()) - 1e-6
        # and the atom is what reaches the low end: the mixture's grid stays well above it
        assert zi[zi_inside].min() < plain[inside].min() - 0.05

    def test_the_table_says_where_the_width_comes_from(self, impossible):
        table = _quiet(impossible.beyond_the_trials, k=[1, 5, K_BEYOND])
        assert table.attrs["max_trials"] == 5
        assert len(table) == 9
        for _, row in table.iterrows():
            assert row["lower"] <= min(row["tasks_lower"], row["estimate"]) + 1e-12
            assert row["upper"] >= max(row["tasks_upper"], row["estimate"]) - 1e-12
            assert 0.0 <= row["shape_share"] <= 1.0
            if row["k"] == 1 or row["k"] <= 5 and row["metric"] != "pass^k":
                assert row["shape_share"] == 0.0 and row["shapes"] == impossible.shape_name
                assert (row["lower"], row["upper"]) == (row["model_lower"], row["model_upper"])
        far = table[(table["metric"] == "pass@k") & (table["k"] == K_BEYOND)].iloc[0]
        assert far["shapes"] == f"the Beta mixture (H = {impossible.n_components}), an atom at 0"
        assert far["shape_share"] > 0.1
        lo, hi = _quiet(impossible.interval, "pass@k", K_BEYOND)
        assert (far["lower"], far["upper"]) == pytest.approx((lo, hi), abs=1e-12)
        # what the counts allow with no shape: wider than the default far beyond the trials
        # (40 tasks: the band moves the distribution of successes by up to 0.21)
        for metric, rows in table.groupby("metric"):
            data = passmix.shape_free_interval(impossible.counts, rows["k"], metric)
            np.testing.assert_allclose(rows["data_lower"], data.lower, atol=1e-12)
            np.testing.assert_allclose(rows["data_upper"], data.upper, atol=1e-12)
        assert far["data_upper"] - far["data_lower"] > far["upper"] - far["lower"]

    def test_without_a_task_never_solved_there_is_no_atom(self, all_solved):
        assert all_solved.shape_alternatives("pass@k") == ()
        assert all_solved.trials_to_tell() is None
        table = _quiet(all_solved.beyond_the_trials, k=[K_BEYOND])
        table = table[table["metric"] != "pass^k"]  # one more component is offered for it
        assert (table["shapes"] == all_solved.shape_name).all()
        assert (table["shape_share"] == 0.0).all()

    def test_delta_intervals_hold_their_estimate_and_the_atom(self, impossible):
        est = impossible.pass_at_k(K_BEYOND)
        lo, hi = _quiet(impossible.interval, "pass@k", K_BEYOND, method="delta")
        plo, _ = _quiet(impossible.interval, "pass@k", K_BEYOND)
        own_lo, _ = _quiet(impossible.interval, "pass@k", K_BEYOND, method="delta",
                           conditional=True)
        assert lo <= est <= hi
        # the atom pulls the delta path's lower end as far down as the profile path's
        assert lo < own_lo - 0.05 and lo == pytest.approx(plo, abs=0.05)


class TestOneMoreComponent:
    """Pass^k beyond the trials also spans the Beta mixture with one more component."""

    def test_offered_for_pass_hat_k_alone(self, all_solved):
        (richer,) = all_solved.shape_alternatives("pass^k")
        assert isinstance(richer, passmix.MixtureFit)
        assert richer.n_components == all_solved.n_components + 1
        assert richer.counts is all_solved.counts
        assert richer.shape_name == f"the Beta mixture (H = {richer.n_components})"
        assert all_solved.shape_alternatives("auc@k") == ()
        assert all_solved.shape_alternatives() == (richer,)
        assert all_solved.shape_alternatives("pass^k", within_trials=True) == (richer,)
        assert all_solved.shape_alternatives("pass@k", within_trials=True) == ()

    def test_its_loglik_from_scipy_and_nested(self, all_solved):
        (richer,) = all_solved.shape_alternatives("pass^k")
        y, m = all_solved.counts.successes, all_solved.counts.trials
        per_task = sum(w * betabinom.pmf(y, m, a, b)
                       for w, a, b in zip(richer.weights, richer.alpha, richer.beta))
        assert richer.loglik == pytest.approx(np.log(per_task).sum(), abs=1e-6)
        # H + 1 components hold every H-component mixture
        assert richer.loglik >= all_solved.loglik - 1e-6

    def test_the_default_holds_its_interval(self, all_solved):
        (richer,) = all_solved.shape_alternatives("pass^k")
        ks = [2, 5, 100, K_BEYOND]  # within the trials (m = 5) and beyond
        lo, hi = _quiet(all_solved.interval, "pass^k", ks)
        r_lo, r_hi = _quiet(richer.interval, "pass^k", ks, conditional=True)
        own_lo, own_hi = _quiet(all_solved.interval, "pass^k", ks, conditional=True)
        assert np.all(lo <= np.minimum(r_lo, own_lo) + 1e-12)
        assert np.all(hi >= np.maximum(r_hi, own_hi) - 1e-12)
        # within the trials, exactly the union of the two shapes' own intervals
        np.testing.assert_array_equal(lo[:2], np.minimum(r_lo, own_lo)[:2])
        # ... its upper end held to the mean's (Pass^k <= Pass^1 under every shape)
        mean_hi = _quiet(all_solved.interval, "pass@k", 1, conditional=True).upper
        np.testing.assert_array_equal(hi[:2], np.minimum(np.maximum(r_hi, own_hi), mean_hi)[:2])
        assert np.all(hi <= mean_hi)
        # at k = 1 every metric is the mean, the model's own
        assert _quiet(all_solved.interval, "pass^k", 1) == \
            _quiet(all_solved.interval, "pass^k", 1, conditional=True)
        table = _quiet(all_solved.beyond_the_trials, k=[K_BEYOND])
        row = table[table["metric"] == "pass^k"].iloc[0]
        assert (row["lower"], row["upper"]) == pytest.approx((lo[3], hi[3]), abs=1e-12)

    def test_not_where_the_data_do_not_identify_it(self):
        # m = 4 identifies at most 4 coordinates; two components have 5
        rng = np.random.default_rng(3)
        fit = _quiet(passmix.fit, passmix.Counts(rng.integers(1, 5, 30), np.full(30, 4)),
                     seed=0)
        assert fit.n_components == 1
        assert fit.shape_alternatives("pass^k") == ()
        assert fit.richer_components() is None and fit.info()["pass_hat_k_components"] is None


class TestTrialsToTell:
    def test_against_log_beta_values(self, impossible):
        if impossible.n_components != 1:
            pytest.skip("the closed form is for H = 1")
        a, b = float(impossible.alpha[0]), float(impossible.beta[0])
        never = (impossible.counts.successes == 0)
        m = impossible.counts.trials[never].astype(float)
        # P(none of n more trials succeeds | none of m did), each task at its posterior
        def log_none(n):
            return np.sum(betaln(a, b + m + n) - betaln(a, b + m))
        n = impossible.trials_to_tell()
        assert log_none(n) <= np.log(0.05) < log_none(n - 1)
        assert impossible.info()["trials_to_tell"] == n
        stricter = impossible.trials_to_tell(alpha=0.01)
        assert stricter > n

    def test_near_one_against_log_beta_values(self, all_solved):
        if all_solved.n_components != 1 or all_solved.always_solved == 0:
            pytest.skip("the closed form is for H = 1, with a task always solved")
        a, b = float(all_solved.alpha[0]), float(all_solved.beta[0])
        every = all_solved.counts.successes == all_solved.counts.trials
        m = all_solved.counts.trials[every].astype(float)
        # P(each of n more trials succeeds | all m did), each task at its posterior
        def log_every(n):
            return np.sum(betaln(a + m + n, b) - betaln(a + m, b))
        n = all_solved.trials_to_tell(near=1)
        assert log_every(n) <= np.log(0.05) < log_every(n - 1)
        assert all_solved.info()["pass_hat_k_trials_to_tell"] == n
        assert all_solved.info()["always_solved"] == int(every.sum())

    def test_near_one_is_near_zero_of_the_mirrored_data(self):
        # the mixture of m - y is the mirror of y's, each task's posterior too
        rng = np.random.default_rng(5)
        theta = rng.beta(0.6, 0.6, 60)
        y, m = rng.binomial(8, theta), np.full(60, 8)
        fit = _quiet(passmix.fit, passmix.Counts(y, m), seed=0)
        mirror = _quiet(passmix.fit, passmix.Counts(m - y, m), seed=0)
        assert fit.loglik == pytest.approx(mirror.loglik, abs=1e-6)
        assert fit.always_solved == mirror.never_solved > 0
        # the two optima agree to the optimiser's tolerance, not bit for bit
        assert fit.trials_to_tell(near=1) == pytest.approx(mirror.trials_to_tell(near=0),
                                                           rel=0.02, abs=1)
        assert fit.trials_to_tell(near=0) == pytest.approx(mirror.trials_to_tell(near=1),
                                                           rel=0.02, abs=1)

    def test_near_takes_an_edge(self, impossible):
        with pytest.raises(ValueError, match="near must be 0 or 1"):
            impossible.trials_to_tell(near=0.5)

    def test_the_text_table_says_what_it_assumes(self, impossible):
        from passmix.tables import estimate_table, format_table

        table = _quiet(estimate_table, impossible.counts, k=[1, 100], method="mixture")
        text = format_table(table, {(): impossible.counts}, [], 0.95)
        n = impossible.never_solved
        assert f"{n} tasks never solved: beyond the trials the intervals also span an atom " \
               "at 0 (impossible tasks)" in text
        assert f"about {impossible.trials_to_tell()} more trials on each" in text
        h = impossible.n_components + 1
        assert f"Pass^k intervals (k >= 2) also span {h} components" in text
        if impossible.always_solved:
            assert (f"about {impossible.trials_to_tell(near=1)} more trials on each of the "
                    f"{impossible.always_solved} task") in text
        assert impossible.info()["pass_hat_k_components"] == h
