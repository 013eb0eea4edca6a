"""The pooled model: many systems on shared tasks, task difficulty shared across them.

System ``i`` on task ``j`` has success probability ``p_ij``; its mean is a
Rasch (1PL) term and a Beta-binomial layer lets each system's own counts
depart from it::

    mu_ij = expit(a_i - d_j),     p_ij ~ Beta(mu_ij kappa_i, (1 - mu_ij) kappa_i),
    y_ij | p_ij ~ Binomial(m_ij, p_ij),     d_j ~ G  (independent over tasks).

``a_i`` is system i's ability (the abilities sum to 0, the one
identifiability constraint: free coordinates minus their mean), ``kappa_i`` its concentration: as
``kappa_i -> inf`` the model is plain Rasch (a task's difficulty fixes every
system's rate), and a small ``kappa_i`` lets system i's own counts on a task
dominate, so pooling is as strong as the data support. With
``concentration="shared"`` one concentration serves every system (I - 1
fewer parameters); by default (``"auto"``) both are fitted and the criterion
picks, so per-system concentrations are kept only where the data can tell
them apart. With ``slope=True``
each system also has a slope (a 2PL-style discrimination, per system):
``mu_ij = expit(a_i - s_i d_j)``, the log-slopes summing to 0 (the
difficulties' scale is otherwise free); a system with a steeper slope
separates easy from hard tasks more sharply. The difficulty
distribution ``G`` lives on a fixed grid of logits (:data:`DEFAULT_GRID`) and
is integrated out per task by summing over the grid:

- ``"grid"``: nonparametric, one weight per grid point (softmax of free
  logits), the maximum-likelihood mixing distribution on the grid. The
  weights are profiled out by EM (for fixed abilities and concentrations the
  NPMLE weights have a fixed-point update), so L-BFGS-B searches the 2I
  abilities and concentrations only; it reaches the joint optimum (tested);
- ``"normal"``: weights proportional to a normal density with free mean and
  spread, i.e. quadrature of a normal ``G`` on the grid.

The marginal likelihood depends on the data through the distinct pairs
``(y, m)`` of each system: a table ``l[i, g, p]`` of Beta-binomial
log-probabilities is gathered into a tasks x grid matrix by one product with
a 0/1 incidence matrix (cells to (system, pair)), then reduced by a
log-sum-exp over the grid. The model is written in PyMC (flat priors on the
free coordinates, so the mode is the MLE) and its ``logp`` and gradient are
compiled once per panel shape and maximised by L-BFGS-B
(:mod:`passmix.inference`).

The metrics of system ``i`` average over each task's posterior: given the
data, task ``j``'s difficulty is at grid point ``g`` with probability
``r_jg`` (prior weight times the likelihood of every system's counts on
``j``), and then ``p_ij ~ Beta(mu_ig kappa_i + y_ij, (1 - mu_ig) kappa_i +
m_ij - y_ij)``. So system ``i``'s Pass@k over the J tasks is that of a Beta
mixture with components ``(j, g)`` of weight ``r_jg / J``: the closed forms
of :mod:`passmix.metrics` apply unchanged, at any k.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import betaln, expit, gammaln, log_softmax, logsumexp, ndtri

from ..._pytensor import cache_path, compile_mode, import_pytensor, load_cached, store_cached
from ..._defaults import METRICS, SUMMARY_K
from ..._validation import FitWarning, check_k, check_level, check_metric, check_seed
from ...data.counts import Counts
from ...inference.optimize import (Optimum, at_bound, covariance_from_information, gradient_hessian,
                        maximize)
from ...inference.delta import ConfidenceInterval
from ...metrics import evaluate_logit, evaluate_metric
from ...data.panel import Panel, as_panel
from ...inference.profile import LikelihoodRegion, region_drop, repair_across_metrics

__all__ = ["CONCENTRATIONS", "CRITERIA", "DEFAULT_GRID", "FAMILIES", "PROFILE_CELLS", "PooledFit",
           "PooledSystem",
           "WEAK_POOLED_PRIOR", "em_grid_weights", "fit_pooled",
           "fit_pooled_groups", "heldout_loglik"]

#: Grid of task difficulties (logits): wide enough that a task nobody solves
#: and one everybody solves both sit inside it (a narrow grid breaks the fit).
DEFAULT_GRID = np.linspace(-15.0, 20.0, 141)
#: ``(mean, sd)`` of the independent normal priors of ``prior="weak"``, per free
#: coordinate: abilities and difficulties within about +-10 on the logit scale,
#: concentrations from e^-4 (each system on its own) to e^8 (plain Rasch), a
#: difficulty spread from about 0.1 to 30 logits, slopes from about 1/7 to 7.
WEAK_POOLED_PRIOR = {"ability": (0.0, 5.0), "log_concentration": (2.0, 3.0),
                     "log_slope": (0.0, 1.0),
                     "difficulty_mean": (0.0, 5.0), "log_difficulty_sd": (0.5, 1.5),
                     "component_logits": (0.0, 2.0), "grid_logits": (0.0, 2.0)}
#: How fit_pooled chooses among the candidate difficulty distributions.
CRITERIA = ("aic", "bic", "heldout")
#: Difficulty families; the first is the default (``"auto"`` fits both, `criterion` picks).
FAMILIES = ("normal", "grid")
#: Concentration structures: one per system, or one shared by all (``"auto"``: both).
CONCENTRATIONS = ("system", "shared")
_BOUNDS = {
    "ability": (-30.0, 30.0),
    "log_concentration": (-5.0, 14.0),
    # centred, the slopes stay within e^+-3 of their geometric mean: |a - s d| < 500,
    # so expit never underflows to a Beta shape of 0
    "log_slope": (-1.5, 1.5),
    "grid_logits": (-40.0, 0.0),
    "difficulty_mean": (-15.0, 20.0),
    "log_difficulty_sd": (np.log(0.3), np.log(20.0)),
    "component_logits": (-12.0, 12.0),
}
# a grid point carries mass when its weight is above this (the AIC and BIC count)
_SUPPORT = 1e-4
# converged when no free coordinate's slope exceeds this times sqrt(J)
_GRAD_TOL = 1e-3
# L-BFGS-B's budget on each start; the best is polished, then up to this many Newton steps
_SCREEN = {"maxiter": 50, "ftol": 1e-8, "gtol": 1e-5}
_NEWTON_STEPS = 30


# -- data layout ----------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """The panel as distinct pairs per system and a cell incidence matrix."""

    n_systems: int
    n_tasks: int
    pair_y: np.ndarray          # (P,)
    pair_f: np.ndarray          # (P,) failures
    pair_log_comb: np.ndarray   # (P,)
    incidence: np.ndarray       # (J, I * P) 0/1: task j has system i's cell at pair p
    cell_pair: np.ndarray | None = None  # (I, J) the pair of each cell, -1 where not run

    @property
    def n_pairs(self) -> int:
        return self.pair_y.size


def panel_layout(panel: Panel) -> _Layout:
    y, m = panel.successes, panel.trials
    run = m > 0
    pairs = np.unique(np.stack([y[run], m[run]], axis=1), axis=0)
    key = {(int(a), int(b)): p for p, (a, b) in enumerate(pairs)}
    n_sys, n_tasks = y.shape
    n_pairs = len(pairs)
    incidence = np.zeros((n_tasks, n_sys * n_pairs))
    cell_pair = np.full((n_sys, n_tasks), -1)
    for i, j in zip(*np.nonzero(run)):
        cell_pair[i, j] = key[(int(y[i, j]), int(m[i, j]))]
        incidence[j, i * n_pairs + cell_pair[i, j]] = 1.0
    py, pm_ = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    log_comb = gammaln(pm_ + 1) - gammaln(py + 1) - gammaln(pm_ - py + 1)
    return _Layout(n_sys, n_tasks, py, pm_ - py, log_comb, incidence, cell_pair)


# -- coordinates ------------------------------------------------------------------
def block_names(family: str, slope: bool = False) -> tuple[str, ...]:
    """The model's free variables, in order."""
    tail = (("grid_logits",) if family == "grid"
            else ("difficulty_mean", "log_difficulty_sd", "component_logits"))
    return ("ability", "log_concentration", *(("log_slope",) if slope else ()), *tail)


def _blocks(family: str, n_systems: int, n_grid: int, n_components: int = 1,
            slope: bool = False, shared: bool = False) -> list[tuple[str, int]]:
    """The optimiser's coordinates: (name, size) of each free variable with any.

    The normal family is a mixture of `n_components` normals: a mean and a
    log-sd each, and ``n_components - 1`` logits of the mixing weights (the
    first component's logit is 0). With `slope`, a log-slope per system
    follows the concentrations; with `shared`, one log-concentration serves
    every system.
    """
    blocks = [("ability", n_systems), ("log_concentration", 1 if shared else n_systems)]
    if slope:
        blocks.append(("log_slope", n_systems))
    if family == "grid":
        blocks.append(("grid_logits", n_grid))
    else:
        blocks += [("difficulty_mean", n_components), ("log_difficulty_sd", n_components),
                   ("component_logits", n_components - 1)]
    return [(name, size) for name, size in blocks if size > 0]


def split_blocks(z: np.ndarray, blocks) -> dict[str, np.ndarray]:
    out, start = {}, 0
    for name, size in blocks:
        out[name] = z[start:start + size]
        start += size
    return out


def _abilities(free: np.ndarray) -> np.ndarray:
    return free - free.mean()


def _log_slopes(parts: dict[str, np.ndarray], n_systems: int) -> np.ndarray:
    """Centred log-slopes (zeros for the Rasch model, which has none)."""
    free = parts.get("log_slope")
    return np.zeros(n_systems) if free is None else free - free.mean()


def _system_parts(parts: dict[str, np.ndarray]):
    """Per-system abilities, log-concentrations and log-slopes, (I,) each."""
    a = _abilities(parts["ability"])
    log_kappa = np.broadcast_to(parts["log_concentration"], a.shape)
    return a, log_kappa, _log_slopes(parts, a.size)


def _lse(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """``logsumexp`` of finite inputs along one axis (scipy's costs ~0.1 ms a call in
    checks, and the profile's searches call it thousands of times)."""
    top = x.max(axis=axis, keepdims=True)
    out = top + np.log(np.exp(x - top).sum(axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def _log_grid_weights(family: str, parts: dict[str, np.ndarray], grid: np.ndarray):
    if family == "grid":
        logits = parts["grid_logits"]
        return logits - _lse(logits)
    mean, log_sd = parts["difficulty_mean"], parts["log_difficulty_sd"]
    logits = np.concatenate([[0.0], parts.get("component_logits", np.zeros(0))])
    log_pi = logits - _lse(logits)
    dens = (log_pi[None, :] - log_sd[None, :]
            - 0.5 * ((grid[:, None] - mean[None, :]) / np.exp(log_sd)[None, :]) ** 2)
    dens = dens[:, 0] if dens.shape[1] == 1 else _lse(dens, axis=1)
    return dens - _lse(dens)


# -- the likelihood in numpy (posteriors, metrics, and the reference in tests) -----
def _eta(a: np.ndarray, grid: np.ndarray, log_slope: np.ndarray | None = None) -> np.ndarray:
    """``logit mu`` of each system at each grid point, (I, G): ``a_i - s_i d``."""
    slope = 1.0 if log_slope is None else np.exp(log_slope)[:, None]
    return a[:, None] - slope * grid[None, :]


def beta_shapes(a: np.ndarray, log_kappa: np.ndarray, grid: np.ndarray,
            log_slope: np.ndarray | None = None):
    """Beta shapes ``(alpha, beta)`` of each system at each grid point, (I, G) each."""
    eta = _eta(a, grid, log_slope)
    kappa = np.exp(log_kappa)[:, None]
    return kappa * expit(eta), kappa * expit(-eta)


def task_grid_loglik(layout: _Layout, a, log_kappa, grid, log_slope=None) -> np.ndarray:
    """``L[j, g]``: log-likelihood of every system's counts on task j if ``d_j = grid[g]``."""
    alpha, beta = beta_shapes(np.asarray(a, float), np.asarray(log_kappa, float), grid,
                          None if log_slope is None else np.asarray(log_slope, float))
    ell = (layout.pair_log_comb[None, None, :]
           + betaln(alpha[:, :, None] + layout.pair_y, beta[:, :, None] + layout.pair_f)
           - betaln(alpha, beta)[:, :, None])                      # (I, G, P)
    stacked = ell.transpose(0, 2, 1).reshape(-1, grid.size)         # (I * P, G)
    return layout.incidence @ stacked


# -- analytic derivatives: the observed information and the posterior's derivatives --
# Per system, the coordinates u that move its Beta shapes: ability, log concentration
# (and log slope); the difficulty distribution's coordinates (omega) move log w only.
# Task j's joint log-density at grid point g is l_jg = log w_g + sum_i ell_i(g, p_ij),
# its posterior r_jg, and l = sum_j logsumexp_g l_jg, so
#   grad l      = sum_jg r_jg grad l_jg,
#   hess l      = sum_jg r_jg (hess l_jg + grad l_jg grad l_jg') - sum_j m_j m_j',
#   d r_jg      = r_jg (grad l_jg - m_j),      m_j = sum_g r_jg grad l_jg.
# grad l_jg has system i's part only where i ran task j, and that part depends on j
# only through the cell's pair: everything is built from (I, U, G, P) tables.
_CHUNK = 4_000_000  # elements of a (coordinates x tasks x grid) block held at once


@dataclass(frozen=True)
class _PooledDerivatives:
    """The pooled log-likelihood's pieces at one point, for its analytic derivatives.

    ``r`` (J, G) task posterior; ``d1`` (I, U, G, P) and ``d2`` (I, U, U, G, P)
    first and second derivatives of ``ell_i(g, p)`` in system i's own
    coordinates; ``w1`` (G, W) and ``w2`` (G, W, W) those of ``log w_g`` in the
    difficulty distribution's; ``transform`` (n_phi, n) maps the free
    coordinates to these (per system i-major, then the W), which is linear:
    the abilities and log-slopes are centred, a shared concentration is one.
    """

    r: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    transform: np.ndarray
    cell_pair: np.ndarray

    @property
    def n_units(self) -> int:
        return self.d1.shape[1]

    def task_blocks(self):
        """``(tasks, E)`` chunks: E (n_sys_phi, len(tasks), G), ``d ell / d u`` of
        every system at each cell (zero where the system did not run the task)."""
        n_sys, n_u = self.d1.shape[:2]
        n_tasks, n_grid = self.r.shape
        step = max(1, _CHUNK // max(1, n_sys * n_u * n_grid))
        d1 = self.d1.transpose(0, 1, 3, 2)  # (I, U, P, G)
        for start in range(0, n_tasks, step):
            tasks = np.arange(start, min(start + step, n_tasks))
            pairs = self.cell_pair[:, tasks]  # (I, T)
            block = d1[np.arange(n_sys)[:, None], :, np.maximum(pairs, 0), :]  # (I, T, U, G)
            block = np.where((pairs >= 0)[:, :, None, None], block, 0.0)
            yield tasks, block.transpose(0, 2, 1, 3).reshape(n_sys * n_u, tasks.size, n_grid)

    def pair_posterior(self) -> np.ndarray:
        """(I, P, G): each system's posterior mass at g summed over its tasks with pair p."""
        n_sys, n_pairs = self.d1.shape[0], self.d1.shape[-1]
        out = np.zeros((n_sys, n_pairs, self.r.shape[1]))
        for i in range(n_sys):
            ran = self.cell_pair[i] >= 0
            np.add.at(out[i], self.cell_pair[i, ran], self.r[ran])
        return out

    def score(self) -> np.ndarray:
        """The gradient of the log-likelihood in the free coordinates."""
        mass = self.pair_posterior()
        n_s = self.d1.shape[0] * self.d1.shape[1]
        grad = np.concatenate([np.einsum("ipg,iugp->iu", mass, self.d1).reshape(n_s),
                               self.r.sum(axis=0) @ self.w1])
        return self.transform.T @ grad

    def information(self) -> np.ndarray:
        """The observed information ``-hess l`` in the free coordinates."""
        n_sys, n_u = self.d1.shape[:2]
        n_w = self.w1.shape[1]
        n_s = n_sys * n_u
        hess = np.zeros((n_s + n_w, n_s + n_w))
        mass = self.pair_posterior()                                     # (I, P, G)
        # sum_jg r_jg hess l_jg: block diagonal, per system and for the distribution
        per_sys = np.einsum("ipg,iuvgp->iuv", mass, self.d2)
        for i in range(n_sys):
            hess[i * n_u:(i + 1) * n_u, i * n_u:(i + 1) * n_u] = per_sys[i]
        r_sum = self.r.sum(axis=0)                                        # (G,)
        hess[n_s:, n_s:] = np.einsum("g,gvw->vw", r_sum, self.w2)
        # sum_jg r_jg grad l_jg grad l_jg'
        y = np.einsum("ipg,iugp->iug", mass, self.d1).reshape(n_s, -1)  # sum_j r E
        cross = y @ self.w1
        hess[:n_s, n_s:] += cross
        hess[n_s:, :n_s] += cross.T
        hess[n_s:, n_s:] += self.w1.T @ (r_sum[:, None] * self.w1)
        means = np.zeros((n_s + n_w, self.r.shape[0]))                   # m_j
        means[n_s:] = (self.r @ self.w1).T
        root = np.sqrt(self.r)
        for tasks, e in self.task_blocks():
            scaled = (e * root[tasks][None]).reshape(n_s, -1)
            hess[:n_s, :n_s] += scaled @ scaled.T
            means[:n_s, tasks] = (e * self.r[tasks][None]).sum(axis=2)
        hess -= means @ means.T
        return -(self.transform.T @ hess @ self.transform)

    def task_scores(self) -> np.ndarray:
        """(n, J): each task's gradient of its log-likelihood term, in the free coordinates.

        Tasks are independent given the parameters, so their outer products
        sum to the score's variance whether or not the model is right (the
        sandwich's meat).
        """
        n_s = self.d1.shape[0] * self.d1.shape[1]
        means = np.zeros((n_s + self.w1.shape[1], self.r.shape[0]))
        means[n_s:] = (self.r @ self.w1).T
        for tasks, e in self.task_blocks():
            means[:n_s, tasks] = (e * self.r[tasks][None]).sum(axis=2)
        return self.transform.T @ means

    def posterior_contraction(self, weights: np.ndarray) -> np.ndarray:
        """``sum_jg weights[c, j, g] d r_jg / d theta`` for each row c, in the free coordinates.

        `weights` is (C, J, G); returns (n, C). This is what a metric that
        averages over the task posterior needs, without differencing it.
        """
        n_sys, n_u = self.d1.shape[:2]
        n_s = n_sys * n_u
        n_c = weights.shape[0]
        rw = weights * self.r[None]                                       # (C, J, G)
        totals = rw.sum(axis=2)                                           # (C, J)
        out = np.zeros((n_s + self.w1.shape[1], n_c))
        means = self.r @ self.w1                                          # (J, W)
        out[n_s:] = (rw.sum(axis=1) @ self.w1).T - means.T @ totals.T
        for tasks, e in self.task_blocks():
            # matrix products (BLAS) over the flattened (task, grid) axis
            m_sys = (e * self.r[tasks][None]).sum(axis=2)                 # (n_s, T)
            out[:n_s] += (e.reshape(n_s, -1) @ rw[:, tasks].reshape(n_c, -1).T
                          - m_sys @ totals[:, tasks].T)
        return self.transform.T @ out


def _pooled_derivatives(layout: _Layout, grid: np.ndarray, family: str, blocks,
                        z: np.ndarray, step: float = 1e-4, second: bool = True
                        ) -> _PooledDerivatives:
    """The analytic derivative pieces of the pooled model at coordinates `z`.

    The difficulty distribution's ``log w`` is differenced (a cheap G-vector,
    to ~1e-8); everything else is analytic (digamma and trigamma of the Beta
    shapes). Without `second` the second derivatives (``d2``, ``w2``) are
    left as zeros: the score and the posterior's derivative do not need them.
    """
    from scipy.special import digamma, polygamma

    parts = split_blocks(z, blocks)
    a, log_kappa, log_s = _system_parts(parts)
    log_w = _log_grid_weights(family, parts, grid)
    slope = "log_slope" in parts
    n_sys, n_grid = a.size, grid.size
    eta = _eta(a, grid, log_s)                                            # (I, G)
    kappa = np.exp(log_kappa)[:, None]
    # 1 - expit(eta) rounds to 0 from eta ~ 37 (beta = 0, digamma infinite): expit(-eta)
    sig, co_sig = expit(eta), expit(-eta)
    alpha, beta = kappa * sig, kappa * co_sig
    y, f = layout.pair_y, layout.pair_f
    m_tot = y + f
    A, B = alpha[:, :, None], beta[:, :, None]
    K = np.broadcast_to(kappa[:, :, None], A.shape)
    tri = lambda v: polygamma(1, v)  # noqa: E731
    e_a = digamma(A + y) - digamma(K + m_tot) - digamma(A) + digamma(K)
    e_b = digamma(B + f) - digamma(K + m_tot) - digamma(B) + digamma(K)
    if second:
        e_aa = tri(A + y) - tri(K + m_tot) - tri(A) + tri(K)
        e_bb = tri(B + f) - tri(K + m_tot) - tri(B) + tri(K)
        e_ab = -tri(K + m_tot) + tri(K)
    q = (kappa * sig * co_sig)[:, :, None]                            # d alpha / d eta
    curv = (1.0 - 2.0 * sig)[:, :, None]
    # per unit u: (d alpha/du, d beta/du); second derivatives below
    units = ["ability", "log_concentration"] + (["log_slope"] if slope else [])
    n_u = len(units)
    s_d = (np.exp(log_s)[:, None] * grid[None, :])[:, :, None]            # s d (I, G, 1)
    d_eta = {"ability": np.ones_like(q), "log_concentration": np.zeros_like(q),
             "log_slope": -s_d}
    first = {}
    for u in units:
        if u == "log_concentration":
            first[u] = (A, B)
        else:
            first[u] = (q * d_eta[u], -q * d_eta[u])
    shape = (n_sys, n_u, n_grid, y.size)
    d1 = np.empty(shape)
    d2 = np.zeros((n_sys, n_u, n_u, n_grid, y.size) if second else (n_sys, n_u, n_u, 1, 1))
    for x, u in enumerate(units):
        au, bu = first[u]
        d1[:, x] = e_a * au + e_b * bu
        for w_, v in enumerate(units):
            if not second:
                break
            av, bv = first[v]
            # second derivatives of (alpha, beta) in (u, v)
            if u == "log_concentration" and v == "log_concentration":
                auv, buv = A, B
            elif "log_concentration" in (u, v):
                other = v if u == "log_concentration" else u
                auv, buv = q * d_eta[other], -q * d_eta[other]
            else:
                d2_eta = -s_d if (u == v == "log_slope") else 0.0
                auv = q * curv * d_eta[u] * d_eta[v] + q * d2_eta
                buv = -auv
            d2[:, x, w_] = (e_aa * au * av + e_ab * (au * bv + av * bu) + e_bb * bu * bv
                            + e_a * auv + e_b * buv)
    # the difficulty distribution: log w_g in its own coordinates, differenced
    names = [name for name, _ in blocks]
    w_names = [name for name in names if name not in units]
    w_index = np.concatenate([np.arange(s, s + n) for (name, n), s in
                              zip(blocks, np.cumsum([0] + [n for _, n in blocks]))
                              if name in w_names]).astype(int)
    n_w = w_index.size

    def log_weights(omega):
        zz = z.copy()
        zz[w_index] = omega
        return _log_grid_weights(family, split_blocks(zz, blocks), grid)

    omega0 = z[w_index]
    w1 = np.empty((n_grid, n_w))
    w2 = np.zeros((n_grid, n_w, n_w))
    if family == "grid":
        w = np.exp(log_w)
        w1[:] = np.eye(n_grid) - w[None, :]              # d log softmax_g / d logit_h
        if second:
            w2[:] = -(np.diag(w) - np.outer(w, w))[None]
    else:
        h = step * np.maximum(1.0, np.abs(omega0))
        eye = np.eye(n_w)
        for c in range(n_w):
            up, down = log_weights(omega0 + h[c] * eye[c]), log_weights(omega0 - h[c] * eye[c])
            w1[:, c] = (up - down) / (2 * h[c])
        for c in range(n_w if second else 0):
            for d in range(c, n_w):
                pp = log_weights(omega0 + h[c] * eye[c] + h[d] * eye[d])
                pm = log_weights(omega0 + h[c] * eye[c] - h[d] * eye[d])
                mp = log_weights(omega0 - h[c] * eye[c] + h[d] * eye[d])
                mm = log_weights(omega0 - h[c] * eye[c] - h[d] * eye[d])
                w2[:, c, d] = w2[:, d, c] = (pp - pm - mp + mm) / (4 * h[c] * h[d])
    # the linear map from the free coordinates to (per system: units; then omega)
    starts = dict(zip(names, np.cumsum([0] + [n for _, n in blocks])))
    transform = np.zeros((n_sys * n_u + n_w, z.size))
    centre = np.eye(n_sys) - 1.0 / n_sys
    for x, u in enumerate(units):
        rows = np.arange(n_sys) * n_u + x
        size = dict(blocks)[u]
        cols = starts[u] + np.arange(size)
        if u == "log_concentration":
            transform[rows[:, None], cols[None, :]] = 1.0 if size == 1 else np.eye(n_sys)
        else:
            transform[rows[:, None], cols[None, :]] = centre
    transform[n_sys * n_u + np.arange(n_w), w_index] = 1.0
    joint = log_w[None, :] + task_grid_loglik(layout, a, log_kappa, grid, log_s)
    r = np.exp(joint - _lse(joint, axis=1, keepdims=True))
    return _PooledDerivatives(r, d1, d2, w1, w2, transform, layout.cell_pair)


# -- the PyMC model and its compiled objective -------------------------------------
def build_pooled_model(layout: _Layout, family: str = "grid", grid: np.ndarray = DEFAULT_GRID,
                       n_components: int = 1, prior: str = "flat", slope: bool = False,
                       shared: bool = False):
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
    """
    import_pytensor()
    import pymc as pm
    import pytensor.tensor as pt
    import pytensor.tensor.special  # noqa: F401  (log_softmax)
    from pymc.distributions.dist_math import betaln as pt_betaln

    with pm.Model() as model:
        py = pm.Data("pair_y", layout.pair_y)
        pf = pm.Data("pair_failures", layout.pair_f)
        lc = pm.Data("pair_log_comb", layout.pair_log_comb)
        inc = pm.Data("incidence", layout.incidence)
        t = pm.Data("grid", np.asarray(grid, float))
        n_sys = inc.shape[1] // py.shape[0]
        sizes = {"ability": n_sys, "log_concentration": 1 if shared else n_sys,
                 "log_slope": n_sys, "grid_logits": t.shape[0]}
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
        log_kappa = free["log_concentration"]
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
        ell = (lc[None, None, :]
               + pt_betaln(alpha[:, :, None] + py[None, None, :],
                           beta[:, :, None] + pf[None, None, :])
               - pt_betaln(alpha, beta)[:, :, None])
        stacked = ell.dimshuffle(0, 2, 1).reshape((-1, t.shape[0]))
        task_ll = pt.dot(inc, stacked)
        pm.Deterministic("abilities", a)
        pm.Deterministic("concentrations", pt.exp(log_kappa) * pt.ones(n_sys))
        pm.Deterministic("grid_weights", pt.exp(log_w))
        pm.Potential("loglik", pt.sum(pt.logsumexp(log_w[None, :] + task_ll, axis=1)))
    return model


@dataclass
class PooledObjective:
    """Compiled ``logp`` and gradient of the pooled model, for :func:`passmix.inference.maximize`.

    One per family and process; :meth:`set_data` points it at a panel and a
    grid of any shape (the model's sizes are symbolic). Hold :attr:`lock`
    from :meth:`set_data` until the last evaluation on those data.
    """

    _fn: Any
    family: str
    slope: bool = False
    shared: bool = False
    blocks: list = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self._data = {v.name: v for v in self._fn.get_shared()}

    def set_data(self, layout: _Layout, grid: np.ndarray, n_components: int = 1) -> None:
        """Point the model at a panel, a grid and a number of normals (nothing recompiled)."""
        values = {"pair_y": layout.pair_y, "pair_failures": layout.pair_f,
                  "pair_log_comb": layout.pair_log_comb, "incidence": layout.incidence,
                  "grid": np.asarray(grid, dtype=float)}
        if self.family != "grid":
            values["components"] = np.zeros(n_components)
        for name, value in values.items():
            var = self._data[name]
            var.set_value(np.asarray(value, dtype=var.type.dtype))
        self._layout, self._grid = layout, np.asarray(grid, dtype=float)
        self.blocks = _blocks(self.family, layout.n_systems, len(grid), n_components, self.slope,
                              self.shared)
        self._sizes = [dict(self.blocks).get(name, 0)
                       for name in block_names(self.family, self.slope)]

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.asarray(z, dtype=float)
        # one input per free variable, in the model's order
        parts = np.split(z, np.cumsum(self._sizes)[:-1])
        logp, grad = self._fn(*parts)
        return float(logp), np.asarray(grad)

    def negative(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.logp_dlogp(z)
        return -logp, -grad

    def hessian(self, z: np.ndarray) -> np.ndarray:
        """Hessian of ``logp``, analytic (:class:`_PooledDerivatives`): 2n compiled
        gradients of differencing would cost minutes for hundreds of systems."""
        return -_pooled_derivatives(self._layout, self._grid, self.family, self.blocks,
                                    np.asarray(z, dtype=float)).information()

    def hessian_by_differences(self, z: np.ndarray) -> np.ndarray:
        """Hessian by central differences of the compiled gradient (the reference)."""
        return gradient_hessian(self.logp_dlogp, z)


# what the compiled objectives are made from: a change in either is a new cache file
_POOLED_SOURCES = ("models/pooled/fit.py", "_pytensor.py")


def _data_names(family: str) -> tuple[str, ...]:
    names = ("pair_y", "pair_failures", "pair_log_comb", "incidence", "grid")
    return names if family == "grid" else (*names, "components")


@lru_cache(maxsize=None)
def _objective(family: str, slope: bool = False, shared: bool = False) -> PooledObjective:
    """The family's compiled objective: from disk if a process made it before
    (:func:`passmix._pytensor.cache_path`), which skips importing PyMC and
    rewriting the graph (most of a warm pooled fit's time)."""
    path = cache_path(f"pooled-{family}-{int(slope)}{int(shared)}", _POOLED_SOURCES)
    fn = load_cached(path, _data_names(family))
    if fn is None:
        fn = _compile_pooled(family, slope, shared)
        store_cached(path, fn)
    return PooledObjective(fn, family, slope, shared)


def _compile_pooled(family: str, slope: bool, shared: bool):
    import_pytensor()
    import pymc as pm

    # placeholder data of the right ranks; set_data swaps in each panel's
    dummy = _Layout(2, 1, np.zeros(1), np.ones(1), np.zeros(1), np.ones((1, 2)))
    model = build_pooled_model(dummy, family, DEFAULT_GRID, slope=slope, shared=shared)
    if [v.name for v in model.value_vars] != list(block_names(family, slope)):  # pragma: no cover
        raise RuntimeError("unexpected order of the pooled model's variables")
    logp = model.logp(jacobian=False)
    dlogp = model.dlogp(model.free_RVs, jacobian=False)
    fn = pm.pytensorf.compile(model.value_vars, [logp, dlogp], mode=compile_mode())
    if {v.name for v in fn.get_shared()} != set(_data_names(family)):  # pragma: no cover
        raise RuntimeError("unexpected data containers of the pooled model")
    return fn


def get_pooled_objective(layout: _Layout, family: str, grid: np.ndarray,
                         n_components: int = 1, slope: bool = False,
                         shared: bool = False) -> PooledObjective:
    """The family's compiled objective (built once per process), set to `layout` and `grid`."""
    obj = _objective(family, bool(slope), bool(shared))
    obj.set_data(layout, grid, n_components)
    return obj


# -- fitting ------------------------------------------------------------------------
def _box(blocks) -> np.ndarray:
    return np.concatenate([np.tile(_BOUNDS[name], (size, 1)) for name, size in blocks])


def _starts(panel: Panel, family: str, grid: np.ndarray, blocks, n_init: int,
            rng: np.random.Generator) -> list[np.ndarray]:
    """Abilities from each system's shrunk success rate, difficulties spread over the grid."""
    y, m = panel.successes.astype(float), panel.trials.astype(float)
    rate_sys = (y.sum(1) + 0.5) / (m.sum(1) + 1.0)
    a0 = np.log(rate_sys) - np.log1p(-rate_sys)
    a0 -= a0.mean()
    run = m > 0
    rate_task = (np.where(run, y, 0).sum(0) + 0.5) / (np.where(run, m, 0).sum(0) + 1.0)
    d0 = -(np.log(rate_task) - np.log1p(-rate_task))
    starts = []
    for s in range(n_init):
        jitter = 0.0 if s == 0 else 0.5
        parts = {"ability": a0 + jitter * rng.standard_normal(a0.size),
                 "log_concentration": np.full(dict(blocks)["log_concentration"],
                                              2.0 + (rng.uniform(-1, 3) if s else 0.0))}
        if "log_slope" in dict(blocks):  # drawn only then: Rasch fits keep their starts
            parts["log_slope"] = 0.3 * jitter * rng.standard_normal(a0.size)
        if family == "grid":
            # a smoothed histogram of the crude difficulties, floored so no point starts dead
            spread = 1.0 + jitter * 2
            dens = np.exp(-0.5 * ((grid[:, None] - d0[None, :]) / spread) ** 2).sum(1)
            w = dens / dens.sum() + 1e-3
            parts["grid_logits"] = np.log(w / w.max())
        else:
            # H normals at the crude difficulties' quantiles, each as wide as its share
            n_comp = dict(blocks)["difficulty_mean"]
            q = np.quantile(d0, (np.arange(n_comp) + 0.5) / n_comp)
            parts["difficulty_mean"] = q + jitter * rng.standard_normal(n_comp)
            parts["log_difficulty_sd"] = np.full(
                n_comp, np.log(max(d0.std() / n_comp, 0.5)) + jitter * 0.3)
            parts["component_logits"] = np.zeros(n_comp - 1)
        z = np.concatenate([parts[name] for name, _ in blocks])
        box = _box(blocks)
        starts.append(np.clip(z, box[:, 0] + 1e-9, box[:, 1] - 1e-9))
    return starts


def _n_params(family: str, parts: dict[str, np.ndarray], n_systems: int) -> int:
    """Free parameters for AIC and BIC: abilities, concentrations, the difficulty distribution's.

    For the grid, a support point with mass counts twice (location and
    weight), less one for the weights' sum: the usual count for a discrete
    mixing distribution. Slopes count I - 1 (they are centred), a shared
    concentration 1.
    """
    base = ((n_systems - 1) + parts["log_concentration"].size
            + (n_systems - 1 if "log_slope" in parts else 0))
    if family == "grid":
        w = np.exp(log_softmax(parts["grid_logits"]))
        return base + 2 * int((w > _SUPPORT).sum()) - 1
    return base + 3 * parts["difficulty_mean"].size - 1


@dataclass(frozen=True)
class _Candidate:
    family: str
    optimum: Optimum
    parts: dict
    n_params: int
    bic: float
    n_components: int = 1
    slope: bool = False
    shared: bool = False


def em_grid_weights(scaled: np.ndarray, w: np.ndarray, max_iter: int = 2000,
                    tol: float = 1e-10) -> np.ndarray:
    """Maximise ``sum_j log(scaled[j] @ w)`` over the simplex by EM, from `w`.

    `scaled` is ``exp(L - max_g L)`` per task (J, G). Each step is
    ``w_g <- w_g * mean_j scaled[j, g] / (scaled[j] @ w)``, which never lowers
    the objective; it stops when the objective rises by less than
    ``tol * J``. This is the nonparametric maximum-likelihood mixing
    distribution for fixed abilities and concentrations.
    """
    n_tasks = scaled.shape[0]
    w = np.asarray(w, dtype=float)
    last = -np.inf
    for _ in range(max_iter):
        mix = scaled @ w
        value = np.log(mix).sum()
        if value - last < tol * n_tasks:
            break
        last = value
        w = w * (scaled.T @ (1.0 / mix)) / n_tasks
    return w / w.sum()


@dataclass
class _ProfiledGrid:
    """The grid family's likelihood with the weights profiled out by EM.

    Coordinates are the abilities', concentrations' (and slopes') only. At each point
    the weights are the EM maximiser (warm-started from the last point), and
    by the envelope theorem the profile's gradient is the full likelihood's
    gradient in those coordinates at the maximising weights, which the
    compiled PyMC objective gives. L-BFGS on those (about 2I) coordinates then
    replaces a joint search with G more, whose weight directions are flat.
    """

    objective: PooledObjective
    layout: _Layout
    grid: np.ndarray
    weights: np.ndarray

    def full(self, theta: np.ndarray) -> np.ndarray:
        """The full coordinates at `theta`, weights set to their EM maximiser."""
        a, log_kappa, log_s = _system_parts(split_blocks(theta, self.objective.blocks[:-1]))
        ll = task_grid_loglik(self.layout, a, log_kappa, self.grid, log_s)
        scaled = np.exp(ll - ll.max(axis=1, keepdims=True))
        # keep a floor so a point EM has emptied can come back at a later theta
        start = np.maximum(self.weights, 1e-12)
        self.weights = em_grid_weights(scaled, start / start.sum())
        logits = np.log(np.maximum(self.weights, 1e-300) / self.weights.max())
        lo = _BOUNDS["grid_logits"][0]
        return np.concatenate([theta, np.maximum(logits, lo)])

    def logp_dlogp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.objective.logp_dlogp(self.full(np.asarray(theta, dtype=float)))
        return logp, grad[:theta.size]

    def negative(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.logp_dlogp(theta)
        return -logp, -grad


def _maximize_grid(objective: PooledObjective, layout: _Layout, grid: np.ndarray,
                   starts: list[np.ndarray], box: np.ndarray) -> Optimum:
    """The grid family's optimum: L-BFGS on the profile over EM weights, from each start."""
    # every block but the last, the grid's weights
    n_theta = sum(size for _, size in objective.blocks[:-1])
    best, best_w = None, None
    for z0 in starts:
        profiled = _ProfiledGrid(objective, layout, grid, np.exp(log_softmax(z0[n_theta:])))
        # EM's weights are exact only to its tolerance, so the profile is not smooth
        # to L-BFGS-B's default polish: stop at a relative gain of 1e-12 (convergence
        # is then judged by the projected gradient)
        res = minimize(profiled.negative, z0[:n_theta], jac=True, method="L-BFGS-B",
                       bounds=box[:n_theta], options={"maxiter": 2000, "ftol": 1e-12,
                                                      "gtol": 1e-6})
        if best is None or -res.fun > -best.fun:
            best, best_w = res, profiled
    z = best_w.full(best.x)
    return Optimum(params=z, loglik=objective.logp_dlogp(z)[0], converged=bool(best.success),
                   message=str(best.message), n_iter=int(best.nit),
                   on_bound=at_bound(z, box).any(axis=1), n_starts=len(starts))


def _warm_start(warm: _Candidate, family: str, grid: np.ndarray, n_components: int,
                blocks, box: np.ndarray) -> np.ndarray:
    """A start from another candidate's optimum: its abilities, concentrations and slopes
    (1 if it had none), and its difficulty distribution carried over.

    The same family and H keep the distribution as it is (a model with slopes
    then starts at its Rasch counterpart's optimum, so it never ends below
    it; a shared concentration starts at the median of the systems'); H
    normals are split from a single normal's optimum, the means spread over
    its spread; the grid's weights start as the normal's mass at each point,
    a smooth start for EM.
    """
    n_sys = warm.parts["ability"].size
    log_kappa = warm.parts["log_concentration"]
    n_kappa = dict(blocks)["log_concentration"]
    if log_kappa.size != n_kappa:  # shared from per-system (the median) or the other way
        log_kappa = np.full(n_kappa, np.median(log_kappa))
    parts = {"ability": warm.parts["ability"], "log_concentration": log_kappa,
             "log_slope": warm.parts.get("log_slope", np.zeros(n_sys))}
    if family == warm.family and n_components == warm.n_components:
        parts.update({name: v for name, v in warm.parts.items() if name not in parts})
    elif family == "grid":
        w = np.exp(_log_grid_weights(warm.family, warm.parts, grid))
        parts["grid_logits"] = np.log(np.maximum(w / w.max(), 1e-300))
    else:
        mean = warm.parts["difficulty_mean"][0]
        sd = np.exp(warm.parts["log_difficulty_sd"][0])
        parts.update(difficulty_mean=mean + sd * np.linspace(-1.0, 1.0, n_components),
                     log_difficulty_sd=np.full(n_components, np.log(sd / np.sqrt(n_components))),
                     component_logits=np.zeros(n_components - 1))
    z = np.concatenate([parts[name] for name, _ in blocks])
    return np.clip(z, box[:, 0] + 1e-9, box[:, 1] - 1e-9)


def _fit_family(panel: Panel, layout: _Layout, family: str, grid: np.ndarray, n_init: int,
                rng: np.random.Generator, warm: tuple[_Candidate, ...] = (),
                n_components: int = 1, slope: bool = False, shared: bool = False) -> _Candidate:
    objective = get_pooled_objective(layout, family, grid, n_components, slope, shared)
    blocks = objective.blocks
    box = _box(blocks)
    with objective.lock:
        objective.set_data(layout, grid, n_components)
        starts = _starts(panel, family, grid, blocks, n_init, rng)
        warm_starts = [_warm_start(w, family, grid, n_components, blocks, box) for w in warm]
        if family == "grid":
            # the warm starts are close in abilities and concentrations and smooth
            # for EM: with the crude one they find what more crude starts did at a
            # fraction of the cost
            starts = [*warm_starts, starts[0]] if warm_starts else starts
            best = _maximize_grid(objective, layout, grid, starts, box)
        else:
            # every start briefly by L-BFGS-B, the best finished by damped Newton steps
            # on the analytic Hessian: L-BFGS-B alone crawls to the end over hundreds
            # of coordinates (and used to stop short of the optimum)
            best = maximize(objective, [*warm_starts, *starts], box,
                            newton_steps=_NEWTON_STEPS, screen=_SCREEN, damped=True)
        # L-BFGS-B rarely reports success on the grid's flat directions (the
        # softmax's shift, weights of points no task needs): judge by the
        # gradient projected on the box instead
        _, grad = objective.logp_dlogp(best.params)
    held = at_bound(best.params, box)
    projected = np.where((held[:, 0] & (grad < 0)) | (held[:, 1] & (grad > 0)), 0.0, grad)
    converged = bool(np.max(np.abs(projected)) < _GRAD_TOL * np.sqrt(layout.n_tasks))
    best = replace(best, converged=converged)
    parts = split_blocks(best.params, blocks)
    k = _n_params(family, parts, layout.n_systems)
    n_obs = layout.n_tasks
    return _Candidate(family, best, parts, k, -2.0 * best.loglik + k * np.log(n_obs),
                      n_components, slope, shared)


# -- results ------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class PooledFit:
    """A fitted pooled model (:func:`fit_pooled`).

    Attributes
    ----------
    panel : Panel
        The data.
    family : str
        The difficulty family chosen (``"grid"`` or ``"normal"``).
    grid : numpy.ndarray
        Difficulty grid (logits).
    abilities, concentrations : numpy.ndarray
        ``a_i`` (summing to 0) and ``kappa_i``, one per system.
    grid_weights : numpy.ndarray
        The fitted difficulty distribution: the mass at each grid point.
    loglik, bic : float
        Maximised marginal log-likelihood and its BIC (J tasks as observations).
    converged : bool
        L-BFGS-B's verdict on the chosen family's optimum.
    family_table : pandas.DataFrame
        Every candidate tried (family, H, concentration, with or without slopes):
        log-likelihood, parameters counted, AIC, BIC, selected;
        with ``criterion="heldout"`` also ``heldout_loglik``, the held-out
        tasks' log-likelihood summed over the folds.
    params : numpy.ndarray
        The optimum's free coordinates.
    n_components : int
        Normals in the difficulty distribution (1 unless ``max_components``
        let the criterion choose more; 1 for the grid family).
    slope : bool
        Whether the chosen model has per-system slopes (``fit_pooled(slope=...)``).
    concentration : {"system", "shared"}
        Whether each system has its own concentration or one is shared by all
        (``fit_pooled(concentration=...)``); :attr:`concentrations` has one
        value per system either way.
    robust : bool
        Whether intervals are widened where the tasks' own scores vary more than
        the model's information says (a sandwich check, per system, metric and
        horizon; :meth:`_inflation`): True by default, since the shared
        difficulty order is an assumption real systems break. ``replace(fit,
        robust=False, _cache={})`` gives the model-only intervals.
    """

    panel: Panel
    family: str
    grid: np.ndarray
    abilities: np.ndarray
    concentrations: np.ndarray
    grid_weights: np.ndarray
    loglik: float
    bic: float
    converged: bool
    family_table: pd.DataFrame
    params: np.ndarray
    _layout: _Layout = field(repr=False)
    n_components: int = 1
    slope: bool = False
    concentration: str = "system"
    robust: bool = True
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- the model's quantities ---------------------------------------------------
    @property
    def systems(self) -> np.ndarray:
        """System labels, in the order of :attr:`abilities`."""
        return self.panel.systems

    @property
    def slopes(self) -> np.ndarray:
        """Per-system slopes ``s_i`` (geometric mean 1); all 1 without ``slope=True``."""
        return np.exp(self._coordinates(self.params)[3])

    def _blocks(self):
        return _blocks(self.family, self._layout.n_systems, self.grid.size, self.n_components,
                       self.slope, self.concentration == "shared")

    def _coordinates(self, z: np.ndarray):
        """Abilities, log-concentrations, log grid weights and log-slopes at coordinates `z`
        (per system, (I,), but the weights)."""
        parts = split_blocks(z, self._blocks())
        a, log_kappa, log_s = _system_parts(parts)
        return a, log_kappa, _log_grid_weights(self.family, parts, self.grid), log_s

    def task_posterior(self, z: np.ndarray | None = None) -> np.ndarray:
        """``r[j, g]``: posterior probability that task j's difficulty is ``grid[g]``."""
        a, log_kappa, log_w, log_s = self._coordinates(self.params if z is None else z)
        joint = log_w[None, :] + task_grid_loglik(self._layout, a, log_kappa, self.grid, log_s)
        return np.exp(joint - _lse(joint, axis=1, keepdims=True))

    def _posterior(self, z: np.ndarray | None) -> np.ndarray:
        """The task posterior at `z`, kept for the optimum (every metric call needs it)."""
        if z is not None:
            return self.task_posterior(z)
        if "posterior" not in self._cache:
            self._cache["posterior"] = self.task_posterior()
        return self._cache["posterior"]

    def _pairs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """System i's distinct (successes, trials) and the (pairs x tasks) 0/1 membership."""
        key = ("pairs", i)
        if key not in self._cache:
            pairs, codes = np.unique(np.stack([self.panel.successes[i], self.panel.trials[i]]),
                                     axis=1, return_inverse=True)
            member = np.zeros((pairs.shape[1], self._layout.n_tasks))
            member[codes.ravel(), np.arange(self._layout.n_tasks)] = 1.0
            self._cache[key] = (pairs, member)
        return self._cache[key]

    def _system_components(self, i: int, z: np.ndarray | None, r: np.ndarray):
        """System i's components before pruning: weights (pairs, G) and shapes, (pairs, G) each.

        A component's shapes depend on the task only through system i's counts
        there, so tasks with the same counts pool their posterior weights: at
        most (m + 1) x G components instead of J x G.
        """
        a, log_kappa, _, log_s = self._coordinates(self.params if z is None else z)
        alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
        pairs, member = self._pairs(i)
        weights = member @ r / r.shape[0]
        y = pairs[0].astype(float)[:, None]
        f = (pairs[1] - pairs[0]).astype(float)[:, None]
        return weights, alpha + y, beta + f

    def _system_mixture(self, i: int, z: np.ndarray | None = None,
                        r: np.ndarray | None = None, with_mask: bool = False):
        """System i's per-task posterior Beta components ``(weights, alpha, beta)``."""
        r = self._posterior(z) if r is None else r
        weights, alpha, beta = self._system_components(i, z, r)
        w = weights.ravel()
        keep = w > 1e-14 * w.max()
        out = (w[keep] / w[keep].sum(), alpha.ravel()[keep], beta.ravel()[keep])
        return (*out, keep) if with_mask else out

    def _per_system(self, evaluate, metric: str, k_arr: np.ndarray,
                    z: np.ndarray | None = None, rows=None) -> np.ndarray:
        """(len(rows), K) of ``evaluate(metric, w, alpha, beta, k)``, one posterior.

        `rows` are system positions (default all); asking for one system costs
        one system's evaluation, which is what a per-system interval needs.
        """
        r = self._posterior(z)
        rows = range(self._layout.n_systems) if rows is None else rows
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            value = evaluate(metric, *self._system_mixture(i, z, r), k_arr)
            out[n] = value[0] if isinstance(value, tuple) else value
        return out

    def _values(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                rows=None) -> np.ndarray:
        """(I, K) metric values of every system (or of `rows`)."""
        return self._per_system(evaluate_metric, metric, k_arr, z, rows)

    def _logits(self, metric: str, k_arr: np.ndarray, z: np.ndarray | None = None,
                rows=None) -> np.ndarray:
        """(I, K) logits of the metric, exact where it underflows or rounds to 1."""
        return self._per_system(evaluate_logit, metric, k_arr, z, rows)

    def metric(self, metric: str, k) -> pd.DataFrame:
        """A metric of every system at horizon(s) `k`: one row per system, one column per k.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(2.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b", "c"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> table = fit.metric("pass@k", [1, 100])
        >>> bool((table[100] >= table[1]).all())
        True
        """
        metric = check_metric(metric)
        k_arr, _ = check_k(k)
        values = self._values(metric, k_arr)
        return pd.DataFrame(values, index=pd.Index(self.systems, name="system"),
                            columns=pd.Index(k_arr, name="k"))

    def system(self, system) -> PooledSystem:
        """One system's result, with the :class:`~passmix.results.FittedResult` interface."""
        return PooledSystem(self, self.panel.index(system))

    # -- uncertainty ------------------------------------------------------------------
    def _derivatives(self) -> _PooledDerivatives:
        """The analytic derivative pieces at the optimum (kept: several uses need them)."""
        if "derivatives" not in self._cache:
            self._cache["derivatives"] = _pooled_derivatives(self._layout, self.grid, self.family,
                                                             self._blocks(), self.params)
        return self._cache["derivatives"]

    def _covariance(self) -> np.ndarray:
        if "cov" not in self._cache:
            obj = get_pooled_objective(self._layout, self.family, self.grid, self.n_components,
                                       self.slope, self.concentration == "shared")
            free = ~at_bound(self.params, _box(self._blocks())).any(axis=1)
            cov = np.zeros((self.params.size,) * 2)
            if free.any():
                # the analytic observed information (2n gradients of differencing cost
                # minutes for hundreds of systems; this agrees with them to ~1e-6)
                info = self._derivatives().information()[np.ix_(free, free)]
                cov[np.ix_(free, free)] = covariance_from_information(
                    info, null=_unidentified(self._blocks(), free))
            self._cache["cov"] = cov
        return self._cache["cov"]

    def _robust_covariance(self) -> np.ndarray:
        """The sandwich ``C S C``: C the inverse observed information (:meth:`_covariance`),
        S the sum of the tasks' score outer products (:meth:`_PooledDerivatives.task_scores`)."""
        if "robust_cov" not in self._cache:
            cov = self._covariance()
            scores = self._derivatives().task_scores()
            free = np.diag(cov) > 0
            scores[~free] = 0.0
            self._cache["robust_cov"] = cov @ (scores @ scores.T) @ cov
        return self._cache["robust_cov"]

    def _inflation(self, metric: str, k: int) -> np.ndarray:
        """(I,): how much wider the sandwich says each system's metric logit varies than the
        observed information does, as a variance ratio, at least 1.

        Where the model is wrong (the tasks' difficulty order differs between
        systems, the difficulty distribution is off) the tasks' own scores
        vary more than the model's curvature implies; the ratio carries that
        into the intervals, per system, metric and horizon. It is never
        taken below 1: where the model fits, the model's information stays.
        """
        key = ("inflation", metric, int(k))
        if key not in self._cache:
            cov, robust = self._covariance(), self._robust_covariance()
            grads, _ = self._logit_gradients(metric, np.array([int(k)]), np.diag(cov) > 0)
            g = grads[:, :, 0]
            model = np.einsum("ci,cd,di->i", g, cov, g)
            sandwich = np.einsum("ci,cd,di->i", g, robust, g)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(model > 0, sandwich / model, 1.0)
            self._cache[key] = np.maximum(np.nan_to_num(ratio, nan=1.0, posinf=1.0), 1.0)
        return self._cache[key]

    def delta(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Delta-method intervals on the logit scale, per system and horizon.

        The covariance is the inverse observed information of the free
        coordinates (grid weights driven to their lower bound are held
        there, as the delta method holds any bounded coordinate). To that
        parameter variance is added the variance of the benchmark metric
        given the parameters (each task's own success probability is known
        only through its posterior; :meth:`_task_variance`), since the metric
        is one of these tasks; with :attr:`robust` the parameters' part is
        widened by the sandwich (:meth:`_inflation`). Coverage is checked by
        simulation in
        ``benchmarks/coverage_pooled.py`` and ``tests/test_models_pooled.py``.
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        # every system at once: each perturbed point's task posterior is shared by
        # all systems, and tables ask for every system in turn (kept per request)
        key = ("delta", metric, tuple(k_arr.tolist()), level, self.robust)
        if key not in self._cache:
            self._cache[key] = self._delta_all(metric, k_arr, level)
        table = self._cache[key]
        if system is None:
            return table.copy()
        # rows are system-major (labels may be tuples, which pandas will not compare)
        first = self.panel.index(system) * k_arr.size
        return table.iloc[first:first + k_arr.size].reset_index(drop=True)

    def _delta_all(self, metric: str, k_arr: np.ndarray, level: float) -> pd.DataFrame:
        rows = list(range(self._layout.n_systems))
        cov = self._covariance()
        from scipy.special import ndtri

        z_crit = ndtri(0.5 + level / 2)
        base = self._values(metric, k_arr, rows=rows)
        grads, centre = self._logit_gradients(metric, k_arr, np.diag(cov) > 0)
        se_logit = np.sqrt(np.maximum(np.einsum("cik,cd,dik->ik", grads, cov, grads), 0.0))
        if self.robust:
            se_logit = se_logit * np.sqrt(np.stack([self._inflation(metric, k) for k in k_arr],
                                                   axis=1))
        # rounding may put the estimate a hair outside expit of its own logit's interval
        lower = np.minimum(expit(centre - z_crit * se_logit), base)
        upper = np.maximum(expit(centre + z_crit * se_logit), base)
        # The benchmark's metric is over these tasks' own success probabilities, which
        # stay uncertain given the data even at known parameters: add that variance to
        # each half-width in quadrature, on the probability scale (on the logit scale
        # it is divided by M^2, which for a small Pass^k blows up to an interval of ~1)
        var_tasks = self._task_variance(metric, k_arr)
        lower, upper = _with_task_spread(base, lower, upper, var_tasks, z_crit)
        # the se on the probability scale: d expit = M (1 - M) d logit
        se = np.hypot(base * (1 - base) * se_logit, np.sqrt(var_tasks))
        return self._table(metric, k_arr, rows, base, se, lower, upper)

    def _table(self, metric, k_arr, rows, base, se, lower, upper) -> pd.DataFrame:
        labels = self.systems
        frames = [pd.DataFrame({"system": [labels[i]] * k_arr.size, "metric": metric, "k": k_arr,
                                "estimate": base[n], "se": se[n], "lower": lower[n],
                                "upper": upper[n]}) for n, i in enumerate(rows)]
        return pd.concat(frames, ignore_index=True)

    def profile(self, metric: str, k, level: float = 0.95, system=None) -> pd.DataFrame:
        """Profile-likelihood intervals, per system and horizon.

        The model part of each interval is the smallest and largest value of
        the system's metric over the parameters whose log-likelihood is within
        ``chi2(1).ppf(level) / 2`` of the maximum: every other coordinate (the
        difficulty distribution, the concentrations, the other abilities) is
        profiled out (:class:`passmix.inference.profile.LikelihoodRegion`). Unlike the
        delta method this reaches in from a bound: an ability the data push to
        its bound (a system that solved nothing) still gets an upper end where
        the shared difficulty distribution stops it. As in :meth:`delta`, the
        spread of the benchmark metric over these tasks given the parameters
        is then added (:func:`_with_task_spread`). With :attr:`robust` the
        region's cut is widened by the sandwich's ratio for that system,
        metric and horizon (:meth:`_inflation`). ``se`` is the delta
        method's. Coverage on real data: ``docs/results/pooled_intervals.md``.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> rng = np.random.default_rng(0)
        >>> d = rng.normal(2.0, 1.5, size=60)
        >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.0]]) - d)))
        >>> panel = passmix.Panel(rng.binomial(5, p), np.full(p.shape, 5), systems=["a", "b", "c"])
        >>> fit = passmix.fit_pooled(panel, seed=0)
        >>> table = fit.profile("pass@k", [1, 100], system="b")
        >>> bool((table["lower"] < table["estimate"]).all() and
        ...      (table["estimate"] < table["upper"]).all())
        True
        """
        metric = check_metric(metric)
        level = check_level(level)
        k_arr, _ = check_k(k)
        rows = (range(self._layout.n_systems) if system is None
                else [self.panel.index(system)])
        delta = self.delta(metric, k_arr, level)
        parts = []
        for i in rows:
            key = ("profile", metric, tuple(k_arr.tolist()), level, i, self.robust)
            if key not in self._cache:
                self._cache[key] = self._profile_system(metric, k_arr, level, i)
            parts.append(self._cache[key])
        first = [i * k_arr.size for i in rows]
        take = np.concatenate([np.arange(f, f + k_arr.size) for f in first])
        table = delta.iloc[take].reset_index(drop=True)
        table["lower"] = np.concatenate([lo for lo, _ in parts])
        table["upper"] = np.concatenate([hi for _, hi in parts])
        return table

    def _profile_system(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """System i's profile ends (with the tasks' spread) at every horizon."""
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        # at k = 1 every metric is the mean: searched once for all three
        one = k_arr == 1
        for part, name in ((one, "pass@k"), (~one, metric)):
            if part.any():
                key = ("profile-model", name, tuple(k_arr[part].tolist()), level, i,
                       self.robust)
                if key not in self._cache:
                    self._cache[key] = self._model_ends(name, k_arr[part], level, i)
                lower[part], upper[part] = self._cache[key]
        base = self._values(metric, k_arr, rows=[i])[0]
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        z_crit = ndtri(0.5 + level / 2)
        var_tasks = self._task_variance(metric, k_arr, rows=[i])[0]
        lower, upper = _with_task_spread(base, lower, upper, var_tasks, z_crit)
        lower, upper = repair_across_metrics({metric: (k_arr, base, lower, upper)})[metric]
        for arr in (lower, upper):
            arr.flags.writeable = False
        return lower, upper

    def _model_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int):
        """The smallest and largest value of system i's metric over the likelihood region
        (widened by the sandwich's :meth:`_inflation` with :attr:`robust`), per horizon."""
        if not self.robust:
            return self._region_ends(metric, k_arr, level, i, 1.0)
        lower, upper = np.empty(k_arr.size), np.empty(k_arr.size)
        for n, k in enumerate(k_arr):
            scale = float(self._inflation(metric, k)[i])
            lower[n], upper[n] = (e[0] for e in self._region_ends(metric, k_arr[n:n + 1], level,
                                                                  i, scale))
        return lower, upper

    def _region_ends(self, metric: str, k_arr: np.ndarray, level: float, i: int,
                     scale: float):
        """Extremes of system i's metric over the region whose drop is `scale` times the
        chi-square's."""
        objective = get_pooled_objective(self._layout, self.family, self.grid,
                                         self.n_components, self.slope,
                                         self.concentration == "shared")
        all_coordinates = np.ones(self.params.size, dtype=bool)
        with objective.lock:
            objective.set_data(self._layout, self.grid, self.n_components)
            region = self._region(objective, level, scale)
            sliced = region.objective

            def logit(x, t):
                grads, centre = self._logit_gradients(metric, np.array([t]), all_coordinates,
                                                      sliced.full(x), rows=[i])
                return float(centre[0, 0]), sliced.T.T @ grads[:, 0, 0]

            def value(x, t):
                return float(self._values(metric, np.array([t]), sliced.full(x), rows=[i])[0, 0])

            def batch(xs, t):
                return np.array([self._logits(metric, np.array([t]), sliced.full(x),
                                              rows=[i])[0, 0] for x in xs])

            lower, upper, _ = region.extremes(logit, value, k_arr, batch)
        return lower, upper

    def _region(self, objective: PooledObjective, level: float, scale: float = 1.0
                ) -> LikelihoodRegion:
        """The likelihood region at `level` in the identified coordinates, built once.

        The abilities (and log-slopes, and the grid's logits) enter the
        likelihood up to a common shift, so one coordinate of each such block
        is taken out (:func:`_profile_coordinates`); the region is searched in
        the others. The likelihood has one optimum in all the fits seen, so
        the searches start from the estimate's own spread only, fewer than the
        mixture's.
        """
        key = ("region", level, scale)
        if key not in self._cache:
            blocks = self._blocks()
            box = _box(blocks)
            x_hat, T, P, box_x = _profile_coordinates(blocks, self.params, box)
            search = _Affine(objective, self.params, x_hat, T)
            # a held relative ability moves its system's logit one for one: searched as is
            region = LikelihoodRegion(search, x_hat, self.loglik - scale * region_drop(level),
                                      P @ self._covariance() @ P.T, box_x,
                                      held_logistic=self.family == "grid" or self.slope)
            region.n_starts, region.n_far, region.n_polish, region.max_restarts = 1, 0, 1, 1
            region.use_spread, region.ray_tol = False, 1e-3
            region.polish_options = {"maxiter": 60, "ftol": 1e-8}
            self._cache[key] = region
        region = self._cache[key]
        region.objective.objective = objective
        return region

    def _task_variance(self, metric: str, k_arr: np.ndarray, rows=None) -> np.ndarray:
        """(I, K) variance of each system's benchmark metric given the data, at the optimum.

        Task j's success probability has a posterior (a mixture over the grid
        of Beta components); the benchmark metric averages a function ``g``
        of it over the J tasks, so its variance is ``sum_j Var_j(g) / J^2``.
        Pass@k and Pass^k have ``Var(g)`` in closed form from Beta moments
        (``E[(1 - p)^n]`` at ``n = k, 2k``; ``E[p^n]`` likewise). AUC@k
        averages Pass@h over ``h <= k``, so its standard deviation per task is
        at most the average of theirs: that bound is used, the average taken
        over at most 24 log-spaced horizons (trapezoid rule).
        """
        r = self._posterior(None)
        a, log_kappa, _, log_s = self._coordinates(self.params)
        n_tasks = r.shape[0]
        rows = range(self._layout.n_systems) if rows is None else rows
        out = np.empty((len(rows), k_arr.size))
        for n, i in enumerate(rows):
            alpha, beta = beta_shapes(a[i:i + 1], log_kappa[i:i + 1], self.grid, log_s[i:i + 1])
            pairs, member = self._pairs(i)
            codes = np.argmax(member, axis=0)
            a_c = alpha + pairs[0][:, None]                  # (pairs, G)
            b_c = beta + (pairs[1] - pairs[0])[:, None]
            base_ln = betaln(a_c, b_c)

            def task_sd(h: np.ndarray, pass_hat: bool) -> np.ndarray:
                """(J, len(h)) posterior sd of g over each task, for horizons h."""
                h = h.astype(float)[None, None, :]
                if pass_hat:
                    m1 = np.exp(betaln(a_c[..., None] + h, b_c[..., None]) - base_ln[..., None])
                    m2 = np.exp(betaln(a_c[..., None] + 2 * h, b_c[..., None])
                                - base_ln[..., None])
                else:
                    m1 = np.exp(betaln(a_c[..., None], b_c[..., None] + h) - base_ln[..., None])
                    m2 = np.exp(betaln(a_c[..., None], b_c[..., None] + 2 * h)
                                - base_ln[..., None])
                e1 = np.einsum("jg,jgk->jk", r, m1[codes])
                e2 = np.einsum("jg,jgk->jk", r, m2[codes])
                return np.sqrt(np.maximum(e2 - e1 ** 2, 0.0))

            if metric == "auc@k":
                sds = np.empty((n_tasks, k_arr.size))
                for c, kv in enumerate(k_arr):
                    h = np.unique(np.geomspace(1, kv, num=min(int(kv), 24)).round()).astype(int)
                    sd_h = task_sd(h, False)
                    sds[:, c] = (sd_h[:, 0] if h.size == 1 else
                                 np.trapezoid(sd_h, h, axis=1) / max(h[-1] - h[0], 1))
            else:
                sds = task_sd(k_arr, metric == "pass^k")
            out[n] = (sds ** 2).sum(axis=0) / n_tasks ** 2
        return out

    def _logit_gradients(self, metric: str, k_arr: np.ndarray, active: np.ndarray,
                         z: np.ndarray | None = None, rows=None):
        """(C, len(rows), K) gradients of the systems' metric logits in the free coordinates,
        and the logits, (len(rows), K), at coordinates `z` (the optimum by default).

        System i's metric is a function of its component weights (the task
        posterior, which every coordinate moves) and its component shapes
        (which only its own ability, concentration and slope move, and, through
        the centring of abilities and slopes, the others').
        :func:`~passmix.metrics.evaluate_logit` gives the gradient in both, and
        the posterior's own derivative is analytic
        (:meth:`_PooledDerivatives.posterior_contraction`): nothing is
        differenced, and the cost is a few matrix products over (task, grid).
        `rows` are system positions (default all).
        """
        n_sys = self._layout.n_systems
        rows = list(range(n_sys)) if rows is None else list(rows)
        at = self.params if z is None else np.asarray(z, dtype=float)
        derivatives = (self._derivatives() if z is None else
                       _pooled_derivatives(self._layout, self.grid, self.family, self._blocks(),
                                           at, second=False))
        r0 = self._posterior(None) if z is None else derivatives.r
        a, log_kappa, _, log_s = self._coordinates(at)
        eta = _eta(a, self.grid, log_s)
        kappa = np.exp(log_kappa)[:, None]
        d_eta = kappa * expit(eta) * expit(-eta)            # d alpha / d eta = -d beta / d eta
        # d eta / d log s_i = -s_i d
        d_eta_log_s = -np.exp(log_s)[:, None] * self.grid[None, :]
        prior_alpha, prior_beta = beta_shapes(a, log_kappa, self.grid, log_s)
        starts = dict(zip([name for name, _ in self._blocks()],
                          np.cumsum([0] + [size for _, size in self._blocks()])))
        shared = self.concentration == "shared"
        centre = np.empty((len(rows), k_arr.size))
        by_weight, direct = [], np.zeros((at.size, len(rows), k_arr.size))
        for n, i in enumerate(rows):
            w, alpha, beta, keep = self._system_mixture(i, z, r0, with_mask=True)
            centre[n], (gw, ga, gb) = evaluate_logit(metric, w, alpha, beta, k_arr)
            n_pairs = keep.size // self.grid.size
            full = np.zeros((k_arr.size, keep.size))
            full[:, keep] = gw  # d logit / d weight (the kept weights sum to 1 to ~1e-14)
            by_weight.append(full.reshape(k_arr.size, n_pairs, self.grid.size))
            # the shapes' own dependence: alpha_c = alpha_g + y, beta_c = beta_g + f
            g_of = np.tile(np.arange(self.grid.size), n_pairs)[keep]
            d_ability = ga @ d_eta[i, g_of] - gb @ d_eta[i, g_of]
            d_log_kappa = ga @ prior_alpha[i, g_of] + gb @ prior_beta[i, g_of]
            # abilities (and log-slopes) are the free coordinates minus their mean
            direct[:n_sys, n] -= d_ability / n_sys
            direct[i, n] += d_ability
            direct[starts["log_concentration"] + (0 if shared else i), n] = d_log_kappa
            if self.slope:
                d_eta_s = d_eta[i, g_of] * d_eta_log_s[i, g_of]
                d_log_s = ga @ d_eta_s - gb @ d_eta_s
                first = starts["log_slope"]
                direct[first:first + n_sys, n] -= d_log_s / n_sys
                direct[first + i, n] += d_log_s
        grads = direct
        # the weights' part: d logit / d weight of system i's component (pair, g) is
        # by_weight[i]; the weight is its tasks' posterior mass / J, whose derivative
        # is analytic (PooledDerivatives.posterior_contraction)
        n_tasks = self._layout.n_tasks
        per_chunk = max(1, _CHUNK // max(1, k_arr.size * n_tasks * self.grid.size))
        for first in range(0, len(rows), per_chunk):
            chunk = range(first, min(first + per_chunk, len(rows)))
            weights = np.concatenate([
                by_weight[n][:, np.argmax(self._pairs(rows[n])[1], axis=0), :] / n_tasks
                for n in chunk])                                  # (len(chunk) * K, J, G)
            part = derivatives.posterior_contraction(weights)    # (n, len(chunk) * K)
            grads[:, first:first + len(chunk)] += part.reshape(at.size, len(chunk),
                                                               k_arr.size)
        grads[~active] = 0.0
        return grads, centre

    # -- reporting ----------------------------------------------------------------------
    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str | None = None
                ) -> pd.DataFrame:
        """Every system's metrics at horizons `k` with intervals.

        Parameters
        ----------
        k : int or sequence of int, default (1, 10, 100, 1000)
            Horizons.
        level : float, default 0.95
            Confidence level.
        method : {"profile", "delta"}, optional
            Interval method (:meth:`profile`, :meth:`delta`). Profile ends are
            then widened where needed to obey every ordering of the metrics
            (:func:`passmix.inference.profile.repair_across_metrics`). By default
            profile for panels of at most :data:`PROFILE_CELLS` cells; beyond
            (a profile costs a search over every system's coordinates per
            system, end and horizon: about two minutes a system at 43 x 400),
            delta, but profile still for the systems whose ability sits on its
            bound (:attr:`on_bound`), whose delta interval says nothing.

        Returns
        -------
        pandas.DataFrame
            One row per system, metric and horizon: ``system, metric, k,
            estimate, se, lower, upper``.
        """
        return self._summary(k, level, _interval_method(method), range(self._layout.n_systems))

    def _method_for(self, i: int, method: str | None) -> str:
        """The interval method system i gets when `method` is asked (None: the default)."""
        if method is not None:
            return method
        small = self._layout.n_systems * self._layout.n_tasks <= PROFILE_CELLS
        return "profile" if small or self.systems[i] in self.on_bound else "delta"

    def _summary(self, k, level: float, method: str | None, rows) -> pd.DataFrame:
        k_arr, _ = check_k(k)
        level = check_level(level)
        frames = []
        for i in rows:
            label = self.systems[i]
            if self._method_for(i, method) == "profile":
                tables = {m: self.profile(m, k_arr, level, system=label) for m in METRICS}
                ends = repair_across_metrics({m: (k_arr, t["estimate"].to_numpy(),
                                                  t["lower"].to_numpy(), t["upper"].to_numpy())
                                              for m, t in tables.items()})
                for m, t in tables.items():
                    t["lower"], t["upper"] = ends[m]
            else:
                tables = {m: self.delta(m, k_arr, level, system=label) for m in METRICS}
            frames += list(tables.values())
        return pd.concat(frames, ignore_index=True)

    @property
    def on_bound(self) -> list:
        """Systems whose ability the fit drove to a bound (no success, or no failure, seen).

        Their metrics are the model's limit there: with no success seen the
        estimate is ~0 and only the shared difficulty distribution, through the
        profile's upper ends, bounds how large they could be.
        """
        # the likelihood rises toward infinite ability for such a system, so its optimum
        # is the box's bound, wherever the rest of the fit sits
        y, m = self.panel.successes.sum(axis=1), self.panel.trials.sum(axis=1)
        return [self.systems[i] for i in np.flatnonzero((m > 0) & ((y == 0) | (y == m)))]

    def systems_table(self) -> pd.DataFrame:
        """Abilities, concentrations (slopes) and observed success rates, one row per system."""
        y, m = self.panel.successes, self.panel.trials
        table = pd.DataFrame({"ability": self.abilities, "concentration": self.concentrations,
                              "tasks_run": (m > 0).sum(1),
                              "success_rate": y.sum(1) / np.maximum(m.sum(1), 1)},
                             index=pd.Index(self.systems, name="system"))
        if self.slope:
            table.insert(2, "slope", self.slopes)
        return table

    def info(self) -> dict[str, Any]:
        """Estimator, difficulty family, log-likelihood, BIC and convergence."""
        return {"estimator": "pooled", "family": self.family,
                "n_components": self.n_components, "slope": self.slope,
                "concentration_model": self.concentration, "loglik": self.loglik,
                "bic": self.bic, "converged": self.converged,
                "n_systems": self._layout.n_systems, "n_tasks": self._layout.n_tasks,
                "on_bound": self.on_bound, "robust": self.robust}

    def __repr__(self) -> str:
        i, j = self.panel.shape
        status = "converged" if self.converged else "NOT converged"
        slope = ", slope=True" if self.slope else ""
        return (f"PooledFit(family={self.family!r}{slope}, "
                f"concentration={self.concentration!r}, systems={i}, tasks={j}, "
                f"loglik={self.loglik:.3f}, BIC={self.bic:.3f}, {status})")


def _unidentified(blocks, free: np.ndarray) -> np.ndarray:
    """Directions in the free coordinates along which the likelihood does not move.

    The abilities and the log-slopes enter centred, so a common shift of
    either block changes nothing (when every coordinate of the block is
    free; one held on its bound pins the shift). The grid's weights are a
    softmax, so a common shift of its free logits changes nothing but the
    share of the points held at the lower bound, which is below e^-40.
    Returns shape ``(r, free.sum())``.
    """
    out, start = [], 0
    for name, size in blocks:
        part = free[start:start + size]
        if name in ("ability", "log_slope", "grid_logits") and size > 1 and part.sum() > 1 \
                and (name == "grid_logits" or part.all()):
            direction = np.zeros(free.size)
            direction[start:start + size] = part
            out.append(direction[free])
        start += size
    return np.array(out).reshape(len(out), int(free.sum()))


def _with_task_spread(base: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      var_tasks: np.ndarray, z_crit: float) -> tuple[np.ndarray, np.ndarray]:
    """Widen the model's ends by the spread of the benchmark metric over these tasks.

    Given the parameters, the benchmark metric (an average over these J
    tasks of a function of each task's success probability) still varies
    with variance `var_tasks`. Each end is moved out by the two offsets in
    quadrature on a log scale: the lower end on ``log M``, the upper on
    ``log(1 - M)``, the task part being the quantile of a log-normal with the
    metric's mean and variance. Near 1/2 this is the probability-scale
    quadrature; near 0 (or 1) the end stays inside (0, 1), where the
    probability scale would cut it to 0 whenever one task carries the metric
    (a system with one success seen).
    """
    base = np.asarray(base, dtype=float)
    lower = np.minimum(np.asarray(lower, dtype=float), base)
    upper = np.maximum(np.asarray(upper, dtype=float), base)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the lower end on log M (log-normal task spread), exact for M far below 1
        sigma2 = np.log1p(var_tasks / base ** 2)
        task = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        model = np.log(base) - np.log(np.maximum(lower, 0.0))
        moved = base * np.exp(-np.hypot(np.nan_to_num(model, nan=0.0), task))
        new_lower = np.where(base > 0, np.minimum(moved, lower), lower)
        # the upper end on log(1 - M), written through log1p / expm1 so that an end a
        # hair above a tiny M (Pass^k at large k) keeps its distance from M
        comp = 1.0 - base
        sigma2 = np.log1p(var_tasks / comp ** 2)
        task = np.nan_to_num(0.5 * sigma2 + z_crit * np.sqrt(sigma2), posinf=np.inf)
        model = np.log1p(-base) - np.log1p(-np.minimum(upper, 1.0))
        step = -np.expm1(-np.hypot(np.nan_to_num(model, nan=0.0), task))
        new_upper = np.where(comp > 0, np.maximum(base + comp * step, upper), upper)
    return np.clip(new_lower, 0.0, base), np.clip(new_upper, base, 1.0)


def _profile_coordinates(blocks, params: np.ndarray, box: np.ndarray):
    """Identified coordinates ``x`` for the profile's search, ``z = z_hat + T (x - x_hat)``.

    The abilities enter the likelihood centred, a common shift of them changes
    nothing. Without slopes, for the normal family, the search coordinates are
    each system's ability relative to the first normal's mean, ``b_i = a_i -
    mu_1``, and the other normals' offsets from it: one system's metric then
    moves with one coordinate, where in the fit's coordinates raising one
    ability lowers the others' (they sum to 0) and the difficulties must follow.
    A system whose ability the fit held on its bound keeps that bound in
    ``b``, so the search reaches in from it. Otherwise (the grid, slopes) one
    coordinate of each block that enters up to a shift is pinned at its
    estimate instead, the one farthest inside its bounds (the grid's largest
    logit).

    Returns ``(x_hat, T, P, box_x)``: ``P`` maps a covariance of z to one of
    x (``cov_x = P cov_z P'``; ``P T = I``).
    """
    names = [name for name, _ in blocks]
    starts = dict(zip(names, np.cumsum([0] + [size for _, size in blocks])))
    sizes = dict(blocks)
    n = params.size
    if "difficulty_mean" in sizes and "log_slope" not in sizes:
        n_sys, n_comp = sizes["ability"], sizes["difficulty_mean"]
        ability = starts["ability"] + np.arange(n_sys)
        means = starts["difficulty_mean"] + np.arange(n_comp)
        rest = np.setdiff1d(np.arange(n), np.concatenate([ability, means]))
        # x: b (I), offsets (H - 1), then every other coordinate as it is
        n_x = n - 1
        P = np.zeros((n_x, n))
        T = np.zeros((n, n_x))
        centre = np.eye(n_sys) - 1.0 / n_sys
        P[:n_sys, ability] = centre
        P[:n_sys, means[0]] = -1.0
        T[np.ix_(ability, np.arange(n_sys))] = centre
        T[means[0], :n_sys] = -1.0 / n_sys
        for h in range(1, n_comp):
            P[n_sys + h - 1, means[h]], P[n_sys + h - 1, means[0]] = 1.0, -1.0
            T[means[h], :n_sys] = -1.0 / n_sys
            T[means[h], n_sys + h - 1] = 1.0
        others = n_sys + n_comp - 1 + np.arange(rest.size)
        P[others, rest] = 1.0
        T[rest, others] = 1.0
        x_hat = P @ params
        box_x = np.empty((n_x, 2))
        b_hat = x_hat[:n_sys]
        box_x[:n_sys, 0] = np.minimum(-_B_RANGE, b_hat - 10.0)
        box_x[:n_sys, 1] = np.maximum(_B_RANGE, b_hat + 10.0)
        held = at_bound(params[ability], box[ability])
        box_x[:n_sys, 0] = np.where(held[:, 0], b_hat, box_x[:n_sys, 0])
        box_x[:n_sys, 1] = np.where(held[:, 1], b_hat, box_x[:n_sys, 1])
        width = np.diff(_BOUNDS["difficulty_mean"])[0]
        box_x[n_sys:n_sys + n_comp - 1] = (-width, width)
        box_x[others] = box[rest]
        return x_hat, T, P, box_x
    keep = np.ones(n, dtype=bool)
    for name, size in blocks:
        if name in ("ability", "log_slope", "grid_logits") and size > 1:
            part = slice(starts[name], starts[name] + size)
            room = np.minimum(params[part] - box[part, 0], box[part, 1] - params[part])
            pick = np.argmax(params[part] if name == "grid_logits" else room)
            keep[starts[name] + int(pick)] = False
    T = np.eye(n)[:, keep]
    return params[keep], T, T.T, box[keep]


#: Panels of at most this many cells (systems x tasks) get profile intervals by default
#: (the bundled example has 896, and its 7 systems take about 25 s); larger ones delta
#: intervals, but profile for the systems on a bound (PooledFit.summary).
PROFILE_CELLS = 2000
# the relative abilities' range in the profile's search (logits of success at the
# mean difficulty)
_B_RANGE = 35.0


@dataclass
class _Affine:
    """An objective in coordinates x with ``z = z_hat + T (x - x_hat)``."""

    objective: Any
    z_hat: np.ndarray
    x_hat: np.ndarray
    T: np.ndarray

    def full(self, x: np.ndarray) -> np.ndarray:
        return self.z_hat + self.T @ (np.asarray(x, dtype=float) - self.x_hat)

    def logp_dlogp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self.objective.logp_dlogp(self.full(x))
        return logp, self.T.T @ np.asarray(grad)


@dataclass(frozen=True)
class PooledSystem:
    """One system of a :class:`PooledFit`, as a :class:`~passmix.results.FittedResult`."""

    fit: PooledFit
    index: int
    #: The interval methods it has; the first is the default.
    interval_methods = ("profile", "delta")

    @property
    def name(self):
        """The system's label."""
        return self.fit.systems[self.index]

    def metric(self, metric: str, k):
        """The metric at horizon(s) `k`, averaged over each task's posterior."""
        metric = check_metric(metric)
        k_arr, scalar = check_k(k)
        out = evaluate_metric(metric, *self.fit._system_mixture(self.index), k_arr)
        return float(out[0]) if scalar else out

    def interval(self, metric: str, k, level: float = 0.95, *, method: str | None = None
                 ) -> ConfidenceInterval:
        """Interval at horizon(s) `k`: profile likelihood or delta method (default: as
        :meth:`PooledFit.summary` chooses)."""
        method = self.fit._method_for(self.index, _interval_method(method))
        find = self.fit.profile if method == "profile" else self.fit.delta
        table = find(metric, k, level, system=self.name)
        lower, upper = table["lower"].to_numpy(), table["upper"].to_numpy()
        if np.ndim(k) == 0:
            return ConfidenceInterval(float(lower[0]), float(upper[0]))
        return ConfidenceInterval(lower, upper)

    def summary(self, k=SUMMARY_K, level: float = 0.95, *, method: str | None = None
                ) -> pd.DataFrame:
        """Metric, k, estimate, se, lower, upper for this system (see :meth:`PooledFit.summary`)."""
        return self.fit._summary(k, level, _interval_method(method),
                                 [self.index]).drop(columns="system")

    def status(self) -> str:
        """One line on convergence and on this system's ability sitting on its bound.

        Examples
        --------
        >>> import numpy as np
        >>> import passmix
        >>> y = np.array([[0, 0, 0, 0], [2, 1, 3, 0], [4, 2, 5, 1]])
        >>> fit = passmix.fit_pooled(passmix.Panel(y, np.full(y.shape, 5)), seed=0)
        >>> fit.system(0).status()
        'converged; no success seen: ability at its bound, estimates ~0 (the upper ends come from the shared difficulty)'
        """
        text = "converged" if self.fit.converged else "NOT converged"
        if self.name in self.fit.on_bound:
            y = self.fit.panel.successes[self.index].sum()
            text += ("; no success seen: ability at its bound, estimates ~0 (the upper ends "
                     "come from the shared difficulty)" if y == 0 else
                     "; no failure seen: ability at its bound, estimates ~1 (the lower ends "
                     "come from the shared difficulty)")
        return text

    def info(self) -> dict[str, Any]:
        """The joint fit's info, with this system's ability and concentration (and slope)."""
        out = {**self.fit.info(), "system": self.name, "status": self.status(),
               "ability": float(self.fit.abilities[self.index]),
               "concentration": float(self.fit.concentrations[self.index])}
        if self.fit.slope:
            out["slope"] = float(self.fit.slopes[self.index])
        return out


def _interval_method(method: str | None) -> str | None:
    """The interval method asked for (None: the fit's default, :meth:`PooledFit._method_for`)."""
    if method is None:
        return None
    if method not in ("profile", "delta"):
        raise ValueError(f"unknown interval method {method!r}; expected 'profile' or 'delta'.")
    return method


def fit_pooled_groups(groups: Mapping[tuple, Counts], seed=None) -> dict[tuple, PooledSystem]:
    """One pooled fit of every group (a system each), tasks matched by label.

    The joint estimator behind ``method="pooled"`` in
    :func:`passmix.estimate_table` and the command line: returns each group
    key's :class:`PooledSystem`. One group is a one-system model (a
    difficulty distribution with the Beta-binomial layer), nothing pooled.
    """
    if not groups:
        raise ValueError("the pooled model needs at least one group.")
    result = fit_pooled(Panel.from_counts(groups, unpack=False), seed=seed)
    return {key: result.system(key) for key in groups}



def _fit_candidates(panel: Panel, layout: _Layout, families, max_components: int,
                    grid: np.ndarray, n_init: int, rng: np.random.Generator,
                    slopes: tuple[bool, ...] = (False,),
                    concentrations: tuple[str, ...] = ("system",)) -> list[_Candidate]:
    """Every candidate fitted to `panel`, in the family table's order.

    Candidates are the families (normal H = 1 .. `max_components`, grid) under
    each concentration structure, without and/or with slopes. The base
    model (a single normal, per-system concentrations, no slopes) is always
    fitted first: it warm-starts the others, and every candidate also starts
    from its base counterpart's optimum (same family and H) when there is one.
    """
    shapes = ([("normal", h) for h in range(1, max_components + 1)] if "normal" in families
              else []) + ([("grid", 1)] if "grid" in families else [])

    def fit(family, h, slope, shared, warm):
        return _fit_family(panel, layout, family, grid, n_init, rng, warm=tuple(warm),
                           n_components=h, slope=slope, shared=shared)

    base = fit("normal", 1, False, False, ())
    twins: dict[tuple[str, int], _Candidate] = {("normal", 1): base}
    out = []
    for concentration in concentrations:
        for slope in slopes:
            shared = concentration == "shared"
            is_base = not (shared or slope)
            first = base if is_base else fit("normal", 1, slope, shared, (base,))
            for family, h in shapes:
                if (family, h) == ("normal", 1):
                    cand = first
                else:
                    twin = None if is_base else twins.get((family, h))
                    warm = (first,) if twin is None else (first, twin)
                    cand = fit(family, h, slope, shared, warm)
                if is_base:
                    twins[(family, h)] = cand
                out.append(cand)
    return out


def heldout_loglik(fit: PooledFit, panel) -> float:
    """Marginal log-likelihood of `panel`'s tasks under a fitted pooled model.

    Each task's difficulty is integrated out over the fitted distribution
    (the grid sum of the fit), with the systems' abilities, concentrations
    (and slopes) held at the fit's: the score of new tasks under a model
    fitted to other tasks of the same systems. ``criterion="heldout"`` in
    :func:`fit_pooled` sums it over folds of tasks.

    Parameters
    ----------
    fit : PooledFit
        The fitted model.
    panel : Panel
        Counts of the same systems, in the same order, on the tasks to score.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.models.pooled.fit import heldout_loglik
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(1.0, 2.0, size=100)
    >>> p = 1 / (1 + np.exp(-(np.array([-1.0, 0.0, 1.0])[:, None] - d[None, :])))
    >>> y, m = rng.binomial(10, p), np.full(p.shape, 10)
    >>> fit = passmix.fit_pooled(passmix.Panel(y[:, :80], m[:, :80]), seed=0)
    >>> score = heldout_loglik(fit, passmix.Panel(y[:, 80:], m[:, 80:]))
    >>> bool(score < 0)
    True
    """
    if not isinstance(panel, Panel) or panel.shape[0] != fit.panel.shape[0]:
        raise ValueError(f"panel must be a Panel of the fit's {fit.panel.shape[0]} systems.")
    return _layout_loglik(fit.params, fit.family, panel_layout(panel), fit.grid, fit.n_components,
                          fit.slope, fit.concentration == "shared")


def _layout_loglik(params: np.ndarray, family: str, layout: _Layout, grid: np.ndarray,
                   n_components: int, slope: bool = False, shared: bool = False) -> float:
    """The pooled log-likelihood of `layout`'s tasks at `params`."""
    objective = _objective(family, bool(slope), bool(shared))
    with objective.lock:
        objective.set_data(layout, grid, n_components)
        return objective.logp_dlogp(params)[0]


def _heldout_loglik(panel: Panel, families, max_components: int, grid: np.ndarray,
                    n_init: int, n_folds: int, rng: np.random.Generator,
                    slopes: tuple[bool, ...], concentrations: tuple[str, ...]) -> np.ndarray:
    """Held-out log-likelihood of every candidate, summed over `n_folds` folds of tasks."""
    y, m = panel.successes, panel.trials
    n_tasks = panel.shape[1]
    folds = np.array_split(rng.permutation(n_tasks), n_folds)
    total = None
    for held in folds:
        keep = np.setdiff1d(np.arange(n_tasks), held)
        train = Panel(y[:, keep], m[:, keep])
        test = panel_layout(Panel(y[:, held], m[:, held]))
        fitted = _fit_candidates(train, panel_layout(train), families, max_components, grid,
                                 n_init, rng, slopes, concentrations)
        scores = np.array([_layout_loglik(c.optimum.params, c.family, test, grid,
                                          c.n_components, c.slope, c.shared) for c in fitted])
        total = scores if total is None else total + scores
    return total


def fit_pooled(data, *, system=None, family: str = "normal", grid=None, n_init: int = 3,
               max_components: int = 1, concentration: str = "auto",
               slope: bool | str = False, criterion: str = "aic", n_folds: int = 5, seed=None,
               **read_kwargs) -> PooledFit:
    """Fit the pooled model to many systems on shared tasks by marginal maximum likelihood.

    Parameters
    ----------
    data : Panel, mapping of Counts, DataFrame or path
        The counts: a :class:`~passmix.Panel`; a mapping of system label to
        :class:`~passmix.Counts` (tasks matched by label), e.g. from
        ``passmix.read_counts(path, group_by="model")``; or a table or file
        with a system column (then name it with `system`).
    system : str, optional
        The system column of a table or file.
    family : {"normal", "grid", "auto"}, default "normal"
        The task-difficulty distribution: a normal (or a mixture of normals,
        see `max_components`), or nonparametric on the grid; ``"auto"`` fits
        both and `criterion` picks one (:attr:`PooledFit.family_table`). The
        grid family's weights are profiled out by EM (:func:`em_grid_weights`),
        starting from the normal family's optimum.
    grid : array_like, optional
        Difficulty grid (logits, increasing); default :data:`DEFAULT_GRID`.
    n_init : int, default 3
        Starts per family (the first from crude per-system and per-task rates,
        the others jittered).
    max_components : int, default 1
        The normal family is a mixture of H = 1 .. `max_components` normals,
        H chosen by `criterion` (each H > 1 also starts from the single normal's
        optimum, split). Each H costs about one more normal fit.
    concentration : {"auto", "system", "shared"}, default "auto"
        The Beta-binomial layer's concentration: one per system (``kappa_i``),
        or one shared by every system (I - 1 fewer parameters). ``"auto"``
        fits every candidate both ways and lets `criterion` choose (with one
        system only ``"system"``, the same model).
    slope : bool or "auto", default False
        Per-system slopes, a 2PL-style discrimination: ``mu_ij = expit(a_i -
        s_i d_j)`` with the log-slopes summing to 0 (I - 1 more parameters).
        ``"auto"`` fits every candidate without and with slopes and lets
        `criterion` choose. The slopes are in :attr:`PooledFit.slopes` and
        :meth:`PooledFit.systems_table`.
    criterion : {"aic", "bic", "heldout"}, default "aic"
        How the model is chosen among the candidates (families, H for the
        normal, concentrations, slopes): the smallest AIC or BIC, or the
        largest held-out log-likelihood of tasks split at random into
        `n_folds` folds (each fold's tasks scored by their marginal likelihood
        under the fit to the others). Ties go to the simpler candidate. Why
        AIC is the default: ``docs/formulas.md``, section 6.
    n_folds : int, default 5
        Folds of tasks for ``criterion="heldout"`` (2 to the number of tasks).
    seed : int or numpy.random.Generator, optional
        Seed of the jittered starts and of the folds.
    **read_kwargs
        Column names (``task``, ``successes``, ``trials``, ``outcome``) for a
        table or file, as :func:`passmix.read_counts`.

    Returns
    -------
    PooledFit

    Warns
    -----
    FitWarning
        The chosen candidate's optimisation did not converge.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(1.0, 2.0, size=80)
    >>> a = np.array([-1.0, 0.0, 1.0])
    >>> p = 1 / (1 + np.exp(-(a[:, None] - d[None, :])))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10))
    >>> fit = passmix.fit_pooled(panel, family="normal", seed=0)
    >>> bool(np.all(np.abs(fit.abilities - a) < 0.3))
    True
    """
    panel = as_panel(data, system, **read_kwargs)
    grid = DEFAULT_GRID if grid is None else np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or not np.all(np.diff(grid) > 0) \
            or not np.all(np.isfinite(grid)):
        raise ValueError("grid must be a finite increasing 1-d array of at least 2 points.")
    if family not in (*FAMILIES, "auto"):
        raise ValueError(f"unknown family {family!r}; expected one of "
                         f"{', '.join(FAMILIES)} or 'auto'.")
    families = FAMILIES if family == "auto" else (family,)
    rng = np.random.default_rng(check_seed(seed))
    if int(n_init) != n_init or n_init < 1:
        raise ValueError(f"n_init must be a whole number >= 1, got {n_init!r}.")
    if isinstance(max_components, bool) or int(max_components) != max_components \
            or not 1 <= max_components <= 6:
        raise ValueError(f"max_components must be a whole number in 1..6, got "
                         f"{max_components!r}.")
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}; expected one of "
                         f"{', '.join(CRITERIA)}.")
    if concentration == "auto":
        concentrations = CONCENTRATIONS if panel.shape[0] > 1 else CONCENTRATIONS[:1]
    elif concentration in CONCENTRATIONS:
        concentrations = (concentration,)
    else:
        raise ValueError(f"unknown concentration {concentration!r}; expected one of "
                         f"{', '.join(CONCENTRATIONS)} or 'auto'.")
    if isinstance(slope, str) and slope == "auto":
        slopes: tuple[bool, ...] = (False, True)
    elif isinstance(slope, (bool, np.bool_)):
        slopes = (bool(slope),)
    else:
        raise ValueError(f"slope must be True, False or 'auto', got {slope!r}.")
    if criterion == "heldout" and (isinstance(n_folds, bool) or int(n_folds) != n_folds
                                   or not 2 <= n_folds <= panel.shape[1]):
        raise ValueError(f"n_folds must be a whole number in 2..{panel.shape[1]} (the tasks), "
                         f"got {n_folds!r}.")
    idle = [repr(s) for s, m in zip(panel.systems, panel.trials) if not np.any(m > 0)]
    if idle:
        raise ValueError(f"system(s) {', '.join(idle)} ran no trial on any task: the data say "
                         "nothing about them (their ability is not identified); drop them.")
    layout = panel_layout(panel)
    candidates = _fit_candidates(panel, layout, families, int(max_components), grid,
                                 int(n_init), rng, slopes, concentrations)
    table = pd.DataFrame({
        "family": [c.family for c in candidates],
        "n_components": [c.n_components if c.family != "grid" else pd.NA for c in candidates],
        "concentration": ["shared" if c.shared else "system" for c in candidates],
        "slope": [c.slope for c in candidates],
        "loglik": [c.optimum.loglik for c in candidates],
        "n_params": [c.n_params for c in candidates],
        "aic": [-2.0 * c.optimum.loglik + 2.0 * c.n_params for c in candidates],
        "bic": [c.bic for c in candidates],
        "converged": [c.optimum.converged for c in candidates],
    })
    if criterion in ("aic", "bic"):
        score = -table[criterion].to_numpy()
    else:
        score = _heldout_loglik(panel, families, int(max_components), grid, int(n_init),
                                int(n_folds), rng, slopes, concentrations)
        table["heldout_loglik"] = score
        score = np.where(np.isnan(score), -np.inf, score)  # a fold that failed loses
    # ties (within 1e-6 relative) go to the simpler model, as in passmix.fit
    top = score.max()
    tied = [i for i, v in enumerate(score) if v >= top - 1e-6 * max(1.0, abs(top))]
    best = candidates[min(tied, key=lambda i: candidates[i].n_params)]
    table["selected"] = [c is best for c in candidates]
    if not best.optimum.converged:
        shape = (f"{best.family}" + (f", H = {best.n_components}" if best.family != "grid" else "")
                 + f", concentration {'shared' if best.shared else 'per system'}"
                 + (", slopes" if best.slope else ""))
        warnings.warn(f"the pooled fit chosen ({shape}) did not converge: the log-likelihood "
                      f"could still rise (L-BFGS-B: {best.optimum.message}); its estimates and "
                      "intervals are of a point short of the optimum.", FitWarning, stacklevel=2)
    parts = best.parts
    a, log_kappa, _ = _system_parts(parts)
    return PooledFit(panel=panel, family=best.family, grid=grid, abilities=a,
                     concentrations=np.exp(log_kappa),
                     grid_weights=np.exp(_log_grid_weights(best.family, parts, grid)),
                     loglik=best.optimum.loglik, bic=best.bic, converged=best.optimum.converged,
                     family_table=table, params=best.optimum.params, _layout=layout,
                     n_components=best.n_components, slope=best.slope,
                     concentration="shared" if best.shared else "system")
