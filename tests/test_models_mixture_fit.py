"""Marginal MLE and BIC selection against independent optimisation and simulation."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize
from scipy.special import logsumexp
from scipy.stats import betabinom

import passmix
from conftest import simulate_mixture
from passmix import DegenerateDataWarning, FitWarning
from passmix.metrics import metric_value

BIMODAL = ([0.6, 0.4], [1.0, 8.0], [6.0, 2.0])




def scipy_loglik(params, y, m, n, h):
    """Mixture log-likelihood in an independent parameterisation (log a, log b, logits).

    ``n[i]`` tasks share the pair ``(y[i], m[i])``.
    """
    log_a, log_b = params[:h], params[h:2 * h]
    logits = np.concatenate([[0.0], params[2 * h:]])
    log_w = logits - logsumexp(logits)
    comp = betabinom.logpmf(y[:, None], m[:, None], np.exp(log_a), np.exp(log_b))
    return np.sum(n * logsumexp(comp + log_w, axis=1))


def scipy_best(y, m, h, rng, n_starts=20):
    pairs, n = np.unique(np.column_stack([y, m]), axis=0, return_counts=True)
    y, m = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    best = -np.inf
    for _ in range(n_starts):
        x0 = np.concatenate([rng.uniform(-1, 2.5, 2 * h), rng.normal(0, 1, h - 1)])
        objective = lambda p: -scipy_loglik(p, y, m, n, h)  # noqa: E731
        res = minimize(objective, x0, method="Nelder-Mead",
                       options={"maxiter": 20000, "maxfev": 20000, "xatol": 1e-10,
                                "fatol": 1e-12})
        res = minimize(objective, res.x, method="BFGS")
        best = max(best, -res.fun)
    return best


@pytest.fixture(scope="module")
def bimodal_counts():
    return simulate_mixture(np.random.default_rng(11), 3600, 40, *BIMODAL)


@pytest.fixture(scope="module")
def bimodal_fit(bimodal_counts):
    return passmix.fit(bimodal_counts, seed=0)


class TestLikelihoodOptimum:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_h1_at_least_scipy_betabinom(self, seed):
        rng = np.random.default_rng(seed)
        counts = simulate_mixture(rng, 300, rng.integers(2, 30, 300), [1.0], [1.5], [3.0])
        res = passmix.fit(counts, n_components=1, seed=seed)
        want = scipy_best(counts.successes, counts.trials, 1, rng, n_starts=5)
        assert res.loglik >= want - 1e-6

    # ~80 s: the independent optimiser (scipy, 10 starts) is the slow part
    @pytest.mark.study
    @pytest.mark.slow
    def test_h2_at_least_independent_optimum(self):
        rng = np.random.default_rng(7)
        counts = simulate_mixture(rng, 400, 12, *BIMODAL)
        res = passmix.fit(counts, n_components=2, seed=0)
        want = scipy_best(counts.successes, counts.trials, 2, rng, n_starts=10)
        assert res.loglik >= want - 1e-6
        # the reported log-likelihood is the model's at the reported parameters
        direct = np.sum(np.log(betabinom.pmf(counts.successes[:, None], counts.trials[:, None],
                                             res.alpha, res.beta) @ res.weights))
        assert res.loglik == pytest.approx(direct, rel=1e-10)

    def test_parameters_recovered_j3600(self, bimodal_fit):
        res = bimodal_fit
        assert res.n_components == 2
        # standard errors of (w, alpha, beta) by the delta method; recovery within 4 SE
        from passmix.models.mixture.graph import unpack_jacobian

        jac = unpack_jacobian(res.params, 2)
        se = np.sqrt(np.diag(jac @ res.covariance @ jac.T))
        est = np.concatenate([res.weights, res.alpha, res.beta])
        truth = np.concatenate(BIMODAL)
        assert np.all(np.abs(est - truth) < 4 * se), (est, truth, se)

    def test_grouped_likelihood_independent_of_task_order(self, bimodal_counts):
        perm = np.random.default_rng(0).permutation(bimodal_counts.n_tasks)
        shuffled = passmix.Counts(bimodal_counts.successes[perm], bimodal_counts.trials[perm])
        a = passmix.fit(bimodal_counts, n_components=1, seed=3)
        b = passmix.fit(shuffled, n_components=1, seed=3)
        assert a.loglik == pytest.approx(b.loglik, rel=1e-12)


class TestBIC:
    def test_picks_two_on_bimodal(self, bimodal_fit):
        table = bimodal_fit.bic_table
        assert bimodal_fit.n_components == 2
        assert list(table["n_components"]) == [1, 2, 3, 4]
        assert table.loc[table["selected"], "n_components"].item() == 2
        n_obs = bimodal_fit.n_observed
        fitted = table[table["fitted"]]
        assert np.allclose(fitted["bic"], -2 * fitted["loglik"] + fitted["n_params"] * np.log(n_obs))
        # an H left unfitted could not have won, even at the best any mixture reaches
        skipped = table[~table["fitted"]]
        assert skipped["bic"].isna().all()
        assert (skipped["bic_bound"] > bimodal_fit.bic).all()

    @pytest.mark.parametrize("seed", [0, 1])
    def test_picks_one_on_single_beta(self, seed):
        counts = simulate_mixture(np.random.default_rng(seed), 3600, 40, [1.0], [2.0], [5.0])
        assert passmix.fit(counts, seed=seed).n_components == 1

    def test_loglik_non_decreasing_in_h(self, bimodal_counts):
        ll = passmix.fit(bimodal_counts, seed=0, skip_hopeless=False).bic_table["loglik"]
        assert ll.notna().all() and np.all(np.diff(ll.to_numpy()) > -1e-3)

    def test_identifiability_column(self):
        counts = simulate_mixture(np.random.default_rng(0), 100, 5, [1.0], [2.0], [3.0])
        table = passmix.fit(counts, seed=0).bic_table
        assert list(table["identifiable"]) == [True, True, False, False]


class TestMixtureFit:
    def test_metrics_equal_functions(self, bimodal_fit):
        k = np.array([1, 10, 1000])
        for metric, method in [("pass@k", "pass_at_k"), ("pass^k", "pass_hat_k"),
                               ("auc@k", "auc_at_k")]:
            want = metric_value(metric, bimodal_fit.weights, bimodal_fit.alpha,
                                bimodal_fit.beta, k)
            np.testing.assert_allclose(getattr(bimodal_fit, method)(k), want, rtol=1e-15)
            assert isinstance(getattr(bimodal_fit, method)(5), float)

    def test_interval_and_summary(self, bimodal_fit):
        lo, hi = bimodal_fit.interval("pass@k", 60)
        assert lo < bimodal_fit.pass_at_k(60) < hi
        lo99, hi99 = bimodal_fit.interval("pass@k", 60, level=0.99)
        assert lo99 < lo and hi99 > hi
        lo_i, hi_i = bimodal_fit.interval("pass^k", [10, 100], scale="identity")
        assert lo_i.shape == (2,)
        table = bimodal_fit.summary(k=[1, 60])
        assert isinstance(table, pd.DataFrame)
        assert list(table.columns) == ["metric", "k", "estimate", "se", "lower", "upper"]
        assert set(table["metric"]) == {"pass@k", "pass^k", "auc@k"} and len(table) == 6
        assert bimodal_fit.standard_error("auc@k", 60) > 0

    def test_components_ordered_and_repr(self, bimodal_fit):
        comps = bimodal_fit.components()
        assert np.all(np.diff(comps["mean"]) > 0)
        assert "MixtureFit(H=2" in repr(bimodal_fit)
        assert "<table" in bimodal_fit._repr_html_()

    def test_bad_metric_and_k(self, bimodal_fit):
        with pytest.raises(ValueError, match="unknown metric"):
            bimodal_fit.interval("pass@q", 5)
        with pytest.raises(ValueError, match=">= 1"):
            bimodal_fit.pass_at_k(0)
        with pytest.raises(ValueError, match="level"):
            bimodal_fit.summary(level=95)

    def test_alternating_datasets_reuse_compiled_model(self, bimodal_counts):
        # fits share one compiled objective per H; interleaving data sets must not leak
        other = simulate_mixture(np.random.default_rng(5), 50, 7, [1.0], [0.7], [2.0])
        first = passmix.fit(other, n_components=2, seed=1)
        passmix.fit(bimodal_counts, n_components=2, seed=1)
        again = passmix.fit(other, n_components=2, seed=1)
        assert first.loglik == pytest.approx(again.loglik, rel=1e-12)
        np.testing.assert_allclose(first.covariance, again.covariance, rtol=1e-9, atol=1e-12)


class TestDegenerateAndBadInput:
    def test_all_successes(self):
        counts = passmix.Counts(np.full(20, 5), np.full(20, 5))
        with pytest.warns(DegenerateDataWarning, match="every task succeeded"):
            res = passmix.fit(counts, seed=0, max_components=2)
        for k in (1, 10, 1000):
            assert res.pass_at_k(k) == pytest.approx(1.0, abs=1e-6)
            assert res.pass_hat_k(k) > 0.99
        assert np.all(np.isfinite(res.summary(k=[1, 100])[["estimate", "lower", "upper"]]))

    def test_all_failures(self):
        counts = passmix.Counts(np.zeros(20, int), np.full(20, 5))
        with pytest.warns(DegenerateDataWarning, match="no task succeeded"):
            res = passmix.fit(counts, seed=0, max_components=2)
        assert res.pass_at_k(10) < 1e-6 and np.isfinite(res.auc_at_k(1000))

    @pytest.mark.parametrize("y,m", [([3], [7]), ([0], [5]), ([4], [4]), ([1, 0], [9, 0])])
    def test_one_task(self, y, m):
        # with one observed task the BIC penalty is 0 and every H fits it equally
        # well: only H = 1 is fitted, whatever the last bits of the likelihood
        with pytest.warns(DegenerateDataWarning, match="only one task"):
            res = passmix.fit(passmix.Counts(y, m), seed=0)
        assert res.n_components == 1 and list(res.bic_table["n_components"]) == [1]
        assert res.pass_at_k(1) == pytest.approx(y[0] / m[0], abs=1e-3)
        lo, hi = res.interval("pass@k", 1)
        assert lo <= res.pass_at_k(1) <= hi and lo < hi

    def test_single_trial_warns(self):
        rng = np.random.default_rng(0)
        with pytest.warns(DegenerateDataWarning, match="Pass@1"):
            passmix.fit(passmix.Counts(rng.integers(0, 2, 50), np.ones(50, int)), seed=0,
                        max_components=1)

    def test_unrun_tasks_carry_no_information(self):
        rng = np.random.default_rng(2)
        counts = simulate_mixture(rng, 200, 10, [1.0], [1.0], [2.0])
        y = np.concatenate([counts.successes, [0, 0, 0]])
        m = np.concatenate([counts.trials, [0, 0, 0]])
        with_unrun = passmix.fit(passmix.Counts(y, m), seed=4)
        plain = passmix.fit(counts, seed=4)
        assert with_unrun.loglik == pytest.approx(plain.loglik, rel=1e-12)
        assert with_unrun.bic == pytest.approx(plain.bic, rel=1e-12)
        assert with_unrun.n_tasks == 203 and with_unrun.n_observed == 200

    def test_covariance_positive_semidefinite_on_bound(self):
        # binomial data: the concentration runs to its bound and the information is singular
        rng = np.random.default_rng(3)
        res = passmix.fit(passmix.Counts(rng.binomial(5, 0.4, 30), np.full(30, 5)),
                          n_components=1, seed=0)
        assert "log_concentration[0]" in res.on_bound
        assert np.linalg.eigvalsh(res.covariance).min() >= -1e-12
        # the delta method cannot see the bounded coordinate: it takes the profile's ends,
        # which reach in from the bound (no warning there)
        with pytest.warns(FitWarning, match="cannot see log_concentration"):
            lo, hi = res.interval("pass@k", 10, method="delta")
        assert lo < res.pass_at_k(10) < hi
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)
            p_lo, p_hi = res.interval("pass@k", 10)
        assert (lo, hi) == pytest.approx((p_lo, p_hi))
        # and they are wider than the linearisation at the bound
        raw = res._delta("pass@k", np.array([10]), 0.95, "logit")
        assert p_lo < raw.lower[0] and p_hi >= raw.upper[0]

    @pytest.mark.unit
    def test_no_observed_task(self):
        with pytest.raises(ValueError, match="no task has any trial"):
            passmix.fit(passmix.Counts([0, 0], [0, 0]))

    @pytest.mark.unit
    @pytest.mark.parametrize("kwargs,match", [
        ({"n_components": 0}, "n_components"), ({"max_components": 0}, "max_components"),
        ({"n_init": 0}, "n_init"), ({"n_components": 1.5}, "n_components"),
        ({"max_components": 10**12}, "max_components must be <= 10"),
        ({"n_components": 10**12}, "n_components must be <= 10"),
        ({"n_init": 10**12}, "n_init must be <= 1000"), ({"seed": -1}, "seed"),
    ])
    def test_bad_options(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            passmix.fit(passmix.Counts([1, 2], [3, 3]), **kwargs)

    @pytest.mark.unit
    @pytest.mark.parametrize("kwargs,match", [
        ({"max_components": None}, "max_components"), ({"n_init": "3"}, "n_init"),
        ({"seed": "abc"}, "seed"), ({"seed": 1.5}, "seed"), ({"max_components": True},
                                                               "max_components"),
    ])
    def test_bad_option_types(self, kwargs, match):
        with pytest.raises(TypeError, match=match):
            passmix.fit(passmix.Counts([1, 2], [3, 3]), **kwargs)

    @pytest.mark.unit
    def test_bad_counts(self):
        with pytest.raises(TypeError, match="Counts"):
            passmix.fit([1, 2, 3])
        with pytest.raises(ValueError, match="exceeds"):
            passmix.fit(([4, 1], [3, 3]))

    def test_input_not_mutated(self):
        y, m = np.array([1, 2, 0, 3]), np.array([3, 3, 3, 3])
        passmix.fit((y, m), seed=0, max_components=1)
        assert y.tolist() == [1, 2, 0, 3] and m.tolist() == [3, 3, 3, 3]

    def test_deterministic_under_seed(self):
        counts = simulate_mixture(np.random.default_rng(9), 80, 6, *BIMODAL)
        a, b = passmix.fit(counts, seed=123), passmix.fit(counts, seed=123)
        np.testing.assert_allclose(a.params, b.params, rtol=1e-12, atol=1e-12)

    def test_no_seed_is_seed_zero(self):
        """The default (None) is 0, as in compare and rank: the same fit in every process
        (fuzzing found fresh entropy there, fits differing by 1e-8 between processes)."""
        counts = simulate_mixture(np.random.default_rng(9), 80, 6, *BIMODAL)
        zero = passmix.fit(counts, seed=0, n_init=3)
        for other in (passmix.fit(counts, n_init=3), passmix.fit(counts, seed=None, n_init=3)):
            np.testing.assert_array_equal(other.params, zero.params)
        assert not np.array_equal(passmix.fit(counts, seed=1, n_init=3).params, zero.params)

    def test_no_warnings_on_clean_data(self, bimodal_counts):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DegenerateDataWarning)
            warnings.simplefilter("error", FitWarning)
            passmix.fit(bimodal_counts, seed=0, max_components=2)


@pytest.mark.unit
class TestBICTies:
    def test_ties_go_to_the_smaller_h(self):
        from passmix.inference import select_by_bic

        table = pd.DataFrame({"n_components": [1, 2, 3], "bic": [100.0, 100.0 - 1e-9, 120.0]})
        assert select_by_bic(table) == 1
        table = pd.DataFrame({"n_components": [1, 2, 3], "bic": [100.0, 99.0, 99.0 + 1e-10]})
        assert select_by_bic(table) == 2

    def test_one_tie_rule_for_every_criterion(self):
        """select_by_criterion (BIC here, AIC, BIC and held-out likelihood in fit_pooled):
        within 1e-6 (1 + |best|) of the best is a tie, the smallest size wins, the first
        among equal sizes, and NaN never wins."""
        from passmix.inference import select_by_criterion

        best = -1000.0
        inside, outside = best - 0.9e-6 * 1001, best - 1.1e-6 * 1001
        assert select_by_criterion([best, inside, -2000.0], [5, 3, 1]) == 1
        assert select_by_criterion([best, outside, -2000.0], [5, 3, 1]) == 0
        assert select_by_criterion([np.nan, -3.0, -3.0], [1, 4, 4]) == 1
        assert select_by_criterion([-3.0, np.nan], [9, 1]) == 0
        with pytest.raises(ValueError, match="no model has a score"):
            select_by_criterion([np.nan], [1])
        # an infinite best ties only with itself
        assert select_by_criterion([np.inf, -1.0, np.inf], [3, 1, 2]) == 2


class TestBinomialLimit:
    def test_status_and_convergence_at_the_limit(self):
        # binomial counts: the likelihood rises all the way to concentration -> infinity
        rng = np.random.default_rng(4)
        counts = passmix.Counts(rng.binomial(10, 0.05, 128), np.full(128, 10))
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)
            res = passmix.fit(counts, seed=0)
        assert res.n_components == 1 and res.binomial_limit == (1,) and res.converged
        assert res.status().startswith("converged; binomial limit: every task has the same")
        assert "NOT converged" not in repr(res)
        # the common rate is the pooled success rate
        assert res.pass_at_k(1) == pytest.approx(counts.successes.sum() / 1280, rel=1e-4)

    def test_example_data_converge(self):
        from passmix.examples import example_path

        groups = passmix.read_counts(example_path("math_m10"), group_by="model")
        for key in [("Pythia 160M",), ("Pythia 70M",)]:
            with warnings.catch_warnings():
                warnings.simplefilter("error", FitWarning)
                res = passmix.fit(groups[key], seed=0)
            assert res.converged and res.binomial_limit == (1,), key

    def test_interior_fit_is_not_at_the_limit(self, bimodal_fit):
        assert bimodal_fit.binomial_limit == () and bimodal_fit.status() == "converged"


class TestFuzzedReproducers:
    def test_tiny_beta_gives_finite_metrics_and_intervals(self):
        # H = 2 with a component at mean 1 (beta ~ 1e-64): Pass^k was NaN past k = 64
        y = np.array([20] * 25 + [0, 0, 1, 1, 1, 2, 2, 2, 4, 4, 4, 6, 9])
        res = passmix.fit((y, np.full(38, 20)), seed=0)
        assert np.all(np.isfinite(res.pass_hat_k([64, 65, 100])))
        table = res.summary(k=[1, 64, 65, 100])
        assert np.all(np.isfinite(table[["estimate", "se", "lower", "upper"]].to_numpy()))

    def test_interval_brackets_estimate(self):
        res = passmix.fit(([2, 1, 1], [2, 2, 2]), seed=0)
        for method in ("profile", "delta"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)
                lo, hi = res.interval("pass^k", 1000, method=method)
            est = res.pass_hat_k(1000)
            assert lo <= est <= hi and lo < hi, (method, lo, est, hi)

    def test_huge_trial_counts(self):
        # m >= 2^31 used to wrap in PyMC's int32 data
        res = passmix.fit(passmix.Counts([0, 5], [2**32, 10]), seed=0)
        assert res.pass_at_k(1) == pytest.approx(0.25, abs=1e-3)
        assert res.loglik < 0


# --------------------------------------------------------------------------
# pymc.find_MAP itself
# --------------------------------------------------------------------------


def _two_groups(seed: int = 11, n: int = 150, trials: int = 12) -> passmix.Counts:
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(n) < 0.5, rng.beta(1, 8, n), rng.beta(6, 2, n))
    return passmix.Counts(rng.binomial(trials, theta), np.full(n, trials))


def _scipy_loglik(counts: passmix.Counts, weights, alpha, beta) -> float:
    """The mixture's log-likelihood by scipy's beta-binomial, task by task."""
    y, m = counts.successes[:, None], counts.trials[:, None]
    logp = np.log(weights)[None, :] + betabinom.logpmf(y, m, alpha[None, :],
                                                              beta[None, :])
    return float(logsumexp(logp, axis=1).sum())


class TestFindMAP:
    @pytest.mark.parametrize("h", [1, 2])
    def test_pymc_find_map_reaches_the_fits_optimum(self, h):
        pm = pytest.importorskip("pymc")
        from passmix.models.mixture.graph import build_model, pair_data
        from passmix.models.mixture.find_map import map_point
        from passmix.models.mixture.parameters import unpack

        counts = _two_groups()
        fitted = passmix.fit(counts, n_components=h, n_init=5, seed=0)
        model = build_model(h, prior="flat")
        y, m, weight = counts.pairs()
        pm.set_data(pair_data(y, m, weight), model=model)
        start = {"logit_mean_first": -0.5, "log_concentration": np.ones(h)}
        if h > 1:
            start.update(logit_weights=np.zeros(h - 1), log_mean_gaps=np.full(h - 1, 0.5))
        with warnings.catch_warnings():
            # PyMC's own defaults must not warn (FutureWarning) once passmix passes them
            warnings.simplefilter("error", FutureWarning)
            result = pm.find_MAP(initvals=start, model=model, progressbar=False, jitter=False,
                                 return_inferencedata=True)
        z = map_point(result, h)
        found = _scipy_loglik(counts, *unpack(z, h))
        assert abs(found - fitted.loglik) < 1e-6
        assert_allclose(_scipy_loglik(counts, fitted.weights, fitted.alpha, fitted.beta),
                        fitted.loglik, rtol=0, atol=1e-8)

    def test_fit_with_find_map_agrees(self):
        counts = _two_groups(seed=12, n=80)
        default = passmix.fit(counts, max_components=2, n_init=3, seed=1)
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # none reaches the user
            with_pymc = passmix.fit(counts, max_components=2, n_init=3, seed=1,
                                    optimizer="find_MAP")
        assert with_pymc.n_components == default.n_components
        assert abs(with_pymc.loglik - default.loglik) < 1e-6
        assert_allclose(with_pymc.bic_table["loglik"], default.bic_table["loglik"],
                        rtol=0, atol=1e-6)
        assert with_pymc.converged
        assert_allclose(with_pymc.pass_at_k([1, 100]), default.pass_at_k([1, 100]),
                        rtol=1e-4)

    @pytest.mark.unit
    def test_unknown_optimizer(self):
        with pytest.raises(ValueError, match="optimizer.*lbfgsb, find_MAP"):
            passmix.fit(passmix.Counts([1, 2], [3, 3]), optimizer="newton")


@pytest.mark.slow
def test_same_optima_as_before():
    """Every bundled data set's fits reach the optima recorded before issue 22 (1e-6)."""
    import json

    from passmix.examples import example_path

    ref = json.loads((Path(__file__).parent / "data" / "optima" / "a389681.json").read_text())
    got: dict[str, tuple] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("math_m10", "math_10k", "livecodebench", "taubench_airline"):
            kw = {} if name == "taubench_airline" else {"group_by": ["model"]}
            groups = passmix.read_counts(example_path(name), **kw)
            if not isinstance(groups, dict):
                groups = {("all",): groups}
            for key, counts in groups.items():
                f = passmix.fit(counts, seed=0)
                got[f"mixture|{name}|{'/'.join(map(str, key))}"] = (f.n_components, f.loglik)
        for name in ("math_m10", "livecodebench"):
            pf = passmix.fit_pooled(example_path(name), system="model", seed=0)
            got[f"pooled|{name}"] = (pf.family, pf.loglik)
    assert set(got) == set(ref)
    for key, (choice, loglik) in ref.items():
        assert got[key][0] == choice, key
        assert got[key][1] == pytest.approx(loglik, abs=1e-6), key
