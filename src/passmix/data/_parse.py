"""Parsing shared by :class:`~passmix.data.Counts` and the table readers.

Column aliases, row and line naming for messages, validation of counts, 0/1
outcomes, and the builders that turn a validated table into ``(successes,
trials, tasks)`` arrays.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import numbers
import re
import warnings
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


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


#: a number in a label, with an optional size suffix (70M, 2.8B) not followed by a letter
_LABEL_NUMBER = re.compile(r"(\d+(?:\.\d+)?)([kKmMbBtT](?![A-Za-z]))?")
_SIZE = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def natural_key(value: Any) -> tuple:
    """A sort key that orders labels as people read them.

    In a string, each number counts by its value, times a size suffix (K,
    M, B, T) right after it: ``"Pythia 70M" < "Pythia 1B" < "Pythia 12B"``,
    where a plain string sort puts ``"Pythia 12B"`` first. Other text
    compares case-insensitively, ties by the string itself. Numbers come
    before strings; a tuple (a key of several columns) compares part by part.

    Examples
    --------
    >>> from passmix.data._parse import natural_key
    >>> sorted(["Pythia 12B", "Pythia 160M", "Pythia 1B", "Pythia 70M"], key=natural_key)
    ['Pythia 70M', 'Pythia 160M', 'Pythia 1B', 'Pythia 12B']
    >>> sorted(["run 10", "run 9", "gpt-4o"], key=natural_key)
    ['gpt-4o', 'run 9', 'run 10']
    """
    if isinstance(value, tuple):
        return (2, tuple(natural_key(part) for part in value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (0, float(value), "")
    text = str(value)
    pieces = _LABEL_NUMBER.split(text)  # text, number, suffix, text, number, suffix, ...
    parts: list = []
    for n in range(0, len(pieces), 3):
        parts.append(pieces[n].casefold())
        if n + 1 < len(pieces):
            parts.append(float(pieces[n + 1]) * _SIZE.get((pieces[n + 2] or "").lower(), 1.0))
    return (1, tuple(parts), text)


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
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    return y, m, labels


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
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    return y, m, labels


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
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of a table of attempts; `values`, if given, are its checked outcomes."""
    if values is None:
        values = _long_values(df, task, outcome, where, threshold)
    codes, uniques = pd.factorize(df[task], sort=False, use_na_sentinel=True)
    run = ~np.isnan(values)
    n = len(uniques)
    y = np.bincount(codes, weights=np.where(run, values, 0.0), minlength=n)
    m = np.bincount(codes, weights=run.astype(np.float64), minlength=n)
    labels = np.array(uniques.to_numpy() if hasattr(uniques, "to_numpy") else uniques)
    return np.rint(y).astype(np.int64), np.rint(m).astype(np.int64), labels


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


