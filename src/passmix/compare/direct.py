"""Model-free paired differences: per-task unbiased estimates and a multiplier-bootstrap band.

For two systems on the tasks both ran, each task's unbiased Pass@k (Pass^k,
AUC@k) is the combinatorial estimate of its own trials, so their difference
``d_j(k)`` is unbiased for that task's difference, and the tasks are
independent units: ``D(k) = mean_j d_j(k)`` with standard error
``sd_j(d_j(k)) / sqrt(J)``. The band over a grid of k is the sup-t band of a
Gaussian multiplier bootstrap (``docs/formulas.md``, section 9): the same
statistic passk-inference computes. Defined only for k up to the fewest trials
either system ran on a shared task.
"""

from __future__ import annotations

import numpy as np

from ..estimators.direct import combinatorial_values
from ..inference.delta import normal_quantile

__all__ = ["multiplier_band", "paired_rows", "sup_t_critical", "task_values"]

#: multiplier draws per batch: bounds memory at (batch x tasks) without changing the stream
_BATCH = 128


def task_values(y, m, metric: str, k: np.ndarray) -> np.ndarray:
    """(J, K) each task's unbiased metric from its own trials; requires ``k <= m``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.compare.direct import task_values
    >>> task_values([1, 2], [2, 2], "pass@k", np.array([1, 2]))
    array([[0.5, 1. ],
           [1. , 1. ]])
    """
    return combinatorial_values(np.asarray(y, float)[:, None], np.asarray(m, float)[:, None],
                                metric, np.asarray(k)[None, :])


def paired_rows(y_a, m_a, y_b, m_b, metric: str, k: np.ndarray) -> np.ndarray:
    """(J, K) per-task unbiased ``M_b(k) - M_a(k)``; requires ``k <= m`` everywhere.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.compare.direct import paired_rows
    >>> paired_rows([1, 0], [2, 2], [2, 1], [2, 2], "pass@k", np.array([1, 2]))
    array([[0.5, 0. ],
           [0.5, 1. ]])
    """
    return task_values(y_b, m_b, metric, k) - task_values(y_a, m_a, metric, k)


def sup_t_critical(rows: np.ndarray, level: float, n_boot: int, rng: np.random.Generator
                   ) -> float:
    """The `level` quantile of ``max_k |sum_j e_j (d_jk - mean_k)| / (J se_k)``, e_j ~ N(0, 1).

    Columns with no spread (se = 0) carry no information and are left out of
    the maximum; with none left the normal quantile is returned.
    """
    n_tasks = rows.shape[0]
    se = rows.std(axis=0, ddof=1) / np.sqrt(n_tasks)
    live = se > 0
    if not live.any():
        return normal_quantile(level)
    centred = (rows[:, live] - rows[:, live].mean(axis=0)) / (n_tasks * se[live])
    maxima = np.empty(n_boot)
    for start in range(0, n_boot, _BATCH):
        stop = min(start + _BATCH, n_boot)
        maxima[start:stop] = np.abs(rng.standard_normal((stop - start, n_tasks))
                                    @ centred).max(axis=1)
    return float(np.quantile(maxima, level))


def multiplier_band(rows: np.ndarray, level: float, n_boot: int, rng: np.random.Generator):
    """Mean, standard error and the sup-t critical value of per-task difference rows.

    Returns ``(mean (K,), se (K,), critical)``: the pointwise interval is
    ``mean -+ z se`` and the band ``mean -+ critical se``.

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.compare.direct import multiplier_band
    >>> rows = np.random.default_rng(0).normal(0.1, 0.3, size=(200, 3))
    >>> mean, se, critical = multiplier_band(rows, 0.95, 2000, np.random.default_rng(1))
    >>> bool(1.96 < critical < 2.6)
    True
    """
    n_tasks = rows.shape[0]
    se = rows.std(axis=0, ddof=1) / np.sqrt(n_tasks)
    return rows.mean(axis=0), se, sup_t_critical(rows, level, n_boot, rng)
