"""Experimental protocols that compare the mixture with the direct estimators.

:mod:`~passmix.experiments.repeated` runs the first paper's repeated-trial
protocol (``docs/formulas.md``, section 5); :mod:`~passmix.experiments.report`
turns its errors into the paper's tables and a Markdown report;
:mod:`~passmix.experiments.figures` draws its figures, and
:mod:`~passmix.experiments.repeated_report` runs all three from a file;
:mod:`~passmix.experiments.coverage` measures the coverage of intervals. What
the protocols share (seed streams, cache, executor) is in
:mod:`~passmix.experiments._harness`. :mod:`~passmix.experiments.scaling`
runs the second paper's Pass@k scaling protocol (samplers x predictors on
replayed records or oracle populations), and
:mod:`~passmix.experiments.scaling_report` writes its report and figures.
:mod:`~passmix.experiments.sensitivity` runs the first paper's prompt
sensitivity protocol (a budget of cells, the score distribution across
configurations) and :mod:`~passmix.experiments.sensitivity_report` its report.
"""

from ._harness import group_id, stream
from .grids import PAPER_K, PAPER_M, default_k_grid, default_m_grid
from .repeated import (
                       RepeatedConfig,
                       RepeatedResult,
                       load_repeated,
                       nested_subsets,
                       protocol_methods,
                       run_repeated,
                       )
from .repeated_report import repeated_experiment
from .report import summary_tables, write_report
from .scaling import ScalingResult, run_scaling
from .sensitivity import SensitivityRun, run_sensitivity

__all__ = [
    "PAPER_K",
    "PAPER_M",
    "RepeatedConfig",
    "RepeatedResult",
    "ScalingResult",
    "SensitivityRun",
    "default_k_grid",
    "default_m_grid",
    "group_id",
    "load_repeated",
    "nested_subsets",
    "protocol_methods",
    "repeated_experiment",
    "run_repeated",
    "run_scaling",
    "run_sensitivity",
    "stream",
    "summary_tables",
    "write_report",
]
