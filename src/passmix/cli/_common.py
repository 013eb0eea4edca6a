"""What the commands share: option types and stacks, reading, rendering and messages."""

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

from .._defaults import CLI_K
from .._validation import check_k
from ..data.read import LAYOUTS, read_counts
from ..examples import example_path
from ..estimators.registry import estimator_names, get_estimator
from ..tables import NOISE

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


#: harness log formats --from reads (auto: by suffix and content; table: never a log)
LOG_CHOICES = ("auto", "table", "inspect", "evalplus", "tau", "lm-eval")


def _input_options(metric_alias: bool = False) -> Callable:
    """How FILE is read, one definition for every command that reads FILE: --layout, the
    columns, --from and the log readers' options, and --threshold. `metric_alias`: the
    log metric also answers to ``--metric`` (estimate's name for it, where ``--metric``
    names no metric of passmix)."""
    log_metric = ("--log-metric", "--metric") if metric_alias else ("--log-metric",)
    return _stacked(
        click.option("--layout", type=click.Choice(LAYOUTS, case_sensitive=False),
                     default="auto",
                     help="Input layout: one row per task (counts), per attempt (long), or one "
                          "0/1 column per attempt (matrix); auto detects it from the columns."),
        _column_options,
        click.option("--from", "log_format", default="auto", metavar="FORMAT",
                     type=click.Choice(LOG_CHOICES, case_sensitive=False),
                     help="Read FILE as a harness log (auto: by suffix and content; table: "
                          "never)."),
        click.option("--scorer", default=None, metavar="NAME",
                     help="inspect log: the scorer whose value is the outcome."),
        click.option(*log_metric, "log_metric", default=None, metavar="NAME",
                     help="lm-eval samples: the metric whose value is the outcome."),
        click.option("--threshold", type=FiniteFloat(), default=None,
                     help="A score >= THRESHOLD is a success: partial or numeric scores in a "
                          "table's outcome column(s) or in a harness log."),
        click.option("--status", type=click.Choice(("plus", "base"), case_sensitive=False),
                     default=None, help="EvalPlus: success on the plus (default) or base "
                                        "tests."),
    )


def _read_input(source: Path, group_cols: list[str], *, example: bool = False,
                layout: str = "auto", task: str | None = None, successes: str | None = None,
                trials: str | None = None, outcome: str | None = None,
                log_format: str = "auto", scorer: str | None = None,
                log_metric: str | None = None, threshold: float | None = None,
                status: str | None = None):
    """FILE's counts (a dict by group where `group_cols` are given) from the options of
    :func:`_input_options`: read by its harness log reader (said on stderr), or as a
    table."""
    options = {name: value for name, value in (("scorer", scorer), ("metric", log_metric),
                                                ("threshold", threshold), ("status", status))
               if value is not None}
    log = None if example else _read_log_file(source, log_format.lower(), options, group_cols)
    return read_counts(
        log if log is not None else source, layout=layout.lower(),
        group_by=group_cols or None, task=task, successes=successes, trials=trials,
        outcome=outcome, log_format="table",
        threshold=threshold if log is None else None,  # a log's reader scored it
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
        click.command(context_settings={"show_default": True}),
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
        click.option("--plot", "plot", default=None, help=plot_help, metavar="PATH",
                     type=click.Path(dir_okay=False, writable=True, path_type=Path)),
        click.option("--seed", type=int, default=0, help=seed_help),
        _input_options(),
        click.option("--output", "-o", default=None, metavar="PATH",
                     type=click.Path(dir_okay=False, writable=True, path_type=Path),
                     help="Write the output here instead of stdout."),
        click.option("--quiet", "-q", is_flag=True,
                     help="No notes on stderr (the method chosen and why)."),
        click.pass_context,
    )


def _read_panel(file: Path, group_by: tuple[str, ...], ctx: click.Context, example: bool,
                **reading):
    """The systems of FILE as a Panel with tuple labels, and the group columns; `reading`:
    the options of :func:`_input_options`."""
    from ..data.panel import Panel

    group_cols = _split_columns(group_by)
    if not group_cols:
        raise click.BadParameter("no column names given.", ctx, param_hint="'--group-by'")
    groups = _read_input(file, group_cols, example=example, **reading)
    # tuple labels, one value per group column, which the output spreads over the columns
    return Panel.from_counts(groups, unpack=False), group_cols


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")


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
    if fmt in ("json", "csv"):
        return _machine_text(table, fmt)
    shown = table.drop(columns=["method", "se"]).copy()
    for col in ("estimate", "lower", "upper", "band_lower", "band_upper"):
        shown[col] = shown[col].map("{:+.4f}".format)
    for col in ("value_a", "value_b", "p_b_better"):
        if col in shown:
            shown[col] = shown[col].map("{:.4f}".format)
    head = (f"{result.metric}: b - a, {result.level:.0%} pointwise interval and simultaneous "
            f"band over k = {','.join(map(str, result.k))} ({result.method})\n")
    return head + shown.to_string(index=False) + "\n"


def _machine_text(table: Any, fmt: str) -> str:
    """`table` as JSON records or CSV, as every command writes them: floats in full (as
    Python writes them), missing values as null or empty."""
    import json

    from ..tables import to_records

    if fmt == "json":
        return json.dumps(to_records(table), indent=2, allow_nan=False, default=str) + "\n"
    return table.to_csv(index=False, lineterminator="\n")


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

