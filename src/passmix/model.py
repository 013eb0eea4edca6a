"""The H-component Beta-mixture model in PyMC and its compiled objective.

The free parameters are the unconstrained coordinates of ``docs/formulas.md`` section 1,
in this order (``3H - 1`` numbers in all):

========================  =======  ============================================
name                      size     meaning
========================  =======  ============================================
``logit_weights``         H - 1    weights are ``softmax([0, logit_weights])``
``logit_mean_first``      1        logit of the smallest component mean
``log_mean_gaps``         H - 1    logs of the gaps between ordered logit means
``log_concentration``     H        ``log(alpha_h + beta_h)``
========================  =======  ============================================

The means are ordered by construction, which fixes the labels of the
components. With flat priors on these coordinates the posterior mode is the
marginal maximum-likelihood estimate, which is what :func:`passmix.fit`
computes with the same objective as ``pymc.find_MAP`` (``logp`` with
``jacobian=False``, maximised by L-BFGS-B). The same model, with
``prior="weak"`` (independent normal priors on the same coordinates, see
:data:`WEAK_PRIOR`) or ``prior="flat"``, is what :func:`passmix.posterior.sample`
hands to ``pymc.sample``. The model, its log-density and its
gradient are built and compiled once per number of components and reused for
every initialisation, data set and group: the data enter through ``pm.Data``
containers that are updated in place.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytensor.tensor.special  # noqa: F401  (log_softmax)
from pymc.distributions.dist_math import betaln
from pymc.pytensorf import join_nonshared_inputs
from scipy.special import expit, gammaln, log_expit

__all__ = [
    "PARAMETER_BOUNDS",
    "WEAK_PRIOR",
    "MixtureObjective",
    "SamplingModel",
    "build_model",
    "get_objective",
    "get_sampling_model",
    "pair_data",
    "n_free_parameters",
    "pack",
    "split_coordinates",
    "unpack",
    "unpack_jacobian",
]

#: Box bounds on the unconstrained coordinates, keeping the optimiser away
#: from overflow. A coordinate that ends on its bound is reported by the fit.
PARAMETER_BOUNDS = {
    "logit_weights": (-15.0, 15.0),
    "logit_mean_first": (-20.0, 20.0),
    "log_mean_gaps": (-10.0, 5.0),
    "log_concentration": (-7.0, 14.0),
}

#: The weakly-informative default prior of the Bayesian path: independent
#: ``Normal(mu, sigma)`` on each unconstrained coordinate, as ``(mu, sigma)``.
#:
#: * ``logit_weights`` ``N(0, 1.5)``: a weight relative to the first component's
#:   within a factor ``e^3 ~ 20`` either way with 95% prior probability; keeps a
#:   weight from running to 0, where its component's parameters are free.
#: * ``logit_mean_first`` ``N(0, 3)``: the smallest component mean in
#:   ``(0.0028, 0.9972)`` with 95% prior probability; tasks with success rates
#:   of 1e-4 remain reachable when the data point there.
#: * ``log_mean_gaps`` ``N(0, 1.5)``: gaps between ordered logit means from
#:   0.05 to 20; keeps two components from coinciding (gap -> 0), where the
#:   posterior would spread over the split of one component into two.
#: * ``log_concentration`` ``N(0, 2)``: ``alpha + beta`` from 0.02 to 50 with
#:   95% prior probability, median 1 (the Jeffreys ``Beta(1/2, 1/2)``; U-shaped
#:   task difficulty, many tasks solved never or always, is common in
#:   evaluation data). Without it the posterior is improper: as the
#:   concentration grows the likelihood tends to the binomial likelihood of a
#:   common success rate, a positive constant, so a flat prior leaves infinite
#:   mass out there. That plateau also gives the posterior of the log
#:   concentration a heavy right tail when the data are few, which this prior
#:   trims; a wider prior (sd 2.5) pulled Pass@k's credible intervals up and
#:   lowered their coverage in simulation (J = 30, m = 5).
#:
#: Priors on these coordinates rather than on ``(w, alpha, beta)`` keep the
#: model the one the maximum-likelihood fit uses: the posterior is the
#: likelihood times a smooth proper density with the same parameterisation,
#: ordering and sampling geometry.
WEAK_PRIOR = {
    "logit_weights": (0.0, 1.5),
    "logit_mean_first": (0.0, 3.0),
    "log_mean_gaps": (0.0, 1.5),
    "log_concentration": (0.0, 2.0),
}

_PRIORS = ("flat", "weak")


def n_free_parameters(n_components: int) -> int:
    """Number of free parameters ``3H - 1`` of an H-component mixture."""
    return 3 * n_components - 1


def _blocks(n_components: int) -> list[tuple[str, int]]:
    h = n_components
    blocks = [("logit_weights", h - 1), ("logit_mean_first", 1),
              ("log_mean_gaps", h - 1), ("log_concentration", h)]
    return [(name, size) for name, size in blocks if size > 0]


def coordinate_names(n_components: int) -> list[str]:
    """Names of the free coordinates, in the optimiser's order."""
    names = []
    for name, size in _blocks(n_components):
        names += [name] if name == "logit_mean_first" else [f"{name}[{i}]" for i in range(size)]
    return names


def bounds(n_components: int) -> np.ndarray:
    """Box bounds as an array of shape ``(3H - 1, 2)`` in the optimiser's order."""
    rows = []
    for name, size in _blocks(n_components):
        rows += [PARAMETER_BOUNDS[name]] * size
    return np.array(rows, dtype=float)


def split_coordinates(z: np.ndarray, n_components: int) -> tuple[np.ndarray, ...]:
    """Split coordinates into (logit_weights, logit_mean_first, log_mean_gaps, log_concentration)."""
    h = n_components
    z = np.asarray(z, dtype=float)
    logit_w = z[..., : h - 1]
    first = z[..., h - 1]
    gaps = z[..., h : 2 * h - 1]
    log_kappa = z[..., 2 * h - 1 :]
    return logit_w, first, gaps, log_kappa


def unpack(z, n_components: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map unconstrained coordinates to ``(weights, alpha, beta)``.

    Broadcasts over leading dimensions of `z` (last axis has size ``3H - 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.model import unpack
    >>> w, a, b = unpack(np.array([0.0, -1.0, 0.0, np.log(4.0), np.log(10.0)]), 2)
    >>> np.round(w, 3), np.round(a + b, 3)
    (array([0.5, 0.5]), array([ 4., 10.]))
    """
    logit_w, first, gaps, log_kappa = split_coordinates(z, n_components)
    zeros = np.zeros(logit_w.shape[:-1] + (1,))
    full = np.concatenate([zeros, logit_w], axis=-1)
    weights = np.exp(full - full.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    eta = first[..., None] + np.concatenate([zeros, np.cumsum(np.exp(gaps), axis=-1)], axis=-1)
    # log-sigmoid keeps alpha and beta positive and accurate for extreme means
    alpha = np.exp(log_kappa + log_expit(eta))
    beta = np.exp(log_kappa + log_expit(-eta))
    return weights, alpha, beta


def unpack_jacobian(z, n_components: int, unpacked=None) -> np.ndarray:
    """Jacobian of :func:`unpack` at a single point `z`.

    Returns an array of shape ``(3H, 3H - 1)``: rows are the weights, then
    alpha, then beta; columns the unconstrained coordinates. `unpacked` may
    pass ``unpack(z, n_components)`` if the caller has it already.
    """
    h = n_components
    z = np.asarray(z, dtype=float)
    w, alpha, beta = unpack(z, h) if unpacked is None else unpacked
    _, first, gaps, _ = split_coordinates(z, h)
    if h == 1:  # the common case, without the loops
        mu = expit(first)
        return np.array([[0.0, 0.0], [alpha[0] * (1.0 - mu), alpha[0]],
                         [-beta[0] * mu, beta[0]]])
    mu = expit(np.log(alpha) - np.log(beta))
    jac = np.zeros((3 * h, 3 * h - 1))
    # softmax over [0, logit_weights]: d w_i / d a_j = w_i (delta_{i, j+1} - w_{j+1})
    for j in range(h - 1):
        jac[:h, j] = -w * w[j + 1]
        jac[j + 1, j] += w[j + 1]
    # d eta_c / d(first) = 1, d eta_c / d gap_i = exp(gap_i) for i < c
    d_eta = np.zeros((h, h))
    d_eta[:, 0] = 1.0
    for i in range(h - 1):
        d_eta[i + 1 :, i + 1] = np.exp(gaps[i])
    mean_cols = slice(h - 1, 2 * h - 1)
    jac[h : 2 * h, mean_cols] = (alpha * (1.0 - mu))[:, None] * d_eta
    jac[2 * h :, mean_cols] = (-beta * mu)[:, None] * d_eta
    kappa_cols = np.arange(2 * h - 1, 3 * h - 1)
    jac[h + np.arange(h), kappa_cols] = alpha
    jac[2 * h + np.arange(h), kappa_cols] = beta
    return jac


def pack(weights, logit_means, log_concentrations) -> np.ndarray:
    """Inverse of :func:`unpack` for one mixture given by its weights, logit means
    and log concentrations (any order; components are sorted by mean).

    Working from logit means and log concentrations rather than ``(alpha, beta)``
    keeps a component whose shape underflows representable. Zero weights are
    raised to the smallest positive double and equal means get a tiny gap, so
    the coordinates are finite and the ordering strict.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.model import pack, unpack
    >>> z = pack([0.25, 0.75], [1.0, -2.0], [np.log(5.0), np.log(40.0)])
    >>> w, a, b = unpack(z, 2)
    >>> np.round(w, 3), np.round(a + b, 3)
    (array([0.75, 0.25]), array([40.,  5.]))
    """
    weights = np.maximum(np.asarray(weights, dtype=float), np.finfo(float).tiny)
    eta = np.asarray(logit_means, dtype=float)
    log_kappa = np.asarray(log_concentrations, dtype=float)
    order = np.argsort(eta, kind="stable")
    weights, eta, log_kappa = weights[order], eta[order], log_kappa[order]
    logit_w = np.log(weights[1:]) - np.log(weights[0])
    gaps = np.log(np.maximum(np.diff(eta), 1e-4))
    return np.concatenate([logit_w, eta[:1], gaps, log_kappa])


def build_model(n_components: int, *, prior: str = "flat") -> pm.Model:
    """Build the PyMC model of an H-component Beta mixture of binomial counts.

    The data are the distinct ``(y, m)`` pairs and how many tasks share each
    (``pm.Data`` containers ``"y"``, ``"failures"`` (``m - y``), ``"weight"``
    and ``"log_comb"`` (``log C(m, y)``)), so the cost of one evaluation does
    not grow with the number of tasks.

    Parameters
    ----------
    n_components : int
        Number of mixture components H >= 1.
    prior : {"flat", "weak"}
        ``"flat"`` (what :func:`passmix.fit` maximises): improper flat priors on
        the unconstrained coordinates, so the posterior mode is the marginal
        maximum-likelihood estimate. ``"weak"``: independent normal priors on
        the same coordinates (:data:`WEAK_PRIOR`), a proper posterior for any
        data.

    Returns
    -------
    pymc.Model
        With free variables named as in the module docstring, deterministics
        ``weights``, ``alpha``, ``beta``, and the potential ``loglik``.

    Examples
    --------
    >>> from passmix.model import build_model
    >>> model = build_model(2)
    >>> sorted(v.name for v in model.free_RVs)
    ['log_concentration', 'log_mean_gaps', 'logit_mean_first', 'logit_weights']
    """
    h = int(n_components)
    if h < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    if prior not in _PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(_PRIORS)}.")
    with pm.Model() as model:
        # counts as float64: pm.Data would store integers as int32, which wraps
        # a trial count of 2^31 or more
        y = pm.Data("y", np.zeros(1))
        failures = pm.Data("failures", np.ones(1))
        weight = pm.Data("weight", np.ones(1))
        log_comb = pm.Data("log_comb", np.zeros(1))
        free = {}
        for name, size in _blocks(h):
            shape = () if name == "logit_mean_first" else (size,)
            if prior == "flat":
                free[name] = pm.Flat(name, shape=shape)
            else:
                mu, sigma = WEAK_PRIOR[name]
                free[name] = pm.Normal(name, mu=mu, sigma=sigma, shape=shape)
        if h > 1:
            log_w = pt.special.log_softmax(pt.concatenate([pt.zeros(1), free["logit_weights"]]))
            eta = free["logit_mean_first"] + pt.concatenate(
                [pt.zeros(1), pt.cumsum(pt.exp(free["log_mean_gaps"]))]
            )
        else:
            log_w = pt.zeros(1)
            eta = pt.shape_padright(free["logit_mean_first"])
        log_kappa = free["log_concentration"]
        alpha = pt.exp(log_kappa + -pt.softplus(-eta))
        beta = pt.exp(log_kappa + -pt.softplus(eta))
        pm.Deterministic("weights", pt.exp(log_w))
        pm.Deterministic("alpha", alpha)
        pm.Deterministic("beta", beta)
        # beta-binomial log-pmf. Failures enter as data, not as m - y: in floating
        # point (beta + m) - y is 0 for a tiny beta, and gammaln(0) is infinite.
        component_logp = (log_comb[:, None] + betaln(alpha + y[:, None], beta + failures[:, None])
                          - betaln(alpha, beta))
        loglik = pt.logsumexp(log_w + component_logp, axis=1)
        pm.Potential("loglik", pt.sum(weight * loglik))
    return model


def pair_data(y, m, weight) -> dict[str, np.ndarray]:
    """Values of the model's data containers for distinct pairs ``(y, m)``.

    Returns a dict with keys ``"y"``, ``"failures"``, ``"weight"`` and
    ``"log_comb"``, ready for ``pymc.set_data``.
    """
    y = np.asarray(y, dtype="int64")
    failures = np.asarray(m, dtype="int64") - y
    log_comb = gammaln(y + failures + 1.0) - gammaln(y + 1.0) - gammaln(failures + 1.0)
    return {"y": y.astype(float), "failures": failures.astype(float),
            "weight": np.asarray(weight, dtype=float), "log_comb": log_comb}


@dataclass
class MixtureObjective:
    """Compiled ``logp`` and gradient of one H's model, driven by scipy.

    Holds the PyMC model and a single compiled function of the raveled
    unconstrained coordinates returning ``(logp, dlogp)`` with
    ``jacobian=False``: the objective ``pymc.find_MAP`` maximises, compiled
    once. :meth:`set_data` swaps the data in place; nothing is recompiled.
    """

    n_components: int
    model: pm.Model
    _fn: pytensor.compile.function.types.Function
    lock: threading.RLock

    def set_data(self, y: np.ndarray, m: np.ndarray, weight: np.ndarray) -> None:
        """Point the model at new distinct pairs ``(y, m)`` with task counts `weight`."""
        pm.set_data(pair_data(y, m, weight), model=self.model)

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient at unconstrained coordinates `z`."""
        logp, grad = self._fn(np.asarray(z, dtype=np.float64))
        return float(logp), grad

    def negative(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """``(-logp, -dlogp)``, the form ``scipy.optimize.minimize`` takes."""
        logp, grad = self._fn(z)
        return -float(logp), -grad

    def hessian(self, z: np.ndarray, rel_step: float = 1e-5) -> np.ndarray:
        """Hessian of ``logp`` by central differences of the compiled gradient.

        Compiling PyMC's symbolic ``d2logp`` for this model costs tens of
        seconds; differencing the exact gradient agrees with it to ~1e-8
        relative in milliseconds.
        """
        z = np.asarray(z, dtype=float)
        n = z.size
        steps = rel_step * np.maximum(1.0, np.abs(z))
        hess = np.empty((n, n))
        for i in range(n):
            up, down = z.copy(), z.copy()
            up[i] += steps[i]
            down[i] -= steps[i]
            hess[:, i] = (self.logp_dlogp(up)[1] - self.logp_dlogp(down)[1]) / (2 * steps[i])
        return 0.5 * (hess + hess.T)


@lru_cache(maxsize=None)
def get_objective(n_components: int, prior: str = "flat") -> MixtureObjective:
    """The compiled objective of the H-component model, built on first use.

    Cached for the life of the process: every fit with the same H reuses the
    same graph and compiled function.
    """
    model = build_model(n_components, prior=prior)
    value_vars = model.value_vars
    logp = model.logp(jacobian=False)
    dlogp = model.dlogp(model.free_RVs, jacobian=False)
    point = model.initial_point()
    (logp_j, dlogp_j), joined = join_nonshared_inputs(point, [logp, dlogp], value_vars)
    # the joined input follows model.value_vars, which is the block order above
    names = [v.name for v in value_vars]
    expected = [name for name, _ in _blocks(n_components)]
    if names != expected:  # pragma: no cover - guards a change in PyMC's ordering
        raise RuntimeError(f"unexpected variable order {names}, expected {expected}")
    fn = pm.pytensorf.compile([joined], [logp_j, dlogp_j])
    fn.trust_input = True
    return MixtureObjective(n_components, model, fn, threading.RLock())


@dataclass
class SamplingModel:
    """One H's model for ``pymc.sample``, built once per ``(H, prior)``.

    Sampling sets the data containers, so a caller holds :attr:`lock` from
    :meth:`set_data` until the sampler has compiled its functions and
    returned. ``nutpie_cache`` keeps a compiled nutpie model (data swapped by
    ``with_data``, nothing recompiled).
    """

    n_components: int
    prior: str
    model: pm.Model
    lock: threading.RLock
    nutpie_cache: dict

    def set_data(self, y: np.ndarray, m: np.ndarray, weight: np.ndarray) -> None:
        """Point the model at new distinct pairs ``(y, m)`` with task counts `weight`."""
        pm.set_data(pair_data(y, m, weight), model=self.model)


@lru_cache(maxsize=None)
def get_sampling_model(n_components: int, prior: str = "weak") -> SamplingModel:
    """The model :func:`build_model` gives for ``(H, prior)``, built on first use.

    Kept apart from :func:`get_objective`'s instance so that sampling and a
    concurrent maximum-likelihood fit never swap each other's data.
    """
    if prior not in _PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(_PRIORS)}.")
    model = build_model(n_components, prior=prior)
    return SamplingModel(int(n_components), prior, model, threading.RLock(), {})
