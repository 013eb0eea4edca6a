"""``passmix estimate``: the metrics of each system (or group) with intervals.

Deliberately thin: option parsing, then :func:`passmix.tables.estimate_table`
and :func:`passmix.tables.render`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._defaults import INTERVAL_METHODS, MAX_COMPONENTS, MAX_INIT
from ..examples import example_path
from ..tables import estimate_table, render
from ._common import (EXAMPLE_GROUP_BY, EXAMPLE_NAME, FORMATS, HorizonList, LevelType,
                      MethodName, _EXAMPLE_HELP, _INPUT_ERRORS, _K_DEFAULT, _input_options,
                      _is_tty, _message, _read_input, _save_plot, _silence_stdout,
                      _split_columns, _warnings_as_lines)

__all__ = ["estimate"]


@click.command(context_settings={"show_default": True})
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--example", is_flag=True, help=_EXAMPLE_HELP)
@click.option("--group-by", "group_by", multiple=True, metavar="COLS",
              help="Column(s) identifying systems or settings, comma-separated (or "
                   "repeat the option); one set of estimates per group.")
@click.option("--k", "k", type=HorizonList(), default=_K_DEFAULT,
              help="Horizons, comma-separated.")
@click.option("--level", type=LevelType(), default=0.95,
              help="Confidence level of the mixture's intervals.")
@click.option("--interval", "interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
              default=None,
              help="Interval of the mixture and the pooled model: profile likelihood, or "
                   "the (faster) delta method.  [default: profile; for a pooled panel of "
                   "more than 2,000 cells, delta but profile for a system on a bound]")
@click.option("--method", type=MethodName(auto=True), default="auto",
              help="Estimator: auto (the pooled model where groups share tasks and "
                   "its intervals were checked to cover, its intervals beyond the trials "
                   "also spanning each group's own mixture; else the mixture; the output "
                   "says which and why), the Beta mixture, the pooled model, the naive "
                   "plug-in, the unbiased combinatorial one (only for k <= m), any "
                   "registered with passmix.register_estimator, or all.")
@click.option("--format", "fmt", type=click.Choice(FORMATS, case_sensitive=False),
              default="table", help="Output format.")
@click.option("--max-components", type=click.IntRange(1, MAX_COMPONENTS), default=4,
              help="Largest number of mixture components tried (BIC chooses).")
@click.option("--n-init", type=click.IntRange(1, MAX_INIT), default=10,
              help="Random initialisations per number of components.")
@click.option("--seed", type=int, default=0, help="Seed of the fit (output is deterministic).")
@_input_options(metric_alias=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              default=None, metavar="PATH", help="Write to this file instead of stdout.")
@click.option("--plot", "plot", default=None, metavar="PATH",
              type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Save a figure of the estimates here (PNG, PDF, SVG, ...: by suffix): "
                   "one panel per metric, each group's estimates against k with their "
                   "intervals.")
@click.option("--jobs", "-j", type=click.IntRange(min=-1), default=-1, metavar="N",
              help="Processes fitting groups in parallel, on Linux (-1: one per CPU; 1: none).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def estimate(
    ctx: click.Context,
    file: Path | None,
    example: bool,
    group_by: tuple[str, ...],
    k: tuple[int, ...] | None,
    level: float,
    interval: str,
    method: str,
    fmt: str,
    max_components: int,
    n_init: int,
    seed: int,
    layout: str,
    task: str | None,
    successes: str | None,
    trials: str | None,
    outcome: str | None,
    log_format: str,
    scorer: str | None,
    log_metric: str | None,
    threshold: float | None,
    status: str | None,
    output: Path | None,
    plot: Path | None,
    jobs: int,
    quiet: bool,
) -> None:
    """Estimate Pass@k, Pass^k and AUC@k from FILE (CSV, TSV, JSONL or Parquet, or a log).

    FILE holds per-task success counts in one of three layouts: one row per
    task with successes and trials columns, one row per attempt with a 0/1
    outcome column, or one row per task with one 0/1 column per attempt. It
    may also be a harness log (or a folder of logs): inspect_ai .eval/.json,
    EvalPlus eval_results.json, tau-bench results, lm-eval samples_*.jsonl.
    Prints one row per group, method, metric and k.

    \b
    Examples:
      passmix estimate --example
      passmix estimate results.csv --group-by model --k 1,10,100,1000
      passmix estimate runs.jsonl --method all --format json -o estimates.json
      passmix estimate logs/run.eval --group-by model --scorer match --k 1,10,100
      passmix estimate scores.csv --threshold 0.5 --plot estimates.png
    """
    if file is not None and example:
        raise click.UsageError("give either FILE or --example, not both.", ctx)
    if file is None and not example:
        raise click.UsageError("give a FILE to read, or --example for the bundled data.", ctx)
    group_cols = _split_columns(group_by)
    if group_by and not group_cols:
        raise click.BadParameter("no column names given.", ctx, param_hint="'--group-by'")
    if example:
        source: Path = example_path(EXAMPLE_NAME)
        if not group_by:
            group_cols = list(EXAMPLE_GROUP_BY)
    else:
        source = file
    horizons = k

    with _warnings_as_lines():
        try:
            data = _read_input(source, group_cols, example=example, layout=layout, task=task,
                               successes=successes, trials=trials, outcome=outcome,
                               log_format=log_format, scorer=scorer, log_metric=log_metric,
                               threshold=threshold, status=status)
            groups = data if isinstance(data, dict) else {(): data}
            table = estimate_table(
                groups, group_cols, k=horizons, level=level, method=method.lower(),
                max_components=max_components, n_init=n_init, seed=seed,
                interval=None if interval is None else interval.lower(),
                progress=not quiet and _is_tty(sys.stderr),
                jobs=jobs,
            )
            if "method_note" in table.attrs and fmt.lower() != "table" and not quiet:
                click.echo(table.attrs["method_note"], err=True)
            text = render(table, fmt.lower(), groups, group_cols, level)
            if output is None:
                click.echo(text, nl=False)
            else:
                output.write_text(text, encoding="utf-8")
            if plot is not None:
                from ..plots.table import plot_estimates

                _save_plot(lambda: plot_estimates(table, group_cols)[0].figure, plot)
        except BrokenPipeError:  # e.g. `passmix estimate ... | head`: stop quietly
            _silence_stdout()
            ctx.exit(1)
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None



