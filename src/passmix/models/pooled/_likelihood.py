"""The pooled likelihood in numpy: task-by-grid log-likelihoods, analytic derivatives, EM
for the grid weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import expit

from ..._special import log_beta_ratio
from ._layout import _Layout, _system_parts, split_blocks

__all__ = ["PooledDerivatives", "beta_shapes", "em_grid_weights", "task_grid_loglik"]


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
    ell = log_beta_ratio(alpha[:, :, None], beta[:, :, None], layout.pair_y, layout.pair_f,
                         layout.pair_log_comb)                       # (I, G, P)
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
# trials up to which digamma and trigamma differences are summed term by term
_SUM_TRIALS = 64
# a task's window leaves out grid points whose terms in the derivatives are below this
_WINDOW_MASS = 1e-30


def _reciprocal_sums(x: np.ndarray, n: np.ndarray, power: int) -> np.ndarray:
    """``sum_{i < n} (x + i)^-power``, `x` broadcast against the integers `n` (last axis).

    For integer n, ``digamma(x + n) - digamma(x)`` is this sum with power 1 and
    ``trigamma(x) - trigamma(x + n)`` with power 2: exact, and free of the
    cancellation the differences suffer where x is tiny.
    """
    n = np.asarray(n)
    x = np.asarray(x, dtype=float)
    shape = np.broadcast_shapes(x.shape, n.shape)
    top = int(n.max(initial=0))
    if x.ndim and x.shape[-1] == 1 and n.ndim == 1:
        # x does not vary along n's axis: one running sum over i serves every n, read at
        # each n (the terms are added in the same order as term by term: the same floats)
        i = np.arange(top, dtype=float)
        terms = 1.0 / (x + i) if power == 1 else 1.0 / (x + i) ** 2          # (..., top)
        running = np.concatenate([np.zeros(x.shape), np.cumsum(terms, axis=-1)], axis=-1)
        return np.broadcast_to(np.take(running, n.astype(np.intp), axis=-1), shape).copy()
    out = np.zeros(shape)
    for i in range(top):
        term = 1.0 / (x + i) if power == 1 else 1.0 / (x + i) ** 2
        out += np.where(i < n, term, 0.0)
    return out


@dataclass(frozen=True)
class PooledDerivatives:
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
    incidence: np.ndarray  # (J, I * P), as in _Layout
    loglik: float          # the log-likelihood itself

    @property
    def n_units(self) -> int:
        return self.d1.shape[1]

    @property
    def grid_index(self) -> np.ndarray:
        """(J, W): the grid points of each task's window at ``_WINDOW_MASS``
        (:meth:`window`)."""
        return self.window()[0]

    @property
    def r_window(self) -> np.ndarray:
        """(J, W): the task posterior on each task's window (:attr:`grid_index`)."""
        return self.window()[1]

    @cached_property
    def _windows(self) -> dict:
        return {}

    @cached_property
    def _d1_scale(self) -> np.ndarray:
        """(G,): ``1 + max |d ell / d u|`` over systems, units and pairs at each grid point
        (every window's cut; computed once per point of the search)."""
        return 1.0 + np.abs(self.d1).max(axis=(0, 1, 3), initial=0.0)

    def window(self, mass: float = _WINDOW_MASS, weight: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(grid_index, r_window)``, each (J, W): the grid points of each task's window,
        the contiguous run of its posterior outside which every term of the
        derivatives is below `mass`, and the posterior there.

        With many systems a task's posterior covers a few grid points (a dozen of
        141 at 500 systems), so sums over (task, grid) run over (task, window):
        the same numbers, at a fraction of the cost. A point is left out where
        ``r_jg (1 + max |d ell / d u|)^2 < mass`` (the information's terms are
        ``r E E'``), so what is dropped is `mass` of terms of order one. A caller
        whose terms carry larger weights passes them, `weight` (G,) at each grid
        point, and the cut is ``r (1 + max |E|)^2 weight < mass``: a metric M's
        logit weighs a point by up to ``g / M``, and where M is tiny (a system
        with no success, at a long horizon) its mass sits in the posterior's far
        tail. Every task's window has the widest's width W (shifted to fit the
        grid). Kept per `mass` when no `weight` is given.
        """
        key = float(mass)
        if weight is not None or key not in self._windows:
            n_grid = self.r.shape[1]
            scale = self._d1_scale
            if weight is not None:
                scale = scale * np.sqrt(np.maximum(weight, 1.0))
            keep = self.r * (scale * scale)[None, :] >= key
            keep[np.arange(keep.shape[0]), self.r.argmax(axis=1)] = True
            first = keep.argmax(axis=1)
            last = n_grid - 1 - keep[:, ::-1].argmax(axis=1)
            width = int((last - first).max(initial=0)) + 1
            first = np.minimum(first, n_grid - width)
            index = first[:, None] + np.arange(width)[None, :]
            pair = (index, np.take_along_axis(self.r, index, axis=1))
            if weight is not None:
                return pair
            self._windows[key] = pair
        return self._windows[key]

    def task_blocks(self, rows: int = 0, gather: bool = True, index: np.ndarray | None = None):
        """``(tasks, E)`` chunks: E (n_sys_phi, len(tasks), W), ``d ell / d u`` of
        every system at each cell on the task's window (:attr:`grid_index`), zero
        where the system did not run the task. Blocks of tasks small enough that
        E, and `rows` numbers per (task, grid point), stay within ``_CHUNK``;
        without `gather` only the blocks' tasks (E is None); `index`, the windows
        (default :attr:`grid_index`)."""
        n_sys, n_u, n_grid = self.d1.shape[:3]
        index = self.grid_index if index is None else index
        n_tasks, width = index.shape
        step = max(1, _CHUNK // max(1, n_sys * n_u * width, rows * (width if gather else n_grid)))
        if not gather:
            for start in range(0, n_tasks, step):
                yield np.arange(start, min(start + step, n_tasks)), None
            return
        d1 = self.d1.transpose(0, 2, 3, 1)  # (I, G, P, U)
        systems = np.arange(n_sys)[:, None, None]
        for start in range(0, n_tasks, step):
            tasks = np.arange(start, min(start + step, n_tasks))
            pairs = self.cell_pair[:, tasks]  # (I, T)
            block = d1[systems, index[tasks][None], np.maximum(pairs, 0)[:, :, None]]
            block = np.where((pairs >= 0)[:, :, None, None], block, 0.0)  # (I, T, W, U)
            yield tasks, block.transpose(0, 3, 1, 2).reshape(n_sys * n_u, tasks.size, width)

    def pair_posterior(self) -> np.ndarray:
        """(I, P, G): each system's posterior mass at g summed over its tasks with pair p."""
        n_sys, n_pairs = self.d1.shape[0], self.d1.shape[-1]
        return (self.incidence.T @ self.r).reshape(n_sys, n_pairs, self.r.shape[1])

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
        r_win = self.r_window
        root = np.sqrt(r_win)
        for tasks, e in self.task_blocks():
            scaled = (e * root[tasks][None]).reshape(n_s, -1)
            hess[:n_s, :n_s] += scaled @ scaled.T
            means[:n_s, tasks] = (e * r_win[tasks][None]).sum(axis=2)
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
        r_win = self.r_window
        for tasks, e in self.task_blocks():
            means[:n_s, tasks] = (e * r_win[tasks][None]).sum(axis=2)
        return self.transform.T @ means

    def posterior_contraction(self, weights, n_rows: int | None = None,
                              window: tuple[np.ndarray, np.ndarray] | None = None
                              ) -> np.ndarray:
        """``sum_jg weights[c, j, g] d r_jg / d theta`` for each row c, in the free coordinates.

        `weights` is (C, J, W), on each task's `window` (default :meth:`window`;
        the posterior is zero to rounding outside it), or a function of task
        positions returning those tasks' (C, len(tasks), W) weights, with
        `n_rows` = C (so the whole array is never held); returns (n, C). This is
        what a metric that averages over the task posterior needs, without
        differencing it.
        """
        if callable(weights):
            block_weights, n_c = weights, int(n_rows)
        else:
            block_weights, n_c = (lambda tasks: weights[:, tasks]), weights.shape[0]
        n_sys, n_u, n_grid, n_pairs = self.d1.shape
        n_s = n_sys * n_u
        index, r_win = self.window() if window is None else window
        means = self.r @ self.w1                                          # (J, W)
        out = np.zeros((n_s + self.w1.shape[1], n_c))
        # d r_jg = r_jg (grad l_jg - m_j): contract the centred weights with every
        # system's d ell / d u at the task's cells, a block of tasks at a time: either
        # every cell's window gathered (its cost grows with the systems x tasks x window,
        # whatever the rows) or, for few rows, the tasks of each (system, pair) summed
        # first on the whole grid (the incidence) and contracted once per pair
        gathered = n_s * index.size * (n_c + 8)
        summed = n_c * (self.incidence.nnz + n_s * n_pairs) * n_grid
        by_pair = summed < gathered
        for tasks, e in self.task_blocks(rows=n_c, gather=not by_pair, index=index):
            whole = tasks.size == index.shape[0]
            r_tasks = r_win if whole else r_win[tasks]
            rw = block_weights(tasks) * r_tasks[None]                     # (C, T, W)
            totals = rw.sum(axis=2)                                       # (C, T)
            # the distribution's coordinates (on the whole grid: the tasks summed first)
            by_grid = (rw.sum(axis=1) @ self.w1 if index.shape[1] == n_grid
                       else rw.reshape(n_c, -1) @ self.w1[index[tasks].ravel()])
            out[n_s:] += by_grid.T - (means if whole else means[tasks]).T @ totals.T
            centred = rw - totals[:, :, None] * r_tasks[None]
            if not by_pair:
                out[:n_s] += e.reshape(n_s, -1) @ centred.reshape(n_c, -1).T
                continue
            full = np.zeros((tasks.size, n_c, n_grid))                    # (T, C, G)
            where = np.broadcast_to(index[tasks][:, None, :], (tasks.size, n_c, index.shape[1]))
            np.put_along_axis(full, where, centred.transpose(1, 0, 2), axis=2)
            incidence = (self.incidence if whole else self.incidence[tasks]).T
            # rows in blocks whose (I, P, rows, G) sums stay within _CHUNK numbers
            step = max(1, _CHUNK // max(1, n_sys * n_pairs * n_grid))
            for first in range(0, n_c, step):
                rows = slice(first, min(first + step, n_c))
                by_cell = (incidence @ full[:, rows].reshape(tasks.size, -1)).reshape(
                    n_sys, n_pairs, -1, n_grid)
                out[:n_s, rows] += np.einsum("iugp,ipcg->iuc", self.d1, by_cell).reshape(
                    n_s, -1)
        return self.transform.T @ out


def _pooled_derivatives(layout: _Layout, grid: np.ndarray, family: str, blocks,
                        z: np.ndarray, step: float = 1e-4, second: bool = True
                        ) -> PooledDerivatives:
    """The analytic derivative pieces of the pooled model at coordinates `z`.

    The difficulty distribution's ``log w`` is differenced (a cheap G-vector,
    to ~1e-8); everything else is analytic (digamma and trigamma of the Beta
    shapes, their differences summed term by term up to ``_SUM_TRIALS`` trials).
    Without `second` the second derivatives (``d2``, ``w2``) are left as zeros:
    the score and the posterior's derivative do not need them.
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
    K = kappa[:, :, None]                                                 # (I, 1, 1)
    if m_tot.size and m_tot.max() <= _SUM_TRIALS:
        # the counts are whole: the differences are finite sums, cheaper than
        # scipy's digamma and trigamma (a zeta function) over (I, G, P)
        s1_k, s2_k = _reciprocal_sums(K, m_tot, 1), _reciprocal_sums(K, m_tot, 2)
        e_a = _reciprocal_sums(A, y, 1) - s1_k
        e_b = _reciprocal_sums(B, f, 1) - s1_k
        if second:
            e_aa = s2_k - _reciprocal_sums(A, y, 2)
            e_bb = s2_k - _reciprocal_sums(B, f, 2)
            e_ab = np.broadcast_to(s2_k, A.shape[:2] + m_tot.shape)
    else:
        tri = lambda v: polygamma(1, v)  # noqa: E731
        e_a = digamma(A + y) - digamma(K + m_tot) - digamma(A) + digamma(K)
        e_b = digamma(B + f) - digamma(K + m_tot) - digamma(B) + digamma(K)
        if second:
            e_aa = tri(A + y) - tri(K + m_tot) - tri(A) + tri(K)
            e_bb = tri(B + f) - tri(K + m_tot) - tri(B) + tri(K)
            e_ab = np.broadcast_to(-tri(K + m_tot) + tri(K), A.shape[:2] + m_tot.shape)
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
    per_task = _lse(joint, axis=1, keepdims=True)
    r = np.exp(joint - per_task)
    return PooledDerivatives(r, d1, d2, w1, w2, transform, layout.cell_pair,
                              layout.incidence, float(per_task.sum()))


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
