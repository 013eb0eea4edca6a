"""The repeated-trial protocol's driver: read the data, run it, write its tables, report and figures.

The computation is :mod:`passmix.experiments.repeated`, the tables and report
:mod:`~passmix.experiments.report`, the figures
:mod:`~passmix.experiments.figures`; this module only strings them together,
so that none of them imports another back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.read import as_group_columns
from .figures import write_figures
from .repeated import RepeatedResult, load_repeated, run_repeated
from .report import write_report

__all__ = ["repeated_experiment"]


def repeated_experiment(
    source: pd.DataFrame | str | os.PathLike,
    out: str | os.PathLike,
    *,
    group_by: Hashable | Sequence[Hashable] | None = None,
    layout: str = "auto",
    task: Hashable | None = None,
    successes: Hashable | None = None,
    trials: Hashable | None = None,
    outcome: Hashable | None = None,
    m: Sequence[int] | None = None,
    k: Sequence[int] | None = None,
    seeds: int | Sequence[int] = 3,
    level: float = 0.95,
    max_components: int = 4,
    n_init: int = 10,
    interval: str = "profile",
    methods: str | Sequence[str] = "all",
    jobs: int = 1,
    client: Any = None,
    cache: bool = True,
    report_k: Sequence[int] | None = None,
    report_m: int | None = None,
    figures: bool = True,
    title: str | None = None,
    command: str | None = None,
    progress: bool = False,
) -> RepeatedResult:
    """Read data, run :func:`run_repeated` and write every table, the report and figures.

    Parameters
    ----------
    source : DataFrame, str or path
        The data (see :func:`load_repeated`).
    out : path
        Output folder, created if needed. It receives ``errors.csv``,
        ``fits.csv``, ``joint_fits.csv`` (with a joint estimator), ``references.csv``, the summary tables (CSV),
        ``report.md``, ``config.json`` and, with `figures`, PNG and PDF
        figures; the cache goes to ``out/cache/``.
    group_by, layout, task, successes, trials, outcome
        As for :func:`passmix.read_counts`.
    m, k, seeds, level, max_components, n_init, interval, methods, jobs, client
        As for :func:`run_repeated`.
    cache : bool, default True
        Keep and reuse per-(group, seed, m) results under ``out/cache/``.
    report_k, report_m
        Fixed horizons and budget of the report's tables
        (see :func:`passmix.experiments.report.write_report`).
    figures : bool, default True
        Draw the figures.
    title, command : str, optional
        Title of the report and the command line that produced it.
    progress : bool, default False
        Progress bar on stderr.

    Returns
    -------
    RepeatedResult
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    loaded = load_repeated(source, group_by=group_by, layout=layout, task=task,
                           successes=successes, trials=trials, outcome=outcome, with_tasks=True)
    groups = {key: data for key, (data, _) in loaded.items()}
    labels = {key: tasks for key, (_, tasks) in loaded.items()}
    cols = as_group_columns(group_by)
    result = run_repeated(groups, group_cols=cols, m=m, k=k, seeds=seeds, level=level,
                          max_components=max_components, n_init=n_init, interval=interval,
                          methods=methods, jobs=jobs, client=client,
                          cache_dir=out / "cache" if cache else None, progress=progress,
                          tasks=labels)
    result.errors.to_csv(out / "errors.csv", index=False)
    result.fits.to_csv(out / "fits.csv", index=False)
    if not result.joint_fits.empty:
        result.joint_fits.to_csv(out / "joint_fits.csv", index=False)
    result.references.to_csv(out / "references.csv", index=False)
    source_name = source if not isinstance(source, pd.DataFrame) else "DataFrame"
    (out / "config.json").write_text(json.dumps({
        **result.config.to_dict(), "source": str(source_name), "group_by": cols,
        "n_trials": result.n_trials, "command": command}, indent=2) + "\n", encoding="utf-8")
    fig_names = write_figures(result, out, report_k=report_k, report_m=report_m) if figures else []
    write_report(result, out, report_k=report_k, report_m=report_m, title=title,
                 command=command, source=str(source_name), figures=fig_names)
    return result
