"""What every experiment protocol needs: seed streams, a result cache, an executor.

A protocol splits its work into *tasks* (picklable objects run by a
module-level function in a worker process) whose results are *units* (JSON
objects, one per cache file). This module provides

* :func:`group_id` and :func:`stream`: random streams derived from the seed,
  the group and a path of integers alone, never from the order in which work
  is scheduled, so results are the same with one process, several, or a Dask
  cluster;
* :class:`Cache`: one JSON file per unit under ``root/<settings>/<data>/``,
  written atomically as each task returns, so an interrupted run resumes;
* :func:`execute`: runs the tasks in this process, on local workers
  (joblib's loky backend) or on a Dask cluster, with a progress bar
  (:func:`execute_cached`: only those whose unit is not cached);
* :func:`positive_int`, :func:`seeds_iv`, :func:`jobs_iv`, :func:`grid_iv`,
  :func:`names_iv`, :func:`keyed_groups`, :func:`group_columns_iv`: the validation the protocols
  share, and :func:`settings_key`, their cache's key.

Warnings are captured per unit with :func:`passmix.tables.recorded_warnings`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import numbers
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_jobs as jobs_iv, shown
from ..data.counts import Counts
from ..estimators.registry import estimator_names, get_estimator

__all__ = ["Cache", "data_hash", "execute", "execute_cached", "grid_iv", "group_columns_iv",
           "group_id", "jobs_iv", "keyed_groups", "names_iv", "positive_int", "protocol_methods",
           "seeds_iv", "settings_key", "stream"]

_BASELINES = ("naive", "combinatorial")


def group_id(key: tuple) -> int:
    """Stable 32-bit id of a group key, used to derive the group's random streams.

    It is a CRC-32 of ``repr`` of the key's Python values, so it does not
    depend on which other groups are present or on their order.

    Examples
    --------
    >>> from passmix.experiments import group_id
    >>> group_id(("Pythia 12B",)) == group_id(("Pythia 12B",))
    True
    """
    plain = tuple(v.item() if isinstance(v, np.generic) else v for v in key)
    return zlib.crc32(repr(plain).encode("utf-8"))


def stream(seed: int, gid: int, *path: int) -> np.random.Generator:
    """The random stream of `seed`, group `gid` and a path of integers.

    Examples
    --------
    >>> from passmix.experiments._harness import stream
    >>> float(stream(0, 7, 1).random()) == float(stream(0, 7, 1).random())
    True
    """
    return np.random.default_rng([seed, gid, *path])


def protocol_methods(joint: bool = False) -> tuple[str, ...]:
    """The registered estimators in the protocol's order: the baselines first.

    Joint estimators (the pooled model, fitted on all groups at once) come
    last, and only with ``joint=True``.

    Examples
    --------
    >>> from passmix.experiments import protocol_methods
    >>> protocol_methods()[:3]
    ('naive', 'combinatorial', 'mixture')
    >>> "pooled" in protocol_methods(joint=True)
    True
    """
    names = [n for n in estimator_names()
             if not get_estimator(n).joint and get_estimator(n).in_all]
    ordered = [n for n in _BASELINES if n in names] + [n for n in names if n not in _BASELINES]
    if joint:
        ordered += [n for n in estimator_names() if get_estimator(n).joint]
    return tuple(ordered)


def positive_int(value: Any, name: str) -> int:
    """`value` as an int >= 1, or TypeError/ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number >= 1, got {shown(value)}.")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}.")
    return int(value)


def seeds_iv(seeds: Any) -> tuple[int, ...]:
    """A count of seeds (``0 .. n - 1``) or distinct non-negative seeds, as a tuple."""
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, (bool, np.bool_)):
        return tuple(range(positive_int(seeds, "seeds")))
    values = tuple(int(s) for s in seeds)
    if not values or any(s < 0 for s in values) or len(set(values)) != len(values):
        raise ValueError("seeds must be a count >= 1 or distinct integers >= 0, "
                         f"got {shown(seeds)}.")
    return values


def grid_iv(values: Any, name: str) -> tuple[int, ...]:
    """A number or a non-empty sequence of whole numbers >= 1, sorted without repeats.

    Examples
    --------
    >>> from passmix.experiments._harness import grid_iv
    >>> grid_iv([78, 10, 10], "budgets"), grid_iv(5, "k")
    ((10, 78), (5,))
    """
    values = (values,) if np.isscalar(values) else tuple(values)
    if not values:
        raise ValueError(f"{name} is empty.")
    return tuple(sorted({positive_int(v, name) for v in values}))


def names_iv(values: Any, known: Sequence[str], name: str) -> tuple[str, ...]:
    """A name or a non-empty sequence of names among `known`, in order without repeats.

    `name` is the plural the messages use (``"samplers"``: "unknown sampler ...").

    Examples
    --------
    >>> from passmix.experiments._harness import names_iv
    >>> names_iv(["b", "a", "b"], ("a", "b"), "methods")
    ('b', 'a')
    """
    values = (values,) if isinstance(values, str) else tuple(values)
    if not values:
        raise ValueError(f"{name} is empty.")
    for v in values:
        if v not in known:
            raise ValueError(f"unknown {name[:-1]} {v!r}; expected one of {', '.join(known)}.")
    return tuple(dict.fromkeys(values))


def keyed_groups(groups: Any, message: str) -> list[tuple[tuple, Any]]:
    """The ``(key, data)`` pairs of a non-empty dict of groups, each key as a tuple.

    A dict that is empty, or anything else, is a ValueError with `message`.

    Examples
    --------
    >>> from passmix.experiments._harness import keyed_groups
    >>> keyed_groups({"a": 1, ("b", 2): 3}, "groups must be a dict.")
    [(('a',), 1), (('b', 2), 3)]
    """
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(message)
    return [(key if isinstance(key, tuple) else (key,), value) for key, value in groups.items()]


def group_columns_iv(keys: Iterable[tuple], group_cols: Sequence[str]) -> list:
    """`group_cols`, by default ``group0, group1, ...``, checked to name every key's parts."""
    keys = list(keys)
    cols = list(group_cols) or [f"group{i}" for i in range(len(keys[0]))]
    if any(len(key) != len(cols) for key in keys):
        raise ValueError(f"group keys do not match the group columns {cols}.")
    return cols


def settings_key(prefix: str, config: Any, version: int) -> str:
    """Cache key of a protocol's settings: a hash of `config` (a dataclass) but its seeds and
    budgets, which name the units within (so adding one reuses the others), and `version`."""
    settings = {key: v for key, v in asdict(config).items() if key not in ("seeds", "budgets")}
    settings["version"] = version
    return f"{prefix}-" + hashlib.sha256(json.dumps(settings, sort_keys=True).encode()
                                         ).hexdigest()[:12]


def data_hash(key: tuple, data: Counts | np.ndarray) -> str:
    """A short hash of a group's key and data, naming its cache folder."""
    h = hashlib.sha256(repr(key).encode())
    if isinstance(data, Counts):
        h.update(b"counts")
        h.update(np.ascontiguousarray(data.successes).tobytes())
        h.update(np.ascontiguousarray(data.trials).tobytes())
    else:
        h.update(b"matrix" + repr(data.shape).encode())
        h.update(np.ascontiguousarray(data).tobytes())
    return h.hexdigest()[:16]


class Cache:
    """One JSON file per unit under ``root/<settings key>/<group data hash>/<name>.json``.

    `root` None disables it. A damaged file reads as missing and is recomputed;
    writes are atomic, so an interrupted write leaves no partial file.
    """

    def __init__(self, root: Path | str | None, settings_key: str,
                 data_hashes: dict[tuple, str]) -> None:
        self.root = None if root is None else Path(root) / settings_key
        self.hashes = data_hashes

    def path(self, key: tuple, name: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / self.hashes[key] / f"{name}.json"

    def read(self, key: tuple, name: str) -> dict[str, Any] | None:
        path = self.path(key, name)
        if path is None or not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write(self, key: tuple, name: str, unit: dict[str, Any]) -> None:
        path = self.path(key, name)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(unit), encoding="utf-8")
        os.replace(tmp, path)


@contextlib.contextmanager
def _backend(client: Any) -> Iterator[None]:
    if client is None:
        yield
        return
    import joblib

    # Each fit records its warnings and pins BLAS threads, both process-wide
    # state: two fits in threads of one worker would mix them up.
    threads = client.nthreads()
    per_process: dict[Any, int] = {}
    for worker, pid in client.run(os.getpid).items():
        per_process[pid] = per_process.get(pid, 0) + threads.get(worker, 1)
    if any(n > 1 for n in per_process.values()):
        raise ValueError(
            "passmix needs Dask workers that are processes with one thread each "
            "(threads_per_worker=1, processes=True); this cluster runs "
            f"{max(per_process.values())} threads in one process."
        )
    with joblib.parallel_config(backend="dask", client=client):
        yield


def execute(run: Callable[[Any], Any], tasks: Iterable[Any], on_result: Callable[[Any], int],
            *, jobs: int = 1, client: Any = None, progress: bool = False, total: int = 0,
            done: int = 0, desc: str = "passmix") -> None:
    """Run ``run(task)`` for every task and hand each result to `on_result` as it comes.

    Serially in this process for ``jobs == 1`` without `client`; otherwise on
    joblib workers (loky), or on the Dask cluster of `client`. `on_result`
    returns how many units the result holds, for the progress bar over
    `total` units of which `done` were cached.
    """
    from tqdm import tqdm

    tasks = list(tasks)
    bar = tqdm(total=total, initial=done, desc=desc, unit="fit", file=sys.stderr,
               disable=not progress, leave=False)
    with bar, _backend(client):
        if not tasks:
            return
        if jobs == 1 and client is None:
            results: Iterable = map(run, tasks)
        else:
            import joblib

            results = joblib.Parallel(n_jobs=jobs, return_as="generator_unordered",
                                      batch_size=1)(joblib.delayed(run)(t) for t in tasks)
        for result in results:
            bar.update(on_result(result))


def execute_cached(run: Callable[[Any], dict], plans: Iterable[tuple[tuple, Any]], cache: Cache,
                   name_of: Callable[[tuple], str], id_of: Callable[[dict], tuple],
                   **options: Any) -> tuple[dict[tuple, dict], int]:
    """Read each planned unit from `cache`, run the others (:func:`execute`) and cache them.

    `plans` yields ``(id, task)``: the unit's id, a tuple whose first element
    is the group key, and the task that computes it; ``name_of(id)`` names
    its cache file and ``id_of(unit)`` recovers the id from a computed unit
    (results come back in any order). `options` go to :func:`execute`.
    Returns the units by id and how many of them were cached.
    """
    units: dict[tuple, dict] = {}
    todo = []
    for uid, task in plans:
        hit = cache.read(uid[0], name_of(uid))
        if hit is not None:
            units[uid] = hit
        else:
            todo.append(task)
    cached = len(units)

    def on_result(unit: dict) -> int:
        uid = id_of(unit)
        cache.write(uid[0], name_of(uid), unit)
        units[uid] = unit
        return 1

    execute(run, todo, on_result, total=cached + len(todo), done=cached, **options)
    return units, cached
