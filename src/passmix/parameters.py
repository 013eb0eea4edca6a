"""Deprecated: moved to :mod:`passmix.models.mixture.parameters` (this path goes in the next release)."""

from passmix._deprecated import forward

__getattr__, __dir__ = forward(__name__)
