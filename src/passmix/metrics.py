"""Pass@k, Pass^k and AUC@k of a Beta mixture, in closed form for any horizon.

These are the population targets of FORMULAS section 2. Every function takes
``(weights, alpha, beta)`` with the components on the last axis and
broadcasts over leading axes, so one call serves a point estimate (shape
``(H,)``) and an array of posterior draws (shape ``(chain, draw, H)``). The
horizon `k` may be a scalar or a 1-d array; an array adds a trailing axis.

Moments are evaluated in log space (``betaln`` differences), so horizons up
to 10^6 and beyond are accurate. AUC@k uses a telescoping closed form of
``sum_{r=1..k} B(a, b + r) / B(a, b)`` (see :func:`_fail_moment_sum`), which
costs O(1) in k instead of O(k).
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, digamma

from ._validation import check_k, check_metric

__all__ = ["auc_at_k", "metric_value", "pass_at_k", "pass_hat_k"]

# Within this distance of alpha = 1 the closed form for AUC@k divides two
# vanishing quantities; interpolate across the gap instead (error ~ _NEAR_ONE^2).
_NEAR_ONE = 1e-5
# horizons up to this use an exact product for the Beta moments
_EXACT_K = 64


def _mixture_iv(weights, alpha, beta):
    weights = np.asarray(weights, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    try:
        shape = np.broadcast_shapes(weights.shape, alpha.shape, beta.shape)
    except ValueError:
        raise ValueError(
            f"weights {weights.shape}, alpha {alpha.shape} and beta {beta.shape} "
            "do not broadcast; components go on the last axis."
        ) from None
    if len(shape) == 0:
        raise ValueError("weights, alpha and beta need a component axis (last axis).")
    for name, arr in (("weights", weights), ("alpha", alpha), ("beta", beta)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative.")
    if np.any(alpha <= 0) or np.any(beta <= 0):
        raise ValueError("alpha and beta must be positive.")
    return weights, alpha, beta


def _stirling_tail(z):
    """lgamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2], four terms (z >= 10)."""
    inv = 1.0 / z
    inv2 = inv * inv
    return inv * (1 / 12 + inv2 * (-1 / 360 + inv2 * (1 / 1260 - inv2 / 1680)))


def _log_rising_ratio(x, total, k):
    """log prod_{i<k} (x + i) / (total + i) = log[G(x+k) G(t) / (G(x) G(t+k))], 0 < x < t.

    Computed without cancelling large log-gamma values, which matters when
    the concentration is huge (the binomial limit, common on real data):
    there a betaln difference loses ~1e-9 and the AUC@k closed form
    multiplies that error by beta / (alpha - 1).

    - k <= `_EXACT_K`: the sum of log1p((x - t) / (t + i)), exact to rounding;
    - x >= 10: Stirling's series rearranged so that each term is O(d log k),
      with d = t - x;
    - otherwise the log-gamma values are small and a betaln difference is exact enough.
    """
    x, total, k = np.broadcast_arrays(x, total, k)
    d = total - x
    out = betaln(x + k, d) - betaln(x, d)
    small = k <= _EXACT_K
    if small.any():
        ks, xs, ds = k[small], x[small], d[small]
        acc = np.zeros(ks.shape)
        for i in range(int(ks.max())):
            acc += np.where(i < ks, np.log1p(-ds / (xs + ds + i)), 0.0)
        out[small] = acc
    large = ~small & (x >= 10.0)
    if large.any():
        xs, ds, ks = x[large], d[large], k[large]
        ts = xs + ds
        main = ((ts + ks - 0.5) * np.log1p(-ds / (ts + ks)) - (ts - 0.5) * np.log1p(-ds / ts)
                - ds * np.log1p(ks / xs))
        tail = (_stirling_tail(xs + ks) - _stirling_tail(xs)
                - _stirling_tail(ts + ks) + _stirling_tail(ts))
        out[large] = main + tail
    return out


def _log_success_moment(alpha, beta, k):
    """log E[theta^k] = log B(alpha + k, beta) / B(alpha, beta)."""
    return _log_rising_ratio(alpha, alpha + beta, k)


def _log_fail_moment(alpha, beta, k):
    """log E[(1 - theta)^k] = log B(alpha, beta + k) / B(alpha, beta)."""
    return _log_rising_ratio(beta, alpha + beta, k)


def _closed_sum(alpha, beta, k):
    """sum_{r=1..k} T_r with T_r = E[(1 - theta)^r], away from alpha = 1.

    Telescoping T_r = A_{r+1} - A_r with A_r = T_r (alpha + beta - 1 + r) / (1 - alpha)
    gives (beta - (beta + k) T_k) / (alpha - 1); also returns the gradient.
    """
    t_k = np.exp(_log_fail_moment(alpha, beta, k))
    s = (beta - (beta + k) * t_k) / (alpha - 1.0)
    psi_ab = digamma(alpha + beta) - digamma(alpha + beta + k)
    dt_da = t_k * psi_ab
    dt_db = t_k * (digamma(beta + k) - digamma(beta) + psi_ab)
    ds_da = (-(beta + k) * dt_da - s) / (alpha - 1.0)
    ds_db = (1.0 - t_k - (beta + k) * dt_db) / (alpha - 1.0)
    return s, ds_da, ds_db


def _fail_moment_sum(alpha, beta, k):
    """sum_{r=1..k} E[(1 - theta)^r] for Beta(alpha, beta), with its gradient.

    The closed form is smooth in alpha but 0/0 at alpha = 1, so within
    `_NEAR_ONE` of 1 it is linearly interpolated between 1 -/+ _NEAR_ONE.
    """
    alpha, beta, k = np.broadcast_arrays(alpha, beta, k)
    near = np.abs(alpha - 1.0) < _NEAR_ONE
    safe_alpha = np.where(near, 1.0 + _NEAR_ONE, alpha)
    out = list(_closed_sum(safe_alpha, beta, k))
    if near.any():
        a, b, kk = alpha[near], beta[near], k[near]
        lo = _closed_sum(np.full_like(a, 1.0 - _NEAR_ONE), b, kk)
        hi = _closed_sum(np.full_like(a, 1.0 + _NEAR_ONE), b, kk)
        t = (a - (1.0 - _NEAR_ONE)) / (2.0 * _NEAR_ONE)
        for arr, v_lo, v_hi in zip(out, lo, hi):
            arr[near] = (1.0 - t) * v_lo + t * v_hi
    return tuple(out)


def _component_terms(metric, alpha, beta, k, grad=False):
    """Per-component metric value g_h and (optionally) dg/dalpha, dg/dbeta."""
    if metric == "pass^k":
        log_m = _log_success_moment(alpha, beta, k)
        g = np.exp(log_m)
        if not grad:
            return g
        psi = digamma(alpha + beta) - digamma(alpha + beta + k)
        return g, g * (digamma(alpha + k) - digamma(alpha) + psi), g * psi
    if metric == "pass@k":
        log_t = _log_fail_moment(alpha, beta, k)
        g = -np.expm1(log_t)
        if not grad:
            return g
        t = np.exp(log_t)
        psi = digamma(alpha + beta) - digamma(alpha + beta + k)
        return g, -t * psi, -t * (digamma(beta + k) - digamma(beta) + psi)
    s, ds_da, ds_db = _fail_moment_sum(alpha, beta, k)
    g = 1.0 - s / k
    if not grad:
        return g
    return g, -ds_da / k, -ds_db / k


def _evaluate(metric, weights, alpha, beta, k, grad=False):
    """Core evaluation without validation; k is a 1-d int array.

    Returns values of shape (..., K) and, with ``grad=True``, gradients with
    respect to weights, alpha and beta of shape (..., K, H) each (weights
    treated as free; the simplex constraint is handled by the caller's
    parameterisation).
    """
    w = weights[..., None, :]
    a = alpha[..., None, :]
    b = beta[..., None, :]
    kk = k.astype(float)[:, None]
    if not grad:
        g = _component_terms(metric, a, b, kk)
        return np.clip(np.sum(w * g, axis=-1), 0.0, 1.0)
    g, dg_da, dg_db = _component_terms(metric, a, b, kk, grad=True)
    value = np.sum(w * g, axis=-1)
    return value, (g, w * dg_da, w * dg_db)


def metric_value(metric: str, weights, alpha, beta, k):
    """Evaluate a metric by name: ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.

    Parameters
    ----------
    metric : str
        One of ``"pass@k"``, ``"pass^k"``, ``"auc@k"`` (aliases such as
        ``"pass_at_k"`` are accepted).
    weights, alpha, beta : array_like
        Mixture parameters, components on the last axis.
    k : int or array_like of int
        Horizon(s) >= 1.

    Returns
    -------
    float or numpy.ndarray
        Shape of the broadcast leading axes, plus a trailing axis if `k` is an array.

    Examples
    --------
    >>> from passmix.metrics import metric_value
    >>> round(metric_value("pass@k", [1.0], [1.0], [1.0], 1), 6)
    0.5
    """
    metric = check_metric(metric)
    k_arr, scalar = check_k(k)
    weights, alpha, beta = _mixture_iv(weights, alpha, beta)
    out = _evaluate(metric, weights, alpha, beta, k_arr)
    if scalar:
        out = out[..., 0]
    return float(out) if np.ndim(out) == 0 else out


def pass_at_k(weights, alpha, beta, k):
    r"""Pass@k: probability that at least one of k attempts succeeds.

    .. math:: \mathrm{Pass@}k = 1 - \sum_h w_h \frac{B(\alpha_h, \beta_h + k)}{B(\alpha_h, \beta_h)}

    Parameters
    ----------
    weights, alpha, beta : array_like
        Mixture weights and Beta shapes, components on the last axis; leading
        axes (e.g. posterior chain and draw) broadcast.
    k : int or array_like of int
        Horizon(s) >= 1, any size: the formula is exact far beyond the number
        of trials observed.

    Returns
    -------
    float or numpy.ndarray
        Leading axes of the parameters, plus a trailing axis of length
        ``len(k)`` when `k` is an array.

    See Also
    --------
    pass_hat_k, auc_at_k

    Examples
    --------
    A uniform task difficulty, Beta(1, 1), gives ``k / (k + 1)``:

    >>> from passmix import pass_at_k
    >>> pass_at_k([1.0], [1.0], [1.0], [1, 9, 99])
    array([0.5 , 0.9 , 0.99])
    """
    return metric_value("pass@k", weights, alpha, beta, k)


def pass_hat_k(weights, alpha, beta, k):
    r"""Pass^k: probability that all k attempts succeed.

    .. math:: \mathrm{Pass}^k = \sum_h w_h \frac{B(\alpha_h + k, \beta_h)}{B(\alpha_h, \beta_h)}

    Parameters and returns as in :func:`pass_at_k`.

    Examples
    --------
    >>> from passmix import pass_hat_k
    >>> pass_hat_k([1.0], [1.0], [1.0], [1, 9, 99])
    array([0.5 , 0.1 , 0.01])
    """
    return metric_value("pass^k", weights, alpha, beta, k)


def auc_at_k(weights, alpha, beta, k):
    r"""AUC@k: the mean of Pass@r over r = 1..k.

    .. math:: \mathrm{AUC@}k = \frac{1}{k}\sum_{r=1}^{k} \mathrm{Pass@}r

    Evaluated in closed form in O(1) per horizon via
    :math:`\sum_{r=1}^k B(\alpha, \beta + r)/B(\alpha, \beta) =
    (\beta - (\beta + k) B(\alpha, \beta + k)/B(\alpha, \beta)) / (\alpha - 1)`.

    Parameters and returns as in :func:`pass_at_k`.

    Examples
    --------
    For Beta(1, 1), Pass@r = r / (r + 1):

    >>> import numpy as np
    >>> from passmix import auc_at_k
    >>> bool(np.isclose(auc_at_k([1.0], [1.0], [1.0], 3), (1/2 + 2/3 + 3/4) / 3))
    True
    """
    return metric_value("auc@k", weights, alpha, beta, k)
