"""Make the lm-evaluation-harness fixtures with lm-eval itself, offline.

Run (needs ``pip install lm_eval``; no network, no model download):

    python tests/data/logs/lm_eval_real/make_lm_eval_logs.py

A task of 6 arithmetic questions (a local JSON dataset) is answered by a
scripted model (an ``lm_eval.api.model.LM`` subclass whose answers are
fixed), and lm-eval's own ``simple_evaluate`` and ``EvaluationTracker``
write the samples files:

* ``runs/``: the task with ``repeats: 1``, run three times with different
  scripted answers (three ``samples_*.jsonl`` and ``results_*.json``);
* ``collapsed/``: the same task with ``repeats: 4``, where lm-eval's default
  ``take_first`` filter keeps one response of four before scoring.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.loggers import EvaluationTracker  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

HERE = Path(__file__).resolve().parent
QUESTIONS = [(i, 2 * i + 1) for i in range(6)]  # "What is i + i + 1?"


class Scripted(LM):
    """Answers question i right when (i + 2 * call) % 3 != 0, counting calls per question."""

    def __init__(self, shift: int = 0):
        super().__init__()
        self.shift = shift
        self.calls: dict[str, int] = {}

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            prompt = req.args[0]
            i = int(prompt.split("What is ")[1].split(" ")[0])
            call = self.calls.get(prompt, 0)
            self.calls[prompt] = call + 1
            right = (i + 2 * call + self.shift) % 3 != 0
            out.append(f" {2 * i + 1 if right else 2 * i}")
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError


def task_yaml(name: str, data: Path, repeats: int) -> str:
    return "\n".join([
        f"task: {name}", "dataset_path: json",
        "dataset_kwargs:", "  data_files:", f"    test: {data}",
        "test_split: test", "output_type: generate_until",
        'doc_to_text: "Question: What is {{i}} + {{i}} + 1 ?\\nAnswer:"',
        'doc_to_target: "{{answer}}"',
        "generation_kwargs:", '  until: ["\\n"]', "  do_sample: false",
        f"repeats: {repeats}",
        "metric_list:", "  - metric: exact_match", "    aggregation: mean",
        "    higher_is_better: true", "    regexes_to_ignore: [\" \"]", ""])


def run(task: str, tasks_dir: Path, shift: int, out: Path) -> None:
    manager = TaskManager(include_path=str(tasks_dir))
    results = simple_evaluate(model=Scripted(shift), tasks=[task], task_manager=manager,
                              log_samples=True, random_seed=0, numpy_random_seed=0,
                              torch_random_seed=0, fewshot_random_seed=0)
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.model_name = "scripted/arith-model"
    tracker.general_config_tracker.model_name_sanitized = "scripted__arith-model"
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "arith.jsonl"
        data.write_text("".join(json.dumps({"i": i, "answer": str(a)}) + "\n"
                                for i, a in QUESTIONS))
        tasks = tmp / "tasks"
        tasks.mkdir()
        (tasks / "once.yaml").write_text(task_yaml("passmix_arith", data, 1))
        (tasks / "four.yaml").write_text(task_yaml("passmix_arith_rep4", data, 4))
        for folder in ("runs", "collapsed"):
            shutil.rmtree(HERE / folder, ignore_errors=True)
        for shift in range(3):
            run("passmix_arith", tasks, shift, HERE / "runs")
            time.sleep(1.1)  # lm-eval names files by the second
        run("passmix_arith_rep4", tasks, 0, HERE / "collapsed")
    for path in sorted(HERE.rglob("*.json*")):
        print("wrote", path.relative_to(HERE))


if __name__ == "__main__":
    main()
