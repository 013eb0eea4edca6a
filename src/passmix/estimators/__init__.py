"""Estimators by name: the direct (model-free) ones and the registry that serves every method.

* :mod:`~passmix.estimators.direct`: the naive and unbiased combinatorial estimates;
* :mod:`~passmix.estimators.registry`: :func:`register_estimator`, the names the
  harness and the command line run.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".base": ["FittedResult"],
    ".direct": ["DirectEstimate", "combinatorial_estimate", "direct_estimate", "naive_estimate"],
    ".registry": ["Estimator", "auto_method", "estimator_names", "get_estimator",
                  "register_estimator", "resolve_methods", "shares_tasks",
                  "unregister_estimator"],
})
