"""passmix inside inspect_ai evals: Pass@k, Pass^k and AUC@k at any k, with intervals, in the log.

inspect_ai's own reducers give ``pass_at_{k}`` only for k up to the epochs
run, without an interval. Here a reducer keeps each sample's counts (its
successes over the epochs scored) and metrics fit passmix's Beta mixture to
them, so one line in a ``Task`` puts, say, Pass@1000 and its 95% interval
into the eval log and ``inspect view``::

    from inspect_ai import Task
    from inspect_ai.scorer import accuracy
    from passmix.integrations.inspect_ai import epochs, pass_at_k, pass_hat_k

    Task(dataset=..., solver=..., scorer=...,
         epochs=epochs(6), metrics=[accuracy(), pass_at_k(1000), pass_hat_k(3)])

A ``Task``'s ``metrics=`` replaces the scorer's own metrics (inspect's rule),
so ``accuracy()`` is listed to keep it.

Each metric reports the estimate and its interval ends under names that
carry the metric and k (``pass@1000``, ``pass@1000_lower``,
``pass@1000_upper``), equal to :func:`passmix.fit` on the same counts (seed 0,
profile intervals). inspect applies every metric to every reducer's output;
these metrics read only the counts :func:`counts` leaves in the reduced
score's metadata and report nothing for other reducers.

What inspect hands on, and what happens to it:

* a sample's errored or unscored (NaN) epochs are not counted, so its count
  has fewer trials: it is fitted with the trials it has (passmix takes
  unequal trials);
* a sample with no scored epoch is left out, and the fit uses the rest; a
  sample whose every epoch errored never reaches the reducer (inspect drops it);
* when no sample has a scored epoch, or a fit fails, the metric logs no
  entries (not NaN); the eval goes on.

Each of these is said once, in a warning when the task ends, about the final
counts: inspect also computes metrics on the unfinished epochs while the eval
runs (its live display), where every sample still running has fewer epochs.
Those warnings need inspect_ai 0.3.112 or later (its task-end hook); earlier
versions fit the same numbers without them.

inspect_ai finds this module through the ``inspect_ai`` entry point that
passmix installs, so the reducer is also known by name on its command line:
``inspect eval task.py --epochs 6 --epochs-reducer passmix/counts``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from inspect_ai import Epochs
from inspect_ai.log import EvalLog
from inspect_ai.scorer import Metric, Score, ScoreReducer, metric, score_reducer

try:  # the task-end hook: inspect_ai 0.3.112 and later
    from inspect_ai.hooks import Hooks, TaskEnd, hooks
except ImportError:  # pragma: no cover - older inspect: the fits, without the warnings
    hooks = None

from .._defaults import LEVEL
from .._validation import check_k, check_level, check_metric, shown
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

#: set once a passmix reducer or metric is made: the task-end check is idle until then
_in_use = False

#: fit failures by the count set they met (see _counts_key), each as {what: why}: the
#: task-end check looks up the final set's, whichever metric object met it
_failures: dict[bytes, dict[str, str]] = {}


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
        is an error. ``C``/``I``, booleans, yes/no and 0/1 need none. Without
        it a number outside [0, 1] is an error (out of range); with it any
        finite number is compared, so scorers on another scale work.

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
    >>> counts(threshold=7)([Score(value=9), Score(value=4)]).metadata  # a 0-10 scale
    {'passmix_successes': 1, 'passmix_trials': 2}
    """
    global _in_use
    threshold = check_threshold(threshold)
    _in_use = True

    def reduce(scores: list[Score]) -> Score:
        outcomes = [to_outcome(score.value, threshold, f"epoch {n + 1}'s score")
                    for n, score in enumerate(scores) if not _unscored(score.value)]
        if not outcomes:
            # no warning here: inspect also reduces unfinished epochs (its live display), so
            # a sample may have none scored yet; the task-end check says it about the final
            # counts. NaN is inspect's "unscored": its metrics leave the sample out
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
        raise ValueError(f"n must be a whole number of epochs >= 1, got {shown(n)}.")
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
        with k written out, which inspect logs as three entries. With nothing
        to fit (no counts, or a failed fit) the three are None, which inspect
        logs as no entries at all rather than NaN.

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
    >>> auc_at_k(10)([])  # nothing scored: None, which inspect logs as no entries
    {'auc@10': None, 'auc@10_lower': None, 'auc@10_upper': None}
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
    global _in_use
    kind = check_metric(kind)
    k_arr, scalar = check_k(k)
    if not scalar:
        raise ValueError(f"k must be one horizon, got {shown(k)}.")
    k = int(k_arr[0])
    level = check_level(level)
    if method not in FIT_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of "
                         f"{', '.join(map(repr, FIT_METHODS))}.")
    _in_use = True
    name = f"{kind[:-1]}{k}"  # pass@1000, pass^3, auc@10
    # None is inspect's "no value": it logs no entry for it. An empty mapping or a scalar
    # would not do: with no scored sample, inspect asks the metric for its value on an
    # empty list and logs NaN under the metric's name unless the answer is a non-empty
    # mapping (inspect_ai 0.3.285; releases up to 0.3.260 log that NaN whatever we say)
    nothing: dict[str, float | None] = dict.fromkeys((name, f"{name}_lower", f"{name}_upper"))
    # inspect recomputes metrics as samples finish (its running display): a count set
    # seen before is not fitted again
    seen: dict[bytes, dict[str, float | None]] = {}

    def compute(scores: list[Any]) -> dict[str, float | None]:
        found = sample_counts(scores)
        if found is None:
            return dict(nothing)
        y, m = found
        key = np.stack([y, m]).tobytes()
        if key not in seen:
            try:
                seen[key] = _estimate(kind, k, level, method, y, m, name)
            except (ValueError, ArithmeticError, LogFormatError, RuntimeError) as err:
                # not warned here: this may be a live update's unfinished counts; the
                # task-end check warns if the final counts met it
                _failures.setdefault(_counts_key(y, m), {})[
                    f"{name} ({method}, level {level:g})"] = str(err)
                seen[key] = dict(nothing)
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


def _counts_key(y: np.ndarray, m: np.ndarray) -> bytes:
    """A count set's key whatever the samples' order: inspect may hand them on in another."""
    pairs = sorted(zip(np.asarray(y).tolist(), np.asarray(m).tolist()))
    return np.array(pairs, dtype=np.int64).tobytes()


def _final_notes(scorer: str, samples: Sequence[Any], logged: Collection[str]) -> list[str]:
    """The warnings due about one scorer's final counts.

    `samples` are its scores reduced by :func:`counts` (each sample's final
    counts), `logged` the names of the entries the log has for them.
    """
    where = f"passmix (scorer {scorer!r})"
    found = sample_counts(samples)
    if found is None:
        return [f"{where}: none of the {len(samples)} samples has a scored epoch (every "
                "epoch errored or was unscored, e.g. a NaN score): nothing could be fitted, "
                "so the log has no passmix estimates for this scorer."]
    y, m = found
    notes = []
    if m.size < len(samples):
        notes.append(f"{where}: {len(samples) - m.size} of {len(samples)} samples have no "
                     "scored epoch (each errored or was unscored): they are left out, and "
                     f"the fit uses the other {m.size}.")
    if np.unique(m).size > 1:
        short = int((m < m.max()).sum())
        notes.append(f"{where}: {short} of {m.size} samples have fewer scored epochs than the "
                     f"most ({m.max()}; errored or unscored epochs): each is fitted with the "
                     "trials it has.")
    for what, why in _failures.get(_counts_key(y, m), {}).items():
        if what.split(" ")[0] not in logged:  # another task's metric met the same counts
            notes.append(f"{where}: could not fit {what}: {why}; the log has no entries "
                         "for it.")
    return notes


def _task_end_notes(log: EvalLog) -> list[str]:
    """The warnings due about a finished task's final counts, from its log."""
    if log.status != "success" or log.results is None:
        return []  # an eval that failed or was cancelled says so itself
    if not any((score.reducer or "").split("/")[-1] == "counts" for score in log.results.scores):
        return []  # no passmix reducer: the reductions are not even loaded
    # the final counts: the reductions, which even a header-only log (eval_set()) carries
    reductions = log.reductions or ()
    logged: dict[tuple[str, str | None], set[str]] = {}
    for score in log.results.scores:
        logged.setdefault((score.scorer, score.reducer), set()).update(score.metrics)
    notes = []
    for reduction in reductions:
        # counts' scores, and only they, carry the counts in every sample's metadata
        if reduction.samples and all(TRIALS in (sample.metadata or {})
                                     for sample in reduction.samples):
            notes += _final_notes(reduction.scorer, reduction.samples,
                                  logged.get((reduction.scorer, reduction.reducer), set()))
    return notes


if hooks is not None:
    # Why a hook: inspect computes metrics (so reduces and fits) also while the eval
    # runs, for its live display, on whatever epochs have finished; there every sample
    # still running has fewer epochs than the rest, and nothing a reducer or metric is
    # handed tells those counts from the final ones. The task-end hook (inspect's
    # documented Hooks API) runs once per task with the finished log, whose reductions
    # are the final counts: the warnings are raised there and only there.
    @hooks(name="final_counts",
           description="warns about the final per-sample counts (errored, unscored epochs, failed "
                       "fits) when a task ends")
    class _FinalCounts(Hooks):
        def enabled(self) -> bool:
            # idle in processes that never made a passmix reducer or metric
            return _in_use

        async def on_task_end(self, data: TaskEnd) -> None:
            for note in _task_end_notes(data.log):
                warnings.warn(note, stacklevel=2)
