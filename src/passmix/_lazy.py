"""Public names of a package loaded on first use (SPEC 1, as scipy does).

A package lists where each of its names lives; ``import passmix.models`` then
costs nothing, and ``passmix.models.fit_pooled`` imports what ``fit_pooled``
needs (PyMC, PyTensor) on first use.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence

__all__ = ["attach", "make_callable"]


def attach(package: str, names: Mapping[str, Sequence[str]],
           submodules: Mapping[str, str] | None = None
           ) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """Module ``__getattr__``, ``__dir__`` and ``__all__`` for a lazy package.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping
        Submodule (relative, such as ``".fit"``) to the public names it provides.
    submodules : mapping, optional
        Attribute name to a (sub)module it is, such as ``{"readers": ".data.readers"}``.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__, __all__)``, to assign at the package's top.

    Examples
    --------
    >>> from passmix._lazy import attach
    >>> getattr_, dir_, all_ = attach("passmix.data", {".panel": ["Panel"]})
    >>> all_
    ['Panel']
    >>> getattr_("Panel").__name__
    'Panel'
    """
    where = {name: module for module, provided in names.items() for name in provided}
    modules = dict(submodules or {})

    def __getattr__(name: str) -> object:
        if name in modules:
            value = importlib.import_module(modules[name], package)
        elif name in where:
            value = getattr(importlib.import_module(where[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where) | set(modules))

    return __getattr__, __dir__, sorted(set(where) | set(modules))


def make_callable(module: str, function: Callable) -> None:
    """Make the (sub)package `module` callable as `function`.

    A package and a function of one name (``passmix.sensitivity``,
    ``passmix.compare``) cannot both be the parent's attribute: importing the
    package sets it. So the package itself is the function.
    """

    class _CallableModule(types.ModuleType):
        __doc__ = f"The package {module}, callable as {function.__name__}."

        def __call__(self, *args, **kwargs):
            return function(*args, **kwargs)

    # what help(), inspect and Jupyter's `?` show for a call: the function's own
    _CallableModule.__call__.__doc__ = function.__doc__
    sys.modules[module].__class__ = _CallableModule
    sys.modules[module].__signature__ = inspect.signature(function)
