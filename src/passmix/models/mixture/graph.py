"""The H-component Beta-mixture model in PyMC and its compiled objective.

The model's free variables are the unconstrained coordinates of
:mod:`passmix.models.mixture.parameters` (``docs/formulas.md`` section 1). With flat priors
on them the posterior mode is the marginal maximum-likelihood estimate, which
is what :func:`passmix.fit` computes with the same objective as
``pymc.find_MAP`` (``logp`` with ``jacobian=False``, maximised by L-BFGS-B).
The same model, with ``prior="weak"`` (independent normal priors on the same
coordinates, see :data:`WEAK_PRIOR`) or ``prior="flat"``, is what
:func:`passmix.bayes.sample.sample` hands to ``pymc.sample``.

**Compiled once.** The objective of the fit is one model of
:data:`OBJECTIVE_CAPACITY` components whose components can be switched off
through a data container (``active``): an H-component fit for any H up to
the capacity evaluates that one compiled function with the other components'
weights at zero and their coordinates held fixed. So a process compiles one
graph, not one per H, and every initialisation, data set and group reuses it:
the data enter through ``pm.Data`` containers that are updated in place. A fit
with more components than the capacity compiles a model of its own size.

**Kept between processes.** The compiled function is pickled beside
PyTensor's compile cache (``<compiledir>/passmix/``), under a name hashing
this module's source, its helpers' and the library versions; a later process
loads it instead of importing PyMC and rewriting the graph again, which
halves the start of a short command line run. ``PASSMIX_OBJECTIVE_CACHE=0``
turns this off; a file that cannot be read is rebuilt. The backend
(``PASSMIX_BACKEND``, :mod:`passmix._pytensor`) is part of the name.

PyMC and PyTensor are imported when a model is first built, not when passmix
is imported.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..._pytensor import compile_mode, import_pymc
from ..._special import log_choose
from .._objective import CompiledObjective
from .parameters import (PARAMETER_BOUNDS, PRIORS, WEAK_PRIOR, bounds, coordinate_blocks,
                         coordinate_names, n_free_parameters, pack, split_coordinates, unpack,
                         unpack_jacobian)

__all__ = [
    "OBJECTIVE_CAPACITY",
    "PARAMETER_BOUNDS",
    "WEAK_PRIOR",
    "MixtureObjective",
    "SamplingModel",
    "bounds",
    "build_model",
    "compile_logp_dlogp",
    "coordinate_names",
    "coordinate_variables",
    "get_objective",
    "get_sampling_model",
    "mixture_loglik",
    "n_free_parameters",
    "pack",
    "pair_containers",
    "pair_data",
    "split_coordinates",
    "unpack",
    "unpack_jacobian",
]

#: Components of the shared compiled objective: every fit with H up to this
#: uses the same compiled function (BIC's default range is H = 1..4).
OBJECTIVE_CAPACITY = 4
# logit of a switched-off component's weight: exp() of it is exactly 0
_OFF = -1e30


def build_model(n_components: int, *, prior: str = "flat", switchable: bool = False):
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
    switchable : bool, default False
        Add a data container ``"active"`` (one 0/1 flag per component): a
        component flagged 0 gets weight 0, so the model is then the mixture of
        the active components. The fit's shared objective is built this way.

    Returns
    -------
    pymc.Model
        With free variables named as in :mod:`passmix.models.mixture.parameters`,
        deterministics ``weights``, ``alpha``, ``beta``, and the potential
        ``loglik``.

    Examples
    --------
    >>> from passmix.models.mixture.graph import build_model
    >>> model = build_model(2)
    >>> sorted(v.name for v in model.free_RVs)
    ['log_concentration', 'log_mean_gaps', 'logit_mean_first', 'logit_weights']
    """
    pm = import_pymc()
    import pytensor.tensor as pt

    h = int(n_components)
    if h < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(PRIORS)}.")
    with pm.Model() as model:
        data = pair_containers()
        free = coordinate_variables(h, prior)
        active = pm.Data("active", np.ones(h)) if switchable else None
        loglik = mixture_loglik(free, h, data, active)
        pm.Potential("loglik", pt.sum(data["weight"] * loglik))
    return model


def pair_containers() -> dict:
    """The data containers of the distinct pairs, inside a ``pm.Model`` context.

    ``"y"``, ``"failures"`` (``m - y``), ``"weight"`` (tasks per pair) and
    ``"log_comb"`` (``log C(m, y)``); set them with :func:`pair_data`.
    """
    pm = import_pymc()
    # counts as float64: pm.Data would store integers as int32, which wraps
    # a trial count of 2^31 or more
    return {"y": pm.Data("y", np.zeros(1)), "failures": pm.Data("failures", np.ones(1)),
            "weight": pm.Data("weight", np.ones(1)), "log_comb": pm.Data("log_comb", np.zeros(1))}


def coordinate_variables(n_components: int, prior: str = "flat") -> dict:
    """The mixture's free variables, named as its coordinate blocks, inside a model context.

    ``prior="flat"`` gives ``pm.Flat`` (the marginal likelihood is the
    log-density), ``"weak"`` the normals of :data:`WEAK_PRIOR`.
    """
    pm = import_pymc()
    free = {}
    for name, size in coordinate_blocks(n_components):
        shape = () if name == "logit_mean_first" else (size,)
        if prior == "flat":
            free[name] = pm.Flat(name, shape=shape)
        else:
            mu, sigma = WEAK_PRIOR[name]
            free[name] = pm.Normal(name, mu=mu, sigma=sigma, shape=shape)
    return free


def mixture_loglik(free: dict, n_components: int, data: dict, active=None):
    """Each distinct pair's log-likelihood under the H-component Beta mixture, as a tensor.

    `free` are the coordinate variables (:func:`coordinate_variables`),
    `data` the pair containers (:func:`pair_containers`); `active`, optional,
    one 0/1 flag per component (a component flagged 0 has weight 0). Adds
    the deterministics ``weights``, ``alpha`` and ``beta`` to the model in
    context. A model built on the mixture (the zero-inflated one) adds its
    own terms to this.
    """
    pm = import_pymc()
    import pytensor.tensor as pt
    import pytensor.tensor.special  # noqa: F401  (log_softmax)
    from pymc.distributions.dist_math import betaln

    h = int(n_components)
    logits = (pt.concatenate([pt.zeros(1), free["logit_weights"]]) if h > 1
              else pt.zeros(1))
    if active is not None:
        logits = pt.switch(active > 0, logits, _OFF)
    log_w = pt.special.log_softmax(logits)
    if h > 1:
        eta = free["logit_mean_first"] + pt.concatenate(
            [pt.zeros(1), pt.cumsum(pt.exp(free["log_mean_gaps"]))]
        )
    else:
        eta = pt.shape_padright(free["logit_mean_first"])
    log_kappa = free["log_concentration"]
    alpha = pt.exp(log_kappa + -pt.softplus(-eta))
    beta = pt.exp(log_kappa + -pt.softplus(eta))
    pm.Deterministic("weights", pt.exp(log_w))
    pm.Deterministic("alpha", alpha)
    pm.Deterministic("beta", beta)
    y, failures, log_comb = data["y"], data["failures"], data["log_comb"]
    # beta-binomial log-pmf. Failures enter as data, not as m - y: in floating
    # point (beta + m) - y is 0 for a tiny beta, and gammaln(0) is infinite.
    component_logp = (log_comb[:, None] + betaln(alpha + y[:, None], beta + failures[:, None])
                      - betaln(alpha, beta))
    return pt.logsumexp(log_w + component_logp, axis=1)


def pair_data(y, m, weight) -> dict[str, np.ndarray]:
    """Values of the model's data containers for distinct pairs ``(y, m)``.

    Returns a dict with keys ``"y"``, ``"failures"``, ``"weight"`` and
    ``"log_comb"``, ready for ``pymc.set_data``.
    """
    y = np.asarray(y, dtype="int64")
    failures = np.asarray(m, dtype="int64") - y
    log_comb = log_choose(y + failures, y)
    return {"y": y.astype(float), "failures": failures.astype(float),
            "weight": np.asarray(weight, dtype=float), "log_comb": log_comb}


@dataclass
class _Compiled:
    """One switchable model's compiled ``(logp, dlogp)``, its data and the lock on them."""

    capacity: int
    fn: Any
    data: dict[str, Any]
    lock: threading.RLock
    # which view of the function set its data last (CompiledObjective's state)
    state: dict = field(default_factory=dict)


# the data containers of the switchable model
_DATA_NAMES = ("y", "failures", "weight", "log_comb", "active")


@lru_cache(maxsize=None)
def _compiled(capacity: int) -> _Compiled:
    """The switchable model's compiled objective, built once per process."""
    fn = _compile(capacity)
    fn.trust_input = True
    data = {v.name: v for v in fn.get_shared()}
    if set(data) != set(_DATA_NAMES):  # pragma: no cover - guards a change in PyMC
        raise RuntimeError(f"unexpected data containers {sorted(data)}")
    return _Compiled(capacity, fn, data, threading.RLock())


def _compile(capacity: int):
    """Build the switchable PyMC model and compile its ``(logp, dlogp)`` as one function."""
    model = build_model(capacity, switchable=True)
    return compile_logp_dlogp(model, coordinate_blocks(capacity))


def compile_logp_dlogp(model, blocks) -> Any:
    """Compile a flat-prior model's ``(logp, dlogp)`` (``jacobian=False``) as one function
    of the joined coordinates.

    `blocks` are ``(name, size)`` of the free variables in the order of
    ``model.value_vars`` (a block whose variable has no dimension is a
    scalar). The data containers stay shared variables,
    so new data never recompile it.
    """
    pm = import_pymc()
    from pymc.pytensorf import join_nonshared_inputs

    logp = model.logp(jacobian=False)
    dlogp = model.dlogp(model.free_RVs, jacobian=False)
    # a point of the right shapes; model.initial_point() would compile a function for it
    scalar = {v.name for v in model.value_vars if v.type.ndim == 0}
    point = {name: np.zeros(() if name in scalar else (size,)) for name, size in blocks}
    (logp_j, dlogp_j), joined = join_nonshared_inputs(point, [logp, dlogp], model.value_vars)
    # the joined input follows model.value_vars, which must be the blocks' order
    names = [v.name for v in model.value_vars]
    expected = [name for name, _ in blocks]
    if names != expected:  # pragma: no cover - guards a change in PyMC's ordering
        raise RuntimeError(f"unexpected variable order {names}, expected {expected}")
    # the graph is small and called many thousands of times: keep its
    # intermediate buffers between calls instead of freeing them (~30% faster)
    return pm.pytensorf.compile([joined], [logp_j, dlogp_j],
                                mode=compile_mode(keep_buffers=True))


def _embedding(n_components: int, capacity: int) -> np.ndarray:
    """Positions of an H-component model's coordinates among the capacity model's."""
    h, c = n_components, capacity
    return np.concatenate([np.arange(h - 1), [c - 1], c + np.arange(h - 1),
                           2 * c - 1 + np.arange(h)]).astype(int)


class MixtureObjective(CompiledObjective):
    """Compiled ``logp`` and gradient of the H-component model, driven by scipy.

    A view of the shared switchable model (:data:`OBJECTIVE_CAPACITY`
    components) with the first H switched on: :meth:`logp_dlogp` takes the
    ``3H - 1`` coordinates of an H-component mixture, places them among the
    capacity model's (the others held at 0, their components weightless),
    and returns the log-likelihood and its gradient in the H coordinates:
    ``logp`` with ``jacobian=False``, the objective ``pymc.find_MAP``
    maximises. :meth:`set_data` swaps the data in place; nothing is
    recompiled. Hold :attr:`lock` from :meth:`set_data` until the last
    evaluation on those data: the views of one capacity share the data.
    """

    def __init__(self, n_components: int, fn: Any, lock: threading.RLock, capacity: int,
                 state: dict | None = None) -> None:
        super().__init__(fn, lock, state)
        self.n_components = int(n_components)
        self._embed = _embedding(self.n_components, capacity)
        self._size = n_free_parameters(capacity)
        self._active = (np.arange(capacity) < self.n_components).astype(float)

    def set_data(self, y: np.ndarray, m: np.ndarray, weight: np.ndarray) -> None:
        """Point the model at new distinct pairs ``(y, m)`` with task counts `weight`."""
        self._set_values({**pair_data(y, m, weight), "active": self._active})

    def _inputs(self, z: np.ndarray) -> tuple:
        full = np.zeros(self._size)
        full[self._embed] = z
        return (full,)

    def _own_gradient(self, grad: np.ndarray) -> np.ndarray:
        return grad[self._embed]


@lru_cache(maxsize=None)
def get_objective(n_components: int, prior: str = "flat") -> MixtureObjective:
    """The compiled objective of the H-component model, built on first use.

    Cached for the life of the process: every fit with the same H reuses the
    same view, and every H up to :data:`OBJECTIVE_CAPACITY` the same compiled
    function.
    """
    if prior != "flat":
        raise ValueError("the fit's objective has flat priors; sample other priors with "
                         "passmix.bayes.sample.sample.")
    h = int(n_components)
    if h < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    shared = _compiled(max(h, OBJECTIVE_CAPACITY))
    return MixtureObjective(h, shared.fn, shared.lock, shared.capacity, shared.state)


@dataclass
class SamplingModel:
    """One single-system model for ``pymc.sample``, built once per ``(model, H, prior)``.

    What the generic Bayesian path (:func:`passmix.sample`) needs from a
    model: the PyMC model, its free variables in coordinate order
    (``blocks``: name and size; those named in ``scalars`` are scalar
    variables), the normal prior of each block (``prior_scales``, where
    chains may start), the coordinates' box, the deterministics the
    posterior keeps (``weights``, ``alpha``, ``beta`` and, for a model with
    an atom at 0, ``zero_weight``, from which the metrics follow) and the
    model's name (``kind``, recorded as ``posterior.attrs["passmix_model"]``).

    Sampling sets the data containers, so a caller holds :attr:`lock` from
    :meth:`set_data` until the sampler has compiled its functions and
    returned. ``nutpie_cache`` keeps a compiled nutpie model (data swapped by
    ``with_data``, nothing recompiled).
    """

    n_components: int
    prior: str
    model: Any
    lock: threading.RLock
    nutpie_cache: dict
    blocks: tuple[tuple[str, int], ...]
    prior_scales: dict
    box: np.ndarray
    kind: str
    scalars: tuple[str, ...] = ("logit_mean_first",)
    deterministics: tuple[str, ...] = ("weights", "alpha", "beta")

    @property
    def n_parameters(self) -> int:
        """Number of free coordinates."""
        return sum(size for _, size in self.blocks)

    def set_data(self, y: np.ndarray, m: np.ndarray, weight: np.ndarray) -> None:
        """Point the model at new distinct pairs ``(y, m)`` with task counts `weight`."""
        import pymc as pm

        pm.set_data(pair_data(y, m, weight), model=self.model)

    def as_point(self, z: np.ndarray) -> dict[str, np.ndarray | float]:
        """The coordinate vector `z` as ``{variable: value}`` (a start for the sampler)."""
        point, i = {}, 0
        for name, size in self.blocks:
            point[name] = float(z[i]) if name in self.scalars else np.array(z[i:i + size], float)
            i += size
        return point

    def prior_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Where chains may start: within three prior sd (``"weak"``) or half a unit inside
        the box (``"flat"``)."""
        if self.prior == "weak":
            lo, hi = [], []
            for name, size in self.blocks:
                mu, sigma = self.prior_scales[name]
                lo += [mu - 3 * sigma] * size
                hi += [mu + 3 * sigma] * size
            return np.array(lo), np.array(hi)
        box = np.asarray(self.box, dtype=float)
        return box[:, 0] + 0.5, box[:, 1] - 0.5


@lru_cache(maxsize=None)
def get_sampling_model(n_components: int, prior: str = "weak") -> SamplingModel:
    """The model :func:`build_model` gives for ``(H, prior)``, built on first use.

    Kept apart from :func:`get_objective`'s model so that sampling and a
    concurrent maximum-likelihood fit never swap each other's data.
    """
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(PRIORS)}.")
    h = int(n_components)
    model = build_model(h, prior=prior)
    return SamplingModel(h, prior, model, threading.RLock(), {},
                         blocks=tuple(coordinate_blocks(h)), prior_scales=dict(WEAK_PRIOR),
                         box=bounds(h), kind="mixture")
