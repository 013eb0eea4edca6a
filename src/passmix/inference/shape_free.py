"""Shape-free intervals: the range of a metric over every task distribution the counts allow.

Every model passmix fits is a distribution G of the tasks' success rates, and
Pass@k, Pass^k and AUC@k are means over G of a function of the rate:
``E_G[c_k(p)]``, linear in G. The counts say what G can be only through the
distribution of a task's successes ``P_G(y <= t) = E_G[Binom.cdf(t; m, p)]``.
A confidence band for that distribution, the Dvoretzky-Kiefer-Wolfowitz band
with Massart's constant (``|F_hat(t) - F(t)| <= eps`` for every t with
probability ``>= 1 - alpha`` when ``eps = sqrt(log(2 / alpha) / (2 J))``),
holds G's with probability ``>= 1 - alpha`` whatever its shape. The smallest
and largest metric over the G's inside it is then an interval that covers the
population's metric at that level for J independent tasks, in finite samples,
with no shape assumed: two linear programs on a grid of rates (the
F-localization of Ignatiadis and Wager, JASA 2022).

This is what the data say alone. Within the trials the band makes it wider
than a model's interval (the band holds every functional at once); beyond
them, the part of the width a model's interval lacks rests on the model's
shape. The extremal distributions (:meth:`ShapeFreeInterval.extremes`) name
the shapes behind each end, such as the never-solved tasks made impossible at
the lower end and put at rates near ``1 / k`` at the upper.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import linprog
from scipy.stats import binom

from .._validation import DegenerateDataWarning, check_k, check_level, check_metric
from ..data.counts import as_counts
from ..metrics import metric_at_rate

__all__ = ["ShapeFreeInterval", "shape_free_interval"]

# The grid: an arcsine grid (spacing ~ sqrt(p (1 - p)), as a binomial's width) of at least
# this many rates, plus rates where the metric's value is evenly spaced, so that every end
# the continuum reaches is reached on the grid within a fraction of a point.
_MIN_GRID = 1001
_METRIC_POINTS = 400
# a band over at most this many thresholds per trial count: any subset of the DKW band's
# constraints still holds with the band's probability
_MAX_THRESHOLDS = 200
# weights below this are the LP's round-off, not atoms
_ATOM = 1e-7


@dataclass(frozen=True)
class ShapeFreeInterval:
    """The range of a metric over every task distribution within a confidence band of the counts.

    Returned by :func:`shape_free_interval`.

    Attributes
    ----------
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : numpy.ndarray
        The horizons.
    level : float
        The confidence level.
    lower, upper : numpy.ndarray
        The interval's ends, one per horizon.
    band : dict
        The band's half-width for each trial count m (tasks with m trials are
        one group; ``level`` is split evenly between groups).
    n_tasks : int
        Tasks with at least one trial.
    never_solved : int
        Tasks with no success in any trial: the metric far beyond the trials
        is decided by where their rates lie, which the band leaves open.
    """

    metric: str
    k: np.ndarray
    level: float
    lower: np.ndarray
    upper: np.ndarray
    band: dict[int, float]
    n_tasks: int
    never_solved: int
    _extremes: tuple = field(repr=False, compare=False, default=())

    def summary(self) -> pd.DataFrame:
        """One row per horizon: the ends and the width.

        Returns
        -------
        pandas.DataFrame
            Indexed by k, with columns ``lower``, ``upper`` and ``width``.

        Examples
        --------
        >>> import passmix
        >>> counts = passmix.Counts([0, 1, 3, 5, 5, 2], [5] * 6)
        >>> passmix.shape_free_interval(counts, [1, 5]).summary().columns.tolist()
        ['lower', 'upper', 'width']
        """
        frame = pd.DataFrame({"lower": self.lower, "upper": self.upper,
                              "width": self.upper - self.lower},
                             index=pd.Index(self.k, name="k"))
        frame.attrs.update(metric=self.metric, level=self.level)
        return frame

    def extremes(self) -> pd.DataFrame:
        """The task distributions that reach each end: their atoms' rates and weights.

        Returns
        -------
        pandas.DataFrame
            Columns ``k``, ``end`` (``"lower"`` or ``"upper"``), ``rate`` and
            ``weight``; the weights of one end at one k sum to 1.

        Examples
        --------
        >>> import passmix
        >>> counts = passmix.Counts([0] * 30 + [1] * 10, [10] * 40)
        >>> ends = passmix.shape_free_interval(counts, 1000).extremes()
        >>> # the lower end makes most tasks impossible (rate 0)
        >>> bool(ends.query("end == 'lower'").sort_values("rate").weight.iloc[0] > 0.5)
        True
        """
        rows = [(k, end, rate, weight) for k, ends in zip(self.k, self._extremes, strict=True)
                for end, (rates, weights) in zip(("lower", "upper"), ends, strict=True)
                for rate, weight in zip(rates, weights, strict=True)]
        return pd.DataFrame(rows, columns=["k", "end", "rate", "weight"])


def shape_free_interval(counts, k, metric: str = "pass@k", *,
                        level: float = 0.95) -> ShapeFreeInterval:
    """Pass@k, Pass^k or AUC@k as far as the counts alone tell, with no shape assumed.

    The smallest and largest value of the metric over every distribution of
    the tasks' success rates whose distribution of successes lies within the
    Dvoretzky-Kiefer-Wolfowitz band of the counts (see the module
    docstring). It covers the population's metric with probability at least
    `level` for independent tasks, in finite samples, whatever the shape.

    Use it beside a model's interval, not instead of it. Within the trials
    it is wider (the band holds every metric at every k at once). Far beyond
    them it is what the trials can say: where it is much wider than the
    model's interval, the model's interval rests on the model's shape, and
    :meth:`ShapeFreeInterval.extremes` names the shapes behind the ends.

    Parameters
    ----------
    counts : Counts or tuple
        Per-task successes and trials. Tasks with the same number of trials
        form a group with its own band; `level` is split evenly between
        groups (Bonferroni).
    k : int or array_like of int
        Horizons, ``>= 1``.
    metric : {"pass@k", "pass^k", "auc@k"}
        The metric.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    ShapeFreeInterval

    Raises
    ------
    ValueError
        For a k below 1, a level outside (0, 1), an unknown metric, or counts
        with no observed task.

    Warns
    -----
    DegenerateDataWarning
        When no group has enough tasks for its band to say anything (fewer
        than about ``log(2 / (1 - level)) / 2`` tasks): the interval is then
        the metric's whole range.

    Notes
    -----
    The band is uniform in the threshold t, so it holds for Pass@k at every
    k at once; a single horizon's interval is conservative (in
    ``docs/results/shape_free.md``, simulated from three shapes, it covered
    in every replicate). The target is the population the tasks were drawn
    from; the metric over the drawn tasks themselves differs from it by
    sampling noise, which the band's width also holds in practice.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> p = np.where(rng.random(200) < 0.2, 0.0, rng.beta(0.5, 2.0, 200))
    >>> counts = passmix.Counts(rng.binomial(10, p), np.full(200, 10))
    >>> result = passmix.shape_free_interval(counts, [1, 10, 100, 1000])
    >>> bool(np.all(np.diff(result.upper - result.lower) >= -1e-6))  # wider past the trials
    True
    >>> result.summary().round(2)  # doctest: +SKIP
    """
    counts = as_counts(counts)
    ks, _ = check_k(k)
    metric = check_metric(metric)
    level = check_level(level)
    y, m, weight = counts.pairs()
    if y.size == 0:
        raise ValueError("counts have no task with a trial: there is nothing to bound.")
    groups = np.unique(m)
    alpha = (1.0 - level) / groups.size
    band: dict[int, float] = {}
    rows = []  # (cdf of the rates at each threshold as a function, empirical cdf, eps)
    for trials in groups:
        here = m == trials
        n = int(weight[here].sum())
        eps = float(np.sqrt(np.log(2.0 / alpha) / (2.0 * n)))
        band[int(trials)] = eps
        if eps >= 1.0:
            continue
        thresholds = _thresholds(int(trials), y[here], weight[here])
        empirical = np.array([weight[here][y[here] <= t].sum() for t in thresholds]) / n
        rows.append((int(trials), thresholds, empirical, eps))
    if not rows:
        warnings.warn(f"{int(weight.sum())} task(s) are too few for the band to exclude any "
                      f"distribution at level {level}: the interval is the metric's whole range.",
                      DegenerateDataWarning, stacklevel=2)
    lower, upper, extremes = [], [], []
    for horizon in ks:
        rates = _grid(metric, int(horizon), int(m.max()))
        values = metric_at_rate(metric, rates, horizon)
        a_ub, b_ub = _band_rows(rows, rates)
        (lo_w, lo_at), (hi_w, hi_at) = (_extreme(sign * values, a_ub, b_ub, rates)
                                        for sign in (-1.0, 1.0))
        lower.append(float(np.clip(values[lo_at] @ lo_w, 0.0, 1.0)))
        upper.append(float(np.clip(values[hi_at] @ hi_w, 0.0, 1.0)))
        extremes.append(((rates[lo_at], lo_w), (rates[hi_at], hi_w)))
    lower_arr, upper_arr = np.array(lower), np.array(upper)
    # the two LPs are solved to HiGHS's tolerance: never let the lower end pass the upper
    lower_arr = np.minimum(lower_arr, upper_arr)
    return ShapeFreeInterval(metric=metric, k=ks, level=level, lower=lower_arr, upper=upper_arr,
                             band=band, n_tasks=int(weight.sum()),
                             never_solved=int(weight[y == 0].sum()), _extremes=tuple(extremes))


def _thresholds(trials: int, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Thresholds t < m of the band: all of them, or the smallest ones and the counts'
    quantiles when m is large (any subset of the band's constraints holds with it)."""
    if trials <= _MAX_THRESHOLDS:
        return np.arange(trials)
    spread = np.quantile(np.repeat(y, weight), np.linspace(0, 1, _MAX_THRESHOLDS // 2))
    even = np.linspace(0, trials - 1, _MAX_THRESHOLDS // 4)
    return np.unique(np.concatenate([np.arange(_MAX_THRESHOLDS // 4), spread, even]).astype(int)
                     .clip(0, trials - 1))


def _grid(metric: str, k: int, trials: int) -> np.ndarray:
    """Rates in [0, 1], 0 and 1 included: an arcsine grid fine enough for m trials, and the
    rates where the metric at k takes evenly spaced values."""
    n = max(_MIN_GRID, int(16 * np.sqrt(trials)))
    arcsine = np.sin(np.linspace(0.0, np.pi / 2, n)) ** 2
    u = (np.arange(_METRIC_POINTS) + 0.5) / _METRIC_POINTS
    if metric == "pass^k":
        even = u ** (1.0 / k)
    else:  # Pass@k = 1 - (1 - p)^k; AUC@k rises over the same rates, near 1 / k
        even = -np.expm1(np.log1p(-u) / k)
    grid = np.unique(np.concatenate([arcsine, even, [0.0, 1.0]]))
    return grid[(grid >= 0.0) & (grid <= 1.0)]


def _band_rows(rows, rates: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The band as ``A_ub w <= b_ub`` over the weights of the grid's rates; rows that no
    distribution can break (an upper bound >= 1, a lower bound <= 0) are left out."""
    blocks, bounds = [], []
    for trials, thresholds, empirical, eps in rows:
        cdf = binom.cdf(thresholds[:, None], trials, rates[None, :])
        cdf[cdf < 1e-12] = 0.0  # round-off for the solver, far below any band's width
        upper = empirical + eps < 1.0
        lower = empirical - eps > 0.0
        blocks += [cdf[upper], -cdf[lower]]
        bounds += [empirical[upper] + eps, -(empirical[lower] - eps)]
    if not blocks or sum(len(b) for b in bounds) == 0:
        return None, None
    return np.vstack(blocks), np.concatenate(bounds)


def _extreme(objective: np.ndarray, a_ub, b_ub, rates: np.ndarray):
    """The weights (on the grid) that maximise ``objective @ w`` within the band: the
    atoms' weights and their grid indices."""
    for method in ("highs", "highs-ipm", "highs-ds"):
        # the default picks one solver; on a badly scaled program (Pass^k's values span
        # 1e-300 to 1) it can stop without an answer where another solver finds it
        result = linprog(-objective, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, rates.size)),
                         b_eq=[1.0], bounds=(0.0, None), method=method)
        if result.status in (0, 2):
            break
    if result.status == 2:
        raise ValueError("no distribution of success rates puts the counts' distribution within "
                         "the band: the trials of a task vary less than independent trials "
                         "can (fixed seeds, cached answers?), so no binomial mixture fits.")
    if result.status != 0:
        raise RuntimeError(f"the shape-free linear program failed: {result.message}")
    at = np.flatnonzero(result.x > _ATOM)
    weights = result.x[at]
    return weights / weights.sum(), at
