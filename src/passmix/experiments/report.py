"""Summary tables of a repeated-trial run and its Markdown report.

Every table starts from the errors table of :func:`run_repeated` (one row per
group, seed, m, k, metric and method) and follows the paper's averaging:
absolute errors in percentage points are averaged over seeds within a group,
then over groups (``docs/formulas.md``, section 5). The regime of a row is ``k <= m``
(the budget reaches the horizon) or ``k > m`` (extrapolation).

=======================  ===================================  =====================
function                 what                                 paper
=======================  ===================================  =====================
:func:`mae_by_regime`    MAE by metric, method and regime     Tables 2 and 5
:func:`mae_at_k`         MAE at a fixed k by m                Tables 6-8, Figure 6
:func:`mae_by_seed`      extrapolation MAE per seed, SD       Table 9
:func:`win_rates`        MAE and share of groups won          Table 1
:func:`trials_needed`    smallest m reaching a tolerance      Table 4
:func:`bic_shares`       share of fits choosing each H        Figure 8
:func:`coverage`         intervals containing the reference   Figures 3, 5
:func:`mae_by_group`     per-group MAE at fixed k (seed SD)   (per model)
=======================  ===================================  =====================
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import METRICS
from ._harness import protocol_methods
from .grids import PAPER_K

if TYPE_CHECKING:
    from .repeated import RepeatedResult

__all__ = [
    "PAPER_TARGET",
    "plain_table",
    "best_cell",
    "bic_shares",
    "coverage",
    "default_report_k",
    "default_report_m",
    "fit_diagnostics",
    "group_columns",
    "mae_at_k",
    "mae_by_group",
    "mae_by_regime",
    "mae_by_seed",
    "markdown_table",
    "regime",
    "report_head",
    "save_figures",
    "summary_tables",
    "trials_needed",
    "warning_lines",
    "win_rates",
    "write_report",
    "write_tables",
]

#: The paper's headline target: the mean error of Pass^k and AUC@k.
PAPER_TARGET = ("pass^k", "auc@k")
PAPER_TARGET_NAME = "mean(pass^k, auc@k)"
REGIMES = ("k <= m", "k > m")
TOLERANCES = (2, 3, 4, 5, 6, 7)
#: Percentage points within which a reference outside an interval still counts
#: as covered in ``coverage_slack``.
COVERAGE_SLACK = 0.1
_INTERVAL_NAMES = {"profile": "profile-likelihood",
                   "delta": "delta-method (logit scale)"}
_METRIC_ORDER = {m: i for i, m in enumerate(METRICS)}



# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def group_columns(errors: pd.DataFrame) -> list[str]:
    """The group columns of an errors table (those before ``seed``)."""
    return list(errors.columns[: list(errors.columns).index("seed")])


def methods_present(errors: pd.DataFrame) -> list[str]:
    """The methods in `errors`, in the protocol's order, unregistered ones last.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.experiments.report import methods_present
    >>> methods_present(pd.DataFrame({"method": ["mixture", "mine", "naive"]}))
    ['naive', 'mixture', 'mine']
    """
    present = set(errors["method"])
    order = protocol_methods(joint=True)
    return [m for m in order if m in present] + sorted(present - set(order))


def regime(errors: pd.DataFrame) -> pd.Series:
    """``"k <= m"`` or ``"k > m"`` for every row."""
    return pd.Series(np.where(errors["k"] <= errors["m"], REGIMES[0], REGIMES[1]),
                     index=errors.index, name="regime")


def _ordered(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    keys = {}
    if "metric" in df:
        keys["metric"] = df["metric"].map(lambda v: _METRIC_ORDER.get(v, len(METRICS)))
    if "method" in df:
        order = {m: i for i, m in enumerate(protocol_methods(joint=True))}
        keys["method"] = df["method"].map(lambda v: order.get(v, len(order)))
    tmp = df.assign(**{f"_{c}": v for c, v in keys.items()})
    cols = [f"_{c}" if c in keys else c for c in by]
    return tmp.sort_values(cols, kind="stable").drop(columns=[f"_{c}" for c in keys])\
        .reset_index(drop=True)


def _two_stage(df: pd.DataFrame, gcols: list[str], by: list[str]) -> pd.DataFrame:
    """Mean of ``abs_error`` over rows within group, then over groups, per `by`."""
    per_group = df.groupby([*gcols, *by], sort=False)["abs_error"].mean().reset_index()
    out = per_group.groupby(by, sort=False)["abs_error"].agg(["mean", "count"]).reset_index()
    return out.rename(columns={"mean": "mae", "count": "n_groups"})


def default_report_k(k: Sequence[int], n_trials: int) -> tuple[int, ...]:
    """Fixed horizons of the report: 60 for 80 trials (the paper), else 100, 1000, ...

    Powers of ten from 100 up that are in `k`; if none, the largest `k`.

    Examples
    --------
    >>> from passmix.experiments.report import default_report_k
    >>> default_report_k([2, 5, 10, 100, 1000, 10000], 10000)
    (100, 1000, 10000)
    >>> default_report_k([2, 3, 4], 4)
    (4,)
    """
    k = sorted(k)
    if n_trials == 80 and 60 in k and tuple(k) == PAPER_K:
        return (60,)
    powers = tuple(v for v in k if v >= 100 and 10 ** round(np.log10(v)) == v)
    return powers or (k[-1],)


def default_report_m(m: Sequence[int], n_trials: int) -> int:
    """Budget of the headline tables: 5 for 80 trials (the paper), else 10 if run, else the smallest.

    Examples
    --------
    >>> from passmix.experiments.report import default_report_m
    >>> default_report_m([5, 10, 20], 10000), default_report_m([2, 3], 4)
    (10, 2)
    """
    m = sorted(m)
    if n_trials == 80 and 5 in m:
        return 5
    return 10 if 10 in m else m[0]


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------


def mae_by_regime(errors: pd.DataFrame) -> pd.DataFrame:
    """MAE by metric, regime and method (Tables 2 and 5).

    Within a group the error is averaged over seeds and over the ``(m, k)``
    pairs of the regime; then over groups.

    Returns
    -------
    pandas.DataFrame
        Columns metric, regime, method, mae, n_groups.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.experiments.report import mae_by_regime
    >>> errors = pd.DataFrame({"group": ["a"] * 4, "seed": 0, "m": 5, "k": [2, 2, 10, 10],
    ...                        "metric": "pass@k", "method": ["naive", "mixture"] * 2,
    ...                        "abs_error": [1.0, 2.0, 8.0, 3.0]})
    >>> mae_by_regime(errors)[["regime", "method", "mae"]]
       regime   method  mae
    0  k <= m    naive  1.0
    1  k <= m  mixture  2.0
    2   k > m    naive  8.0
    3   k > m  mixture  3.0
    """
    df = errors.assign(regime=regime(errors))
    out = _two_stage(df, group_columns(errors), ["metric", "regime", "method"])
    return _ordered(out, ["metric", "regime", "method"])


def mae_at_k(errors: pd.DataFrame, k: int) -> pd.DataFrame:
    """MAE at horizon `k` by metric, m and method (Tables 6-8).

    Returns
    -------
    pandas.DataFrame
        Columns k, metric, m, method, mae, n_groups (combinatorial only where
        ``k <= m``).
    """
    df = errors[errors["k"] == k]
    if df.empty:
        raise ValueError(f"k = {k} is not among the horizons run ({sorted(errors['k'].unique())}).")
    out = _two_stage(df, group_columns(errors), ["metric", "m", "method"])
    out.insert(0, "k", int(k))
    return _ordered(out, ["metric", "m", "method"])


def mae_by_seed(errors: pd.DataFrame) -> pd.DataFrame:
    """Extrapolation MAE (``k > m``) per seed, with mean and SD over seeds (Table 9).

    For each seed the error is averaged over the ``(m, k)`` pairs with
    ``k > m`` within each group, then over groups. SD is the sample standard
    deviation over seeds (null with one seed).

    Returns
    -------
    pandas.DataFrame
        Columns metric, method, one column per seed (``seed 0``, ...), mean, sd.
    """
    df = errors[(errors["k"] > errors["m"]) & (errors["method"] != "combinatorial")]
    if df.empty:
        return pd.DataFrame(columns=["metric", "method", "mean", "sd"])
    gcols = group_columns(errors)
    per = _two_stage(df, gcols, ["metric", "method", "seed"])
    wide = per.pivot_table(index=["metric", "method"], columns="seed", values="mae",
                           sort=False)
    wide.columns = [f"seed {s}" for s in wide.columns]
    seeds = list(wide.columns)
    wide["mean"] = wide[seeds].mean(axis=1)
    wide["sd"] = wide[seeds].std(axis=1, ddof=1) if len(seeds) > 1 else np.nan
    return _ordered(wide.reset_index(), ["metric", "method"])


def _per_group_cell(errors: pd.DataFrame, m: int, k: int) -> pd.DataFrame:
    """Seed-averaged error per group, metric and method at one (m, k)."""
    gcols = group_columns(errors)
    df = errors[(errors["m"] == m) & (errors["k"] == k)]
    if df.empty:
        raise ValueError(f"(m, k) = ({m}, {k}) was not run.")
    return df.groupby([*gcols, "metric", "method"], sort=False)["abs_error"].mean()\
        .unstack(["metric", "method"])


def win_rates(errors: pd.DataFrame, m: int, k: int) -> pd.DataFrame:
    """Naive and mixture MAE at ``(m, k)`` and the share of groups the mixture wins (Table 1).

    A group is won when its seed-averaged mixture error is below naive's.
    Rows: each metric, and the paper's target (mean of Pass^k and AUC@k).

    Returns
    -------
    pandas.DataFrame
        Columns m, k, target, naive, mixture, win_rate (percent), n_groups.
    """
    cell = _per_group_cell(errors, m, k)
    rows = []
    targets = [(metric, [metric]) for metric in METRICS] + [(PAPER_TARGET_NAME,
                                                             list(PAPER_TARGET))]
    for name, metrics in targets:
        if not all((mt, meth) in cell.columns for mt in metrics for meth in ("naive", "mixture")):
            continue
        naive = cell[[(mt, "naive") for mt in metrics]].mean(axis=1)
        mix = cell[[(mt, "mixture") for mt in metrics]].mean(axis=1)
        ok = naive.notna() & mix.notna()
        rows.append({"m": m, "k": k, "target": name, "naive": naive[ok].mean(),
                     "mixture": mix[ok].mean(),
                     "win_rate": 100.0 * float((mix[ok] < naive[ok]).mean()),
                     "n_groups": int(ok.sum())})
    return pd.DataFrame(rows)


def trials_needed(errors: pd.DataFrame, k: int, n_trials: int,
                  tolerances: Sequence[float] = TOLERANCES,
                  target: Sequence[str] = PAPER_TARGET) -> pd.DataFrame:
    """Median over groups of the smallest m whose error at `k` is within a tolerance (Table 4).

    Per group and method, the error at `k` is averaged over the `target`
    metrics and the seeds; the smallest tested m at or below the tolerance
    counts, and a group that never reaches it counts as `n_trials` (all
    recorded trials). ``fewer`` is ``1 - m / n_trials`` for the mixture's
    median, in percent.

    Returns
    -------
    pandas.DataFrame
        Columns k, target, tolerance, then the median m of each method run
        but the combinatorial one (naive, mixture, ...), then, when the
        mixture was run, fewer and reached (percent of groups where the
        mixture reaches the tolerance).
    """
    gcols = group_columns(errors)
    if not (errors["k"] == k).any():
        raise ValueError(f"k = {k} is not among the horizons run.")
    # the combinatorial estimate cannot extrapolate, so it is not a budget to compare
    methods = [meth for meth in methods_present(errors) if meth != "combinatorial"]
    df = errors[(errors["k"] == k) & errors["metric"].isin(list(target))
                & errors["method"].isin(methods)]
    per = df.groupby([*gcols, "method", "m"], sort=True)["abs_error"].mean().reset_index()
    rows = []
    for tol in tolerances if methods else ():
        need: dict[str, list[float]] = {meth: [] for meth in methods}
        reached = []
        for key, part in per.groupby([*gcols, "method"], sort=False):
            method = key[-1]
            ok = part.loc[part["abs_error"] <= tol, "m"]
            need[method].append(float(ok.min()) if len(ok) else float(n_trials))
            if method == "mixture":
                reached.append(bool(len(ok)))
        row = {"k": k, "target": "mean(" + ", ".join(target) + ")"
               if len(target) > 1 else target[0], "tolerance": tol}
        row.update({meth: float(np.median(v)) if v else np.nan for meth, v in need.items()})
        if "mixture" in need:
            row["fewer"] = 100.0 * (1.0 - row["mixture"] / n_trials)
            row["reached"] = 100.0 * float(np.mean(reached)) if reached else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def bic_shares(fits: pd.DataFrame) -> pd.DataFrame:
    """Share of fits (percent) in which BIC chose each H, by m and overall (Figure 8).

    Returns
    -------
    pandas.DataFrame
        Columns m (``"all"`` last), ``H=1``, ``H=2``, ..., n_fits.
    """
    ok = fits[fits["n_components"].notna()]
    h_values = sorted(int(h) for h in ok["n_components"].unique())

    def shares(part: pd.DataFrame, label: Any) -> dict[str, Any]:
        row: dict[str, Any] = {"m": label}
        for h in h_values:
            row[f"H={h}"] = 100.0 * float((part["n_components"] == h).mean())
        row["n_fits"] = len(part)
        return row

    rows = [shares(part, int(m)) for m, part in ok.groupby("m", sort=True)]
    rows.append(shares(ok, "all"))
    return pd.DataFrame(rows)


def coverage(errors: pd.DataFrame, by: Sequence[str] = ("metric", "regime"),
             slack: float = COVERAGE_SLACK, method: str = "mixture") -> pd.DataFrame:
    """Share (percent) of a method's intervals that contain the reference.

    Parameters
    ----------
    errors : pandas.DataFrame
        The errors table.
    by : sequence of str, default ("metric", "regime")
        Columns to split by (any of metric, regime, m, k).
    slack : float, default 0.1
        Percentage points: ``coverage_slack`` also counts a reference within
        `slack` of the interval as covered. Where reference and estimate are
        both ~0 (Pass^k at large k on a hard benchmark), strict containment
        compares numbers like 1e-40 and 1e-60, which says nothing in points.
    method : str, default "mixture"
        The estimator whose intervals are scored.

    Returns
    -------
    pandas.DataFrame
        The `by` columns, coverage (percent, strict), coverage_slack
        (percent), mean_width (percentage points) and n_intervals.
    """
    df = errors[(errors["method"] == method) & errors["lower"].notna()]
    tol = slack / 100.0
    df = df.assign(regime=regime(df),
                   covered=(df["lower"] <= df["reference"]) & (df["reference"] <= df["upper"]),
                   near=(df["lower"] - tol <= df["reference"])
                   & (df["reference"] <= df["upper"] + tol),
                   width=100.0 * (df["upper"] - df["lower"]))
    out = df.groupby(list(by), sort=False).agg(
        coverage=("covered", "mean"), coverage_slack=("near", "mean"),
        mean_width=("width", "mean"), n_intervals=("covered", "size")).reset_index()
    out["coverage"] *= 100.0
    out["coverage_slack"] *= 100.0
    return _ordered(out, list(by))


def mae_by_group(errors: pd.DataFrame, k: Sequence[int]) -> pd.DataFrame:
    """Per-group error at each horizon in `k`: mean, SD, min and max over seeds.

    Returns
    -------
    pandas.DataFrame
        Group columns, m, k, metric, method, mae, sd, min, max, n_seeds.
    """
    gcols = group_columns(errors)
    df = errors[errors["k"].isin(list(k))]
    out = df.groupby([*gcols, "m", "k", "metric", "method"], sort=False)["abs_error"].agg(
        mae="mean", sd="std", min="min", max="max", n_seeds="count").reset_index()
    return out


def _n_failed(fits: pd.DataFrame) -> int:
    """Units in which some estimator raised (their rows are null)."""
    return int((fits["error"].fillna("").astype(str) != "").sum())


def fit_diagnostics(fits: pd.DataFrame) -> pd.DataFrame:
    """Per m: fits run, failed (an estimator raised), converged, on a bound, warned, seconds.

    Returns
    -------
    pandas.DataFrame
        Columns m (``"all"`` last), n_fits, failed, converged (percent),
        on_bound (percent), warned (percent), mean_seconds.
    """
    def row(part: pd.DataFrame, label: Any) -> dict[str, Any]:
        ok = part["n_components"].notna()
        return {"m": label, "n_fits": len(part), "failed": _n_failed(part),
                "converged": 100.0 * float(part.loc[ok, "converged"].astype(bool).mean())
                if ok.any() else np.nan,
                "on_bound": 100.0 * float((part.loc[ok, "on_bound"].fillna("") != "").mean())
                if ok.any() else np.nan,
                "warned": 100.0 * float((part["warnings"].fillna("") != "").mean()),
                "mean_seconds": float(part["seconds"].mean())}

    rows = [row(part, int(m)) for m, part in fits.groupby("m", sort=True)]
    rows.append(row(fits, "all"))
    return pd.DataFrame(rows)


def report_grid(result: RepeatedResult, report_k: Sequence[int] | None = None,
                report_m: int | None = None) -> tuple[tuple[int, ...], int]:
    """The horizons and the budget the report's fixed-k and headline tables use.

    Defaults: :func:`default_report_k` and :func:`default_report_m`; given
    values must be among those run (ValueError otherwise).
    """
    config = result.config
    ks = tuple(report_k) if report_k else default_report_k(config.k, result.n_trials)
    m = report_m if report_m is not None else default_report_m(config.m, result.n_trials)
    missing = [v for v in ks if v not in config.k]
    if missing or m not in config.m:
        raise ValueError(f"report_k {list(ks)} and report_m {m} must be among the k "
                         f"{list(config.k)} and m {list(config.m)} run.")
    return ks, m


def summary_tables(result: RepeatedResult, *, report_k: Sequence[int] | None = None,
                   report_m: int | None = None) -> dict[str, pd.DataFrame]:
    """Every summary table of a run, keyed by the CSV name it is written to.

    Parameters
    ----------
    result : RepeatedResult
        The run.
    report_k : sequence of int, optional
        Horizons of the fixed-k tables; default :func:`default_report_k`.
    report_m : int, optional
        Budget of the headline tables; default :func:`default_report_m`.

    Returns
    -------
    dict of str to pandas.DataFrame
    """
    errors = result.errors
    ks, m = report_grid(result, report_k, report_m)
    # a horizon run by no estimator that reaches it (the combinatorial one alone, k > m)
    # has no rows
    ks = [v for v in ks if (errors["k"] == v).any()]
    has_m = bool(((errors["m"] == m) & errors["k"].isin(ks)).any())

    def stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return {
        "mae_by_regime": mae_by_regime(errors),
        "mae_at_k": stacked([mae_at_k(errors, v) for v in ks]),
        "mae_by_seed": mae_by_seed(errors),
        "win_rates": stacked([win_rates(errors, m, v) for v in ks] if has_m else []),
        "trials_needed": stacked(
            [trials_needed(errors, v, result.n_trials, target=t)
             for v in ks for t in (PAPER_TARGET, ("pass@k",))]),
        "bic_shares": bic_shares(result.fits),
        "coverage": coverage(errors),
        "coverage_by_m": coverage(errors, by=("metric", "m")),
        "coverage_pooled": coverage(errors, method="pooled"),
        "mae_by_group": mae_by_group(errors, ks),
        "fit_diagnostics": fit_diagnostics(result.fits),
    }


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, (float, np.floating)):
        return "–" if np.isnan(value) else f"{value:.{digits}f}"
    if value is None or value is pd.NA:
        return "–"
    return str(value)


def plain_table(frame: pd.DataFrame) -> str:
    """A markdown table of `frame`, each cell as ``str`` gives it."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def markdown_table(df: pd.DataFrame, digits: int = 2) -> str:
    """A pipe table; floats with `digits` decimals, missing values as ``–``.

    Examples
    --------
    >>> import pandas as pd
    >>> from passmix.experiments.report import markdown_table
    >>> print(markdown_table(pd.DataFrame({"method": ["naive"], "mae": [1.234]})))
    | method | mae |
    | --- | ---: |
    | naive | 1.23 |
    """
    heads = [str(c) for c in df.columns]
    align = ["---:" if pd.api.types.is_numeric_dtype(df[c]) else "---" for c in df.columns]
    lines = ["| " + " | ".join(heads) + " |", "| " + " | ".join(align) + " |"]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_cell(v, digits) for v in row) + " |")
    return "\n".join(lines)


def write_tables(out: str | os.PathLike, tables: dict[str, pd.DataFrame]) -> Path:
    """Create the folder `out` and write each table there as ``<name>.csv``; return the folder.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from passmix.experiments.report import write_tables
    >>> out = write_tables(tempfile.mkdtemp(), {"errors": pd.DataFrame({"seed": [0]})})
    >>> (out / "errors.csv").read_text()
    'seed\\n0\\n'
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    return out


def report_head(title: str, command: str | None) -> list[str]:
    """A report's first lines: its title and, if given, the command that produced it.

    Examples
    --------
    >>> from passmix.experiments.report import report_head
    >>> report_head("Scaling", "passmix experiment scaling d.csv")
    ['# Scaling', '', 'Produced by', '', '    passmix experiment scaling d.csv', '']
    """
    lines = [f"# {title}", ""]
    if command:
        lines += ["Produced by", "", f"    {command}", ""]
    return lines


def best_cell(value: float, best: float) -> str:
    """A table cell: two decimals, in bold where `value` is `best`; ``n/a`` for no value.

    Examples
    --------
    >>> from passmix.experiments.report import best_cell
    >>> [best_cell(v, 1.5) for v in (1.5, 2.25, float("nan"))]
    ['**1.50**', '2.25', 'n/a']
    """
    if not np.isfinite(value):
        return "n/a"
    return f"**{value:.2f}**" if value == best else f"{value:.2f}"


def warning_lines(messages: pd.Series) -> list[str]:
    """A report's "Warnings" section: each message once, numbers masked, with its count."""
    if messages.empty:
        return []
    counts = messages.str.replace(r"\d+(\.\d+)?(e-?\d+)?", "#", regex=True).value_counts()
    return ["## Warnings", "", *[f"- {n} x {msg}" for msg, n in counts.items()], ""]


def save_figures(figs: dict, out: Path) -> list[str]:
    """Save each figure as PNG and PDF under `out`, close it, return the Markdown image lines."""
    import matplotlib.pyplot as plt

    lines = []
    for stem, fig in figs.items():
        for fmt in ("png", "pdf"):
            fig.savefig(out / f"{stem}.{fmt}", dpi=110)
        plt.close(fig)
        lines.append(f"![{stem}]({stem}.png)")
    return lines


def _wide(df: pd.DataFrame, index: list[str], columns: list[str], values: str) -> pd.DataFrame:
    wide = df.pivot_table(index=index, columns=columns, values=values, sort=False,
                          dropna=False)
    if isinstance(wide.columns, pd.MultiIndex):
        wide.columns = [" ".join(str(v) for v in col) for col in wide.columns]
    return wide.reset_index()


def _label(df: pd.DataFrame, gcols: list[str]) -> pd.Series:
    return df[gcols].astype(str).agg(" / ".join, axis=1)


def write_report(result: RepeatedResult, out: str | os.PathLike, *,
                 report_k: Sequence[int] | None = None, report_m: int | None = None,
                 title: str | None = None, command: str | None = None,
                 source: str | None = None, figures: Sequence[str] = ()) -> Path:
    """Write the summary tables (CSV) and ``report.md`` to `out`.

    Parameters
    ----------
    result : RepeatedResult
        The run.
    out : path
        Output folder (created if needed).
    report_k, report_m
        As for :func:`summary_tables`.
    title, command, source : str, optional
        Title, the command that produced the run, and the data file's name.
    figures : sequence of str
        Figure files (PNG) to link at the end.

    Returns
    -------
    pathlib.Path
        Path of ``report.md``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables = summary_tables(result, report_k=report_k, report_m=report_m)
    for name, table in tables.items():
        if name == "coverage_pooled" and table.empty:  # no pooled model was run
            continue
        table.to_csv(out / f"{name}.csv", index=False)
    config, errors, fits = result.config, result.errors, result.fits
    gcols = result.group_cols
    ks, m = report_grid(result, report_k, report_m)
    n_groups = errors[gcols].drop_duplicates().shape[0]
    tasks = result.references.drop_duplicates(gcols)["n_tasks"]
    lines = [f"# {title or 'Repeated-trial experiment'}", ""]
    if command:
        lines += ["Regenerate with:", "", "```", command, "```", ""]
    lines += [
        f"- data: `{source}`" if source else "- data: (in memory)",
        f"- groups ({', '.join(gcols)}): {n_groups}; tasks per group: "
        f"{tasks.min()}{'' if tasks.min() == tasks.max() else '-' + str(tasks.max())}; "
        f"recorded trials per task: {result.n_trials} (the reference uses all of them)",
        f"- budgets m: {', '.join(map(str, config.m))}; horizons k: "
        f"{', '.join(map(str, config.k))}; seeds: {', '.join(map(str, config.seeds))}",
        f"- mixture: BIC over H = 1..{config.max_components}, {config.n_init} starts per H; "
        f"{100 * config.level:g}% {_INTERVAL_NAMES[config.interval]} intervals",
        "",
        "Errors are absolute differences from the all-trials combinatorial reference, in "
        "percentage points, averaged over seeds within a group and then over groups. "
        "Combinatorial is defined only where k <= m. Full rows: `errors.csv`; every table "
        "below is also a CSV file here.",
        "",
    ]
    failed = _n_failed(fits)
    if failed:
        lines += [f"**{failed} of {len(fits)} fits failed**; their rows are null "
                  "and left out of the averages (see the error column of `fits.csv`).", ""]

    lines += [f"## Headline: MAE at m = {m} (Table 1)", "",
              "Win rate: share of groups where the mixture's seed-averaged error is below "
              "naive's.", ""]
    win = tables["win_rates"]
    lines += [markdown_table(win.drop(columns="m")), ""] if len(win) else \
        ["Needs the naive and the mixture estimates; not run.", ""]

    lines += ["## MAE by regime (Tables 2 and 5)", "",
              "All budgets m and horizons k run, k <= m against k > m.", ""]
    reg = _wide(tables["mae_by_regime"], ["metric"], ["regime", "method"], "mae")
    lines += [markdown_table(reg), ""]
    at_m = mae_by_regime(errors[errors["m"] == m])
    lines += [f"At m = {m} only:", "",
              markdown_table(_wide(at_m, ["metric"], ["regime", "method"], "mae")), ""]

    lines += ["## Per-group error at fixed k (mean and SD over seeds)", "",
              f"m = {m}. The spread between groups and seeds shows where the averages "
              "come from.", ""]
    bg = tables["mae_by_group"]
    bg = bg[(bg["m"] == m) & (bg["method"] != "combinatorial")]
    for metric in METRICS:
        part = bg[bg["metric"] == metric]
        if part.empty:
            continue
        part = part.assign(group=_label(part, gcols), cell=[
            f"{a:.2f} ± {s:.2f}" if not np.isnan(s) else f"{a:.2f}"
            for a, s in zip(part["mae"], part["sd"])])
        wide = part.pivot_table(index="group", columns=["k", "method"], values="cell",
                                aggfunc="first", sort=False)
        wide.columns = [f"k={k} {meth}" for k, meth in wide.columns]
        lines += [f"**{metric}**", "", markdown_table(wide.reset_index()), ""]

    for k in ks:
        lines += [f"## MAE at k = {k} by m (Tables 6-8)", ""]
        part = tables["mae_at_k"]
        part = part[part["k"] == k] if len(part) else part
        if part.empty:
            lines += ["No method run reaches this horizon.", ""]
            continue
        wide = _wide(part, ["metric", "m"], ["method"], "mae")
        lines += [markdown_table(wide), ""]

    lines += ["## Extrapolation MAE (k > m) by seed (Table 9)", ""]
    lines += [markdown_table(tables["mae_by_seed"]), ""] if len(tables["mae_by_seed"]) else \
        ["No (m, k) pair with k > m was run.", ""]

    lines += ["## Trials per task needed for a tolerance (Table 4)", "",
              f"Median over groups of the smallest m whose error at k is within the tolerance "
              f"(points); a group that never reaches it counts as {result.n_trials}. "
              f"`fewer` = 1 - mixture m / {result.n_trials}; `reached` = share of groups where "
              "the mixture reaches it. Retrospective: it uses the reference.", ""]
    lines += [markdown_table(tables["trials_needed"], digits=1), ""] \
        if len(tables["trials_needed"]) else ["No estimate beyond the combinatorial one was run.",
                                              ""]

    lines += ["## Interval coverage of the reference", "",
              f"Share of mixture {100 * config.level:g}% intervals "
              f"({_INTERVAL_NAMES[config.interval]}) that contain the reference, over groups, "
              "seeds, m and k. "
              f"`coverage_slack` also counts a reference within {COVERAGE_SLACK:g} points of "
              "the interval (where both are ~0, strict containment compares numbers like "
              "1e-40 and 1e-60).", ""]
    lines += [markdown_table(tables["coverage"], digits=1), ""] if len(tables["coverage"]) \
        else ["No mixture intervals were run.", ""]
    if len(tables["coverage_pooled"]):
        lines += ["The pooled model's delta-method intervals (logit scale), scored the same "
                  "way:", "", markdown_table(tables["coverage_pooled"], digits=1), ""]

    lines += ["## BIC choice of H (Figure 8)", "", "Share of fits (percent).", ""]
    lines += [markdown_table(tables["bic_shares"], digits=1), ""]

    lines += ["## Fit diagnostics", ""]
    lines += [markdown_table(tables["fit_diagnostics"], digits=2), ""]

    if figures:
        lines += ["## Figures", ""]
        lines += [f"![{Path(f).stem}]({Path(f).name})" for f in figures]
        lines += [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path

