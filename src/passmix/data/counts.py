"""Per-task success counts and readers for evaluation tables.

A :class:`Counts` holds, for each task *j*, the number of successes ``y_j``
out of ``m_j`` trials of a stochastic system. :func:`read_counts` builds one
(or one per group) from a DataFrame or a CSV, JSON Lines or Parquet file in
any of three layouts: one row per task (*counts*), one row per attempt
(*long*) or one row per task with one 0/1 column per attempt (*matrix*).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import lzma
import numbers
import os
import re
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_seed

__all__ = ["Counts", "LayoutSpec", "as_counts", "as_group_columns", "detect_layout", "read_counts",
           "read_trials"]

#: Column names (case-insensitive) recognised by :func:`read_counts`.
TASK_ALIASES = (
    "task", "task_id", "problem", "problem_id", "question", "question_id",
    "instance", "item", "id", "prompt",
)
SUCCESSES_ALIASES = ("successes", "y", "correct", "n_correct", "passed", "num_correct")
TRIALS_ALIASES = (
    "trials", "m", "attempts", "n", "samples", "num_samples", "questions", "n_trials",
)
OUTCOME_ALIASES = (
    "outcome", "reward", "success", "correct", "passed", "result", "score", "is_correct",
)
LAYOUTS = ("auto", "counts", "long", "matrix")
#: Column names (case-insensitive) that name a system or setting: a long table with
#: one of them holding several values is several systems (see :func:`read_counts`).
SYSTEM_ALIASES = (
    "model", "model_name", "model_id", "system", "checkpoint", "ckpt", "prompt",
    "prompt_id", "template", "agent", "policy", "config", "configuration", "variant",
    "setting", "engine", "solver", "temperature",
)
#: Column names that number the attempts of a task; they never split it into systems.
ATTEMPT_ALIASES = (
    "attempt", "attempt_id", "trial", "trial_id", "epoch", "sample", "sample_id", "seed",
    "run", "run_id", "repeat", "rep", "repetition", "iteration", "try", "index", "idx", "k",
)
#: More values than this in a column are not taken for systems.
_MAX_SYSTEMS = 100

_LINE_READERS = {".csv": ",", ".tsv": "\t"}
_JSONL = (".jsonl", ".ndjson")
_PARQUET = (".parquet", ".pq")
_COMPRESSIONS = (".gz", ".bz2", ".xz", ".zip", ".zst")
_SUPPORTED = (".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet", ".pq")

_Where = Callable[[int], str]


# --------------------------------------------------------------------------
# formatting helpers
# --------------------------------------------------------------------------


def _py(value: Any) -> Any:
    """Convert a numpy scalar to the Python scalar it holds."""
    return value.item() if isinstance(value, np.generic) else value


def _fmt(value: Any) -> str:
    """Show a value or label in an error message."""
    return repr(_py(value))


def _row_where(pos: int) -> str:
    return f"row {pos}"


def _with_tasks(where: _Where, tasks: np.ndarray | None) -> _Where:
    """Append ``(task 'x')`` to the row description when labels are known."""
    if tasks is None:
        return where
    return lambda pos: f"{where(pos)} (task {_fmt(tasks[pos])})"


def _subset_where(where: _Where, positions: np.ndarray) -> _Where:
    """Describe local positions of a subset by the rows of the full table."""
    return lambda pos: where(int(positions[pos]))


def _frame_where(index: pd.Index, file: str | None, style: str,
                 path: Path | None = None) -> _Where:
    """Describe a row of a table read from a DataFrame or a file.

    Rows of a CSV, TSV or JSON Lines file are named by their line in `path`
    (line 1 is a CSV's header), found on the first error only.
    """
    if style in ("csv", "lines"):
        first = 2 if style == "csv" else 1  # without blank lines or line breaks in cells
        found: list = []

        def where(pos: int) -> str:
            if not found:
                found.append(_record_lines(path, style) if path is not None else None)
            lines = found[0]
            line = lines[pos] if lines is not None and pos < len(lines) else pos + first
            return f"line {line} of {file}"

        return where
    if style == "file":
        return lambda pos: f"row {pos} of {file}"
    return lambda pos: f"row {_fmt(index[pos])}"


def _record_lines(path: Path, style: str) -> list[int] | None:
    """The line of `path` where each data row starts, or None where it cannot tell.

    pandas skips blank lines, and a quoted CSV cell may hold line breaks, so
    a row's position is not its line. None for a compression read here
    without the standard library (the caller then counts one line per row).
    """
    opener = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        _compression(path))
    if opener is None:
        return None
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            if style == "lines":
                return [i for i, line in enumerate(fh, 1) if line.strip()]
            reader = csv.reader(fh, delimiter=_LINE_READERS[_extension(path)])
            starts, line = [], 1
            for record in reader:
                if record and not (len(record) == 1 and not record[0].strip()):
                    starts.append(line)
                line = reader.line_num + 1
            return starts[1:]  # the first record is the header
    except (OSError, ValueError, EOFError, KeyError, csv.Error):
        return None


def _compression(path: Path) -> str:
    """The compression suffix of `path` ("" for none)."""
    suffixes = [s.lower() for s in path.suffixes]
    return suffixes[-1] if len(suffixes) >= 2 and suffixes[-1] in _COMPRESSIONS else ""


def _extension(path: Path) -> str:
    """The file type suffix of `path`, under any compression suffix ("" for none)."""
    suffixes = [s.lower() for s in path.suffixes]
    if _compression(path):
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


# --------------------------------------------------------------------------
# validation of counts
# --------------------------------------------------------------------------


def _numeric_1d(values: Any, name: str, where: _Where = _row_where) -> np.ndarray:
    """Return `values` as a new 1-d int64 or float64 array, or raise TypeError."""
    if isinstance(values, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        dtype = values.dtype
        if pd.api.types.is_bool_dtype(dtype):
            raise TypeError(f"{name} must hold counts (whole numbers), got booleans.")
        if pd.api.types.is_integer_dtype(dtype) and not isinstance(
            dtype, pd.api.extensions.ExtensionDtype
        ):
            return np.array(values, dtype=np.int64)
        if pd.api.types.is_numeric_dtype(dtype):
            return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan)).copy()
        values = np.asarray(values, dtype=object)
    arr = np.array(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got an array of shape {arr.shape}.")
    kind = arr.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must hold counts (whole numbers), got booleans.")
    if kind == "i":
        return arr.astype(np.int64)
    if kind == "u":
        if arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{name} has a value too large for int64.")
        return arr.astype(np.int64)
    if kind == "f":
        return arr.astype(np.float64)
    if kind == "O":
        inferred = pd.api.types.infer_dtype(arr, skipna=True)
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal", "empty"):
            return arr.astype(np.float64)
        # error path: the culprit. A column read from a text file holds strings
        # when any value is not a number, so a string that reads as one is not it.
        bad = [pos for pos, value in enumerate(arr)
               if isinstance(value, (bool, np.bool_))
               or not (value is None or isinstance(value, numbers.Real))]
        culprits = [pos for pos in bad if not _numeric_text(arr[pos])] or bad
        if culprits:
            pos = culprits[0]
            raise TypeError(f"{name} must be numeric; got {_fmt(arr[pos])} in {where(pos)}.")
    raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}.")


def _numeric_text(value: Any) -> bool:
    """Whether `value` is a string that reads as a number (as CSV cells do)."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _whole(arr: np.ndarray, name: str, where: _Where) -> np.ndarray:
    """Check that `arr` holds finite, whole, non-negative numbers; return int64."""
    if arr.dtype.kind == "f":
        nan = np.isnan(arr)
        if nan.any():
            pos = int(np.argmax(nan))
            raise ValueError(f"{name} has a missing value (NaN) in {where(pos)}.")
        inf = np.isinf(arr)
        if inf.any():
            pos = int(np.argmax(inf))
            raise ValueError(
                f"{name} has an infinite value ({_fmt(arr[pos])}) in {where(pos)}."
            )
        frac = arr != np.floor(arr)
        if frac.any():
            pos = int(np.argmax(frac))
            raise ValueError(
                f"{name} must be whole numbers; got {_fmt(arr[pos])} in {where(pos)}."
            )
        if (arr >= 2.0**63).any():
            pos = int(np.argmax(arr >= 2.0**63))
            raise ValueError(f"{name} value {_fmt(arr[pos])} in {where(pos)} is too large.")
    neg = arr < 0
    if neg.any():
        pos = int(np.argmax(neg))
        raise ValueError(
            f"{name} must be non-negative; got {_fmt(arr[pos])} in {where(pos)}."
        )
    return arr.astype(np.int64)


def _labels(tasks: Any, n: int, where: _Where | None = None) -> np.ndarray:
    """Return task labels as a new 1-d array of length `n`; `where` names a row."""
    if tasks is None:
        return np.arange(n, dtype=np.int64)
    if isinstance(tasks, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        labels = np.array(tasks.to_numpy(), copy=True)
    else:
        labels = np.array(tasks, copy=True)
        if not isinstance(tasks, np.ndarray) and labels.dtype.kind == "U":
            # numpy turns a missing label among strings into the string 'nan'
            raw = np.array(tasks, dtype=object)
            if raw.ndim == 1 and np.asarray(pd.isna(raw), dtype=bool).any():
                labels = raw
    if labels.ndim != 1:
        raise ValueError(f"tasks must be 1-d, got an array of shape {labels.shape}.")
    if len(labels) != n:
        raise ValueError(
            f"tasks has {len(labels)} labels but there are {n} tasks (successes/trials)."
        )
    missing = np.asarray(pd.isna(labels), dtype=bool)
    if missing.any():
        pos = int(np.argmax(missing))
        at = where(pos) if where is not None else f"label {pos} (counting from 0)"
        raise ValueError(
            f"task labels must not be missing; {at} is {_fmt(labels[pos])}."
        )
    return labels


def _first_duplicate(labels: np.ndarray) -> tuple[int, int] | None:
    """Position of the first repeated label and how often it appears, or None."""
    index = pd.Index(labels)
    if index.is_unique:
        return None
    dup = index.duplicated(keep=False)
    pos = int(np.argmax(dup))
    return pos, int((index == index[pos]).sum())


def _validated(
    successes: Any,
    trials: Any,
    tasks: Any,
    *,
    names: tuple[str, str] = ("successes", "trials"),
    where: _Where = _row_where,
    label_rows: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate counts and labels; return new int64 y, m and a label array.

    `where` describes a row position; `label_rows` adds the task label to it.
    """
    yname, mname = names
    y = _numeric_1d(successes, yname, where)
    m = _numeric_1d(trials, mname, where)
    if len(y) != len(m):
        raise ValueError(
            f"{yname} and {mname} must have the same length, got {len(y)} and {len(m)}."
        )
    if len(y) == 0:
        raise ValueError("no tasks: successes and trials are empty.")
    labels = _labels(tasks, len(y), where if label_rows and tasks is not None else None)
    where = _with_tasks(where, labels if (label_rows and tasks is not None) else None)
    y = _whole(y, yname, where)
    m = _whole(m, mname, where)
    over = y > m
    if over.any():
        pos = int(np.argmax(over))
        raise ValueError(
            f"{yname} ({y[pos]}) exceeds {mname} ({m[pos]}) in {where(pos)}."
        )
    return y, m, labels


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


# --------------------------------------------------------------------------
# 0/1 outcomes
# --------------------------------------------------------------------------

_BINARY_MSG = "must be 0, 1, True, False or NaN (not run)"
_SCORE_MSG = "must be numbers (scores compared with the threshold) or NaN (not run)"
# cell text a CSV reader leaves as a string when another cell of the column is no number
_BOOLEAN_TEXT = ("true", "false")


def _outcome_rule(value: Any, threshold: float | None) -> str:
    """What an outcome must be, and for a partial score how to count it."""
    if threshold is not None:
        return _SCORE_MSG
    value = _py(value)
    partial = (isinstance(value, numbers.Real) and not isinstance(value, bool)) or (
        _numeric_text(value))
    hint = ("; for partial scores pass threshold= (--threshold on the command line) to "
            "count a score >= threshold as a success") if partial else ""
    return _BINARY_MSG + hint


def _real_or_bool(dtype: Any) -> bool:
    """Whether a column's values convert to float without losing anything (not complex)."""
    return pd.api.types.is_bool_dtype(dtype) or (
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
    )


def _binary_column(col: pd.Series, threshold: float | None = None
                   ) -> tuple[np.ndarray, int | None]:
    """Return a column as float (0, 1 or NaN) and the position of a bad value.

    With `threshold` every number is a score, a success where ``>= threshold``.
    """
    dtype = col.dtype
    if _real_or_bool(dtype):
        values = np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan))
    else:
        inferred = pd.api.types.infer_dtype(col, skipna=True)
        if inferred in ("boolean", "integer", "floating", "mixed-integer-float", "empty"):
            values = np.asarray(
                pd.to_numeric(col.astype(object)).to_numpy(
                    dtype=np.float64, na_value=np.nan
                )
            )
        else:  # strings or other objects: the first that is not an outcome is the culprit
            missing = np.asarray(col.isna())
            valid = _binary_value if threshold is None else _score_value
            bad = [int(pos) for pos in np.flatnonzero(~missing) if not valid(col.iloc[pos])]
            # a column read from a text file holds strings when any value is not a
            # number, so '0', '1' or 'True' there are not the culprit
            text = _binary_text if threshold is None else _score_text
            culprits = [pos for pos in bad if not text(col.iloc[pos])] or bad
            if culprits:
                return np.full(len(col), np.nan), culprits[0]
            values = np.asarray(
                pd.to_numeric(col.astype(object)).to_numpy(
                    dtype=np.float64, na_value=np.nan
                )
            )
    if threshold is not None:
        run = ~np.isnan(values)
        return np.where(run, values >= threshold, np.nan), None
    bad = ~np.isnan(values) & (values != 0.0) & (values != 1.0)
    return values, (int(np.argmax(bad)) if bad.any() else None)


def _binary_value(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_)) or (
        isinstance(value, numbers.Real) and value in (0, 1)
    )


def _score_value(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_, numbers.Real))


def _binary_text(value: Any) -> bool:
    """Whether `value` is a string that reads as 0, 1, True or False (as CSV cells do)."""
    return (_numeric_text(value) and float(value) in (0.0, 1.0)) or (
        isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT)


def _score_text(value: Any) -> bool:
    """Whether `value` is a string that reads as a number or a boolean (as CSV cells do)."""
    return _numeric_text(value) or (
        isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT)


def _binary_frame(frame: pd.DataFrame, threshold: float | None = None
                  ) -> tuple[np.ndarray, tuple[int, int] | None]:
    """Return a frame as a float matrix of 0/1/NaN and the (row, col) of a bad value."""
    simple = all(_real_or_bool(d) for d in frame.dtypes)
    if simple:
        values = np.asarray(frame.to_numpy(dtype=np.float64, na_value=np.nan))
        values = values.reshape(frame.shape)
        if threshold is not None:
            return np.where(np.isnan(values), np.nan, values >= threshold), None
        bad = ~np.isnan(values) & (values != 0.0) & (values != 1.0)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            return values, (int(i), int(j))
        return values, None
    columns = []
    first_bad: tuple[int, int] | None = None
    for j in range(frame.shape[1]):  # loop over columns, not rows
        values, pos = _binary_column(frame.iloc[:, j], threshold)
        columns.append(values)
        if pos is not None and (first_bad is None or pos < first_bad[0]):
            first_bad = (pos, j)
    return np.column_stack(columns) if columns else np.empty(frame.shape), first_bad


def _is_binary(frame: pd.DataFrame, threshold: float | None = None) -> bool:
    """Whether every column is numeric or boolean with values in {0, 1, NaN}
    (any numbers with a `threshold`)."""
    return frame.shape[1] > 0 and _binary_frame(frame, threshold)[1] is None


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
            raise TypeError(f"m must be an integer >= 1, got {m!r}.")
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
        return _matrix_counts(frame, labels, _row_where, label_rows=label_rows)

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
        return _long_counts(df, task, outcome, _frame_where(df.index, None, "frame"))

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
        return _table_counts(
            df, successes, trials, task, _frame_where(df.index, None, "frame")
        )


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


# --------------------------------------------------------------------------
# builders shared by the classmethods and read_counts
# --------------------------------------------------------------------------


def _require_frame(df: Any) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}.")


def _require_unique_columns(columns: Sequence[Hashable], source: str = "the table") -> None:
    """Raise if a column name repeats: which of them is meant would be a guess."""
    seen: set = set()
    for col in columns:
        if col in seen:
            n = sum(1 for c in columns if c == col)
            raise ValueError(
                f"column {_fmt(col)} appears {n} times in {source}; column names must be "
                f"unique. Rename or drop the extra ones."
            )
        seen.add(col)


def _require_columns(df: pd.DataFrame, named: dict[str, Any]) -> None:
    for role, col in named.items():
        if col is not None and col not in df.columns:
            raise ValueError(
                f"{role} column {_fmt(col)} not found; available columns: "
                f"{[_py(c) for c in df.columns]}."
            )


def _duplicate_error(
    df: pd.DataFrame,
    labels: np.ndarray,
    task: Hashable | None,
    used: Sequence[Hashable],
    group: tuple | None,
) -> ValueError | None:
    """An error naming a repeated task and the columns that may separate groups."""
    dup = _first_duplicate(labels)
    if dup is None:
        return None
    pos, n = dup
    source = f"column {_fmt(task)}" if task is not None else "the index"
    in_group = f" within group {group!r}" if group is not None else ""
    repeated = pd.Index(labels).duplicated(keep=False)
    others = [c for c in df.columns if c not in used]
    varying = []
    if others:
        sub = df.loc[repeated, others]
        counts = sub.groupby(pd.Index(labels)[repeated], dropna=False).nunique(dropna=False)
        varying = [c for c in others if (counts[c] > 1).any()]
    text = [c for c in varying if not pd.api.types.is_numeric_dtype(df[c].dtype)]
    candidates = text or varying or [
        c for c in others if not pd.api.types.is_numeric_dtype(df[c].dtype)
    ]
    hint = (
        f"pass group_by={[_py(c) for c in candidates]!r} to read_counts to get one "
        "Counts per group"
        if candidates
        else "pass group_by=<columns identifying each system> to read_counts"
    )
    if candidates and task is not None:
        keys = [df[c] for c in candidates] + [pd.Series(labels, index=df.index)]
        if (df.groupby(keys, dropna=False).size() > 1).any():
            hint += (
                f" (even then task labels repeat: if column {_fmt(task)} is not the "
                f"one naming instances, pass task=<instance column> and add "
                f"{_fmt(task)} to group_by)"
            )
    return ValueError(
        f"task {_fmt(labels[pos])} appears {n} times in {source}{in_group}, but a "
        f"table of counts needs one row per task. It seems to hold several systems "
        f"or settings: {hint}, or select one of them first."
    )


def _table_counts(
    df: pd.DataFrame,
    successes: Hashable,
    trials: Hashable,
    task: Hashable | None,
    where: _Where,
    *,
    used: Sequence[Hashable] = (),
    group: tuple | None = None,
) -> Counts:
    labels = df[task] if task is not None else df.index
    y, m, labels = _validated(
        df[successes],
        df[trials],
        labels,
        names=(f"column {_fmt(successes)}", f"column {_fmt(trials)}"),
        where=where,
        label_rows=task is not None,
    )
    err = _duplicate_error(df, labels, task, [*used, successes, trials, task], group)
    if err is not None:
        raise err
    return Counts._trusted(y, m, labels)


def _matrix_counts(
    frame: pd.DataFrame,
    tasks: Any,
    where: _Where,
    *,
    label_rows: bool = True,
    task_col: Hashable | None = None,
    context: pd.DataFrame | None = None,
    used: Sequence[Hashable] = (),
    group: tuple | None = None,
    threshold: float | None = None,
    values: np.ndarray | None = None,
) -> Counts:
    """Counts of a tasks x attempts frame; `values`, if given, are its checked outcomes."""
    labels = _labels(tasks, frame.shape[0], where if label_rows else None)
    if values is None:
        values = _matrix_values(frame, _with_tasks(where, labels if label_rows else None),
                                threshold)
    run = ~np.isnan(values)
    y = np.where(run, values, 0.0).sum(axis=1).astype(np.int64)
    m = run.sum(axis=1).astype(np.int64)
    if context is None:
        dup = _first_duplicate(labels)
        if dup is not None:
            pos, n = dup
            raise ValueError(
                f"task labels must be unique; task {_fmt(labels[pos])} appears {n} times."
            )
    else:
        err = _duplicate_error(
            context, labels, task_col, [*used, *frame.columns, task_col], group
        )
        if err is not None:
            raise err
    return Counts._trusted(y, m, labels)


def _matrix_values(frame: pd.DataFrame, where: _Where, threshold: float | None
                   ) -> np.ndarray:
    """A frame's outcomes as a float matrix of 0/1/NaN, or an error naming the first bad one."""
    values, bad = _binary_frame(frame, threshold)
    if bad is not None:
        i, j = bad
        raise ValueError(
            f"matrix value {_fmt(frame.iat[i, j])} in {where(i)}, column "
            f"{_fmt(frame.columns[j])} {_outcome_rule(frame.iat[i, j], threshold)}."
        )
    return values


def _long_counts(
    df: pd.DataFrame, task: Hashable, outcome: Hashable, where: _Where, *,
    threshold: float | None = None, values: np.ndarray | None = None,
) -> Counts:
    """Counts of a table of attempts; `values`, if given, are its checked outcomes."""
    if values is None:
        values = _long_values(df, task, outcome, where, threshold)
    codes, uniques = pd.factorize(df[task], sort=False, use_na_sentinel=True)
    run = ~np.isnan(values)
    n = len(uniques)
    y = np.bincount(codes, weights=np.where(run, values, 0.0), minlength=n)
    m = np.bincount(codes, weights=run.astype(np.float64), minlength=n)
    labels = np.array(uniques.to_numpy() if hasattr(uniques, "to_numpy") else uniques)
    return Counts._trusted(
        np.rint(y).astype(np.int64), np.rint(m).astype(np.int64), labels
    )


def _long_values(df: pd.DataFrame, task: Hashable, outcome: Hashable, where: _Where,
                 threshold: float | None) -> np.ndarray:
    """A table of attempts' outcomes as floats 0/1/NaN, or an error naming the first bad
    task label or outcome."""
    missing = np.asarray(df[task].isna())
    if missing.any():
        pos = int(np.argmax(missing))
        raise ValueError(f"column {_fmt(task)} has a missing task label in {where(pos)}.")
    values, bad = _binary_column(df[outcome], threshold)
    if bad is not None:
        value = df[outcome].iloc[bad]
        raise ValueError(
            f"column {_fmt(outcome)} has value {_fmt(value)} in {where(bad)} (task "
            f"{_fmt(df[task].iloc[bad])}); outcomes {_outcome_rule(value, threshold)}."
        )
    return values


def _warn_missing_outcomes(values: np.ndarray, where: _Where) -> None:
    """Say which attempts of a table have no outcome: they count as not run."""
    missing = np.flatnonzero(np.isnan(values))
    if missing.size:
        n = missing.size
        warnings.warn(
            f"{n} attempt{'s have' if n > 1 else ' has'} no outcome "
            f"({_where_list(where, missing)}); {'they are' if n > 1 else 'it is'} left "
            "out as not run.", UserWarning, stacklevel=4)


def _where_list(where: _Where, positions: np.ndarray, limit: int = 5) -> str:
    """Several rows named at once: ``lines 4, 9, 12 ... of 'x.csv'``."""
    shown = [where(int(pos)) for pos in positions[:limit]]
    more = " ..." if len(positions) > limit else ""
    parts = [re.fullmatch(r"(line|row) (\S+)( of .+)?", text) for text in shown]
    if all(parts) and len({(p.group(1), p.group(3)) for p in parts}) == 1:
        kind, suffix = parts[0].group(1), parts[0].group(3) or ""
        plural = "s" if len(positions) > 1 else ""
        return f"{kind}{plural} {', '.join(p.group(2) for p in parts)}{more}{suffix}"
    return "; ".join(shown) + more


# --------------------------------------------------------------------------
# read_counts
# --------------------------------------------------------------------------


def read_data_file(path: Path) -> tuple[pd.DataFrame, str]:
    """Read a supported file; return the frame and the row-numbering style.

    Any failure to parse names the file. A CSV or TSV header with a repeated
    column name is refused (pandas would rename the copy ``name.1``, which
    detection would then silently ignore).
    """
    if not path.exists():
        raise FileNotFoundError(f"no such file: '{path}'.")
    if path.is_dir():
        raise ValueError(f"'{path}' is a folder, and holds no harness logs passmix can tell "
                         "(inspect .eval/.json, EvalPlus eval_results.json, tau-bench "
                         "results, lm-eval samples_*.jsonl); pass a file.")
    ext = _extension(path)
    if ext not in _SUPPORTED:
        raise ValueError(
            f"unknown file extension {ext or path.name!r} of '{path}'; supported: "
            f"{', '.join(_SUPPORTED)} (optionally compressed), or pass a DataFrame."
        )
    try:
        if ext in _LINE_READERS:
            sep = _LINE_READERS[ext]
            header = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str)
            frame, style = pd.read_csv(path, sep=sep), "csv"
        elif ext in _JSONL:
            frame, style = _read_json(path, lines=True), "lines"
        elif ext == ".json":
            try:  # a JSON document (records, columns, ...) or else JSON Lines
                frame, style = _read_json(path, lines=False), "file"
            except ValueError:
                frame, style = _read_json(path, lines=True), "lines"
        else:
            frame, style = pd.read_parquet(path), "file"
    except pd.errors.EmptyDataError:
        raise ValueError(f"no rows: '{path}' is empty.") from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"cannot read '{path}': it is not UTF-8 text ({err.reason} at byte "
            f"{err.start}); save it as UTF-8."
        ) from None
    except (ValueError, OSError, EOFError, pd.errors.ParserError) as err:
        detail = " ".join(str(err).split()) or type(err).__name__
        if ext in _JSONL or ext == ".json":  # pandas names a byte position; say the line
            detail = _json_problem(path, ext) or detail
        raise ValueError(f"cannot read '{path}' as {ext[1:].upper()}: {detail}") from None
    if ext in _LINE_READERS and len(header):
        _require_unique_columns(list(header.iloc[0]), f"the header of '{path}'")
    return frame, style


def _read_json(path: Path, *, lines: bool) -> pd.DataFrame:
    return pd.read_json(path, lines=lines)


def _json_problem(path: Path, ext: str) -> str | None:
    """Where a JSON (Lines) file stops being JSON, by line and column; None if it is JSON.

    A ``.json`` file that is not one document is read as JSON Lines, as
    :func:`read_data_file` does.
    """
    opener = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        _compression(path))
    if opener is None:
        return None
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ValueError, EOFError):
        return None
    if ext == ".json":
        try:
            json.loads(text)
            return None  # valid JSON: pandas objects to its shape, and says so
        except json.JSONDecodeError as err:
            if err.msg != "Extra data":  # else several documents: JSON Lines
                return f"line {err.lineno}, column {err.colno}: {err.msg}"
    for number, line in enumerate(text.split("\n"), 1):  # JSON Lines: one record a line
        if line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError as err:
                shown = line.strip()
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                return (f"line {number} is not valid JSON ({err.msg} at column "
                        f"{err.colno}): {shown}")
    return None


def _find(columns: Sequence[Hashable], aliases: Sequence[str]) -> Hashable | None:
    """First column matching an alias (case-insensitive), in alias order."""
    lowered: dict[str, Hashable] = {}
    for col in columns:
        if isinstance(col, str):
            lowered.setdefault(col.strip().lower(), col)
    for alias in aliases:
        if alias in lowered:
            return lowered[alias]
    return None


def _layout_error(columns: list, group_cols: list) -> ValueError:
    grouped = f" (grouping by {group_cols})" if group_cols else ""
    return ValueError(
        f"cannot tell the layout of a table with columns {columns}{grouped}. Expected "
        f"a successes column ({', '.join(SUCCESSES_ALIASES)}) and a trials column "
        f"({', '.join(TRIALS_ALIASES)}) for layout='counts'; an outcome column "
        f"({', '.join(OUTCOME_ALIASES)}) for layout='long'; or only 0/1/NaN columns "
        f"besides the task and group columns for layout='matrix'. Pass layout= and "
        f"the column names, e.g. read_counts(source, layout='counts', "
        f"successes='n_pass', trials='n_runs', task='problem'), or group_by= for "
        f"columns that identify systems."
    )


def read_counts(
    source: pd.DataFrame | str | os.PathLike,
    *,
    layout: str = "auto",
    group_by: Hashable | Sequence[Hashable] | None = None,
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    log_format: str | None = "auto",
    log_options: Mapping[str, Any] | None = None,
    threshold: float | None = None,
) -> Counts | dict[tuple, Counts]:
    """Read per-task success counts from a table or a file.

    Parameters
    ----------
    source : DataFrame, str or path
        A DataFrame (not modified), or a ``.csv``, ``.tsv``, ``.jsonl``,
        ``.ndjson``, ``.json`` or ``.parquet`` / ``.pq`` file (text files may
        be compressed, e.g. ``.csv.gz``).
    layout : {"auto", "counts", "long", "matrix"}, default "auto"
        ``"counts"``: one row per task with a successes and a trials column.
        ``"long"``: one row per attempt with a 0/1 outcome column (NaN = not
        run). ``"matrix"``: one row per task and one 0/1/NaN column per
        attempt. ``"auto"`` decides from the column names (case-insensitive):
        *counts* if successes-like (successes, y, correct, n_correct, passed,
        num_correct) and trials-like (trials, m, attempts, n, samples,
        num_samples, questions, n_trials) columns exist; else *long* if an
        outcome-like column exists (outcome, reward, success, correct, passed,
        result, score, is_correct); else *matrix* if all remaining columns
        hold only 0, 1 and NaN.
    log_format : {"auto", "inspect", "evalplus", "tau", "lm-eval", "table"}, default "auto"
        A file (or folder) that is a harness log is read by
        :mod:`passmix.data.readers` into one row per attempt (columns model, ...,
        task, attempt, outcome): ``"auto"`` tells by the suffix and content
        (``.eval``, ``samples_*.jsonl``, a JSON log), a name forces that
        reader, and ``"table"`` (or None) reads the file as a plain table.
    log_options : dict, optional
        The reader's options, e.g. ``{"scorer": "match", "threshold": 0.5}``
        (inspect), ``{"status": "base"}`` (EvalPlus), ``{"metric": ...}``
        (lm-eval).
    group_by : str or list of str, optional
        Columns identifying systems or settings. If given, return one
        :class:`Counts` per group, keyed by tuples of group values (1-tuples
        for a single column) in sorted order.
    task : str, optional
        Task label column. By default the first of task, task_id, problem,
        problem_id, question, question_id, instance, item, id, prompt that is
        not a group column. Without one, the row index labels the tasks
        (required for the long layout).
    successes, trials, outcome : str, optional
        Column names overriding detection; ``successes``/``trials`` imply the
        counts layout, ``outcome`` the long layout.
    threshold : float, optional
        Score partial credit: in the long and matrix layouts any number is a
        score, and a score ``>= threshold`` a success (NaN: not run). A table
        of counts refuses it; a harness log's reader gets it (as
        ``log_options={"threshold": ...}``).

    Returns
    -------
    Counts or dict of tuple to Counts
        A single :class:`Counts`, or one per group if `group_by` is given.

    Raises
    ------
    FileNotFoundError
        If `source` is a path that does not exist.
    ValueError
        For an unknown file extension or layout, a named column that does not
        exist, an undetectable layout, no rows, invalid counts or outcomes
        (the message names column, row, value and task), or a task repeated
        in a counts or matrix table (the message suggests `group_by`).

    Warns
    -----
    UserWarning
        In the long layout: for attempts with no outcome (an empty cell,
        ``NA``, JSON ``null``), which count as not run, naming their lines;
        and for a column besides the task, outcome and group columns whose
        values split the tasks into groups that share them (a ``model``,
        ``system``, ``checkpoint`` or ``prompt`` column, ...), whose attempts
        would be pooled as one system's: the message suggests `group_by`.

    See Also
    --------
    Counts.from_table, Counts.from_long, Counts.from_matrix

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.data import read_counts
    >>> df = pd.DataFrame({"model": ["A", "A", "B", "B"],
    ...                    "problem": ["p1", "p2", "p1", "p2"],
    ...                    "n_correct": [3, 10, 0, 7], "attempts": [10] * 4})
    >>> groups = read_counts(df, group_by="model")
    >>> groups[("A",)]
    Counts(n_tasks=2, n_observed=2, trials=10, mean_success=0.65)
    >>> list(groups)
    [('A',), ('B',)]

    One row per attempt:

    >>> long = pd.DataFrame({"task_id": [0, 0, 1, 1], "reward": [1.0, 0.0, 0.0, 0.0]})
    >>> read_counts(long).successes
    array([1, 0])

    Partial scores, a success from 0.5 on:

    >>> scored = pd.DataFrame({"task": ["a", "a", "b"], "score": [0.75, 0.25, 0.5]})
    >>> read_counts(scored, threshold=0.5).to_frame()
      task  successes  trials
    0    a          1       2
    1    b          1       1
    """
    df, spec, where = _load(source, layout, group_by, task, successes, trials, outcome,
                            log_format, log_options, threshold)
    return _by_group(df, spec, where, _counts_of)


def read_trials(
    source: pd.DataFrame | str | os.PathLike,
    *,
    layout: str = "auto",
    group_by: Hashable | Sequence[Hashable] | None = None,
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    log_format: str | None = "auto",
    log_options: Mapping[str, Any] | None = None,
    with_tasks: bool = False,
    threshold: float | None = None,
) -> Any:
    """Read evaluation results keeping single trials where the source has them.

    The same reading, validation and layout detection as :func:`read_counts`
    (whose arguments it takes), with one difference: a table of one row per
    attempt (*long*) or one 0/1 column per attempt (*matrix*) gives, per
    group, a tasks x attempts float matrix of 0/1 outcomes (NaN: not run) with
    the tasks in :func:`read_counts`' order, so that protocols can reorder the
    recorded attempts. A table of counts gives :class:`Counts`, as
    :func:`read_counts` does.

    With ``with_tasks=True`` each value is a pair ``(data, tasks)``: the task
    labels of the matrix's rows (or of the counts), which a matrix does not
    carry and a model matching tasks across groups needs.

    Returns
    -------
    Counts, ndarray, or dict of tuple to either
        One per group if `group_by` is given (pairs with `with_tasks`).

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.data import read_trials
    >>> long = pd.DataFrame({"model": ["a"] * 4, "task_id": [0, 0, 1, 1],
    ...                      "trial": [0, 1, 0, 1], "reward": [1.0, 0.0, 0.0, 0.0]})
    >>> read_trials(long, group_by="model")[("a",)]
    array([[1., 0.],
           [0., 0.]])
    """
    df, spec, where = _load(source, layout, group_by, task, successes, trials, outcome,
                            log_format, log_options, threshold)
    return _by_group(df, spec, where, _trials_and_tasks if with_tasks else _trials_of)


def as_group_columns(group_by: Hashable | Sequence[Hashable] | None) -> list:
    """`group_by` as a list of columns: None is none, a string or tuple one column.

    Examples
    --------
    >>> from passmix.data import as_group_columns
    >>> as_group_columns("model"), as_group_columns(["model", "benchmark"]), as_group_columns(None)
    (['model'], ['model', 'benchmark'], [])
    """
    if group_by is None:
        return []
    if isinstance(group_by, (str, tuple)) or not pd.api.types.is_list_like(group_by):
        return [group_by]
    return list(group_by)


@dataclass(frozen=True)
class LayoutSpec:
    """A table's layout and the columns playing each role (see :func:`detect_layout`)."""

    kind: str
    group_cols: tuple
    task: Hashable | None
    successes: Hashable | None = None
    trials: Hashable | None = None
    outcome: Hashable | None = None
    outcome_columns: tuple = ()
    #: a score >= threshold is a success (None: outcomes are 0/1)
    threshold: float | None = None


def _load(source, layout, group_by, task, successes, trials, outcome, log_format="auto",
          log_options=None, threshold=None):
    """Read `source` once and detect its layout: ``(frame, spec, where)``."""
    if not isinstance(layout, str) or layout.lower() not in LAYOUTS:
        raise ValueError(
            f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}."
        )
    if threshold is not None:
        from .readers._common import check_threshold

        threshold = check_threshold(threshold)
    path = None
    if isinstance(source, pd.DataFrame):
        df, style, name = source, "frame", None
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():  # before the log options, which would be blamed instead
            raise FileNotFoundError(f"no such file: '{path}'.")
        df = _read_log(path, log_format, log_options, group_by, threshold)
        if df is not None:
            spec = detect_layout(df, layout="long", group_by=group_by, task="task",
                                 outcome="outcome", name=f"'{path.name}'")
            return df, spec, _frame_where(df.index, f"'{path.name}'", "file")
        df, style = read_data_file(path)
        name = f"'{path.name}'"
    else:
        raise TypeError(
            f"source must be a DataFrame or a path to a file, got {type(source).__name__}."
        )
    spec = detect_layout(df, layout=layout.lower(), group_by=group_by, task=task,
                         successes=successes, trials=trials, outcome=outcome, name=name,
                         threshold=threshold)
    if spec.kind == "long":
        _warn_merged(df, spec)
    return df, spec, _frame_where(df.index, name, style, path)


def _merged_columns(df: pd.DataFrame, spec: LayoutSpec) -> list:
    """Columns of a table of attempts whose values look like systems read as one.

    A column besides the task, outcome and group columns splits the tasks
    into groups that share them when some task has attempts under two of its
    values (within the groups already asked for). Its values are taken for
    systems or settings if it is named like one (:data:`SYSTEM_ALIASES`), or
    if attempts also repeat within a (value, task) cell (so it does not
    number them) with outcomes that differ there (so it is not an answer,
    right or wrong as a whole). A column named like an attempt number
    (:data:`ATTEMPT_ALIASES`) or holding fractional numbers is not.
    """
    keys = list(spec.group_cols)
    used = {*keys, spec.task, spec.outcome}
    found = []
    for col in df.columns:
        lowered = col.strip().lower() if isinstance(col, str) else None
        if col in used or lowered in ATTEMPT_ALIASES:
            continue
        column = df[col]
        try:
            n_values = column.nunique(dropna=True)
        except TypeError:  # lists or dicts (JSON cells): no system names
            continue
        if not 2 <= n_values <= _MAX_SYSTEMS:
            continue
        named = lowered in SYSTEM_ALIASES
        if not named and pd.api.types.is_float_dtype(column.dtype) and (
                column.dropna() % 1 != 0).any():
            continue  # a measurement (latency, a score), not a label
        per_task = df.groupby([*keys, spec.task], sort=False, dropna=False)[col].nunique()
        if not (per_task >= 2).any():
            continue  # a property of the task (its category), or one value per group
        if not named:
            cells = df.groupby([*keys, col, spec.task], sort=False)
            if not (cells.size() >= 2).any():
                continue  # one attempt per (value, task): it numbers the attempts
            if not (cells[spec.outcome].nunique() >= 2).any():
                continue  # the outcome follows the value: an answer, graded as a whole
        found.append(col)
    return found


def _warn_merged(df: pd.DataFrame, spec: LayoutSpec) -> None:
    """Warn when a table of attempts seems to hold several systems read as one."""
    found = _merged_columns(df, spec)
    if not found:
        return
    cols = [*spec.group_cols, *found]
    values = df[found[0]].dropna().unique()
    shown = ", ".join(_fmt(v) for v in values[:4]) + (", ..." if len(values) > 4 else "")
    what = (f"column {_fmt(found[0])} has {len(values)} values ({shown})" if len(found) == 1
            else f"columns {', '.join(_fmt(c) for c in found)} hold several values")
    suggest = _fmt(_py(cols[0])) if len(cols) == 1 else repr([_py(c) for c in cols])
    warnings.warn(
        f"{what} that share tasks: they look like different systems or settings, and "
        f"their attempts are pooled into one count per task. Pass group_by={suggest} "
        f"(--group-by {','.join(map(str, cols))}) to keep them apart, or drop the "
        f"column if they are one system.", UserWarning, stacklevel=4)


def _read_log(path: Path, log_format: str | None, log_options: Mapping[str, Any] | None,
              group_by, threshold: float | None = None) -> pd.DataFrame | None:
    """A harness log read into attempts (see :mod:`passmix.data.readers`), or None for a table.

    Group columns of the log that `group_by` leaves out must hold one value,
    or tasks of different evaluations (which may share ids) would merge. A
    `threshold` goes to the log's reader.
    """
    if log_format is None or log_format == "table":
        if log_options:
            raise ValueError("log_options apply to harness logs; log_format is 'table'.")
        return None
    from .readers import detect_log_format, read_log

    fmt = detect_log_format(path) if log_format == "auto" else log_format
    if fmt is None:
        if log_options:
            raise ValueError(f"log_options were given but '{path.name}' is not a harness log "
                             "passmix can tell; pass log_format=.")
        return None
    options = dict(log_options or {})
    if threshold is not None:
        if options.get("threshold", threshold) != threshold:
            raise ValueError(f"threshold={threshold!r} and log_options' threshold "
                             f"{options['threshold']!r} differ; give one.")
        options["threshold"] = threshold
    df = read_log(path, fmt, **options)
    check_log_groups(df, group_by)
    return df


def check_log_groups(df: pd.DataFrame, group_by) -> None:
    """Refuse a log table whose ungrouped log columns hold several values.

    Tasks of different evaluations (models, benchmarks, filters) may share
    ids, so a log column that `group_by` leaves out must be constant.
    """
    used = set(as_group_columns(group_by))
    fmt = df.attrs.get("format", "harness")
    for col in df.columns[: -3]:
        values = df[col].unique()
        if col not in used and len(values) > 1:
            shown = ", ".join(map(str, values[:4])) + (", ..." if len(values) > 4 else "")
            raise ValueError(f"the {fmt} log holds several {col} values ({shown}); add {col} "
                             f"to group_by (--group-by) so their tasks are kept apart.")


def detect_layout(
    df: pd.DataFrame,
    *,
    layout: str = "auto",
    group_by: Hashable | Sequence[Hashable] | None = None,
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    name: str | None = None,
    threshold: float | None = None,
) -> LayoutSpec:
    """Check a table's columns and decide its layout: counts, long or matrix.

    The rules are :func:`read_counts`' (its docstring lists the column
    aliases): named columns decide; otherwise successes-like and trials-like
    columns make a table of counts, an outcome-like column a table of
    attempts, and only 0/1/NaN columns besides the task and group columns a
    matrix (any numbers with a `threshold`, which a table of counts refuses).
    `name` names the source in error messages.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.data import detect_layout
    >>> detect_layout(pd.DataFrame({"problem": ["p"], "n_correct": [1], "attempts": [3]})).kind
    'counts'
    """
    columns = list(df.columns)
    _require_unique_columns(columns, name or "the table")
    shown = [_py(c) for c in columns]

    group_cols = as_group_columns(group_by)
    for col in group_cols:
        if col not in df.columns:
            raise ValueError(
                f"group_by column {_fmt(col)} not found; available columns: {shown}."
            )
    _require_columns(
        df, {"task": task, "successes": successes, "trials": trials, "outcome": outcome}
    )
    named = [c for c in (task, successes, trials, outcome) if c is not None]
    clash = [c for c in named if c in group_cols] + [
        c for c in set(named) if named.count(c) > 1
    ]
    if clash:
        raise ValueError(
            f"column {_fmt(clash[0])} is used for two roles; task, successes, trials, "
            f"outcome and group_by columns must differ."
        )
    if len(df) == 0:
        raise ValueError(f"no rows: the table{' ' + name if name else ''} is empty.")

    free = [c for c in columns if c not in group_cols and c not in named]
    if task is None:
        task = _find(free, TASK_ALIASES)
        free = [c for c in free if c != task]

    # ---- decide the layout
    if successes is not None or trials is not None:
        if layout not in ("auto", "counts"):
            raise ValueError(
                f"successes= and trials= apply to layout='counts', not {layout!r}."
            )
        layout = "counts"
    if outcome is not None:
        if layout not in ("auto", "long"):
            raise ValueError(f"outcome= applies to layout='long', not {layout!r}.")
        layout = "long"

    if layout in ("auto", "counts"):
        y_col = successes if successes is not None else _find(free, SUCCESSES_ALIASES)
        m_col = trials if trials is not None else _find(
            [c for c in free if c != y_col], TRIALS_ALIASES
        )
        if y_col is not None and m_col is not None:
            layout = "counts"
        elif layout == "auto" and y_col is not None and outcome is None \
                and _find(free, OUTCOME_ALIASES) is None:
            # successes without trials: neither counts nor 0/1 outcomes, whatever
            # the values look like (one attempt per task is not what it says)
            raise ValueError(
                f"column {_fmt(y_col)} looks like success counts, but no trials column "
                f"({', '.join(TRIALS_ALIASES)}) was found among columns {shown}; pass "
                f"trials=<column>, or layout='matrix' if the columns are 0/1 outcomes."
            )
        elif layout == "counts":
            missing = "successes" if y_col is None else "trials"
            aliases = SUCCESSES_ALIASES if y_col is None else TRIALS_ALIASES
            raise ValueError(
                f"layout='counts' needs a {missing} column: none of "
                f"{', '.join(aliases)} found among columns {shown}; pass {missing}=."
            )
    if layout in ("auto", "long"):
        o_col = outcome if outcome is not None else _find(free, OUTCOME_ALIASES)
        if o_col is not None:
            layout = "long"
        elif layout == "long":
            raise ValueError(
                f"layout='long' needs an outcome column: none of "
                f"{', '.join(OUTCOME_ALIASES)} found among columns {shown}; pass outcome=."
            )
    if layout == "auto":
        if not _is_binary(df[free], threshold):
            raise _layout_error(shown, [_py(c) for c in group_cols])
        layout = "matrix"
    if layout == "counts" and threshold is not None:
        raise ValueError(
            f"threshold= scores outcomes (one row per attempt, or one column per attempt), "
            f"but {name or 'the table'} holds counts (columns {_fmt(y_col)} and "
            f"{_fmt(m_col)}); leave threshold out, or pass layout= and outcome=.")
    if layout == "long" and task is None:
        raise ValueError(
            f"layout='long' needs a task column: none of {', '.join(TASK_ALIASES)} "
            f"found among columns {shown}; pass task=."
        )
    if layout == "matrix" and not free:
        raise ValueError(
            f"layout='matrix' needs at least one outcome column besides the task and "
            f"group columns; columns are {shown}."
        )

    return LayoutSpec(kind=layout, group_cols=tuple(group_cols), task=task,
                      successes=y_col if layout == "counts" else None,
                      trials=m_col if layout == "counts" else None,
                      outcome=o_col if layout == "long" else None,
                      outcome_columns=tuple(free) if layout == "matrix" else (),
                      threshold=threshold)


def _counts_of(sub: pd.DataFrame, spec: LayoutSpec, where: _Where, group: tuple | None,
               values: np.ndarray | None = None) -> Counts:
    """One group's rows as :class:`Counts`; `values`: their checked outcomes, if known."""
    if spec.kind == "counts":
        return _table_counts(sub, spec.successes, spec.trials, spec.task, where,
                             used=spec.group_cols, group=group)
    if spec.kind == "long":
        return _long_counts(sub, spec.task, spec.outcome, where, threshold=spec.threshold,
                            values=values)
    labels = sub[spec.task] if spec.task is not None else sub.index
    return _matrix_counts(sub[list(spec.outcome_columns)], labels, where,
                          label_rows=spec.task is not None, task_col=spec.task, context=sub,
                          used=spec.group_cols, group=group, threshold=spec.threshold,
                          values=values)


def _trials_of(sub: pd.DataFrame, spec: LayoutSpec, where: _Where, group: tuple | None,
               values: np.ndarray | None = None) -> Counts | np.ndarray:
    """One group's rows with their single attempts: a tasks x attempts matrix."""
    return _trials_and_tasks(sub, spec, where, group, values)[0]


def _trials_and_tasks(sub: pd.DataFrame, spec: LayoutSpec, where: _Where, group: tuple | None,
                      values: np.ndarray | None = None
                      ) -> tuple[Counts | np.ndarray, np.ndarray]:
    """:func:`_trials_of` with the task labels of its rows."""
    if spec.kind != "counts" and values is None:
        values = _outcome_values(sub, spec, where)
    counts = _counts_of(sub, spec, where, group, values)  # validates; fixes the task order
    if spec.kind == "counts":
        return counts, counts.tasks
    if spec.kind == "long":
        codes, _ = pd.factorize(sub[spec.task], sort=False)
        position = sub.groupby(codes).cumcount().to_numpy()
        matrix = np.full((codes.max() + 1, position.max() + 1), np.nan)
        matrix[codes, position] = values
    else:
        matrix = values
    return matrix, counts.tasks


def _outcome_values(df: pd.DataFrame, spec: LayoutSpec, where: _Where) -> np.ndarray:
    """The outcomes of a table of attempts (a column) or of a matrix (its attempt columns)
    as floats 0/1/NaN; the first bad value, in the table's order, is an error."""
    if spec.kind == "long":
        return _long_values(df, spec.task, spec.outcome, where, spec.threshold)
    if spec.task is None:
        where_task = where
    else:
        where_task = _with_tasks(where, _labels(df[spec.task], len(df), where))
    return _matrix_values(df[list(spec.outcome_columns)], where_task, spec.threshold)


def _by_group(df: pd.DataFrame, spec: LayoutSpec, where: _Where, build) -> Any:
    """`build` each group's rows (or the whole table without groups).

    Outcomes are checked on the whole table first, so an error names the
    first bad value in the file, whichever group it falls in.
    """
    values = _outcome_values(df, spec, where) if spec.kind != "counts" else None
    if spec.kind == "long":
        _warn_missing_outcomes(values, where)
    if not spec.group_cols:
        return build(df, spec, where, None, values)
    for col in spec.group_cols:
        missing = np.asarray(df[col].isna())
        if missing.any():
            pos = int(np.argmax(missing))
            raise ValueError(
                f"group_by column {_fmt(col)} has a missing value in {where(pos)}."
            )
    groups = df.groupby(list(spec.group_cols), sort=False).indices  # key -> row positions
    try:
        keys = sorted(groups)
    except TypeError:  # labels of mixed types: keep order of first appearance
        keys = list(groups)
    out: dict[tuple, Any] = {}
    for key in keys:
        positions = np.asarray(groups[key])
        tkey = tuple(_py(k) for k in (key if isinstance(key, tuple) else (key,)))
        out[tkey] = build(df.iloc[positions], spec, _subset_where(where, positions), tkey,
                          None if values is None else values[positions])
    return out
