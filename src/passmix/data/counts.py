"""Per-task success counts and readers for evaluation tables.

A :class:`Counts` holds, for each task *j*, the number of successes ``y_j``
out of ``m_j`` trials of a stochastic system. :func:`read_counts` builds one
(or one per group) from a DataFrame or a CSV, JSON Lines or Parquet file in
any of three layouts: one row per task (*counts*), one row per attempt
(*long*) or one row per task with one 0/1 column per attempt (*matrix*).
"""


from __future__ import annotations

import numbers
from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_seed, shown
from ._parse import (
    _first_duplicate, _fmt, _frame_where, _frozen, _long_counts, _matrix_counts,
    _require_columns, _require_frame, _require_unique_columns, _row_where, _table_counts,
    _validated,
)

__all__ = ["Counts", "as_counts"]


# --------------------------------------------------------------------------
# Counts
# --------------------------------------------------------------------------


class Counts:
    """Per-task success counts: ``y_j`` successes of ``m_j`` trials.

    Parameters
    ----------
    successes, trials : array_like of int
        1-d arrays of equal length with whole, non-negative numbers and
        ``successes <= trials``. Floats with integral values are accepted and
        converted; booleans and non-numeric values are not. A task with
        ``trials == 0`` was not run and carries no information.
    tasks : array_like, optional
        Unique labels, one per task. Defaults to ``0, 1, ..., J - 1``.

    Attributes
    ----------
    successes, trials : ndarray of int64
        Read-only copies of the counts.
    tasks : ndarray
        Read-only copy of the task labels.
    n_tasks : int
        Number of tasks ``J``.
    n_observed : int
        Number of tasks with at least one trial.

    Raises
    ------
    TypeError
        If the counts are not numeric (or are booleans).
    ValueError
        If the data are empty, not 1-d, of different lengths, NaN, infinite,
        negative or fractional, if ``successes > trials`` anywhere, or if
        task labels repeat.

    See Also
    --------
    read_counts : Build counts from a DataFrame or a file.

    Examples
    --------
    >>> from passmix.data import Counts
    >>> c = Counts([3, 0, 10, 3], [10, 10, 10, 10], tasks=["a", "b", "c", "d"])
    >>> c
    Counts(n_tasks=4, n_observed=4, trials=10, mean_success=0.4)
    >>> c.successes
    array([ 3,  0, 10,  3])
    >>> y, m, weight = c.pairs()
    >>> y, m, weight
    (array([ 0,  3, 10]), array([10, 10, 10]), array([1, 2, 1]))
    """

    __slots__ = ("_successes", "_trials", "_tasks")

    def __init__(self, successes: Any, trials: Any, tasks: Any = None) -> None:
        y, m, labels = _validated(successes, trials, tasks)
        dup = _first_duplicate(labels)
        if dup is not None:
            pos, n = dup
            raise ValueError(
                f"task labels must be unique; task {_fmt(labels[pos])} appears {n} times."
            )
        self._set(y, m, labels)

    def _set(self, y: np.ndarray, m: np.ndarray, labels: np.ndarray) -> None:
        self._successes = _frozen(y)
        self._trials = _frozen(m)
        self._tasks = _frozen(labels)

    @classmethod
    def _trusted(cls, y: np.ndarray, m: np.ndarray, labels: np.ndarray) -> Counts:
        """Build from validated arrays that nobody else holds."""
        obj = cls.__new__(cls)
        obj._set(y, m, labels)
        return obj

    def __getstate__(self) -> dict[str, np.ndarray]:
        return {
            "successes": self._successes, "trials": self._trials, "tasks": self._tasks
        }

    def __setstate__(self, state: dict[str, np.ndarray]) -> None:
        self._set(
            np.array(state["successes"]), np.array(state["trials"]), np.array(state["tasks"])
        )

    # ---------------------------------------------------------------- access

    @property
    def successes(self) -> np.ndarray:
        """Successes ``y_j`` per task (read-only int64 array)."""
        return self._successes

    @property
    def trials(self) -> np.ndarray:
        """Trials ``m_j`` per task (read-only int64 array)."""
        return self._trials

    @property
    def tasks(self) -> np.ndarray:
        """Task labels (read-only array)."""
        return self._tasks

    @property
    def n_tasks(self) -> int:
        """Number of tasks ``J``, including tasks with no trials."""
        return int(self._trials.size)

    @property
    def n_observed(self) -> int:
        """Number of tasks with at least one trial."""
        return int(np.count_nonzero(self._trials))

    def __len__(self) -> int:
        return self.n_tasks

    def _summary(self) -> dict[str, str]:
        m = self._trials
        lo, hi = int(m.min()), int(m.max())
        observed = m > 0
        if observed.any():
            rate = float(np.mean(self._successes[observed] / m[observed]))
            mean = f"{rate:.3g}"
        else:
            mean = "nan"
        return {
            "n_tasks": str(self.n_tasks),
            "n_observed": str(self.n_observed),
            "trials": str(lo) if lo == hi else f"{lo}-{hi}",
            "mean_success": mean,
        }

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self._summary().items())
        return f"Counts({fields})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>"
            for k, v in self._summary().items()
        )
        return f"<table><caption>Counts</caption>{rows}</table>"

    # ---------------------------------------------------------------- views

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct ``(y, m)`` pairs among observed tasks and their multiplicity.

        Tasks with ``m_j = 0`` are left out. The likelihood of a mixture
        model depends on the data only through these pairs.

        Returns
        -------
        y, m, weight : ndarray of int64
            Distinct pairs sorted by ``m`` then ``y``, and how many tasks
            have each pair (``weight.sum() == n_observed``).

        Examples
        --------
        >>> from passmix.data import Counts
        >>> Counts([1, 2, 1, 0], [3, 3, 3, 0]).pairs()
        (array([1, 2]), array([3, 3]), array([2, 1]))
        """
        observed = self._trials > 0
        if not observed.any():
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.copy(), empty.copy()
        keys = np.column_stack([self._trials[observed], self._successes[observed]])
        unique, weight = np.unique(keys, axis=0, return_counts=True)
        return (
            unique[:, 1].astype(np.int64),
            unique[:, 0].astype(np.int64),
            weight.astype(np.int64),
        )

    def to_frame(self) -> pd.DataFrame:
        """Return the counts as a DataFrame with columns task, successes, trials.

        Examples
        --------
        >>> from passmix.data import Counts
        >>> Counts([1, 2], [3, 4], tasks=["a", "b"]).to_frame()
          task  successes  trials
        0    a          1       3
        1    b          2       4
        """
        return pd.DataFrame(
            {
                "task": self._tasks.copy(),
                "successes": self._successes.copy(),
                "trials": self._trials.copy(),
            }
        )

    def subsample(self, m: int, rng: np.random.Generator | int | None = None) -> Counts:
        """Keep ``min(m, m_j)`` trials of each task, drawn without replacement.

        The successes kept are a hypergeometric draw: the same as shuffling
        the ``m_j`` recorded attempts of task *j* and keeping the first
        ``min(m, m_j)``. Useful to study how estimates behave at a smaller
        budget.

        Parameters
        ----------
        m : int
            Trials to keep per task, ``m >= 1``.
        rng : numpy.random.Generator or int, optional
            Random generator or seed.

        Returns
        -------
        Counts
            New counts with the same tasks.

        Examples
        --------
        >>> from passmix.data import Counts
        >>> full = Counts([5000, 10, 0], [10000, 10000, 0])
        >>> small = full.subsample(10, rng=0)
        >>> small.trials
        array([10, 10,  0])
        >>> bool((small.successes <= small.trials).all())
        True
        """
        if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral):
            raise TypeError(f"m must be an integer >= 1, got {shown(m)}.")
        if m < 1:
            raise ValueError(f"m must be >= 1, got {m}.")
        gen = np.random.default_rng(check_seed(rng, "rng"))
        y, trials = self._successes, self._trials
        keep = np.minimum(trials, int(m))
        drawn = gen.hypergeometric(y, trials - y, keep).astype(np.int64)
        return Counts._trusted(drawn, keep.astype(np.int64), self._tasks.copy())

    # ---------------------------------------------------------------- builders

    @classmethod
    def from_matrix(cls, matrix: Any, tasks: Any = None) -> Counts:
        """Counts from a tasks x trials matrix of 0/1 outcomes.

        Parameters
        ----------
        matrix : array_like or DataFrame
            One row per task, one column per attempt; entries 0, 1, True,
            False, or NaN for an attempt that was not run. A DataFrame's
            index becomes the task labels.
        tasks : array_like, optional
            Task labels; overrides the DataFrame index.

        Returns
        -------
        Counts
            ``successes`` are the row sums, ``trials`` the non-NaN entries.

        Raises
        ------
        ValueError
            If the matrix is not 2-d, has no rows or holds any other value
            (the message names row, column and value).

        Examples
        --------
        >>> import numpy as np
        >>> from passmix.data import Counts
        >>> Counts.from_matrix([[1, 0, 1], [0, 0, np.nan]]).to_frame()
           task  successes  trials
        0     0          2       3
        1     1          0       2
        """
        if isinstance(matrix, pd.DataFrame):
            _require_unique_columns(list(matrix.columns))
            frame = matrix
            labels = frame.index if tasks is None else tasks
            label_rows = True
        else:
            arr = np.asarray(matrix)
            if arr.ndim != 2:
                raise ValueError(
                    f"matrix must be 2-d (tasks x trials), got shape {arr.shape}."
                )
            frame = pd.DataFrame(arr)
            labels = tasks
            label_rows = tasks is not None
        if frame.shape[0] == 0:
            raise ValueError("no tasks: the matrix has no rows.")
        return cls._trusted(*_matrix_counts(frame, labels, _row_where, label_rows=label_rows))

    @classmethod
    def from_long(
        cls, df: pd.DataFrame, task: Hashable = "task", outcome: Hashable = "outcome"
    ) -> Counts:
        """Counts from a table with one row per attempt.

        Parameters
        ----------
        df : DataFrame
            One row per attempt.
        task : str, default "task"
            Column with the task label. Tasks appear in order of first
            appearance.
        outcome : str, default "outcome"
            Column with 0, 1, True, False (or 0.0 / 1.0); NaN marks an
            attempt that was not run. A task whose outcomes are all NaN is
            kept with zero trials.

        Returns
        -------
        Counts

        Raises
        ------
        ValueError
            If a column is missing, a task label is missing, or an outcome
            is not 0/1/NaN.

        Examples
        --------
        >>> import pandas as pd
        >>> from passmix.data import Counts
        >>> df = pd.DataFrame({"task": ["a", "a", "b", "b"],
        ...                    "outcome": [1.0, 0.0, 1.0, 1.0]})
        >>> Counts.from_long(df).to_frame()
          task  successes  trials
        0    a          1       2
        1    b          2       2
        """
        _require_frame(df)
        _require_unique_columns(list(df.columns))
        _require_columns(df, {"task": task, "outcome": outcome})
        if len(df) == 0:
            raise ValueError("no rows: the table is empty.")
        return cls._trusted(*_long_counts(df, task, outcome,
                                          _frame_where(df.index, None, "frame")))

    @classmethod
    def from_table(
        cls,
        df: pd.DataFrame,
        successes: Hashable = "successes",
        trials: Hashable = "trials",
        task: Hashable | None = None,
    ) -> Counts:
        """Counts from a table with one row per task.

        Parameters
        ----------
        df : DataFrame
            One row per task.
        successes, trials : str
            Columns with the counts.
        task : str, optional
            Column with the task labels; by default the index is used.

        Returns
        -------
        Counts

        Raises
        ------
        ValueError
            If a column is missing, a count is invalid (the message names
            column, row, value and task) or a task appears twice.

        Examples
        --------
        >>> import pandas as pd
        >>> from passmix.data import Counts
        >>> df = pd.DataFrame({"problem": ["p1", "p2"], "successes": [3, 0],
        ...                    "trials": [5, 5]})
        >>> Counts.from_table(df, task="problem")
        Counts(n_tasks=2, n_observed=2, trials=5, mean_success=0.3)
        """
        _require_frame(df)
        _require_unique_columns(list(df.columns))
        _require_columns(
            df, {"successes": successes, "trials": trials, "task": task}
        )
        if len(df) == 0:
            raise ValueError("no rows: the table is empty.")
        return cls._trusted(*_table_counts(
            df, successes, trials, task, _frame_where(df.index, None, "frame")
        ))


def as_counts(counts: Any) -> Counts:
    """Accept a :class:`Counts` or a ``(successes, trials)`` pair.

    Examples
    --------
    >>> from passmix.data import as_counts
    >>> as_counts(([1, 0], [2, 2]))
    Counts(n_tasks=2, n_observed=2, trials=2, mean_success=0.25)
    """
    if isinstance(counts, Counts):
        return counts
    if isinstance(counts, tuple) and len(counts) == 2:
        return Counts(*counts)
    raise TypeError(
        "counts must be a passmix.Counts or a (successes, trials) tuple, "
        f"got {type(counts).__name__}; see passmix.read_counts for tables and files."
    )


