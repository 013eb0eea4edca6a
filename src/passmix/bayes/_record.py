"""What passmix records in the DataTree of its draws, shared by both models' modules."""

from __future__ import annotations

import xarray as xr

__all__ = ["METRIC_DRAWS", "METRIC_VARS", "POOLED", "SAMPLED_VARS", "has_group", "is_pooled",
           "model_kind", "system_label"]

#: Variable names of the metric draws in the posterior group, by canonical metric.
METRIC_VARS = {"pass@k": "pass_at_k", "pass^k": "pass_hat_k", "auc@k": "auc_at_k"}

#: ``posterior.attrs["passmix_model"]`` of the pooled model's draws.
POOLED = "pooled"

#: The map from a model's draws to its metric draws, by ``posterior.attrs["passmix_model"]``:
#: ``(module, function)``, the function taking ``(idata, metrics, k)`` and returning
#: ``{metric: DataArray}``. A new model with a Bayesian path adds one line here.
METRIC_DRAWS = {
    "mixture": (".stats", "mixture_metric_draws"),
    "zero_inflated": (".stats", "mixture_metric_draws"),
    POOLED: (".pooled", "pooled_metric_draws"),
}

_MIXTURE_VARS = ("logit_weights", "logit_mean_first", "log_mean_gaps", "log_concentration")
#: The posterior variables of each model's sampled coordinates, in the model's order
#: (the pooled model's centred abilities standing for its zero-sum free ones).
SAMPLED_VARS = {
    "mixture": _MIXTURE_VARS,
    "zero_inflated": _MIXTURE_VARS + ("logit_zero",),
    POOLED: ("abilities", "log_concentration", "log_slope", "difficulty_mean",
             "log_difficulty_sd", "component_logits"),
}


def has_group(idata, name: str) -> bool:
    """Whether `idata` is an ``xarray.DataTree`` with the group `name` (``posterior``, ...).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from passmix.bayes._record import has_group
    >>> tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("draw", np.ones(3))})})
    >>> has_group(tree, "posterior"), has_group(tree, "sample_stats"), has_group({}, "posterior")
    (True, False, False)
    """
    return isinstance(idata, xr.DataTree) and name in idata.children


def is_pooled(idata) -> bool:
    """Whether `idata` holds draws of the pooled model (:func:`passmix.sample_pooled`).

    Examples
    --------
    >>> from passmix.bayes._record import is_pooled
    >>> is_pooled(object())
    False
    """
    return has_group(idata, "posterior") and idata["posterior"].attrs.get("passmix_model") == POOLED


def model_kind(idata) -> str:
    """The model whose draws `idata` holds: ``posterior.attrs["passmix_model"]``
    (``"mixture"`` for draws that do not say, as those of passmix before it recorded it).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from passmix.bayes._record import model_kind
    >>> model_kind(xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("draw", np.ones(2))})}))
    'mixture'
    """
    kind = idata["posterior"].attrs.get("passmix_model", "mixture")
    if kind not in METRIC_DRAWS:
        raise ValueError(f"draws of an unknown model {kind!r}; passmix reads those of "
                         f"{', '.join(map(repr, METRIC_DRAWS))}.")
    return kind


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
