"""The Beta mixture's parameters: its unconstrained coordinates and their map to (w, alpha, beta).

The free parameters are the unconstrained coordinates of ``docs/formulas.md``
section 1, in this order (``3H - 1`` numbers in all):

========================  =======  ============================================
name                      size     meaning
========================  =======  ============================================
``logit_weights``         H - 1    weights are ``softmax([0, logit_weights])``
``logit_mean_first``      1        logit of the smallest component mean
``log_mean_gaps``         H - 1    logs of the gaps between ordered logit means
``log_concentration``     H        ``log(alpha_h + beta_h)``
========================  =======  ============================================

The means are ordered by construction, which fixes the labels of the
components. This module is plain numpy: the PyMC model that uses the same
coordinates is in :mod:`passmix.models.mixture.graph`, imported only when a model is built.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

__all__ = [
    "PARAMETER_BOUNDS",
    "PRIORS",
    "SEARCH_LOG_CONCENTRATION",
    "WEAK_PRIOR",
    "bounds",
    "coordinate_blocks",
    "coordinate_names",
    "n_free_parameters",
    "pack",
    "split_coordinates",
    "unpack",
    "unpack_jacobian",
]

#: Box bounds on the unconstrained coordinates, keeping the optimiser away
#: from overflow. A coordinate that ends on its bound is reported by the fit.
#: The concentration reaches down to ``e^-16 ~ 1e-7``: as it falls to 0 a
#: component becomes tasks solved always or never, where metrics such as
#: Pass^k at large k peak on data with few successes; at ``e^-7`` the profile's
#: ends fell up to 1e-3 short of that limit, at ``e^-16`` they are within 1e-6.
PARAMETER_BOUNDS = {
    "logit_weights": (-15.0, 15.0),
    "logit_mean_first": (-20.0, 20.0),
    "log_mean_gaps": (-10.0, 5.0),
    "log_concentration": (-16.0, 14.0),
}

#: The concentrations the profile search's probes and moves spread over
#: (log-uniform): all-or-nothing tasks to the binomial limit. Narrower than the
#: box, whose far low end a search reaches by climbing, not by starting there.
SEARCH_LOG_CONCENTRATION = (-7.0, 14.0)

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

#: Priors of the PyMC model: flat (the MLE is its mode) or the weak default.
PRIORS = ("flat", "weak")


def n_free_parameters(n_components: int) -> int:
    """Number of free parameters ``3H - 1`` of an H-component mixture."""
    return 3 * n_components - 1


def coordinate_blocks(n_components: int) -> list[tuple[str, int]]:
    """``(name, size)`` of each block of coordinates, in order, empty blocks left out."""
    h = n_components
    blocks = [("logit_weights", h - 1), ("logit_mean_first", 1),
              ("log_mean_gaps", h - 1), ("log_concentration", h)]
    return [(name, size) for name, size in blocks if size > 0]


def coordinate_names(n_components: int) -> list[str]:
    """Names of the free coordinates, in the optimiser's order."""
    names = []
    for name, size in coordinate_blocks(n_components):
        names += [name] if name == "logit_mean_first" else [f"{name}[{i}]" for i in range(size)]
    return names


def bounds(n_components: int) -> np.ndarray:
    """Box bounds as an array of shape ``(3H - 1, 2)`` in the optimiser's order."""
    rows = []
    for name, size in coordinate_blocks(n_components):
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
    >>> from passmix.models.mixture.parameters import unpack
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
    >>> from passmix.models.mixture.parameters import pack, unpack
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
