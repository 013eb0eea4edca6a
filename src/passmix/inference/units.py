"""The generic result of a likelihood model with a units axis: each unit's intervals,
written once.

A model that fits many units at once (the pooled model's systems, which
share the tasks' difficulty distribution) maps its coordinates to one Beta
mixture per unit, so each unit's metric is a function of every coordinate.
Such a fit is a :class:`UnitsResult`: it holds ``params``, ``loglik``,
``robust`` and a ``_cache`` dict, and supplies these hooks:

* ``units``: the units' labels, and ``unit_position(label) -> int``;
* ``metric_values(metric, k_arr, z=None, rows=None)``: ``(len(rows), K)``
  values of the units' metric at coordinates ``z`` (default the optimum);
* ``logit_gradients(metric, k_arr, active=None, z=None, rows=None)``:
  ``(C, len(rows), K)`` gradients of the metric's logits in the coordinates,
  and the logits ``(len(rows), K)``;
* ``covariance_matrix(robust=False)``: the coordinates' covariance (inverse
  observed information), or the sandwich;
* ``region_extremes(func, func_value, points, level, scale, warm, batch)``:
  the smallest and largest value of a function of the coordinates over the
  likelihood region whose drop is `scale` times the chi-square's (the
  model's own search), and the end points reached (a next search's warm
  starts); ``func(z, t, pieces) -> (f, gradient in z)``, `pieces` whatever
  the model shares between its log-likelihood and the function at z;
* ``region_ends(metric, k_arr, level, i, scale, warm)``: the same for unit
  i's metric (its logit, with the model's gradient);
* ``metric_spread(metric, k_arr, rows=None)``: ``(len(rows), K)`` variance
  of each unit's metric given the coordinates (the benchmark's own tasks,
  whose success probabilities stay uncertain at known parameters); zero if
  the model has none;
* ``metric_spread_quantiles(metric, k_arr, level, rows=None)``: that
  metric's own quantiles given the coordinates at the interval's tails,
  where the model computes them (NaN elsewhere, or None): they replace the
  log-normal matched to the variance (:func:`with_metric_spread`);
* ``default_method(i)``: the interval method unit i gets by default;
* ``ridge_points(level)``: points of the likelihood region that the delta
  method cannot see from the estimate (a coordinate on a flat ridge to its
  bound); each unit's delta interval is widened to hold its metric there.
  No points by default.

From these the result computes each unit's delta-method and
profile-likelihood intervals (with the sandwich's widening, :meth:`inflation`,
when :attr:`robust`), the profile interval of any function of the
coordinates, its :class:`Unit` view (``interval``, ``summary``) and the
summary table of every unit, each kept once computed.
:class:`~passmix.inference.results.LikelihoodResult` is the one-unit case with
its own coordinates; its ``profile_function`` has the same search.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from .._defaults import METRICS, SUMMARY_K
from .._validation import check_interval_method, check_k, check_level, check_metric
from .delta import ConfidenceInterval, logit_wald_ends, normal_quantile, widen_degenerate
from .orderings import repair_across_metrics

__all__ = ["Unit", "UnitsResult", "with_metric_spread"]


def with_metric_spread(base, lower, upper, variance, z_crit: float, quantiles=None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Widen a metric's model ends by the spread the metric has given the parameters.

    A benchmark metric averages a function of each task's success
    probability over these tasks, and each probability stays uncertain even
    at known parameters, so the metric varies with `variance` around `base`
    beside the parameters' own uncertainty (the ends `lower`, `upper`).
    Each end is moved out by the two offsets in quadrature on a log scale:
    the lower end on ``log M``, the upper on ``log(1 - M)``, the spread's
    part being the quantile `z_crit` of a log-normal with the metric's mean
    and variance. Near 1/2 this is the probability-scale quadrature; near 0
    (or 1) the end stays inside (0, 1), where the probability scale would cut
    it to 0 whenever one task carries the metric.

    Parameters
    ----------
    base, lower, upper : array_like
        The estimate and the model's interval ends.
    variance : array_like
        The metric's variance given the parameters.
    z_crit : float
        The normal quantile of the interval's level.
    quantiles : tuple of array_like, optional
        ``(q_lo, q_hi)``: the metric's own quantiles given the parameters at
        the interval's tails, where the model has them (NaN elsewhere). There
        they replace the log-normal's: ``log(M / q_lo)`` and ``log((1 - M) /
        (1 - q_hi))`` are the spread's offsets (a ``q_lo`` of 0 takes the
        lower end to 0, as the metric's distribution does when one task
        carries it and is most likely ~0).

    Returns
    -------
    lower, upper : numpy.ndarray
        Within ``[0, base]`` and ``[base, 1]``; at zero variance the model's
        ends (taken to hold `base`).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.units import with_metric_spread
    >>> lo, hi = with_metric_spread(np.array([0.5]), np.array([0.4]), np.array([0.6]),
    ...                             np.array([0.0]), 1.96)
    >>> float(lo[0]), float(hi[0])
    (0.4, 0.6)
    >>> lo, hi = with_metric_spread(np.array([0.5]), np.array([0.4]), np.array([0.6]),
    ...                             np.array([0.01]), 1.96)
    >>> bool(lo[0] < 0.4 and hi[0] > 0.6)
    True
    """
    base = np.asarray(base, dtype=float)
    lower = np.minimum(np.asarray(lower, dtype=float), base)
    upper = np.maximum(np.asarray(upper, dtype=float), base)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the lower end on log M (log-normal spread), exact for M far below 1
        sigma2 = np.log1p(variance / base ** 2)
        spread = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        if quantiles is not None:
            q_lo = np.minimum(np.asarray(quantiles[0], dtype=float), base)
            spread = np.where(np.isnan(q_lo), spread, np.log(base) - np.log(q_lo))
        model = np.log(base) - np.log(np.maximum(lower, 0.0))
        moved = base * np.exp(-np.hypot(np.nan_to_num(model, nan=0.0), spread))
        new_lower = np.where(base > 0, np.minimum(moved, lower), lower)
        # the upper end on log(1 - M), written through log1p / expm1 so that an end a
        # hair above a tiny M (Pass^k at large k) keeps its distance from M
        comp = 1.0 - base
        sigma2 = np.log1p(variance / comp ** 2)
        spread = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        if quantiles is not None:
            q_hi = np.maximum(np.asarray(quantiles[1], dtype=float), base)
            spread = np.where(np.isnan(q_hi), spread, np.log1p(-base) - np.log1p(-q_hi))
        model = np.log1p(-base) - np.log1p(-np.minimum(upper, 1.0))
        step = -np.expm1(-np.hypot(np.nan_to_num(model, nan=0.0), spread))
        new_upper = np.where(comp > 0, np.maximum(base + comp * step, upper), upper)
    return np.clip(new_lower, 0.0, base), np.clip(new_upper, base, 1.0)


class UnitsResult:
    """Each unit's delta and profile intervals, and the table of every unit.

    A mixin: the subclass (a frozen dataclass) has the attributes ``params``,
    ``loglik``, ``robust`` and a ``_cache`` dict, and the hooks named in the
    module docstring. The units are called systems in the tables (the
    ``system`` column and keyword), as in the rest of passmix.

    Examples
    --------
    :class:`passmix.PooledFit` is such a result:

    >>> import numpy as np
    >>> import passmix
    >>> from passmix.inference import UnitsResult
    >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
    >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5), systems=["a", "b"]),
    ...                          seed=0)
    >>> isinstance(fit, UnitsResult)
    True
    >>> fit.unit("b").interval("pass@k", 10, method="delta").lower > 0
    True
    """

    params: np.ndarray
    loglik: float
    robust: bool
    _cache: dict
    #: The view :meth:`unit` returns.
    unit_class: ClassVar[type] = None  # set below, once Unit is defined

    # -- hooks -------------------------------------------------------------------
    @property
    def units(self) -> Sequence:  # pragma: no cover - each model supplies it
        """The units' labels, in order."""
        raise NotImplementedError

    def unit_position(self, label) -> int:  # pragma: no cover - each model supplies it
        """The position of the unit labelled `label`."""
        raise NotImplementedError

    def metric_spread(self, metric: str, k_arr: np.ndarray, rows=None) -> np.ndarray:
        """(len(rows), K) variance of each unit's metric given the coordinates: none here."""
        n = len(self.units) if rows is None else len(list(rows))
        return np.zeros((n, np.asarray(k_arr).size))

    def metric_spread_quantiles(self, metric: str, k_arr: np.ndarray, level: float,
                                rows=None) -> tuple[np.ndarray, np.ndarray] | None:
        """The metric's own quantiles given the coordinates at the interval's tails,
        ``(q_lo, q_hi)`` each (len(rows), K), NaN where the log-normal of
        :func:`with_metric_spread` serves: none here."""
        return None

    def default_method(self, i: int) -> str:
        """The interval method unit i gets when none is asked: the profile here."""
        return "profile"

    def ridge_points(self, level: float) -> list:
        """Points of the likelihood region at `level` the delta method cannot see: none here."""
        return []

    # -- the sandwich -------------------------------------------------------------
    def inflation(self, metric: str, k: int) -> np.ndarray:
        """(units,): how much wider the sandwich says each unit's metric logit varies than the
        observed information does, as a variance ratio, at least 1.

        Where the model is wrong (for the pooled model: the tasks' difficulty
        order differs between systems, the difficulty distribution is off)
        the data's own scores vary more than the model's curvature implies;
        the ratio carries that into the intervals, per unit, metric and
        horizon. It is never taken below 1: where the model fits, the model's
        information stays.

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
        """Keep :meth:`inflation` at each of `k_arr` from the gradients (C, U, K) at hand."""
        cov, robust = self.covariance_matrix(), self.covariance_matrix(robust=True)
        for n, k in enumerate(k_arr):
            key = ("inflation", metric, int(k))
            if key in self._cache:
                continue
            g = grads[:, :, n]
            # g_i' C g_i for every unit i, as matrix products (BLAS), not a triple loop
            model = np.sum(g * (cov @ g), axis=0)
            sandwich = np.sum(g * (robust @ g), axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(model > 0, sandwich / model, 1.0)
            self._cache[key] = np.maximum(np.nan_to_num(ratio, nan=1.0, posinf=1.0), 1.0)

    # -- delta method ---------------------------------------------------------------
    def delta(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Delta-method intervals on the logit scale, per unit and horizon.

        The covariance is the inverse observed information of the free
        coordinates (coordinates driven to a bound are held there). Where
        the model names points of the likelihood region the linearisation
        cannot see (:meth:`ridge_points`: a flat ridge to a bound), the
        interval is widened to hold the metric at each of them (``se`` stays
        the linearisation's). To that
        parameter variance is added the variance the metric has given the
        parameters (:meth:`metric_spread`; for the pooled model each task's
        own success probability is known only through its posterior, and the
        metric is over these tasks); with :attr:`robust` the parameters'
        part is widened by the sandwich (:meth:`inflation`).

        Returns
        -------
        pandas.DataFrame
            ``system, metric, k, estimate, se, lower, upper``: every unit, or
            the one labelled `system`.
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        # every unit at once: each perturbed point's pieces (the pooled model's task
        # posterior) are shared by all units, and tables ask for every unit in turn
        key = ("delta", metric, tuple(k_arr.tolist()), level, self.robust)
        if key not in self._cache:
            # many medium matrix products: a second BLAS thread mostly waits (500 systems x
            # 1,000 tasks: 30% more CPU for 10% less wall), so one, as in the profile search
            with threadpool_limits(1, user_api="blas"):
                self._cache[key] = self._delta_all(metric, k_arr, level)
        table = self._cache[key]
        if system is None:
            return table.copy()
        # rows are unit-major (labels may be tuples, which pandas will not compare)
        first = self.unit_position(system) * k_arr.size
        return table.iloc[first:first + k_arr.size].reset_index(drop=True)

    def _delta_all(self, metric: str, k_arr: np.ndarray, level: float) -> pd.DataFrame:
        rows = list(range(len(self.units)))
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
        # along a flat ridge the linearisation sees one point of it: the metric's values
        # on the ridge's part of the region are plausible too
        for z in self.ridge_points(level):
            values = self.metric_values(metric, k_arr, z, rows=rows)
            lower, upper = np.fmin(lower, values), np.fmax(upper, values)
        # the spread given the parameters joins each half-width in quadrature, on the
        # probability scale (on the logit scale it is divided by M^2, which for a small
        # Pass^k blows up to an interval of ~1)
        spread = self.metric_spread(metric, k_arr)
        lower, upper = with_metric_spread(base, lower, upper, spread, normal_quantile(level),
                                          self.metric_spread_quantiles(metric, k_arr, level))
        # at a huge horizon M and both ends can round to 1 (or to 0) though the logit
        # interval has width: an end one double away says so instead of a point
        lower, upper = widen_degenerate(lower, upper)
        # the se on the probability scale: d expit = M (1 - M) d logit
        se = np.hypot(base * (1 - base) * se_logit, np.sqrt(spread))
        return self._table(metric, k_arr, rows, base, se, lower, upper)

    def _table(self, metric, k_arr, rows, base, se, lower, upper) -> pd.DataFrame:
        labels = self.units
        frames = [pd.DataFrame({"system": [labels[i]] * k_arr.size, "metric": metric, "k": k_arr,
                                "estimate": base[n], "se": se[n], "lower": lower[n],
                                "upper": upper[n]}) for n, i in enumerate(rows)]
        return pd.concat(frames, ignore_index=True)

    # -- profile likelihood -----------------------------------------------------------
    def profile(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Profile-likelihood intervals, per unit and horizon.

        The model part of each interval is the smallest and largest value of
        the unit's metric over the coordinates whose log-likelihood is within
        ``chi2(1).ppf(level) / 2`` of the maximum (:meth:`model_ends`): every
        other coordinate is profiled out. Unlike the delta method this
        reaches in from a bound. As in :meth:`delta`, the metric's spread
        given the parameters is then added (:func:`with_metric_spread`). With
        :attr:`robust` the region's cut is widened by the sandwich's ratio
        for that unit, metric and horizon (:meth:`inflation`). ``se`` is the
        delta method's.

        Returns
        -------
        pandas.DataFrame
            As :meth:`delta`.
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        rows = (range(len(self.units)) if system is None else [self.unit_position(system)])
        delta = self.delta(metric, k_arr, level)
        parts = []
        for i in rows:
            key = ("profile", metric, tuple(k_arr.tolist()), level, i, self.robust)
            if key not in self._cache:
                with threadpool_limits(1, user_api="blas"):
                    self._cache[key] = self._profile_unit(metric, k_arr, level, i)
            parts.append(self._cache[key])
        first = [i * k_arr.size for i in rows]
        take = np.concatenate([np.arange(f, f + k_arr.size) for f in first])
        table = delta.iloc[take].reset_index(drop=True)
        table["lower"] = np.concatenate([lo for lo, _ in parts])
        table["upper"] = np.concatenate([hi for _, hi in parts])
        return table

    def _profile_unit(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """Unit i's profile ends (with the metric's spread) at every horizon."""
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
        spread = self.metric_spread(metric, k_arr, rows=[i])[0]
        quantiles = self.metric_spread_quantiles(metric, k_arr, level, rows=[i])
        lower, upper = with_metric_spread(
            base, lower, upper, spread, normal_quantile(level),
            None if quantiles is None else (quantiles[0][0], quantiles[1][0]))
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        for arr in (lower, upper):
            arr.flags.writeable = False
        return lower, upper

    def model_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """The smallest and largest value of unit i's metric over the likelihood region
        (widened by the sandwich's :meth:`inflation` with :attr:`robust`), per horizon.

        The model's own profile ends: :meth:`profile` adds the metric's spread
        (:meth:`metric_spread`) to them. `k_arr` is a 1-d integer array, `i`
        the unit's position.

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
            return self.region_ends(metric, k_arr, level, i, 1.0)[:2]
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        # each horizon has its own region; the searches go up in k, each started also
        # from the ends at the horizon below (pulled into its region), as they are
        # within one region: a lone search from the delta direction's edge can stop
        # far inside the region
        warm: dict = {}
        for n in np.argsort(k_arr, kind="stable"):
            scale = float(self.inflation(metric, k_arr[n])[i])
            lo, hi, warm = self.region_ends(metric, k_arr[n:n + 1], level, i, scale, warm)
            lower[n], upper[n] = lo[0], hi[0]
        return lower, upper

    def profile_function(self, func, func_value, points, level: float = 0.95
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Smallest and largest value of any function of the coordinates over the likelihood
        region at `level` (its profile-likelihood interval, every coordinate profiled
        out), at each of `points`.

        ``func(z, t) -> (f, gradient of f in z)`` and ``func_value(z, t) -> f``
        at one point t (a horizon, a quantile level, ...), z the model's
        coordinates (:attr:`params`'s). The search is the model's
        (``region_extremes``), as for the units' metrics; nothing is added for
        the metric's spread, and the region is not widened by the sandwich.

        Examples
        --------
        The profile interval of the first system's ability coordinate:

        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> unit_vector = np.eye(fit.params.size)[0]
        >>> lower, upper = fit.profile_function(lambda z, t: (z[0], unit_vector),
        ...                                     lambda z, t: z[0], [0])
        >>> bool(lower[0] < fit.params[0] < upper[0])
        True
        """
        level = check_level(level)
        lower, upper, _ = self.region_extremes(lambda z, t, pieces: func(z, t), func_value,
                                               np.atleast_1d(points), level)
        return lower, upper

    # -- one unit, and the table of all -------------------------------------------------
    def unit(self, label) -> Unit:
        """The unit labelled `label`, as a one-unit result (see :class:`Unit`)."""
        return self.unit_class(self, self.unit_position(label))

    def method_for(self, i: int, method: str | None) -> str:
        """The interval method unit i gets when `method` is asked (None: the default)."""
        return method if method is not None else self.default_method(i)

    def units_summary(self, k, level: float, method: str | None, rows) -> pd.DataFrame:
        """``system, metric, k, estimate, se, lower, upper`` of the units at positions `rows`,
        each by its :meth:`method_for`; profile ends are widened where needed to obey
        every ordering of the metrics (:func:`repair_across_metrics`)."""
        k_arr, _ = check_k(k)
        level = check_level(level)
        frames = []
        for i in rows:
            label = self.units[i]
            if self.method_for(i, method) == "profile":
                tables = {m: self.profile(m, k_arr, level, system=label) for m in METRICS}
                ends = repair_across_metrics({m: (k_arr, t["estimate"].to_numpy(),
                                                  t["lower"].to_numpy(), t["upper"].to_numpy())
                                              for m, t in tables.items()})
                for m, t in tables.items():
                    t["lower"], t["upper"] = ends[m]
            else:
                tables = {m: self.delta(m, k_arr, level, system=label) for m in METRICS}
            frames += list(tables.values())
        out = pd.concat(frames, ignore_index=True)
        out.attrs["method"] = ", ".join(dict.fromkeys(self.method_for(i, method) for i in rows))
        return out


class Unit:
    """One unit of a :class:`UnitsResult`: its metric, intervals and summary.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> y = np.array([[0, 1, 2, 4, 5], [1, 3, 2, 5, 5]])
    >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5), systems=["a", "b"]),
    ...                          seed=0)
    >>> b = fit.unit("b")
    >>> b.name, b.summary(k=[1, 10], method="delta").shape
    ('b', (6, 6))
    """

    #: The interval methods it has; the first is the default.
    interval_methods = ("profile", "delta")

    def __init__(self, fit: UnitsResult, index: int) -> None:
        self.fit = fit
        self.index = index

    def __eq__(self, other: Any) -> bool:
        return (type(other) is type(self) and other.fit is self.fit
                and other.index == self.index)

    def __hash__(self) -> int:
        return hash((id(self.fit), self.index))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, index={self.index})"

    @property
    def name(self):
        """The unit's label."""
        return self.fit.units[self.index]

    def metric(self, metric: str, k):
        """The metric at horizon(s) `k`: a float at one horizon, else an array."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = self.fit.metric_values(metric, k_arr, rows=[self.index])[0]
        return float(out[0]) if scalar else out

    def interval(self, metric: str, k, level: float = 0.95, *, method: str | None = None
                 ) -> ConfidenceInterval:
        """Interval at horizon(s) `k`: profile likelihood or delta method (default: the
        fit's :meth:`UnitsResult.default_method` for this unit). Scalar `k` gives floats."""
        method = self.fit.method_for(self.index, check_interval_method(method, optional=True))
        find = self.fit.profile if method == "profile" else self.fit.delta
        table = find(metric, k, level, system=self.name)
        lower, upper = table["lower"].to_numpy(), table["upper"].to_numpy()
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(lower[0]), float(upper[0]))
        return ConfidenceInterval(lower, upper)

    def standard_error(self, metric: str, k):
        """Delta-method standard error at horizon(s) `k` (with the metric's spread)."""
        se = self.fit.delta(metric, k, system=self.name)["se"].to_numpy()
        return float(se[0]) if np.ndim(k) == 0 else se

    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str | None = None
                ) -> pd.DataFrame:
        """Metric, k, estimate, se, lower, upper for this unit (see
        :meth:`UnitsResult.units_summary`)."""
        return self.fit.units_summary(k, level, check_interval_method(method, optional=True),
                                      [self.index]).drop(columns="system")


UnitsResult.unit_class = Unit
