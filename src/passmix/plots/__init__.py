"""Plots of fits, comparisons, tables, evaluations and sensitivities (matplotlib is imported
by the first plot drawn).

* :mod:`~passmix.plots.fit`: horizon curves, the fitted density, the pooled
  difficulty distribution;
* :mod:`~passmix.plots.compare`: a paired comparison's curves, difference and band;
* :mod:`~passmix.plots.table`: a table of estimates (``passmix estimate --plot``);
* :mod:`~passmix.plots.scaling`: the evaluation loop's trajectory;
* :mod:`~passmix.plots.sensitivity`: a score's distribution across configurations.

They take the data and return the axes, so the fits' ``plot()`` methods call
them; the posterior's plots are in :mod:`passmix.bayes.plots`.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".fit": ["METRIC_LABELS", "default_horizons", "get_ax", "plot_difficulty", "plot_horizon",
             "plot_mixture_density"],
    ".compare": ["plot_comparison"],
    ".table": ["plot_estimates"],
    ".scaling": ["plot_evaluation"],
    ".sensitivity": ["plot_sensitivity"],
})
