"""The flat layout's module paths: each warns once and forwards to where its contents live now."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import passmix
from passmix._deprecated import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_forwards(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated: import from {MOVED[old]}"):
        alias = importlib.import_module(old)
    names = getattr(new, "__all__", ())
    assert names, MOVED[old]
    for name in names:
        assert getattr(alias, name) is getattr(new, name), (old, name)
    assert set(names) <= set(dir(alias))


def test_old_path_warning_points_at_the_importing_line():
    # shown by Python's default filter, which shows DeprecationWarning in __main__ only
    code = "import passmix.mixture\nfrom passmix.pooled import fit_pooled\n"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stderr
    assert "<string>:1: DeprecationWarning: passmix.mixture is deprecated" in err
    assert "<string>:2: DeprecationWarning: passmix.pooled is deprecated" in err


def test_old_names_still_reach_the_same_objects():
    with pytest.warns(DeprecationWarning):
        sys.modules.pop("passmix.mixture", None)
        from passmix.mixture import MixtureFit
    assert MixtureFit is passmix.MixtureFit


@pytest.mark.parametrize("package", ["data", "models", "inference", "bayes", "plots",
                                     "estimators"])
def test_packages_list_and_load_their_names(package):
    module = getattr(passmix, package)
    assert module is importlib.import_module(f"passmix.{package}")
    for name in module.__all__:
        assert name in dir(module)
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        module.nope


def test_importing_a_layer_does_not_import_pymc():
    code = ("import sys\nimport passmix.models, passmix.bayes, passmix.plots, passmix.estimators\n"
            "print(any(m.split('.')[0] in ('pymc', 'pytensor', 'arviz', 'matplotlib') "
            "for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False"]


@pytest.mark.parametrize("old, name", [("passmix.pooled_posterior", "sample_pooled"),
                                       ("passmix.posterior_plots", "plot_trace")])
def test_bayes_and_plot_aliases_reach_their_functions(old, name):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=old):
        alias = importlib.import_module(old)
    assert getattr(alias, name) is getattr(importlib.import_module(MOVED[old]), name)
