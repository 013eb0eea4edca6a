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
from pathlib import Path

import pandas as pd

from ._common import LogFormatError, attempt_table, files_in, load_json

__all__ = ["GROUP_COLUMNS", "read_tau"]

GROUP_COLUMNS = ("model", "domain")


def is_tau(doc) -> bool:
    if isinstance(doc, list):
        return bool(doc) and all(isinstance(e, dict) and {"task_id", "reward", "trial"} <= set(e)
                                 for e in doc[:5])
    return isinstance(doc, dict) and isinstance(doc.get("simulations"), list) and "info" in doc


def read_tau(source: str | Path, *, threshold: float = 1.0) -> pd.DataFrame:
    """Read tau-bench / tau2-bench results into one row per trial.

    Parameters
    ----------
    source : str or path
        A results JSON, or a folder of them.
    threshold : float, default 1
        Success is ``reward >= threshold`` (tau-bench's rewards are 0 or 1).

    Returns
    -------
    pandas.DataFrame
        Columns model, domain, task, attempt, outcome. A trial that ended
        without a reward (max steps, an error) has reward 0 and counts as a
        failure; ``attrs["notes"]`` says how many.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from passmix.readers import read_tau
    >>> sims = [{"task_id": "7", "trial": t, "reward_info": {"reward": float(t > 0)}}
    ...         for t in range(3)]
    >>> doc = {"info": {"agent_info": {"llm": "gpt-4.1"},
    ...                 "environment_info": {"domain_name": "retail"}}, "simulations": sims}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"          # tau2-bench
    >>> _ = path.write_text(json.dumps(doc))
    >>> read_tau(path)[["model", "domain", "task", "attempt", "outcome"]].values.tolist()[-1]
    ['gpt-4.1', 'retail', '7', 2, 1]
    """
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
            # an error, or no reward_info (the agent hit the step limit): reward 0
            entries = [(e["task_id"], e["trial"], e["reward"],
                        not isinstance(e.get("info"), dict) or "error" in e["info"]
                        or ("reward_info" in e["info"] and e["info"]["reward_info"] is None))
                       for e in doc]
        else:
            info = doc.get("info") or {}
            model = ((info.get("agent_info") or {}).get("llm")) or file.stem
            domain = ((info.get("environment_info") or {}).get("domain_name")) or ""
            entries = []
            for i, sim in enumerate(doc["simulations"]):
                reward = (sim.get("reward_info") or {}).get("reward")
                trial = sim.get("trial")
                if trial is None:
                    raise LogFormatError(f"'{file.name}': simulation {i} has no trial number.")
                entries.append((sim["task_id"], trial, 0.0 if reward is None else reward,
                                reward is None))
        no_reward = 0
        for task_id, trial, reward, flagged in entries:
            if reward is None or (isinstance(reward, float) and math.isnan(reward)):
                reward, flagged = 0.0, True
            no_reward += bool(flagged)
            rows.append((model, domain, task_id, int(trial), int(float(reward) >= threshold)))
        if no_reward:
            notes.append(f"{file.name}: {no_reward} trial(s) ended in an error or without a "
                         "reward (e.g. at the step limit), counted as failures")
    return attempt_table(rows, GROUP_COLUMNS, "tau", files, notes)


def _from_name(file: Path) -> tuple[str, str]:
    """Model and domain from a tau-bench file name, as far as it tells."""
    stem = file.stem
    for domain in ("airline", "retail"):
        if stem.endswith("-" + domain):  # historical_trajectories/<model>-<domain>.json
            return stem[: -len(domain) - 1], domain
    return stem, ""
