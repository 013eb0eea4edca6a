"""PyTensor for passmix: importing it safely, and the backend its functions compile to.

PyTensor refuses to import when its compile directory (``base_compiledir``,
by default under ``~/.pytensor``) cannot be created: a read-only home, a
``PYTENSOR_FLAGS`` naming a path under a file. passmix then points PyTensor
at a private folder in the temporary directory and warns, so a fit still
runs (compiling afresh, since nothing is cached there yet).

**Backend.** ``PASSMIX_BACKEND=c`` (the default) compiles the fit's objectives
with PyTensor's C linker; ``PASSMIX_BACKEND=numba`` with its numba backend.
Measured on a 2-core machine (``benchmarks/bench_fit.py --cold``,
``benchmarks/bench_cli.py --cold``), C wins where it matters: numba's first
call costs about what C's compilation does with empty caches, a warm process
re-compiles the top of the graph (PyTensor's numba digamma calls scipy's
Cython function by address, which numba cannot cache) and the pooled
objective runs several times slower. So C is the default and numba a switch.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = ["BACKEND_ENV", "BACKENDS", "backend", "compile_mode", "import_pytensor"]

_FLAGS = "PYTENSOR_FLAGS"
#: The environment variable choosing the backend, and its values.
BACKEND_ENV = "PASSMIX_BACKEND"
BACKENDS = ("c", "numba")


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
    return name


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

    if backend() == "numba":
        return get_mode("NUMBA")
    default = get_default_mode()
    if keep_buffers:
        return Mode(linker="cvm_nogc", optimizer=default.provided_optimizer)
    return default
