"""Checks of posterior draws, for any model: convergence, effective draws, divergences,
an improper flat posterior and the mixture's posterior predictive check.

:func:`diagnose` tabulates r_hat and ESS of the sampled coordinates (or any
posterior variables); :func:`check_diagnostics` turns them into problems
named one by one (and warns); :func:`ppc_pvalue` is a single-system
model's posterior predictive p-value of the count histogram. Each takes the
DataTree of :func:`passmix.sample` (the Beta mixture or the zero-inflated
mixture) or of :func:`passmix.sample_pooled` (the pooled model).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd

from .._validation import PosteriorWarning
from ..models.mixture.parameters import PARAMETER_BOUNDS
from ..models.zero_inflated.model import ZERO_BOUNDS
from ._record import METRIC_VARS, SAMPLED_VARS, has_group, is_pooled, model_kind, system_label

__all__ = ["FREE_VARS", "check_diagnostics", "check_idata", "diagnose", "free_variables",
           "ppc_pvalue"]

#: Names of the mixture's sampled (unconstrained) coordinates, in the model's order.
FREE_VARS = SAMPLED_VARS["mixture"]
_BOXES = {**PARAMETER_BOUNDS, "logit_zero": ZERO_BOUNDS}

_R_HAT_MAX = 1.01
_ESS_PER_CHAIN = 100  # Vehtari et al. (2021): bulk and tail ESS >= 100 per chain
_PPC_ALPHA = 0.01


def check_idata(idata) -> None:
    """Raise TypeError unless `idata` is what :func:`passmix.sample` or
    :func:`passmix.sample_pooled` returns.

    Examples
    --------
    >>> from passmix.bayes.checks import check_idata
    >>> check_idata(None)
    Traceback (most recent call last):
    ...
    TypeError: idata must be the DataTree returned by passmix.sample (a posterior group with alpha and beta) or by passmix.sample_pooled.
    """
    if is_pooled(idata):
        return
    if not has_group(idata, "posterior") or not {"alpha", "beta"} <= set(
            idata["posterior"].data_vars):
        raise TypeError("idata must be the DataTree returned by passmix.sample (a posterior "
                        "group with alpha and beta) or by passmix.sample_pooled.")


def free_variables(idata) -> list[str]:
    """The posterior variables of the sampled coordinates that `idata` holds.

    Those the model that made the draws names in
    :data:`passmix.bayes._record.SAMPLED_VARS`: the mixture's unconstrained
    coordinates (:data:`FREE_VARS`), the zero-inflated model's with
    ``logit_zero``, the pooled model's centred ``abilities`` (the zero-sum
    coordinates the sampler moves) and its other free blocks.
    """
    check_idata(idata)
    names = SAMPLED_VARS[model_kind(idata)]
    posterior = idata.posterior
    return [v for v in names if v in posterior and posterior[v].size]


def ppc_pvalue(idata) -> float:
    """Posterior predictive p-value of the count histogram (Freeman-Tukey discrepancy).

    For each draw, ``T(h) = sum (sqrt(h) - sqrt(E))^2`` over the cells
    (trials, successes), with ``E`` the histogram expected under that draw;
    the p-value is the share of draws whose replicated histogram is at least
    as far from ``E`` as the observed one. Values near 0 say the mixture
    misfits the counts (e.g. too few components); near 0.5 is typical of a
    model that fits.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For the pooled model's draws, which have no predictive histogram.
    """
    check_idata(idata)
    if not has_group(idata, "posterior_predictive"):
        raise ValueError("idata has no posterior predictive count histogram: the check is a "
                         "single-system model's (the mixture's, passmix.sample), not the pooled "
                         "model's.")
    pp = idata.posterior_predictive
    expected = np.sqrt(pp["expected_histogram"].values)
    t_rep = ((np.sqrt(pp["count_histogram"].values) - expected) ** 2).sum(axis=(-1, -2))
    observed = np.sqrt(idata.observed_data["count_histogram"].values)
    t_obs = ((observed - expected) ** 2).sum(axis=(-1, -2))
    return float(np.mean(t_rep >= t_obs))



# -- diagnostics ------------------------------------------------------------------------

def diagnose(idata, var_names=None) -> pd.DataFrame:
    """r_hat and bulk/tail ESS of each sampled coordinate (and of any `var_names`).

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    var_names : list of str, optional
        Posterior variables; default the sampled coordinates (:func:`free_variables`).

    Returns
    -------
    pandas.DataFrame
        Index the coordinate, named by its coordinate values as ``arviz.summary``
        names it (``log_concentration[1]`` for component 1, ``pass_at_k[60]``; the
        pooled ``pass_at_k[Pythia 1B, 60]``, ``abilities[Pythia 1B]``); columns r_hat,
        ess_bulk, ess_tail, plus min_draw and max_draw; its ``attrs`` hold
        the number of divergent transitions (``"divergences"``) and of draws
        (``"n_draws"``).
    """
    import arviz as az

    check_idata(idata)
    posterior = idata.posterior
    names = free_variables(idata) if var_names is None else list(var_names)
    rows = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in names:
            da = posterior[name]
            ds = da.to_dataset(name="x")
            r_hat = np.atleast_1d(az.rhat(ds)["x"].values)
            bulk = np.atleast_1d(az.ess(ds, method="bulk")["x"].values)
            tail = np.atleast_1d(az.ess(ds, method="tail")["x"].values)
            extra = [d for d in da.dims if d not in ("chain", "draw")]
            values = da.transpose("chain", "draw", *extra).values
            flat = values.reshape(values.shape[0] * values.shape[1], -1)
            if not extra:
                labels = [name]
            else:
                # by coordinate value, every extra dim, as ArviZ's summary names them (the
                # component 1..H, a pooled metric's system and k)
                values_of = [_labels(da, d) for d in extra]
                labels = [f"{name}[{', '.join(combo)}]"
                          for combo in itertools.product(*values_of)]
            for i, label in enumerate(labels):
                rows[label] = {"r_hat": r_hat.ravel()[i], "ess_bulk": bulk.ravel()[i],
                               "ess_tail": tail.ravel()[i], "min_draw": flat[:, i].min(),
                               "max_draw": flat[:, i].max()}
    table = pd.DataFrame.from_dict(rows, orient="index")
    stats = idata["sample_stats"] if has_group(idata, "sample_stats") else None
    div = int(stats["diverging"].sum()) if stats is not None and "diverging" in stats else 0
    table.attrs["divergences"] = div
    table.attrs["n_draws"] = int(posterior.sizes["chain"] * posterior.sizes["draw"])
    return table


def _labels(da, dim: str) -> list[str]:
    """A dim's coordinate values as labels (positions where it has none)."""
    if dim in da.coords:
        return [system_label(c) for c in np.asarray(da[dim].values).ravel()]
    return [str(i) for i in range(da.sizes[dim])]


def _improper_flat(table: pd.DataFrame) -> list[str]:
    """Coordinates whose draws leave the optimiser's box (flat prior only)."""
    out = []
    for label, row in table.iterrows():
        lo, hi = _BOXES[str(label).split("[")[0]]
        if row["max_draw"] > hi:
            out.append(f"{label} up to {row['max_draw']:.3g} (box edge {hi:g})")
        elif row["min_draw"] < lo:
            out.append(f"{label} down to {row['min_draw']:.3g} (box edge {lo:g})")
    return out


def check_diagnostics(idata, *, r_hat_max: float = _R_HAT_MAX, ess_min: float | None = None,
                      ppc_alpha: float = _PPC_ALPHA, warn: bool = True,
                      stacklevel: int = 2) -> list[str]:
    """Check the draws and warn, naming each problem found.

    Checks, on the sampled coordinates and the stored metric draws:
    r_hat above `r_hat_max`; bulk or tail ESS below `ess_min`; divergent
    transitions after warm-up; with ``prior="flat"``, draws beyond the box
    the MLE is confined to (the flat posterior is then improper for these
    data); and a posterior predictive p-value of the count histogram below
    `ppc_alpha` (:func:`ppc_pvalue`).

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`passmix.sample` or :func:`passmix.sample_pooled`.
    r_hat_max : float, default 1.01
        Largest acceptable rank-normalised split r_hat (Vehtari et al. 2021).
    ess_min : float, optional
        Smallest acceptable bulk and tail ESS; default 100 per chain.
    ppc_alpha : float, default 0.01
        Posterior predictive p-values below this are reported.
    warn : bool, default True
        Issue a :class:`~passmix.PosteriorWarning` for each problem.
    stacklevel : int, default 2
        Passed to :func:`warnings.warn`.

    Returns
    -------
    list of str
        One message per problem; empty when all is well.
    """
    check_idata(idata)
    n_chains = idata.posterior.sizes["chain"]
    ess_min = _ESS_PER_CHAIN * n_chains if ess_min is None else float(ess_min)
    coords = diagnose(idata)
    metric_names = [v for v in METRIC_VARS.values() if v in idata.posterior]
    table = pd.concat([coords, diagnose(idata, metric_names)]) if metric_names else coords
    problems = []
    if idata.posterior.attrs.get("passmix_prior") == "flat":
        gone = _improper_flat(coords)
        if gone:
            problems.append(
                "the flat posterior appears improper for these data: draws of "
                + "; ".join(gone) + ", beyond the box the MLE is confined to (the likelihood "
                "does not vanish in that direction, so a flat prior leaves infinite mass "
                "there). These draws do not describe a posterior; use prior='weak'.")
    bad = table["r_hat"] > r_hat_max
    if bad.any():
        problems.append(f"r_hat > {r_hat_max:g} (chains disagree) for "
                        + _list(table.loc[bad, "r_hat"], ".3f"))
    for kind in ("bulk", "tail"):
        col = f"ess_{kind}"
        low = table[col] < ess_min
        if low.any():
            problems.append(f"{kind} ESS < {ess_min:g} (too few effective draws; run longer) "
                            f"for " + _list(table.loc[low, col], ".0f"))
    div = coords.attrs["divergences"]
    if div:
        problems.append(f"{div} divergent transitions of {coords.attrs['n_draws']} draws after "
                        "warm-up: the sampler missed part of the posterior (raise "
                        "target_accept; with many, the model is too flexible for the data)")
    if has_group(idata, "posterior_predictive"):
        p = ppc_pvalue(idata)
        if p < ppc_alpha:
            problems.append(f"posterior predictive check of the count histogram: p = {p:.3g} "
                            f"< {ppc_alpha:g}, the mixture does not reproduce the observed "
                            "counts (try more components)")
    if warn:
        for msg in problems:
            warnings.warn(msg, PosteriorWarning, stacklevel=stacklevel)
    return problems


def _list(series: pd.Series, fmt: str, most: int = 6) -> str:
    items = [f"{name} ({value:{fmt}})" for name, value in series.items()]
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more

