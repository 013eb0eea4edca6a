"""The zero-inflated Beta mixture: an atom at success rate 0 beside H Beta components.

Some tasks no attempt will ever solve (a wrong reference answer, a task
beyond the system). A Beta component can only approach such an atom, and
where one is present the plain mixture bends its lowest component toward
0 and misjudges how many of the unsolved tasks more attempts would crack.
This model gives the atom its own weight ``pi``:

    theta ~ pi * delta_0 + (1 - pi) * sum_h w_h Beta(alpha_h, beta_h)

so a task with ``y = 0`` of ``m`` has likelihood ``pi + (1 - pi) L_mix(0 | m)``
and any other ``(1 - pi) L_mix(y | m)``. Pass@k, Pass^k and AUC@k are
``(1 - pi)`` times the mixture's (:func:`passmix.metrics.logit_with_zero_atom`).

Coordinates: the mixture's ``3H - 1`` (:mod:`passmix.models.mixture.parameters`)
then ``logit_zero = logit(pi)``, boxed to ``[-25, 10]``: at the lower bound
``pi`` is 1.4e-11, no atom for any horizon that matters, and the fit says
so (``on_bound``). The PyMC model is the mixture's with the atom added, its
``(logp, dlogp)`` compiled once per process for every H up to four.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import expit

from ..._pytensor import import_pymc
from ..mixture.graph import (OBJECTIVE_CAPACITY, MixtureObjective, SamplingModel,
                             compile_logp_dlogp, coordinate_variables, mixture_loglik,
                             pair_containers)
from ..mixture.parameters import bounds as mixture_bounds
from ..mixture.parameters import (PRIORS, WEAK_PRIOR, coordinate_blocks, coordinate_names,
                                  n_free_parameters, unpack, unpack_jacobian)

__all__ = ["ZERO_BOUNDS", "ZERO_PRIOR", "ZeroInflatedObjective", "bounds", "build_model",
           "coordinate_names_zi", "get_objective", "get_sampling_model", "mixtures", "mixtures_jacobian",
           "n_parameters"]

#: Box of ``logit_zero``: pi from 1.4e-11 (no atom) to 0.99995.
ZERO_BOUNDS = (-25.0, 10.0)
#: The weak prior of ``logit_zero`` for the Bayesian path: ``Normal(-6, 3)``. Skeptical
#: of an atom, as the default ``zero_inflated=False`` is: its median weight is 0.25%,
#: and 2.5% of its mass is above 0.47. Where the data show no atom its posterior keeps
#: mass near weight 0, so the credible intervals of Pass@k at large k still reach the
#: truth; a prior centred on 12% (``Normal(-2, 2)``) put an atom where there was none
#: and covered Pass@1000 in 2 of 10 such replicates (``docs/results/zero_inflated.md``).
ZERO_PRIOR = (-6.0, 3.0)


def bounds(n_components: int) -> np.ndarray:
    """Box bounds, shape ``(3H, 2)``: the mixture's, then ``logit_zero``'s."""
    return np.vstack([mixture_bounds(n_components), [ZERO_BOUNDS]])


def coordinate_names_zi(n_components: int) -> list[str]:
    """Names of the ``3H`` coordinates."""
    return coordinate_names(n_components) + ["logit_zero"]


def mixtures(z, n_components: int) -> tuple[np.ndarray, ...]:
    """``(pi, weights, alpha, beta)`` at coordinates `z` (broadcasts over leading axes)."""
    z = np.asarray(z, dtype=float)
    w, a, b = unpack(z[..., :-1], n_components)
    return expit(z[..., -1]), w, a, b


def mixtures_jacobian(z, n_components: int) -> np.ndarray:
    """Jacobian of :func:`mixtures` at one point: rows pi, weights, alpha, beta;
    shape ``(1 + 3H, 3H)``."""
    z = np.asarray(z, dtype=float)
    h = n_components
    jac = np.zeros((1 + 3 * h, 3 * h))
    pi = expit(z[-1])
    jac[0, -1] = pi * (1.0 - pi)
    jac[1:, :-1] = unpack_jacobian(z[:-1], h)
    return jac


def build_model(n_components: int, *, prior: str = "flat", switchable: bool = False):
    """The PyMC model of the zero-inflated H-component mixture.

    The mixture's model (:func:`passmix.models.mixture.graph.build_model`, the
    same data containers and coordinates) with a free ``logit_zero`` (flat,
    or :data:`ZERO_PRIOR` with ``prior="weak"``) and the deterministic
    ``zero_weight``.

    Examples
    --------
    >>> from passmix.models.zero_inflated.model import build_model
    >>> sorted(v.name for v in build_model(1).free_RVs)
    ['log_concentration', 'logit_mean_first', 'logit_zero']
    """
    pm = import_pymc()
    import pytensor.tensor as pt

    h = int(n_components)
    with pm.Model() as model:
        data = pair_containers()
        free = coordinate_variables(h, prior)
        if prior == "flat":
            logit_zero = pm.Flat("logit_zero")
        else:
            logit_zero = pm.Normal("logit_zero", mu=ZERO_PRIOR[0], sigma=ZERO_PRIOR[1])
        active = pm.Data("active", np.ones(h)) if switchable else None
        mix = mixture_loglik(free, h, data, active)
        log_zero, log_keep = -pt.softplus(-logit_zero), -pt.softplus(logit_zero)
        pm.Deterministic("zero_weight", pt.exp(log_zero))
        loglik = pt.switch(pt.eq(data["y"], 0), pt.logaddexp(log_zero, log_keep + mix),
                           log_keep + mix)
        pm.Potential("loglik", pt.sum(data["weight"] * loglik))
    return model


@lru_cache(maxsize=None)
def get_sampling_model(n_components: int, prior: str = "weak") -> SamplingModel:
    """The zero-inflated model for ``pymc.sample`` at ``(H, prior)``, built on first use.

    The generic Bayesian path (:func:`passmix.sample`) samples it as it
    does the plain mixture: its blocks are the mixture's then
    ``logit_zero`` (prior :data:`ZERO_PRIOR` under ``"weak"``).

    Examples
    --------
    >>> from passmix.models.zero_inflated.model import get_sampling_model
    >>> sm = get_sampling_model(1)
    >>> [name for name, _ in sm.blocks], sm.kind
    (['logit_mean_first', 'log_concentration', 'logit_zero'], 'zero_inflated')
    """
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(PRIORS)}.")
    h = int(n_components)
    scales = {**WEAK_PRIOR, "logit_zero": ZERO_PRIOR}
    return SamplingModel(h, prior, build_model(h, prior=prior), threading.RLock(), {},
                         blocks=tuple(coordinate_blocks(h) + [("logit_zero", 1)]),
                         prior_scales=scales, box=bounds(h), kind="zero_inflated",
                         scalars=("logit_mean_first", "logit_zero"),
                         deterministics=("weights", "alpha", "beta", "zero_weight"))


@dataclass
class _Compiled:
    capacity: int
    fn: Any
    lock: threading.RLock
    state: dict = field(default_factory=dict)


@lru_cache(maxsize=None)
def _compiled(capacity: int) -> _Compiled:
    """The switchable zero-inflated model's compiled ``(logp, dlogp)``, once per process."""
    model = build_model(capacity, switchable=True)
    fn = compile_logp_dlogp(model, coordinate_blocks(capacity) + [("logit_zero", 1)])
    fn.trust_input = True
    return _Compiled(capacity, fn, threading.RLock())


class ZeroInflatedObjective(MixtureObjective):
    """The compiled objective in the ``3H`` coordinates (the mixture's, then ``logit_zero``)."""

    def __init__(self, n_components: int, fn: Any, lock: threading.RLock, capacity: int,
                 state: dict | None = None) -> None:
        super().__init__(n_components, fn, lock, capacity, state)
        self._embed = np.append(self._embed, self._size)
        self._size += 1


@lru_cache(maxsize=None)
def get_objective(n_components: int) -> ZeroInflatedObjective:
    """The compiled objective of the zero-inflated H-component model, built on first use.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.models.zero_inflated.model import get_objective
    >>> objective = get_objective(1)
    >>> with objective.lock:
    ...     objective.set_data(np.array([0, 2]), np.array([4, 4]), np.ones(2))
    ...     logp, grad = objective.logp_dlogp(np.array([0.0, 1.0, -25.0]))
    >>> grad.shape
    (3,)
    """
    h = int(n_components)
    if h < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    shared = _compiled(max(h, OBJECTIVE_CAPACITY))
    return ZeroInflatedObjective(h, shared.fn, shared.lock, shared.capacity, shared.state)


def n_parameters(n_components: int) -> int:
    """``3H``: the mixture's ``3H - 1`` and the atom's weight."""
    return n_free_parameters(n_components) + 1

