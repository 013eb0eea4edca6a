"""The repeated-trial protocol of the first paper (``docs/formulas.md``, section 5).

For each group (one system on one benchmark) and each seed, the recorded
trials of every task are put in random order and the first ``m`` are kept,
for every ``m`` of a grid (the subsets are nested). From each subset every
method estimates Pass@k, Pass^k and AUC@k at every horizon of a grid:

* ``naive``: the plug-in estimator (:func:`passmix.naive_estimate`);
* ``combinatorial``: the unbiased estimator, where ``k <= m``
  (:func:`passmix.combinatorial_estimate`);
* ``mixture``: the Beta mixture chosen by BIC (:func:`passmix.fit`), with its
  delta-method interval at the default scale.

The error is the distance, in percentage points, to the *reference*: the
combinatorial estimate on all recorded trials (defined for ``k`` up to the
smallest number of trials of a task).

Randomness is derived from the seed and the group alone, never from the
order in which work is scheduled: the subsets of group ``g`` under seed ``s``
come from ``numpy.random.default_rng([s, group_id(g), 0])`` and the fit at
``m`` from ``numpy.random.default_rng([s, group_id(g), 1, m])``, where
:func:`group_id` is a CRC-32 of the group label. Results are the same with one
process, several, or a Dask cluster.

Work is split into one task per (group, seed) that fits every ``m`` of that
seed, so a worker process compiles the PyTensor models once and reuses them.
The results of a (group, seed) task are written to one cache file per
(group, seed, m) as soon as the task returns, so an interrupted run resumes
from the last finished task; a rerun computes only the budgets not cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import numbers
import os
import sys
import time
import warnings
import zlib
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._validation import METRICS, check_k, check_level
from ..data import (
    OUTCOME_ALIASES,
    SUCCESSES_ALIASES,
    TASK_ALIASES,
    TRIALS_ALIASES,
    Counts,
    read_counts,
)
from ..estimators import combinatorial_estimate, naive_estimate
from ..fit import INTERVAL_METHODS, fit

__all__ = [
    "ERROR_COLUMNS",
    "METHODS",
    "PAPER_K",
    "PAPER_M",
    "RepeatedConfig",
    "RepeatedResult",
    "default_k_grid",
    "default_m_grid",
    "group_id",
    "load_repeated",
    "nested_subsets",
    "repeated_experiment",
    "run_repeated",
]

#: Methods compared, in output order.
METHODS = ("naive", "combinatorial", "mixture")
#: The paper's grids for 80 recorded trials per task.
PAPER_M = (5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80)
PAPER_K = (2, 5, 10, 20, 30, 40, 50, 60, 70, 80)
#: Columns of the errors table after the group columns.
ERROR_COLUMNS = ("seed", "m", "k", "metric", "method", "estimate", "lower", "upper",
                 "reference", "abs_error")
#: Columns of the fits table after the group columns.
FIT_COLUMNS = ("seed", "m", "n_components", "converged", "on_bound", "loglik", "bic",
               "bic_by_h", "seconds", "warnings", "error")

_LADDER = (2, 3, 5, 10, 20, 50, 100, 200)
_K_LADDER = (2, 5)  # times powers of ten: 2, 5, 10, 20, 50, 100, ...
_PROTOCOL_VERSION = 2
_NOISE = r"PyTensor could not link to a BLAS"

GroupData = Counts | np.ndarray


# --------------------------------------------------------------------------
# grids
# --------------------------------------------------------------------------


def default_m_grid(n_trials: int) -> tuple[int, ...]:
    """Budgets ``m`` (trials kept per task) for data with `n_trials` trials per task.

    Parameters
    ----------
    n_trials : int
        Recorded trials per task (the smallest, if they differ).

    Returns
    -------
    tuple of int

    Notes
    -----
    * 80 trials: the paper's grid ``5, 10, 15, ..., 40, 50, 60, 70, 80``.
    * at most 5 trials: ``2, ..., n_trials - 1`` (one trial identifies only the
      mean, and keeping every trial leaves nothing to extrapolate);
    * otherwise the ladder ``2, 3, 5, 10, 20, 50, 100, 200`` up to
      ``n_trials / 2``, from 5 on when there are at least 20 trials (fewer
      than 5 trials of 20 or more is not a budget anyone chooses).

    Examples
    --------
    >>> from passmix.experiments import default_m_grid
    >>> default_m_grid(10_000)
    (5, 10, 20, 50, 100, 200)
    >>> default_m_grid(10), default_m_grid(4)
    ((2, 3, 5), (2, 3))
    """
    n_trials = _positive_int(n_trials, "n_trials")
    if n_trials == 80:
        return PAPER_M
    if n_trials <= 5:
        grid = tuple(range(2, n_trials))
    else:
        start = 5 if n_trials >= 20 else 2
        grid = tuple(m for m in _LADDER if start <= m <= n_trials / 2)
    if not grid:
        raise ValueError(f"no default budgets for {n_trials} trials per task; pass m=.")
    return grid


def default_k_grid(n_trials: int) -> tuple[int, ...]:
    """Horizons ``k`` at which the reference on `n_trials` trials is defined.

    Parameters
    ----------
    n_trials : int
        Recorded trials per task (the smallest, if they differ).

    Returns
    -------
    tuple of int

    Notes
    -----
    80 trials: the paper's grid ``2, 5, 10, 20, ..., 80``. At most 10 trials:
    every ``k`` from 2 to `n_trials`. Otherwise the log grid
    ``2, 5, 10, 20, 50, ...`` up to `n_trials`, which is itself added last.

    Examples
    --------
    >>> from passmix.experiments import default_k_grid
    >>> default_k_grid(10_000)
    (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
    >>> default_k_grid(4)
    (2, 3, 4)
    """
    n_trials = _positive_int(n_trials, "n_trials")
    if n_trials == 80:
        return PAPER_K
    if n_trials < 2:
        raise ValueError("one trial per task defines no horizon beyond k = 1; pass k=.")
    if n_trials <= 10:
        return tuple(range(2, n_trials + 1))
    grid = []
    power = 1
    while True:
        values = [b * power for b in _K_LADDER] + [10 * power]
        grid.extend(v for v in values if v <= n_trials)
        if 10 * power >= n_trials:
            break
        power *= 10
    grid.append(n_trials)
    return tuple(sorted(set(grid)))


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number >= 1, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}.")
    return int(value)


def _interval_iv(interval: Any) -> str:
    if not isinstance(interval, str) or interval.lower() not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {interval!r}; expected one of "
                         f"{', '.join(INTERVAL_METHODS)}.")
    return interval.lower()


def _grid_iv(values: Any, name: str) -> tuple[int, ...]:
    arr, _ = check_k(values)
    return tuple(sorted({int(v) for v in arr}))


# --------------------------------------------------------------------------
# data: counts (hypergeometric subsets) or 0/1 matrices (permutations)
# --------------------------------------------------------------------------


def group_id(key: tuple) -> int:
    """Stable 32-bit id of a group key, used to derive the group's random streams.

    It is a CRC-32 of ``repr`` of the key's Python values, so it does not
    depend on which other groups are present or on their order.

    Examples
    --------
    >>> from passmix.experiments import group_id
    >>> group_id(("Pythia 12B",)) == group_id(("Pythia 12B",))
    True
    """
    plain = tuple(v.item() if isinstance(v, np.generic) else v for v in key)
    return zlib.crc32(repr(plain).encode("utf-8"))


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
    budgets = sorted({_positive_int(v, "m") for v in m})
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


def _layout_of(columns: list, group_cols: list, layout: str, task: Hashable | None,
               successes: Hashable | None, trials: Hashable | None,
               outcome: Hashable | None) -> str:
    """The layout :func:`passmix.read_counts` detects (same alias rules)."""
    if successes is not None or trials is not None:
        return "counts"
    if outcome is not None:
        return "long"
    if layout != "auto":
        return layout
    lowered = {str(c).strip().lower() for c in columns
               if c not in group_cols and c != task and isinstance(c, str)}
    if lowered & set(SUCCESSES_ALIASES) and lowered & set(TRIALS_ALIASES):
        return "counts"
    if lowered & set(OUTCOME_ALIASES):
        return "long"
    return "matrix"


def _find(columns: Sequence[Hashable], aliases: Sequence[str]) -> Hashable | None:
    lowered: dict[str, Hashable] = {}
    for col in columns:
        if isinstance(col, str):
            lowered.setdefault(col.strip().lower(), col)
    return next((lowered[a] for a in aliases if a in lowered), None)


def _group_cols(group_by: Any) -> list:
    """`group_by` as a list of columns, read as :func:`passmix.read_counts` reads it."""
    if group_by is None:
        return []
    if isinstance(group_by, (str, tuple)) or not pd.api.types.is_list_like(group_by):
        return [group_by]
    return list(group_by)


def load_repeated(
    source: pd.DataFrame | str | os.PathLike,
    *,
    group_by: Hashable | Sequence[Hashable] | None = None,
    layout: str = "auto",
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
) -> dict[tuple, GroupData]:
    """Read repeated-trial data per group, keeping single trials where they exist.

    Parameters
    ----------
    source : DataFrame, str or path
        As for :func:`passmix.read_counts` (which validates it).
    group_by, layout, task, successes, trials, outcome
        As for :func:`passmix.read_counts`.

    Returns
    -------
    dict of tuple to Counts or ndarray
        Per group (1-tuples for one column; ``()`` without `group_by`): a
        :class:`~passmix.Counts` for a table of counts, or a tasks x trials
        float matrix of 0/1 outcomes (NaN: not run) for one row per attempt
        (*long*) or one column per attempt (*matrix*), so the protocol can
        permute the recorded trials. Tasks are in the order
        :func:`passmix.read_counts` gives them.

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
    counts = read_counts(source, layout=layout, group_by=group_by, task=task,
                         successes=successes, trials=trials, outcome=outcome)
    groups = counts if isinstance(counts, dict) else {(): counts}
    df = source if isinstance(source, pd.DataFrame) else None
    if df is None:
        from ..data import _read_file  # the same reader read_counts used

        df, _ = _read_file(Path(source))
    group_cols = _group_cols(group_by)
    kind = _layout_of(list(df.columns), group_cols, layout.lower(), task, successes,
                      trials, outcome)
    if kind == "counts":
        return groups
    free = [c for c in df.columns if c not in group_cols and c != task]
    if task is None:
        task = _find(free, TASK_ALIASES)
        free = [c for c in free if c != task]
    parts = (df.groupby(group_cols, sort=False) if group_cols else [((), df)])
    out: dict[tuple, GroupData] = {}
    by_key = {}
    for key, sub in parts:
        tkey = tuple(v.item() if isinstance(v, np.generic) else v
                     for v in (key if isinstance(key, tuple) else (key,)))
        by_key[tkey] = sub
    for key, counts_g in groups.items():
        sub = by_key[key]
        if kind == "long":
            o_col = outcome if outcome is not None else _find(free, OUTCOME_ALIASES)
            codes, _ = pd.factorize(sub[task], sort=False)
            position = sub.groupby(codes).cumcount().to_numpy()
            matrix = np.full((codes.max() + 1, position.max() + 1), np.nan)
            values = pd.to_numeric(sub[o_col].astype(object)).to_numpy(dtype=np.float64,
                                                                       na_value=np.nan)
            matrix[codes, position] = values
        else:
            matrix = sub[free].astype(float).to_numpy()
        # the same tasks in the same order as read_counts, checked by the totals
        run = ~np.isnan(matrix)
        if not (np.array_equal(run.sum(axis=1), counts_g.trials)
                and np.array_equal(np.where(run, matrix, 0).sum(axis=1), counts_g.successes)):
            raise RuntimeError(f"group {key!r}: the trial matrix does not match the counts.")
        out[key] = matrix
    return out


# --------------------------------------------------------------------------
# configuration and result
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatedConfig:
    """Settings of one run of the repeated-trial protocol.

    Attributes
    ----------
    m : tuple of int
        Budgets (trials kept per task).
    k : tuple of int
        Horizons.
    seeds : tuple of int
        Subsampling seeds.
    level : float
        Confidence level of the mixture's intervals.
    max_components, n_init : int
        Passed to :func:`passmix.fit`.
    interval : {"profile", "delta"}
        Interval method of the mixture (:meth:`passmix.MixtureFit.interval`).
    """

    m: tuple[int, ...]
    k: tuple[int, ...]
    seeds: tuple[int, ...]
    level: float = 0.95
    max_components: int = 4
    n_init: int = 10
    interval: str = "profile"

    def cache_key(self) -> str:
        """Hash of the settings that change a (group, seed, m) result."""
        payload = {"protocol": _PROTOCOL_VERSION, "passmix": __version__, "k": list(self.k),
                   "level": self.level, "max_components": self.max_components,
                   "n_init": self.n_init, "interval": self.interval}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view (for ``config.json``)."""
        return {"m": list(self.m), "k": list(self.k), "seeds": list(self.seeds),
                "level": self.level, "max_components": self.max_components,
                "n_init": self.n_init, "interval": self.interval}


@dataclass
class RepeatedResult:
    """Outcome of :func:`run_repeated`.

    Attributes
    ----------
    errors : pandas.DataFrame
        One row per (group, seed, m, k, metric, method): the group columns,
        then ``seed, m, k, metric, method, estimate, lower, upper, reference,
        abs_error``. ``lower``/``upper`` are the mixture's interval (null for
        the direct estimators); ``abs_error`` is ``100 |estimate - reference|``
        (percentage points). The combinatorial estimator appears only where
        ``k <= m``.
    fits : pandas.DataFrame
        One row per (group, seed, m): the H chosen by BIC, convergence, the
        coordinates on a bound, log-likelihood, BIC, the BIC of every H tried
        (JSON), seconds, warnings and the error if the fit failed.
    references : pandas.DataFrame
        The group columns, ``metric, k, reference, n_tasks, n_trials``.
    config : RepeatedConfig
    group_cols : list of str
        Names of the group columns (``["group"]`` without groups).
    n_trials : int
        Smallest number of recorded trials of a task over all groups.
    """

    errors: pd.DataFrame
    fits: pd.DataFrame
    references: pd.DataFrame
    config: RepeatedConfig
    group_cols: list[str]
    n_trials: int
    timings: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------
# the work of one (group, seed): every m
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    key: tuple
    gid: int
    data: GroupData
    seed: int
    m: tuple[int, ...]
    k: tuple[int, ...]
    level: float
    max_components: int
    n_init: int
    interval: str


def _estimate_unit(sub: Counts, task: _Task, m: int) -> dict[str, Any]:
    """Every method's estimates at every k from one subset, and the fit's summary."""
    ks = np.asarray(task.k, dtype=np.int64)
    rows: list[list[Any]] = []
    m_min = int(sub.trials[sub.trials > 0].min())
    comb_ok = ks <= m_min
    info: dict[str, Any] = {"seed": task.seed, "m": m}
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_NOISE)
        try:
            res = fit(sub, max_components=task.max_components, n_init=task.n_init,
                      seed=np.random.default_rng([task.seed, task.gid, 1, m]))
        except (ValueError, RuntimeError) as err:
            res = None
            info["error"] = f"{type(err).__name__}: {err}"
        summary = None if res is None else res.summary(ks, task.level, method=task.interval)
        for metric in METRICS:
            naive = naive_estimate(sub, metric, ks)
            rows.extend([task.seed, m, int(k), metric, "naive", float(v), None, None]
                        for k, v in zip(ks, naive))
            if comb_ok.any():
                comb = combinatorial_estimate(sub, metric, ks[comb_ok])
                rows.extend([task.seed, m, int(k), metric, "combinatorial", float(v), None, None]
                            for k, v in zip(ks[comb_ok], comb))
            if res is None:
                rows.extend([task.seed, m, int(k), metric, "mixture", None, None, None]
                            for k in ks)
                continue
            part = summary[summary["metric"] == metric]
            rows.extend([task.seed, m, int(k), metric, "mixture", float(e), float(lo), float(hi)]
                        for k, e, lo, hi in zip(ks, part["estimate"], part["lower"],
                                                part["upper"]))
    if res is not None:
        table = res.bic_table
        info.update({
            "n_components": res.n_components, "converged": bool(res.converged),
            "on_bound": ", ".join(res.on_bound), "loglik": float(res.loglik),
            "bic": float(res.bic),
            "bic_by_h": json.dumps({int(h): float(b) for h, b in
                                    zip(table["n_components"], table["bic"])}),
        })
    info["seconds"] = time.perf_counter() - started
    info["warnings"] = " | ".join(dict.fromkeys(" ".join(str(w.message).split())
                                                for w in caught))
    return {"m": m, "rows": rows, "fit": info}


def _run_task(task: _Task) -> tuple[tuple, int, list[dict[str, Any]]]:
    """One (group, seed): the nested subsets and every m's estimates (worker side)."""
    subsets = nested_subsets(task.data, task.m, np.random.default_rng([task.seed, task.gid, 0]))
    return task.key, task.seed, [_estimate_unit(subsets[m], task, m) for m in task.m]


# --------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------


def _data_hash(key: tuple, data: GroupData) -> str:
    h = hashlib.sha256(repr(key).encode())
    if isinstance(data, Counts):
        h.update(b"counts")
        h.update(np.ascontiguousarray(data.successes).tobytes())
        h.update(np.ascontiguousarray(data.trials).tobytes())
    else:
        h.update(b"matrix" + repr(data.shape).encode())
        h.update(np.ascontiguousarray(data).tobytes())
    return h.hexdigest()[:16]


class _Cache:
    """One JSON file per (group, seed, m) under ``root/<config>/<group data>/``."""

    def __init__(self, root: Path | None, config: RepeatedConfig,
                 data_hashes: dict[tuple, str]) -> None:
        self.root = None if root is None else Path(root) / config.cache_key()
        self.hashes = data_hashes

    def path(self, key: tuple, seed: int, m: int) -> Path | None:
        if self.root is None:
            return None
        return self.root / self.hashes[key] / f"seed{seed}_m{m}.json"

    def read(self, key: tuple, seed: int, m: int) -> dict[str, Any] | None:
        path = self.path(key, seed, m)
        if path is None or not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a damaged file is recomputed
            return None

    def write(self, key: tuple, seed: int, unit: dict[str, Any]) -> None:
        path = self.path(key, seed, unit["m"])
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(unit), encoding="utf-8")
        os.replace(tmp, path)  # atomic: an interrupted write leaves no partial file


# --------------------------------------------------------------------------
# the protocol
# --------------------------------------------------------------------------


def _groups_iv(groups: Any, group_cols: Sequence[str]) -> tuple[dict[tuple, GroupData], list[str]]:
    if isinstance(groups, (Counts, np.ndarray)):
        groups = {(): groups}
    if not isinstance(groups, Mapping) or not groups:
        raise TypeError("groups must be a Counts, a 0/1 matrix, or a non-empty dict of "
                        "tuple to Counts or matrix.")
    cols = list(group_cols)
    out: dict[tuple, GroupData] = {}
    for key, data in groups.items():
        key = key if isinstance(key, tuple) else (key,)
        if cols and len(key) != len(cols):
            raise ValueError(f"group key {key!r} does not match the group columns {cols}.")
        if isinstance(data, Counts):
            if data.n_observed == 0:
                raise ValueError(f"group {key!r} has no task with trials.")
            out[key] = data
        else:
            out[key] = _matrix_iv(data, f"group {key!r}")
    if not cols:
        width = {len(k) for k in out}
        if width == {0}:
            out = {("all",): v for v in out.values()}
            cols = ["group"]
        elif width == {1}:
            cols = ["group"]
        else:
            raise ValueError("give group_cols naming the elements of the group keys.")
    clash = [c for c in cols if c in ERROR_COLUMNS or c in FIT_COLUMNS]
    if clash:
        raise ValueError(f"group column {clash[0]!r} clashes with an output column; rename it.")
    return out, cols


def _seeds_iv(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, (bool, np.bool_)):
        return tuple(range(_positive_int(seeds, "seeds")))
    values = tuple(int(s) for s in seeds)
    if not values or any(s < 0 for s in values) or len(set(values)) != len(values):
        raise ValueError(f"seeds must be a count >= 1 or distinct integers >= 0, got {seeds!r}.")
    return values


@contextlib.contextmanager
def _backend(client: Any) -> Iterator[None]:
    if client is None:
        yield
        return
    import joblib

    # Each fit records its warnings and pins BLAS threads, both process-wide
    # state: two fits in threads of one worker would mix them up.
    threads = client.nthreads()
    per_process: dict[Any, int] = {}
    for worker, pid in client.run(os.getpid).items():
        per_process[pid] = per_process.get(pid, 0) + threads.get(worker, 1)
    if any(n > 1 for n in per_process.values()):
        raise ValueError(
            "passmix needs Dask workers that are processes with one thread each "
            "(threads_per_worker=1, processes=True); this cluster runs "
            f"{max(per_process.values())} threads in one process."
        )
    with joblib.parallel_config(backend="dask", client=client):
        yield


def run_repeated(
    groups: Mapping[tuple, GroupData] | GroupData,
    *,
    group_cols: Sequence[str] = (),
    m: Sequence[int] | None = None,
    k: Sequence[int] | None = None,
    seeds: int | Sequence[int] = 3,
    level: float = 0.95,
    max_components: int = 4,
    n_init: int = 10,
    interval: str = "profile",
    jobs: int = 1,
    client: Any = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> RepeatedResult:
    """Run the repeated-trial protocol: subsets, every method, error against the reference.

    Parameters
    ----------
    groups : dict of tuple to Counts or ndarray, Counts or ndarray
        All recorded trials per group, as returned by :func:`load_repeated`
        (or by :func:`passmix.read_counts` with ``group_by``): per-task counts
        (subsets drawn without replacement) or a tasks x trials 0/1 matrix
        (subsets by permuting each task's trials).
    group_cols : sequence of str, default ()
        Names of the key elements; default ``["group"]``.
    m : sequence of int, optional
        Budgets; default :func:`default_m_grid` of the smallest trial count.
    k : sequence of int, optional
        Horizons; default :func:`default_k_grid`. Horizons beyond the
        smallest trial count of a task have no reference and are dropped
        (with a warning).
    seeds : int or sequence of int, default 3
        A count (seeds ``0 .. seeds - 1``) or the seeds themselves.
    level : float, default 0.95
        Confidence level of the mixture intervals.
    max_components, n_init : int
        Passed to :func:`passmix.fit`.
    interval : {"profile", "delta"}, default "profile"
        Interval method of the mixture (:meth:`passmix.MixtureFit.interval`).
    jobs : int, default 1
        Worker processes (joblib's loky backend); ``-1`` for all cores. With
        `client`, the number of concurrent tasks (``-1``: as many as the
        cluster takes).
    client : dask.distributed.Client, optional
        Run the tasks on this Dask cluster (joblib's dask backend). Its workers
        must be processes with one thread each (a fit records warnings and pins
        BLAS threads process-wide); a ValueError says so otherwise.
    cache_dir : path, optional
        Keep one file per (group, seed, m) here and reuse it on the next run
        with the same data and settings.
    progress : bool, default False
        Progress bar over (group, seed, m) on stderr.

    Returns
    -------
    RepeatedResult

    Examples
    --------
    >>> import numpy as np
    >>> from passmix import Counts
    >>> from passmix.experiments import run_repeated
    >>> rng = np.random.default_rng(0)
    >>> full = Counts(rng.binomial(40, rng.beta(1, 3, 60)), np.full(60, 40))
    >>> res = run_repeated(full, m=[5], k=[2, 20], seeds=1, max_components=1, n_init=2)
    >>> sorted(res.errors["method"].unique())
    ['combinatorial', 'mixture', 'naive']
    >>> res.errors.columns[:3].tolist()
    ['group', 'seed', 'm']
    """
    data, cols = _groups_iv(groups, group_cols)
    level = check_level(level)
    full = {key: _full_counts(d) for key, d in data.items()}
    n_trials = int(min(c.trials[c.trials > 0].min() for c in full.values()))
    m_grid = default_m_grid(n_trials) if m is None else _grid_iv(m, "m")
    k_grid = default_k_grid(n_trials) if k is None else _grid_iv(k, "k")
    beyond = [v for v in k_grid if v > n_trials]
    if beyond:
        warnings.warn(f"no reference beyond k = {n_trials} (the fewest trials of a task); "
                      f"dropping k = {', '.join(map(str, beyond))}.", UserWarning, stacklevel=2)
        k_grid = tuple(v for v in k_grid if v <= n_trials)
        if not k_grid:
            raise ValueError(f"every horizon exceeds {n_trials}, the fewest trials of a task.")
    config = RepeatedConfig(m=m_grid, k=k_grid, seeds=_seeds_iv(seeds), level=level,
                            max_components=_positive_int(max_components, "max_components"),
                            n_init=_positive_int(n_init, "n_init"),
                            interval=_interval_iv(interval))
    if not isinstance(jobs, numbers.Integral) or jobs == 0 or jobs < -1:
        raise ValueError(f"jobs must be >= 1 or -1, got {jobs!r}.")

    started = time.perf_counter()
    references = _references(full, config.k, cols)
    cache = _Cache(cache_dir, config, {key: _data_hash(key, d) for key, d in data.items()})
    units: dict[tuple, dict[str, Any]] = {}
    tasks = []
    for key, d in data.items():
        gid = group_id(key)
        for seed in config.seeds:
            missing = []
            for budget in config.m:
                hit = cache.read(key, seed, budget)
                if hit is None:
                    missing.append(budget)
                else:
                    units[(key, seed, budget)] = hit
            if missing:
                tasks.append(_Task(key, gid, d, seed, tuple(missing), config.k, config.level,
                                   config.max_components, config.n_init, config.interval))
    n_cached = len(units)
    total = len(data) * len(config.seeds) * len(config.m)
    _execute(tasks, jobs, client, progress, n_cached, total, units, cache)
    errors, fits = _assemble(units, data, config, cols, references)
    return RepeatedResult(errors=errors, fits=fits, references=references, config=config,
                          group_cols=cols, n_trials=n_trials,
                          timings={"seconds": time.perf_counter() - started,
                                   "units_cached": n_cached, "units_computed": total - n_cached})


def _execute(tasks: list[_Task], jobs: int, client: Any, progress: bool, n_cached: int,
             total: int, units: dict, cache: _Cache) -> None:
    """Run the tasks (in this process, on local workers or on Dask), caching as they finish."""
    from tqdm import tqdm

    bar = tqdm(total=total, initial=n_cached, desc="passmix repeated", unit="fit",
               file=sys.stderr, disable=not progress, leave=False)
    with bar, _backend(client):
        if not tasks:
            return
        if jobs == 1 and client is None:
            results: Iterator = map(_run_task, tasks)
        else:
            import joblib

            results = joblib.Parallel(n_jobs=jobs, return_as="generator_unordered",
                                      batch_size=1)(joblib.delayed(_run_task)(t) for t in tasks)
        for key, seed, new_units in results:
            for unit in new_units:
                cache.write(key, seed, unit)
                units[(key, seed, unit["m"])] = unit
            bar.update(len(new_units))


def _references(full: dict[tuple, Counts], ks: tuple[int, ...], cols: list[str]
                ) -> pd.DataFrame:
    rows = []
    for key, counts in full.items():
        n_trials = int(counts.trials[counts.trials > 0].min())
        for metric in METRICS:
            values = combinatorial_estimate(counts, metric, np.asarray(ks))
            rows.extend({**dict(zip(cols, key)), "metric": metric, "k": int(kk),
                         "reference": float(v), "n_tasks": counts.n_observed,
                         "n_trials": n_trials}
                        for kk, v in zip(ks, values))
    return pd.DataFrame(rows)


def _assemble(units: dict, data: dict, config: RepeatedConfig, cols: list[str],
              references: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    est_frames, fit_rows = [], []
    value_cols = ["seed", "m", "k", "metric", "method", "estimate", "lower", "upper"]
    for key in data:  # fixed order: groups, seeds, m as configured
        for seed in config.seeds:
            for budget in config.m:
                unit = units[(key, seed, budget)]
                frame = pd.DataFrame(unit["rows"], columns=value_cols)
                for col, val in zip(cols, key):
                    frame.insert(len(frame.columns) - len(value_cols), col, val)
                est_frames.append(frame)
                fit_rows.append({**dict(zip(cols, key)), **unit["fit"]})
    errors = pd.concat(est_frames, ignore_index=True)
    errors = errors.astype({"estimate": "float64", "lower": "float64", "upper": "float64"})
    errors = errors.merge(references[[*cols, "metric", "k", "reference"]],
                          on=[*cols, "metric", "k"], how="left", validate="many_to_one")
    errors["abs_error"] = 100.0 * (errors["estimate"] - errors["reference"]).abs()
    order = {m: i for i, m in enumerate(METHODS)}
    metric_order = {m: i for i, m in enumerate(METRICS)}
    errors = (errors.assign(_mo=errors["metric"].map(metric_order),
                            _me=errors["method"].map(order))
              .sort_values([*cols, "seed", "m", "_mo", "_me", "k"], kind="stable")
              .drop(columns=["_mo", "_me"]).reset_index(drop=True))
    # keep the group order of the input, not the sort order of the labels
    rank = {key: i for i, key in enumerate(data)}
    keys = list(zip(*(errors[c] for c in cols)))
    errors = errors.iloc[np.argsort([rank[k] for k in keys], kind="stable")]
    errors = errors.reset_index(drop=True)[[*cols, *ERROR_COLUMNS]]
    fits = pd.DataFrame(fit_rows)
    for col in FIT_COLUMNS:
        if col not in fits.columns:
            fits[col] = None
    fits = fits[[*cols, *FIT_COLUMNS]].astype({"n_components": "Int64"})
    return errors, fits


# --------------------------------------------------------------------------
# the whole pipeline: read, run, write tables, report and figures
# --------------------------------------------------------------------------


def repeated_experiment(
    source: pd.DataFrame | str | os.PathLike,
    out: str | os.PathLike,
    *,
    group_by: Hashable | Sequence[Hashable] | None = None,
    layout: str = "auto",
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    m: Sequence[int] | None = None,
    k: Sequence[int] | None = None,
    seeds: int | Sequence[int] = 3,
    level: float = 0.95,
    max_components: int = 4,
    n_init: int = 10,
    interval: str = "profile",
    jobs: int = 1,
    client: Any = None,
    cache: bool = True,
    report_k: Sequence[int] | None = None,
    report_m: int | None = None,
    figures: bool = True,
    title: str | None = None,
    command: str | None = None,
    progress: bool = False,
) -> RepeatedResult:
    """Read data, run :func:`run_repeated` and write every table, the report and figures.

    Parameters
    ----------
    source : DataFrame, str or path
        The data (see :func:`load_repeated`).
    out : path
        Output folder, created if needed. It receives ``errors.csv``,
        ``fits.csv``, ``references.csv``, the summary tables (CSV),
        ``report.md``, ``config.json`` and, with `figures`, PNG and PDF
        figures; the cache goes to ``out/cache/``.
    group_by, layout, task, successes, trials, outcome
        As for :func:`passmix.read_counts`.
    m, k, seeds, level, max_components, n_init, interval, jobs, client
        As for :func:`run_repeated`.
    cache : bool, default True
        Keep and reuse per-(group, seed, m) results under ``out/cache/``.
    report_k, report_m
        Fixed horizons and budget of the report's tables
        (see :func:`passmix.experiments.report.write_report`).
    figures : bool, default True
        Draw the figures.
    title, command : str, optional
        Title of the report and the command line that produced it.
    progress : bool, default False
        Progress bar on stderr.

    Returns
    -------
    RepeatedResult
    """
    from .figures import write_figures
    from .report import write_report

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    groups = load_repeated(source, group_by=group_by, layout=layout, task=task,
                           successes=successes, trials=trials, outcome=outcome)
    cols = _group_cols(group_by)
    result = run_repeated(groups, group_cols=cols, m=m, k=k, seeds=seeds, level=level,
                          max_components=max_components, n_init=n_init, interval=interval,
                          jobs=jobs, client=client, cache_dir=out / "cache" if cache else None,
                          progress=progress)
    result.errors.to_csv(out / "errors.csv", index=False)
    result.fits.to_csv(out / "fits.csv", index=False)
    result.references.to_csv(out / "references.csv", index=False)
    source_name = source if not isinstance(source, pd.DataFrame) else "DataFrame"
    (out / "config.json").write_text(json.dumps({
        **result.config.to_dict(), "source": str(source_name), "group_by": cols,
        "n_trials": result.n_trials, "command": command}, indent=2) + "\n", encoding="utf-8")
    fig_names = write_figures(result, out, report_k=report_k, report_m=report_m) if figures else []
    write_report(result, out, report_k=report_k, report_m=report_m, title=title,
                 command=command, source=str(source_name), figures=fig_names)
    return result
