"""Command line interface of passmix.

``passmix estimate FILE`` reads per-task success counts (any layout that
:func:`passmix.read_counts` understands), fits a Beta mixture per group and
prints Pass@k, Pass^k and AUC@k at the requested horizons, with profile-likelihood (or delta-method)
intervals, next to the naive and combinatorial direct estimates if asked.

The module is deliberately thin: option parsing, one call into the library
per group (:func:`estimate_table`) and output formatting.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd
from tqdm import tqdm

from . import __version__
from ._validation import METRICS, DegenerateDataWarning, check_k, check_level
from .data import LAYOUTS, Counts, read_counts
from .estimators import combinatorial_estimate, naive_estimate
from .examples import example_path
from .fit import INTERVAL_METHODS, MAX_COMPONENTS, MAX_INIT, fit

__all__ = ["estimate_table", "main"]

#: Estimation methods, in output order; ``"all"`` selects every one.
METHODS = ("mixture", "naive", "combinatorial")
#: Output columns after the group columns.
VALUE_COLUMNS = ("metric", "k", "estimate", "lower", "upper", "method", "n_components")
FORMATS = ("table", "csv", "json")

DEFAULT_K = (1, 10, 100)
EXAMPLE_K = (1, 10, 100, 1000)
EXAMPLE_NAME = "math_m10"
EXAMPLE_GROUP_BY = ("model",)

# PyTensor's compile-time note about BLAS says nothing about the user's data.
_NOISE = r"PyTensor could not link to a BLAS"


# --------------------------------------------------------------------------
# the library call: one table of estimates
# --------------------------------------------------------------------------


def _group_label(group_cols: Sequence[str], key: tuple) -> str:
    """``model='Pythia 12B', benchmark='MATH'``, or ``""`` without groups."""
    return ", ".join(f"{col}={_plain(val)!r}" for col, val in zip(group_cols, key))


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds."""
    return value.item() if isinstance(value, np.generic) else value


def _methods(method: str | Sequence[str]) -> list[str]:
    """Validate `method` and expand ``"all"``; keep the canonical order."""
    asked = [method] if isinstance(method, str) else list(method)
    if not asked:
        raise ValueError("method is empty; give at least one of " + ", ".join(METHODS) + ".")
    chosen = set()
    for name in asked:
        if not isinstance(name, str) or name.lower() not in (*METHODS, "all"):
            raise ValueError(
                f"unknown method {name!r}; expected one of {', '.join(METHODS)} or 'all'."
            )
        chosen.update(METHODS if name.lower() == "all" else [name.lower()])
    return [m for m in METHODS if m in chosen]


def _observed_trials(counts: Counts) -> np.ndarray:
    trials = np.asarray(counts.trials)
    return trials[trials > 0]


@contextlib.contextmanager
def _recorded() -> Iterator[list[warnings.WarningMessage]]:
    """Record every warning raised inside, whatever the caller's filters say."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_NOISE)
        yield caught


def estimate_table(
    groups: Mapping[tuple, Counts] | Counts,
    group_cols: Sequence[str] = (),
    k: Sequence[int] | int = DEFAULT_K,
    level: float = 0.95,
    method: str | Sequence[str] = "mixture",
    max_components: int = 4,
    n_init: int = 10,
    seed: int | None = 0,
    *,
    interval: str = "profile",
    progress: bool = False,
) -> pd.DataFrame:
    """Pass@k, Pass^k and AUC@k for each group, method and horizon.

    Parameters
    ----------
    groups : dict of tuple to Counts, or Counts
        Per-group counts as returned by :func:`passmix.read_counts` with
        ``group_by``, or a single :class:`~passmix.Counts` (no groups). Not
        modified.
    group_cols : sequence of str, default ()
        Names of the group columns, one per element of each key of `groups`;
        empty for a single :class:`~passmix.Counts`.
    k : int or sequence of int, default (1, 10, 100)
        Horizons, each a whole number ``>= 1``. Repeats are dropped.
    level : float, default 0.95
        Confidence level of the mixture's intervals.
    method : {"mixture", "naive", "combinatorial", "all"} or sequence of them
        Estimators to report; ``"all"`` selects all three.
    max_components : int, default 4
        Largest number of mixture components H tried (BIC picks H).
    n_init : int, default 10
        Random initialisations per H.
    seed : int or None, default 0
        Seed of the fit, the same for every group, so a group's result does
        not depend on which other groups are present.
    interval : {"profile", "delta"}, default "profile"
        Interval method of the mixture (:meth:`passmix.MixtureFit.interval`).
    progress : bool, default False
        Show a progress bar over groups on stderr (only if there are at
        least two groups).

    Returns
    -------
    pandas.DataFrame
        One row per group, method, metric and horizon (in that nesting), with
        the group columns followed by ``metric`` (``"pass@k"``, ``"pass^k"``,
        ``"auc@k"``), ``k``, ``estimate``, ``lower``, ``upper``, ``method`` and
        ``n_components`` (nullable integer: the H chosen for the mixture, null
        for the direct estimators). ``lower``/``upper`` are the mixture's
        interval (profile likelihood or delta method, see `interval`) and
        null for the direct estimators. The combinatorial estimate is null
        where ``k`` exceeds the smallest number of trials of a task that was
        run. ``attrs["fits"]`` maps each group key to ``{"n_components",
        "loglik", "bic", "converged", "status"}`` of its mixture fit
        (``status`` as :meth:`passmix.MixtureFit.status`).

    Raises
    ------
    ValueError
        For invalid horizons, level, method or settings, group keys that do
        not match `group_cols`, or a group that cannot be fitted (the message
        names the group).

    Warns
    -----
    DegenerateDataWarning, FitWarning
        The library's warnings for a group, once each and prefixed with the
        group (e.g. ``model='A': ...``); and one DegenerateDataWarning per
        group whose combinatorial estimate is undefined at some horizon.

    See Also
    --------
    passmix.fit, passmix.naive_estimate, passmix.combinatorial_estimate

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.cli import estimate_table
    >>> counts = Counts([0, 2, 5, 1], [5, 5, 5, 5])
    >>> table = estimate_table(counts, k=[1, 5], method="naive")
    >>> table[["metric", "k", "estimate", "method"]].round(3)
       metric  k  estimate method
    0  pass@k  1     0.400  naive
    1  pass@k  5     0.649  naive
    2  pass^k  1     0.400  naive
    3  pass^k  5     0.253  naive
    4   auc@k  1     0.400  naive
    5   auc@k  5     0.546  naive
    """
    if isinstance(groups, Counts):
        groups = {(): groups}
    elif not isinstance(groups, Mapping):
        raise TypeError(
            f"groups must be a passmix.Counts or a dict of tuple to Counts, "
            f"got {type(groups).__name__}."
        )
    if not groups:
        raise ValueError("no groups to estimate.")
    group_cols = list(group_cols)
    clash = [c for c in group_cols if c in VALUE_COLUMNS]
    if clash:
        raise ValueError(
            f"group column {clash[0]!r} clashes with an output column "
            f"({', '.join(VALUE_COLUMNS)}); rename it."
        )
    for key, counts in groups.items():
        if not isinstance(key, tuple) or len(key) != len(group_cols):
            raise ValueError(
                f"group key {key!r} does not match the group columns {group_cols}."
            )
        if not isinstance(counts, Counts):
            raise TypeError(
                f"group {key!r} holds a {type(counts).__name__}, not a passmix.Counts."
            )
    ks, _ = check_k(k)
    ks = pd.unique(ks)
    level = check_level(level)
    methods = _methods(method)
    if not isinstance(interval, str) or interval.lower() not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {interval!r}; expected one of "
                         f"{', '.join(INTERVAL_METHODS)}.")

    rows: list[dict[str, Any]] = []
    fits: dict[tuple, dict[str, Any]] = {}
    bar = tqdm(
        total=len(groups), desc="passmix", unit="group", file=sys.stderr,
        disable=not progress or len(groups) < 2, leave=False,
    )
    with bar:
        for key, counts in groups.items():
            label = _group_label(group_cols, key)
            bar.set_postfix_str(label, refresh=False)
            prefix = dict(zip(group_cols, (_plain(v) for v in key)))
            failure: Exception | None = None
            with _recorded() as caught:
                try:
                    new_rows, info, undefined = _estimate_group(
                        counts, ks, level, methods, max_components, n_init, seed,
                        interval.lower(),
                    )
                except (ValueError, RuntimeError) as err:
                    failure = err
            _reissue(caught, label)  # also what was said before a failure
            if failure is not None:
                if not label:
                    raise failure
                kind = ValueError if isinstance(failure, ValueError) else RuntimeError
                raise kind(f"{label}: {failure}") from failure
            if undefined:
                m_min = int(_observed_trials(counts).min())
                shown = ", ".join(str(v) for v in undefined)
                warnings.warn(
                    f"{label + ': ' if label else ''}combinatorial estimator is undefined "
                    f"for k > m (smallest m_j = {m_min}); its estimate at k = {shown} is "
                    f"null. The mixture fit extrapolates beyond m.",
                    DegenerateDataWarning, stacklevel=2,
                )
            if info is not None:
                fits[key] = info
            rows.extend({**prefix, **row} for row in new_rows)
            bar.update(1)

    table = pd.DataFrame(rows, columns=[*group_cols, *VALUE_COLUMNS])
    table = table.astype({
        "k": "int64", "estimate": "float64", "lower": "float64", "upper": "float64",
        "n_components": "Int64",
    })
    table.attrs["fits"] = fits
    return table


def _estimate_group(
    counts: Counts,
    ks: np.ndarray,
    level: float,
    methods: list[str],
    max_components: int,
    n_init: int,
    seed: int | None,
    interval: str,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[int]]:
    """Rows for one group, its fit summary, and the horizons where combinatorial is null."""
    rows: list[dict[str, Any]] = []
    info = None
    undefined: list[int] = []
    nan = np.full(ks.shape, np.nan)
    for method in methods:
        n_comp: int | None = None
        if method == "mixture":
            res = fit(counts, max_components=max_components, n_init=n_init, seed=seed)
            n_comp = res.n_components
            info = {"n_components": res.n_components, "loglik": res.loglik,
                    "bic": res.bic, "converged": res.converged, "status": res.status()}
            summary = res.summary(ks, level, method=interval)
        elif method == "combinatorial":
            # Defined only for k <= m_j of every task that was run.
            trials = _observed_trials(counts)
            ok = ks <= (trials.min() if trials.size else 0)
            undefined = [int(v) for v in ks[~ok]]
        for metric in METRICS:
            lower = upper = nan
            if method == "mixture":
                part = summary[summary["metric"] == metric]
                est, lower, upper = (part[c].to_numpy() for c in ("estimate", "lower", "upper"))
            elif method == "naive":
                est = naive_estimate(counts, metric, ks)
            else:
                est = nan.copy()
                if ok.any():
                    est[ok] = combinatorial_estimate(counts, metric, ks[ok])
            for i, kk in enumerate(ks):
                rows.append({
                    "metric": metric, "k": int(kk), "estimate": float(est[i]),
                    "lower": float(lower[i]), "upper": float(upper[i]),
                    "method": method, "n_components": n_comp,
                })
    return rows, info, undefined


def _reissue(caught: list[warnings.WarningMessage], label: str) -> None:
    """Warn again, once per distinct message, with the group in front."""
    seen: set[tuple[type, str]] = set()
    for w in caught:
        text = str(w.message)
        if (w.category, text) in seen:
            continue
        seen.add((w.category, text))
        warnings.warn(f"{label}: {text}" if label else text, w.category, stacklevel=3)


# --------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    value = _plain(value)
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def to_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of `table` as JSON-ready dicts: Python scalars, nulls as None."""
    return [
        {col: _json_value(val) for col, val in zip(table.columns, row)}
        for row in table.itertuples(index=False, name=None)
    ]


def _number(value: Any) -> str:
    if pd.isna(value):
        return "NA"
    value = float(value)
    if value == 0.0 or abs(value) >= 1e-3:
        return f"{value:.4f}"
    return f"{value:.2e}"


def _trials_range(counts: Counts) -> str:
    trials = _observed_trials(counts)
    if trials.size == 0:
        return "0"
    lo, hi = int(trials.min()), int(trials.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def format_table(
    table: pd.DataFrame,
    groups: Mapping[tuple, Counts],
    group_cols: Sequence[str],
    level: float,
) -> str:
    """Aligned text: per group a one-line header with the fit, then its rows."""
    metric_order = {m: i for i, m in enumerate(METRICS)}
    fits = table.attrs.get("fits", {})
    pct = f"{100 * level:g}%"
    blocks = []
    for key, counts in groups.items():
        label = _group_label(group_cols, key) or "all tasks"
        head = f"{label}: J={counts.n_observed} tasks, m={_trials_range(counts)}"
        if key in fits:
            f = fits[key]
            head += f"; mixture H={f['n_components']}, loglik={f['loglik']:.3f}"
            status = f.get("status", "converged" if f["converged"] else "NOT converged")
            if status != "converged":
                head += f" ({status.removeprefix('converged; ')})"
        mask = np.ones(len(table), dtype=bool)
        for col, val in zip(group_cols, key):
            mask &= (table[col] == _plain(val)).to_numpy()
        part = table.loc[mask, ["metric", "k", "method", "estimate", "lower", "upper"]]
        part = part.assign(_m=part["metric"].map(metric_order)).sort_values(
            ["_m", "k"], kind="stable"
        )
        columns = [
            ("metric", part["metric"].tolist(), False),
            ("k", [str(v) for v in part["k"]], True),
            ("method", part["method"].tolist(), False),
            ("estimate", [_number(v) for v in part["estimate"]], True),
            (f"lower {pct}", [_number(v) for v in part["lower"]], True),
            (f"upper {pct}", [_number(v) for v in part["upper"]], True),
        ]
        blocks.append("\n".join([head, *_aligned(columns)]))
    return "\n\n".join(blocks) + "\n"


def _aligned(columns: list[tuple[str, list[str], bool]]) -> list[str]:
    """Lines of a text table; text columns left-aligned, numbers right-aligned."""
    widths = [max(len(name), *(len(v) for v in values)) if values else len(name)
              for name, values, _ in columns]

    def line(cells: list[str]) -> str:
        out = [c.rjust(w) if right else c.ljust(w)
               for c, w, (_, _, right) in zip(cells, widths, columns)]
        return ("  " + "  ".join(out)).rstrip()

    n_rows = len(columns[0][1])
    return [line([name for name, _, _ in columns])] + [
        line([values[i] for _, values, _ in columns]) for i in range(n_rows)
    ]


def render(
    table: pd.DataFrame,
    fmt: str,
    groups: Mapping[tuple, Counts],
    group_cols: Sequence[str],
    level: float,
) -> str:
    """The output text for `fmt` (``"table"``, ``"csv"`` or ``"json"``)."""
    if fmt == "json":
        return json.dumps(to_records(table), indent=2, allow_nan=False, default=str) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        table.to_csv(buf, index=False, lineterminator="\n")
        return buf.getvalue()
    return format_table(table, groups, group_cols, level)


# --------------------------------------------------------------------------
# click plumbing
# --------------------------------------------------------------------------

_SCI = re.compile(r"^\d+[eE]\+?\d+$")


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
            if k is None or k < 1 or k >= 2**63:
                self.fail(
                    f"{text!r} is not a valid horizon; k must be a whole number >= 1 "
                    f"(comma-separated, e.g. 1,10,100).",
                    param, ctx,
                )
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
            seen.add(text)
            tqdm.write(f"Warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_NOISE)
        warnings.showwarning = show
        yield


# Errors the library raises for bad input; shown as "Error: <message>", exit 1.
_INPUT_ERRORS = (ValueError, TypeError, OSError, RuntimeError)


def _column_options(command):
    """The options naming input columns, shared by the commands that read data."""
    for option in reversed([
        click.option("--task", default=None, metavar="COL", help="Task label column."),
        click.option("--successes", default=None, metavar="COL",
                     help="Successes column (counts layout)."),
        click.option("--trials", default=None, metavar="COL",
                     help="Trials column (counts layout)."),
        click.option("--outcome", default=None, metavar="COL",
                     help="0/1 outcome column (long layout)."),
    ]):
        command = option(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="passmix")
def main() -> None:
    """passmix: Pass@k, Pass^k and AUC@k of stochastic AI systems at any horizon.

    Fits a Beta mixture to per-task success counts (y_j successes of m_j
    trials) and reports the metrics with profile-likelihood (or delta-method) intervals.
    Run 'passmix COMMAND --help' for the options of a command.
    """


@main.command(context_settings={"show_default": True})
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--example", is_flag=True,
              help=f"Use the bundled example ({EXAMPLE_NAME}: Pythia models on 128 MATH "
                   f"problems, 10 trials each) instead of FILE; groups by model and uses "
                   f"k = {','.join(map(str, EXAMPLE_K))} unless told otherwise.")
@click.option("--group-by", "group_by", multiple=True, metavar="COLS",
              help="Column(s) identifying systems or settings, comma-separated (or "
                   "repeat the option); one set of estimates per group.")
@click.option("--k", "k", type=HorizonList(), default=None,
              help=f"Horizons, comma-separated.  [default: {','.join(map(str, DEFAULT_K))}]")
@click.option("--level", type=LevelType(), default=0.95,
              help="Confidence level of the mixture's intervals.")
@click.option("--interval", "interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
              default="profile",
              help="Interval of the mixture: profile likelihood, or the (faster) delta method.")
@click.option("--method", type=click.Choice([*METHODS, "all"], case_sensitive=False),
              default="mixture",
              help="Estimator: the Beta mixture, the naive plug-in, the unbiased "
                   "combinatorial one (only for k <= m), or all three.")
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
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              default=None, metavar="PATH", help="Write to this file instead of stdout.")
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
    output: Path | None,
    quiet: bool,
) -> None:
    """Estimate Pass@k, Pass^k and AUC@k from FILE (CSV, TSV, JSONL or Parquet).

    FILE holds per-task success counts in one of three layouts: one row per
    task with successes and trials columns, one row per attempt with a 0/1
    outcome column, or one row per task with one 0/1 column per attempt.
    Prints one row per group, method, metric and k.

    \b
    Examples:
      passmix estimate --example
      passmix estimate results.csv --group-by model --k 1,10,100,1000
      passmix estimate runs.jsonl --method all --format json -o estimates.json
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
        horizons = k if k is not None else EXAMPLE_K
    else:
        source = file
        horizons = k if k is not None else DEFAULT_K

    with _warnings_as_lines():
        try:
            data = read_counts(
                source, layout=layout.lower(), group_by=group_cols or None,
                task=task, successes=successes, trials=trials, outcome=outcome,
            )
            groups = data if isinstance(data, dict) else {(): data}
            table = estimate_table(
                groups, group_cols, k=horizons, level=level, method=method.lower(),
                max_components=max_components, n_init=n_init, seed=seed,
                interval=interval.lower(), progress=not quiet and _is_tty(sys.stderr),
            )
            text = render(table, fmt.lower(), groups, group_cols, level)
            if output is None:
                click.echo(text, nl=False)
            else:
                output.write_text(text, encoding="utf-8")
        except BrokenPipeError:  # e.g. `passmix estimate ... | head`: stop quietly
            _silence_stdout()
            ctx.exit(1)
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None


@main.group()
def experiment() -> None:
    """Run an evaluation protocol on data and write its tables, report and figures."""


@experiment.command(context_settings={"show_default": True})
@click.argument("data", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--out", "-o", "out", required=True,
              type=click.Path(file_okay=False, writable=True, path_type=Path),
              help="Output folder: errors.csv, summary CSVs, report.md, figures, cache/.")
@click.option("--group-by", "group_by", multiple=True, metavar="COLS",
              help="Column(s) identifying groups (e.g. model,benchmark), comma-separated.")
@click.option("--m", "m", type=HorizonList(), default=None, metavar="M[,M...]",
              help="Trials kept per task. [default: adapted to the trial count; the "
                   "paper's grid for 80 trials]")
@click.option("--k", "k", type=HorizonList(), default=None,
              help="Horizons. [default: adapted to the trial count, up to it]")
@click.option("--seeds", type=click.IntRange(min=1), default=3, help="Number of seeds.")
@click.option("--first-seed", type=click.IntRange(min=0), default=0,
              help="Seeds are FIRST_SEED .. FIRST_SEED + SEEDS - 1.")
@click.option("--jobs", "-j", type=click.IntRange(min=-1), default=1,
              help="Parallel worker processes (-1: all cores).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on this Dask scheduler (e.g. tcp://host:8786) instead of local "
                   "processes; needs passmix[dask].")
@click.option("--level", type=LevelType(), default=0.95,
              help="Confidence level of the mixture intervals.")
@click.option("--interval", "interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
              default="profile",
              help="Interval of the mixture: profile likelihood, or the (faster) delta method.")
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
@click.option("--no-figures", is_flag=True, help="Skip the figures.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write DIR/cache/.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def repeated(ctx: click.Context, data: Path, out: Path, group_by: tuple[str, ...],
             m: tuple[int, ...] | None, k: tuple[int, ...] | None, seeds: int,
             first_seed: int, jobs: int, scheduler: str | None, level: float, interval: str,
             max_components: int, n_init: int, report_k: tuple[int, ...] | None,
             report_m: int | None, title: str | None, layout: str, task: str | None,
             successes: str | None, trials: str | None, outcome: str | None,
             no_figures: bool, no_cache: bool, quiet: bool) -> None:
    """Repeated-trial protocol (first paper; docs/formulas.md, section 5) on DATA.

    Per group and seed, keeps the first m trials of every task after a random
    reordering (nested subsets), estimates Pass@k, Pass^k and AUC@k by the
    naive, combinatorial (k <= m) and mixture methods, and measures the error
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
    if jobs == 0:
        raise click.BadParameter("must be -1 or >= 1.", ctx, param_hint="'--jobs'")
    group_cols = _split_columns(group_by)
    from .experiments import repeated_experiment

    client = None
    with _warnings_as_lines(), contextlib.ExitStack() as stack:
        try:
            if scheduler is not None:
                try:
                    from dask.distributed import Client
                except ImportError:
                    raise click.ClickException(
                        "--scheduler needs dask.distributed: pip install 'passmix[dask]'."
                    ) from None
                client = stack.enter_context(Client(scheduler))
            result = repeated_experiment(
                data, out, group_by=group_cols or None, layout=layout.lower(), task=task,
                successes=successes, trials=trials, outcome=outcome, m=m, k=k,
                seeds=list(range(first_seed, first_seed + seeds)), level=level,
                interval=interval.lower(), max_components=max_components, n_init=n_init,
                jobs=jobs, client=client,
                cache=not no_cache, report_k=report_k, report_m=report_m,
                figures=not no_figures, title=title, command=_command_line(ctx),
                progress=not quiet and _is_tty(sys.stderr),
            )
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None
    t = result.timings
    click.echo(f"{len(result.errors)} rows from {len(result.fits)} fits "
               f"({t['units_cached']} cached) in {t['seconds']:.1f} s; report: "
               f"{out / 'report.md'}")


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
        elif isinstance(value, tuple):
            joined = ",".join(map(str, value))
            words += [flag, joined]
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


if __name__ == "__main__":
    main(prog_name="passmix")
