"""Import paths of the flat layout (passmix <= 0.1), kept for one release.

Each old module is a two-line file that warns once, on import, and forwards
every attribute to the module that now holds it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable

__all__ = ["MOVED", "forward"]

#: Old module path to the module that holds its contents now.
MOVED = {
    "passmix.panel": "passmix.data.panel",
    "passmix.readers": "passmix.data.readers",
    "passmix.readers.evalplus": "passmix.data.readers.evalplus",
    "passmix.readers.inspect_log": "passmix.data.readers.inspect_log",
    "passmix.readers.lm_eval": "passmix.data.readers.lm_eval",
    "passmix.readers.tau": "passmix.data.readers.tau",
    "passmix.parameters": "passmix.models.mixture.parameters",
    "passmix.model": "passmix.models.mixture.graph",
    "passmix.mixture": "passmix.models.mixture.fit",
    "passmix.pooled": "passmix.models.pooled",
    "passmix.intervals": "passmix.inference.delta",
    "passmix.profile": "passmix.inference.profile",
    "passmix.posterior": "passmix.bayes.sample",
    "passmix.pooled_posterior": "passmix.bayes.pooled",
    "passmix.posterior_plots": "passmix.plots.posterior",
    "passmix.registry": "passmix.estimators.registry",
}


def forward(old: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Warn that `old` moved; ``__getattr__`` and ``__dir__`` that forward to its new module.

    Examples
    --------
    >>> import warnings
    >>> from passmix._deprecated import forward
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_, _ = forward("passmix.panel")
    >>> caught[0].category.__name__, getattr_("Panel").__module__
    ('DeprecationWarning', 'passmix.data.panel')
    """
    new = MOVED[old]
    # the importing line (warnings skips the import machinery's frames), so that
    # Python's default filter shows it in a notebook or script
    warnings.warn(f"{old} is deprecated: import from {new} (the old path goes in the next "
                  "release)", DeprecationWarning, stacklevel=3)
    module = importlib.import_module(new)

    def __getattr__(name: str) -> object:
        return getattr(module, name)

    def __dir__() -> list[str]:
        return dir(module)

    return __getattr__, __dir__
