"""The distribution of a score across configurations: the fitted CDF, its band, the data."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import FitWarning, check_interval_method
from .fit import get_ax

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_sensitivity"]


def plot_sensitivity(result: Any, ax: Axes | None = None, *, reference: Any = None,
                     band: bool = True, method: str = "profile") -> Axes:
    """Fitted CDF over the empirical CDF of the observed scores, with the quantile band.

    Parameters
    ----------
    result : SensitivityResult
        From :func:`passmix.sensitivity`.
    ax : matplotlib Axes, optional
    reference : Configurations or array_like, optional
        Complete scores to draw as well (dashed).
    band : bool, default True
        Shade the pointwise band of the quantile function at the result's level
        (at the levels 0.02, 0.06, ..., 0.98).
    method : {"profile", "delta"}, default "profile"
        Interval method of the band (see ``SensitivityResult.percentile``).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from passmix.plots import plot_sensitivity
    >>> from passmix.sensitivity import Configurations, sensitivity
    >>> rng = np.random.default_rng(0)
    >>> y = rng.binomial(20, rng.beta(4, 6, size=60))
    >>> res = sensitivity(Configurations.from_counts(y, np.full(60, 20)), seed=0)
    >>> ax = plot_sensitivity(res, band=False)
    >>> ax.get_xlabel()
    'score'
    """
    ax = get_ax(ax)
    method = check_interval_method(method)
    x = np.linspace(0.0, 1.0, 401)
    if band:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            table = result.percentile(np.linspace(2.0, 98.0, 25), method=method)
        ax.fill_betweenx(table["percentile"] / 100.0, table["lower"], table["upper"],
                         color="C0", alpha=0.2, linewidth=0,
                         label=f"{result.level:.0%} quantile band ({method})")
    ax.plot(x, result.cdf(x), color="C0", label=f"fitted (H = {result.fit.n_components})")
    observed = result.data.scores()
    observed = np.sort(observed[np.isfinite(observed)])
    if observed.size:
        ax.step(observed, np.arange(1, observed.size + 1) / observed.size, where="post",
                color="C1", label=f"observed ({result.data.n_cells} cells)")
    if reference is not None:
        # Configurations (complete scores) or the scores themselves
        ref = reference.scores() if hasattr(reference, "scores") else reference
        ref = np.sort(np.asarray(ref, dtype=float))
        ax.step(ref, np.arange(1, ref.size + 1) / ref.size, where="post", color="k",
                linestyle="--", label="reference")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("score")
    ax.set_ylabel("fraction of configurations")
    ax.legend(loc="lower right", fontsize=8)
    return ax
