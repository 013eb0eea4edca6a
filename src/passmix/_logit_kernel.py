"""A compiled kernel of a Beta mixture's metric logit and its gradient, for the profile search.

The profile-likelihood search evaluates ``logit M`` and its gradient in the
mixture's unconstrained coordinates some hundreds of times per interval
end, one point and one horizon at a time. The numpy path
(:func:`passmix.metrics.evaluate_logit`, :func:`passmix.models.mixture.
parameters.unpack` and ``unpack_jacobian``) spends that time in a hundred
calls on arrays of two or three numbers; this module does the same
arithmetic, in the same order and with the same branches, as scalar code
compiled by numba (one call, a few microseconds).

It is a second implementation of formulas that live in :mod:`passmix._special`
and :mod:`passmix.metrics`; the tests hold the two to each other over shapes
from 1e-300 to 1e12 and horizons to 1e18. Only the profile search uses it:
it is compiled (and cached on disk) on the first profile interval, so
importing passmix compiles nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["METRIC_CODES", "mixture_logit"]

#: the metric's code in the kernel
METRIC_CODES = {"pass@k": 0, "pass^k": 1, "auc@k": 2}

_EXACT_K = 64.0  # passmix._special.EXACT_K
_STIRLING_MIN = 10.0
_TAIL_C = np.array([1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360])
_AUC_STEP = 1e-5  # passmix.metrics._AUC_STEP


@njit(cache=True)
def _log1p_ratio(u):
    if abs(u) < 1e-4:
        return 1.0 - u * (0.5 - u * (1 / 3 - u * 0.25))
    return math.log1p(u) / u


@njit(cache=True)
def _expm1_ratio(v):
    if abs(v) < 1e-5:
        return 1.0 + v * (0.5 + v / 6.0)
    return math.expm1(v) / v


@njit(cache=True)
def _tail_diff_per_d(a, d):
    inv = 1.0 / a
    inv2 = inv * inv
    slope1 = inv * _log1p_ratio(d * inv)
    power = inv
    total = 0.0
    for j in range(_TAIL_C.size):
        n = 2.0 * j + 1.0
        slope = -n * slope1
        total += _TAIL_C[j] * power * _expm1_ratio(d * slope) * slope
        power *= inv2
    return total


@njit(cache=True)
def _exact_sum(x, d, k, per_d):
    total = 0.0
    for i in range(int(k)):
        xi = x + i
        if abs(d) <= xi:
            u = d / xi
            total += _log1p_ratio(u) / xi if per_d else math.log1p(u)
        else:
            far = np.log(xi + d) - np.log(xi)
            total += far / d if per_d else far
    return -total


@njit(cache=True)
def _stirling_part(x, d, k, per_d):
    t = x + d
    xk = x + k
    q = (d / t) * (k / xk)
    if abs(q) <= 0.5:
        middle = ((x - 0.5) / xk) * (k / t) * _log1p_ratio(-q)
    else:
        middle = -(x - 0.5) * (math.log1p(d / xk) - math.log1p(d / x)) / d
    per = (-math.log1p(k / t) + middle - (k / xk) * _log1p_ratio(d / xk)
           + _tail_diff_per_d(x, d) - _tail_diff_per_d(xk, d))
    return per if per_d else d * per


@njit(cache=True)
def _log_rising(x, d, k, per_d):
    """``L(x, d, k)`` of :mod:`passmix._special` (or ``L / d``)."""
    if k <= _EXACT_K:
        return _exact_sum(x, d, k, per_d)
    peel = math.ceil(max(_STIRLING_MIN - min(x, x + d), 0.0))
    head = _exact_sum(x, d, peel, per_d) if peel > 0 else 0.0
    return head + _stirling_part(x + peel, d, k - peel, per_d)


@njit(cache=True)
def _digamma(x):
    """psi(x) for x > 0: the recurrence up to 10, then the asymptotic series."""
    if not x > 0.0:
        return np.nan
    if x == np.inf:
        return np.inf
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
    return acc + math.log(x) - 0.5 / x - series


@njit(cache=True)
def _log_complement(log_p):
    return np.log(-math.expm1(log_p))


@njit(cache=True)
def _power_sums(k):
    n = k - 1.0
    return (k, n * (n + 1) / 2, n * (n + 1) * (2 * n + 1) / 6, (n * (n + 1) / 2) ** 2,
            n * (n + 1) * (2 * n + 1) * (3 * n ** 2 + 3 * n - 1) / 30)


@njit(cache=True)
def _harmonic_gap(beta, k):
    if k < 1e-3 * beta:
        s = _power_sums(k)
        total = 0.0
        for p in range(4):
            total += (-1.0 / beta) ** p * s[p]
        return total / beta
    return _digamma(beta + k) - _digamma(beta)


@njit(cache=True)
def _digamma_sum(beta, k):
    if k < 1e-3 * beta:
        s = _power_sums(k)
        total = 0.0
        for p in range(4):
            total += (-1.0 / beta) ** p * (k * s[p] - s[p + 1])
        return total / beta
    return (k + beta) * _harmonic_gap(beta, k) - k


@njit(cache=True)
def _fail_moment_sum(alpha, beta, k):
    log_t = _log_rising(beta, alpha, k, False)
    rough = np.log(beta + k) - np.log(beta) + log_t
    if rough <= 1.0:
        per_d = _log_rising(beta + 1.0, alpha - 1.0, k, True)
        return -beta * per_d * _expm1_ratio((alpha - 1.0) * per_d)
    return (math.exp(math.log(beta + k) + log_t) - beta) / (1.0 - alpha)


@njit(cache=True)
def _small_auc(alpha, beta, k):
    if k <= 2000:
        total = 0.0
        for h in range(1, int(k) + 1):
            total += math.exp(_log_complement(_log_rising(beta, alpha, float(h), False)))
        return total / k
    return alpha * _digamma_sum(beta, k) / k


@njit(cache=True)
def _auc_log_terms(alpha, beta, k, out):
    """One component's AUC@k log terms and their derivatives, into `out` (6,)."""
    up, down = math.exp(_AUC_STEP), math.exp(-_AUC_STEP)
    a_all = (alpha, alpha * up, alpha * down, alpha, alpha)
    b_all = (beta, beta, beta, beta * up, beta * down)
    tails = np.empty(5)
    small = False
    for i in range(5):
        tails[i] = min(max(_fail_moment_sum(a_all[i], b_all[i], k) / k, 0.0), 1.0)
        # NaN compares False, as numpy's does
        small = small or a_all[i] * _harmonic_gap(b_all[i], k) < 1e-8
    side = np.empty(5)
    for i in range(5):
        side[i] = -_small_auc(a_all[i], b_all[i], k) if small else tails[i]
    g = -side[0] if small else 1.0 - tails[0]
    tail = tails[0]
    if small:
        lg, l1g = np.log(g), math.log1p(-g)
    else:
        lg, l1g = math.log1p(-tail), np.log(tail)
    step = 2.0 * _AUC_STEP
    d_tail_da = (side[1] - side[2]) / (step * alpha)
    d_tail_db = (side[3] - side[4]) / (step * beta)
    inv_g = 1.0 / g
    inv_tail = 1.0 / ((1.0 - g) if small else tail)
    out[0], out[1] = lg, l1g
    out[2], out[3] = -d_tail_da * inv_g, -d_tail_db * inv_g
    out[4], out[5] = d_tail_da * inv_tail, d_tail_db * inv_tail


@njit(cache=True)
def _log_terms(code, alpha, beta, k, out):
    """log g, log(1 - g) and their derivatives in (alpha, beta) of one component, into
    `out` (6,): the scalar form of ``passmix.metrics._component_log_terms``."""
    if code == 2:
        _auc_log_terms(alpha, beta, k, out)
        return
    psi = _digamma(alpha + beta) - _digamma(alpha + beta + k)
    if code == 1:  # pass^k
        lg = _log_rising(alpha, beta, k, False)
        l1g = _log_complement(lg)
        da, db = _digamma(alpha + k) - _digamma(alpha) + psi, psi
        odds = np.exp(lg - l1g)  # g / (1 - g)
        out[0], out[1], out[2], out[3] = lg, l1g, da, db
        out[4], out[5] = -odds * da, -odds * db
        return
    l1g = _log_rising(beta, alpha, k, False)
    lg = _log_complement(l1g)
    da, db = psi, _digamma(beta + k) - _digamma(beta) + psi
    odds = np.exp(l1g - lg)  # (1 - g) / g
    out[0], out[1], out[2], out[3] = lg, l1g, -odds * da, -odds * db
    out[4], out[5] = da, db


@njit(cache=True)
def _log_expit(x):
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True)
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def _mixture_logit(code, z, h, k):
    # unpack: weights softmax([0, logit_w]), ordered logit means, concentrations
    n = 3 * h - 1
    full = np.zeros(h)
    for i in range(1, h):
        full[i] = z[i - 1]
    top = full.max()
    w = np.exp(full - top)
    w /= w.sum()
    eta = np.empty(h)
    eta[0] = z[h - 1]
    gap_sum = 0.0
    for i in range(1, h):
        gap_sum += math.exp(z[h - 1 + i])
        eta[i] = z[h - 1] + gap_sum
    alpha = np.empty(h)
    beta = np.empty(h)
    for i in range(h):
        alpha[i] = math.exp(z[2 * h - 1 + i] + _log_expit(eta[i]))
        beta[i] = math.exp(z[2 * h - 1 + i] + _log_expit(-eta[i]))
    # logit M = log sum_h w_h g_h - log sum_h w_h (1 - g_h), each by log-sum-exp
    terms = np.empty((h, 6))
    for i in range(h):
        _log_terms(code, alpha[i], beta[i], k, terms[i])
    value = 0.0
    d_w = np.zeros(h)
    d_a = np.zeros(h)
    d_b = np.zeros(h)
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0
        joint = np.empty(h)
        for i in range(h):
            joint[i] = np.log(w[i]) + terms[i, side]
        top = joint.max()
        if not np.isfinite(top):
            top = 0.0
        total = top + np.log(np.exp(joint - top).sum())
        value += sign * total
        for i in range(h):
            share = np.exp(joint[i] - total)
            d_w[i] += sign * np.exp(terms[i, side] - total)
            d_a[i] += sign * share * terms[i, 2 + 2 * side]
            d_b[i] += sign * share * terms[i, 3 + 2 * side]
    # the chain rule through unpack (unpack_jacobian's rows: w, alpha, beta)
    grad = np.zeros(n)
    if h == 1:
        mu = _expit(z[0])
        grad[0] = d_a[0] * alpha[0] * (1.0 - mu) - d_b[0] * beta[0] * mu
        grad[1] = d_a[0] * alpha[0] + d_b[0] * beta[0]
        return value, grad
    # softmax over [0, logit_weights]: d w_i / d a_j = w_i (delta_{i, j+1} - w_{j+1})
    for j in range(h - 1):
        acc = 0.0
        for i in range(h):
            acc += d_w[i] * (-w[i] * w[j + 1])
        grad[j] = acc + d_w[j + 1] * w[j + 1]
    mean_row = np.empty(h)
    for i in range(h):
        mu = _expit(np.log(alpha[i]) - np.log(beta[i]))
        mean_row[i] = d_a[i] * alpha[i] * (1.0 - mu) + d_b[i] * (-beta[i] * mu)
    # d eta_c / d first = 1; d eta_c / d gap_i = exp(gap_i) for components c > i
    acc = 0.0
    for i in range(h):
        acc += mean_row[i]
    grad[h - 1] = acc
    for i in range(h - 1):
        acc = 0.0
        for c in range(i + 1, h):
            acc += mean_row[c]
        grad[h + i] = acc * math.exp(z[h + i])
    for i in range(h):
        grad[2 * h - 1 + i] = d_a[i] * alpha[i] + d_b[i] * beta[i]
    return value, grad


def mixture_logit(metric: str, z: np.ndarray, n_components: int, k: float
                  ) -> tuple[float, np.ndarray]:
    """``logit M`` at horizon `k` of the mixture with unconstrained coordinates `z`, and
    its gradient in `z`.

    The same value as ``evaluate_logit(metric, *unpack(z, h), [k])`` with its
    gradient through ``unpack_jacobian`` (to rounding), compiled: the profile
    search's inner loop. No validation: `metric` is a canonical name, `z` a
    float vector of length ``3H - 1``, `k` a whole number >= 1.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix._logit_kernel import mixture_logit
    >>> from passmix.metrics import evaluate_logit
    >>> from passmix.models.mixture.parameters import unpack
    >>> z = np.array([0.4, -1.0, 0.3, 1.5, 2.0])
    >>> value, grad = mixture_logit("pass@k", z, 2, 100.0)
    >>> reference = evaluate_logit("pass@k", *unpack(z, 2), np.array([100]))[0][0]
    >>> bool(abs(value - reference) < 1e-12), grad.shape
    (True, (5,))
    """
    return _mixture_logit(METRIC_CODES[metric], np.ascontiguousarray(z, dtype=float),
                          int(n_components), float(k))
