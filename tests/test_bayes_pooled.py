"""NUTS for the pooled model: metrics of known success probabilities, and the posterior
against the maximum-likelihood fit (Bernstein-von Mises) on simulated panels."""

import warnings

import arviz as az
import mpmath as mp
import numpy as np
import pandas as pd
import xarray as xr
import pytest
from numpy.testing import assert_allclose

import passmix
from passmix.data.panel import Panel
from passmix.bayes.pooled import point_metric, pooled_fit, sample_pooled

from conftest import simulate_panel


@pytest.mark.unit
@pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
def test_point_metric_by_enumeration(metric):
    p = np.array([0.0, 1e-9, 0.03, 0.5, 0.97, 1.0])
    k = np.array([1, 2, 7, 40])
    got = point_metric(metric, p, k)
    assert got.shape == (6, 4)
    mp.mp.dps = 50
    for i, pi in enumerate(p):
        q = 1 - mp.mpf(pi)
        for n, kk in enumerate(k):
            if metric == "pass@k":
                want = 1 - q ** kk
            elif metric == "pass^k":
                want = mp.mpf(pi) ** kk
            else:  # the mean of Pass@r over r = 1..k, summed term by term
                want = mp.fsum(1 - q ** r for r in range(1, kk + 1)) / kk
            assert got[i, n] == pytest.approx(float(want), rel=1e-9, abs=1e-300)


@pytest.mark.unit
def test_bad_arguments_are_named():
    panel = Panel([[1, 2], [0, 3]], [[3, 3], [3, 3]])
    with pytest.raises(ValueError, match="draws"):
        sample_pooled(panel, draws=0)
    with pytest.raises(ValueError, match="target_accept"):
        sample_pooled(panel, target_accept=1.5)
    with pytest.raises(ValueError, match="seed must be an int"):
        sample_pooled(panel, seed=np.random.default_rng(0))
    from passmix.models.pooled import build_pooled_model, panel_layout

    with pytest.raises(ValueError, match="unknown prior 'vague'"):
        build_pooled_model(panel_layout(panel), "normal", prior="vague")


@pytest.mark.slow
def test_posterior_agrees_with_the_fit_where_the_data_are_many(capfd):
    """With 3 systems x 100 tasks x 10 trials the posterior is near normal around the
    MLE (Bernstein-von Mises): its means are the fit's estimates and its intervals the
    delta method's, two computations that share nothing but the likelihood."""
    rng = np.random.default_rng(3)
    a = np.array([-0.8, 0.0, 0.8])
    y, m, p = simulate_panel(rng, a, [20.0, 20.0, 20.0], rng.normal(0.5, 1.5, 100), 10)
    capfd.readouterr()
    post = sample_pooled(Panel(y, m, systems=["x", "y", "z"]), draws=400, tune=400,
                         chains=2, seed=0, grid=np.linspace(-12, 14, 53))
    # quiet, as passmix.sample is: none of PyMC's progress lines
    said = capfd.readouterr()
    assert "NUTS" not in said.err + said.out and "Sampling" not in said.err + said.out
    # ArviZ reads the draws without a warning, dims named by the systems
    assert "ability" not in post.posterior
    assert post.posterior["abilities"].dims == ("chain", "draw", "system")
    assert list(post.posterior["abilities"]["system"].values) == ["x", "y", "z"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = az.summary(post, var_names=["abilities", "log_concentration"])
    assert "abilities[y]" in summary.index
    fit = pooled_fit(post)
    assert isinstance(post, xr.DataTree) and isinstance(fit, passmix.PooledFit)
    diag = passmix.bayes.diagnose(post)
    assert (diag["r_hat"] < 1.05).all()
    assert (diag["ess_bulk"] > 100).all()
    abilities = post.posterior["abilities"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(abilities, fit.abilities, atol=0.1)
    table = passmix.compare_intervals(fit, post, k=[1, 10])
    np.testing.assert_allclose(table["posterior_mean"], table["estimate"], atol=0.012)
    np.testing.assert_allclose(table["credible_lower"], table["delta_lower"], atol=0.02)
    np.testing.assert_allclose(table["credible_upper"], table["delta_upper"], atol=0.02)
    assert (table["credible_lower"] <= table["posterior_mean"]).all()
    assert (table["posterior_mean"] <= table["credible_upper"]).all()
    draws = passmix.posterior_metrics(post, [1, 10], metric="pass@k")
    assert draws.dims == ("chain", "draw", "system", "k") and draws.shape == (2, 400, 3, 2)
    # Pass@1 draws are the tasks' mean success: near the systems' observed rates
    observed = (y / m).mean(axis=1)
    np.testing.assert_allclose(draws.sel(k=1).mean(("chain", "draw")), observed, atol=0.01)
    assert post.sample_stats.attrs["passmix_problems"] == []


def test_weak_prior_model_with_slopes():
    """The sampled model's variables are the fit's blocks, the log-slopes zero-sum like the
    abilities (their mean is not identified)."""
    import pymc as pm

    from passmix.models.pooled import block_names, build_pooled_model, panel_layout

    panel = Panel([[1, 2, 0], [0, 3, 1]], [[3, 3, 3], [3, 3, 3]])
    model = build_pooled_model(panel_layout(panel), "normal", prior="weak", slope=True)
    assert [rv.name for rv in model.free_RVs] == list(block_names("normal", True))
    kinds = {rv.name: rv.owner.op for rv in model.free_RVs}
    assert isinstance(kinds["log_slope"], type(kinds["ability"]))
    assert "slopes" in model.named_vars
    with pytest.raises(ValueError, match="slope must be"):
        sample_pooled(panel, slope="sometimes")
    # a zero-sum draw: the log-slopes' prior draws sum to 0
    draws = pm.draw(model["log_slope"], draws=5, random_seed=0)
    np.testing.assert_allclose(draws.sum(axis=1), 0.0, atol=1e-12)


@pytest.mark.slow
def test_posterior_with_slopes_agrees_with_the_fit():
    """Slopes sampled by NUTS (3 systems x 150 tasks x 10 trials): the posterior is near
    normal around the MLE, so its slopes' means are the fit's and R-hat is near 1."""
    rng = np.random.default_rng(4)
    a, log_s = np.array([-0.8, 0.0, 0.8]), np.array([-0.3, 0.0, 0.3])
    d = rng.normal(0.5, 1.5, 150)
    mu = 1 / (1 + np.exp(-(a[:, None] - np.exp(log_s)[:, None] * d[None, :])))
    p = rng.beta(mu * 50.0, (1 - mu) * 50.0)
    y, m = rng.binomial(10, p), np.full(p.shape, 10)
    post = sample_pooled(Panel(y, m), slope=True, draws=400, tune=400, chains=2, seed=0,
                         grid=np.linspace(-12, 14, 53))
    fit = pooled_fit(post)
    assert fit.slope
    diag = passmix.bayes.diagnose(post)
    assert (diag["r_hat"] < 1.05).all() and (diag["ess_bulk"] > 100).all()
    assert any(label.startswith("log_slope") for label in diag.index)
    slopes = post.posterior["slopes"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(slopes, fit.slopes, atol=0.06)
    table = passmix.compare_intervals(fit, post, k=[1, 10])
    np.testing.assert_allclose(table["posterior_mean"], table["estimate"], atol=0.015)


@pytest.fixture(scope="module")
def pinned():
    """Draws of the pooled model held at the maximum-likelihood fit (every draw the MLE,
    as the posterior of endless data would be), recorded as sample_pooled records them:
    the statistics over draws without running NUTS."""
    from passmix.bayes.pooled import _record
    from passmix.models.pooled import block_names, split_blocks

    rng = np.random.default_rng(7)
    y, m, _ = simulate_panel(rng, np.array([-1.0, 0.0, 1.0]), [15.0] * 3,
                             rng.normal(0.5, 1.5, 60), 8)
    fit = passmix.fit_pooled(Panel(y, m, systems=["a", "b", "c"]), seed=0,
                             concentration="system")
    blocks = split_blocks(fit.params, fit.blocks())
    chains, draws = 2, 150
    posterior = {name: np.broadcast_to(blocks[name], (chains, draws, blocks[name].size))
                 for name in block_names(fit.family, fit.slope) if np.size(blocks.get(name, ()))}
    posterior["abilities"] = np.broadcast_to(fit.abilities, (chains, draws, 3))
    # as PyMC records them, with its own constant_data (the model's data containers)
    idata = az.from_dict({"posterior": posterior, "sample_stats": {
        "diverging": np.zeros((chains, draws), dtype=bool)},
        "constant_data": {"pair_y": np.arange(3.0), "grid": np.zeros(2)}})
    return _record(idata, fit, seed=3, check=False), fit


def test_pooled_draws_are_a_datatree_read_by_the_shared_functions(pinned, tmp_path):
    post, fit = pinned
    assert isinstance(post, xr.DataTree)
    k = [1, 10, 100]
    draws = passmix.posterior_metrics(post, k, metric="pass@k")
    assert draws.dims == ("chain", "draw", "system", "k") and draws.shape == (2, 150, 3, 3)
    # at the MLE, only the tasks' success probabilities are drawn: the draws' mean is the
    # fit's estimate (Monte Carlo error ~ 1 / sqrt(300 draws x 60 tasks))
    assert_allclose(draws.mean(("chain", "draw")).values,
                    fit.metric("pass@k", k), atol=0.01)
    ci = passmix.credible_interval(post, "pass@k", k)
    assert ci.lower.shape == (3, 3) and np.all(ci.lower <= ci.upper)
    one = passmix.credible_interval(post, "pass@k", 10)
    assert_allclose(one.lower, ci.lower[:, 1]) and one.lower.shape == (3,)
    summary = passmix.bayes.posterior_summary(post, k=k)
    assert list(summary.columns[:3]) == ["system", "metric", "k"] and len(summary) == 27
    table = passmix.compare_intervals(fit, post, k=k)
    profile = pd.concat([fit.profile(mm, k) for mm in ("pass@k", "pass^k", "auc@k")])
    assert_allclose(table["profile_lower"].to_numpy(), profile["lower"].to_numpy())
    assert_allclose(table["profile_upper"].to_numpy(), profile["upper"].to_numpy())
    assert_allclose(table["estimate"].to_numpy(),
                    pd.concat([fit.delta(mm, k) for mm in ("pass@k", "pass^k", "auc@k")])
                    ["estimate"].to_numpy())
    assert_allclose(table["posterior_mean"], table["estimate"], atol=0.01)
    # stored horizons (1, 10, 100, 1000) and recomputed ones agree: one seed for the tasks
    stored = post.posterior["pass_at_k"].sel(k=k).values
    assert_allclose(passmix.posterior_metrics(post, [1, 10, 100, 7], metric="pass@k")
                    .sel(k=k).values, stored, rtol=1e-12)
    # written and read back, the record rebuilds the same fit and the same draws
    path = tmp_path / "post.nc"
    post.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert_allclose(pooled_fit(back).metric("pass^k", k),
                    fit.metric("pass^k", k), rtol=1e-12)
    assert_allclose(passmix.posterior_metrics(back, [7], metric="auc@k").values,
                    passmix.posterior_metrics(post, [7], metric="auc@k").values, rtol=1e-12)
    with pytest.raises(TypeError, match="PooledFit"):
        passmix.compare_intervals(passmix.fit(passmix.Counts([1, 2], [3, 3]), seed=0), post)
    with pytest.raises(ValueError, match="mixture"):
        passmix.bayes.ppc_pvalue(post)
    diag = passmix.bayes.diagnose(post, ["pass_at_k"])
    assert "pass_at_k[b, 100]" in diag.index
    # one record of the abilities, by system name, as ArviZ's summary names them
    assert "ability" not in post.posterior
    assert post.posterior["abilities"].dims == ("chain", "draw", "system")
    assert list(post.posterior["abilities"]["system"].values) == ["a", "b", "c"]
    assert "abilities[b]" in passmix.bayes.diagnose(post, ["abilities"]).index


def test_labels_that_collide_as_strings_are_an_error(pinned):
    from passmix.bayes.pooled import _record

    _, fit = pinned
    panel = Panel(fit.panel.successes, fit.panel.trials, systems=[("a", "b"), "a/b", "c"])
    clash = passmix.PooledFit.from_parameters(panel, fit.family, fit.grid, fit.params,
                                              concentration=fit.concentration)
    with pytest.raises(ValueError, match="distinct as strings"):
        _record(az.from_dict({"posterior": {"ability": np.zeros((1, 2, 3))}}), clash, 0, False)


def test_a_pooled_posterior_plots_one_system(pinned):
    import matplotlib

    matplotlib.use("Agg")
    from passmix.bayes.plots import plot_posterior_horizon

    post, fit = pinned
    ax = plot_posterior_horizon(post, "pass@k", [1, 10, 100], fit=fit, system="b")
    mean = ax.get_lines()[0].get_ydata()
    draws = passmix.posterior_metrics(post, [1, 10, 100], metric="pass@k")
    assert_allclose(mean, draws.sel(system="b").mean(("chain", "draw")).values)
    with pytest.raises(ValueError, match="name the system"):
        plot_posterior_horizon(post, "pass@k", [1, 10])


def test_rank_says_it_takes_counts_or_a_fit_not_draws(pinned):
    post, fit = pinned
    with pytest.raises(ValueError, match="rank takes counts or a pooled fit"):
        passmix.rank(post, 10)
    # the fit the draws started from ranks
    assert passmix.rank(fit, 10).method == "pooled"
