"""Plots of a fit: metric-versus-horizon curves, the fitted mixing density, and a
pooled fit's difficulty distribution with the systems' abilities.

Each function takes a fit (a :class:`~passmix.MixtureFit`, or one system of a
:class:`~passmix.PooledFit` where it says so) and an optional matplotlib
``ax``, draws on it (or on a new figure) and returns the axes. matplotlib is
imported inside the functions, so ``import passmix`` never imports pyplot,
and nothing here calls ``plt.show()``. The fits' ``plot()`` methods call
these functions, so this module does not import the models (the fits are
known here by what they offer: ``metric``, ``interval``, ``counts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .._validation import check_k, check_level, check_metric, shown
from ..data.panel import system_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_difficulty", "plot_horizon", "plot_mixture_density"]

#: Axis labels for the canonical metric names.
METRIC_LABELS = {"pass@k": "Pass@k", "pass^k": "Pass^k", "auc@k": "AUC@k"}

_DEFAULT_K_MAX = 1000
_DEFAULT_K_POINTS = 76  # -> 60 distinct integers between 1 and 1000
_Y_PAD = 0.02


def default_horizons(k_max: int = _DEFAULT_K_MAX, num: int = _DEFAULT_K_POINTS) -> np.ndarray:
    """Distinct integers, log-spaced from 1 to `k_max`."""
    return np.unique(np.round(np.geomspace(1, k_max, num)).astype(np.int64))


def get_ax(ax: Axes | None) -> Axes:
    """`ax`, or the axes of a new figure (pyplot imported only then)."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def _curve_iv(curve: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Turn a ``(k, values)`` pair, a ``{k: value}`` dict or a Series into sorted arrays."""
    if isinstance(curve, Mapping):
        k, values = list(curve.keys()), list(curve.values())
    elif hasattr(curve, "index") and hasattr(curve, "to_numpy"):  # pandas Series
        k, values = curve.index.to_numpy(), curve.to_numpy()
    elif isinstance(curve, (tuple, list)) and len(curve) == 2:
        k, values = curve
    else:
        raise TypeError(
            f"{name} must be a (k, values) pair, a {{k: value}} dict or a pandas Series "
            f"indexed by k; got {type(curve).__name__}."
        )
    k = np.atleast_1d(np.asarray(k, dtype=float))
    values = np.atleast_1d(np.asarray(values, dtype=float))
    if k.ndim != 1 or k.shape != values.shape:
        raise ValueError(
            f"{name}: k and values must be 1-d of equal length, got shapes "
            f"{k.shape} and {values.shape}."
        )
    if k.size == 0:
        raise ValueError(f"{name} is empty; give at least one (k, value).")
    if not np.all(np.isfinite(k)) or np.any(k < 1):
        bad = float(k[~np.isfinite(k) | (k < 1)][0])
        raise ValueError(f"{name}: every k must be finite and >= 1 (log axis), got {shown(bad)}.")
    order = np.argsort(k, kind="stable")
    return k[order], values[order]


def plot_horizon(
    fit: Any,
    metric: str = "pass@k",
    k: Any = None,
    *,
    level: float = 0.95,
    interval: str = "profile",
    scale: str | None = None,
    ax: Axes | None = None,
    reference: Any = None,
    observed: Any = None,
    label: str | None = None,
    color: Any = None,
    reference_label: str = "reference",
    observed_label: str = "observed",
) -> Axes:
    """Plot a metric against the horizon k, with its confidence band.

    Parameters
    ----------
    fit : MixtureFit or PooledSystem
        The fitted mixture (:func:`passmix.fit`), or one system of a pooled
        fit (``passmix.fit_pooled(...).system(name)``; :meth:`PooledFit.plot`
        draws them all).
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
        The metric (aliases such as ``"pass_at_k"`` are accepted).
    k : array_like of int, optional
        Horizons. By default 60 distinct integers log-spaced from 1 to 1000.
        The horizons are sorted and duplicates dropped.
    level : float, default 0.95
        Confidence level of the band.
    interval : {"profile", "delta"}, default "profile"
        The band: pointwise profile-likelihood intervals
        (:meth:`MixtureFit.profile`, about 2 s for the default 60 horizons;
        a pooled system's profile searches every system's coordinates, so
        takes much longer) or delta-method intervals (:meth:`MixtureFit.delta`,
        instant).
    scale : {"logit", "identity"}, optional
        Scale of the delta-method interval, passed to :meth:`MixtureFit.delta`;
        by default its default (logit: the band stays inside (0, 1)). Not for
        a pooled system.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created if omitted.
    reference : (k, values) pair, dict {k: value} or pandas.Series, optional
        A reference curve, e.g. the combinatorial estimate from many more
        trials, drawn as a dark line with small markers.
    observed : (k, values) pair, dict {k: value} or pandas.Series, optional
        Direct estimates from the fitted data (naive or combinatorial), drawn
        as hollow markers without a line.
    label : str, optional
        Legend label of the fitted curve; default ``"Beta mixture (H = ...)"``
        (a pooled system: its name).
    color : matplotlib color, optional
        Colour of the curve and its band; default the next colour of the
        axes' property cycle.
    reference_label, observed_label : str
        Legend labels of `reference` and `observed`.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Notes
    -----
    The x-axis is logarithmic and the y-axis spans [0, 1] with a small
    margin. A dotted vertical line marks the largest number of trials
    observed per task (``fit.counts.trials.max()``) when it lies within the
    horizons plotted: to its right the curve is an extrapolation of the
    fitted model. The band is the pointwise interval at each horizon, exactly
    as :meth:`MixtureFit.profile` or :meth:`MixtureFit.delta` returns it.

    See Also
    --------
    MixtureFit.profile, MixtureFit.delta : the estimates and intervals drawn.
    plot_mixture_density : the fitted distribution behind the curve.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.plots import plot_horizon
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.beta(0.5, 4.0, size=200)
    >>> counts = passmix.Counts(rng.binomial(10, theta), np.full(200, 10))
    >>> res = passmix.fit(counts, seed=0)
    >>> naive = passmix.naive_estimate(counts, "pass@k", [1, 10, 100])
    >>> ax = plot_horizon(res, "pass@k", observed=([1, 10, 100], naive),
    ...                   observed_label="naive (10 trials)")
    >>> ax.get_xscale(), ax.get_ylabel()
    ('log', 'Pass@k')
    """
    metric = check_metric(metric)
    level = check_level(level)
    ks = default_horizons() if k is None else np.unique(check_k(k)[0])
    ref = None if reference is None else _curve_iv(reference, "reference")
    obs = None if observed is None else _curve_iv(observed, "observed")

    bands = {"profile": "profile-likelihood", "delta": "delta-method"}
    if interval not in bands:
        raise ValueError(f"unknown interval {interval!r}; expected 'profile' or 'delta'.")
    mixture = hasattr(fit, "profile") and hasattr(fit, "delta")
    if mixture and interval == "profile":
        res = fit.profile(metric, ks, level)
        estimate, lower, upper = res.estimate, res.lower, res.upper
    elif mixture:
        res = fit.delta(metric, ks, level, **({} if scale is None else {"scale": scale}))
        estimate, lower, upper = res.estimate, res.lower, res.upper
    else:  # one system of a pooled fit
        if scale is not None:
            raise ValueError("scale applies to a mixture's delta-method band, not to a "
                             "pooled system's.")
        estimate = fit.metric(metric, ks)
        lower, upper = fit.interval(metric, ks, level, method=interval)
    ax = get_ax(ax)
    if label is None:
        label = (f"Beta mixture (H = {fit.n_components})" if mixture
                 else system_name(fit.name))
    shown = ax.get_legend_handles_labels()[1]  # curves drawn together share their notes
    (line,) = ax.plot(ks, estimate, color=color, lw=2.0, label=label, zorder=3)
    color = line.get_color()
    band_label = f"{100 * level:g}% {bands[interval]} interval"
    ax.fill_between(ks, lower, upper, color=color, alpha=0.25, linewidth=0, zorder=2,
                    label=band_label if band_label not in shown else "_nolegend_")
    if ref is not None:
        ax.plot(*ref, color="0.15", lw=1.2, marker="o", ms=3.0, label=reference_label, zorder=4)
    if obs is not None:
        ax.plot(*obs, ls="none", marker="D", ms=5.5, mfc="white", mec=color, mew=1.5,
                label=observed_label, zorder=5)

    trials = fit.counts.trials
    m_max = int(trials.max())
    if ks[0] <= m_max <= ks[-1]:
        varying = trials[trials > 0].min() != m_max
        marker = f"trials observed ({'max ' if varying else ''}m = {m_max})"
        if marker not in shown:
            ax.axvline(m_max, color="0.35", ls=":", lw=1.2, zorder=1, label=marker)

    ax.set_xscale("log")
    ax.set_ylim(-_Y_PAD, 1.0 + _Y_PAD)
    ax.set_xlabel("horizon k (attempts per task)")
    ax.set_ylabel(METRIC_LABELS[metric])
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def _histogram_bins(trials: np.ndarray) -> np.ndarray:
    """Bin edges on [0, 1]: one bin per value y/m can take for the largest m, if m <= 50."""
    m_max = int(trials.max())
    if m_max <= 50:
        return np.linspace(0.0, 1.0, m_max + 2)
    return np.linspace(0.0, 1.0, 26)


def _density_grid(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Interior grid on (0, 1), refined geometrically towards both ends.

    Returns the grid and a mask of its evenly spaced points (for quantiles
    that should weigh every part of the axis alike).
    """
    tail = np.geomspace(1e-6, 0.05, max(n_points // 5, 2))
    body = np.linspace(0.0, 1.0, n_points)[1:-1]
    grid = np.unique(np.concatenate([tail, body, 1.0 - tail]))
    return grid, np.isin(grid, body)


def plot_mixture_density(
    fit: Any,
    *,
    ax: Axes | None = None,
    bins: Any = None,
    components: bool = True,
    hist: bool = True,
    n_points: int = 1001,
    clip_quantile: float = 0.99,
    label: str | None = None,
    color: Any = None,
) -> Axes:
    r"""Plot the fitted mixing density of the per-task success probability.

    The solid curve is :math:`f(\theta) = \sum_h w_h \,\mathrm{Beta}(\theta;
    \alpha_h, \beta_h)` on (0, 1); with H > 1 the weighted components
    :math:`w_h \,\mathrm{Beta}(\theta; \alpha_h, \beta_h)` are drawn dashed.
    Behind it, a density-scaled histogram of the observed success fractions
    :math:`y_j / m_j` of the tasks with :math:`m_j > 0`.

    Parameters
    ----------
    fit : MixtureFit
        The fitted mixture (:func:`passmix.fit`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created if omitted.
    bins : int or array_like, optional
        Histogram bins (as for :meth:`matplotlib.axes.Axes.hist`). By default
        one bin per possible value ``y/m`` when at most 50 trials were run
        per task (edges ``linspace(0, 1, m + 2)``), else 25 bins.
    components : bool, default True
        Draw the weighted components (only when H > 1).
    hist : bool, default True
        Draw the histogram of ``y_j / m_j``.
    n_points : int, default 1001
        Number of evenly spaced grid points; the grid is refined
        geometrically towards 0 and 1 (down to 1e-6 from each end).
    clip_quantile : float, default 0.99
        The y-axis is cut at 1.5 times this quantile of the density over the
        evenly spaced grid points (or at the histogram's top, if higher; a
        lone narrow spike without histogram is shown whole) when the peak
        exceeds that, as it does for U-shaped components (alpha or beta < 1)
        whose density is unbounded at 0 or 1. The legend then says so.
    label : str, optional
        Legend label of the density; default ``"fitted mixing density (H = ...)"``.
    color : matplotlib color, optional
        Colour of the density and its components.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Notes
    -----
    The histogram shows the raw fractions, which carry binomial noise on top
    of the spread of the true success probabilities: with few trials per
    task it is wider than the mixing density and piles up at 0 and 1.

    See Also
    --------
    plot_horizon : the metrics this density implies at each horizon.
    MixtureFit.components : the weights and Beta shapes drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.plots import plot_mixture_density
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.beta(2.0, 5.0, size=200)
    >>> res = passmix.fit(passmix.Counts(rng.binomial(10, theta), np.full(200, 10)), seed=0)
    >>> ax = plot_mixture_density(res)
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('per-task success probability $\\theta$', 'density')
    """
    if int(n_points) != n_points or n_points < 3:
        raise ValueError(f"n_points must be a whole number >= 3, got {shown(n_points)}.")
    if not 0.0 < clip_quantile <= 1.0:
        raise ValueError(f"clip_quantile must be in (0, 1], got {shown(clip_quantile)}.")
    weights = np.asarray(fit.weights, dtype=float)
    alpha = np.asarray(fit.alpha, dtype=float)
    beta = np.asarray(fit.beta, dtype=float)
    theta, even = _density_grid(int(n_points))
    parts = weights[:, None] * stats.beta.pdf(theta[None, :], alpha[:, None], beta[:, None])
    density = parts.sum(axis=0)

    ax = get_ax(ax)
    hist_top = 0.0
    if hist:
        y, m = fit.counts.successes, fit.counts.trials
        run = m > 0
        fraction = y[run] / m[run]
        edges = _histogram_bins(m[run]) if bins is None else bins
        heights, _, _ = ax.hist(fraction, bins=edges, range=(0.0, 1.0), density=True,
                                color="0.82", edgecolor="white", zorder=1,
                                label=f"observed y/m ({fraction.size} tasks)")
        hist_top = float(np.max(heights))

    peak = float(density.max())
    curve_top = min(peak, 1.5 * float(np.quantile(density[even], clip_quantile)))
    top = max(curve_top, hist_top)
    if hist_top == 0.0 and top < 1e-3 * peak:  # a lone narrow spike: show all of it
        top = peak
    top *= 1.05
    clipped = peak > top

    if label is None:
        label = f"fitted mixing density (H = {fit.n_components})"
    if clipped:
        label += ", peak off scale"
    (line,) = ax.plot(theta, density, color=color, lw=2.0, label=label, zorder=3)
    if components and fit.n_components > 1:
        for h, part in enumerate(parts):
            ax.plot(theta, part, color=line.get_color(), ls="--", lw=1.0, zorder=2,
                    label="weighted components" if h == 0 else "_nolegend_")

    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, top)
    ax.set_xlabel(r"per-task success probability $\theta$")
    ax.set_ylabel("density")
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_difficulty(
    fit: Any,
    *,
    ax: Axes | None = None,
    systems: bool = True,
    color: Any = None,
) -> Axes:
    """Plot a pooled fit's task-difficulty distribution and the systems' abilities.

    Difficulty and ability share one logit axis: system i solves a task of
    difficulty d with mean probability ``expit(a_i - d)``, so a system's
    ability marks the difficulty it solves half the time. The distribution
    is drawn as the mass at each grid point (a stem plot for the
    nonparametric ``"grid"`` family, a curve for ``"normal"``); each
    system's ability is a labelled vertical line. With slopes
    (``fit_pooled(slope=...)``) the mean is ``expit(a_i - s_i d)``, and the
    line is at ``a_i / s_i``, again the difficulty solved half the time.

    Parameters
    ----------
    fit : PooledFit
        The pooled fit (:func:`passmix.fit_pooled`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created if omitted.
    systems : bool, default True
        Draw and label the systems' abilities.
    color : color, optional
        Colour of the distribution.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.plots import plot_difficulty
    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(1.0, 1.5, size=80)
    >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
    >>> fit = passmix.fit_pooled(passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5)),
    ...                          family="normal", seed=0)
    >>> ax = plot_difficulty(fit)
    >>> ax.get_xlabel()
    'logit scale: task difficulty d and system ability a'
    """
    ax = get_ax(ax)
    grid, mass = fit.grid, fit.grid_weights
    line_color = color if color is not None else "C0"
    label = f"task difficulty ({fit.family})"
    if fit.family == "grid":
        shown = mass > 1e-4
        ax.vlines(grid[shown], 0.0, mass[shown], color=line_color, lw=2, label=label)
    else:
        ax.plot(grid, mass, color=line_color, lw=2, label=label)
    if systems:
        top = float(mass.max())
        # the difficulty each system solves half the time (a_i with no slopes)
        for n, (name, a) in enumerate(zip(fit.systems, fit.abilities / fit.slopes)):
            ax.axvline(a, color="0.4", lw=0.8, ls="--")
            ax.text(a, top * (1.02 + 0.06 * (n % 3)), system_name(name), rotation=90,
                    fontsize="x-small",
                    ha="center", va="bottom", color="0.3")
        ax.set_ylim(0, top * 1.5)
    ax.set_xlabel("logit scale: task difficulty d and system ability a")
    ax.set_ylabel("mass at grid point")
    ax.legend(fontsize="small", loc="upper left")
    return ax
