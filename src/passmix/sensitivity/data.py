"""Configurations (prompts, templates, temperatures, ...) as instances.

:class:`Configurations` holds the outcomes of J configurations of one system
on a benchmark's questions, in one of two forms:

* a configuration x question matrix of 0/1 outcomes, NaN where a cell was
  not observed (question identity is known: pIRT and stratified sampling
  over questions need it);
* per-configuration counts, ``successes`` of ``questions`` (as published
  score tables give them; question identity is lost).

Either way each configuration is an instance of the Beta mixture with
``y_j`` correct answers among ``m_j`` observed questions. Labels (template
id, temperature, ...) ride along in a DataFrame. :func:`read_configurations`
builds them from a table or a file, per group.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data.counts import Counts
from ..data.read import as_group_columns, read_data_file

__all__ = ["Configurations", "read_configurations"]


class Configurations:
    """Outcomes of J configurations on questions: a 0/1 matrix or counts.

    Build with :meth:`from_matrix` or :meth:`from_counts` (or
    :func:`read_configurations`); the constructor is not public.

    Attributes
    ----------
    successes, questions : numpy.ndarray of int64
        Observed correct answers and observed questions per configuration.
    labels : pandas.DataFrame
        One row per configuration; its index names the configurations.
    matrix : numpy.ndarray or None
        Configuration x question outcomes (float, NaN = not observed), or
        None for count data.
    question_labels : numpy.ndarray or None
        Column labels of the matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.sensitivity import Configurations
    >>> data = Configurations.from_matrix([[1, 0, np.nan], [1, 1, 1]])
    >>> data.scores().tolist(), data.n_cells
    ([0.5, 1.0], 5)
    >>> Configurations.from_counts([30, 55], [100, 100]).scores().tolist()
    [0.3, 0.55]
    """

    __slots__ = ("successes", "questions", "labels", "matrix", "question_labels")

    def __init__(self, successes: np.ndarray, questions: np.ndarray, labels: pd.DataFrame,
                 matrix: np.ndarray | None, question_labels: np.ndarray | None) -> None:
        for arr in (successes, questions, matrix, question_labels):
            if arr is not None:
                arr.flags.writeable = False
        self.successes, self.questions, self.labels = successes, questions, labels
        self.matrix, self.question_labels = matrix, question_labels

    # -- builders ------------------------------------------------------------------
    @classmethod
    def from_matrix(cls, matrix: Any, labels: Any = None,
                    questions: Any = None) -> Configurations:
        """Configurations from a configuration x question matrix of 0/1 (NaN: not observed).

        Parameters
        ----------
        matrix : array_like or DataFrame
            One row per configuration, one column per question. A
            DataFrame's index names the configurations, its columns the
            questions.
        labels : DataFrame or array_like, optional
            Configuration labels: a DataFrame with one row per configuration
            (extra columns such as template or temperature), or names.
        questions : array_like, optional
            Question labels (default: the DataFrame's columns, or 0..Q-1).
        """
        counts = Counts.from_matrix(matrix)  # validates the 0/1/NaN entries
        if isinstance(matrix, pd.DataFrame):
            arr = matrix.to_numpy(dtype=float, na_value=np.nan, copy=True)
            qlabels = np.asarray(matrix.columns) if questions is None else np.asarray(questions)
            names = matrix.index
        else:
            arr = np.array(matrix, dtype=float)
            qlabels = np.arange(arr.shape[1]) if questions is None else np.asarray(questions)
            names = None
        if qlabels.shape != (arr.shape[1],):
            raise ValueError(f"questions has {qlabels.size} labels for {arr.shape[1]} columns.")
        if arr.shape[1] == 0:
            raise ValueError("the matrix has no questions (no columns).")
        return cls(counts.successes.copy(), counts.trials.copy(),
                   _labels_frame(labels, arr.shape[0], names), arr, qlabels)

    @classmethod
    def from_counts(cls, successes: Any, questions: Any, labels: Any = None) -> Configurations:
        """Configurations from per-configuration counts: `successes` of `questions`.

        Validated as :class:`passmix.Counts` (whole, non-negative,
        ``successes <= questions``).
        """
        counts = Counts(successes, questions)
        return cls(counts.successes.copy(), counts.trials.copy(),
                   _labels_frame(labels, counts.n_tasks, None), None, None)

    # -- views -----------------------------------------------------------------------
    @property
    def n_configurations(self) -> int:
        return int(self.successes.size)

    @property
    def n_questions(self) -> int | None:
        """Questions (matrix columns); None for count data."""
        return None if self.matrix is None else int(self.matrix.shape[1])

    @property
    def n_cells(self) -> int:
        """Observed (configuration, question) cells."""
        return int(self.questions.sum())

    @property
    def has_questions(self) -> bool:
        """Whether question identity is known (matrix form)."""
        return self.matrix is not None

    @property
    def names(self) -> np.ndarray:
        return np.asarray(self.labels.index)

    def scores(self) -> np.ndarray:
        """Observed score of each configuration, ``successes / questions`` (NaN if none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.questions > 0, self.successes / np.maximum(self.questions, 1),
                            np.nan)

    def observed(self) -> np.ndarray:
        """Boolean mask of observed cells (matrix form only)."""
        if self.matrix is None:
            raise ValueError("count data carry no cells; question identity is unknown.")
        return ~np.isnan(self.matrix)

    def counts(self) -> Counts:
        """The configurations as :class:`passmix.Counts` (tasks = configuration names)."""
        return Counts(self.successes, self.questions, tasks=self.names)

    def with_cells(self, mask: np.ndarray) -> Configurations:
        """The same configurations with only the cells of `mask` observed (matrix form)."""
        obs = self.observed()
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != obs.shape:
            raise ValueError(f"mask has shape {mask.shape}, the matrix {obs.shape}.")
        if np.any(mask & ~obs):
            raise ValueError("mask selects cells that are not observed.")
        arr = np.where(mask, self.matrix, np.nan)
        return Configurations(np.nansum(arr, axis=1).astype(np.int64),
                              mask.sum(axis=1).astype(np.int64), self.labels, arr,
                              self.question_labels)

    def with_counts(self, successes: np.ndarray, questions: np.ndarray) -> Configurations:
        """The same configurations with other counts (count form; labels kept)."""
        counts = Counts(successes, questions)
        if counts.n_tasks != self.n_configurations:
            raise ValueError(f"{counts.n_tasks} counts for {self.n_configurations} "
                             "configurations.")
        return Configurations(counts.successes.copy(), counts.trials.copy(), self.labels,
                              None, None)

    def to_frame(self) -> pd.DataFrame:
        """One row per configuration: labels, successes, questions, score."""
        out = self.labels.copy()
        out["successes"], out["questions"], out["score"] = \
            self.successes, self.questions, self.scores()
        return out

    def __len__(self) -> int:
        return self.n_configurations

    def __repr__(self) -> str:
        form = (f"matrix {self.matrix.shape[0]} x {self.matrix.shape[1]}"
                if self.matrix is not None else "counts")
        return (f"Configurations(n={self.n_configurations}, {form}, cells={self.n_cells}, "
                f"mean_score={np.nanmean(self.scores()):.4g})")


def _labels_frame(labels: Any, n: int, names: Any) -> pd.DataFrame:
    if isinstance(labels, pd.DataFrame):
        if len(labels) != n:
            raise ValueError(f"labels has {len(labels)} rows for {n} configurations.")
        frame = labels.copy()
    else:
        idx = names if labels is None else labels
        idx = pd.RangeIndex(n) if idx is None else pd.Index(np.asarray(idx))
        if len(idx) != n:
            raise ValueError(f"{len(idx)} configuration names for {n} configurations.")
        frame = pd.DataFrame(index=idx)
    if frame.index.has_duplicates:
        dup = frame.index[frame.index.duplicated()][0]
        raise ValueError(f"configuration names must be unique; {dup!r} repeats.")
    frame.index.name = frame.index.name or "configuration"
    return frame


def read_configurations(source: Any, group_by: Hashable | Sequence[Hashable] | None = None, *,
                        config: Hashable = "prompt", question: Hashable = "question",
                        outcome: Hashable = "outcome", successes: Hashable = "successes",
                        questions: Hashable = "questions"
                        ) -> Configurations | dict[tuple, Configurations]:
    """Read configurations from a table or a file, in one of two layouts.

    * **counts**: one row per configuration with columns `config`,
      `successes` and `questions` (e.g. published per-prompt accuracies);
    * **cells**: one row per (configuration, question) with columns
      `config`, `question` and `outcome` (0/1; a missing row or NaN is an
      unobserved cell).

    Parameters
    ----------
    source : DataFrame, str or path
        A DataFrame or a file (CSV, Parquet, JSON, JSON lines; compressed
        CSV too).
    group_by : str or list of str, optional
        Columns identifying groups (e.g. task and model); one
        :class:`Configurations` per group, in a dict keyed by tuples.
    config, question, outcome, successes, questions : str
        Column names.

    Returns
    -------
    Configurations or dict of tuple to Configurations

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.sensitivity import read_configurations
    >>> df = pd.DataFrame({"model": ["a", "a", "b"], "prompt": [1, 2, 1],
    ...                    "successes": [3, 5, 7], "questions": [10, 10, 10]})
    >>> groups = read_configurations(df, group_by="model")
    >>> {key: value.scores().tolist() for key, value in groups.items()}
    {('a',): [0.3, 0.5], ('b',): [0.7]}
    """
    if isinstance(source, pd.DataFrame):
        df = source
    elif isinstance(source, (str, os.PathLike)):
        df, _ = read_data_file(_as_path(source))
    else:
        raise TypeError(f"source must be a DataFrame or a path, got {type(source).__name__}.")
    if df.empty:
        raise ValueError("the table has no rows.")
    cols = as_group_columns(group_by)
    has_counts = successes in df.columns and questions in df.columns
    has_cells = question in df.columns and outcome in df.columns
    missing = [c for c in [*cols, config] if c not in df.columns]
    if missing or not (has_counts or has_cells):
        need = f"{config!r} with {successes!r} and {questions!r}, or with {question!r} and " \
               f"{outcome!r}"
        raise ValueError(f"unknown column(s) {', '.join(map(repr, missing)) or '(none)'}; "
                         f"the table has {list(df.columns)} and needs {need}"
                         f"{' plus the group columns ' + repr(cols) if cols else ''}.")

    def build(sub: pd.DataFrame) -> Configurations:
        if has_counts:
            if sub[config].duplicated().any():
                dup = sub.loc[sub[config].duplicated(), config].iloc[0]
                raise ValueError(f"configuration {dup!r} has more than one row.")
            extra = [c for c in sub.columns
                     if c not in (*cols, config, successes, questions, question, outcome)]
            labels = sub.set_index(config)[extra]
            return Configurations.from_counts(sub[successes].to_numpy(),
                                              sub[questions].to_numpy(), labels)
        if sub.duplicated([config, question]).any():
            row = sub.loc[sub.duplicated([config, question])].iloc[0]
            raise ValueError(f"cell ({row[config]!r}, {row[question]!r}) has more than one row.")
        wide = sub.pivot(index=config, columns=question, values=outcome)
        return Configurations.from_matrix(wide)

    if not cols:
        return build(df)
    out = {}
    for key, sub in df.groupby(cols, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out[key] = build(sub)
    return out


def _as_path(source: Any):
    from pathlib import Path

    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    return path
