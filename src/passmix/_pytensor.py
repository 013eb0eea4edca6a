"""PyTensor for passmix: importing it safely, and the mode its functions compile with.

PyTensor refuses to import when its compile directory (``base_compiledir``,
by default under ``~/.pytensor``) cannot be created: a read-only home, a
``PYTENSOR_FLAGS`` naming a path under a file. passmix then points PyTensor
at a private folder in the temporary directory (a documented setting) and
warns, so a fit still runs.

**Backend.** passmix compiles its objectives and NUTS's log-density with
PyTensor's own public modes: ``PASSMIX_BACKEND=numba`` (the default, PyTensor
3's default mode) or ``PASSMIX_BACKEND=c`` (the C virtual machine). Nothing
inside PyTensor is patched: a cold start is what PyTensor's own caches give
(numba's on-disk cache under PyTensor's compile directory, PyTensor's C
module cache). ``benchmarks/bench_backends.py`` measures both for the
mixture's objective, the pooled objective and NUTS.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = ["BACKEND_ENV", "BACKENDS", "backend", "compile_mode", "import_pymc",
           "import_pytensor", "sampler_compile_kwargs"]

_FLAGS = "PYTENSOR_FLAGS"
#: The environment variable choosing the backend, and its values (the first is the default).
BACKEND_ENV = "PASSMIX_BACKEND"
BACKENDS = ("numba", "c")


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


def import_pymc():
    """Import PyMC the way passmix does: PyTensor first (:func:`import_pytensor`).

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
    import pymc

    return pymc


def backend() -> str:
    """The backend passmix compiles with: ``PASSMIX_BACKEND``, ``"numba"`` if unset.

    Examples
    --------
    >>> from passmix._pytensor import backend
    >>> backend() in ("numba", "c")
    True
    """
    name = os.environ.get(BACKEND_ENV, BACKENDS[0]).strip().lower() or BACKENDS[0]
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
    from pytensor.compile.mode import Mode, get_mode

    if backend() == "numba":
        return get_mode("NUMBA")
    return Mode(linker="cvm_nogc" if keep_buffers else "cvm", optimizer="fast_run")


def sampler_compile_kwargs() -> dict:
    """``pymc.sample``'s ``compile_kwargs`` for :func:`backend`.

    Examples
    --------
    >>> from passmix._pytensor import sampler_compile_kwargs
    >>> sorted(sampler_compile_kwargs())
    ['mode']
    """
    return {"mode": compile_mode()}
