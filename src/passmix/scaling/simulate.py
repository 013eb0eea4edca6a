"""Simulated systems for the scaling experiments: oracle problems and replayed records.

A *system* here is what :func:`passmix.evaluate` calls: ``attempt(task) ->
bool``. :class:`OracleSystem` draws each attempt from known per-task success
probabilities; :class:`ReplaySystem` replays a task's recorded outcomes
without replacement (a uniformly random order of its ``s`` successes in
``n`` records), as the second paper does with its 10,000 samples per problem.
Both are seeded.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_seed
from ..estimators.direct import combinatorial_estimate

__all__ = ["OracleSystem", "ReplaySystem", "oracle_population", "spend"]


class OracleSystem:
    """Attempts succeed with known probabilities ``p[task]``.

    Examples
    --------
    >>> from passmix.scaling import OracleSystem
    >>> system = OracleSystem([0.0, 1.0], seed=0)
    >>> system(0), system(1)
    (False, True)
    >>> system.pass_at_k(10)
    0.5
    """

    def __init__(self, p, *, seed=None) -> None:
        self.p = np.asarray(p, dtype=float)
        if self.p.ndim != 1 or not self.p.size or ((self.p < 0) | (self.p > 1)).any() \
                or not np.isfinite(self.p).all():
            raise ValueError("p must be a non-empty 1-d array of probabilities in [0, 1].")
        self.rng = np.random.default_rng(check_seed(seed))

    @property
    def n_tasks(self) -> int:
        return self.p.size

    def __call__(self, task: int) -> bool:
        return bool(self.rng.random() < self.p[task])

    def pass_at_k(self, k):
        """The true Pass@k of the tasks: ``mean_j 1 - (1 - p_j)^k``."""
        ks = np.atleast_1d(np.asarray(k, dtype=float))
        with np.errstate(divide="ignore"):
            log_q = np.log1p(-self.p)[:, None]
        out = -np.expm1(ks[None, :] * log_q).mean(axis=0)
        return float(out[0]) if np.ndim(k) == 0 else out


class ReplaySystem:
    """Replays recorded outcomes: task ``j`` has ``successes[j]`` of ``trials[j]`` records.

    Each attempt draws one of the task's remaining records at random, so the
    outcomes are those of a random order of its records. A task whose records
    are all used starts a new pass over them (``recycled`` counts the passes
    per task), so a sampler that piles attempts on one task never fails.

    Examples
    --------
    >>> from passmix.scaling import ReplaySystem
    >>> system = ReplaySystem([3, 0], [3, 5], seed=0)
    >>> [system(0) for _ in range(3)], system(1)
    ([True, True, True], False)
    >>> round(system.pass_at_k(2), 3)
    0.5
    """

    def __init__(self, successes, trials, *, seed=None) -> None:
        s = np.asarray(successes, dtype=np.int64)
        n = np.asarray(trials, dtype=np.int64)
        if s.shape != n.shape or s.ndim != 1 or not s.size or (s < 0).any() or (s > n).any():
            raise ValueError("successes and trials must be 1-d, of one length, with "
                             "0 <= successes <= trials.")
        self.successes, self.trials = s, n
        self._left_s, self._left_n = s.copy(), n.copy()
        self.recycled = np.zeros(s.size, dtype=np.int64)
        self.rng = np.random.default_rng(check_seed(seed))

    @property
    def n_tasks(self) -> int:
        return self.successes.size

    def __call__(self, task: int) -> bool:
        if self._left_n[task] <= 0:
            self._left_s[task], self._left_n[task] = self.successes[task], self.trials[task]
            self.recycled[task] += 1
        hit = self.rng.random() * self._left_n[task] < self._left_s[task]
        self._left_n[task] -= 1
        self._left_s[task] -= int(hit)
        return bool(hit)

    def pass_at_k(self, k):
        """The reference: the unbiased Pass@k of all the records."""
        return combinatorial_estimate((self.successes, self.trials), "pass@k", k)


def oracle_population(case: str, n_tasks: int = 100, *, seed=None) -> np.ndarray:
    """Per-task success probabilities of the second paper's synthetic cases.

    ``"uniform"``: uniform on [0, 1]; ``"half_impossible"``: half at 0.3, half
    at 0; ``"hard_outlier"``: one task at 1e-4, the rest uniform in [0.1, 0.3];
    ``"beta_mixture"``: 0.6 Beta(0.3, 3) + 0.4 Beta(4, 2).

    Examples
    --------
    >>> from passmix.scaling import oracle_population
    >>> p = oracle_population("half_impossible", 100)
    >>> float(p.mean())
    0.15
    """
    rng = np.random.default_rng(check_seed(seed))
    if case == "uniform":
        return rng.uniform(0.0, 1.0, n_tasks)
    if case == "half_impossible":
        half = n_tasks // 2
        return np.r_[np.full(n_tasks - half, 0.3), np.zeros(half)]
    if case == "hard_outlier":
        return np.r_[1e-4, rng.uniform(0.1, 0.3, n_tasks - 1)]
    if case == "beta_mixture":
        first = rng.random(n_tasks) < 0.6
        return np.where(first, rng.beta(0.3, 3.0, n_tasks), rng.beta(4.0, 2.0, n_tasks))
    raise ValueError(f"unknown case {case!r}; expected one of uniform, half_impossible, "
                     f"hard_outlier, beta_mixture.")


def spend(system, sampler, budget: int, *, batch_size: int = 1) -> None:
    """Spend `budget` attempts on `system` as `sampler` picks them (no fitting, no stopping)."""
    left = int(budget)
    while left > 0:
        n = min(batch_size, left)
        tasks = sampler.next_tasks(n)
        sampler.update(tasks, np.fromiter((system(int(t)) for t in tasks), dtype=bool,
                                          count=tasks.size))
        left -= n
