"""Tests for passmix.cli: the ``passmix estimate`` command and ``estimate_table``.

Expected values are computed independently: counts are built with pandas
(not through ``read_counts``) and passed to ``passmix.fit`` and the direct
estimators, then compared with what the command prints.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import passmix
from passmix import estimate_table
from passmix.tables import format_table
from passmix.cli import main
from passmix.examples import example_path

MATH = example_path("math_10k")
TAU = example_path("taubench_airline")
LCB = example_path("livecodebench")
ALPHA_LOG = Path(__file__).parent / "data" / "logs" / "inspect" / "alpha.eval"

KEYS = {"metric", "k", "estimate", "lower", "upper", "method", "n_components", "interval"}
METRICS = {"pass@k", "pass^k", "auc@k"}
PYTHIA = ["Pythia 70M", "Pythia 160M", "Pythia 410M", "Pythia 1B", "Pythia 2.8B",
          "Pythia 6.9B", "Pythia 12B"]
FAST = ["--n-init", "3", "--max-components", "2"]  # fits as the tests below compare them


def invoke(*args: object, code: int = 0):
    """Invoke ``passmix ARGS`` in-process and check the exit code."""
    result = CliRunner().invoke(main, [str(a) for a in args], prog_name="passmix")
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    if code == 0:
        assert result.exception is None
    return result


def run(*args: object, code: int = 0):
    """Invoke ``passmix estimate ARGS`` in-process and check the exit code."""
    return invoke("estimate", *args, code=code)


def records(result) -> list[dict]:
    return json.loads(result.stdout)


def select(rows: list[dict], **where) -> list[dict]:
    return [r for r in rows if all(r[key] == val for key, val in where.items())]


def values(rows: list[dict], metric: str, method: str, ks, field="estimate", **group):
    out = []
    for k in ks:
        (row,) = select(rows, metric=metric, method=method, k=k, **group)
        out.append(np.nan if row[field] is None else row[field])
    return np.array(out, dtype=float)


# --------------------------------------------------------------------------
# input files written from the real data
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tau_frame() -> pd.DataFrame:
    return pd.read_csv(TAU)


@pytest.fixture(scope="module")
def tau_counts(tau_frame) -> passmix.Counts:
    """tau-bench counts built directly with pandas (independent of read_counts)."""
    agg = tau_frame.groupby("task_id")["reward"].agg(["sum", "count"])
    return passmix.Counts(agg["sum"].astype(int), agg["count"], tasks=agg.index)


@pytest.fixture(scope="module")
def tau_files(tmp_path_factory, tau_frame) -> dict[str, Path]:
    """The tau-bench trials as long JSONL and as a wide 50 x 4 0/1 Parquet matrix."""
    root = tmp_path_factory.mktemp("tau")
    long = root / "tau_long.jsonl"
    tau_frame.to_json(long, orient="records", lines=True)
    wide = tau_frame.pivot(index="task_id", columns="trial", values="reward")
    wide.columns = [f"trial_{c}" for c in wide.columns]
    assert wide.shape == (50, 4)
    matrix = root / "tau_matrix.parquet"
    wide.reset_index().to_parquet(matrix, index=False)
    return {"long": long, "matrix": matrix}


@pytest.fixture(scope="module")
def lcb_frame() -> pd.DataFrame:
    df = pd.read_csv(LCB)
    return df[df["model"].isin(["DSCoder-33b-Ins", "DSCoder-6.7b-Ins"])]


@pytest.fixture(scope="module")
def lcb_file(tmp_path_factory, lcb_frame) -> Path:
    path = tmp_path_factory.mktemp("lcb") / "lcb_counts.csv"
    lcb_frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def tau_json(tau_files) -> list[dict]:
    """JSON output for the long tau-bench file (shared by several tests)."""
    return records(run(tau_files["long"], "--method", "all", "--k", "1,2,4,100",
                       "--format", "json", *FAST))


# --------------------------------------------------------------------------
# end to end: layouts x formats
# --------------------------------------------------------------------------


def test_counts_csv_json_matches_library(lcb_file, lcb_frame):
    ks = [1, 5, 10]
    rows = records(run(lcb_file, "--group-by", "model", "--method", "all", "--k", "1,5,10",
                       "--format", "json", *FAST))
    # two models on the same problems: "all" includes the joint pooled model
    assert len(rows) == 2 * 3 * 4 * len(ks)
    for row in rows:
        assert set(row) == KEYS | {"model"}
    assert {r["metric"] for r in rows} == METRICS
    assert {r["method"] for r in rows} == {"mixture", "naive", "combinatorial", "pooled"}
    # groups in natural order: model sizes by value
    assert list(dict.fromkeys(r["model"] for r in rows)) == ["DSCoder-6.7b-Ins",
                                                             "DSCoder-33b-Ins"]
    for model, sub in lcb_frame.groupby("model"):
        counts = passmix.Counts(sub["successes"].to_numpy(), sub["trials"].to_numpy())
        res = passmix.fit(counts, max_components=2, n_init=3, seed=0)
        summary = res.summary(ks, 0.95)  # profile intervals, the CLI's default
        for metric in sorted(METRICS):
            want = summary[summary["metric"] == metric]
            got = dict(metric=metric, model=model, ks=ks)
            np.testing.assert_allclose(values(rows, method="mixture", **got),
                                       want["estimate"], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(values(rows, method="mixture", field="lower", **got),
                                       want["lower"], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(values(rows, method="naive", **got),
                                       passmix.naive_estimate(counts, metric, ks), rtol=1e-12)
            np.testing.assert_allclose(values(rows, method="combinatorial", **got),
                                       passmix.combinatorial_estimate(counts, metric, ks),
                                       rtol=1e-12)
        mixture = select(rows, model=model, method="mixture")
        assert {r["n_components"] for r in mixture} == {res.n_components}
    pooled = passmix.fit_pooled(lcb_frame, system="model", seed=0)
    for model in lcb_frame["model"].unique():
        for metric in sorted(METRICS):
            np.testing.assert_allclose(
                values(rows, method="pooled", metric=metric, model=model, ks=ks),
                pooled.system(model).metric(metric, ks), rtol=1e-9, atol=1e-12)
    for row in select(rows, method="mixture") + select(rows, method="pooled"):
        assert row["lower"] <= row["estimate"] <= row["upper"]
    for row in rows:
        if row["method"] not in ("mixture", "pooled"):
            assert row["lower"] is None and row["upper"] is None
            assert row["n_components"] is None


def test_long_jsonl_json_matches_library(tau_json, tau_counts):
    rows = tau_json
    assert all(set(r) == KEYS for r in rows)  # no group columns
    assert len(rows) == 3 * 3 * 4
    res = passmix.fit(tau_counts, max_components=2, n_init=3, seed=0)
    summary = res.summary([1, 2, 4, 100])
    for metric in METRICS:
        want = summary[summary["metric"] == metric]
        np.testing.assert_allclose(values(tau_json, metric, "mixture", [1, 2, 4, 100]),
                                   want["estimate"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(
            values(tau_json, metric, "mixture", [1, 2, 4, 100], field="upper"),
            want["upper"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(values(tau_json, metric, "naive", [1, 2, 4, 100]),
                                   passmix.naive_estimate(tau_counts, metric, [1, 2, 4, 100]),
                                   rtol=1e-12)
    # the reference: Pass^4 on 4 trials is the share of tasks solved every time
    solved_all = np.mean(tau_counts.successes == 4)
    assert values(rows, "pass^k", "combinatorial", [4])[0] == pytest.approx(solved_all)
    for row in select(rows, method="mixture"):
        assert 0.0 <= row["lower"] <= row["estimate"] <= row["upper"] <= 1.0
        assert row["n_components"] == res.n_components


def test_long_jsonl_csv(tau_files, tau_json):
    out = run(tau_files["long"], "--method", "all", "--k", "1,2,4,100", "--format", "csv",
              *FAST).stdout
    table = pd.read_csv(io.StringIO(out))
    assert list(table.columns) == ["metric", "k", "estimate", "lower", "upper", "method",
                                   "n_components", "interval"]
    assert len(table) == len(tau_json)
    expected = pd.DataFrame(tau_json)
    np.testing.assert_allclose(table["estimate"], expected["estimate"].astype(float),
                               rtol=1e-12)
    direct = table[table["method"] != "mixture"]
    assert direct[["lower", "upper", "n_components"]].isna().all().all()
    # combinatorial at k = 100 > m = 4 is empty, not 1.0
    undefined = table[(table["method"] == "combinatorial") & (table["k"] == 100)]
    assert len(undefined) == 3 and undefined["estimate"].isna().all()


def test_matrix_parquet_equals_long_layout(tau_files, tau_json):
    rows = records(run(tau_files["matrix"], "--method", "all", "--k", "1,2,4,100",
                       "--format", "json", *FAST))
    assert rows == tau_json  # same counts through another layout; deterministic seed


def test_matrix_parquet_table(tau_files):
    out = run(tau_files["matrix"], "--layout", "matrix", "--task", "task_id", "--k", "1,10",
              "--method", "all", *FAST)
    lines = out.stdout.splitlines()
    # the model in words, with its own log-likelihood
    # and what it assumes of the tasks never solved (issue 48)
    assert re.fullmatch(r"all tasks: J=50 tasks, m=4; Beta mixture, \d components? \(BIC\), "
                        r"log-likelihood -\d+\.\d{3}; \d+ tasks never solved: beyond the "
                        r"trials the intervals also span an atom at 0 \(impossible tasks\); "
                        r"about \d+ more trials on each would tell hard from impossible",
                        lines[0]), lines[0]
    header = lines[1].split()
    assert header[:4] == ["metric", "k", "method", "estimate"]
    assert header[-1] == "interval"
    body = [line.split() for line in lines[2:] if line.strip() and not line.startswith("  k =")]
    assert len(body) == 3 * 2 * 3
    assert {b[0] for b in body} == METRICS
    assert {b[2] for b in body} == {"mixture", "naive", "combinatorial"}
    assert {b[-1] for b in body if b[2] == "mixture"} == {"profile"}
    # combinatorial at k = 10 > m = 4 prints NA, with one warning line
    assert ["NA", "NA", "NA", "-"] in [b[3:] for b in body if b[2] == "combinatorial"]
    assert lines[-1].startswith("  k = 10: beyond the 4 trials run per task")
    assert out.stderr.count("Warning:") == 1


@pytest.mark.unit
def test_output_file(tau_files, tmp_path):
    target = tmp_path / "out.json"
    result = run(tau_files["long"], "--method", "naive", "--format", "json",
                 "--output", target)
    assert result.stdout == ""
    rows = json.loads(target.read_text())
    # the horizons every command defaults to
    assert len(rows) == 12 and {r["k"] for r in rows} == {1, 10, 100, 1000}


# --------------------------------------------------------------------------
# groups and the bundled example
# --------------------------------------------------------------------------


def test_group_by_model_llmonkeys():
    rows = records(run(MATH, "--group-by", "model", "--k", "1,100", "--format", "json",
                       "--n-init", "2", "--max-components", "2", "--method", "mixture"))
    assert sorted({r["model"] for r in rows}) == sorted(PYTHIA)
    assert len(rows) == 7 * 3 * 2
    assert all(set(r) == KEYS | {"model"} for r in rows)
    for model in PYTHIA:  # Pass@100 >= Pass@1 for every model
        p1, p100 = values(rows, "pass@k", "mixture", [1, 100], model=model)
        assert p100 >= p1


def test_example_prints_all_models():
    out = run("--example", *FAST, "--method", "mixture").stdout
    for model in PYTHIA:
        assert f"model='{model}': J=128 tasks, m=10; Beta mixture, " in out
    assert out.count("pass@k  1000") == 7  # default example horizons include 1000


@pytest.mark.slow
def test_example_is_honest_at_the_edges():
    # the bundled example: no "NOT converged", the binomial limit said in one
    # line, no interval of zero width, Pass^k's upper end never above Pass@1's
    result = run("--example", "--method", "mixture")
    assert "NOT converged" not in result.stdout + result.stderr
    assert "binomial limit" in result.stdout and "box bound" not in result.stderr
    rows = records(run("--example", "--method", "mixture", "--format", "json"))
    for model in PYTHIA:
        mine = select(rows, model=model, method="mixture")
        assert all(r["lower"] < r["upper"] for r in mine)
        assert all(r["lower"] <= r["estimate"] <= r["upper"] for r in mine)
        (p1,) = select(mine, metric="pass@k", k=1)
        assert all(r["upper"] <= p1["upper"] for r in select(mine, metric="pass^k"))


@pytest.mark.slow
def test_example_pools_and_says_so():
    """The default on panel data: the pooled model, its profile intervals honest at 0."""
    result = run("--example", "--format", "json")
    assert result.stderr.startswith("method auto chose pooled: 7 groups share tasks")
    rows = records(result)
    assert {r["method"] for r in rows} == {"pooled"} and len(rows) == 7 * 3 * 4
    # beyond the 10 trials the ends also hold each system's own mixture's
    groups = passmix.read_counts(example_path("math_m10"), group_by="model")
    own = passmix.fit(groups[("Pythia 1B",)], seed=0)
    (far,) = select(rows, model="Pythia 1B", metric="pass@k", k=1000)
    lo, hi = own.interval("pass@k", 1000)
    assert far["lower"] <= lo + 1e-12 and far["upper"] >= hi - 1e-12
    for r in rows:
        assert 0 <= r["lower"] <= r["estimate"] <= r["upper"] <= 1
    # every model solved something: no Pass@1 interval may start at 0 (the 70M has one
    # success in 1,280 attempts)
    assert all(r["lower"] > 0 for r in select(rows, metric="pass@k", k=1))
    (small,) = select(rows, model="Pythia 70M", metric="pass@k", k=1)
    assert small["lower"] < 1 / 1280 < small["upper"]



def test_fit_status_comes_from_the_model_used():
    """With the pooled model (the default here), attrs["fits"] describes the joint fit."""
    groups = passmix.read_counts(example_path("math_m10"), group_by="model")
    table = estimate_table(groups, ["model"], k=[10], interval="delta")
    joint = passmix.fit_pooled(groups, seed=0)
    assert table.attrs["fits"].keys() == groups.keys()
    for key, fit in table.attrs["fits"].items():
        assert fit["loglik"] == pytest.approx(joint.loglik, abs=1e-6)
        assert fit["bic"] == pytest.approx(joint.bic, abs=1e-6)
        assert fit["n_components"] == joint.n_components
        assert key[0] in fit["status"] or "converged" in fit["status"]
    mixture = estimate_table(groups, ["model"], k=[10], method=["naive", "mixture"],
                             interval="delta")
    for key, fit in mixture.attrs["fits"].items():
        assert fit["loglik"] == pytest.approx(passmix.fit(groups[key], seed=0).loglik, abs=1e-6)
    # the text table's header says the model in words; the joint log-likelihood once,
    # as all systems', never as a system's own
    pooled_text = format_table(table, groups, ["model"], 0.95)
    mixture_text = format_table(mixture, groups, ["model"], 0.95)
    assert pooled_text.count(
        f"pooled model: 7 systems fitted jointly, task difficulties from one normal "
        f"distribution; joint log-likelihood {joint.loglik:.3f} (all systems)\n") == 1
    assert pooled_text.count("log-likelihood") == 1 and "loglik" not in pooled_text
    assert pooled_text.count("m=10; pooled model (task difficulties shared with the other 6 "
                             "systems)\n") == len(groups)
    assert "Beta mixture" not in pooled_text  # k = 10: within the trials, pooled only
    for key in groups:
        own = mixture.attrs["fits"][key]
        h = own["n_components"]
        assert (f"model={key[0]!r}: J=128 tasks, m=10; Beta mixture, {h} "
                f"component{'s' if h > 1 else ''} (BIC), log-likelihood {own['loglik']:.3f}"
                ) in mixture_text
    assert "pooled" not in mixture_text

def test_auto_pools_and_spans_each_own_mixture_beyond_the_trials():
    """auto's pooled intervals beyond each group's trials (where the shared task order
    cannot be checked) are the union with the group's own mixture's, and say so."""
    rng = np.random.default_rng(3)
    p = rng.beta(1.0, 3.0, 16)
    tasks = [f"t{j}" for j in range(16)]
    groups = {(name,): passmix.Counts(rng.binomial(trials, np.clip(p * scale, 0, 1)),
                                      np.full(16, trials), tasks=tasks)
              for name, scale, trials in (("a", 0.6, 4), ("b", 1.0, 4), ("c", 1.4, 6))}
    ks = [1, 4, 6, 50]
    table = estimate_table(groups, ["model"], k=ks, interval="delta")
    assert "its intervals also span each group's own mixture" in table.attrs["method_note"]
    pooled = estimate_table(groups, ["model"], k=ks, method="pooled", interval="delta")
    assert set(table["method"]) == {"pooled"}
    assert_frame = table[["model", "metric", "k", "estimate"]].reset_index(drop=True)
    assert assert_frame.equals(pooled[["model", "metric", "k", "estimate"]].reset_index(
        drop=True))  # the pooled estimates, at every k
    for (name,), counts in groups.items():
        rows, plain = table[table["model"] == name], pooled[pooled["model"] == name]
        within = (rows["k"] <= counts.trials.max()).to_numpy()
        # within the trials the pooled ends as they are; beyond, also the own mixture's
        assert np.array_equal(rows.loc[within, ["lower", "upper"]].to_numpy(),
                              plain.loc[within, ["lower", "upper"]].to_numpy())
        own = passmix.fit(counts, seed=0)
        for metric in ("pass@k", "pass^k"):
            far = rows[(rows["metric"] == metric) & (rows["k"] == 50)]
            base = plain[(plain["metric"] == metric) & (plain["k"] == 50)]
            lo, hi = own.interval(metric, 50, method="delta")
            assert far["lower"].item() == pytest.approx(min(base["lower"].item(), lo), rel=1e-9)
            assert far["upper"].item() == pytest.approx(max(base["upper"].item(), hi), rel=1e-9)
    text = format_table(table, groups, ["model"], 0.95)
    assert text.count("beyond the trials its intervals also span its own Beta mixture") == 3


def test_auto_beyond_20_trials_spans_the_pooled_model_beyond_the_trials():
    """Past 20 trials per task auto fits each group's mixture; beyond the trials, where a
    group's tail of rare successes cannot be checked, its intervals also span the pooled
    model's (docs/results/rare_coverage.md); within them they are the mixture's alone. No
    horizon beyond any group's trials: no pooled fit, the mixture alone."""
    from numpy.testing import assert_allclose
    from scipy.special import expit

    rng = np.random.default_rng(5)
    d = rng.normal(0.0, 1.5, 40)
    theta = expit(np.array([[-4.0], [-3.0], [-2.0]]) - d)
    y = rng.binomial(30, theta)
    groups = {(f"s{i}",): passmix.Counts(y[i], np.full(40, 30), tasks=np.arange(40))
              for i in range(3)}
    ks = [1, 30, 300]
    table = estimate_table(groups, ["model"], k=ks, interval="delta")
    assert "its intervals also span the pooled model's" in table.attrs["method_note"]
    assert set(table["method"]) == {"mixture"}
    mixture = estimate_table(groups, ["model"], k=ks, method="mixture", interval="delta")
    # the pooled ends asked at the horizons beyond the trials alone, as auto asks them
    pooled = estimate_table(groups, ["model"], k=[300], method="pooled", interval="delta")
    key = ["model", "metric", "k"]
    both = table.merge(mixture, on=key, suffixes=("", "_mix")).merge(
        pooled, on=key, suffixes=("", "_pool"), how="left")
    assert_allclose(both["estimate"], both["estimate_mix"], rtol=0, atol=0)
    within = both["k"] <= 30
    assert_allclose(both.loc[within, ["lower", "upper"]].to_numpy(float),
                    both.loc[within, ["lower_mix", "upper_mix"]].to_numpy(float), rtol=0, atol=0)
    far = both[~within]
    assert_allclose(far["lower"], np.minimum(far["lower_mix"], far["lower_pool"]), rtol=1e-12)
    assert_allclose(far["upper"], np.maximum(far["upper_mix"], far["upper_pool"]), rtol=1e-12)
    assert (far["upper_pool"] > far["upper_mix"]).any()  # the pooled model reached further
    text = format_table(table, groups, ["model"], 0.95)
    assert text.count("beyond the trials its intervals also span the pooled model's "
                      "(task difficulties shared by all 3 systems)") == 3
    inside = estimate_table(groups, ["model"], k=[1, 30], interval="delta")
    assert "also span the pooled" not in inside.attrs["method_note"]
    alone = estimate_table(groups, ["model"], k=[1, 30], method="mixture", interval="delta")
    assert_allclose(inside[["lower", "upper"]].to_numpy(float),
                    alone[["lower", "upper"]].to_numpy(float), rtol=0, atol=0)


def test_interval_option():
    profile = records(run("--example", "--k", "1000", "--method", "mixture", "--format", "json",
                          *FAST))
    delta = records(run("--example", "--k", "1000", "--interval", "delta", "--method",
                        "mixture", "--format", "json", *FAST))
    (p,) = select(profile, model="Pythia 160M", metric="pass@k")
    (d,) = select(delta, model="Pythia 160M", metric="pass@k")
    assert p["estimate"] == pytest.approx(d["estimate"], rel=1e-12)
    # 160M is at the binomial limit: the delta method cannot see the concentration held on
    # its bound, so its ends are the profile's (issue 48; linearised there, 0.20)
    assert (d["lower"], d["upper"]) == pytest.approx((p["lower"], p["upper"]), abs=1e-9)


@pytest.mark.unit
def test_example_defaults():
    rows = records(run("--example", "--method", "naive", "--format", "json"))
    assert {r["k"] for r in rows} == {1, 10, 100, 1000}
    assert all(set(r) == KEYS | {"model"} for r in rows)
    assert len({r["model"] for r in rows}) == 7
    # an explicit --group-by replaces the default
    rows = records(run("--example", "--group-by", "benchmark,model", "--method", "naive",
                       "--k", "1", "--format", "json"))
    assert all(set(r) == KEYS | {"model", "benchmark"} for r in rows)
    assert list(rows[0])[:2] == ["benchmark", "model"]
    assert {r["benchmark"] for r in rows} == {"MATH"} and len(rows) == 7 * 3
    # a group column that does not identify systems is a data error, not a crash
    result = run("--example", "--group-by", "benchmark", "--method", "naive", code=1)
    assert result.stderr.startswith("Error: task 82 appears 7 times")


# --------------------------------------------------------------------------
# combinatorial beyond m, warnings
# --------------------------------------------------------------------------


@pytest.mark.unit
def test_combinatorial_beyond_m_is_null_with_warning():
    result = run("--example", "--method", "combinatorial", "--k", "5,50", "--format", "json")
    rows = records(result)
    assert len(rows) == 7 * 3 * 2
    assert all(r["estimate"] is None for r in select(rows, k=50))
    assert all(r["estimate"] is not None for r in select(rows, k=5))
    warned = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warned) == 7
    assert all("combinatorial" in w and "k > m" in w for w in warned)


@pytest.mark.unit
def test_combinatorial_all_undefined(tau_files):
    result = run(tau_files["long"], "--method", "combinatorial", "--k", "10,20",
                 "--format", "json")
    rows = records(result)
    assert len(rows) == 6 and all(r["estimate"] is None for r in rows)
    assert "combinatorial estimator is undefined for k > m" in result.stderr
    assert result.stderr.count("Warning:") == 1


def test_library_warnings_are_one_line(tmp_path):
    path = tmp_path / "perfect.csv"
    pd.DataFrame({"task": range(20), "successes": 5, "trials": 5}).to_csv(path, index=False)
    result = run(path, "--k", "1,10", "--format", "json", "--n-init", "2",
                 "--max-components", "1")
    lines = result.stderr.splitlines()
    assert any(line.startswith("Warning:") and "every task succeeded" in line
               for line in lines)
    assert all(line.startswith("Warning: ") for line in lines)
    assert "DegenerateDataWarning" not in result.stderr
    assert "warnings.warn" not in result.stderr
    assert len(lines) == len(set(lines))  # each warning once


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

GOOD = {"task": ["a", "b", "c"], "successes": [1, 2, 3], "trials": [10, 10, 10]}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.unit
@pytest.mark.parametrize("body, message", [
    ("task,successes,trials\na,1,10\nb,12,10\n",
     r"successes'? \(12\) exceeds (column )?'?trials'? \(10\)"),
    ("task,successes,trials\na,1,10\nb,-1,10\n", "must be non-negative; got -1"),
    ("task,successes,trials\na,1,10\nb,2.5,10\n", "must be whole numbers; got 2.5"),
    ("task,successes,trials\na,1,10\nb,,10\n", r"missing value \(NaN\) in line 3"),
    ("task,successes,trials\n", "no rows"),
    ("", "no rows"),
    ("task,foo,bar\na,x,y\n", "cannot tell the layout"),
])
def test_bad_counts(tmp_path, body, message):
    path = _write(tmp_path, "bad.csv", body)
    result = run(path, "--method", "naive", code=1)
    assert result.stderr.startswith("Error: ")
    assert re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--successes", "nope"], "successes column 'nope' not found"),
    (["--group-by", "nope"], "group_by column 'nope' not found"),
    (["--group-by", "task,nope"], "group_by column 'nope' not found"),
    (["--layout", "long"], "layout='long' needs an outcome column"),
    (["--outcome", "successes"], "outcome= applies to layout='long'|must be 0, 1"),
])
def test_bad_columns_and_layout(tmp_path, args, message):
    path = tmp_path / "good.csv"
    pd.DataFrame(GOOD).to_csv(path, index=False)
    result = run(path, "--method", "naive", *args, code=1)
    assert result.stderr.startswith("Error: ")
    assert re.search(message, result.stderr), result.stderr


@pytest.mark.unit
def test_missing_file_and_bad_extension(tmp_path):
    result = run(tmp_path / "absent.csv", code=1)
    assert result.stderr == f"Error: no such file: '{tmp_path / 'absent.csv'}'.\n"
    path = _write(tmp_path, "counts.xlsx", "x")
    result = run(path, code=1)
    assert result.stderr.startswith("Error: unknown file extension")


@pytest.mark.unit
def test_unwritable_output(tmp_path):
    path = tmp_path / "good.csv"
    pd.DataFrame(GOOD).to_csv(path, index=False)
    result = run(path, "--method", "naive", "-o", tmp_path / "no" / "dir" / "out.csv", code=1)
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("k", ["0", "-1", "2.5", "abc", "1,,10", "1,-3"])
def test_bad_k_is_usage_error(k):
    result = run("--example", "--method", "naive", f"--k={k}", code=2)
    bad = [p for p in k.split(",") if p not in ("1", "10")][0]
    assert "Invalid value for '--k'" in result.stderr
    assert f"'{bad}' is not a valid horizon" in result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--example", "--level", "1.5"], "Invalid value for '--level': 1.5"),
    (["--example", "--level", "0"], "Invalid value for '--level'"),
    (["--example", "--method", "bogus"], "Invalid value for '--method'"),
    (["--example", "--n-init", "0"], "Invalid value for '--n-init'"),
    (["--example", "--level", "nan"], "Invalid value for '--level'"),
    (["--example", "--max-components", "11"], "Invalid value for '--max-components'"),
    (["--example", "--max-components", str(10**12)], "Invalid value for '--max-components'"),
    (["--example", "--n-init", "1001"], "Invalid value for '--n-init'"),
    (["--example", "--interval", "bootstrap"], "Invalid value for '--interval'"),
    (["x.csv", "--example"], "either FILE or --example, not both"),
    ([], "give a FILE to read, or --example"),
])
def test_usage_errors(args, message):
    result = run(*args, code=2)
    assert message in result.stderr
    assert "Usage: " in result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("k, big", [("9223372036854775808", 2**63), ("1e19", 10**19),
                                    ("1,99999999999999999999", 99999999999999999999)])
def test_too_large_k_says_so_in_the_library_s_words(k, big):
    from passmix._validation import check_k

    with pytest.raises(ValueError) as library:
        check_k(big)
    result = run("--example", "--method", "naive", f"--k={k}", code=2)
    assert "Invalid value for '--k'" in result.stderr
    assert str(library.value) in " ".join(result.stderr.split())
    assert "too large" in result.stderr and "whole number" not in result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "NaN", "half"])
def test_threshold_must_be_finite(value):
    result = run(ALPHA_LOG, "--scorer", "partial", "--threshold", value, code=2)
    assert f"Invalid value for '--threshold': {value!r} is not a finite number" in \
        result.stderr


@pytest.mark.unit
def test_tau_log_entry_without_reward_is_an_error(tmp_path):
    entries = [{"task_id": 0, "reward": 1.0, "info": {}, "traj": [], "trial": t}
               for t in range(4)]
    del entries[2]["reward"]
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(entries))
    result = run(path, "--method", "naive", code=1)
    assert result.stderr == ("Error: 'gpt-4o-airline.json', entry 2 (task_id 0, trial 2) has "
                             "no reward; tau-bench writes task_id, reward and trial in every "
                             "entry.\n")
    assert result.stdout == ""


@pytest.mark.unit
@pytest.mark.parametrize("args", [[], ["--scorer", "match"], ["--from", "inspect"],
                                  ["--threshold", "0.5"]])
def test_missing_log_is_a_one_line_error(tmp_path, args):
    path = tmp_path / "nope.eval"
    result = run(path, *args, code=1)
    assert result.stderr == f"Error: no such file: '{path}'.\n"


def test_a_fit_that_did_not_converge_is_said(tmp_path, monkeypatch):
    import dataclasses

    import passmix.models.mixture.fit

    real = passmix.models.mixture.fit.maximize

    def unconverged(*args, **kwargs):  # as if L-BFGS-B had run out of iterations
        best = real(*args, **kwargs)
        return dataclasses.replace(best, converged=False, message="STOP: TOTAL NO. OF ITERATIONS")

    monkeypatch.setattr(passmix.models.mixture.fit, "maximize", unconverged)
    path = tmp_path / "counts.csv"
    pd.DataFrame(GOOD).to_csv(path, index=False)
    result = run(path, "--k", "1,10", "--format", "json", "--n-init", "2",
                 "--max-components", "1", "--interval", "delta", "--jobs", "1")
    warned = [line for line in result.stderr.splitlines() if "did not converge" in line]
    assert len(warned) == 1 and warned[0].startswith("Warning: ")
    assert "STOP: TOTAL NO. OF ITERATIONS" in warned[0]
    assert records(result)  # the estimates are still printed


def test_a_pooled_fit_that_did_not_converge_is_said(tmp_path, monkeypatch):
    import passmix.models.pooled.fit

    monkeypatch.setattr(passmix.models.pooled.fit, "_GRAD_TOL", 0.0)  # nothing counts as converged
    path = tmp_path / "panel.csv"
    pd.DataFrame({"model": ["x"] * 3 + ["y"] * 3, "task": ["a", "b", "c"] * 2,
                  "successes": [1, 2, 3, 0, 2, 4], "trials": [5] * 6}).to_csv(path, index=False)
    result = run(path, "--group-by", "model", "--method", "pooled", "--k", "1,10",
                 "--format", "json", "--jobs", "1")
    warned = [line for line in result.stderr.splitlines() if "did not converge" in line]
    assert len(warned) == 1 and warned[0].startswith("Warning: pooled: the pooled fit")
    assert records(result)


@pytest.mark.unit
def test_k_accepts_lists_and_scientific_notation():
    rows = records(run("--example", "--method", "naive", "--k", " 1, 1e3,10,10 ",
                       "--format", "json"))
    assert [r["k"] for r in rows[:3]] == [1, 1000, 10]  # order kept, repeats dropped


@pytest.mark.unit
class TestTheTextTable:
    """What the text table says beside its numbers."""

    def test_horizons_as_written_and_beyond_the_trials_said(self, tmp_path):
        path = _write(tmp_path, "five.csv", "task,successes,trials\n"
                      "a,1,5\nb,0,5\nc,3,5\nd,5,5\ne,2,5\n")
        text = run(path, "--method", "naive", "--k", "1,5,100,1e18").stdout
        rows = [line.split() for line in text.splitlines() if line.startswith("  pass")]
        assert [r[1] for r in rows[:4]] == ["1", "5", "100", "1e18"]
        assert rows[0][-1] == "-"  # the naive estimate has no interval
        note = [line for line in text.splitlines() if "beyond the" in line]
        assert note == ["  k = 100, 1e18: beyond the 5 trials run per task (up to 2e17 times "
                        "as many); there every value extrapolates the fitted distribution of "
                        "success rates"]
        # within the trials nothing is said
        assert "beyond the" not in run(path, "--method", "naive", "--k", "1,5").stdout

    def test_an_exact_zero_is_not_a_rounded_number(self):
        from passmix.tables import _horizon, _number

        assert [_number(v) for v in (0.0, 1.49e-34, 0.5, np.nan)] == [
            "0", "1.49e-34", "0.5000", "NA"]
        assert [_horizon(k) for k in (10, 999_999, 10**6, 1_234_567, 10**18)] == [
            "10", "999999", "1e6", "1234567", "1e18"]


@pytest.mark.unit
def test_every_command_writes_floats_in_full(tmp_path):
    """estimate, compare and rank write CSV and JSON at full precision, one way."""
    direct = json.loads(invoke("compare", "--example", "--method", "direct", "--k", "1,5",
                               "--format", "json").stdout)
    want = passmix.compare(passmix.Panel.read(example_path("math_m10"), "model"),
                           "Pythia 1B", "Pythia 2.8B", k=[1, 5], method="direct", seed=0)
    assert [r["estimate"] for r in direct] == want.estimate[0].tolist()  # exact, not 10 digits
    table = pd.read_csv(io.StringIO(invoke("compare", "--example", "--method", "direct",
                                           "--k", "1,5", "--format", "csv").stdout))
    assert table["estimate"].tolist() == want.estimate[0].tolist()


@pytest.mark.unit
def test_version_and_help():
    assert invoke("--version").stdout.strip() == f"passmix, version {passmix.__version__}"
    assert "estimate" in invoke("--help").stdout
    text = run("--help").stdout
    for option in ("--example", "--group-by", "--k", "--level", "--method", "--format",
                   "--max-components", "--n-init", "--seed", "--layout", "--task",
                   "--successes", "--trials", "--outcome", "--output", "--jobs", "--quiet"):
        assert option in text


# --------------------------------------------------------------------------
# estimate_table, directly
# --------------------------------------------------------------------------


@pytest.mark.unit
def test_estimate_table_single_counts_and_no_mutation():
    counts = passmix.Counts([0, 2, 5, 1], [5, 5, 5, 5])
    ks = [1, 5, 20]
    before = (counts.successes.copy(), counts.trials.copy(), list(ks))
    groups = {("a",): counts}
    table = estimate_table(groups, ["sys"], ks, 0.9, "naive", 4, 10, 0)
    assert list(table.columns) == ["sys", "metric", "k", "estimate", "lower", "upper",
                                   "method", "n_components", "interval"]
    assert table["n_components"].isna().all()
    assert str(table["n_components"].dtype) == "Int64"
    assert list(groups) == [("a",)] and groups[("a",)] is counts
    np.testing.assert_array_equal(counts.successes, before[0])
    assert ks == before[2]
    plain = estimate_table(counts, k=ks, method="naive")
    assert list(plain.columns)[0] == "metric"
    np.testing.assert_allclose(plain["estimate"], table["estimate"])


@pytest.mark.unit
def test_estimate_table_validates():
    counts = passmix.Counts([1, 2], [3, 3])
    with pytest.raises(ValueError, match="unknown method 'bayes'"):
        estimate_table(counts, method="bayes")
    with pytest.raises(ValueError, match="k must be >= 1"):
        estimate_table(counts, k=[0], method="naive")
    with pytest.raises(ValueError, match="level must be in"):
        estimate_table(counts, level=1.0, method="naive")
    with pytest.raises(ValueError, match="does not match the group columns"):
        estimate_table({("a", "b"): counts}, ["x"], method="naive")
    with pytest.raises(ValueError, match="clashes with an output column"):
        estimate_table({("a",): counts}, ["metric"], method="naive")


@pytest.mark.unit
def test_estimate_table_warns_per_group_and_shows_progress(capsys):
    groups = {("a",): passmix.Counts([1, 2], [3, 3]), ("b",): passmix.Counts([0, 3], [3, 3])}
    with pytest.warns(passmix.DegenerateDataWarning) as record:
        table = estimate_table(groups, ["sys"], [1, 5], method=["naive", "combinatorial"],
                               progress=True)
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert messages[0].startswith("sys='a': combinatorial estimator is undefined")
    assert table.loc[table["k"] == 5, "estimate"].isna().sum() == 2 * 3
    err = capsys.readouterr().err
    assert "passmix" in err and "/2" in err  # the tqdm bar, forced on


def test_estimate_table_is_the_same_in_worker_processes():
    rng = np.random.default_rng(4)
    groups = {(f"s{i}",): passmix.Counts(rng.binomial(6, rng.beta(1, 2, 40)), np.full(40, 6))
              for i in range(3)}
    groups[("full",)] = passmix.Counts(np.full(10, 6), np.full(10, 6))  # warns, in a worker
    kwargs = dict(k=[1, 10, 100], method=["mixture", "naive"], max_components=2, n_init=3)
    serial = estimate_table(groups, ["sys"], jobs=1, **kwargs)
    with pytest.warns(passmix.DegenerateDataWarning) as record:
        forked = estimate_table(groups, ["sys"], jobs=2, **kwargs)
    pd.testing.assert_frame_equal(forked, serial, check_exact=False, rtol=1e-12)
    assert forked.attrs["fits"].keys() == serial.attrs["fits"].keys()
    assert any(str(w.message).startswith("sys='full': every task succeeded") for w in record)
    groups[("none",)] = passmix.Counts(np.zeros(3, int), np.zeros(3, int))
    with pytest.raises(ValueError, match="sys='none': no task has any trial"):
        estimate_table(groups, ["sys"], jobs=2, **kwargs)
    with pytest.raises(ValueError, match="jobs must be >= 1 or -1"):
        estimate_table(groups, ["sys"], jobs=0, **kwargs)


@pytest.mark.unit
def test_the_progress_bar_leaves_the_groups_free_to_fork():
    """tqdm starts a monitor thread with its first bar (even a disabled one), and a live
    Python thread makes the groups run in this process: the default path lost its workers.
    In a fresh process (pytest's own threads aside), no thread is alive when the groups
    are mapped."""
    script = (
        "import threading, passmix, passmix.tables as t\n"
        "seen = []\n"
        "def spy(work, groups, jobs):\n"
        "    seen.append(threading.active_count())\n"
        "    yield from ()\n"
        "t._map_groups = spy\n"
        "groups = {(s,): passmix.Counts([1, 2, 0], [3, 3, 3]) for s in 'abc'}\n"
        "try:\n"
        "    passmix.estimate_table(groups, ['sys'], k=[1, 2], method='naive', jobs=2,\n"
        "                           progress=True)\n"
        "except Exception:\n"
        "    pass\n"
        "print(seen)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[1]"


# --------------------------------------------------------------------------
# real processes
# --------------------------------------------------------------------------


@pytest.mark.unit
def test_installed_script_subprocess():
    script = Path(sys.executable).with_name("passmix")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "passmix.cli"]
    proc = subprocess.run(
        [*cmd, "estimate", "--example", "--method", "combinatorial", "--k", "1,100",
         "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len({r["model"] for r in rows}) == 7
    assert proc.stderr.count("Warning: ") == 7
    assert "Traceback" not in proc.stderr and "UserWarning" not in proc.stderr


@pytest.mark.unit
def test_module_subprocess_error(tmp_path):
    path = _write(tmp_path, "bad.csv", "task,successes,trials\na,11,10\n")
    proc = subprocess.run(
        [sys.executable, "-m", "passmix.cli", "estimate", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ")
    assert re.search(r"successes'? \(11\) exceeds (column )?'?trials'? \(10\)", proc.stderr)
    assert "Traceback" not in proc.stderr


class TestCompare:
    """``passmix compare``: the library's comparison, as records with the group columns."""

    M10 = example_path("math_m10")

    @pytest.mark.slow
    def test_json_records_match_the_library(self):
        out = invoke("compare", self.M10, "--group-by", "model", "--a", "Pythia 1B", "--b",
                     "Pythia 12B", "--k", "1,10,100", "--format", "json")
        records = json.loads(out.stdout)
        assert {"model_a", "model_b", "metric", "k", "estimate", "lower", "upper",
                "band_lower", "band_upper", "certified", "method"} <= set(records[0])
        assert [r["k"] for r in records] == [1, 10, 100]
        assert {r["model_a"] for r in records} == {"Pythia 1B"}
        panel = passmix.Panel.read(self.M10, "model")
        want = passmix.compare(panel, "Pythia 1B", "Pythia 12B", k=[1, 10, 100], seed=0)
        assert np.allclose([r["estimate"] for r in records], want.estimate[0], rtol=1e-9)
        assert np.allclose([r["band_upper"] for r in records], want.band_upper[0], rtol=1e-9)
        assert [r["certified"] for r in records] == want.certified[0].tolist()
        assert "pooled" in out.stderr

    @pytest.mark.unit
    def test_every_pair_as_csv_and_a_table(self):
        out = invoke("compare", self.M10, "--group-by", "model", "--k", "1,5",
                     "--method", "direct", "--format", "csv")
        table = pd.read_csv(io.StringIO(out.stdout))
        assert len(table) == 21 * 2 and set(table["method"]) == {"direct"}
        text = invoke("compare", self.M10, "--group-by", "model", "--k", "1,5",
                      "--method", "direct").stdout
        assert "simultaneous band" in text and "Pythia 70M" in text

    @pytest.mark.unit
    def test_plot(self, tmp_path):
        target = tmp_path / "pair.png"
        invoke("compare", self.M10, "--group-by", "model", "--k", "1,2,5,10", "--method",
               "direct", "--a", "Pythia 12B", "--b", "Pythia 70M", "--plot", target)
        assert target.stat().st_size > 1000

    @pytest.mark.unit
    @pytest.mark.parametrize("args, code, message", [
        (("--a", "Pythia 1B"), 2, "both --a and --b"),
        (("--a", "Pythia 1B", "--b", "GPT-9"), 1, "--b 'GPT-9' matches no group"),
        (("--k", "1,20", "--method", "direct"), 1, "exceeds the 10 trials"),
        (("--method", "bayes"), 2, "'bayes' is not one of"),
        (("--interval", "wald"), 2, "'wald' is not one of"),
    ])
    def test_errors(self, args, code, message):
        out = invoke("compare", self.M10, "--group-by", "model", *args, code=code)
        assert message in out.output

    @pytest.mark.slow
    def test_posterior_records_carry_the_probability_b_is_better(self, tmp_path):
        rng = np.random.default_rng(0)
        p = 1 / (1 + np.exp(-(np.array([[-0.5], [0.5]]) - rng.normal(0.5, 1.5, 30))))
        frame = pd.DataFrame({"model": np.repeat(["base", "tuned"], 30),
                              "task": np.tile([f"t{j}" for j in range(30)], 2),
                              "successes": rng.binomial(8, p).ravel(), "trials": 8})
        path = tmp_path / "pair.csv"
        frame.to_csv(path, index=False)
        out = invoke("compare", path, "--group-by", "model", "--k", "1,10", "--method",
                     "posterior", "--draws", "200", "--format", "json")
        records = json.loads(out.stdout)
        assert [r["method"] for r in records] == ["posterior"] * 2
        for r in records:
            assert 0.0 <= r["p_b_better"] <= 1.0 and r["lower"] <= r["estimate"] <= r["upper"]
            # a certified sign goes with a posterior probability beyond the band's level
            if r["certified"] != 0:
                assert (r["p_b_better"] if r["certified"] > 0 else 1 - r["p_b_better"]) > 0.95

    def test_delta_intervals_on_request(self):
        args = ("--a", "Pythia 1B", "--b", "Pythia 12B", "--k", "10,1000", "--format", "json",
                "--method", "pooled")
        profile = json.loads(invoke("compare", self.M10, "--group-by", "model", *args).stdout)
        delta = json.loads(invoke("compare", self.M10, "--group-by", "model", *args,
                                  "--interval", "delta").stdout)
        assert [r["estimate"] for r in profile] == pytest.approx([r["estimate"] for r in delta])
        for r in delta:
            half = 1.959964 * r["se"]
            assert r["lower"] == pytest.approx(r["estimate"] - half, abs=1e-6)
        assert any(abs(p["upper"] - d["upper"]) > 1e-6 for p, d in zip(profile, delta))

    @pytest.mark.unit
    def test_pairs_that_share_no_task(self, tmp_path):
        frame = pd.DataFrame({"model": ["x", "y"], "task": ["t1", "t2"], "successes": [1, 2],
                              "trials": [3, 3]})
        path = tmp_path / "disjoint.csv"
        frame.to_csv(path, index=False)
        out = invoke("compare", path, "--group-by", "model", "--k", "1", code=1)
        assert "share no task" in out.output


class TestRank:
    M10 = example_path("math_m10")

    @pytest.mark.slow
    def test_records_match_the_library(self, tmp_path):
        out = invoke("rank", self.M10, "--group-by", "model", "--k", "1,100", "--format",
                     "json", "--plot", tmp_path / "rank.png")
        records = json.loads(out.stdout)
        assert len(records) == 14 and {"model", "metric", "k", "rank", "rank_lower",
                                       "rank_upper", "p_best"} <= set(records[0])
        want = passmix.rank(passmix.Panel.read(self.M10, "model"), [1, 100], seed=0).summary()
        assert [r["model"] for r in records] == want["system"].tolist()
        assert np.allclose([r["upper"] for r in records], want["upper"], rtol=1e-9)
        assert (tmp_path / "rank.png").stat().st_size > 1000

    def test_table_and_errors(self):
        # the bundled example is this file grouped by model
        text = invoke("rank", "--example", "--k", "10").stdout
        assert "rank_lower" in text and "Pythia 12B" in text
        assert "95% profile intervals" in text.splitlines()[0]
        out = invoke("rank", self.M10, "--group-by", "model", "--k", "10", "--interval",
                     "delta", "--format", "json")
        want = passmix.rank(passmix.Panel.read(self.M10, "model"), 10, interval="delta",
                            seed=0).summary()
        assert np.allclose([r["upper"] for r in json.loads(out.stdout)], want["upper"],
                           rtol=1e-9)
        text = invoke("rank", self.M10, "--group-by", "model", "--k", "10", "--interval",
                      "Delta").stdout
        assert "95% delta intervals" in text.splitlines()[0]
        out = invoke("rank", self.M10, "--group-by", "model", "--method", "direct", code=2)
        assert "'direct' is not one of" in out.output


# --------------------------------------------------------------------------
# what a newcomer meets: tables of attempts, partial scores, shared defaults,
# --example and --plot everywhere, names as names
# --------------------------------------------------------------------------


def _attempts(tmp_path: Path, name: str = "long.csv") -> Path:
    """model,task,trial,outcome: two models on the same 6 tasks, 4 trials each."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame([(m, f"t{t}", r, int(rng.random() < p))
                          for m, p in (("small", 0.3), ("medium", 0.6))
                          for t in range(6) for r in range(4)],
                         columns=["model", "task", "trial", "outcome"])
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.unit
class TestAttemptTables:
    def test_missing_outcomes_and_systems_read_as_one_are_warned(self, tmp_path):
        path = _attempts(tmp_path)
        lines = path.read_text().splitlines()
        lines[3] = lines[3].rsplit(",", 1)[0] + ","     # line 4 of the file: empty
        lines[8] = lines[8].rsplit(",", 1)[0] + ",NA"   # line 9: NA
        path.write_text("\n".join(lines) + "\n")
        result = run(path, "--method", "naive", "--k", "1", "--format", "json")
        warned = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
        assert "Warning: 2 attempts have no outcome (lines 4, 9 of 'long.csv'); they are " \
               "left out as not run." in warned
        (merged,) = [line for line in warned if "'model'" in line]
        assert "column 'model' has 2 values ('small', 'medium') that share tasks" in merged
        assert "(--group-by model)" in merged
        rows = records(result)  # what was read: both models as one, 2 attempts short
        frame = pd.read_csv(path)
        (p1,) = select(rows, metric="pass@k", k=1)
        want = frame.dropna().groupby("task")["outcome"].mean().mean()
        assert p1["estimate"] == pytest.approx(want)
        # grouped as suggested: one set per model, the missing outcomes still said
        grouped = run(path, "--group-by", "model", "--method", "naive", "--k", "1")
        assert "'model' has 2 values" not in grouped.stderr
        assert "model='small': J=6 tasks, m=3-4" in grouped.stdout  # t0, t1 lost one

    def test_a_bad_value_is_named_with_its_own_line(self, tmp_path):
        path = _attempts(tmp_path)
        lines = path.read_text().splitlines()
        lines[9] = lines[9].rsplit(",", 1)[0] + ",yes"  # line 10, a 'small' attempt
        path.write_text("\n".join(lines) + "\n")
        for args in ([], ["--group-by", "model"]):
            result = run(path, "--method", "naive", *args, code=1)
            assert "Error: column 'outcome' has value 'yes' in line 10 of 'long.csv' " \
                   "(task 't2')" in result.stderr

    def test_jsonl_errors_name_the_line(self, tmp_path):
        path = _write(tmp_path, "runs.jsonl", '{"task": "a", "outcome": 1}\n'
                                              '{"task": "a", "outcome": 0\n')
        result = run(path, code=1)
        assert result.stderr.startswith("Error: cannot read ") and "line 2 is not valid " \
            "JSON" in result.stderr and "position" not in result.stderr

    def test_threshold_scores_a_table(self, tmp_path):
        rng = np.random.default_rng(1)
        frame = pd.DataFrame({"task": np.repeat([f"t{j}" for j in range(8)], 5),
                              "score": rng.random(40).round(2)})
        path = tmp_path / "scores.csv"
        frame.to_csv(path, index=False)
        refused = run(path, "--method", "naive", code=1)
        assert "for partial scores pass threshold= (--threshold" in refused.stderr
        rows = records(run(path, "--threshold", "0.5", "--method", "naive", "--k", "1,5",
                           "--format", "json"))
        rate = (frame["score"] >= 0.5).groupby(frame["task"]).mean()
        (p1,) = select(rows, metric="pass@k", k=1)
        assert p1["estimate"] == pytest.approx(rate.mean())
        (p5,) = select(rows, metric="pass^k", k=5)
        assert p5["estimate"] == pytest.approx((rate ** 5).mean())  # the plug-in
        # the harness-log options stay the logs'
        assert "--scorer applies to harness logs" in run(path, "--scorer", "x", code=2).stderr


class TestOneWayToReadFile:
    """estimate, compare and rank read FILE with the same options, from one definition."""

    READING = ("--layout", "--task", "--successes", "--trials", "--outcome", "--from",
               "--scorer", "--log-metric", "--threshold", "--status")

    @pytest.mark.unit
    def test_the_same_reading_options_everywhere(self):
        helps = {}
        for name in ("estimate", "compare", "rank"):
            command = main.commands[name]
            helps[name] = {o: p.help for p in command.params for o in p.opts
                           if o in self.READING}
            assert set(helps[name]) == set(self.READING), name
        assert helps["estimate"] == helps["compare"] == helps["rank"]
        # estimate's earlier name for the log metric still works there
        assert "--metric" in next(p.opts for p in main.commands["estimate"].params
                                  if p.name == "log_metric")

    def test_compare_and_rank_score_a_table_with_threshold(self, tmp_path):
        rng = np.random.default_rng(2)
        tasks = [f"t{j}" for j in range(10)]
        frame = pd.DataFrame({"model": np.repeat(["a", "b"], 10 * 6),
                              "task": np.tile(np.repeat(tasks, 6), 2),
                              "score": rng.random(120).round(2)})
        path = tmp_path / "scores.csv"
        frame.to_csv(path, index=False)
        refused = invoke("compare", path, "--group-by", "model", "--method", "direct",
                         "--k", "1", code=1)
        assert "--threshold" in refused.stderr
        out = invoke("compare", path, "--group-by", "model", "--method", "direct", "--k",
                     "1,3", "--threshold", "0.5", "--format", "json")
        rows = json.loads(out.stdout)
        rate = (frame["score"] >= 0.5).groupby([frame["model"], frame["task"]]).mean()
        assert rows[0]["estimate"] == pytest.approx(rate["b"].mean() - rate["a"].mean())
        assert rows[0]["value_a"] == pytest.approx(rate["a"].mean())
        # rank fits each system's mixture (a compile): not in the unit lane
        ranked = invoke("rank", path, "--group-by", "model", "--method", "mixture", "--k", "1",
                        "--threshold", "0.5", "--format", "json")
        assert {r["model"] for r in json.loads(ranked.stdout)} == {"a", "b"}
        # a log's options on a table are refused, as estimate refuses them
        assert "--scorer applies to harness logs" in invoke(
            "rank", path, "--group-by", "model", "--scorer", "x", code=2).stderr


@pytest.mark.unit
class TestSharedDefaultsAndExamples:
    def test_one_k_default_for_every_command(self, tmp_path):
        from passmix._defaults import CLI_K

        assert CLI_K == (1, 10, 100, 1000)
        for command in ("estimate", "compare", "rank"):
            text = " ".join(invoke(command, "--help").stdout.split())
            assert "--example" in text and "--plot" in text
            assert re.search(r"--k K\[,K\.\.\.\] Horizon.*\[default: 1,10,100,1000\]", text)
        rows = records(run(_attempts(tmp_path), "--group-by", "model", "--method", "naive",
                           "--format", "json"))
        assert sorted({r["k"] for r in rows}) == [1, 10, 100, 1000]
        # compare's default horizons, model-free on 10,000 trials a task
        pair = json.loads(invoke("compare", MATH, "--group-by", "model", "--a", "Pythia 1B",
                                 "--b", "Pythia 12B", "--method", "direct", "--format",
                                 "json").stdout)
        assert [r["k"] for r in pair] == [1, 10, 100, 1000]

    def test_quiet_says_nothing_on_stderr(self):
        for command in ("compare", "rank"):
            assert "-q, --quiet" in invoke(command, "--help").stdout
        out = invoke("compare", "--example", "--method", "direct", "--k", "1", "-q")
        assert out.stderr == "" and "Pythia 1B" in out.stdout

    def test_compare_example_picks_a_pair_and_says_so(self):
        out = invoke("compare", "--example", "--method", "direct", "--k", "1,5", "--format",
                     "json")
        assert out.stderr.startswith("--example compares Pythia 1B (a) with Pythia 2.8B (b); "
                                     "pass --a NAME --b NAME for another pair of: Pythia 70M, "
                                     "Pythia 160M, Pythia 410M, Pythia 1B,")
        rows = json.loads(out.stdout)
        assert {(r["model_a"], r["model_b"]) for r in rows} == {("Pythia 1B", "Pythia 2.8B")}
        want = passmix.compare(passmix.Panel.read(example_path("math_m10"), "model"),
                               "Pythia 1B", "Pythia 2.8B", k=[1, 5], method="direct", seed=0)
        assert np.allclose([r["estimate"] for r in rows], want.estimate[0])
        # --a/--b choose another, by name or (two group columns) by "value / value"
        other = json.loads(invoke("compare", "--example", "--group-by", "model,benchmark",
                                  "--a", "Pythia 70M / MATH", "--b", "Pythia 12B,MATH",
                                  "--method", "direct", "--k", "1", "--format", "json").stdout)
        assert [(r["model_a"], r["model_b"]) for r in other] == [("Pythia 70M", "Pythia 12B")]

    @pytest.mark.parametrize("command", ["compare", "rank"])
    def test_file_or_example(self, command, tmp_path):
        assert "give a FILE to read, or --example" in invoke(command, code=2).stderr
        assert "either FILE or --example" in invoke(command, MATH, "--example",
                                                    code=2).stderr
        assert "Missing option '--group-by'" in invoke(command, MATH, code=2).stderr

    def test_estimate_plot(self, tmp_path):
        target = tmp_path / "estimates.png"
        result = run(_attempts(tmp_path), "--group-by", "model", "--method", "naive",
                     "--k", "1,2,4", "--plot", target)
        assert "model='small'" in result.stdout
        assert target.stat().st_size > 1000


@pytest.mark.unit
def test_the_group_joins_every_command_module():
    """`passmix.cli.commands` only joins the command modules: each command is theirs."""
    from passmix.cli import commands, estimate, experiment, systems

    assert commands.main is main
    assert set(main.commands) == {"estimate", "compare", "rank", "experiment"}
    assert main.commands["estimate"] is estimate.estimate
    assert main.commands["compare"] is systems.compare and main.commands["rank"] is systems.rank
    assert main.commands["experiment"] is experiment.experiment
    assert set(experiment.experiment.commands) == {"repeated", "scaling", "sensitivity"}
