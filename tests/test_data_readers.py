"""Harness log readers: inspect_ai (real logs made by inspect itself), EvalPlus, tau, lm-eval."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import passmix
from passmix.data.readers import (LogFormatError, detect_log_format, read_evalplus, read_inspect,
                             read_lm_eval, read_log, read_tau)

LOGS = Path(__file__).parent / "data" / "logs"
ROOT = Path(__file__).resolve().parents[1]
ALPHA = LOGS / "inspect" / "alpha.eval"


def scripted_truth(scorer: str, seed: int = 0) -> dict:
    """The outcomes make_inspect_logs.py scripted, scored as inspect's scorers score them."""
    out = {}
    for epoch in range(5):
        for i in range(10):
            right = (epoch * 7 + i * 3 + seed) % 10 < i
            about = not right and (epoch + i) % 3 == 0  # "about 2i": match() says C
            out[(f"q{i}", epoch + 1)] = (int(right or about) if scorer == "match"
                                         else 1.0 if right else 0.5 if about else 0.0)
    return out


# -- inspect_ai -------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("path", [ALPHA, LOGS / "inspect_json" / "alpha.json"],
                         ids=["eval", "json"])
def test_inspect_log_gives_the_scripted_outcomes(path):
    table = read_inspect(path, scorer="match", engine="direct")
    assert table.columns.tolist() == ["model", "eval_task", "task", "attempt", "outcome"]
    assert set(table["model"]) == {"mockllm/alpha"} and set(table["eval_task"]) == {"arithmetic"}
    got = {(r.task, r.attempt): r.outcome for r in table.itertuples()}
    assert got == scripted_truth("match")
    assert table.attrs["attempts"] == 50 and "read 50 attempts on 10 tasks" in \
        table.attrs["summary"]
    partial = read_inspect(path, scorer="partial", threshold=1.0, engine="direct")
    truth = scripted_truth("partial")
    assert {(r.task, r.attempt): r.outcome for r in partial.itertuples()} == {
        key: int(v >= 1.0) for key, v in truth.items()}
    half = read_inspect(path, scorer="partial", threshold=0.5, engine="direct")
    assert half["outcome"].sum() == sum(v >= 0.5 for v in truth.values())


@pytest.mark.unit
@pytest.mark.parametrize("path", [ALPHA, LOGS / "inspect_json" / "alpha.json"],
                         ids=["eval", "json"])
def test_direct_reader_agrees_with_inspect_ai(path):
    pytest.importorskip("inspect_ai")
    direct = read_inspect(path, scorer="match", engine="direct")
    ours = read_inspect(path, scorer="match", engine="inspect")
    key = ["task", "attempt"]
    pd.testing.assert_frame_equal(direct.sort_values(key).reset_index(drop=True),
                                  ours.sort_values(key).reset_index(drop=True))


@pytest.mark.unit
def test_inspect_errors_are_named(tmp_path):
    with pytest.raises(LogFormatError, match="2 scorers"):
        read_inspect(ALPHA, engine="direct")
    with pytest.raises(LogFormatError, match="partial credit"):
        read_inspect(ALPHA, scorer="partial", engine="direct")
    with pytest.raises(LogFormatError, match="no scorer 'f1'"):
        read_inspect(ALPHA, scorer="f1", engine="direct")
    not_zip = tmp_path / "x.eval"
    not_zip.write_text("hello")
    with pytest.raises(LogFormatError, match="not a zip"):
        read_inspect(not_zip, engine="direct")
    other_zip = tmp_path / "y.eval"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("readme.txt", "not a log")
    with pytest.raises(LogFormatError, match="not an inspect .eval log"):
        read_inspect(other_zip, engine="direct")
    foreign = tmp_path / "z.json"
    foreign.write_text(json.dumps({"rows": [1, 2]}))
    with pytest.raises(LogFormatError, match="not an inspect log"):
        read_inspect(foreign, engine="direct")
    broken = tmp_path / "b.json"
    broken.write_text('{"eval": {"model": ')
    with pytest.raises(LogFormatError, match="not valid JSON"):
        read_inspect(broken, engine="direct")


@pytest.mark.unit
def test_errored_samples_raise_or_count_as_failures(tmp_path):
    doc = json.loads((LOGS / "inspect_json" / "alpha.json").read_text())
    doc["samples"][0]["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    doc["samples"][1]["scores"] = {}
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(LogFormatError, match="errored"):
        read_inspect(path, scorer="match", engine="direct")
    table = read_inspect(path, scorer="match", errors="fail", engine="direct")
    assert len(table) == 50  # nothing dropped
    first, second = (doc["samples"][i] for i in (0, 1))
    for s in (first, second):
        row = table[(table["task"] == s["id"]) & (table["attempt"] == s["epoch"])]
        assert row["outcome"].tolist() == [0]
    assert "2 errored or unscored" in table.attrs["notes"][0]


@pytest.mark.unit
def test_a_folder_of_logs_and_read_counts(tmp_path):
    both = read_log(LOGS / "inspect", scorer="match")
    assert both.attrs["attempts"] == 100
    counts = passmix.read_counts(LOGS / "inspect", group_by="model",
                                 log_options={"scorer": "match"})
    alpha = counts[("mockllm/alpha",)]
    truth = scripted_truth("match")
    expect = [sum(v for (t, _), v in truth.items() if t == task) for task in alpha.tasks]
    assert alpha.successes.tolist() == expect and set(alpha.trials) == {5}
    beta = counts[("mockllm/beta",)]
    truth_b = scripted_truth("match", seed=4)
    assert beta.successes.tolist() == [sum(v for (t, _), v in truth_b.items() if t == task)
                                       for task in beta.tasks]
    with pytest.raises(ValueError, match="several model values"):
        passmix.read_counts(LOGS / "inspect", log_options={"scorer": "match"})
    trials = passmix.read_trials(ALPHA, log_options={"scorer": "match"})
    assert trials.shape == (10, 5) and np.nansum(trials) == sum(truth.values())


def test_cli_on_an_inspect_log_matches_the_same_attempts_as_csv(tmp_path):
    from click.testing import CliRunner

    from passmix.cli import main

    runner = CliRunner()
    args = ["--group-by", "model", "--k", "1,10,100", "--format", "json", "--interval", "delta"]
    from_log = runner.invoke(main, ["estimate", str(ALPHA), "--scorer", "match", *args])
    assert from_log.exit_code == 0, from_log.output
    assert "read 50 attempts on 10 tasks" in from_log.stderr
    table = read_inspect(ALPHA, scorer="match")
    csv = tmp_path / "attempts.csv"
    table[["model", "task", "attempt", "outcome"]].to_csv(csv, index=False)
    from_csv = runner.invoke(main, ["estimate", str(csv), *args])
    assert from_csv.exit_code == 0, from_csv.output
    a, b = json.loads(from_log.stdout), json.loads(from_csv.stdout)
    assert len(a) == len(b) == 9
    for x, y in zip(a, b):
        assert x["metric"] == y["metric"] and x["k"] == y["k"]
        for field in ("estimate", "lower", "upper"):
            assert x[field] == pytest.approx(y[field], rel=1e-9, abs=1e-12)
    bad = runner.invoke(main, ["estimate", str(ALPHA), "--scorer", "partial", *args])
    assert bad.exit_code != 0 and "--threshold" in bad.output
    table_opt = runner.invoke(main, ["estimate", str(csv), "--scorer", "match", *args])
    assert table_opt.exit_code != 0 and "--from" in table_opt.output


# -- EvalPlus ---------------------------------------------------------------------------

@pytest.mark.unit
def test_evalplus_current_and_old_layouts():
    path = LOGS / "evalplus" / "gpt-4o_temp_0.8" / "eval_results.json"
    doc = json.loads(path.read_text())
    plus = read_evalplus(path)
    base = read_evalplus(path, status="base")
    assert set(plus["model"]) == {"gpt-4o_temp_0.8"} and set(plus["dataset"]) == {"HumanEval"}
    for table, fields in ((plus, ("base_status", "plus_status")), (base, ("base_status",))):
        assert len(table) == sum(len(v) for v in doc["eval"].values())
        for task_id, entries in doc["eval"].items():
            got = table[table["task"] == task_id].sort_values("attempt")["outcome"].tolist()
            assert got == [int(all(e[f] == "pass" for f in fields)) for e in entries]
    with pytest.raises(LogFormatError, match="status='base'"):
        read_evalplus(LOGS / "evalplus" / "base_only.eval_results.json")
    only = read_evalplus(LOGS / "evalplus" / "base_only.eval_results.json", status="base")
    assert set(only["model"]) == {"base_only"} and len(only) == 15
    old = read_evalplus(LOGS / "evalplus" / "old_layout_eval_results.json")
    assert old.groupby("task")["outcome"].sum().to_dict() == {"HumanEval/0": 1,
                                                               "HumanEval/1": 1}
    with pytest.raises(LogFormatError, match="not an EvalPlus"):
        read_evalplus(LOGS / "tau" / "tau2_airline_results.json")
    with pytest.raises(ValueError, match="status"):
        read_evalplus(path, status="extra")


# -- tau-bench ----------------------------------------------------------------------------

@pytest.mark.unit
def test_tau_bench_real_log_matches_the_bundled_table():
    table = read_tau(LOGS / "tau" / "gpt-4o-airline.json")
    assert set(table["model"]) == {"gpt-4o"} and set(table["domain"]) == {"airline"}
    csv = pd.read_csv(ROOT / "src" / "passmix" / "example_data" / "taubench_airline.csv")
    csv = csv[csv["task_id"].isin(table["task"])]
    merged = table.merge(csv, left_on=["task", "attempt"], right_on=["task_id", "trial"])
    assert len(merged) == len(table) == len(csv) == 24
    assert (merged["outcome"] == merged["reward"].astype(int)).all()
    assert "1 trial(s) ended" in table.attrs["notes"][0]


@pytest.mark.unit
def test_tau2_results_and_detection():
    path = LOGS / "tau" / "tau2_airline_results.json"
    table = read_tau(path)
    assert set(table["model"]) == {"claude-sonnet-4"} and set(table["domain"]) == {"airline"}
    assert table.groupby("task")["outcome"].sum().to_dict() == {"0": 2, "1": 1, "2": 0}
    assert "without a reward" in table.attrs["notes"][0]
    assert detect_log_format(path) == "tau"
    assert detect_log_format(LOGS / "tau" / "gpt-4o-airline.json") == "tau"


def _tau_list(tmp_path, name="gpt-4o-airline.json", **changes):
    """A tau-bench results list (task 0, trials 0-3); `changes` edit entry 2."""
    entries = [{"task_id": 0, "reward": 1.0, "info": {}, "traj": [], "trial": t}
               for t in range(4)]
    for key, value in changes.items():
        if value is _DROP:
            del entries[2][key]
        else:
            entries[2][key] = value
    path = tmp_path / name
    path.write_text(json.dumps(entries))
    return path


_DROP = object()


@pytest.mark.unit
def test_tau_entry_without_reward_is_a_tau_error_not_a_table(tmp_path):
    path = _tau_list(tmp_path, reward=_DROP)
    # still a tau log: read as a table, the attempt would be dropped (m = 3, not 4)
    assert detect_log_format(path) == "tau"
    message = r"'gpt-4o-airline.json', entry 2 \(task_id 0, trial 2\) has no reward"
    with pytest.raises(LogFormatError, match=message):
        read_tau(path)
    with pytest.raises(LogFormatError, match=message):
        passmix.read_counts(path)
    with pytest.raises(LogFormatError, match=message):
        read_log(path)
    # entries with tau-bench's fields but no reward at all are not told to be tau: a table
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"task_id": 0, "trial": t, "outcome": 1} for t in range(3)]))
    assert detect_log_format(plain) is None
    assert passmix.read_counts(plain).trials.tolist() == [3]


@pytest.mark.unit
@pytest.mark.parametrize("changes, message", [
    ({"reward": "x"}, r"entry 2 \(task_id 0, trial 2\): reward 'x' is not a number"),
    ({"reward": True}, r"entry 2 \(task_id 0, trial 2\): reward True is not a number"),
    ({"reward": [1]}, r"entry 2 \(task_id 0, trial 2\): reward \[1\] is not a number"),
    ({"trial": 1.5}, r"entry 2 \(task_id 0, trial 1.5\): trial 1.5 is not a whole number"),
    ({"trial": "2"}, r"entry 2 \(task_id 0, trial '2'\): trial '2' is not a whole number"),
    ({"trial": _DROP}, r"entry 2 \(task_id 0, trial None\) has no trial"),
    ({"task_id": [0]}, r"entry 2 \(task_id \[0\], trial 2\): task_id \[0\] is not a "
                       "string or an integer"),
])
def test_tau_bad_entries_name_file_entry_and_value(tmp_path, changes, message):
    path = _tau_list(tmp_path, **changes)
    with pytest.raises(LogFormatError, match=r"'gpt-4o-airline\.json', " + message):
        read_tau(path)


@pytest.mark.unit
def test_tau_infinite_reward_and_non_dict_entries(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('[{"task_id": 0, "reward": Infinity, "trial": 0}]')
    with pytest.raises(LogFormatError, match=r"'run.json', entry 0 .*reward inf is not finite"):
        read_tau(path)
    path.write_text(json.dumps([{"task_id": 0, "reward": 1.0, "trial": 0}, 7]))
    with pytest.raises(LogFormatError, match=r"'run.json', entry 1: 7 is not a result"):
        read_tau(path)


@pytest.mark.unit
def test_tau2_bad_simulations_name_file_simulation_and_value(tmp_path):
    doc = json.loads((LOGS / "tau" / "tau2_airline_results.json").read_text())
    doc["simulations"][1]["reward_info"]["reward"] = "x"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    task, trial = doc["simulations"][1]["task_id"], doc["simulations"][1]["trial"]
    with pytest.raises(LogFormatError, match=rf"'results.json', simulation 1 \(task_id "
                       rf"'{task}', trial {trial}\): reward 'x' is not a number"):
        read_tau(path)
    doc["simulations"][1]["reward_info"] = "lost"
    path.write_text(json.dumps(doc))
    with pytest.raises(LogFormatError, match="simulation 1 .*reward_info 'lost' is not a dict"):
        read_tau(path)
    del doc["simulations"][1]["task_id"]
    path.write_text(json.dumps(doc))
    with pytest.raises(LogFormatError, match=r"simulation 1 \(task_id None.* has no task_id"):
        read_tau(path)


# -- lm-evaluation-harness ------------------------------------------------------------------

@pytest.mark.unit
def test_lm_eval_runs_with_one_response_each_are_attempts():
    folder = LOGS / "lm_eval" / "runs"
    table = read_lm_eval(folder)
    assert set(table["model"]) == {"org/model-7b"}  # from results_*.json beside the samples
    strict = table[table["filter"] == "strict-match"]
    got = strict.groupby("task")["outcome"].apply(list).to_dict()
    assert got == {0: [1, 1, 0], 1: [0, 0, 0], 2: [1, 0, 1], 3: [1, 1, 1]}
    with pytest.raises(ValueError, match="several filter values"):
        passmix.read_counts(folder, group_by="model")
    counts = passmix.read_counts(folder, group_by=["model", "filter"])
    assert counts[("org/model-7b", "strict-match")].successes.tolist() == [2, 0, 2, 3]
    assert counts[("org/model-7b", "flexible-extract")].successes.tolist() == [2, 3, 2, 3]


@pytest.mark.unit
def test_lm_eval_per_repeat_scores_and_collapsed_repeats():
    per = read_lm_eval(LOGS / "lm_eval" / "per_repeat")
    assert per.groupby("task")["outcome"].apply(list).to_dict() == {
        0: [1, 0, 1, 0], 1: [1, 0, 1, 1], 2: [1, 0, 1, 1]}


@pytest.mark.unit
def test_lm_eval_logs_made_by_lm_eval():
    # made by make_lm_eval_logs.py with lm-eval 0.4.13 and a scripted model
    folder = LOGS / "lm_eval_real"
    runs = read_lm_eval(folder / "runs")
    assert set(runs["model"]) == {"scripted/arith-model"}
    assert set(runs["eval_task"]) == {"passmix_arith"} and set(runs["filter"]) == {"none"}
    # the scripted model answers question i right in run s when (i + s) % 3 != 0
    got = runs.groupby("task")["outcome"].apply(list).to_dict()
    assert got == {i: [int((i + s) % 3 != 0) for s in range(3)] for i in range(6)}
    # each run's mean is the exact_match lm-eval itself reported in results_*.json
    results = sorted((folder / "runs").rglob("results_*.json"))
    reported = [json.loads(p.read_text())["results"]["passmix_arith"]["exact_match,none"]
                for p in results]
    assert runs.groupby("attempt")["outcome"].mean().tolist() == pytest.approx(reported)
    # repeats: 4 with the default filter: collapsed before scoring, refused by name
    assert detect_log_format(folder / "collapsed") == "lm-eval"
    with pytest.raises(LogFormatError, match="filter 'none' .*take_first.* reduced them"):
        read_lm_eval(folder / "collapsed")


@pytest.mark.unit
def test_lm_eval_bad_lines(tmp_path):
    bad = tmp_path / "samples_x_2026-01-01T00-00-00.jsonl"
    bad.write_text('{"doc_id": 0, "metrics": ["acc"], "acc": 1}\nnot json\n')
    with pytest.raises(LogFormatError, match="line 2: not JSON"):
        read_lm_eval(bad)
    two = tmp_path / "two" / "samples_y_2026-01-01T00-00-00.jsonl"
    two.parent.mkdir()
    two.write_text('{"doc_id": 0, "resps": [["a"]], "filter": "none", "metrics": ["acc", "f1"], '
                   '"acc": 1, "f1": 0.5}\n')
    with pytest.raises(LogFormatError, match="pass metric="):
        read_lm_eval(two)
    assert read_lm_eval(two, metric="acc")["outcome"].tolist() == [1]
    with pytest.raises(LogFormatError, match="partial credit"):
        read_lm_eval(two, metric="f1")
    # a score outside [0, 1] is not partial credit: out of range, unless a threshold is given
    three = tmp_path / "three" / "samples_z_2026-01-01T00-00-00.jsonl"
    three.parent.mkdir()
    three.write_text('{"doc_id": 0, "metrics": ["score"], "score": 2}\n'
                     '{"doc_id": 1, "metrics": ["score"], "score": 7}\n')
    with pytest.raises(LogFormatError, match="score 2 is out of range"):
        read_lm_eval(three)
    assert read_lm_eval(three, threshold=5)["outcome"].tolist() == [0, 1]
    inf = tmp_path / "inf" / "samples_z_2026-01-01T00-00-00.jsonl"
    inf.parent.mkdir()
    inf.write_text('{"doc_id": 0, "metrics": ["score"], "score": Infinity}\n')
    with pytest.raises(LogFormatError, match="infinite"):
        read_lm_eval(inf, threshold=5)


def _samples(tmp_path, lines, name="samples_t_2026-01-01T00-00-00.jsonl"):
    path = tmp_path / "m" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps({"resps": [["a"]], "metrics": ["acc"], **rec}) + "\n"
                            for rec in lines))
    return path


@pytest.mark.unit
def test_lm_eval_sample_without_filter_is_an_error_naming_the_line(tmp_path):
    # lm-eval logs filter in every sample since v0.4.7: one sample lacking it is not its log
    path = _samples(tmp_path, [{"doc_id": 0, "filter": "none", "acc": 1},
                               {"doc_id": 1, "acc": 0}, {"doc_id": 2, "filter": "none", "acc": 1}])
    with pytest.raises(LogFormatError, match=r"'samples_t_2026-01-01T00-00-00\.jsonl', line 2 "
                       r"\(doc_id 1\): the sample has no filter"):
        read_lm_eval(path)


@pytest.mark.unit
def test_lm_eval_files_from_before_filter_was_logged(tmp_path):
    # before v0.4.7 no sample names its filter: read as 'none', with a warning saying so
    old = _samples(tmp_path, [{"doc_id": d, "acc": d % 2} for d in range(3)])
    with pytest.warns(UserWarning, match=r"'samples_t_2026-01-01T00-00-00\.jsonl': its 3 "
                      r"sample\(s\) have no filter field .* read as filter 'none'"):
        table = read_lm_eval(old)
    assert set(table["filter"]) == {"none"} and table["outcome"].tolist() == [0, 1, 0]
    # a doc twice: two filters' samples, which nothing tells apart
    two = _samples(tmp_path, [{"doc_id": 0, "acc": 1}, {"doc_id": 1, "acc": 1},
                              {"doc_id": 0, "acc": 0}], name="samples_u_2026-01-01T00-00-00.jsonl")
    with pytest.raises(LogFormatError, match=r"lines 1 and 3: doc_id 0 appears twice and no "
                       "sample names its filter"):
        read_lm_eval(two)


@pytest.mark.unit
def test_lm_eval_malformed_samples_are_named(tmp_path):
    twice = _samples(tmp_path, [{"doc_id": 0, "filter": "none", "acc": 1},
                                {"doc_id": 0, "filter": "none", "acc": 0}])
    with pytest.raises(LogFormatError, match=r"line 2, doc 0, filter 'none': the document "
                       "already has a sample in line 1"):
        read_lm_eval(twice)
    for rec, message in [({"doc_id": [0], "filter": "none", "acc": 1},
                          r"line 1: doc_id \[0\] is not an integer or a string"),
                         ({"doc_id": 0, "filter": 3, "acc": 1}, "filter 3 is not a string"),
                         ({"doc_id": 0, "filter": "none", "acc": 1, "metrics": "acc"},
                          "metrics 'acc' is not a list of names"),
                         ({"doc_id": 0, "filter": "none", "acc": 1, "scores_per_repeat": [1]},
                          r"scores_per_repeat \[1\] is not a mapping")]:
        path = _samples(tmp_path, [rec])
        with pytest.raises(LogFormatError, match=message):
            read_lm_eval(path)


@pytest.mark.unit
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_thresholds_must_be_finite(value):
    message = f"threshold must be a finite number, got {value!r}"
    runs = LOGS / "lm_eval" / "runs"
    for call in (lambda: read_tau(LOGS / "tau" / "gpt-4o-airline.json", threshold=value),
                 lambda: read_inspect(ALPHA, scorer="partial", threshold=value,
                                      engine="direct"),
                 lambda: read_lm_eval(runs, threshold=value),
                 lambda: read_log(ALPHA, scorer="partial", threshold=value),
                 lambda: passmix.read_counts(ALPHA, log_options={"scorer": "partial",
                                                                 "threshold": value})):
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(TypeError, match="threshold must be a finite number, got '0.5'"):
        read_inspect(ALPHA, scorer="partial", threshold="0.5", engine="direct")


@pytest.mark.unit
@pytest.mark.parametrize("samples, message", [
    ({"a": 1}, "samples is a dict, not a list"),
    ([1], r"sample 0: 1 is not a sample"),
    ([{"epoch": 1, "scores": {}}], "sample 0: id None is not a string or an integer"),
    ([{"id": 1, "scores": {}}], "sample 1 epoch None: epoch None is not a whole number"),
    ([{"id": 1, "epoch": 1.5, "scores": {}}], "epoch 1.5 is not a whole number"),
    ([{"id": 1, "epoch": 1, "scores": ["match"]}], "scores is a list, not a mapping"),
])
def test_inspect_direct_engine_malformed_logs_are_log_format_errors(tmp_path, samples,
                                                                     message):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"version": 2, "status": "success",
                                "eval": {"model": "m", "task": "t"}, "samples": samples}))
    with pytest.raises(LogFormatError, match=r"odd\.json'.*" + message):
        read_inspect(path, engine="direct")


@pytest.mark.unit
def test_inspect_direct_engine_malformed_eval_zips(tmp_path):
    header = {"eval": {"model": "m", "task": "t"}}
    cases = {"no_eval.eval": ({"version": 2}, {}, "no eval.model and eval.task in header.json"),
             "bad_model.eval": ({"eval": {"model": ["m"], "task": "t"}}, {},
                                r"eval.model \['m'\] is not a string"),
             "bad_sample.eval": (header, {"samples/1_epoch_1.json": "{not json"},
                                 "cannot read samples/1_epoch_1.json"),
             "list_sample.eval": (header, {"samples/1_epoch_1.json": "[1, 2]"},
                                  r"sample 0: \[1, 2\] is not a sample")}
    for name, (head, members, message) in cases.items():
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("header.json", json.dumps(head))
            for member, text in members.items():
                zf.writestr(member, text)
        with pytest.raises(LogFormatError, match=rf"'[^']*{name}'.*{message}"):
            read_inspect(path, engine="direct")


@pytest.mark.unit
def test_missing_paths_are_file_not_found(tmp_path):
    for name in ("nope.eval", "nope.json", "nope"):
        path = tmp_path / name
        for call in (lambda: read_log(path), lambda: read_log(path, "inspect"),
                     lambda: read_tau(path), lambda: read_lm_eval(path),
                     lambda: read_evalplus(path), lambda: read_inspect(path)):
            with pytest.raises(FileNotFoundError, match=f"no such file: '{path}'"):
                call()


@pytest.mark.unit
def test_evalplus_unhashable_status_is_named(tmp_path):
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps({"date": "d", "hash": "h", "eval": {"HumanEval/0": [
        {"base_status": ["pass"], "plus_status": "pass"}]}}))
    with pytest.raises(LogFormatError, match=r"task 'HumanEval/0': unknown status \['pass'\]"):
        read_evalplus(path)
    # named like EvalPlus's file, a broken one is EvalPlus's error, not a table's
    path.write_text(json.dumps({"date": "d", "eval": {}}))
    assert detect_log_format(path) == "evalplus"
    with pytest.raises(LogFormatError, match="not an EvalPlus eval_results.json"):
        passmix.read_counts(path)


# -- detection, options, packaging ---------------------------------------------------------

@pytest.mark.unit
def test_detection_leaves_tables_alone(tmp_path):
    plain = tmp_path / "plain.json"
    pd.DataFrame({"task": [0, 1], "successes": [1, 2], "trials": [3, 3]}).to_json(
        plain, orient="records")
    assert detect_log_format(plain) is None
    assert passmix.read_counts(plain).successes.tolist() == [1, 2]
    assert detect_log_format(ROOT / "src/passmix/example_data/taubench_airline.csv") is None
    with pytest.raises(LogFormatError, match="not a log passmix can tell"):
        read_log(plain)
    with pytest.raises(ValueError, match="unknown log format"):
        read_log(ALPHA, "promptfoo")
    with pytest.raises(TypeError, match="not metric"):
        read_log(ALPHA, metric="acc")
    with pytest.raises(ValueError, match="not a harness log"):
        passmix.read_counts(plain, log_options={"scorer": "match"})
    copied = tmp_path / "logs"
    shutil.copytree(LOGS / "inspect", copied)
    assert detect_log_format(copied) == "inspect"


@pytest.mark.unit
def test_readers_are_an_optional_extra():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(meta["dependencies"])
    assert "inspect" not in core and "zstandard" not in core
    assert any(dep.startswith("inspect_ai") for dep in meta["optional-dependencies"]["inspect"])
    # importing passmix does not import the readers' optional packages
    import subprocess

    code = ("import sys, passmix; passmix.read_counts; "
            "print('inspect_ai' in sys.modules, 'zstandard' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.unit
def test_readers_are_an_attribute_of_passmix_loaded_on_first_use():
    import subprocess

    code = ("import sys, passmix\n"
            "before = 'passmix.data.readers' in sys.modules\n"
            f"table = passmix.readers.read_log({str(LOGS / 'tau' / 'gpt-4o-airline.json')!r})\n"
            "print(before, len(table), 'readers' in dir(passmix))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "24", "True"]


@pytest.mark.unit
def test_zstd_log_without_zstandard_says_what_to_install():
    import subprocess

    code = ("import sys; sys.modules['zstandard'] = None\n"
            "from passmix.data.readers import read_inspect\n"
            f"try:\n    read_inspect({str(ALPHA)!r}, scorer='match', engine='direct')\n"
            "except Exception as err:\n    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "LogFormatError" in out and "pip install zstandard" in out


@pytest.mark.unit
def test_a_folder_without_logs_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(ValueError, match="is a folder"):
        passmix.read_counts(tmp_path)


@pytest.mark.unit
def test_inspect_ai_engine_errors_are_log_format_errors(tmp_path):
    pytest.importorskip("inspect_ai")
    foreign = tmp_path / "z.json"
    foreign.write_text(json.dumps({"rows": [1, 2]}))
    with pytest.raises(LogFormatError, match="inspect_ai cannot read"):
        read_inspect(foreign, engine="inspect")


@pytest.mark.unit
def test_evalplus_log_made_by_evalplus_matches_its_own_pass_at_1():
    # made by make_evalplus_log.py with EvalPlus 0.3.1 on a local three-problem dataset;
    # EvalPlus printed its pass@1 (base tests; base + extra tests) into evalplus_stdout.txt
    folder = LOGS / "evalplus_real"
    path = folder / "samples_eval_results.json"
    printed = [float(line.split()[1]) for line in
               (folder / "evalplus_stdout.txt").read_text().splitlines()
               if line.startswith("pass@1")]
    assert detect_log_format(path) == "evalplus"
    for status, truth in zip(("base", "plus"), printed):
        table = read_evalplus(path, status=status)
        assert set(table["model"]) == {"samples"} and len(table) == 15
        per_task = table.groupby("task")["outcome"].mean()
        assert per_task.mean() == pytest.approx(truth, abs=5e-4)
    counts = passmix.read_counts(path, log_options={"status": "base"})
    assert counts.trials.tolist() == [5, 5, 5]
