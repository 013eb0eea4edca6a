"""tau-bench and tau2-bench results: one task is a ``task_id``, one attempt a ``trial``;
success is a reward of 1.

Fields relied on:

* tau-bench (tau_bench/run.py, ``EnvRunResult``): a JSON list of
  ``{"task_id", "reward", "info", "traj", "trial"}``; the file name
  (``<strategy>-<model>-<temperature>_range_...json``, or the
  historical ``<model>-<domain>.json``) is the group.
* tau2-bench (src/tau2/data_model/simulation.py, ``Results``): a document with
  ``info`` (``agent_info.llm``, ``environment_info.domain_name``) and
  ``simulations``, each with ``task_id``, ``trial`` and ``reward_info.reward``.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import pandas as pd

from ._common import LogFormatError, attempt_table, check_threshold, files_in, load_json

__all__ = ["GROUP_COLUMNS", "read_tau"]

GROUP_COLUMNS = ("model", "domain")


def is_tau(doc) -> bool:
    """Whether a parsed JSON document is a tau-bench results list or a tau2-bench document.

    A list is tau-bench's when any entry has ``task_id`` and ``trial`` with
    ``reward`` or ``traj``: an entry lacking a field is then an error naming
    it (:func:`read_tau`), not a reason to read the file as a plain table.
    A document is tau2-bench's when its ``simulations`` is a list and it has
    ``info`` or a simulation has a ``task_id``.
    """
    if isinstance(doc, list):
        return any(isinstance(e, dict) and {"task_id", "trial"} <= e.keys()
                   and ("reward" in e or "traj" in e) for e in doc)
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    return isinstance(sims, list) and (
        "info" in doc or any(isinstance(s, dict) and "task_id" in s for s in sims))


def read_tau(source: str | Path, *, threshold: float = 1.0) -> pd.DataFrame:
    """Read tau-bench / tau2-bench results into one row per trial.

    Parameters
    ----------
    source : str or path
        A results JSON, or a folder of them.
    threshold : float, default 1
        Success is ``reward >= threshold`` (tau-bench's rewards are 0 or 1);
        a finite number.

    Returns
    -------
    pandas.DataFrame
        Columns model, domain, task, attempt, outcome. A trial that ended
        without a reward (max steps, an error) has reward 0 and counts as a
        failure; ``attrs["notes"]`` says how many.

    Raises
    ------
    LogFormatError
        For an entry without ``task_id``, ``trial`` or ``reward`` (tau-bench)
        or a reward that is not a number, naming the file, the entry and
        the value.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from passmix.data.readers import read_tau
    >>> sims = [{"task_id": "7", "trial": t, "reward_info": {"reward": float(t > 0)}}
    ...         for t in range(3)]
    >>> doc = {"info": {"agent_info": {"llm": "gpt-4.1"},
    ...                 "environment_info": {"domain_name": "retail"}}, "simulations": sims}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"          # tau2-bench
    >>> _ = path.write_text(json.dumps(doc))
    >>> read_tau(path)[["model", "domain", "task", "attempt", "outcome"]].values.tolist()[-1]
    ['gpt-4.1', 'retail', '7', 2, 1]
    """
    threshold = check_threshold(threshold, optional=False)
    path = Path(source)
    files = files_in(path, ("*.json",))
    rows, notes = [], []
    for file in files:
        doc = load_json(file)
        if not is_tau(doc):
            raise LogFormatError(f"'{file}' is not a tau-bench results list (entries with "
                                 "task_id, reward, trial) or a tau2-bench results document "
                                 "(info and simulations).")
        if isinstance(doc, list):
            model, domain = _from_name(file)
            entries = _tau_entries(doc, file)
        else:
            info = doc.get("info") or {}
            model = ((info.get("agent_info") or {}).get("llm")) or file.stem
            domain = ((info.get("environment_info") or {}).get("domain_name")) or ""
            entries = _tau2_entries(doc["simulations"], file)
        no_reward = 0
        for task_id, trial, reward, flagged in entries:
            if reward is None:  # null or NaN: the run ended without one
                reward, flagged = 0.0, True
            no_reward += bool(flagged)
            rows.append((model, domain, task_id, trial, int(reward >= threshold)))
        if no_reward:
            notes.append(f"{file.name}: {no_reward} trial(s) ended in an error or without a "
                         "reward (e.g. at the step limit), counted as failures")
    return attempt_table(rows, GROUP_COLUMNS, "tau", files, notes)


def _where(entry, file: Path, name: str, expected: str) -> str:
    """Where an entry is, for error messages; an entry that is not a dict is an error."""
    if not isinstance(entry, dict):
        raise LogFormatError(f"'{file.name}', {name}: {_short(entry)} is not {expected}.")
    return (f"'{file.name}', {name} (task_id {entry.get('task_id')!r}, trial "
            f"{entry.get('trial')!r})")


def _tau_entries(doc: list, file: Path) -> list[tuple]:
    """tau-bench's entries as (task_id, trial, reward or None, flagged), each checked."""
    out = []
    for i, e in enumerate(doc):
        where = _where(e, file, f"entry {i}", "a result (a dict with task_id, reward, trial)")
        missing = [key for key in ("task_id", "trial", "reward") if key not in e]
        if missing:
            raise LogFormatError(f"{where} has no {' or '.join(missing)}; tau-bench writes "
                                 "task_id, reward and trial in every entry.")
        info = e.get("info")
        # an error, or no reward_info (the agent hit the step limit): reward 0
        flagged = not isinstance(info, dict) or "error" in info or (
            "reward_info" in info and info["reward_info"] is None)
        out.append((_task_id(e["task_id"], where), _trial(e["trial"], where),
                    _reward(e["reward"], where), flagged))
    return out


def _tau2_entries(simulations: list, file: Path) -> list[tuple]:
    """tau2-bench's simulations as (task_id, trial, reward or None, flagged), each checked."""
    out = []
    for i, sim in enumerate(simulations):
        where = _where(sim, file, f"simulation {i}",
                       "a simulation run (a dict with task_id, trial, reward_info)")
        if "task_id" not in sim:
            raise LogFormatError(f"{where} has no task_id.")
        if sim.get("trial") is None:
            raise LogFormatError(f"{where} has no trial number.")
        reward_info = sim.get("reward_info")
        if reward_info is not None and not isinstance(reward_info, dict):
            raise LogFormatError(f"{where}: reward_info {_short(reward_info)} is not a dict "
                                 "with a reward.")
        reward = _reward((reward_info or {}).get("reward"), where)
        out.append((_task_id(sim["task_id"], where), _trial(sim["trial"], where), reward,
                    reward is None))
    return out


def _task_id(value, where: str):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise LogFormatError(f"{where}: task_id {_short(value)} is not a string or an "
                             "integer.")
    return value


def _trial(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or not float(value).is_integer():
        raise LogFormatError(f"{where}: trial {_short(value)} is not a whole number.")
    return int(value)


def _reward(value, where: str) -> float | None:
    """A reward as a float; None for a run that ended without one (null or NaN)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise LogFormatError(f"{where}: reward {_short(value)} is not a number.")
    reward = float(value)
    if math.isnan(reward):
        return None
    if math.isinf(reward):
        raise LogFormatError(f"{where}: reward {value!r} is not finite.")
    return reward


def _short(value) -> str:
    """`value` for an error message, cut short (an entry may hold a whole trajectory)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _from_name(file: Path) -> tuple[str, str]:
    """Model and domain from a tau-bench file name, as far as it tells."""
    stem = file.stem
    for domain in ("airline", "retail"):
        if stem.endswith("-" + domain):  # historical_trajectories/<model>-<domain>.json
            return stem[: -len(domain) - 1], domain
    return stem, ""
