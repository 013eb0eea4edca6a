"""The metric over the observed tasks given the prior (passmix.inference.spread), against
numerical integration of each task's posterior and brute-force draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln

from passmix.inference.spread import (SPREAD_TASKS, beta_power_moments, task_posteriors,
                                      tasks_metric_logit, tasks_metric_quantiles)

pytestmark = pytest.mark.unit

# a two-component prior with an atom at 0
ZERO, W, A, B = 0.2, np.array([0.4, 0.6]), np.array([0.7, 4.0]), np.array([6.0, 1.5])
Y, M = np.array([0, 0, 1, 3, 5, 2]), np.array([5, 5, 5, 5, 5, 4])


def posterior_expectation(g, y, m):
    """E[g(p) | y of m] under the prior (ZERO, W, A, B), by quadrature."""
    def dens(p):
        return np.sum(W * stats.beta.pdf(p, A, B)) * (1 - ZERO) * p ** y * (1 - p) ** (m - y)

    atom = ZERO * (1.0 if y == 0 else 0.0)
    norm = integrate.quad(dens, 0, 1, limit=200, points=[1e-3, 0.5])[0] + atom
    num = integrate.quad(lambda p: dens(p) * g(p), 0, 1, limit=200, points=[1e-3, 0.5])[0]
    return (num + atom * g(0.0)) / norm


@pytest.mark.parametrize("metric, k", [("pass@k", 1), ("pass@k", 30), ("pass^k", 3),
                                       ("pass^k", 12)])
def test_value_is_the_mean_of_each_tasks_posterior_metric(metric, k):
    g = (lambda p: 1 - (1 - p) ** k) if metric == "pass@k" else (lambda p: p ** k)
    truth = np.mean([posterior_expectation(g, y, m) for y, m in zip(Y, M)])
    u, v = tasks_metric_logit(metric, ZERO, W, A, B, Y, M, np.ones(Y.size), k)
    assert float(v) == pytest.approx(truth, rel=1e-7)
    assert float(u) == pytest.approx(np.log(truth / (1 - truth)), rel=1e-6)


def test_multiplicity_counts_a_pair_as_that_many_tasks():
    pairs_y, pairs_m, mult = np.array([0, 3]), np.array([5, 5]), np.array([3.0, 1.0])
    _, grouped = tasks_metric_logit("pass@k", ZERO, W, A, B, pairs_y, pairs_m, mult, 50)
    _, spelled = tasks_metric_logit("pass@k", ZERO, W, A, B, np.array([0, 0, 0, 3]),
                                    np.array([5, 5, 5, 5]), np.ones(4), 50)
    assert float(grouped) == pytest.approx(float(spelled), rel=1e-12)


def test_batch_axes_match_one_at_a_time():
    zeros = np.array([0.0, 0.3])
    ws = np.array([W, W[::-1]])
    u, _ = tasks_metric_logit("pass^k", zeros, ws, A[None], B[None], Y, M, np.ones(Y.size), 7)
    for i in range(2):
        one, _ = tasks_metric_logit("pass^k", zeros[i], ws[i], A, B, Y, M, np.ones(Y.size), 7)
        assert u[i] == pytest.approx(float(one), rel=1e-12)


def test_logit_keeps_its_accuracy_far_beyond_the_trials():
    # Pass^k at k = 10^5 of the one task solved 5 of 5 times is ~1e-?, not 0
    u, v = tasks_metric_logit("pass^k", 0.0, W, A, B, Y, M, np.ones(Y.size), 100_000)
    assert np.isfinite(u) and 0 < v < 1e-3
    post = task_posteriors(Y, M, W, A, B)
    direct = np.sum(post.weights * np.exp(betaln(post.alpha + 1e5, post.beta)
                                          - betaln(post.alpha, post.beta)), axis=1).mean()
    assert float(v) == pytest.approx(direct, rel=1e-9)


def test_posterior_weights_match_bayes_rule():
    post = task_posteriors(Y, M, W, A, B, zero_weight=ZERO)
    for j, (y, m) in enumerate(zip(Y, M)):
        evidence = (1 - ZERO) * W * np.exp(betaln(A + y, B + m - y) - betaln(A, B))
        atom = ZERO if y == 0 else 0.0
        total = evidence.sum() + atom
        np.testing.assert_allclose(post.weights[j], evidence / total, rtol=1e-12)
        assert post.zero[j] == pytest.approx(atom / total, rel=1e-12, abs=1e-300)
    np.testing.assert_allclose(post.zero + post.weights.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("pass_hat", [True, False])
def test_power_moments_both_paths_agree_with_log_beta(pass_hat):
    a, b = np.array([0.3, 2.0, 9.0]), np.array([4.0, 2.0, 0.5])
    few = np.array([1, 2, 5])           # the running product
    many = np.array([1, 300, 1000])     # log-Beta values
    for h in (few, many):
        m1, m2 = beta_power_moments(a, b, h, pass_hat)
        x, other = (a, b) if pass_hat else (b, a)
        for order, got in ((h, m1), (2 * h, m2)):
            want = np.exp(betaln(x[:, None] + order, other[:, None]) - betaln(x, other)[:, None])
            np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("metric", ["pass@k", "pass^k"])
def test_moments_match_draws(metric):
    post = task_posteriors(Y, M, W, A, B, zero_weight=ZERO)
    k = np.array([4, 40])
    mean, var = post.moments(metric, k)
    theta = post.draw(np.arange(Y.size), 200_000, np.random.default_rng(3))
    for c, kv in enumerate(k):
        g = 1 - (1 - theta) ** kv if metric == "pass@k" else theta ** kv
        np.testing.assert_allclose(mean[:, c], g.mean(axis=0), atol=4e-3)
        np.testing.assert_allclose(var[:, c], g.var(axis=0), atol=4e-3)


def test_quantiles_match_a_brute_force_simulation():
    # 20 tasks, one solved every time: Pass^100 over them rests on that one task
    y, m = np.array([5] + [2] * 19), np.full(20, 5)
    post = task_posteriors(y, m, [1.0], [1.0], [2.0])
    lo, hi = tasks_metric_quantiles(post, "pass^k", [100], 0.9, seed=1)
    rng = np.random.default_rng(11)
    theta = rng.beta(1.0 + y, 2.0 + m - y, size=(400_000, y.size))
    brute = np.quantile(np.mean(theta ** 100, axis=1), [0.05, 0.95])
    # the upper end rests on the one task's tail: its Monte Carlo error is ~15% at
    # SPREAD_DRAWS draws (seen over 20 seeds), the lower end's about half of its value
    assert lo[0] == pytest.approx(brute[0], rel=1.0)
    assert hi[0] == pytest.approx(brute[1], rel=0.45)
    assert lo[0] < 1e-20 < 1e-4 < hi[0]


def test_quantiles_are_only_drawn_where_few_tasks_carry_the_metric():
    y, m = np.arange(60) % 6, np.full(60, 5)
    post = task_posteriors(y, m, [1.0], [1.0], [1.0])
    _, var = post.moments("pass@k", np.array([1]))
    assert var.sum() ** 2 / np.sum(var ** 2) > SPREAD_TASKS
    _, var = post.moments("pass^k", np.array([500]))
    assert var.sum() ** 2 / np.sum(var ** 2) < SPREAD_TASKS
    lo, hi = tasks_metric_quantiles(post, "pass@k", [1], 0.95)
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    lo, hi = tasks_metric_quantiles(post, "pass^k", [1, 500], 0.95, beyond=np.array([False,
                                                                                     True]))
    assert np.isnan(lo[0]) and np.isfinite(hi[1]) and 0 <= lo[1] <= hi[1]
