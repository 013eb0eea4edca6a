"""Make the EvalPlus fixture with EvalPlus itself, offline.

Run (needs ``pip install evalplus``; no network):

    python tests/data/logs/evalplus_real/make_evalplus_log.py

EvalPlus downloads HumanEval+ unless ``HUMANEVAL_OVERRIDE_PATH`` names a local
dataset file; this script writes a three-problem dataset in HumanEval+'s
format (prompt, contract, canonical_solution, base_input, plus_input, atol,
entry_point), five solutions per problem (right, wrong only on the extra
"plus" inputs, wrong, not Python), and runs ``evalplus.evaluate`` on them.
It keeps ``samples_eval_results.json`` (the log), ``samples.jsonl`` and the
pass@1 that EvalPlus printed (``evalplus_stdout.txt``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROBLEMS = [
    ("HumanEval/0", "add", "def add(a, b):\n    \"\"\"Add two integers.\"\"\"\n",
     "    return a + b\n", [[1, 2], [0, 0]], [[10**6, -3], [-5, -7]]),
    ("HumanEval/1", "clip", "def clip(x):\n    \"\"\"Clip x to [0, 10].\"\"\"\n",
     "    return min(max(x, 0), 10)\n", [[5], [12]], [[-4], [10], [0]]),
    ("HumanEval/2", "count_a", "def count_a(s):\n    \"\"\"Count the letter a in s.\"\"\"\n",
     "    return s.count('a')\n", [["banana"], ["xyz"]], [["AAa"], [""]]),
]
SOLUTIONS = {
    "HumanEval/0": ["    return a + b\n", "    return b + a\n",
                    "    return a + b if a < 1000 else 0\n", "    return a - b\n",
                    "    return a +\n"],
    "HumanEval/1": ["    return min(max(x, 0), 10)\n", "    return max(x, 0) if x < 11 else 10\n",
                    "    return x if 0 <= x else 0\n", "    return 10\n",
                    "    return sorted([0, x, 10])[1]\n"],
    "HumanEval/2": ["    return len([c for c in s if c == 'a'])\n", "    return s.lower().count('a')\n",
                    "    return s.count('a') + 0\n", "    return 0\n", "    return s.count(a)\n"],
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        dataset = tmp / "HumanEvalPlus-local.jsonl"
        with open(dataset, "w") as fh:
            for task_id, entry, prompt, solution, base, plus in PROBLEMS:
                fh.write(json.dumps({"task_id": task_id, "prompt": prompt, "entry_point": entry,
                                     "contract": "", "canonical_solution": solution,
                                     "base_input": base, "plus_input": plus, "atol": 0}) + "\n")
        samples = tmp / "samples.jsonl"
        with open(samples, "w") as fh:
            for task_id, entry, prompt, *_ in PROBLEMS:
                for body in SOLUTIONS[task_id]:
                    fh.write(json.dumps({"task_id": task_id, "solution": prompt + body}) + "\n")
        env = dict(os.environ, HUMANEVAL_OVERRIDE_PATH=str(dataset))
        run = subprocess.run([sys.executable, "-m", "evalplus.evaluate", "--dataset",
                              "humaneval", "--samples", str(samples), "--parallel", "2"],
                             check=True, env=env, cwd=tmp, capture_output=True, text=True)
        # EvalPlus prints its pass@1 (base, and base + extra tests); keep them as the truth
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith(("humaneval", "pass@"))]
        (HERE / "evalplus_stdout.txt").write_text("\n".join(lines) + "\n")
        shutil.copy(tmp / "samples_eval_results.json", HERE / "samples_eval_results.json")
        shutil.copy(samples, HERE / "samples.jsonl")
        print("wrote", HERE / "samples_eval_results.json")


if __name__ == "__main__":
    main()
