"""``passmix.compare``: paired differences of systems on shared tasks, at any horizon.

Methods, side by side (``docs/results/compare/`` measures them on real data):

* ``"pooled"``: the pooled model's joint fit (:func:`passmix.fit_pooled`), any
  k. The difference's delta-method covariance over the horizons
  (:meth:`passmix.PooledFit.difference`) counts what the two systems share
  through the tasks, and gives the band its sup-t critical value; the
  intervals are the difference's profile likelihood
  (:meth:`passmix.PooledFit.difference_profile`) up to
  :data:`~passmix.compare.methods.PROFILE_PAIRS` pairs, the delta method's beyond (or as `interval` asks).
* ``"posterior"``: NUTS draws of the pooled model
  (:func:`passmix.sample_pooled`, or its draws passed as `data`): the
  difference per draw, credible intervals, a simultaneous credible band and
  the probability that b is better.
* ``"direct"``: model-free, for k up to the fewest trials of the pair: per-task
  unbiased differences and a Gaussian multiplier-bootstrap sup-t band
  (:mod:`passmix.compare.direct`).
* ``"mixture"``: each system's own Beta mixture (:func:`passmix.fit`) on the
  pair's shared tasks, any k, the two profile intervals joined by MOVER
  (Newcombe's method of variance estimates recovery) as if independent: the
  systems' positive correlation through the tasks only widens it, so it is
  conservative, and it holds whatever order the systems give the tasks; the
  band joins intervals at the Bonferroni level over the horizons.
* ``"auto"`` (the default): ``"pooled"`` where it was checked to cover on real
  data (at most :data:`passmix._defaults.POOLED_MAX_TRIALS` trials per task, as
  ``passmix estimate`` decides), ``"mixture"`` beyond; and, pair by pair,
  where the pair's own trials refute the pooled curve (a Hausman test
  against the direct difference within the trials,
  :func:`~passmix.compare.methods.pooled_check`, at
  :data:`~passmix.compare.methods.CHECK_LEVEL`: systems that order the tasks differently, as RL
  sharpening does), intervals that take in both the pooled and the mixture
  ones. The comparison's ``info()`` says which and why, per pair in
  ``details["checks"]``.

Each method is an object of :mod:`passmix.compare.methods` (``PooledMethod``,
``PosteriorMethod``, ``DirectMethod``, ``MixtureMethod``): `method` takes its
name or the object itself, with its options set.

Formulas: ``docs/formulas.md``, section 9.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import combinations
from typing import Any

import numpy as np

from .._defaults import COMPARE_METHODS, LEVEL
from .._validation import check_k, check_level, check_metric, check_seed, check_whole
from ..bayes._record import is_pooled
from ..data.panel import Panel, as_panel, system_name
from .methods import CHECK_LEVEL, PAIR_INTERVALS, PairMethod, PairSetup, pair_method
from .result import Comparison

__all__ = ["COMPARE_METHODS", "compare", "systems_setup"]


def _pairs(panel: Panel, a, b) -> list[tuple[int, int]]:
    if (a is None) != (b is None):
        raise ValueError("give both a and b to compare one pair, or neither to compare "
                         "every pair.")
    if a is not None:
        ia, ib = panel.index(a), panel.index(b)
        if ia == ib:
            raise ValueError(f"a and b are the same system, '{system_name(panel.systems[ia])}'.")
        return [(ia, ib)]
    if panel.shape[0] < 2:
        raise ValueError("comparing needs at least two systems; the data have one.")
    return list(combinations(range(panel.shape[0]), 2))


def _shared(panel: Panel, ia: int, ib: int) -> np.ndarray:
    shared = (panel.trials[ia] > 0) & (panel.trials[ib] > 0)
    if not shared.any():
        raise ValueError(f"systems '{system_name(panel.systems[ia])}' and "
                         f"'{system_name(panel.systems[ib])}' share no task.")
    return shared


def compare(data: Any, a: Hashable | None = None, b: Hashable | None = None, *, k,
            metric: str = "pass@k", method: str | PairMethod = "auto",
            interval: str | None = None, level: float = LEVEL, band: bool = True, seed=None, n_boot: int = 4000,
            system: Hashable | None = None, **fit_kwargs) -> Comparison:
    """Compare systems on the tasks they share: ``M_b(k) - M_a(k)`` with intervals and a band.

    Parameters
    ----------
    data : Panel, mapping of Counts, DataFrame, path, PooledFit or pooled posterior
        The systems' counts, as :func:`passmix.fit_pooled` takes them (a table
        or file with its `system` column); or a fitted
        :class:`~passmix.PooledFit`, whose fit ``method="pooled"`` then
        reuses; or the draws of :func:`passmix.sample_pooled`, which
        ``method="posterior"`` (the default for them) then reads.
    a, b : hashable, optional
        One pair (the difference is b minus a). Neither: every pair of
        systems, a before b in the data's order, from one joint fit.
    k : int or sequence of int
        Horizons (>= 1). With ``method="direct"``, at most the fewest trials
        either system of a pair ran on a shared task.
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
    method : {"auto", "pooled", "direct", "mixture", "posterior"} or PairMethod, default "auto"
        The pooled model's joint fit (any k); model-free per-task unbiased
        differences (k within the trials); each system's own Beta mixture,
        the intervals joined (conservative, any k); NUTS draws of the pooled
        model (:func:`passmix.sample_pooled`: credible intervals, a
        simultaneous credible band and ``P(b > a)``); or ``"auto"``: pooled up
        to 20 trials per task, the mixture beyond, spanning the pooled
        model's differences beyond the pair's trials (see the module
        docstring).
        Or a method object of :mod:`passmix.compare.methods` with its options
        (``PooledMethod(interval="delta")``); `interval` and `n_boot` then do
        not apply.
    interval : {"profile", "delta"}, optional
        The pooled difference's intervals: profile likelihood
        (:meth:`passmix.PooledFit.difference_profile`; the band is the profile
        at the pointwise level of the sup-t critical value) or the delta
        method alone. Default: profile for up to
        :data:`~passmix.compare.methods.PROFILE_PAIRS` pairs,
        delta beyond (a profile costs a few seconds per pair, where the
        delta method costs milliseconds; a 43-model leaderboard has 903
        pairs).
    level : float, default 0.95
        Level of the pointwise intervals and of the simultaneous band.
    band : bool, default True
        Compute the simultaneous band over the horizons `k`; signs are then
        certified by the band.
    seed : int or numpy.random.Generator, optional
        Seed of the band's Monte Carlo (multiplier bootstrap or normal draws);
        None means 0, so a comparison is reproducible. Also seeds the pooled
        fit's starts and the posterior's chains (an int there).
    n_boot : int, default 4000
        Multiplier-bootstrap draws for the direct band.
    system : hashable, optional
        The system column of a table or file.
    **fit_kwargs
        Passed to the model's fit (:func:`passmix.fit_pooled`,
        :func:`passmix.fit` with ``method="mixture"``, or
        :func:`passmix.sample_pooled` with ``method="posterior"``: ``draws``,
        ``chains``, ``tune``, ...), and column names to the reader.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        An unknown method, interval or metric, bad k or level, one of a and b
        without the other, a pair that shares no task, or k beyond the trials
        with ``method="direct"``.
    KeyError
        A system that is not in the data.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(1.0, 1.5, size=80)
    >>> p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.5]]) - d)))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["old", "new"])
    >>> result = passmix.compare(panel, "old", "new", k=[1, 10], method="direct")
    >>> table = result.summary()
    >>> table[["a", "b", "k", "certified"]].to_dict("list")
    {'a': ['old', 'old'], 'b': ['new', 'new'], 'k': [1, 10], 'certified': [1, 1]}
    """
    metric = check_metric(metric)
    k_arr, _ = check_k(k)
    if np.any(np.diff(k_arr) <= 0):
        raise ValueError(f"k must be increasing without repeats, got {k_arr.tolist()}.")
    level = check_level(level)
    if interval is not None and interval not in PAIR_INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; expected one of "
                         f"{', '.join(map(repr, PAIR_INTERVALS))}.")
    n_boot = check_whole(n_boot, "n_boot", minimum=100)
    seed = 0 if seed is None else check_seed(seed)
    chosen = method if isinstance(method, PairMethod) else None
    given, panel, name, why = systems_setup(
        data, system, method.name if chosen is not None else method, COMPARE_METHODS,
        fit_kwargs)
    if chosen is None:
        # "auto" that chose the pooled model checks each pair against its own trials
        chosen = pair_method(name, interval=interval, n_boot=n_boot,
                             check=bool(why) and name == "pooled",
                             pooled_beyond=bool(why) and name == "mixture")
    pairs = _pairs(panel, a, b)
    setup = PairSetup(panel=panel, pairs=pairs, shared=[_shared(panel, *p) for p in pairs],
                      metric=metric, k=k_arr, level=level, band=band, seed=seed,
                      rng=np.random.default_rng(seed), fit_kwargs=fit_kwargs, given=given)
    answer = chosen(setup)
    details = dict(answer.details)
    if why:
        details["why"] = f"{name}: {why}"
        if "checks" in details:
            refuted = sum(m != "pooled" for m in answer.pair_methods)
            details["why"] += (
                f"; no pair's trials refute the pooled curve (p >= {CHECK_LEVEL})" if not refuted
                else f"; {refuted} of {len(pairs)} pairs' trials refute the pooled curve "
                     f"(p < {CHECK_LEVEL}), and their intervals also take in the per-system "
                     "mixtures'")
    if "pooled_beyond" in details:
        details["why"] += (f"; at k = {', '.join(map(str, details['pooled_beyond']))}, beyond "
                           "the pairs' trials, the intervals also take in the pooled model's "
                           "differences (task difficulties shared by all systems)")
    stacked = {key: np.array([part[key] for part in answer.parts]) for key in answer.parts[0]}
    systems = panel.systems
    return Comparison(method=name, metric=metric, k=k_arr, level=level,
                      pairs=tuple((systems[ia], systems[ib]) for ia, ib in pairs),
                      n_tasks=np.array([int(m.sum()) for m in setup.shared]),
                      pair_methods=tuple(answer.pair_methods), details=details, **stacked)


def _is_pooled_fit(data: Any) -> bool:
    from ..models.pooled.result import PooledFit

    return isinstance(data, PooledFit)


def systems_setup(data: Any, system: Hashable | None, method: str, methods: tuple,
                  fit_kwargs: dict) -> tuple[Any, Panel, str, str]:
    """What :func:`compare` and :func:`passmix.rank` start from.

    Checks `method` against `methods`; takes a fitted :class:`~passmix.PooledFit` or
    pooled posterior as given (no fit arguments then), else reads `data` as a
    Panel (the reader's column names popped from `fit_kwargs`); resolves
    ``"auto"``. Returns ``(given, panel, method, why)``, `why` empty unless
    ``"auto"`` chose.
    """
    from ..bayes.pooled import pooled_fit

    if method not in methods:
        raise ValueError(f"unknown method {method!r}; expected one of "
                         f"{', '.join(map(repr, methods))}.")
    given = data if _is_pooled_fit(data) or is_pooled(data) else None
    if given is not None and fit_kwargs and method != "posterior":
        raise ValueError("fit_kwargs apply to a new fit; data is already fitted.")
    if given is None:
        panel = as_panel(data, system, **{key: fit_kwargs.pop(key) for key in
                                          ("task", "successes", "trials", "outcome")
                                          if key in fit_kwargs})
    else:
        panel = given.panel if _is_pooled_fit(given) else pooled_fit(given).panel
    why = ""
    if method == "auto":
        from ..estimators.registry import auto_method

        if given is None:
            method, why = auto_method({(label,): panel.counts(label) for label in panel.systems})
        elif is_pooled(given):
            method, why = "posterior", "draws of the pooled model were given"
        else:
            method, why = "pooled", "a pooled fit was given"
    elif is_pooled(given) and method != "posterior":
        raise ValueError(f"draws of the pooled model take method 'posterior' (or 'auto'), "
                         f"not {method!r}.")
    if panel.shape[0] < 2:
        raise ValueError("comparing needs at least two systems; the data have one.")
    return given, panel, method, why
