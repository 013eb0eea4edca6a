"""inspect_ai logs (``.eval`` zip files and ``.json``): one task is a sample id, one
attempt an epoch, and the group is the log's model and task.

With ``inspect_ai`` installed (``pip install inspect_ai``, passmix's ``[inspect]``
extra) the samples come from inspect's own ``read_eval_log_sample_summaries``; without it the
log is read directly: the ``.json`` document's ``eval`` and ``samples``, or
the ``.eval`` zip's ``header.json`` (or ``_journal/start.json``) and its
``samples/<id>_epoch_<n>.json`` entries. inspect writes those entries
zstd-compressed since 2025; Python before 3.14 cannot inflate them without
the ``zstandard`` package (which inspect_ai installs), and the reader says so.

Fields relied on: ``eval.model``, ``eval.task``; per sample ``id``,
``epoch``, ``scores`` (scorer name -> ``{"value": ...}``) and ``error``.
"""

from __future__ import annotations

import json
import math
import struct
import zipfile
import zlib
from pathlib import Path

import pandas as pd

from ._common import (LogFormatError, attempt_table, check_threshold, files_in, load_json,
                      to_outcome)
from ..._validation import shown

__all__ = ["GROUP_COLUMNS", "read_inspect"]

#: Group columns of the table: the log's model and its task.
GROUP_COLUMNS = ("model", "eval_task")
_ZSTD = 93


def _zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.compress_type != _ZSTD:
        return zf.read(info)
    try:
        return zf.read(info)  # Python >= 3.14, or zipfile patched by inspect_ai
    except NotImplementedError:
        pass
    try:
        import zstandard
    except ImportError:
        raise LogFormatError(
            f"'{zf.filename}' is zstd-compressed (inspect_ai writes .eval logs so since "
            "2025), which this Python cannot read on its own: pip install zstandard (or "
            "inspect_ai, passmix's [inspect] extra), or convert the log with `inspect log "
            "convert --to json`."
        ) from None
    fp = zf.fp
    fp.seek(info.header_offset)
    header = fp.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except zstandard.ZstdError as err:
        raise LogFormatError(f"'{zf.filename}': cannot inflate {info.filename} ({err}).") \
            from None


def _eval_zip(path: Path) -> tuple[dict, list]:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise LogFormatError(f"'{path}' is not an inspect .eval log (not a zip file).") \
            from None
    with zf:
        names = {i.filename: i for i in zf.infolist()}
        head_name = "header.json" if "header.json" in names else "_journal/start.json"
        if head_name not in names:
            raise LogFormatError(f"'{path}' is a zip file but not an inspect .eval log "
                                 "(no header.json or _journal/start.json).")
        header = _member_json(zf, names[head_name], path)
        samples = [_member_json(zf, info, path) for name, info in names.items()
                   if name.startswith("samples/") and name.endswith(".json")]
    return _checked_header(header, path, head_name), samples


def _member_json(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path):
    """A zip member parsed as JSON; a damaged member is an error naming it."""
    try:
        return json.loads(_zip_member(zf, info))
    except LogFormatError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        # JSON and UTF-8 errors are ValueErrors; a bad CRC, a BadZipFile; zstandard's, too
        detail = " ".join(str(err).split())[:200] or type(err).__name__
        raise LogFormatError(f"'{path}': cannot read {info.filename} ({detail}).") from None


def _checked_header(header, path: Path, where: str = "the log") -> dict:
    """The log's header, checked for what the reader uses: eval.model and eval.task."""
    ev = header.get("eval") if isinstance(header, dict) else None
    if not (isinstance(ev, dict) and "model" in ev and "task" in ev):
        raise LogFormatError(f"'{path}' is not an inspect log (no eval.model and eval.task in "
                             f"{where}).")
    for key in ("model", "task"):
        if not isinstance(ev[key], str):
            raise LogFormatError(f"'{path}': eval.{key} {ev[key]!r} is not a string.")
    return header


def _json_log(path: Path) -> tuple[dict, list]:
    doc = load_json(path)
    header = _checked_header(doc, path)
    samples = doc.get("samples")
    if samples is None:  # a log written without samples (or still running)
        return header, []
    if not isinstance(samples, list):
        raise LogFormatError(f"'{path}': samples is a {type(samples).__name__}, not a list "
                             "of samples.")
    return header, samples


def _checked_sample(sample, file: Path, pos: int) -> dict:
    """A sample with the fields the reader uses, or an error naming it and the bad field."""
    if not isinstance(sample, dict):
        raise LogFormatError(f"'{file.name}', sample {pos}: {repr(sample)[:60]} is not a "
                             "sample (a dict with id, epoch, scores).")
    where = f"'{file.name}', sample {sample.get('id')!r} epoch {sample.get('epoch')!r}"
    sid = sample.get("id")
    if isinstance(sid, bool) or not isinstance(sid, (str, int)):
        raise LogFormatError(f"'{file.name}', sample {pos}: id {sid!r} is not a string or an "
                             "integer.")
    epoch = sample.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)) \
            or not math.isfinite(epoch) or not float(epoch).is_integer():
        raise LogFormatError(f"{where}: epoch {epoch!r} is not a whole number.")
    scores = sample.get("scores")
    if scores is not None and not isinstance(scores, dict):
        raise LogFormatError(f"{where}: scores is a {type(scores).__name__}, not a mapping of "
                             "scorer name to score.")
    return sample


def _with_inspect(path: Path) -> tuple[dict, list[dict]] | None:
    """Header and sample summaries through inspect_ai's reader, or None without it."""
    try:
        from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
    except ImportError:
        return None
    try:
        header = read_eval_log(str(path), header_only=True)
        summaries = read_eval_log_sample_summaries(str(path))
    except Exception as err:  # inspect's own errors (zip, JSON, pydantic validation)
        detail = " ".join(str(err).split())[:300]
        raise LogFormatError(f"inspect_ai cannot read '{path}' as an inspect log: "
                             f"{type(err).__name__}: {detail}") from None
    samples = [{"id": s.id, "epoch": s.epoch, "error": s.error,
                "scores": {name: {"value": score.value}
                           for name, score in (s.scores or {}).items()}}
               for s in summaries]
    return {"eval": {"model": header.eval.model, "task": header.eval.task}}, samples


def is_inspect_log(path: Path) -> bool:
    """Whether `path` looks like an inspect log (by suffix, or a JSON with eval.model)."""
    if path.suffix.lower() == ".eval":
        return True
    if path.suffix.lower() != ".json":
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return b'"eval"' in head and (b'"version"' in head or b'"status"' in head)


def read_inspect(source: str | Path, *, scorer: str | None = None,
                 threshold: float | None = None, errors: str = "raise",
                 engine: str = "auto") -> pd.DataFrame:
    """Read inspect_ai logs into one row per attempt.

    Parameters
    ----------
    source : str or path
        A ``.eval`` or ``.json`` log, or a folder of them.
    scorer : str, optional
        Which scorer's value is the outcome; needed when a log has several.
    threshold : float, optional
        Numeric and partial scores count as successes when ``>= threshold``
        (a finite number); without it, any score other than C / I / 0 / 1
        (and yes / no, true / false) is an error.
    errors : {"raise", "fail"}, default "raise"
        A sample that errored or has no score for the scorer: an error
        naming it, or counted as a failure (and said in ``attrs["notes"]``).
        Attempts are never dropped.
    engine : {"auto", "inspect", "direct"}, default "auto"
        inspect_ai's own reader where installed (``"auto"``), always
        (``"inspect"``), or never (``"direct"``).

    Returns
    -------
    pandas.DataFrame
        Columns model, eval_task, task (the sample id), attempt (the
        epoch), outcome (0/1); ``attrs["summary"]`` says how many attempts
        were read.

    Raises
    ------
    LogFormatError
        For a file that is not an inspect log, or one whose structure is
        not an inspect log's (``samples`` not a list, a sample without an
        id or a whole epoch, ``scores`` not a mapping), naming the file (and
        the sample), whichever the engine.

    Examples
    --------
    A JSON log with the fields the reader uses (inspect writes many more):

    >>> import json, tempfile, pathlib
    >>> from passmix.data.readers import read_inspect
    >>> log = {"version": 2, "status": "success",
    ...        "eval": {"model": "openai/gpt-4o", "task": "gsm8k"},
    ...        "samples": [{"id": i, "epoch": e, "scores": {"match": {"value": v}}}
    ...                    for i, e, v in [(1, 1, "C"), (1, 2, "I"), (2, 1, "C"), (2, 2, "C")]]}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> _ = path.write_text(json.dumps(log))
    >>> table = read_inspect(path, engine="direct")
    >>> table["outcome"].tolist(), table.attrs["summary"]
    ([1, 0, 1, 1], 'read 4 attempts on 2 tasks from 1 inspect file(s)')
    """
    if errors not in ("raise", "fail"):
        raise ValueError(f"errors must be 'raise' or 'fail', got {shown(errors)}.")
    if engine not in ("auto", "inspect", "direct"):
        raise ValueError(f"engine must be 'auto', 'inspect' or 'direct', got {shown(engine)}.")
    threshold = check_threshold(threshold)
    path = Path(source)
    files = files_in(path, ("*.eval", "*.json"))
    rows: list[tuple] = []
    notes: list[str] = []
    for file in files:
        read = None
        if engine != "direct":
            read = _with_inspect(file)
            if read is None and engine == "inspect":
                raise ImportError("engine='inspect' needs inspect_ai: pip install inspect_ai "
                                  "(passmix's [inspect] extra).")
        if read is None:
            read = _eval_zip(file) if file.suffix.lower() == ".eval" else _json_log(file)
        header, samples = read
        samples = [_checked_sample(s, file, i) for i, s in enumerate(samples)]
        model, task = header["eval"]["model"], header["eval"]["task"]
        names = sorted({n for s in samples for n in (s.get("scores") or {})})
        if scorer is None and len(names) > 1:
            raise LogFormatError(f"'{file.name}' has scores from {len(names)} scorers "
                                 f"({', '.join(names)}); pass scorer= to pick one.")
        use = scorer if scorer is not None else (names[0] if names else None)
        if use is not None and names and use not in names:
            raise LogFormatError(f"'{file.name}' has no scorer {use!r}; its scorers are "
                                 f"{', '.join(names)}.")
        failed = 0
        for s in samples:
            where = f"'{file.name}', sample {s.get('id')!r} epoch {s.get('epoch')}"
            score = (s.get("scores") or {}).get(use) if use is not None else None
            if s.get("error") or score is None:
                if errors == "raise":
                    why = "errored" if s.get("error") else f"has no {use!r} score"
                    raise LogFormatError(f"{where} {why}; pass errors='fail' to count such "
                                         "samples as failures.")
                failed += 1
                outcome = 0
            else:
                outcome = to_outcome(score.get("value") if isinstance(score, dict) else score,
                                     threshold, where)
            rows.append((model, task, s["id"], int(s["epoch"]), outcome))
        if failed:
            notes.append(f"{file.name}: {failed} errored or unscored sample(s) counted as "
                         "failures")
    return attempt_table(rows, GROUP_COLUMNS, "inspect", files, notes)
