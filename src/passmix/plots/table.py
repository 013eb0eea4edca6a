"""A table of estimates drawn: each group's metrics against k, with their intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._defaults import METRICS
from ..data.panel import system_name
from .fit import METRIC_LABELS

__all__ = ["plot_estimates"]


def plot_estimates(table: pd.DataFrame, group_cols: Sequence[str] = (), *,
                   metrics: Sequence[str] | None = None, ax: Any = None) -> np.ndarray:
    """One panel per metric: each group's (and method's) estimates against k.

    The rows of :func:`passmix.estimate_table` (what ``passmix estimate``
    prints) as lines over the horizons, with their intervals as error bars
    where the method has them.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`passmix.estimate_table`: the group columns, then ``metric,
        k, estimate, lower, upper, method``. Not modified.
    group_cols : sequence of str, default ()
        The group columns of `table`; a group is labelled by its values
        (``small``, or ``small / x`` for two columns).
    metrics : sequence of str, optional
        The metrics drawn, one panel each; default those in `table`.
    ax : matplotlib Axes or sequence of them, optional
        One axes per metric; default a new figure.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import passmix
    >>> table = passmix.estimate_table(passmix.Counts([0, 2, 5, 1], [5] * 4), k=[1, 5],
    ...                                method="naive")
    >>> axes = passmix.plots.plot_estimates(table)
    >>> [a.get_ylabel() for a in axes]
    ['Pass@k', 'Pass^k', 'AUC@k']
    """
    group_cols = list(group_cols)
    missing = [c for c in [*group_cols, "metric", "k", "estimate", "lower", "upper", "method"]
               if c not in table.columns]
    if missing:
        raise ValueError(f"table has no column {missing[0]!r}; expected estimate_table's "
                         f"columns, and group_cols naming its group columns.")
    if metrics is None:
        metrics = [m for m in METRICS if (table["metric"] == m).any()]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("nothing to draw: the table has no rows.")
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 4), squeeze=False)
    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != len(metrics):
        raise ValueError(f"ax must hold {len(metrics)} axes (one per metric), got {axes.size}.")
    several = table["method"].nunique() > 1
    keys = group_cols + ["method"]
    for part, metric in zip(axes, metrics):
        rows = table[table["metric"] == metric]
        for key, curve in rows.groupby(keys, sort=False) if keys else [((), rows)]:
            key = key if isinstance(key, tuple) else (key,)
            name = system_name(tuple(key[:-1])) if group_cols else ""
            label = f"{name} ({key[-1]})" if several and name else (name or key[-1])
            curve = curve.sort_values("k")
            k, est = curve["k"].to_numpy(), curve["estimate"].to_numpy(dtype=float)
            below = np.nan_to_num(est - curve["lower"].to_numpy(dtype=float))
            above = np.nan_to_num(curve["upper"].to_numpy(dtype=float) - est)
            part.errorbar(k, est, yerr=[np.maximum(below, 0), np.maximum(above, 0)],
                          marker="o", ms=3, capsize=2, lw=1.2, label=label)
        part.set_xscale("log")
        part.set_ylim(-0.02, 1.02)
        part.set_xlabel("horizon k (attempts per task)")
        part.set_ylabel(METRIC_LABELS[metric])
        part.grid(True, alpha=0.3)
    axes[0].legend(fontsize="x-small")
    return axes
