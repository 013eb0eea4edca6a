"""passmix inside inspect_ai evals: Pass@k, Pass^k and AUC@k at any k, with intervals, in the log.

inspect_ai's own reducers give ``pass_at_{k}`` only for k up to the epochs
run, without an interval. Here a reducer keeps each sample's counts (its
successes over the epochs scored) and metrics fit passmix's Beta mixture to
them, so one line in a ``Task`` puts, say, Pass@1000 and its 95% interval
into the eval log and ``inspect view``::

    from inspect_ai import Task
    from passmix.integrations.inspect_ai import epochs, pass_at_k, pass_hat_k

    Task(dataset=..., solver=..., scorer=...,
         epochs=epochs(6), metrics=[pass_at_k(1000), pass_hat_k(3)])

Each metric reports the estimate and its interval ends under names that
carry the metric and k (``pass@1000``, ``pass@1000_lower``,
``pass@1000_upper``), equal to :func:`passmix.fit` on the same counts (seed 0,
profile intervals). inspect applies every metric to every reducer's output;
these metrics read only the counts :func:`counts` leaves in the reduced
score's metadata and report nothing for other reducers.

What inspect hands on, and what happens to it:

* a sample's errored epochs are not scored, so its count has fewer trials:
  it is fitted with the trials it has (passmix takes unequal trials), and a
  warning says how many samples that was;
* a sample with no scored epoch (every epoch errored or was unscored) never
  reaches a metric: the reducer warns, and the fit uses the rest;
* a fit that fails warns and reports nothing; the eval goes on.

inspect_ai finds this module through the ``inspect_ai`` entry point that
passmix installs, so the reducer is also known by name on its command line:
``inspect eval task.py --epochs 6 --epochs-reducer passmix/counts``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from inspect_ai import Epochs
from inspect_ai.scorer import Metric, Score, ScoreReducer, metric, score_reducer

from .._defaults import LEVEL
from .._validation import check_k, check_level, check_metric
from ..data.readers._common import LogFormatError, check_threshold, to_outcome

__all__ = ["FIT_METHODS", "SUCCESSES", "TRIALS", "auc_at_k", "counts", "epochs", "pass_at_k",
           "pass_hat_k", "sample_counts"]

#: the reduced score's metadata keys holding a sample's successes and scored epochs
SUCCESSES, TRIALS = "passmix_successes", "passmix_trials"

#: the fits a metric can use: each sample's counts to :func:`passmix.fit` (the Beta
#: mixture, BIC over 1..4 components) or to :func:`passmix.fit_pooled` (one system)
FIT_METHODS = ("mixture", "pooled")

#: a fit is deterministic: its random starts are seeded
_SEED = 0


def counts(threshold: float | None = None) -> ScoreReducer:
    """Reduce a sample's epochs to its count of successes, kept in the score's metadata.

    The reduced value is the share of scored epochs that succeeded; the
    metadata holds ``passmix_successes`` and ``passmix_trials``, which
    :func:`pass_at_k`, :func:`pass_hat_k` and :func:`auc_at_k` fit.

    Parameters
    ----------
    threshold : float, optional
        Scores at or above it succeed. Needed for partial credit (inspect's
        ``"P"``, or numbers strictly between 0 and 1); without it such a score
        is an error. ``C``/``I``, booleans, yes/no and 0/1 need none.

    Returns
    -------
    ScoreReducer

    Examples
    --------
    >>> from inspect_ai.scorer import Score
    >>> from passmix.integrations.inspect_ai import counts
    >>> reduced = counts()([Score(value="C"), Score(value="I"), Score(value="C")])
    >>> reduced.metadata
    {'passmix_successes': 2, 'passmix_trials': 3}
    """
    threshold = check_threshold(threshold)

    def reduce(scores: list[Score]) -> Score:
        outcomes = [to_outcome(score.value, threshold, f"epoch {n + 1}'s score")
                    for n, score in enumerate(scores) if not _unscored(score.value)]
        if not outcomes:
            warnings.warn("passmix: a sample has no scored epoch (each errored or was "
                          "unscored); it is left out of the counts, and the fit uses the rest.",
                          stacklevel=2)
            return Score(value=math.nan, metadata={SUCCESSES: 0, TRIALS: 0})
        successes = int(sum(outcomes))
        return Score(value=successes / len(outcomes),
                     metadata={SUCCESSES: successes, TRIALS: len(outcomes)})

    return reduce


def _registered(decorator: Callable, function: Callable) -> Callable:
    """`function` registered with inspect (named ``passmix/<name>`` when passmix is
    installed), keeping its name, docstring and signature for help() and the docs."""
    return functools.update_wrapper(decorator(function), function,
                                     assigned=("__module__", "__name__", "__qualname__",
                                               "__doc__"), updated=())


counts = _registered(score_reducer, counts)


def epochs(n: int, *reducers: str | ScoreReducer, threshold: float | None = None) -> Epochs:
    """inspect's ``Epochs(n)`` whose reducers are :func:`counts` and any others asked for.

    Parameters
    ----------
    n : int
        Epochs (attempts) per sample.
    *reducers : str or ScoreReducer
        Further reducers, by name (``"mean"``, ``"pass_at_2"``) or made.
    threshold : float, optional
        Passed to :func:`counts`: needed for scorers that give partial credit.

    Returns
    -------
    inspect_ai.Epochs

    Examples
    --------
    >>> from passmix.integrations.inspect_ai import epochs
    >>> spec = epochs(6, "mean")
    >>> spec.epochs, len(spec.reducer)
    (6, 2)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a whole number of epochs >= 1, got {n!r}.")
    return Epochs(int(n), reducer=[counts(threshold=threshold), *reducers])


def pass_at_k(k: int, level: float = LEVEL, method: str = "mixture") -> Metric:
    """Pass@k at any k with its interval, from the samples' counts (:func:`counts`).

    Parameters
    ----------
    k : int
        The horizon, any k >= 1 (far past the epochs run).
    level : float, default 0.95
        Level of the interval (the fit's profile likelihood).
    method : {"mixture", "pooled"}, default "mixture"
        The fit: :func:`passmix.fit`, or :func:`passmix.fit_pooled` of the one system.

    Returns
    -------
    Metric
        Its value is ``{"pass@k": ..., "pass@k_lower": ..., "pass@k_upper": ...}``
        with k written out, which inspect logs as three entries.

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> from passmix.integrations.inspect_ai import counts, pass_at_k
    >>> reduce = counts()
    >>> scores = [SampleScore(score=reduce([Score(value=v) for v in "CIICIC"]), sample_id=1),
    ...           SampleScore(score=reduce([Score(value=v) for v in "IIIIII"]), sample_id=2)]
    >>> sorted(pass_at_k(100)(scores))
    ['pass@100', 'pass@100_lower', 'pass@100_upper']
    """
    return _fitted_metric("pass@k", k, level, method)


pass_at_k = _registered(metric, pass_at_k)


def pass_hat_k(k: int, level: float = LEVEL, method: str = "mixture") -> Metric:
    """Pass^k (every one of k attempts succeeds) at any k with its interval.

    As :func:`pass_at_k`; the log's entries are ``pass^k``, ``pass^k_lower``
    and ``pass^k_upper`` with k written out.

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> from passmix.integrations.inspect_ai import counts, pass_hat_k
    >>> reduce = counts()
    >>> scores = [SampleScore(score=reduce([Score(value=v) for v in "CCCCIC"]), sample_id=1),
    ...           SampleScore(score=reduce([Score(value=v) for v in "CIIIII"]), sample_id=2)]
    >>> value = pass_hat_k(3)(scores)
    >>> bool(value["pass^3_lower"] <= value["pass^3"] <= value["pass^3_upper"])
    True
    """
    return _fitted_metric("pass^k", k, level, method)


pass_hat_k = _registered(metric, pass_hat_k)


def auc_at_k(k: int, level: float = LEVEL, method: str = "mixture") -> Metric:
    """AUC@k (the mean of Pass@1 .. Pass@k) at any k with its interval.

    As :func:`pass_at_k`; the log's entries are ``auc@k``, ``auc@k_lower`` and
    ``auc@k_upper`` with k written out.

    Examples
    --------
    >>> from passmix.integrations.inspect_ai import auc_at_k
    >>> auc_at_k(10)([])  # nothing scored yet: nothing reported
    {}
    """
    return _fitted_metric("auc@k", k, level, method)


auc_at_k = _registered(metric, auc_at_k)


def sample_counts(scores: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """The samples' ``(successes, trials)`` from reduced scores, or None if none carries them.

    Takes inspect's ``SampleScore`` objects or bare ``Score`` objects (older
    inspect versions hand metrics the latter). Scores without the counts
    (another reducer's output) and samples with no scored epoch are left out.

    Examples
    --------
    >>> from inspect_ai.scorer import Score
    >>> from passmix.integrations.inspect_ai import counts, sample_counts
    >>> reduce = counts()
    >>> sample_counts([reduce([Score(value=1), Score(value=0)]), Score(value=0.5)])
    (array([1]), array([2]))
    """
    y, m = [], []
    for item in scores:
        score = getattr(item, "score", item)
        meta = getattr(score, "metadata", None) or {}
        if SUCCESSES in meta and TRIALS in meta and int(meta[TRIALS]) > 0:
            y.append(int(meta[SUCCESSES]))
            m.append(int(meta[TRIALS]))
    if not m:
        return None
    return np.array(y), np.array(m)


def _fitted_metric(kind: str, k: int, level: float, method: str) -> Callable:
    """The metric's function: the counts fitted once per distinct set, deterministic."""
    kind = check_metric(kind)
    k_arr, scalar = check_k(k)
    if not scalar:
        raise ValueError(f"k must be one horizon, got {k!r}.")
    k = int(k_arr[0])
    level = check_level(level)
    if method not in FIT_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of "
                         f"{', '.join(map(repr, FIT_METHODS))}.")
    name = f"{kind[:-1]}{k}"  # pass@1000, pass^3, auc@10
    # inspect recomputes metrics as samples finish (its running display): a count set
    # seen before is not fitted again
    seen: dict[bytes, dict[str, float]] = {}

    def compute(scores: list[Any]) -> dict[str, float]:
        found = sample_counts(scores)
        if found is None:
            return {}
        y, m = found
        key = np.stack([y, m]).tobytes()
        if key not in seen:
            try:
                seen[key] = _estimate(kind, k, level, method, y, m, name)
            except (ValueError, ArithmeticError, LogFormatError, RuntimeError) as err:
                warnings.warn(f"passmix could not fit {name} ({method}): {err}; the metric "
                              "reports nothing.", stacklevel=2)
                return {}
            if np.unique(m).size > 1:
                short = int((m < m.max()).sum())
                warnings.warn(f"passmix: {short} of {m.size} samples have fewer scored epochs "
                              f"than the most ({m.max()}; errored or unscored epochs): each is "
                              "fitted with the trials it has.", stacklevel=2)
        return dict(seen[key])

    return compute


def _estimate(kind: str, k: int, level: float, method: str, y: np.ndarray, m: np.ndarray,
              name: str) -> dict[str, float]:
    from ..data.counts import Counts

    with warnings.catch_warnings():
        # a degenerate sample set (all solved) warns in the fit; the log has the numbers
        warnings.simplefilter("ignore")
        if method == "mixture":
            from ..models.mixture.fit import fit

            result = fit(Counts(y, m), seed=_SEED)
        else:
            from ..data.panel import Panel
            from ..models.pooled.fit import fit_pooled

            result = fit_pooled(Panel(y[None, :], m[None, :]), seed=_SEED).system(0)
        estimate = float(result.metric(kind, k))
        lower, upper = result.interval(kind, k, level)
    return {name: estimate, f"{name}_lower": float(lower), f"{name}_upper": float(upper)}


def _unscored(value: Any) -> bool:
    """inspect's unscored epoch: a NaN value."""
    return isinstance(value, float) and math.isnan(value)
