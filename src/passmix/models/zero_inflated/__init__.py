"""The zero-inflated Beta mixture: an atom at success rate 0 beside H Beta components.

* :mod:`~passmix.models.zero_inflated.model`: coordinates, the map to
  ``(pi, weights, alpha, beta)``, the PyMC model and its compiled objective;
* :mod:`~passmix.models.zero_inflated.fit`: the fit from the plain mixture's
  optima and :class:`ZeroInflatedFit`, a generic
  :class:`~passmix.inference.results.LikelihoodResult`.

Fitted by ``passmix.fit(counts, zero_inflated=True)`` (or ``"auto"``, BIC
against the plain mixture); registered as the estimator ``"zi_mixture"``.
"""

from ..._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".fit": ["ZeroInflatedFit", "fit_zero_inflated"],
    ".model": ["build_model", "get_objective"],
})
