"""The likelihood models: the Beta mixture of one system, the pooled model of many.

* :mod:`~passmix.models.mixture`: a Beta mixture prior on task success
  probability, H components chosen by BIC (:func:`passmix.fit`);
* :mod:`~passmix.models.zero_inflated`: the mixture with an atom at success
  rate 0, tasks no attempt solves (``passmix.fit(counts, zero_inflated=True)``);
* :mod:`~passmix.models.pooled`: systems on shared tasks, one difficulty
  distribution and a per-system ability (:func:`fit_pooled`).

Both are PyMC models compiled once; names load on first use, so importing
this package does not import PyMC.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".mixture.fit": ["MixtureFit"],
    ".pooled.fit": ["fit_pooled", "fit_pooled_groups"],
    ".pooled.result": ["PooledFit", "PooledSystem"],
    ".zero_inflated.fit": ["ZeroInflatedFit"],
})
