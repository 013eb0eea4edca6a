"""The evaluation loop: spend a budget of attempts on a system, refit, stop when precise enough.

:func:`evaluate` calls the user's ``attempt(task)`` as a sampler picks tasks,
refits a predictor every so often, records the estimate and interval of the
target metric at the target horizon, and stops when the budget is spent or
the interval's half-width falls below a target (a sequential stopping rule).
A failing attempt is recorded as a failure or retried; an interrupted run
returns what it has. The returned :class:`EvaluationResult` resumes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._defaults import LEVEL
from .._validation import (DegenerateDataWarning, FitWarning, check_k, check_level,
                           check_metric, check_seed, shown)
from ..data.counts import Counts
from .samplers import AdaptiveSampler, Sampler, make_sampler

__all__ = ["EvaluationError", "EvaluationLoop", "EvaluationResult", "evaluate"]

TRAJECTORY_COLUMNS = ("attempts", "estimate", "lower", "upper", "halfwidth", "level")
ON_ERROR = ("fail", "retry", "raise")
# a look whose share of the error is below this is too strict to use (its level
# would round to 1); it may not stop the run
_MIN_LOOK_ERROR = 1e-12


class EvaluationError(RuntimeError):
    """`attempt` raised and ``on_error`` said to stop; ``.result`` holds everything so far."""

    def __init__(self, message: str, result: EvaluationResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class EvaluationResult:
    """What :func:`evaluate` spent, saw and concluded.

    Attributes
    ----------
    fit : FittedResult
        The predictor's last fit.
    counts : Counts
        Successes and attempts per task, labelled with the tasks.
    trajectory : pandas.DataFrame
        One row per refit: attempts spent so far, estimate, lower, upper,
        halfwidth of the metric at the target horizon, and the level of that
        interval (above the run's `level` where the stopping rule spent part
        of its error there, see :func:`evaluate`).
    errors : pandas.DataFrame
        One row per exception `attempt` raised: attempts (when), task, error,
        action (``"failed"``, ``"retried"`` or ``"raised"``).
    stopped : str
        ``"budget"``, ``"target"`` (half-width reached), ``"interrupted"``
        (KeyboardInterrupt) or ``"error"``.
    metric : str
    k : int
    level : float
        The level the last interval keeps when the stopping rule is used: the
        looks' levels together err at most ``1 - level``.
    sampler : Sampler
        The sampler, with its state (to resume).
    options : dict
        The settings to resume with.
    """

    fit: Any
    counts: Counts
    trajectory: pd.DataFrame = field(repr=False)
    errors: pd.DataFrame = field(repr=False)
    stopped: str
    metric: str
    k: int
    level: float
    sampler: Sampler = field(repr=False)
    options: dict = field(repr=False, default_factory=dict)

    @property
    def estimate(self) -> float:
        """The last estimate of the metric at the target horizon."""
        return float(self.trajectory["estimate"].iloc[-1])

    @property
    def interval(self) -> tuple[float, float]:
        """The last interval ``(lower, upper)``."""
        last = self.trajectory.iloc[-1]
        return float(last["lower"]), float(last["upper"])

    @property
    def attempts(self) -> int:
        """Attempts recorded so far."""
        return int(self.counts.trials.sum())

    def summary(self) -> pd.DataFrame:
        """One row: metric, k, estimate, lower, upper, halfwidth, attempts, tasks, stopped."""
        last = self.trajectory.iloc[-1]
        return pd.DataFrame([{"metric": self.metric, "k": self.k, "estimate": last["estimate"],
                              "lower": last["lower"], "upper": last["upper"],
                              "halfwidth": last["halfwidth"], "attempts": self.attempts,
                              "tasks": self.counts.n_tasks, "errors": len(self.errors),
                              "stopped": self.stopped}])

    def plot(self, ax=None, *, truth: float | None = None):
        """The estimate and its interval against attempts spent
        (:func:`passmix.plots.plot_evaluation`)."""
        from ..plots.scaling import plot_evaluation

        return plot_evaluation(self, ax, truth=truth)

    def __repr__(self) -> str:
        lo, hi = self.interval
        return (f"EvaluationResult({self.metric} at k={self.k}: {self.estimate:.4f} "
                f"[{lo:.4f}, {hi:.4f}], {self.attempts} attempts on {self.counts.n_tasks} "
                f"tasks, stopped: {self.stopped})")


def _predictor(name: str, seed) -> Callable[[Counts], Any]:
    from ..estimators.registry import get_estimator

    est = get_estimator(name)
    if est.joint:
        raise ValueError(f"{name!r} fits many systems at once; evaluate needs a one-system "
                         f"predictor such as 'beta_binomial' or 'mixture'.")
    return lambda counts: est(counts, seed=seed)


def _outcomes(values: Any, n: int) -> np.ndarray:
    out = np.asarray(values)
    if out.shape != (n,) or out.dtype.kind not in "biuf" or not np.isin(out, (0, 1)).all():
        raise ValueError("attempt must return a success (bool or 0/1) per task; "
                         f"got {shown(values)}.")
    return out.astype(bool)


def evaluate(attempt: Callable, tasks: Sequence | int, *, budget: int, k: int,
             metric: str = "pass@k", sampler: str | Sampler = "adaptive",
             predictor: str = "mixture", batch_size: int = 1, batch: bool = False,
             target_halfwidth: float | None = None, min_attempts: int = 1,
             level: float = LEVEL, alpha_spending: float | None = 1.0,
             interval: str = "delta", refit_every: int | None = None,
             on_error: str = "fail", retries: int = 2, seed=None, progress: bool = True,
             resume: EvaluationResult | None = None) -> EvaluationResult:
    """Spend up to `budget` attempts on a system, refitting, until the interval is narrow enough.

    Parameters
    ----------
    attempt : callable
        ``attempt(task) -> bool`` (or 0/1): one attempt of the system on a
        task. With ``batch=True``, ``attempt(list_of_tasks) -> sequence of
        bools``, for systems called in parallel.
    tasks : sequence or int
        The tasks (any hashable labels, passed to `attempt`), or their number
        (labels ``0 .. tasks - 1``).
    budget : int
        Attempts to spend in this call (at most; fewer if the target is met).
    k : int
        The target horizon.
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
    sampler : {"adaptive", "uniform", "dynamic"} or Sampler, default "adaptive"
        Which tasks to attempt (:mod:`passmix.scaling.samplers`).
    predictor : str, default "mixture"
        A registered one-system estimator, refitted every `refit_every`
        attempts: the Beta mixture with H chosen by BIC, or ``"beta_binomial"``
        (H = 1, the second paper's predictor, faster to refit), ...
    batch_size : int, default 1
        Attempts picked (and, with ``batch=True``, made) at once.
    batch : bool, default False
        `attempt` takes a list of tasks.
    target_halfwidth : float, optional
        Stop once the interval's half-width at `k` is at most this (checked
        at each refit, once every task has `min_attempts` attempts).
    min_attempts : int, default 1
        Attempts every task needs before the stopping rule may stop. Far
        beyond the trials, the interval is set mostly by the number of tasks
        and barely narrows with more attempts, so an early fit can look
        precise; a floor guards against stopping on it.
    level : float, default 0.95
        Confidence level of the interval. With `target_halfwidth`, of the
        interval the run stops on (or ends with): see `alpha_spending`.
    alpha_spending : float or None, default 1.0
        How the stopping rule keeps its interval honest. The rule looks at
        the interval many times and stops on one that happens to be narrow,
        so each look is made at a higher level: once a fraction ``t`` of the
        budget is spent, looks have used at most ``(1 - level) * t **
        alpha_spending`` of the error (alpha spending), and by the union
        bound the interval the run stops on, or ends with, covers with
        probability at least `level`. A look's share is fixed by when it
        happens; a look at which the rule may not stop forfeits it: before
        `min_attempts`, and where the fit warns that the data do not
        identify the metric (one attempt per task, say) or did not converge,
        or (delta intervals) its optimum is on a bound. Larger values keep more error
        for late looks. ``None`` looks at `level` every time: narrower
        intervals, an earlier stop, and optimistic coverage (see Notes).
        Without `target_halfwidth` every look is at `level`.
    interval : str, default "delta"
        The fit's interval method (``"delta"`` is cheap; ``"profile"`` for the
        mixture is slower and more honest at the binomial limit).
    refit_every : int, optional
        Attempts between refits (default: the number of tasks).
    on_error : {"fail", "retry", "raise"}, default "fail"
        When `attempt` raises: count a failure; retry up to `retries` times and
        then count a failure; or stop and raise :class:`EvaluationError`, whose
        ``.result`` keeps every recorded attempt. Every exception is listed in
        the result's ``errors``.
    retries : int, default 2
    seed : int or numpy.random.Generator, optional
        Seed of the sampler and the predictor.
    progress : bool, default True
        Show a progress bar (tqdm).
    resume : EvaluationResult, optional
        Continue a previous run: its counts, sampler, trajectory and errors
        carry over, and `budget` more attempts are spent.

    Returns
    -------
    EvaluationResult

    Notes
    -----
    Stopping when the half-width first drops below a target looks at the data
    repeatedly and stops on an interval that happens to be narrow, so the
    interval stopped on covers less than its level. A rule that looked at
    95% every time, on every look including those with one attempt per task,
    covered 63% in simulation (``benchmarks/stopping_coverage.py``: 60
    populations of 100 tasks, k = 100, target 0.05, a look every 100
    attempts; 98% when the whole budget was spent). Skipping the looks whose
    data do not identify the metric brings ``alpha_spending=None`` to 95-97%
    there; alpha spending (the default) covers 98% with a guarantee, at the
    price of more attempts (2,325 against 653 at target 0.1). The guarantee
    is the union bound over one call's looks, and as good as each look's
    interval at its own level. A resumed call spends another ``1 - level``
    over its own looks, so over ``r`` calls the bound is ``1 - r (1 -
    level)``.
    A KeyboardInterrupt stops the loop and returns what was recorded
    (``stopped="interrupted"``).

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.scaling import OracleSystem
    >>> system = OracleSystem(np.random.default_rng(0).beta(0.5, 2.0, 50), seed=0)
    >>> res = passmix.evaluate(system, 50, budget=500, k=100, seed=0, progress=False)
    >>> res.attempts, res.stopped
    (500, 'budget')
    >>> lo, hi = res.interval
    >>> bool(lo <= res.estimate <= hi)
    True
    """
    metric = check_metric(metric)
    (k,), _ = check_k(k)
    k = int(k)
    level = check_level(level)
    check_seed(seed)
    if on_error not in ON_ERROR:
        raise ValueError(f"unknown on_error {on_error!r}; expected one of {', '.join(ON_ERROR)}.")
    for name, value in (("budget", budget), ("batch_size", batch_size),
                        ("min_attempts", min_attempts)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {shown(value)}.")
    if target_halfwidth is not None and not 0 < target_halfwidth < 1:
        raise ValueError(f"target_halfwidth must be in (0, 1), got {shown(target_halfwidth)}.")
    if alpha_spending is not None and (isinstance(alpha_spending, bool) or not isinstance(
            alpha_spending, (int, float, np.integer, np.floating))
            or not 0 < alpha_spending < np.inf):
        raise ValueError("alpha_spending must be a number > 0 or None, "
                         f"got {shown(alpha_spending)}.")
    labels = list(range(tasks)) if isinstance(tasks, (int, np.integer)) else list(tasks)
    if not labels:
        raise ValueError("tasks is empty.")
    if len(set(map(repr, labels))) != len(labels):
        raise ValueError("tasks has duplicate labels.")
    n_tasks = len(labels)
    _predictor(predictor, seed)  # a predictor that cannot serve is said before anything runs
    if resume is not None:
        if resume.counts.n_tasks != n_tasks:
            raise ValueError(f"resume has {resume.counts.n_tasks} tasks, not {n_tasks}.")
        smp = resume.sampler
    else:
        smp = make_sampler(sampler, n_tasks, k=k, budget=int(budget), seed=seed)
        if isinstance(smp, AdaptiveSampler) and smp.k != k:
            warnings.warn(f"the sampler targets k = {smp.k}, the evaluation k = {k}.",
                          stacklevel=2)
    loop = EvaluationLoop(
        attempt, labels, smp, budget=int(budget), k=k, metric=metric, predictor=predictor,
        seed=seed, batch_size=int(batch_size), batch=batch, target_halfwidth=target_halfwidth,
        min_attempts=min_attempts, level=level, alpha_spending=alpha_spending,
        interval=interval, refit_every=int(refit_every) if refit_every else n_tasks,
        on_error=on_error, retries=retries, resume=resume)
    result = loop.run(progress)
    failed = sum(e["action"] == "failed" for e in loop.errors)
    if failed:
        first = next(e["error"] for e in loop.errors if e["action"] == "failed")
        warnings.warn(f"{failed} call(s) of attempt raised and were counted as failures "
                      f"(first: {first}); see the result's errors.", UserWarning,
                      stacklevel=2)
    return result


class EvaluationLoop:
    """One call of :func:`evaluate`, its steps named: attempt, refit (a look), stop, finish.

    :func:`evaluate` validates its arguments, builds the loop on a sampler and
    calls :meth:`run`; the loop holds what a run accumulates (the sampler's
    counts, the trajectory of looks, the errors, the fit and the alpha-spending
    clock). The arguments are :func:`evaluate`'s, checked.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.scaling import OracleSystem, make_sampler
    >>> from passmix.scaling.loop import EvaluationLoop
    >>> system = OracleSystem(np.random.default_rng(0).beta(0.5, 2.0, 20), seed=0)
    >>> sampler = make_sampler("uniform", 20, k=10, seed=0)
    >>> loop = EvaluationLoop(system, list(range(20)), sampler, budget=60, k=10,
    ...                       predictor="beta_binomial", seed=0)
    >>> result = loop.run(progress=False)
    >>> result.attempts, len(loop.rows)  # a look every 20 attempts
    (60, 3)
    """

    def __init__(self, attempt: Callable, labels: list, sampler: Sampler, *, budget: int,
                 k: int, metric: str = "pass@k", predictor: str = "mixture", seed=None,
                 batch_size: int = 1, batch: bool = False,
                 target_halfwidth: float | None = None, min_attempts: int = 1,
                 level: float = LEVEL, alpha_spending: float | None = 1.0,
                 interval: str = "delta", refit_every: int | None = None,
                 on_error: str = "fail", retries: int = 2,
                 resume: EvaluationResult | None = None) -> None:
        self.attempt, self.labels, self.sampler = attempt, labels, sampler
        self.budget, self.k, self.metric, self.level = budget, k, metric, level
        self.predictor, self.interval = predictor, interval
        self.batch_size, self.batch = batch_size, batch
        self.target_halfwidth, self.min_attempts = target_halfwidth, min_attempts
        self.alpha_spending = alpha_spending
        self.refit_every = refit_every or len(labels)
        self.on_error, self.retries = on_error, retries
        self.fit_with = _predictor(predictor, seed)
        self.rows: list[dict] = resume.trajectory.to_dict("records") if resume else []
        self.errors: list[dict] = resume.errors.to_dict("records") if resume else []
        self.fit = resume.fit if resume is not None else None
        self.spent = 0
        # alpha spending: the share of the budget spent at the last look
        self.clock = 0.0
        self.spending = target_halfwidth is not None and alpha_spending is not None

    # -- the steps ---------------------------------------------------------------
    def counts(self) -> Counts:
        """The counts so far, labelled by the tasks."""
        labels = self.labels
        return Counts(self.sampler.successes, self.sampler.attempts,
                      tasks=np.array(labels, dtype=object)
                      if not all(isinstance(t, (int, np.integer)) for t in labels) else labels)

    def share(self, fraction: float) -> float:
        """This look's share of the error: ``alpha(t) - alpha(t_previous look)``.

        Every look takes its share when it happens, whether or not it may stop,
        so the shares are fixed by the looks' times, not by the data, and sum
        to at most ``1 - level``: a look that may not stop forfeits its share.
        """
        power = float(self.alpha_spending)
        before = (1.0 - self.level) * self.clock ** power
        self.clock = min(fraction, 1.0)
        return (1.0 - self.level) * self.clock ** power - before

    def refit(self, may_stop: bool, last: bool) -> tuple[float, bool]:
        """Refit and record a look: its half-width, and whether the rule may stop on it."""
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            result = self.fit_with(self.counts())
            # Not a look to stop on: a fit that warns of data that do not identify
            # the metric (e.g. one attempt per task) or of no convergence, or a
            # delta interval that treats coordinates on a bound as known.
            doubtful = any(issubclass(w.category, (DegenerateDataWarning, FitWarning))
                           for w in said)
            may_stop = may_stop and not doubtful and not (
                self.interval == "delta" and getattr(result, "on_bound", ()))
            at_level = self.level
            if self.spending:
                error = self.share(1.0 if last else self.spent / self.budget)
                if last:  # reported whatever it is: a floor keeps the interval finite
                    at_level = 1.0 - max(error, _MIN_LOOK_ERROR)
                elif may_stop and error >= _MIN_LOOK_ERROR:
                    at_level = 1.0 - error
                else:
                    may_stop = False
            est = float(result.metric(self.metric, self.k))
            ci = result.interval(self.metric, self.k, at_level, method=self.interval)
        lo, hi = float(ci[0]), float(ci[1])
        self.rows.append({"attempts": int(self.sampler.attempts.sum()), "estimate": est,
                          "lower": lo, "upper": hi, "halfwidth": (hi - lo) / 2,
                          "level": at_level})
        self.fit = result
        return (hi - lo) / 2, may_stop

    def call(self, positions: np.ndarray) -> np.ndarray:
        """Outcomes of one call of `attempt` (one task, or a batch), after `on_error`."""
        labels, tries = self.labels, 0
        while True:
            try:
                value = self.attempt([labels[t] for t in positions]) if self.batch \
                    else [self.attempt(labels[positions[0]])]
            except Exception as exc:  # the user's system failed: record it, then decide
                action = "retried" if self.on_error == "retry" and tries < self.retries else \
                    "raised" if self.on_error == "raise" else "failed"
                self.errors.append({"attempts": int(self.sampler.attempts.sum()),
                                    "task": [labels[t] for t in positions] if self.batch
                                    else labels[positions[0]],
                                    "error": f"{type(exc).__name__}: {exc}", "action": action})
                if action == "retried":
                    tries += 1
                    continue
                if action == "raised":
                    raise _Stop() from exc
                return np.zeros(positions.size, dtype=bool)
            return _outcomes(value, positions.size)

    def spend(self, n: int) -> None:
        """Pick `n` attempts, make them and record their outcomes; what was picked but
        not made (an interruption) goes back to the sampler."""
        picks = self.sampler.next_tasks(n)
        calls = [picks] if self.batch else [picks[i:i + 1] for i in range(n)]
        done = 0
        try:
            for positions in calls:
                self.sampler.update(positions, self.call(positions))
                done += positions.size
        except BaseException:
            self.sampler.cancel(picks[done:])
            self.spent += done
            raise
        self.spent += n

    def look(self) -> tuple[float, bool]:
        """A refit at which the rule may stop once every task has `min_attempts`
        attempts; every look takes its share of the error."""
        may_stop = self.target_halfwidth is not None and bool(
            (self.sampler.attempts >= self.min_attempts).all())
        return self.refit(may_stop, self.spent >= self.budget)

    def finish(self, stopped: str) -> EvaluationResult:
        """The result; a last refit first if the attempts moved since the last look (it
        takes the rest of the error)."""
        counts = self.counts()
        last = self.rows[-1]["attempts"] if self.rows else -1
        if counts.trials.sum() > 0 and last != counts.trials.sum():
            self.refit(False, True)
        return EvaluationResult(
            self.fit, counts, pd.DataFrame(self.rows, columns=list(TRAJECTORY_COLUMNS)),
            pd.DataFrame(self.errors, columns=["attempts", "task", "error", "action"]),
            stopped, self.metric, self.k, self.level, self.sampler,
            {"predictor": self.predictor, "interval": self.interval,
             "alpha_spending": self.alpha_spending})

    def run(self, progress: bool = True) -> EvaluationResult:
        """Spend the budget, a look every `refit_every` attempts, until the target or the
        budget (or an interruption, or an error with ``on_error="raise"``)."""
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.budget, desc=f"{self.metric} at k={self.k}", leave=True)
        since_fit, stopped = 0, "budget"
        try:
            while self.spent < self.budget:
                n = min(self.batch_size, self.budget - self.spent)
                self.spend(n)
                since_fit += n
                if bar is not None:
                    bar.update(n)
                if since_fit >= self.refit_every or self.spent >= self.budget:
                    since_fit = 0
                    halfwidth, may_stop = self.look()
                    if bar is not None:
                        bar.set_postfix(estimate=f"{self.rows[-1]['estimate']:.4f}",
                                        halfwidth=f"{halfwidth:.4f}")
                    if may_stop and halfwidth <= self.target_halfwidth:
                        stopped = "target"
                        break
        except KeyboardInterrupt:
            stopped = "interrupted"
        except _Stop as stop:
            result = self.finish("error")
            cause = stop.__cause__
            raise EvaluationError(f"attempt raised {type(cause).__name__}: {cause}; the "
                                  "result so far is on .result", result) from cause
        finally:
            if bar is not None:
                bar.close()
        return self.finish(stopped)


class _Stop(Exception):
    """Internal: `attempt` raised and on_error is "raise"."""
