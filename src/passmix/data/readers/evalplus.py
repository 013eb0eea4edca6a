"""EvalPlus ``eval_results.json``: one task is a ``task_id``, one attempt a solution.

Fields relied on (evalplus/evaluate.py, v0.2.1 and later): ``eval`` maps each
task_id to a list with one entry per solution, each with ``base_status`` and
``plus_status`` (``"pass"``, ``"fail"``, ``"timeout"``; ``plus_status`` is
null for a base-only run, and covers the extra inputs only, so a solution
passes HumanEval+ when both statuses are ``"pass"``, as EvalPlus counts it). The earlier layout (v0.1.1-v0.2.0), ``eval`` ->
task_id -> ``{"nfiles", "base": [[status, details], ...], "plus": [...]}``
with statuses ``"success"``, ``"failed"``, ``"timed out"``, is read too.
The file names no model; the group is the folder of ``eval_results.json``,
or the prefix of ``<run>.eval_results.json`` / ``<run>_eval_results.json``,
and the dataset is the task_id's prefix (``HumanEval``, ``Mbpp``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._common import LogFormatError, attempt_table, files_in, load_json
from ..._validation import shown

__all__ = ["GROUP_COLUMNS", "read_evalplus"]

GROUP_COLUMNS = ("model", "dataset")
_PASS = {"pass", "success"}
_STATUSES = {"pass", "fail", "timeout", "success", "failed", "timed out"}


def _run_name(path: Path) -> str:
    name = path.name
    for tail in (".eval_results.json", "_eval_results.json"):
        if name.endswith(tail) and len(name) > len(tail):
            return name[: -len(tail)]
    return path.parent.name or path.stem


def is_evalplus(doc) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "hash" in doc \
        and "date" in doc


def read_evalplus(source: str | Path, *, status: str = "plus") -> pd.DataFrame:
    """Read EvalPlus ``eval_results.json`` files into one row per solution.

    Parameters
    ----------
    source : str or path
        An ``eval_results.json`` (or ``<run>.eval_results.json``), or a folder
        searched recursively for them.
    status : {"plus", "base"}, default "plus"
        Success on HumanEval+ / MBPP+ (``base_status`` and ``plus_status``
        both ``"pass"``: the original tests and EvalPlus's extra ones, as
        EvalPlus scores "base + extra tests"), or on the original tests
        alone (``base_status == "pass"``).

    Returns
    -------
    pandas.DataFrame
        Columns model, dataset, task, attempt, outcome.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from passmix.data.readers import read_evalplus
    >>> entry = lambda b, p: {"task_id": "HumanEval/0", "solution": "", "base_status": b,
    ...                       "plus_status": p, "base_fail_tests": [], "plus_fail_tests": []}
    >>> doc = {"date": "2026-01-01 00:00", "hash": "h",
    ...        "eval": {"HumanEval/0": [entry("pass", "pass"), entry("pass", "fail")]}}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "my-model.eval_results.json"
    >>> _ = path.write_text(json.dumps(doc))
    >>> read_evalplus(path)["outcome"].tolist(), read_evalplus(path, status="base")["outcome"].tolist()
    ([1, 0], [1, 1])
    """
    if status not in ("plus", "base"):
        raise ValueError(f"status must be 'plus' or 'base', got {shown(status)}.")
    path = Path(source)
    files = files_in(path, ("**/*eval_results.json",))
    rows = []
    for file in files:
        doc = load_json(file)
        if not is_evalplus(doc):
            raise LogFormatError(f"'{file}' is not an EvalPlus eval_results.json (expected "
                                 "keys date, hash and eval).")
        model = _run_name(file)
        for task_id, entries in doc["eval"].items():
            dataset = str(task_id).split("/")[0]
            for attempt, ok in enumerate(_statuses(entries, status, file, task_id)):
                rows.append((model, dataset, task_id, attempt, int(ok)))
    return attempt_table(rows, GROUP_COLUMNS, "evalplus", files)


def _statuses(entries, status: str, file: Path, task_id) -> list[bool]:
    where = f"'{file.name}', task {task_id!r}"
    if isinstance(entries, list):  # v0.2.1 and later: one dict per solution
        out = []
        for entry in entries:
            if not isinstance(entry, dict) or "base_status" not in entry or (
                    status == "plus" and "plus_status" not in entry):
                raise LogFormatError(f"{where}: an entry has no {status}_status.")
            base = _check(entry["base_status"], where)
            if status == "plus":
                if entry["plus_status"] is None:
                    raise LogFormatError(f"{where}: plus_status is null (a base-only run?); "
                                         "pass status='base'.")
                plus = _check(entry["plus_status"], where)
                out.append(base in _PASS and plus in _PASS)
            else:
                out.append(base in _PASS)
        return out
    if isinstance(entries, dict) and "base" in entries:  # v0.1.1 - v0.2.0
        base = [_check(r[0] if isinstance(r, (list, tuple)) else r, where)
                for r in entries.get("base") or []]
        if status == "base":
            return [b in _PASS for b in base]
        plus = [_check(r[0] if isinstance(r, (list, tuple)) else r, where)
                for r in entries.get("plus") or []]
        if not plus:
            raise LogFormatError(f"{where}: no plus results (a base-only run?); pass "
                                 "status='base'.")
        if len(plus) != len(base):
            raise LogFormatError(f"{where}: {len(base)} base and {len(plus)} plus results.")
        return [b in _PASS and p in _PASS for b, p in zip(base, plus)]
    raise LogFormatError(f"{where}: unknown entry layout {type(entries).__name__}.")


def _check(value, where: str) -> str:
    if not isinstance(value, str) or value not in _STATUSES:  # a list would not hash
        raise LogFormatError(f"{where}: unknown status {value!r}.")
    return value
