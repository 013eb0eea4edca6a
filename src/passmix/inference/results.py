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
  another H to start its chains from;
* ``task_posteriors()``: each task's success probability given its counts
  and the fitted prior (:class:`~passmix.inference.spread.TaskPosteriors`),
  or None (optional): the metric over these tasks, where few carry it;
* ``shape_alternatives(metric)``: fits of the same data with a shape this
  model does not have and the data cannot rule out (the Beta mixture's: an
  atom at 0 where some task was never solved; one more component, for
  Pass^k), whose intervals the default joins beyond the trials (optional:
  none).

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
from scipy.special import expit
from threadpoolctl import threadpool_limits

from .._defaults import INTERVAL_METHODS, METRICS, SUMMARY_K
from .._validation import (DegenerateDataWarning, FitWarning, check_interval_method, check_k,
                           check_level, check_metric)
from .delta import (ConfidenceInterval, DeltaMethodResult, delta_interval, normal_quantile,
                    wald_edge_excess)
from .orderings import repair_across_metrics
from .profile import (LikelihoodRegion, ProfileResult, profile_extremes, profile_interval,
                      region_drop)
from .shape_free import shape_free_interval
from .spread import task_posteriors, tasks_metric_logit, tasks_metric_quantiles
from .units import with_metric_spread

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

    def prior_at(self, z):
        """``(zero, weights, alpha, beta)``: the distribution of a task's success probability
        at coordinates `z` (an atom at 0 of weight ``zero`` beside Beta components;
        broadcast over leading axes of `z`), or None: the model has no such map, and its
        intervals are for its own metric alone."""
        return None

    def task_posteriors(self):
        """Each observed task's posterior at the optimum (a
        :class:`~passmix.inference.spread.TaskPosteriors`), or None."""
        prior = self.prior_at(np.asarray(self.params))
        counts = getattr(self, "counts", None)
        if prior is None or counts is None:
            return None
        zero, w, a, b = prior
        seen = counts.trials > 0
        return task_posteriors(counts.successes[seen], counts.trials[seen], w, a, b,
                               float(zero))

    def tasks_metric_functions(self, metric: str) -> tuple:
        """``(logit, value, batch)`` of the metric over these tasks given the coordinates.

        As :meth:`metric_functions`, for the mean over the observed tasks of
        each task's posterior metric
        (:func:`~passmix.inference.spread.tasks_metric_logit`); the gradient
        by central differences (the posterior weights move with every
        coordinate), all at once.
        """
        y, m, multiplicity = self.counts.pairs()

        def batch(zs, k):
            prior = self.prior_at(np.asarray(zs, dtype=float))
            return tasks_metric_logit(metric, *prior, y, m, multiplicity, k)[0]

        def value(z, k):
            prior = self.prior_at(np.asarray(z, dtype=float))
            return float(tasks_metric_logit(metric, *prior, y, m, multiplicity, k)[1])

        def logit(z, k):
            z = np.asarray(z, dtype=float)
            n = z.size
            step = 1e-5 * np.maximum(1.0, np.abs(z))
            u = batch(np.vstack([z, z + np.diag(step), z - np.diag(step)]), k)
            with np.errstate(invalid="ignore"):
                grad = (u[1:n + 1] - u[n + 1:]) / (2.0 * step)
            return float(u[0]), np.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)

        return logit, value, batch

    def shape_alternatives(self, metric: str | None = None, *, within_trials: bool = False
                           ) -> tuple:
        """Fits of the same data whose shape this model lacks and the data cannot rule out,
        and on which `metric` beyond the trials depends (all, when None); with
        `within_trials`, those on which it depends within the trials too; none by default."""
        return ()

    def max_trials(self) -> int:
        """The most trials any task had: beyond them the shape, not the counts, decides."""
        counts = getattr(self, "counts", None)
        return int(np.max(counts.trials)) if counts is not None else 0

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
                         use_region: bool = False, func_logit_batch=None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Smallest and largest value of any function of the coordinates over the likelihood
        region at `level` (its profile-likelihood interval), at each of `points`.

        ``func_logit(z, t) -> (logit f, gradient in z)`` and ``func_value(z, t) -> f``
        at one point t (a quantile level, a horizon, ...). ``use_region=True``
        searches from the model's own region (:meth:`region`: its anchors,
        probes and moves), else from a plain one around the optimum;
        ``func_logit_batch(Z, t)``, optional, the logits at the rows of Z at
        once (to rank the starts). Returns
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
                region=self.region(objective, level) if use_region else None,
                func_logit_batch=func_logit_batch)

    def set_objective_data(self, objective) -> None:  # pragma: no cover - each model
        """Point `objective` at the fitted data (under its lock)."""
        raise NotImplementedError

    def interval(self, metric: str, k, level: float = 0.95, *, method: str = "profile",
                 scale: str = "logit", conditional: bool = False) -> ConfidenceInterval:
        """Confidence interval ``(lower, upper)`` within [0, 1].

        Scalar `k` gives floats; array `k` gives arrays. Within the most
        trials any task had the interval is the model's own. Beyond them it
        holds both the population's metric and the metric over these tasks,
        under every shape the data cannot rule out (for the Beta mixture, an
        atom at 0 where some task was never solved; see
        :meth:`beyond_the_trials`).

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
        conditional : bool, default False
            ``True``: the model's own interval at every horizon, conditional
            on its shape (no atom at 0 for the Beta mixture) and for the
            population of tasks, as :meth:`profile` and :meth:`delta` give it.

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
        lower, upper = np.array(res.lower, dtype=float), np.array(res.upper, dtype=float)
        if not conditional:
            lower, upper = self._beyond_ends(res.metric, np.asarray(res.k), res.level, method,
                                             np.asarray(res.estimate), lower, upper, scale)
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(lower[0]), float(upper[0]))
        return ConfidenceInterval(lower, upper)

    def _beyond_ends(self, metric: str, k_arr: np.ndarray, level: float, method: str,
                     estimate: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                     scale: str = "logit") -> tuple[np.ndarray, np.ndarray]:
        """The model's ends with, beyond the trials, the tasks' spread and the shapes it lacks."""
        parts = self._beyond_parts(metric, k_arr, level, method, estimate, lower, upper, scale)
        return parts["lower"], parts["upper"]

    def _beyond_parts(self, metric: str, k_arr: np.ndarray, level: float, method: str,
                      estimate: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      scale: str = "logit") -> dict:
        """Each part of the default ends (see :meth:`beyond_the_trials`): beyond the trials,
        every shape alternative's, with the tasks' spread; within them, those of the
        alternatives that also hold there (``shape_alternatives(within_trials=True)``),
        from k = 2 (at k = 1 every metric is the mean, which no shape moves)."""
        beyond = k_arr > self.max_trials()
        parts = {"model": (lower, upper), "tasks": (lower, upper), "lower": lower,
                 "upper": upper, "alternatives": []}
        within = ~beyond & (k_arr >= 2)
        # asked only where some k needs them: an alternative may be a fit of its own
        within_alts = self.shape_alternatives(metric, within_trials=True) if within.any() else []
        within &= bool(within_alts)
        if not (beyond.any() or within.any()) or self.prior_at(np.asarray(self.params)) is None:
            return parts
        if beyond.any():
            tasks_lo, tasks_hi = lower.copy(), upper.copy()
            lo, hi = self._tasks_ends(metric, k_arr[beyond], level, method)
            # the printed estimate is the model's own; the ends hold it
            tasks_lo[beyond] = np.minimum(lo, estimate[beyond])
            tasks_hi[beyond] = np.maximum(hi, estimate[beyond])
            parts["tasks"] = (tasks_lo, tasks_hi)
            lower, upper = np.minimum(lower, tasks_lo), np.maximum(upper, tasks_hi)
        # whether the data rule a shape out is the likelihood's to say: its ends are its
        # profile's whatever `method` (a zero-inflated delta interval, linearised where
        # the atom trades against the Beta's tail, reached 0.2 where the profile says 0.45)
        for alt in self.shape_alternatives(metric) if beyond.any() else within_alts:
            where = beyond | (within if any(alt is w for w in within_alts) else False)
            if not where.any():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)  # its own notes: not this fit's
                own = alt.interval(metric, k_arr[where], level, conditional=True)
            alt_lo, alt_hi = lower.copy(), upper.copy()
            alt_lo[where], alt_hi[where] = own.lower, own.upper
            if beyond.any():
                t_lo, t_hi = alt._tasks_ends(metric, k_arr[beyond], level, "profile")
                alt_lo[beyond] = np.minimum(alt_lo[beyond], t_lo)
                alt_hi[beyond] = np.maximum(alt_hi[beyond], t_hi)
            parts["alternatives"].append((alt, alt_lo, alt_hi))
            lower, upper = np.minimum(lower, alt_lo), np.maximum(upper, alt_hi)
        if metric == "pass^k" and parts["alternatives"]:
            # Pass^k <= Pass^1, the mean, under every shape: the mean's own upper end bounds
            # it (a richer shape's mean reached past it by search noise, and Pass^k's upper
            # end then stood above Pass@1's)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)
                mean_hi = self.interval("pass@k", 1, level, method=method, scale=scale,
                                        conditional=True).upper
            upper = np.where(k_arr >= 2, np.maximum(np.minimum(upper, mean_hi), estimate),
                             upper)
        parts["lower"], parts["upper"] = lower, upper
        return parts

    def _tasks_ends(self, metric: str, k_arr: np.ndarray, level: float, method: str
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Ends for the metric over these tasks: the parameters' part (profile or delta) of
        its mean given them, joined with its spread given them."""
        key = ("tasks_ends", metric, k_arr.tobytes(), level, method)
        if key in self._cache:
            return self._cache[key]
        logit, value, batch = self.tasks_metric_functions(metric)
        base = np.array([value(self.params, int(kv)) for kv in k_arr])
        if method == "profile" or self.delta_blind:
            # over the model's own region (its anchors, probes and moves): a plain one is 3x
            # cheaper at H = 2, but with 30% impossible tasks (m = 50) it stopped an upper
            # end of Pass@1000 at 0.84 where the own region reaches 0.98
            lo, hi, _ = self.profile_function(logit, value, k_arr, level, use_region=True,
                                              func_logit_batch=batch)
        else:
            lo, hi = np.empty(k_arr.size), np.empty(k_arr.size)
            z_crit = normal_quantile(level)
            for i, kv in enumerate(k_arr):
                u, grad = logit(self.params, int(kv))
                se = float(np.sqrt(max(grad @ self.covariance @ grad, 0.0)))
                lo[i], hi[i] = expit(u - z_crit * se), expit(u + z_crit * se)
        post = self.task_posteriors()
        _, var = post.moments(metric, k_arr)
        variance = var.sum(axis=0) / post.n_tasks ** 2
        quantiles = tasks_metric_quantiles(post, metric, k_arr, level)
        ends = with_metric_spread(base, lo, hi, variance, normal_quantile(level), quantiles)
        self._cache[key] = ends
        return ends

    def beyond_the_trials(self, k=SUMMARY_K, level: float = 0.95, *, method: str = "profile"
                          ) -> pd.DataFrame:
        """Where each interval's ends come from, and how much of its width the model's shape
        does not hold.

        Within the trials the counts decide every metric and the interval is
        the model's own, but for the alternatives that hold there too
        (``shape_alternatives(metric, within_trials=True)``: for the Beta
        mixture's Pass^k from k = 2, one more component, as the tasks solved
        every time leave the tail near 1 open). Beyond them it rests on what
        the data cannot check,
        so there the default interval (:meth:`interval`, :meth:`summary`)
        spans every shape the data cannot rule out, and holds two targets:
        the metric of the population the tasks were drawn from, and the
        metric over these tasks (what many more trials on this benchmark
        would show). It is the union, over this model's shape and each of
        :meth:`shape_alternatives` (for the Beta mixture, an atom at 0 where
        some task was never solved, and for Pass^k one more component), of

        * the shape's own interval, for the population (``conditional=True``;
          `method`'s for this model, the profile likelihood's for the others:
          whether the data rule a shape out is the likelihood's to say);
        * its interval for these tasks: the profile-likelihood (or
          delta-method) interval of the mean over these tasks of each task's
          posterior metric, joined with that metric's spread given the
          parameters, drawn where few tasks carry it (Pass^k far beyond the
          trials, which one or two tasks solved every time decide).

        Parameters
        ----------
        k : int or array_like of int, default (1, 10, 100, 1000)
            Horizons.
        level : float, default 0.95
            Confidence level.
        method : {"profile", "delta"}, default "profile"
            Interval method.

        Returns
        -------
        pandas.DataFrame
            One row per metric and horizon: the estimate; ``model_lower`` and
            ``model_upper`` (this model's own interval, for the population);
            ``tasks_lower`` and ``tasks_upper`` (this model's, for these
            tasks); ``lower`` and ``upper`` (the default interval);
            ``shapes`` (the shapes whose ends it takes) and ``shape_share``,
            the share of its width that this model's shape alone does not
            give; ``data_lower`` and ``data_upper``, what the counts alone
            allow with no shape at all (:func:`passmix.shape_free_interval`
            at `level`): where the default interval is much narrower, the
            difference is what the shapes it spans assume.

        Examples
        --------
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 0, 2, 5, 1, 3], [5] * 6), seed=0)
        >>> table = fit.beyond_the_trials(k=[1, 1000])
        >>> table.loc[table["k"] == 1, "shape_share"].tolist()
        [0.0, 0.0, 0.0]
        >>> bool((table["lower"] <= table["tasks_lower"]).all())
        True
        >>> # 6 tasks: with no shape, the counts allow Pass@1000 anywhere from 0.11 to 1
        >>> table.loc[table["metric"] == "pass@k", ["data_lower", "data_upper"]].round(2).values[-1]
        array([0.11, 1.  ])
        """
        level = check_level(level)
        method = check_interval_method(method, INTERVAL_METHODS[0], optional=True)
        ks = check_k(k)[0]
        rows = []
        for metric in METRICS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)
                res = self.profile(metric, ks, level) if method == "profile" else \
                    self.delta(metric, ks, level)
            estimate = np.asarray(res.estimate)
            parts = self._beyond_parts(metric, ks, level, method, estimate,
                                       np.array(res.lower, dtype=float),
                                       np.array(res.upper, dtype=float))
            model_lo, model_hi = parts["model"]
            tasks_lo, tasks_hi = parts.get("tasks", parts["model"])
            lower, upper = parts["lower"], parts["upper"]
            own_lo, own_hi = np.minimum(model_lo, tasks_lo), np.maximum(model_hi, tasks_hi)
            with warnings.catch_warnings():
                # too few tasks for the band: the whole range, which the columns show
                warnings.simplefilter("ignore", DegenerateDataWarning)
                data = shape_free_interval(self.counts, ks, metric, level=level)
            for i, kv in enumerate(ks):
                width = upper[i] - lower[i]
                # a shape is named where it reaches past this model's ends by a visible part
                # of the width (1e-3), not by the searches' rounding
                names = [alt.shape_name for alt, lo, hi in parts["alternatives"]
                         if max(own_lo[i] - lo[i], hi[i] - own_hi[i]) > 1e-3 * width]
                rows.append({
                    "metric": metric, "k": int(kv), "estimate": float(estimate[i]),
                    "model_lower": float(model_lo[i]), "model_upper": float(model_hi[i]),
                    "tasks_lower": float(tasks_lo[i]), "tasks_upper": float(tasks_hi[i]),
                    "lower": float(lower[i]), "upper": float(upper[i]),
                    "shapes": ", ".join([self.shape_name] + names),
                    "shape_share": float((max(0.0, own_lo[i] - lower[i])
                                          + max(0.0, upper[i] - own_hi[i])) / width)
                    if width > 0 else 0.0,
                    "data_lower": float(data.lower[i]), "data_upper": float(data.upper[i]),
                })
        table = pd.DataFrame(rows)
        table.attrs["method"] = method
        table.attrs["max_trials"] = self.max_trials()
        return table

    #: How :meth:`beyond_the_trials` names this model's shape.
    shape_name: ClassVar[str] = "the model"

    def standard_error(self, metric: str, k):
        """Delta-method standard error of `metric` at `k`."""
        se = self._delta(check_metric(metric), check_k(k)[0], 0.95, "logit").standard_error
        return float(se[0]) if np.ndim(k) == 0 else se

    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str = "profile",
                scale: str = "logit", conditional: bool = False) -> pd.DataFrame:
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
        conditional : bool, default False
            ``True``: the model's own ends at every horizon (see
            :meth:`interval`); by default, beyond the trials, the ends also
            hold the metric over these tasks and the shapes the data cannot
            rule out (:meth:`beyond_the_trials`).

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
        if not conditional:
            # after the repair, which holds for one model's region, not for a union of shapes
            bounds_ = {m: self._beyond_ends(m, ks, level, method, deltas[m].estimate,
                                            np.array(lo, dtype=float), np.array(hi, dtype=float),
                                            scale)
                       for m, (lo, hi) in bounds_.items()}
        frames = [pd.DataFrame({
            "metric": m, "k": ks, "estimate": deltas[m].estimate, "se": deltas[m].standard_error,
            "lower": bounds_[m][0], "upper": bounds_[m][1],
        }) for m in METRICS]
        table = pd.concat(frames, ignore_index=True)
        table.attrs["method"] = method
        return table
