"""A memo of the most recent values, for searches that revisit points they have just seen."""

from __future__ import annotations

__all__ = ["BoundedMemo"]


class BoundedMemo(dict):
    """A dict that keeps its `size` most recently added entries (oldest dropped first).

    Examples
    --------
    >>> from passmix._cache import BoundedMemo
    >>> memo = BoundedMemo(2)
    >>> for key in "abc":
    ...     memo[key] = key.upper()
    >>> list(memo.items())
    [('b', 'B'), ('c', 'C')]
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}.")
        self.size = int(size)

    def __setitem__(self, key, value) -> None:
        if key not in self and len(self) >= self.size:
            del self[next(iter(self))]
        super().__setitem__(key, value)
