"""``passmix.compare``: paired differences of systems on shared tasks, at any horizon.

Methods, side by side (``docs/results/compare/`` measures them on real data):

* ``"pooled"``: the pooled model's joint fit (:func:`passmix.fit_pooled`), any
  k. The difference's delta-method covariance over the horizons
  (:meth:`passmix.PooledFit.difference`) counts what the two systems share
  through the tasks; the band is a sup-t band from that covariance.
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

from .._defaults import LEVEL
from .._validation import check_k, check_level, check_metric, check_seed, check_whole
from ..data.panel import Panel, as_panel
from ..inference.delta import normal_quantile
from .direct import multiplier_band, task_values
from .result import Comparison

__all__ = ["COMPARE_METHODS", "compare"]

#: the methods :func:`compare` offers
COMPARE_METHODS = ("auto", "pooled", "direct", "mixture")

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
            raise ValueError(f"a and b are the same system, {a!r}.")
        return [(ia, ib)]
    if panel.shape[0] < 2:
        raise ValueError("comparing needs at least two systems; the data have one.")
    return list(combinations(range(panel.shape[0]), 2))


def _shared(panel: Panel, ia: int, ib: int) -> np.ndarray:
    shared = (panel.trials[ia] > 0) & (panel.trials[ib] > 0)
    if not shared.any():
        raise ValueError(f"systems {panel.systems[ia]!r} and {panel.systems[ib]!r} share "
                         "no task.")
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
            metric: str = "pass@k", method: str = "auto", level: float = LEVEL,
            band: bool = True, seed=None, n_boot: int = 4000, system: Hashable | None = None,
            **fit_kwargs) -> Comparison:
    """Compare systems on the tasks they share: ``M_b(k) - M_a(k)`` with intervals and a band.

    Parameters
    ----------
    data : Panel, mapping of Counts, DataFrame, path or PooledFit
        The systems' counts, as :func:`passmix.fit_pooled` takes them (a table
        or file with its `system` column); or a fitted
        :class:`~passmix.PooledFit`, whose fit ``method="pooled"`` then reuses.
    a, b : hashable, optional
        One pair (the difference is b minus a). Neither: every pair of
        systems, a before b in the data's order, from one joint fit.
    k : int or sequence of int
        Horizons (>= 1). With ``method="direct"``, at most the fewest trials
        either system of a pair ran on a shared task.
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
    method : {"auto", "pooled", "direct", "mixture"}, default "auto"
        The pooled model's joint fit (delta method, any k); model-free
        per-task unbiased differences (k within the trials); each system's
        own Beta mixture, the intervals joined (conservative, any k); or
        ``"auto"``: pooled up to 20 trials per task, the mixture beyond (see
        the module docstring).
    level : float, default 0.95
        Level of the pointwise intervals and of the simultaneous band.
    band : bool, default True
        Compute the simultaneous band over the horizons `k`; signs are then
        certified by the band.
    seed : int or numpy.random.Generator, optional
        Seed of the band's Monte Carlo (multiplier bootstrap or normal draws);
        None means 0, so a comparison is reproducible. Also seeds the pooled
        fit's starts.
    n_boot : int, default 4000
        Multiplier-bootstrap draws for the direct band.
    system : hashable, optional
        The system column of a table or file.
    **fit_kwargs
        Passed to the model's fit (:func:`passmix.fit_pooled`, or
        :func:`passmix.fit` with ``method="mixture"``), and column names to the
        reader.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        An unknown method or metric, bad k or level, one of a and b without the
        other, a pair that shares no task, or k beyond the trials with
        ``method="direct"``.
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
    from ..models.pooled.result import PooledFit

    metric = check_metric(metric)
    k_arr, _ = check_k(k)
    if np.any(np.diff(k_arr) <= 0):
        raise ValueError(f"k must be increasing without repeats, got {k_arr.tolist()}.")
    level = check_level(level)
    if method not in COMPARE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of "
                         f"{', '.join(map(repr, COMPARE_METHODS))}.")
    n_boot = check_whole(n_boot, "n_boot", minimum=100)
    seed = 0 if seed is None else check_seed(seed)
    fit = data if isinstance(data, PooledFit) else None
    if fit is not None and fit_kwargs:
        raise ValueError("fit_kwargs apply to a new fit; data is already a PooledFit.")
    panel = fit.panel if fit is not None else as_panel(
        data, system, **{key: fit_kwargs.pop(key) for key in
                         ("task", "successes", "trials", "outcome") if key in fit_kwargs})
    why, checked = "", method == "auto"
    if method == "auto":
        from ..estimators.registry import auto_method

        method, why = ("pooled", "a pooled fit was given") if fit is not None else \
            auto_method({(label,): panel.counts(label) for label in panel.systems})
    pairs = _pairs(panel, a, b)
    shared = {pair: _shared(panel, *pair) for pair in pairs}
    rng = np.random.default_rng(seed)
    if method == "direct":
        parts = [_direct_pair(panel, ia, ib, shared[(ia, ib)], metric, k_arr, level, band,
                              n_boot, rng) for ia, ib in pairs]
        details: dict = {"n_boot": n_boot}
    elif method == "mixture":
        fits: dict = {}
        parts = [_mixture_pair(panel, ia, ib, shared[(ia, ib)], metric, k_arr, level, band,
                               fits, seed, fit_kwargs) for ia, ib in pairs]
        details = {"fits": {panel.systems[i]: f for (i, _), f in fits.items()}}
    else:
        if fit is None:
            from ..models.pooled.fit import fit_pooled

            fit = fit_pooled(panel, seed=seed, **fit_kwargs)
        details = {"fit": fit}
        fits = {}
        parts, pair_methods, checks = [], [], []
        for ia, ib in pairs:
            p_value = pooled_check(fit, panel, ia, ib, shared[(ia, ib)], metric) if checked \
                else np.nan
            part = _pooled_pair(fit, ia, ib, shared[(ia, ib)], metric, k_arr, level, band, rng)
            if p_value < CHECK_LEVEL:
                # the pair's own trials refute the pooled curve: its intervals widen to take
                # in the per-system mixtures' too, which assume nothing about task order
                part = _hull(part, _mixture_pair(panel, ia, ib, shared[(ia, ib)], metric,
                                                 k_arr, level, band, fits, seed, {}))
            parts.append(part)
            pair_methods.append("pooled" if p_value >= CHECK_LEVEL or np.isnan(p_value)
                                else "pooled+mixture")
            checks.append({"a": panel.systems[ia], "b": panel.systems[ib], "p_value": p_value,
                           "method": pair_methods[-1]})
        if checked:
            details["checks"] = pd.DataFrame(checks)
        details["pair_methods"] = tuple(pair_methods)
    if why:
        details["why"] = f"{method}: {why}"
        if "checks" in details:
            refuted = int((details["checks"]["method"] != "pooled").sum())
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
                      details=details, **stacked)


def _hull(pooled: dict[str, Any], mixture: dict[str, Any]) -> dict[str, Any]:
    """Both methods' intervals and bands taken together; the mixture's estimate."""
    out = dict(mixture)
    for low, high in (("lower", "upper"), ("band_lower", "band_upper")):
        out[low] = np.fmin(pooled[low], mixture[low])
        out[high] = np.fmax(pooled[high], mixture[high])
    out["se"] = np.fmax(pooled["se"], mixture["se"])
    return out


def pooled_check(fit, panel: Panel, ia: int, ib: int, shared: np.ndarray, metric: str) -> float:
    """p-value of a Hausman test of the pooled difference against the direct one, within
    the trials.

    At horizons up to the fewest trials of the pair (1, 2, 5, 10, 20 and that
    fewest, at most 20), the direct per-task difference is unbiased whatever
    the model, and the pooled one is the more precise if the model holds, so
    ``H = d' (V_direct - V_pooled)^+ d``, d their gap, is about chi-square
    with as many degrees of freedom as the rank of ``V_direct - V_pooled``. A
    small p-value says the pair's own trials refute the pooled curve (its
    shared task order, typically), so far horizons should not lean on it. The
    direct variance is the tasks' population one, which makes the test
    conservative (``docs/results/compare/simulated.md`` gives its size and power).
    NaN where it cannot be run (fewer than 3 shared tasks).
    """
    from scipy.stats import chi2

    if shared.sum() < 3:
        return np.nan
    m = panel.trials[:, shared]
    fewest = int(min(m[ia].min(), m[ib].min()))
    ks = np.array(sorted({kv for kv in (1, 2, 5, 10, 20, fewest) if kv <= min(fewest, 20)}))
    rows = (task_values(panel.successes[ib][shared], m[ib], metric, ks)
            - task_values(panel.successes[ia][shared], m[ia], metric, ks))
    v_direct = np.atleast_2d(np.cov(rows.T)) / rows.shape[0]
    labels = fit.systems
    pooled, v_pooled, _ = fit.difference(labels[ia], labels[ib], metric, ks, tasks=shared)
    gap = rows.mean(axis=0) - pooled
    values, vectors = np.linalg.eigh(v_direct - v_pooled)
    keep = values > 1e-12 * max(values.max(), 0.0)
    if not keep.any():
        return np.nan
    statistic = float(((vectors[:, keep].T @ gap) ** 2 / values[keep]).sum())
    return float(chi2.sf(statistic, keep.sum()))


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
            f"{panel.systems[ia if m[ia].min() <= m[ib].min() else ib]!r} ran on a task "
            f"shared with {panel.systems[ib if m[ia].min() <= m[ib].min() else ia]!r}; "
            "method='direct' needs k <= the fewest trials of the pair (method='pooled' "
            "reaches any k).")
    if shared.sum() < 2:
        raise ValueError(f"systems {panel.systems[ia]!r} and {panel.systems[ib]!r} share "
                         "one task; a direct comparison needs at least two.")
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


def _pooled_pair(fit, ia, ib, shared, metric, k_arr, level, band, rng):
    labels = fit.systems
    estimate, covariance, values = fit.difference(labels[ia], labels[ib], metric, k_arr,
                                                  tasks=shared)
    se = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    critical = _pooled_band(covariance, level, rng) if band else np.nan
    return _assemble(estimate, se, critical, level, band, values[0], values[1])
