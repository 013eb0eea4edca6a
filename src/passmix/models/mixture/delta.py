"""The delta method in the Beta mixture's coordinates: metric gradients and :func:`delta_method`.

The metrics and their gradients in the unconstrained coordinates ``z`` of
:mod:`passmix.models.mixture.parameters` (digamma formulas, chained through
the map from ``z``), and :func:`delta_method`, which hands them to the
generic :func:`passmix.inference.delta.delta_interval` (``docs/formulas.md``
section 3). ``logit M`` and its gradient are computed from the components'
log terms (:func:`metric_logit_gradient`), never from M, so the interval
keeps its width at horizons where M rounds to 1 or underflows.
"""

from __future__ import annotations

import numpy as np

from ..._validation import check_k, check_metric
from ...inference.delta import DeltaMethodResult, delta_interval
from ...metrics import evaluate_logit, evaluate_metric
from .parameters import unpack, unpack_jacobian

__all__ = ["delta_method", "metric_gradient", "metric_logit_gradient"]


def metric_gradient(params, n_components: int, metric: str, k) -> tuple[np.ndarray, np.ndarray]:
    """Metric values and their gradient in the unconstrained coordinates.

    Parameters
    ----------
    params : array_like
        Unconstrained coordinates, shape ``(3H - 1,)`` (see :mod:`passmix.models.mixture.graph`).
    n_components : int
        H.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : int or array_like of int
        Horizons.

    Returns
    -------
    values : numpy.ndarray
        Shape ``(K,)``.
    gradient : numpy.ndarray
        Shape ``(K, 3H - 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.models.mixture.delta import metric_gradient
    >>> z = np.array([0.0, np.log(10.0)])            # H = 1: mean 0.5, concentration 10
    >>> values, grad = metric_gradient(z, 1, "pass@k", [1, 10])
    >>> grad.shape
    (2, 2)
    """
    metric = check_metric(metric)
    k_arr, _ = check_k(k)
    params = np.asarray(params, dtype=float)
    weights, alpha, beta = unpack(params, n_components)
    values, (d_w, d_a, d_b) = evaluate_metric(metric, weights, alpha, beta, k_arr, grad=True)
    d_wab = np.concatenate([d_w, d_a, d_b], axis=-1)
    return values, d_wab @ unpack_jacobian(params, n_components)


def metric_logit_gradient(params, n_components: int, metric: str, k
                          ) -> tuple[np.ndarray, np.ndarray]:
    """``logit M`` and its gradient in the unconstrained coordinates, exact at any horizon.

    Both come from the components' log terms
    (:func:`passmix.metrics.evaluate_logit`), so they stay finite and keep
    their relative accuracy where M itself rounds to 1 (Pass@k and AUC@k at
    k = 1e18, whose complement may be 1e-20) or underflows to 0 (Pass^k):
    there ``M (1 - M)`` is 0 in floating point and the logit-scale standard
    error ``se / (M (1 - M))`` cannot be formed from M's own gradient.

    Parameters
    ----------
    params : array_like
        Unconstrained coordinates, shape ``(3H - 1,)``.
    n_components : int
        H.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : int or array_like of int
        Horizons.

    Returns
    -------
    logits : numpy.ndarray
        ``logit M``, shape ``(K,)``.
    gradient : numpy.ndarray
        Its gradient, shape ``(K, 3H - 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.models.mixture.delta import metric_gradient, metric_logit_gradient
    >>> z = np.array([0.0, np.log(10.0)])                  # Beta(5, 5)
    >>> u, g = metric_logit_gradient(z, 1, "pass@k", [10**18])
    >>> round(float(u[0]), 2)                              # 1 - Pass@k ~ 1e-86...
    197.61
    >>> float(metric_gradient(z, 1, "pass@k", [10**18])[0][0])  # ...so Pass@k rounds to 1
    1.0
    """
    metric = check_metric(metric)
    k_arr, _ = check_k(k)
    params = np.asarray(params, dtype=float)
    mixture = unpack(params, n_components)
    logits, (d_w, d_a, d_b) = evaluate_logit(metric, *mixture, k_arr)
    d_wab = np.concatenate([d_w, d_a, d_b], axis=-1)
    return logits, d_wab @ unpack_jacobian(params, n_components, mixture)


def delta_method(params, covariance, n_components: int, metric: str, k,
                 *, level: float = 0.95, scale: str = "logit") -> DeltaMethodResult:
    """Delta-method interval of a metric from parameters and their covariance.

    Parameters
    ----------
    params : array_like
        Unconstrained coordinates at the optimum, shape ``(3H - 1,)``.
    covariance : array_like
        Their covariance (inverse observed information), ``(3H - 1, 3H - 1)``.
    n_components : int
        H.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : int or array_like of int
        Horizons; the result carries their joint covariance (for AUC@k this
        includes the covariance between the Pass@r it averages).
    level : float, default 0.95
        Confidence level.
    scale : {"logit", "identity"}, default "logit"
        Scale on which the normal approximation is made. ``"identity"`` is
        the papers' form, ``M +/- z se`` clipped to [0, 1].
        ``"logit"`` applies the same delta method to ``logit(M)`` (standard
        error ``se / (M (1 - M))``) and maps the ends back, so the interval
        stays inside (0, 1) and is asymmetric near the ends; it covers better
        when the metric is small or close to 1 (e.g. Pass^k at large k), where
        the identity scale undercovers. The standard error reported is that
        of M on its own scale either way. ``logit M`` and its gradient are
        computed in closed form from the components' log terms
        (:func:`metric_logit_gradient`), not from M, so the interval keeps its
        width at horizons where M rounds to 1 or underflows.

    Returns
    -------
    DeltaMethodResult

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.models.mixture.delta import delta_method
    >>> z = np.array([0.0, np.log(10.0)])
    >>> res = delta_method(z, 0.01 * np.eye(2), 1, "pass^k", [1, 5])
    >>> bool(np.all(res.lower < res.estimate)) and bool(np.all(res.estimate < res.upper))
    True

    At k = 1e18 Pass@k is 1 to double precision, but its interval is not a point:

    >>> res = delta_method(z, 0.01 * np.eye(2), 1, "pass@k", 10**18)
    >>> float(res.estimate[0]), bool(res.lower[0] < 1.0)
    (1.0, True)
    """
    values, grad = metric_gradient(params, n_components, metric, k)
    logit = metric_logit_gradient(params, n_components, metric, k) if scale == "logit" else None
    return delta_interval(values, grad, covariance, metric, check_k(k)[0], level=level,
                          scale=scale, logit=logit)
