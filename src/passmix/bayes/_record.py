"""What passmix records in the InferenceData of its draws, shared by both models' modules."""

from __future__ import annotations

__all__ = ["METRIC_VARS", "POOLED", "is_pooled", "system_label"]

#: Variable names of the metric draws in the posterior group, by canonical metric.
METRIC_VARS = {"pass@k": "pass_at_k", "pass^k": "pass_hat_k", "auc@k": "auc_at_k"}

#: ``posterior.attrs["passmix_model"]`` of the pooled model's draws.
POOLED = "pooled"


def is_pooled(idata) -> bool:
    """Whether `idata` holds draws of the pooled model (:func:`passmix.sample_pooled`).

    Examples
    --------
    >>> from passmix.bayes._record import is_pooled
    >>> is_pooled(object())
    False
    """
    posterior = getattr(idata, "posterior", None) if hasattr(idata, "groups") else None
    return posterior is not None and posterior.attrs.get("passmix_model") == POOLED


def system_label(label) -> str:
    """A system's label as the draws record it: a string (a one-element group key is its
    element, a longer one its elements joined by "/"), so the record can be saved.

    Examples
    --------
    >>> from passmix.bayes._record import system_label
    >>> system_label(("Pythia 1B",)), system_label(("gpt", "temp 1")), system_label(3)
    ('Pythia 1B', 'gpt/temp 1', '3')
    """
    if isinstance(label, tuple):
        return "/".join(str(part) for part in label)
    return str(label)
