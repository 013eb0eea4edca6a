"""``python -m passmix.cli``: the ``passmix`` command."""

from .commands import main

main(prog_name="passmix")
