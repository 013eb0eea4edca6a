"""Marginal maximum likelihood of the Beta mixture, with BIC over H.

For each candidate H the compiled objective of :mod:`passmix.model` (the
``pymc.find_MAP`` objective with flat priors) is maximised by L-BFGS-B from
`n_init` random starts plus, for H > 1, a start split from the H - 1 optimum;
the best optimum is kept. ``BIC(H) = -2 l + (3H - 1) log J_obs`` picks H.
The result, :class:`MixtureFit`, gives the metrics at any horizon with
delta-method intervals.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import logit, polygamma
from threadpoolctl import threadpool_limits

from ._validation import DegenerateDataWarning, FitWarning, check_k, check_level, check_metric
from .data import Counts
from .intervals import ConfidenceInterval, DeltaMethodResult, delta_method
from .metrics import _evaluate
from .model import bounds, coordinate_names, get_objective, n_free_parameters, pack, unpack

__all__ = ["MixtureFit", "fit"]

_BOUND_TOL = 1e-6
_SCREEN = {"maxiter": 1000, "ftol": 1e-8, "gtol": 1e-5}
_POLISH = {"maxiter": 5000, "ftol": 1e-13, "gtol": 1e-8}
_GRAD_TOL = 1e-4
_DEFAULT_K = (1, 10, 100, 1000)


def as_counts(counts) -> Counts:
    """Accept a :class:`Counts` or a ``(successes, trials)`` pair."""
    if isinstance(counts, Counts):
        return counts
    if isinstance(counts, tuple) and len(counts) == 2:
        return Counts(*counts)
    raise TypeError(
        "counts must be a passmix.Counts or a (successes, trials) tuple, "
        f"got {type(counts).__name__}; see passmix.read_counts for tables and files."
    )


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


@dataclass(frozen=True, repr=False)
class MixtureFit:
    """A Beta-mixture fit of per-task success counts.

    Components are ordered by their mean. Metrics are available at any
    horizon, with delta-method intervals from the observed information.

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
        One row per H tried: loglik, n_params, bic, converged, on_bound, ...
    params : numpy.ndarray
        Optimum in the unconstrained coordinates (:mod:`passmix.model`).
    covariance : numpy.ndarray
        Inverse observed information in those coordinates (pseudo-inverse if
        singular).
    converged : bool
        Whether L-BFGS-B reported convergence for the chosen H.
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

    # -- metrics ---------------------------------------------------------------
    def metric(self, metric: str, k):
        """Point estimate of `metric` (``"pass@k"``, ``"pass^k"``, ``"auc@k"``) at `k`."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = _evaluate(metric, self.weights, self.alpha, self.beta, k_arr)
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

    # -- uncertainty -----------------------------------------------------------
    def delta(self, metric: str, k, level: float = 0.95, *, scale: str = "logit"
              ) -> DeltaMethodResult:
        """Delta-method estimate, standard error, interval and covariance across `k`.

        `scale` is ``"logit"`` (default) or ``"identity"``; see
        :func:`passmix.delta_method`.
        """
        if self.on_bound:
            warnings.warn(
                f"the optimum lies on the box bound of {', '.join(self.on_bound)}; the "
                "delta-method interval treats those coordinates as known.",
                FitWarning, stacklevel=2,
            )
        return delta_method(self.params, self.covariance, self.n_components, metric, k,
                            level=level, scale=scale)

    def interval(self, metric: str, k, level: float = 0.95, *, scale: str = "logit"
                 ) -> ConfidenceInterval:
        """Delta-method confidence interval ``(lower, upper)`` within [0, 1].

        Scalar `k` gives floats; array `k` gives arrays. `scale` as in :meth:`delta`.
        """
        res = self.delta(metric, k, level, scale=scale)
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(res.lower[0]), float(res.upper[0]))
        return res.interval

    def standard_error(self, metric: str, k):
        """Delta-method standard error of `metric` at `k`."""
        se = self.delta(metric, k).standard_error
        return float(se[0]) if np.ndim(k) == 0 else se

    # -- posterior -------------------------------------------------------------
    def sample(self, draws: int = 1000, chains: int = 4, *, prior: str = "weak", seed=None,
               **kwargs):
        """Sample this model's posterior (same H, same data) with NUTS.

        Thin wrapper of :func:`passmix.posterior.sample`: ``prior="weak"``
        (default, proper) or ``"flat"`` (its mode is this MLE; a warning says
        when it is improper for these data); other keywords (``tune``,
        ``n_components``, ``sampler``, ``k``, ``cores``, ...) go there.

        Returns
        -------
        arviz.InferenceData
            Metric draws via :func:`passmix.posterior_metrics`.
        """
        from .posterior import sample

        return sample(self, draws, chains, prior=prior, seed=seed, **kwargs)

    # -- tables ----------------------------------------------------------------
    def components(self) -> pd.DataFrame:
        """One row per component: weight, alpha, beta, mean, concentration."""
        return pd.DataFrame({
            "weight": self.weights, "alpha": self.alpha, "beta": self.beta,
            "mean": self.alpha / (self.alpha + self.beta),
            "concentration": self.alpha + self.beta,
        }, index=pd.RangeIndex(1, self.n_components + 1, name="component"))

    def summary(self, k=_DEFAULT_K, level: float = 0.95, *, scale: str = "logit"
                ) -> pd.DataFrame:
        """Estimates with delta-method intervals for all three metrics.

        Parameters
        ----------
        k : int or array_like of int, default (1, 10, 100, 1000)
            Horizons.
        level : float, default 0.95
            Confidence level.
        scale : {"logit", "identity"}, default "logit"
            Scale of the delta-method interval (see :func:`passmix.delta_method`).

        Returns
        -------
        pandas.DataFrame
            Columns metric, k, estimate, se, lower, upper.
        """
        level = check_level(level)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)  # said once below, not per metric
            frames = [self.delta(m, np.atleast_1d(k), level, scale=scale).summary()
                      for m in ("pass@k", "pass^k", "auc@k")]
        if self.on_bound:
            warnings.warn(f"the optimum lies on the box bound of {', '.join(self.on_bound)}; "
                          "intervals treat those coordinates as known.", FitWarning, stacklevel=2)
        return pd.concat(frames, ignore_index=True)

    def _header(self) -> str:
        trials = self.counts.trials[self.counts.trials > 0]
        m = f"{trials.min()}" if trials.min() == trials.max() else f"{trials.min()}-{trials.max()}"
        status = "converged" if self.converged else "NOT converged"
        if self.on_bound:
            status += f"; on bound: {', '.join(self.on_bound)}"
        return (f"MixtureFit(H={self.n_components}, J={self.n_observed}, m={m}, "
                f"loglik={self.loglik:.3f}, BIC={self.bic:.3f}, {status})")

    def __repr__(self) -> str:
        comps = self.components().round(4).to_string()
        return f"{self._header()}\n{comps}"

    def _repr_html_(self) -> str:
        return (f"<p><b>{self._header()}</b></p>" + self.components().to_html(float_format="%.4g")
                + self.bic_table.to_html(float_format="%.4g", index=False))


# -- optimisation ------------------------------------------------------------------

def _shrunk_rates(y, m, weight):
    rate = (y + 0.5) / (m + 1.0)
    order = np.argsort(rate)
    cum = np.cumsum(weight[order]) / weight.sum()
    return rate[order], cum


def _random_start(rng, h, rates, cum, box):
    levels = np.sort(rng.uniform(0.02, 0.98, h))
    means = rates[np.minimum(np.searchsorted(cum, levels), rates.size - 1)]
    eta = np.sort(logit(means) + rng.normal(0.0, 0.3, h))
    z = np.concatenate([
        rng.normal(0.0, 0.5, h - 1), eta[:1], np.log(np.maximum(np.diff(eta), 0.05)),
        rng.uniform(np.log(1.0), np.log(50.0), h),
    ])
    return np.clip(z, box[:, 0], box[:, 1])


def _split_start(previous: CandidateFit, box):
    """Split the heaviest component of the H - 1 optimum in two along the logit mean."""
    w, a, b = unpack(previous.params, previous.n_components)
    c = int(np.argmax(w))
    spread = np.clip(0.5 * np.sqrt(polygamma(1, a[c]) + polygamma(1, b[c])), 0.1, 2.0)
    eta, kappa = np.log(a[c] / b[c]), a[c] + b[c]
    new_eta = np.array([eta - spread, eta + spread])
    new_a = kappa / (1.0 + np.exp(-new_eta))
    new_b = kappa - new_a
    weights = np.concatenate([np.delete(w, c), [w[c] / 2, w[c] / 2]])
    alpha = np.concatenate([np.delete(a, c), new_a])
    beta = np.concatenate([np.delete(b, c), new_b])
    return np.clip(pack(weights, alpha, beta), box[:, 0], box[:, 1])


def _on_bound(z, box, h) -> tuple[str, ...]:
    tol = _BOUND_TOL * (1.0 + np.abs(box))
    hit = (z <= box[:, 0] + tol[:, 0]) | (z >= box[:, 1] - tol[:, 1])
    names = coordinate_names(h)
    return tuple(n for n, flag in zip(names, hit) if flag)


def _fit_one_h(objective, h, starts, box) -> CandidateFit:
    # Every start is run to a loose tolerance and only the best is polished:
    # the starts mostly find the same optimum, and the polish is where the
    # precision is needed.
    best = None
    for z0 in starts:
        res = minimize(objective.negative, z0, jac=True, method="L-BFGS-B", bounds=box,
                       options=_SCREEN)
        if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    if best is None:
        raise RuntimeError(f"every optimisation for H = {h} gave a non-finite likelihood.")
    polished = minimize(objective.negative, best.x, jac=True, method="L-BFGS-B", bounds=box,
                        options=_POLISH)
    if np.isfinite(polished.fun) and polished.fun <= best.fun:
        best = polished
    # L-BFGS-B often ends a tight polish with "ABNORMAL" (no further decrease in
    # double precision) at a true optimum; judge convergence by the projected gradient.
    grad = objective.negative(best.x)[1]
    at_lower = (best.x <= box[:, 0]) & (grad > 0)
    at_upper = (best.x >= box[:, 1]) & (grad < 0)
    projected = np.where(at_lower | at_upper, 0.0, grad)
    converged = bool(np.max(np.abs(projected)) <= _GRAD_TOL * np.sqrt(1.0 + abs(best.fun)))
    return CandidateFit(
        n_components=h, params=best.x.copy(), loglik=-float(best.fun),
        converged=converged, message=str(best.message), n_iter=int(best.nit),
        on_bound=_on_bound(best.x, box, h), n_starts=len(starts),
    )


def _covariance(objective, params) -> np.ndarray:
    """Inverse observed information; a pseudo-inverse over its positive part if singular.

    At an optimum on a box bound (or along a flat ridge) the information has
    zero or slightly negative eigenvalues; those directions get zero
    variance instead of a negative one (the coordinates are treated as known,
    as the fit's FitWarning says).
    """
    info = -objective.hessian(params)
    try:
        chol = np.linalg.cholesky(info)
        eye = np.eye(info.shape[0])
        return np.linalg.solve(chol.T, np.linalg.solve(chol, eye))
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(info)
        keep = values > 1e-10 * max(values.max(), 1e-300)
        inverse = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
        return (vectors * inverse) @ vectors.T


def _warn_degenerate(counts: Counts, y, m, weight) -> None:
    if counts.n_observed == 1:
        warnings.warn("only one task has trials: the spread of task difficulty is not "
                      "identified and extrapolation rests on the model alone.",
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
        n_init: int = 10, seed=None) -> MixtureFit:
    """Fit a Beta mixture to per-task success counts by marginal maximum likelihood.

    Parameters
    ----------
    counts : Counts or tuple of array_like
        The data: a :class:`passmix.Counts`, or ``(successes, trials)``.
    max_components : int, default 4
        Largest H tried; BIC chooses among H = 1..max_components.
    n_components : int, optional
        Fix H instead of selecting it.
    n_init : int, default 10
        Random initialisations per H (a split of the H - 1 optimum is added).
    seed : int or numpy.random.Generator, optional
        Seed for the random initialisations.

    Returns
    -------
    MixtureFit

    Notes
    -----
    The likelihood depends on the data only through the distinct ``(y, m)``
    pairs, so the cost does not grow with the number of tasks. With ``m``
    trials per task only the first ``m`` moments of the mixing distribution
    are identified (``3H - 1 <= m``); the BIC table marks which H satisfy this.

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
    y, m, weight = counts.pairs()
    if y.size == 0:
        raise ValueError("no task has any trial (every m_j is 0); nothing to fit.")
    if n_components is not None:
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a whole number >= 1, got {n_components!r}.")
        candidates_h = [int(n_components)]
    else:
        if int(max_components) != max_components or max_components < 1:
            raise ValueError(f"max_components must be a whole number >= 1, got {max_components!r}.")
        candidates_h = list(range(1, int(max_components) + 1))
    if int(n_init) != n_init or n_init < 1:
        raise ValueError(f"n_init must be a whole number >= 1, got {n_init!r}.")
    _warn_degenerate(counts, y, m, weight)

    # tiny problems: BLAS threads only contend with each other (and with other
    # fits running in parallel), so pin them to one for the whole fit
    with threadpool_limits(1, user_api="blas"):
        return _fit(counts, y, m, weight, candidates_h, n_components, n_init, seed)


def _fit(counts, y, m, weight, candidates_h, n_components, n_init, seed) -> MixtureFit:
    rng = np.random.default_rng(seed)
    rates, cum = _shrunk_rates(y, m, weight.astype(float))
    n_obs = counts.n_observed
    candidates: dict[int, CandidateFit] = {}
    previous = None
    for h in range(1, max(candidates_h) + 1):
        if h not in candidates_h and n_components is not None:
            continue
        box = bounds(h)
        starts = [_random_start(rng, h, rates, cum, box) for _ in range(n_init)]
        if previous is not None and previous.n_components == h - 1:
            starts.append(_split_start(previous, box))
        objective = get_objective(h)
        with objective.lock:
            objective.set_data(y, m, weight)
            previous = candidates[h] = _fit_one_h(objective, h, starts, box)

    rows = []
    for h, cand in candidates.items():
        k_par = n_free_parameters(h)
        rows.append({
            "n_components": h, "n_params": k_par, "loglik": cand.loglik,
            "bic": -2.0 * cand.loglik + k_par * np.log(n_obs),
            "identifiable": k_par <= int(m.max()), "converged": cand.converged,
            "on_bound": ", ".join(cand.on_bound), "n_iter": cand.n_iter,
        })
    table = pd.DataFrame(rows)
    best_h = int(table.loc[table["bic"].idxmin(), "n_components"])
    table["selected"] = table["n_components"] == best_h
    chosen = candidates[best_h]

    objective = get_objective(best_h)
    with objective.lock:
        objective.set_data(y, m, weight)
        covariance = _covariance(objective, chosen.params)
    if not chosen.converged:
        warnings.warn(f"the optimisation for H = {best_h} did not converge (gradient not "
                      f"zero at the best point; L-BFGS-B: {chosen.message})",
                      FitWarning, stacklevel=3)
    weights, alpha, beta = unpack(chosen.params, best_h)
    for arr in (weights, alpha, beta, chosen.params, covariance):
        arr.flags.writeable = False
    return MixtureFit(
        weights=weights, alpha=alpha, beta=beta, n_components=best_h, loglik=chosen.loglik,
        bic=float(table.loc[table["selected"], "bic"].iloc[0]), bic_table=table,
        params=chosen.params, covariance=covariance, converged=chosen.converged,
        on_bound=chosen.on_bound, n_tasks=counts.n_tasks, n_observed=n_obs, counts=counts,
        candidates=candidates,
    )
