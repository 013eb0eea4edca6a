"""Sphinx configuration of the passmix documentation.

Build (after ``pip install -e ".[docs]"``), warnings as errors, from the repository root::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The API reference is generated from the public names (every ``__all__``) and
their numpydoc docstrings; the notebooks are rendered with their committed
outputs, not executed.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import sys
import types
from pathlib import Path

import passmix

HERE = Path(__file__).resolve().parent

project, author = "passmix", "passmix developers"
release = version = passmix.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.mathjax",
              "numpydoc", "myst_nb"]  # myst_nb brings myst_parser (.md and .ipynb)
templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
myst_heading_anchors = 3
# the committed outputs, as `notebooks/execute.py` left them; the slow test lane checks
# that a fresh run prints the same (tests/test_notebooks.py)
nb_execution_mode = "off"
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's page lists exactly its __all__
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
if os.environ.get("PASSMIX_NUMPYDOC_VALIDATE"):  # structural checks, on request
    numpydoc_validation_checks = {"GL07", "GL08", "PR02", "PR03", "PR06", "PR10", "RT02",
                                  "YD01"}
    numpydoc_validation_exclude = {r"\.__init__$"}
html_theme = "pydata_sphinx_theme"
html_title = f"passmix {release}"

# the notebooks live at the repository's root, where users open them: rendered from a copy
_NOTEBOOKS = HERE / "_notebooks"
shutil.rmtree(_NOTEBOOKS, ignore_errors=True)
_NOTEBOOKS.mkdir()
for _path in sorted((HERE.parent / "notebooks").glob("*.ipynb")):
    shutil.copy2(_path, _NOTEBOOKS / _path.name)

# passmix.readers is an attribute bound to passmix.data.readers, not a module of its own:
# the page is of the module the attribute is
sys.modules["passmix.readers"] = importlib.import_module("passmix.data.readers")

#: modules documented beside the public packages' names (their own __all__)
EXTRA_MODULES = ["passmix.integrations.inspect_ai"]


def public_namespaces() -> list[str]:
    """passmix and every public subpackage (no ``_`` in the path)."""
    return ["passmix"] + [m.name for m in pkgutil.walk_packages(passmix.__path__, "passmix.")
                          if m.ispkg and not any(p.startswith("_") for p in m.name.split("."))]


# aliases: public names bound to another module (passmix.readers); shadowed: names that
# autosummary would import as a same-named submodule (passmix.bayes.sample, the function)
aliases: dict[str, str] = {}
shadowed: dict[str, str] = {}
for _ns in public_namespaces() + EXTRA_MODULES:
    _mod = importlib.import_module(_ns)
    for _name in getattr(_mod, "__all__", []):
        _full, _lazy = f"{_ns}.{_name}", vars(_mod).get("__getattr__")
        _value = _lazy(_name) if _lazy else getattr(_mod, _name)
        if isinstance(_value, types.ModuleType) and _value.__name__ != _full:
            aliases[_full] = _value.__name__
        try:
            _sub = importlib.import_module(_full)
        except ImportError:
            continue
        if _sub is not _value:
            shadowed[_full] = f"{_sub.__name__}.{_name}"
# classes whose methods partly live in bases of passmix's own (PooledFit's private mixins,
# the generic LikelihoodResult of MixtureFit and ZeroInflatedFit): their pages list the
# inherited methods too
inherit = sorted(
    f"{_ns}.{_name}" for _ns in public_namespaces() + EXTRA_MODULES
    for _name in getattr(importlib.import_module(_ns), "__all__", [])
    if isinstance(_cls := getattr(importlib.import_module(_ns), _name, None), type)
    and any(b.__module__.rpartition(".")[0] == _cls.__module__.rpartition(".")[0]
            and b.__module__.rpartition(".")[2].startswith("_")
            or b.__module__ == "passmix.inference.results" for b in _cls.__mro__[1:]))
autosummary_context = {"aliases": aliases, "shadowed": shadowed, "inherit": inherit}


def _data_docstring(app, what, name, obj, options, lines):
    """Re-exported data gets the ``#:`` comment where it is defined, not its type's docstring."""
    if what != "data":
        return
    from sphinx.pycode import ModuleAnalyzer

    namespace, _, attr = name.rpartition(".")
    for modname, module in sorted(sys.modules.items()):
        if modname.startswith(namespace + ".") and getattr(module, attr, None) is obj:
            try:
                comment = ModuleAnalyzer.for_module(modname).find_attr_docs().get(("", attr))
            except Exception:  # a module without source (compiled): nothing to read
                comment = None
            if comment:
                lines[:] = list(comment)
                return
    if type(obj).__doc__ and "\n".join(lines).strip() == type(obj).__doc__.strip():
        lines[:] = []


def setup(app):
    app.connect("autodoc-process-docstring", _data_docstring, priority=400)  # before numpydoc
    # A class in two __all__ lists gets two pages, each `:canonical:` its real path, and
    # Sphinx calls the second canonical alias a duplicate (sphinx-doc/sphinx#10348): the
    # first is kept
    from sphinx.domains.python import PythonDomain

    note_object = PythonDomain.note_object

    def note_object_once(self, name, objtype, node_id, aliased=False, location=None):
        if aliased and name in self.objects and self.objects[name].aliased:
            return
        note_object(self, name, objtype, node_id, aliased=aliased, location=location)

    PythonDomain.note_object = note_object_once
