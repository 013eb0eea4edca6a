"""Pass@k scaling prediction: samplers, the evaluation loop, simulated systems, the second paper's predictors.

* :mod:`~passmix.scaling.samplers`: which tasks to attempt next;
* :mod:`~passmix.scaling.loop`: :func:`evaluate`, the loop around the user's system;
* the log-log, discretized-Beta and scaled beta-binomial baselines
  (:mod:`passmix.estimators.predictors`, registered estimators; the
  beta-binomial itself is the core fit with H = 1);
* :mod:`~passmix.scaling.simulate`: oracle and replayed systems for experiments.
"""

from ..estimators.predictors import (DiscretizedBetaFit, LogLogFit, ScaledBetaBinomialFit,
                                     fit_discretized_beta, fit_loglog, fit_scaled_beta_binomial,
                                     log_scaled_moment, scaled_beta_binomial_logpmf)
from .loop import EvaluationError, EvaluationResult, evaluate
from .samplers import (SAMPLERS, AdaptiveSampler, DynamicSampler, Sampler, UniformSampler,
                       make_sampler)
from .simulate import OracleSystem, ReplaySystem, oracle_population, spend

__all__ = ["SAMPLERS", "AdaptiveSampler", "DiscretizedBetaFit", "DynamicSampler",
           "EvaluationError", "EvaluationResult", "LogLogFit", "evaluate",
           "OracleSystem", "ReplaySystem", "Sampler", "ScaledBetaBinomialFit", "UniformSampler",
           "fit_discretized_beta", "fit_loglog", "fit_scaled_beta_binomial", "log_scaled_moment",
           "make_sampler", "oracle_population", "scaled_beta_binomial_logpmf", "spend"]
