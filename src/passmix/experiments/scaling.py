"""The second paper's scaling protocol: spend a budget with a sampler, predict Pass@k far beyond it.

Per group (a system with per-task records, or an oracle population of known
success probabilities), seed, budget ``B/n`` (attempts per task on average)
and sampler, :func:`run_scaling` spends ``B`` attempts (replaying records
without replacement, or drawing from the oracle), fits every predictor to
the counts so gathered, and compares its Pass@k at each horizon with the
reference: the unbiased Pass@k of all records, or the oracle's truth. Units
of (group, seed, budget, sampler) run on the shared harness (cache, joblib or
Dask, progress), with random streams that depend on the seed, the group, the
budget and the sampler alone.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data.counts import Counts
from ..estimators.registry import get_estimator
from ..scaling.samplers import SAMPLERS, make_sampler
from ..scaling.simulate import OracleSystem, ReplaySystem, spend
from ..tables import recorded_warnings
from ._harness import (Cache, data_hash, execute_cached, grid_iv, group_columns_iv, group_id,
                       jobs_iv, keyed_groups, names_iv, positive_int, seeds_iv, settings_key,
                       stream)

__all__ = ["ERROR_COLUMNS", "PREDICTORS", "ScalingConfig", "ScalingResult", "run_scaling"]

#: The predictors the protocol runs by default, in report order.
PREDICTORS = ("beta_binomial", "mixture", "scaled_beta_binomial", "discretized_beta", "loglog")
#: Columns of ``errors`` after the group columns.
ERROR_COLUMNS = ("seed", "budget", "k", "sampler", "estimator", "estimate", "reference",
                 "abs_error", "sq_error")
_VERSION = 1  # bump when a unit's content changes


@dataclass(frozen=True)
class ScalingConfig:
    """Settings of a scaling run (budgets are attempts per task)."""

    budgets: tuple[int, ...]
    k: tuple[int, ...]
    seeds: tuple[int, ...]
    samplers: tuple[str, ...]
    estimators: tuple[str, ...]
    batch_size: int = 1

    def cache_key(self) -> str:
        return settings_key("scaling", self, _VERSION)


@dataclass(frozen=True)
class ScalingResult:
    """What :func:`run_scaling` measured.

    Attributes
    ----------
    errors : pandas.DataFrame
        One row per group, seed, budget, k, sampler and estimator: the group
        columns, then :data:`ERROR_COLUMNS` (errors in points).
    allocations : pandas.DataFrame
        Per run and task: group columns, seed, budget, sampler, target (the
        horizon an adaptive sampler aimed at; 0 for the others), task,
        attempts, successes, and ``p`` (the task's record rate or true
        probability).
    references : pandas.DataFrame
        Group columns, k, reference.
    config : ScalingConfig
    group_cols : list of str
    warnings : pandas.DataFrame
        Group columns, seed, budget, sampler, message: warnings of the fits.
    timings : dict
        ``seconds``, ``units``, ``units_cached``.
    """

    errors: pd.DataFrame
    allocations: pd.DataFrame
    references: pd.DataFrame
    config: ScalingConfig
    group_cols: list
    warnings: pd.DataFrame
    timings: dict

    def ranking(self) -> pd.DataFrame:
        """Mean absolute error (points) per budget, k, sampler and estimator, best first.

        ``n`` counts the runs, ``missing`` those without a prediction; a pair
        with a missing prediction gets NaN errors and no rank.
        """
        table = (self.errors.groupby(["budget", "k", "sampler", "estimator"], sort=False)
                 .agg(mae=("abs_error", lambda v: v.mean(skipna=False)),
                      rmse=("sq_error", lambda v: np.sqrt(v.mean(skipna=False))),
                      n=("abs_error", "size"),
                      missing=("abs_error", lambda v: int(v.isna().sum()))).reset_index())
        table["rank"] = table.groupby(["budget", "k"])["mae"].rank(method="min").astype("Int64")
        return table.sort_values(["budget", "k", "rank"]).reset_index(drop=True)


@dataclass(frozen=True)
class _Unit:
    key: tuple
    gid: int
    source: Any  # Counts (replay) or probabilities (oracle)
    seed: int
    budget: int
    sampler: str
    k: tuple[int, ...]
    target: int  # the horizon an adaptive sampler aims at (0: none)
    estimators: tuple[str, ...]
    batch_size: int


def _sampler_index(name: str) -> int:
    return sorted(SAMPLERS).index(name)


def _run_unit(unit: _Unit) -> dict[str, Any]:
    """Spend the budget, fit every predictor, return estimates and the allocation."""
    path = (unit.budget, _sampler_index(unit.sampler), unit.target)
    if isinstance(unit.source, Counts):
        system = ReplaySystem(unit.source.successes, unit.source.trials,
                              seed=stream(unit.seed, unit.gid, *path, 0))
    else:
        system = OracleSystem(unit.source, seed=stream(unit.seed, unit.gid, *path, 0))
    n = system.n_tasks
    sampler = make_sampler(unit.sampler, n, k=unit.target or max(unit.k),
                           budget=unit.budget * n, seed=stream(unit.seed, unit.gid, *path, 1))
    spend(system, sampler, unit.budget * n, batch_size=unit.batch_size)
    counts = Counts(sampler.successes, sampler.attempts)
    estimates, messages = {}, []
    for name in unit.estimators:
        with recorded_warnings() as caught:
            try:
                fitted = get_estimator(name)(counts, seed=unit.seed)
                values = np.asarray(fitted.metric("pass@k", list(unit.k)), dtype=float)
            except ValueError as err:  # e.g. log-log with nothing solved: no prediction
                values = np.full(len(unit.k), np.nan)
                messages.append(f"{name}: {err}")
        messages += [f"{name}: {w.message}" for w in caught]
        estimates[name] = values.tolist()
    if isinstance(system, ReplaySystem) and system.recycled.any():
        messages.append(f"replay: {int((system.recycled > 0).sum())} task(s) used all their "
                        f"records and were replayed again")
    return {"key": list(unit.key), "seed": unit.seed, "budget": unit.budget,
            "sampler": unit.sampler, "target": unit.target, "k": list(unit.k),
            "estimates": estimates,
            "attempts": sampler.attempts.tolist(), "successes": sampler.successes.tolist(),
            "warnings": sorted(set(messages))}


def _groups_iv(groups, group_cols) -> tuple[dict[tuple, Any], list]:
    if isinstance(groups, (Counts, np.ndarray, list)):
        groups = {("all",): groups}
        group_cols = list(group_cols) or ["group"]
    out = {}
    for key, value in keyed_groups(groups, "groups must be a non-empty dict of group key to "
                                   "Counts (records to replay) or to per-task success "
                                   "probabilities (an oracle)."):
        if isinstance(value, Counts):
            if (value.trials < 1).any():
                raise ValueError(f"group {key}: every task needs records to replay.")
            out[key] = value
        else:
            p = np.asarray(value, dtype=float)
            if p.ndim != 1 or not p.size or not np.isfinite(p).all() or (p < 0).any() \
                    or (p > 1).any():
                raise ValueError(f"group {key}: probabilities must be a 1-d array in [0, 1].")
            out[key] = p
    return out, group_columns_iv(out, group_cols)


def _reference(source: Any, k: tuple[int, ...]) -> np.ndarray:
    if isinstance(source, Counts):
        return np.asarray(ReplaySystem(source.successes, source.trials).pass_at_k(list(k)))
    return np.asarray(OracleSystem(source).pass_at_k(list(k)))


def run_scaling(groups, group_cols: Sequence[str] = (), *, budgets=(10, 78), k=(100, 1000),
                seeds=3, samplers=("uniform", "dynamic", "adaptive"), estimators=PREDICTORS,
                batch_size: int = 1, jobs: int = 1, client: Any = None,
                cache_dir: str | Path | None = None, progress: bool = False) -> ScalingResult:
    """Run the scaling protocol on replayed records or oracle populations.

    Parameters
    ----------
    groups : Counts, array_like or dict of tuple to Counts or array_like
        Per group: a :class:`~passmix.Counts` of many records per task (replayed
        without replacement; the reference is their unbiased Pass@k), or the
        tasks' true success probabilities (an oracle).
    group_cols : sequence of str
        Names of the group key's parts.
    budgets : sequence of int, default (10, 78)
        Attempts per task on average (B / n).
    k : sequence of int, default (100, 1000)
        Horizons. With records, only those up to a group's fewest records per
        task are scored.
    seeds : int or sequence of int, default 3
    samplers : sequence of str, default all three
    estimators : sequence of str, default :data:`PREDICTORS`
        Registered one-system estimators (``"all"``: every one).
    batch_size : int, default 1
        Attempts a sampler picks at once.
    jobs, client, cache_dir, progress
        As for :func:`passmix.experiments.run_repeated`.

    Returns
    -------
    ScalingResult

    Examples
    --------
    >>> from passmix.experiments.scaling import run_scaling
    >>> from passmix.scaling import oracle_population
    >>> p = oracle_population("half_impossible", 40)
    >>> res = run_scaling({("half",): p}, ["case"], budgets=[5], k=[100], seeds=1,
    ...                   samplers=["uniform"], estimators=["beta_binomial", "loglog"])
    >>> res.errors[["sampler", "estimator"]].values.tolist()
    [['uniform', 'beta_binomial'], ['uniform', 'loglog']]
    >>> res.errors["reference"].round(6).tolist()
    [0.5, 0.5]
    """
    data, cols = _groups_iv(groups, group_cols)
    config = ScalingConfig(budgets=grid_iv(budgets, "budgets"), k=grid_iv(k, "k"),
                           seeds=seeds_iv(seeds),
                           samplers=names_iv(samplers, tuple(SAMPLERS), "samplers"),
                           estimators=names_iv(_one_system() if estimators == "all" or (
                               not isinstance(estimators, str) and "all" in estimators)
                               else estimators, _one_system(), "estimators"),
                           batch_size=positive_int(batch_size, "batch_size"))
    jobs = jobs_iv(jobs)
    per_group = {}
    for key, source in data.items():
        cap = int(source.trials.min()) if isinstance(source, Counts) else np.inf
        per_group[key] = tuple(v for v in config.k if v <= cap)
    dropped = {key: [v for v in config.k if v not in ks] for key, ks in per_group.items()}
    if any(dropped.values()):
        shown = "; ".join(f"{key}: k = {', '.join(map(str, v))}"
                          for key, v in dropped.items() if v)
        warnings.warn(f"no reference beyond a group's fewest records per task; not scored: "
                      f"{shown}.", UserWarning, stacklevel=2)
    if not any(per_group.values()):
        raise ValueError("every horizon exceeds the records of every group.")

    started = time.perf_counter()
    cache = Cache(cache_dir, config.cache_key(), {key: data_hash(key, d if isinstance(
        d, Counts) else np.asarray(d)) for key, d in data.items()})

    def plans():
        for key, source in data.items():
            if not per_group[key]:
                continue
            for seed in config.seeds:
                for budget in config.budgets:
                    for name in config.samplers:
                        # an adaptive sampler aims at one horizon: one run per k
                        runs = [((kv,), kv) for kv in per_group[key]] if name == "adaptive" \
                            else [(per_group[key], 0)]
                        for ks, target in runs:
                            yield ((key, seed, budget, name, target),
                                   _Unit(key, group_id(key), source, seed, budget, name, ks,
                                         target, config.estimators, config.batch_size))

    units, cached = execute_cached(
        _run_unit, plans(), cache, name_of=lambda uid: _label(*uid[1:]),
        id_of=lambda unit: (tuple(unit["key"]), unit["seed"], unit["budget"], unit["sampler"],
                            unit["target"]),
        jobs=jobs, client=client, progress=progress, desc="scaling")
    return _assemble(units, data, per_group, cols, config, cached,
                     time.perf_counter() - started)


def _label(seed: int, budget: int, sampler: str, target: int) -> str:
    return f"seed{seed}_b{budget}_{sampler}" + (f"_k{target}" if target else "")


def _one_system() -> tuple[str, ...]:
    from ..estimators.registry import estimator_names

    return tuple(n for n in estimator_names() if not get_estimator(n).joint)


def _assemble(units, data, per_group, cols, config, cached, seconds) -> ScalingResult:
    refs = {key: _reference(data[key], ks) for key, ks in per_group.items() if ks}
    rows, alloc, warns = [], [], []
    for (key, seed, budget, sampler, target), unit in sorted(units.items(), key=lambda kv: (
            list(data).index(kv[0][0]), kv[0][1], kv[0][2],
            config.samplers.index(kv[0][3]), kv[0][4])):
        ks = tuple(unit["k"])
        ref = refs[key][[per_group[key].index(kv) for kv in ks]]
        for name in config.estimators:
            est = np.asarray(unit["estimates"][name], dtype=float)
            err = np.abs(est - ref) * 100
            for i, kv in enumerate(ks):
                rows.append((*key, seed, budget, kv, sampler, name, est[i], ref[i],
                             err[i], err[i] ** 2))
        source = data[key]
        p = source.successes / source.trials if isinstance(source, Counts) else source
        for task, (a, s) in enumerate(zip(unit["attempts"], unit["successes"])):
            alloc.append((*key, seed, budget, sampler, target, task, a, s, p[task]))
        warns += [(*key, seed, budget, sampler, msg) for msg in unit["warnings"]]
    errors = pd.DataFrame(rows, columns=[*cols, *ERROR_COLUMNS])
    allocations = pd.DataFrame(alloc, columns=[*cols, "seed", "budget", "sampler", "target",
                                               "task", "attempts", "successes", "p"])
    references = pd.DataFrame([(*key, kv, r) for key, ks in per_group.items() if ks
                               for kv, r in zip(ks, refs[key])], columns=[*cols, "k", "reference"])
    warn_frame = pd.DataFrame(warns, columns=[*cols, "seed", "budget", "sampler", "message"])
    return ScalingResult(errors, allocations, references, config, cols, warn_frame,
                         {"seconds": seconds, "units": len(units), "units_cached": cached})
