"""Maximum likelihood on a box, generic in the model: multi-start, Newton polish,
observed information, BIC.

A model hands in an *objective*: an object with ``logp_dlogp(z)`` (the
log-likelihood and its gradient at coordinates z), ``negative(z)`` (their
negatives, for ``scipy.optimize.minimize``) and ``hessian(z)``; plus its box
bounds and starting points. :func:`maximize` returns the best
:class:`Optimum`; :func:`observed_covariance` the inverse observed
information there; :func:`select_by_criterion` picks among models of different
size (:func:`select_by_bic` for the mixture's components). Intervals built on these are in :mod:`passmix.inference.delta` (delta method)
and :mod:`passmix.inference.profile` (profile likelihood). The Beta mixture
(:mod:`passmix.models.mixture.fit`) supplies only its objective, bounds and starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import minimize

__all__ = ["BOUND_TOL", "Optimum", "at_bound", "covariance_from_information", "damped_newton",
           "gradient_hessian", "is_stationary", "maximize", "newton_polish",
           "observed_covariance", "select_by_bic", "select_by_criterion"]

#: A coordinate within this (relative to ``1 + |bound|``) of its bound is on it.
BOUND_TOL = 1e-6
_SCREEN = {"maxiter": 1000, "ftol": 1e-8, "gtol": 1e-5}
_POLISH = {"maxiter": 5000, "ftol": 1e-13, "gtol": 1e-8}
# converged when Newton steps could raise the log-likelihood by less than this
_DECREMENT_TOL = 1e-6
_NEWTON_STEPS = 8
# criteria within this (relative to 1 + |best|) are a tie, which the smaller model wins
_TIE = 1e-6


@dataclass(frozen=True)
class Optimum:
    """The best point :func:`maximize` found.

    Attributes
    ----------
    params : numpy.ndarray
        The coordinates.
    loglik : float
        The log-likelihood there.
    converged : bool
        Whether it is stationary in every coordinate not held by a bound.
    message : str
        L-BFGS-B's last message.
    n_iter : int
        L-BFGS-B's iterations on the best start.
    on_bound : numpy.ndarray
        One flag per coordinate: at its lower or upper bound.
    n_starts : int
        How many starts were run.
    local_optima : tuple of (numpy.ndarray, float)
        Where each start's (loose) search ended and its log-likelihood: the
        other local optima, which a profile-likelihood search starts from too
        (the likelihood region can have a piece around each).
    """

    params: np.ndarray
    loglik: float
    converged: bool
    message: str
    n_iter: int
    on_bound: np.ndarray
    n_starts: int
    local_optima: tuple = field(default=(), repr=False)


def at_bound(z, box) -> np.ndarray:
    """(n, 2) flags: coordinate at its lower / upper bound."""
    tol = BOUND_TOL * (1.0 + np.abs(box))
    return np.column_stack([z <= box[:, 0] + tol[:, 0], z >= box[:, 1] - tol[:, 1]])


def _newton_step(objective, z, box):
    """The Newton step on the free coordinates at `z`, and whether `z` is stationary.

    A coordinate on its bound whose gradient pushes it outwards is held
    there (the optimum is on the boundary in that direction, as at the
    binomial limit). Stationary means the Newton decrement ``g' H^-1 g / 2``,
    how much the log-likelihood could still rise, is below 1e-6 over the
    directions of positive curvature, and flat directions have no slope.
    Returns ``(step, free, stationary, logp)``; `step` is None when no
    coordinate is free.
    """
    logp, grad = objective.logp_dlogp(z)
    at = at_bound(z, box)
    held = (at[:, 0] & (grad <= 0)) | (at[:, 1] & (grad >= 0))
    free = ~held
    if not free.any():
        return None, free, True, logp
    g = grad[free]
    info = -objective.hessian(z)[np.ix_(free, free)]
    values, vectors = np.linalg.eigh(info)
    proj = vectors.T @ g
    curved = _curved(values)
    step = vectors[:, curved] @ (proj[curved] / values[curved])
    return step, free, _stationary(values, proj, logp), logp


def _curved(values: np.ndarray) -> np.ndarray:
    """The information's eigen-directions of positive curvature."""
    return values > 1e-10 * max(values.max(initial=0.0), 1e-300)


def _stationary(values: np.ndarray, proj: np.ndarray, logp: float) -> bool:
    """Newton decrement below 1e-6 over the curved directions, no slope along the flat."""
    curved = _curved(values)
    decrement = 0.5 * float(np.sum(proj[curved] ** 2 / values[curved]))
    flat_slope = float(np.max(np.abs(proj[~curved]), initial=0.0))
    return decrement < _DECREMENT_TOL and flat_slope < 1e-6 * np.sqrt(1.0 + abs(logp))


def is_stationary(objective, z, box) -> bool:
    """Whether `z` is a maximum up to 1e-6 in log-likelihood (see :func:`newton_polish`)."""
    return _newton_step(objective, np.asarray(z, dtype=float), box)[2]


def newton_polish(objective, z, box, steps: int = _NEWTON_STEPS, halvings: int = 5
                  ) -> tuple[np.ndarray, bool]:
    """Newton steps on the coordinates the bounds do not hold; converged or not.

    Convergence is judged by the Newton decrement over the free coordinates
    (see :func:`is_stationary`), not by the optimiser's own stopping rule:
    L-BFGS-B often stops just short of stationarity on a plateau toward a
    bound, or reports "ABNORMAL" at a true optimum.
    """
    for _ in range(steps):
        step, free, stationary, logp = _newton_step(objective, z, box)
        if stationary:
            return z, True
        for t in 0.5 ** np.arange(halvings):
            trial = z.copy()
            trial[free] = np.clip(z[free] + t * step, box[free, 0], box[free, 1])
            new_logp = objective.logp_dlogp(trial)[0]
            if np.isfinite(new_logp) and new_logp > logp:
                z = trial
                break
        else:
            return z, False
    return z, is_stationary(objective, z, box)


def damped_newton(objective, z, box, steps: int = 40) -> tuple[np.ndarray, bool]:
    """Levenberg-Marquardt steps on the coordinates the bounds do not hold.

    The step solves ``(H + lambda I) s = g`` on the free coordinates, with
    ``lambda`` above the Hessian's most negative eigenvalue and adapted to
    success: a gradient step far from the optimum, where the likelihood is
    not concave, and a Newton step near it, with no line search that a
    single flat direction can stall. Converged as in :func:`newton_polish`.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference import damped_newton
    >>> class Quartic:  # log-likelihood -(z - 1)^4 - z^2, not quadratic
    ...     def logp_dlogp(self, z):
    ...         return float(-((z - 1) ** 4).sum() - (z ** 2).sum()), -4 * (z - 1) ** 3 - 2 * z
    ...     def hessian(self, z):
    ...         return np.diag(-12 * (z - 1) ** 2 - 2)
    >>> z, ok = damped_newton(Quartic(), np.array([3.0]), np.array([[-5.0, 5.0]]))
    >>> round(float(z[0]), 3), ok
    (0.41, True)
    """
    z = np.asarray(z, dtype=float).copy()
    damping = 1e-3
    for _ in range(steps):
        logp, grad = objective.logp_dlogp(z)
        at = at_bound(z, box)
        free = ~((at[:, 0] & (grad <= 0)) | (at[:, 1] & (grad >= 0)))
        if not free.any():
            return z, True
        values, vectors = np.linalg.eigh(-objective.hessian(z)[np.ix_(free, free)])
        proj = vectors.T @ grad[free]
        if _stationary(values, proj, logp):
            return z, True
        scale = max(float(np.max(np.abs(values), initial=0.0)), 1e-12)
        shift = max(0.0, -float(values.min(initial=0.0)))
        for _ in range(12):
            lam = shift + damping * scale
            trial = z.copy()
            trial[free] = np.clip(z[free] + vectors @ (proj / (values + lam)),
                                  box[free, 0], box[free, 1])
            new_logp = objective.logp_dlogp(trial)[0]
            if np.isfinite(new_logp) and new_logp > logp:
                z = trial
                damping = max(damping / 4.0, 1e-12)
                break
            damping *= 8.0
        else:
            return z, False
    return z, is_stationary(objective, z, box)


def maximize(objective, starts: Sequence[np.ndarray], box: np.ndarray, *,
             newton: bool = True, newton_steps: int = _NEWTON_STEPS,
             screen: dict | None = None, polish: bool = True, damped: bool = False
             ) -> Optimum:
    """Maximise the objective's log-likelihood from every start, within `box`.

    Each start runs L-BFGS-B with the `screen` options (default a loose
    tolerance), the best is polished by L-BFGS-B to a tight one (unless
    ``polish=False``) and finished by up to `newton_steps` Newton steps.
    With ``newton=False`` the best optimum is not finished by Newton steps
    (each needs the Hessian; by differences that is two gradients per
    coordinate, too dear for hundreds of coordinates unless the model has it
    analytically) and convergence is L-BFGS-B's own verdict. With
    ``damped=True`` the best start is finished by :func:`damped_newton`
    instead of L-BFGS-B's polish and Newton steps (for a model whose
    Hessian is cheap: L-BFGS-B's polish crawls over hundreds of coordinates).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference import maximize
    >>> class Quadratic:  # log-likelihood -(z - 1)^2, maximum at 1
    ...     def logp_dlogp(self, z):
    ...         return float(-((z - 1.0) ** 2).sum()), -2.0 * (z - 1.0)
    ...     def negative(self, z):
    ...         value, grad = self.logp_dlogp(z)
    ...         return -value, -grad
    ...     def hessian(self, z):
    ...         return -2.0 * np.eye(z.size)
    >>> best = maximize(Quadratic(), [np.array([-3.0])], np.array([[-5.0, 5.0]]))
    >>> round(float(best.params[0]), 6), best.converged
    (1.0, True)
    """
    # Every start is run to a loose tolerance and only the best is polished:
    # the starts mostly find the same optimum, and the polish is where the
    # precision is needed.
    best = None
    local = []
    for z0 in starts:
        res = minimize(objective.negative, z0, jac=True, method="L-BFGS-B", bounds=box,
                       options=_SCREEN if screen is None else screen)
        if np.isfinite(res.fun):
            local.append((res.x.copy(), -float(res.fun)))
            if best is None or res.fun < best.fun:
                best = res
    if best is None:
        raise RuntimeError("every optimisation gave a non-finite likelihood.")
    if damped:
        z, converged = damped_newton(objective, best.x.copy(), box, newton_steps)
        return Optimum(params=z, loglik=objective.logp_dlogp(z)[0], converged=converged,
                       message=str(best.message), n_iter=int(best.nit),
                       on_bound=at_bound(z, box).any(axis=1), n_starts=len(starts),
                       local_optima=tuple(local))
    if polish:
        polished = minimize(objective.negative, best.x, jac=True, method="L-BFGS-B",
                            bounds=box, options=_POLISH)
        if np.isfinite(polished.fun) and polished.fun <= best.fun:
            best = polished
    # L-BFGS-B often ends with "ABNORMAL" or a relative-reduction stop at a true
    # optimum, and on a plateau toward a bound it can stop just short of
    # stationarity in the other coordinates: finish with Newton steps.
    if newton:
        z, converged = newton_polish(objective, best.x.copy(), box, newton_steps,
                                     halvings=5 if polish else 12)
        if not converged and not polish:
            # Newton steps from a loosely screened point could not finish: L-BFGS-B's
            # polish first, then Newton again
            polished = minimize(objective.negative, z, jac=True, method="L-BFGS-B",
                                bounds=box, options=_POLISH)
            if np.isfinite(polished.fun) and -polished.fun >= objective.logp_dlogp(z)[0]:
                z = polished.x.copy()
            z, converged = newton_polish(objective, z, box, newton_steps, halvings=12)
    else:
        z, converged = best.x.copy(), bool(best.success)
    return Optimum(params=z, loglik=objective.logp_dlogp(z)[0], converged=converged,
                   message=str(best.message), n_iter=int(best.nit),
                   on_bound=at_bound(z, box).any(axis=1), n_starts=len(starts),
                   local_optima=tuple(local))


def gradient_hessian(logp_dlogp, z, rel_step: float = 1e-5) -> np.ndarray:
    """Hessian of a log-likelihood by central differences of its exact gradient.

    `logp_dlogp(z)` returns ``(logp, gradient)``. Compiling a symbolic
    second derivative costs far more than the 2n gradients this takes, and
    differencing an exact gradient agrees with it to ~1e-8 relative.
    """
    z = np.asarray(z, dtype=float)
    steps = rel_step * np.maximum(1.0, np.abs(z))
    hess = np.empty((z.size, z.size))
    for i in range(z.size):
        up, down = z.copy(), z.copy()
        up[i] += steps[i]
        down[i] -= steps[i]
        hess[:, i] = (logp_dlogp(up)[1] - logp_dlogp(down)[1]) / (2 * steps[i])
    return 0.5 * (hess + hess.T)


def observed_covariance(objective, params, null=None) -> np.ndarray:
    """Inverse observed information; a pseudo-inverse over its positive part if singular.

    At an optimum on a box bound (or along a flat ridge) the information has
    zero or slightly negative eigenvalues; those directions get zero
    variance instead of a negative one (the coordinates are treated as known,
    as the delta method's FitWarning says).

    `null`, shape ``(r, n)``, lists directions along which the likelihood is
    constant by construction (a common shift of centred abilities, say). The
    information is inverted on their orthogonal complement only and they get
    zero variance, as in the fit's own identified coordinates: rounding in
    the Hessian would otherwise give them a variance of ~1e15, which leaks
    into every standard error through gradients that are zero only up to
    rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference import observed_covariance
    >>> class Shift:  # log-likelihood -(z0 - z1)^2 / 2: z0 + z1 is not identified
    ...     def hessian(self, z):
    ...         return -np.array([[1.0, -1.0], [-1.0, 1.0]])
    >>> cov = observed_covariance(Shift(), np.zeros(2), null=[[1.0, 1.0]])
    >>> np.round(cov, 6).tolist()
    [[0.25, -0.25], [-0.25, 0.25]]
    """
    return covariance_from_information(-objective.hessian(params), null)


def covariance_from_information(info, null=None) -> np.ndarray:
    """The inverse of an observed information matrix, as :func:`observed_covariance`.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference import covariance_from_information
    >>> covariance_from_information(np.array([[4.0]])).tolist()
    [[0.25]]
    """
    info = np.asarray(info, dtype=float)
    if null is not None and len(null):
        q, _ = np.linalg.qr(np.asarray(null, dtype=float).T)
        # an orthonormal basis of the complement of the null directions
        values, vectors = np.linalg.eigh(np.eye(info.shape[0]) - q @ q.T)
        basis = vectors[:, values > 0.5]
        inner = _inverse_information(basis.T @ info @ basis)
        return basis @ inner @ basis.T
    return _inverse_information(info)


def _inverse_information(info: np.ndarray) -> np.ndarray:
    try:
        chol = np.linalg.cholesky(info)
        eye = np.eye(info.shape[0])
        return np.linalg.solve(chol.T, np.linalg.solve(chol, eye))
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(info)
        keep = values > 1e-10 * max(values.max(initial=0.0), 1e-300)
        inverse = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
        return (vectors * inverse) @ vectors.T


def select_by_criterion(scores, sizes) -> int:
    """The position of the best model: the highest score, ties going to the smallest size.

    One tie rule for every choice among fitted models (BIC among the
    mixture's H, AIC, BIC or held-out likelihood among the pooled model's
    candidates): scores within a relative 1e-6 of the best (``1e-6 (1 +
    |best|)``) tie, and the smallest model among them wins (the first
    listed, among equal sizes). A fixed relative tolerance makes the choice
    independent of the last bits of the log-likelihood, which differ between
    machines. NaN scores never win.

    Parameters
    ----------
    scores : array_like
        Larger is better: minus an information criterion, or a held-out
        log-likelihood.
    sizes : array_like
        Each model's size (number of parameters, or components).

    Returns
    -------
    int
        The chosen model's position.

    Examples
    --------
    >>> from passmix.inference import select_by_criterion
    >>> select_by_criterion([-10.0, -10.0 + 1e-9, -12.0], [3, 5, 1])
    0
    """
    scores = np.asarray(scores, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    if scores.size == 0 or scores.shape != sizes.shape:
        raise ValueError("scores and sizes must be non-empty and of the same length.")
    valid = ~np.isnan(scores)
    if not valid.any():
        raise ValueError("no model has a score.")
    best = np.max(scores[valid])
    # an infinite best ties only with itself (inf - inf would be NaN)
    floor = best if np.isinf(best) else best - _TIE * (1.0 + abs(best))
    tied = np.flatnonzero(valid & (scores >= floor))
    return int(tied[np.argmin(sizes[tied])])  # argmin: the first among equal sizes


def select_by_bic(table: pd.DataFrame) -> int:
    """The number of components of smallest BIC (:func:`select_by_criterion`'s ties).

    `table` has a column ``n_components`` (the model's size) and a column
    ``bic``.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.inference import select_by_bic
    >>> select_by_bic(pd.DataFrame({"n_components": [1, 2], "bic": [2.45, 2.45 - 1e-12]}))
    1
    """
    sizes = table["n_components"].to_numpy()
    return int(sizes[select_by_criterion(-table["bic"].to_numpy(dtype=float), sizes)])
