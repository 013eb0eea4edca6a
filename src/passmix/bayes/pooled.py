"""NUTS posterior of the pooled model, and the systems' metrics on its draws.

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

The metrics are those of the systems on *these* tasks, as the fit's delta
intervals are: for each posterior draw of the coordinates, every task's
difficulty is drawn from its posterior on the grid (shared by the systems),
then each system's success probability on it from its Beta posterior, and
the metric is averaged over the tasks. The draws' quantiles are the credible
interval; :meth:`PooledPosterior.summary` puts them beside the fit's delta
intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._cbuild import parallel_c_build
from .._pytensor import import_pymc
from .._defaults import SUMMARY_K
from .._validation import check_k, check_level, check_metric, check_seed, check_whole
from ..data.panel import as_panel
from ..models.pooled._graph import build_pooled_model
from ..models.pooled._layout import block_names, panel_layout, split_blocks
from ..models.pooled._likelihood import beta_shapes
from ..models.pooled.fit import fit_pooled
from ..models.pooled.result import PooledFit

__all__ = ["PooledPosterior", "sample_pooled"]


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


@dataclass(frozen=True)
class PooledPosterior:
    """NUTS draws of the pooled model and the systems' metrics on them.

    Attributes
    ----------
    idata : arviz.InferenceData
        The draws: free coordinates (``ability``, ``log_concentration``,
        ``difficulty_mean``, ``log_difficulty_sd``, ``component_logits``) and
        the deterministics ``abilities``, ``concentrations``,
        ``grid_weights``.
    fit : PooledFit
        The maximum-likelihood fit the chains started from (its H is sampled).
    seed : int or None
        Seed of the tasks' draws in the metrics.
    """

    idata: Any
    fit: PooledFit
    seed: int | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def coordinates(self) -> np.ndarray:
        """(draws, coordinates): every draw's free coordinates in the fit's order."""
        if "z" not in self._cache:
            post = self.idata.posterior
            blocks = []
            for name in block_names(self.fit.family, self.fit.slope):
                if name not in post:
                    continue
                values = post[name].values
                blocks.append(values.reshape(values.shape[0] * values.shape[1], -1))
            self._cache["z"] = np.concatenate(blocks, axis=1)
        return self._cache["z"]

    def metric_draws(self, metric: str, k) -> pd.DataFrame:
        """Draws of each system's metric on these tasks: rows draws, columns (system, k)."""
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        key = (metric, tuple(k_arr.tolist()))
        if key not in self._cache:
            self._cache[key] = self._draws(metric, k_arr)
        return self._cache[key].copy()

    def _draws(self, metric: str, k_arr: np.ndarray) -> pd.DataFrame:
        fit = self.fit
        y = fit.panel.successes.astype(float)
        f = (fit.panel.trials - fit.panel.successes).astype(float)
        z_all = self.coordinates()
        rng = np.random.default_rng(self.seed)
        out = np.empty((z_all.shape[0], y.shape[0], k_arr.size))
        n_tasks = y.shape[1]
        for s, z in enumerate(z_all):
            r = fit.task_posterior(z)
            # each task's difficulty, shared by the systems: inverse CDF of its posterior
            u = rng.random(n_tasks)[:, None]
            g = np.minimum((np.cumsum(r, axis=1) < u).sum(axis=1), r.shape[1] - 1)
            a, log_kappa, _, log_s = fit._coordinates(z)
            alpha, beta = beta_shapes(a, log_kappa, fit.grid, log_s)  # (I, G)
            p = rng.beta(alpha[:, g] + y, beta[:, g] + f)  # (I, J)
            out[s] = point_metric(metric, p, k_arr).mean(axis=1)
        columns = pd.MultiIndex.from_product([list(fit.systems), k_arr.tolist()],
                                             names=["system", "k"])
        return pd.DataFrame(out.reshape(out.shape[0], -1), columns=columns)

    def interval(self, metric: str, k, level: float = 0.95) -> pd.DataFrame:
        """Equal-tailed credible intervals: one row per system and k (mean, lower, upper)."""
        level = check_level(level)
        draws = self.metric_draws(metric, k)
        lo, hi = np.quantile(draws.to_numpy(), [(1 - level) / 2, (1 + level) / 2], axis=0)
        return pd.DataFrame({
            "system": draws.columns.get_level_values("system"),
            "k": draws.columns.get_level_values("k").astype("int64"),
            "mean": draws.mean().to_numpy(), "lower": lo, "upper": hi,
        })

    def summary(self, k=SUMMARY_K, level: float = 0.95) -> pd.DataFrame:
        """Credible intervals beside the fit's estimates and delta intervals, every metric.

        Columns: system, metric, k, mean, lower, upper (posterior), estimate,
        delta_lower, delta_upper (the maximum-likelihood fit).
        """
        k_arr, _ = check_k(k)
        parts = []
        for metric in ("pass@k", "pass^k", "auc@k"):
            table = self.interval(metric, k_arr, level)
            delta = self.fit.delta(metric, k_arr, level)
            table.insert(1, "metric", metric)
            table["estimate"] = delta["estimate"].to_numpy()
            table["delta_lower"] = delta["lower"].to_numpy()
            table["delta_upper"] = delta["upper"].to_numpy()
            parts.append(table)
        return pd.concat(parts, ignore_index=True)

    def diagnose(self) -> pd.DataFrame:
        """ArviZ's summary of the free coordinates: mean, sd, ESS, R-hat per coordinate."""
        import arviz as az

        names = ["abilities"] + [n for n in block_names(self.fit.family, self.fit.slope)[1:]
                                 if n in self.idata.posterior and self.idata.posterior[n].size]
        return az.summary(self.idata, var_names=names, kind="all")


def sample_pooled(data, *, system=None, draws: int = 1000, chains: int = 2, tune: int = 1000,
                  max_components: int = 1, concentration: str = "auto",
                  slope: bool | str = False, grid=None, seed=None,
                  target_accept: float = 0.9,
                  cores: int | None = None, progressbar: bool = False,
                  **read_kwargs) -> PooledPosterior:
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
    **read_kwargs
        Column names for a table or file.

    Returns
    -------
    PooledPosterior

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
    >>> post.interval("pass@k", 10)  # doctest: +SKIP
    """
    pm = import_pymc()

    panel = as_panel(data, system, **read_kwargs)
    draws = check_whole(draws, "draws", integral=True)
    chains = check_whole(chains, "chains", integral=True)
    tune = check_whole(tune, "tune", minimum=0, integral=True)
    if not isinstance(target_accept, (int, float)) or not 0.0 < target_accept < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept!r}.")
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
    blocks = split_blocks(fit.params, fit._blocks())
    rng = np.random.default_rng(seed)
    # chains start near the optimum, jittered so that R-hat can see them disagree;
    # the zero-sum priors' values are centred
    starts = [{name: blocks[name] + 0.1 * rng.standard_normal(blocks[name].shape)
               for name in names if name in blocks} for _ in range(chains)]
    for start in starts:
        for name in ("ability", "log_slope"):
            if name in start:
                start[name] = start[name] - start[name].mean()
    with parallel_c_build():
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores,
                          random_seed=seed, model=model, initvals=starts,
                          target_accept=target_accept, progressbar=progressbar,
                          compute_convergence_checks=False)
    return PooledPosterior(idata=idata, fit=fit, seed=seed)
