"""PyTensor for passmix: importing it safely, and the backend its functions compile to.

PyTensor refuses to import when its compile directory (``base_compiledir``,
by default under ``~/.pytensor``) cannot be created: a read-only home, a
``PYTENSOR_FLAGS`` naming a path under a file. passmix then points PyTensor
at a private folder in the temporary directory and warns, so a fit still
runs (compiling afresh, since nothing is cached there yet).

**Compiled functions kept between processes.** :func:`cache_path`,
:func:`load_cached` and :func:`store_cached` pickle a compiled function
beside PyTensor's compile cache (``<compiledir>/passmix/``), under a name
hashing the modules it is built from and the library versions: a later
process loads it instead of importing PyMC and rewriting the graph again.
``PASSMIX_OBJECTIVE_CACHE=0`` turns this off. A file that cannot be read is
rebuilt, a folder that cannot be written is skipped, and files are written
whole (to a temporary name, then renamed), so processes filling the cache at
once never see half a file.

**Backend.** ``PASSMIX_BACKEND=c`` (the default) compiles the fit's objectives
with PyTensor's C linker, their missing C modules built in parallel
(:mod:`passmix._cbuild`); ``PASSMIX_BACKEND=numba`` with its numba backend.
For numba, passmix compiles PyTensor's ``psi`` to a digamma of its own
(:func:`register_numba_digamma`: PyTensor's calls scipy's through a function
pointer, which numba cannot cache, so every process compiled the whole
objective again), and an entry of PyTensor's numba cache that cannot be
read is compiled again, not an error (:func:`prepare_numba`); where the
numba backend cannot start at all, passmix warns and compiles with C.
Measured on a 2-core machine (``benchmarks/bench_cli.py --cold --numba``,
``benchmarks/bench_fit.py --cold``, ``benchmarks/bench_sample.py --backends c
numba``): from empty caches C is about twice as fast (``passmix estimate
--example``: 18.5 s against 37 s; the mixture's objective: 10 s to compile
against 3 s plus 16 s of numba's first call); warm, numba is a little faster
(one objective call 30 us against 37 us; the command about the same, 6.7 s),
and NUTS takes the same time either way. The first run is what a new user
meets, so C is the default and numba a switch (``PASSMIX_BACKEND`` also sets
the mode NUTS compiles with).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import math
import os
import pickle
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = ["BACKEND_ENV", "BACKENDS", "CACHE_ENV", "backend", "cache_path", "compile_mode",
           "import_arviz", "import_pymc", "import_pytensor", "load_cached", "prepare_numba",
           "pymc_cxxflags", "register_numba_digamma", "sampler_compile_kwargs", "store_cached"]

_FLAGS = "PYTENSOR_FLAGS"
#: The environment variable choosing the backend, and its values.
BACKEND_ENV = "PASSMIX_BACKEND"
BACKENDS = ("c", "numba")
#: Set to "0" to neither read nor write compiled functions on disk.
CACHE_ENV = "PASSMIX_OBJECTIVE_CACHE"
_CACHE_MAX_AGE = 30 * 24 * 3600.0  # seconds


def _fallback_dir() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"passmix-pytensor-{uid}"


def import_pytensor():
    """Import PyTensor, falling back to a private compile directory if its own cannot be made.

    Call before the first ``import pymc`` or ``import pytensor`` of a code path.

    Returns
    -------
    module
        The ``pytensor`` package.

    Examples
    --------
    >>> from passmix._pytensor import import_pytensor
    >>> import_pytensor().__name__
    'pytensor'
    """
    if "pytensor" in sys.modules:
        return sys.modules["pytensor"]
    try:
        import pytensor

        # the compile directory is made on first use: make it now, while a retry is cheap
        pytensor.config.compiledir  # noqa: B018
    except ValueError as err:
        if "compiledir" not in str(err):
            raise
        # a failed import leaves the submodules it had loaded: drop them to start again
        for name in [n for n in sys.modules if n == "pytensor" or n.startswith("pytensor.")]:
            del sys.modules[name]
        fallback = _fallback_dir()
        # the flags' own compile directories are the ones that failed: replace them
        flags = [f for f in os.environ.get(_FLAGS, "").split(",") if f.strip() and
                 f.split("=", 1)[0].strip() not in ("base_compiledir", "compiledir")]
        os.environ[_FLAGS] = ",".join([*flags, f"base_compiledir={fallback}"])
        warnings.warn(f"PyTensor could not make its compile directory ({err}); using "
                      f"{fallback} instead, where nothing is compiled yet.", RuntimeWarning,
                      stacklevel=2)
        import pytensor
    return pytensor


def import_arviz():
    """Import ArviZ without its import-time notice of a coming refactor (see :func:`import_pymc`).

    Examples
    --------
    >>> from passmix._pytensor import import_arviz
    >>> import_arviz().__name__
    'arviz'
    """
    if "arviz" in sys.modules:
        return sys.modules["arviz"]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                                category=FutureWarning)
        import arviz
    return arviz


def import_pymc():
    """Import PyMC the way passmix does: PyTensor first (:func:`import_pytensor`), and
    without ArviZ's import-time notice of its coming refactor, which a passmix user
    importing PyMC through a fit cannot act on (it would show as the fit's warning).

    Returns
    -------
    module
        The ``pymc`` package.

    Examples
    --------
    >>> from passmix._pytensor import import_pymc
    >>> import_pymc().__name__
    'pymc'
    """
    import_pytensor()
    if "pymc" in sys.modules:
        return sys.modules["pymc"]
    import_arviz()  # PyMC imports it
    import pymc

    return pymc


def backend() -> str:
    """The backend passmix compiles its objectives with: ``PASSMIX_BACKEND``, ``"c"`` if unset.

    Examples
    --------
    >>> from passmix._pytensor import backend
    >>> backend() in ("c", "numba")
    True
    """
    name = os.environ.get(BACKEND_ENV, "c").strip().lower() or "c"
    if name not in BACKENDS:
        raise ValueError(f"{BACKEND_ENV}={name!r} is not a backend; expected one of "
                         f"{', '.join(BACKENDS)}.")
    if name == "numba" and not _numba_ready():
        return "c"
    return name


@functools.cache
def _numba_ready() -> bool:
    """Whether PyTensor's numba backend can be used here; warns once if not."""
    try:
        prepare_numba()
    except (ImportError, OSError) as err:
        warnings.warn(f"{BACKEND_ENV}=numba, but PyTensor's numba backend cannot start "
                      f"({err}); compiling with C instead.", RuntimeWarning, stacklevel=4)
        return False
    return True


def compile_mode(keep_buffers: bool = False):
    """The PyTensor mode of :func:`backend`.

    Parameters
    ----------
    keep_buffers : bool, default False
        For the C backend, keep intermediate buffers between calls (the
        ``cvm_nogc`` linker): faster for small graphs called many thousands
        of times.

    Examples
    --------
    >>> from passmix._pytensor import compile_mode
    >>> compile_mode() is not None
    True
    """
    import_pytensor()
    from pytensor.compile.mode import Mode, get_default_mode, get_mode

    if backend() == "numba":  # prepared, or fallen back to C
        return get_mode("NUMBA")
    default = get_default_mode()
    if keep_buffers:
        return Mode(linker="cvm_nogc", optimizer=default.provided_optimizer)
    return default


def _digamma(x: float) -> float:
    """Digamma of a float, as scipy's ``psi`` (the reference in the tests).

    The recurrence ``psi(x) = psi(x + 1) - 1/x`` lifts x to >= 10, where the
    asymptotic series to x^-14 is exact in double precision: ~1e-15 relative
    for x > 0 (absolute ~3e-16 near the root at 1.4616). For x < 0 the
    reflection ``psi(x) = psi(1 - x) - pi / tan(pi x)`` takes the tangent of
    the fractional part of x, which is exact; NaN at the poles (0 and the
    negative integers, as scipy; -inf at +0 and +inf at -0). Compiled by numba
    (no scipy function pointer), so it caches.
    """
    if x != x:
        return x
    acc = 0.0
    if x <= 0.0:
        if x == 0.0:
            return -math.copysign(math.inf, x)
        frac = x - np.floor(x)  # exact, and a float even where x exceeds int64
        if frac == 0.0:
            return math.nan
        acc = -math.pi / math.tan(math.pi * frac)
        x = 1.0 - x
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    r = 1.0 / (x * x)
    series = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (
        1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760 - r / 12.0))))))
    return acc + math.log(x) - 0.5 / x - series


@functools.cache
def prepare_numba() -> None:
    """Make PyTensor's numba backend cache passmix's functions, and survive a broken cache.

    Registers :func:`_digamma` for PyTensor's ``psi`` (see
    :func:`register_numba_digamma`), and makes an entry of PyTensor's numba
    cache that cannot be read (truncated, corrupt, from a foreign build) a
    miss: the function is compiled again and the entry rewritten, where numba
    itself would raise. Saving into a folder that cannot be written is
    skipped. Only caches located by PyTensor (``<compiledir>/numba``) are
    affected; numba's handling of any other cache is unchanged.
    """
    import_pytensor()
    # PyTensor makes its numba cache folder on this import: an OSError if it cannot
    from pytensor.link.numba.cache import NumbaPyTensorCacheLocator

    register_numba_digamma()
    from numba.core import caching

    load, save = caching.Cache.load_overload, caching.Cache.save_overload

    def pytensors(cache) -> bool:
        return isinstance(getattr(cache._impl, "locator", None), NumbaPyTensorCacheLocator)

    def load_overload(self, sig, target_context):
        if not pytensors(self):
            return load(self, sig, target_context)
        try:
            return load(self, sig, target_context)
        except Exception:  # noqa: BLE001 - unreadable: drop the index so the save rewrites it
            with contextlib.suppress(Exception):
                os.unlink(self._cache_file._index_path)
            return None

    def save_overload(self, sig, data):
        if not pytensors(self):
            return save(self, sig, data)
        with contextlib.suppress(Exception):  # e.g. a read-only compile directory
            save(self, sig, data)

    caching.Cache.load_overload = load_overload
    caching.Cache.save_overload = save_overload


@functools.cache
def register_numba_digamma() -> None:
    """Compile PyTensor's ``psi`` to :func:`_digamma` under numba, so its functions cache.

    PyTensor's numba backend calls scipy's Cython ``psi`` through a function
    pointer, which numba cannot cache: every graph holding a gradient of a
    log-Beta (every passmix objective) was compiled again in each process.
    The PyTensor cache key names this implementation, so entries made with
    scipy's are never taken for it. Float64 only; other dtypes keep
    PyTensor's implementation.
    """
    from pytensor.link.numba.dispatch import basic as numba_basic
    from pytensor.link.numba.dispatch.scalar import numba_funcify_ScalarOp, scalar_op_cache_key
    from pytensor.scalar.math import Psi

    # exact arithmetic: PyTensor's default fast-math flags would let LLVM reassociate it
    digamma = numba_basic.numba_njit(_digamma, fastmath=False)

    @numba_basic.register_funcify_and_cache_key(Psi)
    def _funcify_psi(op, node=None, **kwargs):
        if node is None or any(v.type.dtype != "float64" for v in (*node.inputs, *node.outputs)):
            return numba_funcify_ScalarOp(op, node=node, **kwargs)
        return digamma, scalar_op_cache_key(op, implementation="passmix._digamma", version=2)


def sampler_compile_kwargs() -> dict:
    """``pymc.sample``'s ``compile_kwargs`` for :func:`backend`: its mode under numba, nothing
    (PyMC's own default, C) otherwise.

    Examples
    --------
    >>> from passmix._pytensor import sampler_compile_kwargs
    >>> isinstance(sampler_compile_kwargs(), dict)
    True
    """
    return {"mode": compile_mode()} if backend() == "numba" else {}


def pymc_cxxflags(flags: str) -> str:
    """PyTensor's ``gcc__cxxflags`` once PyMC is imported, from those before.

    Importing PyMC appends compiler flags, and PyTensor keys its C modules by
    them: a process that loads a pickled function without importing PyMC
    must link it under the same flags, or it compiles every module again.
    ``tests/test_models_mixture_graph.py`` checks this against PyMC itself.

    Examples
    --------
    >>> from passmix._pytensor import pymc_cxxflags
    >>> pymc_cxxflags("-O3").split()[:2]
    ['-O3', '-Wno-c++11-narrowing']
    """
    return (f"{flags} -Wno-c++11-narrowing -fno-exceptions -fno-unwind-tables "
            "-fno-asynchronous-unwind-tables")


def cache_path(tag: str, sources: tuple[str, ...]) -> Path | None:
    """Where the compiled function `tag`, built by the modules `sources`, is kept.

    Beside PyTensor's own compile cache (whose C modules the function
    loads), under a name that hashes everything it is made from: the source
    of `sources` (file names in this package), the versions of Python,
    numpy, PyTensor and PyMC, PyTensor's settings and the backend. None (no
    cache) when switched off or when the sources cannot be read. The files
    are pickles, like PyTensor's own in that folder: a compile directory
    shared with people you do not trust is unsafe for both.

    Examples
    --------
    >>> from passmix._pytensor import cache_path
    >>> path = cache_path("objective-4", ("model.py",))
    >>> path is None or path.name.startswith("objective-4-")
    True
    """
    if os.environ.get(CACHE_ENV, "1").strip() == "0":
        return None
    pytensor = import_pytensor()
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    try:
        for name in sources:
            digest.update((here / name).read_bytes())
        pymc_version = importlib.metadata.version("pymc")
    except (OSError, importlib.metadata.PackageNotFoundError):  # e.g. a frozen install
        return None
    cfg = pytensor.config
    # get_config_hash covers PyTensor's settings (rewrites included or excluded, ...)
    digest.update(repr((sys.version, np.__version__, pytensor.__version__,
                        pymc_version, cfg.get_config_hash(), tag, backend())).encode())
    return Path(cfg.compiledir) / "passmix" / f"{tag}-{digest.hexdigest()[:20]}.pkl"


def load_cached(path: Path | None, shared_names):
    """The compiled function pickled at `path`, or None.

    None when the file is absent, cannot be read or unpickled (truncated,
    corrupt, of other versions), or is not a function whose shared variables
    are exactly `shared_names`.
    """
    if path is None or not path.is_file():
        return None
    try:
        pytensor = import_pytensor()
        backend()  # numba prepared, if it is the backend
        # unpickling links the function: its C modules must be looked up under the
        # compiler flags they were compiled with, in a process that imported PyMC
        flags = {} if "pymc" in sys.modules else {"gcc__cxxflags": pymc_cxxflags(
            pytensor.config.gcc__cxxflags)}
        with pytensor.config.change_flags(**flags), open(path, "rb") as fh:
            fn = pickle.load(fh)
        shared = {v.name for v in fn.get_shared()}
    except Exception:  # noqa: BLE001 - a cache that cannot be read is rebuilt
        return None
    return fn if shared == set(shared_names) else None


def store_cached(path: Path | None, fn) -> None:
    """Pickle `fn` to `path` whole (a temporary file, then renamed); skipped if unwritable."""
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as fh:
            tmp = fh.name
            pickle.dump(fn, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        tmp = None
        # files of older sources or versions: drop those not written for a month
        # (one in use is rewritten by the next process that misses it)
        stale = time.time() - _CACHE_MAX_AGE
        for old in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.pkl"):
            if old != path and old.stat().st_mtime < stale:
                old.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - e.g. a read-only home, or a function that will not pickle
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
