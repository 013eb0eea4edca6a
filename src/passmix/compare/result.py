"""The result of a paired comparison: differences per pair and horizon, intervals, bands, signs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data.panel import same_system, system_name

__all__ = ["Comparison"]


@dataclass(frozen=True, repr=False)
class Comparison:
    """Paired differences ``M_b(k) - M_a(k)`` of systems that share tasks (:func:`passmix.compare`).

    Every array is (pairs, horizons), pairs in the order of :attr:`pairs`.

    Attributes
    ----------
    method : str
        ``"pooled"`` (the joint fit: profile or delta), ``"direct"`` (per-task
        unbiased differences), ``"mixture"`` (per-system fits joined) or
        ``"posterior"`` (NUTS draws of the pooled model); with
        ``method="auto"`` a pair whose trials refute the pooled curve also
        takes in the mixture, as :attr:`pair_methods` and
        ``details["checks"]`` say.
    metric : str
        ``"pass@k"``, ``"pass^k"`` or ``"auc@k"``.
    k : numpy.ndarray
        The horizons, increasing.
    level : float
        Confidence level of the intervals and of the band.
    pairs : tuple of (a, b)
        The systems compared; each difference is b minus a.
    estimate, se : numpy.ndarray
        The difference and its standard error.
    lower, upper : numpy.ndarray
        Pointwise intervals: each holds its own difference with probability `level`.
    band_lower, band_upper : numpy.ndarray
        The simultaneous band: it holds a pair's whole difference curve over
        :attr:`k` with probability `level` (NaN when not asked for).
    critical : numpy.ndarray
        The band's critical value per pair (``estimate -+ critical * se``).
    value_a, value_b : numpy.ndarray
        Each system's own metric on the tasks of the pair.
    n_tasks : numpy.ndarray
        Tasks both systems ran, per pair.
    pair_methods : tuple of str
        The method each pair got (``"pooled+mixture"`` where ``method="auto"``
        found the pooled curve refuted; ``"mixture+pooled"`` where, past 20
        trials, its intervals beyond the pair's trials also span the pooled
        model's: :meth:`summary` then says ``"mixture"`` at the horizons within
        them).
    p_b_better : numpy.ndarray or None
        With ``method="posterior"``, the posterior probability that b's
        metric exceeds a's; else None.
    """

    method: str
    metric: str
    k: np.ndarray
    level: float
    pairs: tuple
    estimate: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    band_lower: np.ndarray
    band_upper: np.ndarray
    critical: np.ndarray
    value_a: np.ndarray
    value_b: np.ndarray
    n_tasks: np.ndarray
    pair_methods: tuple = ()
    p_b_better: np.ndarray | None = None
    details: dict = field(default_factory=dict, compare=False)

    @property
    def has_band(self) -> bool:
        return bool(np.isfinite(self.band_lower).any())

    @property
    def certified(self) -> np.ndarray:
        """(pairs, K) sign of the difference where certified: +1 (b better), -1, or 0.

        The band decides when there is one (every certified sign of a pair then
        holds together with probability `level`); else the pointwise interval.
        """
        lower, upper = ((self.band_lower, self.band_upper) if self.has_band
                        else (self.lower, self.upper))
        return np.where(lower > 0, 1, np.where(upper < 0, -1, 0))

    def crossings(self) -> pd.DataFrame:
        """Where certified signs flip: a confidence set for the first horizon at which they do.

        For each pair whose certified signs include both +1 and -1, the first
        sign certified (at ``first_k``) holds up to ``after`` (the last horizon
        of that first certified run), and the opposite sign is certified from
        ``by``: the first change of sign after ``first_k`` happens at a horizon
        in ``(after, by]``. Between grid points nothing is claimed, so a coarse
        grid gives a wide set. Pairs without a certified flip get NaN there.
        """
        rows = []
        for (a, b), signs in zip(self.pairs, self.certified):
            seen = np.flatnonzero(signs != 0)
            row: dict[str, Any] = {"a": a, "b": b, "crosses": False, "first_sign": 0,
                                   "first_k": np.nan, "after": np.nan, "by": np.nan}
            if seen.size:
                start = seen[0]
                first = int(signs[start])
                row.update(first_sign=first, first_k=int(self.k[start]))
                flipped = np.flatnonzero(signs[start:] == -first)
                if flipped.size:
                    stop = start + flipped[0]
                    run = np.flatnonzero(signs[start:stop] != first)
                    end = start + (run[0] if run.size else stop - start) - 1
                    row.update(crosses=True, after=int(self.k[end]), by=int(self.k[stop]))
            rows.append(row)
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """One row per pair and horizon: the difference, its intervals and the certified sign.

        Columns ``a, b, metric, k, estimate, se, lower, upper, band_lower,
        band_upper, certified, method, value_a, value_b, n_tasks``, and
        ``p_b_better`` with ``method="posterior"``.
        """
        n_pairs, n_k = self.estimate.shape
        methods = np.repeat(np.array(self.pair_methods or [self.method] * n_pairs,
                                     dtype=object)[:, None], n_k, axis=1)
        spanned = self.details.get("spanned")
        if spanned is not None:  # the pooled model is in only beyond each pair's trials
            methods[(methods == "mixture+pooled") & ~spanned] = "mixture"
        a = [p[0] for p in self.pairs for _ in range(n_k)]
        b = [p[1] for p in self.pairs for _ in range(n_k)]
        table = pd.DataFrame({
            "a": a, "b": b, "metric": self.metric, "k": np.tile(self.k, n_pairs),
            "estimate": self.estimate.ravel(), "se": self.se.ravel(),
            "lower": self.lower.ravel(), "upper": self.upper.ravel(),
            "band_lower": self.band_lower.ravel(), "band_upper": self.band_upper.ravel(),
            "certified": self.certified.ravel(),
            "method": methods.ravel(),
            "value_a": self.value_a.ravel(), "value_b": self.value_b.ravel(),
            "n_tasks": np.repeat(self.n_tasks, n_k)})
        if self.p_b_better is not None:
            table["p_b_better"] = self.p_b_better.ravel()
        return table

    def pair(self, a, b) -> int:
        """The position of pair (a, b) in :attr:`pairs` (KeyError if not compared).

        A system is named by its label, or by a plain name for a one-column
        group key and the other way round (:func:`passmix.data.panel.same_system`).
        """
        for n, (x, y) in enumerate(self.pairs):
            if same_system(x, a) and same_system(y, b):
                return n
        for x, y in self.pairs:
            if same_system(x, b) and same_system(y, a):
                raise KeyError(f"pair ({system_name(a)}, {system_name(b)}) was not compared; "
                               f"({system_name(b)}, {system_name(a)}) was, the difference "
                               f"{system_name(a)} - {system_name(b)}: swap them.")
        shown = ", ".join(f"{system_name(x)} vs {system_name(y)}" for x, y in self.pairs[:10])
        raise KeyError(f"pair ({system_name(a)}, {system_name(b)}) was not compared; pairs: "
                       f"{shown}{', ...' if len(self.pairs) > 10 else ''}.")

    def plot(self, a=None, b=None, *, ax=None):
        """Both systems' curves, and their difference with its interval, band and certified
        horizons shaded (:func:`passmix.plots.compare.plot_comparison`)."""
        from ..plots.compare import plot_comparison

        return plot_comparison(self, a, b, ax=ax)

    def info(self) -> dict[str, Any]:
        """Method, metric, level, horizons, pairs and the fit behind the comparison."""
        return {"method": self.method, "metric": self.metric, "level": self.level,
                "k": self.k.tolist(), "n_pairs": len(self.pairs), **self.details}

    def __repr__(self) -> str:
        signs = self.certified
        return (f"Comparison(method={self.method!r}, metric={self.metric!r}, "
                f"pairs={len(self.pairs)}, k={self.k.tolist()}, level={self.level}, "
                f"certified +{int((signs > 0).sum())} / -{int((signs < 0).sum())} "
                f"of {signs.size})")
