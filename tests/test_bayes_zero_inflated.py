"""The zero-inflated mixture's Bayesian path: the generic sampler on its PyMC model.

Truth: an exact posterior on a grid (H = 1 has three coordinates), written
here from scipy's beta-binomial and the documented priors; numerical
integration of the metrics over a mixture with an atom; the predictive
histogram from scipy; and, in the slow lane, coverage on the issue's study
(30% impossible tasks).
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy.special import expit, logsumexp
from scipy.stats import beta as beta_dist
from scipy.stats import betabinom, norm

import passmix
from passmix import PosteriorWarning
from passmix.bayes.checks import diagnose
from passmix.bayes.stats import (compare_intervals, credible_interval, posterior_metrics,
                                 posterior_summary)
from passmix.metrics import metric_value
from passmix.models.mixture.parameters import WEAK_PRIOR
from passmix.models.zero_inflated.model import ZERO_PRIOR

METRICS = ("pass@k", "pass^k", "auc@k")


def _simulate(seed: int, share: float = 0.3, n_tasks: int = 300, trials: int = 50):
    """A share of impossible tasks, the rest Beta(1, 3)."""
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(n_tasks) < share, 0.0, rng.beta(1.0, 3.0, n_tasks))
    return passmix.Counts(rng.binomial(trials, theta), np.full(n_tasks, trials))


@pytest.fixture(scope="module")
def small_atom():
    """40 tasks x 5 trials, a third impossible: H = 1, 4 chains x 1000 draws."""
    counts = _simulate(7, share=0.35, n_tasks=40, trials=5)
    res = passmix.fit(counts, zero_inflated=True, n_components=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PosteriorWarning)
        idata = passmix.sample(res, draws=1000, chains=4, tune=700, seed=3, k=[1, 10, 60])
    return res, idata


@pytest.mark.unit
def test_metric_draws_are_the_closed_forms_with_the_atom():
    """(1 - pi) times the Beta's metric, against integration over the mixture with an atom."""
    zero = np.array([[0.2, 0.5]])
    alpha, beta = np.array([[[0.7], [2.0]]]), np.array([[[3.0], [1.5]]])
    dims = ("chain", "draw", "component")
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({
        "weights": (dims, np.ones((1, 2, 1))), "alpha": (dims, alpha), "beta": (dims, beta),
        "zero_weight": (("chain", "draw"), zero)}, attrs={"passmix_model": "zero_inflated"})})
    k = np.array([1, 7, 40])
    drawn = posterior_metrics(tree, k=k)

    def integral(f, a, b):
        return integrate.quad(lambda t: f(t) * beta_dist.pdf(t, a, b), 0, 1, limit=200,
                              epsabs=1e-12)[0]

    for d in range(2):
        a, b, pi = alpha[0, d, 0], beta[0, d, 0], zero[0, d]
        for i, kk in enumerate(k):
            want = {
                "pass_at_k": integral(lambda t: 1 - (1 - t) ** kk, a, b),
                "pass_hat_k": integral(lambda t: t ** kk, a, b),
                "auc_at_k": np.mean([integral(lambda t: 1 - (1 - t) ** r, a, b)
                                     for r in range(1, kk + 1)]),
            }
            for var, value in want.items():
                assert float(drawn[var][0, d, i]) == pytest.approx((1 - pi) * value, rel=1e-7)


@pytest.mark.unit
def test_draws_of_an_unknown_model_are_refused():
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {v: (("chain", "draw", "component"), np.ones((1, 1, 1)))
         for v in ("weights", "alpha", "beta")}, attrs={"passmix_model": "hurdle"})})
    with pytest.raises(ValueError, match="unknown model 'hurdle'"):
        posterior_metrics(tree, k=5)


@pytest.mark.slow
def test_h1_posterior_equals_grid_quadrature(small_atom):
    """NUTS against the exact posterior of H = 1 with the atom, integrated on a 3-d grid.

    At m = 5 an unsolved task may be in the atom or low in the Beta, and the
    prior leaves mass down to weight 0: the posterior has a long arm along
    ``logit_zero`` that 4 x 1000 draws under-visit (the atom's mean weight
    0.045 against 0.075, with r_hat 1.005), so this check draws 4 x 3000."""
    res, _ = small_atom
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PosteriorWarning)
        idata = passmix.sample(res, draws=3000, chains=4, tune=2000, seed=3, k=[1, 10, 60],
                               target_accept=0.95)
    assert idata.posterior.attrs["passmix_model"] == "zero_inflated"
    y, m, n = res.counts.pairs()
    # this grid's posterior means agree with those of one twice as fine in each axis to 2e-6
    eta = np.linspace(-8.0, 8.0, 65)
    log_kappa = np.linspace(-7.0, 9.0, 65)
    t = np.linspace(-20.0, 6.0, 105)
    e, lk, tt = np.meshgrid(eta, log_kappa, t, indexing="ij")
    alpha, beta, pi = np.exp(lk) * expit(e), np.exp(lk) * expit(-e), expit(tt)
    loglik = sum(c * np.log(np.where(yi == 0, pi, 0.0)
                            + (1 - pi) * betabinom.pmf(yi, mi, alpha, beta))
                 for yi, mi, c in zip(y, m, n))
    (mu_e, sd_e), (mu_k, sd_k) = WEAK_PRIOR["logit_mean_first"], WEAK_PRIOR["log_concentration"]
    log_post = (loglik + norm.logpdf(e, mu_e, sd_e) + norm.logpdf(lk, mu_k, sd_k)
                + norm.logpdf(tt, *ZERO_PRIOR))
    weight = np.exp(log_post - logsumexp(log_post))
    # the grid holds the posterior: its edges carry no mass
    for axis in range(3):
        edges = weight.sum(axis=tuple(i for i in range(3) if i != axis))
        assert edges[0] < 1e-4 and edges[-1] < 1e-4
    k = np.array([1, 10, 60])
    for metric in METRICS:
        values = (1 - pi)[..., None] * metric_value(metric, np.ones(e.shape + (1,)),
                                                    alpha[..., None], beta[..., None], k)
        want = np.tensordot(weight, values, axes=([0, 1, 2], [0, 1, 2]))
        draws = posterior_metrics(idata, k=k, metric=metric)
        got = draws.mean(("chain", "draw")).values
        mcse = np.array([float(az.mcse(draws.sel(k=kk), method="mean")) for kk in k])
        assert np.all(np.abs(got - want) < 4 * mcse + 1e-4), (metric, got, want, mcse)
    zero = idata.posterior["zero_weight"]
    assert abs(float(zero.mean()) - float(np.sum(weight * pi))) < \
        4 * float(az.mcse(zero, method="mean")) + 1e-4


def test_predictive_is_the_mixture_with_its_atom(small_atom):
    _, idata = small_atom
    pp = idata.posterior_predictive
    post = idata.posterior.sel(draw=pp["draw"].values)
    trials = int(pp["trials"].values[0])
    y = np.arange(trials + 1)
    pi = post["zero_weight"].values[..., None]
    a, b = post["alpha"].values[..., 0, None], post["beta"].values[..., 0, None]
    pmf = (1 - pi) * betabinom.pmf(y, trials, a, b) + pi * (y == 0)
    n_tasks = int(idata.observed_data["count_histogram"].sum())
    np.testing.assert_allclose(pp["expected_histogram"].values[:, :, 0, :], n_tasks * pmf,
                               rtol=1e-9, atol=1e-12)
    assert (pp["count_histogram"].sum(("trials", "successes")) == n_tasks).all()


def test_tables_and_diagnostics_read_the_atom(small_atom):
    res, idata = small_atom
    table = compare_intervals(res, idata, k=[1, 60])
    assert len(table) == 6
    ends = table[["credible_lower", "credible_upper", "delta_lower", "delta_upper"]]
    assert np.all((ends.to_numpy() >= 0) & (ends.to_numpy() <= 1))
    # the two intervals of the same model overlap (Pass^60, about 1e-10 here, aside)
    assert np.all(table["credible_lower"] < table["delta_upper"] + 1e-6)
    assert np.all(table["delta_lower"] < table["credible_upper"] + 1e-6)
    summary = posterior_summary(idata, k=[60])
    assert (summary["r_hat"] < 1.02).all()
    assert "logit_zero" in diagnose(idata).index
    with pytest.raises(TypeError, match="ZeroInflatedFit"):
        compare_intervals(res.plain, idata)


@pytest.mark.unit
def test_a_bad_or_contradicting_option_is_refused_before_sampling():
    with pytest.raises(ValueError, match="zero_inflated must be"):
        passmix.sample(passmix.Counts([0, 1, 2], [3, 3, 3]), zero_inflated="yes")


def test_a_fit_is_sampled_as_its_own_model(small_atom):
    res, _ = small_atom
    with pytest.raises(ValueError, match="fit's own model is sampled"):
        passmix.sample(res.plain, zero_inflated=True)
    with pytest.raises(ValueError, match="fit's own model is sampled"):
        passmix.sample(res, zero_inflated=False)


@pytest.mark.unit
def test_the_sampling_model_places_the_atom_last():
    from passmix.models.zero_inflated.model import bounds, get_sampling_model

    sm = get_sampling_model(2, "weak")
    assert [name for name, _ in sm.blocks] == ["logit_weights", "logit_mean_first",
                                               "log_mean_gaps", "log_concentration",
                                               "logit_zero"]
    assert sm.n_parameters == 6 == bounds(2).shape[0]
    point = sm.as_point(np.arange(6.0))
    assert point["logit_zero"] == 5.0 and point["logit_mean_first"] == 1.0
    np.testing.assert_array_equal(point["log_concentration"], [3.0, 4.0])
    lo, hi = sm.prior_box()
    assert lo[-1] == pytest.approx(ZERO_PRIOR[0] - 3 * ZERO_PRIOR[1])
    assert hi[-1] == pytest.approx(ZERO_PRIOR[0] + 3 * ZERO_PRIOR[1])


@pytest.mark.slow
def test_another_h_is_fitted_then_sampled(small_atom):
    res, _ = small_atom
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PosteriorWarning)
        idata = passmix.sample(res, n_components=2, draws=100, chains=2, tune=100, seed=0,
                               k=[10], check=False)
    assert idata.posterior.attrs["passmix_model"] == "zero_inflated"
    assert idata.posterior.sizes["component"] == 2
    assert "zero_weight" in idata.posterior


def test_counts_with_zero_inflated_are_fitted_then_sampled():
    counts = _simulate(9, n_tasks=30, trials=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PosteriorWarning)
        idata = passmix.sample(counts, zero_inflated=True, n_components=1, draws=200,
                               chains=2, tune=200, seed=1, k=[10])
    assert idata.posterior.attrs["passmix_model"] == "zero_inflated"
    assert {"logit_zero", "zero_weight"} <= set(idata.posterior.data_vars)
    lo, hi = credible_interval(idata, "pass@k", 10)
    assert 0 <= lo < hi <= 1


@pytest.mark.slow
@pytest.mark.parametrize("share, first, least", [(0.3, 1000, 9), (0.0, 2000, 8)])
def test_credible_intervals_cover_on_the_issue_study(share, first, least):
    """J = 300, m = 50, the rest Beta(1, 3), 10 replicates: the 95% credible interval of
    Pass@1000 holds the truth in at least `least` (measured: 10 of 10 with 30% impossible
    tasks, 9 of 10 with none), and its posterior mean errs by <= 0.03 on average.

    With no atom in the truth the posterior of its weight cannot reach 0; the prior
    (Normal(-6, 3) on its logit) keeps mass near it, so Pass@1000 near 1 stays covered."""
    truth = (1.0 - share) * (1.0 - 3.0 / 1003.0)
    covered, errors = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rep in range(10):
            res = passmix.fit(_simulate(first + rep, share=share), zero_inflated=True)
            idata = passmix.sample(res, draws=500, chains=2, tune=500, seed=rep, k=[1000],
                                   check=False)
            lo, hi = credible_interval(idata, "pass@k", 1000)
            covered += lo <= truth <= hi
            errors.append(abs(float(idata.posterior["pass_at_k"].mean()) - truth))
    assert covered >= least, covered
    assert np.mean(errors) <= 0.03, errors
