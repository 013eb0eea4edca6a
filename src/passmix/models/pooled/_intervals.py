"""The pooled model's part of each system's intervals: the metric's gradients in the
coordinates, the tasks' spread and the profile's region (the intervals themselves are
:class:`passmix.inference.units.UnitsResult`'s)."""

from __future__ import annotations

import zlib

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from ...metrics import evaluate_logit, metric_at_rate
from ...inference.optimize import at_bound, covariance_from_information
from ...inference.profile import LikelihoodRegion, region_drop
from ...inference.spread import SPREAD_TASKS, beta_power_moments
from ._layout import _box
from ._likelihood import _WINDOW_MASS, PooledDerivatives, _eta, _pooled_derivatives, beta_shapes
from ._support import (PROBES, SPREAD_CELLS, _LOGIT_FLOOR, _Affine, _SharedPieces,
                       _box_probes, _has_extreme_system, _profile_coordinates, _unidentified)

# rows whose metric logit weighs a grid point by more than this (a tiny metric, whose
# logit weighs its far tail by up to 1 / M) get their own, wider task windows
_TAIL_WEIGHT = 1e3
# a ridge walk's steps from the estimate, as fractions of the room to the box (each
# halving the last), and the width to which the region's edge is then bisected between
# two (in the coordinate's units: a metric far beyond the trials moves fast along the
# ridge, and the edge, not the steps, must decide how far the walk reaches)
_RIDGE_STEPS = 8
_RIDGE_TOL = 0.01
# ... of which the farthest this many in each direction are kept
_RIDGE_KEPT = 3
# each ridge point's search over the other coordinates
_RIDGE_OPTIONS = {"maxiter": 200, "ftol": 1e-10, "gtol": 1e-6}
# ... unless their window is at most this much wider than the others' (a second pass
# over the tasks would then cost more than it saves)
_TAIL_WIDENING = 1.25


def _counts_seed(panel, i: int) -> int:
    """A seed made from system i's counts alone: its drawn ends are the same in any order
    of the panel's systems."""
    row = np.stack([panel.successes[i], panel.trials[i]]).astype(np.int64)
    return zlib.crc32(row.tobytes())


class PooledIntervals:
    """The pooled model's hooks of :class:`~passmix.inference.units.UnitsResult` (a base of
    :class:`PooledFit`): the metric's gradients, the tasks' spread, the profile's region."""

    def region_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int,
                    scale: float, warm: dict | None = None):
        """Extremes of system i's metric over the region whose drop is `scale` times the
        chi-square's, and the last horizon's end points (see :meth:`region_extremes`)."""
        all_coordinates = np.ones(self.params.size, dtype=bool)

        def logit(z, t, pieces):
            grads, centre = self.logit_gradients(metric, np.array([t]), all_coordinates,
                                                  z, rows=[i], derivatives=pieces)
            return float(centre[0, 0]), grads[:, 0, 0]

        def value(z, t):
            return float(self.metric_values(metric, np.array([t]), z, rows=[i])[0, 0])

        def batch(zs, t):
            return np.array([self.metric_logit_values(metric, np.array([t]), z, rows=[i])[0, 0]
                             for z in zs])

        # the horizons within the trials first, then those beyond, searched further (see
        # extrapolating), each group started from the other's ends below it
        k_arr = np.asarray(k_arr)
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        beyond = self.extrapolating(k_arr)
        for part, thorough in ((~beyond, False), (beyond, True)):
            if part.any():
                lower[part], upper[part], warm = self.region_extremes(
                    logit, value, k_arr[part], level, scale, warm, batch, thorough)
        return lower, upper, warm

    def extrapolating(self, k_arr: np.ndarray) -> np.ndarray:
        """Which horizons a profile search searches further: beyond the panel's most trials
        of a task, on a panel whose intervals are profiles by default.

        Within the trials the data pin a metric down nearly free of the
        model, and its region's edge is close to the quadratic one; beyond
        them it rests on the tails of the task distribution, where the edge
        is curved and has several local extremes. On MATH m = 10 (seeds 9
        and 10 of the coverage study), lower ends at k = 100 from one start
        stopped up to 0.05 short of a 12-start search's, and ends at k <= 10
        moved by at most 3e-4.
        """
        return self.profiles_by_default & (np.asarray(k_arr) > self.panel.trials.max())

    def region_extremes(self, func, func_value, points, level: float = 0.95,
                        scale: float = 1.0, warm: dict | None = None, batch=None,
                        thorough: bool | None = None):
        """Smallest and largest value of any function of the coordinates over the likelihood
        region whose drop is `scale` times ``chi2(1).ppf(level) / 2``, at each of `points`.

        ``func(z, t, pieces) -> (f or logit f, gradient in z)`` at one point t,
        `pieces` the derivative pieces at z (:meth:`derivatives`, shared with the
        search's log-likelihood); ``func_value(z, t) -> f``; ``batch(zs, t)``
        the first at many points (optional). With `thorough` the searches
        also start from the region's spread and from two of its points
        farthest from the other starts (by default: on panels of at most
        :data:`PROFILE_CELLS` cells; a metric's searches ask for it beyond
        the trials, :meth:`extrapolating`). Returns ``(lower, upper,
        end_points)``, the last the warm starts of a next search (see
        :meth:`~passmix.inference.profile.LikelihoodRegion.extremes`).
        """
        if thorough is None:
            thorough = self.profiles_by_default
        # the search's log-likelihood and the function's gradient share their pieces
        # (the task posterior and its derivative tables) at each point
        shared = _SharedPieces(self)
        region = self._region(shared, level, scale, thorough)
        sliced = region.objective

        def in_x(x, t):
            z = sliced.full(x)
            f, grad = func(z, t, shared.pieces(z))
            return f, sliced.T.T @ grad

        def value(x, t):
            return func_value(sliced.full(x), t)

        def batch_x(xs, t):
            return (np.array([func(sliced.full(x), t, None)[0] for x in xs]) if batch is None
                    else batch([sliced.full(x) for x in xs], t))

        lower, upper, _ = region.extremes(in_x, value, np.asarray(points), batch_x, warm)
        return lower, upper, region.end_points

    def _region(self, objective: _SharedPieces, level: float, scale: float = 1.0,
                thorough: bool = False) -> LikelihoodRegion:
        """The likelihood region at `level` in the identified coordinates, built once.

        The abilities (and log-slopes, and the grid's logits) enter the
        likelihood up to a common shift, so one coordinate of each such block
        is taken out (:func:`_profile_coordinates`); the region is searched in
        the others. The likelihood has one optimum in all the fits seen, so
        the searches start from fewer points than the mixture's: the delta
        direction's edge and the neighbouring horizon's ends, and on panels of
        at most :data:`SPREAD_CELLS` cells the region's spread too. A
        `thorough` region (built apart) starts from the spread everywhere,
        and from two of its points farthest from the other starts.
        """
        key = ("region", level, scale, thorough)
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
            # few tasks leave a curved region with several local extremes on its edge, and
            # each evaluation is cheap there: small panels also start from the spread; a
            # thorough search does everywhere, and from two of its farthest points too
            region.use_spread = small or thorough
            if thorough:
                # and the three most extreme screened ends polished, not one: on MATH
                # m = 10 (seed 9) the one polished stopped 0.032 and 0.009 short of a
                # 12-start search's lower ends at k = 100 (Pythia 1B and 410M) with the
                # packages of 2026-12-06, where it had reached them before
                region.n_far, region.n_polish = 2, 3
            region.floor = _LOGIT_FLOOR
            region.polish_options = {"maxiter": 60, "ftol": 1e-8}
            self._cache[key] = region
        region = self._cache[key]
        region.objective.objective = objective
        return region

    def ridge_points(self, level: float) -> list[np.ndarray]:
        """Points of the likelihood region at `level` along the ridge of each weak coordinate.

        The :class:`~passmix.inference.units.UnitsResult` hook the delta
        method widens its intervals with (:attr:`weak_coordinates`). From the
        estimate, each weak coordinate c is walked toward both ends of its
        box (only away from a bound it is held on) in steps of 1/128, 1/64,
        ..., 1/2 and all of the distance to that end. At each step the other
        free coordinates are maximised with c held (the profile's path,
        started from the last point moved by ``-I_oo^-1 I_oc`` per unit of
        c). The walk goes on while the log-likelihood is within
        ``chi2(1).ppf(level) / 2`` of the maximum; at the first point below,
        the edge is bisected to 0.01 in c. The points therefore do not depend
        on where along a flat ridge the optimiser stopped. The three farthest
        points inside are kept in each direction. The path is a valid part
        of the region but not its whole, so the ends it gives
        are inside the profile's. The cut is the model's, not widened by the
        sandwich.

        Parameters
        ----------
        level : float
            The region's confidence level.

        Returns
        -------
        list of numpy.ndarray
            Coordinates (as :attr:`params`); empty without weak coordinates.

        Examples
        --------
        Binomial counts put the shared concentration on its bound (the
        binomial limit); the walk finds how far down the data let it go:

        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(0.0, 1.5, size=60)
        >>> mu = 1 / (1 + np.exp(-(np.array([[-1.0], [-0.3], [0.3], [1.0]]) - d)))
        >>> y = rng.binomial(10, mu)
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 10)), seed=0,
        ...                          concentration="shared")
        >>> fit.weak_coordinates
        ['log_concentration']
        >>> points = fit.ridge_points(0.95)
        >>> c = [name for name, _ in fit.blocks()].index("log_concentration")
        >>> start = sum(size for _, size in fit.blocks()[:c])
        >>> bool(min(z[start] for z in points) < fit.params[start] - 1)
        True
        """
        key = ("ridge", level)
        if key not in self._cache:
            weak = self._weak_positions()
            info = self.derivatives().information() if weak else None
            self._cache[key] = [p for c, _ in weak for p in self._walk_ridge(c, level, info)]
        return self._cache[key]

    def _walk_ridge(self, c: int, level: float, info: np.ndarray) -> list[np.ndarray]:
        box, z_hat = self.box(), self.params
        held = at_bound(z_hat, box)
        others = ~held.any(axis=1)
        others[c] = False
        cov = np.zeros_like(info)
        if others.any():
            cov[np.ix_(others, others)] = covariance_from_information(
                info[np.ix_(others, others)], null=_unidentified(self.blocks(), others))
        path = -cov @ info[:, c]
        path[c] = 1.0
        shared = _SharedPieces(self)
        # a fit made from given coordinates may not carry its log-likelihood
        top = self.loglik if np.isfinite(self.loglik) else shared.logp_dlogp(z_hat)[0]
        floor = top - region_drop(level)

        def on_ridge(t, start):
            # the others maximised with c held at z_hat[c] + t: the profile's path, so the
            # points do not depend on where along a flat ridge the optimiser stopped (a
            # linear path from there, as before, reached different depths per start)
            z = np.clip(start, box[:, 0], box[:, 1])
            z[c] = np.clip(z_hat[c] + t, box[c, 0], box[c, 1])
            if others.any():
                def negative(x):
                    z[others] = x
                    logp, grad = shared.logp_dlogp(z)
                    if not np.isfinite(logp):
                        return np.inf, np.zeros(x.size)
                    return -logp, -grad[others]
                found = minimize(negative, z[others], jac=True, method="L-BFGS-B",
                                 bounds=box[others], options=_RIDGE_OPTIONS)
                z[others] = found.x
            logp = shared.logp_dlogp(z)[0]
            # a NaN log-likelihood is outside
            return z.copy(), logp if np.isfinite(logp) else -np.inf

        points = []
        for sign, end in ((1.0, 1), (-1.0, 0)):
            if held[c, end]:
                continue
            room = abs(box[c, end] - z_hat[c])
            inside, reached, last = 0.0, [], z_hat
            for t in room * 2.0 ** -np.arange(_RIDGE_STEPS - 1, -1, -1.0):
                # warm: the last point inside, moved along the quadratic model's path
                z, logp = on_ridge(sign * t, last + sign * (t - inside) * path)
                if not logp >= floor:
                    outside = t
                    while outside - inside > _RIDGE_TOL:
                        mid = 0.5 * (inside + outside)
                        z_mid, logp_mid = on_ridge(sign * mid,
                                                   last + sign * (mid - inside) * path)
                        if logp_mid >= floor:
                            inside, last = mid, z_mid
                            reached.append(z_mid)
                        else:
                            outside = mid
                    break
                inside, last = t, z
                reached.append(z)
            # the farthest few: near the estimate the delta interval holds the metric
            # already, and each point kept costs every unit's metric at every call
            points += reached[-_RIDGE_KEPT:]
        return points

    def metric_spread(self, metric: str, k_arr: np.ndarray, rows=None) -> np.ndarray:
        """The :class:`~passmix.inference.units.UnitsResult` hook: :meth:`task_variance`."""
        return self.task_variance(metric, k_arr, rows)

    def metric_spread_quantiles(self, metric: str, k_arr: np.ndarray, level: float,
                                rows=None) -> tuple[np.ndarray, np.ndarray]:
        """The :class:`~passmix.inference.units.UnitsResult` hook: the ends of each system's
        metric given the parameters, (len(rows), K) each, where few tasks carry it.

        Task j's success probability given the data and the parameters is a
        mixture of Betas over the difficulty grid, independent across tasks,
        so the benchmark metric is an average of independent terms. Where
        many tasks carry its variance that average is close to normal and the
        log-normal of :func:`~passmix.inference.units.with_metric_spread` is
        left to it (NaN here). Where few do (an effective number of tasks
        ``(sum v_j)^2 / sum v_j^2`` below :data:`SPREAD_TASKS`: Pass^k far
        beyond the trials, where one or two tasks carry it and it is ~0
        otherwise, or Pass^m of rare successes) and k >= 2, its
        quantiles at ``(1 -+ level) / 2`` are drawn: 2,000 draws of every
        task's probability from its posterior over the whole grid (from a
        fixed seed per system, made from its own counts, so that its ends do not
        depend on its row in the panel; tasks whose mean is below 1e-9 of the largest
        and whose variance is below 1e-12 of the largest are left out of the
        lower end and add their means to the upper). Pass@k and Pass^k screen by their own per-task variances, AUC@k by
        Pass@k's.
        """
        # the screen's moments over the derivatives' window of each task's posterior (a
        # dozen grid points of 141 on a large panel); the draws over the whole grid: the
        # lower end lives in its tails (a task solved every time may still be hard), which
        # the window drops (drawn from it, quantiles were 1e3 too high where a truth was
        # ~1e-8)
        index, r_window = self.derivatives().window()                 # (J, W) each
        r = self.derivatives().r                                       # (J, G)
        a, log_kappa, _, log_s = self._coordinates(self.params)
        n_tasks = r.shape[0]
        rows = list(range(self.layout.n_systems) if rows is None else rows)
        k_arr = np.asarray(k_arr, dtype=int)
        q_lo = np.full((len(rows), k_arr.size), np.nan)
        q_hi = np.full((len(rows), k_arr.size), np.nan)
        tail = (1.0 - level) / 2.0
        # from k = 2, within the trials too: at 1-9% success the log-normal's Pass^10 from
        # m = 10 (a task solved in all its trials leaves its p^10 open) covered 0.83
        beyond = k_arr >= 2
        if not beyond.any():
            return q_lo, q_hi
        cum_r = np.cumsum(r, axis=1)
        cum_r /= cum_r[:, -1:]
        for n, i in enumerate(rows):
            alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
            pairs, member = self._pairs(i)
            codes = np.argmax(member, axis=0)
            y_j, f_j = pairs[0][codes], (pairs[1] - pairs[0])[codes]
            # each task's moments at those horizons only (k = 1 keeps the log-normal): (J,
            # K) with zeros elsewhere
            m1, m2 = beta_power_moments(alpha[0][index] + y_j[:, None],
                                        beta[0][index] + f_j[:, None],
                                        k_arr[beyond], metric == "pass^k")  # (J, W, K')
            e1 = np.zeros((n_tasks, k_arr.size))
            var = np.zeros((n_tasks, k_arr.size))
            e1[:, beyond] = np.einsum("jw,jwk->jk", r_window, m1)
            var[:, beyond] = np.maximum(np.einsum("jw,jwk->jk", r_window, m2)
                                        - e1[:, beyond] ** 2, 0.0)
            total = var.sum(axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                n_eff = total ** 2 / np.sum(var ** 2, axis=0)
            few = (total > 0) & (n_eff < SPREAD_TASKS) & beyond
            if not few.any():
                continue
            # every task whose mean or variance is not negligible is drawn: where the
            # metric can be ~0 its lower end is set by the tasks' small means as much as by
            # the few large variances (the tasks of all but 1e-6 of the variance, the
            # others at their means, put a floor 1e3 above the lower end of the draws);
            # AUC@k's means taken as Pass@k's, which bound them
            mean = e1 if metric == "pass^k" else 1.0 - e1
            drawn = (np.any(mean[:, few] > 1e-9 * mean[:, few].max(axis=0), axis=1)
                     | np.any(var[:, few] > 1e-12 * var[:, few].max(axis=0), axis=1))
            tasks = np.flatnonzero(drawn)
            rest = mean[~drawn].sum(axis=0)
            rng = np.random.default_rng([0, _counts_seed(self.panel, i)])
            # each draw's grid point from its task's posterior, by one search over the
            # posteriors' cumulative weights laid end to end (task t's shifted by t)
            width = r.shape[1]
            shift = np.arange(tasks.size)
            flat = (cum_r[tasks] + shift[:, None]).ravel()
            u = rng.random((_SPREAD_DRAWS, tasks.size)) + shift[None, :]
            pick = np.minimum(np.searchsorted(flat, u, side="right") - shift * width,
                              width - 1)                               # (S, T)
            theta = rng.beta(alpha[0][pick] + y_j[tasks], beta[0][pick] + f_j[tasks])
            for c in np.flatnonzero(few):
                g = metric_at_rate(metric, theta, int(k_arr[c]))
                # the draws as they are, not centred on the estimate: near 0 a centring's
                # Monte Carlo error (1e-6) would swamp a lower end of 1e-8. The tasks not
                # drawn add their means to the upper end and nothing to the lower: a mean
                # of p^k is carried by its posterior's far tail, which a task seldom
                # reaches (at 1-9% success, Pass^100's floor of means stood at 1e-24 where
                # the tasks' own value was 1e-65, and the lower end missed it half the time)
                drawn_sum = g.sum(axis=1)
                lo = np.quantile(drawn_sum, tail) / n_tasks
                hi = np.quantile(drawn_sum + rest[c], 1.0 - tail) / n_tasks
                q_lo[n, c], q_hi[n, c] = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
        return q_lo, q_hi

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
            m1, m2 = beta_power_moments(a_c, b_c, horizons, pass_hat)   # (pairs, G, H) each
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


# the pooled spread's draws (the single-system spread draws SPREAD_DRAWS: fewer here, for
# the many systems and horizons of a panel)
_SPREAD_DRAWS = 2000
