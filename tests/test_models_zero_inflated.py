"""The zero-inflated Beta mixture: likelihood, closed forms, fit, intervals and its study.

Truth comes from scipy's beta-binomial likelihood, numerical integration of
the metrics over the fitted distribution, finite differences, and
simulation with a known share of impossible tasks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import integrate, optimize
from scipy.special import expit, logit
from scipy.stats import beta as beta_dist
from scipy.stats import betabinom

import passmix
from passmix.cli import main
from passmix.estimators.registry import get_estimator
from passmix.metrics import logit_with_zero_atom
from passmix.models.zero_inflated import ZeroInflatedFit
from passmix.models.zero_inflated.model import bounds, get_objective, mixtures

# Pass@1000 of the issue's study: 30% impossible tasks, the rest Beta(1, 3), whose
# Pass@k is 1 - E[(1 - theta)^k] = 1 - 3 / (3 + k)
STUDY_TRUTH = 0.7 * (1.0 - 3.0 / 1003.0)


def _simulate(seed: int, share: float = 0.3, n_tasks: int = 300, trials: int = 50):
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(n_tasks) < share, 0.0, rng.beta(1.0, 3.0, n_tasks))
    return passmix.Counts(rng.binomial(trials, theta), np.full(n_tasks, trials))


def _numpy_loglik(z, h, y, m, weight):
    pi, w, a, b = mixtures(z, h)
    mix = sum(w[c] * betabinom.pmf(y, m, a[c], b[c]) for c in range(h))
    return float(np.sum(weight * np.log(np.where(y == 0, pi, 0.0) + (1.0 - pi) * mix)))


@pytest.fixture(scope="module")
def atom_counts():
    return _simulate(1000)


@pytest.fixture(scope="module")
def atom_fit(atom_counts):
    return passmix.fit(atom_counts, zero_inflated=True)


class TestClosedForms:
    @pytest.mark.unit
    @pytest.mark.parametrize("u, pi", [(0.3, 0.2), (-4.0, 0.01), (25.0, 1e-11), (-30.0, 0.5)])
    def test_logit_matches_the_direct_value_and_differences(self, u, pi):
        value, d_u, d_pi = logit_with_zero_atom(u, pi)
        # logit((1 - pi) M) with 1 - M taken as expit(-u), exact where M rounds to 1
        direct = np.log1p(-pi) + np.log(expit(u)) - np.log(pi + (1.0 - pi) * expit(-u))
        assert value == pytest.approx(direct, rel=1e-9, abs=1e-9)
        if abs(u) < 20:
            assert value == pytest.approx(logit((1.0 - pi) * expit(u)), rel=1e-8, abs=1e-8)
        step = 1e-6
        num_u = (logit_with_zero_atom(u + step, pi)[0]
                 - logit_with_zero_atom(u - step, pi)[0]) / (2 * step)
        num_pi = (logit_with_zero_atom(u, pi * (1 + step))[0]
                  - logit_with_zero_atom(u, pi * (1 - step))[0]) / (2 * step * pi)
        assert d_u == pytest.approx(num_u, rel=1e-5, abs=1e-8)
        assert d_pi == pytest.approx(num_pi, rel=1e-5, abs=1e-8)

    @pytest.mark.unit
    def test_keeps_its_accuracy_where_the_metric_rounds_to_one(self):
        # M = 1 - e^-40 and pi = 1e-11: 1 - (1 - pi) M is about pi, which 1.0 - x loses
        value, _, _ = logit_with_zero_atom(40.0, 1e-11)
        assert value == pytest.approx(np.log((1 - 1e-11) / (1e-11 + np.exp(-40.0))), rel=1e-9)

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_fitted_metrics_equal_numerical_integration(self, atom_fit, metric):
        pi, w, a, b = atom_fit.zero_weight, atom_fit.weights, atom_fit.alpha, atom_fit.beta

        def integral(k):
            def per_rate(theta):
                if metric == "pass@k":
                    return 1.0 - (1.0 - theta) ** k
                if metric == "pass^k":
                    return theta ** k
                r = np.arange(1, k + 1)
                return float(np.mean(1.0 - (1.0 - theta) ** r))
            total = sum(w[c] * integrate.quad(lambda t: per_rate(t) * beta_dist.pdf(t, a[c], b[c]),
                                              0.0, 1.0, limit=200, points=[1e-3, 0.01, 0.1])[0]
                        for c in range(len(w)))
            return (1.0 - pi) * total

        for k in (1, 5, 40):
            assert atom_fit.metric(metric, k) == pytest.approx(integral(k), rel=1e-6, abs=1e-9)


class TestLikelihood:
    @pytest.mark.parametrize("h", [1, 2, 3])
    def test_objective_equals_scipy_and_its_gradient_the_differences(self, h):
        rng = np.random.default_rng(h)
        y = np.array([0, 0, 1, 4, 9, 10])
        m = np.array([10, 3, 10, 10, 10, 10])
        weight = np.array([5.0, 2.0, 1.0, 3.0, 1.0, 2.0])
        objective = get_objective(h)
        with objective.lock:
            objective.set_data(y, m, weight)
            for _ in range(3):
                z = np.clip(rng.normal(0.0, 1.0, 3 * h), bounds(h)[:, 0], bounds(h)[:, 1])
                logp, grad = objective.logp_dlogp(z)
                assert logp == pytest.approx(_numpy_loglik(z, h, y, m, weight), rel=1e-10)
                num = optimize.approx_fprime(z, lambda v: objective.logp_dlogp(v)[0], 1e-7)
                np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-5)

    def test_fit_reaches_an_independent_optimum(self, atom_counts):
        res = passmix.fit(atom_counts, zero_inflated=True, n_components=1)
        y, m, weight = atom_counts.pairs()
        box = bounds(1)
        best = -np.inf
        rng = np.random.default_rng(0)
        for _ in range(6):
            z0 = np.array([rng.normal(-1, 1), rng.normal(1, 1), rng.normal(-1, 1)])
            out = optimize.minimize(lambda z: -_numpy_loglik(z, 1, y, m, weight), z0,
                                    method="L-BFGS-B", bounds=box)
            best = max(best, -out.fun)
        assert res.loglik >= best - 1e-6
        assert res.loglik >= res.plain.candidates[1].loglik - 1e-9  # nests the plain mixture

    def test_nests_the_plain_mixture_at_every_h(self, atom_fit):
        for _, row in atom_fit.bic_table.iterrows():
            h = int(row["n_components"])
            assert row["loglik"] >= atom_fit.plain.candidates[h].loglik - 1e-8
            assert row["n_params"] == 3 * h


class TestResult:
    def test_the_atom_is_found(self, atom_fit, atom_counts):
        assert isinstance(atom_fit, ZeroInflatedFit)
        # 30% of tasks are impossible; a few possible ones also never succeed in 50 trials
        never = np.mean(atom_counts.successes == 0)
        assert 0.2 < atom_fit.zero_weight <= never
        assert atom_fit.components()["weight"].sum() == pytest.approx(1.0)
        assert atom_fit.info()["estimator"] == "zi_mixture"
        assert "ZeroInflatedFit(" in repr(atom_fit)

    def test_summary_and_intervals(self, atom_fit):
        table = atom_fit.summary([1, 100])
        assert list(table.columns) == ["metric", "k", "estimate", "se", "lower", "upper"]
        assert np.all(table["lower"] <= table["estimate"]) and np.all(
            table["estimate"] <= table["upper"])
        lo, hi = atom_fit.interval("pass@k", 1000, method="delta")
        plo, phi = atom_fit.interval("pass@k", 1000)
        assert lo < atom_fit.pass_at_k(1000) < hi and plo < atom_fit.pass_at_k(1000) < phi
        # the delta method's standard error is its interval's, on the logit scale
        assert atom_fit.standard_error("pass@k", 1000) > 0

    def test_no_atom_sits_on_the_bound_and_says_so(self):
        rng = np.random.default_rng(2000)
        counts = passmix.Counts(rng.binomial(50, rng.beta(1.0, 3.0, 300)), np.full(300, 50))
        res = passmix.fit(counts, zero_inflated=True)
        assert "logit_zero" in res.on_bound and res.zero_weight < 1e-9
        assert "no atom" in res.status()
        with pytest.warns(passmix.FitWarning, match="logit_zero"):
            res.delta("pass@k", 100)
        # the profile region reaches the bound: an end is allowed there, and brackets
        lo, hi = res.interval("pass@k", 100)
        assert lo < res.pass_at_k(100) < hi
        # with no atom BIC prefers the plain mixture, which "auto" returns
        auto = passmix.fit(counts, zero_inflated="auto")
        assert isinstance(auto, passmix.MixtureFit)

    def test_a_bad_option_says_what_is_wrong(self, atom_counts):
        with pytest.raises(ValueError, match="zero_inflated"):
            passmix.fit(atom_counts, zero_inflated="yes")
        with pytest.raises(ValueError, match="zero_inflated"):
            passmix.fit(atom_counts, zero_inflated=1)

    def test_no_success_at_all_is_an_answer_with_a_warning(self):
        counts = passmix.Counts([0] * 20, [10] * 20)
        with pytest.warns(passmix.DegenerateDataWarning, match="no task succeeded"):
            res = passmix.fit(counts, zero_inflated=True)
        table = res.summary([1, 100], method="delta")
        assert np.all(np.isfinite(table[["estimate", "lower", "upper"]].to_numpy(float)))
        assert res.pass_at_k(100) < 0.05

    def test_the_input_is_not_modified(self, atom_counts):
        before = atom_counts.successes.copy()
        passmix.fit(atom_counts, zero_inflated=True, n_components=1)
        np.testing.assert_array_equal(atom_counts.successes, before)


class TestEstimator:
    def test_registered_and_on_the_command_line(self, tmp_path, atom_counts):
        est = get_estimator("zi_mixture")
        assert isinstance(est(atom_counts, seed=0), ZeroInflatedFit)
        path = tmp_path / "counts.csv"
        path.write_text("task,successes,trials\n" + "".join(
            f"t{i},{y},{m}\n" for i, (y, m) in enumerate(zip(atom_counts.successes,
                                                              atom_counts.trials))))
        out = CliRunner().invoke(main, ["estimate", str(path), "--method",
                                                    "zi_mixture", "--k", "1,100",
                                                    "--interval", "delta"])
        assert out.exit_code == 0, out.output
        assert "zi_mixture" in out.output


@pytest.mark.slow
def test_the_issue_study_with_impossible_tasks():
    """30% impossible tasks, J = 300, m = 50, 10 replicates: Pass@1000's error and coverage."""
    errors, plain_errors, covered = [], [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rep in range(10):
            counts = _simulate(1000 + rep)
            res = passmix.fit(counts, zero_inflated=True)
            lo, hi = res.interval("pass@k", 1000)
            errors.append(abs(res.pass_at_k(1000) - STUDY_TRUTH))
            plain_errors.append(abs(res.plain.pass_at_k(1000) - STUDY_TRUTH))
            covered += lo <= STUDY_TRUTH <= hi
    assert np.mean(errors) <= 0.03
    assert np.mean(errors) <= 0.6 * np.mean(plain_errors)
    assert covered >= 9


@pytest.mark.slow
def test_without_impossible_tasks_the_estimator_is_the_plain_mixture():
    """No atom in the truth: ``zi_mixture`` (BIC's choice) agrees with the plain fit at
    Pass@100 within 0.01, and the forced zero-inflated fit's interval holds the plain one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rep in range(5):
            rng = np.random.default_rng(2000 + rep)
            counts = passmix.Counts(rng.binomial(50, rng.beta(1.0, 3.0, 300)), np.full(300, 50))
            plain = passmix.fit(counts).pass_at_k(100)
            chosen = get_estimator("zi_mixture")(counts, seed=0)
            assert abs(chosen.pass_at_k(100) - plain) <= 0.01
            forced = passmix.fit(counts, zero_inflated=True)
            lo, hi = forced.interval("pass@k", 100)
            assert lo <= plain <= hi


def test_a_generator_seed_as_the_harness_passes_it(atom_counts):
    a = passmix.fit(atom_counts, zero_inflated=True, n_components=1,
                    seed=np.random.default_rng(5))
    b = passmix.fit(atom_counts, zero_inflated=True, n_components=1,
                    seed=np.random.default_rng(5))
    assert a.loglik == pytest.approx(b.loglik, abs=1e-9)
