"""Budget samplers: which (configuration, question) cells to observe.

* ``"stratified"`` (PromptEval's scheme): one cell at a time, to a
  configuration with the fewest cells so far (ties at random), on a
  question of it with the fewest cells so far (ties at random); every
  configuration and every question is covered as evenly as the budget
  allows.
* ``"uniform"``: `budget` cells drawn at random without replacement from all
  observed cells.

For count data (question identity unknown) the same two schemes decide how
many questions each configuration gets, and its correct answers among them
are a hypergeometric draw from its full counts (questions drawn without
replacement).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_seed, check_whole
from .data import Configurations

__all__ = ["CELL_SAMPLERS", "sample_cells"]

#: The budget samplers of :func:`sample_cells`.
CELL_SAMPLERS = ("stratified", "uniform")


def sample_cells(data: Configurations, budget: int, *, method: str = "stratified",
                 seed: Any = None) -> Configurations:
    """Observe `budget` cells of `data` (the full reference), as a new :class:`Configurations`.

    Parameters
    ----------
    data : Configurations
        Everything that could be observed (the complete matrix, or full counts).
    budget : int
        Cells to observe (at most ``data.n_cells``).
    method : {"stratified", "uniform"}, default "stratified"
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    Configurations
        The observed subset: a matrix with the other cells set to NaN, or
        counts of the questions drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.sensitivity import Configurations, sample_cells
    >>> full = Configurations.from_matrix(np.ones((3, 4)))
    >>> sorted(sample_cells(full, 7, seed=0).questions.tolist())
    [2, 2, 3]
    """
    if not isinstance(data, Configurations):
        raise TypeError(f"data must be Configurations, got {type(data).__name__}.")
    budget = check_whole(budget, "budget", 1)
    if method not in CELL_SAMPLERS:
        raise ValueError(f"unknown sampler {method!r}; expected one of "
                         f"{', '.join(CELL_SAMPLERS)}.")
    if budget > data.n_cells:
        raise ValueError(f"budget {budget} exceeds the {data.n_cells} observed cells.")
    rng = np.random.default_rng(check_seed(seed))
    if data.has_questions:
        mask = _stratified_mask(data.observed(), budget, rng) if method == "stratified" \
            else _uniform_mask(data.observed(), budget, rng)
        return data.with_cells(mask)
    n = _stratified_numbers(data.questions, budget, rng) if method == "stratified" \
        else rng.multivariate_hypergeometric(data.questions, budget)
    drawn = np.zeros(n.size, dtype=np.int64)
    some = n > 0
    drawn[some] = rng.hypergeometric(data.successes[some],
                                     data.questions[some] - data.successes[some], n[some])
    return data.with_counts(drawn, n.astype(np.int64))


def _uniform_mask(available: np.ndarray, budget: int, rng: np.random.Generator) -> np.ndarray:
    cells = np.flatnonzero(available)
    mask = np.zeros(available.size, dtype=bool)
    mask[rng.choice(cells, size=budget, replace=False)] = True
    return mask.reshape(available.shape)


def _stratified_mask(available: np.ndarray, budget: int,
                     rng: np.random.Generator) -> np.ndarray:
    free = available.copy()
    mask = np.zeros_like(available)
    row_n = np.zeros(free.shape[0], dtype=np.int64)
    col_n = np.zeros(free.shape[1], dtype=np.int64)
    row_free = free.sum(axis=1)
    big = np.iinfo(np.int64).max
    for _ in range(budget):
        open_rows = np.where(row_free > 0, row_n, big)
        rows = np.flatnonzero(open_rows == open_rows.min())
        r = rows[rng.integers(rows.size)]
        cols = np.flatnonzero(free[r])
        fewest = cols[col_n[cols] == col_n[cols].min()]
        c = fewest[rng.integers(fewest.size)]
        mask[r, c], free[r, c] = True, False
        row_n[r] += 1
        col_n[c] += 1
        row_free[r] -= 1
    return mask


def _stratified_numbers(capacity: np.ndarray, budget: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Questions per configuration: even rounds, the last one to random configurations."""
    n = np.zeros(capacity.size, dtype=np.int64)
    left = budget
    while left > 0:
        open_ = np.flatnonzero(n < capacity)
        if left >= open_.size:
            n[open_] += 1
            left -= open_.size
        else:
            n[rng.choice(open_, size=left, replace=False)] += 1
            left = 0
    return n
