"""Statistics over posterior draws, for any model: metrics, credible intervals, summaries.

Each function takes the DataTree of :func:`passmix.sample` (the Beta
mixture or the zero-inflated mixture: draws with dims ``(chain, draw, k)``)
or of :func:`passmix.sample_pooled` (the pooled model: ``(chain, draw,
system, k)``, every system's metric on the tasks). One path serves them
all: the model named in ``posterior.attrs["passmix_model"]`` supplies the
map from its draws to metric draws (:data:`passmix.bayes._record.METRIC_DRAWS`).
A single-system model's draws are a Beta mixture with an atom at 0
(weight 0 when the model has none), whose metrics are the closed forms on
each draw (:func:`mixture_metric_draws`); the pooled model's come from each
draw's task posteriors (:mod:`passmix.bayes.pooled`). Everything after that
map (intervals, summaries, diagnostics) is the same code for every model.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from .._validation import FitWarning, check_k, check_level, check_metric
from ..inference.delta import ConfidenceInterval
from ..metrics import metric_value
from ..inference.results import LikelihoodResult
from ..inference.units import UnitsResult
from ._record import METRIC_DRAWS, METRIC_VARS, is_pooled, model_kind, system_label
from .checks import check_idata

__all__ = ["component_draws", "compare_intervals", "credible_interval", "draws_interval",
           "metric_draws", "mixture_draws", "mixture_metric_draws", "posterior_metrics",
           "posterior_summary"]

_METHODS = ("eti", "hdi")
# the result class of each model's maximum-likelihood fit
_FIT_CLASS = {"mixture": "MixtureFit", "zero_inflated": "ZeroInflatedFit", "pooled": "PooledFit"}


def component_draws(posterior, var: str) -> np.ndarray:
    """Draws of a component variable as ``(chain, draw, H)``; ``weights`` are 1 where the
    draws leave them out (one component)."""
    if var == "weights" and var not in posterior:
        return np.ones_like(component_draws(posterior, "alpha"))
    return np.asarray(posterior[var].transpose("chain", "draw", "component").values, dtype=float)



def mixture_draws(posterior) -> tuple[np.ndarray, ...]:
    """Draws of a single-system model's mixture: ``(zero_weight, weights, alpha, beta)``.

    ``zero_weight`` has shape ``(chain, draw)`` (0 where the model has no
    atom at success rate 0), the others ``(chain, draw, H)``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from passmix.bayes.stats import mixture_draws
    >>> draws = {v: (("chain", "draw", "component"), np.ones((1, 2, 1)))
    ...          for v in ("weights", "alpha", "beta")}
    >>> zero, w, a, b = mixture_draws(xr.Dataset(draws))
    >>> zero.shape, w.shape
    ((1, 2), (1, 2, 1))
    """
    w, a, b = (component_draws(posterior, v) for v in ("weights", "alpha", "beta"))
    if "zero_weight" in posterior:
        zero = np.asarray(posterior["zero_weight"].transpose("chain", "draw").values, float)
    else:
        zero = np.zeros(w.shape[:2])
    return zero, w, a, b


def mixture_metric_draws(idata, metrics, k_arr: np.ndarray) -> dict[str, xr.DataArray]:
    """Metric draws of a single-system model: the closed forms on each draw of its mixture.

    ``(1 - zero_weight)`` times the Beta mixture's metric
    (:func:`passmix.metric_value`), dims ``(chain, draw, k)``, one array per
    metric in `metrics`. This is the map :data:`~passmix.bayes._record.METRIC_DRAWS`
    gives for the Beta mixture and the zero-inflated mixture.
    """
    posterior = idata.posterior
    zero, w, a, b = mixture_draws(posterior)
    # draws of an improper flat posterior can run off until alpha or beta
    # under/overflows; those draws give NaN (the diagnostics say why), not an error
    bad = ~(np.all(np.isfinite(w) & np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0),
                   axis=-1) & np.isfinite(zero))
    if bad.any():
        w, a, b = (np.where(bad[..., None], 1.0, x) for x in (w, a, b))
        zero = np.where(bad, 0.0, zero)
    coords = {d: posterior[d].values for d in ("chain", "draw") if d in posterior.coords}
    coords["k"] = k_arr
    out = {}
    for name in metrics:
        with np.errstate(all="ignore"):
            values = (1.0 - zero)[..., None] * np.asarray(metric_value(name, w, a, b, k_arr))
        values = np.where(bad[..., None], np.nan, values)
        out[name] = xr.DataArray(values, dims=("chain", "draw", "k"), coords=coords)
    return out


def posterior_metrics(idata, k=None, *, metric: str | None = None) -> xr.Dataset | xr.DataArray:
    """Posterior draws of Pass@k, Pass^k and AUC@k.

    The model that made the draws maps them to metric draws
    (:data:`passmix.bayes._record.METRIC_DRAWS`): a single-system model's
    with the same closed forms as the point estimates
    (:func:`mixture_metric_draws`) on every draw of ``(zero_weight,
    weights, alpha, beta)``; the pooled model's by averaging every system's
    metric over each draw's task posteriors
    (:func:`passmix.bayes.pooled.pooled_metric_draws`).

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    k : int or array_like of int, optional
        Horizons; default those stored by the sampler.
    metric : str, optional
        One metric (``"pass@k"``, ``"pass^k"``, ``"auc@k"`` or an alias); by
        default all three.

    Returns
    -------
    xarray.Dataset or xarray.DataArray
        Dims ``(chain, draw, k)``, the pooled model's ``(chain, draw, system,
        k)``; a Dataset with variables ``pass_at_k``, ``pass_hat_k``,
        ``auc_at_k``, or the DataArray of `metric`.

    Examples
    --------
    >>> import numpy as np, xarray as xr, arviz as az
    >>> from passmix.bayes.sample import posterior_metrics
    >>> draws = {"weights": np.ones((1, 2, 1)), "alpha": np.ones((1, 2, 1)),
    ...          "beta": np.ones((1, 2, 1))}
    >>> idata = az.from_dict({"posterior": draws}, dims={v: ["component"] for v in draws})
    >>> posterior_metrics(idata, k=[1, 9], metric="pass@k").values[0, 0]
    array([0.5, 0.9])
    """
    check_idata(idata)
    posterior = idata.posterior
    if k is None:
        if "k" not in posterior.coords:
            raise ValueError("no horizons stored in idata; pass k.")
        k_arr = posterior["k"].values
    else:
        k_arr = check_k(k)[0]
    metrics = list(METRIC_VARS) if metric is None else [check_metric(metric)]
    module, name = METRIC_DRAWS[model_kind(idata)]
    draw_map = getattr(importlib.import_module(module, __package__), name)
    out = {METRIC_VARS[m]: draws.rename(METRIC_VARS[m])
           for m, draws in draw_map(idata, metrics, k_arr).items()}
    return out[METRIC_VARS[metrics[0]]] if metric is not None else xr.Dataset(out)


def metric_draws(idata, metric: str, k_arr: np.ndarray) -> xr.DataArray:
    """Draws of `metric` at horizons `k_arr`: stored ones, or computed from the parameters.

    Dims ``(chain, draw, k)``, or the pooled model's ``(chain, draw, system, k)``.
    """
    name = METRIC_VARS[metric]
    stored = idata.posterior.get(name)
    if stored is not None and np.isin(k_arr, stored["k"].values).all():
        return stored.sel(k=k_arr)
    return posterior_metrics(idata, k=k_arr, metric=metric)


def credible_interval(idata, metric: str, k, level: float = 0.95, *, method: str = "eti"
                      ) -> ConfidenceInterval:
    """Posterior credible interval of a metric at horizon(s) `k`.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"`` (aliases accepted).
    k : int or array_like of int
        Horizon(s).
    level : float, default 0.95
        Posterior probability inside the interval.
    method : {"eti", "hdi"}, default "eti"
        Equal-tailed (quantiles ``(1 -/+ level) / 2``; invariant to monotone
        transformations, comparable with the delta method's two tails) or
        highest density (the shortest interval, by ``arviz.hdi``).

    Returns
    -------
    ConfidenceInterval
        ``(lower, upper)``: floats for scalar `k`, arrays otherwise; for the
        pooled model one row per system, ``(systems,)`` or ``(systems, k)``.
    """
    check_idata(idata)
    metric = check_metric(metric)
    level = check_level(level)
    if method not in _METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(_METHODS)}.")
    k_arr, scalar = check_k(k)
    lower, upper = draws_interval(metric_draws(idata, metric, k_arr), level, method)
    if scalar and lower.ndim == 1:
        return ConfidenceInterval(float(lower[0]), float(upper[0]))
    if scalar:
        return ConfidenceInterval(lower[..., 0], upper[..., 0])
    return ConfidenceInterval(lower, upper)


def draws_interval(draws: xr.DataArray, level: float, method: str
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed (``"eti"``) or highest-density (``"hdi"``) interval of draws, per k
    (and per system: the ends have the draws' dims but chain and draw, k last)."""
    draws = draws.transpose("chain", "draw", ..., "k")
    values = draws.values
    if method == "eti":
        flat = values.reshape(values.shape[0] * values.shape[1], -1)
        lower, upper = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2], axis=0)
        return lower.reshape(values.shape[2:]), upper.reshape(values.shape[2:])
    import arviz as az

    ds = xr.Dataset({"x": (draws.dims, values)})
    hdi = az.hdi(ds, prob=level)["x"].transpose(*draws.dims[2:], "ci_bound").values
    return hdi[..., 0], hdi[..., 1]


def posterior_summary(idata, k=None, level: float = 0.95) -> pd.DataFrame:
    """Posterior mean, sd, equal-tailed and HDI intervals and diagnostics of every metric.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    k : int or array_like of int, optional
        Horizons; default those stored by the sampler.
    level : float, default 0.95
        Level of both intervals.

    Returns
    -------
    pandas.DataFrame
        Columns metric, k, posterior_mean, posterior_sd, eti_lower,
        eti_upper, hdi_lower, hdi_upper, r_hat, ess_bulk, ess_tail; for the
        pooled model a first column ``system`` (one row per system, metric
        and k).
    """
    import arviz as az

    check_idata(idata)
    level = check_level(level)
    k_arr = idata.posterior["k"].values if k is None else check_k(k)[0]
    frames = []
    for metric in METRIC_VARS:
        draws = metric_draws(idata, metric, k_arr).transpose("chain", "draw", ..., "k")
        eti = draws_interval(draws, level, "eti")
        hdi = draws_interval(draws, level, "hdi")
        ds = draws.to_dataset(name="x")
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # constant draws: r_hat is NaN
            r_hat = az.rhat(ds)["x"].values
            ess_bulk = az.ess(ds, method="bulk")["x"].values
            ess_tail = az.ess(ds, method="tail")["x"].values
        frames.append(_rows(draws, metric, {
            "posterior_mean": draws.mean(("chain", "draw")).values,
            "posterior_sd": draws.std(("chain", "draw")).values,
            "eti_lower": eti[0], "eti_upper": eti[1], "hdi_lower": hdi[0], "hdi_upper": hdi[1],
            "r_hat": r_hat, "ess_bulk": ess_bulk, "ess_tail": ess_tail}))
    return pd.concat(frames, ignore_index=True)


def _rows(draws: xr.DataArray, metric: str, columns: dict) -> pd.DataFrame:
    """A table of per-(system,) k values, arrays shaped as `draws` without chain and draw
    (k last): one row per system (if any) and k."""
    draws = draws.transpose("chain", "draw", ..., "k")
    k_arr = draws["k"].values
    lead = {}
    if "system" in draws.dims:
        systems = np.empty(draws.sizes["system"], dtype=object)
        systems[:] = list(draws["system"].values)
        lead["system"] = np.repeat(systems, k_arr.size)
        k_arr = np.tile(k_arr, systems.size)
    body = {name: np.asarray(v).reshape(-1) for name, v in columns.items()}
    return pd.DataFrame({**lead, "metric": metric, "k": k_arr, **body})


def compare_intervals(fit: LikelihoodResult | UnitsResult, idata, k=None, level: float = 0.95,
                      *, method: str = "eti", scale: str = "logit", profile: bool = True
                      ) -> pd.DataFrame:
    """Profile-likelihood, delta-method and posterior credible intervals side by side, per
    metric and k.

    Parameters
    ----------
    fit : MixtureFit, ZeroInflatedFit or PooledFit
        The maximum-likelihood fit (delta-method intervals,
        :meth:`MixtureFit.delta`, :meth:`PooledFit.delta`).
    idata : xarray.DataTree
        Posterior draws of the same model from :func:`passmix.sample` (the same
        model and H) or :func:`passmix.sample_pooled` (the same systems).
    k : int or array_like of int, optional
        Horizons; default those stored in `idata`.
    level : float, default 0.95
        Level of both intervals.
    method : {"eti", "hdi"}, default "eti"
        Kind of credible interval (see :func:`credible_interval`).
    scale : {"logit", "identity"}, default "logit"
        Scale of the mixture's delta-method interval (see
        :func:`passmix.delta_method`; the pooled model's is on the logit scale).
    profile : bool, default True
        Also the fit's profile-likelihood interval (``fit.profile``: the
        model's own, the same model the draws are of, without the other
        shapes its default interval spans beyond the trials); False skips
        its search.

    Returns
    -------
    pandas.DataFrame
        Columns metric, k, estimate, profile_lower, profile_upper (with
        `profile`), delta_lower, delta_upper, posterior_mean, credible_lower,
        credible_upper; one row per metric and horizon (for the pooled model
        a first column ``system``, one row per system, metric and horizon).

    Raises
    ------
    TypeError
        If the fit is of another model than the draws.
    ValueError
        If the fit's H differs from the H sampled, or its systems from those sampled.
    """
    check_idata(idata)
    level = check_level(level)
    if method not in _METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(_METHODS)}.")
    pooled, kind = is_pooled(idata), model_kind(idata)
    if getattr(fit, "model_kind", None) != kind:
        raise TypeError(f"the draws are of the {kind} model, so fit must be a passmix."
                        f"{_FIT_CLASS[kind]}, got {type(fit).__name__}: compare intervals of "
                        "the same model.")
    if pooled:
        sampled = list(idata.constant_data["system"].values)
        if [system_label(s) for s in fit.systems] != sampled or fit.n_components != \
                idata.posterior.attrs["passmix_n_components"]:
            raise ValueError("the fit's systems or H differ from those sampled; compare "
                             "intervals of the same model.")
    elif idata.posterior.sizes.get("component") != fit.n_components:
        raise ValueError(f"the fit has H = {fit.n_components} components but idata was sampled "
                         f"with H = {idata.posterior.sizes.get('component')}; compare intervals "
                         "of the same model.")
    k_arr = idata.posterior["k"].values if k is None else check_k(k)[0]
    frames = []
    for metric in METRIC_VARS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            if isinstance(fit, UnitsResult):  # a table of every unit (system)
                table = fit.delta(metric, k_arr, level)
                estimate, lo, hi = (table[c].to_numpy() for c in ("estimate", "lower", "upper"))
            else:
                delta = fit.delta(metric, k_arr, level, scale=scale)
                estimate, lo, hi = delta.estimate, delta.lower, delta.upper
            ends = {}
            if profile:
                own = fit.profile(metric, k_arr, level)
                ends = {"profile_lower": np.asarray(own["lower"] if isinstance(
                            own, pd.DataFrame) else own.lower, dtype=float),
                        "profile_upper": np.asarray(own["upper"] if isinstance(
                            own, pd.DataFrame) else own.upper, dtype=float)}
        draws = metric_draws(idata, metric, k_arr).transpose("chain", "draw", ..., "k")
        lower, upper = draws_interval(draws, level, method)
        frames.append(_rows(draws, metric, {
            "estimate": estimate, **ends, "delta_lower": lo, "delta_upper": hi,
            "posterior_mean": draws.mean(("chain", "draw")).values,
            "credible_lower": lower, "credible_upper": upper}))
    return pd.concat(frames, ignore_index=True)


