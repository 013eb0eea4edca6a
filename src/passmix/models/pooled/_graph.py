"""The pooled model as a PyMC graph and its compiled objective (kept on disk, reused across
fits).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import numpy as np

from ..._pytensor import compile_mode, import_pymc
from .._objective import CompiledObjective
from ._layout import DEFAULT_GRID, WEAK_POOLED_PRIOR, _Layout, coordinate_blocks, block_names
from ._likelihood import _SUM_TRIALS, _lse, _pooled_derivatives

__all__ = ["PooledObjective", "build_pooled_model", "get_pooled_objective"]


# -- the PyMC model and its compiled objective -------------------------------------
def build_pooled_model(layout: _Layout, family: str = "grid", grid: np.ndarray = DEFAULT_GRID,
                       n_components: int = 1, prior: str = "flat", slope: bool = False,
                       shared: bool = False, switchable: bool = False,
                       rising: bool = False):
    """The PyMC model of the pooled likelihood (flat priors: its mode is the MLE).

    With ``prior="weak"`` the free coordinates get the independent normal
    priors of :data:`WEAK_POOLED_PRIOR` instead, a proper posterior for NUTS
    (:func:`passmix.bayes.pooled.sample_pooled`).

    Data containers ``pair_y``, ``pair_failures``, ``pair_log_comb``,
    ``incidence`` and ``grid`` (and ``components``, H zeros, for the normal
    family); free variables ``ability`` (I values, centred),
    ``log_concentration`` (I) and ``grid_logits`` (G) or ``difficulty_mean``,
    ``log_difficulty_sd`` (H each) and ``component_logits`` (H - 1), and with
    `slope` ``log_slope`` (I values, centred); with `shared` the
    concentration is one value for every system; deterministics ``abilities``,
    ``concentrations``, ``grid_weights`` (and ``slopes``). The sizes I and G are read from
    the data containers' shapes, so one compiled graph serves panels of any
    shape and any grid.

    With `switchable` (the fit's compiled objective) data containers choose
    the concentration structure instead of `shared`:
    ``concentration_levels`` (its length is the size of
    ``log_concentration``) and ``concentration_index`` (each system's entry
    of ``log_concentration``). So one compiled graph serves both
    concentration candidates of a family and slope setting.

    With `rising` (whole counts of at most ``_SUM_TRIALS`` trials) each
    cell's ``log B(alpha + y, beta + f) - log B(alpha, beta)`` is the sum of
    ``log(alpha + t)`` over ``t < y`` and of ``log(beta + t)`` over ``t < f``,
    less that of ``log(kappa + t)`` over ``t < y + f``, from a data container
    ``offsets`` (0, 1, ..., trials - 1): the same number as the Beta
    functions', at a fraction of their cost (a log instead of a log-gamma).
    """
    pm = import_pymc()
    import pytensor.tensor as pt
    import pytensor.tensor.special  # noqa: F401  (log_softmax)
    from pymc.distributions.dist_math import betaln as pt_betaln

    with pm.Model() as model:
        py = pm.Data("pair_y", layout.pair_y)
        pf = pm.Data("pair_failures", layout.pair_f)
        lc = pm.Data("pair_log_comb", layout.pair_log_comb)
        t = pm.Data("grid", np.asarray(grid, float))
        inc = pm.Data("incidence", layout.dense_incidence)
        if switchable:
            n_levels = 1 if shared else layout.n_systems
            levels = pm.Data("concentration_levels", np.zeros(n_levels))
            index = pm.Data("concentration_index",
                            np.zeros(layout.n_systems, dtype="int64") if shared
                            else np.arange(layout.n_systems, dtype="int64"))
            n_sys = index.shape[0]
        else:
            n_sys = inc.shape[1] // py.shape[0]
        if rising:
            offsets = pm.Data("offsets", _offsets(layout))
        sizes = {"ability": n_sys, "log_concentration": 1 if shared else n_sys,
                 "log_slope": n_sys, "grid_logits": t.shape[0]}
        if switchable:
            sizes["log_concentration"] = levels.shape[0]
        if family != "grid":
            comp = pm.Data("components", np.zeros(n_components))
            sizes.update(difficulty_mean=comp.shape[0], log_difficulty_sd=comp.shape[0],
                         component_logits=comp.shape[0] - 1)
        if prior == "flat":
            free = {name: pm.Flat(name, shape=(sizes[name],))
                    for name in block_names(family, slope)}
        elif prior == "weak":
            # the abilities' common shift (and the log-slopes' mean) is not identified:
            # a zero-sum normal leaves it out, so NUTS does not wander along it
            free = {name: (pm.ZeroSumNormal(name, sigma=WEAK_POOLED_PRIOR[name][1],
                                            shape=(layout.n_systems,))
                           if name in ("ability", "log_slope") else
                           pm.Normal(name, *WEAK_POOLED_PRIOR[name], shape=(sizes[name],)))
                    for name in block_names(family, slope)}
        else:
            raise ValueError(f"unknown prior {prior!r}; expected 'flat' or 'weak'.")
        # centred, not "the last is minus the sum of the others": every ability stays
        # within twice its coordinate's box, however many systems there are
        a = free["ability"] - pt.mean(free["ability"])
        log_kappa = free["log_concentration"][index] if switchable else free["log_concentration"]
        if family == "grid":
            log_w = pt.special.log_softmax(free["grid_logits"])
        else:
            log_sd = free["log_difficulty_sd"]
            log_pi = pt.special.log_softmax(pt.concatenate([pt.zeros(1),
                                                            free["component_logits"]]))
            dens = (log_pi[None, :] - log_sd[None, :]
                    - 0.5 * ((t[:, None] - free["difficulty_mean"][None, :])
                             / pt.exp(log_sd)[None, :]) ** 2)
            log_w = pt.special.log_softmax(pt.logsumexp(dens, axis=1))
        if slope:
            # centred like the abilities: the difficulties' scale is the slopes' geometric mean
            log_s = free["log_slope"] - pt.mean(free["log_slope"])
            eta = a[:, None] - pt.exp(log_s)[:, None] * t[None, :]
            pm.Deterministic("slopes", pt.exp(log_s))
        else:
            eta = a[:, None] - t[None, :]
        kappa = pt.exp(log_kappa)[:, None]
        alpha = kappa * pt.sigmoid(eta)
        beta = kappa * pt.sigmoid(-eta)
        if rising:
            def below(n):  # (T, P): 1 where the offset t < n_p
                return pt.cast(pt.lt(offsets[:, None], n[None, :]), "float64")

            def log_rising(x):  # (entries of x, T): log(x + t)
                return pt.log(x.reshape((-1, 1)) + offsets[None, :])

            shape = (alpha.shape[0], alpha.shape[1], py.shape[0])
            ell = (lc[None, None, :]
                   + (pt.dot(log_rising(alpha), below(py))
                      + pt.dot(log_rising(beta), below(pf))).reshape(shape)
                   - pt.dot(log_rising(kappa[:, 0]), below(py + pf))[:, None, :])
        else:
            ell = (lc[None, None, :]
                   + pt_betaln(alpha[:, :, None] + py[None, None, :],
                               beta[:, :, None] + pf[None, None, :])
                   - pt_betaln(alpha, beta)[:, :, None])
        stacked = ell.dimshuffle(0, 2, 1).reshape((-1, t.shape[0]))
        # a dense product (BLAS): a gather over the cells would make a (cells, grid)
        # array, 100 times the size of `stacked` at 500 systems x 1000 tasks
        task_ll = pt.dot(inc, stacked)
        pm.Deterministic("abilities", a)
        pm.Deterministic("concentrations", pt.exp(log_kappa) * pt.ones(n_sys))
        pm.Deterministic("grid_weights", pt.exp(log_w))
        pm.Potential("loglik", pt.sum(pt.logsumexp(log_w[None, :] + task_ll, axis=1)))
    return model


class PooledObjective(CompiledObjective):
    """Compiled ``logp`` and gradient of the pooled model, for :func:`passmix.inference.maximize`.

    A view of the compiled graph of its slope setting (``switchable``, see
    :func:`build_pooled_model`) with the view's concentration structure;
    :meth:`set_data` points it at a panel and a grid of any shape (the
    model's sizes are symbolic). The views of a graph share its data: hold
    :attr:`lock` from :meth:`set_data` until the last evaluation on those data.

    **One graph for both families.** Given the log-weights of the difficulty
    grid, the likelihood is the same whatever distribution gave them, so only
    the grid family's graph is compiled (once per slope setting). A normal
    family's view maps its coordinates (means, log-sds, mixing logits) to the
    grid's logits in closed form, ``u_g = logsumexp_h(log pi_h - log sd_h -
    (t_g - mu_h)^2 / (2 sd_h^2))`` (the normal model's own weights are
    ``softmax(u)``), and its gradient back through that map's Jacobian: the
    same log-likelihood and gradient as the normal family's PyMC graph
    (:func:`build_pooled_model`, which NUTS samples), at half the compile time
    of a first fit that tries both families.
    """

    def __init__(self, family: str, slope: bool = False, shared: bool = False,
                 lock: threading.RLock | None = None, state: dict | None = None) -> None:
        # the compiled function is chosen by set_data: the rising sums' graph for whole
        # counts up to _SUM_TRIALS trials, the Beta functions' past them
        self._fn, self._data = None, {}
        self.lock = threading.RLock() if lock is None else lock
        self._state = {} if state is None else state
        self.family, self.slope, self.shared = family, bool(slope), bool(shared)
        self.blocks: list = []

    def set_data(self, layout: _Layout, grid: np.ndarray, n_components: int = 1) -> None:
        """Point the model at a panel, a grid and a number of normals (nothing recompiled)."""
        n = layout.n_systems
        rising = _max_trials(layout) <= _SUM_TRIALS
        values = {"pair_y": layout.pair_y, "pair_failures": layout.pair_f,
                  "pair_log_comb": layout.pair_log_comb, "incidence": layout.dense_incidence,
                  "grid": np.asarray(grid, dtype=float),
                  "concentration_levels": np.zeros(1 if self.shared else n),
                  "concentration_index": np.zeros(n) if self.shared else np.arange(n)}
        if rising:
            values["offsets"] = _offsets(layout)
        with self.lock:
            self._fn = _compiled(self.slope, rising)
            self._data = {v.name: v for v in self._fn.get_shared()}
            self._set_values(values)
            self._layout, self._grid = layout, np.asarray(grid, dtype=float)
            self.blocks = coordinate_blocks(self.family, n, len(grid), n_components, self.slope,
                                  self.shared)
            self._n_components = int(n_components)
            # the compiled graph's inputs: each system block, then the grid's logits
            self._sizes = [size for name, size in self.blocks
                           if name not in _NORMAL_BLOCKS + ("grid_logits",)] + [len(grid)]

    def _inputs(self, z: np.ndarray) -> tuple:
        # one input per free variable of the grid graph, in the model's order
        return tuple(np.split(z, np.cumsum(self._sizes)[:-1]))

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient at coordinates `z`."""
        z = np.asarray(z, dtype=float)
        if self.family == "grid":
            return super().logp_dlogp(z)
        n_sys = sum(size for name, size in self.blocks if name not in _NORMAL_BLOCKS)
        logits, jacobian = _normal_grid_logits(z[n_sys:], self._grid, self._n_components)
        logp, grad = super().logp_dlogp(np.concatenate([z[:n_sys], logits]))
        return logp, np.concatenate([grad[:n_sys], grad[n_sys:] @ jacobian])

    def hessian(self, z: np.ndarray, rel_step: float = 1e-5) -> np.ndarray:
        """Hessian of ``logp``, analytic (:class:`PooledDerivatives`): 2n compiled
        gradients of differencing would cost minutes for hundreds of systems."""
        return -_pooled_derivatives(self._layout, self._grid, self.family, self.blocks,
                                    np.asarray(z, dtype=float)).information()

    def hessian_by_differences(self, z: np.ndarray) -> np.ndarray:
        """Hessian by central differences of the compiled gradient (the reference)."""
        return super().hessian(z)


# the normal family's coordinates, which map onto the grid's logits
_NORMAL_BLOCKS = ("difficulty_mean", "log_difficulty_sd", "component_logits")


def _normal_grid_logits(theta: np.ndarray, grid: np.ndarray, n_components: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The grid logits of a mixture of normals, ``u_g = logsumexp_h d_gh`` with ``d_gh =
    log pi_h - log sd_h - r_gh^2 / 2``, ``r_gh = (t_g - mu_h) / sd_h``, and their Jacobian
    in ``theta = (mu, log sd, mixing logits 2..H)``, shape (G, 3H - 1).

    With ``w_gh = softmax_h d_gh``: ``du_g/dmu_h = w_gh r_gh / sd_h``,
    ``du_g/dlog sd_h = w_gh (r_gh^2 - 1)`` and ``du_g/dc_k = w_gk - pi_k``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> from passmix.models.pooled._graph import _normal_grid_logits
    >>> t = np.linspace(-3, 3, 7)
    >>> u, jac = _normal_grid_logits(np.array([0.5, np.log(2.0)]), t, 1)
    >>> bool(np.allclose(u - u.max(), norm.logpdf(t, 0.5, 2.0) - norm.logpdf(t, 0.5, 2.0).max()))
    True
    >>> jac.shape
    (7, 2)
    """
    h = int(n_components)
    mean, log_sd = theta[:h], theta[h:2 * h]
    logits = np.concatenate([[0.0], theta[2 * h:3 * h - 1]])
    log_pi = logits - _lse(logits)
    r = (grid[:, None] - mean[None, :]) * np.exp(-log_sd)[None, :]       # (G, H)
    d = log_pi[None, :] - log_sd[None, :] - 0.5 * r * r
    u = _lse(d, axis=1)
    w = np.exp(d - u[:, None])
    jacobian = np.concatenate([w * r * np.exp(-log_sd)[None, :], w * (r * r - 1.0),
                               w[:, 1:] - np.exp(log_pi[1:])[None, :]], axis=1)
    return u, jacobian


# the concentration structure's containers, beside the panel's data
_SWITCHES = ("concentration_levels", "concentration_index")


#: the compiled graph's data containers
_DATA_NAMES = ("pair_y", "pair_failures", "pair_log_comb", "incidence", "grid", *_SWITCHES)


def _max_trials(layout: _Layout) -> int:
    return int(np.max(layout.pair_y + layout.pair_f, initial=0))


def _offsets(layout: _Layout) -> np.ndarray:
    """0, 1, ..., trials - 1: the terms of the rising sums (at least one)."""
    return np.arange(max(1, _max_trials(layout)), dtype=float)


@lru_cache(maxsize=None)
def _compiled(slope: bool, rising: bool) -> Any:
    """The compiled graph of a slope setting (the grid family's, which serves both families)
    with rising sums or Beta functions, built once per process.

    Slopes stay a graph of their own: their terms would lengthen the compile of the
    (default) model without them."""
    return _compile_pooled(slope, rising)


@lru_cache(maxsize=None)
def _lock(slope: bool) -> tuple[threading.RLock, dict]:
    """The lock and state shared by the views of a slope setting's graphs (either one)."""
    return threading.RLock(), {}


@lru_cache(maxsize=None)
def _objective(family: str, slope: bool = False, shared: bool = False) -> PooledObjective:
    """The view of the compiled graphs of `slope` as `family`, with this concentration."""
    lock, state = _lock(bool(slope))
    return PooledObjective(family, slope, shared, lock=lock, state=state)


def _compile_pooled(slope: bool = False, rising: bool = False):
    pm = import_pymc()

    # placeholder data of the right ranks; set_data swaps in each panel's
    dummy = _Layout(2, 1, np.zeros(1), np.ones(1), np.zeros(1), np.zeros((2, 1), dtype=int))
    model = build_pooled_model(dummy, "grid", DEFAULT_GRID, slope=slope, switchable=True,
                               rising=rising)
    if [v.name for v in model.value_vars] != list(block_names("grid", slope)):  # pragma: no cover
        raise RuntimeError("unexpected order of the pooled model's variables")
    logp = model.logp(jacobian=False)
    dlogp = model.dlogp(model.free_RVs, jacobian=False)
    fn = pm.pytensorf.compile(model.value_vars, [logp, dlogp], mode=compile_mode())
    if {v.name for v in fn.get_shared()} != {*_DATA_NAMES, *(("offsets",) if rising else ())}:  # pragma: no cover
        raise RuntimeError("unexpected data containers of the pooled model")
    return fn


def get_pooled_objective(layout: _Layout, family: str, grid: np.ndarray,
                         n_components: int = 1, slope: bool = False,
                         shared: bool = False) -> PooledObjective:
    """The family's compiled objective (built once per process), set to `layout` and `grid`.

    Its views share their compiled function's data: hold the objective's ``lock``
    from here (or a later :meth:`PooledObjective.set_data`) to the last evaluation.
    """
    obj = _objective(family, bool(slope), bool(shared))
    obj.set_data(layout, grid, n_components)
    return obj


def _layout_loglik(params: np.ndarray, family: str, layout: _Layout, grid: np.ndarray,
                   n_components: int, slope: bool = False, shared: bool = False) -> float:
    """The pooled log-likelihood of `layout`'s tasks at `params`."""
    objective = _objective(family, bool(slope), bool(shared))
    with objective.lock:
        objective.set_data(layout, grid, n_components)
        return objective.logp_dlogp(params)[0]
