"""The pooled model: many systems on shared tasks, one difficulty distribution.

:mod:`~passmix.models.pooled.fit` holds the layout of a panel, the likelihood
(numpy and PyTensor), the fit, the selection of the difficulty family and the
:class:`PooledFit` result with its delta and profile intervals.
"""

from ..._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".fit": ["PooledFit", "PooledSystem", "fit_pooled", "fit_pooled_groups", "heldout_loglik"],
})
