"""Marginal maximum likelihood of the Beta mixture, with BIC over H.

For each candidate H the compiled objective of :mod:`passmix.models.mixture.graph` (the
``pymc.find_MAP`` objective with flat priors) is maximised by L-BFGS-B from
`n_init` random starts plus, for H > 1, a start split from the H - 1 optimum;
the best optimum is kept and polished by Newton steps on the coordinates that
are not held by a bound. ``BIC(H) = -2 l + (3H - 1) log J_obs`` picks H, ties
going to the smaller H. The result, :class:`MixtureFit`, gives the metrics at
any horizon with profile-likelihood or delta-method intervals.

The binomial limit
------------------
When the counts are no more spread out than binomial counts with one common
success rate would be, the likelihood keeps rising as a component's
concentration ``alpha + beta`` grows: its maximum is the limit where every
task of that component has the same success rate. The fit stops there at the
box bound of ``log_concentration`` (about 1.2e6), which for horizons up to
~10^5 is the limit itself, and says so (:attr:`MixtureFit.binomial_limit`).
That is a converged fit on a boundary, not a failure. What the data do not
say there is how far the success rates *could* spread: tasks that never
succeeded in m trials may be hopeless or merely hard, and Pass@k at k >> m
depends on which. The profile-likelihood interval shows that range; the
delta-method interval cannot, since it treats the bounded coordinate as known.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..._defaults import INTERVAL_METHODS, MAX_COMPONENTS, MAX_INIT
from ..._validation import (DegenerateDataWarning, FitWarning, check_k,
                            check_level, check_metric, check_seed, check_whole, shown)
from ...data.counts import Counts, as_counts
from ...distributions import BetaMixture
from ...inference.optimize import (BOUND_TOL, maximize, observed_covariance, select_by_bic,
                                   select_by_criterion)
from ...inference.delta import DeltaMethodResult, wald_edge_excess
from ...inference.results import LikelihoodResult, unsupported_message
from ...inference.spread import task_posteriors
from ...metrics import evaluate_logit_value, evaluate_metric
from .bound import mixture_loglik_bound
from .delta import delta_method, metric_logit_gradient
from .find_map import find_map
from .graph import get_objective
from .parameters import (PARAMETER_BOUNDS, bounds, coordinate_names,
                         n_free_parameters, pack, split_coordinates, unpack)
from ...inference.profile import LikelihoodRegion, region_drop
from ._starts import (_Neighbours, _component_moves, _probes, _random_start, _relabelled,
                      _shrunk_rates, _split_start)

__all__ = ["INTERVAL_METHODS", "MAX_COMPONENTS", "MAX_INIT", "OPTIMIZERS", "MixtureFit", "fit",
           "map_point"]

# random starts from which the profile search climbs into the likelihood region
_N_PROBES = 64

#: Optimisers of :func:`fit`; the first is the default.
OPTIMIZERS = ("lbfgsb", "find_MAP")


@dataclass(frozen=True)
class CandidateFit:
    """The best optimum found for one H."""

    n_components: int
    params: np.ndarray
    loglik: float
    converged: bool
    message: str
    n_iter: int
    on_bound: tuple[str, ...]
    n_starts: int
    #: where every start's search ended, ``(params, loglik)`` (see :class:`Optimum`)
    local_optima: tuple = field(default=(), repr=False)


# the one-more-component shape is offered up to BIC's default range of H
_MAX_RICHER = 4


@dataclass(frozen=True, repr=False)
class MixtureFit(LikelihoodResult):
    """A Beta-mixture fit of per-task success counts.

    Components are ordered by their mean. Metrics are available at any
    horizon, with profile-likelihood (default) or delta-method intervals.

    Attributes
    ----------
    weights, alpha, beta : numpy.ndarray
        Mixture weights and Beta shapes, shape ``(H,)``.
    n_components : int
        H, chosen by BIC unless fixed.
    loglik : float
        Maximised marginal log-likelihood (including the binomial coefficients).
    bic : float
        BIC of the chosen H.
    bic_table : pandas.DataFrame
        One row per H considered: loglik, n_params, bic, converged, on_bound,
        ..., and ``fitted``: False for an H not fitted because no mixture's
        log-likelihood (:func:`~passmix.models.mixture.bound.mixture_loglik_bound`)
        could give it a BIC below one already found (its loglik and bic are
        NaN; ``bic_bound`` is the lowest BIC any H could have, NaN where the
        bound was not needed), and ``status`` says it in words: ``"selected"``,
        ``"fitted"``, or ``"skipped: its BIC is at least 164.8"``.
    params : numpy.ndarray
        Optimum in the unconstrained coordinates (:mod:`passmix.models.mixture.graph`).
    covariance : numpy.ndarray
        Inverse observed information in those coordinates (pseudo-inverse if
        singular).
    converged : bool
        Whether the optimum is stationary in every coordinate not held by a
        bound (an optimum on a bound, such as the binomial limit, can be
        converged).
    on_bound : tuple of str
        Coordinates that ended on their box bound (the optimum is then not
        interior and the delta method holds only conditionally on them).
    n_tasks, n_observed : int
        Tasks, and tasks with at least one trial (``J_obs``).
    counts : Counts
        The data fitted.
    """

    weights: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    n_components: int
    loglik: float
    bic: float
    bic_table: pd.DataFrame
    params: np.ndarray
    covariance: np.ndarray
    converged: bool
    on_bound: tuple[str, ...]
    n_tasks: int
    n_observed: int
    counts: Counts
    candidates: dict[int, CandidateFit] = field(default_factory=dict)
    model_kind: ClassVar[str] = "mixture"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- metrics ---------------------------------------------------------------
    def metric(self, metric: str, k):
        """Point estimate of `metric` (``"pass@k"``, ``"pass^k"``, ``"auc@k"``) at `k`."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = evaluate_metric(metric, self.weights, self.alpha, self.beta, k_arr)
        return float(out[0]) if scalar else out

    @property
    def distribution(self) -> BetaMixture:
        """The fitted mixing distribution as a :class:`~passmix.distributions.BetaMixture`
        (CDF, quantiles, draws, W1)."""
        return BetaMixture(self.weights, self.alpha, self.beta)

    # -- boundaries ------------------------------------------------------------
    @property
    def binomial_limit(self) -> tuple[int, ...]:
        """Components (numbered from 1) whose concentration is at the binomial limit.

        In such a component every task has the same success rate, its mean:
        the likelihood rises all the way to that limit, so the data show no
        spread of difficulty among its tasks (see the module docstring).
        """
        _, _, _, log_kappa = split_coordinates(self.params, self.n_components)
        top = PARAMETER_BOUNDS["log_concentration"][1]
        at = log_kappa >= top - BOUND_TOL * (1.0 + abs(top))
        return tuple(int(i) + 1 for i in np.flatnonzero(at))

    @property
    def single_trial(self) -> bool:
        """Whether no task has more than one trial: the data then identify only the mean
        success rate (Pass@1), not how it spreads over the tasks."""
        return int(self.counts.pairs()[1].max()) == 1

    @property
    def unidentified(self) -> tuple[str, ...]:
        """Coordinates the data leave flat: with one trial per task every coordinate but
        the mean's (the concentrations, and at H > 1 the weights and gaps)."""
        if not self.single_trial:
            return ()
        return tuple(name for name in coordinate_names(self.n_components)
                     if name != "logit_mean_first")

    def status(self) -> str:
        """One line on convergence and boundaries, e.g. for a table header.

        Examples
        --------
        >>> import passmix
        >>> passmix.fit(passmix.Counts([0, 1, 0, 2], [10, 10, 10, 10]), seed=0).status()
        'converged; binomial limit: every task has the same success rate, 0.075'
        """
        text = "converged" if self.converged else "NOT converged"
        if self.single_trial:
            text += ("; one trial per task identifies only the mean success rate: metrics at "
                     "k > 1 are shown at concentration 1, and their intervals span every "
                     "spread of success rates the data allow")
        limit = self.binomial_limit
        means = self.alpha / (self.alpha + self.beta)
        if limit and self.n_components == 1:
            text += f"; binomial limit: every task has the same success rate, {means[0]:.3g}"
        elif limit:
            parts = ", ".join(f"{c} (rate {means[c - 1]:.3g})" for c in limit)
            text += f"; binomial limit in component {parts}"
        named = {f"log_concentration[{c - 1}]" for c in limit}
        others = [name for name in self.on_bound if name not in named]
        if others:
            text += f"; on bound: {', '.join(others)}"
        return text

    # -- uncertainty -----------------------------------------------------------
    def _delta(self, metric: str, k_arr: np.ndarray, level: float, scale: str
               ) -> DeltaMethodResult:
        """The linearisation from the analytic gradient (:func:`passmix.delta_method`).

        ``logit M`` is computed from the components' log terms, so the
        interval keeps its width at horizons where M rounds to 1 or
        underflows (k = 1e18 and beyond).
        """
        return delta_method(self.params, self.covariance, self.n_components, metric, k_arr,
                            level=level, scale=scale)

    def _unsupported_horizons(self, metric: str, k_arr: np.ndarray, level: float) -> np.ndarray:
        """Horizons at which the delta interval's linearisation fails (see :meth:`delta`)."""
        h = self.n_components
        _, grad = metric_logit_gradient(self.params, h, metric, k_arr)

        def logit_at(z, i):
            # at the box's corners (a shape of 1e-300, a weight of 0) a log term may be
            # infinite: a NaN excess, which flags nothing
            with np.errstate(all="ignore"):
                return evaluate_logit_value(metric, *unpack(z, h), k_arr[i:i + 1])[0]

        excess = wald_edge_excess(logit_at, self.params, self.covariance, grad, level,
                                  box=bounds(h))
        # beyond one half-width: a parameter value the delta method itself calls
        # plausible gives a metric twice as far out as its interval reaches
        return k_arr[np.any(excess > 1.0, axis=1)]

    # -- the model's hooks of LikelihoodResult ------------------------------------
    def box(self) -> np.ndarray:
        """Box bounds of the coordinates (:func:`passmix.models.mixture.parameters.bounds`)."""
        return bounds(self.n_components)

    def objective(self):
        """The compiled H-component objective (set its data with :meth:`set_objective_data`)."""
        return get_objective(self.n_components)

    def set_objective_data(self, objective) -> None:
        """Point `objective` at the fitted counts."""
        objective.set_data(*self.counts.pairs())

    def metric_functions(self, metric: str) -> tuple:
        """``(logit, value, batch)`` of `metric` in the mixture's coordinates."""
        return _metric_of_coordinates(check_metric(metric), self.n_components)

    def sampling_model(self, prior: str = "weak", n_components: int | None = None):
        """The PyMC model :func:`passmix.sample` draws from, at this H or `n_components`."""
        from .graph import get_sampling_model

        return get_sampling_model(n_components or self.n_components, prior)

    def start(self, n_components: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """The optimum at `n_components` (this fit's, or its candidate's) and its on-bound
        coordinates; raises KeyError when that H was not fitted."""
        if n_components == self.n_components:
            return np.asarray(self.params), tuple(self.on_bound)
        cand = self.candidates[n_components]
        return np.asarray(cand.params), tuple(cand.on_bound)

    def region(self, objective, level: float) -> LikelihoodRegion:
        """The likelihood region at `level`, built once and shared by every metric and k.

        Its searches start from every local optimum the fit's starts found
        and from the estimate's mirror image (components reflected, p -> 1 -
        p): a region can have a piece around each, and for data that are
        nearly their own mirror image the mirror is in the region.
        """
        key = ("region", check_level(level))
        if key not in self._cache:
            h = self.n_components
            chosen = self.candidates.get(h)
            w, a, b = unpack(self.params, h)
            # the estimate relabelled and mirrored first (an anchor where it is in the
            # region, else a probe), then the other local optima, highest first
            anchors = [*_relabelled(self.params, h), pack(w, np.log(b) - np.log(a),
                                                          np.log(a + b))]
            local = chosen.local_optima if chosen is not None else ()
            anchors += [z for z, _ in sorted(local, key=lambda p: -p[1])]
            probes = _probes(self.counts, h, _N_PROBES) if h > 1 else []
            probes += _relabelled(self.params, h)
            self._cache[key] = LikelihoodRegion(
                objective, self.params, self.loglik - region_drop(level), self.covariance,
                bounds(h), anchors, probes,
                neighbours=_Neighbours(h, self.counts) if h > 1 else None,
                logistic=np.ones(n_free_parameters(h), dtype=bool),
                moves=(lambda z, h=h: _component_moves(z, h)) if h > 1 else None,
                # a tenth of the box at most: where the information is nearly singular (a
                # component at a limit) the standard errors in the search coordinates were
                # up to 1e3 times the whole box, and every "are these points apart" test
                # said no, merging local optima, starts and ends (two-component data
                # sets: the same data and their mirror image gave upper ends 0.29, 0.33)
                max_scale=0.1)
            region = self._cache[key]
            if h == 1:
                # two coordinates: the region is one piece around the estimate, curved
                # at most, so the most extreme start polished finds its ends (checked on
                # a grid; on 50 data sets, edge cases among them, the same ends to 2e-7
                # as four starts screened, at a quarter of the cost)
                region.n_starts, region.n_far, region.n_polish = 1, 0, 1
            else:
                # the extremes often sit where a component reaches a limit (the binomial
                # limit, all-or-nothing tasks, a mean of 0), reached from starts that rank
                # low: on 300 two-component data sets twice the starts and two more
                # polished ends took the ends that fell > 0.01 short of the widest found
                # from 29 to 6, and the mirror and seed failures from 4 and 2 to 2 and 1,
                # for 45% more time
                region.n_starts, region.max_starts, region.n_far, region.n_polish = 8, 16, 8, 5
        region = self._cache[key]
        region.objective = objective
        return region

    # -- plots ------------------------------------------------------------------
    def plot(self, k=None, metric: str = "pass@k", *, ax=None, **options):
        """Draw `metric` against the horizon `k` with its interval band.

        :func:`passmix.plots.plot_horizon` (its `options`: ``level``,
        ``interval``, ``reference``, ``observed``, ``label``, ...); `k` by
        default 60 horizons from 1 to 1000. Returns the matplotlib axes.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 3, 5, 1, 2], [5] * 5), seed=0)
        >>> fit.plot(k=[1, 10, 100], interval="delta").get_ylabel()
        'Pass@k'
        """
        from ...plots.fit import plot_horizon  # pyplot only when a plot is drawn

        return plot_horizon(self, metric, k, ax=ax, **options)

    # -- tables ----------------------------------------------------------------
    def components(self) -> pd.DataFrame:
        """One row per component: weight, alpha, beta, mean, concentration."""
        return self.distribution.components()

    def info(self) -> dict[str, Any]:
        """The fit at a glance: estimator, H, log-likelihood, BIC, convergence and status.

        Examples
        --------
        >>> import passmix
        >>> sorted(passmix.fit(passmix.Counts([0, 1, 3], [5, 5, 5]), seed=0).info())
        ['always_solved', 'bic', 'converged', 'estimator', 'loglik', 'n_components', 'never_solved', 'on_bound', 'pass_hat_k_components', 'pass_hat_k_trials_to_tell', 'status', 'trials_to_tell']
        """
        return {"estimator": "mixture", "n_components": self.n_components,
                "loglik": self.loglik, "bic": self.bic, "converged": self.converged,
                "on_bound": self.on_bound, "status": self.status(),
                "never_solved": self.never_solved, "trials_to_tell": self.trials_to_tell(),
                "pass_hat_k_components": self.richer_components(),
                "always_solved": self.always_solved,
                "pass_hat_k_trials_to_tell": self.trials_to_tell(near=1)
                if self.richer_components() else None}

    def trials_to_tell(self, alpha: float = 0.05, *, near: int = 0) -> int | None:
        """Trials on each task at an edge that would put the mixture's tail there to the test.

        ``near=0``: the smallest n of further trials on each task never solved
        after which the Beta mixture gives probability at most `alpha` that
        none of them is solved (tasks independent, each at its posterior). If
        none is, its tail near 0 is ruled out at that level, and the atom at 0
        that the default intervals span beyond the trials stays; each task
        solved is one the atom does not hold. ``near=1``, the mirror: on each
        task solved in every trial, the n after which the mixture gives
        probability at most `alpha` that every further trial succeeds; if they
        all do, its tail near 1 is ruled out, and the richer shape that
        Pass^k's intervals span (:meth:`richer_components`) gains. None where
        no task is at that edge, or beyond 10^7.

        Examples
        --------
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 0, 0, 2, 5, 1, 3], [5] * 7), seed=0)
        >>> n = fit.trials_to_tell()
        >>> n is not None and n > 5
        True
        >>> fit.trials_to_tell(near=1) > 5
        True
        """
        if near not in (0, 1):
            raise ValueError(f"near must be 0 or 1, got {shown(near)}.")
        y, m = self.counts.successes, self.counts.trials
        edge = (y == (0 if near == 0 else m)) & (m > 0)
        if not edge.any():
            return None
        post = task_posteriors(y[edge], m[edge], self.weights, self.alpha, self.beta)

        def reached(horizons):
            # log P(no success in n more), or log P(no failure in n more), over the tasks
            if near == 0:
                solved, _ = post.moments("pass@k", horizons)
                with np.errstate(divide="ignore"):
                    logs = np.log1p(-np.minimum(solved, 1.0))
            else:
                every, _ = post.moments("pass^k", horizons)
                with np.errstate(divide="ignore"):
                    logs = np.log(np.maximum(every, 0.0))
            return logs.sum(axis=0) <= np.log(alpha)

        # a coarse grid brackets it; the integers between the bracket's ends settle it
        grid = np.unique(np.geomspace(1, 1e7, 141).round().astype(int))
        first = np.flatnonzero(reached(grid))
        if first.size == 0:
            return None
        if first[0] == 0:
            return int(grid[0])
        between = np.arange(grid[first[0] - 1] + 1, grid[first[0]] + 1)
        return int(between[np.argmax(reached(between))])

    @property
    def always_solved(self) -> int:
        """Tasks with trials, every one a success: Pass^k far beyond them rests on them."""
        y, m, weight = self.counts.pairs()
        return int(np.sum(weight[(y == m) & (m > 0)]))

    @property
    def never_solved(self) -> int:
        """Tasks with trials and no success in any of them.

        Pass@k far beyond the trials is decided by them: the Beta mixture
        takes each to be solvable at some small rate, never impossible. Where
        some may be impossible (a wrong reference answer, a broken
        environment), compare ``passmix.fit(counts, zero_inflated=True)``,
        which gives them an atom at 0.
        """
        y, m, weight = self.counts.pairs()
        return int(np.sum(weight[(y == 0) & (m > 0)]))

    def richer_components(self) -> int | None:
        """H + 1, the components of the richer shape Pass^k's default interval also spans
        (:meth:`shape_alternatives`), or None where it spans none (H = 4, or m trials do
        not identify H + 1 components: 3H + 2 > m)."""
        richer = self.n_components + 1
        if richer > _MAX_RICHER or n_free_parameters(richer) > self.max_trials():
            return None
        return richer

    @property
    def shape_name(self) -> str:
        """How :meth:`beyond_the_trials` names this shape: the Beta mixture and its H."""
        return f"the Beta mixture (H = {self.n_components})"

    def prior_at(self, z):
        """``(0, weights, alpha, beta)`` at coordinates `z` (the
        :class:`~passmix.inference.LikelihoodResult` hook)."""
        w, a, b = unpack(z, self.n_components)
        return np.zeros(np.shape(z)[:-1]), w, a, b

    def shape_alternatives(self, metric: str | None = None, *, within_trials: bool = False
                           ) -> tuple:
        """Fits of the same data with a shape this one lacks, which the default interval of
        `metric` also spans (all of them when `metric` is None): beyond the trials, or with
        `within_trials`, within them too.

        * **An atom at 0**, where some task was never solved, beyond the
          trials: a task with no success in m trials may be hard or
          impossible (a wrong reference answer, a broken environment), and m
          trials cannot tell which: the two shapes give the same Pass@k
          within the trials and part far beyond them. The zero-inflated
          mixture at this H
          (:func:`~passmix.models.zero_inflated.fit_zero_inflated` with
          ``fitted_only=True``), for every metric.
        * **One more Beta component**, for Pass^k at k >= 2, within the
          trials and beyond: Pass^k is decided by the tail of success rates
          near 1, which the tasks solved every time (or almost) leave open
          and BIC's choice of H fixes. On 0.4 Beta(0.5, 8) + 0.6 Beta(5, 2)
          at m = 10, H = 1 fits covered Pass^100 54% of the time; with 30%
          impossible tasks, Pass^10 at m = 10 86%
          (``docs/results/shape_coverage.md``). Offered where the data
          identify H + 1 components (3H + 2 <= m) and H < 4.

        Each is fitted on first use and kept.

        Examples
        --------
        >>> import passmix
        >>> fit = passmix.fit(passmix.Counts([0, 0, 2, 5, 1, 3], [5] * 6), seed=0)
        >>> [alt.shape_name for alt in fit.shape_alternatives()]
        ['an atom at 0', 'the Beta mixture (H = 2)']
        >>> [alt.shape_name for alt in fit.shape_alternatives("pass@k")]
        ['an atom at 0']
        >>> [alt.shape_name for alt in fit.shape_alternatives("pass^k", within_trials=True)]
        ['the Beta mixture (H = 2)']
        """
        if metric is not None:
            metric = check_metric(metric)
        alternatives = []
        if self.never_solved > 0 and not within_trials:
            if "zero_inflated" not in self._cache:
                from ..zero_inflated.fit import fit_zero_inflated  # compiles on first use

                with warnings.catch_warnings(), threadpool_limits(1, user_api="blas"):
                    warnings.simplefilter("ignore", FitWarning)
                    self._cache["zero_inflated"] = fit_zero_inflated(self, fitted_only=True)
            alternatives.append(self._cache["zero_inflated"])
        richer = self.richer_components()
        if metric in (None, "pass^k") and richer is not None:
            if "richer" not in self._cache:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", (FitWarning, DegenerateDataWarning))
                    self._cache["richer"] = fit(self.counts, n_components=richer, seed=0)
            alternatives.append(self._cache["richer"])
        return tuple(alternatives)

    def _header(self) -> str:
        trials = self.counts.trials[self.counts.trials > 0]
        m = f"{trials.min()}" if trials.min() == trials.max() else f"{trials.min()}-{trials.max()}"
        return (f"MixtureFit(H={self.n_components}, J={self.n_observed}, m={m}, "
                f"loglik={self.loglik:.3f}, BIC={self.bic:.3f}, {self.status()})")

    def __repr__(self) -> str:
        comps = self.components().round(4).to_string()
        return f"{self._header()}\n{comps}"

    def _repr_html_(self) -> str:
        return (f"<p><b>{self._header()}</b></p>" + self.components().to_html(float_format="%.4g")
                + self.bic_table.to_html(float_format="%.4g", index=False,
                                         na_rep="(skipped)"))


def _metric_of_coordinates(metric: str, n_components: int):
    """The metric as functions of the unconstrained coordinates, for the profile search.

    Returns ``logit(z, k) -> (logit M, gradient in z)``, ``value(z, k) -> M``
    and ``batch(Z, k) -> logit M`` at each row of Z.
    """
    # compiled: the search evaluates it some hundreds of times per end, where the numpy
    # path (evaluate_logit through unpack_jacobian) is a hundred calls on tiny arrays
    from ..._logit_kernel import mixture_logit

    h = n_components

    def logit(z, k):
        return mixture_logit(metric, z, h, k)

    def value(z, k):
        return float(evaluate_metric(metric, *unpack(z, h), np.array([k]))[0])

    def batch(zs, k):
        return evaluate_logit_value(metric, *unpack(zs, h), np.array([k]))[..., 0]

    return logit, value, batch


def _warn_degenerate(counts: Counts, y, m, weight) -> None:
    if counts.n_observed == 1:
        warnings.warn("only one task has trials: the spread of task difficulty is not "
                      "identified, so H = 1 and extrapolation rests on the model alone.",
                      DegenerateDataWarning, stacklevel=3)
    if m.max() == 1:
        warnings.warn("at most one trial per task identifies only the mean success rate "
                      "(Pass@1); metrics at k > 1 are not identified by these data.",
                      DegenerateDataWarning, stacklevel=3)
    if np.all(y == 0):
        warnings.warn("no task succeeded on any trial: the fit puts the success rate at "
                      "its lower bound and the metrics are ~0 at every horizon.",
                      DegenerateDataWarning, stacklevel=3)
    elif np.all(y == m):
        warnings.warn("every task succeeded on every trial: the fit puts the success rate "
                      "at its upper bound and the metrics are ~1 at every horizon.",
                      DegenerateDataWarning, stacklevel=3)


def fit(counts, *, max_components: int = 4, n_components: int | None = None,
        n_init: int = 10, seed=None, optimizer: str = "lbfgsb",
        zero_inflated: bool | str = False, skip_hopeless: bool = True):
    """Fit a Beta mixture to per-task success counts by marginal maximum likelihood.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        The data: a :class:`passmix.Counts`, or ``(successes, trials)``.
    max_components : int, default 4
        Largest H tried (at most 10); BIC chooses among H = 1..max_components.
    n_components : int, optional
        Fix H instead of selecting it.
    n_init : int, default 10
        Random initialisations per H (at most 1000; a split of the H - 1
        optimum is added).
    seed : int or numpy.random.Generator, optional
        Seed of the random initialisations. None (the default) means 0, as
        in :func:`passmix.compare` and :func:`passmix.rank`: the same data
        give the same fit in every process. Another int, or a Generator,
        gives other starts.
    optimizer : {"lbfgsb", "find_MAP"}, default "lbfgsb"
        ``"lbfgsb"``: scipy's L-BFGS-B on the compiled objective (compiled
        once per process), each start run to a loose tolerance, the best
        polished and finished by Newton steps. ``"find_MAP"``: PyMC's own
        ``pymc.find_MAP`` on the flat-prior model from every start, within
        the same box; the same optimum, much slower (find_MAP compiles its
        functions on every call), for those who want PyMC's optimiser itself.
    zero_inflated : bool or "auto", default False
        ``True``: fit an atom at success rate 0 (tasks no attempt solves)
        beside the H Beta components, and return a
        :class:`~passmix.models.zero_inflated.ZeroInflatedFit`
        (:mod:`passmix.models.zero_inflated`). ``"auto"``: fit both and
        return the one of lower BIC (a tie, within the relative 1e-6 of
        :func:`~passmix.inference.select_by_criterion`, goes to the plain
        mixture).
    skip_hopeless : bool, default True
        Do not fit an H whose BIC could not beat the best found so far even
        at the largest log-likelihood any mixture can reach on these data
        (:func:`~passmix.models.mixture.bound.mixture_loglik_bound`, less a
        nat of slack): the chosen fit is the same, found sooner (often H = 1
        alone on a few dozen tasks). ``False`` fits every H, for a BIC table
        with every row filled. The zero-inflated model fits every H (its
        starts are the plain mixture's optima).

    Returns
    -------
    MixtureFit or ZeroInflatedFit

    Warns
    -----
    DegenerateDataWarning
        One task, one trial per task, no success or no failure at all.
    FitWarning
        The optimisation did not converge.

    Notes
    -----
    The likelihood depends on the data only through the distinct ``(y, m)``
    pairs, so the cost does not grow with the number of tasks. With ``m``
    trials per task only the first ``m`` moments of the mixing distribution
    are identified (``3H - 1 <= m``); the BIC table marks which H satisfy this,
    and which were not fitted (``skip_hopeless``). BIC ties (within a relative 1e-6) go to the smaller H; with one observed
    task only H = 1 is fitted.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.beta(2.0, 5.0, size=500)
    >>> counts = passmix.Counts(rng.binomial(10, theta), np.full(500, 10))
    >>> res = passmix.fit(counts, seed=0)
    >>> res.n_components
    1
    >>> lo, hi = res.interval("pass@k", 50)
    >>> bool(lo < res.pass_at_k(50) < hi)
    True
    """
    counts = as_counts(counts)
    if n_components is not None:
        n_components = check_whole(n_components, "n_components", 1, MAX_COMPONENTS)
    else:
        max_components = check_whole(max_components, "max_components", 1, MAX_COMPONENTS)
    n_init = check_whole(n_init, "n_init", 1, MAX_INIT)
    seed = 0 if seed is None else check_seed(seed)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of "
                         f"{', '.join(OPTIMIZERS)}.")
    if not (isinstance(zero_inflated, bool)
            or isinstance(zero_inflated, str) and zero_inflated == "auto"):
        raise ValueError(f"zero_inflated must be True, False or 'auto', got {zero_inflated!r}.")
    y, m, weight = counts.pairs()
    if y.size == 0:
        raise ValueError("no task has any trial (every m_j is 0); nothing to fit.")
    if n_components is not None:
        candidates_h = [n_components]
    elif counts.n_observed == 1:
        candidates_h = [1]  # one task: the BIC penalty is 0 and every H fits it equally
    else:
        candidates_h = list(range(1, max_components + 1))
    _warn_degenerate(counts, y, m, weight)

    # tiny problems: BLAS threads only contend with each other (and with other
    # fits running in parallel), so pin them to one for the whole fit
    with threadpool_limits(1, user_api="blas"):
        # the zero-inflated fit starts from the plain mixture's optimum at every H
        skip = bool(skip_hopeless) and zero_inflated is False
        plain = _fit(counts, y, m, weight, candidates_h, n_init, seed, optimizer, skip)
        if zero_inflated is False:
            return plain
        from ..zero_inflated.fit import fit_zero_inflated  # its graph compiles on first use

        inflated = fit_zero_inflated(plain, n_init=n_init, seed=seed)
    if zero_inflated == "auto":
        # the tie rule of every choice among fits: near BIC = 0 (all failures, one task) a
        # strict comparison let a rounding difference of 1e-8 pick the bigger model
        sizes = [n_free_parameters(plain.n_components),
                 n_free_parameters(inflated.n_components) + 1]  # the atom's weight
        if select_by_criterion([-plain.bic, -inflated.bic], sizes) == 0:
            return plain
    return inflated


def _fit(counts, y, m, weight, candidates_h, n_init, seed, optimizer,
         skip_hopeless: bool = False) -> MixtureFit:
    rng = np.random.default_rng(seed)
    rates, cum = _shrunk_rates(y, m, weight.astype(float))
    n_obs = counts.n_observed
    candidates: dict[int, CandidateFit] = {}
    previous = None
    lowest = None  # the lowest BIC each H could have, once one H is fitted
    best_bic = np.inf
    # a fixed H is fitted after its smaller Hs only when those feed its split start
    for h in range(min(candidates_h), max(candidates_h) + 1):
        if skip_hopeless and len(candidates_h) > 1 and candidates:
            if lowest is None:
                # from the best log-likelihood any mixture reaches (a nat of slack for
                # the bound's rounding); the bound's search stops once even the largest
                # H is out of reach of a skip
                log_n = np.log(n_obs)
                reach = (n_free_parameters(max(candidates_h)) * log_n - best_bic) / 2.0 - 1.0
                first = candidates[min(candidates)]
                top = mixture_loglik_bound(y, m, weight, target=reach,
                                           start=unpack(first.params, first.n_components)) + 1.0
                lowest = {c: -2.0 * top + n_free_parameters(c) * log_n for c in candidates_h}
            if lowest[h] > best_bic + 1e-6 * (1 + abs(best_bic)):
                # not even the best mixture could give this H (or any larger: the
                # bound grows with H) a BIC within the tie tolerance of one fitted
                break
        box = bounds(h)
        starts = [_random_start(rng, h, rates, cum, box) for _ in range(n_init)]
        if previous is not None and previous.n_components == h - 1:
            starts.append(_split_start(previous, box))
        if optimizer == "find_MAP":
            best = find_map(h, starts, box, y, m, weight)
        else:
            objective = get_objective(h)
            with objective.lock:
                objective.set_data(y, m, weight)
                best = maximize(objective, starts, box)
        names = coordinate_names(h)
        previous = candidates[h] = CandidateFit(
            n_components=h, params=best.params, loglik=best.loglik, converged=best.converged,
            message=best.message, n_iter=best.n_iter,
            on_bound=tuple(n for n, flag in zip(names, best.on_bound) if flag),
            n_starts=best.n_starts, local_optima=best.local_optima)
        best_bic = min(best_bic, -2.0 * best.loglik + n_free_parameters(h) * np.log(n_obs))

    rows = []
    for h in candidates_h:
        k_par = n_free_parameters(h)
        cand = candidates.get(h)
        row = {"n_components": h, "n_params": k_par, "loglik": np.nan, "bic": np.nan,
               "identifiable": k_par <= int(m.max()), "converged": False, "on_bound": "",
               "n_iter": 0}
        if cand is not None:
            row.update(loglik=cand.loglik, bic=-2.0 * cand.loglik + k_par * np.log(n_obs),
                       converged=cand.converged, on_bound=", ".join(cand.on_bound),
                       n_iter=cand.n_iter)
        rows.append(row)
    table = pd.DataFrame(rows)
    if lowest is not None:
        table["fitted"] = table["n_components"].isin(list(candidates))
        # NaN where the bound was not worked out (no H could have been skipped)
        table["bic_bound"] = table["n_components"].map(lowest).replace(-np.inf, np.nan)
    best_h = select_by_bic(table)
    table["selected"] = table["n_components"] == best_h
    bound = table.get("bic_bound", pd.Series(np.nan, table.index)).map("{:.4g}".format)
    table["status"] = np.where(table["selected"], "selected", np.where(  # never a bare NaN
        np.isfinite(table["bic"]), "fitted", "skipped: its BIC is at least " + bound))
    chosen = candidates[best_h]
    params = np.array(chosen.params, dtype=float)
    if int(m.max()) == 1:
        # one trial per task: the likelihood depends on the mean alone, so the optimiser
        # stopped at whichever concentration its start had (the estimates at k > 1 moved
        # with the seed); a fixed concentration of 1 makes them the same for every seed
        # and mirror-symmetric, and leaves the log-likelihood as it is
        params[-best_h:] = 0.0

    objective = get_objective(best_h)
    with objective.lock:
        objective.set_data(y, m, weight)
        covariance = observed_covariance(objective, params)
    if not chosen.converged:
        warnings.warn(f"the optimisation for H = {best_h} did not converge (the "
                      f"log-likelihood could still rise; L-BFGS-B: {chosen.message})",
                      FitWarning, stacklevel=3)
    weights, alpha, beta = unpack(params, best_h)
    for arr in (weights, alpha, beta, params, covariance):
        arr.flags.writeable = False
    return MixtureFit(
        weights=weights, alpha=alpha, beta=beta, n_components=best_h, loglik=chosen.loglik,
        bic=float(table.loc[table["selected"], "bic"].iloc[0]), bic_table=table,
        params=params, covariance=covariance, converged=chosen.converged,
        on_bound=chosen.on_bound, n_tasks=counts.n_tasks, n_observed=n_obs, counts=counts,
        candidates=candidates,
    )
