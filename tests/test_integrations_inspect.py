"""passmix inside inspect_ai evals: real evals, offline (``mockllm/model`` and a scripted solver).

Independent truth: the per-epoch scores inspect records in the log, counted
per sample here and fitted by :func:`passmix.fit`; the log's metric entries
must equal that fit (1e-6).
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("inspect_ai")

import anyio  # noqa: E402  (inspect_ai's own dependency)
from inspect_ai import Task, eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput  # noqa: E402
from inspect_ai.scorer import (  # noqa: E402
    CORRECT, INCORRECT, Score, Target, accuracy, mean, metric, scorer)
from inspect_ai.solver import Generate, TaskState, solver  # noqa: E402

import passmix  # noqa: E402
from passmix.integrations.inspect_ai import (  # noqa: E402
    auc_at_k, counts, epochs, pass_at_k, pass_hat_k, sample_counts)

#: each sample's chance of success per epoch: a spread of easy and hard tasks
RATES = [0.0, 0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 0.3, 0.1, 0.6]

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "inspect.md"

#: set by `watch` once inspect's live metrics have seen samples with unequal epoch counts
LIVE = {"unequal": False}


@solver
def scripted(fail: dict | None = None):
    """Answers right with the sample's rate, seeded by sample and epoch; raises on the
    epochs `fail` names for a sample."""
    fail = fail or {}

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sid, epoch = int(state.sample_id), state.epoch
        if epoch in fail.get(sid, ()):
            raise RuntimeError(f"scripted failure of sample {sid} at epoch {epoch}")
        right = random.Random(f"{sid}:{epoch}").random() < RATES[sid - 1]
        state.output = ModelOutput.from_content(model="mockllm/model",
                                                content=state.target.text if right else "no")
        return state

    return solve


@solver
def staggered():
    """As `scripted`, but the epochs finish one a second, and sample 1's first
    epoch only once inspect's live metrics have seen the others ahead of it (`watch`):
    so a live update runs on unfinished counts, whatever inspect's update interval."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sid, epoch = int(state.sample_id), state.epoch
        wait = 300.0 if (sid, epoch) == (1, 1) else 1.0 * ((sid - 1) * 6 + epoch - 1)
        due = time.monotonic() + wait
        while not LIVE["unequal"] and time.monotonic() < due:
            await anyio.sleep(0.05)
        right = random.Random(f"{sid}:{epoch}").random() < RATES[sid - 1]
        state.output = ModelOutput.from_content(model="mockllm/model",
                                                content=state.target.text if right else "no")
        return state

    return solve


@metric
def watch():
    """Notes a metric update whose passmix counts have unequal trials (an unfinished eval's)."""
    def compute(scores) -> float:
        found = sample_counts(scores)
        if found is not None and np.unique(found[1]).size > 1:
            LIVE["unequal"] = True
        return 0.0

    return compute


@scorer(metrics=[accuracy()])
def letters():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=CORRECT if state.output.completion == target.text else INCORRECT)

    return score


@scorer(metrics=[accuracy()])
def booleans():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=state.output.completion == target.text)

    return score


@scorer(metrics=[mean()])
def partial():
    """Full credit when right, else half credit on a coin flip."""
    async def score(state: TaskState, target: Target) -> Score:
        if state.output.completion == target.text:
            return Score(value=1.0)
        return Score(value=random.Random(f"p{state.sample_id}:{state.epoch}").choice([0.0, 0.5]))

    return score


@scorer(metrics=[accuracy()])
def unscored():
    """Scores nothing: NaN, inspect's "unscored", on every epoch."""
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=float("nan"))

    return score


@scorer(metrics=[accuracy()])
def first_unscored():
    """As `letters`, but sample 1 is unscored (NaN) on every epoch."""
    async def score(state: TaskState, target: Target) -> Score:
        if int(state.sample_id) == 1:
            return Score(value=float("nan"))
        return Score(value=CORRECT if state.output.completion == target.text else INCORRECT)

    return score


@scorer(metrics=[mean()])
def doubled():
    """A score of 2 (a scorer bug, or another scale) when right, else 0."""
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=2 if state.output.completion == target.text else 0)

    return score


def dataset():
    return [Sample(id=j + 1, input=f"question {j + 1}", target=f"answer {j + 1}")
            for j in range(len(RATES))]


def run(tmp_path, scorers, metrics, spec, *, options=None, solve=None, **task_kwargs):
    """One offline eval; `options` go to inspect's eval(); returns the log and the warnings."""
    solve = solve or scripted(task_kwargs.pop("fail", None))
    task = Task(dataset=dataset(), solver=solve, scorer=scorers, metrics=metrics, epochs=spec,
                **task_kwargs)
    options = {"display": "none", "score_display": False, **(options or {})}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (log,) = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path), **options)
    return log, [str(w.message) for w in caught]


def logged_counts(log, scorer_name: str, threshold: float | None = None):
    """(successes, trials) per sample from the log's per-epoch scores (errored epochs
    have none, unscored ones NaN)."""
    y, m = {}, {}
    for sample in log.samples:
        if sample.error is not None or scorer_name not in (sample.scores or {}):
            continue
        value = sample.scores[scorer_name].value
        if isinstance(value, float) and math.isnan(value):
            continue
        if isinstance(value, str):
            win = value == CORRECT
        elif threshold is not None:
            win = float(value) >= threshold
        else:
            win = bool(value)
        y[sample.id] = y.get(sample.id, 0) + int(win)
        m[sample.id] = m.get(sample.id, 0) + 1
    ids = sorted(m)
    return np.array([y[i] for i in ids]), np.array([m[i] for i in ids])


def entries(log, scorer_name: str, reducer: str = "passmix/counts") -> dict[str, float]:
    for score in log.results.scores:
        if score.scorer == scorer_name and score.reducer == reducer:
            return {name: m.value for name, m in score.metrics.items()}
    raise AssertionError(f"no scores of {scorer_name} by {reducer}: "
                         f"{[(s.scorer, s.reducer) for s in log.results.scores]}")


def want(y, m, metric, k, level=0.95):
    fit = passmix.fit(passmix.Counts(y, m), seed=0)
    lower, upper = fit.interval(metric, k, level)
    return fit.metric(metric, k), lower, upper


class TestEval:
    def test_log_reports_the_fit_of_the_samples_counts(self, tmp_path):
        log, _ = run(tmp_path, letters(), [pass_at_k(1000), pass_hat_k(3), auc_at_k(50)],
                     epochs(6))
        assert log.status == "success"
        got = entries(log, "letters")
        y, m = logged_counts(log, "letters")
        assert m.tolist() == [6] * len(RATES)
        for metric, k, name in (("pass@k", 1000, "pass@1000"), ("pass^k", 3, "pass^3"),
                                ("auc@k", 50, "auc@50")):
            estimate, lower, upper = want(y, m, metric, k)
            assert got[name] == pytest.approx(estimate, abs=1e-6)
            assert got[f"{name}_lower"] == pytest.approx(lower, abs=1e-6)
            assert got[f"{name}_upper"] == pytest.approx(upper, abs=1e-6)
        # the reduced scores hold each sample's counts
        reduced = next(r for r in log.reductions if r.reducer == "passmix/counts")
        kept = sorted((s.sample_id, s.metadata["passmix_successes"]) for s in reduced.samples)
        assert [count for _, count in kept] == y.tolist()
        # Task(metrics=...) replaces the scorer's own (accuracy): inspect's rule, in the guide
        assert "accuracy" not in got

    def test_a_clean_eval_warns_nothing_while_metrics_update_live(self, tmp_path):
        """inspect recomputes metrics while the eval runs (score_display, the default), when
        the samples still running have fewer epochs: no warning may come of those counts."""
        LIVE["unequal"] = False
        # a fit before the eval, so the first live update is quick, and the next comes soon
        passmix.fit(passmix.Counts(np.array([1, 2]), np.array([3, 3])), seed=0)
        log, messages = run(tmp_path, letters(), [pass_at_k(100), watch()], epochs(6),
                            solve=staggered(),
                            options={"score_display": True, "max_samples": 100})
        assert log.status == "success"
        assert LIVE["unequal"], "no live metric update saw unfinished counts: the test is void"
        assert [text for text in messages if "passmix" in text] == []
        y, m = logged_counts(log, "letters")
        assert m.tolist() == [6] * len(RATES)
        estimate, lower, upper = want(y, m, "pass@k", 100)
        got = entries(log, "letters")
        assert got["pass@100"] == pytest.approx(estimate, abs=1e-6)
        assert got["pass@100_lower"] == pytest.approx(lower, abs=1e-6)

    def test_unscored_samples_log_no_nan(self, tmp_path):
        """A scorer unscored (NaN) on every epoch: no entries rather than NaN, and a warning
        that nothing could be fitted; one unscored sample: the fit uses the rest. The eval
        keeps only the log's header in memory (as eval_set does); the file is read back."""
        log, messages = run(tmp_path, [unscored(), first_unscored()], [pass_at_k(100)],
                            epochs(4), options={"log_header_only": True})
        assert log.status == "success"
        log = read_eval_log(log.location)  # what was written
        assert entries(log, "unscored") == {}  # not {"pass_at_k": nan}
        fitted = [text for text in messages if "nothing could be fitted" in text]
        assert len(fitted) == 1 and "'unscored'" in fitted[0]
        # the other scorer: sample 1 left out, once, at the end
        y, m = logged_counts(log, "first_unscored")
        assert m.size == len(RATES) - 1
        got = entries(log, "first_unscored")
        assert got["pass@100"] == pytest.approx(want(y, m, "pass@k", 100)[0], abs=1e-6)
        left_out = [text for text in messages if "no scored epoch" in text]
        assert len(left_out) == 1 and f"1 of {len(RATES)} samples" in left_out[0]

    def test_several_scorers_and_reducers(self, tmp_path):
        log, _ = run(tmp_path, [letters(), booleans()], [accuracy(), pass_at_k(100)],
                     epochs(4, "mean", "pass_at_2"))
        assert log.status == "success"
        for name in ("letters", "booleans"):
            got = entries(log, name)
            estimate, lower, upper = want(*logged_counts(log, name), "pass@k", 100)
            assert got["pass@100"] == pytest.approx(estimate, abs=1e-6)
            assert got["pass@100_upper"] == pytest.approx(upper, abs=1e-6)
            # the reduced value is the share of successes: accuracy as with "mean"
            assert got["accuracy"] == pytest.approx(entries(log, name, "mean")["accuracy"])
            # another reducer's scores carry no counts: nothing reported there
            assert set(entries(log, name, "pass_at_2")) == {"accuracy"}

    def test_partial_credit_with_a_threshold(self, tmp_path):
        log, _ = run(tmp_path, partial(), [pass_at_k(10, level=0.9)], epochs(5, threshold=0.5))
        assert log.status == "success"
        y, m = logged_counts(log, "partial", threshold=0.5)
        estimate, lower, upper = want(y, m, "pass@k", 10, level=0.9)
        got = entries(log, "partial")
        assert got["pass@10"] == pytest.approx(estimate, abs=1e-6)
        assert got["pass@10_lower"] == pytest.approx(lower, abs=1e-6)
        # half credit counts as a success at 0.5: more than the full-credit answers alone
        strict, _ = logged_counts(log, "partial", threshold=1.0)
        assert y.sum() > strict.sum()

    @pytest.mark.unit
    def test_partial_credit_without_a_threshold_is_an_error(self, tmp_path):
        log, _ = run(tmp_path, partial(), [pass_at_k(10)], epochs(5))
        assert log.status == "error" and "threshold" in log.error.message

    @pytest.mark.unit
    def test_a_score_out_of_range_is_an_error_that_says_so(self, tmp_path):
        log, _ = run(tmp_path, doubled(), [pass_at_k(10)], epochs(3))
        assert log.status == "error"
        assert "score 2 is out of range" in log.error.message
        assert "is partial credit" not in log.error.message

    def test_the_guides_example_logs_the_guides_entries(self, tmp_path):
        """docs/guides/inspect.md: its Task's metrics give exactly the entries its table lists."""
        text = GUIDE.read_text()
        listed = re.search(r"metrics=(\[.*?\])\)", text).group(1)
        metrics = eval(listed, {"accuracy": accuracy, "pass_at_k": pass_at_k,  # noqa: S307
                                "pass_hat_k": pass_hat_k, "auc_at_k": auc_at_k})
        rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
        promised = {name for row in rows for name in re.findall(r"`([^`]+)`", row)}
        assert len(promised) >= 10, rows
        log, _ = run(tmp_path, letters(), metrics, epochs(6))
        assert log.status == "success"
        assert set(entries(log, "letters")) == promised

    def test_errored_epochs_and_an_errored_sample(self, tmp_path):
        """Sample 3 errs on two epochs, sample 5 on all: the fit takes the rest, and says so."""
        log, messages = run(tmp_path, letters(), [pass_at_k(100)], epochs(6),
                            fail={3: (2, 5), 5: range(1, 7)}, fail_on_error=False)
        assert log.status == "success"
        y, m = logged_counts(log, "letters")
        assert m.size == len(RATES) - 1 and sorted(m.tolist())[0] == 4
        estimate, lower, upper = want(y, m, "pass@k", 100)
        got = entries(log, "letters")
        assert got["pass@100"] == pytest.approx(estimate, abs=1e-6)
        assert got["pass@100_lower"] == pytest.approx(lower, abs=1e-6)
        assert any("1 of 11 samples have fewer scored epochs" in text for text in messages)

    @pytest.mark.unit
    def test_a_failed_fit_logs_nothing_and_says_so_once(self, tmp_path, monkeypatch):
        import passmix.models.mixture.fit as mixture_fit

        def fail(*args, **kwargs):
            raise RuntimeError("the optimiser gave up")

        monkeypatch.setattr(mixture_fit, "fit", fail)
        log, messages = run(tmp_path, letters(), [accuracy(), pass_at_k(100)], epochs(3))
        assert log.status == "success"
        assert set(entries(log, "letters")) == {"accuracy"}  # no pass@100 entries, no NaN
        failed = [text for text in messages if "could not fit" in text]
        assert len(failed) == 1 and "pass@100" in failed[0]
        assert "the optimiser gave up" in failed[0]

    def test_deterministic(self, tmp_path):
        one, _ = run(tmp_path / "one", letters(), [pass_at_k(1000)], epochs(3))
        two, _ = run(tmp_path / "two", letters(), [pass_at_k(1000)], epochs(3))
        assert entries(one, "letters") == entries(two, "letters")

    def test_pooled_method(self, tmp_path):
        log, _ = run(tmp_path, letters(), [pass_at_k(100, method="pooled")], epochs(4))
        y, m = logged_counts(log, "letters")
        fit = passmix.fit_pooled(passmix.Panel(y[None], m[None]), seed=0).system(0)
        got = entries(log, "letters")
        assert got["pass@100"] == pytest.approx(fit.metric("pass@k", 100), abs=1e-6)
        assert got["pass@100_upper"] == pytest.approx(fit.interval("pass@k", 100)[1], abs=1e-6)

    @pytest.mark.slow
    def test_reducer_named_on_inspects_command_line(self, tmp_path):
        """The entry point makes ``passmix/counts`` known to ``inspect eval``."""
        task_file = tmp_path / "task.py"
        task_file.write_text(
            "from inspect_ai import Task, task\n"
            "from inspect_ai.dataset import Sample\n"
            "from inspect_ai.model import ModelOutput\n"
            "from inspect_ai.scorer import match\n"
            "from inspect_ai.solver import solver\n"
            "from passmix.integrations.inspect_ai import pass_at_k\n\n"
            "@solver\n"
            "def answer():\n"
            "    async def solve(state, generate):\n"
            "        right = (int(state.sample_id) + state.epoch) % 3 != 0\n"
            "        state.output = ModelOutput.from_content(\n"
            "            model='mockllm/model', content=state.target.text if right else 'x')\n"
            "        return state\n"
            "    return solve\n\n"
            "@task\n"
            "def demo():\n"
            "    return Task(dataset=[Sample(id=j, input='q', target='a') for j in range(1, 7)],\n"
            "                solver=answer(), scorer=match(), metrics=[pass_at_k(20)])\n")
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", task_file.name, "--model",
             "mockllm/model", "--epochs", "3", "--epochs-reducer", "passmix/counts",
             "--log-dir", str(tmp_path / "logs"), "--display", "none"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        (path,) = (tmp_path / "logs").glob("*.eval")
        log = read_eval_log(str(path))
        assert log.status == "success"
        assert log.eval.config.epochs_reducer == ["passmix/counts"]
        got = entries(log, "match")
        y, m = logged_counts(log, "match")
        assert got["pass@20"] == pytest.approx(want(y, m, "pass@k", 20)[0], abs=1e-6)


class TestPieces:
    @pytest.mark.unit
    def test_reducer_counts(self):
        reduce = counts()
        score = reduce([Score(value=v) for v in ("C", "I", "C", float("nan"), True)])
        assert score.metadata == {"passmix_successes": 3, "passmix_trials": 4}
        assert score.value == pytest.approx(0.75)
        with pytest.raises(ValueError, match="threshold"):
            reduce([Score(value=0.5)])
        assert counts(threshold=0.5)([Score(value=0.5), Score(value=0.2)]).metadata == {
            "passmix_successes": 1, "passmix_trials": 2}
        # no scored epoch: no warning from the reducer, which inspect also runs on unfinished
        # epochs (the warning comes when the task ends, about the final counts)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            empty = reduce([Score(value=float("nan"))])
        assert empty.metadata["passmix_trials"] == 0 and math.isnan(empty.value)

    @pytest.mark.unit
    def test_reducer_scores_out_of_range(self):
        reduce = counts()
        for value in (2, -1, 1.5, "2"):
            with pytest.raises(ValueError, match="out of range") as caught:
                reduce([Score(value=value)])
            assert "is partial credit" not in str(caught.value)
        with pytest.raises(ValueError, match="partial credit"):
            reduce([Score(value=0.25)])
        # another scale, with a threshold
        assert counts(threshold=7)([Score(value=9), Score(value=7), Score(value=2)]).metadata == {
            "passmix_successes": 2, "passmix_trials": 3}
        with pytest.raises(ValueError, match="infinite"):
            counts(threshold=7)([Score(value=float("inf"))])

    def test_metrics_take_scores_or_sample_scores(self):
        from inspect_ai.scorer import SampleScore

        reduce = counts()
        scores = [reduce([Score(value=v) for v in row])
                  for row in ("CIIIII", "CCCIIC", "IIIIII", "CCCCCC", "ICIIII")]
        bare = pass_at_k(30)(scores)
        wrapped = pass_at_k(30)([SampleScore(score=s, sample_id=n)
                                 for n, s in enumerate(scores)])
        assert bare == wrapped
        y, m = sample_counts(scores)
        assert y.tolist() == [1, 4, 0, 6, 1] and m.tolist() == [6] * 5
        assert bare["pass@30"] == pytest.approx(want(y, m, "pass@k", 30)[0], abs=1e-9)

    @pytest.mark.unit
    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="k must be >= 1"):
            pass_at_k(0)
        with pytest.raises(ValueError, match="unknown method"):
            pass_hat_k(3, method="bayes")
        with pytest.raises(ValueError, match="level"):
            auc_at_k(10, level=2.0)
        with pytest.raises(ValueError, match="one horizon"):
            pass_at_k([1, 10])
        with pytest.raises(ValueError, match="epochs"):
            epochs(0)
        with pytest.raises(ValueError, match="threshold"):
            counts(threshold=float("nan"))
