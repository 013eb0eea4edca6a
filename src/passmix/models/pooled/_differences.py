"""Paired differences between systems of one pooled fit, as methods :class:`PooledFit`
inherits: their delta covariance, profile ends and the metrics' joint covariance."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..._validation import check_k, check_level, check_metric
from ...inference.delta import normal_quantile
from ...data.panel import system_name
from ._likelihood import beta_shapes
from ._support import _horizon_map, _power_moments


class PairedDifferences:
    """Differences between two systems of the fit (a base of :class:`PooledFit`)."""

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
            values, grads = self.probability_gradients(metric, k_arr, rows, mask)
            task = self.task_covariance(metric, k_arr, rows, mask)
            for n in members:
                ra, rb = where[pairs[n][0]], where[pairs[n][1]]
                g = grads[:, rb] - grads[:, ra]                             # (C, K)
                param = self._widened(g.T @ self.covariance_matrix() @ g, g)
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
            values, grads = self.probability_gradients(metric, k_arr, [ia, ib], mask)
            estimate = values[1] - values[0]
            g = grads[:, 1] - grads[:, 0]                                   # (C, K)
            model = np.einsum("ck,cd,dk->k", g, self.covariance_matrix(), g)
            widened = np.diag(self._widened(np.diag(model), g))
            with np.errstate(divide="ignore", invalid="ignore"):
                scales = np.where(model > 0, widened / model, 1.0)
            lower, upper = estimate.copy(), estimate.copy()
            # the horizons up, each search also started from the ends below (as
            # model_ends), then down from the ends above: a difference's region edge
            # is less simple than one system's, and a lone search can stop short
            up = np.argsort(k_arr, kind="stable")
            for order in (up, up[::-1]) if k_arr.size > 1 else (up,):
                warm: dict = {}
                for n in order:
                    lo, hi, warm = self._difference_ends(metric, int(k_arr[n]), level, ia, ib,
                                                         mask, float(scales[n]), warm)
                    lower[n], upper[n] = min(lo, lower[n]), max(hi, upper[n])
            contrast = np.concatenate([-np.eye(k_arr.size), np.eye(k_arr.size)], axis=1)
            task = contrast @ self.task_covariance(metric, k_arr, [ia, ib], mask) @ contrast.T
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

        def difference(z, t, pieces):
            # the search minimises and maximises this directly: D lies in [-1, 1], far
            # above the region's logit floor, so no transform is needed
            grads, logits = self.logit_gradients(metric, np.array([t]), all_coordinates, z,
                                                  rows=[ia, ib], tasks=share,
                                                  derivatives=pieces)
            values = expit(logits[:, 0])
            g = grads[:, :, 0] * (values * (1 - values))[None]
            return float(values[1] - values[0]), g[:, 1] - g[:, 0]

        def value(z, t):
            both = self.metric_values(metric, np.array([t]), z, rows=[ia, ib], tasks=share)
            return float(both[1, 0] - both[0, 0])

        def batch(zs, t):
            return np.array([value(z, t) for z in zs])

        lower, upper, ends = self.region_extremes(
            difference, value, np.array([k]), level, scale, warm, batch,
            thorough=bool(self.extrapolating(np.array([k]))[0]))
        return float(lower[0]), float(upper[0]), ends

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
        everything = np.ones(self.layout.n_tasks, dtype=bool)
        mask = self._task_mask(everything, tasks, "no task is selected.")
        rows = list(range(self.layout.n_systems))
        values, grads = self.probability_gradients(metric, k_arr, rows, mask)
        g = grads[:, :, 0]                                              # (C, I)
        param = g.T @ self.covariance_matrix() @ g
        if self.robust:
            widen = np.sqrt(np.maximum(np.diag(self._widened(param, g)), 0.0)
                            / np.where(np.diag(param) > 0, np.diag(param), 1.0))
            param = widen[:, None] * param * widen[None, :]
        return values[:, 0], param + self.task_covariance(metric, k_arr, rows, mask)

    def _task_mask(self, default: np.ndarray, tasks, empty: str) -> np.ndarray:
        mask = default if tasks is None else np.asarray(tasks, dtype=bool)
        if mask.shape != default.shape:
            raise ValueError(f"tasks must be a mask of the {default.size} tasks; got shape "
                             f"{mask.shape}.")
        if not mask.any():
            raise ValueError(empty)
        return mask

    def probability_gradients(self, metric: str, k_arr: np.ndarray, rows: list[int],
                               mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R, K) the `rows` systems' metrics over the `mask` tasks and (C, R, K) their
        gradients on the probability scale, ``d M = M (1 - M) d logit``
        (:meth:`logit_gradients`); `mask` a boolean mask of the tasks.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> values, grads = fit.probability_gradients("pass@k", np.array([10]), [0, 1],
        ...                                           np.ones(5, dtype=bool))
        >>> values.shape, grads.shape == (fit.params.size, 2, 1)
        ((2, 1), True)
        """
        share = mask.astype(float)
        values = self.metric_values(metric, k_arr, rows=rows, tasks=share)
        active = np.diag(self.covariance_matrix()) > 0
        grads, _ = self.logit_gradients(metric, k_arr, active, rows=rows, tasks=share)
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

    def task_covariance(self, metric: str, k_arr: np.ndarray, rows: list[int],
                         mask: np.ndarray) -> np.ndarray:
        """(R K, R K) covariance of the `rows` systems' benchmark metrics over the `mask`
        tasks given the data, at the optimum, system-major: each task's success
        probabilities drawn from its posterior (a grid point of difficulty, then each
        system's Beta given it, independent given the grid point).

        The benchmark's part of a difference's variance: :meth:`difference`
        adds it to the parameters' part.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> cov = fit.task_covariance("pass@k", np.array([1, 10]), [0, 1],
        ...                           np.ones(5, dtype=bool))
        >>> cov.shape, bool(np.allclose(cov, cov.T))
        ((4, 4), True)
        """
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

