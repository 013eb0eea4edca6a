"""The Beta mixture as a value: a distribution of success probabilities.

:class:`BetaMixture` holds the weights and Beta shapes of a fitted (or
assumed) mixture and answers everything the rest of the library asks of it:
the metrics at any horizon, the density, CDF and quantile function, the
beta-binomial mixture of counts, random draws, and the Wasserstein-1 distance
to another distribution. :func:`wasserstein1` and
:func:`wasserstein1_midpoint` compare a mixture (or a sample) with a sample
of scores, exactly and by the first paper's midpoint-quantile approximation.

The quantile function is solved by bisection inside the bracket spanned by
the components' own quantiles (each found by ``scipy.special.betaincinv``):
the mixture's CDF at the smallest of them is at most the level and at the
largest at least it, so the bracket always holds the root and the bisection
runs to adjacent doubles, not a fixed number of steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betainc, betaincinv

from ._validation import check_k, check_metric, check_seed
from ._validation import check_mixture
from .metrics import evaluate_metric

__all__ = ["BetaMixture", "mixture_ppf", "wasserstein1", "wasserstein1_midpoint"]

# bisection halves an interval of width <= 1 to the spacing of doubles near
# 1e-300 well within this many steps; it stops earlier once every bracket is
# two adjacent doubles
_MAX_BISECTIONS = 1100


class BetaMixture:
    """A finite mixture of Beta distributions on [0, 1].

    Parameters
    ----------
    weights, alpha, beta : array_like
        Mixture weights (non-negative, summing to 1) and positive Beta
        shapes, one per component (1-d, same length).

    Attributes
    ----------
    weights, alpha, beta : numpy.ndarray
        Read-only copies of the parameters.
    n_components : int

    Examples
    --------
    >>> from passmix.distributions import BetaMixture
    >>> g = BetaMixture([0.3, 0.7], [1.0, 8.0], [9.0, 2.0])
    >>> round(g.mean, 6)
    0.59
    >>> u = g.cdf(g.ppf([0.05, 0.5, 0.95]))
    >>> [round(float(v), 12) for v in u]
    [0.05, 0.5, 0.95]
    >>> round(g.metric("pass@k", 1), 6)
    0.59
    """

    __slots__ = ("weights", "alpha", "beta")

    def __init__(self, weights: Any, alpha: Any, beta: Any) -> None:
        w, a, b = check_mixture(weights, alpha, beta)
        w, a, b = np.broadcast_arrays(w, a, b)
        if w.ndim != 1:
            raise ValueError("a BetaMixture takes 1-d weights, alpha and beta (one entry per "
                             "component); for posterior draws use passmix.metric_value.")
        for name, arr in (("weights", w), ("alpha", a), ("beta", b)):
            arr = np.array(arr, dtype=float)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BetaMixture is immutable.")

    @classmethod
    def from_fit(cls, fit: Any) -> BetaMixture:
        """The fitted mixture of a :class:`passmix.MixtureFit` (or anything with
        ``weights``, ``alpha`` and ``beta``)."""
        return cls(fit.weights, fit.alpha, fit.beta)

    # -- moments ---------------------------------------------------------------
    @property
    def n_components(self) -> int:
        return int(self.weights.size)

    @property
    def mean(self) -> float:
        """E[theta]."""
        return float(self.weights @ (self.alpha / (self.alpha + self.beta)))

    @property
    def var(self) -> float:
        """Var[theta], by the law of total variance over components."""
        a, b = self.alpha, self.beta
        mu = a / (a + b)
        within = mu * (1.0 - mu) / (a + b + 1.0)
        return float(self.weights @ (within + mu ** 2) - self.mean ** 2)

    @property
    def std(self) -> float:
        """Standard deviation of theta."""
        return float(np.sqrt(max(self.var, 0.0)))

    # -- distribution functions -----------------------------------------------
    def pdf(self, x: Any) -> np.ndarray | float:
        """Density at `x` (0 outside [0, 1])."""
        from scipy import stats  # scipy.stats costs ~1 s to import: only when used

        x, scalar = _points(x, "x")
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = stats.beta.pdf(x[..., None], self.alpha, self.beta) @ self.weights
        return float(dens) if scalar else dens

    def cdf(self, x: Any) -> np.ndarray | float:
        """``G(x) = sum_h w_h I_x(alpha_h, beta_h)`` (0 below 0, 1 above 1)."""
        x, scalar = _points(x, "x")
        out = self._cdf(np.clip(x, 0.0, 1.0))
        return float(out) if scalar else out

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        return betainc(self.alpha, self.beta, x[..., None]) @ self.weights

    def sf(self, x: Any) -> np.ndarray | float:
        """``1 - G(x)``, computed from the components' upper tails."""
        x, scalar = _points(x, "x")
        out = betainc(self.beta, self.alpha, 1.0 - np.clip(x, 0.0, 1.0)[..., None]) \
            @ self.weights
        return float(out) if scalar else out

    def ppf(self, q: Any) -> np.ndarray | float:
        """Quantile function: the smallest x in [0, 1] with ``G(x) >= q``.

        Vectorised bisection to adjacent doubles inside the bracket of the
        components' quantiles (exact ``betaincinv`` for one component).

        Parameters
        ----------
        q : float or array_like
            Probabilities in [0, 1].
        """
        q, scalar = _points(q, "q")
        if np.any((q < 0) | (q > 1)):
            raise ValueError("q must lie in [0, 1].")
        out = mixture_ppf(self.weights, self.alpha, self.beta, q)
        return float(out) if scalar else out

    def quantile(self, q: Any) -> np.ndarray | float:
        """Alias of :meth:`ppf`."""
        return self.ppf(q)

    def interval(self, confidence: float) -> tuple[float, float]:
        """Central interval holding `confidence` of the mass (as ``scipy.stats``)."""
        if not 0.0 < confidence < 1.0:
            raise ValueError("confidence must lie in (0, 1).")
        lo, hi = self.ppf([(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
        return float(lo), float(hi)

    # -- counts and draws -----------------------------------------------------
    def pmf(self, y: Any, m: Any) -> np.ndarray | float:
        """Beta-binomial mixture: probability of `y` successes in `m` trials."""
        from scipy import stats

        y = np.asarray(y)
        m = np.asarray(m)
        out = stats.betabinom.pmf(y[..., None], m[..., None], self.alpha, self.beta) \
            @ self.weights
        return float(out) if np.ndim(out) == 0 else out

    def rvs(self, size: int | tuple[int, ...] = 1, seed: Any = None) -> np.ndarray:
        """Random success probabilities drawn from the mixture."""
        rng = np.random.default_rng(check_seed(seed))
        comp = rng.choice(self.n_components, size=size, p=self.weights / self.weights.sum())
        return rng.beta(self.alpha[comp], self.beta[comp])

    # -- metrics and comparison ----------------------------------------------------
    def metric(self, metric: str, k: Any) -> np.ndarray | float:
        """Pass@k, Pass^k or AUC@k of tasks drawn from this mixture, at horizon(s) `k`."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = evaluate_metric(metric, self.weights, self.alpha, self.beta, k_arr)
        return float(out[0]) if scalar else out

    def wasserstein1(self, other: Any, weights: Any = None) -> float:
        """Exact W1 distance to another :class:`BetaMixture` or to a sample of values
        (see :func:`wasserstein1`)."""
        return wasserstein1(self, other, v_weights=weights)

    def components(self) -> pd.DataFrame:
        """One row per component: weight, alpha, beta, mean, concentration."""
        return pd.DataFrame({
            "weight": self.weights, "alpha": self.alpha, "beta": self.beta,
            "mean": self.alpha / (self.alpha + self.beta),
            "concentration": self.alpha + self.beta,
        }, index=pd.RangeIndex(1, self.n_components + 1, name="component"))

    def _partial_integral(self, x: np.ndarray) -> np.ndarray:
        """``A(x) = int_0^x G(t) dt = sum_h w_h [x I_x(a, b) - a/(a+b) I_x(a+1, b)]``."""
        a, b = self.alpha, self.beta
        x = x[..., None]
        return (x * betainc(a, b, x) - a / (a + b) * betainc(a + 1.0, b, x)) @ self.weights

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BetaMixture):
            return NotImplemented
        return all(np.array_equal(getattr(self, n), getattr(other, n))
                   for n in ("weights", "alpha", "beta"))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = ", ".join(f"{w:.4g}*Beta({a:.4g}, {b:.4g})"
                          for w, a, b in zip(self.weights, self.alpha, self.beta))
        return f"BetaMixture({parts})"


def mixture_ppf(weights: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                q: np.ndarray) -> np.ndarray:
    """Quantiles of many mixtures at once (components on the last axis; no validation).

    `weights`, `alpha`, `beta` broadcast to ``(..., H)`` and `q` to ``(...)``;
    used by :meth:`BetaMixture.ppf` and by the finite-difference gradients of
    quantiles, which solve one quantile for every perturbed parameter vector
    in a single bisection.
    """
    w, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (weights, alpha, beta)))
    shape = np.broadcast_shapes(w.shape[:-1], np.shape(q))
    w, a, b = (np.broadcast_to(v, (*shape, v.shape[-1])).reshape(-1, v.shape[-1])
               for v in (w, a, b))
    q = np.broadcast_to(np.asarray(q, dtype=float), shape).ravel()
    comp = betaincinv(a, b, q[:, None])
    if w.shape[-1] == 1:
        return comp[:, 0].reshape(shape)
    lo, hi = comp.min(axis=-1), comp.max(axis=-1)
    active = np.flatnonzero(hi > lo)
    for _ in range(_MAX_BISECTIONS):
        if not active.size:
            break
        mid = 0.5 * (lo[active] + hi[active])
        done = (mid <= lo[active]) | (mid >= hi[active])
        below = np.sum(w[active] * betainc(a[active], b[active], mid[:, None]), axis=-1) \
            < q[active]
        lo[active] = np.where(below & ~done, mid, lo[active])
        hi[active] = np.where(~below & ~done, mid, hi[active])
        active = active[~done]
    return hi.reshape(shape)


def _points(x: Any, name: str) -> tuple[np.ndarray, bool]:
    arr = np.asarray(x, dtype=float)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} contains NaN.")
    return arr, arr.ndim == 0


def _sample(values: Any, weights: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite values and their normalised weights."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError(f"{name} is empty.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if weights is None:
        w = np.full(v.size, 1.0 / v.size)
    else:
        w = np.asarray(weights, dtype=float).ravel()
        if w.shape != v.shape:
            raise ValueError(f"{name}'s weights have {w.size} entries for {v.size} values.")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"{name}'s weights must be finite, non-negative and not all 0.")
        w = w / w.sum()
    order = np.argsort(v, kind="stable")
    return v[order], w[order]


def _discrete_w1(u: np.ndarray, uw: np.ndarray, v: np.ndarray, vw: np.ndarray) -> float:
    """int |F_u - F_v| dx for two discrete distributions (sorted values)."""
    points = np.union1d(u, v)
    fu = np.concatenate([[0.0], np.cumsum(uw)])[np.searchsorted(u, points, side="right")]
    fv = np.concatenate([[0.0], np.cumsum(vw)])[np.searchsorted(v, points, side="right")]
    return float(np.sum(np.abs(fu - fv)[:-1] * np.diff(points)))


def _mixture_discrete_w1(g: BetaMixture, v: np.ndarray, vw: np.ndarray) -> float:
    """int_0^1 |G - F_v| dx exactly, with G's partial integral in closed form.

    On each piece [l, r) where the step function F_v is a constant c, G
    crosses c once at most, at ``x* = G^{-1}(c)`` clipped to the piece; G is
    below c to its left and above to its right.
    """
    inside = np.clip(v, 0.0, 1.0)
    if np.any(inside != v):
        raise ValueError("the values compared with a BetaMixture must lie in [0, 1].")
    left = np.concatenate([[0.0], v])
    right = np.concatenate([v, [1.0]])
    level = np.concatenate([[0.0], np.cumsum(vw)])
    level[-1] = 1.0
    cross = np.clip(g.ppf(np.clip(level, 0.0, 1.0)), left, right)
    a_l, a_x, a_r = (g._partial_integral(p) for p in (left, cross, right))
    below = level * (cross - left) - (a_x - a_l)
    above = (a_r - a_x) - level * (right - cross)
    return float(np.sum(np.maximum(below, 0.0) + np.maximum(above, 0.0)))


def wasserstein1(u: Any, v: Any, u_weights: Any = None, v_weights: Any = None) -> float:
    """Exact Wasserstein-1 distance ``int |F_u(x) - F_v(x)| dx`` on the real line.

    Parameters
    ----------
    u, v : BetaMixture or array_like
        Each a :class:`BetaMixture` or a sample of values (an empirical
        distribution, optionally weighted).
    u_weights, v_weights : array_like, optional
        Weights of a sample (ignored for a mixture).

    Returns
    -------
    float

    Notes
    -----
    Two samples: the area between the step functions, as
    ``scipy.stats.wasserstein_distance``. A mixture and a sample: the area
    piece by piece between the sample's steps, with ``int G`` in closed form
    (no quadrature). Two mixtures: adaptive quadrature of ``|G_u - G_v|``.

    Examples
    --------
    >>> from passmix.distributions import BetaMixture, wasserstein1
    >>> wasserstein1([0.0, 1.0], [0.5])
    0.5
    >>> round(wasserstein1(BetaMixture([1.0], [1.0], [1.0]), [0.5]), 12)
    0.25
    """
    if isinstance(u, BetaMixture) and isinstance(v, BetaMixture):
        from scipy import integrate

        value, _ = integrate.quad(lambda x: abs(u.cdf(x) - v.cdf(x)), 0.0, 1.0, limit=200,
                                  epsabs=1e-13, epsrel=1e-10)
        return float(value)
    if isinstance(v, BetaMixture):
        u, v, u_weights, v_weights = v, u, v_weights, u_weights
    if isinstance(u, BetaMixture):
        return _mixture_discrete_w1(u, *_sample(v, v_weights, "v"))
    return _discrete_w1(*_sample(u, u_weights, "u"), *_sample(v, v_weights, "v"))


def wasserstein1_midpoint(dist: BetaMixture, scores: Any) -> float:
    """The first paper's W1 approximation: ``mean_i |G^{-1}((i - 1/2)/J) - S_(i)|``.

    Parameters
    ----------
    dist : BetaMixture
        The fitted distribution G.
    scores : array_like
        The J reference scores S (sorted here).

    Examples
    --------
    >>> from passmix.distributions import BetaMixture, wasserstein1_midpoint
    >>> g = BetaMixture([1.0], [1.0], [1.0])
    >>> round(wasserstein1_midpoint(g, [0.25, 0.75]), 12)
    0.0
    """
    if not isinstance(dist, BetaMixture):
        raise TypeError(f"dist must be a BetaMixture, got {type(dist).__name__}.")
    s, _ = _sample(scores, None, "scores")
    u = (np.arange(1, s.size + 1) - 0.5) / s.size
    return float(np.mean(np.abs(dist.ppf(u) - s)))
