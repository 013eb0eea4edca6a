"""Report and figures of a sensitivity run: W1 and percentile errors by budget.

:func:`write_sensitivity_report` writes ``errors.csv``, ``fits.csv``,
``report.md`` and the figures of a
:class:`~passmix.experiments.sensitivity.SensitivityRun`;
:func:`sensitivity_experiment` reads a file, runs
:func:`~passmix.experiments.sensitivity.run_sensitivity` and writes it all
(the ``passmix experiment sensitivity`` command).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..sensitivity.analysis import PERCENTILES
from ..sensitivity.data import Configurations, read_configurations
from .report import (best_cell, plain_table, report_head, save_figures, warning_lines,
                     write_tables)
from .sensitivity import BUDGETS, METHODS, SensitivityRun, run_sensitivity

__all__ = ["plot_error_vs_budget", "sensitivity_experiment", "write_sensitivity_report"]


def plot_error_vs_budget(run: SensitivityRun, targets: Sequence[str] | None = None):
    """Mean error (points) against the budget, one panel per target, one line per method."""
    import matplotlib.pyplot as plt

    targets = list(targets or ["w1", *[f"p{p:g}" for p in run.config.percentiles]])
    fig, axes = plt.subplots(1, len(targets), figsize=(2.6 * len(targets) + 0.5, 2.8),
                             squeeze=False, constrained_layout=True)
    for ax, target in zip(axes[0], targets):
        table = run.table(target)
        for i, method in enumerate(table.columns):
            ax.plot(table.index, table[method], marker="o", ms=3, color=f"C{i}", label=method)
        ax.set_title("W1" if target == "w1" else f"{target} error", fontsize=9)
        ax.set_xlabel("budget (cells)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    axes[0, 0].set_ylabel("mean error (points)", fontsize=8)
    axes[0, 0].legend(fontsize=7)
    return fig


def _example_plot(run: SensitivityRun, data: dict[tuple, Configurations]):
    """The fitted CDF of the first group at the smallest budget, over the reference."""
    import matplotlib.pyplot as plt

    from ._harness import group_id, stream
    from ..sensitivity.analysis import sensitivity
    from ..sensitivity.sampling import sample_cells

    key = next(iter(data))
    budget = min(b for b in run.config.budgets if b <= data[key].n_cells)
    seed = run.config.seeds[0]
    gid = group_id(key)
    observed = sample_cells(data[key], budget, method=run.config.sampler,
                            seed=stream(seed, gid, budget))
    res = sensitivity(observed, percentiles=run.config.percentiles,
                      max_components=run.config.max_components, n_init=run.config.n_init,
                      seed=stream(seed, gid, budget, 1))
    fig, ax = plt.subplots(figsize=(4.6, 3.4), constrained_layout=True)
    res.plot(ax=ax, reference=data[key])
    ax.set_title(", ".join(map(str, key)) + f": B = {budget}", fontsize=9)
    return fig, key, budget


def write_sensitivity_report(run: SensitivityRun, out: str | os.PathLike, *,
                             data: dict[tuple, Configurations] | None = None,
                             title: str | None = None, command: str | None = None,
                             source: str | None = None, figures: bool = True) -> Path:
    """Write CSVs, figures and ``report.md`` of a sensitivity run to `out`; return the report."""
    out = write_tables(out, {"errors": run.errors, "fits": run.fits})
    cfg = run.config
    n_groups = run.errors[run.group_cols].drop_duplicates().shape[0]
    lines = report_head(title or "Sensitivity analysis: the score distribution across "
                        "configurations", command)
    lines += [f"passmix {__version__}. Data: {source or 'in memory'}; {n_groups} group(s); "
              f"budgets {', '.join(map(str, cfg.budgets))} cells ({cfg.sampler} sampling); "
              f"seeds {', '.join(map(str, cfg.seeds))}; {run.timings['units']} runs "
              f"({run.timings['units_cached']} cached) in {run.timings['seconds']:.0f} s.", "",
              "Errors in points of accuracy, averaged over seeds within a group, then over "
              "groups. `mixture`: the fitted Beta mixture of configuration scores; "
              "`empirical`: the observed per-configuration scores; `pirt`: PromptEval's pIRT "
              "(only where question identity is known). W1 is the paper's midpoint-quantile "
              "approximation for the mixture (the exact value is in errors.csv as "
              "`w1_exact`) and the exact distance between samples for the others. "
              "Best in each row in bold.", ""]
    for target in ["w1", *[f"p{p:g}" for p in cfg.percentiles]]:
        table = run.table(target)
        if table.empty:
            continue
        shown = table.apply(lambda row: row.map(
            lambda v, best=np.nanmin(row.values): best_cell(v, best)), axis=1)
        name = "W1" if target == "w1" else f"{target[1:]}th percentile"
        lines += [f"## {name}", "", plain_table(shown.reset_index()), ""]
    wins = {m: run.wins("mixture", m) for m in cfg.methods if m != "mixture"}
    wins = {m: w for m, w in wins.items() if not w.empty}
    if wins:
        frame = pd.DataFrame({f"mixture below {m}": (100 * w).round(0) for m, w in wins.items()})
        lines += ["## Share of groups where the mixture's W1 is lower (%)", "",
                  plain_table(frame.reset_index()), ""]
    h = run.fits.groupby(["budget", "n_components"]).size().unstack(fill_value=0)
    if not h.empty:
        h.columns = [f"H = {int(c)}" for c in h.columns]
        lines += ["## Components chosen by BIC (runs)", "", plain_table(h.reset_index()), ""]
    lines += warning_lines(run.warnings["message"])
    if figures:
        import matplotlib

        matplotlib.use("Agg", force=False)

        figs = {"fig_error_vs_budget": plot_error_vs_budget(run)}
        if data:
            fig, key, budget = _example_plot(run, data)
            figs["fig_example_cdf"] = fig
        lines += ["## Figures", "", *save_figures(figs, out)]
        if data:
            lines += ["", f"fig_example_cdf: {', '.join(map(str, key))} at B = {budget}: the "
                      "fitted CDF (with its 95% quantile band), the observed scores and the "
                      "complete reference."]
        lines.append("")
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def sensitivity_experiment(data: str | os.PathLike | pd.DataFrame, out: str | os.PathLike, *,
                           group_by: Sequence[str] | None = None, budgets=BUDGETS, seeds=3,
                           methods=METHODS, percentiles=PERCENTILES,
                           sampler: str = "stratified", jobs: int = 1, client: Any = None,
                           cache: bool = True, figures: bool = True, title: str | None = None,
                           command: str | None = None, progress: bool = False,
                           **columns: Any) -> SensitivityRun:
    """Read `data`, run the sensitivity protocol, write the report to `out`.

    `data` holds per-configuration counts or (configuration, question)
    cells; see :func:`passmix.sensitivity.read_configurations`, whose column
    keywords (`config`, `question`, `outcome`, `successes`, `questions`)
    pass through `columns`.
    """
    groups = read_configurations(data, group_by=group_by or None, **columns)
    group_cols = list(group_by or [])
    if isinstance(groups, Configurations):
        groups, group_cols = {("all",): groups}, ["group"]
    run = run_sensitivity(groups, group_cols, budgets=budgets, seeds=seeds, methods=methods,
                          percentiles=percentiles, sampler=sampler, jobs=jobs, client=client,
                          cache_dir=Path(out) / "cache" if cache else None, progress=progress)
    source = data if isinstance(data, pd.DataFrame) else Path(data).name
    write_sensitivity_report(run, out, data=groups, title=title, command=command,
                             source=None if isinstance(source, pd.DataFrame) else source,
                             figures=figures)
    return run
