"""passmix._cbuild: PyTensor's missing C modules built ahead, in parallel, and used as built.

Each test compiles a small graph with a constant no earlier run used, so its
C modules are missing from PyTensor's cache however warm that cache is, and
checks the compiled function against numpy and scipy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import special

from passmix import _cbuild
from passmix._pytensor import import_pytensor

import_pytensor()
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pytensor.link import vm  # noqa: E402
from pytensor.link.c import cmodule  # noqa: E402

X = np.array([0.25, 0.5, 1.5, 3.0])


def _fresh_graph():
    """A function of x whose fused C code holds a constant never compiled before, and its
    numpy reference."""
    c = 1.0 + (uuid.uuid4().int % 10**9) / 10**9
    x = pt.dvector("x")
    out = [pt.exp(c * x) * pt.log1p(x + c), pt.gammaln(x + c).sum() + pt.sigmoid(x * c).sum()]

    def reference(v):
        return (np.exp(c * v) * np.log1p(v + c),
                special.gammaln(v + c).sum() + special.expit(v * c).sum())

    return x, out, reference


def _check(fn, reference):
    got = fn(X)
    want = reference(X)
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-13)


def _built(hook: bool = True) -> dict[str, int]:
    """Compile a fresh graph (in the hook's context or not), check its values, and say
    how its modules were built (the change in :data:`passmix._cbuild.STATS`)."""
    x, out, reference = _fresh_graph()
    before = dict(_cbuild.STATS)
    if hook:
        with _cbuild.parallel_c_build():
            fn = pytensor.function([x], out)
    else:
        fn = pytensor.function([x], out)
    _check(fn, reference)
    return {k: _cbuild.STATS[k] - before[k] for k in before}


def test_missing_modules_are_staged_and_pytensor_copies_them(monkeypatch):
    monkeypatch.setenv(_cbuild.WORKERS_ENV, "2")
    done = _built()
    # the fresh constants' modules (at least one) were built ahead, and PyTensor ran
    # no compiler of its own for a module: it copied each staged build
    assert done["staged"] >= 1
    assert done["copied"] == done["staged"]
    assert done["unstaged"] == 0


def test_without_the_context_pytensor_builds_as_always():
    assert _built(hook=False) == {"staged": 0, "copied": 0, "unstaged": 0}


def test_zero_workers_stage_nothing(monkeypatch):
    monkeypatch.setenv(_cbuild.WORKERS_ENV, "0")
    done = _built()
    assert done["staged"] == done["copied"] == 0 and done["unstaged"] >= 1


def test_a_failed_staged_build_is_left_to_pytensor(monkeypatch):
    # every staged compiler run fails: PyTensor builds each module itself, correctly
    monkeypatch.setattr(_cbuild, "_staging_command",
                        lambda cmd: [*cmd[:1], "-this-flag-does-not-exist", *cmd[1:]])
    done = _built()
    assert done["staged"] == done["copied"] == 0 and done["unstaged"] >= 1


def test_a_listing_that_fails_is_left_to_pytensor(monkeypatch):
    def broken(fgraph):
        raise AttributeError("a PyTensor internal moved")

    monkeypatch.setattr(_cbuild, "_missing_modules", broken)
    done = _built()
    assert done["staged"] == 0 and done["unstaged"] >= 1


def test_nested_and_concurrent_contexts_restore_pytensor():
    make_all, popen = vm.VMLinker.make_all, cmodule.output_subprocess_Popen
    results, errors = [], []

    def compile_one():
        try:
            x, out, reference = _fresh_graph()
            with _cbuild.parallel_c_build(), _cbuild.parallel_c_build():
                fn = pytensor.function([x], out)
            results.append((fn, reference))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=compile_one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for fn, reference in results:
        _check(fn, reference)
    assert vm.VMLinker.make_all is make_all
    assert cmodule.output_subprocess_Popen is popen
    assert _cbuild._HOOK["active"] == 0


def test_the_last_context_closing_leaves_a_link_in_progress_whole(monkeypatch):
    """A function still linking in one thread when another closes the last context:
    it finishes with PyTensor's own steps, and is right."""
    started, release = threading.Event(), threading.Event()
    stage = _cbuild._stage

    def slow_stage(linker, build):
        started.set()
        release.wait(60)
        stage(linker, build)

    monkeypatch.setattr(_cbuild, "_stage", slow_stage)
    x, out, reference = _fresh_graph()
    results, errors = [], []

    def compile_fresh():
        try:
            results.append(pytensor.function([x], out))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    context = _cbuild.parallel_c_build()
    context.__enter__()
    thread = threading.Thread(target=compile_fresh)
    thread.start()
    assert started.wait(60)
    context.__exit__(None, None, None)  # the last context closes mid-link
    release.set()
    thread.join(120)
    assert not errors and results
    _check(results[0], reference)


def test_staged_files_go_once_the_function_is_linked(monkeypatch):
    folders = []
    stage = _cbuild._stage

    def record(linker, build):
        folders.append(build.folder)
        stage(linker, build)

    monkeypatch.setattr(_cbuild, "_stage", record)
    _built()
    assert folders and not any(os.path.exists(f) for f in folders)


def test_the_staged_command_keeps_flags_and_drops_debug_information(tmp_path):
    source = tmp_path / "mod.cpp"
    source.write_text("#include <math.h>\n#include <vector>\nint f() { return 0; }\n")
    cmd = ["g++", "-shared", "-g", "-O3", "-fPIC", "-o", str(tmp_path / "m.so"), str(source),
           "-lm"]
    with _cbuild.parallel_c_build():
        build = _cbuild._Build(str(tmp_path))
        staged = _cbuild._staging_command(cmd, build)
        header = _cbuild._header(build, ("g++", "-O3", "-fPIC"), ("#include <math.h>",
                                                                  "#include <vector>"))
    assert "-g" not in staged
    assert [a for a in staged if a not in ("-include", header)] == [a for a in cmd if a != "-g"]
    assert header is not None and header.endswith(_cbuild._HEADER_NAME)


@pytest.mark.parametrize("value, message", [("two", "not a whole number"), ("-1", ">= 0")])
def test_a_bad_worker_count_is_an_error_naming_it(monkeypatch, value, message):
    monkeypatch.setenv(_cbuild.WORKERS_ENV, value)
    with pytest.raises(ValueError, match=f"{_cbuild.WORKERS_ENV}.*{message}"):
        _cbuild.build_workers()


def test_a_cold_compile_directory_stages_every_module(tmp_path):
    """From an empty PyTensor cache, a passmix objective's modules are all built ahead:
    PyTensor itself runs the compiler for none of them, and the objective is right."""
    code = (
        "import numpy as np, passmix._cbuild as cb\n"
        "from passmix.models.mixture.graph import get_objective\n"
        "from scipy.stats import betabinom\n"
        "obj = get_objective(1)\n"
        "y, m = np.array([0, 2, 5]), np.array([5, 5, 5])\n"
        "obj.set_data(y, m, np.ones(3))\n"
        "z = np.array([0.3, 1.2])\n"
        "a, b = np.exp(1.2) / (1 + np.exp(-0.3)), np.exp(1.2) / (1 + np.exp(0.3))\n"
        "want = betabinom.logpmf(y, m, a, b).sum()\n"
        "print(cb.STATS['staged'], cb.STATS['copied'], cb.STATS['unstaged'],"
        " abs(obj.logp_dlogp(z)[0] - want))\n")
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pt'}",
               PASSMIX_OBJECTIVE_CACHE="0", **{_cbuild.WORKERS_ENV: "2"})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=900)
    assert out.returncode == 0, out.stderr
    staged, copied, unstaged, error = out.stdout.split()[-4:]
    # PyTensor's own two extensions (cutils_ext, lazylinker_ext) are built by their imports
    assert int(staged) >= 20 and int(copied) == int(staged) and int(unstaged) <= 2
    assert float(error) < 1e-10
