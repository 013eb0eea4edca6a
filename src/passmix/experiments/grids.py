"""Budgets and horizons of the repeated-trial protocol, by the number of recorded trials."""

from __future__ import annotations

from ._harness import positive_int

__all__ = ["PAPER_K", "PAPER_M", "default_k_grid", "default_m_grid"]

#: The paper's grids for 80 recorded trials per task.
PAPER_M = (5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80)
PAPER_K = (2, 5, 10, 20, 30, 40, 50, 60, 70, 80)

_LADDER = (2, 3, 5, 10, 20, 50, 100, 200)
_K_LADDER = (2, 5)  # times powers of ten: 2, 5, 10, 20, 50, 100, ...


def default_m_grid(n_trials: int) -> tuple[int, ...]:
    """Budgets ``m`` (trials kept per task) for data with `n_trials` trials per task.

    Parameters
    ----------
    n_trials : int
        Recorded trials per task (the smallest, if they differ).

    Returns
    -------
    tuple of int

    Notes
    -----
    * 80 trials: the paper's grid ``5, 10, 15, ..., 40, 50, 60, 70, 80``.
    * at most 5 trials: ``2, ..., n_trials - 1`` (one trial identifies only the
      mean, and keeping every trial leaves nothing to extrapolate);
    * otherwise the ladder ``2, 3, 5, 10, 20, 50, 100, 200`` up to
      ``n_trials / 2``, from 5 on when there are at least 20 trials (fewer
      than 5 trials of 20 or more is not a budget anyone chooses).

    Examples
    --------
    >>> from passmix.experiments import default_m_grid
    >>> default_m_grid(10_000)
    (5, 10, 20, 50, 100, 200)
    >>> default_m_grid(10), default_m_grid(4)
    ((2, 3, 5), (2, 3))
    """
    n_trials = positive_int(n_trials, "n_trials")
    if n_trials == 80:
        return PAPER_M
    if n_trials <= 5:
        grid = tuple(range(2, n_trials))
    else:
        start = 5 if n_trials >= 20 else 2
        grid = tuple(m for m in _LADDER if start <= m <= n_trials / 2)
    if not grid:
        raise ValueError(f"no default budgets for {n_trials} trials per task; pass m=.")
    return grid


def default_k_grid(n_trials: int) -> tuple[int, ...]:
    """Horizons ``k`` at which the reference on `n_trials` trials is defined.

    Parameters
    ----------
    n_trials : int
        Recorded trials per task (the smallest, if they differ).

    Returns
    -------
    tuple of int

    Notes
    -----
    80 trials: the paper's grid ``2, 5, 10, 20, ..., 80``. At most 10 trials:
    every ``k`` from 2 to `n_trials`. Otherwise the log grid
    ``2, 5, 10, 20, 50, ...`` up to `n_trials`, which is itself added last.

    Examples
    --------
    >>> from passmix.experiments import default_k_grid
    >>> default_k_grid(10_000)
    (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
    >>> default_k_grid(4)
    (2, 3, 4)
    """
    n_trials = positive_int(n_trials, "n_trials")
    if n_trials == 80:
        return PAPER_K
    if n_trials < 2:
        raise ValueError("one trial per task defines no horizon beyond k = 1; pass k=.")
    if n_trials <= 10:
        return tuple(range(2, n_trials + 1))
    grid = []
    power = 1
    while True:
        values = [b * power for b in _K_LADDER] + [10 * power]
        grid.extend(v for v in values if v <= n_trials)
        if 10 * power >= n_trials:
            break
        power *= 10
    grid.append(n_trials)
    return tuple(sorted(set(grid)))
