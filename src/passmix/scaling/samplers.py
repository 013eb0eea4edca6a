"""Samplers: which tasks to attempt next, given the successes and attempts so far.

Every sampler keeps per-task ``successes`` and ``attempts`` and has one
interface: :meth:`Sampler.next_tasks` picks a batch of task positions (the
picks are *pending* until reported) and :meth:`Sampler.update` records
outcomes. A pending attempt counts as an attempt without success, so a batch
spreads over tasks the way one-at-a-time picks would. All are seeded and
reproducible.

* ``"uniform"``: round-robin, fewest attempts first.
* ``"dynamic"``: the second paper's Algorithm 1: fewest successes, then fewest
  attempts, ties at random.
* ``"adaptive"``: ours. A uniform first stage, then each attempt goes to the
  task whose next outcome is expected to shrink most the posterior variance
  of its term in Pass@k at the target horizon, under a beta-binomial refitted
  every so often (see :class:`AdaptiveSampler`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._special import log_beta_ratio, log_rising_ratio
from .._validation import check_seed, shown

__all__ = ["AdaptiveSampler", "DynamicSampler", "SAMPLERS", "Sampler", "UniformSampler",
           "make_sampler"]


class Sampler:
    """Base class: per-task state, pending picks, batches and the random stream.

    Parameters
    ----------
    n_tasks : int
        Number of tasks (positions ``0 .. n_tasks - 1``).
    seed : int or numpy.random.Generator, optional
        Seed of the tie-breaking (and any other) randomness.
    successes, attempts : array_like of int, optional
        A state to resume from (both or neither).
    """

    name = ""

    def __init__(self, n_tasks: int, *, seed=None, successes=None, attempts=None) -> None:
        if isinstance(n_tasks, bool) or int(n_tasks) != n_tasks or n_tasks < 1:
            raise ValueError(f"n_tasks must be a whole number >= 1, got {shown(n_tasks)}.")
        self.n_tasks = int(n_tasks)
        self.rng = np.random.default_rng(check_seed(seed))
        if (successes is None) != (attempts is None):
            raise ValueError("give both successes and attempts to resume, or neither.")
        if successes is None:
            self._s = np.zeros(self.n_tasks, dtype=np.int64)
            self._a = np.zeros(self.n_tasks, dtype=np.int64)
        else:
            s = np.array(successes, dtype=np.int64)
            a = np.array(attempts, dtype=np.int64)
            if s.shape != (self.n_tasks,) or a.shape != (self.n_tasks,):
                raise ValueError(f"successes and attempts must have one entry per task "
                                 f"({self.n_tasks}).")
            if (s < 0).any() or (s > a).any():
                raise ValueError("need 0 <= successes <= attempts for every task.")
            self._s, self._a = s, a
        self._pending = np.zeros(self.n_tasks, dtype=np.int64)

    @property
    def successes(self) -> np.ndarray:
        """Successes per task (a copy)."""
        return self._s.copy()

    @property
    def attempts(self) -> np.ndarray:
        """Recorded attempts per task (a copy; pending picks not included)."""
        return self._a.copy()

    @property
    def pending(self) -> np.ndarray:
        """Picks not yet reported, per task (a copy)."""
        return self._pending.copy()

    def _pick(self) -> int:  # pragma: no cover
        raise NotImplementedError

    def next_tasks(self, n: int = 1) -> np.ndarray:
        """Pick `n` task positions to attempt next (they stay pending until updated)."""
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be a whole number >= 1, got {shown(n)}.")
        self._prepare(int(n))
        picks = np.empty(int(n), dtype=np.int64)
        for i in range(int(n)):
            task = self._pick()
            self._pending[task] += 1
            picks[i] = task
        return picks

    def _prepare(self, n: int) -> None:
        """Hook run before a batch is picked."""

    def update(self, task, success) -> None:
        """Record the outcome(s) of attempted task position(s).

        Parameters
        ----------
        task : int or array_like of int
        success : bool, 0/1, or array_like of them (one per task)
        """
        tasks = np.atleast_1d(np.asarray(task))
        outcomes = np.atleast_1d(np.asarray(success))
        if tasks.shape != outcomes.shape:
            raise ValueError(f"got {tasks.size} task(s) and {outcomes.size} outcome(s).")
        if tasks.dtype.kind not in "iu" or (tasks < 0).any() or (tasks >= self.n_tasks).any():
            raise ValueError(f"task positions must be whole numbers in [0, {self.n_tasks}).")
        if outcomes.dtype.kind not in "biu" or not np.isin(outcomes, (0, 1)).all():
            raise ValueError(f"an outcome must be a bool or 0/1, got {shown(outcomes)}.")
        np.add.at(self._a, tasks, 1)
        np.add.at(self._s, tasks, outcomes.astype(np.int64))
        np.subtract.at(self._pending, tasks, 1)
        np.maximum(self._pending, 0, out=self._pending)

    def cancel(self, task) -> None:
        """Forget pending pick(s) of `task` without recording an outcome."""
        tasks = np.atleast_1d(np.asarray(task, dtype=np.int64))
        np.subtract.at(self._pending, tasks, 1)
        np.maximum(self._pending, 0, out=self._pending)

    def state(self) -> dict[str, Any]:
        """The state to resume from: name, successes, attempts."""
        return {"sampler": self.name, "successes": self._s.tolist(), "attempts": self._a.tolist()}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_tasks={self.n_tasks}, attempts={int(self._a.sum())}, "
                f"successes={int(self._s.sum())})")


def _random_min(rng: np.random.Generator, candidates: np.ndarray) -> int:
    return int(candidates[rng.integers(candidates.size)]) if candidates.size > 1 \
        else int(candidates[0])


class UniformSampler(Sampler):
    """Round-robin: the task with the fewest attempts (pending included), lowest position first.

    Examples
    --------
    >>> from passmix.scaling import UniformSampler
    >>> s = UniformSampler(3)
    >>> s.next_tasks(5).tolist()
    [0, 1, 2, 0, 1]
    """

    name = "uniform"

    def _pick(self) -> int:
        return int(np.argmin(self._a + self._pending))


class DynamicSampler(Sampler):
    """The second paper's Algorithm 1: fewest successes, then fewest attempts, ties at random.

    Examples
    --------
    >>> from passmix.scaling import DynamicSampler
    >>> s = DynamicSampler(3, seed=0)
    >>> s.update([0, 1, 2], [1, 0, 0])
    >>> sorted(s.next_tasks(2).tolist())
    [1, 2]
    """

    name = "dynamic"

    def _pick(self) -> int:
        fewest = self._s == self._s.min()
        load = np.where(fewest, self._a + self._pending, np.iinfo(np.int64).max)
        return _random_min(self.rng, np.flatnonzero(load == load.min()))


def _fit_beta(successes: np.ndarray, attempts: np.ndarray) -> tuple[float, float]:
    """Beta-binomial shapes by maximum likelihood on the tasks attempted (scipy, no PyMC).

    A sampler refits often, on small data; a few milliseconds of Nelder-Mead
    keeps it out of the way. The evaluation's own fit is the core one.
    """
    from scipy import optimize

    seen = attempts > 0
    y, m = successes[seen], attempts[seen]
    if y.size == 0:
        return 1.0, 1.0

    def nll(z):
        a, b = np.exp(np.clip(z, -12, 12))
        return -log_beta_ratio(a, b, y, m - y).sum()

    rate = (y.sum() + 0.5) / (m.sum() + 1.0)
    res = optimize.minimize(nll, np.log([rate, 1 - rate]), method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-8})
    a, b = np.exp(np.clip(res.x, -12, 12))
    return float(a), float(b)


def _log_fail_moment(a, b, r):
    """``log E[(1 - p)^r]`` for ``p ~ Beta(a, b)``: the rising ratio ``(b)_r / (a + b)_r``."""
    return log_rising_ratio(b, a, r)


def variance_reduction(a, b, k: int) -> np.ndarray:
    """Expected drop in the posterior variance of ``(1 - p)^k`` from one more attempt.

    For ``p ~ Beta(a, b)``, the next outcome is a success with probability
    ``a / (a + b)``; the drop is the variance, over that outcome, of the
    posterior mean of ``(1 - p)^k``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.scaling.samplers import variance_reduction
    >>> rng = np.random.default_rng(0)
    >>> a, b, k = 0.5, 3.0, 20
    >>> p = rng.beta(a, b, 400_000)
    >>> y = rng.random(p.size) < p
    >>> mean = lambda a, b: np.exp(np.log(b + np.arange(k)).sum() - np.log(a + b + np.arange(k)).sum())
    >>> mc = np.var(np.where(y, mean(a + 1, b), mean(a, b + 1)))
    >>> bool(np.isclose(variance_reduction(a, b, k), mc, rtol=0.02))
    True
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    succ = a / (a + b)
    after_success = np.exp(_log_fail_moment(a + 1, b, k))
    after_failure = np.exp(_log_fail_moment(a, b + 1, k))
    return succ * (1 - succ) * (after_success - after_failure) ** 2


#: Share of the planned attempts spent uniformly before the adaptive rule starts. Chosen
#: among 0, 0.5 and 0.6 of the budget (and a fixed 2 or 5 attempts) on the MATH replay,
#: seeds 0-2; benchmarks/scaling_samplers.py checks it on other seeds and populations.
WARMUP_SHARE = 0.6


class AdaptiveSampler(Sampler):
    """Spend each attempt where it is expected to shrink the uncertainty of Pass@k most.

    Parameters
    ----------
    n_tasks : int
    k : int
        The target horizon.
    budget : int, optional
        Attempts planned in all; sets the default first stage.
    warmup : int, optional
        Attempts every task gets first, round-robin, before the rule starts.
        Default: 60% of the planned attempts per task (``0.6 budget /
        n_tasks``, at least 1), or 2 without a `budget`.
    refit_every : int, optional
        Refit the beta-binomial prior after this many recorded attempts
        (default: one per task).
    seed, successes, attempts
        As for :class:`Sampler`.

    Notes
    -----
    Under a beta-binomial prior ``Beta(a, b)`` fitted to the counts so far,
    task ``j`` has posterior ``Beta(a + y_j, b + m_j - y_j)``, and its term in
    Pass@k is ``1 - (1 - p_j)^k``. The sampler picks the task whose next
    outcome most reduces that term's expected posterior variance
    (:func:`variance_reduction`), with pending picks counted as failures. A
    task never solved keeps a large variance (it may be impossible or merely
    hard) until enough attempts settle it, which is what the paper's dynamic
    rule exploits; a task solved often has a small one and is left alone. The
    uniform first stage gives the prior fit something to stand on: without
    it (or with a short one) the fit sees mostly the hardest tasks, and on the
    MATH replay the allocation then loses to uniform sampling at large
    budgets, as the paper's dynamic rule does.

    Examples
    --------
    >>> from passmix.scaling import AdaptiveSampler
    >>> s = AdaptiveSampler(4, k=100, warmup=1, seed=0)
    >>> first = s.next_tasks(4)
    >>> s.update(first, [1, 1, 0, 0])
    >>> int(s.next_tasks(1)[0]) in (first[2], first[3])
    True
    """

    name = "adaptive"

    def __init__(self, n_tasks: int, *, k: int, budget: int | None = None,
                 warmup: int | None = None, refit_every: int | None = None,
                 seed=None, successes=None, attempts=None) -> None:
        super().__init__(n_tasks, seed=seed, successes=successes, attempts=attempts)
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise ValueError(f"k must be a whole number >= 1, got {shown(k)}.")
        self.k = int(k)
        if warmup is None:
            warmup = max(1, int(WARMUP_SHARE * budget / self.n_tasks)) if budget else 2
        self.warmup = int(warmup)
        self.refit_every = int(refit_every) if refit_every else self.n_tasks
        self._prior: tuple[float, float] | None = None
        self._fitted_at = -1

    def _prepare(self, n: int) -> None:
        total = int(self._a.sum())
        if self._prior is None or total - self._fitted_at >= self.refit_every:
            if (self._a > 0).any():
                self._prior = _fit_beta(self._s, self._a)
                self._fitted_at = total

    def _pick(self) -> int:
        load = self._a + self._pending
        if load.min() < self.warmup or self._prior is None:
            return int(np.argmin(load))
        a0, b0 = self._prior
        gain = variance_reduction(a0 + self._s, b0 + load - self._s, self.k)
        return _random_min(self.rng, np.flatnonzero(gain >= gain.max() * (1 - 1e-12)))

    def state(self) -> dict[str, Any]:
        """The state to resume from, with the target horizon and the first stage."""
        return {**super().state(), "k": self.k, "warmup": self.warmup,
                "refit_every": self.refit_every}


SAMPLERS = {"uniform": UniformSampler, "dynamic": DynamicSampler, "adaptive": AdaptiveSampler}


def make_sampler(sampler: str | Sampler, n_tasks: int, *, k: int, budget: int | None = None,
                 seed=None, **state) -> Sampler:
    """A sampler by name (``"uniform"``, ``"dynamic"``, ``"adaptive"``), or `sampler` itself.

    `k` and `budget` (attempts planned) inform the adaptive sampler; `state`
    passes ``successes`` and ``attempts`` to resume (and the adaptive
    sampler's ``warmup`` and ``refit_every``).

    Examples
    --------
    >>> from passmix.scaling import make_sampler
    >>> make_sampler("dynamic", 5, k=100, seed=1)
    DynamicSampler(n_tasks=5, attempts=0, successes=0)
    """
    if isinstance(sampler, Sampler):
        if sampler.n_tasks != n_tasks:
            raise ValueError(f"the sampler has {sampler.n_tasks} tasks, not {n_tasks}.")
        return sampler
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; expected one of "
                         f"{', '.join(SAMPLERS)} or a Sampler.")
    if sampler == "adaptive":
        return AdaptiveSampler(n_tasks, k=k, budget=budget, seed=seed, **state)
    state = {key: v for key, v in state.items() if key in ("successes", "attempts")}
    return SAMPLERS[sampler](n_tasks, seed=seed, **state)
