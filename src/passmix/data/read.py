"""Reading tables and files into :class:`~passmix.data.Counts`.

:func:`read_counts` reads a DataFrame or a CSV, TSV, JSON Lines, JSON or
Parquet file (compressed or not) in any of three layouts, detected by
:func:`detect_layout` or named: one row per task (*counts*), one row per
attempt (*long*) or one row per task with one 0/1 column per attempt
(*matrix*); :func:`read_trials` reads the attempts themselves.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._parse import (
    ATTEMPT_ALIASES, LAYOUTS, OUTCOME_ALIASES, SUCCESSES_ALIASES, SYSTEM_ALIASES,
    TASK_ALIASES, TRIALS_ALIASES, _JSONL, _LINE_READERS, _MAX_SYSTEMS, _SUPPORTED, _Where,
    _compression, _extension, _fmt, _frame_where, _is_binary, _labels, _long_counts,
    _long_values, _matrix_counts, _matrix_values, _py, _require_columns,
    _require_unique_columns, _subset_where, _table_counts, _warn_missing_outcomes,
    _with_tasks, natural_key,
)
from .counts import Counts

__all__ = ["LayoutSpec", "as_group_columns", "detect_layout", "read_counts", "read_trials"]


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
        for a single column) in natural order: numbers within a label by
        value, with a size suffix (``"Pythia 70M"`` before ``"Pythia 1B"``
        before ``"Pythia 12B"``), other text case-insensitively.
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
        return Counts._trusted(*_table_counts(sub, spec.successes, spec.trials, spec.task,
                                              where, used=spec.group_cols, group=group))
    if spec.kind == "long":
        return Counts._trusted(*_long_counts(sub, spec.task, spec.outcome, where,
                                             threshold=spec.threshold, values=values))
    labels = sub[spec.task] if spec.task is not None else sub.index
    return Counts._trusted(*_matrix_counts(
        sub[list(spec.outcome_columns)], labels, where, label_rows=spec.task is not None,
        task_col=spec.task, context=sub, used=spec.group_cols, group=group,
        threshold=spec.threshold, values=values))


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
    try:  # 70M before 1B before 12B, as people read model names
        keys = sorted(groups, key=natural_key)
    except TypeError:  # labels no key orders: keep order of first appearance
        keys = list(groups)
    out: dict[tuple, Any] = {}
    for key in keys:
        positions = np.asarray(groups[key])
        tkey = tuple(_py(k) for k in (key if isinstance(key, tuple) else (key,)))
        out[tkey] = build(df.iloc[positions], spec, _subset_where(where, positions), tkey,
                          None if values is None else values[positions])
    return out
