"""Pass@k scaling predictors: the second paper's three baselines, as fitted results.

The paper's own predictor, a beta-binomial fitted by marginal maximum
likelihood, is the core fit with one component (``fit(counts,
n_components=1)``, registered as ``"beta_binomial"``). Its baselines
(``docs/formulas.md``, section 7) are here:

* :func:`fit_loglog`: least squares of ``-log pass@k`` on ``log k`` over the
  observed horizons, extrapolated as a power law and clipped at 1;
* :func:`fit_discretized_beta`: Schaeffer et al.'s scaled Beta on ``[0,
  theta]``, with ``theta`` set from the largest observed rate and the shapes
  fitted to log-spaced bins of the rates by a multinomial likelihood;
* :func:`fit_scaled_beta_binomial`: the same scaled Beta fitted to the counts
  by maximum likelihood.

The scaled Beta's moments ``E[(1 - theta X)^r]`` (so its Pass@k and its
likelihood) are hypergeometric sums. The paper writes the likelihood as an
alternating sum, which cancels catastrophically at ``n = 10^4``; Pfaff's
transformation turns it into a sum of positive terms (see
:func:`log_scaled_moment`), summed here in log space without loss.

They are registered estimators (:mod:`passmix.estimators.registry`) that
``"all"`` leaves out; :mod:`passmix.scaling` gives their names beside the
samplers and the evaluation loop.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from .._special import log_choose, log_rising_ratio
from .._validation import DegenerateDataWarning, FitWarning, check_k, check_metric
from ..data.counts import Counts, as_counts
from .base import PointEstimates
from .direct import combinatorial_estimate

__all__ = ["DiscretizedBetaFit", "LogLogFit", "ScaledBetaBinomialFit", "fit_discretized_beta",
           "fit_loglog", "fit_scaled_beta_binomial", "log_scaled_moment",
           "scaled_beta_binomial_logpmf"]


# --------------------------------------------------------------------------
# the scaled Beta's moments, by a sum of positive terms
# --------------------------------------------------------------------------
def _segment_logsumexp(terms: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """log sum exp of `terms` over the segments beginning at `starts`."""
    top = np.maximum.reduceat(terms, starts)
    lengths = np.diff(np.append(starts, terms.size))
    shifted = np.exp(terms - np.repeat(top, lengths))
    return top + np.log(np.add.reduceat(shifted, starts))


def log_scaled_moment(r, a, b, theta) -> np.ndarray:
    r"""``log E[(1 - theta X)^r]`` for ``X ~ Beta(a, b)``, ``0 < theta <= 1``, whole ``r >= 0``.

    Parameters
    ----------
    r : array_like of int
        Exponents (any size; the cost grows with their sum).
    a, b : array_like of float
        Beta shapes, > 0, broadcast against `r`.
    theta : float or array_like
        Scale in ``(0, 1]``, broadcast against `r`.

    Returns
    -------
    numpy.ndarray
        The log-moments, with the broadcast shape.

    Notes
    -----
    ``E[(1 - theta X)^r] = 2F1(-r, a; a + b; theta)``, whose power series
    alternates in sign. Pfaff's transformation gives

    .. math::

        {}_2F_1(-r, a; a + b; \theta)
        = \sum_{i=0}^{r} \binom{r}{i} \frac{(b)_i}{(a + b)_i}\,
          \theta^i (1 - \theta)^{r - i},

    a sum of positive terms (at ``theta = 1`` only ``i = r`` is left:
    ``(b)_r / (a + b)_r``). It is summed in log space, so nothing cancels
    however large ``r`` is.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import integrate, stats
    >>> from passmix.estimators.predictors import log_scaled_moment
    >>> a, b, theta, r = 0.7, 2.0, 0.6, 40
    >>> f = lambda x: (1 - theta * x) ** r * stats.beta(a, b).pdf(x)
    >>> quad = integrate.quad(f, 0, 1, points=[0.01, 0.1])[0]
    >>> bool(np.isclose(np.exp(log_scaled_moment(r, a, b, theta)), quad, rtol=1e-8))
    True
    """
    r, a, b, theta = (np.asarray(v) for v in np.broadcast_arrays(r, a, b, theta))
    shape = r.shape
    r = r.ravel().astype(np.int64)
    a, b, theta = (v.ravel().astype(float) for v in (a, b, theta))
    starts = np.concatenate([[0], np.cumsum(r + 1)[:-1]])
    seg = np.repeat(np.arange(r.size), r + 1)
    i = np.arange(seg.size) - starts[seg]
    rs, bs, cs, ts = r[seg], b[seg], (a + b)[seg], theta[seg]
    log_theta = np.log(ts)
    with np.errstate(divide="ignore"):
        log_rest = np.log1p(-ts)
    rest = rs - i
    # 0 * log(0) = 0 where theta = 1 and i = r
    rest_term = np.zeros(rest.shape)
    np.multiply(rest, log_rest, out=rest_term, where=rest > 0)
    terms = (special.gammaln(rs + 1.0) - special.gammaln(i + 1.0) - special.gammaln(rest + 1.0)
             + special.gammaln(bs + i) - special.gammaln(bs)
             - special.gammaln(cs + i) + special.gammaln(cs)
             + i * log_theta + rest_term)
    return _segment_logsumexp(terms, starts).reshape(shape)


def scaled_beta_binomial_logpmf(successes, trials, alpha: float, beta: float,
                                theta: float) -> np.ndarray:
    r"""Log-probability of `successes` in `trials` when ``p = theta X``, ``X ~ Beta(alpha, beta)``.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts, ``0 <= successes <= trials``.
    alpha, beta : float
        Beta shapes, > 0.
    theta : float
        Scale in ``(0, 1]``; ``theta = 1`` is the beta-binomial.

    Returns
    -------
    numpy.ndarray

    Notes
    -----
    With ``s`` successes of ``n`` and ``r = n - s``,

    .. math::

        P(s) = \binom{n}{s} \theta^s \frac{B(s + \alpha, \beta)}{B(\alpha, \beta)}
               E\left[(1 - \theta X')^{r}\right], \qquad X' \sim \mathrm{Beta}(s + \alpha, \beta),

    and the expectation is :func:`log_scaled_moment`. The second paper's
    alternating sum (its Appendix C) is the same quantity expanded the other way.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from passmix.estimators.predictors import scaled_beta_binomial_logpmf
    >>> got = scaled_beta_binomial_logpmf([0, 3, 10], 10, 0.5, 1.5, 1.0)
    >>> bool(np.allclose(got, stats.betabinom(10, 0.5, 1.5).logpmf([0, 3, 10])))
    True
    """
    s, n = (np.asarray(v, dtype=np.int64) for v in np.broadcast_arrays(successes, trials))
    log_beta = special.betaln(s + alpha, beta) - special.betaln(alpha, beta)
    with np.errstate(divide="ignore"):
        power = np.where(s > 0, s * np.log(theta), 0.0)
    return log_choose(n, s) + power + log_beta + log_scaled_moment(n - s, s + alpha, beta, theta)


# --------------------------------------------------------------------------
# shared result behaviour
# --------------------------------------------------------------------------
class _ScalingFit(PointEstimates):
    """Metric of a predictor that gives point estimates only (for the metrics it defines)."""

    estimator = ""
    #: metrics the predictor defines
    metrics: tuple[str, ...] = ("pass@k",)

    def _metric(self, metric: str, ks: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def metric(self, metric: str, k):
        """The predicted `metric` at horizon(s) `k` (a float for scalar `k`)."""
        metric = check_metric(metric)
        ks, scalar = check_k(k)
        if metric not in self.metrics:
            raise ValueError(f"the {self.estimator} predictor gives only "
                             f"{', '.join(self.metrics)}, not {metric}.")
        out = np.clip(self._metric(metric, ks.astype(float)), 0.0, 1.0)
        return float(out[0]) if scalar else out

    def pass_at_k(self, k):
        """Predicted Pass@k at horizon(s) `k`."""
        return self.metric("pass@k", k)

    def _estimates(self, metric: str, ks: np.ndarray) -> np.ndarray:
        return self.metric(metric, ks) if metric in self.metrics else np.full(ks.size, np.nan)

    def undefined_note(self, k) -> str | None:
        """Tables call this; every horizon is defined for a predictor."""
        return None


def _rates(counts: Counts) -> tuple[np.ndarray, np.ndarray]:
    """Successes and trials of the tasks that were run."""
    ran = counts.trials > 0
    if not ran.any():
        raise ValueError(f"no task has any trial (all {counts.n_tasks} tasks have m_j = 0).")
    return counts.successes[ran], counts.trials[ran]


def _scaled_metric(metric: str, ks: np.ndarray, alpha: float, beta: float,
                   theta: float) -> np.ndarray:
    """Pass@k or Pass^k of ``p = theta X``, ``X ~ Beta(alpha, beta)``."""
    if metric == "pass@k":
        return -np.expm1(log_scaled_moment(ks.astype(np.int64), alpha, beta, theta))
    # E[(theta X)^k] = theta^k (alpha)_k / (alpha + beta)_k
    return np.exp(ks * np.log(theta) + log_rising_ratio(alpha, beta, ks))


# --------------------------------------------------------------------------
# log-log regression
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class LogLogFit(_ScalingFit):
    """Log-log regression of Pass@k: ``-log pass@k = slope * log k + intercept``.

    Attributes
    ----------
    slope, intercept : float
        The least-squares line.
    horizons : numpy.ndarray
        The horizons it was fitted on (1 .. the fewest trials of a task, where
        the unbiased Pass@k is positive).
    counts : Counts
        The data.
    """

    slope: float
    intercept: float
    horizons: np.ndarray = field(repr=False)
    counts: Counts = field(repr=False)
    estimator = "loglog"

    def unclipped(self, k) -> np.ndarray:
        """The regression's Pass@k before clipping at 1 (it may exceed 1)."""
        ks, _ = check_k(k)
        return np.exp(-(self.slope * np.log(ks.astype(float)) + self.intercept))

    def _metric(self, metric: str, ks: np.ndarray) -> np.ndarray:
        return self.unclipped(ks.astype(np.int64))

    def info(self) -> dict[str, Any]:
        """``{"estimator", "slope", "intercept", "n_horizons"}``."""
        return {"estimator": self.estimator, "slope": self.slope, "intercept": self.intercept,
                "n_horizons": int(self.horizons.size)}


def fit_loglog(counts) -> LogLogFit:
    """Fit the log-log regression of Pass@k on the horizons the data reach.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes and trials.

    Returns
    -------
    LogLogFit

    Raises
    ------
    ValueError
        If no task was run, or fewer than two horizons are observed (some task
        has one trial) or have a positive Pass@k.

    Warns
    -----
    DegenerateDataWarning
        Nothing was ever solved: the prediction is 0 at every k.

    Notes
    -----
    Pass@k is estimated without bias (Chen et al.'s estimator) at ``k = 1 ..
    b``, with ``b`` the fewest trials of a task, and ``-log pass@k`` is
    regressed on ``log k`` by least squares, as in the second paper's eq. (4).
    The line is extrapolated and clipped at 1. The points share their data and
    have unequal variances, and Pass@k need not follow a power law; the paper
    discusses why this extrapolates poorly.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix import Counts
    >>> from passmix.scaling import fit_loglog
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 100)
    >>> res = fit_loglog(Counts(rng.binomial(20, p), np.full(100, 20)))
    >>> bool(res.unclipped(10**6) > 1.0), res.pass_at_k(10**6)
    (True, 1.0)
    """
    counts = as_counts(counts)
    y, m = _rates(counts)
    horizons = np.arange(1, int(m.min()) + 1)
    if not y.any() and horizons.size >= 2:
        warnings.warn("no task was ever solved: the log-log regression predicts Pass@k = 0.",
                      DegenerateDataWarning, stacklevel=2)
        return LogLogFit(0.0, np.inf, horizons, counts)
    values = combinatorial_estimate(counts, "pass@k", horizons)
    keep = values > 0
    if keep.sum() < 2:
        raise ValueError(f"the log-log regression needs Pass@k > 0 at two horizons at least; "
                         f"the data reach k <= {int(m.min())} and give "
                         f"{int(keep.sum())} such horizon(s).")
    x, y = np.log(horizons[keep]), -np.log(values[keep])
    slope, intercept = np.polyfit(x, y, 1)
    return LogLogFit(float(slope), float(intercept), horizons[keep], counts)


# --------------------------------------------------------------------------
# discretized Beta (Schaeffer et al.)
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class _ScaledBetaFit(_ScalingFit):
    """``p = theta X``, ``X ~ Beta(alpha, beta)``: Pass@k and Pass^k in closed form."""

    alpha: float
    beta: float
    theta: float
    loglik: float
    converged: bool
    counts: Counts = field(repr=False)
    metrics = ("pass@k", "pass^k")

    def _metric(self, metric: str, ks: np.ndarray) -> np.ndarray:
        if self.theta == 0:  # nothing was ever solved: p = 0
            return np.zeros(ks.size)
        return _scaled_metric(metric, ks, self.alpha, self.beta, self.theta)

    def info(self) -> dict[str, Any]:
        """``{"estimator", "alpha", "beta", "theta", "loglik", "converged"}``."""
        return {"estimator": self.estimator, "alpha": self.alpha, "beta": self.beta,
                "theta": self.theta, "loglik": self.loglik, "converged": self.converged}


@dataclass(frozen=True)
class DiscretizedBetaFit(_ScaledBetaFit):
    """Scaled Beta fitted to binned success rates (Schaeffer et al.).

    Attributes
    ----------
    alpha, beta : float
        Shapes of ``X``, with ``p = theta X``.
    theta : float
        The scale ``(b + 1) / b * max p̂``, at most 1.
    loglik : float
        The multinomial log-likelihood at the optimum.
    converged : bool
    counts : Counts
    edges : numpy.ndarray
        Bin edges on ``[0, 1]``.
    bin_counts : numpy.ndarray
        Tasks per bin.
    """

    edges: np.ndarray = field(repr=False, default=None)
    bin_counts: np.ndarray = field(repr=False, default=None)
    estimator = "discretized_beta"


def _bin_masses(log_shape: np.ndarray, edges: np.ndarray, theta: float) -> np.ndarray:
    a, b = np.exp(log_shape)
    return np.diff(special.betainc(a, b, np.minimum(edges / theta, 1.0)))


def _fit_shapes(negloglik, starts) -> tuple[np.ndarray, float, bool]:
    """Minimise over log shapes from several starts; the best optimum."""
    best = None
    for start in starts:
        res = optimize.minimize(negloglik, start, method="Nelder-Mead",
                                options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
        if best is None or res.fun < best.fun:
            best = res
    return best.x, float(best.fun), bool(best.success)


_SHAPE_STARTS = (np.log([0.5, 2.0]), np.log([0.2, 0.5]), np.log([1.0, 1.0]), np.log([0.1, 5.0]))
_SHAPE_BOX = 12.0  # |log shape| bound: shapes in [6e-6, 1.6e5]


def fit_discretized_beta(counts, *, n_bins: int = 20) -> DiscretizedBetaFit:
    """Fit Schaeffer et al.'s discretized scaled Beta to the observed success rates.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes and trials.
    n_bins : int, default 20
        Bins of the rates: ``[0, e_1)`` (which holds the never-solved tasks)
        and ``n_bins - 1`` log-spaced bins from ``e_1 = 1 / (2 b)`` to 1,
        with ``b`` the most trials of a task.

    Returns
    -------
    DiscretizedBetaFit

    Notes
    -----
    ``theta = min(1, (b + 1) / b * max_j p̂_j)`` with ``p̂_j = y_j / m_j``;
    then ``alpha, beta`` maximise the multinomial likelihood of the number of
    rates in each bin, each bin's probability being the scaled Beta's mass
    there. Pass@k is ``1 - E[(1 - theta X)^k]``. The second paper describes
    the bins only as log-scale; the first bin's upper edge half a success
    below the smallest positive rate keeps every rate in a bin of its own
    kind.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix import Counts
    >>> from passmix.scaling import fit_discretized_beta
    >>> rng = np.random.default_rng(1)
    >>> p = rng.beta(0.5, 2.0, 300)
    >>> res = fit_discretized_beta(Counts(rng.binomial(50, p), np.full(300, 50)))
    >>> 0.0 < res.pass_at_k(100) <= 1.0
    True
    """
    counts = as_counts(counts)
    n_bins = int(n_bins)
    if n_bins < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins}.")
    y, m = _rates(counts)
    rates = y / m
    b = int(m.max())
    theta = float(min(1.0, (b + 1) / b * rates.max()))
    if theta <= 0:
        warnings.warn("no task was ever solved: the discretized Beta's scale is 0 and it "
                      "predicts Pass@k = 0 at every k.", DegenerateDataWarning, stacklevel=2)
        return DiscretizedBetaFit(np.nan, np.nan, 0.0, 0.0, True, counts,
                                  edges=np.array([0.0, 1.0]), bin_counts=np.array([y.size]))
    edges = np.concatenate([[0.0], np.geomspace(1.0 / (2 * b), 1.0, n_bins)])
    idx = np.clip(np.searchsorted(edges, rates, side="right") - 1, 0, n_bins - 1)
    bin_counts = np.bincount(idx, minlength=n_bins).astype(float)

    def negloglik(z):
        if np.any(np.abs(z) > _SHAPE_BOX):
            return np.inf
        mass = _bin_masses(z, edges, theta)
        with np.errstate(divide="ignore"):
            logs = np.where(bin_counts > 0, np.log(np.maximum(mass, 0.0)), 0.0)
        value = -(bin_counts * logs).sum()
        return value if np.isfinite(value) else np.inf

    z, fun, converged = _fit_shapes(negloglik, _SHAPE_STARTS)
    if not converged:
        warnings.warn("the discretized Beta fit did not converge.", FitWarning, stacklevel=2)
    a, bb = np.exp(z)
    return DiscretizedBetaFit(float(a), float(bb), theta, -fun, converged, counts,
                              edges=edges, bin_counts=bin_counts)


# --------------------------------------------------------------------------
# scaled beta-binomial by maximum likelihood
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class ScaledBetaBinomialFit(_ScaledBetaFit):
    """Scaled beta-binomial (``p = theta X``, ``X ~ Beta(alpha, beta)``) fitted by maximum likelihood.

    Attributes
    ----------
    alpha, beta, theta : float
        The maximum-likelihood parameters.
    loglik : float
    converged : bool
    counts : Counts
    """

    estimator = "scaled_beta_binomial"


def fit_scaled_beta_binomial(counts) -> ScaledBetaBinomialFit:
    """Fit the scaled beta-binomial to the counts by maximum likelihood.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        Per-task successes and trials.

    Returns
    -------
    ScaledBetaBinomialFit

    Warns
    -----
    DegenerateDataWarning
        Nothing was ever solved: the scale is not identified and Pass@k is 0.

    Notes
    -----
    The likelihood (:func:`scaled_beta_binomial_logpmf`) is maximised over
    ``log alpha``, ``log beta`` and ``logit theta`` by Nelder-Mead from several
    starts, on the distinct ``(y, m)`` pairs. ``theta -> 1`` is the
    beta-binomial, so the fit is never worse than the H = 1 core fit's
    likelihood, up to the optimiser.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix import Counts
    >>> from passmix.scaling import fit_scaled_beta_binomial
    >>> rng = np.random.default_rng(2)
    >>> p = 0.5 * rng.beta(1.0, 3.0, 400)
    >>> res = fit_scaled_beta_binomial(Counts(rng.binomial(100, p), np.full(400, 100)))
    >>> bool(abs(res.theta - 0.5) < 0.1)
    True
    """
    counts = as_counts(counts)
    _rates(counts)
    y, m, weight = counts.pairs()
    if not (y > 0).any():
        warnings.warn("no task was ever solved: the scaled beta-binomial predicts Pass@k = 0.",
                      DegenerateDataWarning, stacklevel=2)

    def negloglik(z):
        if np.any(np.abs(z) > _SHAPE_BOX):
            return np.inf
        a, b = np.exp(z[:2])
        theta = special.expit(z[2])
        if theta <= 0.0:
            return np.inf
        value = -(weight * scaled_beta_binomial_logpmf(y, m, a, b, theta)).sum()
        return value if np.isfinite(value) else np.inf

    starts = [np.append(s, t) for s in _SHAPE_STARTS[:3] for t in (0.0, 3.0)]
    z, fun, converged = _fit_shapes(negloglik, starts)
    if not converged:
        warnings.warn("the scaled beta-binomial fit did not converge.", FitWarning, stacklevel=2)
    a, b = np.exp(z[:2])
    return ScaledBetaBinomialFit(float(a), float(b), float(special.expit(z[2])), -fun, converged,
                                 counts)
