"""Deprecated: moved to :mod:`passmix.bayes.sample` (this path goes in the next release)."""

from passmix._deprecated import forward

__getattr__, __dir__ = forward(__name__)
