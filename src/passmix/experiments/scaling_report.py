"""Report and figures of a scaling run: rankings, heatmaps, error curves, allocations.

:func:`write_scaling_report` writes ``errors.csv``, ``allocations.csv``,
``ranking.csv``, ``report.md`` and the figures of a
:class:`~passmix.experiments.scaling.ScalingResult`; :func:`scaling_experiment`
reads a file, runs :func:`~passmix.experiments.scaling.run_scaling` and
writes it all (the ``passmix experiment scaling`` command).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..data.counts import Counts
from ..data.read import read_counts
from .report import (best_cell, plain_table, report_head, save_figures, warning_lines,
                     write_tables)
from .scaling import PREDICTORS, ScalingResult, run_scaling

__all__ = ["cell_mae", "plot_allocation", "plot_error_vs_budget", "plot_heatmaps", "scaling_experiment",
           "write_scaling_report"]


def cell_mae(errors: pd.DataFrame) -> pd.DataFrame:
    """MAE per budget, k, sampler, estimator: averaged over seeds, then over groups.

    NaN where any run gave no prediction, so that a predictor is never ranked
    on the easy runs alone.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.experiments.scaling_report import cell_mae
    >>> errors = pd.DataFrame({"group": ["a", "a", "b"], "seed": [0, 1, 0], "budget": 3,
    ...                        "k": 10, "sampler": "uniform", "estimator": "bb",
    ...                        "abs_error": [0.1, 0.3, 0.4]})
    >>> round(float(cell_mae(errors)["mae"].iloc[0]), 12)  # (0.2 + 0.4) / 2
    0.3
    """
    gcols = [c for c in errors.columns if c not in
             ("seed", "budget", "k", "sampler", "estimator", "estimate", "reference",
              "abs_error", "sq_error")]
    per_group = errors.groupby([*gcols, "budget", "k", "sampler", "estimator"], sort=False,
                               dropna=False)["abs_error"].agg(
        lambda v: v.mean(skipna=False)).reset_index()
    return per_group.groupby(["budget", "k", "sampler", "estimator"], sort=False
                             )["abs_error"].agg(lambda v: v.mean(skipna=False)
                                                ).reset_index(name="mae")


def plot_heatmaps(errors: pd.DataFrame):
    """MAE (points) over budget x k, one panel per sampler x estimator (shared colour scale)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    cells = cell_mae(errors)
    samplers = list(dict.fromkeys(cells["sampler"]))
    estimators = list(dict.fromkeys(cells["estimator"]))
    budgets = sorted(cells["budget"].unique())
    ks = sorted(cells["k"].unique())
    positive = cells["mae"][cells["mae"] > 0]
    norm = LogNorm(vmin=max(positive.min(), 0.01), vmax=max(positive.max(), 0.02)) \
        if positive.size else None
    fig, axes = plt.subplots(len(samplers), len(estimators), squeeze=False,
                             figsize=(2.3 * len(estimators) + 1, 1.9 * len(samplers) + 0.6),
                             constrained_layout=True)
    image = None
    for i, smp in enumerate(samplers):
        for j, est in enumerate(estimators):
            ax = axes[i, j]
            sub = cells[(cells["sampler"] == smp) & (cells["estimator"] == est)]
            grid = sub.pivot(index="budget", columns="k", values="mae").reindex(
                index=budgets, columns=ks)
            image = ax.imshow(np.clip(grid.values, 0.01, None), norm=norm, cmap="viridis",
                              aspect="auto", origin="lower")
            for (r, c), v in np.ndenumerate(grid.values):
                if np.isfinite(v):
                    ax.text(c, r, f"{v:.1f}", ha="center", va="center", fontsize=7,
                            color="white" if norm is None or norm(v) < 0.6 else "black")
            ax.set_xticks(range(len(ks)), [str(v) for v in ks], fontsize=7)
            ax.set_yticks(range(len(budgets)), [str(v) for v in budgets], fontsize=7)
            if i == 0:
                ax.set_title(est, fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{smp}\nB/n", fontsize=9)
            if i == len(samplers) - 1:
                ax.set_xlabel("k", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="MAE (points)")
    return fig


def plot_error_vs_budget(errors: pd.DataFrame, k: int):
    """MAE at horizon `k` against the budget, one line per sampler x estimator."""
    import matplotlib.pyplot as plt

    cells = cell_mae(errors[errors["k"] == k])
    fig, ax = plt.subplots(figsize=(6.5, 4), constrained_layout=True)
    samplers = list(dict.fromkeys(cells["sampler"]))
    estimators = list(dict.fromkeys(cells["estimator"]))
    styles = ["-", "--", ":", "-."]
    for j, est in enumerate(estimators):
        for i, smp in enumerate(samplers):
            sub = cells[(cells["sampler"] == smp) & (cells["estimator"] == est)]
            ax.plot(sub["budget"], sub["mae"], ls=styles[i % len(styles)], marker="o",
                    color=f"C{j}", label=f"{est} / {smp}")
    ax.set_xscale("log")
    ax.set_xlabel("budget B/n (attempts per task)")
    ax.set_ylabel(f"MAE of Pass@{k} (points)")
    ax.legend(fontsize=6, ncol=2)
    return fig


def theorem1_allocation(p, k: int, total: int) -> np.ndarray:
    """The second paper's Theorem 1: ``b_j ∝ sqrt(p_j (1 - p_j)^(2k - 1))``, scaled to `total`.

    Examples
    --------
    >>> from passmix.experiments.scaling_report import theorem1_allocation
    >>> theorem1_allocation([0.0, 0.01, 0.5], k=10, total=100).round(1).tolist()
    [0.0, 98.9, 1.1]
    """
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore"):
        log_w = 0.5 * (np.log(p) + (2 * k - 1) * np.log1p(-p))
    w = np.exp(log_w - np.max(log_w)) if np.isfinite(log_w).any() else np.zeros(p.size)
    return total * w / w.sum() if w.sum() > 0 else np.zeros(p.size)


def plot_allocation(allocations: pd.DataFrame, k: int):
    """Attempts per task (tasks by true rate) of each sampler, beside Theorem 1's oracle."""
    import matplotlib.pyplot as plt

    samplers = list(dict.fromkeys(allocations["sampler"]))
    fig, axes = plt.subplots(1, len(samplers), squeeze=False, sharey=True,
                             figsize=(3.2 * len(samplers), 3.2), constrained_layout=True)
    for ax, smp in zip(axes[0], samplers):
        sub = allocations[allocations["sampler"] == smp]
        if smp == "adaptive" and (sub["target"] == k).any():
            sub = sub[sub["target"] == k]
        per_task = sub.groupby("task").agg(p=("p", "first"), attempts=("attempts", "mean"))
        per_task = per_task.sort_values("p")
        ax.bar(np.arange(len(per_task)), per_task["attempts"], width=1.0, color="C0",
               label=f"{smp} (mean over runs)")
        oracle = theorem1_allocation(per_task["p"].to_numpy(), k,
                                     int(round(per_task["attempts"].sum())))
        ax.plot(np.arange(len(per_task)), oracle, color="C3", lw=1.2,
                label=f"Theorem 1, k = {k}")
        ax.set_yscale("symlog", linthresh=1)
        ax.set_xlabel("task (by true rate, hardest left)")
        ax.set_title(smp, fontsize=10)
        ax.legend(fontsize=7, loc="lower center")
    axes[0, 0].set_ylabel("attempts")
    return fig


def write_scaling_report(result: ScalingResult, out: str | os.PathLike, *,
                         title: str | None = None, command: str | None = None,
                         source: str | None = None, figures: bool = True) -> Path:
    """Write CSVs, figures and ``report.md`` of a scaling run to `out`; return the report's path."""
    out = write_tables(out, {"errors": result.errors, "allocations": result.allocations,
                             "ranking": result.ranking()})
    cfg = result.config
    lines = report_head(title or "Pass@k scaling: samplers x predictors", command)
    lines += [f"passmix {__version__}. Data: {source or 'in memory'}; "
              f"{result.errors[result.group_cols].drop_duplicates().shape[0]} group(s); "
              f"budgets B/n = {', '.join(map(str, cfg.budgets))}; k = "
              f"{', '.join(map(str, cfg.k))}; seeds {', '.join(map(str, cfg.seeds))}; "
              f"{result.timings['units']} runs ({result.timings['units_cached']} cached) in "
              f"{result.timings['seconds']:.0f} s.", "",
              "Error: |predicted Pass@k - reference| in points, averaged over seeds and "
              "groups. Reference: the unbiased Pass@k of all records (or the oracle's truth). "
              "The adaptive sampler aims at one horizon, so it runs once per k. The paper's "
              "log-log and discretized-Beta baselines assume uniform sampling; with the "
              "other samplers they are shown for completeness. n/a: the predictor gave no "
              "estimate in some run (see Warnings). Best in each table in bold.", ""]
    cells = cell_mae(result.errors)
    for (budget, k), sub in cells.groupby(["budget", "k"], sort=True):
        grid = sub.pivot(index="estimator", columns="sampler", values="mae")
        grid = grid.reindex(index=[e for e in cfg.estimators if e in grid.index],
                            columns=[s for s in cfg.samplers if s in grid.columns])
        best = np.nanmin(grid.values)
        shown = grid.map(lambda v: best_cell(v, best))
        lines += [f"## B/n = {budget}, k = {k}", "",
                  plain_table(shown.reset_index().rename(columns={"estimator": "predictor"})), ""]
    # the samplers compared with one predictor, for every cell at once
    lines += ["## Samplers with each predictor (MAE, points)", ""]
    wide = cells.pivot_table(index=["estimator", "budget", "k"], columns="sampler",
                             values="mae").reindex(columns=list(cfg.samplers))
    wide = wide.reset_index().round(2)
    lines += [plain_table(wide), ""]
    lines += warning_lines(result.warnings["message"])
    if figures:
        import matplotlib

        matplotlib.use("Agg", force=False)

        figs = {"fig_heatmaps": plot_heatmaps(result.errors)}
        for k in cfg.k:
            if (result.errors["k"] == k).any():
                figs[f"fig_error_vs_budget_k{k}"] = plot_error_vs_budget(result.errors, k)
        top = max(cfg.budgets)
        first = result.allocations[result.group_cols].drop_duplicates().iloc[0]
        mask = (result.allocations["budget"] == top)
        for col in result.group_cols:
            mask &= result.allocations[col] == first[col]
        target = max(result.errors["k"])
        figs[f"fig_allocation_b{top}_k{target}"] = plot_allocation(result.allocations[mask],
                                                                   target)
        lines += ["## Figures", "", *save_figures(figs, out)]
        label = ", ".join(f"{c} = {first[c]}" for c in result.group_cols)
        lines += ["", f"The allocation figure shows {label} at B/n = {top}, against "
                      f"Theorem 1's oracle allocation for k = {target} computed from the "
                      f"tasks' true (record) rates.", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def scaling_experiment(data: str | os.PathLike, out: str | os.PathLike, *,
                       group_by: Sequence[str] | None = None, budgets=(10, 78), k=(100, 1000),
                       seeds=3, samplers=("uniform", "dynamic", "adaptive"),
                       estimators=PREDICTORS, batch_size: int = 1, jobs: int = 1,
                       client: Any = None, cache: bool = True, figures: bool = True,
                       title: str | None = None, command: str | None = None,
                       progress: bool = False, **columns: Any) -> ScalingResult:
    """Read `data` (many records per task), run the scaling protocol, write the report to `out`."""
    groups = read_counts(data, group_by=group_by or None, **columns)
    group_cols = list(group_by or [])
    if isinstance(groups, Counts):
        groups, group_cols = {("all",): groups}, ["group"]
    result = run_scaling(groups, group_cols, budgets=budgets, k=k, seeds=seeds,
                         samplers=samplers, estimators=estimators, batch_size=batch_size,
                         jobs=jobs, client=client,
                         cache_dir=Path(out) / "cache" if cache else None, progress=progress)
    write_scaling_report(result, out, title=title, command=command, source=Path(data).name,
                         figures=figures)
    return result
