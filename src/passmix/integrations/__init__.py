"""passmix inside other tools: :mod:`passmix.integrations.inspect_ai` (a reducer and metrics
for inspect_ai evals, ``pip install -e ".[inspect]"`` from a checkout)."""

__all__: list[str] = []
