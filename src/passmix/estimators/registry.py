"""The estimator registry: every method that tables, the CLI and the harness can run.

An estimator is a name and a function ``(counts, **options) -> FittedResult``
(see :mod:`passmix.estimators.base`). Registering one is all it takes for it to
appear in :func:`passmix.tables.estimate_table`, ``passmix estimate
--method`` and ``passmix experiment repeated``. The options passed are
``seed``, ``max_components`` and ``n_init``; an estimator takes the ones it
names in ``options`` and is called without the others.

A *joint* estimator fits all groups at once: it is called as
``fit(groups, **options)`` with the mapping of group key to Counts and
returns a mapping of the same keys to fitted results. It runs only where at
least two groups share a task (``"all"`` leaves it out otherwise).

Built in, in this order: ``mixture`` (:func:`passmix.fit`), ``naive`` and
``combinatorial`` (:class:`passmix.estimators.direct.DirectEstimate`), the joint
``pooled`` (:func:`passmix.fit_pooled`), then, left out by ``"all"`` (name them
to run them), ``zi_mixture`` (:func:`passmix.fit` with ``zero_inflated="auto"``:
an atom at 0 where BIC prefers it) and the Pass@k scaling predictors: ``beta_binomial`` (the
core fit with H = 1), ``loglog``, ``discretized_beta`` and
``scaled_beta_binomial`` (:mod:`passmix.estimators.predictors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .._defaults import POOLED_MAX_TRIALS
from ..data.counts import Counts
from ..models.mixture.fit import fit
from ..models.pooled.fit import fit_pooled_groups
from .direct import DirectEstimate
from .._validation import shown

__all__ = ["Estimator", "auto_method", "estimator_names", "get_estimator", "register_estimator",
           "resolve_methods", "shares_tasks", "unregister_estimator"]

#: The options the callers of an estimator may pass.
OPTIONS = ("seed", "max_components", "n_init")


@dataclass(frozen=True)
class Estimator:
    """A registered estimator.

    Attributes
    ----------
    name : str
        Its name in tables and on the command line.
    fit : callable
        ``fit(counts, **options) -> FittedResult``.
    options : tuple of str
        The options of :data:`OPTIONS` it takes.
    description : str
        One line for ``--help``.
    joint : bool
        Fits all groups at once (see the module docstring).
    in_all : bool
        Chosen by ``"all"`` (the scaling baselines are not: name them).
    """

    name: str
    fit: Callable[..., Any]
    options: tuple[str, ...] = ()
    description: str = ""
    joint: bool = False
    in_all: bool = True

    def __call__(self, counts: Counts | Mapping[tuple, Counts], **options: Any) -> Any:
        """Fit `counts` (all groups' for a joint estimator), passing on the options it takes."""
        return self.fit(counts, **{k: v for k, v in options.items() if k in self.options})


_REGISTRY: dict[str, Estimator] = {}


def register_estimator(name: str, fit: Callable[..., Any], *,
                       options: Sequence[str] = (), description: str = "",
                       replace: bool = False, joint: bool = False,
                       in_all: bool = True) -> Estimator:
    """Add an estimator to the registry.

    Parameters
    ----------
    name : str
        Lower-case name, not ``"all"``.
    fit : callable
        ``fit(counts, **options)`` returning a :class:`~passmix.estimators.base.FittedResult`.
    options : sequence of str, default ()
        Which of ``seed``, ``max_components``, ``n_init`` `fit` takes.
    description : str, default ""
        One line for the command line's help.
    replace : bool, default False
        Replace an estimator of the same name instead of raising.
    joint : bool, default False
        `fit` takes every group's counts at once (a mapping of group key to
        Counts) and returns a mapping of the same keys to fitted results.
    in_all : bool, default True
        ``"all"`` selects it; otherwise it runs only when named.

    Returns
    -------
    Estimator

    Examples
    --------
    >>> from passmix.estimators.registry import estimator_names, register_estimator, unregister_estimator
    >>> from passmix.estimators import DirectEstimate
    >>> _ = register_estimator("plug-in", lambda counts: DirectEstimate(counts, "naive"))
    >>> estimator_names()[-1]
    'plug-in'
    >>> unregister_estimator("plug-in")
    """
    if not isinstance(name, str) or not name or name != name.strip().lower() or name == "all":
        raise ValueError(f"an estimator's name must be a non-empty lower-case string other "
                         f"than 'all', got {shown(name)}.")
    if not callable(fit):
        raise TypeError(f"fit must be callable, got {type(fit).__name__}.")
    unknown = [o for o in options if o not in OPTIONS]
    if unknown:
        raise ValueError(f"unknown options {unknown}; an estimator may take {list(OPTIONS)}.")
    if name in _REGISTRY and not replace:
        raise ValueError(f"an estimator named {name!r} is registered already; pass "
                         f"replace=True to replace it.")
    est = Estimator(name, fit, tuple(options), description, bool(joint), bool(in_all))
    _REGISTRY[name] = est
    return est


def unregister_estimator(name: str) -> None:
    """Remove an estimator (the built-in ones cannot be removed)."""
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is built in and cannot be removed.")
    _REGISTRY.pop(name, None)


def estimator_names() -> list[str]:
    """Names of the registered estimators, built-in ones first."""
    return list(_REGISTRY)


def get_estimator(name: str) -> Estimator:
    """The estimator registered as `name`; ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown method {name!r}; expected one of "
                         f"{', '.join(_REGISTRY)} or 'all'.") from None


def resolve_methods(method: str | Sequence[str]) -> list[str]:
    """Validate method names (``"all"`` for every one), in registry order."""
    asked = [method] if isinstance(method, str) else list(method)
    if not asked:
        raise ValueError("method is empty; give at least one of "
                         + ", ".join(_REGISTRY) + ".")
    chosen: set[str] = set()
    for name in asked:
        key = name.lower() if isinstance(name, str) else name
        if key == "all":
            chosen.update(n for n, e in _REGISTRY.items() if e.in_all)
        else:
            chosen.add(get_estimator(key).name)
    return [name for name in _REGISTRY if name in chosen]


register_estimator("mixture", fit, options=("seed", "max_components", "n_init"),
                   description="the Beta mixture chosen by BIC (passmix.fit)")
register_estimator("naive", lambda counts: DirectEstimate(counts, "naive"),
                   description="the plug-in estimator")
register_estimator("combinatorial", lambda counts: DirectEstimate(counts, "combinatorial"),
                   description="the unbiased estimator, only for k <= m")
register_estimator("pooled", fit_pooled_groups, options=("seed",), joint=True,
                   description="one model of all groups on their shared tasks "
                               "(passmix.fit_pooled)")
register_estimator("zi_mixture", partial(fit, zero_inflated="auto"),
                   options=("seed", "max_components", "n_init"), in_all=False,
                   description="the Beta mixture with an atom at 0 (tasks never solved) where BIC "
                               "prefers it (passmix.fit(zero_inflated='auto'))")


def _fit_beta_binomial(counts, seed=None, n_init: int = 10):
    return fit(counts, n_components=1, seed=seed, n_init=n_init)


def _scaling(name: str):
    """A scaling baseline, imported on first use (scipy.optimize stays out of ``import passmix``)."""
    def fit_baseline(counts):
        from . import predictors

        return getattr(predictors, f"fit_{name}")(counts)

    fit_baseline.__name__ = f"fit_{name}"
    return fit_baseline


register_estimator("beta_binomial", _fit_beta_binomial, options=("seed", "n_init"),
                   in_all=False,
                   description="the core fit with one component (the second paper's predictor)")
register_estimator("loglog", _scaling("loglog"), in_all=False,
                   description="scaling baseline: log-log regression of Pass@k, clipped at 1")
register_estimator("discretized_beta", _scaling("discretized_beta"), in_all=False,
                   description="scaling baseline: Schaeffer et al.'s discretized scaled Beta")
register_estimator("scaled_beta_binomial", _scaling("scaled_beta_binomial"), in_all=False,
                   description="scaling baseline: scaled beta-binomial by maximum likelihood")
_BUILT_IN = tuple(_REGISTRY)


def auto_method(groups: Mapping[tuple, Counts]) -> tuple[str, str]:
    """The estimator ``method="auto"`` picks for `groups`, and why.

    The pooled model where at least two groups share a task and the data are
    within what its intervals were checked to cover on real data (a median of
    at most :data:`passmix._defaults.POOLED_MAX_TRIALS` trials per task run,
    ``docs/results/pooled_intervals.md``); the per-group mixture otherwise.
    Where it says pooled, :func:`passmix.estimate_table` widens the pooled
    intervals beyond each group's trials to hold the group's own mixture's;
    where it says mixture and groups share tasks, the other way round.

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.estimators.registry import auto_method
    >>> auto_method({("a",): Counts([1, 0], [5, 5], tasks=["x", "y"]),
    ...              ("b",): Counts([3, 1], [5, 5], tasks=["x", "y"])})[0]
    'pooled'
    """
    if len(groups) < 2 or not shares_tasks(groups):
        return "mixture", "no two groups share a task"
    trials = np.concatenate([c.trials[c.trials > 0] for c in groups.values()])
    median = float(np.median(trials))
    if median > POOLED_MAX_TRIALS:
        return "mixture", (
            f"{len(groups)} groups share tasks, but at a median of {median:g} trials per task "
            f"the pooled model's intervals under-cover on real data (they were checked to "
            f"cover up to {POOLED_MAX_TRIALS})")
    return "pooled", (f"{len(groups)} groups share tasks, with a median of {median:g} trials "
                      f"per task")


def shares_tasks(groups: Mapping[tuple, Counts]) -> bool:
    """Whether at least two groups ran a task of the same label."""
    seen: set = set()
    for counts in groups.values():
        run = set(counts.tasks[counts.trials > 0].tolist())
        if seen & run:
            return True
        seen |= run
    return False
