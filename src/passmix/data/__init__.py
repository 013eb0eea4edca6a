"""Data in: per-task counts, tables and files, panels of systems on shared tasks, harness logs.

* :mod:`~passmix.data.counts`: :class:`Counts`;
* :mod:`~passmix.data.read`: reading tables and files in any layout
  (:func:`read_counts`, :func:`read_trials`, :func:`detect_layout`);
* :mod:`~passmix.data.panel`: :class:`Panel`, many systems on shared tasks;
* :mod:`~passmix.data.readers`: the logs of inspect_ai, EvalPlus, tau-bench and lm-eval.
"""

from .counts import Counts, as_counts
from .read import LayoutSpec, as_group_columns, detect_layout, read_counts, read_trials
from .panel import Panel, as_panel

__all__ = ["Counts", "LayoutSpec", "Panel", "as_counts", "as_group_columns", "as_panel",
           "detect_layout", "read_counts", "read_trials"]
