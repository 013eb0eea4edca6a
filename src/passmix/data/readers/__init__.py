"""Readers of the logs evaluation harnesses write: inspect_ai, EvalPlus, tau-bench, lm-eval.

Each reader returns the long table that :func:`passmix.read_counts` and
:func:`passmix.read_trials` accept (group columns, ``task``, ``attempt``,
``outcome``), with ``attrs["summary"]`` saying how many attempts it read.
Those functions (and the command line) call them for a log file by
auto-detection or by ``log_format=`` (``--from``):

* ``"inspect"``: :func:`read_inspect` (``.eval`` / ``.json`` logs, or a folder);
* ``"evalplus"``: :func:`read_evalplus` (``eval_results.json``);
* ``"tau"``: :func:`read_tau` (tau-bench / tau2-bench results JSON);
* ``"lm-eval"``: :func:`read_lm_eval` (``samples_<task>_<date>.jsonl``).

No reader drops an attempt silently: an attempt it cannot score is an error
naming it, or (where asked) a failure said in ``attrs["notes"]``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ._common import ATTEMPT_COLUMNS, LogFormatError
from .evalplus import is_evalplus, read_evalplus
from .inspect_log import is_inspect_log, read_inspect
from .lm_eval import is_lm_eval, read_lm_eval
from .tau import is_tau, read_tau

__all__ = ["ATTEMPT_COLUMNS", "LOG_FORMATS", "LogFormatError", "detect_log_format", "read_evalplus",
           "read_inspect", "read_lm_eval", "read_log", "read_tau"]

#: Log formats and their readers.
LOG_FORMATS = {"inspect": read_inspect, "evalplus": read_evalplus, "tau": read_tau,
               "lm-eval": read_lm_eval}
# above this size a .json file is not parsed just to tell its format
_SNIFF_LIMIT = 200_000_000


def detect_log_format(source: Any) -> str | None:
    """The log format of a file or folder, or None for a plain table.

    ``.eval`` files and folders holding them are inspect logs; a
    ``samples_*.jsonl`` (or JSON lines with ``doc_id`` and ``resps``) is
    lm-eval's; a ``.json`` is inspect's (``eval.model``), EvalPlus's
    (``date``, ``hash``, ``eval``; or named ``*eval_results.json``) or tau's
    (a list of entries with ``task_id``, ``trial`` and ``reward`` or
    ``traj``; or ``info`` and ``simulations``), by its content. A file
    that looks like a log is the log's reader's to read, so that an entry
    it cannot read is an error naming it, never a table read otherwise.
    """
    if isinstance(source, pd.DataFrame):
        return None
    path = Path(source)
    if path.is_dir():
        if any(path.glob("*.eval")):
            return "inspect"
        if any(path.glob("**/samples_*.jsonl")):
            return "lm-eval"
        if any(path.glob("**/*eval_results.json")):
            return "evalplus"
        jsons = sorted(path.glob("*.json"))
        return detect_log_format(jsons[0]) if jsons else None
    if not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix == ".jsonl":
        return "lm-eval" if is_lm_eval(path) else None
    if suffix != ".json" or path.stat().st_size > _SNIFF_LIMIT:
        return None
    if is_inspect_log(path):
        return "inspect"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "model" in doc["eval"]:
        return "inspect"
    if is_evalplus(doc):
        return "evalplus"
    if is_tau(doc):
        return "tau"
    if path.name.endswith("eval_results.json"):  # EvalPlus's name: its reader says what is amiss
        return "evalplus"
    return None


def read_log(source: Any, log_format: str = "auto", **options: Any) -> pd.DataFrame:
    """Read a harness log (file or folder) into one row per attempt.

    Parameters
    ----------
    source : str or path
    log_format : {"auto", "inspect", "evalplus", "tau", "lm-eval"}, default "auto"
    **options
        Passed to the reader: ``scorer``, ``threshold``, ``errors``,
        ``engine`` (inspect); ``status`` (evalplus); ``threshold`` (tau);
        ``metric``, ``threshold`` (lm-eval).

    Returns
    -------
    pandas.DataFrame
        Group columns, task, attempt, outcome.

    Raises
    ------
    FileNotFoundError
        If `source` does not exist.
    LogFormatError
        If the format cannot be told, or the log cannot be read as one.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from passmix.data.readers import read_log
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gpt-4o-airline.json"   # tau-bench
    >>> _ = path.write_text(json.dumps([{"task_id": t, "trial": r, "reward": float(t == r),
    ...                                  "info": {}, "traj": []}
    ...                                 for t in range(2) for r in range(3)]))
    >>> table = read_log(path)
    >>> table.attrs["format"], table["outcome"].sum(), table["model"].iloc[0]
    ('tau', np.int64(2), 'gpt-4o')
    """
    if not isinstance(source, pd.DataFrame) and not Path(source).exists():
        raise FileNotFoundError(f"no such file: '{source}'.")
    fmt = detect_log_format(source) if log_format == "auto" else log_format
    if fmt is None:
        raise LogFormatError(f"'{source}' is not a log passmix can tell (inspect .eval/.json, "
                             "EvalPlus eval_results.json, tau-bench results, lm-eval "
                             "samples_*.jsonl); pass log_format=.")
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of "
                         f"{', '.join(LOG_FORMATS)}.")
    reader = LOG_FORMATS[fmt]
    import inspect as _inspect

    allowed = set(_inspect.signature(reader).parameters) - {"source"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"the {fmt} reader takes {', '.join(sorted(allowed)) or 'no options'}; "
                        f"not {', '.join(unknown)}.")
    return reader(source, **options)
