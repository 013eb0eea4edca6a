"""passmix: low-budget evaluation of stochastic AI systems.

Fit a Beta mixture to per-task success counts and read off Pass@k, Pass^k and
AUC@k at any horizon, with profile-likelihood or delta-method intervals, next
to the naive and unbiased estimators and any estimator registered with
:func:`register_estimator`. Many systems on shared tasks: :func:`fit_pooled`.
Spend a budget of attempts well and stop when precise enough: :func:`evaluate`
(samplers and the Pass@k scaling baselines in :mod:`passmix.scaling`). The
distribution of scores across prompts or other configurations:
:func:`sensitivity` (a callable module: :mod:`passmix.sensitivity`). Harness
logs (inspect_ai, EvalPlus, tau-bench, lm-eval): :mod:`passmix.readers`, loaded
on first use.
"""

__version__ = "0.1.0"

# Every public name is loaded on first use (SPEC 1, as scipy does): ``import
# passmix`` costs no more than Python itself, and scipy.special, scipy.optimize,
# pandas and, for the Bayesian path, PyMC and ArviZ are imported by the first
# call that needs them. ``from passmix import fit`` imports what ``fit`` needs.
_LAZY = {
    **dict.fromkeys(("METRICS", "DegenerateDataWarning", "FitWarning", "PosteriorWarning"),
                    "._validation"),
    **dict.fromkeys(("Counts", "read_counts", "read_trials"), ".data"),
    "BetaMixture": ".distributions",
    **dict.fromkeys(("combinatorial_estimate", "direct_estimate", "naive_estimate"),
                    ".estimators"),
    **dict.fromkeys(("ConfidenceInterval", "DeltaMethodResult", "delta_method"),
                    ".intervals"),
    **dict.fromkeys(("auc_at_k", "metric_value", "pass_at_k", "pass_hat_k"), ".metrics"),
    **dict.fromkeys(("MixtureFit", "fit"), ".mixture"),
    "Panel": ".panel",
    **dict.fromkeys(("PooledFit", "fit_pooled"), ".pooled"),
    **dict.fromkeys(("estimator_names", "register_estimator"), ".registry"),
    **dict.fromkeys(("DirectEstimate", "FittedResult"), ".results"),
    "estimate_table": ".tables",
    **dict.fromkeys(("compare_intervals", "credible_interval", "posterior_metrics", "sample"),
                    ".posterior"),
    **dict.fromkeys(("EvaluationResult", "evaluate"), ".scaling.loop"),
    "sample_pooled": ".pooled_posterior",
}
# Submodules reachable as attributes (``passmix.readers.read_log``) once asked for.
_LAZY_MODULES = ("readers", "sensitivity")


def __getattr__(name: str):
    if name in _LAZY or name in _LAZY_MODULES:
        import importlib

        module = importlib.import_module(_LAZY.get(name, "." + name), __name__)
        value = module if name in _LAZY_MODULES else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'passmix' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))


__all__ = [
    "METRICS",
    "BetaMixture",
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
    "auc_at_k",
    "combinatorial_estimate",
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
    "read_counts",
    "read_trials",
    "readers",
    "register_estimator",
    "sample",
    "sample_pooled",
    "sensitivity",
]
