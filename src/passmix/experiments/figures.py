"""Figures of a repeated-trial run (matplotlib, imported lazily).

* :func:`plot_mae_vs_k`: MAE against the horizon, one column per budget m
  (the paper's Figures 2 and 9-11);
* :func:`plot_mae_vs_m`: MAE against the budget at a fixed horizon (Figure 6);
* :func:`plot_horizons`: per-group estimates against k with the mixture's
  interval band and the reference (Figures 1, 3 and 5);
* :func:`plot_bic_shares`: share of fits choosing each H by m (Figure 8).

Each takes the tables of :func:`~passmix.experiments.run_repeated` and returns
a :class:`matplotlib.figure.Figure`; :func:`write_figures` saves them as PNG
and PDF.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._validation import METRICS
from ..plots.fit import METRIC_LABELS
from .report import group_columns, methods_present, report_grid

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .repeated import RepeatedResult

__all__ = ["plot_bic_shares", "plot_horizons", "plot_mae_vs_k", "plot_mae_vs_m",
           "write_figures"]

#: Colours and markers per method, the same in every figure.
STYLE = {
    "naive": {"color": "#d95f02", "marker": "o", "label": "Naive"},
    "combinatorial": {"color": "#7570b3", "marker": "s", "label": "Combinatorial"},
    "mixture": {"color": "#1b9e77", "marker": "D", "label": "Mixture"},
    "pooled": {"color": "#1f78b4", "marker": "^", "label": "Pooled"},
}
REFERENCE_STYLE = {"color": "0.15", "marker": ".", "label": "Reference (all trials)"}


def _style(method: str) -> dict:
    """A method's colour, marker and label; grey crosses for estimators added later."""
    return STYLE.get(method, {"color": "0.45", "marker": "x", "label": method})


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def _mae_cells(errors: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Seed-then-group averaged error per `by`."""
    gcols = group_columns(errors)
    per = errors.groupby([*gcols, *by], sort=False)["abs_error"].mean().reset_index()
    return per.groupby(by, sort=True)["abs_error"].mean().reset_index()


def _pick(values: Sequence[int], n: int) -> list[int]:
    values = sorted(values)
    if len(values) <= n:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, n)).astype(int))
    return [values[i] for i in idx]


def _log_y(ax, values: np.ndarray, floor: float = 0.01) -> None:
    """Log y-axis when the errors span decades; errors below `floor` points count as zero.

    Pass^k at large k is ~0 for every method on hard benchmarks, and its
    errors of 1e-100 points would stretch a log axis over hundreds of decades.
    """
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    finite = values[np.isfinite(values)]
    if finite.size == 0 or finite.max() < 10 * floor:
        ax.set_ylim(0, 1)  # every error is ~0 on the scale of points
        return
    positive = finite[finite >= floor]
    if positive.max() / positive.min() > 20:
        ax.set_yscale("log")
        ax.set_ylim(bottom=max(floor, positive.min() / 1.5))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())


def plot_mae_vs_k(errors: pd.DataFrame, m: Sequence[int] | None = None,
                  max_panels: int = 4) -> Figure:
    """MAE against k, one row per metric and one column per budget m.

    Parameters
    ----------
    errors : pandas.DataFrame
        The errors table of a run.
    m : sequence of int, optional
        Budgets to show; default up to `max_panels` spread over those run.
    max_panels : int, default 4
        Columns when `m` is not given.

    Returns
    -------
    matplotlib.figure.Figure
        A dotted vertical line marks k = m in each panel.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from passmix.experiments.figures import plot_mae_vs_k
    >>> errors = pd.DataFrame({"group": "a", "seed": 0, "m": 5, "k": [2, 2, 20, 20],
    ...                        "metric": "pass@k", "method": ["naive", "mixture"] * 2,
    ...                        "abs_error": [0.5, 0.6, 9.0, 3.0]})
    >>> fig = plot_mae_vs_k(errors)
    >>> fig.axes[0].get_title()
    'm = 5'
    """
    plt = _pyplot()
    budgets = list(m) if m is not None else _pick(errors["m"].unique(), max_panels)
    cells = _mae_cells(errors[errors["m"].isin(budgets)], ["metric", "m", "method", "k"])
    fig, axes = plt.subplots(len(METRICS), len(budgets), squeeze=False, sharex=True,
                             figsize=(3.0 * len(budgets) + 0.6, 2.4 * len(METRICS)),
                             layout="constrained")
    for i, metric in enumerate(METRICS):
        for j, budget in enumerate(budgets):
            ax = axes[i, j]
            part = cells[(cells["metric"] == metric) & (cells["m"] == budget)]
            for method in methods_present(part):
                line = part[part["method"] == method]
                ax.plot(line["k"], line["abs_error"], ms=3.5, lw=1.4, **_style(method))
            ax.axvline(budget, color="0.5", ls=":", lw=1.0)
            ax.set_xscale("log")
            _log_y(ax, part["abs_error"].to_numpy())
            ax.grid(True, which="major", alpha=0.3)
            if i == 0:
                ax.set_title(f"m = {budget}")
            if j == 0:
                ax.set_ylabel(f"{METRIC_LABELS[metric]} MAE (pp)")
            if i == len(METRICS) - 1:
                ax.set_xlabel("horizon k")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=len(labels), frameon=False)
    return fig


def plot_mae_vs_m(errors: pd.DataFrame, k: int) -> Figure:
    """MAE at horizon `k` against the budget m, one panel per metric.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    cells = _mae_cells(errors[errors["k"] == k], ["metric", "method", "m"])
    if cells.empty:
        raise ValueError(f"k = {k} is not among the horizons run.")
    fig, axes = plt.subplots(1, len(METRICS), squeeze=False, figsize=(10, 3.2),
                             layout="constrained")
    for j, metric in enumerate(METRICS):
        ax = axes[0, j]
        part = cells[cells["metric"] == metric]
        for method in methods_present(part):
            line = part[part["method"] == method]
            ax.plot(line["m"], line["abs_error"], ms=4, lw=1.4, **_style(method))
        ax.set_xscale("log")
        _log_y(ax, part["abs_error"].to_numpy())
        ax.set_title(f"{METRIC_LABELS[metric].replace('k', str(k))}")
        ax.set_xlabel("trials per task m")
        ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].set_ylabel("MAE (pp)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=len(labels), frameon=False)
    return fig


def plot_horizons(errors: pd.DataFrame, m: int, seed: int | None = None,
                  max_groups: int = 8, order_k: int | None = None) -> Figure:
    """Per-group estimates against k with the mixture's band and the reference.

    One row per group (up to `max_groups`, evenly spread by the reference
    AUC@k at `order_k`, as the paper picks its eight models), one column per
    metric. Values in percent.

    Parameters
    ----------
    errors : pandas.DataFrame
        The errors table of a run.
    m : int
        Budget shown.
    seed : int, optional
        Seed shown; default the first.
    max_groups : int, default 8
        Most groups shown.
    order_k : int, optional
        Horizon whose reference AUC@k orders the groups; default the largest.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    gcols = group_columns(errors)
    seed = int(errors["seed"].min()) if seed is None else seed
    df = errors[(errors["m"] == m) & (errors["seed"] == seed)]
    if df.empty:
        raise ValueError(f"(m, seed) = ({m}, {seed}) was not run.")
    df = df.assign(_group=df[gcols].astype(str).agg(" / ".join, axis=1))
    order_k = int(df["k"].max()) if order_k is None else order_k
    ref_auc = (df[(df["metric"] == "auc@k") & (df["k"] == order_k)]
               .groupby("_group", sort=False)["reference"].first().sort_values())
    names = list(ref_auc.index)
    if len(names) > max_groups:
        names = [names[i] for i in np.unique(np.round(
            np.linspace(0, len(names) - 1, max_groups)).astype(int))]
    fig, axes = plt.subplots(len(names), len(METRICS), squeeze=False, sharex=True,
                             figsize=(10, 2.1 * len(names) + 0.8), layout="constrained")
    for i, name in enumerate(names):
        for j, metric in enumerate(METRICS):
            ax = axes[i, j]
            part = df[(df["_group"] == name) & (df["metric"] == metric)]
            # every method's rows carry the same reference
            ref = part.drop_duplicates("k").sort_values("k")
            ax.plot(ref["k"], 100 * ref["reference"], lw=1.6, ms=4, **REFERENCE_STYLE)
            for method in methods_present(part):
                if method == "combinatorial":  # it stops at k = m: the reference says more
                    continue
                line = part[part["method"] == method].sort_values("k")
                style = _style(method)
                ax.plot(line["k"], 100 * line["estimate"], lw=1.2, ms=3, **style)
                if line["lower"].notna().any():
                    ax.fill_between(line["k"], 100 * line["lower"], 100 * line["upper"],
                                    color=style["color"], alpha=0.2, lw=0,
                                    label=f"{style['label']} interval")
            ax.axvline(m, color="0.5", ls=":", lw=1.0)
            ax.set_xscale("log")
            ax.set_ylim(-3, 103)
            ax.grid(True, which="major", alpha=0.3)
            if i == 0:
                ax.set_title(METRIC_LABELS[metric])
            if j == 0:
                ax.set_ylabel(name, fontsize="small")
            if i == len(names) - 1:
                ax.set_xlabel("horizon k")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), frameon=False,
               title=f"m = {m} trials per task, seed {seed}; values in %; dotted: k = m",
               fontsize="small", title_fontsize="small")
    return fig


def plot_bic_shares(fits: pd.DataFrame) -> Figure:
    """Stacked bars: share of fits in which BIC chose each H, by m.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    ok = fits[fits["n_components"].notna()]
    table = pd.crosstab(ok["m"], ok["n_components"].astype(int), normalize="index") * 100
    fig, ax = plt.subplots(figsize=(5.5, 3.0), layout="constrained")
    bottom = np.zeros(len(table))
    labels = [str(v) for v in table.index]
    for h in table.columns:
        ax.bar(labels, table[h].to_numpy(), bottom=bottom, label=f"H = {h}")
        bottom += table[h].to_numpy()
    ax.set_xlabel("trials per task m")
    ax.set_ylabel("share of fits (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def write_figures(result: RepeatedResult, out: str | os.PathLike, *,
                  report_k: Sequence[int] | None = None, report_m: int | None = None,
                  formats: Sequence[str] = ("png", "pdf"), dpi: int = 110) -> list[str]:
    """Draw every figure of a run and save it in each format.

    Returns
    -------
    list of str
        The PNG file names written (relative to `out`), for the report.
    """
    plt = _pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ks, m = report_grid(result, report_k, report_m)
    errors = result.errors
    # a figure with nothing to show (e.g. only the combinatorial estimate beyond k = m,
    # or no mixture fit to count H in) is left out
    figs = {"fig_mae_vs_k": plot_mae_vs_k(errors)}
    for k in ks:
        if errors.loc[errors["k"] == k, "abs_error"].notna().any():
            figs[f"fig_mae_vs_m_k{k}"] = plot_mae_vs_m(errors, k)
    figs[f"fig_horizons_m{m}"] = plot_horizons(errors, m)
    if result.fits["n_components"].notna().any():
        figs["fig_bic_shares"] = plot_bic_shares(result.fits)
    names = []
    for stem, fig in figs.items():
        for fmt in formats:
            fig.savefig(out / f"{stem}.{fmt}", dpi=dpi)
        plt.close(fig)
        names.append(f"{stem}.png")
    return names
