"""The pooled fit's results: :class:`PooledFit` (every system) and :class:`PooledSystem`
(one), with delta and profile intervals.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betaln, expit

from ..._cache import BoundedMemo
from ..._defaults import METRICS, SUMMARY_K
from ..._validation import check_interval_method, check_k, check_level, check_metric
from ...inference.optimize import at_bound, covariance_from_information
from ...inference.delta import (ConfidenceInterval, logit_wald_ends, normal_quantile,
                                widen_degenerate)
from ..._special import betabinom_logpmf
from ...metrics import evaluate_logit, evaluate_metric
from ...data.counts import Counts
from ...data.panel import Panel, system_name
from ...inference.profile import LikelihoodRegion, region_drop, repair_across_metrics
from ._graph import _layout_loglik
from ._layout import _BOUNDS, _Layout, _blocks, _box, _system_parts, panel_layout, split_blocks
from ._likelihood import (_CHUNK, _PooledDerivatives, _eta, _log_grid_weights, _lse,
                          _pooled_derivatives, beta_shapes, task_grid_loglik)

__all__ = ["PROFILE_CELLS", "PooledFit", "PooledSystem", "heldout_loglik"]


# -- results ------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class PooledFit:
    """A fitted pooled model (:func:`fit_pooled`).

    Attributes
    ----------
    panel : Panel
        The data.
    family : str
        The difficulty family chosen (``"grid"`` or ``"normal"``).
    grid : numpy.ndarray
        Difficulty grid (logits).
    abilities, concentrations : numpy.ndarray
        ``a_i`` (summing to 0) and ``kappa_i``, one per system.
    grid_weights : numpy.ndarray
        The fitted difficulty distribution: the mass at each grid point.
    loglik, bic : float
        Maximised marginal log-likelihood and its BIC (J tasks as observations).
    converged : bool
        L-BFGS-B's verdict on the chosen family's optimum.
    family_table : pandas.DataFrame
        Every candidate tried (family, H, concentration, with or without slopes):
        log-likelihood, parameters counted, AIC, BIC, selected;
        with ``criterion="heldout"`` also ``heldout_loglik``, the held-out
        tasks' log-likelihood summed over the folds.
    params : numpy.ndarray
        The optimum's free coordinates.
    n_components : int
        Normals in the difficulty distribution (1 unless ``max_components``
        let the criterion choose more; 1 for the grid family).
    slope : bool
        Whether the chosen model has per-system slopes (``fit_pooled(slope=...)``).
    concentration : {"system", "shared"}
        Whether each system has its own concentration or one is shared by all
        (``fit_pooled(concentration=...)``); :attr:`concentrations` has one
        value per system either way.
    robust : bool
        Whether intervals are widened where the tasks' own scores vary more than
        the model's information says (a sandwich check, per system, metric and
        horizon; :meth:`_inflation`): True by default, since the shared
        difficulty order is an assumption real systems break. ``replace(fit,
        robust=False, _cache={})`` gives the model-only intervals.
    """

    panel: Panel
    family: str
    grid: np.ndarray
    abilities: np.ndarray
    concentrations: np.ndarray
    grid_weights: np.ndarray
    loglik: float
    bic: float
    converged: bool
    family_table: pd.DataFrame
    params: np.ndarray
    _layout: _Layout = field(repr=False)
    n_components: int = 1
    slope: bool = False
    concentration: str = "system"
    robust: bool = True
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_parameters(cls, panel: Panel, family: str, grid, params, *,
                        n_components: int = 1, slope: bool = False,
                        concentration: str = "system", loglik: float = np.nan,
                        bic: float = np.nan, converged: bool = True,
                        family_table: pd.DataFrame | None = None) -> PooledFit:
        """The fit at coordinates `params` of a model of `family` on `panel`: everything
        else (abilities, concentrations, weights) follows from them.

        :func:`fit_pooled` builds its result this way; so does
        :func:`passmix.bayes.pooled.pooled_fit` from the draws' record of it.
        """
        grid = np.asarray(grid, dtype=float)
        params = np.asarray(params, dtype=float)
        layout = panel_layout(panel)
        blocks = _blocks(family, layout.n_systems, grid.size, n_components, slope,
                         concentration == "shared")
        parts = split_blocks(params, blocks)
        a, log_kappa, _ = _system_parts(parts)
        table = pd.DataFrame() if family_table is None else family_table
        return cls(panel=panel, family=family, grid=grid, abilities=a,
                   concentrations=np.exp(log_kappa),
                   grid_weights=np.exp(_log_grid_weights(family, parts, grid)),
                   loglik=float(loglik), bic=float(bic), converged=bool(converged),
                   family_table=table, params=params, _layout=layout,
                   n_components=int(n_components), slope=bool(slope),
                   concentration=concentration)

    # -- the model's quantities ---------------------------------------------------
    @property
    def systems(self) -> np.ndarray:
        """System labels, in the order of :attr:`abilities`."""
        return self.panel.systems

    @property
    def slopes(self) -> np.ndarray:
        """Per-system slopes ``s_i`` (geometric mean 1); all 1 without ``slope=True``."""
        return np.exp(self._coordinates(self.params)[3])

    def _blocks(self):
        return _blocks(self.family, self._layout.n_systems, self.grid.size, self.n_components,
                       self.slope, self.concentration == "shared")

    def _coordinates(self, z: np.ndarray):
        """Abilities, log-concentrations, log grid weights and log-slopes at coordinates `z`
        (per system, (I,), but the weights)."""
        parts = split_blocks(z, self._blocks())
        a, log_kappa, log_s = _system_parts(parts)
        return a, log_kappa, _log_grid_weights(self.family, parts, self.grid), log_s

    def task_posterior(self, z: np.ndarray | None = None) -> np.ndarray:
        """``r[j, g]``: posterior probability that task j's difficulty is ``grid[g]``."""
        a, log_kappa, log_w, log_s = self._coordinates(self.params if z is None else z)
        joint = log_w[None, :] + task_grid_loglik(self._layout, a, log_kappa, self.grid, log_s)
        return np.exp(joint - _lse(joint, axis=1, keepdims=True))

    def _posterior(self, z: np.ndarray | None) -> np.ndarray:
        """The task posterior at `z`, kept for the optimum (every metric call needs it)."""
        if z is not None:
            return self.task_posterior(z)
        if "posterior" not in self._cache:
            self._cache["posterior"] = self.task_posterior()
        return self._cache["posterior"]

    def _pairs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """System i's distinct (successes, trials) and the (pairs x tasks) 0/1 membership."""
        key = ("pairs", i)
        if key not in self._cache:
            pairs, codes = np.unique(np.stack([self.panel.successes[i], self.panel.trials[i]]),
                                     axis=1, return_inverse=True)
            member = np.zeros((pairs.shape[1], self._layout.n_tasks))
            member[codes.ravel(), np.arange(self._layout.n_tasks)] = 1.0
            self._cache[key] = (pairs, member)
        return self._cache[key]

    def _system_components(self, i: int, z: np.ndarray | None, r: np.ndarray,
                           tasks: np.ndarray | None = None):
        """System i's components before pruning: weights (pairs, G) and shapes, (pairs, G) each.

        A component's shapes depend on the task only through system i's counts
        there, so tasks with the same counts pool their posterior weights: at
        most (m + 1) x G components instead of J x G. `tasks` (a 0/1 mask over
        the tasks) restricts the metric's average to those tasks.
        """
        a, log_kappa, _, log_s = self._coordinates(self.params if z is None else z)
        alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
        pairs, member = self._pairs(i)
        if tasks is None:
            weights = member @ r / r.shape[0]
        else:
            weights = (member * tasks) @ r / tasks.sum()
        y = pairs[0].astype(float)[:, None]
        f = (pairs[1] - pairs[0]).astype(float)[:, None]
        return weights, alpha + y, beta + f

    def _system_mixture(self, i: int, z: np.ndarray | None = None,
                        r: np.ndarray | None = None, with_mask: bool = False,
                        tasks: np.ndarray | None = None):
        """System i's per-task posterior Beta components ``(weights, alpha, beta)``."""
        r = self._posterior(z) if r is None else r
        weights, alpha, beta = self._system_components(i, z, r, tasks)
        w = weights.ravel()
        keep = w > 1e-14 * w.max()
        out = (w[keep] / w[keep].sum(), alpha.ravel()[keep], beta.ravel()[keep])
        return (*out, keep) if with_mask else out

    def _per_system(self, evaluate, metric: str, k_arr: np.ndarray,
                    z: np.ndarray | None = None, rows=None,
                    tasks: np.ndarray | None = None) -> np.ndarray:
        """(len(rows), K) of ``evaluate(metric, w, alpha, beta, k)``, one posterior.

        `rows` are system positions (default all); asking for one system costs
        one system's evaluation, which is what a per-system interval needs.
        """
        r = self._posterior(z)
        rows = range(self._layout.n_systems) if rows is None else rows
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            value = evaluate(metric, *self._system_mixture(i, z, r, tasks=tasks), k_arr)
            out[n] = value[0] if isinstance(value, tuple) else value
        return out

    def _values(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                rows=None, tasks: np.ndarray | None = None) -> np.ndarray:
        """(I, K) metric values of every system (or of `rows`), over `tasks` (default all)."""
        return self._per_system(evaluate_metric, metric, k_arr, z, rows, tasks)

    def _logits(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                rows=None) -> np.ndarray:
        """(I, K) logits of the metric, exact where it underflows or rounds to 1."""
        return self._per_system(evaluate_logit, metric, k_arr, z, rows)

    def metric(self, metric: str, k):
        """A metric of every system at horizon(s) `k`, as every result's ``metric`` gives it.

        Parameters
        ----------
        metric : {"pass@k", "pass^k", "auc@k"}
            The metric.
        k : int or sequence of int
            Horizon(s).

        Returns
        -------
        numpy.ndarray
            Shape ``(systems,)`` at one horizon and ``(systems, len(k))`` at
            several (each row a system's :meth:`PooledSystem.metric`); the
            table is :meth:`metric_table`.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(2.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b", "c"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> values = fit.metric("pass@k", [1, 100])
        >>> values.shape, bool((values[:, 1] >= values[:, 0]).all())
        ((3, 2), True)
        """
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        values = self._values(metric, k_arr)
        return values[:, 0] if scalar else values

    def metric_table(self, metric: str, k) -> pd.DataFrame:
        """A metric of every system at horizon(s) `k`: one row per system, one column per k.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5), systems=["a", "b"]),
        ...                          seed=0)
        >>> table = fit.metric_table("pass@k", [1, 100])
        >>> table.index.tolist(), bool((table[100] >= table[1]).all())
        (['a', 'b'], True)
        """
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        values = self._values(metric, k_arr)
        return pd.DataFrame(values, index=pd.Index(self.systems, name="system"),
                            columns=pd.Index(k_arr, name="k"))

    def system(self, system) -> PooledSystem:
        """One system's result, with the :class:`~passmix.estimators.base.FittedResult` interface."""
        return PooledSystem(self, self.panel.index(system))

    # -- uncertainty ------------------------------------------------------------------
    def _derivatives(self) -> _PooledDerivatives:
        """The analytic derivative pieces at the optimum (kept: several uses need them)."""
        if "derivatives" not in self._cache:
            self._cache["derivatives"] = _pooled_derivatives(self._layout, self.grid, self.family,
                                                             self._blocks(), self.params)
        return self._cache["derivatives"]

    def _covariance(self) -> np.ndarray:
        if "cov" not in self._cache:
            free = ~at_bound(self.params, _box(self._blocks())).any(axis=1)
            cov = np.zeros((self.params.size,) * 2)
            if free.any():
                # the analytic observed information (2n gradients of differencing cost
                # minutes for hundreds of systems; this agrees with them to ~1e-6)
                info = self._derivatives().information()[np.ix_(free, free)]
                cov[np.ix_(free, free)] = covariance_from_information(
                    info, null=_unidentified(self._blocks(), free))
            self._cache["cov"] = cov
        return self._cache["cov"]

    def _robust_covariance(self) -> np.ndarray:
        """The sandwich ``C S C``: C the inverse observed information (:meth:`_covariance`),
        S the sum of the tasks' score outer products (:meth:`_PooledDerivatives.task_scores`)."""
        if "robust_cov" not in self._cache:
            cov = self._covariance()
            scores = self._derivatives().task_scores()
            free = np.diag(cov) > 0
            scores[~free] = 0.0
            self._cache["robust_cov"] = cov @ (scores @ scores.T) @ cov
        return self._cache["robust_cov"]

    def _inflation(self, metric: str, k: int) -> np.ndarray:
        """(I,): how much wider the sandwich says each system's metric logit varies than the
        observed information does, as a variance ratio, at least 1.

        Where the model is wrong (the tasks' difficulty order differs between
        systems, the difficulty distribution is off) the tasks' own scores
        vary more than the model's curvature implies; the ratio carries that
        into the intervals, per system, metric and horizon. It is never
        taken below 1: where the model fits, the model's information stays.
        """
        key = ("inflation", metric, int(k))
        if key not in self._cache:
            cov, robust = self._covariance(), self._robust_covariance()
            grads, _ = self._logit_gradients(metric, np.array([int(k)]), np.diag(cov) > 0)
            g = grads[:, :, 0]
            model = np.einsum("ci,cd,di->i", g, cov, g)
            sandwich = np.einsum("ci,cd,di->i", g, robust, g)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(model > 0, sandwich / model, 1.0)
            self._cache[key] = np.maximum(np.nan_to_num(ratio, nan=1.0, posinf=1.0), 1.0)
        return self._cache[key]

    def delta(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Delta-method intervals on the logit scale, per system and horizon.

        The covariance is the inverse observed information of the free
        coordinates (grid weights driven to their lower bound are held
        there, as the delta method holds any bounded coordinate). To that
        parameter variance is added the variance of the benchmark metric
        given the parameters (each task's own success probability is known
        only through its posterior; :meth:`_task_variance`), since the metric
        is one of these tasks; with :attr:`robust` the parameters' part is
        widened by the sandwich (:meth:`_inflation`). Coverage is checked by
        simulation in
        ``benchmarks/coverage_pooled.py`` and ``tests/test_models_pooled.py``.
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        # every system at once: each perturbed point's task posterior is shared by
        # all systems, and tables ask for every system in turn (kept per request)
        key = ("delta", metric, tuple(k_arr.tolist()), level, self.robust)
        if key not in self._cache:
            self._cache[key] = self._delta_all(metric, k_arr, level)
        table = self._cache[key]
        if system is None:
            return table.copy()
        # rows are system-major (labels may be tuples, which pandas will not compare)
        first = self.panel.index(system) * k_arr.size
        return table.iloc[first:first + k_arr.size].reset_index(drop=True)

    def _delta_all(self, metric: str, k_arr: np.ndarray, level: float) -> pd.DataFrame:
        rows = list(range(self._layout.n_systems))
        cov = self._covariance()
        base = self._values(metric, k_arr, rows=rows)
        grads, centre = self._logit_gradients(metric, k_arr, np.diag(cov) > 0)
        se_logit = np.sqrt(np.maximum(np.einsum("cik,cd,dik->ik", grads, cov, grads), 0.0))
        if self.robust:
            se_logit = se_logit * np.sqrt(np.stack([self._inflation(metric, k) for k in k_arr],
                                                   axis=1))
        lower, upper = logit_wald_ends(centre, se_logit, level)
        # rounding may put the estimate a hair outside expit of its own logit's interval
        lower, upper = np.minimum(lower, base), np.maximum(upper, base)
        # The benchmark's metric is over these tasks' own success probabilities, which
        # stay uncertain given the data even at known parameters: add that variance to
        # each half-width in quadrature, on the probability scale (on the logit scale
        # it is divided by M^2, which for a small Pass^k blows up to an interval of ~1)
        var_tasks = self._task_variance(metric, k_arr)
        lower, upper = _with_task_spread(base, lower, upper, var_tasks, normal_quantile(level))
        # at a huge horizon M and both ends can round to 1 (or to 0) though the logit
        # interval has width: an end one double away says so instead of a point
        lower, upper = widen_degenerate(lower, upper)
        # the se on the probability scale: d expit = M (1 - M) d logit
        se = np.hypot(base * (1 - base) * se_logit, np.sqrt(var_tasks))
        return self._table(metric, k_arr, rows, base, se, lower, upper)

    def _table(self, metric, k_arr, rows, base, se, lower, upper) -> pd.DataFrame:
        labels = self.systems
        frames = [pd.DataFrame({"system": [labels[i]] * k_arr.size, "metric": metric, "k": k_arr,
                                "estimate": base[n], "se": se[n], "lower": lower[n],
                                "upper": upper[n]}) for n, i in enumerate(rows)]
        return pd.concat(frames, ignore_index=True)

    def profile(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Profile-likelihood intervals, per system and horizon.

        The model part of each interval is the smallest and largest value of
        the system's metric over the parameters whose log-likelihood is within
        ``chi2(1).ppf(level) / 2`` of the maximum: every other coordinate (the
        difficulty distribution, the concentrations, the other abilities) is
        profiled out (:class:`passmix.inference.profile.LikelihoodRegion`). Unlike the
        delta method this reaches in from a bound: an ability the data push to
        its bound (a system that solved nothing) still gets an upper end where
        the shared difficulty distribution stops it. As in :meth:`delta`, the
        spread of the benchmark metric over these tasks given the parameters
        is then added (:func:`_with_task_spread`). With :attr:`robust` the
        region's cut is widened by the sandwich's ratio for that system,
        metric and horizon (:meth:`_inflation`). ``se`` is the delta
        method's. Coverage on real data: ``docs/results/pooled_intervals.md``.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(2.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b", "c"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> table = fit.profile("pass@k", [1, 100], system="b")
        >>> bool((table["lower"] < table["estimate"]).all() and
        ...      (table["estimate"] < table["upper"]).all())
        True
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        rows = (range(self._layout.n_systems) if system is None
                else [self.panel.index(system)])
        delta = self.delta(metric, k_arr, level)
        parts = []
        for i in rows:
            key = ("profile", metric, tuple(k_arr.tolist()), level, i, self.robust)
            if key not in self._cache:
                self._cache[key] = self._profile_system(metric, k_arr, level, i)
            parts.append(self._cache[key])
        first = [i * k_arr.size for i in rows]
        take = np.concatenate([np.arange(f, f + k_arr.size) for f in first])
        table = delta.iloc[take].reset_index(drop=True)
        table["lower"] = np.concatenate([lo for lo, _ in parts])
        table["upper"] = np.concatenate([hi for _, hi in parts])
        return table

    def _profile_system(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """System i's profile ends (with the tasks' spread) at every horizon."""
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        # at k = 1 every metric is the mean: searched once for all three
        one = k_arr == 1
        for part, name in ((one, "pass@k"), (~one, metric)):
            if part.any():
                key = ("profile-model", name, tuple(k_arr[part].tolist()), level, i,
                       self.robust)
                if key not in self._cache:
                    self._cache[key] = self._model_ends(name, k_arr[part], level, i)
                lower[part], upper[part] = self._cache[key]
        base = self._values(metric, k_arr, rows=[i])[0]
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        var_tasks = self._task_variance(metric, k_arr, rows=[i])[0]
        lower, upper = _with_task_spread(base, lower, upper, var_tasks, normal_quantile(level))
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        for arr in (lower, upper):
            arr.flags.writeable = False
        return lower, upper

    def _model_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """The smallest and largest value of system i's metric over the likelihood region
        (widened by the sandwich's :meth:`_inflation` with :attr:`robust`), per horizon."""
        if not self.robust:
            return self._region_ends(metric, k_arr, level, i, 1.0)[:2]
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        # each horizon has its own region; the searches go up in k, each started also
        # from the ends at the horizon below (pulled into its region), as they are
        # within one region: a lone search from the delta direction's edge can stop
        # far inside the region
        warm: dict = {}
        for n in np.argsort(k_arr, kind="stable"):
            scale = float(self._inflation(metric, k_arr[n])[i])
            lo, hi, warm = self._region_ends(metric, k_arr[n:n + 1], level, i, scale, warm)
            lower[n], upper[n] = lo[0], hi[0]
        return lower, upper

    def _region_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int,
                     scale: float, warm: dict | None = None):
        """Extremes of system i's metric over the region whose drop is `scale` times the
        chi-square's, and the last horizon's end points (see
        :meth:`~passmix.inference.profile.LikelihoodRegion.extremes`)."""
        all_coordinates = np.ones(self.params.size, dtype=bool)
        # the search's log-likelihood and the metric's gradient share their pieces
        # (the task posterior and its derivative tables) at each point
        shared = _SharedPieces(self)
        region = self._region(shared, level, scale)
        sliced = region.objective

        def logit(x, t):
            z = sliced.full(x)
            grads, centre = self._logit_gradients(metric, np.array([t]), all_coordinates,
                                                  z, rows=[i],
                                                  derivatives=shared.pieces(z))
            return float(centre[0, 0]), sliced.T.T @ grads[:, 0, 0]

        def value(x, t):
            return float(self._values(metric, np.array([t]), sliced.full(x), rows=[i])[0, 0])

        def batch(xs, t):
            return np.array([self._logits(metric, np.array([t]), sliced.full(x),
                                          rows=[i])[0, 0] for x in xs])

        lower, upper, _ = region.extremes(logit, value, k_arr, batch, warm)
        return lower, upper, region.end_points

    def _region(self, objective: _SharedPieces, level: float, scale: float = 1.0
                ) -> LikelihoodRegion:
        """The likelihood region at `level` in the identified coordinates, built once.

        The abilities (and log-slopes, and the grid's logits) enter the
        likelihood up to a common shift, so one coordinate of each such block
        is taken out (:func:`_profile_coordinates`); the region is searched in
        the others. The likelihood has one optimum in all the fits seen, so
        the searches start from fewer points than the mixture's: the delta
        direction's edge and the neighbouring horizon's ends, and on panels of
        at most :data:`SPREAD_CELLS` cells the region's spread too.
        """
        key = ("region", level, scale)
        if key not in self._cache:
            blocks = self._blocks()
            box = _box(blocks)
            x_hat, T, P, box_x = _profile_coordinates(blocks, self.params, box)
            search = _Affine(objective, self.params, x_hat, T)
            small = self._layout.n_systems * self._layout.n_tasks <= SPREAD_CELLS
            # few tasks and a system that never (or always) succeeded can leave a second
            # piece of the region far from the estimate, its ability against the box's
            # end: there the spread also climbs in from points over the box (each climb
            # is a search of its own, so only there)
            probes = (_box_probes(box_x, PROBES) if small and _has_extreme_system(self.panel)
                      else ())
            # a held relative ability moves its system's logit one for one: searched as is
            region = LikelihoodRegion(search, x_hat, self.loglik - scale * region_drop(level),
                                      P @ self._covariance() @ P.T, box_x, probes=probes,
                                      held_logistic=self.family == "grid" or self.slope)
            region.n_starts, region.n_far, region.n_polish, region.max_restarts = 1, 0, 1, 1
            region.ray_tol, region.scaled = 1e-3, True
            # few tasks leave a curved region with several local extremes on its edge,
            # and each evaluation is cheap there: small panels also start from the spread
            region.use_spread = small
            region.floor = _LOGIT_FLOOR
            region.polish_options = {"maxiter": 60, "ftol": 1e-8}
            self._cache[key] = region
        region = self._cache[key]
        region.objective.objective = objective
        return region

    def _task_variance(self, metric: str, k_arr: np.ndarray, rows=None) -> np.ndarray:
        """(I, K) variance of each system's benchmark metric given the data, at the optimum.

        Task j's success probability has a posterior (a mixture over the grid
        of Beta components); the benchmark metric averages a function ``g``
        of it over the J tasks, so its variance is ``sum_j Var_j(g) / J^2``.
        Pass@k and Pass^k have ``Var(g)`` in closed form from Beta moments
        (``E[(1 - p)^n]`` at ``n = k, 2k``; ``E[p^n]`` likewise). AUC@k
        averages Pass@h over ``h <= k``, so its standard deviation per task is
        at most the average of theirs: that bound is used, the average taken
        over at most 24 log-spaced horizons (trapezoid rule).
        """
        r = self._posterior(None)
        a, log_kappa, _, log_s = self._coordinates(self.params)
        n_tasks = r.shape[0]
        rows = range(self._layout.n_systems) if rows is None else rows
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
            pairs, member = self._pairs(i)
            codes = np.argmax(member, axis=0)
            a_c = alpha + pairs[0][:, None]                  # (pairs, G)
            b_c = beta + (pairs[1] - pairs[0])[:, None]
            base_ln = betaln(a_c, b_c)

            def task_sd(h: np.ndarray, pass_hat: bool) -> np.ndarray:
                """(J, len(h)) posterior sd of g over each task, for horizons h."""
                h = h.astype(float)[None, None, :]
                if pass_hat:
                    m1 = np.exp(betaln(a_c[..., None] + h, b_c[..., None]) - base_ln[..., None])
                    m2 = np.exp(betaln(a_c[..., None] + 2 * h, b_c[..., None])
                                - base_ln[..., None])
                else:
                    m1 = np.exp(betaln(a_c[..., None], b_c[..., None] + h) - base_ln[..., None])
                    m2 = np.exp(betaln(a_c[..., None], b_c[..., None] + 2 * h)
                                - base_ln[..., None])
                e1 = np.einsum("jg,jgk->jk", r, m1[codes])
                e2 = np.einsum("jg,jgk->jk", r, m2[codes])
                return np.sqrt(np.maximum(e2 - e1 ** 2, 0.0))

            if metric == "auc@k":
                sds = np.empty((n_tasks, k_arr.size))
                for c, kv in enumerate(k_arr):
                    h = np.unique(np.geomspace(1, kv, num=min(int(kv), 24)).round()).astype(int)
                    sd_h = task_sd(h, False)
                    sds[:, c] = (sd_h[:, 0] if h.size == 1 else
                                 np.trapezoid(sd_h, h, axis=1) / max(h[-1] - h[0], 1))
            else:
                sds = task_sd(k_arr, metric == "pass^k")
            out[n] = (sds ** 2).sum(axis=0) / n_tasks ** 2
        return out

    def _logit_gradients(self, metric: str, k_arr: np.ndarray, active: np.ndarray,
                         z: np.ndarray | None = None, rows=None,
                         derivatives: _PooledDerivatives | None = None,
                         tasks: np.ndarray | None = None):
        """(C, len(rows), K) gradients of the systems' metric logits in the free coordinates,
        and the logits, (len(rows), K), at coordinates `z` (the optimum by default).

        System i's metric is a function of its component weights (the task
        posterior, which every coordinate moves) and its component shapes
        (which only its own ability, concentration and slope move, and, through
        the centring of abilities and slopes, the others').
        :func:`~passmix.metrics.evaluate_logit` gives the gradient in both, and
        the posterior's own derivative is analytic
        (:meth:`_PooledDerivatives.posterior_contraction`): nothing is
        differenced, and the cost is a few matrix products over (task, grid).
        `rows` are system positions (default all); `derivatives`, the pieces at `z`
        if already computed; `tasks`, a 0/1 mask of the tasks the metric averages
        over (default all).
        """
        n_sys = self._layout.n_systems
        rows = list(range(n_sys)) if rows is None else list(rows)
        at = self.params if z is None else np.asarray(z, dtype=float)
        if derivatives is None:
            derivatives = (self._derivatives() if z is None else
                           _pooled_derivatives(self._layout, self.grid, self.family,
                                               self._blocks(), at, second=False))
        r0 = self._posterior(None) if z is None else derivatives.r
        a, log_kappa, _, log_s = self._coordinates(at)
        eta = _eta(a, self.grid, log_s)
        kappa = np.exp(log_kappa)[:, None]
        d_eta = kappa * expit(eta) * expit(-eta)            # d alpha / d eta = -d beta / d eta
        # d eta / d log s_i = -s_i d
        d_eta_log_s = -np.exp(log_s)[:, None] * self.grid[None, :]
        prior_alpha, prior_beta = beta_shapes(a, log_kappa, self.grid, log_s)
        starts = dict(zip([name for name, _ in self._blocks()],
                          np.cumsum([0] + [size for _, size in self._blocks()])))
        shared = self.concentration == "shared"
        centre = np.empty((len(rows), k_arr.size))
        by_weight, direct = [], np.zeros((at.size, len(rows), k_arr.size))
        for n, i in enumerate(rows):
            w, alpha, beta, keep = self._system_mixture(i, z, r0, with_mask=True, tasks=tasks)
            centre[n], (gw, ga, gb) = evaluate_logit(metric, w, alpha, beta, k_arr)
            n_pairs = keep.size // self.grid.size
            full = np.zeros((k_arr.size, keep.size))
            full[:, keep] = gw  # d logit / d weight (the kept weights sum to 1 to ~1e-14)
            by_weight.append(full.reshape(k_arr.size, n_pairs, self.grid.size))
            # the shapes' own dependence: alpha_c = alpha_g + y, beta_c = beta_g + f
            g_of = np.tile(np.arange(self.grid.size), n_pairs)[keep]
            d_ability = ga @ d_eta[i, g_of] - gb @ d_eta[i, g_of]
            d_log_kappa = ga @ prior_alpha[i, g_of] + gb @ prior_beta[i, g_of]
            # abilities (and log-slopes) are the free coordinates minus their mean
            direct[:n_sys, n] -= d_ability / n_sys
            direct[i, n] += d_ability
            direct[starts["log_concentration"] + (0 if shared else i), n] = d_log_kappa
            if self.slope:
                d_eta_s = d_eta[i, g_of] * d_eta_log_s[i, g_of]
                d_log_s = ga @ d_eta_s - gb @ d_eta_s
                first = starts["log_slope"]
                direct[first:first + n_sys, n] -= d_log_s / n_sys
                direct[first + i, n] += d_log_s
        grads = direct
        # the weights' part: d logit / d weight of system i's component (pair, g) is
        # by_weight[i]; the weight is its tasks' posterior mass / J, whose derivative
        # is analytic (PooledDerivatives.posterior_contraction)
        n_tasks = self._layout.n_tasks
        share = (np.full(n_tasks, 1.0 / n_tasks) if tasks is None
                 else np.asarray(tasks, dtype=float) / np.sum(tasks))
        per_chunk = max(1, _CHUNK // max(1, k_arr.size * n_tasks * self.grid.size))
        for first in range(0, len(rows), per_chunk):
            chunk = range(first, min(first + per_chunk, len(rows)))
            weights = np.concatenate([
                by_weight[n][:, np.argmax(self._pairs(rows[n])[1], axis=0), :]
                * share[None, :, None]
                for n in chunk])                                  # (len(chunk) * K, J, G)
            part = derivatives.posterior_contraction(weights)    # (n, len(chunk) * K)
            grads[:, first:first + len(chunk)] += part.reshape(at.size, len(chunk),
                                                               k_arr.size)
        grads[~active] = 0.0
        return grads, centre

    # -- reporting ----------------------------------------------------------------------
    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str | None = None
                ) -> pd.DataFrame:
        """Every system's metrics at horizons `k` with intervals.

        Parameters
        ----------
        k : int or sequence of int, default (1, 10, 100, 1000)
            Horizons.
        level : float, default 0.95
            Confidence level.
        method : {"profile", "delta"}, optional
            Interval method (:meth:`profile`, :meth:`delta`). Profile ends are
            then widened where needed to obey every ordering of the metrics
            (:func:`passmix.inference.profile.repair_across_metrics`). By default
            profile for panels of at most :data:`PROFILE_CELLS` cells; beyond
            (a profile costs a search over every system's coordinates per
            system, end and horizon: about two minutes a system at 43 x 400),
            delta, but profile still for the systems whose ability sits on its
            bound (:attr:`on_bound`), whose delta interval says nothing.

        Returns
        -------
        pandas.DataFrame
            One row per system, metric and horizon: ``system, metric, k,
            estimate, se, lower, upper``.
        """
        return self._summary(k, level, check_interval_method(method, optional=True), range(self._layout.n_systems))

    def _method_for(self, i: int, method: str | None) -> str:
        """The interval method system i gets when `method` is asked (None: the default)."""
        if method is not None:
            return method
        small = self._layout.n_systems * self._layout.n_tasks <= PROFILE_CELLS
        return "profile" if small or self.systems[i] in self.on_bound else "delta"

    def _summary(self, k, level: float, method: str | None, rows) -> pd.DataFrame:
        k_arr, _ = check_k(k)
        level = check_level(level)
        frames = []
        for i in rows:
            label = self.systems[i]
            if self._method_for(i, method) == "profile":
                tables = {m: self.profile(m, k_arr, level, system=label) for m in METRICS}
                ends = repair_across_metrics({m: (k_arr, t["estimate"].to_numpy(),
                                                  t["lower"].to_numpy(), t["upper"].to_numpy())
                                              for m, t in tables.items()})
                for m, t in tables.items():
                    t["lower"], t["upper"] = ends[m]
            else:
                tables = {m: self.delta(m, k_arr, level, system=label) for m in METRICS}
            frames += list(tables.values())
        return pd.concat(frames, ignore_index=True)

    @property
    def on_bound(self) -> list:
        """Systems whose ability the fit drove to a bound (no success, or no failure, seen).

        Their metrics are the model's limit there: with no success seen the
        estimate is ~0 and only the shared difficulty distribution, through the
        profile's upper ends, bounds how large they could be.
        """
        # the likelihood rises toward infinite ability for such a system, so its optimum
        # is the box's bound, wherever the rest of the fit sits
        y, m = self.panel.successes.sum(axis=1), self.panel.trials.sum(axis=1)
        return [self.systems[i] for i in np.flatnonzero((m > 0) & ((y == 0) | (y == m)))]

    def systems_table(self) -> pd.DataFrame:
        """Abilities, concentrations (slopes) and observed success rates, one row per system."""
        y, m = self.panel.successes, self.panel.trials
        table = pd.DataFrame({"ability": self.abilities, "concentration": self.concentrations,
                              "tasks_run": (m > 0).sum(1),
                              "success_rate": y.sum(1) / np.maximum(m.sum(1), 1)},
                             index=pd.Index(self.systems, name="system"))
        if self.slope:
            table.insert(2, "slope", self.slopes)
        return table

    def system_loglik(self) -> np.ndarray:
        """Each system's counts' log-likelihood alone under the fitted model, shape (I,).

        System i's tasks are scored as fresh draws from the fitted difficulty
        distribution, without the other systems' evidence about them: the
        marginal model the fit implies for that system alone,
        ``sum_j log sum_g w_g BetaBinom(y_ij | m_ij, alpha_ig, beta_ig)``. It is
        on the scale of ``passmix.fit(counts).loglik`` for the same counts, so
        twice the difference says whether a free Beta mixture describes the
        system's success rates better than the pooled model's implied
        distribution does (see ``docs/results/pooled_misfit.md``). With one
        system it is the fit's :attr:`loglik`.

        Examples
        --------
        >>> import numpy as np, passmix
        >>> rng = np.random.default_rng(0)
        >>> p = rng.beta(1, 3, size=(3, 40))
        >>> panel = passmix.Panel(rng.binomial(8, p), np.full((3, 40), 8))
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> fit.system_loglik().shape
        (3,)
        """
        if "system_loglik" not in self._cache:
            a, log_kappa, log_w, log_s = self._coordinates(self.params)
            alpha, beta = beta_shapes(a, log_kappa, self.grid, log_s)             # (I, G)
            ell = betabinom_logpmf(self.panel.successes[:, :, None],
                                   self.panel.trials[:, :, None],
                                   alpha[:, None, :], beta[:, None, :])          # (I, J, G)
            self._cache["system_loglik"] = _lse(ell + log_w, axis=2).sum(axis=1)
        return self._cache["system_loglik"].copy()

    def difference(self, a, b, metric: str, k, *, tasks=None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """System b's metric minus system a's over shared tasks, with its covariance over k.

        The joint fit's delta method for ``D(k) = M_b(k) - M_a(k)``: the gradient
        of the difference itself, so what the two systems share through the
        tasks' difficulties (and the rest of the fit) cancels, as it should,
        instead of adding up as two separate intervals would. With
        :attr:`robust` each horizon's parameter variance is widened by the
        sandwich's ratio for the difference (never narrowed). To it is added
        the covariance of the benchmark difference given the parameters: each
        task's two success probabilities are known only through the task's
        posterior, under which they are dependent (one difficulty) and given
        the difficulty independent (``docs/formulas.md``, section 9).

        Parameters
        ----------
        a, b : hashable
            System labels.
        metric : {"pass@k", "pass^k", "auc@k"}
        k : int or sequence of int
            Horizons.
        tasks : array_like of bool, optional
            The tasks averaged over (length J); default the tasks both systems ran.

        Returns
        -------
        estimate : numpy.ndarray
            ``D(k)``, shape (K,).
        covariance : numpy.ndarray
            Its covariance across the horizons, shape (K, K).
        values : numpy.ndarray
            ``M_a(k)`` and ``M_b(k)`` on those tasks, shape (2, K).

        Examples
        --------
        >>> import numpy as np, passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(1.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.5]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> estimate, covariance, values = fit.difference("a", "b", "pass@k", [1, 10])
        >>> bool(np.allclose(estimate, values[1] - values[0]))
        True
        >>> covariance.shape
        (2, 2)
        """
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        ia, ib, mask = self._pair(a, b, tasks)
        return self.differences([(ia, ib)], metric, k_arr, [mask])[0]

    def _pair(self, a, b, tasks) -> tuple[int, int, np.ndarray]:
        """Positions of systems a and b and the tasks' mask (default: those both ran)."""
        ia, ib = self.panel.index(a), self.panel.index(b)
        ran = (self.panel.trials[ia] > 0) & (self.panel.trials[ib] > 0)
        # named as the panel labels them, whichever name the caller used
        names = (system_name(self.systems[ia]), system_name(self.systems[ib]))
        return ia, ib, self._task_mask(ran, tasks,
                                       f"systems '{names[0]}' and '{names[1]}' share no task.")

    def differences(self, pairs: list[tuple[int, int]], metric: str, k_arr: np.ndarray,
                    masks: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`difference` of many pairs at once: ``(estimate, covariance, values)`` each.

        `pairs` are (a, b) system positions and `masks` each pair's tasks (bool,
        length J, checked by the caller). The systems' gradients and their task
        covariance are computed once per distinct task set, for every system
        in a pair over it, and each pair takes its contrast: every pair of a
        43-model leaderboard costs about what one pair does.
        """
        out: list = [None] * len(pairs)
        sets: dict[bytes, list[int]] = {}
        for n, mask in enumerate(masks):
            sets.setdefault(np.asarray(mask, dtype=bool).tobytes(), []).append(n)
        n_k = k_arr.size
        contrast = np.concatenate([-np.eye(n_k), np.eye(n_k)], axis=1)
        for members in sets.values():
            mask = np.asarray(masks[members[0]], dtype=bool)
            rows = sorted({i for n in members for i in pairs[n]})
            where = {i: r for r, i in enumerate(rows)}
            values, grads = self._probability_gradients(metric, k_arr, rows, mask)
            task = self._task_covariance(metric, k_arr, rows, mask)
            for n in members:
                ra, rb = where[pairs[n][0]], where[pairs[n][1]]
                g = grads[:, rb] - grads[:, ra]                             # (C, K)
                param = self._widened(g.T @ self._covariance() @ g, g)
                block = np.r_[ra * n_k:(ra + 1) * n_k, rb * n_k:(rb + 1) * n_k]
                both = contrast @ task[np.ix_(block, block)] @ contrast.T
                out[n] = (values[rb] - values[ra], param + both, values[[ra, rb]])
        return out

    def difference_profile(self, a, b, metric: str, k, level: float = 0.95, *, tasks=None
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Profile-likelihood interval of ``D(k) = M_b(k) - M_a(k)`` over shared tasks.

        The model part is the smallest and largest difference over the
        parameters whose log-likelihood is within ``chi2(1).ppf(level) / 2`` of
        the maximum, every other coordinate profiled out, as :meth:`profile`
        does for one system; with :attr:`robust` the region's cut is widened by
        the sandwich's variance ratio for the difference at that horizon
        (never narrowed). Unlike :meth:`difference`'s delta interval it follows
        the likelihood where it is skewed: a system near a bound, a far
        horizon. The spread of the benchmark difference over these tasks given
        the parameters (as in :meth:`difference`) is then added to each end in
        quadrature.

        Parameters
        ----------
        a, b : hashable
            System labels.
        metric : {"pass@k", "pass^k", "auc@k"}
        k : int or sequence of int
            Horizons.
        level : float, default 0.95
        tasks : array_like of bool, optional
            The tasks averaged over (length J); default the tasks both systems ran.

        Returns
        -------
        lower, upper : numpy.ndarray
            The interval's ends per horizon, shape (K,), within [-1, 1].

        Examples
        --------
        >>> import numpy as np, passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(1.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.5]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> lower, upper = fit.difference_profile("a", "b", "pass@k", [1, 10])
        >>> estimate = fit.difference("a", "b", "pass@k", [1, 10])[0]
        >>> bool(np.all((lower < estimate) & (estimate < upper)))
        True
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        ia, ib, mask = self._pair(a, b, tasks)
        key = ("profile-difference", metric, tuple(k_arr.tolist()), level, ia, ib,
               mask.tobytes(), self.robust)
        if key not in self._cache:
            values, grads = self._probability_gradients(metric, k_arr, [ia, ib], mask)
            estimate = values[1] - values[0]
            g = grads[:, 1] - grads[:, 0]                                   # (C, K)
            model = np.einsum("ck,cd,dk->k", g, self._covariance(), g)
            widened = np.diag(self._widened(np.diag(model), g))
            with np.errstate(divide="ignore", invalid="ignore"):
                scales = np.where(model > 0, widened / model, 1.0)
            lower, upper = estimate.copy(), estimate.copy()
            # the horizons up, each search also started from the ends below (as
            # _model_ends), then down from the ends above: a difference's region edge
            # is less simple than one system's, and a lone search can stop short
            up = np.argsort(k_arr, kind="stable")
            for order in (up, up[::-1]) if k_arr.size > 1 else (up,):
                warm: dict = {}
                for n in order:
                    lo, hi, warm = self._difference_ends(metric, int(k_arr[n]), level, ia, ib,
                                                         mask, float(scales[n]), warm)
                    lower[n], upper[n] = min(lo, lower[n]), max(hi, upper[n])
            contrast = np.concatenate([-np.eye(k_arr.size), np.eye(k_arr.size)], axis=1)
            task = contrast @ self._task_covariance(metric, k_arr, [ia, ib], mask) @ contrast.T
            spread = normal_quantile(level) * np.sqrt(np.maximum(np.diag(task), 0.0))
            lower = np.clip(estimate - np.hypot(estimate - lower, spread), -1.0, 1.0)
            upper = np.clip(estimate + np.hypot(upper - estimate, spread), -1.0, 1.0)
            for arr in (lower, upper):
                arr.flags.writeable = False
            self._cache[key] = (lower, upper)
        return self._cache[key]

    def _difference_ends(self, metric: str, k: int, level: float, ia: int, ib: int,
                         mask: np.ndarray, scale: float, warm: dict):
        """Extremes of ``M_b - M_a`` at one horizon over the region whose drop is `scale`
        times the chi-square's, and the end points (the next horizon's warm starts)."""
        all_coordinates = np.ones(self.params.size, dtype=bool)
        share = mask.astype(float)
        shared = _SharedPieces(self)
        region = self._region(shared, level, scale)
        sliced = region.objective

        def difference(x, t):
            # the search minimises and maximises this directly: D lies in [-1, 1], far
            # above the region's logit floor, so no transform is needed
            z = sliced.full(x)
            grads, logits = self._logit_gradients(metric, np.array([t]), all_coordinates, z,
                                                  rows=[ia, ib], tasks=share,
                                                  derivatives=shared.pieces(z))
            values = expit(logits[:, 0])
            g = grads[:, :, 0] * (values * (1 - values))[None]
            return float(values[1] - values[0]), sliced.T.T @ (g[:, 1] - g[:, 0])

        def value(x, t):
            both = self._values(metric, np.array([t]), sliced.full(x), rows=[ia, ib],
                                tasks=share)
            return float(both[1, 0] - both[0, 0])

        def batch(xs, t):
            return np.array([value(x, t) for x in xs])

        lower, upper, _ = region.extremes(difference, value, np.array([k]), batch, warm)
        return float(lower[0]), float(upper[0]), region.end_points

    def metric_covariance(self, metric: str, k: int, *, tasks=None
                          ) -> tuple[np.ndarray, np.ndarray]:
        """Every system's metric at one horizon and their joint covariance, shape (I,), (I, I).

        The delta method over the joint fit (each system's parameter variance
        widened by the sandwich with :attr:`robust`, as its intervals are) plus
        the covariance of the systems' benchmark metrics given the parameters,
        which share each task's difficulty posterior. What rankings need:
        any contrast of the systems has its variance from it.

        Parameters
        ----------
        metric : {"pass@k", "pass^k", "auc@k"}
        k : int
            The horizon.
        tasks : array_like of bool, optional
            The tasks averaged over (length J); default every task.

        Examples
        --------
        >>> import numpy as np, passmix
        >>> rng = np.random.default_rng(0)
        >>> p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.0], [0.5]]) - rng.normal(1, 1.5, 60))))
        >>> fit = passmix.fit_pooled(passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5)),
        ...                          seed=0)
        >>> values, covariance = fit.metric_covariance("pass@k", 10)
        >>> bool(np.all(np.linalg.eigvalsh(covariance) > 0))
        True
        """
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        if not scalar and k_arr.size != 1:
            raise ValueError(f"metric_covariance takes one horizon, got {k_arr.tolist()}.")
        everything = np.ones(self._layout.n_tasks, dtype=bool)
        mask = self._task_mask(everything, tasks, "no task is selected.")
        rows = list(range(self._layout.n_systems))
        values, grads = self._probability_gradients(metric, k_arr, rows, mask)
        g = grads[:, :, 0]                                              # (C, I)
        param = g.T @ self._covariance() @ g
        if self.robust:
            widen = np.sqrt(np.maximum(np.diag(self._widened(param, g)), 0.0)
                            / np.where(np.diag(param) > 0, np.diag(param), 1.0))
            param = widen[:, None] * param * widen[None, :]
        return values[:, 0], param + self._task_covariance(metric, k_arr, rows, mask)

    def _task_mask(self, default: np.ndarray, tasks, empty: str) -> np.ndarray:
        mask = default if tasks is None else np.asarray(tasks, dtype=bool)
        if mask.shape != default.shape:
            raise ValueError(f"tasks must be a mask of the {default.size} tasks; got shape "
                             f"{mask.shape}.")
        if not mask.any():
            raise ValueError(empty)
        return mask

    def _probability_gradients(self, metric: str, k_arr: np.ndarray, rows: list[int],
                               mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R, K) the `rows` systems' metrics over the `mask` tasks and (C, R, K) their
        gradients on the probability scale, ``d M = M (1 - M) d logit``."""
        share = mask.astype(float)
        values = self._values(metric, k_arr, rows=rows, tasks=share)
        active = np.diag(self._covariance()) > 0
        grads, _ = self._logit_gradients(metric, k_arr, active, rows=rows, tasks=share)
        return values, grads * (values * (1 - values))[None]

    def _widened(self, param: np.ndarray, g: np.ndarray) -> np.ndarray:
        """`param` (``g' C g``) with each diagonal's variance raised to the sandwich's
        ``g' C S C g`` where that is larger (with :attr:`robust`; never narrowed)."""
        if not self.robust:
            return param
        sandwich = np.einsum("ck,cd,dk->k", g, self._robust_covariance(), g)
        model = np.diag(param)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(model > 0, sandwich / model, 1.0)
        widen = np.sqrt(np.maximum(np.nan_to_num(ratio, nan=1.0, posinf=1.0), 1.0))
        return widen[:, None] * param * widen[None, :]

    def _task_covariance(self, metric: str, k_arr: np.ndarray, rows: list[int],
                         mask: np.ndarray) -> np.ndarray:
        """(R K, R K) covariance of the `rows` systems' benchmark metrics over the `mask`
        tasks given the data, at the optimum, system-major: each task's success
        probabilities drawn from its posterior (a grid point of difficulty, then each
        system's Beta given it, independent given the grid point)."""
        base, h, C = _horizon_map(metric, k_arr)
        r = self._posterior(None)[mask]                                   # (n, G)
        a, log_kappa, _, log_s = self._coordinates(self.params)
        n_h = h.size
        first = np.empty((r.shape[0], r.shape[1], len(rows) * n_h))
        squares = []
        for n, i in enumerate(rows):
            alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
            pairs, member = self._pairs(i)
            m1, m2 = _power_moments(base, alpha + pairs[0][:, None],
                                    beta + (pairs[1] - pairs[0])[:, None], h)  # (P, G, H[, H])
            first[:, :, n * n_h:(n + 1) * n_h] = m1[np.argmax(member, axis=0)[mask]]
            squares.append(np.einsum("pg,pghl->hl", member[:, mask] @ r, m2))
        # given the grid point the systems are independent: products of their means ...
        second = np.einsum("jg,jgx,jgy->xy", r, first, first)
        # ... and each system with itself, its own second moments
        for n, block in enumerate(squares):
            second[n * n_h:(n + 1) * n_h, n * n_h:(n + 1) * n_h] = block
        mean = np.einsum("jg,jgx->jx", r, first)
        per_h = (second - mean.T @ mean) / r.shape[0] ** 2
        big = np.kron(np.eye(len(rows)), C)
        return big @ per_h @ big.T

    def plot(self, k=None, metric: str = "pass@k", *, systems=None, level: float = 0.95,
             interval: str = "delta", ax=None):
        """Every system's `metric` against the horizon `k`, each with its interval band.

        Each system is drawn by :func:`passmix.plots.plot_horizon` on one axes.

        Parameters
        ----------
        k : array_like of int, optional
            Horizons; by default 60 from 1 to 1000.
        metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
        systems : sequence, optional
            The systems drawn (labels or names, as :meth:`system` takes them);
            default all.
        level : float, default 0.95
        interval : {"delta", "profile"}, default "delta"
            The bands: the delta method (instant), or the profile likelihood
            (a search over every system's coordinates per system and horizon:
            minutes for the default horizons).
        ax : matplotlib.axes.Axes, optional
            Where to draw; default a new figure.

        Returns
        -------
        matplotlib.axes.Axes

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np, passmix
        >>> rng = np.random.default_rng(0)
        >>> p = rng.beta(1, 3, size=(2, 40))
        >>> panel = passmix.Panel(rng.binomial(8, p), np.full((2, 40), 8), systems=["a", "b"])
        >>> ax = passmix.fit_pooled(panel, seed=0).plot(k=[1, 10, 100])
        >>> [text for text in ax.get_legend_handles_labels()[1] if text in ("a", "b")]
        ['a', 'b']
        """
        from ...plots.fit import get_ax, plot_horizon  # pyplot only when a plot is drawn

        ax = get_ax(ax)
        for label in (self.systems if systems is None else systems):
            plot_horizon(self.system(label), metric, k, level=level, interval=interval,
                         ax=ax)
        return ax

    def info(self) -> dict[str, Any]:
        """Estimator, difficulty family, log-likelihood, BIC and convergence."""
        return {"estimator": "pooled", "family": self.family,
                "n_components": self.n_components, "slope": self.slope,
                "concentration_model": self.concentration, "loglik": self.loglik,
                "bic": self.bic, "converged": self.converged,
                "n_systems": self._layout.n_systems, "n_tasks": self._layout.n_tasks,
                "on_bound": self.on_bound, "robust": self.robust}

    def __repr__(self) -> str:
        i, j = self.panel.shape
        status = "converged" if self.converged else "NOT converged"
        slope = ", slope=True" if self.slope else ""
        return (f"PooledFit(family={self.family!r}{slope}, "
                f"concentration={self.concentration!r}, systems={i}, tasks={j}, "
                f"loglik={self.loglik:.3f}, BIC={self.bic:.3f}, {status})")


def _unidentified(blocks, free: np.ndarray) -> np.ndarray:
    """Directions in the free coordinates along which the likelihood does not move.

    The abilities and the log-slopes enter centred, so a common shift of
    either block changes nothing (when every coordinate of the block is
    free; one held on its bound pins the shift). The grid's weights are a
    softmax, so a common shift of its free logits changes nothing but the
    share of the points held at the lower bound, which is below e^-40.
    Returns shape ``(r, free.sum())``.
    """
    out, start = [], 0
    for name, size in blocks:
        part = free[start:start + size]
        if name in ("ability", "log_slope", "grid_logits") and size > 1 and part.sum() > 1 \
                and (name == "grid_logits" or part.all()):
            direction = np.zeros(free.size)
            direction[start:start + size] = part
            out.append(direction[free])
        start += size
    return np.array(out).reshape(len(out), int(free.sum()))


def _horizon_map(metric: str, k_arr: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    """The metric at `k_arr` as a linear map of a per-task power metric at horizons h.

    Returns ``(base, h, C)`` with ``metric(k) = C @ base(h)`` per task: the identity
    for Pass@k and Pass^k; for AUC@k, the mean of Pass@r over r <= k, exact up to
    k = 24 and otherwise a trapezoid over at most 24 log-spaced r (with half the
    end points' values added, as the Euler-Maclaurin sum does), whose weights sum to 1.
    """
    if metric != "auc@k":
        return metric, k_arr, np.eye(k_arr.size)
    nodes = [np.arange(1, kv + 1) if kv <= 24 else
             np.unique(np.geomspace(1, kv, num=24).round()).astype(np.int64) for kv in k_arr]
    h = np.unique(np.concatenate(nodes))
    C = np.zeros((k_arr.size, h.size))
    for row, (kv, x) in enumerate(zip(k_arr, nodes)):
        if kv <= 24:
            w = np.full(x.size, 1.0)
        else:
            gaps = np.diff(x).astype(float)
            w = np.concatenate([[0.0], gaps / 2]) + np.concatenate([gaps / 2, [0.0]])
            w[[0, -1]] += 0.5
        C[row, np.searchsorted(h, x)] = w / kv
    return "pass@k", h, C


def _power_moments(base: str, alpha: np.ndarray, beta: np.ndarray, h: np.ndarray):
    """``E[g_h]`` (..., H) and ``E[g_h g_l]`` (..., H, H) for p ~ Beta(alpha, beta), with
    ``g_h = p^h`` (Pass^k) or ``1 - (1 - p)^h`` (Pass@k)."""
    h = h.astype(float)
    ln_b = betaln(alpha, beta)[..., None]
    if base == "pass^k":
        def power(n):
            return np.exp(betaln(alpha[..., None] + n, beta[..., None]) - ln_b)
    else:
        def power(n):
            return np.exp(betaln(alpha[..., None], beta[..., None] + n) - ln_b)
    e1 = power(h)
    e2 = power((h[:, None] + h[None, :]).ravel()).reshape(*e1.shape, h.size)
    if base == "pass^k":
        return e1, e2
    return 1.0 - e1, 1.0 - e1[..., :, None] - e1[..., None, :] + e2


def _with_task_spread(base: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      var_tasks: np.ndarray, z_crit: float) -> tuple[np.ndarray, np.ndarray]:
    """Widen the model's ends by the spread of the benchmark metric over these tasks.

    Given the parameters, the benchmark metric (an average over these J
    tasks of a function of each task's success probability) still varies
    with variance `var_tasks`. Each end is moved out by the two offsets in
    quadrature on a log scale: the lower end on ``log M``, the upper on
    ``log(1 - M)``, the task part being the quantile of a log-normal with the
    metric's mean and variance. Near 1/2 this is the probability-scale
    quadrature; near 0 (or 1) the end stays inside (0, 1), where the
    probability scale would cut it to 0 whenever one task carries the metric
    (a system with one success seen).
    """
    base = np.asarray(base, dtype=float)
    lower = np.minimum(np.asarray(lower, dtype=float), base)
    upper = np.maximum(np.asarray(upper, dtype=float), base)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the lower end on log M (log-normal task spread), exact for M far below 1
        sigma2 = np.log1p(var_tasks / base ** 2)
        task = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        model = np.log(base) - np.log(np.maximum(lower, 0.0))
        moved = base * np.exp(-np.hypot(np.nan_to_num(model, nan=0.0), task))
        new_lower = np.where(base > 0, np.minimum(moved, lower), lower)
        # the upper end on log(1 - M), written through log1p / expm1 so that an end a
        # hair above a tiny M (Pass^k at large k) keeps its distance from M
        comp = 1.0 - base
        sigma2 = np.log1p(var_tasks / comp ** 2)
        task = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        model = np.log1p(-base) - np.log1p(-np.minimum(upper, 1.0))
        step = -np.expm1(-np.hypot(np.nan_to_num(model, nan=0.0), task))
        new_upper = np.where(comp > 0, np.maximum(base + comp * step, upper), upper)
    return np.clip(new_lower, 0.0, base), np.clip(new_upper, base, 1.0)


def _profile_coordinates(blocks, params: np.ndarray, box: np.ndarray):
    """Identified coordinates ``x`` for the profile's search, ``z = z_hat + T (x - x_hat)``.

    The abilities enter the likelihood centred, a common shift of them changes
    nothing. Without slopes, for the normal family, the search coordinates are
    each system's ability relative to the first normal's mean, ``b_i = a_i -
    mu_1``, and the other normals' offsets from it: one system's metric then
    moves with one coordinate, where in the fit's coordinates raising one
    ability lowers the others' (they sum to 0) and the difficulties must follow.
    A system whose ability the fit held on its bound keeps that bound in
    ``b``, so the search reaches in from it. Otherwise (the grid, slopes) one
    coordinate of each block that enters up to a shift is pinned at its
    estimate instead, the one farthest inside its bounds (the grid's largest
    logit).

    Returns ``(x_hat, T, P, box_x)``: ``P`` maps a covariance of z to one of
    x (``cov_x = P cov_z P'``; ``P T = I``).
    """
    names = [name for name, _ in blocks]
    starts = dict(zip(names, np.cumsum([0] + [size for _, size in blocks])))
    sizes = dict(blocks)
    n = params.size
    if "difficulty_mean" in sizes and "log_slope" not in sizes:
        n_sys, n_comp = sizes["ability"], sizes["difficulty_mean"]
        ability = starts["ability"] + np.arange(n_sys)
        means = starts["difficulty_mean"] + np.arange(n_comp)
        rest = np.setdiff1d(np.arange(n), np.concatenate([ability, means]))
        # x: b (I), offsets (H - 1), then every other coordinate as it is
        n_x = n - 1
        P = np.zeros((n_x, n))
        T = np.zeros((n, n_x))
        centre = np.eye(n_sys) - 1.0 / n_sys
        P[:n_sys, ability] = centre
        P[:n_sys, means[0]] = -1.0
        T[np.ix_(ability, np.arange(n_sys))] = centre
        T[means[0], :n_sys] = -1.0 / n_sys
        for h in range(1, n_comp):
            P[n_sys + h - 1, means[h]], P[n_sys + h - 1, means[0]] = 1.0, -1.0
            T[means[h], :n_sys] = -1.0 / n_sys
            T[means[h], n_sys + h - 1] = 1.0
        others = n_sys + n_comp - 1 + np.arange(rest.size)
        P[others, rest] = 1.0
        T[rest, others] = 1.0
        x_hat = P @ params
        box_x = np.empty((n_x, 2))
        b_hat = x_hat[:n_sys]
        box_x[:n_sys, 0] = np.minimum(-_B_RANGE, b_hat - 10.0)
        box_x[:n_sys, 1] = np.maximum(_B_RANGE, b_hat + 10.0)
        held = at_bound(params[ability], box[ability])
        box_x[:n_sys, 0] = np.where(held[:, 0], b_hat, box_x[:n_sys, 0])
        box_x[:n_sys, 1] = np.where(held[:, 1], b_hat, box_x[:n_sys, 1])
        width = np.diff(_BOUNDS["difficulty_mean"])[0]
        box_x[n_sys:n_sys + n_comp - 1] = (-width, width)
        box_x[others] = box[rest]
        return x_hat, T, P, box_x
    keep = np.ones(n, dtype=bool)
    for name, size in blocks:
        if name in ("ability", "log_slope", "grid_logits") and size > 1:
            part = slice(starts[name], starts[name] + size)
            room = np.minimum(params[part] - box[part, 0], box[part, 1] - params[part])
            pick = np.argmax(params[part] if name == "grid_logits" else room)
            keep[starts[name] + int(pick)] = False
    T = np.eye(n)[:, keep]
    return params[keep], T, T.T, box[keep]


#: Panels of at most this many cells (systems x tasks) get profile intervals by default
#: (the bundled example has 896); larger ones delta
#: intervals, but profile for the systems on a bound (PooledFit.summary).
PROFILE_CELLS = 2000

#: Panels of at most this many cells also start each profile search from the region's
#: spread (rays along its principal axes), as the mixture's do: with few tasks the region
#: is curved, a single start finds a local extreme, and an evaluation costs little.
SPREAD_CELLS = 300
#: points over the box from which a small panel's spread climbs into the region
PROBES = 8


def _has_extreme_system(panel: Panel) -> bool:
    """Whether some system succeeded on none, or on all, of its trials."""
    y, m = panel.successes.sum(axis=1), panel.trials.sum(axis=1)
    return bool(np.any((m > 0) & ((y == 0) | (y == m))))


def _box_probes(box: np.ndarray, n: int) -> list[np.ndarray]:
    """`n` Sobol points over `box` (a fixed seed: an interval depends on the fit alone)."""
    from scipy.stats import qmc

    unit = qmc.Sobol(box.shape[0], seed=0).random(n)
    return list(box[:, 0] + unit * (box[:, 1] - box[:, 0]))


# the relative abilities' range in the profile's search (logits of success at the
# mean difficulty)
_B_RANGE = 35.0

# a profile's lower end found below 1e-30 (logit -69) is reported as 0 and not searched
# further: Pass^k at large k can sit at 1e-80 with a lower end anywhere down to 1e-200,
# whose search takes SLSQP's whole budget for a value that is 0 for every use
_LOGIT_FLOOR = float(np.log(1e-30))


class _SharedPieces:
    """The pooled log-likelihood and its gradient from :class:`_PooledDerivatives`, which
    the metric's gradient needs at the same points: computed once per point.

    The profile's searches use this instead of the compiled objective, so each
    point of a search costs one set of pieces, and the search is numpy alone
    (no compiled function, no lock). It agrees with the compiled objective to
    ~1e-7 (the normal family's weights are differenced in their two
    coordinates); ``tests/test_models_pooled.py`` checks it.
    """

    def __init__(self, fit: PooledFit):
        self.fit = fit
        self._seen: BoundedMemo = BoundedMemo(64)

    def pieces(self, z: np.ndarray) -> _PooledDerivatives:
        key = z.tobytes()
        if key not in self._seen:
            fit = self.fit
            self._seen[key] = _pooled_derivatives(fit._layout, fit.grid, fit.family,
                                                  fit._blocks(), z, second=False)
        return self._seen[key]

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        pieces = self.pieces(np.asarray(z, dtype=float))
        return pieces.loglik, pieces.score()


@dataclass
class _Affine:
    """An objective in coordinates x with ``z = z_hat + T (x - x_hat)``."""

    objective: Any
    z_hat: np.ndarray
    x_hat: np.ndarray
    T: np.ndarray

    def full(self, x: np.ndarray) -> np.ndarray:
        return self.z_hat + self.T @ (np.asarray(x, dtype=float) - self.x_hat)

    def logp_dlogp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.objective.logp_dlogp(self.full(x))
        return logp, self.T.T @ np.asarray(grad)


@dataclass(frozen=True)
class PooledSystem:
    """One system of a :class:`PooledFit`, as a :class:`~passmix.estimators.base.FittedResult`."""

    fit: PooledFit
    index: int
    #: The interval methods it has; the first is the default.
    interval_methods = ("profile", "delta")

    @property
    def name(self):
        """The system's label."""
        return self.fit.systems[self.index]

    @property
    def counts(self) -> Counts:
        """The system's counts over the panel's tasks (m = 0 where it did not run one)."""
        return self.fit.panel.counts(self.name)

    def metric(self, metric: str, k):
        """The metric at horizon(s) `k`, averaged over each task's posterior."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = evaluate_metric(metric, *self.fit._system_mixture(self.index), k_arr)
        return float(out[0]) if scalar else out

    def interval(self, metric: str, k, level: float = 0.95, *, method: str | None = None
                 ) -> ConfidenceInterval:
        """Interval at horizon(s) `k`: profile likelihood or delta method (default: as
        :meth:`PooledFit.summary` chooses)."""
        method = self.fit._method_for(self.index, check_interval_method(method, optional=True))
        find = self.fit.profile if method == "profile" else self.fit.delta
        table = find(metric, k, level, system=self.name)
        lower, upper = table["lower"].to_numpy(), table["upper"].to_numpy()
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(lower[0]), float(upper[0]))
        return ConfidenceInterval(lower, upper)

    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str | None = None
                ) -> pd.DataFrame:
        """Metric, k, estimate, se, lower, upper for this system (see :meth:`PooledFit.summary`)."""
        return self.fit._summary(k, level, check_interval_method(method, optional=True),
                                 [self.index]).drop(columns="system")

    def status(self) -> str:
        """One line on convergence and on this system's ability sitting on its bound.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 0, 0, 0], [2, 1, 3, 0], [4, 2, 5, 1]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> fit.system(0).status()
        'converged; no success seen: ability at its bound, estimates ~0 (the upper ends come from the shared difficulty)'
        """
        text = "converged" if self.fit.converged else "NOT converged"
        if self.name in self.fit.on_bound:
            y = self.fit.panel.successes[self.index].sum()
            text += ("; no success seen: ability at its bound, estimates ~0 (the upper ends "
                     "come from the shared difficulty)" if y == 0 else
                     "; no failure seen: ability at its bound, estimates ~1 (the lower ends "
                     "come from the shared difficulty)")
        return text

    def info(self) -> dict[str, Any]:
        """The joint fit's info, with this system's ability and concentration (and slope)."""
        out = {**self.fit.info(), "system": self.name, "status": self.status(),
               "ability": float(self.fit.abilities[self.index]),
               "concentration": float(self.fit.concentrations[self.index])}
        if self.fit.slope:
            out["slope"] = float(self.fit.slopes[self.index])
        return out


def heldout_loglik(fit: PooledFit, panel) -> float:
    """Marginal log-likelihood of `panel`'s tasks under a fitted pooled model.

    Each task's difficulty is integrated out over the fitted distribution
    (the grid sum of the fit), with the systems' abilities, concentrations
    (and slopes) held at the fit's: the score of new tasks under a model
    fitted to other tasks of the same systems. ``criterion="heldout"`` in
    :func:`fit_pooled` sums it over folds of tasks.

    Parameters
    ----------
    fit : PooledFit
        The fitted model.
    panel : Panel
        Counts of the same systems, in the same order, on the tasks to score.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.models.pooled import heldout_loglik
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(1.0, 2.0, size=100)
    >>> p = 1 / (1 + np.exp(-(np.array([-1.0, 0.0, 1.0])[:, None] - d[None, :])))
    >>> y, m = rng.binomial(10, p), np.full(p.shape, 10)
    >>> fit = passmix.fit_pooled(passmix.Panel(y[:, :80], m[:, :80]), seed=0)
    >>> score = heldout_loglik(fit, passmix.Panel(y[:, 80:], m[:, 80:]))
    >>> bool(score < 0)
    True
    """
    if not isinstance(panel, Panel) or panel.shape[0] != fit.panel.shape[0]:
        raise ValueError(f"panel must be a Panel of the fit's {fit.panel.shape[0]} systems.")
    return _layout_loglik(fit.params, fit.family, panel_layout(panel), fit.grid, fit.n_components,
                          fit.slope, fit.concentration == "shared")
