"""The pooled model (systems x tasks): likelihood, recovery, metrics, panel input.

Independent truths: scipy's beta-binomial pmf and numerical integration over
the continuous difficulty and success probability; simulation with known
abilities, concentrations and difficulty distribution; Monte Carlo draws from
each task's posterior for the metrics.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats
from scipy.special import expit, log_softmax, logsumexp

import passmix
from passmix.data.panel import Panel
from passmix.models.pooled import (DEFAULT_GRID, PooledSystem, fit_pooled, get_pooled_objective,
                                   heldout_loglik, panel_layout, task_grid_loglik)
from passmix.models.pooled import coordinate_blocks
from passmix.estimators.base import FittedResult

from conftest import simulate_panel

N_SYS = 3  # one panel width throughout, so the compiled objective is reused


def assert_gradient_by_differences(obj, z, coords):
    """The compiled gradient in `coords` against central differences of the compiled logp."""
    _, grad = obj.logp_dlogp(z)
    for c in coords:
        up, down = z.copy(), z.copy()
        up[c] += 1e-6
        down[c] -= 1e-6
        assert grad[c] == pytest.approx(
            (obj.logp_dlogp(up)[0] - obj.logp_dlogp(down)[0]) / 2e-6, rel=1e-5, abs=1e-6)


def assert_delta_gradient_by_differences(fit, metric, k):
    """The delta method's gradient (posterior derivative and metric analytic) against
    differencing the metric's logit itself in every coordinate it uses; returns its logits."""
    # the coordinates the delta method uses: not those held on a bound (a concentration
    # at e^14, where the likelihood is flat to ~1e-7 and so is any difference)
    active = np.diag(fit.covariance_matrix()) > 0
    grads, centre = fit.logit_gradients(metric, k, active)
    # checked: not, among them, those just short of a bound or with a standard error above
    # 10, where the likelihood is just as flat: from a cold numba cache (an optimum that
    # differs from a warm one's by ~1e-6) one such coordinate missed by 0.2% in CI
    box = fit.box()
    active &= (fit.params > box[:, 0] + 0.01) & (fit.params < box[:, 1] - 0.01)
    active &= np.diag(fit.covariance_matrix()) < 100.0

    def central(c, step):
        up, down = fit.params.copy(), fit.params.copy()
        up[c] += step
        down[c] -= step
        return (fit.metric_logits(metric, k, up) - fit.metric_logits(metric, k, down)) / (2 * step)

    for c in np.flatnonzero(active):
        # Richardson's extrapolation of two central differences: accurate to ~h^4,
        # so steps large enough that rounding stays below the tolerance (the metric
        # leaves out components below 1e-14 of the largest: of 35,000 that moves
        # its logit by ~1e-10, which a step of 1e-4 would turn into 1e-6)
        step = 1e-3 * max(1.0, abs(fit.params[c]))
        fd = (4.0 * central(c, step / 2) - central(c, step)) / 3.0
        assert_allclose(grads[c], fd, rtol=1e-4, atol=1e-6)
    return centre


@pytest.fixture(scope="module")
def small_panel():
    y = np.array([[0, 1, 3, 2], [1, 0, 3, 0], [0, 0, 2, 1]])
    m = np.array([[3, 3, 3, 3], [3, 2, 3, 0], [3, 3, 3, 3]])
    return Panel(y, m, systems=["a", "b", "c"], tasks=["t1", "t2", "t3", "t4"])


class TestPanel:
    @pytest.mark.unit
    def test_from_counts_matches_tasks_by_label(self):
        a = passmix.Counts([1, 2], [5, 5], tasks=["x", "y"])
        b = passmix.Counts([0, 4], [5, 5], tasks=["y", "z"])
        panel = Panel.from_counts({("a",): a, ("b",): b})
        assert list(panel.systems) == ["a", "b"]
        assert list(panel.tasks) == ["x", "y", "z"]
        assert_allclose(panel.successes, [[1, 2, 0], [0, 0, 4]])
        assert_allclose(panel.trials, [[5, 5, 0], [0, 5, 5]])
        assert panel.n_cells == 4
        back = panel.counts("b")
        assert_allclose(back.successes, [0, 0, 4])
        assert_allclose(back.trials, [0, 5, 5])

    @pytest.mark.unit
    def test_read_from_table(self):
        df = pd.DataFrame({"model": ["a", "a", "b"], "task": ["x", "y", "x"],
                           "successes": [1, 0, 2], "trials": [3, 3, 3]})
        panel = Panel.read(df, "model")
        assert panel.shape == (2, 2)
        assert_allclose(panel.trials, [[3, 3], [3, 0]])

    @pytest.mark.unit
    @pytest.mark.parametrize("y, m, match", [
        ([[4]], [[3]], "exceed"),
        ([[1, 2]], [[3]], "one shape"),
        ([[-1]], [[3]], "negative"),
        ([[0.5]], [[3]], "whole"),
        ([[np.nan]], [[3]], "NaN"),
        ([[0, 0]], [[0, 0]], "no system ran"),
        (np.zeros((0, 2)), np.zeros((0, 2)), "empty"),
    ])
    def test_bad_counts(self, y, m, match):
        with pytest.raises(ValueError, match=match):
            Panel(y, m)

    @pytest.mark.unit
    def test_duplicate_labels_and_unknown_system(self):
        with pytest.raises(ValueError, match="distinct"):
            Panel([[1], [1]], [[2], [2]], systems=["a", "a"])
        with pytest.raises(KeyError, match="unknown system"):
            Panel([[1]], [[2]], systems=["a"]).counts("b")

    def test_tuple_labels_stay_labels(self):
        """Multi-column group keys (tuples) label systems; they are not unpacked into a 2-d array."""
        from passmix.models.pooled import fit_pooled_groups

        rng = np.random.default_rng(2)
        groups = {("gpt", "airline"): passmix.Counts(rng.binomial(4, 0.5, 12), np.full(12, 4)),
                  ("gpt", "retail"): passmix.Counts(rng.binomial(4, 0.3, 12), np.full(12, 4))}
        panel = Panel.from_counts(groups, unpack=False)
        assert panel.systems.shape == (2,) and panel.index(("gpt", "retail")) == 1
        one = fit_pooled_groups({("gpt", "airline"): groups[("gpt", "airline")]}, seed=0)
        assert one[("gpt", "airline")].name == ("gpt", "airline")

    @pytest.mark.unit
    def test_inputs_not_mutated(self):
        y = np.array([[1, 2], [0, 1]])
        m = np.array([[3, 3], [3, 3]])
        panel = Panel(y, m)
        assert not panel.successes.flags.writeable
        assert_allclose(y, [[1, 2], [0, 1]])


class TestLikelihood:
    @pytest.mark.unit
    def test_task_grid_loglik_is_sum_of_betabinomials(self, small_panel):
        a, log_kappa = np.array([0.5, -0.2, -0.3]), np.log([3.0, 40.0, 0.7])
        grid = np.array([-2.0, 0.0, 1.5])
        got = task_grid_loglik(panel_layout(small_panel), a, log_kappa, grid)
        y, m = small_panel.successes, small_panel.trials
        for j in range(4):
            for g, t in enumerate(grid):
                mu = expit(a - t)
                kappa = np.exp(log_kappa)
                want = sum(stats.betabinom.logpmf(y[i, j], m[i, j], mu[i] * kappa[i],
                                                  (1 - mu[i]) * kappa[i])
                           for i in range(3) if m[i, j] > 0)
                assert got[j, g] == pytest.approx(want, rel=1e-12, abs=1e-12)

    @pytest.mark.unit
    @pytest.mark.parametrize("power", [1, 2])
    def test_reciprocal_sums_are_digamma_and_trigamma_differences(self, power):
        """The finite sums behind the analytic derivatives: term by term, and against
        scipy's digamma / trigamma differences where those do not cancel."""
        from scipy.special import digamma, polygamma

        from passmix.models.pooled._likelihood import _reciprocal_sums

        rng = np.random.default_rng(power)
        n = rng.integers(0, 61, size=25).astype(float)  # whole counts, as the layout's floats
        for x in (np.exp(rng.normal(-3.0, 3.0, size=(4, 30, 1))),   # the (I, G, 1) shapes
                  np.exp(rng.normal(0.0, 1.0, size=(4, 1, 25)))):   # varying along n too
            got = _reciprocal_sums(x, n, power)
            want = np.zeros(np.broadcast_shapes(x.shape, n.shape))
            for index in np.ndindex(want.shape):
                xi = x[index[:-1] + (0 if x.shape[-1] == 1 else index[-1],)]
                want[index] = sum((xi + i) ** -power for i in range(int(n[index[-1]])))
            assert_allclose(got, want, rtol=1e-13, atol=0)
            special = (digamma(x + n) - digamma(x) if power == 1
                       else polygamma(1, x) - polygamma(1, x + n))
            assert_allclose(got, special, rtol=1e-9, atol=1e-12)

    @pytest.mark.unit
    def test_beta_binomial_layer_by_integration(self):
        """One cell's Beta-binomial term against integrating p out numerically."""
        panel = Panel([[2], [0], [1]], [[5], [5], [5]])
        a, log_kappa, grid = np.array([0.3, -0.1, -0.2]), np.log([2.5, 8.0, 0.9]), np.array([0.7])
        got = task_grid_loglik(panel_layout(panel), a, log_kappa, grid)[0, 0]
        total = 0.0
        for i, (y, kappa) in enumerate(zip([2, 0, 1], np.exp(log_kappa))):
            mu = expit(a[i] - grid[0])
            dens = stats.beta(mu * kappa, (1 - mu) * kappa).pdf
            value, _ = integrate.quad(lambda p: dens(p) * stats.binom.pmf(y, 5, p), 0, 1,
                                      limit=200, points=[1e-6, 1 - 1e-6])
            total += np.log(value)
        assert got == pytest.approx(total, rel=1e-7)

    @pytest.mark.parametrize("scale", [1, 30])
    def test_compiled_objective_matches_numpy(self, small_panel, scale):
        """Both compiled graphs against the numpy likelihood (itself checked by integration):
        rising sums for up to 64 trials (scale 1), Beta functions past them (scale 30)."""
        layout = panel_layout(Panel(small_panel.successes * scale, small_panel.trials * scale))
        assert ((layout.pair_y + layout.pair_f).max() > 64) == (scale > 1)
        for family in ("grid", "normal"):
            obj = get_pooled_objective(layout, family, DEFAULT_GRID)
            rng = np.random.default_rng(3)
            z = rng.normal(scale=0.5, size=sum(s for _, s in obj.blocks))
            n = N_SYS
            a = z[:n] - z[:n].mean()
            log_kappa = z[n:n + N_SYS]
            rest = z[n + N_SYS:]
            if family == "grid":
                log_w = log_softmax(rest)
            else:
                log_w = log_softmax(-0.5 * ((DEFAULT_GRID - rest[0]) / np.exp(rest[1])) ** 2)
            want = logsumexp(log_w + task_grid_loglik(layout, a, log_kappa, DEFAULT_GRID),
                             axis=1).sum()
            assert obj.logp_dlogp(z)[0] == pytest.approx(want, rel=1e-10)
            assert_gradient_by_differences(obj, z, rng.choice(z.size, size=5, replace=False))

    def test_normal_mixture_objective_matches_numpy(self, small_panel):
        """H = 3 normals: the compiled graph (same one as H = 1) against a numpy mixture density."""
        layout = panel_layout(small_panel)
        obj = get_pooled_objective(layout, "normal", DEFAULT_GRID, n_components=3)
        assert [s for _, s in obj.blocks] == [N_SYS, N_SYS, 3, 3, 2]
        rng = np.random.default_rng(4)
        z = rng.normal(scale=0.5, size=2 * N_SYS + 8)
        a = z[:N_SYS] - z[:N_SYS].mean()
        mean, log_sd = z[2 * N_SYS:2 * N_SYS + 3], z[2 * N_SYS + 3:2 * N_SYS + 6]
        pi = np.exp(log_softmax(np.concatenate([[0.0], z[-2:]])))
        dens = sum(pi[h] * stats.norm.pdf(DEFAULT_GRID, mean[h], np.exp(log_sd[h]))
                   for h in range(3))
        log_w = np.log(dens / dens.sum())
        want = logsumexp(log_w + task_grid_loglik(layout, a, z[N_SYS:2 * N_SYS], DEFAULT_GRID),
                         axis=1).sum()
        assert obj.logp_dlogp(z)[0] == pytest.approx(want, rel=1e-10)
        obj.set_data(layout, DEFAULT_GRID)  # back to one normal for the other tests

    @pytest.mark.study
    @pytest.mark.slow
    @pytest.mark.parametrize("n_components, slope", [(1, False), (2, True)])
    def test_the_normal_familys_own_pymc_graph_agrees(self, small_panel, n_components, slope):
        """The fit maps a normal family onto the grid family's compiled graph; the normal
        family's own PyMC model (what NUTS samples, here with flat priors) gives the same
        log-likelihood and gradient."""
        import pymc as pm

        from passmix.models.pooled import build_pooled_model

        layout = panel_layout(small_panel)
        model = build_pooled_model(layout, "normal", DEFAULT_GRID, n_components, slope=slope)
        fn = pm.pytensorf.compile(model.value_vars, [model.logp(jacobian=False),
                                                     model.dlogp(jacobian=False)])
        obj = get_pooled_objective(layout, "normal", DEFAULT_GRID, n_components, slope)
        rng = np.random.default_rng(5)
        for _ in range(3):
            z = rng.normal(scale=0.7, size=sum(s for _, s in obj.blocks))
            with obj.lock:
                obj.set_data(layout, DEFAULT_GRID, n_components)
                logp, grad = obj.logp_dlogp(z)
            parts = dict(zip([name for name, _ in obj.blocks],
                             np.split(z, np.cumsum([size for _, size in obj.blocks])[:-1])))
            want_logp, want_grad = fn(*[parts.get(v.name, np.zeros(0))
                                        for v in model.value_vars])
            assert logp == pytest.approx(float(want_logp), rel=1e-12)
            assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-10)
        obj.set_data(layout, DEFAULT_GRID)

    @pytest.mark.unit
    def test_normal_quadrature_matches_integration(self, small_panel):
        """The grid sum for a normal G against integrating the difficulty out."""
        layout = panel_layout(small_panel)
        a, log_kappa = np.array([0.4, -0.1, -0.3]), np.log([4.0, 15.0, 1.5])
        mean, sd = 0.8, 1.7
        log_w = log_softmax(-0.5 * ((DEFAULT_GRID - mean) / sd) ** 2)
        grid_value = logsumexp(log_w + task_grid_loglik(layout, a, log_kappa, DEFAULT_GRID),
                               axis=1)
        for j in range(4):
            def integrand(d):
                ll = task_grid_loglik(layout, a, log_kappa, np.array([d]))[j, 0]
                return np.exp(ll) * stats.norm.pdf(d, mean, sd)
            value, _ = integrate.quad(integrand, mean - 12 * sd, mean + 12 * sd, limit=200)
            assert grid_value[j] == pytest.approx(np.log(value), rel=1e-8, abs=1e-8)


@pytest.fixture(scope="module")
def simulated():
    rng = np.random.default_rng(11)
    a = np.array([-1.2, 0.2, 1.0])
    kappa = np.array([4.0, 30.0, 1e5])
    d = rng.normal(1.5, 1.5, size=400)
    y, m, p = simulate_panel(rng, a - a.mean(), kappa, d, 10)
    panel = Panel(y, m, systems=["weak", "mid", "strong"])
    return panel, a - a.mean(), kappa, d, p


class TestCompiledViews:
    """The views of one compiled graph (shared and per-system concentration) share its data."""

    def test_a_view_evaluates_only_data_it_set(self, small_panel):
        layout = panel_layout(small_panel)
        per_system = get_pooled_objective(layout, "normal", DEFAULT_GRID)
        z = np.zeros(sum(size for _, size in per_system.blocks))
        value = per_system.logp_dlogp(z)[0]
        shared = get_pooled_objective(layout, "normal", DEFAULT_GRID, shared=True)
        assert shared.function is per_system.function
        # the other view's switches are in place now: a silent wrong value, were it allowed
        with pytest.raises(RuntimeError, match="call set_data first"):
            per_system.logp_dlogp(z)
        per_system.set_data(layout, DEFAULT_GRID)
        assert per_system.logp_dlogp(z)[0] == value

    def test_setting_data_waits_for_the_holder_of_the_lock(self, small_panel):
        import threading

        layout = panel_layout(small_panel)
        other = panel_layout(Panel(small_panel.successes[:, :3], small_panel.trials[:, :3]))
        obj = get_pooled_objective(layout, "normal", DEFAULT_GRID)
        z = np.zeros(sum(size for _, size in obj.blocks))
        done = threading.Event()
        with obj.lock:
            value = obj.logp_dlogp(z)[0]
            thread = threading.Thread(target=lambda: (
                get_pooled_objective(other, "normal", DEFAULT_GRID), done.set()))
            thread.start()
            assert not done.wait(0.5)  # blocked: the data stay this panel's
            assert obj.logp_dlogp(z)[0] == value
        thread.join(60)
        assert done.is_set()


class TestRecovery:
    def test_normal_family(self, simulated):
        panel, a, kappa, d, p = simulated
        fit = fit_pooled(panel, family="normal", seed=0)
        assert_allclose(fit.abilities, a, atol=0.2)
        # the concentrations are weakly identified: check their order of magnitude
        assert fit.concentrations[0] < 20 and fit.concentrations[2] > 50
        shifted = d - 0.0  # abilities sum to 0 in both
        parts = fit.params[-2:]
        assert parts[0] == pytest.approx(shifted.mean(), abs=0.3)
        assert np.exp(parts[1]) == pytest.approx(shifted.std(), abs=0.3)

    def test_metrics_against_the_tasks_rates(self, simulated):
        panel, a, kappa, d, p = simulated
        fit = fit_pooled(panel, family="normal", seed=0)
        k = np.array([1, 10, 100])
        values = fit.metric("pass@k", k)
        truth = np.stack([np.mean(1 - (1 - p) ** kk, axis=1) for kk in k], axis=1)
        # 400 tasks: the sampling error of a benchmark-level Pass@k is a few points
        assert_allclose(values, truth, atol=0.05)

    def test_metric_is_every_systems_and_the_table_says_the_same(self, simulated):
        panel, *_ = simulated
        fit = fit_pooled(panel, family="normal", seed=0)
        k = [1, 10, 100]
        values = fit.metric("pass^k", k)
        assert values.shape == (panel.shape[0], 3)
        for i in range(panel.shape[0]):
            assert_allclose(values[i], fit.system(panel.systems[i]).metric("pass^k", k),
                            rtol=1e-12)
        one = fit.metric("pass^k", 10)
        assert one.shape == (panel.shape[0],)
        assert_allclose(one, values[:, 1], rtol=0)
        table = fit.metric_table("pass^k", k)
        assert list(table.columns) == k and list(table.index) == list(panel.systems)
        assert_allclose(table.to_numpy(), values, rtol=0)

    @pytest.mark.slow
    def test_grid_family_finds_a_two_point_distribution(self):
        rng = np.random.default_rng(5)
        d = np.where(rng.random(500) < 0.4, -1.0, 4.0)
        y, m, _ = simulate_panel(rng, [-0.5, 0.0, 0.5], [1e5, 1e5, 1e5], d, 10)
        fit = fit_pooled(Panel(y, m), family="grid", seed=0)
        w, grid = fit.grid_weights, fit.grid
        near_low = w[np.abs(grid + 1.0) <= 0.75].sum()
        near_high = w[np.abs(grid - 4.0) <= 0.75].sum()
        assert near_low == pytest.approx(0.4, abs=0.07)
        assert near_high == pytest.approx(0.6, abs=0.07)


def test_mixture_of_normals_recovered_and_chosen_by_bic():
    rng = np.random.default_rng(5)
    n = 400
    d = np.where(rng.random(n) < 0.4, rng.normal(-1, 0.7, n), rng.normal(4, 1.0, n))
    a = np.array([-0.8, -0.3, 0.2, 0.9])
    y, m, _ = simulate_panel(rng, a - a.mean(), [50.0] * 4, d, 10)
    fit = fit_pooled(Panel(y, m), max_components=3, concentration="system", criterion="bic",
                     seed=0)
    table = fit.family_table
    assert list(table["n_components"]) == [1, 2, 3]
    assert fit.n_components == 2 and table.loc[table["selected"], "n_components"].item() == 2
    assert_allclose(table["bic"], -2 * table["loglik"] + table["n_params"] * np.log(n))
    mean = fit.params[2 * 4:2 * 4 + 2]
    order = np.argsort(mean)
    assert_allclose(mean[order], [-1.0, 4.0], atol=0.4)
    pi = np.exp(log_softmax(np.concatenate([[0.0], fit.params[-1:]])))[order]
    assert_allclose(pi, [0.4, 0.6], atol=0.06)
    assert_allclose(fit.abilities, a - a.mean(), atol=0.25)


class TestHeldOut:
    """The held-out criterion: new tasks' likelihood, and the choice it makes."""

    def test_heldout_loglik_by_integration(self, small_panel):
        rng = np.random.default_rng(2)
        y, m, _ = simulate_panel(rng, [-0.6, 0.1, 0.5], [8.0, 40.0, 3.0], rng.normal(0.5, 1.2, 60), 6)
        fit = fit_pooled(Panel(y[:, :50], m[:, :50]), family="normal", seed=0)
        test = Panel(y[:, 50:], m[:, 50:])
        got = heldout_loglik(fit, test)
        layout = panel_layout(test)
        a, log_kappa = fit.abilities, np.log(fit.concentrations)
        mean, sd = fit.params[-2], np.exp(fit.params[-1])
        want = 0.0
        for j in range(10):
            def integrand(d):
                ll = task_grid_loglik(layout, a, log_kappa, np.array([d]))[j, 0]
                return np.exp(ll) * stats.norm.pdf(d, mean, sd)
            value, _ = integrate.quad(integrand, mean - 12 * sd, mean + 12 * sd, limit=200)
            want += np.log(value)
        assert got == pytest.approx(want, rel=1e-7)
        # and on the training tasks it is the fit's own log-likelihood
        train = Panel(y[:, :50], m[:, :50])
        assert heldout_loglik(fit, train) == pytest.approx(fit.loglik, rel=1e-12)
        with pytest.raises(ValueError, match="3 systems"):
            heldout_loglik(fit, Panel(y[:2, 50:], m[:2, 50:]))

    @pytest.mark.study
    @pytest.mark.slow
    @pytest.mark.parametrize("case, chosen", [("two groups", 2), ("normal", 1)])
    def test_heldout_chooses_the_simulated_distribution(self, case, chosen):
        rng = np.random.default_rng(5 if case == "two groups" else 6)
        n = 120
        d = (np.where(rng.random(n) < 0.4, rng.normal(-1, 0.5, n), rng.normal(4, 0.7, n))
             if case == "two groups" else rng.normal(1.0, 1.5, n))
        y, m, _ = simulate_panel(rng, [-0.5, 0.0, 0.5], [50.0] * 3, d, 10)
        fit = fit_pooled(Panel(y, m), max_components=2, criterion="heldout", n_folds=2, seed=0)
        table = fit.family_table
        assert fit.n_components == chosen
        assert table.loc[table["heldout_loglik"].idxmax(), "n_components"] == chosen
        assert table["selected"].sum() == 1
        # held out, a task is predicted less well than when it was fitted
        assert (table["heldout_loglik"] < table["loglik"]).all()

    @pytest.mark.unit
    def test_bad_criterion_and_folds(self, small_panel):
        with pytest.raises(ValueError, match="unknown criterion 'dic'"):
            fit_pooled(small_panel, criterion="dic")
        for bad in (1, 5, 2.5, True):
            with pytest.raises(ValueError, match="n_folds must be a whole number in 2..4"):
                fit_pooled(small_panel, criterion="heldout", n_folds=bad)


class TestGridEM:
    """The grid family's EM accelerator against direct maximisation."""

    @pytest.mark.unit
    def test_em_weights_reach_the_simplex_maximum(self):
        from scipy.optimize import minimize

        from passmix.models.pooled import em_grid_weights

        rng = np.random.default_rng(3)
        ll = rng.normal(0.0, 2.0, size=(40, 7))
        scaled = np.exp(ll - ll.max(axis=1, keepdims=True))
        w = em_grid_weights(scaled, np.full(7, 1 / 7), max_iter=100_000, tol=1e-14)

        def negative(logits):  # the same objective over unconstrained logits
            return -np.log(scaled @ np.exp(log_softmax(logits))).sum()

        direct = minimize(negative, np.zeros(7), method="BFGS", options={"gtol": 1e-10})
        assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
        assert -negative(np.log(np.maximum(w, 1e-300))) == pytest.approx(-direct.fun, abs=1e-6)

    def test_profile_reaches_the_joint_optimum(self):
        """EM-profiled fit against L-BFGS over all coordinates (weights' logits included)."""
        from passmix.inference import maximize

        rng = np.random.default_rng(8)
        d = np.where(rng.random(150) < 0.5, -0.5, 3.0) + rng.normal(0, 0.5, 150)
        y, m, _ = simulate_panel(rng, [-0.6, 0.1, 0.5], [3.0, 40.0, 1e4], d, 6)
        panel = Panel(y, m)
        grid = np.linspace(-6.0, 10.0, 33)
        profiled = fit_pooled(panel, family="grid", grid=grid, concentration="system", seed=0)
        obj = get_pooled_objective(profiled.layout, "grid", grid)
        box = profiled.box()
        # L-BFGS over every coordinate from a neutral start (equal abilities, kappa = 10,
        # uniform weights) and from the EM fit moved off its optimum
        neutral = np.zeros(profiled.params.size)
        neutral[N_SYS:2 * N_SYS] = np.log(10.0)
        moved = np.clip(profiled.params + 0.3 * rng.standard_normal(neutral.size),
                        box[:, 0], box[:, 1])
        with obj.lock:
            obj.set_data(profiled.layout, grid)
            joint = maximize(obj, [neutral, moved], box, newton=False)
        assert profiled.loglik >= joint.loglik - 0.01
        assert profiled.loglik == pytest.approx(joint.loglik, abs=0.05)
        a_joint = joint.params[:N_SYS] - joint.params[:N_SYS].mean()
        a_em = profiled.params[:N_SYS] - profiled.params[:N_SYS].mean()
        assert_allclose(a_em, a_joint, atol=0.05)


def test_no_seed_is_seed_zero():
    """The default (None) is 0, as in compare and rank: the same fit in every process."""
    rng = np.random.default_rng(3)
    y, m, _ = simulate_panel(rng, np.array([-1.0, 0.0, 1.0]), [10.0] * 3,
                             rng.normal(0.5, 1.5, 40), 6)
    panel = Panel(y, m)
    zero = fit_pooled(panel, seed=0)
    for other in (fit_pooled(panel), fit_pooled(panel, seed=None)):
        np.testing.assert_array_equal(other.params, zero.params)


class TestMetrics:
    def test_posterior_average_by_monte_carlo(self, small_panel):
        fit = fit_pooled(small_panel, family="normal", seed=0)
        r = fit.task_posterior()
        rng = np.random.default_rng(0)
        i = 0
        kappa = fit.concentrations[i]
        y, m = small_panel.successes[i], small_panel.trials[i]
        n = 200_000
        values = {1: [], 5: [], 50: []}
        for j in range(r.shape[0]):
            g = rng.choice(r.shape[1], size=n, p=r[j] / r[j].sum())
            mu = expit(fit.abilities[i] - fit.grid[g])
            p = rng.beta(mu * kappa + y[j], (1 - mu) * kappa + m[j] - y[j])
            for kk in values:
                values[kk].append(1 - (1 - p) ** kk)
        got = fit.system("a").metric("pass@k", [1, 5, 50])
        want = [np.mean(values[kk]) for kk in (1, 5, 50)]
        assert_allclose(got, want, atol=4e-3)

    def test_task_variance_by_monte_carlo(self, small_panel):
        """Var over each task's posterior of g(p), summed over tasks / J^2, against draws;
        for AUC@k the bound (average of the Pass@h sds) is at least the drawn variance."""
        fit = fit_pooled(small_panel, family="normal", seed=0)
        r = fit.task_posterior()
        rng = np.random.default_rng(1)
        i, n = 2, 200_000
        kappa = fit.concentrations[i]
        y, m = small_panel.successes[i], small_panel.trials[i]
        k = np.array([1, 4, 30])
        draws = {"pass@k": [], "pass^k": [], "auc@k": []}
        for j in range(r.shape[0]):
            g = rng.choice(r.shape[1], size=n, p=r[j] / r[j].sum())
            mu = expit(fit.abilities[i] - fit.grid[g])
            p = rng.beta(mu * kappa + y[j], (1 - mu) * kappa + m[j] - y[j])[:, None]
            draws["pass@k"].append(np.var(1 - (1 - p) ** k, axis=0))
            draws["pass^k"].append(np.var(p ** k, axis=0))
            auc = np.stack([np.mean(1 - (1 - p) ** np.arange(1, kk + 1), axis=1) for kk in k], 1)
            draws["auc@k"].append(np.var(auc, axis=0))
        n_tasks = r.shape[0]
        for metric, per_task in draws.items():
            want = np.sum(per_task, axis=0) / n_tasks ** 2
            got = fit.task_variance(metric, k)[i]
            if metric == "auc@k":
                assert got[0] == pytest.approx(want[0], rel=0.06)  # k = 1 is Pass@1
                assert np.all(got >= want * 0.95)
                assert np.all(got <= want * 1.5)  # and not far above it
            else:  # Monte Carlo: p^30's variance is heavy-tailed, a few percent of noise
                assert_allclose(got, want, rtol=0.06)

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_delta_gradient_against_differences(self, simulated, metric):
        """The delta method's gradient (posterior differenced, metric analytic) vs differencing
        the metric's logit itself in every coordinate."""
        panel = simulated[0]
        fit = fit_pooled(panel, family="normal", seed=0)
        k = np.array([1, 10, 1000])
        centre = assert_delta_gradient_by_differences(fit, metric, k)
        assert_allclose(centre, fit.metric_logits(metric, k), rtol=1e-12)

    def test_fitted_result_interface(self, small_panel):
        fit = fit_pooled(small_panel, family="normal", seed=0)
        res = fit.system("b")
        assert isinstance(res, PooledSystem) and isinstance(res, FittedResult)
        table = res.summary(k=[1, 10])
        assert list(table.columns) == ["metric", "k", "estimate", "se", "lower", "upper"]
        assert ((table.lower <= table.estimate + 1e-12)
                & (table.estimate <= table.upper + 1e-12)).all()
        assert res.metric("pass@k", 1) == pytest.approx(table.estimate.iloc[0])
        lo, hi = res.interval("pass@k", 10)
        assert 0 <= lo <= res.metric("pass@k", 10) <= hi <= 1
        assert res.info()["system"] == "b"
        # orderings every mixture obeys: Pass^k <= Pass@1 <= AUC@k <= Pass@k
        k = [2, 20]
        p_hat, auc, p_at = (np.asarray(res.metric(mm, k)) for mm in ("pass^k", "auc@k", "pass@k"))
        p1 = res.metric("pass@k", 1)
        assert np.all(p_hat <= p1 + 1e-12) and np.all(p1 <= auc + 1e-12)
        assert np.all(auc <= p_at + 1e-12)


class TestAnalyticInformation:
    """The analytic score and observed information against the compiled gradient,
    itself differenced (Richardson's extrapolation of two central differences)."""

    @pytest.mark.parametrize("kwargs, trials", [
        (dict(concentration="system"), 6), (dict(concentration="shared"), 6),
        (dict(concentration="system", slope=True), 6),
        (dict(concentration="system", family="grid"), 6),
        (dict(concentration="system", max_components=2), 6),
        # past the trials whose digamma and trigamma differences are summed term by term
        (dict(concentration="system"), 100)])
    def test_against_the_compiled_gradient(self, kwargs, trials):
        rng = np.random.default_rng(1)
        d = rng.normal(1.0, 1.5, 30)
        m = np.where(rng.random((N_SYS, 30)) < 0.1, 0, trials)  # some cells not run
        y, _, _ = simulate_panel(rng, [-0.5, 0.2, 0.7], [20.0] * N_SYS, d, m)
        fit = fit_pooled(Panel(y, m), seed=0, **kwargs)
        obj = get_pooled_objective(fit.layout, fit.family, fit.grid, fit.n_components,
                                   fit.slope, fit.concentration == "shared")
        box = fit.box()
        free = ~passmix.inference.at_bound(fit.params, box).any(axis=1)
        z = fit.params + 0.05 * rng.standard_normal(fit.params.size) * free  # off the optimum
        with obj.lock:
            obj.set_data(fit.layout, fit.grid, fit.n_components)
            logp, grad = obj.logp_dlogp(z)
            reference = np.empty((z.size, z.size))
            for c in range(z.size):
                def central(h, c=c):
                    e = np.zeros(z.size)
                    e[c] = h
                    return (obj.logp_dlogp(z + e)[1] - obj.logp_dlogp(z - e)[1]) / (2 * h)
                reference[:, c] = (4 * central(1e-4) - central(2e-4)) / 3
        derivatives = fit.derivatives(z)
        assert_allclose(derivatives.score(), grad, rtol=1e-6, atol=1e-6 * np.abs(grad).max())
        # the profile's searches take the log-likelihood from these pieces too
        assert derivatives.loglik == pytest.approx(logp, abs=1e-6)
        info = derivatives.information()
        scale = np.abs(reference[np.ix_(free, free)]).max()
        assert np.abs((info + reference)[np.ix_(free, free)]).max() < 1e-4 * scale

    def test_on_narrow_task_windows(self):
        """With many systems each task's posterior covers a few grid points and the sums run
        over those windows: the score, information, tasks' scores and the metric gradients
        still match the compiled gradient and differences."""
        rng = np.random.default_rng(4)
        n_sys = 60
        m = np.where(rng.random((n_sys, 25)) < 0.1, 0, 10)
        y, _, _ = simulate_panel(rng, rng.normal(0, 1, n_sys), np.exp(rng.normal(1.5, 0.5, n_sys)),
                                 rng.normal(0.5, 1.5, 25), m)
        fit = fit_pooled(Panel(y, m), seed=0, concentration="system")
        derivatives = fit.derivatives()
        assert derivatives.grid_index.shape[1] < fit.grid.size / 3  # the windows are in play
        obj = get_pooled_objective(fit.layout, fit.family, fit.grid, fit.n_components,
                                   fit.slope, False)
        free = ~passmix.inference.at_bound(fit.params, fit.box()).any(axis=1)
        z = fit.params + 0.02 * rng.standard_normal(fit.params.size) * free
        pieces = fit.derivatives(z)
        with obj.lock:
            obj.set_data(fit.layout, fit.grid, fit.n_components)
            _, grad = obj.logp_dlogp(z)
            cols = np.flatnonzero(free)[::7]  # every 7th coordinate: the cost stays small
            reference = np.empty((z.size, cols.size))
            for n, c in enumerate(cols):
                def central(h, c=c):
                    e = np.zeros(z.size)
                    e[c] = h
                    return (obj.logp_dlogp(z + e)[1] - obj.logp_dlogp(z - e)[1]) / (2 * h)
                reference[:, n] = (4 * central(1e-4) - central(2e-4)) / 3
        assert_allclose(pieces.score(), grad, rtol=1e-6, atol=1e-6 * np.abs(grad).max())
        assert_allclose(pieces.task_scores().sum(axis=1), grad, rtol=1e-6,
                        atol=1e-6 * np.abs(grad).max())
        info = pieces.information()[np.ix_(free, cols)]
        assert np.abs(info + reference[free]).max() < 1e-4 * np.abs(reference[free]).max()
        # the metric gradients (the posterior's derivative on the windows) against
        # Richardson's differences of the metric logits, whose rounding (~1e-9) wants
        # steps of 1e-3 here
        k = np.array([1, 10])
        grads, _ = fit.logit_gradients("pass@k", k)

        def central(c, step):
            up, down = fit.params.copy(), fit.params.copy()
            up[c] += step
            down[c] -= step
            return (fit.metric_logits("pass@k", k, up)
                    - fit.metric_logits("pass@k", k, down)) / (2 * step)

        for c in cols:
            fd = (4.0 * central(c, 5e-4) - central(c, 1e-3)) / 3.0
            assert_allclose(grads[c], fd, rtol=1e-4, atol=1e-7)
        # one system's rows alone (few rows: the tasks summed per pair first, not the
        # cells' windows gathered) give the same gradients
        one, _ = fit.logit_gradients("pass@k", k[1:], rows=[3])
        assert_allclose(one[:, 0, 0], grads[:, 3, 1], rtol=1e-9, atol=1e-12)
        # and so do rows split in two groups, each on its own window in its own pass
        # (rows whose logit weighs a grid point heavily get a wider one): here the
        # rows that weigh some point by more than 5
        passes = []
        contraction = passmix.models.pooled.PooledDerivatives.posterior_contraction

        def counted(self, weights, n_rows=None, window=None):
            passes.append(n_rows)
            return contraction(self, weights, n_rows, window)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(passmix.models.pooled._intervals, "_TAIL_WEIGHT", 5.0)
            patch.setattr(passmix.models.pooled._intervals, "_TAIL_WIDENING", 0.0)
            patch.setattr(passmix.models.pooled.PooledDerivatives, "posterior_contraction",
                          counted)
            split, _ = fit.logit_gradients("pass@k", k)
        assert len(passes) == 2 and sum(passes) == n_sys * k.size  # both groups have rows
        assert_allclose(split, grads, rtol=1e-9, atol=1e-12)


class TestIdentifiedCovariance:
    """The abilities' common shift is not identified; the covariance leaves it out."""

    @pytest.fixture(scope="class")
    @staticmethod
    def two_systems():
        rng = np.random.default_rng(0)
        d = rng.normal(0, 2, 8)
        y = rng.binomial(5, expit(np.array([[-0.5], [0.5]]) - d))
        return fit_pooled(Panel(y, np.full(y.shape, 5), systems=["A", "B"]), seed=0)

    def test_one_quantity_one_interval(self, two_systems):
        # Pass@1, Pass^1 and AUC@1 are the mean: one interval, whatever else is asked
        fit = two_systems
        rows = [fit.delta(metric, ks, system=s).iloc[0][["se", "lower", "upper"]]
                for metric in ("pass@k", "pass^k", "auc@k")
                for ks in ([1], [1, 10], [1, 100, 1000]) for s in ("A",)]
        values = np.array(rows, dtype=float)
        assert_allclose(values, np.broadcast_to(values[0], values.shape), rtol=1e-9)
        # the shift gets no variance: the covariance is ~1, not ~1e15
        assert np.max(np.abs(fit.covariance_matrix())) < 1e6

    def test_standard_error_against_fixing_one_ability(self, two_systems):
        """Independent identified coordinates: the last ability fixed, the Hessian by
        central differences of the compiled gradient (second differences of the
        log-likelihood amplify its last-digit rounding 1e8-fold), the metric's gradient
        by differencing its logit; same standard error as the fit's centred covariance
        (the model's own, without the sandwich's widening)."""
        from dataclasses import replace

        fit = replace(two_systems, robust=False, _cache={})
        obj = get_pooled_objective(fit.layout, fit.family, fit.grid, fit.n_components,
                                   fit.slope, fit.concentration == "shared")
        box = fit.box()
        z0 = fit.params.copy()
        held = passmix.inference.at_bound(z0, box).any(axis=1)
        keep = ~held
        keep[fit.layout.n_systems - 1] = False  # the last ability is fixed
        idx = np.flatnonzero(keep)

        def full(t):
            z = z0.copy()
            z[idx] = t
            return z

        with obj.lock:
            obj.set_data(fit.layout, fit.grid, fit.n_components)

            def gradient(t):
                return obj.logp_dlogp(full(t))[1][idx]

            n, h = idx.size, 1e-5
            t0 = z0[idx]
            hess = np.array([(gradient(t0 + e) - gradient(t0 - e)) / (2 * h)
                             for e in np.eye(n) * h])
            hess = (hess + hess.T) / 2
        cov = np.linalg.inv(-hess)
        k = np.array([1, 10, 100])
        for metric in ("pass@k", "pass^k"):
            grad = np.empty((n, 2, k.size))
            for i in range(n):
                e = np.eye(n)[i] * 1e-5
                grad[i] = (fit.metric_logits(metric, k, full(t0 + e))
                           - fit.metric_logits(metric, k, full(t0 - e))) / 2e-5
            se_logit = np.sqrt(np.einsum("cik,cd,dik->ik", grad, cov, grad))
            table = fit.delta(metric, k)
            est = table["estimate"].to_numpy().reshape(2, k.size)
            se = np.hypot(est * (1 - est) * se_logit,
                          np.sqrt(fit.task_variance(metric, k)))
            assert_allclose(table["se"].to_numpy().reshape(2, k.size), se, rtol=2e-3)


@pytest.mark.unit
def test_a_system_with_no_trials_is_an_error():
    y = np.array([[1, 2, 3], [0, 0, 0], [2, 0, 1]])
    m = np.array([[5, 5, 5], [0, 0, 0], [5, 5, 5]])
    with pytest.raises(ValueError, match="'idle' ran no trial"):
        fit_pooled(Panel(y, m, systems=["a", "idle", "c"]), seed=0)


def test_a_fit_that_did_not_converge_warns(small_panel, monkeypatch):
    # with no gradient small enough, no candidate counts as converged
    monkeypatch.setattr(passmix.models.pooled.fit, "_GRAD_TOL", 0.0)
    with pytest.warns(passmix.FitWarning, match="did not converge"):
        fit = fit_pooled(small_panel, seed=0)
    assert not fit.converged and not fit.info()["converged"]


class TestInput:
    def test_mapping_and_table_give_the_same_fit(self, small_panel):
        groups = {s: small_panel.counts(s) for s in small_panel.systems}
        rows = [{"system": s, "task": t, "successes": int(c.successes[n]),
                 "trials": int(c.trials[n])}
                for s, c in groups.items() for n, t in enumerate(c.tasks) if c.trials[n] > 0]
        a = fit_pooled(groups, family="normal", seed=0)
        b = fit_pooled(pd.DataFrame(rows), system="system", family="normal", seed=0)
        assert a.loglik == pytest.approx(b.loglik, rel=1e-9)

    @pytest.mark.unit
    @pytest.mark.parametrize("kwargs, match", [
        ({"family": "t"}, "unknown family"),
        ({"grid": [0.0]}, "grid"),
        ({"grid": [1.0, 0.0]}, "grid"),
        ({"n_init": 0}, "n_init"),
    ])
    def test_bad_arguments(self, small_panel, kwargs, match):
        with pytest.raises(ValueError, match=match):
            fit_pooled(small_panel, **kwargs)

    @pytest.mark.unit
    def test_table_needs_system_column(self):
        with pytest.raises(ValueError, match="system"):
            fit_pooled(pd.DataFrame({"task": [1], "successes": [0], "trials": [1]}))

    @pytest.mark.unit
    def test_blocks(self):
        assert coordinate_blocks("grid", 3, 5) == [("ability", 3), ("log_concentration", 3),
                                         ("grid_logits", 5)]
        assert coordinate_blocks("normal", 1, 5) == [("ability", 1), ("log_concentration", 1),
                                           ("difficulty_mean", 1), ("log_difficulty_sd", 1)]
        assert coordinate_blocks("grid", 2, 5, slope=True) == [("ability", 2), ("log_concentration", 2),
                                                     ("log_slope", 2), ("grid_logits", 5)]


class TestEverywhere:
    """The joint estimator through estimate_table, the registry and the harness."""

    @pytest.fixture(scope="class")
    @staticmethod
    def groups(small_panel):
        return {(s,): small_panel.counts(s) for s in small_panel.systems}

    @pytest.mark.slow
    def test_estimate_table_matches_fit_pooled(self, groups, small_panel):
        table = passmix.estimate_table(groups, ["system"], k=[1, 10], method="pooled")
        fit = fit_pooled(small_panel, seed=0)
        profile = fit.summary([1, 10])
        assert set(table["method"]) == {"pooled"}
        for s in small_panel.systems:
            rows = table[(table["system"] == s) & (table["metric"] == "pass@k")]
            assert_allclose(rows["estimate"], fit.system(s).metric("pass@k", [1, 10]),
                            rtol=1e-9)
            assert (rows["lower"] <= rows["estimate"]).all()
            assert (rows["estimate"] <= rows["upper"]).all()
            # the table's intervals are the fit's profile ones (its default)
            own = profile[(profile["system"] == s) & (profile["metric"] == "pass@k")]
            assert_allclose(rows["lower"], own["lower"], rtol=1e-9)
            assert_allclose(rows["upper"], own["upper"], rtol=1e-9)

    def test_all_includes_pooled_only_with_shared_tasks(self, groups):
        table = passmix.estimate_table(groups, ["system"], k=[1], method="all",
                                       interval="delta")
        assert "pooled" in set(table["method"])
        apart = {("a",): passmix.Counts([1, 2], [3, 3], tasks=["x", "y"]),
                 ("b",): passmix.Counts([0, 3], [3, 3], tasks=["u", "v"])}
        table = passmix.estimate_table(apart, ["system"], k=[1], method="all",
                                       interval="delta")
        assert "pooled" not in set(table["method"])
        with pytest.raises(ValueError, match="share a task"):
            passmix.estimate_table(apart, ["system"], k=[1], method="pooled")

    def test_harness_runs_pooled_on_the_same_subsets(self):
        """The repeated harness fits pooled once per (seed, m) on the per-group subsets."""
        from passmix.experiments import nested_subsets, protocol_methods, run_repeated
        from passmix.experiments import group_id, stream

        rng = np.random.default_rng(4)
        d = rng.normal(0.5, 1.5, 30)
        p = expit(np.array([-0.5, 0.0, 0.6])[:, None] - d[None, :])
        matrices = {(name,): (rng.random((30, 12)) < p[i][:, None]).astype(float)
                    for i, name in enumerate(["a", "b", "c"])}
        labels = {key: [f"t{j}" for j in range(30)] for key in matrices}
        assert "pooled" not in protocol_methods()
        assert protocol_methods(joint=True)[-1] == "pooled"
        res = run_repeated(matrices, group_cols=["system"], m=[3, 6], k=[1, 4, 12], seeds=[0],
                           tasks=labels, max_components=1, n_init=2, interval="delta")
        errors = res.errors
        assert set(errors["method"]) == {"naive", "combinatorial", "mixture", "pooled"}
        assert len(res.joint_fits) == 2 and set(res.joint_fits["interval"]) == {"delta"}
        # the pooled rows are fit_pooled's on the per-group subsets, matched by task label
        subsets = {key: nested_subsets(mat, [3], stream(0, group_id(key), 0))[3]
                   for key, mat in matrices.items()}
        counts = {key: passmix.Counts(c.successes, c.trials, labels[key])
                  for key, c in subsets.items()}
        fit = fit_pooled(counts, seed=stream(0, 0, 2, 3))
        got = errors[(errors["method"] == "pooled") & (errors["m"] == 3)
                     & (errors["metric"] == "pass@k")]
        for key in matrices:
            rows = got[got["system"] == key[0]].sort_values("k")
            want = fit.system(key[0]).metric("pass@k", [1, 4, 12])
            assert_allclose(rows["estimate"], want, rtol=1e-6)
            assert rows["lower"].notna().all()

    def test_harness_needs_shared_tasks_for_pooled(self):
        from passmix.experiments import run_repeated

        rng = np.random.default_rng(0)
        groups = {("a",): passmix.Counts(rng.binomial(8, 0.4, 10), np.full(10, 8),
                                         [f"a{j}" for j in range(10)]),
                  ("b",): passmix.Counts(rng.binomial(8, 0.4, 10), np.full(10, 8),
                                         [f"b{j}" for j in range(10)])}
        res = run_repeated(groups, group_cols=["system"], m=[2], k=[4], seeds=[0],
                           max_components=1, n_init=2, interval="delta")
        assert "pooled" not in set(res.errors["method"]) and res.joint_fits.empty
        with pytest.raises(ValueError, match="no two groups share a task"):
            run_repeated(groups, group_cols=["system"], methods=["pooled"], m=[2], k=[4],
                         seeds=[0])


def simulate_2pl(rng, a, log_s, d, m, kappa=1e4):
    """Counts of systems with slopes: mu_ij = expit(a_i - s_i d_j)."""
    mu = expit(np.asarray(a)[:, None] - np.exp(log_s)[:, None] * np.asarray(d)[None, :])
    p = rng.beta(mu * kappa, (1 - mu) * kappa)
    return rng.binomial(m, p), np.full(p.shape, m)


@pytest.fixture(scope="module")
def two_pl():
    """4 systems x 250 tasks whose slopes differ (e^-0.4 .. e^0.4), fitted with slope="auto"."""
    rng = np.random.default_rng(8)
    a, log_s = np.array([-1.0, -0.3, 0.3, 1.0]), np.array([-0.4, -0.1, 0.1, 0.4])
    y, m = simulate_2pl(rng, a, log_s, rng.normal(0.5, 1.5, 250), 10)
    fit = fit_pooled(Panel(y, m), slope="auto", concentration="system", criterion="bic", seed=0)
    return fit, a, np.exp(log_s)


class TestSlopes:
    """Per-system slopes (2PL): mu_ij = expit(a_i - s_i d_j), log-slopes centred."""

    def test_objective_matches_betabinomials_and_integration(self, small_panel):
        layout = panel_layout(small_panel)
        y, m = small_panel.successes, small_panel.trials
        rng = np.random.default_rng(6)
        for family in ("normal", "grid"):
            obj = get_pooled_objective(layout, family, DEFAULT_GRID, slope=True)
            assert [name for name, _ in obj.blocks][:3] == ["ability", "log_concentration",
                                                            "log_slope"]
            z = rng.normal(scale=0.5, size=sum(size for _, size in obj.blocks))
            a, kappa = z[:N_SYS] - z[:N_SYS].mean(), np.exp(z[N_SYS:2 * N_SYS])
            s = np.exp(z[2 * N_SYS:3 * N_SYS] - z[2 * N_SYS:3 * N_SYS].mean())
            rest = z[3 * N_SYS:]
            log_w = (log_softmax(rest) if family == "grid" else
                     log_softmax(-0.5 * ((DEFAULT_GRID - rest[0]) / np.exp(rest[1])) ** 2))

            def cell_loglik(j, d):
                mu = expit(a - s * d)
                return sum(stats.betabinom.logpmf(y[i, j], m[i, j], mu[i] * kappa[i],
                                                  (1 - mu[i]) * kappa[i])
                           for i in range(N_SYS) if m[i, j] > 0)

            table = np.array([[cell_loglik(j, d) for d in DEFAULT_GRID] for j in range(4)])
            logp = obj.logp_dlogp(z)[0]
            assert logp == pytest.approx(logsumexp(log_w + table, axis=1).sum(), rel=1e-10)
            assert_gradient_by_differences(obj, z, range(z.size if family == "normal"
                                                         else 3 * N_SYS))
            if family == "normal":
                # the grid sum is the quadrature of integrating a normal difficulty out
                mean, sd = rest[0], np.exp(rest[1])
                grid_value = logsumexp(log_w + table, axis=1)
                for j in range(4):
                    value, _ = integrate.quad(
                        lambda d: np.exp(cell_loglik(j, d)) * stats.norm.pdf(d, mean, sd),
                        mean - 12 * sd, mean + 12 * sd, limit=200)
                    assert grid_value[j] == pytest.approx(np.log(value), rel=1e-7, abs=1e-8)

    def test_recovered_and_chosen_by_bic(self, two_pl):
        fit, a, slopes = two_pl
        table = fit.family_table
        assert table["slope"].tolist() == [False, True]
        assert fit.slope and table.loc[table["selected"], "slope"].item()
        # started from the Rasch optimum, the slope model never ends below it
        assert table["loglik"][1] >= table["loglik"][0] - 1e-8
        assert table["n_params"][1] == table["n_params"][0] + 3
        assert_allclose(fit.slopes, slopes, atol=0.12)
        assert np.prod(fit.slopes) == pytest.approx(1.0)
        assert_allclose(fit.abilities, a - a.mean(), atol=0.25)
        assert_allclose(fit.systems_table()["slope"], fit.slopes)
        assert fit.system(3).info()["slope"] == pytest.approx(fit.slopes[3])
        assert "slope=True" in repr(fit)

    def test_plot_marks_the_difficulty_solved_half_the_time(self, two_pl):
        matplotlib = pytest.importorskip("matplotlib")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from passmix.plots import plot_difficulty

        fit = two_pl[0]
        ax = plot_difficulty(fit)
        at = [t.get_position()[0] for t in ax.texts]
        # expit(a_i - s_i d) = 1/2 there
        assert_allclose(at, fit.abilities / fit.slopes)
        plt.close(ax.figure)

    def test_rasch_data_keep_no_slopes(self):
        rng = np.random.default_rng(9)
        y, m = simulate_2pl(rng, [-1.0, -0.3, 0.3, 1.0], np.zeros(4), rng.normal(0.5, 1.5, 250),
                            10)
        fit = fit_pooled(Panel(y, m), slope="auto", concentration="system", criterion="bic",
                         seed=0)
        assert not fit.slope and fit.family_table["slope"].tolist() == [False, True]
        assert_allclose(fit.slopes, 1.0)
        assert "slope" not in fit.systems_table()

    @pytest.mark.slow
    def test_grid_family_with_slopes(self):
        """The grid's EM profile over 3I coordinates: it starts from the grid's Rasch
        optimum, ends no lower, and its gradient (in every coordinate) is near zero."""
        rng = np.random.default_rng(10)
        y, m = simulate_2pl(rng, [-0.5, 0.0, 0.5], np.array([-0.3, 0.0, 0.3]),
                            np.where(rng.random(120) < 0.5, -1.0, 2.5), 10)
        fit = fit_pooled(Panel(y, m), family="grid", slope="auto", concentration="system",
                         seed=0)
        table = fit.family_table
        assert table["family"].tolist() == ["grid", "grid"]
        assert table["loglik"][1] >= table["loglik"][0] - 1e-6
        if not fit.slope:
            fit = fit_pooled(Panel(y, m), family="grid", slope=True, concentration="system",
                             seed=0)
        assert fit.converged
        assert fit.slopes[0] < 1 < fit.slopes[2]

    def test_delta_gradient_against_differences(self, two_pl):
        assert_delta_gradient_by_differences(two_pl[0], "pass@k", np.array([1, 10, 1000]))

    def test_posterior_average_by_monte_carlo(self, small_panel):
        fit = fit_pooled(small_panel, family="normal", slope=True, seed=0)
        r = fit.task_posterior()
        rng = np.random.default_rng(2)
        i, n = 1, 200_000
        kappa, s = fit.concentrations[i], fit.slopes[i]
        y, m = small_panel.successes[i], small_panel.trials[i]
        values = {1: [], 5: [], 50: []}
        for j in range(r.shape[0]):
            g = rng.choice(r.shape[1], size=n, p=r[j] / r[j].sum())
            mu = expit(fit.abilities[i] - s * fit.grid[g])
            p = rng.beta(mu * kappa + y[j], (1 - mu) * kappa + m[j] - y[j])
            for kk in values:
                values[kk].append(1 - (1 - p) ** kk)
        got = fit.system("b").metric("pass@k", [1, 5, 50])
        assert_allclose(got, [np.mean(values[kk]) for kk in (1, 5, 50)], atol=4e-3)
        # the held-out score of the training tasks is the fit's own likelihood
        assert heldout_loglik(fit, small_panel) == pytest.approx(fit.loglik, rel=1e-10)

    @pytest.mark.unit
    @pytest.mark.parametrize("slope", ["yes", 1, None])
    def test_bad_slope(self, small_panel, slope):
        with pytest.raises(ValueError, match="slope must be"):
            fit_pooled(small_panel, slope=slope)


class TestSharedConcentration:
    """One concentration for every system, against per-system ones, chosen by the criterion."""

    def test_objective_matches_betabinomials(self, small_panel):
        layout = panel_layout(small_panel)
        y, m = small_panel.successes, small_panel.trials
        obj = get_pooled_objective(layout, "normal", DEFAULT_GRID, shared=True)
        assert [size for _, size in obj.blocks] == [N_SYS, 1, 1, 1]
        z = np.random.default_rng(7).normal(scale=0.5, size=N_SYS + 3)
        a, kappa = z[:N_SYS] - z[:N_SYS].mean(), np.exp(z[N_SYS])
        log_w = log_softmax(-0.5 * ((DEFAULT_GRID - z[-2]) / np.exp(z[-1])) ** 2)
        table = np.array([[sum(stats.betabinom.logpmf(y[i, j], m[i, j], expit(a[i] - d) * kappa,
                                                      expit(d - a[i]) * kappa)
                               for i in range(N_SYS) if m[i, j] > 0)
                           for d in DEFAULT_GRID] for j in range(4)])
        logp = obj.logp_dlogp(z)[0]
        assert logp == pytest.approx(logsumexp(log_w + table, axis=1).sum(), rel=1e-10)
        assert_gradient_by_differences(obj, z, range(z.size))

    @pytest.fixture(scope="class")
    @staticmethod
    def equal_kappa():
        rng = np.random.default_rng(12)
        a = np.array([-1.0, -0.3, 0.3, 1.0])
        y, m, _ = simulate_panel(rng, a, [15.0] * 4, rng.normal(1.0, 1.5, 200), 10)
        return fit_pooled(Panel(y, m), seed=0), a

    def test_equal_concentrations_are_shared(self, equal_kappa):
        fit, a = equal_kappa
        table = fit.family_table
        assert list(table["concentration"]) == ["system", "shared"]
        assert table["n_params"][0] - table["n_params"][1] == 3
        assert fit.concentration == "shared" and table["selected"].tolist() == [False, True]
        assert np.ptp(fit.concentrations) == 0.0
        # one concentration estimated from every system's tasks: near the truth
        assert np.log(fit.concentrations[0]) == pytest.approx(np.log(15.0), abs=0.6)
        assert_allclose(fit.abilities, a, atol=0.25)
        assert "concentration='shared'" in repr(fit)
        info = fit.system(0).info()
        assert info["concentration_model"] == "shared"
        assert info["concentration"] == pytest.approx(fit.concentrations[0])

    def test_different_concentrations_are_kept(self):
        rng = np.random.default_rng(13)
        y, m, _ = simulate_panel(rng, [-0.5, 0.0, 0.5], [0.7, 30.0, 1e4], rng.normal(0.5, 1.5, 200),
                           10)
        fit = fit_pooled(Panel(y, m), seed=0)
        assert fit.concentration == "system"
        assert fit.concentrations[0] < 5 < 100 < fit.concentrations[2]

    def test_delta_gradient_against_differences(self, equal_kappa):
        for metric in ("pass@k", "auc@k"):
            assert_delta_gradient_by_differences(equal_kappa[0], metric, np.array([1, 10, 1000]))

    def test_one_system_and_bad_values(self, small_panel):
        one = Panel(small_panel.successes[:1], small_panel.trials[:1])
        fit = fit_pooled(one, seed=0)
        assert fit.family_table["concentration"].tolist() == ["system"]
        with pytest.raises(ValueError, match="unknown concentration 'each'"):
            fit_pooled(small_panel, concentration="each")


def test_plot_difficulty(small_panel):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from passmix.plots import plot_difficulty

    for family in ("normal", "grid"):
        fit = fit_pooled(small_panel, family=family, seed=0)
        ax = plot_difficulty(fit)
        # one label per system, placed at its ability
        labels = {t.get_text(): t.get_position()[0] for t in ax.texts}
        assert set(labels) == {"a", "b", "c"}
        for name, a in zip(fit.systems, fit.abilities):
            assert labels[name] == pytest.approx(a)
        drawn = ax.lines[0].get_ydata() if family == "normal" else np.concatenate(
            [seg[:, 1] for seg in ax.collections[0].get_segments()])
        assert np.max(drawn) == pytest.approx(fit.grid_weights.max())
        plt.close(ax.figure)


def test_one_system():
    """One system: the model is a difficulty distribution with a Beta-binomial layer."""
    rng = np.random.default_rng(0)
    p = rng.beta(1.0, 3.0, size=(1, 200))
    y = rng.binomial(5, p)
    fit = fit_pooled(Panel(y, np.full(p.shape, 5)), family="normal", seed=0)
    assert fit.abilities.tolist() == [0.0]
    # Pass@1 averages the tasks' posterior means: close to the observed rate
    assert fit.system(0).metric("pass@k", 1) == pytest.approx(y.mean() / 5, abs=0.01)
    truth = np.mean(1 - (1 - p) ** 10)
    assert fit.system(0).metric("pass@k", 10) == pytest.approx(truth, abs=0.05)


@pytest.mark.parametrize("criterion", ["aic", "bic"])
def test_auto_family_picks_the_smallest_criterion(small_panel, criterion):
    fit = fit_pooled(small_panel, family="auto", criterion=criterion, seed=0)
    table = fit.family_table
    assert list(table["family"]) == ["normal", "grid"] * 2
    assert list(table["concentration"]) == ["system"] * 2 + ["shared"] * 2
    assert table["selected"].sum() == 1
    chosen = table[table["selected"]].iloc[0]
    assert chosen[criterion] <= table[criterion].min() + 1e-6 * abs(table[criterion].min())
    assert (fit.family, fit.concentration) == (chosen["family"], chosen["concentration"])
    assert_allclose(table["aic"], -2 * table["loglik"] + 2 * table["n_params"])
    # BIC from its parts: -2 loglik + n_params log J
    assert_allclose(table["bic"], -2 * table["loglik"] + table["n_params"] * np.log(4))


@pytest.mark.study
@pytest.mark.slow
@pytest.mark.parametrize("kappa", ["spread", "equal"])
def test_interval_coverage_by_simulation(kappa):
    """95% delta intervals of the pooled model cover the simulated tasks' own metric 90-99%.

    A reduced run of ``benchmarks/coverage_pooled.py`` (30 replicates, 5 systems x 150
    tasks, m = 5): Pass@k and AUC@k at k = 1, 5, 25, pooled over systems and horizons;
    concentrations 3 .. 1e4 (kept per system) or all equal (mostly fitted as one).
    """
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "coverage_pooled.py"
    spec = importlib.util.spec_from_file_location("coverage_pooled", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    k = np.array([1, 5, 25])
    covered = {"pass@k": [], "auc@k": []}
    for rep in range(30):
        rng = np.random.default_rng([2027, rep])
        d = rng.normal(1.0, 1.5, 150)
        mu = expit(study.ABILITY[:, None] - d[None, :])
        concentration = study.KAPPAS[kappa][:, None]
        p = rng.beta(mu * concentration, (1 - mu) * concentration)
        y = rng.binomial(5, p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_pooled(Panel(y, np.full(y.shape, 5)), seed=rep)
            for metric in covered:
                table = fit.delta(metric, k)
                true = study.truth(p, metric, k).ravel()
                covered[metric].append((table["lower"] <= true) & (true <= table["upper"]))
    for metric, hits in covered.items():
        rate = np.mean(np.concatenate(hits))
        assert 0.90 <= rate <= 0.99, (metric, rate)


# -- profile-likelihood intervals ------------------------------------------------------
def _brute_model(y, m, grid):
    """An independent pooled likelihood and Pass@k (scipy's beta-binomial), shared
    concentration, a normal difficulty on `grid`: z = (free abilities, log kappa, mean,
    log sd)."""
    n_sys = y.shape[0]

    def parts(z):
        a = z[:n_sys] - z[:n_sys].mean()
        kappa, mean, sd = np.exp(z[n_sys]), z[n_sys + 1], np.exp(z[n_sys + 2])
        log_w = log_softmax(stats.norm.logpdf(grid, mean, sd))
        mu = expit(a[:, None] - grid[None, :])                         # (I, G)
        al, be = mu * kappa, (1 - mu) * kappa
        ll = stats.betabinom.logpmf(y[:, :, None], m[:, :, None], al[:, None, :],
                                    be[:, None, :]).sum(axis=0)        # (J, G)
        return log_w, ll, al, be

    def loglik(z):
        log_w, ll, _, _ = parts(z)
        return float(logsumexp(log_w[None, :] + ll, axis=1).sum())

    def pass_at_k(z, i, k):
        log_w, ll, al, be = parts(z)
        joint = log_w[None, :] + ll
        r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))   # (J, G)
        a_c, b_c = al[i][None, :] + y[i][:, None], be[i][None, :] + (m[i] - y[i])[:, None]
        from scipy.special import betaln
        fail = np.exp(betaln(a_c, b_c + k) - betaln(a_c, b_c))
        return float((r * (1 - fail)).sum() / y.shape[1])

    return loglik, pass_at_k


def _logit(p: float) -> float:
    p = min(max(p, 1e-300), 1.0 - 1e-16)
    return float(np.log(p) - np.log1p(-p))


def _brute_extremes(loglik, value, z_hat, threshold, box, n_starts=24, seed=0):
    """min and max of value over {loglik >= threshold} by SLSQP from scattered starts."""
    from scipy.optimize import minimize
    from scipy.stats import qmc

    sobol = qmc.Sobol(z_hat.size, seed=seed).random(n_starts)
    # around the estimate, and over the whole box (a bound's plateau is left from afar)
    starts = [z_hat, *(z_hat + (sobol - 0.5) * 6.0),
              *(box[:, 0] + sobol * (box[:, 1] - box[:, 0]))]
    out = []
    for sign in (1.0, -1.0):
        best = value(z_hat)
        for z0 in starts:
            z0 = np.clip(z0, box[:, 0], box[:, 1])
            res = minimize(lambda z: sign * _logit(value(z)), z0,
                           method="SLSQP", bounds=box,
                           constraints=[{"type": "ineq", "fun": lambda z: loglik(z) - threshold}],
                           options={"maxiter": 300, "ftol": 1e-10})
            if loglik(res.x) >= threshold - 1e-6:
                v = value(res.x)
                best = min(best, v) if sign > 0 else max(best, v)
        out.append(best)
    return out


class TestProfile:
    """The pooled model's profile-likelihood intervals."""

    @pytest.fixture(scope="class")
    @staticmethod
    def tiny():
        # a system with no success seen, one with few, one with many: 8 tasks, m = 5
        y = np.array([[0, 0, 0, 0, 0, 0, 0, 0],
                      [0, 1, 0, 2, 1, 0, 3, 0],
                      [2, 4, 1, 5, 3, 2, 5, 1]])
        m = np.full(y.shape, 5)
        fit = fit_pooled(Panel(y, m), seed=0, concentration="shared")
        return y, m, fit

    @pytest.mark.parametrize("cases, n_starts", [
        pytest.param(((0, 1),), 3, marks=pytest.mark.slow),
        pytest.param([(i, k) for i in range(3) for k in (1, 5, 20, 200)], 24,
                     marks=[pytest.mark.slow, pytest.mark.study])])
    def test_model_ends_reach_a_brute_force(self, tiny, cases, n_starts):
        """Every end at least as far out as an independent multistart search finds:
        an interval too narrow is the failure that matters."""
        y, m, fit = tiny
        loglik, pass_at_k = _brute_model(y, m, fit.grid)
        assert loglik(fit.params) == pytest.approx(fit.loglik, abs=1e-6)
        threshold = fit.loglik - 0.5 * stats.chi2.ppf(0.95, 1)
        box = fit.box()
        for i, k in cases:
            assert pass_at_k(fit.params, i, k) == pytest.approx(
                fit.system(i).metric("pass@k", k), rel=1e-6)
            lo, hi = fit.model_ends("pass@k", np.array([k]), 0.95, i)
            blo, bhi = _brute_extremes(loglik, lambda z: pass_at_k(z, i, k), fit.params,
                                       threshold, box, n_starts)
            if i == 0:
                # no success seen: any lower end below ~1e-20 is 0 for every use (the
                # brute force goes past the fit's bound on the ability, to ~1e-40)
                assert lo[0] < 1e-20 and blo < 1e-20
            else:
                assert _logit(lo[0]) <= _logit(blo) + 0.02, (i, k)
            assert _logit(hi[0]) >= _logit(bhi) - 0.02, (i, k)
            # (beyond it is no fault: every end the engine reports is a point of the
            # region, and its relative abilities reach a little past the box the brute
            # force keeps; a multistart with differenced gradients also stops short)

    @pytest.mark.slow
    def test_each_horizon_alone_reaches_past_the_one_below(self, tiny, monkeypatch):
        """Searched one horizon at a time (no warm start from another), the region's
        largest Pass@200 is at least its largest Pass@20: Pass@k rises with k at every
        point, so the maximum does too. A search that left the region along its
        barely bounded direction (the no-success system's ability) once stopped at
        1e-15 here, against 0.37 at k = 20."""
        y, m, _ = tiny
        # with and without the spread's starts (panels above SPREAD_CELLS have none)
        found, spread = {}, passmix.models.pooled._intervals.SPREAD_CELLS
        for cells in (spread, 0):
            monkeypatch.setattr(passmix.models.pooled._intervals, "SPREAD_CELLS", cells)
            fit = fit_pooled(Panel(y, m), seed=0, concentration="shared")
            for i in range(3):
                ends = [fit.model_ends("pass@k", np.array([k]), 0.95, i)[1][0]
                        for k in (20, 200)]
                assert ends[1] >= ends[0] - 1e-9, (cells, i, ends)
                found[cells, i] = ends[1]
        # and without the spread as far as with it: the no-success system's ability,
        # along which the likelihood is flat, is searched from its own edge of the
        # region too (from the gradient's direction alone the search stopped at 0.43
        # or 0.009 against 0.85, as the rounding went)
        for i in range(3):
            assert _logit(found[0, i]) >= _logit(found[spread, i]) - 0.02, (i, found)

    def test_no_success_seen_gets_an_upper_end_and_a_status(self, tiny):
        _, _, fit = tiny
        assert fit.on_bound == [0]
        system = fit.system(0)
        assert "no success seen" in system.status()
        assert system.info()["status"] == system.status()
        lo, hi = system.interval("pass@k", 1)
        assert system.metric("pass@k", 1) < 1e-6
        # 40 failures: a Pass@1 of 0.1 loses about 4 in log-likelihood, 0.01 only 0.4
        assert 0.01 < hi < 0.2
        # the delta method linearises at the bound, where the metric is flat; only its
        # ridge walk (the difficulty mean, flat to its bound with the abilities following)
        # reaches points of the region where the system has left the bound. They lie inside
        # the profile's interval, which searches the whole region
        _, delta_hi = system.interval("pass@k", 1, method="delta")
        assert delta_hi <= hi + 1e-9
        assert "difficulty_mean" in fit.weak_coordinates
        reached = max(fit.metric_values("pass@k", np.array([1]), z, rows=[0])[0, 0]
                      for z in fit.ridge_points(0.95))
        assert delta_hi == pytest.approx(max(reached, system.metric("pass@k", 1)), rel=1e-3)

    @pytest.mark.slow
    def test_orderings_hold_at_the_ends(self, tiny):
        _, _, fit = tiny
        k = [1, 5, 50, 500]
        table = fit.summary(k)
        for s, part in table.groupby("system"):
            ends = {m: part[part["metric"] == m] for m in ("pass@k", "pass^k", "auc@k")}
            for m, rows in ends.items():
                assert (rows["lower"] >= 0).all() and (rows["upper"] <= 1).all()
                assert (rows["lower"] <= rows["estimate"]).all()
                assert (rows["estimate"] <= rows["upper"]).all()
                sign = -1 if m == "pass^k" else 1
                for end in ("lower", "upper"):
                    assert (sign * np.diff(rows[end].to_numpy()) >= -1e-12).all(), (s, m, end)
            for end in ("lower", "upper"):
                hat = ends["pass^k"][end].to_numpy()
                auc = ends["auc@k"][end].to_numpy()
                at = ends["pass@k"][end].to_numpy()
                assert (hat <= at[0] + 1e-12).all() and (at[0] <= auc + 1e-12).all()
                assert (auc <= at + 1e-12).all()

    def test_profile_is_the_default_and_delta_on_request(self, tiny):
        _, _, fit = tiny
        system = fit.system(1)
        assert system.interval_methods[0] == "profile"
        prof = system.interval("pass@k", [1, 20])
        assert_allclose(prof.lower, fit.profile("pass@k", [1, 20], system=1)["lower"])
        delta = system.interval("pass@k", [1, 20], method="delta")
        assert not np.allclose(prof.lower, delta.lower)
        with pytest.raises(ValueError, match="interval method"):
            system.interval("pass@k", 1, method="wald")

    def test_identified_coordinates(self, tiny):
        _, _, fit = tiny
        box = fit.box()
        x_hat, T, P, box_x = passmix.models.pooled._support._profile_coordinates(fit.blocks(), fit.params, box)
        assert_allclose(P @ T, np.eye(x_hat.size), atol=1e-12)
        assert x_hat.size == fit.params.size - 1
        # moving one relative ability moves that system alone: the others' Pass@1 stays
        x = x_hat.copy()
        x[1] += 0.3
        z = fit.params + T @ (x - x_hat)
        before, after = fit.metric_values("pass@k", np.array([1]), None), \
            fit.metric_values("pass@k", np.array([1]), z)
        assert after[1, 0] > before[1, 0]
        loglik, _ = _brute_model(*tiny[:2], fit.grid)
        # and the likelihood does not see the abilities' common shift
        assert loglik(fit.params + 0.7 * np.r_[np.ones(3), np.zeros(3)]) == pytest.approx(
            fit.loglik, abs=1e-6)


@pytest.mark.unit
class TestTaskSpread:
    def test_small_spread_is_the_probability_scale_quadrature(self):
        from passmix.inference import with_metric_spread
        base = np.array([0.3, 0.5])
        lower, upper = np.array([0.28, 0.47]), np.array([0.33, 0.52])
        var = np.array([1e-6, 4e-6])
        lo, hi = with_metric_spread(base, lower, upper, var, 1.96)
        assert_allclose(lo, base - np.hypot(base - lower, 1.96 * np.sqrt(var)), rtol=2e-3)
        assert_allclose(hi, base + np.hypot(upper - base, 1.96 * np.sqrt(var)), rtol=2e-3)

    def test_ends_stay_inside_zero_one(self):
        from passmix.inference import with_metric_spread
        # one task carries the metric: the probability scale would cut the lower end to 0
        base = np.array([1e-3, 1e-30, 0.999])
        var = np.array([1e-6, 1e-58, 1e-6])
        lo, hi = with_metric_spread(base, base * 0.5, base * 1.5 - np.r_[0, 0, 0.5], var, 1.96)
        assert (lo > 0).all() and (lo < base).all()
        assert (hi > base).all() and (hi < 1).all()
        # and nothing but the parameters' ends where the tasks add nothing
        lo0, hi0 = with_metric_spread(base, base * 0.5, np.minimum(base * 1.5, 1.0),
                                     np.zeros(3), 1.96)
        assert_allclose(lo0, base * 0.5)


class TestSpreadQuantiles:
    """Issue 48: where few tasks carry a metric, its spread given the parameters is its own
    distribution (drawn), not a log-normal matched to two moments."""

    @pytest.mark.unit
    def test_quantiles_replace_the_log_normal_where_given(self):
        from passmix.inference import with_metric_spread
        base = np.array([1e-3, 0.3, 0.9])
        lower, upper = base * 0.9, np.minimum(base * 1.1, 1.0)
        var = np.array([1e-6, 1e-4, 1e-4])
        ln = with_metric_spread(base, lower, upper, var, 1.96)
        # NaN quantiles: the log-normal, unchanged
        nan = np.full(3, np.nan)
        assert_allclose(with_metric_spread(base, lower, upper, var, 1.96, (nan, nan)), ln)
        # a lower quantile of 0 (one task carries the metric and is most likely ~0)
        # takes the lower end to 0; the upper end combines its offset on log(1 - M)
        q_lo, q_hi = np.array([0.0, np.nan, 0.85]), np.array([3e-3, np.nan, 0.95])
        lo, hi = with_metric_spread(base, lower, upper, var, 1.96, (q_lo, q_hi))
        assert lo[0] == 0.0 and lo[1] == ln[0][1] and hi[1] == ln[1][1]
        offset = np.hypot(np.log(1 - base[0]) - np.log(1 - upper[0]),
                          np.log(1 - base[0]) - np.log(1 - 3e-3))
        assert hi[0] == pytest.approx(1 - (1 - base[0]) * np.exp(-offset), rel=1e-12)
        model = np.log(base[2] / lower[2])
        assert lo[2] == pytest.approx(base[2] * np.exp(-np.hypot(model, np.log(0.9 / 0.85))))

    @pytest.fixture(scope="class")
    @staticmethod
    def skewed():
        """5 systems x 200 tasks, m = 5, the first with a U-shaped spread (concentration 3):
        its Pass^125 is carried by a handful of tasks."""
        rng = np.random.default_rng([2026, 4])
        d = rng.normal(1.0, 1.5, 200)
        y, m, _ = simulate_panel(rng, np.linspace(-1, 1, 5), [3.0, 10.0, 30.0, 100.0, 1e4],
                                 d, 5)
        return fit_pooled(Panel(y, m), seed=4)

    @staticmethod
    def brute_force_spread(fit, i: int, k: int) -> np.ndarray:
        """2.5% and 97.5% quantiles of system i's Pass^k over the tasks given the
        parameters, by an independent draw: each task's difficulty from its whole
        posterior, then its success probability from the Beta given its counts, task by
        task (every task drawn)."""
        from scipy.special import expit
        r = fit.task_posterior()
        eta = fit.abilities[i] - fit.grid
        kappa = fit.concentrations[i]
        y, m = fit.panel.successes[i], fit.panel.trials[i]
        rng = np.random.default_rng(99)
        draws = np.zeros(8000)
        for j in range(r.shape[0]):
            g = rng.choice(r.shape[1], size=draws.size, p=r[j] / r[j].sum())
            mu = expit(eta[g])
            theta = rng.beta(kappa * mu + y[j], kappa * (1 - mu) + m[j] - y[j])
            draws += theta ** k / r.shape[0]
        return np.quantile(draws, [0.025, 0.975])

    def test_drawn_quantiles_match_brute_force(self, skewed):
        fit, i, k = skewed, 0, 125
        want = self.brute_force_spread(fit, i, k)
        q_lo, q_hi = fit.metric_spread_quantiles("pass^k", np.array([k]), 0.95, rows=[i])
        assert np.isfinite(q_lo[0, 0]), "few tasks carry Pass^125: its quantiles are drawn"
        # Monte Carlo error of a 2.5% quantile of 2,000 and 8,000 draws, on a log scale
        # where the lower tail spans decades
        assert abs(np.log(q_lo[0, 0] / want[0])) < 0.5 * abs(np.log(want[0]))
        assert q_hi[0, 0] == pytest.approx(want[1], rel=0.15)
        # its lower end reaches the draws' (a log-normal's stayed 1e3 above them)
        table = fit.delta("pass^k", [k], system=fit.systems[i])
        assert table["lower"].iloc[0] <= q_lo[0, 0] * (1 + 1e-9)

    def test_rare_successes_do_not_floor_the_lower_end(self):
        # 6 systems x 128 tasks at 1-9% success, m = 10 (docs/results/pooled_reorder.py's
        # design): the tasks not drawn, once added at their means of p^100 (carried by
        # their posteriors' far tails), floored the lower end at 5e-24 where the draws of
        # every task put it near 1e-72, and the truth over the tasks sat below it in half
        # the replicates
        from scipy.special import expit
        rng = np.random.default_rng([2026, 10, 100, 0])
        d = rng.normal(5.0, 2.0, 128)
        mu = expit(np.linspace(-1.5, 1.5, 6)[:, None] - d[None, :])
        p = rng.beta(20 * mu, 20 * (1 - mu))
        y = rng.binomial(10, p)
        fit = fit_pooled(Panel(y, np.full(y.shape, 10)), seed=0)
        k = 100
        want = self.brute_force_spread(fit, 0, k)
        q_lo, q_hi = fit.metric_spread_quantiles("pass^k", np.array([k]), 0.95, rows=[0])
        assert abs(np.log(q_lo[0, 0] / want[0])) < 0.2 * abs(np.log(want[0])), (q_lo, want)
        assert q_hi[0, 0] >= want[1] * 0.8

    def test_a_systems_ends_do_not_depend_on_its_row(self, skewed):
        """The draws are seeded by each system's own counts: the same panel with its
        systems in the reverse order gives every system the same drawn quantiles, and the
        same delta interval (Pass^125 is drawn for the U-shaped system)."""
        panel = skewed.panel
        back = Panel(panel.successes[::-1], panel.trials[::-1], systems=panel.systems[::-1],
                     tasks=panel.tasks)
        other = fit_pooled(back, seed=4)
        assert other.loglik == pytest.approx(skewed.loglik, abs=1e-6)
        k = np.array([5, 125])
        q = skewed.metric_spread_quantiles("pass^k", k, 0.95)
        q_back = other.metric_spread_quantiles("pass^k", k, 0.95)
        assert np.isfinite(q[0][0]).all()
        assert_allclose(q[0], q_back[0][::-1], rtol=1e-5)
        assert_allclose(q[1], q_back[1][::-1], rtol=1e-5)
        for label in panel.systems:
            want = skewed.system(label).interval("pass^k", k, method="delta")
            got = other.system(label).interval("pass^k", k, method="delta")
            assert_allclose(got, want, rtol=1e-5, atol=1e-12)

    def test_many_tasks_keep_the_log_normal(self, skewed):
        q_lo, _ = skewed.metric_spread_quantiles("pass@k", np.array([1]), 0.95)
        assert np.isnan(q_lo).all()


@pytest.mark.slow
def test_pass_hat_k_far_beyond_the_trials_covers():
    """The pooled delta interval of Pass^125 from m = 5, simulated from the model itself
    (``benchmarks/coverage_pooled.py``'s design, 16 replicates x 5 systems): the log-normal
    spread covered 75%; its own distribution covers ~92% (30 replicates)."""
    from scipy.special import expit
    hits = []
    for rep in range(16):
        rng = np.random.default_rng([2026, rep])
        d = rng.normal(1.0, 1.5, 200)
        mu = expit(np.linspace(-1, 1, 5)[:, None] - d[None, :])
        kappa = np.array([3.0, 10.0, 30.0, 100.0, 1e4])[:, None]
        p = rng.beta(mu * kappa, (1 - mu) * kappa)
        y = rng.binomial(5, p)
        fit = fit_pooled(Panel(y, np.full(y.shape, 5)), seed=rep)
        table = fit.delta("pass^k", [125])
        truth = np.mean(p ** 125, axis=1)
        hits += list((table["lower"] <= truth) & (truth <= table["upper"]))
    assert np.mean(hits) >= 0.85, np.mean(hits)


class TestSandwich:
    """The task-level sandwich that widens the pooled intervals where the model is wrong."""

    @pytest.fixture(scope="class")
    @staticmethod
    def fits():
        rng = np.random.default_rng(11)
        d = rng.normal(0.0, 1.5, 150)
        a = np.array([-1.0, 0.0, 1.0])
        y, m, _ = simulate_panel(rng, a, np.full(3, 1e4), d, 20)
        right = fit_pooled(Panel(y, m), seed=0)
        # the third system sees the tasks in another order: its own difficulties
        y2 = y.copy()
        y2[2], _, _ = simulate_panel(rng, a[2:], np.full(1, 1e4), rng.permutation(d), 20)
        wrong = fit_pooled(Panel(y2, m), seed=0)
        return right, wrong

    def test_task_scores_sum_to_the_score(self, fits):
        for fit in fits:
            derivatives = fit.derivatives()
            assert_allclose(derivatives.task_scores().sum(axis=1), derivatives.score(),
                            atol=1e-8)

    def test_inflation_near_one_where_the_model_holds(self, fits):
        right, _ = fits
        for k in (1, 10, 100):
            assert (right.inflation("pass@k", k) < 1.6).all()

    def test_inflation_finds_a_system_that_reorders_tasks(self, fits):
        right, wrong = fits
        # (its own small concentration takes up much of the misfit; the rest shows here)
        assert wrong.inflation("pass@k", 10)[2] > max(1.15, right.inflation("pass@k", 10).max())
        # and its intervals widen with it, profile and delta alike
        for method in ("profile", "delta"):
            robust = wrong.system(2).interval("pass@k", 10, method=method)
            from dataclasses import replace
            plain = replace(wrong, robust=False, _cache={}).system(2).interval(
                "pass@k", 10, method=method)
            # (the tasks' own spread, which the sandwich leaves alone, is most of the width)
            assert robust.lower <= plain.lower + 1e-12 and robust.upper >= plain.upper - 1e-12
            assert robust.upper - robust.lower > plain.upper - plain.lower


@pytest.mark.slow
def test_large_panels_default_to_delta_but_profile_a_system_on_its_bound(monkeypatch):
    """Beyond PROFILE_CELLS the default is delta, except where the delta method says nothing."""
    y = np.array([[0, 0, 0, 0, 0, 0], [0, 1, 0, 2, 1, 0], [2, 4, 1, 5, 3, 2]])
    fit = fit_pooled(Panel(y, np.full(y.shape, 5)), seed=0, concentration="shared")
    small = fit.summary([1, 10])
    assert_allclose(small["lower"], fit.summary([1, 10], method="profile")["lower"])
    monkeypatch.setattr(passmix.models.pooled.result, "PROFILE_CELLS", 10)
    table = fit.summary([1, 10])
    profile = fit.summary([1, 10], method="profile")
    delta = fit.summary([1, 10], method="delta")
    for s, want in ((0, profile), (1, delta), (2, delta)):
        got, ref = table[table["system"] == s], want[want["system"] == s]
        assert_allclose(got["upper"], ref["upper"], rtol=1e-12)
    assert fit.system(0).interval("pass@k", 1).upper == pytest.approx(
        profile.loc[(profile["system"] == 0) & (profile["metric"] == "pass@k"), "upper"].iloc[0])


class TestSystemLoglik:
    def test_each_system_by_brute_force(self, small_panel):
        """Each system's tasks as fresh draws: a grid sum of Beta-binomials, scipy's pmf."""
        fit = fit_pooled(small_panel, seed=0)
        a, kappa = fit.abilities, fit.concentrations
        slope = fit.slopes if fit.slope else np.ones(3)
        y, m = small_panel.successes, small_panel.trials
        for i in range(3):
            mu = expit(a[i] - slope[i] * fit.grid)
            want = sum(np.log(np.sum(fit.grid_weights * stats.betabinom.pmf(
                y[i, j], m[i, j], mu * kappa[i], (1 - mu) * kappa[i]))) for j in range(4))
            # the fit sits at the binomial limit (a concentration of ~1.2e6), where scipy's
            # pmf rounds its log-beta differences at ~1e-9 each: between machines the two
            # differed by up to 6e-9, a wrong term would by far more than 1e-7
            assert fit.system_loglik()[i] == pytest.approx(want, rel=1e-9, abs=1e-7)

    def test_one_system_is_the_fit_loglik(self):
        rng = np.random.default_rng(1)
        y = rng.binomial(6, rng.beta(1.0, 2.0, size=(1, 60)))
        fit = fit_pooled(Panel(y, np.full(y.shape, 6)), seed=0)
        assert fit.system_loglik()[0] == pytest.approx(fit.loglik, rel=1e-9)

    def test_the_mixture_scale(self):
        """Where the pooled model holds, twice the gap to a free Beta per system is small.

        Tasks are Beta(1, 3) draws for every system (one shared distribution, no
        order), so a per-system Beta mixture can gain about one parameter's worth
        of log-likelihood, not more; the two must share one scale for that.
        """
        rng = np.random.default_rng(2)
        p = rng.beta(1.0, 3.0, size=(2, 150))
        y = rng.binomial(10, p)
        fit = fit_pooled(Panel(y, np.full(y.shape, 10)), seed=0)
        for i in range(2):
            mixture = passmix.fit(passmix.Counts(y[i], np.full(150, 10)), seed=0)
            assert -4.0 < 2 * (mixture.loglik - fit.system_loglik()[i]) < 12.0


class TestDifference:
    """``PooledFit.difference``: the estimate, its gradient and its task covariance."""

    @pytest.fixture(scope="class")
    @staticmethod
    def ragged():
        rng = np.random.default_rng(5)
        d = rng.normal(0.5, 1.5, size=30)
        p = expit(np.array([[-0.8], [0.0], [0.8]]) - d[None, :])
        m = np.full(p.shape, 6)
        m[0, :4] = 0     # system "a" did not run the first four tasks
        m[2, 10] = 3
        y = rng.binomial(m, p)
        return fit_pooled(Panel(y, m, systems=["a", "b", "c"]), seed=0, concentration="shared")

    @staticmethod
    def posterior_means(fit, i, metric, k):
        """(J, K) each task's posterior expectation of the metric of system i's p there."""
        r = fit.task_posterior()
        slope = fit.slopes[i] if fit.slope else 1.0
        mu = expit(fit.abilities[i] - slope * fit.grid)
        alpha, beta = fit.concentrations[i] * mu, fit.concentrations[i] * (1 - mu)
        y, m = fit.panel.successes[i], fit.panel.trials[i]
        return np.array([passmix.metric_value(metric, r[j], alpha + y[j], beta + m[j] - y[j], k)
                         for j in range(r.shape[0])])

    @pytest.mark.parametrize("metric", ["pass@k", "pass^k", "auc@k"])
    def test_estimate_by_brute_force_on_shared_tasks(self, ragged, metric):
        k = [1, 4, 40]
        estimate, _, values = ragged.difference("a", "c", metric, k)
        shared = np.arange(30) >= 4
        want_a = self.posterior_means(ragged, 0, metric, k)[shared].mean(axis=0)
        want_c = self.posterior_means(ragged, 2, metric, k)[shared].mean(axis=0)
        assert_allclose(values, [want_a, want_c], rtol=1e-9, atol=1e-12)
        assert_allclose(estimate, want_c - want_a, rtol=1e-9, atol=1e-12)
        # over every task (b and c ran all) it is the two systems' own metrics
        full, _, _ = ragged.difference("b", "c", metric, k)
        assert_allclose(full, ragged.metric(metric, k)[2]
                        - ragged.metric(metric, k)[1], rtol=1e-9, atol=1e-12)

    def test_gradient_by_differences_on_shared_tasks(self, ragged):
        k = np.array([1, 30])
        share = (np.arange(30) >= 4).astype(float)
        active = np.diag(ragged.covariance_matrix()) > 0
        grads, _ = ragged.logit_gradients("pass@k", k, active, rows=[0, 2], tasks=share)
        def central(c, step):
            up, down = ragged.params.copy(), ragged.params.copy()
            up[c] += step
            down[c] -= step
            return (ragged.metric_logits("pass@k", k, up, [0, 2], share)
                    - ragged.metric_logits("pass@k", k, down, [0, 2], share)) / (2 * step)

        for c in np.flatnonzero(active):
            step = 1e-4 * max(1.0, abs(ragged.params[c]))
            fd = (4.0 * central(c, step / 2) - central(c, step)) / 3.0   # Richardson
            assert_allclose(grads[c], fd, rtol=1e-4, atol=1e-6)

    @pytest.mark.parametrize("metric, k, rtol", [("pass@k", [1, 5, 60], 0.06),
                                                 ("pass^k", [1, 3, 6], 0.06),
                                                 ("auc@k", [2, 20], 0.06),
                                                 ("auc@k", [200], 0.15)])
    def test_task_covariance_by_monte_carlo(self, ragged, metric, k, rtol):
        """Draw each task's difficulty from its posterior, then each system's p given it."""
        fit, rng, n_draws = ragged, np.random.default_rng(0), 20000
        mask = np.arange(30) >= 4
        r = fit.task_posterior()[mask]
        g = np.array([rng.choice(r.shape[1], size=n_draws, p=row / row.sum()) for row in r])
        draws = []
        for i in (0, 2):
            mu = expit(fit.abilities[i] - fit.grid[g])                    # (n, draws)
            y = fit.panel.successes[i][mask][:, None]
            f = fit.panel.trials[i][mask][:, None] - y
            p = rng.beta(fit.concentrations[i] * mu + y, fit.concentrations[i] * (1 - mu) + f)
            one = np.stack([1 - (1 - p) ** kv if metric == "pass@k" else p ** kv if
                            metric == "pass^k" else
                            1 - (1 - p) * (1 - (1 - p) ** kv) / np.maximum(p, 1e-300) / kv
                            for kv in k], axis=-1)                        # (n, draws, K)
            draws.append(one.mean(axis=0))
        # both systems' metrics at every horizon, system-major, and their difference
        want = np.cov(np.concatenate(draws, axis=1).T)
        got = fit.task_covariance(metric, np.array(k), [0, 2], mask)
        assert_allclose(np.sqrt(np.diag(got)), np.sqrt(np.diag(want)), rtol=rtol)
        corr = got / np.sqrt(np.outer(np.diag(got), np.diag(got)))
        assert_allclose(corr, want / np.sqrt(np.outer(np.diag(want), np.diag(want))), atol=0.05)
        diff = np.atleast_2d(np.cov((draws[1] - draws[0]).T))
        contrast = np.concatenate([-np.eye(len(k)), np.eye(len(k))], axis=1)
        assert_allclose(np.sqrt(np.diag(contrast @ got @ contrast.T)), np.sqrt(np.diag(diff)),
                        rtol=rtol)

    def test_metric_covariance_holds_the_differences(self, ragged):
        """Every system's covariance at one k gives each pair's difference variance, as
        ``difference`` computes it on the same tasks (without the sandwich, which widens
        each contrast by its own ratio)."""
        from dataclasses import replace

        fit = replace(ragged, robust=False, _cache={})
        every = np.ones(30, dtype=bool)
        values, cov = fit.metric_covariance("pass@k", 20)
        assert_allclose(values, fit.metric("pass@k", 20), rtol=1e-12)
        for a, b in ((0, 1), (0, 2), (1, 2)):
            estimate, var, _ = fit.difference(fit.systems[a], fit.systems[b], "pass@k", 20,
                                              tasks=every)
            assert estimate[0] == pytest.approx(values[b] - values[a], rel=1e-12)
            assert var[0, 0] == pytest.approx(cov[a, a] + cov[b, b] - 2 * cov[a, b], rel=1e-9)
        with pytest.raises(ValueError, match="one horizon"):
            fit.metric_covariance("pass@k", [1, 2])

    def test_many_pairs_at_once_are_each_pair_alone(self, ragged):
        """``differences`` shares the systems' gradients and task covariance over pairs
        with the same tasks; each pair's answer is the one-pair computation's."""
        k = np.array([1, 5, 50])
        every = np.ones(30, dtype=bool)
        shared = np.arange(30) >= 4
        pairs = [(0, 1), (0, 2), (1, 2), (2, 1)]
        masks = [shared, shared, every, every]
        batch = ragged.differences(pairs, "pass^k", k, masks)
        for (a, b), mask, (estimate, covariance, values) in zip(pairs, masks, batch):
            alone = ragged.probability_gradients("pass^k", k, [a, b], mask)[0]
            assert_allclose(values, alone, rtol=1e-12)
            assert_allclose(estimate, alone[1] - alone[0], rtol=1e-12, atol=1e-15)
            one = ragged.differences([(a, b)], "pass^k", k, [mask])[0][1]
            assert_allclose(covariance, one, rtol=1e-9, atol=1e-15)
        # b - a and a - b: the same covariance
        assert_allclose(batch[2][1], batch[3][1], rtol=1e-12)

    @pytest.mark.parametrize("metric, k", [("pass@k", [1, 30]), ("pass^k", [2, 6])])
    def test_profile_by_brute_force(self, ragged, metric, k):
        """No point of the likelihood region has a difference beyond the profile's ends,
        and the region's edge along the delta direction is within them."""
        from dataclasses import replace

        from passmix.inference.profile import region_drop
        from passmix.models.pooled import panel_layout

        fit = replace(ragged, robust=False, _cache={})
        k = np.array(k)
        level = 0.9
        obj = get_pooled_objective(panel_layout(fit.panel), fit.family, fit.grid,
                                   n_components=fit.n_components, slope=fit.slope,
                                   shared=fit.concentration == "shared")
        assert obj.logp_dlogp(fit.params)[0] == pytest.approx(fit.loglik, rel=1e-9)
        threshold = fit.loglik - region_drop(level)
        share = (np.arange(30) >= 4).astype(float)
        lower, upper = fit.difference_profile("a", "c", metric, k, level)
        estimate, covariance, _ = fit.difference("a", "c", metric, k)
        contrast = np.concatenate([-np.eye(k.size), np.eye(k.size)], axis=1)
        spread = 1.6448536 * np.sqrt(np.diag(
            contrast @ fit.task_covariance(metric, k, [0, 2], share > 0) @ contrast.T))

        def diff(z):
            both = fit.metric_values(metric, k, z, rows=[0, 2], tasks=share)
            return both[1] - both[0]

        def inside(direction):
            """The region's edge from the optimum along `direction` (bisection)."""
            lo, hi = 0.0, 1.0
            while obj.logp_dlogp(fit.params + hi * direction)[0] >= threshold:
                hi *= 2.0
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if obj.logp_dlogp(fit.params + mid * direction)[0] \
                    >= threshold else (lo, mid)
            return fit.params + lo * direction

        values, vectors = np.linalg.eigh(fit.covariance_matrix())
        root = vectors * np.sqrt(np.maximum(values, 0.0))
        rng = np.random.default_rng(0)
        seen = np.array([diff(inside(root @ rng.standard_normal(root.shape[1])))
                         for _ in range(150)])
        assert np.all(seen <= upper[None] + 1e-9) and np.all(seen >= lower[None] - 1e-9)
        _, grads = fit.probability_gradients(metric, k, [0, 2], share > 0)
        for n in range(k.size):
            g = grads[:, 1, n] - grads[:, 0, n]
            far = diff(inside(fit.covariance_matrix() @ g))[n]
            near = diff(inside(-fit.covariance_matrix() @ g))[n]
            assert upper[n] >= estimate[n] + np.hypot(far - estimate[n], spread[n]) - 1e-6
            assert lower[n] <= estimate[n] - np.hypot(estimate[n] - near, spread[n]) + 1e-6

    def test_profile_agrees_with_delta_when_the_data_say_much(self):
        """Far from any bound, with many tasks, the likelihood is near quadratic: the
        profile's ends are the delta method's to within a few percent of the width."""
        from dataclasses import replace

        rng = np.random.default_rng(11)
        y, m, _ = simulate_panel(rng, [-0.3, 0.3], [20.0, 20.0], rng.normal(0.0, 1.0, 400), 10)
        fit = replace(fit_pooled(Panel(y, m), seed=0), robust=False, _cache={})
        k = [1, 10, 100]
        lower, upper = fit.difference_profile(0, 1, "pass@k", k)
        estimate, covariance, _ = fit.difference(0, 1, "pass@k", k)
        half = 1.959964 * np.sqrt(np.diag(covariance))
        assert_allclose(lower, estimate - half, atol=0.08 * half.max())
        assert_allclose(upper, estimate + half, atol=0.08 * half.max())

    def test_bad_input(self, ragged):
        with pytest.raises(ValueError, match="mask"):
            ragged.difference_profile("a", "b", "pass@k", 5, tasks=[True, False])
        with pytest.raises(ValueError, match="level"):
            ragged.difference_profile("a", "b", "pass@k", 5, level=1.5)
        with pytest.raises(ValueError, match="mask"):
            ragged.difference("a", "b", "pass@k", 5, tasks=[True, False])
        with pytest.raises(ValueError, match="share no task"):
            ragged.difference("a", "b", "pass@k", 5, tasks=np.zeros(30, bool))
        with pytest.raises(KeyError):
            ragged.difference("a", "zz", "pass@k", 5)


def test_delta_keeps_its_width_at_huge_horizons():
    """AUC@k at k = 1e12 and 1e18 of three strong systems is 1 - 1e-13 and rounds to 1.

    The delta interval there used to be exactly [1, 1] at 1e18: the metric and
    both logit-scale ends round to 1 and nothing kept them apart. Now one end
    stays a double away, and the interval agrees with the profile's on the
    logit scale (ends capped at that of 1 - 2^-52, since doubles near 1 resolve
    1 - M only to ~1e-16): within 0.25 of the profile's logit width, the
    tolerance of the mixture's check in ``tests/test_inference_delta.py``
    (80 tasks x 3 systems leave a near-quadratic likelihood; the two agree to
    ~0.02 of the width at 1e12 and both round to [1 - 2^-53, 1] at 1e18).
    """
    rng = np.random.default_rng(1)
    d = rng.normal(-2.5, 0.7, size=80)
    p = expit(np.array([[-0.5], [0.0], [0.5]]) - d)
    panel = Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["a", "b", "c"])
    fit = fit_pooled(panel, seed=0)
    ks = [10**12, 10**18]
    for metric in ("pass@k", "pass^k", "auc@k"):
        table = fit.delta(metric, ks, system="a")
        assert np.all(table["lower"] < table["upper"]), table
        assert np.all((table["lower"] <= table["estimate"]) & (table["estimate"] <= table["upper"]))
    delta, profile = fit.delta("auc@k", ks, system="a"), fit.profile("auc@k", ks, system="a")
    # the case: the metric itself rounds to 1 (or to the double below it: the last bit
    # depends on the machine's summation order)
    assert delta["estimate"].iloc[1] >= 1.0 - 2.0 ** -52

    def capped_logit(q):
        q = np.asarray(q, dtype=float)
        with np.errstate(divide="ignore"):
            return np.minimum(np.log(q) - np.log1p(-q), -np.log(2.0 ** -52))

    width = capped_logit(profile["upper"]) - capped_logit(profile["lower"])
    for end in ("lower", "upper"):
        gap = np.abs(capped_logit(delta[end]) - capped_logit(profile[end]))
        assert np.all(gap <= 0.25 * width + 1e-9), (delta, profile)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def shard_panel():
    rng = np.random.default_rng(2)
    m = np.where(rng.random((12, 45)) < 0.15, 0, 8)
    y, _, _ = simulate_panel(rng, rng.normal(0, 1, 12), np.exp(rng.normal(1, 0.5, 12)),
                             rng.normal(0, 1.5, 45), m)
    return Panel(y, m)


class TestOnDask:
    """The fit on a Dask cluster (shards of tasks) is the in-process fit."""

    def test_the_shards_sum_to_the_whole(self, dask_client, shard_panel):
        """Log-likelihood, gradient and Hessian over three shards against the whole panel's."""
        from passmix.models.pooled import TaskShards

        shards = TaskShards(dask_client, shard_panel, n_shards=3)
        assert [t.size for t in shards.tasks] == [15, 15, 15]
        layout = panel_layout(shard_panel)
        whole = get_pooled_objective(layout, "normal", DEFAULT_GRID, slope=True)
        sharded = shards.objective("normal", slope=True)
        sharded.set_data(layout, DEFAULT_GRID)
        z = np.random.default_rng(0).normal(scale=0.3, size=sum(s for _, s in whole.blocks))
        with whole.lock:
            whole.set_data(layout, DEFAULT_GRID)
            logp, grad = whole.logp_dlogp(z)
            hess = whole.hessian(z)
        got_logp, got_grad = sharded.logp_dlogp(z)
        assert got_logp == pytest.approx(logp, rel=1e-12)
        assert_allclose(got_grad, grad, rtol=1e-10, atol=1e-10 * np.abs(grad).max())
        assert_allclose(sharded.hessian(z), hess, rtol=1e-9, atol=1e-9 * np.abs(hess).max())

    @pytest.mark.parametrize("kwargs", [dict(concentration="system"),
                                        dict(max_components=2, concentration="shared")])
    def test_the_same_optimum(self, dask_client, shard_panel, kwargs):
        local = fit_pooled(shard_panel, seed=0, n_init=1, **kwargs)
        sharded = fit_pooled(shard_panel, seed=0, n_init=1, client=dask_client, n_shards=2,
                             **kwargs)
        assert sharded.loglik == pytest.approx(local.loglik, abs=1e-6)
        assert_allclose(sharded.params, local.params, atol=1e-5)
        assert_allclose(sharded.family_table["loglik"], local.family_table["loglik"], atol=1e-6)
        columns = ["estimate", "lower", "upper"]
        assert_allclose(sharded.summary(k=[1, 10], method="delta")[columns].to_numpy(),
                        local.summary(k=[1, 10], method="delta")[columns].to_numpy(), atol=1e-5)

    @pytest.mark.unit
    def test_options_it_refuses(self, shard_panel):
        client = object()  # never reached: the options are checked first
        with pytest.raises(ValueError, match="family='normal'"):
            fit_pooled(shard_panel, family="grid", client=client)
        with pytest.raises(ValueError, match="family='normal'"):
            fit_pooled(shard_panel, criterion="heldout", client=client)
        with pytest.raises(ValueError, match="pass client="):
            fit_pooled(shard_panel, n_shards=2)
