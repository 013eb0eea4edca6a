"""Input validation shared by the public functions, and passmix's warning types.

Validation happens here, at the public boundary, so the numerical code can
assume clean inputs.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._defaults import INTERVAL_METHODS, METRICS

__all__ = [
    "METRICS",
    "DegenerateDataWarning",
    "FitWarning",
    "PosteriorWarning",
    "K_MAX",
    "check_interval_method",
    "check_jobs",
    "check_k",
    "check_level",
    "check_metric",
    "check_mixture",
    "check_percentiles",
    "check_seed",
    "check_whole",
]

_METRIC_ALIASES = {
    "pass@k": "pass@k",
    "pass_at_k": "pass@k",
    "passatk": "pass@k",
    "pass^k": "pass^k",
    "pass_hat_k": "pass^k",
    "passhatk": "pass^k",
    "auc@k": "auc@k",
    "auc_at_k": "auc@k",
    "aucatk": "auc@k",
}


class DegenerateDataWarning(UserWarning):
    """Valid data that cannot identify what was asked (all successes, one task, ...)."""


class FitWarning(UserWarning):
    """An optimisation that did not converge or stopped on a box bound, or a delta-method
    interval the fit does not support (its linearisation fails over the Wald region)."""


class PosteriorWarning(UserWarning):
    """MCMC draws that should not be trusted as they are: r_hat, ESS, divergences,
    an improper flat posterior, or a posterior predictive misfit."""


def check_metric(metric: str) -> str:
    """Return the canonical name of `metric` or raise ``ValueError`` naming it."""
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string, got {type(metric).__name__}.")
    key = metric.strip().lower()
    if key not in _METRIC_ALIASES:
        raise ValueError(
            f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}."
        )
    return _METRIC_ALIASES[key]


def check_interval_method(method: object, default: str | None = None, *,
                          optional: bool = False) -> str | None:
    """The interval method asked for, lower-cased, or ``ValueError`` naming it.

    None is `default` where `optional` (a result's own default), else an error.

    Examples
    --------
    >>> from passmix._validation import check_interval_method
    >>> check_interval_method("Delta"), check_interval_method(None, "profile", optional=True)
    ('delta', 'profile')
    """
    if method is None and optional:
        return default
    if not isinstance(method, str) or method.lower() not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected one of "
                         f"{', '.join(INTERVAL_METHODS)}.")
    return method.lower()


def shown(value) -> str:
    """`value` as an error message shows it: numpy scalars and arrays as the Python
    values they hold (``0``, not ``np.int64(0)``), anything else by its repr."""
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    return repr(value)


#: largest horizon: k is held as a 64-bit integer
K_MAX = 2**63 - 1


def check_k(k) -> tuple[np.ndarray, bool]:
    """Validate horizons.

    Returns the horizons as a 1-d int64 array and whether `k` was a scalar.
    Raises ``TypeError`` for non-numbers and booleans, ``ValueError`` for
    k < 1, fractional, NaN, empty input or k beyond 2^63 - 1.
    """
    scalar = np.ndim(k) == 0
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("k must be an integer >= 1, got a boolean.")
    arr = np.atleast_1d(np.asarray(k))
    if arr.ndim != 1:
        raise ValueError(f"k must be a scalar or 1-d array, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError("k is empty; give at least one horizon.")
    if arr.dtype.kind == "O":  # Python ints beyond int64, or mixed objects
        for value in arr:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"k must be integer, got {shown(value)}.")
        arr = np.array([float(v) if not isinstance(v, numbers.Integral) else v for v in arr],
                       dtype=object)
        too_big = [v for v in arr if v > K_MAX]
        if too_big:
            raise ValueError(f"k = {too_big[0]} is too large; horizons up to 2^63 - 1 "
                             f"(about 9.2e18) are supported.")
        arr = np.array([float(v) for v in arr])
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"k must be integer, got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise ValueError(f"k must be whole numbers, got {shown(arr[bad][0])}.")
    if (arr < 1).any():
        raise ValueError(f"k must be >= 1, got {shown(arr[arr < 1][0])}.")
    # uint64 above int64, and floats from 2^63 (which is K_MAX + 1 in float)
    over = arr >= 2.0**63 if arr.dtype.kind == "f" else (
        arr > K_MAX if arr.dtype.kind == "u" else np.zeros(arr.shape, bool))
    if over.any():
        raise ValueError(f"k = {arr[over][0]} is too large; horizons up to 2^63 - 1 "
                         f"(about 9.2e18) are supported.")
    return arr.astype(np.int64), scalar


def check_level(level: float) -> float:
    """Validate a confidence level in (0, 1)."""
    if not isinstance(level, numbers.Real) or isinstance(level, bool):
        raise TypeError(f"level must be a number in (0, 1), got {shown(level)}.")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {shown(level)}.")
    return level


def check_whole(value, name: str, minimum: int = 1, maximum: int | None = None, *,
                integral: bool = False) -> int:
    """Validate a whole-number option (``max_components``, ``n_init``, ``draws``, ...).

    Raises ``TypeError`` for non-numbers (booleans included) and, with
    `integral`, for any non-integer type; otherwise a float with a whole value
    is accepted and a fractional one is a ``ValueError``, as is a value
    outside ``[minimum, maximum]``. Messages name the option.
    """
    bound = f" <= {maximum}" if maximum is not None else ""
    numeric = numbers.Integral if integral else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numeric):
        raise TypeError(f"{name} must be a whole number >= {minimum}{bound}, got {shown(value)}.")
    if not isinstance(value, numbers.Integral):
        if not np.isfinite(value) or not float(value).is_integer():
            raise ValueError(f"{name} must be a whole number >= {minimum}{bound}, "
                             f"got {shown(value)}.")
        value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}.")
    return int(value)


def check_jobs(jobs) -> int:
    """Worker processes: a whole number >= 1, or -1 for one per CPU."""
    if isinstance(jobs, (bool, np.bool_)) or not isinstance(jobs, numbers.Integral) \
            or jobs == 0 or jobs < -1:
        raise ValueError(f"jobs must be >= 1 or -1, got {shown(jobs)}.")
    return int(jobs)


def check_seed(seed, name: str = "seed"):
    """Validate a seed: None, a non-negative integer, a SeedSequence or a Generator.

    Returns it unchanged, ready for ``numpy.random.default_rng``; raises
    ``TypeError`` or ``ValueError`` naming `name` otherwise.
    """
    if seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return seed
    message = (f"{name} must be a non-negative integer, a numpy Generator or None, "
               f"got {shown(seed)}.")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(message)
    if seed < 0:
        raise ValueError(message)
    return int(seed)


#: how far from 1 a mixture's weights may sum
WEIGHT_SUM_TOL = 1e-6


def check_mixture(weights, alpha, beta):
    """Weights, alpha and beta of Beta mixtures as float arrays; components on the last axis."""
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
    if shape[-1] == 0:
        raise ValueError("the mixture has no components (the last axis is empty).")
    for name, arr in (("weights", weights), ("alpha", alpha), ("beta", beta)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative.")
    total = weights.sum(axis=-1)
    off = np.abs(total - 1.0) > WEIGHT_SUM_TOL
    if np.any(off):
        bad = float(np.atleast_1d(total)[np.atleast_1d(off)][0])
        raise ValueError(f"weights must sum to 1 over the last axis, got a sum of {bad!r}.")
    if np.any(alpha <= 0) or np.any(beta <= 0):
        raise ValueError("alpha and beta must be positive.")
    return weights, alpha, beta


def check_percentiles(percentiles) -> tuple[float, ...]:
    """Percentiles as a tuple of floats, each in [0, 100]."""
    q = np.atleast_1d(np.asarray(percentiles, dtype=float))
    if q.size == 0 or np.any(~np.isfinite(q)) or np.any((q < 0) | (q > 100)):
        raise ValueError(f"percentiles must be numbers in [0, 100], got {shown(percentiles)}.")
    return tuple(float(v) for v in q)
