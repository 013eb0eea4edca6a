"""Log rising-factorial ratios without cancellation, for any shapes and horizons.

Every closed form in passmix reduces to one quantity,

    L(x, d, k) = log prod_{i<k} (x + i) / (x + d + i)
               = log [Gamma(x + k) Gamma(x + d)] / [Gamma(x) Gamma(x + d + k)],

defined for ``x > 0``, ``x + d > 0`` and whole ``k >= 0``:

* the Beta moments ``E[theta^k] = exp L(alpha, beta, k)`` and
  ``E[(1 - theta)^k] = exp L(beta, alpha, k)``;
* the ratio of binomial coefficients ``C(a, k) / C(m, k) = exp L(a - k + 1, m - a, k)``
  of the combinatorial estimators;
* the AUC@k closed form, through ``L(beta + 1, alpha - 1, k) / (alpha - 1)``.

Differences of log-gamma values lose everything when the arguments are large
(a concentration of 10^6 at the binomial limit, a horizon of 10^18) or when
``d`` is far below ``x`` (a shape of 1e-60 next to one of 0.5, where
``x + d == x`` in floating point). Here ``d`` is an argument in its own right
and never recovered as ``(x + d) - x``, short horizons are summed term by term
as ``-log1p(d / (x + i))``, and long ones use Stirling's series rearranged so
that every term is proportional to ``d`` or to ``k``. The result has a
relative error of a few ulp over shapes from 1e-300 to 1e300 and horizons up
to 2^63, and so has ``L / d``, which stays finite as ``d -> 0``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, gammaln

__all__ = ["betabinom_logpmf", "expm1_ratio", "log_beta_ratio", "log_binom_ratio", "log_choose",
           "log_rising_ratio", "log_rising_ratio_per_d", "stirling_tail"]

#: horizons up to this are summed term by term
EXACT_K = 64
#: Stirling's series is used for arguments at least this large
_STIRLING_MIN = 10.0
# B_2j / (2j (2j - 1)), j = 1..6: log Gamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2]
# = sum_j c_j z^(1 - 2j); six terms leave < 1e-15 at z = 10.
_TAIL = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360)


def _ratio_near_zero(u, fun, series, cutoff: float) -> np.ndarray:
    """``fun(u) / u`` for ``fun(0) = 0``, by its Taylor `series` where ``|u| < cutoff``.

    Near 0 the quotient of two tiny numbers loses digits, where the truncated
    series is accurate to double precision. Each side is evaluated at a
    harmless stand-in (0 for the series, 1 for `fun`) where the other is
    used, so neither warns.
    """
    u = np.asarray(u, dtype=float)
    small = np.abs(u) < cutoff
    if not small.any():
        return fun(u) / u
    tiny = np.where(small, u, 0.0)
    safe = np.where(small, 1.0, u)
    return np.where(small, series(tiny), fun(safe) / safe)


def _log1p_ratio(u):
    """log1p(u) / u, equal to 1 at u = 0 and accurate near it."""
    return _ratio_near_zero(u, np.log1p, lambda t: 1.0 - t * (0.5 - t * (1 / 3 - t * 0.25)),
                            1e-4)


def expm1_ratio(v):
    """expm1(v) / v, equal to 1 at v = 0 and accurate near it."""
    return _ratio_near_zero(v, np.expm1, lambda t: 1.0 + t * (0.5 + t / 6.0), 1e-5)


def stirling_tail(z):
    """``log Gamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2]`` for ``z >= 10``.

    Examples
    --------
    >>> import math
    >>> from passmix._special import stirling_tail
    >>> z = 12.5
    >>> exact = math.lgamma(z) - ((z - 0.5) * math.log(z) - z + 0.5 * math.log(2 * math.pi))
    >>> abs(float(stirling_tail(z)) - exact) < 1e-15
    True
    """
    z = np.asarray(z, dtype=float)
    inv = 1.0 / z
    inv2 = inv * inv
    acc = np.zeros_like(inv)
    for c in reversed(_TAIL):
        acc = c + inv2 * acc
    return inv * acc


_ODD = np.arange(1, 2 * len(_TAIL), 2, dtype=float)  # powers 1, 3, 5, ... of 1/a
_TAIL_C = np.array(_TAIL)


def _tail_diff_per_d(a, d):
    """``[stirling_tail(a + d) - stirling_tail(a)] / d`` for a, a + d >= 10.

    Each power is differenced as ``a^-n expm1(-n log1p(d / a))``, so the result
    keeps its relative accuracy however small d is.
    """
    inv = 1.0 / a
    # a^-1, a^-3, a^-5, ... as a running product
    steps = np.empty(inv.shape + (_ODD.size,))
    steps[..., 0] = inv
    steps[..., 1:] = (inv * inv)[..., None]
    powers = np.cumprod(steps, axis=-1)
    slope = (-_ODD) * (inv * _log1p_ratio(d * inv))[..., None]  # -n log1p(d / a) / d
    terms = _TAIL_C * powers * expm1_ratio(d[..., None] * slope) * slope
    return terms.sum(axis=-1)


def _exact_sum(x, d, k, per_d):
    """-sum_{i<k} log1p(d / (x + i)) (divided by d if `per_d`); k is small."""
    n = int(k.max()) if k.size else 0
    if n == 0:
        return np.zeros(x.shape)
    xi = x[..., None] + np.arange(n, dtype=float)
    dd = d[..., None]
    near = np.abs(dd) <= xi
    if near.all():
        u = dd / xi
        term = _log1p_ratio(u) / xi if per_d else np.log1p(u)
    else:
        # log1p(d / xi) overflows its argument when d >> xi; there the log
        # difference is large and exact enough
        u = np.divide(dd, xi, out=np.zeros(xi.shape), where=near)
        far = np.log(np.where(near, 1.0, xi + dd)) - np.log(np.where(near, 1.0, xi))
        if per_d:
            term = np.where(near, _log1p_ratio(u) / xi, far / np.where(near, 1.0, dd))
        else:
            term = np.where(near, np.log1p(u), far)
    if np.all(k == n):
        return -term.sum(axis=-1)
    return -np.sum(np.where(np.arange(n) < k[..., None], term, 0.0), axis=-1)


def _stirling_part(x, d, k, per_d):
    """L(x, d, k) (or L / d) for x >= 10 and x + d >= 10, any k >= 1.

    With t = x + d, Stirling's series gives
    L = -d log1p(k/t) - (x - 1/2) log1p(-q) - k log1p(d/(x+k)) + tail differences,
    q = d k / (t (x + k)). Every term is d times a factor computed without
    cancellation or underflow, so L / d comes out as accurately as L.
    """
    t = x + d
    xk = x + k
    q = (d / t) * (k / xk)
    direct = np.abs(q) <= 0.5
    if direct.all():
        middle = ((x - 0.5) / xk) * (k / t) * _log1p_ratio(-q)
    else:
        # -(x - 1/2) log1p(-q) / d; where |q| > 1/2, d is not small and
        # log1p(-q) = log1p(d/(x+k)) - log1p(d/x) has no cancellation
        safe_q = np.where(direct, q, 0.0)
        safe_d = np.where(direct, 1.0, d)
        middle = np.where(direct, ((x - 0.5) / xk) * (k / t) * _log1p_ratio(-safe_q),
                          -(x - 0.5) * (np.log1p(d / xk) - np.log1p(d / x)) / safe_d)
    tails = _tail_diff_per_d(np.stack([x, xk]), np.stack([d, d]))
    per = -np.log1p(k / t) + middle - (k / xk) * _log1p_ratio(d / xk) + tails[0] - tails[1]
    return per if per_d else d * per


def _long_horizons(x, d, k, per_d):
    # bring x and x + d up to Stirling's range by summing the first terms exactly
    peel = np.ceil(np.clip(_STIRLING_MIN - np.minimum(x, x + d), 0.0, None))
    head = _exact_sum(x, d, peel, per_d) if peel.any() else 0.0
    return head + _stirling_part(x + peel, d, k - peel, per_d)


def _log_rising(x, d, k, per_d):
    x, d, k = (np.array(v, dtype=float) for v in np.broadcast_arrays(x, d, k))
    short = k <= EXACT_K
    if short.all():
        return _exact_sum(x, d, k, per_d)
    if not short.any():
        return _long_horizons(x, d, k, per_d)
    out = np.empty(x.shape)
    out[short] = _exact_sum(x[short], d[short], k[short], per_d)
    long = ~short
    out[long] = _long_horizons(x[long], d[long], k[long], per_d)
    return out


def log_rising_ratio(x, d, k):
    """``log prod_{i<k} (x + i) / (x + d + i)`` for ``x > 0``, ``x + d > 0``, whole ``k >= 0``.

    Broadcasts over its arguments. See the module docstring for how it avoids
    cancellation.

    Examples
    --------
    >>> import math
    >>> from passmix._special import log_rising_ratio
    >>> x, d, k = 2.5, 1.0, 3
    >>> exact = math.log((2.5 * 3.5 * 4.5) / (3.5 * 4.5 * 5.5))
    >>> abs(float(log_rising_ratio(x, d, k)) - exact) < 1e-15
    True

    A second shape far below the first is not lost (``0.5 + 1e-60 == 0.5``);
    then ``L ~ -d (psi(x + k) - psi(x))``:

    >>> from scipy.special import digamma
    >>> got = float(log_rising_ratio(0.5, 1e-60, 10**6))
    >>> bool(abs(got / (-1e-60 * (digamma(0.5 + 10**6) - digamma(0.5))) - 1) < 1e-12)
    True
    """
    return _log_rising(x, d, k, per_d=False)


def log_rising_ratio_per_d(x, d, k):
    """``log_rising_ratio(x, d, k) / d``, with its limit ``-(psi(x + k) - psi(x))`` at d = 0.

    Examples
    --------
    >>> from scipy.special import digamma
    >>> from passmix._special import log_rising_ratio_per_d
    >>> x, k = 3.0, 500
    >>> limit = -(digamma(x + k) - digamma(x))
    >>> bool(abs(log_rising_ratio_per_d(x, 0.0, k) - limit) < 1e-13 * abs(limit))
    True
    """
    return _log_rising(x, d, k, per_d=True)


def log_binom_ratio(a, m, k):
    """``log[C(a, k) / C(m, k)]`` for ``0 <= a <= m`` and ``0 <= k <= m``; ``-inf`` where ``a < k``.

    ``C(a, k) / C(m, k) = prod_{i<k} (a - i) / (m - i)``, the rising ratio
    ``L(a - k + 1, m - a, k)``.

    Examples
    --------
    >>> import math
    >>> from passmix._special import log_binom_ratio
    >>> exact = math.log(math.comb(7, 3) / math.comb(10, 3))
    >>> abs(float(log_binom_ratio(7, 10, 3)) - exact) < 1e-15
    True
    >>> float(log_binom_ratio(2, 10, 3))
    -inf
    """
    a, m, k = (np.array(v, dtype=float) for v in np.broadcast_arrays(a, m, k))
    out = np.full(a.shape, -np.inf)
    ok = a >= k
    if ok.any():
        out[ok] = log_rising_ratio(a[ok] - k[ok] + 1.0, m[ok] - a[ok], k[ok])
    return out


def log_choose(m, y) -> np.ndarray:
    """log C(m, y), elementwise, for whole numbers ``0 <= y <= m``.

    Examples
    --------
    >>> import math
    >>> from passmix._special import log_choose
    >>> bool(abs(log_choose(10, 3) - math.log(120)) < 1e-12)
    True
    """
    m, y = np.asarray(m, dtype=float), np.asarray(y, dtype=float)
    return gammaln(m + 1.0) - gammaln(y + 1.0) - gammaln(m - y + 1.0)


def log_beta_ratio(alpha, beta, successes, failures, offset=0.0) -> np.ndarray:
    """``offset + log B(alpha + y, beta + f) / B(alpha, beta)``: the Beta-binomial log-pmf
    of y successes and f failures without its binomial coefficient (which does not depend
    on the shapes), elementwise with broadcasting.

    Pass the failures, not the trials: ``beta + (m - y)`` keeps them exact where
    ``beta + m - y`` would round a tiny `beta` away. `offset` (the log binomial
    coefficient, where wanted) is added before the second log-beta, in the
    order the fits' optima were computed in.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from passmix._special import log_beta_ratio, log_choose
    >>> y, m, a, b = np.array([0, 3, 10]), 10, 0.7, 2.5
    >>> mine = log_choose(m, y) + log_beta_ratio(a, b, y, m - y)
    >>> bool(np.allclose(mine, stats.betabinom.logpmf(y, m, a, b)))
    True
    """
    return (offset + betaln(np.add(alpha, successes), np.add(beta, failures))) - betaln(alpha, beta)


def betabinom_logpmf(successes, trials, alpha, beta) -> np.ndarray:
    """log P(y successes of m trials) under a Beta(alpha, beta)-binomial, elementwise.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from passmix._special import betabinom_logpmf
    >>> bool(np.allclose(betabinom_logpmf(np.arange(6), 5, 2.0, 3.0),
    ...                  stats.betabinom.logpmf(np.arange(6), 5, 2.0, 3.0)))
    True
    """
    y = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    return log_beta_ratio(alpha, beta, y, m - y, log_choose(m, y))
