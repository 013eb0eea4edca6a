"""The Beta mixture of one system: coordinates, the PyMC graph, the fit and its result.

* :mod:`~passmix.models.mixture.parameters`: the unconstrained coordinates,
  their bounds and priors;
* :mod:`~passmix.models.mixture.graph`: the PyMC model and its compiled objective;
* :mod:`~passmix.models.mixture.delta`: the metrics' gradients in those
  coordinates and :func:`delta_method`;
* :mod:`~passmix.models.mixture.fit`: :func:`passmix.fit` and :class:`MixtureFit`.
"""

from ..._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".delta": ["delta_method", "metric_gradient", "metric_logit_gradient"],
    ".fit": ["MixtureFit"],
    ".graph": ["MixtureObjective", "SamplingModel", "build_model", "get_objective",
               "get_sampling_model"],
})
