"""Starting points of the mixture's optimiser: random, shrunk, probes over the box,
relabellings, component moves and the split of a fitted component."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logit, polygamma

from ...data.counts import Counts
from .parameters import (PARAMETER_BOUNDS, SEARCH_LOG_CONCENTRATION, bounds, pack,
                         split_coordinates, unpack)

def _shrunk_rates(y, m, weight):
    rate = (y + 0.5) / (m + 1.0)
    order = np.argsort(rate)
    cum = np.cumsum(weight[order]) / weight.sum()
    return rate[order], cum


def _random_start(rng, h, rates, cum, box, log_kappa_range=(np.log(1.0), np.log(50.0)),
                  weight_sd=0.5):
    """Components at random quantiles of the tasks' shrunk rates, random weights and
    concentrations (log-uniform over `log_kappa_range`)."""
    levels = np.sort(rng.uniform(0.02, 0.98, h))
    means = rates[np.minimum(np.searchsorted(cum, levels), rates.size - 1)]
    eta = np.sort(logit(means) + rng.normal(0.0, 0.3, h))
    z = np.concatenate([
        rng.normal(0.0, weight_sd, h - 1), eta[:1], np.log(np.maximum(np.diff(eta), 0.05)),
        rng.uniform(*log_kappa_range, h),
    ])
    return np.clip(z, box[:, 0], box[:, 1])


class _Neighbours:
    """Other coordinates of (nearly) the same mixture, where the coordinates are degenerate.

    The ordered means make two places degenerate:

    * **a seam**: two adjacent components with (nearly) the same mean (their
      log gap at its lower bound). Past it the components would swap places,
      which the ordering forbids; the same mixture with the two components'
      weights and concentrations swapped is the other side of the seam.
    * **an empty component** (weight below 1e-4 of the largest): its mean
      and concentration are free, and a search cannot see where they could
      usefully go. It is placed with weight 1e-3 at the tasks' low, middle
      and high shrunk success rates, each with the smallest, a middle and the
      largest concentration.
    """

    def __init__(self, h: int, counts: Counts):
        self.h = h
        y, m, weight = counts.pairs()
        rates, cum = _shrunk_rates(y, m, weight.astype(float))
        picks = np.minimum(np.searchsorted(cum, [0.05, 0.5, 0.95]), rates.size - 1)
        self.logit_rates = np.unique(logit(rates[picks]))
        lo, hi = SEARCH_LOG_CONCENTRATION
        self.log_kappas = np.array([lo, 0.5 * (lo + hi), hi])
        self.seam = PARAMETER_BOUNDS["log_mean_gaps"][0] + 1e-3

    def __call__(self, z: np.ndarray) -> list[np.ndarray]:
        h = self.h
        w, a, b = unpack(z, h)
        eta = np.log(a) - np.log(b)
        log_kappa = split_coordinates(z, h)[3]
        gaps = split_coordinates(z, h)[2]
        out = []
        for i in np.flatnonzero(gaps <= self.seam):
            swap = np.arange(h)
            swap[[i, i + 1]] = [i + 1, i]
            out.append(_ordered_pack(w[swap], eta, log_kappa[swap]))
        for c in np.flatnonzero(w < 1e-4 * w.max()):
            for e in self.logit_rates:
                for lk in self.log_kappas:
                    w2, eta2, lk2 = w.copy(), eta.copy(), log_kappa.copy()
                    w2[c], eta2[c], lk2[c] = 1e-3, e, lk
                    out.append(pack(w2 / w2.sum(), eta2, lk2))
        return out


def _component_moves(z: np.ndarray, h: int) -> list:
    """Curves through `z` that move one component's logit mean, or its weight, alone.

    In ordered coordinates one component's mean is the first mean plus the
    gaps below it, so moving it alone changes several coordinates, and past
    another component's mean the two swap places: :func:`pack` sorts them.
    """
    w, a, b = unpack(z, h)
    eta = np.log(a) - np.log(b)
    log_kappa = split_coordinates(z, h)[3]
    out = []
    for c in range(h):
        step = np.eye(h)[c]
        out.append(lambda t, s=step: pack(w, eta + t * s, log_kappa))
        out.append(lambda t, s=step: pack(w * np.exp(np.clip(t, -30, 30) * s)
                                          / np.sum(w * np.exp(np.clip(t, -30, 30) * s)),
                                          eta, log_kappa))
    return out


def _ordered_pack(weights, eta, log_kappa):
    """:func:`pack` of components whose means are already in order (equal ones kept
    in the order given, so a swap of two coinciding components survives)."""
    h = len(weights)
    logit_w = np.log(np.maximum(weights[1:], np.finfo(float).tiny)) - np.log(
        np.maximum(weights[0], np.finfo(float).tiny))
    gaps = np.log(np.maximum(np.diff(eta), np.exp(PARAMETER_BOUNDS["log_mean_gaps"][0])))
    return np.concatenate([logit_w, eta[:1], gaps, log_kappa])[: 3 * h - 1]


def _relabelled(z: np.ndarray, h: int) -> list[np.ndarray]:
    """The mixture at `z` with its components' weights and concentrations moved to
    other components' means (every other assignment; for H = 4 the swaps of
    neighbours and the reversal).

    A path through the likelihood region along which two components' means
    cross leaves the ordered coordinates at a seam and comes back elsewhere:
    these points, climbed from into the region, start searches there.
    """
    if h == 1:
        return []
    w = unpack(z, h)[0]
    _, first, gaps, log_kappa = split_coordinates(z, h)
    eta = first + np.concatenate([[0.0], np.cumsum(np.exp(gaps))])
    if h <= 3:
        orders = [np.array(p) for p in itertools.permutations(range(h))][1:]
    else:
        orders = [np.r_[:i, i + 1, i, i + 2:h] for i in range(h - 1)] + [np.arange(h)[::-1]]
    return [_ordered_pack(w[p], eta, log_kappa[p]) for p in orders]


def _probes(counts: Counts, h: int, n: int) -> list[np.ndarray]:
    """Points spread over the plausible part of the box, for the profile search.

    Like the fit's random starts, but with concentrations over the box's
    whole range (all-or-nothing tasks to the binomial limit) and weights
    spread wider: the extremes of a metric over the likelihood region often
    sit at such limits. Drawn from a fixed seed, so that the interval does
    not depend on the fit's.
    """
    y, m, weight = counts.pairs()
    rates, cum = _shrunk_rates(y, m, weight.astype(float))
    rng = np.random.default_rng(0)
    box = bounds(h)
    return [_random_start(rng, h, rates, cum, box, SEARCH_LOG_CONCENTRATION, 1.5)
            for _ in range(n)]


def _split_start(previous, box):
    """Split the heaviest component of the H - 1 optimum in two along the logit mean."""
    h = previous.n_components
    w, a, b = unpack(previous.params, h)
    _, first, gaps, log_kappa = split_coordinates(previous.params, h)
    eta = first + np.concatenate([[0.0], np.cumsum(np.exp(gaps))])
    c = int(np.argmax(w))
    spread = np.clip(0.5 * np.sqrt(polygamma(1, a[c]) + polygamma(1, b[c])), 0.1, 2.0)
    weights = np.concatenate([np.delete(w, c), [w[c] / 2, w[c] / 2]])
    means = np.concatenate([np.delete(eta, c), [eta[c] - spread, eta[c] + spread]])
    kappas = np.concatenate([np.delete(log_kappa, c), [log_kappa[c]] * 2])
    return np.clip(pack(weights, means, kappas), box[:, 0], box[:, 1])


