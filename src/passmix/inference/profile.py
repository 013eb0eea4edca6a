"""Profile-likelihood intervals for Pass@k, Pass^k and AUC@k.

The profile-likelihood interval of a metric ``M`` at level ``1 - a`` is the
set of values ``m`` whose constrained maximum log-likelihood
``max {l(z) : M(z) = m}`` lies within ``chi2(1).ppf(1 - a) / 2`` of the
maximum ``l(z_hat)``. Its ends are the smallest and largest value of ``M``
over the likelihood region ``{z : l(z) >= l(z_hat) - chi2(1).ppf(1 - a) / 2}``,
and that is how they are found here: constrained optimisations (SLSQP) per
metric, horizon and end, through the same log-likelihood the fit maximised,
inside the same box. Each starts from several feasible points spread over the
region (:class:`LikelihoodRegion`: the fit's local optima, rays to the
region's edge along its principal axes, the ends found for other horizons),
because the region of a mixture can be curved or in pieces and one search
from one point finds a local extreme only; the end reported is the most
extreme feasible point seen. The search is generic in the model: it takes the
objective of :mod:`passmix.inference` and the metric as functions of the
coordinates (the Beta mixture's are wired in by
:meth:`passmix.MixtureFit.profile`).

Unlike the delta method the interval

* does not depend on the parameterisation;
* lies in [0, 1] and respects every ordering the metrics obey (Pass^k <=
  Pass@1 <= AUC@k <= Pass@k, monotone in k), because each end is the value of
  the metric at some parameter in the region;
* stays honest where the optimum sits on a boundary of the parameter space,
  such as the binomial limit (concentration -> infinity, every task with the
  same success rate): the region reaches in from the boundary as far as the
  data allow, where the delta method treats the bounded coordinates as known.

The search runs on the logit scale, which the model computes in log space
(for the mixture, :func:`passmix.metrics.evaluate_logit`), so ends far below the float range
(Pass^k at large k) are located as precisely as ends near 1/2. Ends are then
widened, never narrowed, where the optimiser's imprecision would break an
ordering that every point of the region satisfies (the ends are monotone in
k). Ends below the smallest normal double are reported as 0 and an upper end
that underflows as that double, so no interval has zero width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from .._validation import check_k, check_level, check_metric
from .._cache import BoundedMemo
from .delta import IntervalEnds
from .optimize import at_bound
from .orderings import repair_across_metrics
from ._search import (_Inside, _OUTSIDE, _SCREEN, _SEEN, _SLSQP, _SearchCoordinates,
                      _boundary_point, _frozen, extreme_on_region, region_drop)

__all__ = ["LikelihoodRegion", "ProfileResult", "extreme_on_region", "profile_extremes",
           "profile_interval", "repair_across_metrics"]



@dataclass(frozen=True)
class ProfileResult(IntervalEnds):
    """A metric at one or more horizons with its profile-likelihood interval.

    Attributes
    ----------
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : numpy.ndarray
        Horizons.
    estimate, lower, upper : numpy.ndarray
        Maximum-likelihood estimate and interval ends, one per horizon.
    level : float
        Confidence level.
    converged : numpy.ndarray
        Shape ``(K, 2)``: whether the search for the lower and the upper end
        ended at a feasible point that the optimiser reported as optimal.
    """

    metric: str
    k: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    converged: np.ndarray

    def summary(self) -> pd.DataFrame:
        """One row per horizon: metric, k, estimate, lower, upper."""
        return pd.DataFrame({"metric": self.metric, "k": self.k, "estimate": self.estimate,
                             "lower": self.lower, "upper": self.upper})


class LikelihoodRegion:
    """A fit's likelihood region ``{z : logp(z) >= threshold}`` and the search for
    a function's extremes over it; generic in the model.

    The region can be curved, can have several local extremes of a function
    on its edge, and can fall apart into pieces around separate local optima
    of the likelihood (with few tasks, a mixture's region is all of these).
    One constrained search from one start finds a local extreme only, so each
    search starts from feasible points spread over the region:

    * **anchors**: the estimate and the points the caller knows to be in the
      region (the fit's other local optima, the estimate relabelled or
      mirrored), so that each piece the fit found is searched;
    * **spread**: from each anchor, the region's edge along both signs of
      every principal axis of the covariance, of every coordinate (for many
      coordinates, of those held on a bound, about which the covariance says
      nothing) and of the model's own `moves`;
    * **probes**: where ascents of the likelihood from points all over the box
      (the model's random starts) first enter the region;
    * **ends** found at the other horizons of the same call, and where the
      function's delta-method direction leaves the region.

    Every candidate is feasible, so ranking them by the function bounds the
    extreme already. The value at a start says little about how far its
    piece of the region reaches, so the best candidate of each anchor (and of
    the probes and the ends) is searched, and the best others up to
    :attr:`n_starts`: each for a few SLSQP iterations first, then the
    :attr:`n_polish` most extreme to full precision, SLSQP restarted from its
    own end while that gains (a restart drops a quasi-Newton curvature that
    stalls along a long curved edge). An end at a degenerate point of the
    coordinates continues from its `neighbours`. The end reported is the most
    extreme feasible point evaluated: a search can only move an end outwards,
    never inwards.

    The region is built once per fit and level and serves every metric and
    horizon; its spread is computed on first use from the fit alone, so an
    interval does not depend on what was asked before. Hold the objective's
    data fixed (its lock) while the region is used.

    Parameters
    ----------
    objective
        ``logp_dlogp(z)`` on the fitted data (see :mod:`passmix.inference`).
    params : array_like
        The maximum-likelihood estimate.
    threshold : float
        The region's log-likelihood cut-off.
    covariance : array_like
        Inverse observed information at `params` (where the rays point).
    box : array_like
        Box bounds of the coordinates, shape ``(n, 2)``.
    anchors : sequence of array_like, optional
        Other points believed to be in the region, most important first (at
        most :attr:`max_anchors` are kept); those that are not in it are
        dropped.
    probes : sequence of array_like, optional
        Points anywhere in the box (e.g. the model's random starts, drawn
        with a fixed seed so that the interval does not depend on the fit's):
        the likelihood is climbed from each until it enters the region, and
        that point is a candidate start. Where the data say little the region
        is large and curved, and these reach parts of it that no ray from an
        optimum does.
    logistic : array_like of bool, optional
        Coordinates searched as ``expit(z)`` wherever the estimate is (by
        default only those it holds on a bound are; see
        :class:`_SearchCoordinates`). In a mixture every coordinate has
        plateaus toward its bounds that a search can run into on its way
        (an emptying component, merging means, the binomial limit), not
        only at the estimate.
    held_logistic : bool, default True
        Whether coordinates the estimate holds on a bound are searched as
        ``expit(z)``. A model whose metric keeps a slope along such a
        coordinate (its logit moves with it, as a relative ability does) is
        better searched in z itself: there the region's edge can lie tens of
        units from the bound, which expit squeezes against 1.
    max_scale : float, optional
        Cap each coordinate's distance scale (its standard error in the
        search coordinates, by which the search tells points apart) at this
        fraction of its box. Where the information is nearly singular the
        standard errors can exceed the whole box, and then no two points are
        apart: distinct optima, starts and ends are merged.
    moves : callable, optional
        ``moves(z)`` -> curves ``t -> z(t)`` through `z` (at t = 0) along which
        one part of the model moves alone (for a mixture, one component's mean
        or weight with the others fixed: in ordered coordinates that moves
        several coordinates, and past another mean it relabels them). From
        every anchor each curve is followed both ways to the region's edge.
    neighbours : callable, optional
        ``neighbours(z)`` -> points that describe (nearly) the same model as
        `z` by other coordinates, where `z` is degenerate: for a mixture, two
        components with one mean relabelled, or an empty component placed
        elsewhere. An end found at such a point is a local extreme of the
        coordinates, not of the model, so the search continues from them.

    Examples
    --------
    The region of a standard normal log-likelihood in two coordinates at
    ``-1/2`` is the unit disc; the extremes of ``z0 + z1`` over it are
    ``+-sqrt(2)``:

    >>> import numpy as np
    >>> from passmix.inference.profile import LikelihoodRegion
    >>> class Normal:
    ...     def logp_dlogp(self, z):
    ...         return -0.5 * float(z @ z), -z
    >>> region = LikelihoodRegion(Normal(), np.zeros(2), -0.5, np.eye(2),
    ...                           np.array([[-5.0, 5.0], [-5.0, 5.0]]))
    >>> total = lambda z, t: (float(z.sum()), np.ones(2))
    >>> lower, upper, _ = region.extremes(total, lambda z, t: float(z.sum()), [0])
    >>> round(float(lower[0]), 4), round(float(upper[0]), 4)
    (-1.4142, 1.4142)
    """

    #: SLSQP runs per end: from the best of each piece of the region (anchors, probes,
    #: earlier ends) and the n_starts best overall, at most max_starts; then from the
    #: n_far candidates farthest from those
    n_starts, max_starts, n_far = 4, 8, 4
    #: screened ends polished to full precision, the most extreme distinct ones
    n_polish = 3
    #: at most this many anchors, the ones of highest likelihood first
    max_anchors = 6
    #: at most this many principal axes per anchor (models with many coordinates)
    max_axes = 16
    #: rounds of continuing from an end's neighbours, and searches per round
    max_hops, hop_starts = 3, 3
    #: SLSQP runs from the end of the last, while each gains more than restart_gain
    #: (relative to ``1 + |logit|``)
    max_restarts, restart_gain = 4, 1e-8
    #: whether the searches also start from the spread (off for a likelihood with one
    #: optimum and a near-elliptical region, where the delta direction's edge and the
    #: neighbouring horizon's end are starts enough)
    use_spread = True
    #: starts on the region's edge along the coordinates the value's gradient moves most,
    #: each alone (:meth:`_axis_edges`)
    n_axis_edges = 2
    #: SLSQP's options for the polished ends (a looser ftol suits a smooth region)
    polish_options = _SLSQP
    #: relative tolerance of the delta direction's edge (only a start: SLSQP polishes it)
    ray_tol = 1e-6
    #: whether SLSQP runs on the coordinates over their standard errors (fewer iterations
    #: where the covariance describes the region; see :func:`extreme_on_region`)
    scaled = False
    #: a lower end whose logit is found below this is not searched further and is
    #: reported as 0 (None: every end is searched to the end). Far below any value that
    #: matters, a curved edge can take a search its whole iteration budget
    floor: float | None = None

    def __init__(self, objective, params, threshold: float, covariance, box, anchors=(),
                 probes=(), neighbours: Callable | None = None, logistic=None,
                 moves: Callable | None = None, held_logistic: bool = True,
                 max_scale: float | None = None):
        self.objective = objective
        self.threshold = float(threshold)
        z_hat = np.asarray(params, dtype=float)
        box = np.asarray(box, dtype=float)
        held = at_bound(z_hat, box).any(axis=1)
        self.held = held
        logistic = np.zeros(held.shape, bool) if logistic is None else np.asarray(logistic, bool)
        self.search = _SearchCoordinates(box, (held if held_logistic else False) | logistic)
        self.box = self.search.box
        self.x_hat = self.search.from_z(z_hat)
        # the delta method's covariance, in the search coordinates; it says nothing
        # about a coordinate held on its bound, which gets a unit variance instead
        jac = self.search.dz_dx(self.x_hat)
        cov_x = np.asarray(covariance, dtype=float) / np.outer(jac, jac)
        cov_x[held, :] = 0.0
        cov_x[:, held] = 0.0
        cov_x[held, held] = 1.0
        self.cov_x = np.where(np.isfinite(cov_x), cov_x, 0.0)
        self._scale = np.sqrt(np.maximum(np.diag(self.cov_x), 1e-12))
        if max_scale is not None:
            self._scale = np.minimum(self._scale, max_scale * (self.box[:, 1] - self.box[:, 0]))
        self._given = [np.asarray(a, dtype=float) for a in anchors]
        self._probes = [np.asarray(p, dtype=float) for p in probes]
        self._neighbours = neighbours
        self._moves = moves
        self._spread: list[np.ndarray] | None = None
        self._axis_edge: dict[tuple[int, float], np.ndarray | None] = {}
        #: extremes found so far, most recent last (starts for later searches)
        self.ends: list[np.ndarray] = []
        # the searches revisit points (a start, SLSQP's end, a restart): each point's
        # log-likelihood is computed once per extremes() call
        self._logp_seen = BoundedMemo(_SEEN)
        #: the last point's ends of the last :meth:`extremes` call, ``{1.0: lower, -1.0: upper}``
        self.end_points: dict[float, np.ndarray] = {}

    def logp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient in the search coordinates."""
        key = x.tobytes()
        if key not in self._logp_seen:
            value, grad = self.objective.logp_dlogp(self.search.to_z(x))
            grad = self.search.gradient_in_x(grad, x)
            self._logp_seen[key] = _frozen(value, grad)
        return self._logp_seen[key]

    def _distinct(self, x: np.ndarray, others, apart: float = 1e-3) -> bool:
        """Whether `x` is more than `apart` standard errors from each of `others`
        in some coordinate."""
        return all(np.max(np.abs(x - o) / self._scale) > apart for o in others)

    def anchors(self) -> list[np.ndarray]:
        """The estimate, then the given points that are in the region (distinct ones, in
        the order given)."""
        out = [self.x_hat]
        inside = []
        for z in self._given:
            if z.shape != self.x_hat.shape or not np.all(np.isfinite(z)):
                continue
            z = np.clip(z, self.search.to_z(self.box[:, 0]), self.search.to_z(self.box[:, 1]))
            x = self.search.from_z(z)
            value = self.logp(x)[0]
            if np.isfinite(value) and value >= self.threshold:
                inside.append((value, x))
        for _, x in inside:
            if len(out) >= self.max_anchors:
                break
            # within half a standard error of an anchor is the same piece of the region
            if self._distinct(x, out, apart=0.5):
                out.append(x)
        return out

    def _into_region(self, z0: np.ndarray) -> np.ndarray | None:
        """The first point in the region on an ascent of the likelihood from `z0`, or None."""
        z0 = np.clip(np.asarray(z0, dtype=float), self.search.to_z(self.box[:, 0]),
                     self.search.to_z(self.box[:, 1]))
        found: list[np.ndarray] = []

        def negative(x):
            value, grad = self.logp(x)
            if value >= self.threshold:
                found.append(x.copy())
                raise _Inside
            return -value, -grad

        try:
            minimize(negative, self.search.from_z(z0), jac=True, method="L-BFGS-B",
                     bounds=self.box, options={"maxiter": 100})
        except _Inside:
            return found[0]
        return None

    def _edge_on_curve(self, curve: Callable, sign: float, t_max: float = 40.0,
                       steps: int = 40) -> np.ndarray | None:
        """The last point in the region along ``curve(sign * t)``, t from 0 to
        `t_max` (a grid to the first exit, then bisection), or None."""
        lo_z, hi_z = self.search.to_z(self.box[:, 0]), self.search.to_z(self.box[:, 1])

        def at(t):
            x = self.search.from_z(np.clip(curve(sign * t), lo_z, hi_z))
            value = self.logp(x)[0]
            return x, np.isfinite(value) and value >= self.threshold

        inside, t_in = None, 0.0
        for t in t_max * (np.arange(1, steps + 1) / steps) ** 2:
            x, ok = at(t)
            if not ok:
                break
            inside, t_in = x, t
        else:
            return inside
        t_out = t
        for _ in range(30):
            mid = 0.5 * (t_in + t_out)
            x, ok = at(mid)
            if ok:
                inside, t_in = x, mid
            else:
                t_out = mid
            if t_out - t_in < 1e-4 * (1.0 + t_in):
                break
        return inside

    def spread(self) -> tuple[list[np.ndarray], list[int]]:
        """Feasible points over the region, and which anchor each came from.

        On the region's edge along principal axes from every anchor (group
        = the anchor's position, 0 the estimate), and where ascents from the
        probes enter it (group -1).
        """
        if self._spread is None:
            values, vectors = np.linalg.eigh(self.cov_x)
            order = np.argsort(values)[::-1][:self.max_axes]
            axes = [vectors[:, i] * np.sqrt(values[i]) for i in order if values[i] > 0]
            # and every coordinate's own direction: along a flat ridge of the likelihood
            # the covariance's axes mix the ridge into every direction
            if self.x_hat.size <= self.max_axes:
                axes += [np.eye(self.x_hat.size)[i] * self._scale[i]
                         for i in range(self.x_hat.size)]
            else:
                axes += [np.eye(self.x_hat.size)[i] for i in np.flatnonzero(self.held)]
            points, groups = [], []
            for n, anchor in enumerate(self.anchors()):
                points.append(anchor)
                groups.append(n)
                for curve in (self._moves(self.search.to_z(anchor)) if self._moves else ()):
                    for sign in (1.0, -1.0):
                        x = self._edge_on_curve(curve, sign)
                        if x is not None:
                            points.append(x)
                            groups.append(n)
                for axis in axes:
                    for sign in (1.0, -1.0):
                        x = _boundary_point(self.logp, anchor, sign * axis, self.threshold,
                                            self.box, rel_tol=1e-4)
                        if x is not None:
                            points.append(x)
                            groups.append(n)
            for z0 in self._probes:
                x = self._into_region(z0)
                if x is not None and self._distinct(x, points):
                    points.append(x)
                    groups.append(-1)
            self._spread = (points, groups)
        return self._spread

    def extreme(self, value: Callable, sign: float, warm=(), batch: Callable | None = None
                ) -> tuple[np.ndarray, bool]:
        """The feasible point of smallest ``sign * value(x)[0]`` found, and whether
        SLSQP reported it optimal.

        `value` maps search coordinates to ``(value, gradient)``; `batch`, if
        given, maps an ``(N, n)`` array of them to the N values at once (it
        only ranks the candidates); `warm` are extra feasible starts (e.g.
        the end at the neighbouring horizon).
        """
        u_hat, g_hat = value(self.x_hat)
        ray = _boundary_point(self.logp, self.x_hat, -sign * (self.cov_x @ g_hat),
                              self.threshold, self.box, rel_tol=self.ray_tol)
        # and along the value's own gradient: at an estimate on a bound (a system that
        # solved nothing) the covariance is ~0 along the held coordinate, so the ray above
        # barely moves the coordinate the value rides on while the region reaches far
        # along it, over a likelihood so flat that a search from near the estimate stalls
        # (projected on the box: a coordinate held on a bound it points past stays there)
        d = -sign * np.asarray(g_hat, dtype=float)
        d = np.where(((d > 0) & (self.x_hat >= self.box[:, 1])) |
                     ((d < 0) & (self.x_hat <= self.box[:, 0])), 0.0, d)
        steep = _boundary_point(self.logp, self.x_hat, d, self.threshold, self.box,
                                rel_tol=self.ray_tol)
        first = [x for x in (*warm, ray, steep) if x is not None] + self._axis_edges(d)
        first += self.ends[::-1]
        spread, spread_groups = self.spread() if self.use_spread else ([], [])
        candidates = first + spread
        groups = np.array([-2] * len(first) + spread_groups)
        if batch is not None:
            scores = sign * np.asarray(batch(np.array(candidates)), dtype=float)
        else:
            scores = np.array([sign * value(x)[0] for x in candidates])
        scores = np.where(np.isfinite(scores), scores, np.inf)
        order = np.argsort(scores, kind="stable")
        # the best start of each piece of the region first (the value at a start
        # says little about how far its piece reaches), then the best overall
        firsts = [i for n, i in enumerate(order) if groups[i] not in groups[order[:n]]]
        chosen: list[int] = []
        for i in [*firsts, *order[:self.n_starts]]:
            if len(chosen) >= self.max_starts or not np.isfinite(scores[i]):
                continue
            if self._distinct(candidates[i], [candidates[c] for c in chosen], apart=0.5):
                chosen.append(i)
        # then the candidates farthest from every start so far (whitened): the value at
        # a start says little about how far a search from it goes, its place does
        finite = np.flatnonzero(np.isfinite(scores))
        if chosen and finite.size:
            spread_x = np.array([candidates[i] for i in finite]) / self._scale
            gap = np.min(np.linalg.norm(spread_x[:, None, :] - (np.array(
                [candidates[c] for c in chosen]) / self._scale)[None], axis=2), axis=1)
            target = len(chosen) + self.n_far
            while len(chosen) < target and gap.max() > 0.5:
                pick = int(np.argmax(gap))
                chosen.append(int(finite[pick]))
                gap = np.minimum(gap, np.linalg.norm(spread_x - spread_x[pick], axis=1))
        chosen.sort(key=lambda i: scores[i])
        starts = [candidates[i] for i in chosen]
        best, best_u, ok = self.x_hat, sign * u_hat, False
        if chosen and scores[chosen[0]] < best_u:
            best, best_u = starts[0], scores[chosen[0]]
        enough = self.floor if sign > 0 else None
        if enough is not None and best_u < enough:
            self.ends.append(best)
            return best, True
        # every start to a loose tolerance, then the most extreme ends polished (a
        # short run ranks the starts only roughly)
        screened = []
        for start in starts if len(starts) > 1 else ():
            x, _ = extreme_on_region(self.logp, value, start, self.threshold, self.box, sign,
                                     _SCREEN, scale=self._scale if self.scaled else None,
                                     enough=enough)
            if x is not None:
                screened.append((sign * value(x)[0], x))
        screened.sort(key=lambda p: p[0])
        # the most extreme screened ends that are apart (two short runs that stopped
        # close together are on their way to one end)
        polish: list[np.ndarray] = []
        for _, x in screened:
            if len(polish) < self.n_polish and self._distinct(x, polish, apart=0.5):
                polish.append(x)
        polish = polish or [best]
        if screened and screened[0][0] < best_u:
            best, best_u = screened[0][1], screened[0][0]
        for x in polish:
            if enough is None or best_u >= enough:
                best, best_u, ok = self._descend(value, sign, best, best_u, ok, start=x)
        if enough is None or best_u >= enough:
            best, best_u, ok = self._hop(value, sign, best, best_u, ok)
        self.ends.append(best)
        if len(self.ends) > 64:
            del self.ends[0]
        return best, ok

    def _axis_edges(self, direction: np.ndarray) -> list[np.ndarray]:
        """The region's edge along each of the :attr:`n_axis_edges` coordinates that
        `direction` moves most, each alone (kept per coordinate and sign).

        Where the likelihood is nearly flat along a coordinate (the ability of
        a system that never succeeded, a concentration held at the binomial
        limit) the covariance says little about it, and a search that starts
        along the value's gradient, where the other coordinates weigh in, can
        stall far inside the region. Along the coordinate alone the region
        reaches its far side: one line search per coordinate and sign, for
        every horizon and metric.
        """
        room = np.where(direction > 0, self.box[:, 1] - self.x_hat,
                        self.x_hat - self.box[:, 0]) > 1e-12
        moving = np.where(room & np.isfinite(direction), np.abs(direction), 0.0)
        out = []
        for j in np.argsort(-moving, kind="stable")[:self.n_axis_edges]:
            if moving[j] <= 0.0:
                break
            key = (int(j), float(np.sign(direction[j])))
            if key not in self._axis_edge:
                axis = np.zeros(self.x_hat.size)
                axis[j] = key[1]
                self._axis_edge[key] = _boundary_point(self.logp, self.x_hat, axis,
                                                       self.threshold, self.box,
                                                       rel_tol=self.ray_tol)
            if self._axis_edge[key] is not None:
                out.append(self._axis_edge[key])
        return out

    def _descend(self, value, sign, best, best_u, ok, start=None):
        """SLSQP from `start` (default `best`) to full precision, restarted from its end
        while that still gains: a restart drops SLSQP's quasi-Newton curvature,
        which along a long curved edge of the region stalls it far from the end."""
        x = best if start is None else start
        for _ in range(self.max_restarts):
            last: list[np.ndarray] = []
            enough = self.floor if sign > 0 else None
            found, success = extreme_on_region(self.logp, value, x, self.threshold, self.box,
                                               sign, self.polish_options, last=last,
                                               scale=self._scale if self.scaled else None,
                                               enough=enough)
            if (self.scaled and not success and last
                    and not self.logp(last[-1])[0] >= self.threshold - 2.0 * _OUTSIDE):
                # scaled, a coordinate the region barely bounds (a large standard
                # error) takes long steps that can leave the region for good: a search
                # that ended far outside is made again in the plain coordinates, and
                # the better end kept
                plain, plain_ok = extreme_on_region(self.logp, value, x, self.threshold,
                                                    self.box, sign, self.polish_options,
                                                    last=last, enough=enough)
                if plain is not None and (found is None or
                                          sign * value(plain)[0] < sign * value(found)[0]):
                    found, success = plain, plain_ok
            gain = -np.inf
            if found is not None:
                u = sign * value(found)[0]
                gain = best_u - u
                if gain > 0 or (gain == 0 and success and not ok):
                    best, best_u, ok = found, u, success
            # SLSQP may cross outside the region on its way and stop there: go on
            # from where it stopped while that is not far outside
            out = [p for p in last if self.logp(p)[0] >= self.threshold - 2.0 * _OUTSIDE]
            if enough is not None and best_u < enough:
                break
            if gain > self.restart_gain * (1.0 + abs(best_u)):
                x = best
            elif out and self._distinct(out[-1], [x]) and self.logp(out[-1])[0] < self.threshold:
                x = out[-1]
            else:
                break
        return best, best_u, ok

    def _hop(self, value, sign, best, best_u, ok):
        """Continue from the neighbours of an end at a degenerate point while that helps."""
        if self._neighbours is None:
            return best, best_u, ok
        lo_z, hi_z = self.search.to_z(self.box[:, 0]), self.search.to_z(self.box[:, 1])
        for _ in range(self.max_hops):
            near = [self.search.from_z(np.clip(z, lo_z, hi_z))
                    for z in self._neighbours(self.search.to_z(best))]
            near = [x for x in near if np.all(np.isfinite(x)) and self._distinct(x, [best])]
            if not near:
                break
            # the neighbours describe nearly the same model, so nearly the same value:
            # the ones with the most likelihood to spare have the most room to move
            slack = np.array([self.logp(x)[0] for x in near])
            slack = np.where(np.isfinite(slack), slack, -np.inf)
            before = best_u
            for i in np.argsort(-slack, kind="stable")[:self.hop_starts]:
                best, best_u, ok = self._descend(value, sign, best, best_u, ok, start=near[i])
            if best_u >= before - 1e-9 * (1.0 + abs(before)):
                break
        return best, best_u, ok

    def inside(self, x: np.ndarray) -> np.ndarray | None:
        """`x` (search coordinates) if it is in the region, else the point where the
        segment from the estimate to `x` leaves the region (None if none is found)."""
        x = np.clip(np.asarray(x, dtype=float), self.box[:, 0], self.box[:, 1])
        value = self.logp(x)[0]
        if np.isfinite(value) and value >= self.threshold:
            return x
        step = x - self.x_hat
        return _boundary_point(self.logp, self.x_hat, step, self.threshold, self.box,
                               rel_tol=self.ray_tol, reach=float(np.linalg.norm(step)))

    def extremes(self, func_logit: Callable, func_value: Callable, points,
                 func_logit_batch: Callable | None = None, warm: dict | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Smallest and largest value of a function over the region, at each point t.

        ``func_logit(z, t)`` gives the function's logit and its gradient in z
        at one point t (a horizon, a quantile level, ...), ``func_value(z, t)``
        its value; ``func_logit_batch(Z, t)``, optional, the logits at the
        rows of Z at once (to rank the starts). Points are searched in
        increasing order, each warm-started from its neighbour's ends; `warm`,
        optional, gives the first point's extra starts, ``{1.0: x_lower,
        -1.0: x_upper}`` in search coordinates (e.g. the ends of a
        neighbouring horizon found over another region: a start outside this
        region is pulled in towards the estimate). Returns ``(lower, upper,
        converged)``, the last of shape ``(n, 2)``; the last point's end
        points are left in :attr:`end_points`, in the form of `warm`.
        """
        points = np.asarray(points)
        # ends are starts within one call only, so that an interval does not depend
        # on what was asked before (the spread is a function of the fit alone)
        self.ends = []
        self._logp_seen.clear()  # the objective may point at other data than last time
        order = np.argsort(points, kind="stable")
        lower = np.empty(points.size)
        upper = np.empty(points.size)
        converged = np.zeros((points.size, 2), dtype=bool)
        previous: dict[float, np.ndarray] = {}
        for sign, x in (warm or {}).items():
            x = self.inside(x)
            if x is not None:
                previous[sign] = x
        for i in order:
            t = points[i]

            seen = BoundedMemo(_SEEN)

            def value(x, t=t, seen=seen):
                key = x.tobytes()
                if key not in seen:
                    u, grad = func_logit(self.search.to_z(x), t)
                    seen[key] = _frozen(u, self.search.gradient_in_x(grad, x))
                return seen[key]

            batch = None
            if func_logit_batch is not None:
                def batch(xs, t=t):
                    return func_logit_batch(np.array([self.search.to_z(x) for x in xs]), t)

            for j, sign in enumerate((1.0, -1.0)):  # minimise, then maximise
                warm = (previous[sign],) if sign in previous else ()
                best, converged[i, j] = self.extreme(value, sign, warm, batch)
                previous[sign] = best
                end = func_value(self.search.to_z(best), t)
                if sign > 0 and self.floor is not None and value(best)[0] < self.floor:
                    end = 0.0
                if sign > 0:
                    lower[i] = end
                else:
                    upper[i] = end
        self.end_points = dict(previous)
        return lower, upper, converged


def profile_extremes(objective, params, threshold: float, covariance, box, func_logit,
                     func_value, points, *, anchors=(), region: LikelihoodRegion | None = None,
                     func_logit_batch: Callable | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Smallest and largest value of a function of the coordinates over the likelihood region.

    Generic in the model and the function (see :class:`LikelihoodRegion`):
    ``func_logit(z, t)`` gives the function's logit and its gradient in z at
    one point t (a horizon, a quantile level, ...), ``func_value(z, t)`` its
    value. The region is ``{z : logp(z) >= threshold}`` within `box`;
    `anchors` are other points of it the caller knows (the fit's other local
    optima), or pass a `region` built before to reuse its spread and ends;
    ``func_logit_batch(Z, t)``, optional, gives the logits at the rows of Z at
    once. Returns ``(lower, upper, converged)``, the last of shape ``(n, 2)``.
    """
    if region is None:
        region = LikelihoodRegion(objective, params, threshold, covariance, box, anchors)
    return region.extremes(func_logit, func_value, points, func_logit_batch)


def profile_interval(objective, params, loglik: float, covariance, box, metric_logit,
                     metric_value, metric: str, k, *, level: float = 0.95, anchors=(),
                     region: LikelihoodRegion | None = None,
                     metric_logit_batch: Callable | None = None) -> ProfileResult:
    """Profile-likelihood interval of a metric of a fitted model, generic in the model.

    Parameters
    ----------
    objective
        The log-likelihood, already pointed at the fitted data: an object with
        ``logp_dlogp(z)`` (see :mod:`passmix.inference`).
    params : array_like
        Maximum-likelihood estimate in the objective's coordinates.
    loglik : float
        The maximised log-likelihood.
    covariance : array_like
        Inverse observed information at `params` (only used to choose where
        each search starts).
    box : array_like
        Box bounds of the coordinates, shape ``(n, 2)``.
    metric_logit : callable
        ``metric_logit(z, k)`` -> ``(logit M, gradient in z)`` at one horizon.
    metric_value : callable
        ``metric_value(z, k)`` -> M at one horizon, on its own scale.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"`` (for the orderings of the ends).
    k : int or array_like of int
        Horizons.
    level : float, default 0.95
        Confidence level.
    anchors : sequence of array_like, optional
        Other points of the likelihood region the caller knows (e.g. the
        fit's other local optima), searched from too.
    region : LikelihoodRegion, optional
        A region built before for the same fit and `level` (its searches'
        spread and ends are reused); `anchors` is then ignored.
    metric_logit_batch : callable, optional
        ``metric_logit_batch(Z, k)`` -> logits at the rows of Z (ranks the
        searches' starts faster than one call per point).

    Returns
    -------
    ProfileResult

    Examples
    --------
    The Beta mixture wires its model in through :meth:`passmix.MixtureFit.profile`:

    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> counts = passmix.Counts(rng.binomial(5, rng.beta(1.0, 3.0, 200)), np.full(200, 5))
    >>> fit = passmix.fit(counts, seed=0)
    >>> res = fit.profile("pass@k", [1, 100])
    >>> bool(np.all(res.lower < res.estimate)) and bool(np.all(res.estimate < res.upper))
    True
    """
    metric = check_metric(metric)
    level = check_level(level)
    k_arr, _ = check_k(k)
    z_hat = np.asarray(params, dtype=float)
    box = np.asarray(box, dtype=float)
    threshold = loglik - region_drop(level)
    estimate = np.array([metric_value(z_hat, kk) for kk in k_arr])

    lower, upper, converged = profile_extremes(objective, z_hat, threshold, covariance, box,
                                               metric_logit, metric_value, k_arr,
                                               anchors=anchors, region=region,
                                               func_logit_batch=metric_logit_batch)
    lower, upper = repair_across_metrics({metric: (k_arr, estimate, lower, upper)})[metric]
    return ProfileResult(metric=metric, k=k_arr, estimate=estimate, lower=lower, upper=upper,
                         level=level, converged=converged)
