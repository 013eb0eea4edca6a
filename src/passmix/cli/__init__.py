"""The ``passmix`` command line (:func:`main`, in :mod:`~passmix.cli.commands`)."""

from .commands import main

__all__ = ["main"]
