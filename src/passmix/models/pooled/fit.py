"""Fitting the pooled model: starts, each family's optimum, the candidates and the choice
among them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import log_softmax

from ..._validation import FitWarning, check_seed, shown
from ...data.counts import Counts
from ...inference.optimize import Optimum, at_bound, damped_newton, maximize, select_by_criterion
from ...data.panel import Panel, as_panel, system_name
from ._graph import PooledObjective, _layout_loglik, _objective
from ._layout import (CONCENTRATIONS, CRITERIA, DEFAULT_GRID, FAMILIES, _BOUNDS, _Layout, _box,
                      _n_params, _system_parts, panel_layout, split_blocks)
from ._likelihood import _log_grid_weights, em_grid_weights, task_grid_loglik
from .result import PooledFit, PooledSystem

__all__ = ["fit_pooled", "fit_pooled_groups"]


# converged when no free coordinate's slope exceeds this times sqrt(J)
_GRAD_TOL = 1e-3


# L-BFGS-B's budget on each start; the best is polished, then up to this many Newton steps
_SCREEN = {"maxiter": 50, "ftol": 1e-8, "gtol": 1e-5}


_NEWTON_STEPS = 30
# damped Newton steps that finish a grid fit L-BFGS-B left short of stationary
_GRID_NEWTON_STEPS = 10


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


def _projected_slope(objective, z: np.ndarray, box: np.ndarray) -> float:
    """The largest slope of the log-likelihood at `z` that the box does not hold."""
    _, grad = objective.logp_dlogp(z)
    held = at_bound(z, box)
    projected = np.where((held[:, 0] & (grad < 0)) | (held[:, 1] & (grad > 0)), 0.0, grad)
    return float(np.max(np.abs(projected), initial=0.0))


def _fit_family(panel: Panel, layout: _Layout, family: str, grid: np.ndarray, n_init: int,
                rng: np.random.Generator, warm: tuple[_Candidate, ...] = (),
                n_components: int = 1, slope: bool = False, shared: bool = False,
                shards=None) -> _Candidate:
    objective = (_objective(family, bool(slope), bool(shared)) if shards is None
                 else shards.objective(family, bool(slope), bool(shared)))
    with objective.lock:
        objective.set_data(layout, grid, n_components)
        blocks = objective.blocks
        box = _box(blocks)
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
        tol = _GRAD_TOL * np.sqrt(layout.n_tasks)
        if family == "grid" and _projected_slope(objective, best.params, box) >= tol:
            # the profile over EM's weights is smooth only to EM's tolerance, and
            # L-BFGS-B can stop on it short of stationary (seen with slopes): finish
            # with damped Newton steps on every coordinate, weights included
            z, _ = damped_newton(objective, best.params, box, steps=_GRID_NEWTON_STEPS)
            logp = objective.logp_dlogp(z)[0]
            if logp >= best.loglik:
                best = replace(best, params=z, loglik=logp,
                               on_bound=at_bound(z, box).any(axis=1))
        converged = bool(_projected_slope(objective, best.params, box) < tol)
    best = replace(best, converged=converged)
    parts = split_blocks(best.params, blocks)
    k = _n_params(family, parts, layout.n_systems)
    n_obs = layout.n_tasks
    return _Candidate(family, best, parts, k, -2.0 * best.loglik + k * np.log(n_obs),
                      n_components, slope, shared)


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
                    concentrations: tuple[str, ...] = ("system",),
                    shards=None) -> list[_Candidate]:
    """Every candidate fitted to `panel`, in the family table's order.

    Candidates are the families (normal H = 1 .. `max_components`, grid) under
    each concentration structure, without and/or with slopes. The base
    model (a single normal, per-system concentrations, no slopes) is always
    fitted first: it warm-starts the others, and every candidate also starts
    from its base counterpart's optimum (same family and H) when there is one.
    With `shards` (:class:`~passmix.models.pooled.sharded.TaskShards`) every
    evaluation runs on the shards' Dask workers.
    """
    shapes = ([("normal", h) for h in range(1, max_components + 1)] if "normal" in families
              else []) + ([("grid", 1)] if "grid" in families else [])

    def fit(family, h, slope, shared, warm):
        return _fit_family(panel, layout, family, grid, n_init, rng, warm=tuple(warm),
                           n_components=h, slope=slope, shared=shared, shards=shards)

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
               client=None, n_shards: int | None = None, **read_kwargs) -> PooledFit:
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
        Seed of the jittered starts and of the folds. None (the default)
        means 0, as in :func:`passmix.compare` and :func:`passmix.rank`: the
        same panel gives the same fit in every process.
    client : dask.distributed.Client, optional
        Run the fit's sums on this Dask cluster: the tasks are split into
        `n_shards` shards, each sent once to a worker, and every evaluation of
        the log-likelihood, its gradient and Hessian is a map over the shards
        and a sum (:mod:`passmix.models.pooled.sharded`). The optimum is the
        in-process one (sums in another order). For panels too large for one
        process; the normal family only, with ``criterion`` "aic" or "bic".
        The result's intervals are computed in this process.
    n_shards : int, optional
        Shards of tasks with `client`; default one per worker thread.
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
    rng = np.random.default_rng(0 if seed is None else check_seed(seed))
    if int(n_init) != n_init or n_init < 1:
        raise ValueError(f"n_init must be a whole number >= 1, got {shown(n_init)}.")
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
        raise ValueError(f"slope must be True, False or 'auto', got {shown(slope)}.")
    if criterion == "heldout" and (isinstance(n_folds, bool) or int(n_folds) != n_folds
                                   or not 2 <= n_folds <= panel.shape[1]):
        raise ValueError(f"n_folds must be a whole number in 2..{panel.shape[1]} (the tasks), "
                         f"got {shown(n_folds)}.")
    idle = [f"'{system_name(s)}'" for s, m in zip(panel.systems, panel.trials)
            if not np.any(m > 0)]
    if idle:
        raise ValueError(f"system(s) {', '.join(idle)} ran no trial on any task: the data say "
                         "nothing about them (their ability is not identified); drop them.")
    shards = None
    if client is not None:
        if families != ("normal",) or criterion == "heldout":
            raise ValueError("a fit on a Dask client takes family='normal' and criterion "
                             "'aic' or 'bic' (the grid family's EM and the held-out folds run "
                             "in one process).")
        from .sharded import TaskShards

        shards = TaskShards(client, panel, n_shards)
    elif n_shards is not None:
        raise ValueError("n_shards is for a fit on a Dask client: pass client= too.")
    layout = panel_layout(panel)
    candidates = _fit_candidates(panel, layout, families, int(max_components), grid,
                                 int(n_init), rng, slopes, concentrations, shards)
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
        table["heldout_loglik"] = score  # NaN where a fold failed: that candidate loses
    # ties go to the simpler model, as in passmix.fit
    best = candidates[select_by_criterion(score, table["n_params"].to_numpy())]
    table["selected"] = [c is best for c in candidates]
    if not best.optimum.converged:
        shape = (f"{best.family}" + (f", H = {best.n_components}" if best.family != "grid" else "")
                 + f", concentration {'shared' if best.shared else 'per system'}"
                 + (", slopes" if best.slope else ""))
        warnings.warn(f"the pooled fit chosen ({shape}) did not converge: the log-likelihood "
                      f"could still rise (L-BFGS-B: {best.optimum.message}); its estimates and "
                      "intervals are of a point short of the optimum.", FitWarning, stacklevel=2)
    return PooledFit.from_parameters(
        panel, best.family, grid, best.optimum.params, n_components=best.n_components,
        slope=best.slope, concentration="shared" if best.shared else "system",
        loglik=best.optimum.loglik, bic=best.bic, converged=best.optimum.converged,
        family_table=table)
