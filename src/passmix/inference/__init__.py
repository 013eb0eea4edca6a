"""Likelihood inference shared by every model: optimisation, delta and profile intervals.

* :mod:`~passmix.inference.optimize`: multi-start maximisation, Newton polish,
  observed-information covariance, selection by a criterion (one tie rule);
* :mod:`~passmix.inference.delta`: delta-method intervals from a metric's
  values, gradient and covariance, and the :class:`ConfidenceInterval` result
  (the Beta mixture's gradients are in :mod:`passmix.models.mixture.delta`);
* :mod:`~passmix.inference.profile`: profile-likelihood intervals over a
  likelihood region (:class:`LikelihoodRegion`);
* :mod:`~passmix.inference.orderings`: interval ends repaired to obey the
  orderings of the metrics in k and between them;
* :mod:`~passmix.inference.results`: :class:`LikelihoodResult`, the generic
  result a model's fit is (metrics, delta and profile intervals, summary)
  once it supplies its box, objective and metric functions;
* :mod:`~passmix.inference.shape_free`: :func:`shape_free_interval`, the
  range of a metric over every task distribution a confidence band of the
  counts allows (no model, no shape);
* :mod:`~passmix.inference.units`: :class:`UnitsResult`, the same for a model
  with a units axis (the pooled model's systems), and its :class:`Unit` view.
"""

from .delta import (ConfidenceInterval, DeltaMethodResult, IntervalEnds, delta_interval,
                    logit_wald_ends, normal_quantile, wald_edge_excess, wald_ends,
                    widen_degenerate)
from .optimize import (BOUND_TOL, Optimum, at_bound, covariance_from_information, damped_newton,
                       gradient_hessian, is_stationary, maximize, newton_polish,
                       observed_covariance, select_by_bic, select_by_criterion)
from .profile import (LikelihoodRegion, ProfileResult, extreme_on_region, profile_extremes,
                      profile_interval, repair_across_metrics)
from .results import LikelihoodResult
from .shape_free import ShapeFreeInterval, shape_free_interval
from .units import Unit, UnitsResult, with_metric_spread

__all__ = ["BOUND_TOL", "ConfidenceInterval", "DeltaMethodResult", "IntervalEnds", "LikelihoodRegion",
           "LikelihoodResult", "Optimum",
           "ProfileResult", "ShapeFreeInterval", "at_bound", "covariance_from_information", "damped_newton",
           "delta_interval", "extreme_on_region", "gradient_hessian",
           "is_stationary", "logit_wald_ends", "maximize", "newton_polish",
           "normal_quantile",
           "observed_covariance", "profile_extremes", "profile_interval",
           "repair_across_metrics", "select_by_bic", "select_by_criterion", "shape_free_interval", "Unit", "UnitsResult",
           "wald_edge_excess", "wald_ends", "widen_degenerate", "with_metric_spread"]
