"""Compare systems on shared tasks: paired differences at any horizon, with honest intervals.

* :mod:`~passmix.compare.paired`: :func:`compare`, the pooled joint fit or
  model-free per-task differences, pointwise intervals and a simultaneous band;
* :mod:`~passmix.compare.methods`: the methods as objects (:class:`PooledMethod`,
  :class:`PosteriorMethod`, :class:`DirectMethod`, :class:`MixtureMethod`), each
  returning the pairs' intervals that its model's result computed;
* :mod:`~passmix.compare.result`: :class:`Comparison`, its table, certified signs
  and crossings;
* :mod:`~passmix.compare.ranking`: :func:`rank`, systems at a horizon with
  simultaneous and rank intervals and the probability of being best (its
  methods, too, are objects: ``PooledRanking``, ``MixtureRanking``);
* :mod:`~passmix.compare.direct`: the model-free pieces (per-task unbiased
  values, the multiplier-bootstrap sup-t band).

The package is callable: ``passmix.compare(data, ...)`` is
:func:`passmix.compare.compare`, while ``passmix.compare.<name>`` still
reaches everything listed here.
"""

from .._lazy import make_callable
from .methods import DirectMethod, MixtureMethod, PooledMethod, PosteriorMethod
from .paired import COMPARE_METHODS, compare
from .ranking import RANK_METHODS, Ranking, rank
from .result import Comparison

__all__ = ["COMPARE_METHODS", "RANK_METHODS", "Comparison", "DirectMethod", "MixtureMethod",
           "PooledMethod", "PosteriorMethod", "Ranking", "compare", "rank"]

make_callable(__name__, compare)
