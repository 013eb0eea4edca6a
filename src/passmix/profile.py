"""Profile-likelihood intervals for Pass@k, Pass^k and AUC@k.

The profile-likelihood interval of a metric ``M`` at level ``1 - a`` is the
set of values ``m`` whose constrained maximum log-likelihood
``max {l(z) : M(z) = m}`` lies within ``chi2(1).ppf(1 - a) / 2`` of the
maximum ``l(z_hat)``. Its ends are the smallest and largest value of ``M``
over the likelihood region ``{z : l(z) >= l(z_hat) - chi2(1).ppf(1 - a) / 2}``,
and that is how they are found here: two constrained optimisations (SLSQP)
per metric and horizon, through the same log-likelihood the fit maximised,
inside the same box. The search is generic in the model: it takes the
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
from scipy.special import expit, ndtri

from ._validation import check_k, check_level, check_metric
from .intervals import ConfidenceInterval, widen_degenerate
from .inference import at_bound

__all__ = ["ProfileResult", "extreme_on_region", "profile_extremes", "profile_interval",
           "repair_across_metrics"]

#: the metrics whose value grows with k (the others' falls)
INCREASING = {"pass@k": True, "auc@k": True, "pass^k": False}
_SLSQP = {"maxiter": 200, "ftol": 1e-9}
# a constraint violation up to this (in log-likelihood units) is accepted
_FEASIBLE = 1e-6


@dataclass(frozen=True)
class ProfileResult:
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

    @property
    def interval(self) -> ConfidenceInterval:
        """``(lower, upper)`` as a named tuple."""
        return ConfidenceInterval(self.lower, self.upper)

    def summary(self) -> pd.DataFrame:
        """One row per horizon: metric, k, estimate, lower, upper."""
        return pd.DataFrame({"metric": self.metric, "k": self.k, "estimate": self.estimate,
                             "lower": self.lower, "upper": self.upper})


def extreme_on_region(logp: Callable, value: Callable, start: np.ndarray, threshold: float,
                      box: np.ndarray, sign: float) -> tuple[np.ndarray | None, bool]:
    """Minimise ``sign * value(z)`` subject to ``logp(z) >= threshold`` within `box`.

    Generic in the model: `logp` and `value` map a coordinate vector to
    ``(value, gradient)``. Returns the best point of the region that the
    search visited (SLSQP's end if it is feasible, else the best feasible
    iterate) and whether SLSQP reported success there, or ``(None, False)``
    if it visited no feasible point.
    """
    seen: dict[bytes, list] = {}  # x -> [logp, value]; the best feasible one is kept
    best: list = [None, np.inf]

    def record(x, slot, result):
        key = x.tobytes()
        entry = seen.setdefault(key, [None, None])
        entry[slot] = result
        if entry[0] is not None and entry[1] is not None:
            if entry[0][0] >= threshold and sign * entry[1][0] < best[1]:
                best[0], best[1] = x.copy(), sign * entry[1][0]
            del seen[key]
        return result

    def constraint(x):
        key = x.tobytes()
        if key in seen and seen[key][0] is not None:
            return seen[key][0]
        return record(x, 0, logp(x))

    # SLSQP starts from an identity Hessian: scale both functions to unit
    # slope at the start so that its first steps are of a sensible length
    v0, g0 = value(start)
    scale = 1.0 / max(float(np.linalg.norm(g0)), 1e-12)
    c_scale = 1.0 / max(float(np.linalg.norm(logp(start)[1])), 1e-12)

    def fun(x):
        v, g = record(x, 1, value(x))
        return sign * (v - v0) * scale, sign * g * scale

    res = minimize(fun, start, jac=True, method="SLSQP", bounds=box, options=_SLSQP,
                   constraints=[{"type": "ineq",
                                 "fun": lambda x: (constraint(x)[0] - threshold) * c_scale,
                                 "jac": lambda x: constraint(x)[1] * c_scale}])
    x = np.clip(res.x, box[:, 0], box[:, 1])
    if np.isfinite(res.fun) and logp(x)[0] >= threshold - _FEASIBLE:
        if best[0] is None or sign * value(x)[0] <= best[1]:
            return x, bool(res.success)
    return best[0], False


class _SearchCoordinates:
    """The coordinates the search runs in.

    Each model coordinate z that the estimate holds at its box bound is
    replaced by ``x = expit(z)``; the others are kept. Every limit the model
    has is an infinite end of some coordinate: the binomial limit (log
    concentration -> infinity), a mean at 0 or 1 (all-failure or
    all-success data), an empty component, two merging components. Toward
    such a limit the likelihood and the metrics flatten out in z, and a
    search that starts on the plateau (at an estimate on the bound) stays
    there; in x the limit is the regular boundary 0 or 1, where the slopes
    are finite and not zero. Interior coordinates stay in z, where the
    likelihood region has a width of order one, which suits SLSQP.
    """

    def __init__(self, box: np.ndarray, held: np.ndarray):
        self.held = np.asarray(held, dtype=bool)
        self.box = np.array(box, dtype=float)
        self.box[self.held] = expit(self.box[self.held])

    def to_z(self, x):
        z = np.array(x, dtype=float)
        h = x[self.held]
        z[self.held] = np.log(h) - np.log1p(-h)
        return z

    def from_z(self, z):
        x = np.array(z, dtype=float)
        x[self.held] = expit(z[self.held])
        return x

    def dz_dx(self, x):
        out = np.ones(len(x))
        h = x[self.held]
        out[self.held] = 1.0 / (h * (1.0 - h))
        return out


def _boundary_point(logp, x_hat, direction, threshold, box) -> np.ndarray | None:
    """The point where the ray from `x_hat` along `direction` leaves the region.

    Bisection on the log-likelihood along the ray, cut at the box; a
    feasible point on the region's edge, where SLSQP sees the constraint's
    slope (at the estimate itself the slope is zero and its first step
    overshoots).
    """
    norm = float(np.linalg.norm(direction))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    d = direction / norm
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(d > 0, (box[:, 1] - x_hat) / d, np.where(d < 0, (box[:, 0] - x_hat) / d,
                                                                   np.inf))
    t_max = float(np.min(room))
    if not np.isfinite(t_max) or t_max <= 0:
        return None
    if logp(x_hat + t_max * d)[0] >= threshold:
        return x_hat + t_max * d
    lo, hi = 0.0, t_max
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if logp(x_hat + mid * d)[0] >= threshold:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-6 * (1.0 + lo):
            break
    return x_hat + lo * d


def profile_extremes(objective, params, threshold: float, covariance, box, func_logit,
                     func_value, points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Smallest and largest value of a function of the coordinates over the likelihood region.

    Generic in the model and the function: ``func_logit(z, t)`` gives the
    function's logit and its gradient in z at one point t (a horizon, a
    quantile level, ...), ``func_value(z, t)`` its value. The region is
    ``{z : logp(z) >= threshold}`` within `box`; each point is searched from
    the neighbouring point's ends (warm starts) and from where the delta
    method's direction leaves the region. Returns ``(lower, upper,
    converged)``, the last of shape ``(n, 2)``.
    """
    z_hat = np.asarray(params, dtype=float)
    box = np.asarray(box, dtype=float)
    points = np.asarray(points)
    held = at_bound(z_hat, box).any(axis=1)
    search = _SearchCoordinates(box, held)
    x_hat = search.from_z(z_hat)

    def logp(x):
        value, grad = objective.logp_dlogp(search.to_z(x))
        return value, grad * search.dz_dx(x)

    # the delta method's covariance, in the search coordinates; it says nothing
    # about a coordinate held on its bound, which gets a unit variance instead
    jac = search.dz_dx(x_hat)
    cov_x = np.asarray(covariance, dtype=float) / np.outer(jac, jac)
    cov_x[held, :] = 0.0
    cov_x[:, held] = 0.0
    cov_x[held, held] = 1.0

    order = np.argsort(points, kind="stable")
    lower = np.empty(points.size)
    upper = np.empty(points.size)
    converged = np.zeros((points.size, 2), dtype=bool)
    previous: dict[float, np.ndarray] = {}
    for i in order:
        t = points[i]

        def value(x, t=t):
            u, grad = func_logit(search.to_z(x), t)
            return u, grad * search.dz_dx(x)

        grad_x = value(x_hat)[1]
        for j, sign in enumerate((1.0, -1.0)):  # minimise, then maximise
            # feasible starts on the region's edge: the neighbouring point's
            # end (a warm start), else where the delta method's direction leaves
            # the region; the other one if the first search fails
            ray = _boundary_point(logp, x_hat, -sign * (cov_x @ grad_x), threshold, search.box)
            starts = [x for x in (previous.get(sign), ray) if x is not None] or [x_hat]
            # the estimate itself is always in the region
            best, best_u, ok = x_hat, sign * value(x_hat)[0], False
            for start in starts:
                x, success = extreme_on_region(logp, value, start, threshold, search.box, sign)
                if x is not None:
                    u = sign * value(x)[0]
                    if u < best_u or (u == best_u and success):
                        best, best_u, ok = x, u, success
                if ok:
                    break
            previous[sign] = best
            end = func_value(search.to_z(best), t)
            converged[i, j] = ok
            if sign > 0:
                lower[i] = end
            else:
                upper[i] = end
    return lower, upper, converged


def profile_interval(objective, params, loglik: float, covariance, box, metric_logit,
                     metric_value, metric: str, k, *, level: float = 0.95) -> ProfileResult:
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
    # the chi-square(1) quantile is the square of the normal one
    drop = 0.5 * float(ndtri(0.5 + level / 2.0)) ** 2
    threshold = loglik - drop
    estimate = np.array([metric_value(z_hat, kk) for kk in k_arr])

    lower, upper, converged = profile_extremes(objective, z_hat, threshold, covariance, box,
                                               metric_logit, metric_value, k_arr)
    lower, upper = repair_across_metrics({metric: (k_arr, estimate, lower, upper)})[metric]
    return ProfileResult(metric=metric, k=k_arr, estimate=estimate, lower=lower, upper=upper,
                         level=level, converged=converged)


def repair_across_metrics(ends: dict[str, tuple]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Widen interval ends so that they obey every ordering the metrics obey.

    Parameters
    ----------
    ends : dict
        ``metric -> (k, estimate, lower, upper)`` arrays, for one or more of
        the three metrics of one fit.

    Returns
    -------
    dict
        ``metric -> (lower, upper)``.

    Notes
    -----
    At every point of a likelihood region Pass@k and AUC@k are
    non-decreasing and Pass^k non-increasing in k, ``Pass^k <= Pass@1 <=
    AUC@k <= Pass@k``, and all three metrics equal the mean at k = 1; so the
    extremes over the region obey the same orderings. An end that breaks one
    marks an optimum the search missed, and the end it is compared with (the
    metric's value at a point of the region) is a valid bound in its place:
    for ``X <= Y`` pointwise, ``upper(Y) >= upper(X)`` and ``lower(X) <=
    lower(Y)``. Ends are also made to bracket the estimate, subnormal ends
    flushed and zero widths avoided (:func:`widen_degenerate`).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.profile import repair_across_metrics
    >>> k = np.array([1, 10])
    >>> out = repair_across_metrics({"pass@k": (k, np.array([.2, .5]), np.array([.1, .4]),
    ...                                          np.array([.3, .6])),
    ...                              "pass^k": (k, np.array([.2, .01]), np.array([.1, .001]),
    ...                                          np.array([.3, .35]))})
    >>> float(out["pass@k"][1][0])   # Pass@1's upper end rises to Pass^10's
    0.35
    """
    nodes: list[tuple[str, int]] = []
    lower: dict[tuple[str, int], float] = {}
    upper: dict[tuple[str, int], float] = {}
    for metric, (k, est, lo, hi) in ends.items():
        for i in range(len(k)):
            node = (metric, i)
            nodes.append(node)
            lower[node] = min(float(lo[i]), float(est[i]))
            upper[node] = max(float(hi[i]), float(est[i]))
    edges: list[tuple] = []  # (a, b): a <= b at every point of the region
    means = []
    for metric, (k, *_rest) in ends.items():
        order = np.argsort(k, kind="stable")
        for i, j in zip(order[:-1], order[1:]):
            a, b = (metric, int(i)), (metric, int(j))
            edges.append((a, b) if INCREASING[metric] else (b, a))
            if k[i] == k[j]:
                edges.append((b, a) if INCREASING[metric] else (a, b))
        means += [(metric, int(i)) for i in np.flatnonzero(np.asarray(k) == 1)]
    for a, b in zip(means, means[1:] + means[:1]):
        edges.append((a, b))
    if means:
        mean = means[0]
        for metric, (k, *_rest) in ends.items():
            for i in range(len(k)):
                node = (metric, i)
                edges.append((node, mean) if metric == "pass^k" else (mean, node))
    if "auc@k" in ends and "pass@k" in ends:
        k_pass = list(np.asarray(ends["pass@k"][0]))
        for i, kk in enumerate(np.asarray(ends["auc@k"][0])):
            if kk in k_pass:
                edges.append((("auc@k", i), ("pass@k", k_pass.index(kk))))
    for _ in range(len(nodes) + 1):
        changed = False
        for a, b in edges:
            if upper[a] > upper[b]:
                upper[b], changed = upper[a], True
            if lower[b] < lower[a]:
                lower[a], changed = lower[b], True
        if not changed:
            break
    out = {}
    for metric, (k, *_rest) in ends.items():
        lo = np.array([lower[(metric, i)] for i in range(len(k))])
        hi = np.array([upper[(metric, i)] for i in range(len(k))])
        out[metric] = widen_degenerate(lo, hi)
    return out
