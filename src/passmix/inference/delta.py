"""Delta-method confidence intervals, generic in the model: values, gradients, covariance.

``docs/formulas.md`` section 3: with the inverse observed information ``Sigma`` in a
model's coordinates ``z`` and the gradient ``g`` of a metric in the same
coordinates, ``Var(M) ~ g' Sigma g``. :func:`delta_interval` forms the
interval from a metric's values, its gradient and the covariance, on the
logit scale by default; ``scale="identity"`` gives the paper's clipped
``M +/- z se``. The interval is invariant to a smooth one-to-one
reparameterisation at an interior optimum, so any coordinates give the same
interval.

On the logit scale the centre ``logit M`` and its gradient may be given
directly (the ``logit`` argument of :func:`delta_interval`), computed by the
model from the components' log terms, never from M: at a huge horizon M
rounds to 1 (or underflows to 0) and ``M (1 - M)`` with it, while
``logit M = -log(1 - M) + ...`` and its gradient stay exact, so the interval
keeps the width the data give it instead of collapsing onto the estimate.
The Beta mixture's own gradients and :func:`passmix.delta_method` are in
:mod:`passmix.models.mixture.delta`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit, ndtri

from .._validation import check_level, check_metric
from ..metrics import TINY

__all__ = ["ConfidenceInterval", "DeltaMethodResult", "IntervalEnds", "delta_interval",
           "logit_wald_ends", "normal_quantile", "wald_edge_excess", "wald_ends",
           "widen_degenerate"]

_SCALES = ("logit", "identity")


class ConfidenceInterval(NamedTuple):
    """Lower and upper end of an interval (unpacks as a tuple)."""

    lower: float | np.ndarray
    upper: float | np.ndarray


class IntervalEnds:
    """A result with ``lower`` and ``upper`` ends, which :attr:`interval` gives as a pair.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.delta import DeltaMethodResult, IntervalEnds, delta_interval
    >>> res = delta_interval([0.2], [[0.1]], [[1.0]], "pass@k", [5], scale="identity")
    >>> isinstance(res, IntervalEnds), np.round(res.interval.upper, 3)
    (True, array([0.396]))
    """

    @property
    def interval(self) -> ConfidenceInterval:
        """``(lower, upper)`` as a named tuple."""
        return ConfidenceInterval(self.lower, self.upper)


@dataclass(frozen=True)
class DeltaMethodResult(IntervalEnds):
    """A metric at one or more horizons with its delta-method interval.

    Attributes
    ----------
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : numpy.ndarray
        Horizons.
    estimate, standard_error, lower, upper : numpy.ndarray
        Point estimate, standard error and interval ends (clipped to [0, 1]),
        one per horizon.
    level : float
        Confidence level.
    covariance : numpy.ndarray
        Covariance of the estimates across horizons, shape ``(K, K)``.
    """

    metric: str
    k: np.ndarray
    estimate: np.ndarray
    standard_error: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    covariance: np.ndarray

    def summary(self) -> pd.DataFrame:
        """One row per horizon: metric, k, estimate, se, lower, upper."""
        return pd.DataFrame({
            "metric": self.metric, "k": self.k, "estimate": self.estimate,
            "se": self.standard_error, "lower": self.lower, "upper": self.upper,
        })


def delta_interval(values, gradient, covariance, metric: str, k, *, level: float = 0.95,
                   scale: str = "logit", logit=None) -> DeltaMethodResult:
    """Delta-method interval from a metric's values and gradient, generic in the model.

    Parameters
    ----------
    values : array_like
        The metric at each horizon, shape ``(K,)``.
    gradient : array_like
        Its gradient in the model's coordinates, shape ``(K, n)``.
    covariance : array_like
        The coordinates' covariance (inverse observed information), ``(n, n)``.
    metric : str
        The metric's name, carried into the result.
    k : array_like of int
        The horizons, carried into the result.
    level : float, default 0.95
        Confidence level.
    scale : {"logit", "identity"}, default "logit"
        As for :func:`passmix.delta_method`.
    logit : tuple of array_like, optional
        ``(logit M, its gradient)``, shapes ``(K,)`` and ``(K, n)``, computed
        without going through M (e.g.
        :func:`passmix.models.mixture.delta.metric_logit_gradient`). With
        ``scale="logit"`` the ends are formed from them, which keeps the
        interval's width where M rounds to 1 or underflows to 0; without,
        from `values` and `gradient` (``se / (M (1 - M))``), which cannot
        resolve such horizons. Horizons where the given logit is not finite
        fall back to that.

    Returns
    -------
    DeltaMethodResult

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.delta import delta_interval
    >>> res = delta_interval([0.2], [[0.1]], [[1.0]], "pass@k", [5], scale="identity")
    >>> round(float(res.upper[0]), 4)
    0.396
    """
    level = check_level(level)
    if scale not in _SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(_SCALES)}.")
    grad = np.atleast_2d(np.asarray(gradient, dtype=float))
    cov = grad @ np.asarray(covariance, dtype=float) @ grad.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    estimate = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    lower, upper = wald_ends(estimate, se, level, scale)
    if scale == "logit" and logit is not None:
        centre = np.asarray(logit[0], dtype=float).reshape(estimate.shape)
        grad_logit = np.atleast_2d(np.asarray(logit[1], dtype=float))
        cov_logit = np.asarray(covariance, dtype=float)
        se_logit = np.sqrt(np.clip(np.einsum("ki,ij,kj->k", grad_logit, cov_logit, grad_logit),
                                   0.0, None))
        # the exact logit where it is finite (a component's AUC lost below the float range
        # can leave it -inf); elsewhere the ends from M above
        exact = np.isfinite(centre) & np.isfinite(se_logit)
        lo, hi = logit_wald_ends(centre[exact], se_logit[exact], level)
        lower[exact], upper[exact] = lo, hi
    # rounding can put an end a ulp past the estimate, and a zero standard
    # error (coordinates held on a bound) gives ends that coincide
    lower, upper = widen_degenerate(np.minimum(lower, estimate), np.maximum(upper, estimate))
    return DeltaMethodResult(
        metric=check_metric(metric), k=np.asarray(k), estimate=estimate, standard_error=se,
        lower=lower, upper=upper, level=level, covariance=cov,
    )


def wald_edge_excess(logit_at, params, covariance, logit_gradient, level: float = 0.95,
                     box=None) -> np.ndarray:
    """How far the metric at the edge of the parameters' Wald region lies outside its
    logit-scale delta interval, in half-widths of that interval.

    The delta method replaces ``logit M`` by its tangent at the estimate
    ``z``. Over the Wald region ``{z' : (z' - z)' Sigma^-1 (z' - z) <= q^2}``
    the tangent is least and greatest at ``z -+ q Sigma g / sqrt(g' Sigma g)``,
    where it equals the interval's ends. Where ``logit M`` is close to linear
    over the region the metric itself is close to those ends there; where it
    is not (at huge horizons with few tasks, ``logit M`` is about
    ``alpha log k`` and AUC@k turns from ``~1/k`` to ``~k^-alpha`` as alpha
    crosses 1) a value of the metric inside the delta method's own region of
    parameters can lie far outside its interval, and the interval is not
    supported by the data. This measures that, at two evaluations of the
    metric per horizon.

    Parameters
    ----------
    logit_at : callable
        ``logit_at(z, i)``: ``logit M`` at coordinates `z` and horizon number `i`.
    params : array_like
        The estimate's coordinates, shape ``(n,)``.
    covariance : array_like
        Their covariance, ``(n, n)``.
    logit_gradient : array_like
        The gradient of ``logit M`` at `params`, shape ``(K, n)``.
    level : float, default 0.95
        Confidence level.
    box : array_like, optional
        ``(n, 2)`` bounds of the coordinates: the edge points are held
        inside them (the region may reach past the model's parameter space,
        where the metric is not defined).

    Returns
    -------
    numpy.ndarray
        Shape ``(K, 2)``: ``(lower end - logit M(z-)) / half`` and
        ``(logit M(z+) - upper end) / half``, positive where the metric at
        the edge lies outside the interval on that side; 0 where the
        standard error is 0 and NaN where the metric is not finite there.

    Examples
    --------
    A linear function of the coordinates has no excess:

    >>> import numpy as np
    >>> from passmix.inference.delta import wald_edge_excess
    >>> g = np.array([[1.0, 2.0]])
    >>> out = wald_edge_excess(lambda z, i: float(g[i] @ z), np.zeros(2), np.eye(2), g)
    >>> np.allclose(out, 0.0)
    True
    """
    params = np.asarray(params, dtype=float)
    cov = np.asarray(covariance, dtype=float)
    grad = np.atleast_2d(np.asarray(logit_gradient, dtype=float))
    box = None if box is None else np.asarray(box, dtype=float)
    q = normal_quantile(check_level(level))
    out = np.zeros((grad.shape[0], 2))
    for i, g in enumerate(grad):
        direction = cov @ g
        se = float(np.sqrt(max(float(g @ direction), 0.0)))
        if not (np.isfinite(se) and se > 0.0):
            continue
        step = (q / se) * direction
        low, high = params - step, params + step
        if box is not None:
            low, high = (np.clip(z, box[:, 0], box[:, 1]) for z in (low, high))
        centre, half = float(logit_at(params, i)), q * se
        with np.errstate(invalid="ignore", over="ignore"):  # an infinite logit: NaN or inf
            out[i, 0] = ((centre - half) - float(logit_at(low, i))) / half
            out[i, 1] = (float(logit_at(high, i)) - (centre + half)) / half
    return out


def normal_quantile(level: float) -> float:
    """The two-sided normal critical value of a confidence level: ``ndtri(0.5 + level / 2)``.

    Examples
    --------
    >>> from passmix.inference.delta import normal_quantile
    >>> round(normal_quantile(0.95), 4)
    1.96
    """
    return float(ndtri(0.5 + level / 2.0))


def logit_wald_ends(centre, se_logit, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wald ends on the logit scale, mapped back: ``expit(centre -+ z se_logit)``.

    `centre` is the estimate's logit, exact where the estimate itself would
    underflow (a Pass^k of 1e-400 has a logit of about -921), and `se_logit`
    its standard error.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.delta import logit_wald_ends
    >>> lower, upper = logit_wald_ends(np.array([0.0]), np.array([1.0]), 0.95)
    >>> np.round([lower[0], upper[0]], 4).tolist()
    [0.1235, 0.8765]
    """
    centre = np.asarray(centre, dtype=float)
    half = normal_quantile(level) * np.asarray(se_logit, dtype=float)
    return expit(centre - half), expit(centre + half)


def wald_ends(estimate, se, level: float, scale: str = "logit"
              ) -> tuple[np.ndarray, np.ndarray]:
    """Wald (delta-method) ends of estimates in [0, 1] with standard errors `se`.

    ``scale="identity"``: ``estimate -+ z se`` clipped to [0, 1];
    ``scale="logit"``: the same on the logit scale (the standard error there
    is ``se / (p (1 - p))``), so the ends stay inside (0, 1); where the
    estimate is 0 or 1 to double precision its logit is infinite and the
    identity-scale ends are kept.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.delta import wald_ends
    >>> lower, upper = wald_ends(np.array([0.5]), np.array([0.1]), 0.95, "identity")
    >>> np.round([lower[0], upper[0]], 4).tolist()
    [0.304, 0.696]
    """
    if scale not in _SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(_SCALES)}.")
    estimate, se = np.broadcast_arrays(np.asarray(estimate, dtype=float),
                                       np.asarray(se, dtype=float))
    shape = estimate.shape
    estimate, se = estimate.ravel(), se.ravel()
    z = normal_quantile(level)
    lower = np.clip(estimate - z * se, 0.0, 1.0)
    upper = np.clip(estimate + z * se, 0.0, 1.0)
    if scale == "logit":
        inner = (estimate > 1e-300) & (estimate < 1.0 - 1e-15)
        est = estimate[inner]
        lower[inner], upper[inner] = logit_wald_ends(np.log(est) - np.log1p(-est),
                                                     se[inner] / (est * (1.0 - est)), level)
    return lower.reshape(shape), upper.reshape(shape)


def widen_degenerate(lower, upper) -> tuple[np.ndarray, np.ndarray]:
    """Subnormal ends to 0 (an upper end to the smallest normal double) and no zero width.

    An interval whose ends coincide in floating point holds values that
    differ below double precision; moving one end by the spacing of doubles
    keeps it a true statement without claiming an exact value.
    """
    lower = np.where(lower < TINY, 0.0, np.clip(lower, 0.0, 1.0))
    upper = np.where(upper < TINY, TINY, np.clip(upper, 0.0, 1.0))
    flat = lower >= upper
    lower = np.where(flat & (upper >= 1.0), np.nextafter(1.0, 0.0), lower)
    upper = np.where(flat & (upper < 1.0), np.nextafter(upper, 1.0), upper)
    return lower, upper
