"""Direct estimators of Pass@k, Pass^k and AUC@k from per-task success counts.

Two baselines that need no model (``docs/formulas.md``, section 4):

* the naive plug-in, which substitutes ``p̂_j = y_j / m_j`` into the
  population formulas (defined at any horizon, biased for k > 1);
* the combinatorial estimator, unbiased but defined only for ``k <= m_j``.

Both average over the tasks that were run (``m_j > 0``) and work on the
distinct ``(y_j, m_j)`` pairs, so their cost does not grow with the number of
tasks, nor with the horizon ``k``. :class:`DirectEstimate` is either as a
fitted result (:mod:`passmix.estimators.base`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._special import log_binom_ratio
from .._validation import check_k, check_metric
from ..metrics import metric_at_rate
from ..data.counts import Counts, as_counts
from .base import PointEstimates

__all__ = ["DirectEstimate", "combinatorial_estimate", "direct_estimate", "naive_estimate"]

METHODS = ("naive", "combinatorial")


def _distinct_pairs(counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate `counts` and group its observed tasks (``m_j > 0``) by distinct ``(y, m)``.

    Returns the distinct successes and trials and the number of tasks with
    each pair, as column vectors of shape (G, 1) ready to broadcast against
    a row of horizons.
    """
    if not isinstance(counts, Counts) and hasattr(counts, "successes") \
            and hasattr(counts, "trials"):
        counts = (counts.successes, counts.trials)
    counts = as_counts(counts)
    if counts.n_observed == 0:
        raise ValueError(f"no task has any trial (all {counts.n_tasks} tasks have m_j = 0).")
    y, m, count = counts.pairs()
    return y[:, None], m[:, None], count[:, None]


def _average(per_pair: np.ndarray, count: np.ndarray, scalar: bool) -> float | np.ndarray:
    """Task-weighted mean over pairs, clipped to [0, 1]; float for scalar k."""
    est = np.clip((per_pair * count).sum(axis=0) / count.sum(), 0.0, 1.0)
    return float(est[0]) if scalar else est


# --------------------------------------------------------------------------
# naive plug-in
# --------------------------------------------------------------------------
def _naive(y: np.ndarray, m: np.ndarray, metric: str, k: np.ndarray) -> np.ndarray:
    """Per-pair naive values, shape (G, K), for column pairs and row horizons."""
    return metric_at_rate(metric, y / m, k)


def naive_estimate(counts, metric: str, k) -> float | np.ndarray:
    r"""Naive plug-in estimate of Pass@k, Pass^k or AUC@k.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes ``y_j`` and trials ``m_j``: an object with
        ``.successes`` and ``.trials`` attributes, or a tuple
        ``(successes, trials)``. Tasks with ``m_j = 0`` are excluded.
    metric : {"pass@k", "pass^k", "auc@k"}
        The metric (aliases such as ``"pass_at_k"`` are accepted).
    k : int or array_like of int
        Horizon(s), each ``>= 1``; any size, also far beyond ``m_j``.

    Returns
    -------
    float or numpy.ndarray
        The estimate; a float for scalar `k`, else an array of shape ``(K,)``.

    Raises
    ------
    ValueError
        For invalid counts, metric or horizons, or if no task has any trial.

    See Also
    --------
    combinatorial_estimate : the unbiased estimator, for ``k <= m_j``.

    Notes
    -----
    Tasks with ``m_j = 0`` carry no information and are left out of the average.

    With ``p̂_j = y_j / m_j`` and ``J`` tasks with ``m_j > 0``:

    .. math::

        \mathrm{Pass^k} = \frac1J \sum_j \hat p_j^k, \qquad
        \mathrm{Pass@k} = \frac1J \sum_j [1 - (1 - \hat p_j)^k], \qquad
        \mathrm{AUC@k} = \frac1k \sum_{r=1}^k \mathrm{Pass@r}.

    AUC@k uses the geometric sum
    :math:`\sum_{r=1}^k q^r = q (1 - q^k) / (1 - q)`, so its cost does not
    depend on `k`. By Jensen's inequality the estimator is biased for
    ``k > 1``: Pass^k upwards, Pass@k and AUC@k downwards.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.estimators import naive_estimate
    >>> counts = (np.array([2, 0, 4]), np.array([4, 4, 4]))
    >>> naive_estimate(counts, "pass@k", 1)
    0.5
    >>> round(naive_estimate(counts, "pass@k", 2), 4)
    0.5833
    >>> naive_estimate(counts, "pass^k", [1, 2, 3]).round(4)
    array([0.5   , 0.4167, 0.375 ])
    >>> round(naive_estimate(counts, "auc@k", 10**6), 4)
    0.6667
    """
    metric = check_metric(metric)
    ks, scalar = check_k(k)
    y, m, count = _distinct_pairs(counts)
    return _average(_naive(y, m, metric, ks[None, :]), count, scalar)


# --------------------------------------------------------------------------
# combinatorial (unbiased)
# --------------------------------------------------------------------------
def combinatorial_values(y: np.ndarray, m: np.ndarray, metric: str, k: np.ndarray) -> np.ndarray:
    """Per-pair unbiased values, shape (G, K); requires ``k <= m`` everywhere."""
    if metric == "pass^k":
        return np.exp(log_binom_ratio(y, m, k))
    n = m - y  # failures
    if metric == "pass@k":
        # 1 - C(n, k) / C(m, k); expm1 keeps precision when the ratio is near 1.
        return -np.expm1(log_binom_ratio(n, m, k))
    # Hockey stick: sum_{r=1..k} C(n, r) / C(m, r) = n / (y + 1) * [1 - C(n-1, k) / C(m, k)],
    # so AUC@k = 1 - that sum / k, with no loop over r.
    tail = -np.expm1(log_binom_ratio(np.maximum(n - 1, 0), m, k))
    auc = 1.0 - n * tail / ((y + 1) * k)
    return np.where(y == 0, 0.0, auc)


def combinatorial_estimate(counts, metric: str, k) -> float | np.ndarray:
    r"""Unbiased combinatorial estimate of Pass@k, Pass^k or AUC@k.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes ``y_j`` and trials ``m_j``: an object with
        ``.successes`` and ``.trials`` attributes, or a tuple
        ``(successes, trials)``. Tasks with ``m_j = 0`` are excluded.
    metric : {"pass@k", "pass^k", "auc@k"}
        The metric (aliases such as ``"pass_at_k"`` are accepted).
    k : int or array_like of int
        Horizon(s), each ``>= 1`` and at most every observed ``m_j``.

    Returns
    -------
    float or numpy.ndarray
        The estimate; a float for scalar `k`, else an array of shape ``(K,)``.

    Raises
    ------
    ValueError
        If some observed task has fewer trials than the largest `k` (the
        estimator is not defined there; use the mixture fit to extrapolate),
        for invalid counts, metric or horizons, or if no task has any trial.

    See Also
    --------
    naive_estimate : the plug-in estimator, defined at any horizon.

    Notes
    -----
    Tasks with ``m_j = 0`` carry no information and are left out of the average.

    For the ``J`` tasks with ``m_j > 0``, with ``C(a, k) = 0`` for ``a < k``:

    .. math::

        \mathrm{Pass@k} = \frac1J \sum_j \left[1 - \frac{C(m_j - y_j, k)}{C(m_j, k)}\right],
        \qquad
        \mathrm{Pass^k} = \frac1J \sum_j \frac{C(y_j, k)}{C(m_j, k)},
        \qquad
        \mathrm{AUC@k} = \frac1k \sum_{r=1}^k \mathrm{Pass@r}.

    Each term is the probability that a uniformly random k-subset of the task's
    recorded attempts contains a success (all successes), so the estimates are
    unbiased. Ratios of binomial coefficients are evaluated in log space, as short
    products or through Stirling's series with the large terms cancelled
    analytically, so they stay accurate for large ``m``. AUC@k uses the
    hockey-stick identity, with ``n = m - y``,

    .. math::

        \sum_{r=1}^k \frac{C(n, r)}{C(m, r)}
        = \frac{n}{y + 1} \left[1 - \frac{C(n - 1, k)}{C(m, k)}\right],

    so its cost does not depend on `k`.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.estimators import combinatorial_estimate
    >>> counts = (np.array([2, 0, 4]), np.array([4, 4, 4]))
    >>> combinatorial_estimate(counts, "pass@k", 1)
    0.5
    >>> round(combinatorial_estimate(counts, "pass@k", 2), 4)
    0.6111
    >>> combinatorial_estimate(counts, "pass^k", [1, 2, 3]).round(4)
    array([0.5   , 0.3889, 0.3333])
    >>> combinatorial_estimate(counts, "pass@k", 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: combinatorial estimator needs k <= m_j for every task; k = 5 but 3 of 3 ...
    """
    metric = check_metric(metric)
    ks, scalar = check_k(k)
    y, m, count = _distinct_pairs(counts)
    k_max = ks.max()
    short = m[:, 0] < k_max
    if short.any():
        raise ValueError(
            f"combinatorial estimator needs k <= m_j for every task; k = {k_max} but "
            f"{count[short].sum()} of {count.sum()} tasks have fewer trials "
            f"(smallest m_j = {m.min()}). Use the mixture fit to extrapolate."
        )
    return _average(combinatorial_values(y, m, metric, ks[None, :]), count, scalar)


# --------------------------------------------------------------------------
# dispatcher
# --------------------------------------------------------------------------
def direct_estimate(counts, metric: str, k, method: str = "naive") -> float | np.ndarray:
    """Direct (model-free) estimate by the named method.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes and trials, as for :func:`naive_estimate`.
    metric : {"pass@k", "pass^k", "auc@k"}
        The metric.
    k : int or array_like of int
        Horizon(s), each ``>= 1``.
    method : {"naive", "combinatorial"}
        :func:`naive_estimate` or :func:`combinatorial_estimate`.

    Returns
    -------
    float or numpy.ndarray
        The estimate; a float for scalar `k`, else an array of shape ``(K,)``.

    Raises
    ------
    ValueError
        For an unknown `method`, and as the chosen estimator does.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.estimators import direct_estimate
    >>> counts = (np.array([2, 0, 4]), np.array([4, 4, 4]))
    >>> round(direct_estimate(counts, "pass@k", 2, method="combinatorial"), 4)
    0.6111
    """
    if method == "naive":
        return naive_estimate(counts, metric, k)
    if method == "combinatorial":
        return combinatorial_estimate(counts, metric, k)
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}.")


_ESTIMATES = {"naive": naive_estimate, "combinatorial": combinatorial_estimate}


@dataclass(frozen=True)
class DirectEstimate(PointEstimates):
    """The naive or the combinatorial estimate of counts, as a fitted result.

    A direct estimate has no interval (its ends are NaN). The combinatorial
    estimate exists only for ``k <= m_j`` of every task that was run: its
    :meth:`metric` raises beyond that, as :func:`passmix.combinatorial_estimate`
    does, and its :meth:`summary` gives NaN there.

    Attributes
    ----------
    counts : Counts
        The data.
    estimator : {"naive", "combinatorial"}
        Which estimate.

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.estimators import DirectEstimate
    >>> est = DirectEstimate(Counts([2, 0, 4], [4, 4, 4]), "combinatorial")
    >>> round(est.metric("pass@k", 2), 4)
    0.6111
    >>> est.summary([2, 5])[["metric", "k", "estimate"]].head(2)
       metric  k  estimate
    0  pass@k  2  0.611111
    1  pass@k  5       NaN
    """

    counts: Counts
    estimator: str

    def __post_init__(self) -> None:
        if self.estimator not in _ESTIMATES:
            raise ValueError(f"unknown direct estimator {self.estimator!r}; expected one of "
                             f"{', '.join(_ESTIMATES)}.")

    @property
    def max_k(self) -> float:
        """Largest horizon at which the estimate exists (infinite for the naive one)."""
        if self.estimator == "naive":
            return np.inf
        trials = self.counts.trials[self.counts.trials > 0]
        return int(trials.min()) if trials.size else 0

    def metric(self, metric: str, k):
        """The estimate of `metric` at horizon(s) `k`."""
        return _ESTIMATES[self.estimator](self.counts, metric, k)

    def _estimates(self, metric: str, ks: np.ndarray) -> np.ndarray:
        """The estimate at `ks`, NaN beyond :attr:`max_k` (where :meth:`metric` raises)."""
        ok = ks <= self.max_k
        est = np.full(ks.size, np.nan)
        if ok.any():
            est[ok] = self.metric(metric, ks[ok])
        return est

    def undefined_note(self, k) -> str | None:
        """Why the estimate is missing at horizons `k`, or None where it exists."""
        ks, _ = check_k(k)
        beyond = ks[ks > self.max_k]
        if not beyond.size:
            return None
        shown = ", ".join(str(int(v)) for v in beyond)
        return (f"combinatorial estimator is undefined for k > m (smallest m_j = "
                f"{self.max_k}); its estimate at k = {shown} is null. The mixture fit "
                f"extrapolates beyond m.")

    def info(self) -> dict[str, Any]:
        """``{"estimator", "n_tasks", "n_observed"}``."""
        return {"estimator": self.estimator, "n_tasks": self.counts.n_tasks,
                "n_observed": self.counts.n_observed}
