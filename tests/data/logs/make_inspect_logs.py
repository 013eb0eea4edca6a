"""Make the inspect_ai log fixtures in this folder with inspect_ai itself, offline.

Run (needs ``pip install inspect_ai``; no network, no API key):

    python tests/data/logs/make_inspect_logs.py

A task of 10 arithmetic questions is run for 5 epochs against inspect's
mock model (``mockllm/...``) with scripted outputs, by two "models" (two
mock model names with different scripts), and scored by two scorers:
``match()`` (C / I) and a numeric partial-credit scorer (1 for the right
answer, 0.5 for the right answer with extra text, else 0). It writes
``inspect/alpha.eval`` and ``inspect/beta.eval`` (zip logs, one per model)
and ``inspect_json/alpha.json`` (the first run again, as a JSON log).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, match, mean, scorer
from inspect_ai.solver import TaskState, generate

HERE = Path(__file__).resolve().parent
N_SAMPLES, EPOCHS = 10, 5


@scorer(metrics=[mean()])
def partial():
    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion.strip()
        if text == target.text:
            return Score(value=1.0)
        return Score(value=0.5 if target.text in text else 0.0)

    return score


@task
def arithmetic():
    samples = [Sample(input=f"What is {i} + {i}? Answer with the number only.",
                      target=str(2 * i), id=f"q{i}") for i in range(N_SAMPLES)]
    return Task(dataset=samples, solver=generate(), scorer=[match(), partial()],
                epochs=EPOCHS)


def outputs(model: str, seed: int) -> list[ModelOutput]:
    """One scripted answer per (epoch, sample); samples are run in order, one at a time."""
    out = []
    for epoch in range(EPOCHS):
        for i in range(N_SAMPLES):
            # sample i is answered right in a share of epochs that grows with i
            right = (epoch * 7 + i * 3 + seed) % 10 < i
            text = str(2 * i) if right else ("about " + str(2 * i) if (epoch + i) % 3 == 0
                                               else str(2 * i + 1))
            output = ModelOutput.from_content(model=model, content=text)
            # set usage, or the mock model counts tokens with tiktoken (a download)
            output.usage = ModelUsage(input_tokens=12, output_tokens=2, total_tokens=14)
            out.append(output)
    return out


def main() -> None:
    for name, seed in (("mockllm/alpha", 0), ("mockllm/beta", 4)):
        for fmt in ("eval", "json") if seed == 0 else ("eval",):
            with tempfile.TemporaryDirectory() as tmp:
                model = get_model(name, custom_outputs=outputs(name, seed))
                log = eval(arithmetic(), model=model, log_dir=tmp, log_format=fmt,
                           max_samples=1, max_connections=1, display="none")[0]
                assert log.status == "success", log.error
                folder = HERE / ("inspect" if fmt == "eval" else "inspect_json")
                folder.mkdir(exist_ok=True)
                target = folder / f"{name.split('/')[1]}.{fmt}"
                shutil.copy(log.location, target)
                print("wrote", target)


if __name__ == "__main__":
    main()
