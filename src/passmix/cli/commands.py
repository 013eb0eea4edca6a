"""Command line interface of passmix: the ``passmix`` group and its commands.

``passmix estimate FILE`` reads per-task success counts (any layout that
:func:`passmix.read_counts` understands), fits the model and prints Pass@k,
Pass^k and AUC@k at the requested horizons with intervals; ``compare`` and
``rank`` compare systems on shared tasks; ``experiment`` runs the papers'
protocols. Each command lives in its own module (:mod:`~passmix.cli.estimate`,
:mod:`~passmix.cli.systems`, :mod:`~passmix.cli.experiment`); this one joins them.
"""

from __future__ import annotations

import click

from .. import __version__
from .estimate import estimate
from .systems import compare, rank
from .experiment import experiment

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="passmix")
def main() -> None:
    """passmix: Pass@k, Pass^k and AUC@k of stochastic AI systems at any horizon.

    Fits a Beta mixture to per-task success counts (y_j successes of m_j
    trials) and reports the metrics with profile-likelihood (or delta-method) intervals.
    Run 'passmix COMMAND --help' for the options of a command.
    """


main.add_command(estimate)
main.add_command(compare)
main.add_command(rank)
main.add_command(experiment)
