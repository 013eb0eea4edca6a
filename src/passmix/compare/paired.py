"""``passmix.compare``: paired differences of systems on shared tasks, at any horizon.

Methods, side by side (``docs/results/compare/`` measures them on real data):

* ``"pooled"``: the pooled model's joint fit (:func:`passmix.fit_pooled`), any
  k. The difference's delta-method covariance over the horizons
  (:meth:`passmix.PooledFit.difference`) counts what the two systems share
  through the tasks, and gives the band its sup-t critical value; the
  intervals are the difference's profile likelihood
  (:meth:`passmix.PooledFit.difference_profile`) up to :data:`PROFILE_PAIRS`
  pairs, the delta method's beyond (or as `interval` asks).
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
  against the direct difference within the trials, :func:`pooled_check`, at
  :data:`CHECK_LEVEL`: systems that order the tasks differently, as RL
  sharpening does), intervals that take in both the pooled and the mixture
  ones. The comparison's ``info()`` says which and why, per pair in
  ``details["checks"]``.

Formulas: ``docs/formulas.md``, section 9.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from .._defaults import LEVEL
from .._validation import check_k, check_level, check_metric, check_seed, check_whole
from ..bayes._record import is_pooled
from ..data.panel import Panel, as_panel, system_name
from ..inference.delta import normal_quantile
from .direct import multiplier_band, task_values
from .result import Comparison

__all__ = ["COMPARE_METHODS", "PAIR_INTERVALS", "PROFILE_PAIRS", "check_horizons", "compare", "pooled_check",
           "systems_setup"]

#: the methods :func:`compare` offers
COMPARE_METHODS = ("auto", "pooled", "direct", "mixture", "posterior")

#: the pooled difference's intervals (:func:`compare`'s `interval`)
PAIR_INTERVALS = ("profile", "delta")

#: by default the pooled differences get profile intervals up to this many pairs, delta
#: intervals beyond (each pair's profile is searched at two levels, the band's and the
#: pointwise one)
PROFILE_PAIRS = 30

#: ``method="auto"`` refutes the pooled curve of a pair below this p-value (:func:`pooled_check`):
#: a pre-test errs toward the wider interval, so its level is liberal (in simulation 0.05
#: left 30% of "sharpened" pairs on the pooled curve, 0.2 left 20%;
#: docs/results/compare/simulated.md)
CHECK_LEVEL = 0.2

#: draws of the joint normal for the pooled band's critical value
_NORMAL_DRAWS = 20_000


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


def _pooled_band(covariance: np.ndarray, level: float, rng: np.random.Generator) -> float:
    """The `level` quantile of max_k |Z_k| / sd_k for Z ~ N(0, covariance)."""
    sd = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    live = sd > 0
    if live.sum() <= 1:
        return normal_quantile(level)
    corr = covariance[np.ix_(live, live)] / np.outer(sd[live], sd[live])
    # eigh, not cholesky: the correlation of nearby horizons is singular to rounding
    values, vectors = np.linalg.eigh(corr)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    draws = rng.standard_normal((_NORMAL_DRAWS, live.sum())) @ root.T
    return float(np.quantile(np.abs(draws).max(axis=1), level))


def _ends(estimate, se, z):
    """``estimate -+ z se`` within [-1, 1]; a column with no spread says nothing: [-1, 1]."""
    lower = np.where(se > 0, np.clip(estimate - z * se, -1.0, 1.0), -1.0)
    upper = np.where(se > 0, np.clip(estimate + z * se, -1.0, 1.0), 1.0)
    return lower, upper


def compare(data: Any, a: Hashable | None = None, b: Hashable | None = None, *, k,
            metric: str = "pass@k", method: str = "auto", interval: str | None = None,
            level: float = LEVEL, band: bool = True, seed=None, n_boot: int = 4000,
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
    method : {"auto", "pooled", "direct", "mixture", "posterior"}, default "auto"
        The pooled model's joint fit (any k); model-free per-task unbiased
        differences (k within the trials); each system's own Beta mixture,
        the intervals joined (conservative, any k); NUTS draws of the pooled
        model (:func:`passmix.sample_pooled`: credible intervals, a
        simultaneous credible band and ``P(b > a)``); or ``"auto"``: pooled up
        to 20 trials per task, the mixture beyond (see the module docstring).
    interval : {"profile", "delta"}, optional
        The pooled difference's intervals: profile likelihood
        (:meth:`passmix.PooledFit.difference_profile`; the band is the profile
        at the pointwise level of the sup-t critical value) or the delta
        method alone. Default: profile for up to :data:`PROFILE_PAIRS` pairs,
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
    given, panel, method, why = systems_setup(data, system, method, COMPARE_METHODS,
                                              fit_kwargs)
    checked = bool(why) and method == "pooled"
    pairs = _pairs(panel, a, b)
    shared = {pair: _shared(panel, *pair) for pair in pairs}
    rng = np.random.default_rng(seed)
    pair_methods = [method] * len(pairs)
    if method == "direct":
        parts = [_direct_pair(panel, ia, ib, shared[(ia, ib)], metric, k_arr, level, band,
                              n_boot, rng) for ia, ib in pairs]
        details: dict = {"n_boot": n_boot}
    elif method == "mixture":
        fits: dict = {}
        parts = [_mixture_pair(panel, ia, ib, shared[(ia, ib)], metric, k_arr, level, band,
                               fits, seed, fit_kwargs) for ia, ib in pairs]
        details = {"fits": {panel.systems[i]: f for (i, _), f in fits.items()}}
    elif method == "posterior":
        post = given if given is not None and is_pooled(given) else _sample(
            given.panel if given is not None else panel, seed, fit_kwargs)
        parts = _posterior_pairs(post, pairs, [shared[p] for p in pairs], metric, k_arr,
                                 level, band)
        details = {"posterior": post}
    else:
        fit = given if given is not None else _fit_pooled(panel, seed, fit_kwargs)
        if interval is None:
            interval = "profile" if len(pairs) <= PROFILE_PAIRS else "delta"
        details = {"fit": fit, "interval": interval}
        fits = {}
        parts, checks = [], []
        tested = [check_horizons(panel, ia, ib, shared[(ia, ib)]) if checked else None
                  for ia, ib in pairs]
        # every pair's difference at once, at the answer's horizons and the checks'
        every = np.union1d(k_arr, np.concatenate([t for t in tested if t is not None]
                                                 or [k_arr]))
        pooled = fit.differences(pairs, metric, every, [shared[p] for p in pairs])
        for n, (ia, ib) in enumerate(pairs):
            part = _pooled_pair(fit, ia, ib, shared[(ia, ib)], metric, k_arr, level, band,
                                rng, interval, tested[n], every, pooled[n])
            p_value = part.pop("p_value")
            if p_value < CHECK_LEVEL:
                # the pair's own trials refute the pooled curve: its intervals widen to take
                # in the per-system mixtures' too, which assume nothing about task order
                part = _hull(part, _mixture_pair(panel, ia, ib, shared[(ia, ib)], metric,
                                                 k_arr, level, band, fits, seed, {}))
                pair_methods[n] = "pooled+mixture"
            parts.append(part)
            checks.append({"a": panel.systems[ia], "b": panel.systems[ib], "p_value": p_value,
                           "method": pair_methods[n]})
        if checked:
            details["checks"] = pd.DataFrame(checks)
    if why:
        details["why"] = f"{method}: {why}"
        if "checks" in details:
            refuted = sum(m != "pooled" for m in pair_methods)
            details["why"] += (
                f"; no pair's trials refute the pooled curve (p >= {CHECK_LEVEL})" if not refuted
                else f"; {refuted} of {len(pairs)} pairs' trials refute the pooled curve "
                     f"(p < {CHECK_LEVEL}), and their intervals also take in the per-system "
                     "mixtures'")
    stacked = {name: np.array([part[name] for part in parts]) for name in parts[0]}
    systems = panel.systems
    return Comparison(method=method, metric=metric, k=k_arr, level=level,
                      pairs=tuple((systems[ia], systems[ib]) for ia, ib in pairs),
                      n_tasks=np.array([int(shared[p].sum()) for p in pairs]),
                      pair_methods=tuple(pair_methods), details=details, **stacked)


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


def _fit_pooled(panel: Panel, seed, fit_kwargs: dict):
    from ..models.pooled.fit import fit_pooled

    return fit_pooled(panel, seed=seed, **fit_kwargs)


def _sample(panel: Panel, seed, fit_kwargs: dict):
    from ..bayes.pooled import sample_pooled

    if not isinstance(seed, (int, np.integer)):
        raise TypeError("method='posterior' takes an int seed (it seeds PyMC's chains).")
    return sample_pooled(panel, seed=int(seed), **fit_kwargs)


def _hull(pooled: dict[str, Any], mixture: dict[str, Any]) -> dict[str, Any]:
    """Both methods' intervals and bands taken together; the mixture's estimate."""
    out = dict(mixture)
    for low, high in (("lower", "upper"), ("band_lower", "band_upper")):
        out[low] = np.fmin(pooled[low], mixture[low])
        out[high] = np.fmax(pooled[high], mixture[high])
    out["se"] = np.fmax(pooled["se"], mixture["se"])
    return out


def pooled_check(fit, panel: Panel, ia: int, ib: int, shared: np.ndarray, metric: str,
                 pooled: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """p-value of a Hausman test of the pooled difference against the direct one, within
    the trials.

    At horizons up to the fewest trials of the pair (:func:`check_horizons`),
    the direct per-task difference is unbiased whatever the model, and the
    pooled one is the more precise if the model holds, so ``H = d' (V_direct
    - V_pooled)^+ d``, d their gap, is about chi-square with as many degrees
    of freedom as the rank of ``V_direct - V_pooled``. A small p-value says
    the pair's own trials refute the pooled curve (its shared task order,
    typically), so far horizons should not lean on it. The direct variance is
    the tasks' population one, which makes the test conservative
    (``docs/results/compare/simulated.md`` gives its size and power). NaN
    where it cannot be run (fewer than 3 shared tasks). `pooled`, optional:
    the pooled difference and its covariance at those horizons, if already
    computed.
    """
    from scipy.stats import chi2

    ks = check_horizons(panel, ia, ib, shared)
    if ks is None:
        return np.nan
    m = panel.trials[:, shared]
    rows = (task_values(panel.successes[ib][shared], m[ib], metric, ks)
            - task_values(panel.successes[ia][shared], m[ia], metric, ks))
    v_direct = np.atleast_2d(np.cov(rows.T)) / rows.shape[0]
    if pooled is None:
        labels = fit.systems
        pooled = fit.difference(labels[ia], labels[ib], metric, ks, tasks=shared)[:2]
    gap = rows.mean(axis=0) - pooled[0]
    values, vectors = np.linalg.eigh(v_direct - pooled[1])
    keep = values > 1e-12 * max(values.max(), 0.0)
    if not keep.any():
        return np.nan
    statistic = float(((vectors[:, keep].T @ gap) ** 2 / values[keep]).sum())
    return float(chi2.sf(statistic, keep.sum()))


def check_horizons(panel: Panel, ia: int, ib: int, shared: np.ndarray) -> np.ndarray | None:
    """The horizons :func:`pooled_check` tests at: 1, 2, 5, 10, 20 and the pair's fewest
    trials on a shared task, up to that fewest and 20; None with fewer than 3 shared tasks."""
    if shared.sum() < 3:
        return None
    m = panel.trials[:, shared]
    fewest = int(min(m[ia].min(), m[ib].min()))
    return np.array(sorted({kv for kv in (1, 2, 5, 10, 20, fewest) if kv <= min(fewest, 20)}))


def _assemble(estimate, se, critical, level, band, value_a, value_b) -> dict[str, Any]:
    lower, upper = _ends(estimate, se, normal_quantile(level))
    if band:
        band_lower, band_upper = _ends(estimate, se, critical)
    else:
        band_lower = band_upper = np.full(estimate.shape, np.nan)
        critical = np.nan
    return {"estimate": estimate, "se": se, "lower": lower, "upper": upper,
            "band_lower": band_lower, "band_upper": band_upper, "critical": critical,
            "value_a": value_a, "value_b": value_b}


def _direct_pair(panel, ia, ib, shared, metric, k_arr, level, band, n_boot, rng):
    y, m = panel.successes[:, shared], panel.trials[:, shared]
    fewest = int(min(m[ia].min(), m[ib].min()))
    if k_arr[-1] > fewest:
        raise ValueError(
            f"k = {k_arr[-1]} exceeds the {fewest} trials that "
            f"'{system_name(panel.systems[ia if m[ia].min() <= m[ib].min() else ib])}' ran "
            f"on a task shared with "
            f"'{system_name(panel.systems[ib if m[ia].min() <= m[ib].min() else ia])}'; "
            "method='direct' needs k <= the fewest trials of the pair (method='pooled' "
            "reaches any k).")
    if shared.sum() < 2:
        raise ValueError(f"systems '{system_name(panel.systems[ia])}' and "
                         f"'{system_name(panel.systems[ib])}' share one task; a direct "
                         "comparison needs at least two.")
    value_a = task_values(y[ia], m[ia], metric, k_arr)
    value_b = task_values(y[ib], m[ib], metric, k_arr)
    rows = value_b - value_a
    if band:
        estimate, se, critical = multiplier_band(rows, level, n_boot, rng)
    else:
        estimate, se = rows.mean(axis=0), rows.std(axis=0, ddof=1) / np.sqrt(rows.shape[0])
        critical = np.nan
    return _assemble(estimate, se, critical, level, band, value_a.mean(axis=0),
                     value_b.mean(axis=0))


def _mixture_ends(fits, panel, i, shared, metric, k_arr, levels, seed, fit_kwargs):
    """System i's mixture on the `shared` tasks (fitted once per task set): the
    estimate, its delta se, and its profile ends at each of `levels`."""
    from ..data.counts import Counts
    from ..models.mixture.fit import fit

    key = (i, shared.tobytes())
    if key not in fits:
        counts = Counts(panel.successes[i][shared], panel.trials[i][shared])
        fits[key] = fit(counts, seed=seed, **fit_kwargs)
    result = fits[key]
    ends = [result.interval(metric, k_arr, lv) for lv in levels]
    return result.metric(metric, k_arr), result.standard_error(metric, k_arr), ends


def mover(est_a, ends_a, est_b, ends_b):
    """MOVER ends of ``b - a`` from each estimate's own interval (independent estimates)."""
    (lo_a, hi_a), (lo_b, hi_b) = ends_a, ends_b
    diff = est_b - est_a
    return (diff - np.hypot(est_b - lo_b, hi_a - est_a),
            diff + np.hypot(hi_b - est_b, est_a - lo_a))


def _mixture_pair(panel, ia, ib, shared, metric, k_arr, level, band, fits, seed, fit_kwargs):
    # the band: every horizon's interval at the Bonferroni level, so all K hold at `level`
    levels = [level] + ([1.0 - (1.0 - level) / k_arr.size] if band else [])
    est_a, se_a, ends_a = _mixture_ends(fits, panel, ia, shared, metric, k_arr, levels, seed,
                                        fit_kwargs)
    est_b, se_b, ends_b = _mixture_ends(fits, panel, ib, shared, metric, k_arr, levels, seed,
                                        fit_kwargs)
    out = _assemble(est_b - est_a, np.hypot(se_a, se_b), np.nan, level, False, est_a, est_b)
    out["lower"], out["upper"] = mover(est_a, ends_a[0], est_b, ends_b[0])
    if band:
        out["band_lower"], out["band_upper"] = mover(est_a, ends_a[1], est_b, ends_b[1])
        out["critical"] = normal_quantile(levels[1])
    return out


def _pooled_pair(fit, ia, ib, shared, metric, k_arr, level, band, rng, interval, tested,
                 every, pooled) -> dict[str, Any]:
    """The pooled difference of one pair from `pooled` (:meth:`PooledFit.differences` at the
    horizons `every`), and its check's p-value at the horizons `tested` (NaN if None)."""
    estimate, covariance, values = pooled
    take = np.searchsorted(every, k_arr)
    covariance_k = covariance[np.ix_(take, take)]
    se = np.sqrt(np.maximum(np.diag(covariance_k), 0.0))
    critical = _pooled_band(covariance_k, level, rng) if band else np.nan
    out = _assemble(estimate[take], se, critical, level, band, values[0, take],
                    values[1, take])
    if interval == "profile":
        labels = fit.systems

        def ends(at):
            return fit.difference_profile(labels[ia], labels[ib], metric, k_arr, at,
                                          tasks=shared)

        out["lower"], out["upper"] = ends(level)
        if band:
            # the band: the profile at the pointwise level of the sup-t critical value,
            # never inside the pointwise intervals
            band_lower, band_upper = ends(min(float(2 * ndtr(critical) - 1), 1 - 1e-12))
            out["band_lower"] = np.minimum(band_lower, out["lower"])
            out["band_upper"] = np.maximum(band_upper, out["upper"])
    out["p_value"] = np.nan
    if tested is not None:
        at = np.searchsorted(every, tested)
        out["p_value"] = pooled_check(fit, fit.panel, ia, ib, shared, metric,
                                      (estimate[at], covariance[np.ix_(at, at)]))
    return out


def _posterior_pairs(post, pairs, masks, metric, k_arr, level, band) -> list[dict[str, Any]]:
    """Each pair's difference from the posterior draws: the mean, equal-tailed credible
    intervals, a simultaneous credible band (sup-t over the draws) and P(b > a)."""
    from ..bayes.pooled import pair_difference_draws

    diffs, values = pair_difference_draws(post, metric, k_arr, pairs, masks)
    tail = (1 - level) / 2
    parts = []
    for n in range(len(pairs)):
        d = diffs[:, n]                                                  # (draws, K)
        estimate, se = d.mean(axis=0), d.std(axis=0, ddof=1)
        lower, upper = np.quantile(d, [tail, 1 - tail], axis=0)
        out = _assemble(estimate, se, np.nan, level, False, values[:, n, 0].mean(axis=0),
                        values[:, n, 1].mean(axis=0))
        out["lower"], out["upper"] = lower, upper
        if band:
            # the share `level` of the draws whose whole curve lies within mean -+ c sd
            live = se > 0
            scaled = np.abs(d[:, live] - estimate[live]) / se[live]
            critical = float(np.quantile(scaled.max(axis=1), level)) if live.any() else 0.0
            out["band_lower"], out["band_upper"] = _ends(estimate, se, critical)
            out["band_lower"] = np.minimum(out["band_lower"], lower)
            out["band_upper"] = np.maximum(out["band_upper"], upper)
            out["critical"] = critical
        out["p_b_better"] = (d > 0).mean(axis=0)
        parts.append(out)
    return parts
