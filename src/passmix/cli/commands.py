"""Command line interface of passmix.

``passmix estimate FILE`` reads per-task success counts (any layout that
:func:`passmix.read_counts` understands), fits a Beta mixture per group and
prints Pass@k, Pass^k and AUC@k at the requested horizons, with profile-likelihood (or delta-method)
intervals, next to the naive and combinatorial direct estimates if asked.

The module is deliberately thin: option parsing, then
:func:`passmix.tables.estimate_table` and :func:`passmix.tables.render`.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from .. import __version__
from .._defaults import CLI_K, INTERVAL_METHODS, MAX_COMPONENTS, MAX_INIT
from .._validation import check_k
from ..data.read import LAYOUTS, read_counts
from ..data.panel import system_name
from ..examples import example_path
from ..estimators.registry import estimator_names, get_estimator
from ..tables import NOISE, estimate_table, render

#: ``passmix compare --method`` (passmix.compare.COMPARE_METHODS, without importing it)
_COMPARE_METHODS = ("auto", "pooled", "direct", "mixture", "posterior")
_RANK_METHODS = ("auto", "pooled", "mixture")

__all__ = ["main"]

FORMATS = ("table", "csv", "json")
EXAMPLE_NAME = "math_m10"
EXAMPLE_GROUP_BY = ("model",)
#: the pair ``passmix compare --example`` compares unless --a/--b name another
EXAMPLE_PAIR = ("Pythia 1B", "Pythia 2.8B")
#: ``--k``'s default, as the help shows it
_K_DEFAULT = ",".join(map(str, CLI_K))
_EXAMPLE_HELP = (f"Use the bundled example ({EXAMPLE_NAME}: 7 Pythia models on 128 MATH "
                 f"problems, 10 trials each) instead of FILE, grouped by model.")


# --------------------------------------------------------------------------
# click plumbing
# --------------------------------------------------------------------------

_SCI = re.compile(r"^\d+[eE]\+?\d+$")


class MethodName(click.ParamType):
    """A registered estimator's name, or ``all``, checked when the command runs.

    The registry may grow after this module is imported
    (:func:`passmix.register_estimator`), so the choices are not fixed here.

    Examples
    --------
    >>> MethodName().convert("Naive", None, None)
    'naive'
    """

    name = "method"

    def __init__(self, auto: bool = False) -> None:
        self.words = ("auto", "all") if auto else ("all",)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join([*self.words[:1], *estimator_names(), *self.words[1:]]) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        key = str(value).strip().lower()
        if key in self.words:
            return key
        try:
            return get_estimator(key).name
        except ValueError:
            choices = ", ".join(repr(n) for n in [*estimator_names(), *self.words])
            self.fail(f"{value!r} is not one of {choices}.", param, ctx)


class HorizonList(click.ParamType):
    """Comma-separated horizons ``k >= 1``, e.g. ``1,10,100`` or ``1e6``."""

    name = "K[,K...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, tuple):
            return value
        out = []
        for piece in str(value).split(","):
            text = piece.strip()
            k = None
            if re.fullmatch(r"[+]?\d+(_\d+)*", text):
                k = int(text)
            elif _SCI.fullmatch(text):
                base, exp = re.split(r"[eE]\+?", text)
                k = int(base) * 10 ** int(exp)
            if k is None or k < 1:
                self.fail(
                    f"{text!r} is not a valid horizon; k must be a whole number >= 1 "
                    f"(comma-separated, e.g. 1,10,100).",
                    param, ctx,
                )
            try:  # the library's own bound, in its words
                check_k(k)
            except ValueError as err:
                self.fail(str(err), param, ctx)
            out.append(k)
        return tuple(dict.fromkeys(out))


class LevelType(click.FloatRange):
    """A confidence level in (0, 1); NaN is refused (a range check alone lets it pass)."""

    name = "level"

    def __init__(self) -> None:
        super().__init__(0, 1, min_open=True, max_open=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        level = super().convert(value, param, ctx)
        if not math.isfinite(level):
            self.fail(f"{value!r} is not a level in (0, 1).", param, ctx)
        return level


class FiniteFloat(click.ParamType):
    """A finite number: NaN or an infinity as a threshold would score every attempt alike.

    Examples
    --------
    >>> FiniteFloat().convert("0.5", None, None)
    0.5
    """

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _split_columns(values: Sequence[str]) -> list[str]:
    cols = [c.strip() for v in values for c in v.split(",")]
    return [c for c in cols if c]


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Print each warning as one ``Warning: ...`` line on stderr (no Python dump)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text not in seen:
            from tqdm import tqdm  # writes around an open progress bar

            seen.add(text)
            tqdm.write(f"Warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=NOISE)
        warnings.showwarning = show
        yield


# Errors the library raises for bad input; shown as "Error: <message>", exit 1.
_INPUT_ERRORS = (ValueError, TypeError, OSError, RuntimeError)


def _stacked(*decorators: Callable) -> Callable:
    """One decorator for `decorators` stacked in this order (click lists options top down)."""
    def apply(command):
        for decorator in reversed(decorators):
            command = decorator(command)
        return command
    return apply


#: The options naming input columns, shared by the commands that read data.
_column_options = _stacked(
    click.option("--task", default=None, metavar="COL", help="Task label column."),
    click.option("--successes", default=None, metavar="COL",
                 help="Successes column (counts layout)."),
    click.option("--trials", default=None, metavar="COL",
                 help="Trials column (counts layout)."),
    click.option("--outcome", default=None, metavar="COL",
                 help="0/1 outcome column (long layout)."),
)


def _experiment_io(out_help: str, group_help: str) -> Callable:
    """An experiment command's DATA argument and its --out and --group-by options."""
    return _stacked(
        click.argument("data", type=click.Path(dir_okay=False, exists=True, path_type=Path)),
        click.option("--out", "-o", "out", required=True,
                     type=click.Path(file_okay=False, writable=True, path_type=Path),
                     help=out_help),
        click.option("--group-by", "group_by", multiple=True, metavar="COLS", help=group_help),
    )


def _parallel_options(scheduler_help: str = "Run on this Dask scheduler (e.g. tcp://host:8786) "
                      "instead of local processes; needs passmix[dask].") -> Callable:
    """An experiment command's --jobs and --scheduler options."""
    return _stacked(
        click.option("--jobs", "-j", type=click.IntRange(min=-1), default=1,
                     help="Parallel worker processes (-1: all cores)."),
        click.option("--scheduler", default=None, metavar="ADDRESS", help=scheduler_help),
    )


#: An experiment command's last options, and its context (for the command line it records).
_experiment_tail = _stacked(
    click.option("--no-figures", is_flag=True, help="Skip the figures."),
    click.option("--no-cache", is_flag=True, help="Neither read nor write DIR/cache/."),
    click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    click.pass_context,
)


def _run_experiment(ctx: click.Context, jobs: int, scheduler: str | None,
                    run: Callable[[Any], Any]) -> Any:
    """``run(client)``, with None or the Dask client of `scheduler`, as the experiments run.

    Warnings are printed as lines, and the library's input errors become
    click's (a message, no traceback).
    """
    if jobs == 0:
        raise click.BadParameter("must be -1 or >= 1.", ctx, param_hint="'--jobs'")
    with _warnings_as_lines(), contextlib.ExitStack() as stack:
        try:
            client = None if scheduler is None else stack.enter_context(_dask_client(scheduler))
            return run(client)
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="passmix")
def main() -> None:
    """passmix: Pass@k, Pass^k and AUC@k of stochastic AI systems at any horizon.

    Fits a Beta mixture to per-task success counts (y_j successes of m_j
    trials) and reports the metrics with profile-likelihood (or delta-method) intervals.
    Run 'passmix COMMAND --help' for the options of a command.
    """


@main.command(context_settings={"show_default": True})
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
                   "its intervals were checked to cover, else the mixture; the output "
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
@click.option("--layout", type=click.Choice(LAYOUTS, case_sensitive=False), default="auto",
              help="Input layout: one row per task (counts), per attempt (long), or one "
                   "0/1 column per attempt (matrix); auto detects it from the columns.")
@_column_options
@click.option("--from", "log_format", default="auto", metavar="FORMAT",
              type=click.Choice(("auto", "table", "inspect", "evalplus", "tau", "lm-eval"),
                                case_sensitive=False),
              help="Read FILE as a harness log (auto: by suffix and content; table: never).")
@click.option("--scorer", default=None, metavar="NAME",
              help="inspect log: the scorer whose value is the outcome.")
@click.option("--metric", "log_metric", default=None, metavar="NAME",
              help="lm-eval samples: the metric whose value is the outcome.")
@click.option("--threshold", type=FiniteFloat(), default=None,
              help="A score >= THRESHOLD is a success: partial or numeric scores in a "
                   "table's outcome column(s) or in a harness log.")
@click.option("--status", type=click.Choice(("plus", "base"), case_sensitive=False),
              default=None, help="EvalPlus: success on the plus (default) or base tests.")
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

    options = {name: value for name, value in (("scorer", scorer), ("metric", log_metric),
                                                ("threshold", threshold), ("status", status))
               if value is not None}
    with _warnings_as_lines():
        try:
            log = None if example else _read_log_file(source, log_format.lower(), options,
                                                      group_cols)
            data = read_counts(
                log if log is not None else source, layout=layout.lower(),
                group_by=group_cols or None, task=task, successes=successes, trials=trials,
                outcome=outcome, log_format="table",
                threshold=threshold if log is None else None,  # a log's reader scored it
            )
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



def _save_plot(draw: Callable[[], Any], path: Path) -> None:
    """Draw a figure (``draw()`` returns it) without a display, and save it to `path`."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot is imported: no window, also without a display
    import matplotlib.pyplot as plt

    figure = draw()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _systems_command_head() -> Callable:
    """A command on systems that share tasks: FILE (or --example) and --group-by."""
    return _stacked(
        main.command(context_settings={"show_default": True}),
        click.argument("file", required=False, type=click.Path(path_type=Path)),
        click.option("--example", is_flag=True, help=_EXAMPLE_HELP),
        click.option("--group-by", "group_by", multiple=True, metavar="COLS",
                     help="Column(s) naming the systems, comma-separated (required with "
                          "FILE)."),
    )


def _systems_source(ctx: click.Context, file: Path | None, example: bool,
                    group_by: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    """FILE and --group-by, or the bundled example grouped by model."""
    if file is not None and example:
        raise click.UsageError("give either FILE or --example, not both.", ctx)
    if example:
        return example_path(EXAMPLE_NAME), group_by or EXAMPLE_GROUP_BY
    if file is None:
        raise click.UsageError("give a FILE to read, or --example for the bundled data.", ctx)
    if not group_by:
        raise click.UsageError("Missing option '--group-by': name the column(s) of FILE "
                               "that identify the systems.", ctx)
    return file, group_by


def _systems_command_tail(plot_help: str, seed_help: str) -> Callable:
    """Its last options: --format, --plot, --seed, the columns, --output; and the context."""
    return _stacked(
        click.option("--format", "fmt", type=click.Choice(FORMATS, case_sensitive=False),
                     default="table", help="Output format."),
        click.option("--plot", "plot", default=None, help=plot_help,
                     type=click.Path(dir_okay=False, writable=True, path_type=Path)),
        click.option("--seed", type=int, default=0, help=seed_help),
        _column_options,
        click.option("--output", "-o", default=None,
                     type=click.Path(dir_okay=False, writable=True, path_type=Path),
                     help="Write the output here instead of stdout."),
        click.pass_context,
    )


def _read_panel(file: Path, group_by: tuple[str, ...], ctx: click.Context, **columns):
    """The systems of FILE as a Panel with tuple labels, and the group columns."""
    from ..data.panel import Panel

    group_cols = _split_columns(group_by)
    if not group_cols:
        raise click.BadParameter("no column names given.", ctx, param_hint="'--group-by'")
    groups = read_counts(file, group_by=group_cols, **columns)
    # tuple labels, one value per group column, which the output spreads over the columns
    return Panel.from_counts(groups, unpack=False), group_cols


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")


@_systems_command_head()
@click.option("--a", "a", default=None, metavar="NAME",
              help="First system of one pair (with --b; values of several --group-by "
                   "columns joined by commas or ' / '). Without --a/--b every pair is "
                   f"compared (with --example: {EXAMPLE_PAIR[0]} and {EXAMPLE_PAIR[1]}).")
@click.option("--b", "b", default=None, metavar="NAME",
              help="Second system: the difference is b minus a.")
@click.option("--k", "k", type=HorizonList(), default=_K_DEFAULT, help="Horizons.")
@click.option("--metric", type=click.Choice(("pass@k", "pass^k", "auc@k"), case_sensitive=False),
              default="pass@k", help="The metric compared.")
@click.option("--method", type=click.Choice(_COMPARE_METHODS, case_sensitive=False),
              default="auto", help="auto: pooled up to 20 trials per task, mixture beyond; "
                                   "direct: model-free, k within the trials; posterior: NUTS "
                                   "draws of the pooled model.")
@click.option("--interval", type=click.Choice(("profile", "delta"), case_sensitive=False),
              default=None, help="The pooled difference's intervals [default: profile up to "
                                 "30 pairs, delta beyond].")
@click.option("--draws", type=click.IntRange(min=100), default=1000,
              help="Posterior draws per chain (--method posterior).")
@click.option("--level", type=LevelType(), default=0.95,
              help="Level of the pointwise intervals and of the simultaneous band.")
@_systems_command_tail("Save the first pair's (or --a/--b's) figure here.",
                       "Seed of the fit and of the band.")
def compare(ctx: click.Context, file: Path | None, example: bool, group_by: tuple[str, ...],
            a: str | None, b: str | None, k: tuple[int, ...], metric: str, method: str,
            interval: str | None, draws: int, level: float, fmt: str, plot: Path | None, seed: int,
            task: str | None, successes: str | None, trials: str | None,
            outcome: str | None, output: Path | None) -> None:
    """Compare systems in FILE on the tasks they share: b - a at each k, with intervals.

    Prints, per pair and horizon, the difference, its pointwise interval, the
    simultaneous band over the horizons and the sign it certifies (+1: b
    better, -1: a better, 0: undecided).

    \b
    Examples:
      passmix compare --example
      passmix compare results.csv --group-by model --k 10,100,1000
      passmix compare results.csv --group-by model --a base --b rl --format json
      passmix compare results.csv --group-by model --method direct --k 1,2,5,10
      passmix compare results.csv --group-by model --method posterior --draws 500
    """
    from ..compare import compare as compare_systems

    if (a is None) != (b is None):
        raise click.UsageError("give both --a and --b, or neither to compare every pair.", ctx)
    source, group_by = _systems_source(ctx, file, example, group_by)
    with _warnings_as_lines():
        try:
            panel, group_cols = _read_panel(source, group_by, ctx, task=task,
                                            successes=successes, trials=trials, outcome=outcome)
            if example and a is None and group_by == EXAMPLE_GROUP_BY:
                # every pair of 7 systems is 21 profile searches: one pair shows the idea
                a, b = EXAMPLE_PAIR
                click.echo(f"--example compares {a} (a) with {b} (b); pass --a NAME --b NAME "
                           "for another pair of: "
                           f"{', '.join(system_name(s) for s in panel.systems)}.", err=True)
            names = {text: label for label in panel.systems
                     for text in (",".join(map(str, label)), system_name(label))}
            pair = [None, None]
            for n, (flag, name) in enumerate((("--a", a), ("--b", b))):
                if name is not None:
                    if name not in names:
                        shown = [system_name(s) for s in panel.systems]
                        raise ValueError(f"{flag} {name!r} matches no group of "
                                         f"{','.join(group_cols)} in {source.name}; groups: "
                                         f"{', '.join(shown[:10])}"
                                         f"{', ...' if len(shown) > 10 else ''}.")
                    pair[n] = names[name]
            sampling = {"draws": draws, "progressbar": False} if method.lower() == "posterior" \
                else {}
            result = compare_systems(panel, *pair, k=list(k), metric=metric.lower(),
                                     method=method.lower(),
                                     interval=None if interval is None else interval.lower(),
                                     level=level, seed=seed, **sampling)
            if "why" in result.details:
                click.echo(f"method {result.details['why']}", err=True)
            _emit(_render_comparison(result, group_cols, fmt.lower()), output)
            if plot is not None:
                _save_plot(lambda: result.plot(*pair)[0].figure, plot)
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(1)
        except (*_INPUT_ERRORS, KeyError) as err:
            raise click.ClickException(_message(err) if not isinstance(err, KeyError)
                                       else str(err.args[0])) from None


@_systems_command_head()
@click.option("--k", "k", type=HorizonList(), default=_K_DEFAULT,
              help="Horizon(s), each ranked alone.")
@click.option("--metric", type=click.Choice(("pass@k", "pass^k", "auc@k"), case_sensitive=False),
              default="pass@k", help="The metric ranked.")
@click.option("--method", type=click.Choice(_RANK_METHODS, case_sensitive=False),
              default="auto", help="auto: pooled up to 20 trials per task, mixture beyond.")
@click.option("--level", type=LevelType(), default=0.95,
              help="Level of the simultaneous and rank intervals.")
@_systems_command_tail("Save the (first) horizon's ranking figure here.",
                       "Seed of the fit and of the draws.")
def rank(ctx: click.Context, file: Path | None, example: bool, group_by: tuple[str, ...],
         k: tuple[int, ...],
         metric: str, method: str, level: float, fmt: str, plot: Path | None, seed: int,
         task: str | None, successes: str | None, trials: str | None, outcome: str | None,
         output: Path | None) -> None:
    """Rank the systems in FILE at horizon(s) k, with simultaneous and rank intervals.

    \b
    Examples:
      passmix rank --example --k 100
      passmix rank results.csv --group-by model --k 100
      passmix rank results.csv --group-by model --k 1,10 --format json
    """
    from ..compare import rank as rank_systems

    source, group_by = _systems_source(ctx, file, example, group_by)
    with _warnings_as_lines():
        try:
            panel, group_cols = _read_panel(source, group_by, ctx, task=task,
                                            successes=successes, trials=trials, outcome=outcome)
            result = rank_systems(panel, list(k),
                                  metric=metric.lower(), method=method.lower(), level=level,
                                  seed=seed)
            if "why" in result.details:
                click.echo(f"method {result.details['why']}", err=True)
            table = result.summary()
            for n, col in enumerate(group_cols):
                table.insert(1 + n, col, [label[n] for label in table["system"]])
            table = table.drop(columns="system")
            table.insert(len(group_cols) + 1, "metric", result.metric)
            if fmt.lower() == "json":
                text = table.to_json(orient="records", indent=2) + "\n"
            elif fmt.lower() == "csv":
                text = table.to_csv(index=False, float_format="%.6g")
            else:
                text = (f"{result.metric}, ranked ({result.method}); {result.level:.0%} "
                        "intervals and rank intervals for all systems at once\n"
                        + table.to_string(index=False, float_format="{:.4f}".format) + "\n")
            _emit(text, output)
            if plot is not None:
                _save_plot(lambda: result.plot().figure, plot)
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(1)
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None


def _render_comparison(result: Any, group_cols: list[str], fmt: str) -> str:
    """A comparison's rows, the systems spread over their group columns suffixed _a and _b."""
    table = result.summary()
    for side in ("a", "b"):
        for n, col in enumerate(group_cols):
            table[f"{col}_{side}"] = [label[n] for label in table[side]]
    front = [f"{col}_{side}" for side in ("a", "b") for col in group_cols]
    columns = front + ["metric", "k", "estimate", "lower", "upper", "band_lower", "band_upper",
                       "certified", "method", "se", "value_a", "value_b", "n_tasks"]
    table = table[columns + (["p_b_better"] if "p_b_better" in table else [])]
    if fmt == "json":
        return table.to_json(orient="records", indent=2) + "\n"
    if fmt == "csv":
        return table.to_csv(index=False, float_format="%.6g")
    shown = table.drop(columns=["method", "se"]).copy()
    for col in ("estimate", "lower", "upper", "band_lower", "band_upper"):
        shown[col] = shown[col].map("{:+.4f}".format)
    for col in ("value_a", "value_b", "p_b_better"):
        if col in shown:
            shown[col] = shown[col].map("{:.4f}".format)
    head = (f"{result.metric}: b - a, {result.level:.0%} pointwise interval and simultaneous "
            f"band over k = {','.join(map(str, result.k))} ({result.method})\n")
    return head + shown.to_string(index=False) + "\n"


def _read_log_file(source: Path, log_format: str, options: dict, group_cols: list):
    """FILE read by its harness log reader (and said on stderr), or None for a table."""
    from ..data.read import check_log_groups
    from ..data.readers import detect_log_format, read_log

    if not source.exists():  # said as such, not as a table that log options do not fit
        raise FileNotFoundError(f"no such file: '{source}'.")
    fmt = None if log_format == "table" else (
        detect_log_format(source) if log_format == "auto" else log_format)
    if fmt is None:
        log_only = [name for name in options if name != "threshold"]  # a table takes it too
        if log_only:
            raise click.UsageError(f"--{log_only[0]} applies to harness logs, and "
                                   f"{source} is read as a table; pass --from FORMAT.")
        return None
    log = read_log(source, fmt, **options)
    click.echo(log.attrs["summary"] + "".join(f"; {n}" for n in log.attrs["notes"]), err=True)
    check_log_groups(log, group_cols)
    return log

@main.group()
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


def _dask_client(address: str):
    """A Dask client of the scheduler at `address` (a context manager)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise click.ClickException(
            "--scheduler needs dask.distributed: pip install 'passmix[dask]'.") from None
    return Client(address)


def _command_line(ctx: click.Context) -> str:
    """The command as typed, in canonical form: only options given on the command line."""
    import shlex

    from click.core import ParameterSource

    words = ["passmix", *ctx.command_path.split()[1:]]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if ctx.get_parameter_source(param.name) != ParameterSource.COMMANDLINE:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
            continue
        flag = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            words.append(flag)
        elif getattr(param, "multiple", False):
            for item in value:
                words += [flag, str(item)]
        elif isinstance(value, tuple):
            words += [flag, ",".join(map(str, value))]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that flushing at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _message(err: BaseException) -> str:
    """The library's message; for OS errors without one, the OS's wording."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.strerror}: '{err.filename}'."
    text = str(err).strip()
    return text or type(err).__name__

