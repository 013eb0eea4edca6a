"""How :func:`passmix.compare` gets a pair's difference: each method an object.

A method takes a :class:`PairSetup` (the panel, the pairs and the tasks each
shares, the metric, horizons, level and seeds) and returns
:class:`PairDifferences`: one record per pair of the estimate, its standard
error, the pointwise interval and the simultaneous band, each computed by the
model's own result (:meth:`passmix.PooledFit.difference` and
:meth:`~passmix.PooledFit.difference_profile`, :meth:`passmix.MixtureFit.interval`,
the posterior's draws) or, model-free, from the tasks. :func:`pair_method`
makes one from its name; :func:`passmix.compare` takes a name or an object,
as ``scipy.stats.bootstrap`` takes its method.

* :class:`PooledMethod`: the pooled model's joint fit, profile or delta
  intervals, and with ``check=True`` a pair whose own trials refute the
  pooled curve (:func:`pooled_check`) also takes in the mixtures' intervals;
* :class:`PosteriorMethod`: NUTS draws of the pooled model;
* :class:`DirectMethod`: per-task unbiased differences within the trials;
* :class:`MixtureMethod`: each system's own Beta mixture, joined by MOVER.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from .._defaults import INTERVAL_METHODS
from .._validation import FitWarning, check_whole
from ..data.panel import Panel, system_name
from ..inference.delta import normal_quantile
from .direct import multiplier_band, task_values

__all__ = ["CHECK_LEVEL", "PAIR_INTERVALS", "PAIR_METHODS", "PROFILE_PAIRS", "DirectMethod",
           "MixtureMethod", "PairDifferences", "PairMethod", "PairSetup", "PooledMethod",
           "PosteriorMethod", "check_horizons", "mover", "pair_method", "pooled_check"]

#: the pooled difference's intervals (:class:`PooledMethod`'s `interval`)
PAIR_INTERVALS = INTERVAL_METHODS

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


@dataclass(frozen=True)
class PairSetup:
    """What every method of :func:`passmix.compare` starts from.

    Attributes
    ----------
    panel : Panel
        The systems' counts.
    pairs : list of (int, int)
        System positions ``(a, b)``; each difference is b minus a.
    shared : list of numpy.ndarray
        Per pair, the boolean mask of the tasks both ran.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : numpy.ndarray
        Horizons, increasing.
    level : float
        Level of the intervals and of the band.
    band : bool
        Whether to compute the simultaneous band.
    seed : int or numpy.random.Generator
        Seeds the fits (and, an int, the posterior's chains).
    rng : numpy.random.Generator
        The bands' Monte Carlo.
    fit_kwargs : dict
        Passed to the method's fit.
    given : PooledFit or DataTree, optional
        A fit or pooled draws the caller passed, used instead of a new one.
    """

    panel: Panel
    pairs: list
    shared: list
    metric: str
    k: np.ndarray
    level: float
    band: bool
    seed: Any
    rng: np.random.Generator
    fit_kwargs: dict = field(default_factory=dict)
    given: Any = None


@dataclass(frozen=True)
class PairDifferences:
    """A method's answer: one record per pair, what it used, and how each pair was done.

    Attributes
    ----------
    parts : list of dict
        Per pair: ``estimate``, ``se``, ``lower``, ``upper``, ``band_lower``,
        ``band_upper``, ``critical``, ``value_a``, ``value_b`` (and
        ``p_b_better`` from the posterior), each over the horizons.
    details : dict
        The fit or draws used and the method's settings (``Comparison.details``).
    pair_methods : list of str
        The method each pair got (``"pooled+mixture"`` where a check refuted
        the pooled curve).
    """

    parts: list
    details: dict
    pair_methods: list


class PairMethod:
    """A way to compute the pairs' differences (subclass and set :attr:`name`).

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.compare.methods import DirectMethod
    >>> rng = np.random.default_rng(0)
    >>> p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.5]]) - rng.normal(1.0, 1.5, 80))))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["o", "n"])
    >>> result = passmix.compare(panel, "o", "n", k=[1, 5], method=DirectMethod(n_boot=500))
    >>> result.method, result.details["n_boot"]
    ('direct', 500)
    """

    name: str = ""

    def __call__(self, setup: PairSetup) -> PairDifferences:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        options = ", ".join(f"{key}={value!r}" for key, value in vars(self).items())
        return f"{type(self).__name__}({options})"


class DirectMethod(PairMethod):
    """Model-free: per-task unbiased differences within the trials and a Gaussian
    multiplier-bootstrap sup-t band over `n_boot` draws (:mod:`passmix.compare.direct`)."""

    name = "direct"

    def __init__(self, n_boot: int = 4000) -> None:
        self.n_boot = check_whole(n_boot, "n_boot", minimum=100)

    def __call__(self, setup: PairSetup) -> PairDifferences:
        parts = [self.pair(setup, ia, ib, mask)
                 for (ia, ib), mask in zip(setup.pairs, setup.shared)]
        return PairDifferences(parts, {"n_boot": self.n_boot}, [self.name] * len(parts))

    def pair(self, setup: PairSetup, ia: int, ib: int, shared: np.ndarray) -> dict[str, Any]:
        """One pair's record (see :class:`PairDifferences`)."""
        panel, k_arr = setup.panel, setup.k
        y, m = panel.successes[:, shared], panel.trials[:, shared]
        fewest = int(min(m[ia].min(), m[ib].min()))
        if k_arr[-1] > fewest:
            short, other = (ia, ib) if m[ia].min() <= m[ib].min() else (ib, ia)
            raise ValueError(
                f"k = {k_arr[-1]} exceeds the {fewest} trials that "
                f"'{system_name(panel.systems[short])}' ran on a task shared with "
                f"'{system_name(panel.systems[other])}'; method='direct' needs k <= the "
                "fewest trials of the pair (method='pooled' reaches any k).")
        if shared.sum() < 2:
            raise ValueError(f"systems '{system_name(panel.systems[ia])}' and "
                             f"'{system_name(panel.systems[ib])}' share one task; a direct "
                             "comparison needs at least two.")
        value_a = task_values(y[ia], m[ia], setup.metric, k_arr)
        value_b = task_values(y[ib], m[ib], setup.metric, k_arr)
        rows = value_b - value_a
        if setup.band:
            estimate, se, critical = multiplier_band(rows, setup.level, self.n_boot, setup.rng)
        else:
            estimate, se = rows.mean(axis=0), rows.std(axis=0, ddof=1) / np.sqrt(rows.shape[0])
            critical = np.nan
        return _assemble(estimate, se, critical, setup.level, setup.band,
                         value_a.mean(axis=0), value_b.mean(axis=0))


class MixtureMethod(PairMethod):
    """Each system's own Beta mixture (:func:`passmix.fit`) on the pair's shared tasks,
    the two profile intervals joined by MOVER as if independent (conservative: the
    systems' positive correlation through the tasks only narrows the truth); the band
    joins intervals at the Bonferroni level over the horizons. Each system is fitted
    once per task set within a call.

    With ``pooled_beyond=True`` (``method="auto"`` past
    :data:`passmix._defaults.POOLED_MAX_TRIALS` trials per task), at horizons beyond
    the pair's trials the intervals and band also take in the pooled model's
    differences (:class:`PooledMethod`, one joint fit of every system): a system's
    own counts cannot check its Beta tail near 0 there, which decides Pass@k far
    beyond the trials, and the pooled model reads the tasks' order off the other
    systems (``docs/results/compare/rare.md``). The estimates stay the mixtures'.
    """

    name = "mixture"

    def __init__(self, pooled_beyond: bool = False, interval: str | None = None) -> None:
        if interval is not None and interval not in PAIR_INTERVALS:
            raise ValueError(f"unknown interval {interval!r}; expected one of "
                             f"{', '.join(map(repr, PAIR_INTERVALS))}.")
        self.pooled_beyond = bool(pooled_beyond)
        # the pooled differences' interval method where they are spanned (PooledMethod's)
        self.interval = interval

    def __call__(self, setup: PairSetup) -> PairDifferences:
        fits: dict = {}
        parts = [self.pair(setup, ia, ib, mask, setup.fit_kwargs, fits)
                 for (ia, ib), mask in zip(setup.pairs, setup.shared)]
        details = {"fits": {setup.panel.systems[i]: f for (i, _), f in fits.items()}}
        pair_methods = [self.name] * len(parts)
        if self.pooled_beyond:
            self._span_pooled(setup, parts, pair_methods, details)
        return PairDifferences(parts, details, pair_methods)

    def _span_pooled(self, setup: PairSetup, parts: list, pair_methods: list,
                     details: dict) -> None:
        """Widen each pair's intervals beyond its trials to take in the pooled model's."""
        panel = setup.panel
        beyond = [setup.k > min(int(panel.trials[ia][mask].max()), int(panel.trials[ib][mask].max()))
                  for (ia, ib), mask in zip(setup.pairs, setup.shared)]
        if not any(b.any() for b in beyond):
            return
        far = np.unique(np.concatenate([setup.k[b] for b in beyond]))
        # the pooled differences at those horizons only; its own fit options are its defaults
        pooled = PooledMethod(self.interval)(replace(setup, k=far, fit_kwargs={}))
        details["pooled_fit"] = pooled.details["fit"]
        details["pooled_beyond"] = far
        details["spanned"] = np.array(beyond)  # (pairs, horizons): where the pooled is in
        for n, (part, wide) in enumerate(zip(parts, pooled.parts)):
            at = np.flatnonzero(beyond[n])
            if at.size == 0:
                continue
            take = np.searchsorted(far, setup.k[at])
            for low, high in (("lower", "upper"),) + ((("band_lower", "band_upper"),)
                                                     if setup.band else ()):
                part[low][at] = np.fmin(part[low][at], wide[low][take])
                part[high][at] = np.fmax(part[high][at], wide[high][take])
            part["se"][at] = np.fmax(part["se"][at], wide["se"][take])
            pair_methods[n] = "mixture+pooled"

    def pair(self, setup: PairSetup, ia: int, ib: int, shared: np.ndarray,
             fit_kwargs: dict, fits: dict) -> dict[str, Any]:
        """One pair's record (see :class:`PairDifferences`); `fits` keeps each system's
        mixture per task set, for the pairs of one call."""
        k_arr, level = setup.k, setup.level
        # the band: every horizon's interval at the Bonferroni level, so all K hold at `level`
        levels = [level] + ([1.0 - (1.0 - level) / k_arr.size] if setup.band else [])
        est_a, se_a, ends_a = self._ends(setup, ia, shared, levels, fit_kwargs, fits)
        est_b, se_b, ends_b = self._ends(setup, ib, shared, levels, fit_kwargs, fits)
        out = _assemble(est_b - est_a, np.hypot(se_a, se_b), np.nan, level, False, est_a,
                        est_b)
        out["lower"], out["upper"] = mover(est_a, ends_a[0], est_b, ends_b[0])
        if setup.band:
            out["band_lower"], out["band_upper"] = mover(est_a, ends_a[1], est_b, ends_b[1])
            out["critical"] = normal_quantile(levels[1])
        return out

    @staticmethod
    def _ends(setup: PairSetup, i: int, shared: np.ndarray, levels, fit_kwargs, fits):
        """System i's mixture on the `shared` tasks: the estimate, its delta se, and its
        profile ends at each of `levels`."""
        from ..data.counts import Counts
        from ..models.mixture.fit import fit

        key = (i, shared.tobytes())
        if key not in fits:
            counts = Counts(setup.panel.successes[i][shared], setup.panel.trials[i][shared])
            fits[key] = fit(counts, seed=setup.seed, **fit_kwargs)
        result = fits[key]
        ends = [result.interval(setup.metric, setup.k, lv) for lv in levels]
        return (result.metric(setup.metric, setup.k), result.standard_error(setup.metric, setup.k),
                ends)


class PosteriorMethod(PairMethod):
    """NUTS draws of the pooled model (:func:`passmix.sample_pooled`, or the draws given):
    per pair the mean difference, equal-tailed credible intervals, a simultaneous
    credible band (sup-t over the draws) and ``P(b > a)``."""

    name = "posterior"

    def __call__(self, setup: PairSetup) -> PairDifferences:
        from ..bayes._record import is_pooled
        from ..bayes.pooled import pair_difference_draws, sample_pooled

        post = setup.given
        if post is None or not is_pooled(post):
            if not isinstance(setup.seed, (int, np.integer)):
                raise TypeError("method='posterior' takes an int seed (it seeds PyMC's "
                                "chains).")
            panel = setup.panel if post is None else post.panel
            post = sample_pooled(panel, seed=int(setup.seed), **setup.fit_kwargs)
        diffs, values = pair_difference_draws(post, setup.metric, setup.k, setup.pairs,
                                              setup.shared)
        tail = (1 - setup.level) / 2
        parts = []
        for n in range(len(setup.pairs)):
            d = diffs[:, n]                                                  # (draws, K)
            estimate, se = d.mean(axis=0), d.std(axis=0, ddof=1)
            lower, upper = np.quantile(d, [tail, 1 - tail], axis=0)
            out = _assemble(estimate, se, np.nan, setup.level, False,
                            values[:, n, 0].mean(axis=0), values[:, n, 1].mean(axis=0))
            out["lower"], out["upper"] = lower, upper
            if setup.band:
                # the share `level` of the draws whose whole curve lies within mean -+ c sd
                live = se > 0
                scaled = np.abs(d[:, live] - estimate[live]) / se[live]
                critical = (float(np.quantile(scaled.max(axis=1), setup.level))
                            if live.any() else 0.0)
                out["band_lower"], out["band_upper"] = _ends(estimate, se, critical)
                out["band_lower"] = np.minimum(out["band_lower"], lower)
                out["band_upper"] = np.maximum(out["band_upper"], upper)
                out["critical"] = critical
            out["p_b_better"] = (d > 0).mean(axis=0)
            parts.append(out)
        return PairDifferences(parts, {"posterior": post}, [self.name] * len(parts))


class PooledMethod(PairMethod):
    """The pooled model's joint fit (:func:`passmix.fit_pooled`, or the fit given), any k.

    The difference's delta covariance over the horizons
    (:meth:`passmix.PooledFit.differences`) gives the band its sup-t critical
    value; the intervals are the difference's profile likelihood
    (:meth:`passmix.PooledFit.difference_profile`, the band at the pointwise
    level of that critical value) or the delta method's. `interval`: None is
    profile up to :data:`PROFILE_PAIRS` pairs, delta beyond. With
    ``check=True`` each pair is tested against its own trials
    (:func:`pooled_check`); one refuted at :data:`CHECK_LEVEL` gets intervals
    that also take in the mixtures' (:class:`MixtureMethod`).
    """

    name = "pooled"

    def __init__(self, interval: str | None = None, check: bool = False) -> None:
        if interval is not None and interval not in PAIR_INTERVALS:
            raise ValueError(f"unknown interval {interval!r}; expected one of "
                             f"{', '.join(map(repr, PAIR_INTERVALS))}.")
        self.interval = interval
        self.check = bool(check)

    def __call__(self, setup: PairSetup) -> PairDifferences:
        from ..models.pooled.fit import fit_pooled

        fit = setup.given if setup.given is not None else fit_pooled(
            setup.panel, seed=setup.seed, **setup.fit_kwargs)
        interval = self.interval or ("profile" if len(setup.pairs) <= PROFILE_PAIRS
                                     else "delta")
        details: dict = {"fit": fit, "interval": interval}
        if interval == "delta" and fit.weak_coordinates:
            # a system's own delta interval is widened along the ridge (PooledFit.ridge_points);
            # a difference's, from the joint covariance, is not
            weak = fit.weak_coordinates
            warnings.warn(f"the data leave {', '.join(weak)} flat to "
                          f"{'its bound' if len(weak) == 1 else 'their bounds'}: the "
                          "differences' delta intervals linearise at one point of "
                          "that ridge and can be too narrow beyond the trials; "
                          "interval='profile' searches it.", FitWarning, stacklevel=3)
        tested = [check_horizons(setup.panel, ia, ib, mask) if self.check else None
                  for (ia, ib), mask in zip(setup.pairs, setup.shared)]
        # every pair's difference at once, at the answer's horizons and the checks'
        every = np.union1d(setup.k, np.concatenate([t for t in tested if t is not None]
                                                   or [setup.k]))
        pooled = fit.differences(setup.pairs, setup.metric, every, setup.shared)
        take = np.searchsorted(every, setup.k)
        # every pair's sup-t critical value from one set of normal draws
        criticals = (_pooled_bands(np.stack([c[np.ix_(take, take)] for _, c, _ in pooled]),
                                   setup.level, setup.rng)
                     if setup.band else np.full(len(pooled), np.nan))
        mixture, fits = MixtureMethod(), {}
        parts, pair_methods, checks = [], [], []
        for n, ((ia, ib), mask) in enumerate(zip(setup.pairs, setup.shared)):
            part = self.pair(fit, setup, ia, ib, mask, interval, tested[n], every, pooled[n],
                             criticals[n])
            p_value = part.pop("p_value")
            how = self.name
            if p_value < CHECK_LEVEL:
                # the pair's own trials refute the pooled curve: its intervals widen to take
                # in the per-system mixtures' too, which assume nothing about task order
                part = _hull(part, mixture.pair(setup, ia, ib, mask, {}, fits))
                how = "pooled+mixture"
            parts.append(part)
            pair_methods.append(how)
            checks.append({"a": setup.panel.systems[ia], "b": setup.panel.systems[ib],
                           "p_value": p_value, "method": how})
        if self.check:
            details["checks"] = pd.DataFrame(checks)
        return PairDifferences(parts, details, pair_methods)

    def pair(self, fit, setup: PairSetup, ia: int, ib: int, shared: np.ndarray,
             interval: str, tested, every, pooled, critical: float = np.nan
             ) -> dict[str, Any]:
        """One pair's record from `pooled` (:meth:`PooledFit.differences` at the horizons
        `every`) with the band's `critical` value, and its check's p-value at the horizons
        `tested` (NaN if None)."""
        estimate, covariance, values = pooled
        k_arr, level, band = setup.k, setup.level, setup.band
        take = np.searchsorted(every, k_arr)
        covariance_k = covariance[np.ix_(take, take)]
        se = np.sqrt(np.maximum(np.diag(covariance_k), 0.0))
        out = _assemble(estimate[take], se, critical, level, band, values[0, take],
                        values[1, take])
        if interval == "profile":
            labels = fit.systems

            def ends(at):
                return fit.difference_profile(labels[ia], labels[ib], setup.metric, k_arr, at,
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
            out["p_value"] = pooled_check(fit, fit.panel, ia, ib, shared, setup.metric,
                                          (estimate[at], covariance[np.ix_(at, at)]))
        return out


#: the methods by name (``"auto"`` is resolved by :func:`passmix.compare` first)
PAIR_METHODS = {cls.name: cls for cls in (PooledMethod, PosteriorMethod, DirectMethod,
                                          MixtureMethod)}


def pair_method(name: str, *, interval: str | None = None, n_boot: int = 4000,
                check: bool = False, pooled_beyond: bool = False) -> PairMethod:
    """The method object of `name`, with the options that apply to it.

    Examples
    --------
    >>> from passmix.compare.methods import pair_method
    >>> pair_method("pooled", interval="delta")
    PooledMethod(interval='delta', check=False)
    """
    if name not in PAIR_METHODS:
        raise ValueError(f"unknown method {name!r}; expected one of "
                         f"{', '.join(map(repr, PAIR_METHODS))}.")
    if name == "pooled":
        return PooledMethod(interval, check)
    if name == "direct":
        return DirectMethod(n_boot)
    if name == "mixture":
        return MixtureMethod(pooled_beyond, interval if pooled_beyond else None)
    return PAIR_METHODS[name]()


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


def mover(est_a, ends_a, est_b, ends_b):
    """MOVER ends of ``b - a`` from each estimate's own interval (independent estimates).

    Examples
    --------
    >>> from passmix.compare.methods import mover
    >>> [round(float(v), 4) for v in mover(0.5, (0.4, 0.6), 0.7, (0.6, 0.8))]
    [0.0586, 0.3414]
    """
    (lo_a, hi_a), (lo_b, hi_b) = ends_a, ends_b
    diff = est_b - est_a
    return (diff - np.hypot(est_b - lo_b, hi_a - est_a),
            diff + np.hypot(hi_b - est_b, est_a - lo_a))


def _pooled_bands(covariances: np.ndarray, level: float, rng: np.random.Generator
                  ) -> np.ndarray:
    """The `level` quantile of max_k |Z_k| / sd_k for Z ~ N(0, covariance), for each of
    `covariances` (n, K, K), from one set of standard normal draws."""
    n, n_k = covariances.shape[:2]
    sd = np.sqrt(np.maximum(np.diagonal(covariances, axis1=1, axis2=2), 0.0))  # (n, K)
    live = sd > 0
    safe = np.where(live, sd, 1.0)
    corr = covariances / (safe[:, :, None] * safe[:, None, :])
    # a horizon with no spread drops out (its row and column zero: a draw of 0 there)
    corr = np.where(live[:, :, None] & live[:, None, :], corr, 0.0)
    # eigh, not cholesky: the correlation of nearby horizons is singular to rounding
    values, vectors = np.linalg.eigh(corr)
    roots = vectors * np.sqrt(np.maximum(values, 0.0))[:, None, :]
    draws = rng.standard_normal((_NORMAL_DRAWS, n_k))
    out = np.empty(n)
    step = max(1, 4_000_000 // (_NORMAL_DRAWS * n_k))
    for first in range(0, n, step):
        block = roots[first:first + step]                                   # (p, K, K)
        # max_k |Z_k| one horizon at a time: (draws, pairs) products, never (draws,
        # pairs, K) at once
        top = np.abs(draws @ block[:, 0, :].T)
        for j in range(1, n_k):
            np.maximum(top, np.abs(draws @ block[:, j, :].T), out=top)
        out[first:first + step] = np.quantile(top, level, axis=0)
    out[live.sum(axis=1) <= 1] = normal_quantile(level)
    return out


def _ends(estimate, se, z):
    """``estimate -+ z se`` within [-1, 1]; a column with no spread says nothing: [-1, 1]."""
    lower = np.where(se > 0, np.clip(estimate - z * se, -1.0, 1.0), -1.0)
    upper = np.where(se > 0, np.clip(estimate + z * se, -1.0, 1.0), 1.0)
    return lower, upper


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


def _hull(pooled: dict[str, Any], mixture: dict[str, Any]) -> dict[str, Any]:
    """Both methods' intervals and bands taken together; the mixture's estimate."""
    out = dict(mixture)
    for low, high in (("lower", "upper"), ("band_lower", "band_upper")):
        out[low] = np.fmin(pooled[low], mixture[low])
        out[high] = np.fmax(pooled[high], mixture[high])
    out["se"] = np.fmax(pooled["se"], mixture["se"])
    return out
