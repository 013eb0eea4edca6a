"""Defaults used in more than one place, each defined once."""

from __future__ import annotations

__all__ = ["CLI_K", "COMPARE_METHODS", "INTERVAL_METHODS", "RANK_METHODS", "LEVEL", "MAX_COMPONENTS", "MAX_INIT", "METRICS",
           "POOLED_MAX_TRIALS", "POSTERIOR_K", "SUMMARY_K"]

#: Canonical metric names, as used in tables, the CLI and ``interval``.
METRICS = ("pass@k", "pass^k", "auc@k")
#: Confidence level of every interval unless asked otherwise.
LEVEL = 0.95
#: Interval methods of a fitted mixture; the first is the default.
INTERVAL_METHODS = ("profile", "delta")

#: the methods of ``passmix.compare`` and ``passmix rank`` by name (the CLI's choices too)
COMPARE_METHODS = ("auto", "pooled", "direct", "mixture", "posterior")
RANK_METHODS = ("auto", "pooled", "mixture")
#: Horizons of ``summary()``.
SUMMARY_K = (1, 10, 100, 1000)
#: Horizons of every command (``passmix estimate``, ``compare``, ``rank``, with or
#: without ``--example``) and of ``estimate_table``: the same as ``summary()``'s, so a
#: number does not change with the way it was asked for.
CLI_K = SUMMARY_K
#: Horizons whose metric draws a posterior sample stores.
POSTERIOR_K = (1, 5, 10, 60, 100, 1000)
#: Largest number of mixture components: beyond it nothing is identified at
#: realistic trial counts.
MAX_COMPONENTS = 10
#: Largest number of random starts per number of components.
MAX_INIT = 1000
#: ``method="auto"`` pools groups that share tasks up to this median number of trials
#: per task: as far as the pooled intervals were checked to cover on real data
#: (docs/results/pooled_intervals.md); beyond, the per-group mixture.
POOLED_MAX_TRIALS = 20
