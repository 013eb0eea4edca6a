"""Each system's delta and profile intervals, as methods :class:`PooledFit` inherits."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import betaln, expit

from ..._validation import check_k, check_level, check_metric
from ...inference.delta import logit_wald_ends, normal_quantile, widen_degenerate
from ...metrics import evaluate_logit
from ...inference.profile import LikelihoodRegion, region_drop, repair_across_metrics
from ._layout import _box
from ._likelihood import _WINDOW_MASS, PooledDerivatives, _eta, _pooled_derivatives, beta_shapes
from ._support import (PROBES, SPREAD_CELLS, _LOGIT_FLOOR, _Affine, _SharedPieces, _box_probes,
                       _has_extreme_system, _profile_coordinates, _with_task_spread)

# rows whose metric logit weighs a grid point by more than this (a tiny metric, whose
# logit weighs its far tail by up to 1 / M) get their own, wider task windows
_TAIL_WEIGHT = 1e3
# ... unless their window is at most this much wider than the others' (a second pass
# over the tasks would then cost more than it saves)
_TAIL_WIDENING = 1.25


class SystemIntervals:
    """Delta and profile intervals of each system's metrics (a base of :class:`PooledFit`)."""

    def inflation(self, metric: str, k: int) -> np.ndarray:
        """(I,): how much wider the sandwich says each system's metric logit varies than the
        observed information does, as a variance ratio, at least 1.

        Where the model is wrong (the tasks' difficulty order differs between
        systems, the difficulty distribution is off) the tasks' own scores
        vary more than the model's curvature implies; the ratio carries that
        into the intervals, per system, metric and horizon. It is never
        taken below 1: where the model fits, the model's information stays.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> ratio = fit.inflation("pass@k", 10)
        >>> ratio.shape, bool((ratio >= 1).all())
        ((2,), True)
        """
        key = ("inflation", metric, int(k))
        if key not in self._cache:
            cov = self.covariance_matrix()
            grads, _ = self.logit_gradients(metric, np.array([int(k)]), np.diag(cov) > 0)
            self._keep_inflation(metric, np.array([int(k)]), grads)
        return self._cache[key]

    def _keep_inflation(self, metric: str, k_arr: np.ndarray, grads: np.ndarray) -> None:
        """Keep :meth:`inflation` at each of `k_arr` from the gradients (C, I, K) at hand."""
        cov, robust = self.covariance_matrix(), self._robust_covariance()
        for n, k in enumerate(k_arr):
            key = ("inflation", metric, int(k))
            if key in self._cache:
                continue
            g = grads[:, :, n]
            # g_i' C g_i for every system i, as matrix products (BLAS), not a triple loop
            model = np.sum(g * (cov @ g), axis=0)
            sandwich = np.sum(g * (robust @ g), axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(model > 0, sandwich / model, 1.0)
            self._cache[key] = np.maximum(np.nan_to_num(ratio, nan=1.0, posinf=1.0), 1.0)

    def delta(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Delta-method intervals on the logit scale, per system and horizon.

        The covariance is the inverse observed information of the free
        coordinates (grid weights driven to their lower bound are held
        there, as the delta method holds any bounded coordinate). To that
        parameter variance is added the variance of the benchmark metric
        given the parameters (each task's own success probability is known
        only through its posterior; :meth:`task_variance`), since the metric
        is one of these tasks; with :attr:`robust` the parameters' part is
        widened by the sandwich (:meth:`inflation`). Coverage is checked by
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
        rows = list(range(self.layout.n_systems))
        cov = self.covariance_matrix()
        base = self.metric_values(metric, k_arr, rows=rows)
        grads, centre = self.logit_gradients(metric, k_arr, np.diag(cov) > 0)
        quad = np.sum(grads * np.tensordot(cov, grads, axes=(1, 0)), axis=0)  # g' C g
        se_logit = np.sqrt(np.maximum(quad, 0.0))
        if self.robust:
            # the sandwich's ratio from the gradients just computed, not a second time
            self._keep_inflation(metric, k_arr, grads)
            se_logit = se_logit * np.sqrt(np.stack([self.inflation(metric, k) for k in k_arr],
                                                   axis=1))
        lower, upper = logit_wald_ends(centre, se_logit, level)
        # rounding may put the estimate a hair outside expit of its own logit's interval
        lower, upper = np.minimum(lower, base), np.maximum(upper, base)
        # The benchmark's metric is over these tasks' own success probabilities, which
        # stay uncertain given the data even at known parameters: add that variance to
        # each half-width in quadrature, on the probability scale (on the logit scale
        # it is divided by M^2, which for a small Pass^k blows up to an interval of ~1)
        var_tasks = self.task_variance(metric, k_arr)
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
        metric and horizon (:meth:`inflation`). ``se`` is the delta
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
        rows = (range(self.layout.n_systems) if system is None
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
                    self._cache[key] = self.model_ends(name, k_arr[part], level, i)
                lower[part], upper[part] = self._cache[key]
        base = self.metric_values(metric, k_arr, rows=[i])[0]
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        var_tasks = self.task_variance(metric, k_arr, rows=[i])[0]
        lower, upper = _with_task_spread(base, lower, upper, var_tasks, normal_quantile(level))
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        for arr in (lower, upper):
            arr.flags.writeable = False
        return lower, upper

    def model_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """The smallest and largest value of system i's metric over the likelihood region
        (widened by the sandwich's :meth:`inflation` with :attr:`robust`), per horizon.

        The model's own profile ends: :meth:`profile` adds the tasks' spread
        (:meth:`task_variance`) to them. `k_arr` is a 1-d integer array, `i`
        the system's position.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> lower, upper = fit.model_ends("pass@k", np.array([10]), 0.95, 0)
        >>> bool(lower[0] <= fit.metric("pass@k", 10)[0] <= upper[0])
        True
        """
        if not self.robust:
            return self._region_ends(metric, k_arr, level, i, 1.0)[:2]
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        # each horizon has its own region; the searches go up in k, each started also
        # from the ends at the horizon below (pulled into its region), as they are
        # within one region: a lone search from the delta direction's edge can stop
        # far inside the region
        warm: dict = {}
        for n in np.argsort(k_arr, kind="stable"):
            scale = float(self.inflation(metric, k_arr[n])[i])
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
            grads, centre = self.logit_gradients(metric, np.array([t]), all_coordinates,
                                                  z, rows=[i],
                                                  derivatives=shared.pieces(z))
            return float(centre[0, 0]), sliced.T.T @ grads[:, 0, 0]

        def value(x, t):
            return float(self.metric_values(metric, np.array([t]), sliced.full(x), rows=[i])[0, 0])

        def batch(xs, t):
            return np.array([self.metric_logits(metric, np.array([t]), sliced.full(x),
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
            blocks = self.blocks()
            box = _box(blocks)
            x_hat, T, P, box_x = _profile_coordinates(blocks, self.params, box)
            search = _Affine(objective, self.params, x_hat, T)
            small = self.layout.n_systems * self.layout.n_tasks <= SPREAD_CELLS
            # few tasks and a system that never (or always) succeeded can leave a second
            # piece of the region far from the estimate, its ability against the box's
            # end: there the spread also climbs in from points over the box (each climb
            # is a search of its own, so only there)
            probes = (_box_probes(box_x, PROBES) if small and _has_extreme_system(self.panel)
                      else ())
            # a held relative ability moves its system's logit one for one: searched as is
            region = LikelihoodRegion(search, x_hat, self.loglik - scale * region_drop(level),
                                      P @ self.covariance_matrix() @ P.T, box_x, probes=probes,
                                      held_logistic=self.family == "grid" or self.slope)
            region.n_starts, region.n_far, region.n_polish, region.max_restarts = 1, 0, 1, 4
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

    def task_variance(self, metric: str, k_arr: np.ndarray, rows=None) -> np.ndarray:
        """(I, K) variance of each system's benchmark metric given the data, at the optimum.

        Task j's success probability has a posterior (a mixture over the grid
        of Beta components); the benchmark metric averages a function ``g``
        of it over the J tasks, so its variance is ``sum_j Var_j(g) / J^2``.
        Pass@k and Pass^k have ``Var(g)`` in closed form from Beta moments
        (``E[(1 - p)^n]`` at ``n = k, 2k``; ``E[p^n]`` likewise). AUC@k
        averages Pass@h over ``h <= k``, so its standard deviation per task is
        at most the average of theirs: that bound is used, the average taken
        over at most 24 log-spaced horizons (trapezoid rule). `rows` are
        system positions (default all).

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> fit.task_variance("pass@k", np.array([1, 10])).shape
        (2, 2)
        """
        # sums over each task's window of the grid (PooledDerivatives.window): what
        # is dropped is below 1e-30 of the variance's absolute scale
        index, r = self.derivatives().window()                        # (J, W) each
        a, log_kappa, _, log_s = self._coordinates(self.params)
        n_tasks = r.shape[0]
        rows = range(self.layout.n_systems) if rows is None else rows
        pass_hat = metric == "pass^k"
        # the horizons whose moments are wanted: AUC@k's bound averages the sd over at
        # most 24 log-spaced horizons h <= k (trapezoid rule)
        if metric == "auc@k":
            spans = [np.unique(np.geomspace(1, kv, num=min(int(kv), 24)).round()).astype(int)
                     for kv in k_arr]
        else:
            spans = [np.array([kv]) for kv in k_arr]
        horizons = np.unique(np.concatenate(spans))
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
            pairs, member = self._pairs(i)
            codes = np.argmax(member, axis=0)
            a_c = alpha + pairs[0][:, None]                  # (pairs, G)
            b_c = beta + (pairs[1] - pairs[0])[:, None]
            m1, m2 = _beta_moments(a_c, b_c, horizons, pass_hat)   # (pairs, G, H) each
            e1 = np.einsum("jg,jgk->jk", r, m1[codes[:, None], index])
            e2 = np.einsum("jg,jgk->jk", r, m2[codes[:, None], index])
            sd = np.sqrt(np.maximum(e2 - e1 ** 2, 0.0))      # (J, H): each task's sd of g
            sds = np.empty((n_tasks, k_arr.size))
            for c, h in enumerate(spans):
                sd_h = sd[:, np.searchsorted(horizons, h)]
                sds[:, c] = (sd_h[:, 0] if h.size == 1 else
                             np.trapezoid(sd_h, h, axis=1) / max(h[-1] - h[0], 1))
            out[n] = (sds ** 2).sum(axis=0) / n_tasks ** 2
        return out

    def logit_gradients(self, metric: str, k_arr: np.ndarray,
                        active: np.ndarray | None = None, z: np.ndarray | None = None, rows=None,
                        derivatives: PooledDerivatives | None = None,
                        tasks: np.ndarray | None = None):
        """(C, len(rows), K) gradients of the systems' metric logits in the free coordinates,
        and the logits, (len(rows), K), at coordinates `z` (the optimum by default).

        System i's metric is a function of its component weights (the task
        posterior, which every coordinate moves) and its component shapes
        (which only its own ability, concentration and slope move, and, through
        the centring of abilities and slopes, the others').
        :func:`~passmix.metrics.evaluate_logit` gives the gradient in both, and
        the posterior's own derivative is analytic
        (:meth:`PooledDerivatives.posterior_contraction`): nothing is
        differenced, and the cost is a few matrix products over (task, grid).
        `rows` are system positions (default all); `derivatives`, the pieces at `z`
        if already computed; `tasks`, a 0/1 mask of the tasks the metric averages
        over (default all); `active`, the coordinates whose gradient is kept (default
        those free at the optimum: a coordinate held on its bound gets zero).

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> grads, logits = fit.logit_gradients("pass@k", np.array([1, 10]))
        >>> grads.shape == (fit.params.size, 2, 2), logits.shape
        (True, (2, 2))
        """
        n_sys = self.layout.n_systems
        rows = list(range(n_sys)) if rows is None else list(rows)
        at = self.params if z is None else np.asarray(z, dtype=float)
        if derivatives is None:
            derivatives = (self.derivatives() if z is None else
                           _pooled_derivatives(self.layout, self.grid, self.family,
                                               self.blocks(), at, second=False))
        r0 = self._posterior(None) if z is None else derivatives.r
        a, log_kappa, _, log_s = self._coordinates(at)
        eta = _eta(a, self.grid, log_s)
        kappa = np.exp(log_kappa)[:, None]
        d_eta = kappa * expit(eta) * expit(-eta)            # d alpha / d eta = -d beta / d eta
        # d eta / d log s_i = -s_i d
        d_eta_log_s = -np.exp(log_s)[:, None] * self.grid[None, :]
        prior_alpha, prior_beta = beta_shapes(a, log_kappa, self.grid, log_s)
        starts = dict(zip([name for name, _ in self.blocks()],
                          np.cumsum([0] + [size for _, size in self.blocks()])))
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
        n_tasks = self.layout.n_tasks
        share = (np.full(n_tasks, 1.0 / n_tasks) if tasks is None
                 else np.asarray(tasks, dtype=float) / np.sum(tasks))
        # on each task's window of the grid (the posterior is zero to rounding outside),
        # a block of tasks at a time: the (rows, tasks, window) weights are never whole.
        # The window's cut weighs each grid point by the largest weight a row puts on it:
        # a tiny M's logit weighs its far tail by up to 1 / M. Such rows (a system with
        # no success, at a long horizon) get their own, wider window, so that they do
        # not widen every other row's
        weights = np.array([np.abs(b).max(axis=(0, 1)) for b in by_weight])   # (R, G)
        codes = [np.argmax(self._pairs(i)[1], axis=0) for i in rows]      # pair per task
        tail = weights.max(axis=1) > _TAIL_WEIGHT
        groups = [np.flatnonzero(~tail), np.flatnonzero(tail)]
        windows = [derivatives.window(_WINDOW_MASS, weights[g].max(axis=0)) if g.size else None
                   for g in groups]
        if all(w is not None for w in windows) and (
                windows[1][0].shape[1] <= _TAIL_WIDENING * windows[0][0].shape[1]):
            # the tail's window is barely wider: one pass over the tasks (each gathers
            # every system's derivatives) costs less than two
            groups, windows = [np.arange(len(rows))], [windows[1]]
        part = np.zeros((at.size, len(rows), k_arr.size))
        for group, window in zip(groups, windows):
            if window is None:
                continue
            index = window[0]                                             # (J, W)

            def block_weights(block, group=group, index=index):
                return np.concatenate([by_weight[n][:, codes[n][block, None], index[block]]
                                       * share[block][None, :, None] for n in group])

            part[:, group] = derivatives.posterior_contraction(
                block_weights, group.size * k_arr.size, window).reshape(
                    at.size, group.size, k_arr.size)
        grads += part
        if active is None:
            active = np.diag(self.covariance_matrix()) > 0
        grads[~active] = 0.0
        return grads, centre


# moments up to this order come from running products, higher ones from log-Beta values
_PRODUCT_ORDER = 512


def _beta_moments(alpha: np.ndarray, beta: np.ndarray, horizons: np.ndarray, pass_hat: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``E[g^h]`` and ``E[g^2h]`` of Beta(alpha, beta) at each of `horizons`, with g the
    success probability (`pass_hat`) or its complement: (..., len(horizons)) each.

    Where the orders are many and low (AUC@k's horizons), the running product
    of ``(x + t) / (alpha + beta + t)``, t < n (x = alpha or beta): one product
    per order up to the highest instead of a log-Beta value per order wanted.
    A product costs about a fifth of a log-Beta value.
    """
    x = alpha if pass_hat else beta
    h = np.asarray(horizons, dtype=int)
    top = 2 * int(h.max())
    if top <= min(_PRODUCT_ORDER, 5 * (2 * h.size + 1)):
        t = np.arange(top, dtype=float)
        ratios = (x[..., None] + t) / ((alpha + beta)[..., None] + t)
        moments = np.cumprod(ratios, axis=-1)                 # [..., n - 1] = E[g^n]
        return moments[..., h - 1], moments[..., 2 * h - 1]
    hf = h.astype(float)
    base = betaln(alpha, beta)[..., None]
    if pass_hat:
        return (np.exp(betaln(alpha[..., None] + hf, beta[..., None]) - base),
                np.exp(betaln(alpha[..., None] + 2 * hf, beta[..., None]) - base))
    return (np.exp(betaln(alpha[..., None], beta[..., None] + hf) - base),
            np.exp(betaln(alpha[..., None], beta[..., None] + 2 * hf) - base))
