"""The evaluation loop's trajectory: the estimate and its interval against attempts spent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_evaluation"]


def plot_evaluation(result: Any, ax: Axes | None = None, *, truth: float | None = None) -> Axes:
    """The estimate and its interval at every look of :func:`passmix.evaluate`.

    Parameters
    ----------
    result : EvaluationResult
        From :func:`passmix.evaluate`.
    ax : matplotlib Axes, optional
        Drawn on a new 6 x 3.5 inch figure if not given.
    truth : float, optional
        The true value, drawn as a dashed line.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.plots import plot_evaluation
    >>> from passmix.scaling import OracleSystem
    >>> system = OracleSystem(np.random.default_rng(0).beta(0.5, 2.0, 30), seed=0)
    >>> res = passmix.evaluate(system, 30, budget=120, k=5, seed=0, progress=False)
    >>> plot_evaluation(res, truth=system.pass_at_k(5)).get_xlabel()
    'attempts spent'
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    t = result.trajectory
    varies = "level" in t and t["level"].nunique() > 1
    ax.fill_between(t["attempts"], t["lower"], t["upper"], alpha=0.25, color="C0",
                    label="interval (each look's level)" if varies
                    else f"{result.level:.0%} interval")
    ax.plot(t["attempts"], t["estimate"], color="C0", marker=".", label="estimate")
    if truth is not None:
        ax.axhline(truth, color="k", ls="--", lw=1, label="truth")
    ax.set_xlabel("attempts spent")
    ax.set_ylabel(f"{result.metric} at k = {result.k}")
    ax.legend(loc="best", fontsize="small")
    return ax
