"""The repeated-trial protocol of the first paper (``docs/formulas.md``, section 5).

For each group (one system on one benchmark) and each seed, the recorded
trials of every task are put in random order and the first ``m`` are kept,
for every ``m`` of a grid (the subsets are nested). From each subset every
registered estimator (:mod:`passmix.estimators.registry`: ``naive``, ``combinatorial``
where ``k <= m``, ``mixture`` with its interval, and any added) estimates
Pass@k, Pass^k and AUC@k at every horizon of a grid.

The error is the distance, in percentage points, to the *reference*: the
combinatorial estimate on all recorded trials, defined for ``k`` up to the
smallest number of trials of a task of that group. A group whose trials do
not reach a horizon is left out at that horizon (and a warning names it).

Randomness is derived from the seed and the group alone, never from the
order in which work is scheduled (:mod:`passmix.experiments._harness`): the
subsets of group ``g`` under seed ``s`` come from ``stream(s, group_id(g), 0)``
and the fits at ``m`` from ``stream(s, group_id(g), 1, m)``. Results are the
same with one process, several, or a Dask cluster.

Work is split into one task per (group, seed) that fits every ``m`` of that
seed, so a worker process compiles the PyTensor model once and reuses it.
The results of a (group, seed) task are cached per (group, seed, m) as soon
as the task returns, so an interrupted run resumes from the last finished
task; a rerun computes only the budgets not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._defaults import INTERVAL_METHODS, METRICS
from .._validation import check_interval_method, check_k, check_level
from ..data.counts import Counts
from ..estimators.direct import combinatorial_estimate
from ..estimators.registry import estimator_names, get_estimator, shares_tasks
from ..tables import recorded_warnings, result_rows
from ._harness import (Cache, data_hash, execute, group_id, jobs_iv, positive_int,
                       protocol_methods, seeds_iv, stream)
from .grids import PAPER_K, PAPER_M, default_k_grid, default_m_grid
from ._subsets import GroupData, _full_counts, _matrix_iv, load_repeated, nested_subsets

__all__ = [
    "ERROR_COLUMNS",
    "PAPER_K",
    "PAPER_M",
    "RepeatedConfig",
    "RepeatedResult",
    "default_k_grid",
    "default_m_grid",
    "group_id",
    "load_repeated",
    "nested_subsets",
    "protocol_methods",
    "run_repeated",
]

#: Columns of the errors table after the group columns.
ERROR_COLUMNS = ("seed", "m", "k", "metric", "method", "estimate", "lower", "upper",
                 "reference", "abs_error")
#: Columns of the fits table after the group columns.
FIT_COLUMNS = ("seed", "m", "n_components", "converged", "on_bound", "loglik", "bic",
               "bic_by_h", "seconds", "warnings", "error")

#: Columns of the joint estimators' fits table.
JOINT_FIT_COLUMNS = ("seed", "m", "method", "interval", "loglik", "bic", "converged", "detail",
                     "seconds", "warnings", "error")

_PROTOCOL_VERSION = 4


def _grid_iv(values: Any, name: str) -> tuple[int, ...]:
    arr, _ = check_k(values)
    return tuple(sorted({int(v) for v in arr}))



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
        Horizons (a group whose trials do not reach one is left out there).
    seeds : tuple of int
        Subsampling seeds.
    level : float
        Confidence level of the mixture's intervals.
    max_components, n_init : int
        Passed to :func:`passmix.fit`.
    interval : {"profile", "delta"}
        Interval method of the mixture (:meth:`passmix.MixtureFit.interval`).
    methods : tuple of str
        Estimators run, in the protocol's order (:func:`protocol_methods`).
    """

    m: tuple[int, ...]
    k: tuple[int, ...]
    seeds: tuple[int, ...]
    level: float = 0.95
    max_components: int = 4
    n_init: int = 10
    interval: str = "profile"
    methods: tuple[str, ...] = ("naive", "combinatorial", "mixture")

    def cache_key(self) -> str:
        """Hash of the settings that change a (group, seed, m) result."""
        payload = {"protocol": _PROTOCOL_VERSION, "passmix": __version__, "k": list(self.k),
                   "level": self.level, "max_components": self.max_components,
                   "n_init": self.n_init, "interval": self.interval,
                   "methods": list(self.methods)}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view (for ``config.json``)."""
        return {"m": list(self.m), "k": list(self.k), "seeds": list(self.seeds),
                "level": self.level, "max_components": self.max_components,
                "n_init": self.n_init, "interval": self.interval,
                "methods": list(self.methods)}


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
    group_trials : dict
        Smallest number of recorded trials of a task, per group.
    joint_fits : pandas.DataFrame
        One row per (seed, m, joint estimator) (the pooled model fits every
        group's subset at once): ``seed, m, method, interval, loglik, bic,
        converged, detail, seconds, warnings, error``. Empty without joint
        estimators.
    """

    errors: pd.DataFrame
    fits: pd.DataFrame
    references: pd.DataFrame
    config: RepeatedConfig
    group_cols: list[str]
    n_trials: int
    timings: dict[str, float] = field(default_factory=dict)
    group_trials: dict[tuple, int] = field(default_factory=dict)
    joint_fits: pd.DataFrame = field(default_factory=pd.DataFrame)


# --------------------------------------------------------------------------
# the work of one (group, seed): every m
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """One (group, seed): the budgets still to run, at the group's horizons."""

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
    methods: tuple[str, ...]


def _estimate_unit(sub: Counts, unit: _Unit, m: int) -> dict[str, Any]:
    """Every method's estimates at every k from one subset, and the mixture's summary."""
    ks = np.asarray(unit.k, dtype=np.int64)
    rows: list[list[Any]] = []
    info: dict[str, Any] = {"seed": unit.seed, "m": m}
    started = time.perf_counter()
    options = {"seed": stream(unit.seed, unit.gid, 1, m),
               "max_components": unit.max_components, "n_init": unit.n_init}
    failures = []
    with recorded_warnings() as caught:
        for name in unit.methods:
            try:
                result = get_estimator(name)(sub, **options)
                part = result_rows(result, ks, unit.level, unit.interval)
            except (ValueError, RuntimeError) as err:
                failures.append(f"{name}: {type(err).__name__}: {err}")
                rows.extend([unit.seed, m, int(k), metric, name, None, None, None]
                            for metric in METRICS for k in ks)
                continue
            # an estimate that does not exist at a horizon (combinatorial, k > m) is no row
            rows.extend([unit.seed, m, r["k"], r["metric"], name, r["estimate"],
                         None if np.isnan(r["lower"]) else r["lower"],
                         None if np.isnan(r["upper"]) else r["upper"]]
                        for r in part if not np.isnan(r["estimate"]))
            table = getattr(result, "bic_table", None)  # a model chosen by BIC over H
            if table is not None and "bic_by_h" not in info:
                info.update({
                    "n_components": result.n_components, "converged": bool(result.converged),
                    "on_bound": ", ".join(result.on_bound), "loglik": float(result.loglik),
                    "bic": float(result.bic),
                    # the H fitted (an H that could not win on BIC is skipped)
                    "bic_by_h": json.dumps({int(h): float(b) for h, b in
                                            zip(table["n_components"], table["bic"])
                                            if np.isfinite(b)}),
                })
    if failures:
        info["error"] = " | ".join(failures)
    info["seconds"] = time.perf_counter() - started
    info["warnings"] = " | ".join(dict.fromkeys(" ".join(str(w.message).split())
                                                for w in caught))
    return {"m": m, "rows": rows, "fit": info}


def _run_unit(unit: _Unit | _JointUnit) -> tuple[tuple, int, list[dict[str, Any]]]:
    """One (group, seed): the nested subsets and every m's estimates (worker side)."""
    if isinstance(unit, _JointUnit):
        return _run_joint_unit(unit)
    subsets = nested_subsets(unit.data, unit.m, stream(unit.seed, unit.gid, 0))
    return unit.key, unit.seed, [_estimate_unit(subsets[m], unit, m) for m in unit.m]


#: Cache key of the joint units (every group's data at once).
_JOINT_KEY = ("__joint__",)


@dataclass(frozen=True)
class _JointUnit:
    """One seed of the joint estimators: every group's subsets, fitted at once per m.

    The subsets are the per-group units' own (the same random streams), so
    joint and per-group estimators are compared on the same trials.
    """

    seed: int
    m: tuple[int, ...]
    groups: tuple[tuple[tuple, int, GroupData, np.ndarray, tuple[int, ...]], ...]
    level: float
    interval: str
    methods: tuple[str, ...]


def _run_joint_unit(unit: _JointUnit) -> tuple[tuple, int, list[dict[str, Any]]]:
    subsets = {key: nested_subsets(data, unit.m, stream(unit.seed, gid, 0))
               for key, gid, data, _, _ in unit.groups}
    out = []
    for m in unit.m:
        counts = {key: Counts(subsets[key][m].successes, subsets[key][m].trials, tasks)
                  for key, _, _, tasks, _ in unit.groups}
        rows: dict[str, list] = {repr(key): [] for key in counts}
        fits = []
        for name in unit.methods:
            est = get_estimator(name)
            started = time.perf_counter()
            info: dict[str, Any] = {"seed": unit.seed, "m": m, "method": name}
            with recorded_warnings() as caught:
                try:
                    results = est(counts, seed=stream(unit.seed, 0, 2, m))
                except (ValueError, RuntimeError) as err:
                    results, info["error"] = None, f"{type(err).__name__}: {err}"
                for key, _, _, _, ks in unit.groups:
                    if results is None:
                        rows[repr(key)].extend([unit.seed, m, int(k), metric, name, None, None,
                                                None] for metric in METRICS for k in ks)
                        continue
                    result = results[key]
                    # an estimator may lack the asked interval: use its first, and say
                    # so in joint_fits
                    methods = getattr(result, "interval_methods", INTERVAL_METHODS)
                    interval = unit.interval if unit.interval in methods else methods[0]
                    info["interval"] = interval
                    part = result_rows(result, np.asarray(ks, dtype=np.int64), unit.level,
                                       interval)
                    rows[repr(key)].extend(
                        [unit.seed, m, r["k"], r["metric"], name, r["estimate"],
                         None if np.isnan(r["lower"]) else r["lower"],
                         None if np.isnan(r["upper"]) else r["upper"]]
                        for r in part if not np.isnan(r["estimate"]))
                if results:
                    # the joint fit's own facts: what every group's info agrees on
                    infos = [r.info() for r in results.values()]
                    shared = {k: v for k, v in infos[0].items()
                              if all(i.get(k) == v for i in infos[1:])}
                    info.update({k: shared.pop(k) for k in ("loglik", "bic", "converged")
                                 if k in shared})
                    info["detail"] = json.dumps(shared, default=str)
            info["seconds"] = time.perf_counter() - started
            info["warnings"] = " | ".join(dict.fromkeys(" ".join(str(w.message).split())
                                                        for w in caught))
            fits.append(info)
        out.append({"m": m, "rows": rows, "fits": fits})
    return _JOINT_KEY, unit.seed, out


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
    methods: str | Sequence[str] = "all",
    jobs: int = 1,
    client: Any = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    tasks: Mapping[tuple, Sequence[Hashable]] | None = None,
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
        Horizons; default each group's :func:`default_k_grid` (their union).
        A horizon beyond a group's smallest trial count has no reference
        there: that group is left out at that horizon, with a warning naming
        it when the horizon was asked for.
    seeds : int or sequence of int, default 3
        A count (seeds ``0 .. seeds - 1``) or the seeds themselves.
    level : float, default 0.95
        Confidence level of the mixture intervals.
    max_components, n_init : int
        Passed to :func:`passmix.fit`.
    interval : {"profile", "delta"}, default "profile"
        Interval method of the mixture (:meth:`passmix.MixtureFit.interval`).
    methods : str or sequence of str, default "all"
        Registered estimators to run (:func:`passmix.register_estimator`).
        ``"all"`` includes joint ones (the pooled model) when at least two
        groups share a task. A joint estimator is fitted once per (seed, m)
        on every group's subset, the same subsets the per-group estimators
        see.
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
    tasks : dict of tuple to sequence, optional
        Task labels of each group's rows, matching tasks across groups for
        joint estimators (:func:`load_repeated` with ``with_tasks=True`` gives
        them). Default: the labels of each group's Counts; a matrix's rows
        share no task with another group's.

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
    labels = _tasks_iv(tasks, data)
    full = {key: _full_counts(d) for key, d in data.items()}
    labelled = {key: Counts(c.successes, c.trials, labels[key]) for key, c in full.items()}
    trials_of = {key: int(c.trials[c.trials > 0].min()) for key, c in full.items()}
    n_trials = min(trials_of.values())
    m_grid = default_m_grid(n_trials) if m is None else _grid_iv(m, "m")
    if k is None:
        per_group = {key: default_k_grid(t) for key, t in trials_of.items()}
        k_grid = tuple(sorted({v for grid in per_group.values() for v in grid}))
    else:
        k_grid = _grid_iv(k, "k")
        per_group = {key: tuple(v for v in k_grid if v <= t) for key, t in trials_of.items()}
        _warn_unreached(k_grid, per_group, trials_of, cols)
    if not any(per_group.values()):
        raise ValueError(f"every horizon exceeds {max(trials_of.values())}, the most "
                         f"trials of a task any group has.")
    config = RepeatedConfig(m=m_grid, k=k_grid, seeds=seeds_iv(seeds), level=level,
                            max_components=positive_int(max_components, "max_components"),
                            n_init=positive_int(n_init, "n_init"),
                            interval=check_interval_method(interval),
                            methods=_methods_iv(methods, labelled))
    jobs = jobs_iv(jobs)
    own = tuple(n for n in config.methods if not get_estimator(n).joint)
    joint = tuple(n for n in config.methods if get_estimator(n).joint)

    started = time.perf_counter()
    references = _references(full, per_group, cols)
    hashes = {key: data_hash(key, d) for key, d in data.items()}
    if joint:
        digest = hashlib.sha256(json.dumps(sorted(hashes.values())).encode())
        for key in data:
            digest.update(repr(labels[key].tolist()).encode())
        hashes[_JOINT_KEY] = digest.hexdigest()[:16]
    cache = Cache(cache_dir, config.cache_key(), hashes)
    units: dict[tuple, dict[str, Any]] = {}
    todo = []
    for key, d in data.items():
        gid = group_id(key)
        for seed in config.seeds:
            missing = _from_cache(cache, units, key, seed, config.m)
            if missing and per_group[key]:
                todo.append(_Unit(key, gid, d, seed, missing, per_group[key],
                                  config.level, config.max_components, config.n_init,
                                  config.interval, own))
    kept = {key: d for key, d in data.items() if per_group[key]}
    for seed in config.seeds if joint else ():
        missing = _from_cache(cache, units, _JOINT_KEY, seed, config.m)
        if missing:
            # all groups enter the fit (they inform the shared difficulties), even
            # those with no horizon to score
            todo.insert(0, _JointUnit(seed, missing, tuple(
                (key, group_id(key), d, labels[key], per_group[key]) for key, d in data.items()),
                config.level, config.interval, joint))

    def keep(result: tuple[tuple, int, list[dict[str, Any]]]) -> int:
        key, seed, new_units = result
        for unit in new_units:
            cache.write(key, f"seed{seed}_m{unit['m']}", unit)
            units[(key, seed, unit["m"])] = unit
        return len(new_units)

    n_cached = len(units)
    total = (len(kept) + bool(joint)) * len(config.seeds) * len(config.m)
    execute(_run_unit, todo, keep, jobs=jobs, client=client, progress=progress, total=total,
            done=n_cached, desc="passmix repeated")
    errors, fits, joint_fits = _assemble(units, kept, config, cols, references, bool(joint))
    return RepeatedResult(errors=errors, fits=fits, references=references, config=config,
                          group_cols=cols, n_trials=n_trials,
                          timings={"seconds": time.perf_counter() - started,
                                   "units_cached": n_cached, "units_computed": total - n_cached},
                          group_trials=trials_of, joint_fits=joint_fits)


def _from_cache(cache: Cache, units: dict, key: tuple, seed: int,
                budgets: tuple[int, ...]) -> tuple[int, ...]:
    """Put the cached (key, seed, m) units into `units`; return the budgets still to run."""
    missing = []
    for budget in budgets:
        hit = cache.read(key, f"seed{seed}_m{budget}")
        if hit is None:
            missing.append(budget)
        else:
            units[(key, seed, budget)] = hit
    return tuple(missing)


def _tasks_iv(tasks: Mapping[tuple, Sequence[Hashable]] | None,
              data: dict[tuple, GroupData]) -> dict[tuple, np.ndarray]:
    """Each group's task labels, one per row of its data."""
    out = {}
    for key, d in data.items():
        n_rows = d.successes.size if isinstance(d, Counts) else d.shape[0]
        if tasks is None or key not in tasks:
            if tasks is not None and not isinstance(d, Counts):
                raise ValueError(f"tasks has no labels for group {key!r}.")
            # a matrix's rows are positions, not task identities: shared with no one
            out[key] = (d.tasks if isinstance(d, Counts) else
                        np.array([(key, j) for j in range(n_rows)] + [None], dtype=object)[:-1])
            continue
        labels = np.asarray(list(tasks[key]), dtype=object)
        if labels.shape != (n_rows,):
            raise ValueError(f"tasks for group {key!r}: {labels.size} labels for "
                             f"{n_rows} tasks.")
        out[key] = labels
    return out


def _methods_iv(methods: str | Sequence[str], groups: Mapping[tuple, Counts]
                ) -> tuple[str, ...]:
    asked = [methods] if isinstance(methods, str) else list(methods)
    shared = shares_tasks(groups)
    if "all" in asked:
        return protocol_methods(joint=shared)
    chosen = {get_estimator(name).name for name in asked}
    if not chosen:
        raise ValueError("methods is empty.")
    joint = sorted(n for n in chosen if get_estimator(n).joint)
    # one group alone is a one-system model (asked for by name, not by "all")
    if joint and not shared and len(groups) > 1:
        raise ValueError(f"{joint[0]!r} fits all groups at once on their shared tasks, and no "
                         "two groups share a task (give tasks= labels to match them).")
    # the protocol's order, then those "all" leaves out (named, so run), in registry order
    order = protocol_methods(joint=True)
    order += tuple(n for n in estimator_names() if n not in order)
    return tuple(n for n in order if n in chosen)


def _warn_unreached(k_grid: tuple[int, ...], per_group: dict[tuple, tuple[int, ...]],
                    trials_of: dict[tuple, int], cols: list[str]) -> None:
    """One warning naming, per trial count, the groups left out at horizons beyond it."""
    by_cut: dict[int, list[tuple]] = {}
    for key, ks in per_group.items():
        if len(ks) < len(k_grid):
            by_cut.setdefault(trials_of[key], []).append(key)
    if not by_cut:
        return
    parts = []
    for cut, keys in sorted(by_cut.items()):
        names = [", ".join(f"{c}={v!r}" for c, v in zip(cols, key)) for key in keys[:4]]
        more = f" and {len(keys) - 4} more" if len(keys) > 4 else ""
        dropped = ", ".join(str(v) for v in k_grid if v > cut)
        parts.append(f"no reference beyond k = {cut} (the fewest trials of a task) for "
                     f"{'; '.join(names)}{more}: dropping k = {dropped} there")
    warnings.warn(". ".join(parts) + ".", UserWarning, stacklevel=3)


def _references(full: dict[tuple, Counts], per_group: dict[tuple, tuple[int, ...]],
                cols: list[str]) -> pd.DataFrame:
    rows = []
    for key, counts in full.items():
        ks = per_group[key]
        if not ks:
            continue
        n_trials = int(counts.trials[counts.trials > 0].min())
        for metric in METRICS:
            values = combinatorial_estimate(counts, metric, np.asarray(ks))
            rows.extend({**dict(zip(cols, key)), "metric": metric, "k": int(kk),
                         "reference": float(v), "n_tasks": counts.n_observed,
                         "n_trials": n_trials}
                        for kk, v in zip(ks, values))
    return pd.DataFrame(rows)


def _assemble(units: dict, data: dict, config: RepeatedConfig, cols: list[str],
              references: pd.DataFrame, joint: bool = False
              ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    est_frames, fit_rows = [], []
    value_cols = ["seed", "m", "k", "metric", "method", "estimate", "lower", "upper"]
    for key in data:  # fixed order: groups, seeds, m as configured
        for seed in config.seeds:
            for budget in config.m:
                unit = units[(key, seed, budget)]
                rows = list(unit["rows"])
                if joint:
                    rows += units[(_JOINT_KEY, seed, budget)]["rows"][repr(key)]
                frame = pd.DataFrame(rows, columns=value_cols)
                for col, val in zip(cols, key):
                    frame.insert(len(frame.columns) - len(value_cols), col, val)
                est_frames.append(frame)
                fit_rows.append({**dict(zip(cols, key)), **unit["fit"]})
    errors = pd.concat(est_frames, ignore_index=True)
    errors = errors.astype({"estimate": "float64", "lower": "float64", "upper": "float64"})
    errors = errors.merge(references[[*cols, "metric", "k", "reference"]],
                          on=[*cols, "metric", "k"], how="left", validate="many_to_one")
    errors["abs_error"] = 100.0 * (errors["estimate"] - errors["reference"]).abs()
    order = {m: i for i, m in enumerate(config.methods)}
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
    joint_rows = [row for seed in config.seeds for budget in config.m if joint
                  for row in units[(_JOINT_KEY, seed, budget)]["fits"]]
    joint_fits = pd.DataFrame(joint_rows)
    for col in JOINT_FIT_COLUMNS if joint else ():
        if col not in joint_fits.columns:
            joint_fits[col] = None
    if joint:
        joint_fits = joint_fits[list(JOINT_FIT_COLUMNS)]
    return errors, fits, joint_fits
