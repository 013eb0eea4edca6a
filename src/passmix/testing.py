"""Checks for estimators and intervals: a conformance check that every estimator must
pass, in the way of scikit-learn's ``check_estimator``, and a brute-force truth for
the intervals.

:func:`check_estimator` fits an estimator (a registered name or an
:class:`~passmix.estimators.registry.Estimator`) to a few data sets and checks that its
result behaves as :mod:`passmix.estimators.base` says a fitted result must: the four
methods, their types and shapes, estimates in [0, 1] obeying the orderings
every estimator of these metrics obeys, intervals that bracket their
estimate, clear errors for a bad metric or horizon, no input mutated, and
the same answer for the same seed. A joint estimator (fitted to every group
at once) is checked on a small panel of systems that share their tasks. A
result that defines only some metrics
says which in a ``metrics`` attribute; it must raise ValueError for the
others and give NaN for them in ``summary()``. Tables, the CLI and the
harness rely on nothing else.

:func:`one_component_region_extremes` is the independent truth the interval
tests and studies hold the profile intervals to: the range of a metric over
the one-component likelihood region, found by slicing a grid with scipy's
beta-binomial, in code that shares nothing with the fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._defaults import METRICS
from .data.counts import Counts
from .estimators.base import SUMMARY_COLUMNS, FittedResult
from .estimators.registry import Estimator, get_estimator

__all__ = ["check_estimator", "one_component_region_extremes"]

_K = np.array([1, 2, 5, 20])


def _data_sets() -> list[Counts]:
    rng = np.random.default_rng(20261130)
    theta = rng.beta(0.7, 2.0, 60)
    trials = np.where(np.arange(60) % 5 == 0, 12, 20)
    return [
        Counts(rng.binomial(trials, theta), trials),                  # ordinary
        Counts([0, 0, 1, 0, 2, 0, 0, 0], [10] * 8),                   # mostly failures
        Counts([3, 0, 5, 1], [5, 5, 5, 5], tasks=["a", "b", "c", "d"]),  # few tasks
    ]


def _panel_groups() -> dict[tuple, Counts]:
    """Three systems on twelve shared tasks (one with no success seen), for joint estimators."""
    rng = np.random.default_rng(20261201)
    p = rng.beta(1.0, 2.0, 12)
    tasks = [f"t{j}" for j in range(12)]
    groups = {(f"s{i}",): Counts(rng.binomial(8, np.clip(p * scale, 0, 1)), np.full(12, 8),
                                 tasks=tasks)
              for i, scale in enumerate((0.5, 1.0, 1.5))}
    groups[("s3",)] = Counts(np.zeros(12, dtype=int), np.full(12, 8), tasks=tasks)
    return groups


def _check_joint(est, options) -> None:
    """A joint estimator: fitted to all groups at once, a conforming result per group."""
    name = est.name
    groups = _panel_groups()
    before = {key: c.successes.copy() for key, c in groups.items()}
    results = est(groups, **options)
    assert isinstance(results, dict) and set(results) == set(groups), (
        f"{name}: a joint estimator must return one result per group key")
    again = est(groups, **options)
    for key, result in results.items():
        assert isinstance(result, FittedResult), (
            f"{name}: its result lacks metric, interval, summary or info")
        _check_result(name, result, groups[key])
        pd.testing.assert_frame_equal(result.summary(_K), again[key].summary(_K),
                                      check_exact=False, rtol=1e-12,
                                      obj=f"{name}: summary for the same seed")
    assert all(np.array_equal(groups[key].successes, b) for key, b in before.items()), (
        f"{name}: the counts were modified")


def _close_or_below(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isnan(a) | np.isnan(b) | (a <= b + 1e-9 + 1e-7 * np.abs(b))
    return bool(np.all(ok))


def check_estimator(estimator: str | Estimator) -> None:
    """Raise AssertionError (saying what failed) unless `estimator` conforms.

    Parameters
    ----------
    estimator : str or Estimator
        A registered name (:func:`passmix.register_estimator`) or the
        estimator itself.

    Examples
    --------
    >>> from passmix.testing import check_estimator
    >>> check_estimator("naive")
    """
    est = get_estimator(estimator) if isinstance(estimator, str) else estimator
    name = est.name
    options = {"seed": 3, "max_components": 2, "n_init": 3}
    if est.joint:
        _check_joint(est, options)
        return
    for counts in _data_sets():
        before = (counts.successes.copy(), counts.trials.copy())
        result = est(counts, **options)
        assert isinstance(result, FittedResult), (
            f"{name}: its result lacks metric, interval, summary or info")
        _check_result(name, result, counts)
        again = est(counts, **options).summary(_K)
        pd.testing.assert_frame_equal(result.summary(_K), again, check_exact=False,
                                      rtol=1e-12, obj=f"{name}: summary for the same seed")
        assert np.array_equal(counts.successes, before[0]) and np.array_equal(
            counts.trials, before[1]), f"{name}: the counts were modified"


def _check_result(name: str, result: FittedResult, counts: Counts) -> None:
    info = result.info()
    assert isinstance(info, dict) and "estimator" in info, (
        f"{name}: info() must be a dict with 'estimator'")
    table = result.summary(_K)
    assert isinstance(table, pd.DataFrame), f"{name}: summary() must return a DataFrame"
    assert tuple(table.columns) == SUMMARY_COLUMNS, (
        f"{name}: summary() columns are {list(table.columns)}, not {list(SUMMARY_COLUMNS)}")
    assert list(table["metric"]) == [m for m in METRICS for _ in _K], (
        f"{name}: summary() rows must be the metrics in order, each at every k")
    assert np.array_equal(table["k"].to_numpy(), np.tile(_K, len(METRICS))), (
        f"{name}: summary() must give the horizons asked for, in order")
    values = table[["estimate", "lower", "upper"]].to_numpy(dtype=float)
    finite = values[~np.isnan(values)]
    assert np.all((finite >= 0) & (finite <= 1)), f"{name}: values outside [0, 1]"
    est, lo, hi = (table[c].to_numpy(dtype=float) for c in ("estimate", "lower", "upper"))
    assert _close_or_below(lo, est) and _close_or_below(est, hi), (
        f"{name}: an interval does not bracket its estimate")
    at = {m: table.loc[table["metric"] == m, "estimate"].to_numpy() for m in METRICS}
    assert _close_or_below(at["pass@k"][:-1], at["pass@k"][1:]), f"{name}: Pass@k falls in k"
    assert _close_or_below(at["pass^k"][1:], at["pass^k"][:-1]), f"{name}: Pass^k rises in k"
    assert _close_or_below(at["pass^k"], at["auc@k"]) and _close_or_below(
        at["auc@k"], at["pass@k"]), f"{name}: Pass^k <= AUC@k <= Pass@k fails"

    defined = tuple(getattr(result, "metrics", METRICS))
    for metric in METRICS:
        if metric not in defined:
            assert table.loc[table["metric"] == metric, "estimate"].isna().all(), (
                f"{name}: summary() must give NaN for {metric}, which it does not define")
            try:
                result.metric(metric, 2)
            except ValueError:
                continue
            raise AssertionError(f"{name}: metric() must raise ValueError for {metric}, "
                                 f"which it does not define")
        scalar = result.metric(metric, 2)
        assert isinstance(scalar, float), f"{name}: metric() at a scalar k must be a float"
        array = result.metric(metric, [1, 2])
        assert isinstance(array, np.ndarray) and array.shape == (2,), (
            f"{name}: metric() at an array of k must be an array of that length")
        lo, hi = result.interval(metric, 2)
        assert np.isnan(lo) or lo <= scalar + 1e-12, f"{name}: interval() above its estimate"
        assert np.isnan(hi) or hi >= scalar - 1e-12, f"{name}: interval() below its estimate"
    for bad, args in (("metric", ("pass@q", 2)), ("k", ("pass@k", 0))):
        try:
            result.metric(*args)
        except ValueError:
            continue
        raise AssertionError(f"{name}: metric() accepts a bad {bad}")


def one_component_region_extremes(counts: Counts, metric: str, k, loglik_max: float, *,
                                  level: float = 0.95, n: int = 400
                                  ) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest metric over the one-component (beta-binomial) likelihood region.

    The region is every mean and concentration whose log-likelihood is within
    ``chi2.ppf(level, 1) / 2`` of `loglik_max`, inside the bounds the fit
    searches (:data:`passmix.models.mixture.graph.PARAMETER_BOUNDS`). A
    profile interval of the H = 1 fit must reach both extremes.

    Parameters
    ----------
    counts : Counts
        The data.
    metric : {"pass@k", "pass^k", "auc@k"}
    k : int or array_like of int
        Horizons.
    loglik_max : float
        The maximum log-likelihood (the H = 1 fit's ``loglik``).
    level : float, default 0.95
    n : int, default 400
        Grid points on each axis.

    Returns
    -------
    lower, upper : numpy.ndarray
        The extremes at each k.

    Notes
    -----
    For each log concentration on a grid the feasible logit means form an
    interval, found on a grid of means and its ends refined by bisection.
    Every metric rises with the mean at a fixed concentration, so its extremes
    over the region lie at those ends. The log-likelihood is
    ``scipy.stats.betabinom``'s, not the fit's.

    Examples
    --------
    >>> import passmix
    >>> from passmix.testing import one_component_region_extremes
    >>> counts = passmix.Counts([0, 1, 3, 5, 2], [5, 5, 5, 5, 5])
    >>> fit = passmix.fit(counts, n_components=1, seed=0)
    >>> lo, hi = one_component_region_extremes(counts, "pass@k", [10], fit.loglik, n=200)
    >>> bool(lo[0] < fit.pass_at_k(10) < hi[0])
    True
    """
    from scipy.special import expit
    from scipy.stats import betabinom, chi2

    from .metrics import metric_value
    from .models.mixture.graph import PARAMETER_BOUNDS

    k = np.atleast_1d(np.asarray(k))
    y, m, w = counts.pairs()
    (e_lo, e_hi), (c_lo, c_hi) = (PARAMETER_BOUNDS["logit_mean_first"],
                                  PARAMETER_BOUNDS["log_concentration"])

    def loglik(e, c):
        a, b = np.exp(c) * expit(e), np.exp(c) * expit(-e)
        return sum(wi * betabinom.logpmf(yi, mi, a, b) for yi, mi, wi in zip(y, m, w))

    threshold = loglik_max - chi2.ppf(level, 1) / 2
    c = np.linspace(c_lo, c_hi, n)
    e = np.linspace(e_lo, e_hi, n)
    ok = loglik(e[:, None], c[None, :]) >= threshold  # (mean, concentration)
    rows = ok.any(axis=0)
    c = c[rows]
    first = np.argmax(ok[:, rows], axis=0)
    last = n - 1 - np.argmax(ok[::-1, rows], axis=0)
    step = e[1] - e[0]
    ends = []
    for inside, outward in ((e[first], -step), (e[last], step)):
        # bisection between a feasible grid mean and the next one out (or the box)
        out = np.clip(inside + outward, e_lo, e_hi)
        closed = loglik(out, c) >= threshold
        a, b = np.where(closed, out, inside), out
        for _ in range(40):
            mid = 0.5 * (a + b)
            good = loglik(mid, c) >= threshold
            a, b = np.where(good, mid, a), np.where(good, b, mid)
        alpha, beta = np.exp(c) * expit(a), np.exp(c) * expit(-a)
        ends.append(metric_value(metric, np.ones(alpha.shape + (1,)), alpha[..., None],
                                 beta[..., None], k))  # (slices, K)
    both = np.concatenate(ends, axis=0)
    return both.min(axis=0), both.max(axis=0)
