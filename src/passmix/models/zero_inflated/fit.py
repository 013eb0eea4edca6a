"""Marginal maximum likelihood of the zero-inflated Beta mixture, and its result.

The fit starts from the plain mixture's: for each H the plain optimum (and
its other local optima) with the atom at its lower bound and at the share
of unsolved tasks, plus random starts, are climbed on the compiled
zero-inflated objective; ``BIC(H) = -2 l + 3H log J_obs`` picks H. So the
zero-inflated log-likelihood is never below the plain one at the same H.
:class:`ZeroInflatedFit` is a :class:`~passmix.inference.results.LikelihoodResult`:
its metrics, delta and profile intervals and summary are the generic ones,
over the map from coordinates to ``(pi, weights, alpha, beta)``.

The boundary ``pi = 0`` is allowed: where the data show no atom the optimum
sits on the bound of ``logit_zero`` (reported in ``on_bound``), the profile
region may reach it, and the delta method warns that it treats that
coordinate as known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import logit as logit_fn

from ...data.counts import Counts
from ...distributions import BetaMixture
from ...inference.optimize import maximize, observed_covariance, select_by_bic
from ...inference.profile import LikelihoodRegion, region_drop
from ...inference.results import LikelihoodResult
from ...metrics import (evaluate_logit, evaluate_logit_value, evaluate_metric,
                        logit_with_zero_atom)
from ..mixture._starts import (_Neighbours, _component_moves, _probes, _random_start,
                               _shrunk_rates)
from .model import (ZERO_BOUNDS, bounds, coordinate_names_zi, get_objective,
                    get_sampling_model, mixtures,
                    mixtures_jacobian, n_parameters)

__all__ = ["ZeroInflatedFit", "fit_zero_inflated"]

# random starts per H beside those from the plain fit; probes of the profile search
_N_RANDOM, _N_PROBES = 4, 32


@dataclass(frozen=True, repr=False)
class ZeroInflatedFit(LikelihoodResult):
    """A zero-inflated Beta-mixture fit: an atom of weight ``zero_weight`` at success rate 0
    beside H Beta components.

    Attributes
    ----------
    zero_weight : float
        ``pi``, the share of tasks no attempt solves.
    weights, alpha, beta : numpy.ndarray
        The Beta components (weights within the ``1 - pi`` that is not the atom).
    n_components : int
        H, chosen by BIC unless fixed.
    loglik, bic : float
        Maximised marginal log-likelihood and BIC (``3H`` parameters).
    bic_table : pandas.DataFrame
        One row per H tried.
    params, covariance : numpy.ndarray
        Optimum in the coordinates (the mixture's, then ``logit_zero``) and
        the inverse observed information there.
    converged : bool
        Stationary in every coordinate not held by a bound.
    on_bound : tuple of str
        Coordinates on their box bound (``logit_zero`` when the data show no
        atom).
    n_tasks, n_observed : int
        Tasks, and tasks with at least one trial.
    counts : Counts
        The data fitted.
    plain : MixtureFit
        The plain mixture fitted on the way (its optima start this fit).
    zero_weight_identified : bool
        False when no task succeeded on any trial: an atom at 0 and Beta
        components near 0 then fit the data alike, so the atom's weight is
        not estimated. It is set to its lower bound (no atom, the plain
        mixture's fit) and its profile spans the whole box; the status says so.
    """

    zero_weight: float
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
    plain: Any = None
    local_optima: tuple = field(default=(), repr=False)
    zero_weight_identified: bool = True
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    model_kind: ClassVar[str] = "zero_inflated"

    # -- the model's hooks -------------------------------------------------------
    def box(self) -> np.ndarray:
        """Box bounds of the ``3H`` coordinates."""
        return bounds(self.n_components)

    def objective(self):
        """The compiled zero-inflated objective of H components."""
        return get_objective(self.n_components)

    def set_objective_data(self, objective) -> None:
        """Point `objective` at the fitted counts."""
        objective.set_data(*self.counts.pairs())

    def metric_functions(self, metric: str) -> tuple:
        """``(logit, value, batch)`` of `metric`: ``(1 - pi)`` times the mixture's."""
        return metric_of_coordinates(metric, self.n_components)

    def sampling_model(self, prior: str = "weak", n_components: int | None = None):
        """The PyMC model :func:`passmix.sample` draws from, at this H or `n_components`
        (the atom included)."""
        return get_sampling_model(n_components or self.n_components, prior)

    def region(self, objective, level: float) -> LikelihoodRegion:
        """The likelihood region, searched from the plain fit's optima and the mixture's
        probes and moves, each with the atom where it is."""
        key = ("region", float(level))
        if key not in self._cache:
            h = self.n_components
            t = self.params[-1]
            with_atom = [np.append(z, t) for z in _probes(self.counts, h, _N_PROBES)]
            with_atom += [np.append(z, ZERO_BOUNDS[0]) for z in _probes(self.counts, h, 4)]
            neighbours = _Neighbours(h, self.counts) if h > 1 else None
            self._cache[key] = LikelihoodRegion(
                objective, self.params, self.loglik - region_drop(level), self.covariance,
                self.box(), [z for z, _ in self.local_optima], with_atom,
                neighbours=(lambda z: [np.append(p, z[-1]) for p in neighbours(z[:-1])])
                if neighbours else None,
                logistic=np.ones(self.params.size, dtype=bool),
                moves=(lambda z: [lambda s, c=c, t=z[-1]: np.append(c(s), t)
                                  for c in _component_moves(z[:-1], h)]) if h > 1 else None)
        region = self._cache[key]
        region.objective = objective
        return region

    @property
    def unidentified(self) -> tuple[str, ...]:
        """``("logit_zero",)`` when no task succeeded (see ``zero_weight_identified``)."""
        return () if self.zero_weight_identified else ("logit_zero",)

    def prior_at(self, z):
        """``(zero_weight, weights, alpha, beta)`` at coordinates `z` (the
        :class:`~passmix.inference.LikelihoodResult` hook)."""
        return mixtures(z, self.n_components)

    shape_name: ClassVar[str] = "an atom at 0"

    # -- the model's own ---------------------------------------------------------
    @property
    def distribution(self) -> BetaMixture:
        """The Beta components alone (the distribution of the tasks that are not in the atom)."""
        return BetaMixture(self.weights, self.alpha, self.beta)

    def components(self) -> pd.DataFrame:
        """One row for the atom, then one per Beta component (weights of all tasks)."""
        table = self.distribution.components()
        table["weight"] = table["weight"] * (1.0 - self.zero_weight)
        atom = pd.DataFrame({c: [np.nan] for c in table.columns})
        atom["weight"], atom["mean"] = self.zero_weight, 0.0
        out = pd.concat([atom, table], ignore_index=True)
        out.index = ["zero"] + [str(i + 1) for i in range(self.n_components)]
        return out

    def status(self) -> str:
        """One line on convergence and the atom."""
        text = "converged" if self.converged else "NOT converged"
        if not self.zero_weight_identified:
            text += ("; the atom's weight is not identified (no task succeeded: an atom at 0 "
                     "and success rates near 0 fit alike), set to 0")
        elif "logit_zero" in self.on_bound:
            text += "; no atom at 0 (its weight is on its lower bound)"
        others = [n for n in self.on_bound if n != "logit_zero"]
        if others:
            text += f"; on bound: {', '.join(others)}"
        return text

    def info(self) -> dict[str, Any]:
        """The fit at a glance: estimator, H, the atom's weight, log-likelihood, BIC, status."""
        y, m, weight = self.counts.pairs()
        return {"estimator": "zi_mixture", "n_components": self.n_components,
                "zero_weight": self.zero_weight,
                "never_solved": int(np.sum(weight[(y == 0) & (m > 0)])),
                "zero_weight_identified": self.zero_weight_identified,
                "loglik": self.loglik, "bic": self.bic,
                "converged": self.converged, "on_bound": self.on_bound,
                "status": self.status()}

    def plot(self, k=None, metric: str = "pass@k", *, ax=None, **options):
        """Draw `metric` against the horizon with its interval band
        (:func:`passmix.plots.plot_horizon`)."""
        from ...plots.fit import plot_horizon  # pyplot only when a plot is drawn

        return plot_horizon(self, metric, k, ax=ax, **options)

    def _header(self) -> str:
        return (f"ZeroInflatedFit(H={self.n_components}, J={self.n_observed}, "
                f"zero weight={self.zero_weight:.4g}, loglik={self.loglik:.3f}, "
                f"BIC={self.bic:.3f}, {self.status()})")

    def __repr__(self) -> str:
        return f"{self._header()}\n{self.components().round(4).to_string()}"


def metric_of_coordinates(metric: str, n_components: int):
    """``(logit, value, batch)`` of `metric` in the zero-inflated coordinates.

    The mixture's closed forms (:mod:`passmix.metrics`) composed with the
    atom (:func:`passmix.metrics.logit_with_zero_atom`) and the map from
    coordinates to ``(pi, weights, alpha, beta)``.
    """
    h = n_components

    def logit(z, k):
        pi, w, a, b = mixtures(z, h)
        u, (d_w, d_a, d_b) = evaluate_logit(metric, w, a, b, np.array([k]))
        value, d_u, d_pi = logit_with_zero_atom(u[0], pi)
        jac = mixtures_jacobian(z, h)
        du_dz = np.concatenate([d_w[0], d_a[0], d_b[0]]) @ jac[1:]
        with np.errstate(invalid="ignore"):
            grad = d_u * du_dz + np.nan_to_num(d_pi * jac[0])
        return float(value), grad

    def value(z, k):
        pi, w, a, b = mixtures(z, h)
        return float((1.0 - pi) * evaluate_metric(metric, w, a, b, np.array([k]))[0])

    def batch(zs, k):
        pi, w, a, b = mixtures(zs, h)
        u = evaluate_logit_value(metric, w, a, b, np.array([k]))[..., 0]
        return logit_with_zero_atom(u, pi)[0]

    return logit, value, batch


def fit_zero_inflated(plain, *, n_init: int = 10, seed=0, fitted_only: bool = False
                      ) -> ZeroInflatedFit:
    """Fit the zero-inflated mixture from a plain mixture fit's candidates.

    Called by :func:`passmix.fit` with ``zero_inflated=True`` (or ``"auto"``);
    `plain` is the plain :class:`~passmix.MixtureFit` of the same counts,
    whose optimum at each H it tried starts the search at that H.
    ``fitted_only=True`` tries only the H that `plain` fitted (the shape
    :meth:`passmix.MixtureFit.shape_alternatives` offers beside it).

    Raises
    ------
    ValueError
        If `plain` left some H unfitted (``passmix.fit(...,
        skip_hopeless=True)``, the default): fit it with
        ``skip_hopeless=False``.
    """
    table = plain.bic_table
    if "fitted" in table and not table["fitted"].all() and not fitted_only:
        missing = ", ".join(str(h) for h in table.loc[~table["fitted"], "n_components"])
        raise ValueError(f"the plain fit has no optimum at H = {missing} (skipped as unable to "
                         "win on BIC); the zero-inflated fit starts from each H's, so fit the "
                         "plain mixture with skip_hopeless=False.")
    counts = plain.counts
    y, m, weight = counts.pairs()
    rng = np.random.default_rng(0 if seed is None else seed)  # an int, or the fit's Generator
    rates, cum = _shrunk_rates(y, m, weight.astype(float))
    # the share of tasks never solved, less a little: where the atom would start
    never = float(np.sum(weight[y == 0]) / np.sum(weight))
    t_start = float(np.clip(logit_fn(np.clip(0.8 * never, 1e-4, 0.99)), *ZERO_BOUNDS))
    low = ZERO_BOUNDS[0]
    # no success anywhere: the plain optimum already puts every rate at ~0, and the atom's
    # weight only trades places with it (the likelihood is flat in it to ~1e-8), so a climb
    # would stop wherever it started; the one start with no atom makes the answer the plain
    # fit's, whatever the seed
    identified = bool(np.any(y > 0))
    optima, rows = {}, []
    for h, cand in plain.candidates.items():
        box = bounds(h)
        mix_box = box[:-1]
        starts = [np.append(cand.params, low)]
        if identified:
            starts.append(np.append(cand.params, t_start))
            starts += [np.append(z, t_start) for z, _ in cand.local_optima[:3]]
            starts += [np.append(_random_start(rng, h, rates, cum, mix_box), t_start)
                       for _ in range(min(n_init, _N_RANDOM))]
        objective = get_objective(h)
        with objective.lock:
            objective.set_data(y, m, weight)
            best = maximize(objective, starts, box)
        names = coordinate_names_zi(h)
        optima[h] = best
        k_par = n_parameters(h)
        rows.append({
            "n_components": h, "n_params": k_par, "loglik": best.loglik,
            "bic": -2.0 * best.loglik + k_par * np.log(counts.n_observed),
            "identifiable": k_par <= int(m.max()), "converged": best.converged,
            "on_bound": ", ".join(n for n, f in zip(names, best.on_bound) if f),
            "n_iter": best.n_iter,
        })
    table = pd.DataFrame(rows)
    best_h = select_by_bic(table)
    table["selected"] = table["n_components"] == best_h
    chosen = optima[best_h]
    objective = get_objective(best_h)
    with objective.lock:
        objective.set_data(y, m, weight)
        covariance = observed_covariance(objective, chosen.params)
    pi, w, a, b = mixtures(chosen.params, best_h)
    params = np.array(chosen.params, dtype=float)
    for arr in (w, a, b, params, covariance):
        arr.flags.writeable = False
    names = coordinate_names_zi(best_h)
    return ZeroInflatedFit(
        zero_weight=float(pi), weights=w, alpha=a, beta=b, n_components=best_h,
        loglik=float(chosen.loglik), bic=float(table.loc[table["selected"], "bic"].iloc[0]),
        bic_table=table, params=params, covariance=covariance, converged=bool(chosen.converged),
        on_bound=tuple(n for n, f in zip(names, chosen.on_bound) if f),
        n_tasks=counts.n_tasks, n_observed=counts.n_observed, counts=counts, plain=plain,
        local_optima=tuple(chosen.local_optima), zero_weight_identified=identified)

