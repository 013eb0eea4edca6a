"""Input validation shared by the public functions, and passmix's warning types.

Validation happens here, at the public boundary, so the numerical code can
assume clean inputs.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "METRICS",
    "DegenerateDataWarning",
    "FitWarning",
    "PosteriorWarning",
    "check_k",
    "check_level",
    "check_metric",
]

#: Canonical metric names, as used in tables, the CLI and ``MixtureFit.interval``.
METRICS = ("pass@k", "pass^k", "auc@k")

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
    """An optimisation that did not converge or stopped on a box bound."""


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


def check_k(k) -> tuple[np.ndarray, bool]:
    """Validate horizons.

    Returns the horizons as a 1-d int64 array and whether `k` was a scalar.
    Raises ``ValueError`` for k < 1, fractional, NaN or empty input.
    """
    scalar = np.ndim(k) == 0
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("k must be an integer >= 1, got a boolean.")
    arr = np.atleast_1d(np.asarray(k))
    if arr.ndim != 1:
        raise ValueError(f"k must be a scalar or 1-d array, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError("k is empty; give at least one horizon.")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"k must be integer, got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise ValueError(f"k must be whole numbers, got {arr[bad][0]!r}.")
    if (arr < 1).any():
        raise ValueError(f"k must be >= 1, got {arr[arr < 1][0]!r}.")
    return arr.astype(np.int64), scalar


def check_level(level: float) -> float:
    """Validate a confidence level in (0, 1)."""
    if not isinstance(level, numbers.Real) or isinstance(level, bool):
        raise TypeError(f"level must be a number in (0, 1), got {level!r}.")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    return level
