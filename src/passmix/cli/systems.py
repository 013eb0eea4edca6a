"""``passmix compare`` and ``passmix rank``: systems on shared tasks, paired and ranked."""

from __future__ import annotations

from pathlib import Path

import click

from ..data.panel import system_name
from .._defaults import COMPARE_METHODS, INTERVAL_METHODS, RANK_METHODS
from ._common import (EXAMPLE_GROUP_BY, EXAMPLE_PAIR, HorizonList, LevelType,
                      _INPUT_ERRORS, _K_DEFAULT, _emit, _machine_text, _message, _read_panel,
                      _render_comparison, _save_plot, _silence_stdout, _systems_command_head,
                      _systems_command_tail, _systems_source, _warnings_as_lines)

__all__ = ["compare", "rank"]


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
@click.option("--method", type=click.Choice(COMPARE_METHODS, case_sensitive=False),
              default="auto", help="auto: pooled up to 20 trials per task, mixture beyond "
                                   "(beyond the trials its intervals also span the pooled "
                                   "model's); direct: model-free, k within the trials; "
                                   "posterior: NUTS "
                                   "draws of the pooled model.")
@click.option("--interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
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
            output: Path | None, quiet: bool, **reading) -> None:
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
            panel, group_cols = _read_panel(source, group_by, ctx, example,
                                            **reading)
            if example and a is None and group_by == EXAMPLE_GROUP_BY:
                # every pair of 7 systems is 21 profile searches: one pair shows the idea
                a, b = EXAMPLE_PAIR
                if not quiet:
                    click.echo(f"--example compares {a} (a) with {b} (b); pass --a NAME --b "
                               "NAME for another pair of: "
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
            if "why" in result.details and not quiet:
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
@click.option("--method", type=click.Choice(RANK_METHODS, case_sensitive=False),
              default="auto", help="auto: pooled up to 20 trials per task (beyond the "
                                   "trials, each system's interval also spans its mixture's), "
                                   "mixture beyond 20 (each interval beyond the trials also "
                                   "spans the pooled model's).")
@click.option("--interval", type=click.Choice(INTERVAL_METHODS, case_sensitive=False),
              default=None, help="Each system's simultaneous interval [default: profile, "
                                 "delta where the pooled fit is too large to profile].")
@click.option("--level", type=LevelType(), default=0.95,
              help="Level of the simultaneous and rank intervals.")
@_systems_command_tail("Save the (first) horizon's ranking figure here.",
                       "Seed of the fit and of the draws.")
def rank(ctx: click.Context, file: Path | None, example: bool, group_by: tuple[str, ...],
         k: tuple[int, ...],
         metric: str, method: str, interval: str | None, level: float, fmt: str,
         plot: Path | None, seed: int, output: Path | None, quiet: bool, **reading) -> None:
    """Rank the systems in FILE at horizon(s) k, with simultaneous and rank intervals.

    \b
    Examples:
      passmix rank --example --k 100
      passmix rank results.csv --group-by model --k 100
      passmix rank results.csv --group-by model --k 1,10 --format json
      passmix rank results.csv --group-by model --k 100 --interval delta
    """
    from ..compare import rank as rank_systems

    source, group_by = _systems_source(ctx, file, example, group_by)
    with _warnings_as_lines():
        try:
            panel, group_cols = _read_panel(source, group_by, ctx, example,
                                            **reading)
            result = rank_systems(panel, list(k),
                                  metric=metric.lower(), method=method.lower(),
                                  interval=None if interval is None else interval.lower(),
                                  level=level, seed=seed)
            if "why" in result.details and not quiet:
                click.echo(f"method {result.details['why']}", err=True)
            table = result.summary()
            for n, col in enumerate(group_cols):
                table.insert(1 + n, col, [label[n] for label in table["system"]])
            table = table.drop(columns="system")
            table.insert(len(group_cols) + 1, "metric", result.metric)
            if fmt.lower() in ("json", "csv"):
                text = _machine_text(table, fmt.lower())
            else:
                text = (f"{result.metric}, ranked ({result.method}); {result.level:.0%} "
                        f"{result.details['interval']} intervals and rank intervals for all "
                        "systems at once\n"
                        + table.to_string(index=False, float_format="{:.4f}".format) + "\n")
            _emit(text, output)
            if plot is not None:
                _save_plot(lambda: result.plot().figure, plot)
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(1)
        except _INPUT_ERRORS as err:
            raise click.ClickException(_message(err)) from None


