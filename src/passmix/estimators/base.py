"""What every estimator returns: the ``FittedResult`` protocol.

An estimator (:mod:`passmix.estimators.registry` keeps the registry) turns per-task
counts into a *fitted result*, an object with four methods:

``metric(metric, k)``
    the estimate at horizon(s) k (a float for scalar k);
``interval(metric, k, level=0.95, *, method=None)``
    a :class:`~passmix.ConfidenceInterval` (NaN ends where the estimator
    gives none);
``summary(k=(1, 10, 100, 1000), level=0.95, *, method=None)``
    a DataFrame with columns metric, k, estimate, se, lower, upper (NaN
    where undefined);
``info()``
    a dict describing the fit, with at least ``"estimator"``.

A result that defines only some of the metrics (the Pass@k scaling
baselines) lists them in a ``metrics`` attribute, raises ValueError for the
others, and gives NaN for them in ``summary()``.

Tables, the command line and the experiment harness use only these, so a new
estimator reaches them all by registering (:func:`passmix.register_estimator`).
:class:`~passmix.MixtureFit` is one; :class:`~passmix.DirectEstimate`
(:mod:`passmix.estimators.direct`) wraps the naive and combinatorial
estimators. :class:`PointEstimates` gives ``interval`` and ``summary`` to a
result that has point estimates only.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from .._defaults import LEVEL, METRICS, SUMMARY_K
from .._validation import check_k, check_level, check_metric
from ..inference.delta import ConfidenceInterval

__all__ = ["SUMMARY_COLUMNS", "FittedResult", "PointEstimates"]

#: Columns of every ``summary()``.
SUMMARY_COLUMNS = ("metric", "k", "estimate", "se", "lower", "upper")


@runtime_checkable
class FittedResult(Protocol):
    """The interface of an estimator's result (see the module docstring)."""

    def metric(self, metric: str, k) -> Any: ...

    def interval(self, metric: str, k, level: float = LEVEL, *, method: str | None = None
                 ) -> ConfidenceInterval: ...

    def summary(self, k=SUMMARY_K, level: float = LEVEL, *, method: str | None = None
                ) -> pd.DataFrame: ...

    def info(self) -> dict[str, Any]: ...


def no_interval(metric: str, k, level: float) -> ConfidenceInterval:
    """NaN ends, for estimators that give no interval (the arguments are still validated)."""
    check_metric(metric)
    k_arr, scalar = check_k(k)
    check_level(level)
    if scalar:
        return ConfidenceInterval(np.nan, np.nan)
    return ConfidenceInterval(np.full(k_arr.size, np.nan), np.full(k_arr.size, np.nan))


class PointEstimates:
    """``interval`` and ``summary`` of a result that gives point estimates only.

    A subclass defines ``_estimates(metric, ks)``: its estimates at the
    horizons `ks`, NaN where it does not define them. The interval has NaN
    ends and so have ``se``, ``lower`` and ``upper`` in the summary.

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.estimators import DirectEstimate
    >>> from passmix.estimators.base import PointEstimates
    >>> est = DirectEstimate(Counts([2, 0, 4], [4, 4, 4]), "naive")
    >>> isinstance(est, PointEstimates), est.interval("pass@k", 2)
    (True, ConfidenceInterval(lower=nan, upper=nan))
    """

    def _estimates(self, metric: str, ks: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def interval(self, metric: str, k, level: float = LEVEL, *, method: str | None = None
                 ) -> ConfidenceInterval:
        """No interval: NaN ends (the arguments are still validated)."""
        return no_interval(metric, k, level)

    def summary(self, k=SUMMARY_K, level: float = LEVEL, *, method: str | None = None
                ) -> pd.DataFrame:
        """Estimates of the three metrics at `k`; NaN where the estimator does not define them."""
        ks, _ = check_k(k)
        check_level(level)
        frames = [pd.DataFrame({"metric": m, "k": ks, "estimate": self._estimates(m, ks),
                                "se": np.nan, "lower": np.nan, "upper": np.nan})
                  for m in METRICS]
        return pd.concat(frames, ignore_index=True)
