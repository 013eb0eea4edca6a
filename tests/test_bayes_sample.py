"""NUTS posterior of the Beta mixture: agreement with the MLE, intervals, diagnostics, plots.

Each sampling run in the default suite is small (grouped (y, m) pairs make
its cost independent of the number of tasks); the coverage study is marked
slow.
"""

from __future__ import annotations

import doctest
import importlib.util
import warnings

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm

import passmix
from conftest import simulate_mixture
import passmix.bayes.plots
import passmix.bayes.sample
from passmix import PosteriorWarning
from passmix.metrics import metric_value
from passmix.models.mixture.graph import WEAK_PRIOR, build_model, get_objective, n_free_parameters, pair_data
from passmix.bayes.sample import (
    check_diagnostics,
    compare_intervals,
    credible_interval,
    diagnose,
    posterior_metrics,
    posterior_summary,
    ppc_pvalue,
    sample,
)

matplotlib.use("Agg")

METRICS = ("pass@k", "pass^k", "auc@k")
EASY = ([1.0], [0.8], [1.6])  # one Beta component: mean 1/3, concentration 2.4




def sample_recorded(*args, **kwargs):
    """Run :func:`sample` and return it with the PosteriorWarning messages it raised."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        idata = sample(*args, **kwargs)
    return idata, [str(r.message) for r in rec if issubclass(r.category, PosteriorWarning)]


@pytest.fixture(scope="module")
def easy():
    """Large J from a known Beta: 4 chains x 1000 draws, weak prior."""
    counts = simulate_mixture(np.random.default_rng(11), 2000, 10, *EASY)
    res = passmix.fit(counts, n_components=1, seed=0)
    idata, messages = sample_recorded(res, draws=1000, chains=4, tune=500, seed=3,
                                      k=[1, 5, 10, 60])
    return res, idata, messages


@pytest.fixture(scope="module")
def small():
    """A small two-component run with varying m (structure tests)."""
    rng = np.random.default_rng(5)
    m = rng.choice([4, 8], size=400)
    counts = simulate_mixture(rng, 400, m, [0.5, 0.5], [1.0, 12.0], [8.0, 2.0])
    res = passmix.fit(counts, n_components=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PosteriorWarning)
        idata = sample(res, draws=300, chains=2, tune=300, seed=1)
    return res, idata


class TestWeakPriorModel:
    @pytest.mark.parametrize("h", [1, 2, 3])
    def test_logp_is_flat_logp_plus_normal_priors(self, h):
        rng = np.random.default_rng(h)
        y, m, weight = np.array([0, 2, 5]), np.array([5, 5, 5]), np.array([3.0, 4.0, 2.0])
        objective = get_objective(h)
        objective.set_data(y, m, weight)
        weak = build_model(h, prior="weak")
        pm.set_data(pair_data(y, m, weight), model=weak)
        logp = weak.compile_logp()
        z = rng.normal(0, 1, n_free_parameters(h))
        point, i, prior = {}, 0, 0.0
        for name in ("logit_weights", "logit_mean_first", "log_mean_gaps", "log_concentration"):
            size = {"logit_weights": h - 1, "logit_mean_first": 1, "log_mean_gaps": h - 1,
                    "log_concentration": h}[name]
            if size == 0:
                continue
            value = z[i:i + size]
            point[name] = value[0] if name == "logit_mean_first" else value
            mu, sigma = WEAK_PRIOR[name]
            prior += norm.logpdf(value, mu, sigma).sum()
            i += size
        assert logp(point) == pytest.approx(objective.logp_dlogp(z)[0] + prior, rel=1e-8)

    @pytest.mark.unit
    def test_unknown_prior(self):
        with pytest.raises(ValueError, match="unknown prior 'cauchy'"):
            build_model(1, prior="cauchy")


class TestSample:
    def test_groups_and_dims(self, small):
        res, idata = small
        assert {"posterior", "sample_stats", "observed_data", "posterior_predictive",
                "constant_data"} <= set(idata.children)
        post = idata.posterior
        assert post.sizes["chain"] == 2 and post.sizes["draw"] == 300
        assert post["weights"].dims == ("chain", "draw", "component")
        assert_array_equal(post["component"].values, [1, 2])
        assert post["pass_at_k"].dims == ("chain", "draw", "k")
        assert_array_equal(post["k"].values, passmix.bayes.sample.DEFAULT_K)
        assert post.attrs["passmix_prior"] == "weak"
        assert post.attrs["passmix_n_components"] == 2
        assert "diverging" in idata.sample_stats
        # ordered component means on every draw: no label switching
        mean = post["alpha"] / (post["alpha"] + post["beta"])
        assert bool((mean.diff("component") > 0).all())

    def test_metric_draws_are_the_metric_functions_on_the_draws(self, small):
        _, idata = small
        post = idata.posterior
        w, a, b = (post[v].transpose("chain", "draw", "component").values
                   for v in ("weights", "alpha", "beta"))
        for metric, name in passmix.bayes.sample.METRIC_VARS.items():
            assert_allclose(post[name].values,
                            metric_value(metric, w, a, b, passmix.bayes.sample.DEFAULT_K))
        other = posterior_metrics(idata, k=[2, 3000])
        assert set(other.data_vars) == {"pass_at_k", "pass_hat_k", "auc_at_k"}
        assert_allclose(other["pass_hat_k"].values, metric_value("pass^k", w, a, b, [2, 3000]))
        one = posterior_metrics(idata, k=7, metric="auc_at_k")
        assert one.dims == ("chain", "draw", "k") and one.name == "auc_at_k"

    def test_observed_and_predicted_histograms(self, small):
        res, idata = small
        obs = idata.observed_data["count_histogram"]
        assert_array_equal(obs["trials"].values, [4, 8])
        y, m = res.counts.successes, res.counts.trials
        for mm in (4, 8):
            expected = np.bincount(y[m == mm], minlength=9)
            assert_array_equal(obs.sel(trials=mm).values, expected)
            assert (obs.sel(trials=mm).values[mm + 1:] == 0).all()
        rep = idata.posterior_predictive["count_histogram"]
        assert rep.dims == ("chain", "draw", "trials", "successes")
        n = obs.sum("successes")
        assert bool((rep.sum("successes") == n).all())
        assert bool((rep.sel(trials=4).sel(successes=slice(5, None)) == 0).all())
        assert 0.0 <= ppc_pvalue(idata) <= 1.0

    def test_predictive_matches_task_level_simulation(self, small):
        """The multinomial shortcut equals drawing theta per task then a binomial."""
        _, idata = small
        post = idata.posterior
        rng = np.random.default_rng(0)
        w, a, b = (post[v].values[0, 0] for v in ("weights", "alpha", "beta"))
        n_tasks = int(idata.observed_data["count_histogram"].sel(trials=8).sum())
        sims = 4000
        comp = rng.choice(2, size=(sims, n_tasks), p=w)
        ys = rng.binomial(8, rng.beta(a[comp], b[comp]))
        mean_hist = np.stack([np.bincount(row, minlength=9) for row in ys]).mean(axis=0)
        expected = idata.posterior_predictive["expected_histogram"].values[0, 0, 1, :9]
        se = np.sqrt(expected * (1 - expected / n_tasks) / sims)
        assert np.all(np.abs(mean_hist - expected) <= 5 * se + 1e-9)

    @pytest.mark.slow
    def test_reproducible_with_seed(self):
        counts = simulate_mixture(np.random.default_rng(1), 100, 5, *EASY)
        res = passmix.fit(counts, n_components=1, seed=0)
        kw = dict(draws=100, chains=2, tune=100, seed=7, check=False)
        first, second = sample(res, **kw), sample(res, **kw)
        assert_allclose(first.posterior["log_concentration"].values,
                        second.posterior["log_concentration"].values, rtol=1e-12, atol=0)
        assert_array_equal(first.posterior_predictive["count_histogram"].values,
                           second.posterior_predictive["count_histogram"].values)

    def test_from_counts_and_other_h(self):
        counts = simulate_mixture(np.random.default_rng(2), 150, 6, *EASY)
        idata = sample(counts, draws=100, chains=2, tune=100, seed=1, n_components=1,
                       check=False)
        assert idata.posterior.sizes["component"] == 1
        # every H fitted, so the other H's optimum is the fit's own candidate
        res = passmix.fit(counts, seed=0, max_components=2, skip_hopeless=False)
        other = 2 if res.n_components == 1 else 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PosteriorWarning)
            idata = sample(res, draws=100, chains=2, tune=100, seed=1, n_components=other,
                           check=False)
        assert idata.posterior.sizes["component"] == other
        assert_allclose(idata.posterior.attrs["passmix_mle"], res.candidates[other].params)

    @pytest.mark.parametrize("kwargs, error, match", [
        ({"prior": "cauchy"}, ValueError, "unknown prior 'cauchy'"),
        ({"sampler": "stan"}, ValueError, "unknown sampler 'stan'"),
        ({"draws": 0}, ValueError, "draws must be >= 1, got 0"),
        ({"chains": 1.5}, TypeError, "chains must be a whole number"),
        ({"target_accept": 1.2}, ValueError, "target_accept must be in"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"k": [0]}, ValueError, "k must be >= 1"),
    ])
    def test_invalid_arguments(self, small, kwargs, error, match):
        res, _ = small
        with pytest.raises(error, match=match):
            sample(res, **kwargs)

    @pytest.mark.unit
    @pytest.mark.skipif(importlib.util.find_spec("nutpie") is None, reason="nutpie not installed")
    def test_nutpie_gives_the_same_posterior(self, easy):
        res, reference, _ = easy
        idata = sample(res, draws=1000, chains=4, tune=500, seed=3, k=[1, 5, 10, 60],
                       sampler="nutpie", check=False)
        assert idata.posterior.attrs["passmix_sampler"] == "nutpie"
        for name in ("pass_at_k", "pass_hat_k", "auc_at_k", "log_concentration"):
            ours = idata.posterior[name].mean(("chain", "draw")).values
            theirs = reference.posterior[name].mean(("chain", "draw")).values
            sd = reference.posterior[name].std(("chain", "draw")).values
            # both are Monte Carlo estimates with ESS >~ 1000: 5 combined MC errors
            assert np.all(np.abs(ours - theirs) <= 5 * sd * np.sqrt(2 / 1000)), name


class TestAgreementWithMLE:
    """Large J: the posterior concentrates where the likelihood does (Bernstein-von Mises)."""

    def test_easy_case_is_quiet(self, easy):
        _, idata, messages = easy
        assert messages == []
        assert idata.sample_stats.attrs["passmix_problems"] == []

    @pytest.mark.parametrize("metric", METRICS)
    def test_posterior_mean_close_to_mle(self, easy, metric):
        res, idata, _ = easy
        k = np.array([1, 5, 10, 60])
        draws = posterior_metrics(idata, k=k, metric=metric)
        sd = draws.std(("chain", "draw")).values
        mcse = np.asarray(az.mcse(draws.to_dataset(name="x"))["x"].values)
        # posterior mean - MLE is O(1/J) against sd O(1/sqrt(J)): allow 3 MC errors plus
        # a few sd / sqrt(J_eff), J_eff = J m / (1 + (m - 1) / (kappa + 1)) the
        # overdispersion-adjusted number of trials
        j, m, kappa = res.n_observed, 10, sum(EASY[1] + EASY[2])
        j_eff = j * m / (1 + (m - 1) / (kappa + 1))
        tol = 3 * mcse + 5 * sd / np.sqrt(j_eff)
        assert np.all(np.abs(draws.mean(("chain", "draw")).values - res.metric(metric, k))
                      <= tol), (metric, draws.mean(("chain", "draw")).values, res.metric(metric, k))

    @pytest.mark.parametrize("scale", ["logit", "identity"])
    def test_credible_intervals_agree_with_delta(self, easy, scale):
        res, idata, _ = easy
        table = compare_intervals(res, idata, k=[1, 5, 10, 60], scale=scale, profile=False)
        for _, row in table.iterrows():
            draws = posterior_metrics(idata, k=int(row["k"]), metric=row["metric"])
            ds = draws.to_dataset(name="x")
            sd = float(draws.std())
            mc = [float(az.mcse(ds, method="quantile", prob=p)["x"].squeeze())
                  for p in (0.025, 0.975)]
            # quantiles of a posterior with skewness g sit g (z^2 - 1) / 6 sd away from
            # mean +/- z sd (Cornish-Fisher); mean - MLE and sd - se are O(sd / sqrt(J_eff));
            # plus the Monte Carlo error of a 2.5% quantile
            values = draws.values.ravel()
            skew = np.mean((values - values.mean()) ** 3) / values.std() ** 3
            z = norm.ppf(0.975)
            j_eff = res.n_observed * 10 / (1 + 9 / (sum(EASY[1] + EASY[2]) + 1))
            tol = (3 * np.array(mc) + 1.5 * abs(skew) * (z**2 - 1) / 6 * sd
                   + 10 * sd / np.sqrt(j_eff))
            assert abs(row["credible_lower"] - row["delta_lower"]) <= tol[0], row
            assert abs(row["credible_upper"] - row["delta_upper"]) <= tol[1], row

    def test_flat_prior_matches_mle_when_data_dominate(self, easy):
        res, _, _ = easy
        idata, messages = sample_recorded(res, draws=500, chains=2, tune=300, seed=4,
                                          prior="flat", k=[1, 60])
        assert not [m for m in messages if "improper" in m]
        post = idata.posterior
        for name, mle in zip(("logit_mean_first", "log_concentration"), res.params):
            draws = post[name]
            assert abs(float(draws.mean()) - mle) <= 0.2 * float(draws.std()) + 0.02


class TestIntervals:
    def test_equal_tailed_is_the_quantiles(self, small):
        _, idata = small
        draws = idata.posterior["pass_at_k"].sel(k=60).values.ravel()
        lo, hi = credible_interval(idata, "pass@k", 60, level=0.9)
        assert (lo, hi) == pytest.approx(tuple(np.quantile(draws, [0.05, 0.95])))

    def test_hdi_is_no_wider_than_eti(self, small):
        _, idata = small
        k = [1, 10, 100, 1000]
        eti = credible_interval(idata, "pass^k", k)
        hdi = credible_interval(idata, "pass^k", k, method="hdi")
        # the shortest interval holding 95% of the draws; np.quantile interpolates between
        # draws, so allow 1% of the width for that
        assert np.all(hdi.upper - hdi.lower <= 1.01 * (eti.upper - eti.lower))
        draws = idata.posterior["pass_hat_k"].sel(k=k)
        assert np.all(hdi.lower >= draws.min(("chain", "draw")).values - 1e-15)

    def test_unstored_k_is_computed(self, small):
        _, idata = small
        lo, hi = credible_interval(idata, "auc@k", [3, 40])
        assert lo.shape == (2,) and np.all(lo < hi)

    def test_compare_intervals_table(self, small):
        res, idata = small
        table = compare_intervals(res, idata, k=[1, 60])
        assert list(table.columns) == ["metric", "k", "estimate", "profile_lower",
                                       "profile_upper", "delta_lower", "delta_upper",
                                       "posterior_mean", "credible_lower", "credible_upper"]
        # the profile beside them is the model's own, the model the draws are of
        own = res.profile("pass@k", [1, 60])
        assert_allclose(table["profile_lower"][:2], own.lower)
        assert_allclose(table["profile_upper"][:2], own.upper)
        assert (table["profile_lower"] <= table["estimate"]).all()
        assert (table["estimate"] <= table["profile_upper"]).all()
        assert "profile_lower" not in compare_intervals(res, idata, k=[1], profile=False)
        assert list(table["metric"]) == ["pass@k", "pass@k", "pass^k", "pass^k",
                                         "auc@k", "auc@k"]
        assert_allclose(table["estimate"][:2], res.pass_at_k([1, 60]))
        delta = res.delta("pass^k", [1, 60])
        assert_allclose(table["delta_lower"][2:4], delta.lower)
        lo, hi = credible_interval(idata, "auc@k", [1, 60])
        assert_allclose(table["credible_upper"][4:], hi)
        default = compare_intervals(res, idata)
        assert len(default) == 3 * len(passmix.bayes.sample.DEFAULT_K)

    def test_compare_needs_same_h(self, small):
        res, idata = small
        other = passmix.fit(res.counts, n_components=1, seed=0)
        with pytest.raises(ValueError, match="H = 1 components but idata was sampled with H = 2"):
            compare_intervals(other, idata)

    def test_summary_table(self, small):
        _, idata = small
        table = posterior_summary(idata, k=[1, 60])
        assert list(table.columns) == ["metric", "k", "posterior_mean", "posterior_sd",
                                       "eti_lower", "eti_upper", "hdi_lower", "hdi_upper",
                                       "r_hat", "ess_bulk", "ess_tail"]
        assert len(table) == 6 and (table["eti_lower"] <= table["posterior_mean"]).all()

    @pytest.mark.parametrize("call, error, match", [
        (lambda i: credible_interval(i, "pass@k", 5, method="mode"), ValueError,
         "unknown method 'mode'"),
        (lambda i: credible_interval(i, "pass@k", 5, level=95), ValueError, "level must be in"),
        (lambda i: credible_interval(i, "pass@n", 5), ValueError, "unknown metric 'pass@n'"),
        (lambda i: posterior_metrics(i.posterior), TypeError, "DataTree returned by"),
    ])
    def test_invalid_arguments(self, small, call, error, match):
        _, idata = small
        with pytest.raises(error, match=match):
            call(idata)


class TestArviZOnOneComponent:
    """ArviZ's summary, R-hat, ESS and trace plot run on an H = 1 posterior without a
    warning: the one weight, 1 on every draw, is not among the draws."""

    def test_no_constant_weight_and_no_warning(self, easy):
        import arviz_plots

        res, idata, _ = easy
        post = idata.posterior
        assert "weights" not in post and post.attrs["passmix_n_components"] == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            table = az.summary(idata, var_names=["alpha", "beta", "log_concentration",
                                                 "pass_at_k"])
            az.rhat(idata, var_names=["alpha", "beta"])
            az.ess(idata, var_names=["alpha", "beta"])
            arviz_plots.plot_trace_dist(idata, var_names=["alpha", "beta"])
        assert np.isfinite(table["r_hat"].astype(float)).all()
        # the metrics read weight 1: the closed form at every draw
        a, b = (post[v].transpose("chain", "draw", "component").values for v in ("alpha", "beta"))
        assert_allclose(posterior_metrics(idata, k=[7], metric="pass^k").values,
                        metric_value("pass^k", np.ones_like(a), a, b, [7]), rtol=1e-12)


class TestDiagnostics:
    def test_table(self, small):
        _, idata = small
        table = diagnose(idata)
        # named as ArviZ's summary names them: by component, 1..H (2..H for the gaps)
        assert list(table.index) == ["logit_weights[2]", "logit_mean_first", "log_mean_gaps[2]",
                                     "log_concentration[1]", "log_concentration[2]"]
        summary = az.summary(idata, var_names=list(passmix.bayes.checks.FREE_VARS))
        assert set(table.index) <= set(summary.index)
        assert_allclose(summary.loc[table.index, "r_hat"].astype(float), table["r_hat"],
                        atol=0.011)  # ArviZ rounds to 2 decimals
        assert {"r_hat", "ess_bulk", "ess_tail"} <= set(table.columns)
        assert table.attrs["divergences"] == int(idata.sample_stats["diverging"].sum())

    @pytest.mark.slow
    def test_hard_case_fires(self):
        """H = 3 on m = 2: eight parameters, two identified moments."""
        counts = simulate_mixture(np.random.default_rng(5), 200, 2, [0.6, 0.4], [0.6, 6.0], [4.0, 2.5])
        res = passmix.fit(counts, n_components=3, seed=0)
        idata, messages = sample_recorded(res, draws=300, chains=2, tune=300, seed=1, k=[60])
        assert any("identify only 2 moments" in m for m in messages)
        sampler_problems = [m for m in messages
                            if m.startswith(("r_hat", "bulk ESS", "tail ESS"))
                            or "divergent" in m]
        assert sampler_problems, messages
        assert set(idata.sample_stats.attrs["passmix_problems"]) == set(messages)

    def test_improper_flat_posterior_detected(self):
        """Binomial data (no over-dispersion): the concentration runs off under a flat prior."""
        rng = np.random.default_rng(3)
        counts = passmix.Counts(rng.binomial(5, np.full(30, 0.4)), np.full(30, 5))
        res = passmix.fit(counts, n_components=1, seed=0)
        _, messages = sample_recorded(res, draws=100, chains=2, tune=100, seed=1,
                                      prior="flat", k=[60], max_treedepth=6)
        improper = [m for m in messages if "improper" in m]
        assert any("log_concentration" in m and "prior='weak'" in m for m in improper)
        # both checks fire: the MLE on the bound (before sampling) and the draws (after)
        assert any("MLE is on it" in m for m in improper)
        assert any("appears improper" in m and "draws of" in m for m in improper)
        idata, messages = sample_recorded(res, draws=500, chains=2, tune=300, seed=1, k=[60])
        assert not [m for m in messages if "improper" in m]
        assert diagnose(idata)["r_hat"].max() < 1.05

    def test_check_diagnostics_thresholds(self, small):
        _, idata = small
        loose = check_diagnostics(idata, warn=False, r_hat_max=10.0, ess_min=1.0, ppc_alpha=0.0)
        assert all("divergent" in m for m in loose)
        with pytest.warns(PosteriorWarning, match="bulk ESS < 1e"):
            found = check_diagnostics(idata, ess_min=1e9)
        assert any(m.startswith("bulk ESS") for m in found)
        with pytest.warns(PosteriorWarning, match="posterior predictive check"):
            check_diagnostics(idata, ppc_alpha=1.01)


class TestPlots:
    def test_trace_and_rank(self, small):
        import matplotlib.pyplot as plt

        _, idata = small
        # ArviZ 1's PlotCollection: one row per sampled coordinate block, traces per chain
        pc = passmix.bayes.plots.plot_trace(idata)
        assert set(pc.viz["trace"].data_vars) == set(passmix.bayes.checks.FREE_VARS)
        assert pc.viz["trace"]["log_concentration"].sizes["chain"] == 2
        assert len(pc.viz["figure"].item().axes) == 2 * 4  # density and trace per block
        pc = passmix.bayes.plots.plot_rank(idata)
        assert set(pc.viz["ecdf_lines"].data_vars) == set(passmix.bayes.checks.FREE_VARS)
        plt.close("all")

    @pytest.mark.parametrize("metric", METRICS)
    def test_horizon(self, small, metric):
        import matplotlib.pyplot as plt

        res, idata = small
        ax = passmix.bayes.plots.plot_posterior_horizon(idata, metric, fit=res)
        labels = ax.get_legend_handles_labels()[1]
        assert any("credible" in s for s in labels) and any("delta-method" in s for s in labels)
        assert ax.get_xscale() == "log"
        plt.close("all")

    def test_ppc(self, small):
        import matplotlib.pyplot as plt

        _, idata = small
        ax = passmix.bayes.plots.plot_ppc_counts(idata, trials=8)
        assert len(ax.patches) == 9
        ax = passmix.bayes.plots.plot_ppc_counts(idata)
        assert ax.get_ylabel() == "tasks"
        with pytest.raises(ValueError, match="no task has 5 trials"):
            passmix.bayes.plots.plot_ppc_counts(idata, trials=5)
        plt.close("all")


def test_doctests():
    for module in (passmix.bayes.sample, passmix.bayes.plots):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, module.__name__


# -- coverage study ---------------------------------------------------------------------

#: Truth of the coverage study: the H = 1 fit of tau-bench gpt-4o airline (50 tasks x 4).
TAU = ([1.0], [0.64], [0.86])


@pytest.mark.slow
def test_coverage_j30_m5_k60():
    """95% credible intervals of the metrics at k = 60 cover 90-99% (J = 30, m = 5).

    100 replicates, fixed seeds; H chosen by BIC in each. The delta-method
    coverage on the same replicates (logit and identity scale) is printed
    beside it (run with ``-s`` to see the table).
    """
    n_rep, k = 100, 60
    truth = {metric: metric_value(metric, *TAU, k) for metric in METRICS}
    rng = np.random.default_rng(2025)
    hits = {}
    problems = 0
    for rep in range(n_rep):
        counts = simulate_mixture(rng, 30, 5, *TAU)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = passmix.fit(counts, seed=rep)
            idata = sample(res, draws=1000, chains=2, tune=500, seed=rep, k=[k], check=False)
            problems += bool(check_diagnostics(idata, warn=False, ppc_alpha=0.0))
            for metric, value in truth.items():
                for method in ("eti", "hdi"):
                    lo, hi = credible_interval(idata, metric, k, method=method)
                    hits.setdefault((metric, f"credible {method}"), []).append(lo <= value <= hi)
                for scale in ("logit", "identity"):
                    d = res.delta(metric, k, scale=scale)
                    hits.setdefault((metric, f"delta {scale}"), []).append(
                        d.lower[0] <= value <= d.upper[0])
    table = pd.Series({key: np.mean(v) for key, v in hits.items()}).unstack()
    print(f"\ncoverage of 95% intervals at k = {k}, J = 30, m = 5, {n_rep} replicates "
          f"({problems} with a sampler diagnostic):\n{table}")
    for metric in METRICS:
        assert 0.90 <= table.loc[metric, "credible eti"] <= 0.99, table


@pytest.mark.unit
def test_predictive_pmf_equals_scipy_betabinom_with_tiny_beta():
    """y = m keeps its mass when beta is far below double rounding of beta + m."""
    from scipy.stats import betabinom

    from passmix.bayes.sample import _mixture_pmf

    w, a, b = np.array([0.5, 0.5]), np.array([1.0, np.exp(3.0)]), np.array([5.0, np.exp(-37.0)])
    y = np.arange(11)
    want = (w * betabinom.pmf(y[:, None], 10, a, b)).sum(axis=1)
    np.testing.assert_allclose(_mixture_pmf(w, a, b, 10), want, rtol=1e-9, atol=1e-15)


def test_h1_posterior_equals_grid_quadrature():
    """NUTS against an exact posterior: H = 1 has two coordinates, integrated on a grid.

    The grid posterior is written here from scipy.stats.betabinom and the
    documented weak prior, independently of the PyMC graph.
    """
    from scipy.special import expit, logsumexp
    from scipy.stats import betabinom

    rng = np.random.default_rng(17)
    counts = simulate_mixture(rng, 30, 5, [1.0], [0.7], [1.2])
    y, m, n = counts.pairs()
    # the integrand is smooth: this grid agrees with one 3x finer in each axis to 1e-13
    eta = np.linspace(-6.0, 6.0, 121)
    log_kappa = np.linspace(-7.0, 9.0, 161)
    e, lk = np.meshgrid(eta, log_kappa, indexing="ij")
    alpha, beta = np.exp(lk) * expit(e), np.exp(lk) * expit(-e)
    loglik = sum(c * betabinom.logpmf(yi, mi, alpha, beta) for yi, mi, c in zip(y, m, n))
    (mu_e, sd_e), (mu_k, sd_k) = WEAK_PRIOR["logit_mean_first"], WEAK_PRIOR["log_concentration"]
    log_post = loglik + norm.logpdf(e, mu_e, sd_e) + norm.logpdf(lk, mu_k, sd_k)
    weight = np.exp(log_post - logsumexp(log_post))
    k = np.array([1, 10, 60])
    grid_mean = {metric: np.tensordot(weight, metric_value(metric, np.ones(e.shape + (1,)),
                                                           alpha[..., None], beta[..., None], k),
                                      axes=([0, 1], [0, 1]))
                 for metric in ("pass@k", "pass^k", "auc@k")}

    res = passmix.fit(counts, n_components=1, seed=0)
    idata, _ = sample_recorded(res, draws=1000, chains=4, seed=3, k=list(k))
    for metric, want in grid_mean.items():
        draws = passmix.posterior_metrics(idata, k=k, metric=metric)
        got = draws.mean(("chain", "draw")).values
        mcse = np.array([float(az.mcse(draws.sel(k=kk), method="mean")) for kk in k])
        assert np.all(np.abs(got - want) < 4 * mcse + 1e-4), (metric, got, want, mcse)
