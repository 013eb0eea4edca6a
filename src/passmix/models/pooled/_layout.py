"""The pooled model's coordinates: a panel's layout, the parameter blocks, their bounds and
names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse
from scipy.special import log_softmax

from ..._special import log_choose
from ...data.panel import Panel

__all__ = ["CONCENTRATIONS", "CRITERIA", "DEFAULT_GRID", "FAMILIES", "WEAK_POOLED_PRIOR",
           "block_names", "coordinate_blocks", "panel_layout", "split_blocks"]


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


# -- data layout ----------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """The panel as distinct (successes, trials) pairs and the cell each system ran.

    A cell is (system i, task j) with trials; its pair is ``cell_pair[i, j]``.
    The incidence of cells on tasks (:attr:`incidence`) is sparse: a dense
    (J, I * P) matrix grows with tasks x systems x pairs; only the compiled
    graph takes it dense (:attr:`dense_incidence`), for its matrix product.
    """

    n_systems: int
    n_tasks: int
    pair_y: np.ndarray          # (P,)
    pair_f: np.ndarray          # (P,) failures
    pair_log_comb: np.ndarray   # (P,)
    cell_pair: np.ndarray       # (I, J) the pair of each cell, -1 where not run

    @property
    def n_pairs(self) -> int:
        return self.pair_y.size

    @cached_property
    def dense_incidence(self) -> np.ndarray:
        """:attr:`incidence` as a dense array, for the compiled graph's product (BLAS)."""
        return self.incidence.toarray()

    @cached_property
    def incidence(self) -> sparse.csr_array:
        """(J, I * P) 0/1, sparse: task j has system i's cell at pair p."""
        systems, tasks = np.nonzero(self.cell_pair >= 0)
        rows = systems * self.n_pairs + self.cell_pair[systems, tasks]
        return sparse.csr_array((np.ones(rows.size), (tasks, rows)),
                                shape=(self.n_tasks, self.n_systems * self.n_pairs))


def panel_layout(panel: Panel) -> _Layout:
    y, m = panel.successes, panel.trials
    run = m > 0
    pairs, codes = np.unique(np.stack([y[run], m[run]], axis=1), axis=0, return_inverse=True)
    cell_pair = np.full(y.shape, -1)
    cell_pair[run] = codes.ravel()
    py, pm_ = pairs[:, 0].astype(float), pairs[:, 1].astype(float)
    return _Layout(y.shape[0], y.shape[1], py, pm_ - py, log_choose(pm_, py), cell_pair)


# -- coordinates ------------------------------------------------------------------
def block_names(family: str, slope: bool = False) -> tuple[str, ...]:
    """The model's free variables, in order."""
    tail = (("grid_logits",) if family == "grid"
            else ("difficulty_mean", "log_difficulty_sd", "component_logits"))
    return ("ability", "log_concentration", *(("log_slope",) if slope else ()), *tail)


def coordinate_blocks(family: str, n_systems: int, n_grid: int, n_components: int = 1,
                      slope: bool = False, shared: bool = False) -> list[tuple[str, int]]:
    """The optimiser's coordinates: (name, size) of each free variable with any.

    The normal family is a mixture of `n_components` normals: a mean and a
    log-sd each, and ``n_components - 1`` logits of the mixing weights (the
    first component's logit is 0). With `slope`, a log-slope per system
    follows the concentrations; with `shared`, one log-concentration serves
    every system. :meth:`PooledFit.blocks` gives a fit's.

    Examples
    --------
    >>> from passmix.models.pooled import coordinate_blocks
    >>> coordinate_blocks("normal", 3, 41, shared=True)
    [('ability', 3), ('log_concentration', 1), ('difficulty_mean', 1), ('log_difficulty_sd', 1)]
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


# -- fitting ------------------------------------------------------------------------
def _box(blocks) -> np.ndarray:
    return np.concatenate([np.tile(_BOUNDS[name], (size, 1)) for name, size in blocks])


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
