"""A paired comparison: both systems' curves, and their difference with its interval and band."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.panel import system_name
from .fit import METRIC_LABELS

__all__ = ["plot_comparison"]


def plot_comparison(result: Any, a=None, b=None, *, ax: Any = None) -> np.ndarray:
    """Two panels for one pair of a :class:`~passmix.Comparison`.

    Left, each system's metric against k. Right, the difference b - a with its
    pointwise interval (dark) and simultaneous band (light), and the horizons
    where the sign is certified shaded (green: b better, red: a better).

    Parameters
    ----------
    result : Comparison
        From :func:`passmix.compare`.
    a, b : hashable, optional
        The pair to draw; default the first pair compared.
    ax : sequence of two matplotlib Axes, optional
        Where to draw; default a new figure.

    Returns
    -------
    numpy.ndarray of two matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(1, 2, size=(2, 60))
    >>> panel = passmix.Panel(rng.binomial(8, p), np.full(p.shape, 8), systems=["x", "y"])
    >>> axes = passmix.compare(panel, k=[1, 2, 4, 8], method="direct").plot()
    >>> axes[1].get_ylabel()
    'Pass@k: y - x'
    """
    if (a is None) != (b is None):
        raise ValueError("give both a and b, or neither for the first pair.")
    n = 0 if a is None else result.pair(a, b)
    a, b = (system_name(label) for label in result.pairs[n])
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(1, 2, figsize=(10, 4))
    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != 2:
        raise ValueError(f"ax must hold two axes, got {axes.size}.")
    k = result.k
    label = METRIC_LABELS[result.metric]
    left, right = axes
    left.plot(k, result.value_a[n], marker="o", ms=3, label=a)
    left.plot(k, result.value_b[n], marker="o", ms=3, label=b)
    left.set_ylabel(label)
    left.legend()
    if result.has_band:
        right.fill_between(k, result.band_lower[n], result.band_upper[n], color="C0", alpha=0.15,
                           label=f"{result.level:.0%} simultaneous band")
    right.fill_between(k, result.lower[n], result.upper[n], color="C0", alpha=0.35,
                       label=f"{result.level:.0%} pointwise")
    right.plot(k, result.estimate[n], color="C0", marker="o", ms=3, label=f"{b} - {a}")
    right.axhline(0.0, color="0.3", lw=0.8)
    signs = result.certified[n]
    for sign, colour in ((1, "tab:green"), (-1, "tab:red")):
        for x in k[signs == sign]:
            right.axvspan(x / 1.15, x * 1.15, color=colour, alpha=0.12, lw=0)
    right.set_ylabel(f"{label}: {b} - {a}")
    right.legend(fontsize="small")
    for part in axes:
        part.set_xlabel("k")
        if k.size > 1 and k[-1] / k[0] > 20:
            part.set_xscale("log")
    return axes
