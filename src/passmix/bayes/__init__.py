"""The Bayesian path: NUTS draws of any model, metrics over draws, diagnostics.

* :mod:`~passmix.bayes.sample`: :func:`passmix.sample`, NUTS for a single-system
  fit (the Beta mixture, the zero-inflated mixture);
* :mod:`~passmix.bayes.pooled`: :func:`passmix.sample_pooled`, NUTS for the pooled model;
* :mod:`~passmix.bayes.stats`: metrics, credible intervals and summaries over the
  draws of either (:func:`posterior_metrics`, :func:`credible_interval`,
  :func:`posterior_summary`, :func:`compare_intervals`);
* :mod:`~passmix.bayes.checks`: diagnostics of either (:func:`diagnose`,
  :func:`check_diagnostics`) and the mixture's :func:`ppc_pvalue`;
* :mod:`~passmix.bayes.plots`: traces, ranks, posterior horizons, predictive
  checks (:func:`plot_trace`, :func:`plot_rank`, :func:`plot_posterior_horizon`,
  :func:`plot_ppc_counts`).

Both samplers return ``xarray.DataTree``; the pooled draws have a
``system`` dimension.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".sample": ["sample"],
    ".pooled": ["pooled_fit", "sample_pooled"],
    ".stats": ["compare_intervals", "credible_interval", "posterior_metrics",
               "posterior_summary"],
    ".checks": ["check_diagnostics", "diagnose", "ppc_pvalue"],
    ".plots": ["plot_posterior_horizon", "plot_ppc_counts", "plot_rank", "plot_trace"],
})
