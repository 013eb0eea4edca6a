"""passmix: low-budget evaluation of stochastic AI systems.

Fit a Beta mixture to per-task success counts and read off Pass@k, Pass^k and
AUC@k at any horizon, with profile-likelihood or delta-method intervals, next
to the naive and unbiased estimators and any estimator registered with
:func:`register_estimator`. Many systems on shared tasks: :func:`fit_pooled`; paired differences and
their intervals at any horizon: :func:`compare` (a callable module:
:mod:`passmix.compare`), and rankings: :func:`rank`.
Spend a budget of attempts well and stop when precise enough: :func:`evaluate`
(samplers and the Pass@k scaling baselines in :mod:`passmix.scaling`). The
distribution of scores across prompts or other configurations:
:func:`sensitivity` (a callable module: :mod:`passmix.sensitivity`). Harness
logs (inspect_ai, EvalPlus, tau-bench, lm-eval): :mod:`passmix.data.readers`, loaded
on first use.
"""

__version__ = "0.1.0"

# Every public name is loaded on first use (SPEC 1, as scipy does): ``import
# passmix`` costs no more than Python itself, and scipy.special, scipy.optimize,
# pandas and, for the Bayesian path, PyMC and ArviZ are imported by the first
# call that needs them. ``from passmix import fit`` imports what ``fit`` needs.
from ._lazy import attach

__getattr__, __dir__, _ = attach(__name__, {
    "._validation": ["METRICS", "DegenerateDataWarning", "FitWarning", "PosteriorWarning"],
    ".data.counts": ["Counts"],
    ".data.read": ["read_counts", "read_trials"],
    ".data.panel": ["Panel"],
    ".distributions": ["BetaMixture"],
    ".estimators.base": ["FittedResult"],
    ".estimators.direct": ["DirectEstimate", "combinatorial_estimate", "direct_estimate",
                           "naive_estimate"],
    ".estimators.registry": ["estimator_names", "register_estimator"],
    ".inference.delta": ["ConfidenceInterval", "DeltaMethodResult"],
    ".inference.shape_free": ["ShapeFreeInterval", "shape_free_interval"],
    ".metrics": ["auc_at_k", "metric_value", "pass_at_k", "pass_hat_k"],
    ".models.mixture.delta": ["delta_method"],
    ".models.mixture.fit": ["MixtureFit", "fit"],
    ".models.pooled.fit": ["fit_pooled"],
    ".models.pooled.result": ["PooledFit"],
    ".models.zero_inflated.fit": ["ZeroInflatedFit"],
    ".tables": ["estimate_table"],
    ".bayes.sample": ["sample"],
    ".bayes.stats": ["compare_intervals", "credible_interval", "posterior_metrics"],
    ".bayes.pooled": ["sample_pooled"],
    ".scaling.loop": ["EvaluationResult", "evaluate"],
    ".compare.result": ["Comparison"],
    ".compare.ranking": ["Ranking", "rank"],
}, submodules={"readers": ".data.readers",
               **{name: "." + name for name in ("bayes", "compare", "data", "estimators", "experiments",
                                                "inference", "integrations", "models", "plots",
                                                "scaling", "sensitivity")}})

__all__ = [
    "METRICS",
    "BetaMixture",
    "Comparison",
    "ConfidenceInterval",
    "Counts",
    "DegenerateDataWarning",
    "DeltaMethodResult",
    "DirectEstimate",
    "EvaluationResult",
    "FittedResult",
    "FitWarning",
    "MixtureFit",
    "Panel",
    "PooledFit",
    "PosteriorWarning",
    "Ranking",
    "ShapeFreeInterval",
    "ZeroInflatedFit",
    "auc_at_k",
    "combinatorial_estimate",
    "compare",
    "compare_intervals",
    "credible_interval",
    "delta_method",
    "direct_estimate",
    "estimate_table",
    "estimator_names",
    "evaluate",
    "fit",
    "fit_pooled",
    "metric_value",
    "naive_estimate",
    "pass_at_k",
    "pass_hat_k",
    "posterior_metrics",
    "rank",
    "read_counts",
    "read_trials",
    "readers",
    "register_estimator",
    "sample",
    "sample_pooled",
    "sensitivity",
    "shape_free_interval",
]
