"""Collection at the repository root: the deprecated module paths hold no doctests.

Each old path (``passmix.mixture`` and the like, see ``passmix._deprecated``)
is a two-line alias that warns on import; collecting it would only import it.
"""

from pathlib import Path

from passmix._deprecated import MOVED

_SRC = Path(__file__).parent / "src"

collect_ignore = [str(_SRC.joinpath(*old.split(".")).with_suffix(".py")) for old in MOVED
                  if old != "passmix.readers"] + [str(_SRC / "passmix" / "readers" / "__init__.py")]
