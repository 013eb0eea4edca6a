"""lm-evaluation-harness ``samples_<task>_<date>.jsonl`` (written with ``--log_samples``).

One task is a ``doc_id``. Per-repeat correctness survives in these files
only in two cases, both read here:

* a metric whose value is a list with one 0/1 score per repeat, or the
  ``scores_per_repeat`` field of newer versions (``{metric: [score, ...]}``);
* one response per document (``repeats: 1``): each file is then one attempt
  per document, and several files of the same task (runs with different
  seeds, in one folder) are several attempts.

Otherwise the task's filter reduced the repeats to one response before the
metric saw them (``take_first`` is the default, also ``majority_vote``), so
the per-repeat outcomes are gone; the reader refuses, naming the filter.

Fields relied on (lm_eval/evaluator.py, the logged ``example``): ``doc_id``,
``resps`` (per request, a list of the repeats' responses), ``filter``,
``metrics`` (names) and each metric's value at the top level. ``filter`` and
``metrics`` are logged since v0.4.7 (in every sample); a file from an earlier
version, whose samples name no filter, is read as filter ``'none'`` with a
warning, unless a doc_id repeats in it (several filters' samples, which
cannot be told apart: an error). The model is
not in the samples file: it is ``model_name`` of a ``results_*.json`` beside
it, else the name of the folder (lm-eval writes into
``<output>/<model_name_sanitized>/``).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd

from ._common import LogFormatError, attempt_table, check_threshold, files_in, to_outcome

__all__ = ["GROUP_COLUMNS", "read_lm_eval"]

GROUP_COLUMNS = ("model", "eval_task", "filter")
_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T.*)\.jsonl$")


def _lines(path: Path) -> list[tuple[int, dict]]:
    """The samples of a file with their line numbers, each checked to be a dict with a doc_id."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise LogFormatError(f"'{path.name}', line {i}: not JSON ({err.msg}).") from None
            if not isinstance(rec, dict) or "doc_id" not in rec:
                raise LogFormatError(f"'{path.name}', line {i}: not an lm-eval sample "
                                     "(no doc_id).")
            doc_id = rec["doc_id"]
            if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
                raise LogFormatError(f"'{path.name}', line {i}: doc_id {doc_id!r} is not an "
                                     "integer or a string.")
            out.append((i, rec))
    if not out:
        raise LogFormatError(f"'{path}' has no samples.")
    return out


def _filters(path: Path, records: list[tuple[int, dict]]) -> list[str]:
    """Each sample's filter; a sample without one is an error unless none has one.

    lm-eval logs ``filter`` in every sample since v0.4.7. Before, no sample
    has it: such a file is read as filter ``'none'`` with a warning, unless a
    doc_id repeats in it (a task with several filters, whose samples cannot
    be told apart). A file where only some samples name their filter was not
    written by lm-eval as it is.
    """
    lacking = [(line, rec) for line, rec in records if "filter" not in rec]
    if lacking and len(lacking) < len(records):
        line, rec = lacking[0]
        raise LogFormatError(
            f"'{path.name}', line {line} (doc_id {rec['doc_id']!r}): the sample has no "
            f"filter, though other samples of the file name theirs ({len(lacking)} of "
            f"{len(records)} lack it); lm-eval writes filter in every sample.")
    if lacking:
        seen: dict = {}
        for line, rec in records:
            if rec["doc_id"] in seen:
                raise LogFormatError(
                    f"'{path.name}', lines {seen[rec['doc_id']]} and {line}: doc_id "
                    f"{rec['doc_id']!r} appears twice and no sample names its filter (lm-eval "
                    "before v0.4.7 did not log it), so the samples of different filters "
                    "cannot be told apart.")
            seen[rec["doc_id"]] = line
        warnings.warn(f"'{path.name}': its {len(records)} sample(s) have no filter field "
                      "(lm-eval before v0.4.7 did not log it); read as filter 'none'.",
                      UserWarning, stacklevel=3)
        return ["none"] * len(records)
    out = []
    for line, rec in records:
        if not isinstance(rec["filter"], str):
            raise LogFormatError(f"'{path.name}', line {line} (doc_id {rec['doc_id']!r}): "
                                 f"filter {rec['filter']!r} is not a string.")
        out.append(rec["filter"])
    return out


def is_lm_eval(path: Path) -> bool:
    if path.suffix.lower() != ".jsonl":
        return False
    if _NAME.match(path.name):
        return True
    with open(path, encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    return '"doc_id"' in first and ('"resps"' in first or '"filtered_resps"' in first)


def _model_of(path: Path) -> str:
    for results in sorted(path.parent.glob("results_*.json")):
        try:
            name = json.loads(results.read_text(encoding="utf-8")).get("model_name")
        except (OSError, ValueError):
            continue
        if name:
            return str(name)
    return path.parent.name


def _n_repeats(rec: dict) -> int:
    resps = rec.get("resps") or []
    return max((len(r) if isinstance(r, list) else 1 for r in resps), default=1)


def read_lm_eval(source: str | Path, *, metric: str | None = None,
                 threshold: float | None = None) -> pd.DataFrame:
    """Read lm-evaluation-harness samples files into one row per recoverable attempt.

    Parameters
    ----------
    source : str or path
        A ``samples_<task>_<date>.jsonl``, or a folder of them (searched
        recursively; files of the same model, task and filter are runs, and
        each adds one attempt per document when a document has one
        response).
    metric : str, optional
        The metric whose value is the outcome; needed when a sample has
        several.
    threshold : float, optional
        Scores other than 0/1 count as successes when ``>= threshold`` (a
        finite number).

    Returns
    -------
    pandas.DataFrame
        Columns model, eval_task, filter, task (the doc_id), attempt,
        outcome.

    Raises
    ------
    LogFormatError
        For a line that is not a sample, a sample without a filter where
        others of its file have one, a document with two samples of one
        filter in a file, a missing metric value or a score that is not a
        success or a failure; the message names the file and the line.

    Warns
    -----
    UserWarning
        For a file whose samples name no filter (lm-eval before v0.4.7),
        read as filter ``'none'``.

    Examples
    --------
    Two runs of a task with one response per document are two attempts each:

    >>> import json, tempfile, pathlib
    >>> from passmix.data.readers import read_lm_eval
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "my-model"
    >>> folder.mkdir()
    >>> for day, scores in (("01", [1, 0]), ("02", [1, 1])):
    ...     lines = [json.dumps({"doc_id": d, "resps": [["..."]], "filter": "none",
    ...                          "metrics": ["exact_match"], "exact_match": v})
    ...              for d, v in enumerate(scores)]
    ...     _ = (folder / f"samples_gsm8k_2026-01-{day}T00-00-00.jsonl").write_text(
    ...         "\\n".join(lines))
    >>> table = read_lm_eval(folder)
    >>> table.groupby("task")["outcome"].sum().tolist(), table["model"].iloc[0]
    ([2, 1], 'my-model')
    """
    threshold = check_threshold(threshold)
    path = Path(source)
    files = files_in(path, ("**/samples_*.jsonl",))
    rows = []
    runs: dict[tuple, int] = {}
    for file in files:
        records = _lines(file)
        filters = _filters(file, records)
        m = _NAME.match(file.name)
        task_name = m.group("task") if m else file.stem
        model = _model_of(file)
        in_file: dict[tuple, int] = {}
        for (line, rec), filt in zip(records, filters):
            where = f"'{file.name}', line {line}, doc {rec['doc_id']}, filter {filt!r}"
            if (rec["doc_id"], filt) in in_file:  # repeats are one sample; runs, one file each
                raise LogFormatError(f"{where}: the document already has a sample in line "
                                     f"{in_file[rec['doc_id'], filt]} of the file.")
            in_file[rec["doc_id"], filt] = line
            listed = rec.get("metrics")
            if listed is not None and not (isinstance(listed, list)
                                           and all(isinstance(n, str) for n in listed)):
                raise LogFormatError(f"{where}: metrics {listed!r} is not a list of names.")
            names = list(listed or [])
            if not names:  # before v0.4.7: the metric keys are not listed
                names = [k for k, v in rec.items() if k not in _KNOWN and
                         isinstance(v, (int, float, bool, list))]
            use = metric if metric is not None else (names[0] if len(names) == 1 else None)
            if use is None:
                raise LogFormatError(f"'{file.name}' has several metrics ({', '.join(names)}); "
                                     "pass metric= to pick one.")
            scores = rec.get("scores_per_repeat")
            if scores is not None and not isinstance(scores, dict):
                raise LogFormatError(f"{where}: scores_per_repeat {scores!r} is not a mapping "
                                     "of metric to scores.")
            per_repeat = (scores or {}).get(use)
            value = rec.get(use, per_repeat)
            if value is None:
                raise LogFormatError(f"{where}: no value for metric {use!r}.")
            if per_repeat is None and isinstance(value, list):
                per_repeat = value
            if per_repeat is not None and not isinstance(per_repeat, list):
                raise LogFormatError(f"{where}: scores_per_repeat[{use!r}] {per_repeat!r} is "
                                     "not a list of scores.")
            key = (model, task_name, filt, rec["doc_id"])
            first = runs.get(key, 0)
            if per_repeat is not None:
                for i, v in enumerate(per_repeat):
                    rows.append((model, task_name, filt, rec["doc_id"], first + i,
                                 to_outcome(v, threshold, where)))
                runs[key] = first + len(per_repeat)
                continue
            repeats = _n_repeats(rec)
            if repeats > 1:
                named = f"{filt!r}" + (" (lm-eval's default, take_first)" if filt == "none"
                                       else "")
                raise LogFormatError(
                    f"{where}: {repeats} repeats were generated but the filter {named} "
                    f"reduced them to one response before {use!r} scored it, so the "
                    "per-repeat outcomes are not in the log (lm-eval scores only the "
                    "filtered response). Use a filter that keeps every response and a "
                    "metric that scores each (or a version that logs scores_per_repeat), "
                    "or run the task repeatedly with repeats: 1 and read the folder.")
            runs[key] = first + 1
            rows.append((model, task_name, filt, rec["doc_id"], first,
                         to_outcome(value, threshold, where)))
    return attempt_table(rows, GROUP_COLUMNS, "lm-eval", files)


_KNOWN = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
          "metrics", "doc_hash", "prompt_hash", "target_hash", "scores_per_repeat"}
