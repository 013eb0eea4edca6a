"""``passmix.rank``: systems ranked at a horizon, with simultaneous intervals and rank intervals.

For each horizon k, from the joint covariance of every system's metric
(:meth:`passmix.PooledFit.metric_covariance`; or, with ``method="mixture"``,
each system's own fit, independent):

* each system's metric with an interval that holds for **all** systems at once:
  the model's own interval (the pooled fit's profile, or the mixture's) at
  the level whose normal quantile is the sup-t critical value over the
  systems (Bonferroni over the systems for the mixture);
* a rank interval: system i ranks no better than 1 + the number of systems
  certainly better than it, and no worse than I - the number certainly worse,
  "certainly" by intervals for all pairwise differences at once (sup-t over
  the pairs; Bonferroni-joined per-system intervals for the mixture), so all
  rank intervals hold together at the level;
* the probability that each system is best, the share of draws of the
  metrics' approximate normal distribution in which it is the largest.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from .._defaults import LEVEL, RANK_METHODS
from .._validation import (check_interval_method, check_k, check_level, check_metric,
                           check_seed, check_whole)
from ..inference.delta import normal_quantile

__all__ = ["RANK_METHODS", "RANK_METHOD_CLASSES", "MixtureRanking", "PooledRanking",
           "RankMethod", "RankSetup", "Ranking", "rank"]

#: normal draws per batch (bounds the (draws x pairs) block held at once)
_BATCH = 1000


@dataclass(frozen=True, repr=False)
class Ranking:
    """Systems ranked at each horizon (:func:`passmix.rank`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per horizon and system, best first: ``k, system, estimate, se,
        lower, upper`` (simultaneous over the systems), ``rank`` (1 = best, by
        the estimate), ``rank_lower, rank_upper`` (simultaneous rank interval)
        and ``p_best``.
    method, metric : str
    level : float
    """

    table: pd.DataFrame
    method: str
    metric: str
    level: float
    details: dict = field(default_factory=dict, compare=False)

    def summary(self) -> pd.DataFrame:
        """The ranking table (a copy)."""
        return self.table.copy()

    def info(self) -> dict[str, Any]:
        """Method, metric, level and horizons."""
        return {"method": self.method, "metric": self.metric, "level": self.level,
                "k": sorted(set(self.table["k"].tolist())), **self.details}

    def plot(self, k: int | None = None, *, ax=None):
        """Each system's metric with its simultaneous interval, best on top, the rank
        interval in its label (the first horizon unless `k` is given)."""
        from ..data.panel import system_name
        from ..plots.fit import METRIC_LABELS, get_ax

        ks = self.table["k"].unique()
        k = ks[0] if k is None else k
        if k not in ks:
            raise ValueError(f"k = {k} was not ranked; horizons: {ks.tolist()}.")
        part = self.table[self.table["k"] == k].iloc[::-1]
        ax = get_ax(ax)
        y = np.arange(len(part))
        ax.errorbar(part["estimate"], y, xerr=[part["estimate"] - part["lower"],
                                               part["upper"] - part["estimate"]],
                    fmt="o", ms=4, capsize=2)
        ax.set_yticks(y, [f"{system_name(s)}  [{lo}-{hi}]" for s, lo, hi in
                          zip(part["system"], part["rank_lower"], part["rank_upper"])])
        ax.set_xlabel(f"{METRIC_LABELS[self.metric]} at k = {k} "
                      f"({self.level:.0%} simultaneous; rank interval in brackets)")
        return ax

    def __repr__(self) -> str:
        n = self.table.groupby("k").size().iloc[0]
        return (f"Ranking(method={self.method!r}, metric={self.metric!r}, systems={n}, "
                f"k={sorted(set(self.table['k'].tolist()))}, level={self.level})")


def rank(data: Any, k, *, metric: str = "pass@k", method: str | RankMethod = "auto",
         interval: str | None = None, level: float = LEVEL, seed=None, n_draws: int = 4000,
         system: Hashable | None = None, **fit_kwargs) -> Ranking:
    """Rank systems on their shared tasks at horizon(s) `k`, with honest uncertainty.

    Parameters
    ----------
    data : Panel, mapping of Counts, DataFrame, path or PooledFit
        As :func:`passmix.compare` takes it.
    k : int or sequence of int
        Horizon(s); each is ranked on its own.
    metric : {"pass@k", "pass^k", "auc@k"}, default "pass@k"
    method : {"auto", "pooled", "mixture"} or RankMethod, default "auto"
        The pooled model's joint covariance (:class:`PooledRanking`); each
        system's own Beta mixture (:class:`MixtureRanking`: independent,
        conservative); or pooled up to 20 trials per task and the mixture
        beyond, as :func:`passmix.compare` decides; where it pools, at horizons
        beyond some system's trials each system's interval also spans its own
        mixture's, as :func:`passmix.estimate_table` does (the estimates, ranks
        and rank intervals stay pooled); where it keeps the mixtures and the
        systems share tasks, each system's interval beyond its trials also
        spans the pooled model's (the estimates, ranks and rank intervals stay
        the mixtures'). A method object is taken as it is,
        with its own `interval`.
    interval : {"profile", "delta"}, optional
        How each system's simultaneous interval is found: profile likelihood or
        the delta method. None: the model's own default (the profile, except
        where the pooled fit is too large to profile). The rank intervals and
        P(best) rest on the metrics' joint covariance either way.
    level : float, default 0.95
        Level of the simultaneous intervals and of the rank intervals.
    seed : int or numpy.random.Generator, optional
        Seed of the normal draws (and of the fits); None means 0.
    n_draws : int, default 4000
        Normal draws for the critical values and the probability of being best.
    system : hashable, optional
        The system column of a table or file.
    **fit_kwargs
        Passed to the model's fit.

    Returns
    -------
    Ranking

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(1.0, 1.5, size=100)
    >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [0.0], [1.5]]) - d)))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["s", "m", "l"])
    >>> table = passmix.rank(panel, 10).summary()
    >>> table["system"].tolist(), table["rank_upper"].tolist()
    (['l', 'm', 's'], [1, 2, 3])
    """
    from .paired import systems_setup

    metric = check_metric(metric)
    k_arr, _ = check_k(k)
    interval = check_interval_method(interval, optional=True)
    level = check_level(level)
    n_draws = check_whole(n_draws, "n_draws", minimum=100)
    rng = np.random.default_rng(0 if seed is None else check_seed(seed))
    chosen = method if isinstance(method, RankMethod) else None
    fit, panel, name, why = systems_setup(
        data, system, chosen.name if chosen is not None else method, RANK_METHODS, fit_kwargs)
    if chosen is None:
        if name not in RANK_METHOD_CLASSES:
            raise ValueError("rank takes counts or a pooled fit (passmix.fit_pooled), not "
                             "posterior draws: rank the fit the draws started from, "
                             "passmix.bayes.pooled.pooled_fit(draws).")
        # "auto" that chose the pooled model leans on its curve within the trials only
        # "auto" that kept the mixtures spans the pooled model beyond the trials
        chosen = (PooledRanking(mixture_beyond=True, interval=interval)
                  if name == "pooled" and why else
                  MixtureRanking(pooled_beyond=True, interval=interval)
                  if name == "mixture" and why else RANK_METHOD_CLASSES[name](interval=interval))
    elif interval is not None and interval != chosen.interval:
        raise ValueError(f"interval={interval!r} and a method object with interval="
                         f"{chosen.interval!r}: give the interval to the method object.")
    details: dict = {"why": f"{name}: {why}"} if why else {}
    frames = chosen(RankSetup(panel=panel, metric=metric, k=k_arr, level=level,
                              n_draws=n_draws, rng=rng, seed=0 if seed is None else seed,
                              fit_kwargs=fit_kwargs, given=fit), details)
    if "mixture_beyond" in details:
        details["why"] += (f"; at k = {', '.join(map(str, details['mixture_beyond']))}, "
                           "beyond the trials, where no check sees systems that order the "
                           "tasks differently, each system's interval also spans its own "
                           "mixture's")
    if "pooled_beyond" in details:
        details["why"] += (f"; at k = {', '.join(map(str, details['pooled_beyond']))}, "
                           "beyond the trials, each system's interval also spans the pooled "
                           "model's (task difficulties shared by all systems)")
    details["interval"] = chosen.interval or _default_interval(details.get("fit"))
    return Ranking(table=pd.concat(frames, ignore_index=True), method=name, metric=metric,
                   level=level, details=details)


def _default_interval(fit) -> str:
    """The intervals the systems got with no `interval` asked (a pooled `fit`, or None for
    the mixtures)."""
    if fit is None:
        return "profile"
    methods = {fit.default_method(i) for i in range(len(fit.systems))}
    return methods.pop() if len(methods) == 1 else "delta (profile for a system on its bound)"


@dataclass(frozen=True)
class RankSetup:
    """What every method of :func:`rank` starts from: the panel, metric, horizons, level,
    the normal draws (`n_draws`, `rng`), the fits' `seed` and `fit_kwargs`, and a pooled
    fit the caller gave (`given`, or None)."""

    panel: Any
    metric: str
    k: np.ndarray
    level: float
    n_draws: int
    rng: np.random.Generator
    seed: Any
    fit_kwargs: dict
    given: Any = None


class RankMethod:
    """A way to rank: called on a :class:`RankSetup` and the comparison's `details` (which
    it fills with what it fitted), it returns one table per horizon."""

    name: str = ""

    def __init__(self, interval: str | None = None) -> None:
        self.interval = check_interval_method(interval, optional=True)

    def __call__(self, setup: RankSetup, details: dict) -> list[pd.DataFrame]:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(interval={self.interval!r})"


class PooledRanking(RankMethod):
    """The pooled model's joint covariance of every system's metric
    (:meth:`passmix.PooledFit.metric_covariance`), sup-t over the systems and the pairs;
    each system's interval is the fit's own (profile where it profiles) at the level of
    that critical value.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.compare.ranking import PooledRanking
    >>> rng = np.random.default_rng(0)
    >>> p = 1 / (1 + np.exp(-(np.array([[-1.0], [1.5]]) - rng.normal(1.0, 1.5, size=60))))
    >>> panel = passmix.Panel(rng.binomial(10, p), np.full(p.shape, 10), systems=["s", "l"])
    >>> passmix.rank(panel, 10, method=PooledRanking()).method
    'pooled'
    """

    name = "pooled"

    def __init__(self, mixture_beyond: bool = False, interval: str | None = None) -> None:
        super().__init__(interval)
        self.mixture_beyond = bool(mixture_beyond)

    def __repr__(self) -> str:
        return (f"PooledRanking(mixture_beyond={self.mixture_beyond}, "
                f"interval={self.interval!r})")

    def __call__(self, setup: RankSetup, details: dict) -> list[pd.DataFrame]:
        frames = self._pooled(setup, details)
        if not self.mixture_beyond:
            return frames
        # beyond some system's trials no check sees systems that order the tasks a little
        # differently, and a system's pooled interval alone under-covers there
        # (docs/results/pooled_reorder.md): each system's interval also holds its mixture's,
        # at the mixture ranking's simultaneous level. The rank intervals rest on the
        # pairs' differences, which lean on the shared order less (0.90-0.94 at k = 100-1000
        # there, docs/results/compare/simulated.md, "reordered"), and the mixtures' would
        # tell almost no pair apart: they stay pooled, as do the estimates and ranks
        panel = setup.panel
        most = np.array([int(panel.trials[s].max()) for s in range(panel.shape[0])])
        beyond = setup.k > most.min()
        if not beyond.any():
            return frames
        k_far = setup.k[beyond]
        fits, _, _, (lower, upper) = _mixture_fits(panel, k_far, setup.metric, setup.level,
                                                   setup.seed, setup.fit_kwargs,
                                                   self.interval or "profile")
        details["fits"] = dict(zip(panel.systems, fits))
        details["mixture_beyond"] = k_far.tolist()
        ends = np.full((2, len(panel.systems), len(setup.k)), np.nan)
        ends[0][:, beyond], ends[1][:, beyond] = lower, upper
        return _span_beyond(frames, setup, most, *ends)

    def _pooled(self, setup: RankSetup, details: dict) -> list[pd.DataFrame]:
        fit = setup.given
        if fit is None:
            from ..models.pooled.fit import fit_pooled

            fit = fit_pooled(setup.panel, seed=setup.seed, **setup.fit_kwargs)
        details["fit"] = fit
        frames = []
        for kv in setup.k:
            est, cov = fit.metric_covariance(setup.metric, int(kv))

            def ends(at: float, kv=int(kv)):
                # the fit's own intervals (profile where it profiles), at the level
                # that makes them simultaneous: the delta method alone under-covers
                # far horizons, where the shared difficulty's error does not cancel
                pairs = [fit.system(label).interval(setup.metric, kv, at,
                                                    method=self.interval)
                         for label in setup.panel.systems]
                return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])

            frames.append(_ranked(setup.panel.systems, kv, est, cov, setup.level,
                                  setup.n_draws, setup.rng, ends))
        return frames


class MixtureRanking(RankMethod):
    """Each system's own Beta mixture (independent, conservative): Bonferroni-level profile
    intervals over the systems, pairs joined by MOVER at the Bonferroni level over the
    pairs.

    With ``pooled_beyond=True`` (``method="auto"`` past 20 trials per task, where the
    systems share tasks), each system's interval beyond its trials also spans the pooled
    model's at the same level, as :func:`passmix.estimate_table` does there: a system's
    own counts cannot check its Beta tail near 0, which decides Pass@k far beyond the
    trials (``docs/results/rare_coverage.md``). The estimates, ranks and rank intervals
    stay the mixtures'.
    """

    name = "mixture"

    def __init__(self, pooled_beyond: bool = False, interval: str | None = None) -> None:
        super().__init__(interval)
        self.pooled_beyond = bool(pooled_beyond)

    def __repr__(self) -> str:
        return (f"MixtureRanking(pooled_beyond={self.pooled_beyond}, "
                f"interval={self.interval!r})")

    def __call__(self, setup: RankSetup, details: dict) -> list[pd.DataFrame]:
        frames = _mixture_ranking(setup.panel, setup.k, setup.metric, setup.level,
                                  setup.n_draws, setup.rng, setup.seed, setup.fit_kwargs,
                                  details, self.interval or "profile")
        panel = setup.panel
        most = np.array([int(panel.trials[s].max()) for s in range(panel.shape[0])])
        beyond = setup.k > most.min()
        shared = ((panel.trials > 0).sum(axis=0) >= 2).any()
        if not (self.pooled_beyond and shared and beyond.any()):
            return frames
        from ..models.pooled.fit import fit_pooled

        fit = fit_pooled(panel, seed=setup.seed)  # its own options: fit_kwargs are the mixtures'
        details["pooled_fit"] = fit
        details["pooled_beyond"] = setup.k[beyond].tolist()
        level_sys = 1 - (1 - setup.level) / panel.shape[0]
        ends = np.full((2, len(panel.systems), len(setup.k)), np.nan)
        for n in np.flatnonzero(beyond):
            for s in np.flatnonzero(setup.k[n] > most):  # the systems this horizon is beyond
                ends[:, s, n] = fit.system(panel.systems[s]).interval(
                    setup.metric, int(setup.k[n]), level_sys, method=self.interval)
        return _span_beyond(frames, setup, most, *ends)


def _span_beyond(frames: list[pd.DataFrame], setup: RankSetup, most: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray) -> list[pd.DataFrame]:
    """Each system's interval at each horizon beyond its trials (`most`, the most any of its
    tasks had), widened to hold another model's ends; `lower` and `upper` are
    (systems, horizons) over ``setup.k``. Estimates, ranks and rank intervals stay."""
    out = list(frames)
    for n, kv in enumerate(setup.k):
        own = kv > most
        if not own.any():
            continue
        frame = out[n].set_index("system")
        names = [setup.panel.systems[s] for s in np.flatnonzero(own)]
        frame.loc[names, "lower"] = np.fmin(frame.loc[names, "lower"], lower[own, n])
        frame.loc[names, "upper"] = np.fmax(frame.loc[names, "upper"], upper[own, n])
        out[n] = frame.reset_index()[out[n].columns]
    return out


#: the ranking methods by name (``"auto"`` is resolved by :func:`rank` first)
RANK_METHOD_CLASSES = {cls.name: cls for cls in (PooledRanking, MixtureRanking)}


def _max_quantiles(draws_of, n_draws: int, level: float, rng, scales) -> list[float]:
    """For each way of scaling a normal draw (``scales``: functions of a draw batch to
    its |standardised| values), the `level` quantile of their maximum."""
    maxima = [np.empty(n_draws) for _ in scales]
    for start in range(0, n_draws, _BATCH):
        z = draws_of(min(_BATCH, n_draws - start), rng)
        for out, scale in zip(maxima, scales):
            out[start:start + z.shape[0]] = scale(z).max(axis=1)
    return [float(np.quantile(m, level)) for m in maxima]


def _ranked(systems, k: int, est: np.ndarray, cov: np.ndarray, level: float, n_draws: int,
            rng, ends) -> pd.DataFrame:
    """The ranking at one horizon from the metrics' estimate and joint covariance.

    `ends(level)` gives each system's interval at a level; it is asked at the
    level whose two-sided normal quantile is the systems' sup-t critical value.
    """
    n = est.size
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
    i, j = np.triu_indices(n, 1)
    pair_var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
    pair_sd = np.sqrt(np.maximum(pair_var, 0.0))
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    safe, safe_pair = np.where(sd > 0, sd, np.inf), np.where(pair_sd > 0, pair_sd, np.inf)
    wins = np.zeros(n)

    def draws_of(size, generator):
        z = generator.standard_normal((size, n)) @ root.T
        np.add.at(wins, np.argmax(est + z, axis=1), 1.0)
        return z

    c_sys, c_pair = _max_quantiles(draws_of, n_draws, level, rng,
                                   [lambda z: np.abs(z) / safe,
                                    lambda z: np.abs(z[:, i] - z[:, j]) / safe_pair])
    c_sys = c_sys if np.isfinite(c_sys) and c_sys > 0 else normal_quantile(level)
    diff = est[j] - est[i]
    # better[x, y]: x certainly better than y
    better = np.zeros((n, n), dtype=bool)
    better[j, i] = (diff - c_pair * pair_sd > 0) & (pair_sd > 0)
    better[i, j] = (diff + c_pair * pair_sd < 0) & (pair_sd > 0)
    lower, upper = ends(float(2 * ndtr(c_sys) - 1))
    return _table(systems, k, est, sd, lower, upper, better, wins / n_draws)


def _table(systems, k, est, se, lower, upper, better, p_best) -> pd.DataFrame:
    n = est.size
    order = np.argsort(-est, kind="stable")
    position = np.empty(n, dtype=int)
    position[order] = np.arange(1, n + 1)
    table = pd.DataFrame({"k": int(k), "system": list(systems), "estimate": est, "se": se,
                          "lower": lower, "upper": upper, "rank": position,
                          "rank_lower": 1 + better.sum(axis=0),
                          "rank_upper": n - better.sum(axis=1), "p_best": p_best})
    return table.iloc[order].reset_index(drop=True)


def _mixture_ranking(panel, k_arr, metric, level, n_draws, rng, seed, fit_kwargs, details,
                     interval: str = "profile"):
    """Each system's own mixture: Bonferroni-level profile intervals, pairs by MOVER."""
    from .methods import mover

    n = panel.shape[0]
    n_pairs = n * (n - 1) // 2
    fits, est, se, (sys_lower, sys_upper) = _mixture_fits(panel, k_arr, metric, level, seed,
                                                          fit_kwargs, interval)
    details["fits"] = dict(zip(panel.systems, fits))
    level_pair = 1 - (1 - level) / n_pairs
    pair_ends = [f.interval(metric, k_arr, level_pair, method=interval) for f in fits]
    frames = []
    for c, kv in enumerate(k_arr):
        better = np.zeros((n, n), dtype=bool)
        for a in range(n):
            for b in range(a + 1, n):
                lo, hi = mover(est[a, c], (pair_ends[a][0][c], pair_ends[a][1][c]),
                               est[b, c], (pair_ends[b][0][c], pair_ends[b][1][c]))
                better[b, a], better[a, b] = lo > 0, hi < 0
        z = rng.standard_normal((n_draws, n)) * se[:, c]
        p_best = np.bincount(np.argmax(est[:, c] + z, axis=1), minlength=n) / n_draws
        frames.append(_table(panel.systems, kv, est[:, c], se[:, c], sys_lower[:, c],
                             sys_upper[:, c], better, p_best))
    return frames


def _mixture_fits(panel, k_arr, metric, level, seed, fit_kwargs, interval: str = "profile"):
    """Each system's own mixture on the tasks it ran: the fits, the metric and its se
    (I, K), and the `interval` ends (lower, upper), each (I, K), at the Bonferroni level
    over the systems."""
    from ..data.counts import Counts
    from ..models.mixture.fit import fit

    fits = []
    for s in range(panel.shape[0]):
        ran = panel.trials[s] > 0
        fits.append(fit(Counts(panel.successes[s][ran], panel.trials[s][ran]), seed=seed,
                        **fit_kwargs))
    level_sys = 1 - (1 - level) / panel.shape[0]
    ends = [f.interval(metric, k_arr, level_sys, method=interval) for f in fits]
    return (fits, np.array([f.metric(metric, k_arr) for f in fits]),
            np.array([f.standard_error(metric, k_arr) for f in fits]),
            (np.array([e[0] for e in ends]), np.array([e[1] for e in ends])))
