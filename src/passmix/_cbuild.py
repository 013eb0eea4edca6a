"""PyTensor's C modules built in parallel: the cold-start cost of a compiled objective.

PyTensor links a function node by node and builds each node's C module
with one ``g++`` run, one after another, under its compile-directory lock:
on an empty cache the ~40 modules of a passmix objective take ~17 s of
compiler time on one core while the others idle. :func:`parallel_c_build`
shortens that. While it is active, a function about to be linked first
lists the modules of its nodes that are not in PyTensor's cache and builds
them concurrently (``g++`` in worker threads, into a private staging
folder, no lock held: nothing in the cache is touched). PyTensor then links
as always: every step of its own (keys, locks, the module cache, loading)
runs unchanged, except that the compiler run for a module staged from the
same source with the same arguments copies the staged library instead.

A staged build is the same compiler run with two savings that leave the
machine code as it is: the headers every module starts with (Python's and
numpy's) are read from one precompiled header instead of parsed again per
module, and no debug information is written (``-g``, which does not change
the generated code). Measured on a 2-core machine
(``benchmarks/bench_fit.py --cold``): the mixture's objective from an empty
cache in 10 s against 23 s one by one, a first pooled fit in 9 s against 24 s.

Anything unexpected in the listing (an Op whose C code cannot be
generated, a PyTensor internal that moved) skips that node or the whole
listing, and a staged build that fails is simply not used: PyTensor then
builds what is missing itself, one by one, as before. So the hook can make
a cold start faster, never different. ``PASSMIX_BUILD_WORKERS`` sets how
many compiler runs go at once (default: the CPUs this process may use);
``0`` turns staging off.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["STATS", "WORKERS_ENV", "build_workers", "parallel_c_build"]

#: The environment variable setting how many compiler runs go at once (0: no staging).
WORKERS_ENV = "PASSMIX_BUILD_WORKERS"
_HEADER_NAME = "passmix_pch.h"


@dataclass
class _Header:
    """A precompiled header being built (`done` not yet set) or built (`path`, None if failed)."""

    done: threading.Event = field(default_factory=threading.Event)
    path: str | None = None


class _Build:
    """One function's staged builds: their folder, the libraries and precompiled headers."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.lock = threading.Lock()
        # (compiler arguments but paths, source digest) -> path of the staged library
        self.built: dict[tuple, str] = {}
        # (compiler flags, include lines) -> precompiled header
        self.headers: dict[tuple, _Header] = {}


# the hook: how many contexts are open, and PyTensor's own functions (captured once and
# kept, so a thread still inside the hook when the last context closes finds them)
_HOOK_LOCK = threading.Lock()
_HOOK = {"active": 0}
_ORIGINALS: dict[str, object] = {}
# per thread: the build a worker stages into (.stage), the build a link copies from (.link)
_worker = threading.local()
_STATS_LOCK = threading.Lock()
#: Module builds since import: staged (built ahead), copied (PyTensor's run replaced by a
#: staged library) and unstaged (PyTensor's run went ahead: nothing staged for it).
STATS = {"staged": 0, "copied": 0, "unstaged": 0}


def _count(what: str) -> None:
    with _STATS_LOCK:
        STATS[what] += 1


def build_workers() -> int:
    """How many compiler runs :func:`parallel_c_build` starts at once (0: it stages nothing).

    ``PASSMIX_BUILD_WORKERS`` if set, else the CPUs this process may use.

    Examples
    --------
    >>> from passmix._cbuild import build_workers
    >>> build_workers() >= 0
    True
    """
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value:
        try:
            workers = int(value)
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={value!r} is not a whole number.") from None
        if workers < 0:
            raise ValueError(f"{WORKERS_ENV} must be >= 0, got {workers}.")
        return workers
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _paths(cmd: list[str]) -> tuple[int, int] | None:
    """Positions of the output path and the C++ source in a module build, or None."""
    try:
        out = cmd.index("-o")
    except ValueError:
        return None
    sources = [i for i, arg in enumerate(cmd) if arg.strip('"').endswith(".cpp")]
    if len(sources) != 1 or out + 1 >= len(cmd):
        return None
    return out, sources[0]


def _command_key(cmd: list[str]) -> tuple | None:
    """A module build's identity: its arguments but the output and source paths, and the
    source's digest. None for any other command."""
    where = _paths(cmd)
    if where is None:
        return None
    out, src = where
    try:
        digest = hashlib.sha256(Path(cmd[src].strip('"')).read_bytes()).hexdigest()
    except OSError:
        return None
    return tuple(arg for i, arg in enumerate(cmd) if i not in (out, out + 1, src)), digest


def _leading_includes(source: str) -> tuple[str, ...]:
    """The ``#include`` lines a module source starts with."""
    lines = []
    with open(source) as fh:
        for line in fh:
            if not line.startswith("#include"):
                break
            lines.append(line.rstrip("\n"))
    return tuple(lines)


def _header(build: _Build, flags: tuple[str, ...], includes: tuple[str, ...]) -> str | None:
    """A precompiled header of `includes` under `flags` (built once per function): its path,
    or None."""
    key = (flags, includes)
    with build.lock:
        header = build.headers.get(key)
        mine = header is None
        if mine:
            header = build.headers[key] = _Header()
    if not mine:
        header.done.wait()
        return header.path
    try:
        path = os.path.join(tempfile.mkdtemp(dir=build.folder), _HEADER_NAME)
        with open(path, "w") as fh:
            fh.write("\n".join(includes) + "\n")
        cmd = [*flags, "-x", "c++-header", path, "-o", path + ".gch"]
        if _ORIGINALS["popen"](cmd)[2] == 0:
            header.path = path
    except Exception:  # noqa: BLE001 - no header: the modules parse theirs
        header.path = None
    finally:
        header.done.set()
    return header.path


def _staging_command(cmd: list[str], build: _Build) -> list[str]:
    """A module build as staged: its compiler and flags, its leading headers read from a
    precompiled header, no debug information (the same machine code)."""
    out, src = _paths(cmd)
    try:
        includes = _leading_includes(cmd[src].strip('"'))
    except OSError:
        includes = ()
    if includes:
        # what the header must be compiled with: every flag of the build, but linking's
        flags = tuple(arg for i, arg in enumerate(cmd) if i not in (out, out + 1, src)
                      and arg not in ("-shared", "-g") and not arg.startswith("-l"))
        header = _header(build, flags, includes)
        if header is not None:
            cmd = [*cmd[:src], "-include", header, *cmd[src:]]
    return [arg for arg in cmd if arg != "-g"]


def _popen(cmd, **params):
    """PyTensor's compiler call: a worker's build is staged, a build already staged for the
    function being linked is copied, any other runs as PyTensor runs it."""
    original = _ORIGINALS["popen"]
    key = _command_key(list(cmd)) if isinstance(cmd, list | tuple) else None
    if key is None:
        return original(cmd, **params)
    target = cmd[cmd.index("-o") + 1].strip('"')
    stage = getattr(_worker, "stage", None)
    if stage is not None:
        result = original(_staging_command(list(cmd), stage), **params)
        if result[2] == 0:
            with stage.lock:
                stage.built[key] = target
            _count("staged")
        return result
    link = getattr(_worker, "link", None)
    staged = None
    if link is not None:
        with link.lock:
            staged = link.built.get(key)
    if staged is not None and os.path.isfile(staged):
        try:
            shutil.copyfile(staged, target)
        except OSError:
            pass
        else:
            _count("copied")
            return b"", b"", 0
    _count("unstaged")
    return original(cmd, **params)


def _missing_modules(fgraph) -> list[tuple]:
    """The builds of `fgraph`'s nodes whose C modules are not in PyTensor's cache."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.c.basic import CLinker, get_module_cache
    from pytensor.link.c.cmodule import get_module_hash
    from pytensor.link.c.op import COp

    cache = get_module_cache()
    jobs, seen = [], set()
    for node in fgraph.toposort():
        if not isinstance(node.op, COp):
            continue
        try:
            # as COp.make_c_thunk builds it (the VM links with no_recycling=[])
            linker = CLinker().accept(FunctionGraph(node.inputs, node.outputs),
                                      no_recycling=[])
            key = linker.cmodule_key()
            if cache._get_from_key(key) is not None:
                continue
            module = linker.get_dynamic_module()
            src = module.code()
            if cache._get_from_hash(get_module_hash(src, key), key) is not None:
                continue
            job = (module.code_hash, src, tuple(linker.header_dirs()),
                   tuple(linker.lib_dirs()), tuple(linker.libraries()),
                   tuple(linker.compile_args()))
        except Exception:  # noqa: BLE001 - no C code here: PyTensor decides, as before
            continue
        if job[:2] not in seen:
            seen.add(job[:2])
            jobs.append(job)
    return jobs


def _build(job: tuple, build: _Build) -> None:
    from pytensor.link.c.cmodule import GCC_compiler

    name, src, include_dirs, lib_dirs, libs, preargs = job
    _worker.stage = build
    try:
        GCC_compiler.compile_str(name, src, location=tempfile.mkdtemp(dir=build.folder),
                                 include_dirs=list(include_dirs), lib_dirs=list(lib_dirs),
                                 libs=list(libs), preargs=list(preargs), py_module=False)
    except Exception:  # noqa: BLE001 - not staged: PyTensor builds it and reports any error
        pass
    finally:
        _worker.stage = None


def _load(module: str) -> None:
    """Import one of PyTensor's own C extensions (built on first import) alongside."""
    with contextlib.suppress(Exception):  # the import the linker makes reports any error
        importlib.import_module(module)


def _stage(linker, build: _Build) -> None:
    """Build `linker`'s graph's missing C modules concurrently into `build`'s folder."""
    workers = build_workers()
    if workers < 1:
        return
    jobs = _missing_modules(linker.fgraph)
    if not jobs:
        return
    # the largest sources first, so that the last to finish are short ones
    jobs.sort(key=lambda job: -len(job[1]))
    # PyTensor's own extensions (the C thunks' runner, the C loop's VM) are built on
    # their first import, after the modules: with an empty cache, import them alongside
    extensions = ["pytensor.link.c.cutils"]
    if getattr(linker, "use_cloop", False):
        extensions.append("pytensor.link.c.cvm")
    with ThreadPoolExecutor(max_workers=min(workers, len(jobs) + 1)) as pool:
        loading = pool.submit(lambda: [_load(name) for name in extensions])
        list(pool.map(_build, jobs, [build] * len(jobs)))
        loading.result()


def _make_all(self, *args, **kwargs):
    """PyTensor's ``VMLinker.make_all``, its missing C modules staged first; the staged files
    are deleted once the function is linked."""
    original = _ORIGINALS["make_all"]
    with tempfile.TemporaryDirectory(prefix="passmix-build-") as folder:
        build = _Build(folder)
        with contextlib.suppress(Exception):
            _stage(self, build)
        previous = getattr(_worker, "link", None)
        _worker.link = build
        try:
            return original(self, *args, **kwargs)
        finally:
            _worker.link = previous


@contextlib.contextmanager
def parallel_c_build():
    """Within this context, PyTensor functions build their missing C modules in parallel.

    Safe to nest and to enter from several threads: the hook is in place
    while any context is open (any thread's PyTensor functions then stage
    theirs) and removed when the last one closes; a function still being
    linked then finishes with PyTensor's own steps. A function's staged files
    are deleted once it is linked.

    Examples
    --------
    >>> import pytensor, pytensor.tensor as pt
    >>> from passmix._cbuild import parallel_c_build
    >>> x = pt.dvector("x")
    >>> with parallel_c_build():
    ...     f = pytensor.function([x], pt.exp(x).sum())
    >>> float(f([0.0, 0.0]))
    2.0
    """
    from pytensor.link import vm
    from pytensor.link.c import cmodule

    with _HOOK_LOCK:
        if not _ORIGINALS:
            _ORIGINALS.update(make_all=vm.VMLinker.make_all,
                              popen=cmodule.output_subprocess_Popen)
        if _HOOK["active"] == 0:
            vm.VMLinker.make_all = _make_all
            cmodule.output_subprocess_Popen = _popen
        _HOOK["active"] += 1
    try:
        yield
    finally:
        with _HOOK_LOCK:
            _HOOK["active"] -= 1
            if _HOOK["active"] == 0:
                vm.VMLinker.make_all = _ORIGINALS["make_all"]
                cmodule.output_subprocess_Popen = _ORIGINALS["popen"]
