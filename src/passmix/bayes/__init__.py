"""The Bayesian path: NUTS draws of either model, metrics over draws, diagnostics.

* :mod:`~passmix.bayes.sample`: :func:`passmix.sample` for the Beta mixture,
  credible intervals, posterior metrics, ArviZ diagnostics;
* :mod:`~passmix.bayes.pooled`: :func:`passmix.sample_pooled` for the pooled model.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".sample": ["check_diagnostics", "compare_intervals", "credible_interval", "diagnose",
                "posterior_metrics", "posterior_summary", "ppc_pvalue", "sample"],
    ".pooled": ["PooledPosterior", "sample_pooled"],
})
