"""The pooled fit's results: :class:`PooledFit` (every system) and :class:`PooledSystem`
(one), with delta and profile intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..._cache import BoundedMemo
from ..._defaults import SUMMARY_K
from ..._validation import check_interval_method, check_k, check_metric
from ...inference.optimize import at_bound, covariance_from_information
from ..._special import betabinom_logpmf
from ...metrics import evaluate_logit, evaluate_logit_value, evaluate_metric
from ...data.counts import Counts
from ...data.panel import Panel
from ...inference.units import Unit, UnitsResult
from ._graph import _layout_loglik
from ._layout import _Layout, coordinate_blocks, _box, _system_parts, panel_layout, split_blocks
from ._likelihood import (PooledDerivatives, _log_grid_weights, _lse, _pooled_derivatives,
                          beta_shapes, task_grid_loglik)
from ._support import PROFILE_CELLS, _unidentified
from ._intervals import PooledIntervals
from ._differences import PairedDifferences


__all__ = ["PROFILE_CELLS", "PooledFit", "PooledSystem", "heldout_loglik"]


# -- results ------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class PooledFit(PooledIntervals, PairedDifferences, UnitsResult):
    """A fitted pooled model (:func:`fit_pooled`): a
    :class:`~passmix.inference.units.UnitsResult` whose units are the systems.

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
        horizon; :meth:`inflation`): True by default, since the shared
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
    layout: _Layout = field(repr=False)
    n_components: int = 1
    slope: bool = False
    concentration: str = "system"
    robust: bool = True
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    #: The model's name, as its posterior draws record it (``passmix_model``).
    model_kind: ClassVar[str] = "pooled"

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
        blocks = coordinate_blocks(family, layout.n_systems, grid.size, n_components, slope,
                         concentration == "shared")
        parts = split_blocks(params, blocks)
        a, log_kappa, _ = _system_parts(parts)
        table = pd.DataFrame() if family_table is None else family_table
        return cls(panel=panel, family=family, grid=grid, abilities=a,
                   concentrations=np.exp(log_kappa),
                   grid_weights=np.exp(_log_grid_weights(family, parts, grid)),
                   loglik=float(loglik), bic=float(bic), converged=bool(converged),
                   family_table=table, params=params, layout=layout,
                   n_components=int(n_components), slope=bool(slope),
                   concentration=concentration)

    # -- the model's quantities ---------------------------------------------------
    @property
    def systems(self) -> np.ndarray:
        """System labels, in the order of :attr:`abilities`."""
        return self.panel.systems

    @property
    def units(self) -> np.ndarray:
        """The :class:`~passmix.inference.units.UnitsResult` units: :attr:`systems`."""
        return self.panel.systems

    def unit_position(self, label) -> int:
        """The position of the system labelled `label`."""
        return self.panel.index(label)

    @property
    def slopes(self) -> np.ndarray:
        """Per-system slopes ``s_i`` (geometric mean 1); all 1 without ``slope=True``."""
        return np.exp(self._coordinates(self.params)[3])

    def blocks(self) -> list:
        """The coordinate blocks of :attr:`params`: ``(name, size)`` in order."""
        return coordinate_blocks(self.family, self.layout.n_systems, self.grid.size,
                                 self.n_components, self.slope,
                                 self.concentration == "shared")

    def _coordinates(self, z: np.ndarray):
        """Abilities, log-concentrations, log grid weights and log-slopes at coordinates `z`
        (per system, (I,), but the weights)."""
        parts = split_blocks(z, self.blocks())
        a, log_kappa, log_s = _system_parts(parts)
        return a, log_kappa, _log_grid_weights(self.family, parts, self.grid), log_s

    def task_posterior(self, z: np.ndarray | None = None) -> np.ndarray:
        """``r[j, g]``: posterior probability that task j's difficulty is ``grid[g]``."""
        a, log_kappa, log_w, log_s = self._coordinates(self.params if z is None else z)
        joint = log_w[None, :] + task_grid_loglik(self.layout, a, log_kappa, self.grid, log_s)
        return np.exp(joint - _lse(joint, axis=1, keepdims=True))

    def _posterior(self, z: np.ndarray | None) -> np.ndarray:
        """The task posterior at `z`, kept for the optimum (every metric call needs it) and
        for the points a profile search ranks its starts at, for every end in turn."""
        if z is None:
            if "posterior" not in self._cache:
                self._cache["posterior"] = self.task_posterior()
            return self._cache["posterior"]
        memo = self._cache.get("posteriors")
        key = np.asarray(z, dtype=float).tobytes()
        if memo is not None and key in memo:
            return memo[key]
        r = self.task_posterior(z)
        if memo is None:
            # at most ~50 MB of them: a panel of 40,000 tasks keeps a few
            memo = self._cache["posteriors"] = BoundedMemo(max(1, min(256, int(5e7 // r.nbytes))))
        r.flags.writeable = False
        memo[key] = r
        return r

    def _pairs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """System i's distinct (successes, trials) and the (pairs x tasks) 0/1 membership."""
        key = ("pairs", i)
        if key not in self._cache:
            pairs, codes = np.unique(np.stack([self.panel.successes[i], self.panel.trials[i]]),
                                     axis=1, return_inverse=True)
            member = np.zeros((pairs.shape[1], self.layout.n_tasks))
            member[codes.ravel(), np.arange(self.layout.n_tasks)] = 1.0
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
        rows = range(self.layout.n_systems) if rows is None else rows
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            value = evaluate(metric, *self._system_mixture(i, z, r, tasks=tasks), k_arr)
            out[n] = value[0] if isinstance(value, tuple) else value
        return out

    def box(self) -> np.ndarray:
        """Box bounds of the coordinates :attr:`params`, shape ``(n, 2)``."""
        return _box(self.blocks())

    def metric_values(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                      rows=None, tasks: np.ndarray | None = None) -> np.ndarray:
        """(I, K) metric values of every system (or of `rows`) at coordinates `z` (default
        the estimate), over `tasks` (default all); `k_arr` a 1-d integer array.

        The metric as a function of the coordinates, for the delta and
        profile searches and for checks against them; :meth:`metric` is the
        validated estimate.
        """
        return self._per_system(evaluate_metric, metric, k_arr, z, rows, tasks)

    def metric_logits(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                      rows=None, tasks: np.ndarray | None = None) -> np.ndarray:
        """(I, K) logits of the metric at coordinates `z` (as :meth:`metric_values`), exact
        where it underflows or rounds to 1."""
        return self._per_system(evaluate_logit, metric, k_arr, z, rows, tasks)

    def metric_logit_values(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                            rows=None, tasks: np.ndarray | None = None) -> np.ndarray:
        """:meth:`metric_logits` without their gradients (to rank a search's starts)."""
        return self._per_system(evaluate_logit_value, metric, k_arr, z, rows, tasks)

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
        values = self.metric_values(metric, k_arr)
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
        values = self.metric_values(metric, k_arr)
        return pd.DataFrame(values, index=pd.Index(self.systems, name="system"),
                            columns=pd.Index(k_arr, name="k"))

    def system(self, system) -> PooledSystem:
        """One system's result, with the :class:`~passmix.estimators.base.FittedResult` interface
        (:meth:`unit`)."""
        return self.unit(system)

    # -- uncertainty ------------------------------------------------------------------
    def derivatives(self, z: np.ndarray | None = None) -> PooledDerivatives:
        """The log-likelihood's analytic derivative pieces at coordinates `z` (default the
        optimum, kept): its score, observed information and the tasks' scores.

        The model's half of the likelihood interface: the covariance
        (:meth:`covariance_matrix`), the sandwich and the metric gradients
        (:meth:`logit_gradients`) are built from these.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> pieces = fit.derivatives()
        >>> scores = pieces.task_scores()  # (coordinates, tasks)
        >>> scores.shape == (fit.params.size, 5)
        True
        >>> bool(np.allclose(scores.sum(axis=1), pieces.score(), atol=1e-8))
        True
        """
        if z is not None:
            return _pooled_derivatives(self.layout, self.grid, self.family, self.blocks(),
                                       np.asarray(z, dtype=float))
        if "derivatives" not in self._cache:
            self._cache["derivatives"] = _pooled_derivatives(self.layout, self.grid, self.family,
                                                             self.blocks(), self.params)
        return self._cache["derivatives"]

    def covariance_matrix(self, robust: bool = False) -> np.ndarray:
        """Covariance of the coordinates :attr:`params`.

        The inverse observed information (analytic; coordinates held on a
        bound get zero rows and columns), or with ``robust=True`` the sandwich
        ``C S C`` over the tasks' scores, which the intervals use when the fit
        is :attr:`robust`.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> cov = fit.covariance_matrix()
        >>> cov.shape == (fit.params.size,) * 2 and bool(np.allclose(cov, cov.T))
        True
        """
        if robust:
            return self._robust_covariance()
        if "cov" not in self._cache:
            free = ~at_bound(self.params, self.box()).any(axis=1)
            cov = np.zeros((self.params.size,) * 2)
            if free.any():
                # the analytic observed information (2n gradients of differencing cost
                # minutes for hundreds of systems; this agrees with them to ~1e-6)
                info = self.derivatives().information()[np.ix_(free, free)]
                cov[np.ix_(free, free)] = covariance_from_information(
                    info, null=_unidentified(self.blocks(), free))
            self._cache["cov"] = cov
        return self._cache["cov"]

    def _robust_covariance(self) -> np.ndarray:
        """The sandwich ``C S C``: C the inverse observed information (:meth:`covariance_matrix`),
        S the sum of the tasks' score outer products (:meth:`PooledDerivatives.task_scores`)."""
        if "robust_cov" not in self._cache:
            cov = self.covariance_matrix()
            scores = self.derivatives().task_scores()
            free = np.diag(cov) > 0
            scores[~free] = 0.0
            self._cache["robust_cov"] = cov @ (scores @ scores.T) @ cov
        return self._cache["robust_cov"]

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
            bound (:attr:`on_bound`), whose delta interval says nothing. Where
            the data leave a shared coordinate flat to its bound
            (:attr:`weak_coordinates`), delta intervals are widened over the
            metric along that ridge.

        Returns
        -------
        pandas.DataFrame
            One row per system, metric and horizon: ``system, metric, k,
            estimate, se, lower, upper``.
        """
        return self.units_summary(k, level, check_interval_method(method, optional=True),
                                  range(self.layout.n_systems))

    @property
    def profiles_by_default(self) -> bool:
        """Whether the panel is small enough (at most :data:`PROFILE_CELLS` cells) for
        every system's intervals to be profiles by default."""
        return self.layout.n_systems * self.layout.n_tasks <= PROFILE_CELLS

    def default_method(self, i: int) -> str:
        """The interval method system i gets by default: profile on panels of at most
        :data:`PROFILE_CELLS` cells and for a system whose ability is on its bound, else
        delta (see :meth:`summary`)."""
        return ("profile" if self.profiles_by_default or self.systems[i] in self.on_bound
                else "delta")

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

    @property
    def weak_coordinates(self) -> list[str]:
        """Shared coordinates the data do not pin down inside their box.

        A shared coordinate of the normal family (a shared concentration,
        the difficulty distribution's means, log-sds and component weights)
        is weak when the fit holds it on its bound, or when its 95% Wald
        interval reaches past the box: the likelihood is flat along it, as
        when a few tasks cannot tell a large concentration from the binomial
        limit. The delta method linearises at one point of that ridge (where
        the optimiser stopped) and can be far too narrow beyond the trials;
        :meth:`delta` therefore widens its intervals over the metric's values
        along the ridge (:meth:`ridge_points`). Labels are the block's name,
        with ``[h]`` for a component's.

        Examples
        --------
        Tasks whose success rates scatter around each system's logistic curve
        pin the concentration down; exactly on the curves (binomial counts) it
        runs to the binomial limit, its bound, and the data say only how low
        it can be:

        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(0.0, 1.5, size=80)
        >>> mu = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
        >>> y = rng.binomial(10, rng.beta(10 * mu, 10 * (1 - mu)))
        >>> panel = passmix.Panel(y, np.full(y.shape, 10))
        >>> passmix.fit_pooled(panel, seed=0, concentration="shared").weak_coordinates
        []
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(0.0, 1.5, size=60)
        >>> mu = 1 / (1 + np.exp(-(np.array([[-1.0], [-0.3], [0.3], [1.0]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(10, mu), np.full(mu.shape, 10))
        >>> passmix.fit_pooled(panel, seed=0, concentration="shared").weak_coordinates
        ['log_concentration']
        """
        if "weak" not in self._cache:
            self._cache["weak"] = [label for _, label in self._weak_positions()]
        return list(self._cache["weak"])

    def _weak_positions(self) -> list[tuple[int, str]]:
        """(position in :attr:`params`, label) of each of :attr:`weak_coordinates`."""
        if self.family != "normal":
            # the grid's weights sit on their bound wherever the NPMLE puts no mass: a
            # feature of the estimator, not a ridge
            return []
        shared = {"difficulty_mean", "log_difficulty_sd", "component_logits"}
        if self.concentration == "shared":
            shared.add("log_concentration")
        box, z = self.box(), self.params
        sd = np.sqrt(np.maximum(np.diag(self.covariance_matrix()), 0.0))
        held = at_bound(z, box).any(axis=1)
        # 1.96: a Wald interval reaching past the box at 95% (the region's own level is
        # the search's business; this only says where to look)
        past = (z - 1.96 * sd < box[:, 0]) | (z + 1.96 * sd > box[:, 1])
        out, start = [], 0
        for name, size in self.blocks():
            if name in shared:
                for h in range(size):
                    if held[start + h] or past[start + h]:
                        out.append((start + h, name if size == 1 else f"{name}[{h}]"))
            start += size
        return out

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
                "n_systems": self.layout.n_systems, "n_tasks": self.layout.n_tasks,
                "on_bound": self.on_bound, "weak_coordinates": self.weak_coordinates,
                "robust": self.robust}

    def __repr__(self) -> str:
        i, j = self.panel.shape
        status = "converged" if self.converged else "NOT converged"
        slope = ", slope=True" if self.slope else ""
        return (f"PooledFit(family={self.family!r}{slope}, "
                f"concentration={self.concentration!r}, systems={i}, tasks={j}, "
                f"loglik={self.loglik:.3f}, BIC={self.bic:.3f}, {status})")


class PooledSystem(Unit):
    """One system of a :class:`PooledFit` (a :class:`~passmix.inference.units.Unit`), as a
    :class:`~passmix.estimators.base.FittedResult`: its metric is averaged over each
    task's posterior; ``interval`` and ``summary`` take the method
    :meth:`PooledFit.summary` would give it by default."""

    fit: PooledFit

    @property
    def counts(self) -> Counts:
        """The system's counts over the panel's tasks (m = 0 where it did not run one)."""
        return self.fit.panel.counts(self.name)

    def status(self) -> str:
        """One line on convergence, on this system's ability sitting on its bound, and on
        shared coordinates the data leave flat (:attr:`PooledFit.weak_coordinates`).

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 0, 0, 0], [2, 1, 3, 0], [4, 2, 5, 1]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> fit.system(0).status().split("; ")[:2]
        ['converged', 'no success seen: ability at its bound, estimates ~0 (the upper ends come from the shared difficulty)']
        >>> fit.weak_coordinates  # four tasks leave the difficulty's spread and the concentration loose
        ['log_concentration', 'difficulty_mean']
        """
        text = "converged" if self.fit.converged else "NOT converged"
        if self.name in self.fit.on_bound:
            y = self.fit.panel.successes[self.index].sum()
            text += ("; no success seen: ability at its bound, estimates ~0 (the upper ends "
                     "come from the shared difficulty)" if y == 0 else
                     "; no failure seen: ability at its bound, estimates ~1 (the lower ends "
                     "come from the shared difficulty)")
        weak = self.fit.weak_coordinates
        if weak:
            text += (f"; the data leave {', '.join(weak)} flat to "
                     f"{'its bound' if len(weak) == 1 else 'their bounds'} (delta intervals "
                     "widened along the ridge; profile ones search it)")
        return text

    def info(self) -> dict[str, Any]:
        """The joint fit's info, with this system's ability and concentration (and slope)."""
        out = {**self.fit.info(), "system": self.name, "status": self.status(),
               "ability": float(self.fit.abilities[self.index]),
               "concentration": float(self.fit.concentrations[self.index])}
        if self.fit.slope:
            out["slope"] = float(self.fit.slopes[self.index])
        return out


PooledFit.unit_class = PooledSystem


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
