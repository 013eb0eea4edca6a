"""The generic result of a likelihood model: intervals and tables written once.

A fitted single-system model (the Beta mixture, the zero-inflated mixture)
is a :class:`LikelihoodResult`: it holds its optimum ``params`` in its own
coordinates, their ``covariance`` (inverse observed information), the
maximised ``loglik`` and the coordinates ``on_bound``, and supplies four
hooks:

* ``box()``: the coordinates' box bounds, shape ``(n, 2)``;
* ``objective()``: the compiled log-likelihood pointed at the fitted data
  (the caller holds ``objective.lock`` while it evaluates);
* ``metric_functions(metric)``: ``(logit, value, batch)``, the metric as
  functions of the coordinates at one horizon: ``logit(z, k) -> (logit M,
  gradient in z)``, ``value(z, k) -> M``, ``batch(Z, k) -> logit M`` at the
  rows of Z;
* ``region(objective, level)``: the :class:`~passmix.inference.profile.LikelihoodRegion`
  at `level`, with the model's anchors, probes and moves (optional: a plain
  region by default);
* ``sampling_model(prior)`` and ``start(n_components)``: for the Bayesian
  path (optional), the PyMC model NUTS samples
  (:class:`~passmix.models.mixture.graph.SamplingModel`) and the optimum at
  another H to start its chains from.

From these the result computes the metric's point estimate, delta-method
and profile-likelihood intervals at any horizon, ``interval(method=...)``,
``standard_error`` and ``summary()``, each kept once computed. A model
whose metric has an analytic, vectorised gradient may override
:meth:`LikelihoodResult.delta` with it (the Beta mixture does).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from .._defaults import INTERVAL_METHODS, METRICS, SUMMARY_K
from .._validation import FitWarning, check_interval_method, check_k, check_level, check_metric
from .delta import ConfidenceInterval, DeltaMethodResult, delta_interval, wald_edge_excess
from .orderings import repair_across_metrics
from .profile import (LikelihoodRegion, ProfileResult, profile_extremes, profile_interval,
                      region_drop)

__all__ = ["LikelihoodResult", "unsupported_message"]


def unsupported_message(unsupported: dict) -> str:
    """The warning for horizons whose delta interval the fit does not support."""
    where = "; ".join(f"{m} at k = {', '.join(f'{int(k):g}' for k in ks)}"
                      for m, ks in unsupported.items())
    return (f"delta-method interval not supported by the data ({where}): at the edge of "
            "the parameters' Wald region the metric lies beyond the interval by more than "
            "its half-width, so the linearisation it rests on fails there (common at huge "
            "horizons with few tasks); use the profile interval (method='profile').")


def blind_message(names) -> str:
    """The warning for a delta interval whose ends are the profile's (see
    :meth:`LikelihoodResult.delta`)."""
    return (f"the delta method cannot see {', '.join(names)} (held on a box bound, or left "
            "unidentified by the data: its curvature there is rounding), so the ends of its "
            "interval are the profile likelihood's; the estimate and standard error are the "
            "linearisation's.")


class LikelihoodResult:
    """Intervals, standard errors and the summary table of any fitted likelihood model.

    A mixin: the subclass (a frozen dataclass) has the attributes ``params``,
    ``covariance``, ``loglik``, ``on_bound`` and a ``_cache`` dict, and the
    hooks named in the module docstring.

    Examples
    --------
    :class:`passmix.MixtureFit` and :class:`passmix.ZeroInflatedFit` are
    such results:

    >>> import numpy as np
    >>> import passmix
    >>> from passmix.inference import LikelihoodResult
    >>> fit = passmix.fit(passmix.Counts([0, 2, 5, 1, 3], [5] * 5), seed=0)
    >>> isinstance(fit, LikelihoodResult)
    True
    >>> table = fit.summary(k=[1, 10], method="delta")
    >>> table.columns.tolist()
    ['metric', 'k', 'estimate', 'se', 'lower', 'upper']
    >>> bool(np.all(table["lower"] <= table["estimate"]))
    True
    """

    params: np.ndarray
    covariance: np.ndarray
    loglik: float
    on_bound: tuple[str, ...]
    _cache: dict
    #: The model's name, as its posterior draws record it (``passmix_model``).
    model_kind: ClassVar[str] = ""

    # -- hooks -------------------------------------------------------------------
    def box(self) -> np.ndarray:  # pragma: no cover - each model supplies it
        """Box bounds of the coordinates, shape ``(n, 2)``."""
        raise NotImplementedError

    def objective(self) -> Any:  # pragma: no cover - each model supplies it
        """The compiled log-likelihood with the fitted data set; hold its ``lock``."""
        raise NotImplementedError

    def metric_functions(self, metric: str) -> tuple:  # pragma: no cover
        """``(logit, value, batch)`` of `metric` as functions of the coordinates."""
        raise NotImplementedError

    def sampling_model(self, prior: str = "weak", n_components: int | None = None
                       ) -> Any:  # pragma: no cover - optional
        """The model :func:`passmix.sample` draws from (a ``SamplingModel``), at this H or
        `n_components`."""
        raise NotImplementedError(f"{type(self).__name__} has no Bayesian path.")

    def start(self, n_components: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """The optimum and its on-bound coordinates at `n_components` (chains start there).

        This fit's own at its H; a model whose fit keeps other H's optima
        overrides it.
        """
        if n_components != getattr(self, "n_components", n_components):
            raise NotImplementedError(f"{type(self).__name__} keeps no fit at H = {n_components}.")
        return np.asarray(self.params), tuple(self.on_bound)

    def region(self, objective, level: float) -> LikelihoodRegion:
        """The likelihood region at `level`, kept for every metric and horizon."""
        key = ("region", check_level(level))
        if key not in self._cache:
            self._cache[key] = LikelihoodRegion(
                objective, self.params, self.loglik - region_drop(level), self.covariance,
                self.box())
        region = self._cache[key]
        region.objective = objective
        return region

    @property
    def unidentified(self) -> tuple[str, ...]:
        """Coordinates the data do not identify at all (the likelihood is flat in them).

        None by default; a model names them where its data say so (the Beta
        mixture's concentrations with one trial per task).
        """
        return ()

    @property
    def delta_blind(self) -> tuple[str, ...]:
        """Coordinates the delta method cannot see: held on a box bound, or unidentified.

        Along them the information is zero or rounding, so a linearisation at
        the optimum says nothing about how far the metric can move; where
        there are any, :meth:`delta` and ``summary(method="delta")`` take
        their interval's ends from the profile likelihood, which searches
        every direction the data leave open.
        """
        return tuple(dict.fromkeys((*self.on_bound, *self.unidentified)))

    def _profile_ends(self, res: DeltaMethodResult) -> DeltaMethodResult:
        """`res` with the profile's ends at its horizons (for a fit with blind coordinates)."""
        prof = self.profile(res.metric, res.k, res.level)
        return replace(res, lower=np.array(prof.lower), upper=np.array(prof.upper))

    # -- metrics and intervals -----------------------------------------------------
    def metric(self, metric: str, k):
        """Point estimate of `metric` (``"pass@k"``, ``"pass^k"``, ``"auc@k"``) at `k`."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        _, value, _ = self.metric_functions(metric)
        out = np.array([value(self.params, kk) for kk in k_arr])
        return float(out[0]) if scalar else out

    def pass_at_k(self, k):
        """Pass@k at horizon(s) `k` (see :func:`passmix.pass_at_k`)."""
        return self.metric("pass@k", k)

    def pass_hat_k(self, k):
        """Pass^k at horizon(s) `k` (see :func:`passmix.pass_hat_k`)."""
        return self.metric("pass^k", k)

    def auc_at_k(self, k):
        """AUC@k at horizon(s) `k` (see :func:`passmix.auc_at_k`)."""
        return self.metric("auc@k", k)

    def _logit_gradients(self, metric: str, k_arr: np.ndarray):
        logit, value, _ = self.metric_functions(metric)
        pairs = [logit(self.params, kk) for kk in k_arr]
        values = np.array([value(self.params, kk) for kk in k_arr])
        return values, np.array([u for u, _ in pairs]), np.array([g for _, g in pairs])

    def delta(self, metric: str, k, level: float = 0.95, *, scale: str = "logit"
              ) -> DeltaMethodResult:
        """Delta-method estimate, standard error, interval and covariance across `k`.

        Formed on the logit scale from the metric's logit and its gradient in
        the coordinates (``scale="identity"``: on M itself). Where the fit
        has coordinates the linearisation cannot see (:attr:`delta_blind`:
        held on a box bound, such as the binomial limit, or unidentified),
        the interval's ends are the profile likelihood's at the same level
        (the estimate, standard error and covariance stay the delta
        method's): treating those coordinates as known gave intervals set by
        rounding, zero-wide on some machines.

        Warns
        -----
        FitWarning
            The ends are the profile's (blind coordinates), or at some horizon
            the linearisation fails (see
            :func:`passmix.inference.wald_edge_excess`): use the profile.
        """
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        res = self._delta(metric, k_arr, level, scale)
        if self.delta_blind:
            warnings.warn(blind_message(self.delta_blind), FitWarning, stacklevel=2)
            return self._profile_ends(res)
        unsupported = self._unsupported_horizons(metric, k_arr, res.level)
        if unsupported.size:
            warnings.warn(unsupported_message({metric: unsupported}), FitWarning,
                          stacklevel=2)
        return res

    def _delta(self, metric: str, k_arr: np.ndarray, level: float, scale: str
               ) -> DeltaMethodResult:
        """The linearisation alone (no warning, no profile ends)."""
        values, u, grad_u = self._logit_gradients(metric, k_arr)
        grad = (values * (1.0 - values))[:, None] * grad_u
        return delta_interval(values, grad, self.covariance, metric, k_arr, level=level,
                              scale=scale, logit=(u, grad_u))

    def _unsupported_horizons(self, metric: str, k_arr: np.ndarray, level: float) -> np.ndarray:
        """Horizons at which the delta interval's linearisation fails (see :meth:`delta`)."""
        _, _, grad = self._logit_gradients(metric, k_arr)
        _, _, batch = self.metric_functions(metric)

        def logit_at(z, i):
            with np.errstate(all="ignore"):
                return float(np.asarray(batch(np.asarray(z)[None, :], k_arr[i]))[0])

        excess = wald_edge_excess(logit_at, self.params, self.covariance, grad, level,
                                  box=self.box())
        return k_arr[np.any(excess > 1.0, axis=1)]

    def profile(self, metric: str, k, level: float = 0.95) -> ProfileResult:
        """Profile-likelihood estimate and interval at horizon(s) `k`.

        The ends are the smallest and largest value of the metric over the
        coordinates whose log-likelihood is within ``chi2(1).ppf(level) / 2``
        of the maximum (see :mod:`passmix.inference.profile`); an end may lie
        on the box's bound.
        """
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        # an interval is a function of the fit, the metric, the horizons and the level
        # alone (nothing carries over between searches), so it is kept
        key = ("profile", metric, k_arr.tobytes(), check_level(level))
        if key not in self._cache:
            objective = self.objective()
            with objective.lock, threadpool_limits(1, user_api="blas"):
                self.set_objective_data(objective)
                logit, value, batch = self.metric_functions(metric)
                res = profile_interval(objective, self.params, self.loglik, self.covariance,
                                       self.box(), logit, value, metric, k_arr, level=level,
                                       region=self.region(objective, level),
                                       metric_logit_batch=batch)
            for arr in (res.k, res.estimate, res.lower, res.upper, res.converged):
                arr.flags.writeable = False
            self._cache[key] = res
        return self._cache[key]

    def profile_function(self, func_logit, func_value, points, level: float = 0.95, *,
                         use_region: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Smallest and largest value of any function of the coordinates over the likelihood
        region at `level` (its profile-likelihood interval), at each of `points`.

        ``func_logit(z, t) -> (logit f, gradient in z)`` and ``func_value(z, t) -> f``
        at one point t (a quantile level, a horizon, ...). ``use_region=True``
        searches from the model's own region (:meth:`region`: its anchors,
        probes and moves), else from a plain one around the optimum. Returns
        ``(lower, upper, converged)`` as
        :func:`passmix.inference.profile.profile_extremes`.
        """
        level = check_level(level)
        objective = self.objective()
        with objective.lock, threadpool_limits(1, user_api="blas"):
            self.set_objective_data(objective)
            return profile_extremes(
                objective, self.params, self.loglik - region_drop(level), self.covariance,
                self.box(), func_logit, func_value, points,
                region=self.region(objective, level) if use_region else None)

    def set_objective_data(self, objective) -> None:  # pragma: no cover - each model
        """Point `objective` at the fitted data (under its lock)."""
        raise NotImplementedError

    def interval(self, metric: str, k, level: float = 0.95, *, method: str = "profile",
                 scale: str = "logit") -> ConfidenceInterval:
        """Confidence interval ``(lower, upper)`` within [0, 1].

        Scalar `k` gives floats; array `k` gives arrays.

        Parameters
        ----------
        metric : {"pass@k", "pass^k", "auc@k"}
            The metric.
        k : int or array_like of int
            Horizon(s).
        level : float, default 0.95
            Confidence level.
        method : {"profile", "delta"}, default "profile"
            Profile likelihood (:meth:`profile`) or the delta method
            (:meth:`delta`, whose `scale` applies).
        scale : {"logit", "identity"}, default "logit"
            Scale of the delta-method interval.

        Examples
        --------
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 2, 5, 1, 3], [5] * 5), seed=0)
        >>> lo, hi = fit.interval("pass@k", 10, method="delta")
        >>> bool(lo < fit.pass_at_k(10) < hi)
        True
        """
        method = check_interval_method(method, INTERVAL_METHODS[0], optional=True)
        res = self.profile(metric, k, level) if method == "profile" else \
            self.delta(metric, k, level, scale=scale)
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(res.lower[0]), float(res.upper[0]))
        return res.interval

    def standard_error(self, metric: str, k):
        """Delta-method standard error of `metric` at `k`."""
        se = self._delta(check_metric(metric), check_k(k)[0], 0.95, "logit").standard_error
        return float(se[0]) if np.ndim(k) == 0 else se

    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str = "profile",
                scale: str = "logit") -> pd.DataFrame:
        """Estimates with intervals for all three metrics.

        Parameters
        ----------
        k : int or array_like of int, default (1, 10, 100, 1000)
            Horizons.
        level : float, default 0.95
            Confidence level.
        method : {"profile", "delta"}, default "profile"
            Interval method (see :meth:`interval`). With ``"profile"`` the
            ends of the three metrics are also made consistent with
            ``Pass^k <= Pass@1 <= AUC@k <= Pass@k`` (widening only).
            ``"delta"`` on a fit with :attr:`delta_blind` coordinates gives
            the profile's ends (see :meth:`delta`), with a warning.
        scale : {"logit", "identity"}, default "logit"
            Scale of the delta-method interval (see :func:`passmix.delta_method`).

        Returns
        -------
        pandas.DataFrame
            Columns metric, k, estimate, se (delta method), lower, upper;
            ``attrs["method"]`` names the interval method.

        Examples
        --------
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 2, 5, 1, 3], [5] * 5), seed=0)
        >>> fit.summary(k=[1, 100]).attrs["method"]
        'profile'
        """
        level = check_level(level)
        method = check_interval_method(method, INTERVAL_METHODS[0], optional=True)
        ks = check_k(k)[0]
        deltas = {m: self._delta(m, ks, level, scale) for m in METRICS}
        blind = self.delta_blind
        if method == "delta" and blind:
            warnings.warn(blind_message(blind), FitWarning, stacklevel=2)
        if method == "profile" or blind:
            ends = {}
            mean = None  # (lower, upper) at k = 1, where every metric is the mean
            at_one = ks == 1
            for m in METRICS:
                search = ~at_one if mean is not None else np.ones(ks.size, dtype=bool)
                lo, hi = np.empty(ks.size), np.empty(ks.size)
                if search.any():
                    res = self.profile(m, ks[search], level)
                    lo[search], hi[search] = res.lower, res.upper
                if mean is not None:
                    lo[at_one], hi[at_one] = mean
                elif at_one.any():
                    mean = (lo[at_one][0], hi[at_one][0])
                ends[m] = (ks, deltas[m].estimate, lo, hi)
            bounds_ = repair_across_metrics(ends)
        else:
            bounds_ = {m: (d.lower, d.upper) for m, d in deltas.items()}
            unsupported = {m: self._unsupported_horizons(m, ks, level) for m in METRICS}
            unsupported = {m: k_bad for m, k_bad in unsupported.items() if k_bad.size}
            if unsupported:
                warnings.warn(unsupported_message(unsupported), FitWarning, stacklevel=2)
        frames = [pd.DataFrame({
            "metric": m, "k": ks, "estimate": deltas[m].estimate, "se": deltas[m].standard_error,
            "lower": bounds_[m][0], "upper": bounds_[m][1],
        }) for m in METRICS]
        table = pd.concat(frames, ignore_index=True)
        table.attrs["method"] = method
        return table
