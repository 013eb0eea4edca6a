"""Pass@k, Pass^k and AUC@k of a Beta mixture, in closed form for any horizon.

These are the population targets of ``docs/formulas.md`` section 2. Every
function takes ``(weights, alpha, beta)`` with the components on the last
axis and broadcasts over leading axes, so one call serves a point estimate
(shape ``(H,)``) and an array of posterior draws (shape ``(chain, draw, H)``).
The horizon `k` may be a scalar or a 1-d array; an array adds a trailing axis.

Each component's metric is built from the log Beta moments of
:mod:`passmix._special`, which keep their relative accuracy for shapes from
1e-300 to 1e300 and horizons up to 2^63, so a metric and its complement
(``Pass@k`` and ``1 - Pass@k``) are both accurate however close to 0 or 1
they are. AUC@k uses a telescoping closed form of
``sum_{r=1..k} B(a, b + r) / B(a, b)`` (see :func:`_fail_moment_sum`) that
costs O(1) in k. Values below the smallest normal double (``2.2e-308``) are
returned as 0.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from ._special import expm1_ratio, log_rising_ratio, log_rising_ratio_per_d
from ._validation import check_k, check_metric, check_mixture

__all__ = ["auc_at_k", "metric_at_rate", "metric_value", "pass_at_k", "pass_hat_k"]

#: smallest normal double: metric values below it are reported as 0
TINY = np.finfo(float).tiny
# the weights of a mixture must sum to 1 within this (relative to the sum)
# relative step in log alpha / log beta of the AUC@k gradient (see _auc_terms)
_AUC_STEP = 1e-5


def _log_complement(log_p):
    """log(1 - p) from log p <= 0."""
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(log_p))


def _fail_moment_sum(alpha, beta, k):
    """sum_{r=1..k} E[(1 - theta)^r] for Beta(alpha, beta), without cancellation.

    Telescoping ``T_r = A_{r+1} - A_r`` with ``A_r = T_r (alpha + beta - 1 + r) / (1 - alpha)``
    gives ``S = (beta - (beta + k) T_k) / (alpha - 1)``. With
    ``L = log[(beta + k) T_k / beta] = log_rising_ratio(beta + 1, alpha - 1, k)``
    this is ``S = -beta (L / d) expm1(L) / L``, ``d = alpha - 1``: no division
    by zero at alpha = 1 and no difference of large numbers when beta is large.
    Where ``L > 1`` (alpha well below 1) the two terms of the first form no
    longer cancel and it is used as written.
    """
    alpha, beta, k = np.broadcast_arrays(alpha, beta, k)
    log_t = log_rising_ratio(beta, alpha, k)  # log T_k
    # L as a sum of two logs cancels, but it is good enough to choose the form
    # (and it is finite where beta + 1 and alpha - 1 would lose alpha + beta)
    rough = np.log(beta + k) - np.log(beta) + log_t
    small = rough <= 1.0
    out = np.empty(alpha.shape)
    if small.any():
        a, b, kk = alpha[small], beta[small], k[small]
        per_d = log_rising_ratio_per_d(b + 1.0, a - 1.0, kk)
        out[small] = -b * per_d * expm1_ratio((a - 1.0) * per_d)
    if not small.all():
        a, b, kk, lt = alpha[~small], beta[~small], k[~small], log_t[~small]
        out[~small] = (np.exp(np.log(b + kk) + lt) - b) / (1.0 - a)
    return out


def _power_sums(k: np.ndarray) -> list[np.ndarray]:
    """``sum_{j<k} j^n`` for n = 0..4."""
    n = k - 1.0
    return [k, n * (n + 1) / 2, n * (n + 1) * (2 * n + 1) / 6, (n * (n + 1) / 2) ** 2,
            n * (n + 1) * (2 * n + 1) * (3 * n ** 2 + 3 * n - 1) / 30]


def _harmonic_gap(beta: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``psi(beta + k) - psi(beta) = sum_{j<k} 1 / (beta + j)``, also where beta >> k
    (there as a series in j / beta: the digammas' difference would cancel)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        out = digamma(beta + k) - digamma(beta)
    far = k < 1e-3 * beta
    if far.any():
        b, s = beta[far], _power_sums(k[far])
        out[far] = sum((-1.0 / b) ** p * s[p] for p in range(4)) / b
    return out


def _digamma_sum(beta: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``sum_{h=1..k} psi(beta + h) - psi(beta) = sum_{j<k} (k - j) / (beta + j)``.

    As a series in k / beta where beta exceeds 1000 k, else in closed form,
    ``(k + beta)(psi(beta + k) - psi(beta)) - k`` (which cancels to a relative
    error of ~(beta / k)^2 x 1e-14, below 1e-8 there).
    """
    k = np.asarray(k, dtype=float)
    out = (k + beta) * _harmonic_gap(beta, k) - k
    series = k < 1e-3 * beta
    if series.any():
        b, kk = beta[series], k[series]
        s = _power_sums(kk)
        out[series] = sum((-1.0 / b) ** p * (kk * s[p] - s[p + 1]) for p in range(4)) / b
    return out


def _small_auc(alpha: np.ndarray, beta: np.ndarray, k: np.ndarray) -> np.ndarray:
    """AUC@k of components whose AUC is below ~1e-8, where ``1 - tail`` has lost its digits.

    Up to k = 2000 the mean of Pass@h over h <= k, each accurate (its log terms);
    beyond, to first order in alpha, ``alpha sum_h (psi(beta + h) - psi(beta)) / k``
    (relative error ~ alpha (psi(beta + k) - psi(beta)) < 1e-8).
    """
    out = np.empty(alpha.shape)
    direct = k <= 2000
    for kk in np.unique(k[direct]):
        rows = direct & (k == kk)
        h = np.arange(1, int(kk) + 1)
        lg, _ = _component_log_terms("pass@k", alpha[rows][:, None], beta[rows][:, None],
                                     h[None, :])
        out[rows] = np.exp(lg).mean(axis=1)
    far = ~direct
    if far.any():
        out[far] = alpha[far] * _digamma_sum(beta[far], k[far]) / k[far]
    return out


def _auc_terms(alpha, beta, k, grad):
    """Log terms of one component's AUC@k (see :func:`_component_log_terms`).

    The analytic derivative of the closed form divides by alpha - 1 again;
    central differences of the accurate value in log alpha and log beta are
    accurate to ~1e-9 relative, ample for standard errors and optimisation.
    All five evaluations go through one vectorised call.
    """
    alpha, beta, k = np.broadcast_arrays(alpha, beta, k)
    if grad:
        up, down = np.exp(_AUC_STEP), np.exp(-_AUC_STEP)
        a_all = np.stack([alpha, alpha * up, alpha * down, alpha, alpha])
        b_all = np.stack([beta, beta, beta, beta * up, beta * down])
    else:
        a_all, b_all = alpha[None], beta[None]
    k_all = np.broadcast_to(k[None], a_all.shape)
    tails = np.clip(_fail_moment_sum(a_all, b_all, k_all) / k_all, 0.0, 1.0)  # 1 - g
    # where g is below ~1e-8, 1 - tail has lost its digits (Pass@h <= alpha times the
    # harmonic gap, so that bounds g): computed directly there (_small_auc)
    with np.errstate(over="ignore", invalid="ignore"):
        small = a_all * _harmonic_gap(b_all, k_all) < 1e-8
    small = np.broadcast_to(small.any(axis=0), a_all.shape) if grad else small
    gs = 1.0 - tails
    if small.any():
        gs[small] = _small_auc(a_all[small], b_all[small], k_all[small].astype(float))
    tail = tails[0]
    with np.errstate(divide="ignore"):
        lg = np.where(small[0], np.log(gs[0]), np.log1p(-tail))
        l1g = np.where(small[0], np.log1p(-gs[0]), np.log(tail))
    if not grad:
        return lg, l1g
    step = 2.0 * _AUC_STEP
    # difference the side that carries the digits: 1 - tail keeps only ~1e-16 of a
    # tail near 0 (AUC@k at huge k), where its differences cancel to 0 and the delta
    # method would see no variance; the tail itself is accurate to a few ulp there
    side = np.where(small, -gs, tails)  # -g where g is tiny, else 1 - g: both d(1 - g)
    d_tail_da = (side[1] - side[2]) / (step * alpha)
    d_tail_db = (side[3] - side[4]) / (step * beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_g, inv_tail = 1.0 / gs[0], 1.0 / np.where(small[0], 1.0 - gs[0], tail)
    return (lg, l1g, -d_tail_da * inv_g, -d_tail_db * inv_g,
            d_tail_da * inv_tail, d_tail_db * inv_tail)


def _component_log_terms(metric, alpha, beta, k, grad=False):
    """log g and log(1 - g) of each component's metric g, and with `grad` their
    derivatives ``d log g / d alpha``, ``d log g / d beta``, ``d log(1 - g) / d alpha``,
    ``d log(1 - g) / d beta``.

    Logs keep a metric and its complement accurate at both ends (Pass^k of
    1e-300, Pass@k of 1 - 1e-20).
    """
    if metric == "auc@k":
        return _auc_terms(alpha, beta, k, grad)
    psi = digamma(alpha + beta) - digamma(alpha + beta + k)
    if metric == "pass^k":
        lg = log_rising_ratio(alpha, beta, k)  # log E[theta^k]
        l1g = _log_complement(lg)
        if not grad:
            return lg, l1g
        da, db = digamma(alpha + k) - digamma(alpha) + psi, psi
        with np.errstate(over="ignore"):
            odds = np.exp(lg - l1g)  # g / (1 - g)
        return lg, l1g, da, db, -odds * da, -odds * db
    # pass@k: 1 - g = E[(1 - theta)^k]
    l1g = log_rising_ratio(beta, alpha, k)
    lg = _log_complement(l1g)
    if not grad:
        return lg, l1g
    da, db = psi, digamma(beta + k) - digamma(beta) + psi
    with np.errstate(over="ignore"):
        odds = np.exp(l1g - lg)  # (1 - g) / g
    return lg, l1g, -odds * da, -odds * db, da, db


def _flush(values):
    """Values below the float range as 0 (no subnormal garbage)."""
    return np.where(values < TINY, 0.0, values)


def evaluate_metric(metric, weights, alpha, beta, k, grad=False):
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
    terms = _component_log_terms(metric, a, b, kk, grad=grad)
    g = np.exp(terms[0])
    value = _flush(np.clip(np.sum(w * g, axis=-1), 0.0, 1.0))
    if not grad:
        return value
    _, l1g, dlg_da, dlg_db, dl1g_da, dl1g_db = terms
    # dg = g d log g = -(1 - g) d log(1 - g): take the side that cannot overflow, with
    # 1 - g from its own log term (1.0 - g is 0 where g rounds to 1, at huge k)
    low = g <= 0.5
    with np.errstate(invalid="ignore", over="ignore"):
        comp = np.exp(l1g)
        dg_da = np.where(low, g * dlg_da, -comp * dl1g_da)
        dg_db = np.where(low, g * dlg_db, -comp * dl1g_db)
    return value, (g, w * dg_da, w * dg_db)


def evaluate_logit(metric, weights, alpha, beta, k):
    """``logit M`` at horizons `k` of one mixture, and its gradient in (w, alpha, beta).

    Computed from the components' log terms, so it stays finite and smooth
    where M underflows (Pass^k at large k) or rounds to 1: the scale on which
    the profile-likelihood search runs. Returns values (K,) and gradients
    (K, H) each.
    """
    kk = k.astype(float)[:, None]
    lg, l1g, *derivs = _component_log_terms(metric, alpha[None, :], beta[None, :], kk,
                                            grad=True)
    with np.errstate(divide="ignore", over="ignore"):
        log_w = np.log(weights)[None, :]
        out = np.zeros(k.shape)
        grads = []
        for sign, logs, (da, db) in ((1.0, lg, derivs[:2]), (-1.0, l1g, derivs[2:])):
            joint = log_w + logs
            top = np.max(joint, axis=-1, keepdims=True)
            top = np.where(np.isfinite(top), top, 0.0)
            total = top + np.log(np.sum(np.exp(joint - top), axis=-1, keepdims=True))
            out += sign * total[:, 0]
            # log M (or log(1 - M)) = log sum_h w_h g_h: each component's share of the sum
            share = np.exp(joint - total)
            grads.append((np.exp(logs - total), share * da, share * db))
    (w1, a1, b1), (w0, a0, b0) = grads
    return out, (w1 - w0, a1 - a0, b1 - b0)


def component_logs(metric, alpha, beta, k):
    """``log g`` and ``log(1 - g)`` of each Beta component's metric ``g`` at one horizon.

    Core evaluation without validation, broadcasting `alpha` and `beta`;
    `k` a float. Logs keep Pass^k of 1e-300 and Pass@k of 1 - 1e-20 apart
    from 0 and 1 (the tasks' spread sums them in logs).
    """
    return _component_log_terms(metric, alpha, beta, k)


def evaluate_logit_value(metric, weights, alpha, beta, k):
    """``logit M`` at horizons `k`, without gradient, broadcasting over leading axes.

    Mixtures on the last axis of `weights`, `alpha` and `beta`; returns
    shape ``(..., K)``. The same log-space computation as
    :func:`evaluate_logit`, for many mixtures at once (e.g. ranking the
    starts of a profile search).
    """
    kk = k.astype(float)[:, None]
    lg, l1g = _component_log_terms(metric, alpha[..., None, :], beta[..., None, :], kk)
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)[..., None, :]
    out = np.zeros(np.broadcast_shapes(lg.shape, log_w.shape)[:-1])
    for sign, logs in ((1.0, lg), (-1.0, l1g)):
        joint = log_w + logs
        top = np.max(joint, axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        out += sign * (top + np.log(np.sum(np.exp(joint - top), axis=-1, keepdims=True)))[..., 0]
    return out


def metric_value(metric: str, weights, alpha, beta, k):
    """Evaluate a metric by name: ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.

    Parameters
    ----------
    metric : str
        One of ``"pass@k"``, ``"pass^k"``, ``"auc@k"`` (aliases such as
        ``"pass_at_k"`` are accepted).
    weights, alpha, beta : array_like
        Mixture parameters, components on the last axis; the weights must
        sum to 1 over it.
    k : int or array_like of int
        Horizon(s) >= 1, below 2^63.

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
    weights, alpha, beta = check_mixture(weights, alpha, beta)
    out = evaluate_metric(metric, weights, alpha, beta, k_arr)
    if scalar:
        out = out[..., 0]
    return float(out) if np.ndim(out) == 0 else out


def pass_at_k(weights, alpha, beta, k):
    r"""Pass@k: probability that at least one of k attempts succeeds.

    .. math:: \mathrm{Pass@}k = 1 - \sum_h w_h \frac{B(\alpha_h, \beta_h + k)}{B(\alpha_h, \beta_h)}

    Parameters
    ----------
    weights, alpha, beta : array_like
        Mixture weights (summing to 1) and Beta shapes, components on the
        last axis; leading axes (e.g. posterior chain and draw) broadcast.
    k : int or array_like of int
        Horizon(s) >= 1, any size below 2^63: the formula is exact far
        beyond the number of trials observed.

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
    (\beta - (\beta + k) B(\alpha, \beta + k)/B(\alpha, \beta)) / (\alpha - 1)`,
    rearranged so that it has no 0/0 at :math:`\alpha = 1`.

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


def metric_at_rate(metric: str, p, k) -> np.ndarray:
    """Pass@k, Pass^k or AUC@k of a task whose success probability is exactly `p`.

    ``p^k``, ``1 - (1 - p)^k`` and ``1 - (1 - p)(1 - (1 - p)^k) / (k p)`` (the
    mean of Pass@h over h <= k; 0 at p = 0), element-wise over broadcast `p`
    and `k`, written so that a small p keeps its relative accuracy: the naive
    plug-in (p = y / m) and a draw of task probabilities share it.

    Parameters
    ----------
    metric : {"pass@k", "pass^k", "auc@k"}
        The metric (not validated: callers have).
    p : array_like
        Success probabilities in [0, 1].
    k : array_like of int
        Horizons, broadcast against `p`.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> from passmix.metrics import metric_at_rate
    >>> [round(float(metric_at_rate(m, 0.5, 2)), 3) for m in ("pass@k", "pass^k", "auc@k")]
    [0.75, 0.25, 0.625]
    """
    p = np.asarray(p, dtype=float)
    if metric == "pass^k":
        return p**k
    # log(1 - p), with -inf at p = 1 so that (1 - p)^k = exp(k log(1 - p)) = 0.
    log_q = np.full_like(p, -np.inf)
    np.log1p(-p, out=log_q, where=p < 1)
    pass_at = -np.expm1(k * log_q)  # 1 - (1 - p)^k, accurate for small p
    if metric == "pass@k":
        return pass_at
    # AUC@k = 1 - (1/k) sum_{r=1..k} q^r, and sum_{r=1..k} q^r = q (1 - q^k) / p.
    safe_p = np.where(p > 0, p, 1.0)
    return np.where(p > 0, 1.0 - (1.0 - p) * pass_at / (safe_p * k), 0.0)


def logit_with_zero_atom(logit_m, zero_weight):
    """``logit((1 - pi) M)`` from ``logit M``, and its partial derivatives.

    A mixture with an atom of weight ``pi`` at success rate 0 beside a Beta
    mixture of metric M has metric ``(1 - pi) M`` for Pass@k, Pass^k and AUC@k
    alike (the atom never succeeds). Computed in log space from ``logit M``,
    so it keeps its accuracy where M rounds to 1 and `pi` is tiny.
    Broadcasts; returns ``(logit, d/d logit M, d/d pi)``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.metrics import logit_with_zero_atom
    >>> value, _, _ = logit_with_zero_atom(np.log(0.5 / 0.5), 0.2)  # M = 0.5
    >>> round(float(1.0 / (1.0 + np.exp(-value))), 6)  # (1 - 0.2) * 0.5
    0.4
    """
    u = np.asarray(logit_m, dtype=float)
    pi = np.asarray(zero_weight, dtype=float)
    with np.errstate(divide="ignore"):
        log_pi, log_keep = np.log(pi), np.log1p(-pi)
    log_m, log_fail = -np.logaddexp(0.0, -u), -np.logaddexp(0.0, u)
    # 1 - (1 - pi) M = pi + (1 - pi)(1 - M), in logs
    log_rest = np.logaddexp(log_pi, log_keep + log_fail)
    value = log_keep + log_m - log_rest
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.exp(log_m)
        share = np.exp(log_keep + log_fail - log_rest)  # (1 - pi)(1 - M) / (1 - (1 - pi) M)
        d_u = (1.0 - m) + share * m
        d_pi = -1.0 / (1.0 - pi) - np.exp(log_m - log_rest)
    return value, d_u, d_pi
