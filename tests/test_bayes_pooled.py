"""NUTS for the pooled model: metrics of known success probabilities, and the posterior
against the maximum-likelihood fit (Bernstein-von Mises) on simulated panels."""

import mpmath as mp
import numpy as np
import pytest

import passmix
from passmix.data.panel import Panel
from passmix.bayes.pooled import point_metric, sample_pooled

from conftest import simulate_panel


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
def test_posterior_agrees_with_the_fit_where_the_data_are_many():
    """With 3 systems x 100 tasks x 10 trials the posterior is near normal around the
    MLE (Bernstein-von Mises): its means are the fit's estimates and its intervals the
    delta method's, two computations that share nothing but the likelihood."""
    rng = np.random.default_rng(3)
    a = np.array([-0.8, 0.0, 0.8])
    y, m, p = simulate_panel(rng, a, [20.0, 20.0, 20.0], rng.normal(0.5, 1.5, 100), 10)
    post = sample_pooled(Panel(y, m), draws=400, tune=400, chains=2, seed=0,
                         grid=np.linspace(-12, 14, 53))
    diag = post.diagnose()
    assert (diag["r_hat"] < 1.05).all()
    assert (diag["ess_bulk"] > 100).all()
    abilities = diag.loc[[f"abilities[{i}]" for i in range(3)], "mean"].to_numpy()
    np.testing.assert_allclose(abilities, post.fit.abilities, atol=0.1)
    table = post.summary(k=[1, 10])
    np.testing.assert_allclose(table["mean"], table["estimate"], atol=0.012)
    np.testing.assert_allclose(table["lower"], table["delta_lower"], atol=0.02)
    np.testing.assert_allclose(table["upper"], table["delta_upper"], atol=0.02)
    assert (table["lower"] <= table["mean"]).all() and (table["mean"] <= table["upper"]).all()
    draws = post.metric_draws("pass@k", [1, 10])
    assert draws.shape == (800, 6)
    # Pass@1 draws are the tasks' mean success: near the systems' observed rates
    observed = (y / m).mean(axis=1)
    np.testing.assert_allclose(draws.xs(1, axis=1, level="k").mean(), observed, atol=0.01)
    assert isinstance(post.fit, passmix.PooledFit)


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
    assert post.fit.slope
    diag = post.diagnose()
    assert (diag["r_hat"] < 1.05).all() and (diag["ess_bulk"] > 100).all()
    slopes = post.idata.posterior["slopes"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(slopes, post.fit.slopes, atol=0.06)
    assert post.coordinates().shape == (800, post.fit.params.size)
    table = post.summary(k=[1, 10])
    np.testing.assert_allclose(table["mean"], table["estimate"], atol=0.015)
