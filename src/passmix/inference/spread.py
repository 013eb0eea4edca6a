"""The metric over the tasks that were run, given the parameters: its spread where few tasks
carry it.

A benchmark metric averages a function ``g`` of each task's success
probability over these tasks. At known parameters each probability still has
a posterior (a Beta mixture, perhaps with an atom at 0), independent across
tasks, so the metric over these tasks varies around its mean. Where many
tasks carry that variance the average is close to normal and small beside the
parameters' own uncertainty. Where few do (Pass^k far beyond the trials: one
or two tasks solved every time carry it, and it is ~0 otherwise) it is
heavy-tailed, and the population's interval misses the benchmark's value.
There its quantiles are drawn (:func:`tasks_metric_quantiles`), and
:func:`~passmix.inference.units.with_metric_spread` joins them to the model's
ends.

* :func:`beta_power_moments`: ``E[g^n]`` and ``E[g^2n]`` of Beta laws;
* :func:`task_posteriors`: each task's posterior under a Beta mixture with an
  atom at 0;
* :func:`tasks_metric_logit`: the metric over the tasks given the parameters
  (the mean of each task's posterior metric), as a function of the prior;
* :func:`tasks_metric_quantiles`: the metric's quantiles over the tasks,
  where few carry it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln

from ..metrics import component_logs, metric_at_rate

__all__ = ["SPREAD_DRAWS", "SPREAD_TASKS", "TaskPosteriors", "beta_power_moments",
           "task_posteriors", "tasks_metric_logit", "tasks_metric_quantiles"]

#: Effective number of tasks below which the metric's spread given the parameters is drawn
#: (an average of fewer independent heavy-tailed terms is far from normal)
SPREAD_TASKS = 30
#: Draws of every task's probability behind those quantiles
SPREAD_DRAWS = 10_000
# the order above which the moments come from log-Beta values instead of running products
_PRODUCT_ORDER = 512
# task draws held at once by tasks_metric_quantiles
_BLOCK = 1_000_000


def _log_sum(x: np.ndarray, axis) -> np.ndarray:
    """``log sum exp`` over `axis` (all -inf gives -inf): scipy's logsumexp costs ~10x more
    on these small arrays, and the profile search calls this thousands of times."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x - top), axis=axis)) + np.squeeze(top, axis=axis)


def beta_power_moments(alpha: np.ndarray, beta: np.ndarray, horizons: np.ndarray,
                       pass_hat: bool) -> tuple[np.ndarray, np.ndarray]:
    """``E[g^h]`` and ``E[g^2h]`` of Beta(alpha, beta) at each of `horizons`, with g the
    success probability (`pass_hat`) or its complement: ``(..., len(horizons))`` each.

    Where the orders are many and low (AUC@k's horizons), the running product
    of ``(x + t) / (alpha + beta + t)``, t < n (x = alpha or beta): one product
    per order up to the highest instead of a log-Beta value per order wanted
    (a product costs about a fifth of a log-Beta value).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.spread import beta_power_moments
    >>> m1, m2 = beta_power_moments(np.array([2.0]), np.array([3.0]), np.array([1]), True)
    >>> float(m1[0, 0]), round(float(m2[0, 0]), 6)   # E[p] = 2/5, E[p^2] = 2*3/(5*6)
    (0.4, 0.2)
    """
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    x = alpha if pass_hat else beta
    h = np.asarray(horizons, dtype=int)
    top = 2 * int(h.max())
    if top <= min(_PRODUCT_ORDER, 5 * (2 * h.size + 1)):
        t = np.arange(top, dtype=float)
        ratios = (x[..., None] + t) / ((alpha + beta)[..., None] + t)
        moments = np.cumprod(ratios, axis=-1)                 # [..., n - 1] = E[g^n]
        return moments[..., h - 1], moments[..., 2 * h - 1]
    hf = h.astype(float)
    base = betaln(alpha, beta)[..., None]
    if pass_hat:
        return (np.exp(betaln(alpha[..., None] + hf, beta[..., None]) - base),
                np.exp(betaln(alpha[..., None] + 2 * hf, beta[..., None]) - base))
    return (np.exp(betaln(alpha[..., None], beta[..., None] + hf) - base),
            np.exp(betaln(alpha[..., None], beta[..., None] + 2 * hf) - base))


class TaskPosteriors:
    """Each task's success probability given its counts and a prior: an atom at 0 of weight
    ``zero[j]`` beside Beta(``alpha[j, h]``, ``beta[j, h]``) of weight ``weights[j, h]``.

    Attributes
    ----------
    zero : numpy.ndarray
        (J,) posterior weight of the atom (0 without one, and for a task that
        succeeded once).
    weights, alpha, beta : numpy.ndarray
        (J, H) the Beta components' posterior weights (summing to
        ``1 - zero``) and shapes.
    """

    def __init__(self, zero, weights, alpha, beta) -> None:
        self.zero = np.asarray(zero, dtype=float)
        self.weights = np.asarray(weights, dtype=float)
        self.alpha = np.asarray(alpha, dtype=float)
        self.beta = np.asarray(beta, dtype=float)

    @property
    def n_tasks(self) -> int:
        return self.weights.shape[0]

    def moments(self, metric: str, k_arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(J, K) mean and variance of each task's metric (AUC@k's as Pass@k's, which bound
        its spread)."""
        pass_hat = metric == "pass^k"
        m1, m2 = beta_power_moments(self.alpha, self.beta, np.asarray(k_arr), pass_hat)
        e1 = np.einsum("jh,jhk->jk", self.weights, m1)
        e2 = np.einsum("jh,jhk->jk", self.weights, m2)
        if pass_hat:
            mean, second = e1, e2
        else:
            # g = 1 - (1 - p)^k; the atom (g = 0) is the weight missing from sum_h w_h
            total = self.weights.sum(axis=1)[:, None]
            mean = total - e1
            second = total - 2.0 * e1 + e2
        return mean, np.maximum(second - mean ** 2, 0.0)

    def draw(self, tasks: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """(n_draws, len(tasks)) draws of those tasks' success probabilities."""
        w = self.weights[tasks]
        cum = np.cumsum(np.column_stack([self.zero[tasks], w]), axis=1)
        cum /= cum[:, -1:]
        u = rng.random((n_draws, tasks.size))
        comp = np.minimum(np.sum(u[..., None] > cum[None], axis=-1), w.shape[1])  # 0: the atom
        beta_comp = np.maximum(comp - 1, 0)
        cols = np.broadcast_to(tasks, comp.shape)
        theta = rng.beta(self.alpha[cols, beta_comp], self.beta[cols, beta_comp])
        return np.where(comp == 0, 0.0, theta)


def task_posteriors(successes, trials, weights, alpha, beta, zero_weight: float = 0.0
                    ) -> TaskPosteriors:
    """Each task's posterior under the prior ``zero_weight * delta_0 + (1 - zero_weight) *
    sum_h weights[h] Beta(alpha[h], beta[h])``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.spread import task_posteriors
    >>> post = task_posteriors([0, 3], [3, 3], [1.0], [1.0], [1.0], zero_weight=0.5)
    >>> post.zero.round(3).tolist()          # 0.5 / (0.5 + 0.5 * 1/4), then solved
    [0.8, 0.0]
    >>> post.alpha[:, 0].tolist(), post.beta[:, 0].tolist()
    ([1.0, 4.0], [4.0, 1.0])
    """
    y = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    w = np.asarray(weights, dtype=float)
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    a_post = a[None, :] + y[:, None]
    b_post = b[None, :] + (m - y)[:, None]
    # the binomial coefficient is common to every component and the atom: left out
    with np.errstate(divide="ignore"):
        log_w = (np.log(w)[None, :] + np.log1p(-zero_weight)
                 + betaln(a_post, b_post) - betaln(a, b)[None, :])
        log_zero = np.where(y == 0, np.log(zero_weight), -np.inf)
    top = np.maximum(log_w.max(axis=1), log_zero)
    pw = np.exp(log_w - top[:, None])
    pz = np.exp(log_zero - top)
    total = pw.sum(axis=1) + pz
    return TaskPosteriors(pz / total, pw / total[:, None], a_post, b_post)


def tasks_metric_logit(metric: str, zero, weights, alpha, beta, successes, trials, multiplicity,
                       k: int) -> tuple[np.ndarray, np.ndarray]:
    """Logit and value of the metric over the tasks given the prior, at horizon `k`.

    The tasks are the distinct pairs ``(successes, trials)``, each
    `multiplicity` times; the prior an atom at 0 of weight `zero` beside the
    Beta components ``(weights, alpha, beta)``, with leading batch axes
    (``zero`` of shape ``(...)``, the others ``(..., H)``). The value is
    the mean over tasks of each task's posterior metric,
    ``sum_h r_jh g(alpha_h + y_j, beta_h + m_j - y_j)``, and its complement
    is summed on its own side, so that the logit keeps its accuracy at both
    ends (Pass^k of 1e-300, Pass@k of 1 - 1e-20). Returns ``(logit, value)``
    of shape ``(...)``.

    Examples
    --------
    One task solved 3 times in 3, a uniform prior: its posterior is
    Beta(4, 1), whose Pass^2 is 4/6.

    >>> import numpy as np
    >>> from passmix.inference.spread import tasks_metric_logit
    >>> u, v = tasks_metric_logit("pass^k", 0.0, [1.0], [1.0], [1.0], np.array([3]),
    ...                           np.array([3]), np.array([1.0]), 2)
    >>> round(float(v), 12)
    0.666666666667
    """
    zero = np.asarray(zero, dtype=float)
    w = np.asarray(weights, dtype=float)[..., None, :]
    a = np.asarray(alpha, dtype=float)[..., None, :]
    b = np.asarray(beta, dtype=float)[..., None, :]
    y = np.asarray(successes, dtype=float)
    fails = np.asarray(trials, dtype=float) - y
    a_post = a + y[:, None]
    b_post = b + fails[:, None]
    with np.errstate(divide="ignore"):
        log_w = (np.log(w) + np.log1p(-zero)[..., None, None]
                 + betaln(a_post, b_post) - betaln(a, b))
        log_zero = np.where(y == 0, np.log(zero)[..., None], -np.inf)
    # each task's posterior weights, in logs: Pass^k far beyond the trials is 1e-300 and
    # less, where sums of exponentials would round to 0 and leave the search no slope
    log_total = _log_sum(np.concatenate([log_w, log_zero[..., None]], axis=-1), axis=-1)
    lg, l1g = component_logs(metric, a_post, b_post, float(k))
    share = np.asarray(multiplicity, dtype=float)
    with np.errstate(divide="ignore"):
        log_share = np.log(share / share.sum())
        log_value = _log_sum(log_w + lg - log_total[..., None] + log_share[:, None],
                             axis=(-2, -1))
        log_comp = _log_sum(np.concatenate([log_w + l1g, log_zero[..., None]], axis=-1)
                            - log_total[..., None] + log_share[:, None], axis=(-2, -1))
    return log_value - log_comp, np.exp(log_value)


def tasks_metric_quantiles(posteriors: TaskPosteriors, metric: str, k_arr, level: float,
                           beyond: np.ndarray | None = None, *, seed=0
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The metric over the tasks at ``(1 -+ level) / 2``, where few tasks carry it: (K,) each.

    At each horizon whose effective number of tasks ``(sum v_j)^2 / sum
    v_j^2`` (v_j each task's variance of the metric) is below
    :data:`SPREAD_TASKS`, :data:`SPREAD_DRAWS` draws of every task that is
    not negligible (mean above 1e-9 of the largest, or variance above 1e-12
    of the largest; the others at their means) give the quantiles; NaN at the
    other horizons, and where `beyond` (a (K,) mask) is False.

    Examples
    --------
    Pass^100 of 20 tasks, one of them solved 5 times in 5:

    >>> import numpy as np
    >>> from passmix.inference.spread import task_posteriors, tasks_metric_quantiles
    >>> post = task_posteriors([5] + [1] * 19, [5] * 20, [1.0], [1.0], [2.0])
    >>> lo, hi = tasks_metric_quantiles(post, "pass^k", [100], 0.95)
    >>> bool(0.0 <= lo[0] < hi[0] < 0.05)
    True
    """
    k_arr = np.atleast_1d(np.asarray(k_arr, dtype=int))
    q_lo = np.full(k_arr.size, np.nan)
    q_hi = np.full(k_arr.size, np.nan)
    beyond = np.ones(k_arr.size, dtype=bool) if beyond is None else np.asarray(beyond, bool)
    if not beyond.any():
        return q_lo, q_hi
    mean, var = posteriors.moments(metric, k_arr[beyond])
    total = var.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = total ** 2 / np.sum(var ** 2, axis=0)
    few_cols = np.flatnonzero((total > 0) & (n_eff < SPREAD_TASKS))
    if few_cols.size == 0:
        return q_lo, q_hi
    sub_mean, sub_var = mean[:, few_cols], var[:, few_cols]
    # a task is drawn where its mean or its variance is not negligible: near 0 the lower
    # end is set by the small means as much as by the few large variances
    drawn = (np.any(sub_mean > 1e-9 * sub_mean.max(axis=0), axis=1)
             | np.any(sub_var > 1e-12 * sub_var.max(axis=0), axis=1))
    tasks = np.flatnonzero(drawn)
    rest = sub_mean[~drawn].sum(axis=0)
    where = np.flatnonzero(beyond)[few_cols]
    rng = np.random.default_rng(seed)
    sums = np.zeros((SPREAD_DRAWS, where.size))
    # in blocks of tasks, so that a benchmark of 10,000 tasks holds ~1e6 draws at a time
    step = max(1, _BLOCK // SPREAD_DRAWS)
    for start in range(0, tasks.size, step):
        theta = posteriors.draw(tasks[start:start + step], SPREAD_DRAWS, rng)
        for c, col in enumerate(where):
            sums[:, c] += metric_at_rate(metric, theta, int(k_arr[col])).sum(axis=1)
    tail = (1.0 - level) / 2.0
    # the draws as they are, not centred on the estimate: near 0 a centring's Monte Carlo
    # error would swamp a lower end of 1e-8
    values = (sums + rest[None, :]) / posteriors.n_tasks
    lo, hi = np.quantile(values, [tail, 1.0 - tail], axis=0)
    q_lo[where] = np.clip(lo, 0.0, 1.0)
    q_hi[where] = np.clip(hi, 0.0, 1.0)
    return q_lo, q_hi
