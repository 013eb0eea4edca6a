"""Tables of estimates: one row per group, method, metric and horizon, and their rendering.

:func:`estimate_table` runs every requested estimator of the registry
(:mod:`passmix.estimators.registry`) on every group and collects rows through each
result's ``summary()`` (:mod:`passmix.estimators.base`); :func:`render` turns a table
into aligned text, CSV or JSON. The command line (``passmix estimate``) is a
thin wrapper of these two, and the experiment harness builds its rows with
:func:`result_rows`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import multiprocessing
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._defaults import CLI_K, LEVEL, METRICS
from ._validation import (DegenerateDataWarning, FitWarning, check_interval_method, check_jobs,
                          check_k, check_level)
from .data.counts import Counts
from .estimators.base import FittedResult
from .estimators.registry import auto_method, get_estimator, resolve_methods, shares_tasks

__all__ = ["VALUE_COLUMNS", "estimate_table", "format_table", "recorded_warnings", "render",
           "result_rows", "to_records"]

#: Output columns after the group columns (``interval``: the ends' method, profile or
#: delta; empty for an estimator without intervals).
VALUE_COLUMNS = ("metric", "k", "estimate", "lower", "upper", "method", "n_components",
                 "interval")

# PyTensor's compile-time note about BLAS says nothing about the user's data.
NOISE = r"PyTensor could not link to a BLAS"


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds."""
    return value.item() if isinstance(value, np.generic) else value


def group_label(group_cols: Sequence[str], key: tuple) -> str:
    """``model='Pythia 12B', benchmark='MATH'``, or ``""`` without groups."""
    return ", ".join(f"{col}={_plain(val)!r}" for col, val in zip(group_cols, key))


@contextlib.contextmanager
def recorded_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record every warning raised inside, whatever the caller's filters say."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=NOISE)
        yield caught


def result_rows(result: FittedResult, ks: np.ndarray, level: float, interval: str | None
                ) -> list[dict[str, Any]]:
    """Rows ``{metric, k, estimate, lower, upper, interval}`` of a fitted result at horizons
    `ks`; ``interval`` is the ends' method (the summary's ``attrs["method"]``), or None."""
    table = result.summary(ks, level, method=interval)
    how = table.attrs.get("method") if not table["lower"].isna().all() else None
    return [{"metric": m, "k": int(k), "estimate": float(e), "lower": float(lo),
             "upper": float(hi), "interval": how}
            for m, k, e, lo, hi in zip(table["metric"], table["k"], table["estimate"],
                                       table["lower"], table["upper"])]


def _reissue(said: Sequence[tuple[type[Warning], str]], label: str) -> None:
    """Warn again, once per distinct ``(category, message)``, with the group in front."""
    for category, text in dict.fromkeys(said):
        warnings.warn(f"{label}: {text}" if label else text, category, stacklevel=4)


def estimate_table(
    groups: Mapping[tuple, Counts] | Counts,
    group_cols: Sequence[str] = (),
    k: Sequence[int] | int = CLI_K,
    level: float = LEVEL,
    method: str | Sequence[str] = "auto",
    max_components: int = 4,
    n_init: int = 10,
    seed: int | None = 0,
    *,
    interval: str | None = None,
    progress: bool = False,
    jobs: int = 1,
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
    k : int or sequence of int, default (1, 10, 100, 1000)
        Horizons, each a whole number ``>= 1``. Repeats are dropped.
    level : float, default 0.95
        Confidence level of the mixture's intervals.
    method : str or sequence of str, default "auto"
        Registered estimators to report (``"mixture"``, ``"naive"``,
        ``"combinatorial"``, ``"pooled"`` and any added with
        :func:`passmix.register_estimator`); ``"all"`` selects every one,
        except joint ones (``"pooled"``) when no two groups share a task;
        ``"auto"`` the pooled model or the mixture, as
        :func:`passmix.estimators.registry.auto_method` decides (it says which, and why,
        in ``attrs["method_note"]`` and the text table's first line). Where it
        pools, the intervals beyond each group's trials also span the group's
        own mixture's: there the pooled intervals lean on one task order for
        every system, which no check within the trials can test, and they
        under-cover where it is wrong (``docs/results/pooled_reorder.md``). Where
        it fits each group's mixture and groups share tasks, the intervals
        beyond a group's trials also span the pooled model's: there the
        mixture rests on its Beta tail of rare successes, which under-covers
        where successes are rare and the pooled model covers
        (``docs/results/rare_coverage.md``).
    max_components : int, default 4
        Largest number of mixture components H tried (BIC picks H).
    n_init : int, default 10
        Random initialisations per H.
    seed : int or None, default 0
        Seed of the fit, the same for every group, so a group's result does
        not depend on which other groups are present.
    interval : {"profile", "delta"}, optional
        Interval method of the mixture and the pooled model
        (:meth:`passmix.MixtureFit.interval`, :meth:`passmix.PooledFit.summary`);
        by default each one's own: profile likelihood for the mixture, and
        for the pooled model on panels of up to
        :data:`passmix.models.pooled.PROFILE_CELLS` cells (delta beyond, but profile
        for a system on a bound).
    progress : bool, default False
        Show a progress bar over groups on stderr (only if there are at
        least two groups).
    jobs : int, default 1
        Worker processes for the groups after the first (-1: one per CPU).
        They are forked from this process once the first group has compiled
        what the estimators need, so each starts at once. On Linux only:
        elsewhere (forking is unsafe on macOS and unavailable on Windows) the
        groups run here, one after another. The table is the same for any
        `jobs`.

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
        "loglik", "bic", "converged", "status"}`` of the first model among
        `method` that reports them (the mixture or the pooled fit; ``status``
        as :meth:`passmix.MixtureFit.status`), with ``"estimator"`` (and the
        pooled fit's ``"family"``, ``"n_systems"`` and ``"slope"``) where the
        model says them; a pooled fit's ``loglik`` and ``bic`` are the joint
        fit's, of all systems together.

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
        group and method whose estimate is undefined at some horizon.

    See Also
    --------
    passmix.fit, passmix.naive_estimate, passmix.combinatorial_estimate

    Examples
    --------
    >>> from passmix import Counts
    >>> from passmix.tables import estimate_table
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
    method_note = None
    # auto's two models: the first gives the estimates, and beyond a group's trials its
    # intervals also span the second's
    second: list[str] = []
    if isinstance(method, str) and method.lower() == "auto":
        method, why = auto_method(groups)
        if method == "pooled":
            second = ["mixture"]
        elif len(groups) > 1 and shares_tasks(groups) and np.any(
                ks > min(int(np.max(c.trials, initial=0)) for c in groups.values())):
            # beyond the trials a group's own mixture rests on its Beta tail near 0, which
            # its counts cannot check; the pooled model reads the tasks' order off the other
            # groups. Where successes are rare each alone under-covers where the other
            # covers (docs/results/rare_coverage.md)
            second = ["pooled"]
        if len(groups) > 1:  # one group has nothing to pool: nothing to say
            method_note = f"method auto chose {method}: {why}"
            if second and method == "pooled":
                method_note += ("; beyond the trials, where its one task order for every "
                                "system cannot be checked, its intervals also span each "
                                "group's own mixture")
            elif second:
                method_note += ("; beyond the trials, where each group's tail of rare "
                                "successes cannot be checked, its intervals also span the "
                                "pooled model's, which reads the tasks' order off the other "
                                "groups")
    methods = resolve_methods(method) + second
    jobs = check_jobs(jobs)
    check_interval_method(interval, optional=True)
    options = {"seed": seed, "max_components": max_components, "n_init": n_init}
    joint = _joint_results(groups, methods, method, options)

    work = functools.partial(
        _group_work, methods=methods, joint=joint, options=options, ks=ks, level=level,
        interval=None if interval is None else interval.lower(), split=bool(second))

    from tqdm import tqdm

    rows: list[dict[str, Any]] = []
    fits: dict[tuple, dict[str, Any]] = {}
    unavailable: set[tuple[str, str, str]] = set()
    bar = _QuietBar(tqdm)(
        total=len(groups), desc="passmix", unit="group", file=sys.stderr,
        disable=not progress or len(groups) < 2, leave=False,
    )
    with bar:
        for key, done in _map_groups(work, groups, jobs):
            label = group_label(group_cols, key)
            bar.set_postfix_str(label, refresh=False)
            _reissue(done.warnings, label)  # also what was said before a failure
            if done.failure is not None:
                if not label:
                    raise done.failure
                kind = ValueError if isinstance(done.failure, ValueError) else RuntimeError
                raise kind(f"{label}: {done.failure}") from done.failure
            for note in done.notes:
                if note:
                    warnings.warn(f"{label + ': ' if label else ''}{note}",
                                  DegenerateDataWarning, stacklevel=2)
            if done.fit is not None:
                fits[key] = done.fit
            unavailable |= done.unavailable
            prefix = dict(zip(group_cols, (_plain(v) for v in key)))
            rows.extend({**prefix, **row} for row in done.rows)
            bar.update(1)

    for name, asked, used in sorted(unavailable):
        warnings.warn(f"{name}: {asked} intervals are not available; {used} intervals are "
                      "reported.", FitWarning, stacklevel=2)
    table = pd.DataFrame(rows, columns=[*group_cols, *VALUE_COLUMNS])
    table = table.astype({
        "k": "int64", "estimate": "float64", "lower": "float64", "upper": "float64",
        "n_components": "Int64",
    })
    table.attrs["fits"] = fits
    if method_note is not None:
        table.attrs["method_note"] = method_note
    return table


#: What ``attrs["fits"]`` keeps of a model's ``info()``.
_FIT_KEYS = ("n_components", "loglik", "bic", "converged", "status")
# and, where the model reports them, what names it in the text table's header
_FIT_LABELS = ("estimator", "family", "n_systems", "slope", "never_solved", "zero_weight",
               "trials_to_tell", "pass_hat_k_components", "always_solved",
               "pass_hat_k_trials_to_tell")

@dataclass
class _GroupRows:
    """What one group's estimators gave: rows, the mixture's fit summary, what they said."""

    rows: list[dict[str, Any]]
    fit: dict[str, Any] | None
    notes: list[str]
    unavailable: set[tuple[str, str, str]]
    warnings: list[tuple[type[Warning], str]]
    failure: Exception | None


def _group_work(item: tuple[tuple, Counts], *, methods, joint, options, ks, level, interval,
                split: bool = False) -> _GroupRows:
    """Every requested estimator on one group; errors and warnings are returned, not raised.
    With `split`, the first (joint) method gives the horizons within the group's trials
    and the second (its mixture) those beyond."""
    key, counts = item
    rows: list[dict[str, Any]] = []
    fit = None
    notes: list[str] = []
    unavailable: set[tuple[str, str, str]] = set()
    failure: Exception | None = None
    all_ks = ks
    within = all_ks <= int(np.max(counts.trials, initial=0))
    with recorded_warnings() as caught:
        try:
            for n, name in enumerate(methods):
                if split and n == 1:
                    ks = all_ks[~within]
                    if not ks.size:
                        continue
                if name in joint:
                    result = joint[name][key]
                elif get_estimator(name).joint:
                    continue  # left out: no two groups share a task
                else:
                    result = get_estimator(name)(counts, **options)
                own = getattr(result, "interval_methods", None)
                iv = interval  # None: the result's own default
                if own is not None and iv is not None and iv not in own:
                    unavailable.add((name, iv, own[0]))
                    iv = own[0]
                part = result_rows(result, ks, level, iv)
                info = result.info()
                n_comp = info.get("n_components")
                if split and n == 1:
                    # the pooled rows beyond the trials widened to hold the group's own ends
                    own = {(r["metric"], r["k"]): r for r in part}
                    for row in rows:
                        mine = own.get((row["metric"], row["k"]))
                        if mine is not None:
                            row["lower"] = min(row["lower"], mine["lower"])
                            row["upper"] = max(row["upper"], mine["upper"])
                else:
                    rows += [{**row, "method": name, "n_components": n_comp} for row in part]
                if fit is None and set(_FIT_KEYS) <= info.keys():  # the first model fitted
                    fit = {f: info[f] for f in (*_FIT_KEYS, *_FIT_LABELS) if f in info}
                elif split and fit is not None and n == 1:  # what the rows beyond assume
                    if info.get("estimator") == "pooled":
                        fit["beyond_pooled"] = info.get("n_systems", 2)
                    else:
                        fit.update({f: info[f] for f in _FIT_LABELS if f in info
                                    and f not in ("estimator", "family", "n_systems", "slope")})
                        fit["beyond"] = info["n_components"]
                undefined = ks[[np.isnan(r["estimate"]) for r in part[:ks.size]]]
                note = getattr(result, "undefined_note", None)
                if undefined.size and note is not None:
                    notes.append(note(undefined))
        except (ValueError, RuntimeError) as err:
            failure = err
    said = [(w.category, str(w.message)) for w in caught]
    return _GroupRows(rows, fit, notes, unavailable, said, failure)


def _QuietBar(tqdm: type) -> type:
    """`tqdm` without its monitor thread: a live Python thread makes :func:`_map_groups` run
    the groups here, since a forked child could wait on a lock it held (tqdm starts the
    monitor with its first bar, even a disabled one)."""
    return type("_QuietBar", (tqdm,), {"monitor_interval": 0})


def _map_groups(work, groups: Mapping[tuple, Counts], jobs: int
                ) -> Iterator[tuple[tuple, _GroupRows]]:
    """``(key, work((key, counts)))`` for every group, in order.

    With ``jobs != 1`` the groups after the first run in forked worker
    processes (Linux only: forking is unsafe on macOS, unavailable on
    Windows; elsewhere, and where another Python thread runs, they run here). The first runs here, so the workers
    inherit whatever it compiled (the mixture's objective, once per
    process) instead of each compiling its own, and `work` itself (with any
    joint fits it holds) is inherited, not sent with every group.
    """
    global _FORKED_WORK
    items = list(groups.items())
    n_workers = min(_worker_count(jobs), len(items) - 1)
    # a Python thread (a notebook kernel's, say) may hold a lock a forked child would wait on
    if n_workers < 2 or not sys.platform.startswith("linux") or threading.active_count() > 1:
        for item in items:
            yield item[0], work(item)
        return
    yield items[0][0], work(items[0])
    _FORKED_WORK = work
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns of fork in any process with threads; this one runs no Python
            # thread but the main one, and its native ones (BLAS pools, jemalloc's background
            # thread) take care of a fork themselves (pthread_atfork)
            warnings.filterwarnings("ignore", r".*multi-threaded, use of fork\(\)",
                                    DeprecationWarning)
            pool = multiprocessing.get_context("fork").Pool(n_workers)
        with pool:
            for item, done in zip(items[1:], pool.imap(_forked, items[1:])):
                yield item[0], done
    finally:
        _FORKED_WORK = None


# what a forked worker runs (set by _map_groups just before the fork)
_FORKED_WORK = None


def _forked(item: tuple[tuple, Counts]) -> _GroupRows:
    """`_FORKED_WORK` on one group, its failure reduced to what pickles: type and message."""
    done = _FORKED_WORK(item)
    if done.failure is not None:
        kind = ValueError if isinstance(done.failure, ValueError) else RuntimeError
        done.failure = kind(str(done.failure))
    return done


def _worker_count(jobs: int) -> int:
    """``jobs``, with -1 meaning every CPU this process may use."""
    if jobs != -1:
        return jobs
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1

# --------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------


def _joint_results(groups: Mapping[tuple, Counts], methods: list[str], asked,
                   options: dict[str, Any]) -> dict[str, Mapping[tuple, Any]]:
    """Fit each joint estimator once on all groups; ``"all"`` skips them without shared tasks."""
    names = [name for name in methods if get_estimator(name).joint]
    if not names:
        return {}
    if not shares_tasks(groups):
        asked_all = any(isinstance(a, str) and a.lower() == "all"
                        for a in ([asked] if isinstance(asked, str) else asked))
        if asked_all:
            return {}
        if len(groups) > 1:  # one group asked for by name: a one-system model
            raise ValueError(f"method {names[0]!r} fits all groups at once and needs at least "
                             "two groups that share a task (matched by the task column).")
    out = {}
    for name in names:
        with recorded_warnings() as caught:
            out[name] = get_estimator(name)(groups, **options)
        _reissue([(w.category, str(w.message)) for w in caught], name)
    return out


def _json_value(value: Any) -> Any:
    value = _plain(value)
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def to_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of `table` as JSON-ready dicts: Python scalars, nulls as None.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from passmix.tables import to_records
    >>> to_records(pd.DataFrame({"k": [1], "estimate": [np.nan]}))
    [{'k': 1, 'estimate': None}]
    """
    return [
        {col: _json_value(val) for col, val in zip(table.columns, row)}
        for row in table.itertuples(index=False, name=None)
    ]


def _number(value: Any) -> str:
    if pd.isna(value):
        return "NA"
    value = float(value)
    if value == 0.0:
        return "0"  # exact: not a small number rounded, beside 1.49e-34
    if abs(value) >= 1e-3:
        return f"{value:.4f}"
    return f"{value:.2e}"


def _horizon(k: int) -> str:
    """A horizon as written: 1e18 rather than nineteen digits, where that is exact."""
    mantissa, _, power = f"{k:.3g}".partition("e+")
    short = f"{mantissa}e{int(power)}" if power else mantissa
    return short if k >= 10**6 and float(short) == k else str(k)


def _beyond_note(ks: Sequence[int], counts: Counts) -> str:
    """The horizons past the trials run, said under a group's rows."""
    most = int(np.max(counts.trials, initial=0))
    beyond = sorted({int(k) for k in ks if k > most})
    if not beyond or most == 0:
        return ""
    listed = ", ".join(map(_horizon, beyond))
    times = beyond[-1] / most
    return (f"  k = {listed}: beyond the {most} trials run per task (up to "
            f"{_horizon(int(times)) if times >= 10**6 else f'{times:,.0f}'} times as many); "
            "there every value extrapolates the fitted distribution of success rates")


def _trials_range(counts: Counts) -> str:
    trials = np.asarray(counts.trials)
    trials = trials[trials > 0]
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
    """Aligned text: per group a one-line header with the fit, then its rows.

    A pooled fit, one for all groups, is described once above them, with its
    joint log-likelihood; each group's header names the model it got.
    """
    metric_order = {m: i for i, m in enumerate(METRICS)}
    fits = table.attrs.get("fits", {})
    pct = f"{100 * level:g}%"
    blocks = [table.attrs["method_note"]] if "method_note" in table.attrs else []
    pooled = next((f for f in fits.values() if f.get("estimator") == "pooled"), None)
    if pooled is not None:
        blocks.append(_pooled_note(pooled))
    for key, counts in groups.items():
        label = group_label(group_cols, key) or "all tasks"
        head = f"{label}: J={counts.n_observed} tasks, m={_trials_range(counts)}"
        if key in fits:
            f = fits[key]
            head += f"; {_fit_label(f)}"
            if "beyond" in f:
                head += (f"; beyond the trials its intervals also span its own Beta mixture, "
                         f"{f['beyond']} component{'s' if f['beyond'] > 1 else ''} (BIC)")
            if "beyond_pooled" in f:
                head += (f"; beyond the trials its intervals also span the pooled model's "
                         f"(task difficulties shared by all {f['beyond_pooled']} systems)")
            status = f.get("status", "converged" if f["converged"] else "NOT converged")
            if status != "converged":
                head += f" ({status.removeprefix('converged; ')})"
            head += _never_solved_note(f) + _richer_note(f)
        mask = np.ones(len(table), dtype=bool)
        for col, val in zip(group_cols, key):
            mask &= (table[col] == _plain(val)).to_numpy()
        part = table.loc[mask, ["metric", "k", "method", "estimate", "lower", "upper",
                                "interval"]]
        part = part.assign(_m=part["metric"].map(metric_order)).sort_values(
            ["_m", "k"], kind="stable"
        )
        columns = [
            ("metric", part["metric"].tolist(), False),
            ("k", [_horizon(int(v)) for v in part["k"]], True),
            ("method", part["method"].tolist(), False),
            ("estimate", [_number(v) for v in part["estimate"]], True),
            (f"lower {pct}", [_number(v) for v in part["lower"]], True),
            (f"upper {pct}", [_number(v) for v in part["upper"]], True),
            ("interval", [v if isinstance(v, str) else "-" for v in part["interval"]], False),
        ]
        note = _beyond_note(part["k"], counts)
        blocks.append("\n".join([head, *_aligned(columns), *([note] if note else [])]))
    return "\n\n".join(blocks) + "\n"


def _fit_label(fit: Mapping[str, Any]) -> str:
    """The model of a group's header, in words.

    A mixture's log-likelihood is the group's own, so it is shown; a pooled
    fit's is of all systems at once, so :func:`_pooled_note` shows it once.
    """
    if fit.get("estimator") == "pooled":
        others = fit.get("n_systems", 2) - 1
        shared = (f"task difficulties shared with the other {others} system"
                  f"{'s' if others > 1 else ''}" if others > 0 else "one system")
        return f"pooled model ({shared})"
    h = fit["n_components"]
    return (f"Beta mixture, {h} component{'s' if h > 1 else ''} (BIC), "
            f"log-likelihood {fit['loglik']:.3f}")


def _never_solved_note(fit: Mapping[str, Any]) -> str:
    """What a single-system fit assumes of the tasks it never saw solved, in a clause."""
    n = fit.get("never_solved")
    if not n:
        return ""
    if fit.get("estimator") == "zi_mixture":
        return (f"; {n} task{'s' if n > 1 else ''} never solved, an atom at 0 of weight "
                f"{fit['zero_weight']:.3g}")
    tell = fit.get("trials_to_tell")
    more = (f"; about {tell} more trials on each would tell hard from impossible"
            if tell else "")
    return (f"; {n} task{'s' if n > 1 else ''} never solved: beyond the trials the intervals "
            f"also span an atom at 0 (impossible tasks){more}")


def _richer_note(fit: Mapping[str, Any]) -> str:
    """The richer shape Pass^k's intervals also span, in a clause."""
    h = fit.get("pass_hat_k_components")
    if not h:
        return ""
    n, tell = fit.get("always_solved"), fit.get("pass_hat_k_trials_to_tell")
    more = (f"; about {tell} more trials on each of the {n} task{'s' if n > 1 else ''} "
            "always solved would tell" if n and tell else "")
    return f"; Pass^k intervals (k >= 2) also span {h} components{more}"


def _pooled_note(fit: Mapping[str, Any]) -> str:
    """The pooled model in one line: what it assumes, and its joint log-likelihood."""
    n = fit.get("n_systems", 0)
    family, h = fit.get("family", "normal"), fit["n_components"]
    if family == "grid":
        difficulty = "one distribution on a grid (no shape assumed)"
    elif h > 1:
        difficulty = f"a mixture of {h} normal distributions"
    else:
        difficulty = "one normal distribution"
    slopes = ", a slope per system" if fit.get("slope") else ""
    return (f"pooled model: {n} system{'s' if n != 1 else ''} fitted jointly, task "
            f"difficulties from {difficulty}{slopes}; joint log-likelihood "
            f"{fit['loglik']:.3f} (all systems)")


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
