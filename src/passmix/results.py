"""What every estimator returns: the ``FittedResult`` protocol, and the direct estimates.

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
:class:`~passmix.MixtureFit` is one; :class:`DirectEstimate` wraps the naive
and combinatorial estimators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ._defaults import LEVEL, METRICS, SUMMARY_K
from ._validation import check_k, check_level, check_metric
from .data.counts import Counts
from .estimators.direct import combinatorial_estimate, naive_estimate
from .inference.delta import ConfidenceInterval

__all__ = ["SUMMARY_COLUMNS", "DirectEstimate", "FittedResult", "PointEstimates"]

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


_DIRECT = {"naive": naive_estimate, "combinatorial": combinatorial_estimate}


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
    >>> from passmix.results import DirectEstimate, PointEstimates
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


@dataclass(frozen=True)
class DirectEstimate(PointEstimates):
    """The naive or the combinatorial estimate of counts, as a fitted result.

    A direct estimate has no interval (its ends are NaN). The combinatorial
    estimate exists only for ``k <= m_j`` of every task that was run: its
    :meth:`metric` raises beyond that, as :func:`passmix.combinatorial_estimate`
    does, and its :meth:`summary` gives NaN there.

    Attributes
    ----------
    counts : Counts
        The data.
    estimator : {"naive", "combinatorial"}
        Which estimate.

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.results import DirectEstimate
    >>> est = DirectEstimate(Counts([2, 0, 4], [4, 4, 4]), "combinatorial")
    >>> round(est.metric("pass@k", 2), 4)
    0.6111
    >>> est.summary([2, 5])[["metric", "k", "estimate"]].head(2)
       metric  k  estimate
    0  pass@k  2  0.611111
    1  pass@k  5       NaN
    """

    counts: Counts
    estimator: str

    def __post_init__(self) -> None:
        if self.estimator not in _DIRECT:
            raise ValueError(f"unknown direct estimator {self.estimator!r}; expected one of "
                             f"{', '.join(_DIRECT)}.")

    @property
    def max_k(self) -> float:
        """Largest horizon at which the estimate exists (infinite for the naive one)."""
        if self.estimator == "naive":
            return np.inf
        trials = self.counts.trials[self.counts.trials > 0]
        return int(trials.min()) if trials.size else 0

    def metric(self, metric: str, k):
        """The estimate of `metric` at horizon(s) `k`."""
        return _DIRECT[self.estimator](self.counts, metric, k)

    def _estimates(self, metric: str, ks: np.ndarray) -> np.ndarray:
        """The estimate at `ks`, NaN beyond :attr:`max_k` (where :meth:`metric` raises)."""
        ok = ks <= self.max_k
        est = np.full(ks.size, np.nan)
        if ok.any():
            est[ok] = self.metric(metric, ks[ok])
        return est

    def undefined_note(self, k) -> str | None:
        """Why the estimate is missing at horizons `k`, or None where it exists."""
        ks, _ = check_k(k)
        beyond = ks[ks > self.max_k]
        if not beyond.size:
            return None
        shown = ", ".join(str(int(v)) for v in beyond)
        return (f"combinatorial estimator is undefined for k > m (smallest m_j = "
                f"{self.max_k}); its estimate at k = {shown} is null. The mixture fit "
                f"extrapolates beyond m.")

    def info(self) -> dict[str, Any]:
        """``{"estimator", "n_tasks", "n_observed"}``."""
        return {"estimator": self.estimator, "n_tasks": self.counts.n_tasks,
                "n_observed": self.counts.n_observed}
