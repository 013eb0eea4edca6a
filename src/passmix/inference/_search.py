"""The searches under the profile likelihood: the extreme of a function over a
likelihood region from one start, the region's edge along a ray, and their
coordinates and tolerances."""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from .delta import normal_quantile

__all__ = ["extreme_on_region", "region_drop"]

_SLSQP = {"maxiter": 200, "ftol": 1e-8}
# each start of a multi-start search runs to this looser tolerance; only the
# most extreme end is then polished with _SLSQP
_SCREEN = {"maxiter": 10, "ftol": 1e-6}
# a constraint violation up to this (in log-likelihood units) is accepted
_FEASIBLE = 1e-6
# a search that stopped outside the region by up to twice this is continued from there
_OUTSIDE = 1.0


def extreme_on_region(logp: Callable, value: Callable, start: np.ndarray, threshold: float,
                      box: np.ndarray, sign: float, options: dict | None = None,
                      last: list | None = None, scale: np.ndarray | None = None,
                      enough: float | None = None) -> tuple[np.ndarray | None, bool]:
    """Minimise ``sign * value(z)`` subject to ``logp(z) >= threshold`` within `box`.

    Generic in the model: `logp` and `value` map a coordinate vector to
    ``(value, gradient)``. Returns the best point of the region that the
    search visited (SLSQP's end if it is feasible, else the best feasible
    iterate) and whether SLSQP reported success there, or ``(None, False)``
    if it visited no feasible point. SLSQP's own last point, feasible or not,
    is appended to `last` if given (a restart from there continues its path).
    With `scale` (the coordinates' typical lengths, e.g. standard errors)
    SLSQP runs on ``z / scale``, where its first guess of the curvature (the
    identity) is nearer the region's: it needs fewer iterations. With
    `enough`, the search ends at the first feasible point where
    ``sign * value`` is below it (reported as optimal).
    """
    if scale is not None:
        s = np.asarray(scale, dtype=float)

        def in_units(func):
            def scaled(u):
                v, g = func(u * s)
                return v, g * s
            return scaled

        last_u: list | None = None if last is None else []
        found, ok = extreme_on_region(in_units(logp), in_units(value), start / s, threshold,
                                      box / s[:, None], sign, options, last_u, enough=enough)
        if last is not None:
            last.extend(u * s for u in last_u)
        return (None if found is None else found * s), ok
    seen: dict[bytes, list] = {}  # x -> [logp, value]; the best feasible one is kept
    best: list = [None, np.inf]

    def record(x, slot, result):
        key = x.tobytes()
        entry = seen.setdefault(key, [None, None])
        entry[slot] = result
        if entry[0] is not None and entry[1] is not None:
            if entry[0][0] >= threshold and sign * entry[1][0] < best[1]:
                best[0], best[1] = x.copy(), sign * entry[1][0]
                if enough is not None and best[1] < enough:
                    raise _Enough
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
    c_scale = 1.0 / max(float(np.linalg.norm(logp(start)[1])), 1e-12)
    start_u = sign * v0 if logp(start)[0] >= threshold - _FEASIBLE else np.inf
    # a first step that overshoots can leave SLSQP with linearised constraints it
    # cannot meet ("incompatible"): where a run gets nowhere, retry with shorter steps
    for step in (1.0, 0.1, 0.01):
        scale = step / max(float(np.linalg.norm(g0)), 1e-12)

        def fun(x, scale=scale):
            v, g = record(x, 1, value(x))
            return sign * (v - v0) * scale, sign * g * scale

        try:
            res = minimize(fun, start, jac=True, method="SLSQP", bounds=box,
                           options=_SLSQP if options is None else options,
                           constraints=[{"type": "ineq",
                                         "fun": lambda x: (constraint(x)[0] - threshold) * c_scale,
                                         "jac": lambda x: constraint(x)[1] * c_scale}])
        except _Enough:
            return best[0], True
        x = np.clip(res.x, box[:, 0], box[:, 1])
        if last is not None and np.all(np.isfinite(x)):
            last.append(x)
        if np.isfinite(res.fun):
            # SLSQP rides an active constraint from slightly outside: step back in
            x = _restore(logp, x, threshold, box)
            if x is not None and (best[0] is None or sign * value(x)[0] <= best[1]):
                best[0], best[1] = x, sign * value(x)[0]
                if res.success:
                    return x, True
        if res.success or best[1] < start_u - 1e-9 * (1.0 + abs(start_u)):
            break
    return best[0], False


def _restore(logp: Callable, x: np.ndarray, threshold: float, box: np.ndarray,
             steps: int = 4) -> np.ndarray | None:
    """`x` moved into the region by Newton steps along the likelihood's gradient
    (from up to a small violation), or None."""
    for _ in range(steps + 1):
        value, grad = logp(x)
        if value >= threshold - _FEASIBLE:
            return x
        norm2 = float(grad @ grad)
        if not np.isfinite(value) or threshold - value > 1e-2 or norm2 == 0.0:
            return None
        x = np.clip(x + (threshold - value + _FEASIBLE) * grad / norm2, box[:, 0], box[:, 1])
    return None


# a search revisits only the points it has just seen: keep the most recent values
_SEEN = 512


def _frozen(value, grad: np.ndarray) -> tuple[float, np.ndarray]:
    """``(value, grad)`` with `grad` (a new array the caller hands over) made read-only: it
    is handed out again, so no caller may change it."""
    grad.flags.writeable = False
    return value, grad


def region_drop(level: float) -> float:
    """How far below the maximum the region's log-likelihood reaches: ``chi2(1).ppf(level) / 2``."""
    # the chi-square(1) quantile is the square of the normal one
    return 0.5 * normal_quantile(level) ** 2


class _SearchCoordinates:
    """The coordinates the search runs in.

    Each model coordinate z that the estimate holds at its box bound (and
    each that the model asks for, see :class:`LikelihoodRegion`) is replaced
    by ``x = expit(z)``; the others are kept. Every limit the model
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
        # every coordinate or none transformed (the common cases) without indexing: the
        # searches call these on every evaluation
        self._all = bool(self.held.all())
        self._none = not self.held.any()

    def to_z(self, x):
        if self._all:
            return np.log(x) - np.log1p(-x)
        z = np.array(x, dtype=float)
        if not self._none:
            h = x[self.held]
            z[self.held] = np.log(h) - np.log1p(-h)
        return z

    def from_z(self, z):
        x = np.array(z, dtype=float)
        x[self.held] = expit(z[self.held])
        return x

    def dz_dx(self, x):
        if self._all:
            return 1.0 / (x * (1.0 - x))
        out = np.ones(len(x))
        if not self._none:
            h = x[self.held]
            out[self.held] = 1.0 / (h * (1.0 - h))
        return out

    def gradient_in_x(self, grad, x) -> np.ndarray:
        """A gradient in z carried to x, as a new array (never the caller's buffer)."""
        if self._none:
            return np.array(grad, dtype=float)
        return np.asarray(grad, dtype=float) * self.dz_dx(x)


def _boundary_point(logp, x_from, direction, threshold, box, rel_tol: float = 1e-6,
                    reach: float = np.inf) -> np.ndarray | None:
    """The point where the ray from `x_from` along `direction` leaves the region.

    Bisection on the log-likelihood along the ray, cut at the box and at
    `reach` (a distance from `x_from`); a feasible point on the region's
    edge, where SLSQP sees the constraint's slope (at the estimate itself the
    slope is zero and its first step overshoots). None if the ray has no room
    inside the box.
    """
    norm = float(np.linalg.norm(direction))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    d = direction / norm
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(d > 0, (box[:, 1] - x_from) / d,
                        np.where(d < 0, (box[:, 0] - x_from) / d, np.inf))
    t_max = min(float(np.min(room)), reach)
    if not np.isfinite(t_max) or t_max <= 1e-12:
        return None
    f_hi = logp(x_from + t_max * d)[0] - threshold
    if f_hi >= 0.0:
        return x_from + t_max * d
    f_lo = logp(x_from)[0] - threshold
    if not f_lo >= 0.0:  # not from inside the region: bisection's invariant only
        f_lo = 0.0
    # the log-likelihood is close to quadratic in t about an optimum, so close to
    # linear in s = t^2: regula falsi in s (Illinois: a side kept twice has its value
    # halved) takes a few evaluations where bisection takes ~20; a side at which the
    # log-likelihood is not finite is bisected in t
    lo, hi = 0.0, t_max ** 2
    kept = 0
    for _ in range(60):
        if np.isfinite(f_hi):
            s = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        else:
            s = 0.25 * (np.sqrt(lo) + np.sqrt(hi)) ** 2
        if not lo < s < hi:
            s = 0.5 * (lo + hi)
        f = logp(x_from + np.sqrt(s) * d)[0] - threshold
        if f >= 0.0:
            lo, f_lo = s, f
            if kept > 0 and np.isfinite(f_hi):
                f_hi *= 0.5
            kept = 1 if kept <= 0 else kept + 1
        else:
            hi, f_hi = s, f
            if kept < 0:
                f_lo *= 0.5
            kept = -1 if kept >= 0 else kept - 1
        if np.sqrt(hi) - np.sqrt(lo) <= rel_tol * (1.0 + np.sqrt(lo)):
            break
    return x_from + np.sqrt(lo) * d if lo > 0.0 else None


class _Enough(Exception):
    """A search reached a value below what it was asked for (stops the optimiser there)."""


class _Inside(Exception):
    """An ascent reached the region (stops the optimiser there)."""


