"""``passmix experiment``: the papers' protocols on data, with tables, report and figures."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._defaults import INTERVAL_METHODS, MAX_COMPONENTS, MAX_INIT
from ..data.read import LAYOUTS
from ._common import (HorizonList, LevelType, MethodName, _column_options, _command_line,
                      _experiment_io, _experiment_tail, _is_tty, _parallel_options,
                      _run_experiment, _split_columns)

__all__ = ["experiment"]


@click.group()
def experiment() -> None:
    """Run an evaluation protocol on data and write its tables, report and figures."""


@experiment.command(context_settings={"show_default": True})
@_experiment_io("Output folder: errors.csv, summary CSVs, report.md, figures, cache/.",
                "Column(s) identifying groups (e.g. model,benchmark), comma-separated.")
@click.option("--m", "m", type=HorizonList(), default=None, metavar="M[,M...]",
              help="Trials kept per task. [default: adapted to the trial count; the "
                   "paper's grid for 80 trials]")
@click.option("--k", "k", type=HorizonList(), default=None,
              help="Horizons. [default: adapted to the trial count, up to it]")
@click.option("--seeds", type=click.IntRange(min=1), default=3, help="Number of seeds.")
@click.option("--first-seed", type=click.IntRange(min=0), default=0,
              help="Seeds are FIRST_SEED .. FIRST_SEED + SEEDS - 1.")
@_parallel_options()
@click.option("--level", type=LevelType(), default=0.95,
              help="Confidence level of the mixture intervals.")
@click.option("--interval", "interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
              default="profile",
              help="Interval of the mixture: profile likelihood, or the (faster) delta method.")
@click.option("--method", "methods", type=MethodName(), multiple=True, default=("all",),
              help="Estimators to run (repeat the option): any registered one, or all.")
@click.option("--max-components", type=click.IntRange(1, MAX_COMPONENTS), default=4,
              help="Largest number of mixture components tried (BIC chooses).")
@click.option("--n-init", type=click.IntRange(1, MAX_INIT), default=10,
              help="Random initialisations per number of components.")
@click.option("--report-k", type=HorizonList(), default=None,
              help="Fixed horizons of the report's tables. [default: 60 for the paper's "
                   "grid, else 100, 1000, ... among --k, else the largest k]")
@click.option("--report-m", type=click.IntRange(min=1), default=None,
              help="Budget of the headline tables. [default: 5 for the paper's grid, else "
                   "10 if run, else the smallest m]")
@click.option("--title", default=None, help="Title of the report.")
@click.option("--layout", type=click.Choice(LAYOUTS, case_sensitive=False), default="auto",
              help="Input layout (see 'passmix estimate --help'). One row per attempt or "
                   "one 0/1 column per attempt keeps single trials, which are permuted.")
@_column_options
@_experiment_tail
def repeated(ctx: click.Context, data: Path, out: Path, group_by: tuple[str, ...],
             m: tuple[int, ...] | None, k: tuple[int, ...] | None, seeds: int,
             first_seed: int, jobs: int, scheduler: str | None, level: float, interval: str,
             max_components: int, n_init: int, report_k: tuple[int, ...] | None,
             report_m: int | None, title: str | None, layout: str, task: str | None,
             methods: tuple[str, ...],
             successes: str | None, trials: str | None, outcome: str | None,
             no_figures: bool, no_cache: bool, quiet: bool) -> None:
    """Repeated-trial protocol (first paper; docs/formulas.md, section 5) on DATA.

    Per group and seed, keeps the first m trials of every task after a random
    reordering (nested subsets), estimates Pass@k, Pass^k and AUC@k by every
    registered method (naive, combinatorial for k <= m, mixture, or those
    named by --method), and measures the error
    against the combinatorial estimate on all trials, in percentage points.
    Writes errors.csv (one row per group, seed, m, k, metric, method), the
    paper's summary tables as CSV and report.md, and figures (PNG and PDF).
    Results are cached per (group, seed, m) in DIR/cache, so an interrupted
    run resumes.

    \b
    Examples:
      passmix experiment repeated runs.csv --group-by model --out results/
      passmix experiment repeated math.csv --group-by model --m 5,10,20 \\
          --k 10,100,1000 --seeds 3 --jobs 2 --out results/math
    """
    group_cols = _split_columns(group_by)
    from ..experiments import repeated_experiment

    result = _run_experiment(ctx, jobs, scheduler, lambda client: repeated_experiment(
        data, out, group_by=group_cols or None, layout=layout.lower(), task=task,
        successes=successes, trials=trials, outcome=outcome, m=m, k=k,
        seeds=list(range(first_seed, first_seed + seeds)), level=level,
        interval=interval.lower(), max_components=max_components, n_init=n_init,
        methods=list(methods), jobs=jobs, client=client,
        cache=not no_cache, report_k=report_k, report_m=report_m,
        figures=not no_figures, title=title, command=_command_line(ctx),
        progress=not quiet and _is_tty(sys.stderr),
    ))
    t = result.timings
    click.echo(f"{len(result.errors)} rows from {len(result.fits)} fits "
               f"({t['units_cached']} cached) in {t['seconds']:.1f} s; report: "
               f"{out / 'report.md'}")


_SCALING_SAMPLERS = ("uniform", "dynamic", "adaptive")


@experiment.command(context_settings={"show_default": True})
@_experiment_io("Output folder: errors.csv, ranking.csv, allocations.csv, report.md, "
                "figures, cache/.",
                "Column(s) identifying groups (e.g. model), comma-separated.")
@click.option("--budget", "budgets", type=HorizonList(), default="10,78", metavar="B[,B...]",
              help="Budgets: attempts per task on average (B/n).")
@click.option("--k", "k", type=HorizonList(), default="100,1000", help="Horizons.")
@click.option("--seeds", type=click.IntRange(min=1), default=3, help="Number of seeds.")
@click.option("--sampler", "samplers", multiple=True,
              type=click.Choice(_SCALING_SAMPLERS, case_sensitive=False),
              help="Samplers (repeat the option). [default: all three]")
@click.option("--estimator", "estimators", multiple=True, type=MethodName(),
              help="Predictors (repeat the option). [default: beta_binomial, mixture, "
                   "scaled_beta_binomial, discretized_beta, loglog]")
@click.option("--batch-size", type=click.IntRange(min=1), default=1,
              help="Attempts a sampler picks at once.")
@_parallel_options()
@click.option("--title", default=None, help="Title of the report.")
@_column_options
@_experiment_tail
def scaling(ctx: click.Context, data: Path, out: Path, group_by: tuple[str, ...],
            budgets: tuple[int, ...], k: tuple[int, ...], seeds: int,
            samplers: tuple[str, ...], estimators: tuple[str, ...], batch_size: int,
            jobs: int, scheduler: str | None, title: str | None, task: str | None,
            successes: str | None,
            trials: str | None, outcome: str | None, no_figures: bool, no_cache: bool,
            quiet: bool) -> None:
    """Pass@k scaling protocol (second paper) on DATA: many records per task, replayed.

    Per group, seed, budget and sampler, spends B/n attempts per task on
    average, drawing each task's recorded outcomes without replacement as the
    sampler picks tasks; fits every predictor to the counts gathered; and
    compares its Pass@k with the unbiased Pass@k of all records, in points.
    Writes errors.csv, ranking.csv, allocations.csv, report.md and figures.

    \b
    Examples:
      passmix experiment scaling math_10k.csv --group-by model --out results/scaling
      passmix experiment scaling math_10k.csv --group-by model --budget 10,78 \\
          --k 100,1000 --sampler uniform --sampler adaptive --jobs 2 --out results/s
    """
    from ..experiments.scaling import PREDICTORS
    from ..experiments.scaling_report import scaling_experiment

    columns = {name: v for name, v in (("task", task), ("successes", successes),
                                        ("trials", trials), ("outcome", outcome)) if v}
    result = _run_experiment(ctx, jobs, scheduler, lambda client: scaling_experiment(
        data, out, group_by=_split_columns(group_by) or None, budgets=budgets, k=k,
        seeds=seeds, samplers=tuple(s.lower() for s in samplers) or _SCALING_SAMPLERS,
        estimators=tuple(estimators) or PREDICTORS, batch_size=batch_size, jobs=jobs,
        client=client, cache=not no_cache, figures=not no_figures, title=title,
        command=_command_line(ctx), progress=not quiet and _is_tty(sys.stderr),
        **columns))
    t = result.timings
    click.echo(f"{len(result.errors)} rows from {t['units']} runs ({t['units_cached']} "
               f"cached) in {t['seconds']:.1f} s; report: {out / 'report.md'}")


_CELL_SAMPLERS = ("stratified", "uniform")
_SENSITIVITY_METHODS = ("mixture", "empirical", "pirt")


@experiment.command(context_settings={"show_default": True})
@_experiment_io("Output folder: errors.csv, fits.csv, report.md, figures, cache/.",
                "Column(s) identifying groups (e.g. task,model), comma-separated.")
@click.option("--budget", "budgets", type=HorizonList(), default="300,600,900,1200,1500",
              metavar="B[,B...]", help="Budgets: cells (configuration, question) observed.")
@click.option("--seeds", type=click.IntRange(min=1), default=3, help="Number of seeds.")
@click.option("--sampler", type=click.Choice(_CELL_SAMPLERS, case_sensitive=False),
              default="stratified", help="Budget sampler (PromptEval's stratified, or uniform).")
@click.option("--method", "methods", multiple=True,
              type=click.Choice(_SENSITIVITY_METHODS, case_sensitive=False),
              help="Estimates (repeat the option). [default: all three; pirt only with "
                   "question identity]")
@click.option("--config", "config", default="prompt", metavar="COL",
              help="Column naming the configuration (prompt, template, ...).")
@click.option("--question", default="question", metavar="COL",
              help="Column naming the question (cell layout).")
@click.option("--outcome", default="outcome", metavar="COL",
              help="Column of 0/1 outcomes (cell layout).")
@click.option("--successes", default="successes", metavar="COL",
              help="Column of correct answers (count layout).")
@click.option("--questions", default="questions", metavar="COL",
              help="Column of questions asked (count layout).")
@_parallel_options("Run on this Dask scheduler instead of local processes; needs "
                   "passmix[dask].")
@click.option("--title", default=None, help="Title of the report.")
@_experiment_tail
def sensitivity(ctx: click.Context, data: Path, out: Path, group_by: tuple[str, ...],
                budgets: tuple[int, ...], seeds: int, sampler: str, methods: tuple[str, ...],
                config: str, question: str, outcome: str, successes: str, questions: str,
                jobs: int, scheduler: str | None, title: str | None, no_figures: bool,
                no_cache: bool, quiet: bool) -> None:
    """Sensitivity protocol (first paper) on DATA: the score distribution across prompts.

    DATA holds, per group, either one row per configuration with its correct
    answers of the questions asked (count layout: --config, --successes,
    --questions), or one row per (configuration, question) cell with a 0/1
    outcome (cell layout: --config, --question, --outcome). Per group, seed
    and budget, observes B cells, fits the Beta mixture to the
    configurations, and compares the fitted distribution, the observed
    scores and pIRT (cell layout only) with the complete scores: W1 and the
    error at the 5th, 25th, 50th, 75th and 95th percentiles, in points.

    \b
    Examples:
      passmix experiment sensitivity bbh_prompts.csv --group-by task,model --out results/bbh
      passmix experiment sensitivity cells.csv --config template --budget 300,900 \\
          --seeds 3 --jobs 2 --out results/cells
    """
    from ..experiments.sensitivity_report import sensitivity_experiment

    run = _run_experiment(ctx, jobs, scheduler, lambda client: sensitivity_experiment(
        data, out, group_by=_split_columns(group_by) or None, budgets=budgets,
        seeds=seeds, methods=tuple(m.lower() for m in methods) or _SENSITIVITY_METHODS,
        sampler=sampler.lower(), jobs=jobs, client=client, cache=not no_cache,
        figures=not no_figures, title=title, command=_command_line(ctx),
        progress=not quiet and _is_tty(sys.stderr), config=config, question=question,
        outcome=outcome, successes=successes, questions=questions))
    t = run.timings
    click.echo(f"{len(run.errors)} rows from {t['units']} runs ({t['units_cached']} cached) "
               f"in {t['seconds']:.1f} s; report: {out / 'report.md'}")


