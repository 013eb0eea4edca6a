"""The repeated-trial protocol's data: all recorded trials per group, and the nested
random subsets of the first ``m`` trials (hypergeometric draws of counts, or
permutations of 0/1 matrices)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data.counts import Counts
from ..data.read import read_trials
from ._harness import positive_int

__all__ = ["GroupData", "load_repeated", "nested_subsets"]


GroupData = Counts | np.ndarray


def _matrix_iv(matrix: Any, name: str) -> np.ndarray:
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: a 0/1 matrix must be 2-d (tasks x trials) and non-empty, "
                         f"got shape {arr.shape}.")
    bad = ~np.isnan(arr) & (arr != 0.0) & (arr != 1.0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{name}: matrix value {arr[i, j]!r} in row {i}, column {j} must be "
                         f"0, 1 or NaN (not run).")
    return arr


def _full_counts(data: GroupData) -> Counts:
    if isinstance(data, Counts):
        return data
    run = ~np.isnan(data)
    return Counts(np.where(run, data, 0.0).sum(axis=1).astype(np.int64),
                  run.sum(axis=1).astype(np.int64))


def nested_subsets(data: GroupData, m: Sequence[int], rng: Any) -> dict[int, Counts]:
    """Counts of the first ``m`` trials of each task after a random reordering.

    Parameters
    ----------
    data : Counts or ndarray
        All recorded trials of one group: per-task counts, or a tasks x trials
        matrix of 0/1 outcomes (NaN for an attempt that was not run).
    m : sequence of int
        Budgets; a task with fewer trials keeps all of them.
    rng : numpy.random.Generator or seed
        Source of the reordering.

    Returns
    -------
    dict of int to Counts
        One :class:`~passmix.Counts` per budget; the subsets are nested (the
        trials kept at a smaller ``m`` are among those kept at a larger one).

    Notes
    -----
    A matrix is reordered by sorting each row by uniform keys
    ``rng.random(matrix.shape)`` (missing attempts last). Counts are
    reordered without listing the trials: the ``t``-th kept trial of a task
    with ``s`` successes among ``r`` trials not yet kept is a success when
    ``u < s / r``, with ``u`` from ``rng.random((max(m), J))``. Both give the
    successes of the first ``m`` trials of a uniformly random permutation
    (hypergeometric), and in both the subset at a given ``m`` does not depend
    on the other budgets.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix import Counts
    >>> from passmix.experiments import nested_subsets
    >>> full = Counts([500, 0, 9_990], [10_000, 10_000, 10_000])
    >>> subsets = nested_subsets(full, [5, 10], rng=0)
    >>> subsets[10].trials
    array([10, 10, 10])
    >>> bool(np.all(subsets[5].successes <= subsets[10].successes))
    True
    >>> matrix = np.array([[1, 0, 1, 1], [0, 0, 0, np.nan]])
    >>> nested_subsets(matrix, [2, 4], rng=0)[4].to_frame()
       task  successes  trials
    0     0          3       4
    1     1          0       3
    """
    budgets = sorted({positive_int(v, "m") for v in m})
    gen = np.random.default_rng(rng)
    if isinstance(data, Counts):
        return _subsets_from_counts(data, budgets, gen)
    matrix = _matrix_iv(data, "data")
    keys = gen.random(matrix.shape)
    keys[np.isnan(matrix)] = 2.0  # attempts not run go last
    order = np.argsort(keys, axis=1, kind="stable")
    shuffled = np.take_along_axis(matrix, order, axis=1)
    out = {}
    for budget in budgets:
        head = shuffled[:, :budget]
        run = ~np.isnan(head)
        out[budget] = Counts(np.where(run, head, 0.0).sum(axis=1).astype(np.int64),
                             run.sum(axis=1).astype(np.int64))
    return out


def _subsets_from_counts(counts: Counts, budgets: list[int], gen: np.random.Generator
                         ) -> dict[int, Counts]:
    y, trials = counts.successes, counts.trials
    uniforms = gen.random((budgets[-1], y.size))
    left_s = y.astype(np.float64)
    left_t = trials.astype(np.float64)
    kept_s = np.zeros(y.size, dtype=np.int64)
    out = {}
    wanted = set(budgets)
    for step in range(1, budgets[-1] + 1):
        active = left_t > 0
        success = active & (uniforms[step - 1] * np.where(active, left_t, 1.0) < left_s)
        kept_s += success
        left_s -= success
        left_t -= active
        if step in wanted:
            out[step] = Counts(kept_s.copy(), np.minimum(trials, step), counts.tasks)
    return out


def load_repeated(
    source: pd.DataFrame | str | os.PathLike,
    *,
    group_by: Hashable | Sequence[Hashable] | None = None,
    layout: str = "auto",
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    with_tasks: bool = False,
) -> dict[tuple, Any]:
    """Read repeated-trial data per group, keeping single trials where they exist.

    :func:`passmix.read_trials` with the result always a dict (``()`` as the
    key without `group_by`): per group a :class:`~passmix.Counts` for a table
    of counts, or a tasks x trials float matrix of 0/1 outcomes (NaN: not run)
    for one row per attempt or one column per attempt, so the protocol can
    permute the recorded trials. With ``with_tasks=True`` each value is a
    pair ``(data, task labels)`` (a matrix's rows carry no labels, and a joint
    estimator matches tasks across groups by them).

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.experiments import load_repeated
    >>> long = pd.DataFrame({"model": ["a"] * 4, "task_id": [0, 0, 1, 1],
    ...                      "trial": [0, 1, 0, 1], "reward": [1.0, 0.0, 0.0, 0.0]})
    >>> load_repeated(long, group_by="model")[("a",)]
    array([[1., 0.],
           [0., 0.]])
    """
    out = read_trials(source, layout=layout, group_by=group_by, task=task,
                      successes=successes, trials=trials, outcome=outcome,
                      with_tasks=with_tasks)
    return out if isinstance(out, dict) else {(): out}

