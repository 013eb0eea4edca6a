"""The first paper's sensitivity protocol: a budget of cells, the score distribution across prompts.

Per group (one system on one benchmark: a complete configuration x question
matrix, or full per-configuration counts), seed and budget B,
:func:`run_sensitivity` observes B cells with a budget sampler (PromptEval's
stratified scheme by default), and estimates the distribution of the
configurations' scores three ways:

* ``mixture``: the Beta-mixture fit of :func:`passmix.sensitivity.sensitivity`;
* ``empirical``: the observed per-configuration scores (configurations
  with no observed cell left out);
* ``pirt``: PromptEval's pIRT estimates (matrices only: it needs question
  identity).

Each is compared with the complete scores: W1 (the paper's midpoint
approximation, and exact) and the absolute error at each percentile, in
points. Units of (group, seed, budget) run on the shared harness (cache,
joblib or Dask, progress), with random streams that depend on the seed, the
group and the budget alone.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_percentiles
from ..sensitivity.analysis import PERCENTILES, score_errors, sensitivity
from ..sensitivity.data import Configurations
from ..sensitivity.pirt import fit_pirt
from ..sensitivity.sampling import CELL_SAMPLERS, sample_cells
from ..tables import recorded_warnings
from ._harness import (Cache, execute_cached, grid_iv, group_columns_iv, group_id, jobs_iv,
                       keyed_groups, names_iv, positive_int, seeds_iv, settings_key, stream)

__all__ = ["BUDGETS", "ERROR_COLUMNS", "METHODS", "SensitivityConfig", "SensitivityRun",
           "run_sensitivity"]

#: The estimates of the score distribution, in report order.
METHODS = ("mixture", "empirical", "pirt")
#: The paper's budgets (cells).
BUDGETS = (300, 600, 900, 1200, 1500)
#: Columns of ``errors`` after the group columns.
ERROR_COLUMNS = ("seed", "budget", "method", "target", "estimate", "reference", "abs_error")
_VERSION = 1  # bump when a unit's content changes


@dataclass(frozen=True)
class SensitivityConfig:
    """Settings of a sensitivity run."""

    budgets: tuple[int, ...]
    seeds: tuple[int, ...]
    methods: tuple[str, ...]
    percentiles: tuple[float, ...]
    sampler: str
    max_components: int = 4
    n_init: int = 10

    def cache_key(self) -> str:
        return settings_key("sensitivity", self, _VERSION)


@dataclass(frozen=True)
class SensitivityRun:
    """What :func:`run_sensitivity` measured.

    Attributes
    ----------
    errors : pandas.DataFrame
        One row per group, seed, budget, method and target: the group
        columns, then :data:`ERROR_COLUMNS`. Targets are ``w1`` (midpoint
        approximation), ``w1_exact`` and ``p5``, ``p25``, ...; values in
        points (for W1 the estimate is the distance and the reference 0).
    fits : pandas.DataFrame
        Per group, seed and budget: the mixture's H and status, and the
        configurations observed.
    config : SensitivityConfig
    group_cols : list of str
    warnings : pandas.DataFrame
        Group columns, seed, budget, message.
    timings : dict
        ``seconds``, ``units``, ``units_cached``.
    """

    errors: pd.DataFrame
    fits: pd.DataFrame
    config: SensitivityConfig
    group_cols: list
    warnings: pd.DataFrame
    timings: dict

    def table(self, target: str = "w1") -> pd.DataFrame:
        """Mean error (points) per budget and method: over seeds in a group, then over groups."""
        sub = self.errors[self.errors["target"] == target]
        per_group = sub.groupby([*self.group_cols, "budget", "method"], sort=False)[
            "abs_error"].mean().reset_index()
        wide = per_group.pivot_table(index="budget", columns="method", values="abs_error")
        return wide.reindex(columns=[m for m in self.config.methods if m in wide.columns])

    def wins(self, method: str = "mixture", against: str = "empirical",
             target: str = "w1") -> pd.Series:
        """Share of groups (per budget) where `method`'s seed-mean error is below `against`'s."""
        sub = self.errors[self.errors["target"] == target]
        per_group = sub.groupby([*self.group_cols, "budget", "method"])["abs_error"].mean() \
            .unstack("method")
        if against not in per_group or method not in per_group:
            return pd.Series(dtype=float)
        return (per_group[method] < per_group[against]).groupby(level="budget").mean()


@dataclass(frozen=True)
class _Unit:
    key: tuple
    gid: int
    data: Configurations
    seed: int
    budget: int
    config: SensitivityConfig


def _run_unit(unit: _Unit) -> dict[str, Any]:
    cfg = unit.config
    rng = stream(unit.seed, unit.gid, unit.budget)
    reference = unit.data.scores()
    observed = sample_cells(unit.data, unit.budget, method=cfg.sampler, seed=rng)
    rows: dict[str, list] = {}
    messages: list[str] = []
    fit_info: dict[str, Any] = {}
    for method in cfg.methods:
        if method == "pirt" and not observed.has_questions:
            continue
        with recorded_warnings() as caught:
            try:
                if method == "mixture":
                    res = sensitivity(observed, percentiles=cfg.percentiles,
                                      max_components=cfg.max_components, n_init=cfg.n_init,
                                      seed=stream(unit.seed, unit.gid, unit.budget, 1))
                    table = res.compare(reference)
                    fit_info = {"n_components": res.fit.n_components,
                                "status": res.fit.status()}
                elif method == "empirical":
                    table = score_errors(observed.scores(), reference, cfg.percentiles)
                else:
                    table = score_errors(fit_pirt(observed).scores(), reference,
                                         cfg.percentiles)
            except ValueError as err:
                messages.append(f"{method}: {err}")
                continue
        messages += [f"{method}: {w.message}" for w in caught]
        rows[method] = [[t, *map(float, v)] for t, v in zip(table.index, table.to_numpy())]
    return {"key": list(unit.key), "seed": unit.seed, "budget": unit.budget, "rows": rows,
            "fit": fit_info, "observed": int((observed.questions > 0).sum()),
            "warnings": sorted(set(messages))}


def _groups_iv(groups: Any, group_cols: Sequence[str]) -> tuple[dict[tuple, Configurations],
                                                                   list]:
    if isinstance(groups, Configurations):
        groups, group_cols = {("all",): groups}, list(group_cols) or ["group"]
    out = {}
    for key, value in keyed_groups(groups, "groups must be Configurations or a non-empty dict "
                                   "of group key to Configurations."):
        if not isinstance(value, Configurations):
            raise TypeError(f"group {key}: expected Configurations, got "
                            f"{type(value).__name__}.")
        out[key] = value
    return out, group_columns_iv(out, group_cols)


def run_sensitivity(groups: Any, group_cols: Sequence[str] = (), *, budgets=BUDGETS,
                    seeds=3, methods=METHODS, percentiles=PERCENTILES,
                    sampler: str = "stratified", max_components: int = 4, n_init: int = 10,
                    jobs: int = 1, client: Any = None, cache_dir: str | Path | None = None,
                    progress: bool = False) -> SensitivityRun:
    """Run the sensitivity protocol on complete matrices or full per-configuration counts.

    Parameters
    ----------
    groups : Configurations or dict of tuple to Configurations
        The complete data of each group (the reference).
    group_cols : sequence of str
        Names of the group key's parts.
    budgets : sequence of int, default (300, 600, 900, 1200, 1500)
        Cells observed. A budget beyond a group's cells is skipped for that
        group, with a warning.
    seeds : int or sequence of int, default 3
    methods : sequence of str, default ("mixture", "empirical", "pirt")
        ``pirt`` runs only where question identity is known (matrices).
    percentiles : sequence of float, default (5, 25, 50, 75, 95)
    sampler : {"stratified", "uniform"}, default "stratified"
    max_components, n_init
        Of the mixture fit.
    jobs, client, cache_dir, progress
        As for :func:`passmix.experiments.run_repeated`.

    Returns
    -------
    SensitivityRun

    Examples
    --------
    >>> from passmix.experiments.sensitivity import run_sensitivity
    >>> from passmix.sensitivity import simulate_matrix
    >>> sim = simulate_matrix(40, 30, seed=0)
    >>> run = run_sensitivity({("sim",): sim.data}, ["case"], budgets=[120], seeds=1)
    >>> sorted(set(run.errors["method"]))
    ['empirical', 'mixture', 'pirt']
    >>> run.table("w1").columns.tolist()
    ['mixture', 'empirical', 'pirt']
    """
    data, cols = _groups_iv(groups, group_cols)
    budgets = grid_iv(budgets, "budgets")
    methods = names_iv(methods, METHODS, "methods")
    if sampler not in CELL_SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; expected one of "
                         f"{', '.join(CELL_SAMPLERS)}.")
    config = SensitivityConfig(
        budgets=budgets, seeds=seeds_iv(seeds), methods=methods,
        percentiles=check_percentiles(percentiles), sampler=sampler,
        max_components=positive_int(max_components, "max_components"),
        n_init=positive_int(n_init, "n_init"))
    jobs = jobs_iv(jobs)
    skipped = {key: [b for b in config.budgets if b > d.n_cells] for key, d in data.items()}
    if any(skipped.values()):
        shown = "; ".join(f"{key}: B = {', '.join(map(str, v))}"
                          for key, v in skipped.items() if v)
        warnings.warn(f"budgets beyond a group's cells are skipped: {shown}.", UserWarning,
                      stacklevel=2)

    started = time.perf_counter()
    cache = Cache(cache_dir, config.cache_key(), {key: _data_hash(key, d)
                                                  for key, d in data.items()})
    plans = (((key, seed, budget), _Unit(key, group_id(key), d, seed, budget, config))
             for key, d in data.items() for seed in config.seeds for budget in config.budgets
             if budget not in skipped[key])
    units, cached = execute_cached(
        _run_unit, plans, cache, name_of=lambda uid: f"seed{uid[1]}_b{uid[2]}",
        id_of=lambda unit: (tuple(unit["key"]), unit["seed"], unit["budget"]),
        jobs=jobs, client=client, progress=progress, desc="sensitivity")
    return _assemble(units, data, cols, config, cached, time.perf_counter() - started)


def _data_hash(key: tuple, data: Configurations) -> str:
    digest = hashlib.sha256(repr(key).encode())
    for arr in (data.successes, data.questions, data.matrix):
        if arr is not None:
            digest.update(np.ascontiguousarray(arr).tobytes())
    return digest.hexdigest()[:16]


def _assemble(units, data, cols, config, cached, seconds) -> SensitivityRun:
    order = list(data)
    rows, fits, warns = [], [], []
    for (key, seed, budget), unit in sorted(units.items(), key=lambda kv: (
            order.index(kv[0][0]), kv[0][1], kv[0][2])):
        for method in config.methods:
            for target, est, ref, err in unit["rows"].get(method, []):
                scale = 100.0
                rows.append((*key, seed, budget, method, target, est * scale, ref * scale,
                             err * scale))
        fits.append((*key, seed, budget, unit["fit"].get("n_components"),
                     unit["fit"].get("status"), unit["observed"]))
        warns += [(*key, seed, budget, msg) for msg in unit["warnings"]]
    errors = pd.DataFrame(rows, columns=[*cols, *ERROR_COLUMNS])
    fit_frame = pd.DataFrame(fits, columns=[*cols, "seed", "budget", "n_components", "status",
                                            "configurations_observed"])
    warn_frame = pd.DataFrame(warns, columns=[*cols, "seed", "budget", "message"])
    return SensitivityRun(errors, fit_frame, config, cols, warn_frame,
                          {"seconds": seconds, "units": len(units), "units_cached": cached})
