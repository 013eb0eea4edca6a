"""NUTS posterior of the pooled model, in the same shape as the mixture's.

The model is the one :func:`passmix.fit_pooled` maximises
(:func:`passmix.models.pooled.build_pooled_model`, normal difficulty family), with
the independent normal priors of :data:`passmix.models.pooled.WEAK_POOLED_PRIOR` on
its free coordinates. With the fit's flat priors the posterior is improper:
the abilities' common shift is flat, and a concentration can run to infinity
(plain Rasch) with the likelihood level. So NUTS is offered where the model
is proper: weak priors, the normal family (a mixture of H normals, H as the
fit chose by its criterion). The grid family is not sampled: its weights are the
nonparametric maximum-likelihood mixing distribution, a point estimate with
no natural prior, and 141 weight logits make a poor sampling target.

:func:`sample_pooled` returns ``xarray.DataTree``, as
:func:`passmix.sample` does for the mixture, and the same functions read
both (:mod:`passmix.bayes.sample`: :func:`~passmix.bayes.sample.posterior_metrics`,
:func:`~passmix.bayes.sample.credible_interval`,
:func:`~passmix.bayes.sample.posterior_summary`,
:func:`~passmix.bayes.sample.compare_intervals`,
:func:`~passmix.bayes.sample.diagnose`,
:func:`~passmix.bayes.sample.check_diagnostics`); the pooled draws carry a
``system`` dimension. The DataTree holds what the metrics need: the
counts, the grid and the maximum-likelihood fit's coordinates
(``constant_data``), and the model's structure (``posterior.attrs``), so it
can be saved and read back.

The metrics are those of the systems on *these* tasks, as the fit's
intervals are: for each posterior draw of the coordinates, every task's
difficulty is drawn from its posterior on the grid (shared by the systems),
then each system's success probability on it from its Beta posterior, and
the metric is averaged over the tasks.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._pytensor import import_pymc, sampler_compile_kwargs
from .._defaults import SUMMARY_K
from .._validation import check_seed, check_whole, shown
from ..data.panel import Panel, as_panel
from ..models.pooled._graph import build_pooled_model
from ..models.pooled._layout import block_names, panel_layout, split_blocks
from ..models.pooled._likelihood import beta_shapes
from ..models.pooled.fit import fit_pooled
from ..models.pooled.result import PooledFit
from ._record import METRIC_VARS, POOLED, is_pooled, system_label
from .checks import check_diagnostics

__all__ = ["pair_difference_draws", "pooled_fit", "pooled_metric_draws",
           "posterior_draws", "sample_pooled"]


def point_metric(metric: str, p: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The metric of tasks with known success probabilities `p`, at horizons `k`.

    ``pass@k = 1 - (1 - p)^k``, ``pass^k = p^k`` and ``auc@k = 1 - S_k / k``
    with ``S_k = sum_{r=1..k} (1 - p)^r = (1 - p)(1 - (1 - p)^k) / p``. The
    result has `p`'s shape plus a last axis over `k`.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.bayes.pooled import point_metric
    >>> point_metric("auc@k", np.array([0.5]), np.array([2])).round(4)  # (1/2 + 3/4) / 2
    array([[0.625]])
    """
    p = np.asarray(p, dtype=float)[..., None]
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore"):  # p = 1 drawn in floating point: (1 - p)^k = 0
        log_q = np.log1p(-np.minimum(p, 1.0))
    if metric == "pass@k":
        return -np.expm1(k * log_q)
    if metric == "pass^k":
        return np.exp(k * np.log(np.maximum(p, 1e-300))) * (p > 0)
    # k AUC@k = sum_{r=1..k} (1 - q^r) = k - q (1 - q^k) / p, which cancels when p k is
    # small; there its series p C(k+1, 2) - p^2 C(k+1, 3) + p^3 C(k+1, 4) is exact to
    # ~(p k)^3 relative
    small = p * k < 1e-4
    with np.errstate(divide="ignore", invalid="ignore"):
        closed = k - (1.0 - p) * -np.expm1(k * log_q) / p
    series = (p * (k + 1) * k / 2 - p**2 * (k + 1) * k * (k - 1) / 6
              + p**3 * (k + 1) * k * (k - 1) * (k - 2) / 24)
    return np.where(small, series, closed) / k


# -- what the draws record of the fit ---------------------------------------------
def pooled_fit(idata) -> PooledFit:
    """The maximum-likelihood fit the chains of `idata` started from, rebuilt from its record.

    Examples
    --------
    >>> from passmix.bayes.pooled import pooled_fit
    >>> pooled_fit(object())
    Traceback (most recent call last):
    ...
    TypeError: idata must be the DataTree returned by passmix.sample_pooled.
    """
    if not is_pooled(idata):
        raise TypeError("idata must be the DataTree returned by passmix.sample_pooled.")
    attrs, data = idata.posterior.attrs, idata.constant_data
    systems = list(data["system"].values)
    panel = Panel(data["successes"].values, data["trials"].values, systems=systems)
    return PooledFit.from_parameters(
        panel, attrs["passmix_family"], data["grid"].values, data["mle"].values,
        n_components=int(attrs["passmix_n_components"]), slope=bool(attrs["passmix_slope"]),
        concentration=str(attrs["passmix_concentration"]), loglik=attrs["passmix_loglik"],
        bic=attrs["passmix_bic"], converged=bool(attrs["passmix_converged"]))


def _coordinates(idata, fit: PooledFit) -> np.ndarray:
    """(draws, coordinates): every draw's free coordinates in the fit's order."""
    post = idata.posterior
    blocks = []
    for name in block_names(fit.family, fit.slope):
        # the free zero-sum abilities are kept as the centred ``abilities``: the same values
        source = "abilities" if name == "ability" and name not in post else name
        if source not in post:
            continue
        values = post[source].transpose("chain", "draw", ...).values
        blocks.append(values.reshape(values.shape[0] * values.shape[1], -1))
    return np.concatenate(blocks, axis=1)


def _metric_seed(idata) -> int | None:
    seed = int(idata.posterior.attrs.get("passmix_metric_seed", -1))
    return None if seed < 0 else seed


def _draws(fit: PooledFit, z_all: np.ndarray, metrics, k_arr: np.ndarray,
           seed: int | None, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Each metric's draws, (draws, systems, k): per draw, the tasks' difficulties and the
    systems' success probabilities drawn from their posteriors (the same for every metric).

    `weights`, optional, (sets, tasks) with rows summing to 1: the metric averaged with
    each row's weights instead of over every task, (draws, sets, systems, k) (a pair's
    shared tasks; the draws are the same whatever the weights).
    """
    y = fit.panel.successes.astype(float)
    f = (fit.panel.trials - fit.panel.successes).astype(float)
    rng = np.random.default_rng(seed)
    n_tasks = y.shape[1]
    w = np.full((1, n_tasks), 1.0 / n_tasks) if weights is None else np.asarray(weights)
    out = {m: np.empty((z_all.shape[0], w.shape[0], y.shape[0], k_arr.size)) for m in metrics}
    for s, z in enumerate(z_all):
        r = fit.task_posterior(z)
        # each task's difficulty, shared by the systems: inverse CDF of its posterior
        u = rng.random(n_tasks)[:, None]
        g = np.minimum((np.cumsum(r, axis=1) < u).sum(axis=1), r.shape[1] - 1)
        a, log_kappa, _, log_s = fit._coordinates(z)
        alpha, beta = beta_shapes(a, log_kappa, fit.grid, log_s)  # (I, G)
        p = rng.beta(alpha[:, g] + y, beta[:, g] + f)  # (I, J)
        for m in metrics:
            out[m][s] = np.einsum("ijk,nj->nik", point_metric(m, p, k_arr), w)
    return {m: v[:, 0] for m, v in out.items()} if weights is None else out


def pair_difference_draws(idata, metric: str, k_arr: np.ndarray,
                          pairs: list[tuple[int, int]], masks: list[np.ndarray]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Draws of ``M_b(k) - M_a(k)`` per pair over its tasks, and of both metrics.

    `pairs` are (a, b) system positions and `masks` each pair's tasks (bool, length J).
    Returns ``(differences, values)`` of shapes (draws, pairs, K) and (draws, pairs, 2, K),
    chains stacked. A pair's two systems share each draw's task difficulties, so the
    difference's spread counts what they share. Seeded by the record's seed, as
    :func:`pooled_metric_draws`.
    """
    fit = pooled_fit(idata)
    sets, index = np.unique(np.array(masks, dtype=bool), axis=0, return_inverse=True)
    weights = sets / sets.sum(axis=1, keepdims=True)
    draws = _draws(fit, _coordinates(idata, fit), [metric], k_arr, _metric_seed(idata),
                   weights)[metric]                                    # (S, sets, I, K)
    rows = index.ravel()
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    values = np.stack([draws[:, rows, a], draws[:, rows, b]], axis=2)
    return values[:, :, 1] - values[:, :, 0], values


def pooled_metric_draws(idata, metrics, k_arr: np.ndarray) -> dict[str, xr.DataArray]:
    """Draws of each metric of every system at horizons `k_arr`, dims (chain, draw, system, k).

    Computed from the draws of the coordinates (:func:`_draws`); the tasks' draws
    are seeded by the record's seed, so the same call gives the same values.
    """
    fit = pooled_fit(idata)
    post = idata.posterior
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    values = _draws(fit, _coordinates(idata, fit), metrics, k_arr, _metric_seed(idata))
    coords = {"chain": post["chain"].values, "draw": post["draw"].values,
              "system": idata.constant_data["system"].values, "k": k_arr}
    return {m: xr.DataArray(v.reshape(n_chain, n_draw, v.shape[1], v.shape[2]),
                            dims=("chain", "draw", "system", "k"), coords=coords)
            for m, v in values.items()}


def posterior_draws(idata, metric: str, k_arr: np.ndarray) -> xr.DataArray:
    """One metric's draws: stored ones where `idata` has every horizon, else computed."""
    name = METRIC_VARS[metric]
    stored = idata.posterior.get(name)
    if stored is not None and np.isin(k_arr, stored["k"].values).all():
        return stored.sel(k=k_arr)
    return pooled_metric_draws(idata, [metric], k_arr)[metric]


def sample_pooled(data, *, system=None, draws: int = 1000, chains: int = 2, tune: int = 1000,
                  max_components: int = 1, concentration: str = "auto",
                  slope: bool | str = False, grid=None, seed=None,
                  target_accept: float = 0.9,
                  cores: int | None = None, progressbar: bool = False, check: bool = True,
                  **read_kwargs) -> xr.DataTree:
    """NUTS draws of the pooled model with weak priors (normal difficulty family).

    Parameters
    ----------
    data : Panel, mapping of Counts, DataFrame or path
        As for :func:`passmix.fit_pooled`.
    system : str, optional
        The system column of a table or file.
    draws, chains, tune : int
        Per chain, as ``pymc.sample``.
    max_components : int, default 1
        Normals in the difficulty distribution: the maximum-likelihood fit
        chooses H = 1 .. `max_components` by its default criterion (AIC), and that H is sampled.
    concentration : {"auto", "system", "shared"}, default "auto"
        As :func:`passmix.fit_pooled`; the fit's choice is sampled.
    slope : bool or "auto", default False
        Per-system slopes, as :func:`passmix.fit_pooled`; sampled when the fit
        has them (the log-slopes with a zero-sum normal prior, sd 1).
    grid : array_like, optional
        Difficulty grid; default :data:`passmix.models.pooled.DEFAULT_GRID`.
    seed : int, optional
        Seed of the fit, the chains and the tasks' draws in the metrics.
    target_accept : float, default 0.9
    cores : int, optional
        Chains run in parallel (default ``min(chains, 2)``).
    progressbar : bool, default False
    check : bool, default True
        Run :func:`passmix.bayes.check_diagnostics` and warn about each problem found.
    **read_kwargs
        Column names for a table or file.

    Returns
    -------
    PooledPosterior
        An ``xarray.DataTree``, read by the same functions as
        :func:`passmix.sample`'s: ``posterior`` (the free coordinates;
        ``abilities``, ``concentrations`` (and ``slopes``) with dim ``system``
        named by the systems' labels, ``grid_weights`` with dim ``grid_point``;
        ``pass_at_k``, ``pass_hat_k``, ``auc_at_k`` with dims ``system`` and
        ``k`` at k = 1, 10, 100, 1000), ``sample_stats``, and
        ``constant_data`` (``successes`` and ``trials`` per system and task,
        the ``grid`` and the maximum-likelihood coordinates ``mle``). The
        posterior's ``attrs`` record the fit's structure (family, H, slopes,
        concentration) and the seed of the tasks' draws;
        ``sample_stats.attrs["passmix_problems"]`` the problems found.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.bayes.pooled import sample_pooled
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(1.0, 2.0, size=40)
    >>> p = 1 / (1 + np.exp(-(np.array([-1.0, 1.0])[:, None] - d[None, :])))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10))
    >>> post = sample_pooled(panel, draws=100, tune=100, seed=0,
    ...                      grid=np.linspace(-12, 14, 53))  # doctest: +SKIP
    >>> passmix.credible_interval(post, "pass@k", 10)  # doctest: +SKIP
    """
    pm = import_pymc()

    panel = as_panel(data, system, **read_kwargs)
    draws = check_whole(draws, "draws", integral=True)
    chains = check_whole(chains, "chains", integral=True)
    tune = check_whole(tune, "tune", minimum=0, integral=True)
    if not isinstance(target_accept, (int, float)) or not 0.0 < target_accept < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {shown(target_accept)}.")
    cores = min(chains, 2) if cores is None else check_whole(cores, "cores", integral=True)
    seed = check_seed(seed)
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise ValueError("seed must be an int or None here (it seeds PyMC's chains).")
    fit = fit_pooled(panel, family="normal", max_components=max_components,
                     concentration=concentration, slope=slope, grid=grid, seed=seed)
    model = build_pooled_model(panel_layout(panel), "normal", fit.grid, fit.n_components,
                               prior="weak", slope=fit.slope,
                               shared=fit.concentration == "shared")
    names = [rv.name for rv in model.free_RVs]
    blocks = split_blocks(fit.params, fit.blocks())
    rng = np.random.default_rng(seed)
    # chains start near the optimum, jittered so that R-hat can see them disagree;
    # the zero-sum priors' values are centred
    starts = [{name: blocks[name] + 0.1 * rng.standard_normal(blocks[name].shape)
               for name in names if name in blocks} for _ in range(chains)]
    for start in starts:
        for name in ("ability", "log_slope"):
            if name in start:
                start[name] = start[name] - start[name].mean()
    idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores,
                      random_seed=seed, model=model, initvals=starts,
                      target_accept=target_accept, progressbar=progressbar,
                      quiet=not progressbar,  # as passmix.sample: no lines unless asked
                      compute_convergence_checks=False,
                      compile_kwargs=sampler_compile_kwargs())
    return _record(idata, fit, seed, check)


#: Posterior variables with one value per system (``log_concentration`` where it is not
#: shared), which get the dim ``system`` named by the systems' labels.
_PER_SYSTEM = ("abilities", "concentrations", "log_concentration", "slopes", "log_slope")


def _named_dims(posterior: xr.Dataset, systems: np.ndarray) -> xr.Dataset:
    """The posterior with dims named as the data's (``system`` by label, ``grid_point``),
    without the free zero-sum ``ability``, which ``abilities`` repeats."""
    out = posterior.drop_vars("ability", errors="ignore")
    for name in out.data_vars:
        extra = [d for d in out[name].dims if d not in ("chain", "draw")]
        if len(extra) != 1:
            continue
        if name in _PER_SYSTEM and out.sizes[extra[0]] == systems.size:
            out[name] = out[name].rename({extra[0]: "system"}).drop_vars(
                "system", errors="ignore").assign_coords(system=systems)
        elif name == "grid_weights":
            out[name] = out[name].rename({extra[0]: "grid_point"}).drop_vars(
                "grid_point", errors="ignore")
    # dims the renames left unused
    return out.drop_dims([d for d in out.dims if d not in ("chain", "draw") and not any(
        d in out[v].dims for v in out.data_vars)])


def _record(idata: xr.DataTree, fit: PooledFit, seed: int | None, check: bool) -> xr.DataTree:
    """`idata` with what the metrics need (counts, grid, the fit's coordinates and structure),
    the metric draws at the default horizons, and the diagnostics' problems."""
    panel = fit.panel
    systems = np.array([system_label(s) for s in panel.systems], dtype=object)
    if len(set(systems)) < systems.size:
        raise ValueError("the systems' labels must stay distinct as strings (the draws record "
                         f"them so): {', '.join(map(repr, panel.systems))}.")
    record = xr.Dataset(
        {"successes": (("system", "task"), np.asarray(panel.successes)),
         "trials": (("system", "task"), np.asarray(panel.trials)),
         "grid": ("grid_point", np.asarray(fit.grid, dtype=float)),
         "mle": ("coordinate", np.asarray(fit.params, dtype=float))},
        coords={"system": systems})
    # PyMC's own record of the model's data containers (its layout's pairs) gives way
    idata["constant_data"] = record
    idata["posterior"] = _named_dims(idata.posterior.to_dataset(), systems)
    idata.posterior.attrs.update({
        "passmix_model": POOLED, "passmix_prior": "weak", "passmix_family": fit.family,
        "passmix_n_components": int(fit.n_components), "passmix_slope": int(fit.slope),
        "passmix_concentration": fit.concentration, "passmix_loglik": float(fit.loglik),
        "passmix_bic": float(fit.bic), "passmix_converged": int(fit.converged),
        "passmix_metric_seed": -1 if seed is None else int(seed)})
    k_arr = np.asarray(SUMMARY_K)
    for metric, draws in pooled_metric_draws(idata, list(METRIC_VARS), k_arr).items():
        idata["posterior"][METRIC_VARS[metric]] = draws
    idata["sample_stats"].attrs["passmix_problems"] = check_diagnostics(idata, warn=check,
                                                                        stacklevel=4)
    return idata
