"""Counts of many systems on shared tasks: a systems x tasks panel.

A :class:`Panel` holds ``y_ij`` successes of ``m_ij`` trials of system ``i``
on task ``j``; ``m_ij = 0`` means system ``i`` did not run task ``j``, so the
systems need not share every task. It is the input of the pooled model
(:func:`passmix.fit_pooled`). Build one from per-system :class:`~passmix.Counts`
(tasks matched by label) or from a table with a system column.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .counts import Counts, as_counts
from .read import read_counts

__all__ = ["Panel", "as_panel", "same_system", "system_name"]


def system_name(label: Any) -> str:
    """A system's label as people read it.

    A group key of :func:`passmix.read_counts` is a tuple: a one-column key
    is shown as its value, a longer one as its values joined by ``" / "``.

    Examples
    --------
    >>> from passmix.data.panel import system_name
    >>> system_name(("small",)), system_name(("small", "x")), system_name(3)
    ('small', 'small / x', '3')
    """
    if isinstance(label, tuple):
        return " / ".join(str(part) for part in label) if label else "()"
    return str(label)


def same_system(label: Any, query: Any) -> bool:
    """Whether `query` names the system labelled `label`.

    The label itself; a plain name for a one-column key and a one-column
    key for a plain name (``"small"`` and ``("small",)`` are one system);
    or, for a string, the label as :func:`system_name` shows it.

    Examples
    --------
    >>> from passmix.data.panel import same_system
    >>> same_system("small", ("small",)), same_system(("small",), "small")
    (True, True)
    >>> same_system(("small", "x"), "small / x"), same_system("small", "medium")
    (True, False)
    """
    if _equal(label, query):
        return True
    if isinstance(query, tuple) and len(query) == 1 and _equal(label, query[0]):
        return True
    if isinstance(label, tuple) and len(label) == 1 and _equal(label[0], query):
        return True
    return isinstance(query, str) and system_name(label) == query


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` as a plain bool (False where the comparison is not one)."""
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


class Panel:
    """Success counts of I systems on J tasks.

    Parameters
    ----------
    successes, trials : array_like of int, shape (I, J)
        ``y_ij`` and ``m_ij``; ``m_ij = 0`` where system i did not run task j.
    systems : sequence, optional
        I distinct system labels; default ``0, ..., I - 1``.
    tasks : sequence, optional
        J distinct task labels; default ``0, ..., J - 1``.

    Examples
    --------
    >>> from passmix.data.panel import Panel
    >>> panel = Panel([[1, 0, 3], [2, 0, 0]], [[3, 3, 3], [3, 3, 0]], systems=["a", "b"])
    >>> panel.shape, panel.n_cells
    ((2, 3), 5)
    >>> panel.counts("b")
    Counts(n_tasks=3, n_observed=2, trials=0-3, mean_success=0.333)
    """

    def __init__(self, successes: Any, trials: Any, systems: Sequence | None = None,
                 tasks: Sequence | None = None) -> None:
        y = np.asarray(successes)
        m = np.asarray(trials)
        if y.ndim != 2 or m.shape != y.shape:
            raise ValueError(f"successes and trials must be 2-d arrays of one shape (systems x "
                             f"tasks), got {y.shape} and {m.shape}.")
        if y.size == 0:
            raise ValueError("the panel is empty: no system or no task.")
        systems = list(range(y.shape[0])) if systems is None else list(systems)
        tasks = list(range(y.shape[1])) if tasks is None else list(tasks)
        if len(systems) != y.shape[0] or len(tasks) != y.shape[1]:
            raise ValueError(f"{len(systems)} system and {len(tasks)} task labels for a "
                             f"{y.shape[0]} x {y.shape[1]} panel.")
        for name, labels in (("system", systems), ("task", tasks)):
            _check_distinct(labels, name)
        # each row through Counts: one validator for counts (whole, 0 <= y <= m, finite);
        # labels as an object array, which keeps tuples whole and mixed types as they are
        rows = [Counts(y[i], m[i], _object_array(tasks)) for i in range(y.shape[0])]
        self._y = np.stack([c.successes for c in rows])
        self._m = np.stack([c.trials for c in rows])
        for arr in (self._y, self._m):
            arr.setflags(write=False)
        self._systems = _object_array(systems)
        self._tasks = _object_array(tasks)
        if not (self._m > 0).any():
            raise ValueError("no system ran any task (every m_ij is 0); nothing to fit.")

    @property
    def successes(self) -> np.ndarray:
        """``y_ij``, shape (I, J), read-only."""
        return self._y

    @property
    def trials(self) -> np.ndarray:
        """``m_ij``, shape (I, J), read-only; 0 where not run."""
        return self._m

    @property
    def systems(self) -> np.ndarray:
        """System labels."""
        return self._systems.copy()

    @property
    def tasks(self) -> np.ndarray:
        """Task labels."""
        return self._tasks.copy()

    @property
    def shape(self) -> tuple[int, int]:
        """``(I, J)``."""
        return self._y.shape

    @property
    def n_cells(self) -> int:
        """Number of (system, task) cells that were run."""
        return int((self._m > 0).sum())

    def index(self, system: Hashable) -> int:
        """Row of `system`: its label, or a name for it (:func:`same_system`).

        Examples
        --------
        >>> from passmix.data.panel import Panel
        >>> panel = Panel([[1], [2]], [[3], [3]], systems=["small", "large"])
        >>> panel.index("large"), panel.index(("large",))
        (1, 1)
        """
        hits = [i for i, s in enumerate(self._systems) if _equal(s, system)] or [
            i for i, s in enumerate(self._systems) if same_system(s, system)]
        if not hits:
            shown = system_name(system) if isinstance(system, tuple) else system
            raise KeyError(f"unknown system {shown!r}; the panel has "
                           f"{', '.join(map(system_name, self._systems[:10]))}"
                           f"{', ...' if len(self._systems) > 10 else ''}.")
        return hits[0]

    def counts(self, system: Hashable) -> Counts:
        """The :class:`~passmix.Counts` of one system over all tasks (m = 0 where not run)."""
        i = self.index(system)
        return Counts(self._y[i], self._m[i], self._tasks)

    def __repr__(self) -> str:
        i, j = self.shape
        return (f"Panel(n_systems={i}, n_tasks={j}, n_cells={self.n_cells}, "
                f"trials={_range(self._m[self._m > 0])})")

    @classmethod
    def from_counts(cls, groups: Mapping[Hashable, Any], *, unpack: bool = True) -> Panel:
        """A panel from per-system counts, tasks matched by their labels.

        Parameters
        ----------
        groups : mapping of system label to Counts
            For example ``passmix.read_counts(path, group_by="model")``.
        unpack : bool, default True
            When every key is a 1-tuple (as :func:`passmix.read_counts` with
            one group column gives), each key's element is its system label;
            otherwise the keys are the labels as they are.

        Examples
        --------
        >>> import passmix
        >>> from passmix.data.panel import Panel
        >>> a = passmix.Counts([1, 2], [5, 5], tasks=["t1", "t2"])
        >>> b = passmix.Counts([0], [5], tasks=["t2"])
        >>> Panel.from_counts({"a": a, "b": b}).trials
        array([[5, 5],
               [0, 5]])
        """
        if not isinstance(groups, Mapping) or not groups:
            raise ValueError("groups must be a non-empty mapping of system label to Counts.")
        # unpacking only some keys could make distinct labels equal: 0 and (0,)
        ones = unpack and all(isinstance(k, tuple) and len(k) == 1 for k in groups)
        systems = [k[0] for k in groups] if ones else list(groups)
        counts = [as_counts(c) for c in groups.values()]
        tasks: dict[Any, int] = {}
        for c in counts:
            for t in c.tasks:
                tasks.setdefault(t, len(tasks))
        y = np.zeros((len(counts), len(tasks)), dtype=np.int64)
        m = np.zeros_like(y)
        for i, c in enumerate(counts):
            cols = np.array([tasks[t] for t in c.tasks], dtype=int)
            y[i, cols] = c.successes
            m[i, cols] = c.trials
        return cls(y, m, systems, list(tasks))

    @classmethod
    def read(cls, source: pd.DataFrame | str, system: Hashable, **kwargs: Any) -> Panel:
        """Read a table or file with a system column (layouts as :func:`passmix.read_counts`).

        `kwargs` (``task``, ``successes``, ``trials``, ``outcome``, ``layout``)
        go to :func:`passmix.read_counts`, grouped by `system`.
        """
        return cls.from_counts(read_counts(source, group_by=system, **kwargs))


def _range(values: np.ndarray) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}..{hi}"


def as_panel(data: Any, system: Hashable | None = None, **kwargs: Any) -> Panel:
    """A :class:`Panel` from a Panel, a mapping of Counts, or a table/file with `system`.

    Raises
    ------
    TypeError
        For any other input (a list, an array, ...), naming what is accepted.
    ValueError
        For a table or file without `system`.

    Examples
    --------
    >>> from passmix.data.panel import as_panel
    >>> as_panel([1, 2, 3])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: the data must be a passmix.Panel, a mapping of system label to Counts, ... got list.
    """
    if isinstance(data, Panel):
        return data
    if isinstance(data, Mapping):
        return Panel.from_counts(data)
    if not isinstance(data, (pd.DataFrame, str, os.PathLike)):
        raise TypeError("the data must be a passmix.Panel, a mapping of system label to "
                        "Counts, a pandas DataFrame or a path to a file (with system=), got "
                        f"{type(data).__name__}.")
    if system is None:
        raise ValueError("name the system column (system=...) to read a table or file.")
    return Panel.read(data, system, **kwargs)


def _check_distinct(labels: list, name: str) -> None:
    """Refuse unhashable or repeated labels, naming them.

    Labels are told apart as dict keys are: 1, 1.0 and True are one label.
    """
    seen: dict = {}
    for pos, label in enumerate(labels):
        try:
            first = seen.setdefault(label, pos)
        except TypeError:
            raise TypeError(f"{name} labels must be hashable; label {pos} is {label!r}, a "
                            f"{type(label).__name__}.") from None
        if first != pos:
            same = "appears twice" if repr(labels[first]) == repr(label) else \
                f"equals {labels[first]!r} (label {first}) as a dict key"
            raise ValueError(f"{name} labels must be distinct; {label!r} (label {pos}) {same}.")


def _object_array(labels: list) -> np.ndarray:
    """Labels as a 1-d object array (np.array would turn tuple labels into a 2-d one)."""
    out = np.empty(len(labels), dtype=object)
    for i, label in enumerate(labels):
        out[i] = label
    return out
