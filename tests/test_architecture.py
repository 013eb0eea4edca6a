"""The package's import graph: no cycles, no private names taken from another module.

Every import counts, at module level, inside functions and under
``TYPE_CHECKING`` alike: a module that imports another which imports it back
(even lazily) ties the two into one, and a ``_name`` taken from another module
is an interface that nobody promised. What is shared gets a public name
(in a private module where it is internal).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import passmix

#: no test here compiles a graph: the unit lane (pytest -m unit)
pytestmark = pytest.mark.unit

ROOT = Path(passmix.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """(module imported, names taken from it) for every import in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "passmix":
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub, ()) if sub in modules else (target, (alias.name,))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name, ()


def _graph():
    modules = _modules()
    edges = {name: set() for name in modules}
    private = []
    for name, path in modules.items():
        for target, names in _imports(name, path, modules):
            if target not in modules or target == name:
                continue
            edges[name].add(target)
            leaf = target.rpartition(".")[2]
            private += [(name, target, n) for n in names
                        if n.startswith("_") and not n.startswith("__")
                        and not leaf.startswith("_")]
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    edges, _ = _graph()
    # a package's __init__ re-exports its modules; a module importing its own
    # package's __init__ (for __version__) is not a cycle through the modules
    for name in edges:
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    assert _cycles(edges) == []


def test_no_private_names_across_modules():
    _, private = _graph()
    assert private == []


def test_the_checks_see_a_cycle_and_a_private_import():
    """The two checks themselves, on a made-up graph."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []



def _package(module: str) -> str | None:
    """The package node of a module: ``passmix.X`` for ``passmix.X[.…]``; None for the root."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else None


def _package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """One node per package (a top-level module is its own); the root facade is exempt.

    Also the module imports behind each edge, ``(X, Y) -> ["X.a -> Y.b", ...]``.
    """
    edges, _ = _graph()
    out: dict[str, set[str]] = {}
    why: dict[tuple[str, str], list[str]] = {}
    for name, targets in edges.items():
        source = _package(name)
        if source is None:
            continue
        out.setdefault(source, set())
        for target in sorted(targets):
            node = _package(target)
            if node is not None and node != source:
                out[source].add(node)
                out.setdefault(node, set())
                why.setdefault((source, node), []).append(f"{name} -> {target}")
    return out, why


def test_no_import_cycles_between_packages():
    """``passmix.X`` importing ``passmix.Y`` while Y imports X back, anywhere in either package.

    Top-level modules (``passmix.metrics``, ``passmix._special``) are packages
    of their own; ``passmix/__init__.py``, the facade that re-exports every
    public name, is exempt. A package's modules may import each other freely
    (the module-level test above keeps those acyclic).
    """
    edges, why = _package_graph()
    cycles = _cycles(edges)
    lines = []
    for component in cycles:
        lines.append("cycle: " + ", ".join(component))
        members = set(component)
        for source in component:
            for target in sorted(edges[source] & members):
                lines.append(f"  {source} -> {target}: " + "; ".join(why[source, target]))
    assert cycles == [], "package cycles:\n" + "\n".join(lines)


def test_the_package_graph_sees_lazy_imports():
    """An import inside a function counts: ``MixtureFit.plot`` imports the plots on first use."""
    edges, why = _package_graph()
    assert "passmix.plots" in edges["passmix.models"]
    assert any(w.startswith("passmix.models.mixture.fit -> passmix.plots.")
               for w in why["passmix.models", "passmix.plots"])
    assert "passmix" not in edges and all(len(n.split(".")) == 2 for n in edges)


def test_no_module_is_over_800_lines():
    """A module one can hold in mind: split by its concerns past 800 lines."""
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 800}
    assert not long, long


@pytest.mark.parametrize("name, function", [("compare", "passmix.compare.paired:compare"),
                                            ("sensitivity",
                                             "passmix.sensitivity.analysis:sensitivity")])
def test_a_callable_package_shows_its_function(name, function):
    """``passmix.compare?`` in Jupyter, help() and inspect show the function's parameters
    and docstring, not ``(*args, **kwargs)``."""
    import importlib
    import inspect

    import passmix

    module, attr = function.split(":")
    target = getattr(importlib.import_module(module), attr)
    package = getattr(passmix, name)
    assert inspect.signature(package) == inspect.signature(target)
    assert type(package).__call__.__doc__ == target.__doc__
    assert list(inspect.signature(package).parameters)[0] == "data"
