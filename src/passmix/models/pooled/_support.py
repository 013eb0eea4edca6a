"""Pieces of the pooled fit's intervals that are not methods: the profile's coordinates,
probes and shared objective, the horizon map."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import betaln

from ..._cache import BoundedMemo
from ...inference.optimize import at_bound
from ...data.panel import Panel
from ._layout import _BOUNDS
from ._likelihood import PooledDerivatives, _pooled_derivatives


def _unidentified(blocks, free: np.ndarray) -> np.ndarray:
    """Directions in the free coordinates along which the likelihood does not move.

    The abilities and the log-slopes enter centred, so a common shift of
    either block changes nothing (when every coordinate of the block is
    free; one held on its bound pins the shift). The grid's weights are a
    softmax, so a common shift of its free logits changes nothing but the
    share of the points held at the lower bound, which is below e^-40.
    Returns shape ``(r, free.sum())``.
    """
    out, start = [], 0
    for name, size in blocks:
        part = free[start:start + size]
        if name in ("ability", "log_slope", "grid_logits") and size > 1 and part.sum() > 1 \
                and (name == "grid_logits" or part.all()):
            direction = np.zeros(free.size)
            direction[start:start + size] = part
            out.append(direction[free])
        start += size
    return np.array(out).reshape(len(out), int(free.sum()))


def _horizon_map(metric: str, k_arr: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    """The metric at `k_arr` as a linear map of a per-task power metric at horizons h.

    Returns ``(base, h, C)`` with ``metric(k) = C @ base(h)`` per task: the identity
    for Pass@k and Pass^k; for AUC@k, the mean of Pass@r over r <= k, exact up to
    k = 24 and otherwise a trapezoid over at most 24 log-spaced r (with half the
    end points' values added, as the Euler-Maclaurin sum does), whose weights sum to 1.
    """
    if metric != "auc@k":
        return metric, k_arr, np.eye(k_arr.size)
    nodes = [np.arange(1, kv + 1) if kv <= 24 else
             np.unique(np.geomspace(1, kv, num=24).round()).astype(np.int64) for kv in k_arr]
    h = np.unique(np.concatenate(nodes))
    C = np.zeros((k_arr.size, h.size))
    for row, (kv, x) in enumerate(zip(k_arr, nodes)):
        if kv <= 24:
            w = np.full(x.size, 1.0)
        else:
            gaps = np.diff(x).astype(float)
            w = np.concatenate([[0.0], gaps / 2]) + np.concatenate([gaps / 2, [0.0]])
            w[[0, -1]] += 0.5
        C[row, np.searchsorted(h, x)] = w / kv
    return "pass@k", h, C


def _power_moments(base: str, alpha: np.ndarray, beta: np.ndarray, h: np.ndarray):
    """``E[g_h]`` (..., H) and ``E[g_h g_l]`` (..., H, H) for p ~ Beta(alpha, beta), with
    ``g_h = p^h`` (Pass^k) or ``1 - (1 - p)^h`` (Pass@k)."""
    h = h.astype(float)
    ln_b = betaln(alpha, beta)[..., None]
    if base == "pass^k":
        def power(n):
            return np.exp(betaln(alpha[..., None] + n, beta[..., None]) - ln_b)
    else:
        def power(n):
            return np.exp(betaln(alpha[..., None], beta[..., None] + n) - ln_b)
    e1 = power(h)
    e2 = power((h[:, None] + h[None, :]).ravel()).reshape(*e1.shape, h.size)
    if base == "pass^k":
        return e1, e2
    return 1.0 - e1, 1.0 - e1[..., :, None] - e1[..., None, :] + e2


def _profile_coordinates(blocks, params: np.ndarray, box: np.ndarray):
    """Identified coordinates ``x`` for the profile's search, ``z = z_hat + T (x - x_hat)``.

    The abilities enter the likelihood centred, a common shift of them changes
    nothing. Without slopes, for the normal family, the search coordinates are
    each system's ability relative to the first normal's mean, ``b_i = a_i -
    mu_1``, and the other normals' offsets from it: one system's metric then
    moves with one coordinate, where in the fit's coordinates raising one
    ability lowers the others' (they sum to 0) and the difficulties must follow.
    A system whose ability the fit held on its bound keeps that bound in
    ``b``, so the search reaches in from it. Otherwise (the grid, slopes) one
    coordinate of each block that enters up to a shift is pinned at its
    estimate instead, the one farthest inside its bounds (the grid's largest
    logit).

    Returns ``(x_hat, T, P, box_x)``: ``P`` maps a covariance of z to one of
    x (``cov_x = P cov_z P'``; ``P T = I``).
    """
    names = [name for name, _ in blocks]
    starts = dict(zip(names, np.cumsum([0] + [size for _, size in blocks])))
    sizes = dict(blocks)
    n = params.size
    if "difficulty_mean" in sizes and "log_slope" not in sizes:
        n_sys, n_comp = sizes["ability"], sizes["difficulty_mean"]
        ability = starts["ability"] + np.arange(n_sys)
        means = starts["difficulty_mean"] + np.arange(n_comp)
        rest = np.setdiff1d(np.arange(n), np.concatenate([ability, means]))
        # x: b (I), offsets (H - 1), then every other coordinate as it is
        n_x = n - 1
        P = np.zeros((n_x, n))
        T = np.zeros((n, n_x))
        centre = np.eye(n_sys) - 1.0 / n_sys
        P[:n_sys, ability] = centre
        P[:n_sys, means[0]] = -1.0
        T[np.ix_(ability, np.arange(n_sys))] = centre
        T[means[0], :n_sys] = -1.0 / n_sys
        for h in range(1, n_comp):
            P[n_sys + h - 1, means[h]], P[n_sys + h - 1, means[0]] = 1.0, -1.0
            T[means[h], :n_sys] = -1.0 / n_sys
            T[means[h], n_sys + h - 1] = 1.0
        others = n_sys + n_comp - 1 + np.arange(rest.size)
        P[others, rest] = 1.0
        T[rest, others] = 1.0
        x_hat = P @ params
        box_x = np.empty((n_x, 2))
        b_hat = x_hat[:n_sys]
        box_x[:n_sys, 0] = np.minimum(-_B_RANGE, b_hat - 10.0)
        box_x[:n_sys, 1] = np.maximum(_B_RANGE, b_hat + 10.0)
        held = at_bound(params[ability], box[ability])
        box_x[:n_sys, 0] = np.where(held[:, 0], b_hat, box_x[:n_sys, 0])
        box_x[:n_sys, 1] = np.where(held[:, 1], b_hat, box_x[:n_sys, 1])
        width = np.diff(_BOUNDS["difficulty_mean"])[0]
        box_x[n_sys:n_sys + n_comp - 1] = (-width, width)
        box_x[others] = box[rest]
        return x_hat, T, P, box_x
    keep = np.ones(n, dtype=bool)
    for name, size in blocks:
        if name in ("ability", "log_slope", "grid_logits") and size > 1:
            part = slice(starts[name], starts[name] + size)
            room = np.minimum(params[part] - box[part, 0], box[part, 1] - params[part])
            pick = np.argmax(params[part] if name == "grid_logits" else room)
            keep[starts[name] + int(pick)] = False
    T = np.eye(n)[:, keep]
    return params[keep], T, T.T, box[keep]


#: Panels of at most this many cells (systems x tasks) get profile intervals by default
#: (the bundled example has 896); larger ones delta
#: intervals, but profile for the systems on a bound (PooledFit.summary).
PROFILE_CELLS = 2000

#: Panels of at most this many cells also start each profile search from the region's
#: spread (rays along its principal axes), as the mixture's do: with few tasks the region
#: is curved, a single start finds a local extreme, and an evaluation costs little.
SPREAD_CELLS = 300
#: points over the box from which a small panel's spread climbs into the region
PROBES = 8


def _has_extreme_system(panel: Panel) -> bool:
    """Whether some system succeeded on none, or on all, of its trials."""
    y, m = panel.successes.sum(axis=1), panel.trials.sum(axis=1)
    return bool(np.any((m > 0) & ((y == 0) | (y == m))))


def _box_probes(box: np.ndarray, n: int) -> list[np.ndarray]:
    """`n` Sobol points over `box` (a fixed seed: an interval depends on the fit alone)."""
    from scipy.stats import qmc

    unit = qmc.Sobol(box.shape[0], seed=0).random(n)
    return list(box[:, 0] + unit * (box[:, 1] - box[:, 0]))


# the relative abilities' range in the profile's search (logits of success at the
# mean difficulty)
_B_RANGE = 35.0

# a profile's lower end found below 1e-30 (logit -69) is reported as 0 and not searched
# further: Pass^k at large k can sit at 1e-80 with a lower end anywhere down to 1e-200,
# whose search takes SLSQP's whole budget for a value that is 0 for every use
_LOGIT_FLOOR = float(np.log(1e-30))


class _SharedPieces:
    """The pooled log-likelihood and its gradient from :class:`PooledDerivatives`, which
    the metric's gradient needs at the same points: computed once per point.

    The profile's searches use this instead of the compiled objective, so each
    point of a search costs one set of pieces, and the search is numpy alone
    (no compiled function, no lock). It agrees with the compiled objective to
    ~1e-7 (the normal family's weights are differenced in their two
    coordinates); ``tests/test_models_pooled.py`` checks it.
    """

    def __init__(self, fit):
        self.fit = fit
        self._seen: BoundedMemo = BoundedMemo(64)

    def pieces(self, z: np.ndarray) -> PooledDerivatives:
        key = z.tobytes()
        if key not in self._seen:
            fit = self.fit
            self._seen[key] = _pooled_derivatives(fit.layout, fit.grid, fit.family,
                                                  fit.blocks(), z, second=False)
        return self._seen[key]

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        pieces = self.pieces(np.asarray(z, dtype=float))
        return pieces.loglik, pieces.score()


@dataclass
class _Affine:
    """An objective in coordinates x with ``z = z_hat + T (x - x_hat)``."""

    objective: Any
    z_hat: np.ndarray
    x_hat: np.ndarray
    T: np.ndarray

    def full(self, x: np.ndarray) -> np.ndarray:
        return self.z_hat + self.T @ (np.asarray(x, dtype=float) - self.x_hat)

    def logp_dlogp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.objective.logp_dlogp(self.full(x))
        return logp, self.T.T @ np.asarray(grad)


