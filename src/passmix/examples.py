"""Bundled example data: real evaluation counts that ship with passmix.

See ``example_data/README.md`` in the package for provenance.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

__all__ = ["EXAMPLES", "example_path", "load_example"]

#: Example name -> (file, description).
EXAMPLES = {
    "math_m10": ("math_pythia_m10.csv",
                 "Pythia 70M..12B on 128 MATH problems, 10 trials per problem "
                 "(subsampled from 10,000)"),
    "math_10k": ("math_pythia_10k.csv",
                 "Pythia 70M..12B on 128 MATH problems, all 10,000 trials per problem "
                 "(the reference)"),
    "taubench_airline": ("taubench_airline.csv",
                         "tau-bench, gpt-4o on the airline domain: 50 tasks x 4 trials, "
                         "one row per trial (reward 0/1)"),
    "livecodebench": ("livecodebench.csv.gz",
                      "LiveCodeBench 2024-04-17: 43 models x 400 problems, 10 samples each"),
    "mizrahi_bbh": ("mizrahi_bbh.csv.gz",
                    "Multi-prompt evaluation (Mizrahi et al. 2024): accuracy of 136-189 "
                    "instruction paraphrases on 100 examples, 15 BIG-bench Hard tasks x "
                    "11 models"),
}


def example_path(name: str = "math_m10") -> Path:
    """Path of a bundled example file.

    Parameters
    ----------
    name : {"math_m10", "math_10k", "taubench_airline", "livecodebench", "mizrahi_bbh"}
        Which example (see :data:`EXAMPLES`).

    Examples
    --------
    >>> from passmix.examples import example_path
    >>> example_path("math_m10").name
    'math_pythia_m10.csv'
    """
    if name not in EXAMPLES:
        raise ValueError(f"unknown example {name!r}; available: {', '.join(EXAMPLES)}.")
    return Path(str(resources.files("passmix") / "example_data" / EXAMPLES[name][0]))


def load_example(name: str = "math_m10") -> pd.DataFrame:
    """Load a bundled example as a DataFrame, as stored (counts, or one row per trial).

    Examples
    --------
    >>> from passmix.examples import load_example
    >>> df = load_example("math_m10")
    >>> sorted(df.columns)
    ['benchmark', 'model', 'problem', 'successes', 'trials']
    >>> int(df["trials"].max())
    10
    """
    return pd.read_csv(example_path(name))  # pandas decompresses .csv.gz itself
