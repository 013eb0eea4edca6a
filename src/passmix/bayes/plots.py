"""Plots of the posterior from :func:`passmix.sample` (and :func:`passmix.sample_pooled`).

Trace and rank plots are ArviZ 1's (arviz-plots), on the sampled coordinates,
and return its ``PlotCollection``; the metric against the horizon (posterior
band with the delta-method band overlaid) and the posterior predictive check
of the count histogram are drawn here, each taking the ``DataTree`` and an
optional matplotlib ``ax`` and returning the axes (with the axes helpers of
:mod:`passmix.plots.fit`). matplotlib is imported inside the functions and
nothing calls ``plt.show()``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import FitWarning, check_k, check_level, check_metric, shown
from ..plots.fit import METRIC_LABELS, default_horizons, get_ax
from ._record import has_group, is_pooled, system_label
from .checks import check_idata, free_variables
from .stats import draws_interval, metric_draws

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..models.mixture.fit import MixtureFit
    from ..models.pooled.result import PooledFit

__all__ = ["plot_posterior_horizon", "plot_ppc_counts", "plot_rank", "plot_trace"]


def _free_names(idata, var_names) -> list[str]:
    return free_variables(idata) if var_names is None else list(var_names)


def plot_trace(idata, var_names=None, **kwargs: Any):
    """ArviZ trace plot (density and trace per chain, ``arviz.plot_trace_dist``) of the
    sampled coordinates.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    var_names : list of str, optional
        Posterior variables; default the unconstrained coordinates the
        sampler moves in (where convergence problems show first).
    **kwargs
        Passed to :func:`arviz.plot_trace_dist`.

    Returns
    -------
    arviz.PlotCollection
        ArviZ's collection of the figure and its artists (``.viz``); with the
        matplotlib backend, ``pc.viz["figure"].item()`` is the figure.
    """
    import arviz as az

    check_idata(idata)
    return az.plot_trace_dist(idata, var_names=_free_names(idata, var_names), **kwargs)


def plot_rank(idata, var_names=None, **kwargs: Any):
    """ArviZ rank plot (``arviz.plot_rank``: the fractional ranks' ECDF of each chain) of the
    sampled coordinates: curves inside the envelope mean mixed chains.

    Parameters and returns as in :func:`plot_trace` (kwargs go to
    :func:`arviz.plot_rank`).
    """
    import arviz as az

    check_idata(idata)
    return az.plot_rank(idata, var_names=_free_names(idata, var_names), **kwargs)


def plot_posterior_horizon(
    idata,
    metric: str = "pass@k",
    k: Any = None,
    *,
    fit: MixtureFit | PooledFit | None = None,
    system: Any = None,
    level: float = 0.95,
    method: str = "eti",
    scale: str | None = None,
    ax: Axes | None = None,
    color: Any = None,
    delta_color: Any = "0.2",
    label: str | None = None,
) -> Axes:
    """Posterior of a metric across horizons, with the delta-method band overlaid.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample`, or :func:`passmix.sample_pooled` (then name
        the `system`).
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
        The metric (aliases accepted).
    k : array_like of int, optional
        Horizons; default 60 distinct integers log-spaced from 1 to 1000.
    fit : MixtureFit or PooledFit, optional
        The maximum-likelihood fit; its estimate (dashed) and delta-method
        interval (dotted edges) are drawn over the posterior.
    system : label, optional
        With the pooled model's draws, the system to draw (required there).
    level : float, default 0.95
        Level of both bands.
    method : {"eti", "hdi"}, default "eti"
        Credible interval (see :func:`passmix.bayes.sample.credible_interval`).
    scale : {"logit", "identity"}, optional
        Scale of the delta-method interval; default :meth:`MixtureFit.delta`'s.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created if omitted.
    color : matplotlib color, optional
        Colour of the posterior mean and band.
    delta_color : matplotlib color, default "0.2"
        Colour of the delta-method lines.
    label : str, optional
        Legend label of the posterior mean.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    Any ``DataTree`` with draws of ``weights``, ``alpha`` and ``beta``
    (dim ``component``) will do; :func:`passmix.bayes.sample.sample` makes one.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import arviz as az, numpy as np
    >>> from passmix.bayes import plot_posterior_horizon
    >>> rng = np.random.default_rng(0)
    >>> draws = {"weights": np.ones((2, 50, 1)), "alpha": rng.gamma(50, 1 / 50, (2, 50, 1)),
    ...          "beta": rng.gamma(50, 2 / 50, (2, 50, 1))}
    >>> idata = az.from_dict({"posterior": draws}, dims={v: ["component"] for v in draws})
    >>> ax = plot_posterior_horizon(idata, "pass^k", [1, 10, 100])
    >>> ax.get_ylabel()
    'Pass^k'
    """
    metric = check_metric(metric)
    level = check_level(level)
    check_idata(idata)
    ks = default_horizons() if k is None else np.unique(check_k(k)[0])
    draws = metric_draws(idata, metric, ks)
    pooled = is_pooled(idata)
    if pooled:
        systems = list(idata.constant_data["system"].values)
        if system is None or system_label(system) not in systems:
            raise ValueError(f"name the system to draw: one of {', '.join(map(repr, systems))}"
                             f" (got {shown(system)}).")
        row = systems.index(system_label(system))
        draws = draws.transpose("chain", "draw", "system", "k").isel(system=row)
    lower, upper = draws_interval(draws, level, method)
    mean = draws.mean(("chain", "draw")).values
    ax = get_ax(ax)
    prior = idata.posterior.attrs.get("passmix_prior", "")
    model = "pooled" if pooled else f"H = {idata.posterior.sizes['component']}"
    if label is None:
        label = f"posterior mean ({model}, prior {prior})" if prior else "posterior mean"
    (line,) = ax.plot(ks, mean, color=color, lw=2.0, label=label, zorder=3)
    ax.fill_between(ks, lower, upper, color=line.get_color(), alpha=0.25, linewidth=0,
                    label=f"{100 * level:g}% credible ({method.upper()})", zorder=2)
    if fit is not None:
        options = {} if scale is None else {"scale": scale}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            if pooled:
                # the fit's own label of that system (the draws record it as a string)
                table = fit.delta(metric, ks, level, system=fit.systems[row])
                estimate, lo, hi = (table[c].to_numpy() for c in ("estimate", "lower", "upper"))
            else:
                res = fit.delta(metric, ks, level, **options)
                estimate, lo, hi = res.estimate, res.lower, res.upper
        ax.plot(ks, estimate, color=delta_color, ls="--", lw=1.2, label="MLE", zorder=4)
        ax.plot(ks, lo, color=delta_color, ls=":", lw=1.4, zorder=4,
                label=f"{100 * level:g}% delta-method interval")
        ax.plot(ks, hi, color=delta_color, ls=":", lw=1.4, zorder=4)
    if pooled:
        trials = idata.constant_data["trials"].values[row]
    elif has_group(idata, "observed_data"):
        trials = idata.observed_data["trials"].values
    else:
        trials = []
    if len(trials) and ks[0] <= trials.max() <= ks[-1]:
        ax.axvline(trials.max(), color="0.35", ls="-.", lw=1.0, zorder=1,
                   label=f"trials observed (m = {int(trials.max())})")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("horizon k (attempts per task)")
    ax.set_ylabel(METRIC_LABELS[metric])
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_ppc_counts(idata, *, trials: int | None = None, level: float = 0.9,
                    ax: Axes | None = None, color: Any = None) -> Axes:
    """Posterior predictive check of the count histogram.

    Bars: how many tasks had y successes. Markers and error bars: the
    posterior predictive median and central `level` interval of the same
    histogram, replicated from the fitted mixture.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.bayes.sample.sample`.
    trials : int, optional
        Show the tasks with this many trials; default all tasks (histograms
        of tasks with different m are added up on the successes axis).
    level : float, default 0.9
        Level of the predictive intervals.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created if omitted.
    color : matplotlib color, optional
        Colour of the predictive markers.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_idata(idata)
    if is_pooled(idata):
        raise ValueError("the posterior predictive check of the count histogram is the Beta "
                         "mixture's (passmix.sample); the pooled model's draws have none.")
    level = check_level(level)
    observed = idata.observed_data["count_histogram"]
    replicated = idata.posterior_predictive["count_histogram"]
    if trials is not None:
        values = observed["trials"].values
        if trials not in values:
            raise ValueError(f"no task has {trials!r} trials; trials observed: "
                             f"{', '.join(str(int(v)) for v in values)}.")
        observed = observed.sel(trials=trials)
        replicated = replicated.sel(trials=trials)
        title_m = f"m = {trials}"
    else:
        observed = observed.sum("trials")
        replicated = replicated.sum("trials")
        ms = idata.observed_data["trials"].values
        title_m = f"m = {int(ms[0])}" if ms.size == 1 else "all m"
    y = observed["successes"].values
    rep = replicated.transpose("chain", "draw", "successes").values.reshape(-1, y.size)
    lo, med, hi = np.quantile(rep, [(1 - level) / 2, 0.5, (1 + level) / 2], axis=0)
    ax = get_ax(ax)
    ax.bar(y, observed.values, color="0.8", edgecolor="white", label="observed", zorder=1)
    ax.errorbar(y, med, yerr=[med - lo, hi - med], fmt="o", color=color, ms=5, capsize=3,
                label=f"posterior predictive (median, {100 * level:g}%)", zorder=3)
    ax.set_xlabel(f"successes per task ({title_m})")
    ax.set_ylabel("tasks")
    ax.legend(loc="best", fontsize="small")
    return ax
