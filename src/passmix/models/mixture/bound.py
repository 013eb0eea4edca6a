"""An upper bound on the log-likelihood of any mixing distribution, for the BIC search.

Every Beta mixture is a mixing distribution G of the success rate, and the
marginal log-likelihood ``l(G) = sum_j w_j log f_G(y_j)`` (``f_G(y) = int
Binom(y; m, theta) dG(theta)``) is concave in G. So for any G,

    l(G') <= l(G) + sup_theta D_G(theta),   D_G(theta) = sum_j w_j (Binom(y_j; m_j, theta) / f_G(y_j) - 1),

for every G' (``log x <= log a + (x - a) / a``, integrated over G'). With G
near the nonparametric maximum (a few EM steps on a grid) the bound is
within a fraction of a nat of the best any mixture can do, and so of the
best any H can do: an H whose BIC, at that log-likelihood, is still worse
than one already fitted cannot be chosen, and :func:`passmix.fit` does not
fit it.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import xlog1py, xlogy
from scipy.stats import beta as beta_dist

from ..._special import log_choose

__all__ = ["mixture_loglik_bound"]

# EM stops once the bound is within this of the grid distribution's own log-likelihood
_GAP = 0.05
_MAX_EM = 1000


def mixture_loglik_bound(y, m, weight=None, *, target: float | None = None,
                         start=None) -> float:
    """An upper bound on the marginal log-likelihood of any mixing distribution of the
    success rate, hence of every Beta mixture, for counts `y` of `m` trials.

    Parameters
    ----------
    y, m : array_like of int
        Successes and trials per task (or per distinct pair).
    weight : array_like, optional
        How many tasks each pair stands for (default 1 each).
    target : float, optional
        The value the caller needs the bound below: EM stops as soon as its
        grid distribution's own log-likelihood (a lower bound on the best)
        exceeds it, since no bound can then fall below it. The result is an
        upper bound either way, only looser.
    start : tuple of array_like, optional
        ``(weights, alpha, beta)`` of a Beta mixture fitted to the same
        counts: EM starts from its mass on the grid (else from the uniform),
        which is near the best already.

    Returns
    -------
    float
        ``l(G) + sup_theta D_G(theta)`` at a grid distribution G fitted by
        EM (see the module docstring): no mixture's log-likelihood, on the
        scale of :attr:`passmix.MixtureFit.loglik`, exceeds it. ``inf`` when
        EM passed `target` first.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.models.mixture.bound import mixture_loglik_bound
    >>> rng = np.random.default_rng(0)
    >>> counts = passmix.Counts(rng.binomial(10, rng.beta(2, 3, 200)), np.full(200, 10))
    >>> bound = mixture_loglik_bound(counts.successes, counts.trials)
    >>> fit = passmix.fit(counts, max_components=1, seed=0)
    >>> bool(fit.loglik <= bound < fit.loglik + 10)
    True
    """
    y = np.asarray(y, dtype=float)
    m = np.asarray(m, dtype=float)
    w = np.ones(y.size) if weight is None else np.asarray(weight, dtype=float)
    keep = (m > 0) & (w > 0)
    y, m, w = y[keep], m[keep], w[keep]
    if y.size == 0:
        return 0.0
    # an arcsine grid, theta = sin^2(phi) with phi evenly spaced: its spacing grows as
    # sqrt(theta (1 - theta)), as a binomial's width does, so every pmf spans about
    # n / (pi sqrt(m)) points (at least 5), near 0 and 1 too (where it is ~1 / m wide)
    n_grid = int(np.clip(16 * np.sqrt(m.max()), 2001, 20001))
    grid = np.sin(np.linspace(0.0, np.pi / 2, n_grid)) ** 2
    grid[-1] = 1.0
    f = _binomial_pmf(y, m, grid)                                     # (pairs, grid)
    g = np.full(n_grid, 1.0 / n_grid)
    if start is not None:
        # each grid point's cell under the fitted mixture, kept away from 0 so that EM
        # can still move mass anywhere
        edges = np.clip(np.concatenate([[0.0], (grid[1:] + grid[:-1]) / 2, [1.0]]), 0, 1)
        weights, alpha, beta = (np.asarray(v, dtype=float) for v in start)
        cdf = beta_dist.cdf(edges[:, None], alpha[None, :], beta[None, :]) @ weights
        g = 0.99 * np.maximum(np.diff(cdf), 0.0) / max(cdf[-1] - cdf[0], 1e-300) + 0.01 * g
    total = w.sum()
    for step in range(_MAX_EM):
        f_g = f @ g
        ratio = (w / f_g) @ f                                          # D_G + total, on the grid
        if step % 10 == 0:
            if target is not None and float(w @ np.log(f_g)) > target:
                return np.inf  # the best mixture is above the target: no bound is needed
            if ratio.max() - total < _GAP:
                break
        g *= ratio / total
    f_g = f @ g
    loglik = float(w @ np.log(f_g))

    def d(theta: float) -> float:
        return float((w / f_g) @ _binomial_pmf(y, m, np.array([theta]))[:, 0]) - total

    ratio = (w / f_g) @ f
    best = float(ratio.max()) - total
    # refine the grid's local maxima between their neighbours: the sup is a smooth
    # function's, which the grid resolves to within its spacing
    inner = np.flatnonzero((ratio[1:-1] >= ratio[:-2]) & (ratio[1:-1] >= ratio[2:])) + 1
    tops = np.concatenate([inner[np.argsort(ratio[inner])[-5:]], [0, n_grid - 1]])
    for i in np.unique(tops):
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]
        res = minimize_scalar(lambda t: -d(t), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-10})
        best = max(best, -float(res.fun))
    return loglik + max(best, 0.0)


def _binomial_pmf(y: np.ndarray, m: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Binom(y; m, theta), shape (pairs, len(theta)): ufuncs on the outer product, exact at
    theta = 0 and 1."""
    return np.exp(log_choose(m, y)[:, None] + xlogy(y[:, None], theta[None, :])
                  + xlog1py((m - y)[:, None], -theta[None, :]))
