"""The orderings every point of a likelihood region obeys, and interval ends repaired to
obey them: Pass@k and AUC@k rise with k, Pass^k falls, and
``Pass^k <= Pass@1 <= AUC@k <= Pass@k``."""

from __future__ import annotations

import numpy as np

from .delta import widen_degenerate

__all__ = ["INCREASING", "repair_across_metrics"]

#: the metrics whose value grows with k (the others' falls)
INCREASING = {"pass@k": True, "auc@k": True, "pass^k": False}


def repair_across_metrics(ends: dict[str, tuple]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Widen interval ends so that they obey every ordering the metrics obey.

    Parameters
    ----------
    ends : dict
        ``metric -> (k, estimate, lower, upper)`` arrays, for one or more of
        the three metrics of one fit.

    Returns
    -------
    dict
        ``metric -> (lower, upper)``.

    Notes
    -----
    At every point of a likelihood region Pass@k and AUC@k are
    non-decreasing and Pass^k non-increasing in k, ``Pass^k <= Pass@1 <=
    AUC@k <= Pass@k``, and all three metrics equal the mean at k = 1; so the
    extremes over the region obey the same orderings. An end that breaks one
    marks an optimum the search missed, and the end it is compared with (the
    metric's value at a point of the region) is a valid bound in its place:
    for ``X <= Y`` pointwise, ``upper(Y) >= upper(X)`` and ``lower(X) <=
    lower(Y)``. Ends are also made to bracket the estimate, subnormal ends
    flushed and zero widths avoided (:func:`widen_degenerate`).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.inference.orderings import repair_across_metrics
    >>> k = np.array([1, 10])
    >>> out = repair_across_metrics({"pass@k": (k, np.array([.2, .5]), np.array([.1, .4]),
    ...                                          np.array([.3, .6])),
    ...                              "pass^k": (k, np.array([.2, .01]), np.array([.1, .001]),
    ...                                          np.array([.3, .35]))})
    >>> float(out["pass@k"][1][0])   # Pass@1's upper end rises to Pass^10's
    0.35
    """
    nodes: list[tuple[str, int]] = []
    lower: dict[tuple[str, int], float] = {}
    upper: dict[tuple[str, int], float] = {}
    for metric, (k, est, lo, hi) in ends.items():
        for i in range(len(k)):
            node = (metric, i)
            nodes.append(node)
            lower[node] = min(float(lo[i]), float(est[i]))
            upper[node] = max(float(hi[i]), float(est[i]))
    edges: list[tuple] = []  # (a, b): a <= b at every point of the region
    means = []
    for metric, (k, *_rest) in ends.items():
        order = np.argsort(k, kind="stable")
        for i, j in zip(order[:-1], order[1:]):
            a, b = (metric, int(i)), (metric, int(j))
            edges.append((a, b) if INCREASING[metric] else (b, a))
            if k[i] == k[j]:
                edges.append((b, a) if INCREASING[metric] else (a, b))
        means += [(metric, int(i)) for i in np.flatnonzero(np.asarray(k) == 1)]
    for a, b in zip(means, means[1:] + means[:1]):
        edges.append((a, b))
    if means:
        mean = means[0]
        for metric, (k, *_rest) in ends.items():
            for i in range(len(k)):
                node = (metric, i)
                edges.append((node, mean) if metric == "pass^k" else (mean, node))
    if "auc@k" in ends and "pass@k" in ends:
        k_pass = list(np.asarray(ends["pass@k"][0]))
        for i, kk in enumerate(np.asarray(ends["auc@k"][0])):
            if kk in k_pass:
                edges.append((("auc@k", i), ("pass@k", k_pass.index(kk))))
    for _ in range(len(nodes) + 1):
        changed = False
        for a, b in edges:
            if upper[a] > upper[b]:
                upper[b], changed = upper[a], True
            if lower[b] < lower[a]:
                lower[a], changed = lower[b], True
        if not changed:
            break
    out = {}
    for metric, (k, *_rest) in ends.items():
        lo = np.array([lower[(metric, i)] for i in range(len(k))])
        hi = np.array([upper[(metric, i)] for i in range(len(k))])
        out[metric] = widen_degenerate(lo, hi)
    return out
