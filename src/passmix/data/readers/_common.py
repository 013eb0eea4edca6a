"""What every log reader shares: the attempt table, score mapping, errors."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from ..._validation import shown

__all__ = ["ATTEMPT_COLUMNS", "LogFormatError", "attempt_table", "check_threshold", "load_json",
           "to_outcome"]

#: The columns after the group columns of every reader's table.
ATTEMPT_COLUMNS = ("task", "attempt", "outcome")


class LogFormatError(ValueError):
    """A file that is not (or not a readable) log of the format asked for."""


def check_threshold(threshold: Any, *, optional: bool = True) -> float | None:
    """Validate a reader's `threshold`: a finite number (or None where `optional`).

    A NaN threshold would make every ``score >= threshold`` false, and an
    infinite one every score a failure (or a success): every attempt would
    be scored the same, whatever the log says.

    Examples
    --------
    >>> from passmix.data.readers._common import check_threshold
    >>> check_threshold(1), check_threshold(None)
    (1.0, None)
    >>> check_threshold(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a finite number, got nan.
    """
    if threshold is None and optional:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"threshold must be a finite number, got {shown(threshold)}.")
    value = float(threshold)
    if not math.isfinite(value):
        raise ValueError(f"threshold must be a finite number, got {shown(threshold)}.")
    return value


def load_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except UnicodeDecodeError as err:
        raise LogFormatError(f"'{path}' is not UTF-8 text ({err.reason}).") from None
    except json.JSONDecodeError as err:
        raise LogFormatError(f"'{path}' is not valid JSON: {err.msg} at line {err.lineno}."
                             ) from None


def to_outcome(value: Any, threshold: float | None, where: str) -> int:
    """A score as 0/1: C / I (inspect's letters), booleans, yes/no, 0/1, or a threshold.

    Partial credit (``"P"`` or a number strictly between 0 and 1) needs a
    threshold: success is ``value >= threshold``. Without one, a number outside
    [0, 1] is out of range; with one, any finite number is compared, so
    scorers on another scale work. An infinite score is never either.

    Examples
    --------
    >>> from passmix.data.readers._common import to_outcome
    >>> to_outcome("C", None, "x"), to_outcome(0.0, None, "x"), to_outcome(7, 5.0, "x")
    (1, 0, 1)
    >>> to_outcome(2, None, "epoch 1's score")
    Traceback (most recent call last):
    ...
    passmix.data.readers._common.LogFormatError: epoch 1's score: score 2 is out of range: a success is 1 and a failure 0 (numbers strictly between are partial credit). If the scorer uses another scale, pass threshold= (--threshold) to count scores >= threshold as successes.
    """
    if isinstance(value, str):
        key = value.strip().lower()
        if key in ("c", "correct", "yes", "true", "pass", "passed"):
            return 1
        if key in ("i", "incorrect", "no", "false", "fail", "failed", "n"):
            return 0
        if key == "p":
            if threshold is None:
                raise LogFormatError(f"{where}: partial credit 'P' is neither success nor "
                                     "failure; pass threshold= (--threshold; inspect maps P to 0.5).")
            return int(0.5 >= threshold)
        try:
            value = float(key)
        except ValueError:
            raise LogFormatError(f"{where}: score {value!r} is not a success or a failure "
                                 "(expected C/I, yes/no, true/false or a number).") from None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
        if math.isnan(v):
            raise LogFormatError(f"{where}: the score is NaN.")
        if math.isinf(v):
            raise LogFormatError(f"{where}: score {value!r} is infinite, neither a success nor "
                                 "a failure.")
        if threshold is not None:
            return int(v >= threshold)
        if v in (0.0, 1.0):
            return int(v)
        if not 0.0 < v < 1.0:
            raise LogFormatError(
                f"{where}: score {value!r} is out of range: a success is 1 and a failure 0 "
                "(numbers strictly between are partial credit). If the scorer uses another "
                "scale, pass threshold= (--threshold) to count scores >= threshold as successes.")
        raise LogFormatError(f"{where}: score {value!r} is partial credit, neither 0 nor 1; "
                             "pass threshold= (--threshold) to count values >= threshold as successes.")
    raise LogFormatError(f"{where}: score {value!r} of type {type(value).__name__} is not "
                         "a success or a failure.")


def attempt_table(rows: Iterable[Sequence], group_cols: Sequence[str], fmt: str,
                  files: Sequence[Path], notes: Sequence[str] = ()) -> pd.DataFrame:
    """The reader's result: group columns, task, attempt, outcome; attrs say what was read."""
    frame = pd.DataFrame(list(rows), columns=[*group_cols, *ATTEMPT_COLUMNS])
    if frame.empty:
        raise LogFormatError(f"no attempts found in {', '.join(map(str, files))}.")
    frame["outcome"] = frame["outcome"].astype("int64")
    dup = frame.duplicated([*group_cols, "task", "attempt"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise LogFormatError(f"attempt {row['attempt']!r} of task {row['task']!r} appears "
                             "twice; two logs of the same run?")
    n_tasks = frame.groupby([*group_cols, "task"], sort=False).ngroups
    frame.attrs.update(format=fmt, files=[str(f) for f in files], attempts=len(frame),
                       tasks=n_tasks, notes=list(notes),
                       summary=f"read {len(frame)} attempts on {n_tasks} tasks from "
                               f"{len(files)} {fmt} file(s)")
    return frame


def files_in(path: Path, patterns: Sequence[str]) -> list[Path]:
    """`path` itself, or the files in the folder `path` matching `patterns` (sorted)."""
    if path.is_dir():
        found = sorted({p for pattern in patterns for p in path.glob(pattern) if p.is_file()})
        if not found:
            raise LogFormatError(f"no {' or '.join(patterns)} files in the folder '{path}'.")
        return found
    if not path.exists():
        raise FileNotFoundError(f"no such file: '{path}'.")
    return [path]


def as_path(source: str | os.PathLike) -> Path:
    return Path(source)
