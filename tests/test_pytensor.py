"""passmix._pytensor: the numba backend's digamma (so its functions cache) and importing PyMC."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import special

from passmix import _pytensor


def test_digamma_matches_scipy():
    numba = pytest.importorskip("numba")
    digamma = numba.njit(_pytensor._digamma, fastmath=False)
    x = np.concatenate([np.logspace(-12, 12, 4001), np.linspace(0.01, 30.0, 3001)])
    got = np.array([digamma(v) for v in x])
    want = special.psi(x)
    # relative, except near the root at 1.4616..., where an absolute 1e-15 is the limit
    assert_allclose(got, want, rtol=2e-15, atol=2e-15)
    negative = -np.linspace(0.013, 20.3, 997)  # no integers
    got = np.array([digamma(v) for v in negative])
    assert_allclose(got, special.psi(negative), rtol=1e-9)
    assert digamma(0.0) == -np.inf and digamma(-0.0) == np.inf and digamma(np.inf) == np.inf
    assert np.isnan(digamma(-3.0)) and np.isnan(digamma(np.nan))
    # far below zero the reflection takes the tangent of the exact fractional part (30 digits)
    import mpmath

    for x in (-123456.789, -999999.999, -1e15 + 0.5, -4503599627370495.5):
        assert digamma(x) == pytest.approx(float(mpmath.digamma(mpmath.mpf(x))), rel=1e-14)
    for x in (-1e19, -1e300):  # integers in floating point: poles
        assert np.isnan(digamma(x))


@pytest.fixture
def numba_backend(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv(_pytensor.BACKEND_ENV, "numba")


def test_numba_functions_of_digamma_compute_it_and_cache(numba_backend):
    import pytensor
    import pytensor.tensor as pt
    from pytensor.link.numba.dispatch.basic import numba_funcify_ensure_cache

    x = pt.dvector("x")
    # the gradient of a log-Beta holds psi, as every passmix objective's does
    out = pt.grad((pt.gammaln(x) + pt.gammaln(2.0 * x) - pt.gammaln(3.0 * x)).sum(), x)
    fn = pytensor.function([x], [out, pt.psi(x)], mode=_pytensor.compile_mode())
    v = np.array([0.3, 1.0, 2.5, 40.0])
    grad, psi = fn(v)
    assert_allclose(psi, special.psi(v), rtol=1e-14)
    want = special.psi(v) + 2 * special.psi(2 * v) - 3 * special.psi(3 * v)
    assert_allclose(grad, want, rtol=1e-12)
    # a cache key: numba keeps the whole function on disk, not just its parts
    assert numba_funcify_ensure_cache(fn.maker.fgraph)[1] is not None


def test_the_objectives_compile_to_cacheable_numba_functions(numba_backend, monkeypatch):
    """Whole-graph cache keys for the mixture's and the pooled model's objectives (before
    passmix's digamma, scipy's, called through a pointer, left both uncacheable)."""
    from pytensor.link.numba.dispatch.basic import numba_funcify_ensure_cache

    from passmix.models.mixture.graph import _compile
    from passmix.models.pooled._graph import _compile_pooled

    for fn in (_compile(2), _compile_pooled("normal")):
        assert "Numba" in type(fn.maker.linker).__name__
        assert numba_funcify_ensure_cache(fn.maker.fgraph)[1] is not None


@pytest.mark.slow
def test_a_second_numba_process_loads_the_objective_from_the_cache(tmp_path):
    """With empty caches the first process compiles the objective's numba function; the
    second loads it (a cache hit for the whole graph: the pickled function gives it the
    same key, which PyTensor's rewrites, ordering commutative inputs per process, do not)."""
    code = (
        "import json, numpy as np\n"
        "from passmix.models.mixture.graph import get_objective\n"
        "obj = get_objective(2)\n"
        "obj.set_data(np.array([0, 3, 5]), np.array([5, 5, 5]), np.ones(3))\n"
        "value = obj.logp_dlogp(np.array([0.1, -0.2, 0.3, 1.0, 0.5]))[0]\n"
        "stats = obj._fn.vm.jit_fn.stats\n"
        "print(json.dumps([value, sum(stats.cache_hits.values()),"
        " sum(stats.cache_misses.values())]))\n")
    env = {k: v for k, v in os.environ.items() if k != _pytensor.CACHE_ENV}
    env.update(PASSMIX_BACKEND="numba", PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pt'}",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), HOME=str(tmp_path / "home"))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=1200)
        assert out.returncode == 0, out.stderr
        runs.append(eval(out.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own json
    (first, hits_1, misses_1), (second, hits_2, misses_2) = runs
    assert first == pytest.approx(second, rel=1e-14)
    assert misses_1 >= 1 and hits_2 >= 1 and misses_2 == 0


def test_import_pymc_hides_arviz_notice(tmp_path):
    """ArviZ's notice comes once a day per user cache: a fresh home sees it on ``import
    pymc`` (the check that this test can fail), and not through ``import_pymc``."""
    def run(code, home):
        env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / "cache"))
        return subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", code],
                              capture_output=True, text=True, timeout=300, env=env)

    plain = run("import pymc", tmp_path / "a")
    if plain.returncode == 0:
        pytest.skip("this ArviZ no longer warns on import")
    assert "ArviZ is undergoing a major refactor" in plain.stderr
    ours = run("from passmix._pytensor import import_pymc; print(import_pymc().__name__)",
               tmp_path / "b")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.split()[-1] == "pymc"
    # the pooled posterior's module imports ArviZ itself
    pooled = run("import passmix; print(passmix.sample_pooled.__name__)", tmp_path / "c")
    assert pooled.returncode == 0, pooled.stderr


_SMALL_NUMBA = (
    "import json, os, numpy as np\n"
    "from passmix._pytensor import compile_mode, import_pytensor\n"
    "import_pytensor()\n"
    "import pytensor, pytensor.tensor as pt\n"
    "x = pt.dvector('x')\n"
    "fn = pytensor.function([x], pt.grad(pt.gammaln(2.0 * x).sum(), x), mode=compile_mode())\n"
    "value = fn(np.array([0.5, 3.0])).tolist()\n"
    "linker = type(fn.maker.linker).__name__\n"
    "hits = sum(fn.vm.jit_fn.stats.cache_hits.values()) if 'Numba' in linker else -1\n"
    "print(json.dumps([value, linker, hits]))\n")


def _run_small(env, wait=True):
    proc = subprocess.Popen([sys.executable, "-c", _SMALL_NUMBA], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _numba_env(compiledir):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(PASSMIX_BACKEND="numba", PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    return env


def test_numba_cache_corrupt_or_filled_at_once_is_never_a_crash(tmp_path):
    """Two processes fill an empty numba cache at once; then every cache file is garbled:
    the next process compiles again (same values) and rewrites the entries, so the one
    after it loads them."""
    pytest.importorskip("numba")
    env = _numba_env(tmp_path / "pt")
    want = (2 * special.psi(np.array([1.0, 6.0]))).tolist()
    procs = [_run_small(env, wait=False) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert_allclose(json.loads(out.strip().splitlines()[-1])[0], want, rtol=1e-13)
    files = [p for p in (tmp_path / "pt" / "numba").iterdir() if p.is_file()]
    assert files
    for path in files:
        path.write_bytes(os.urandom(64))
    (value, linker, hits), _ = _run_small(env)
    assert "Numba" in linker and hits == 0
    assert_allclose(value, want, rtol=1e-13)
    (value, linker, hits), _ = _run_small(env)
    assert hits >= 1
    assert_allclose(value, want, rtol=1e-13)


def test_numba_that_cannot_make_its_cache_falls_back_to_c(tmp_path):
    pytest.importorskip("numba")
    (tmp_path / "pt").mkdir()
    (tmp_path / "pt" / "numba").write_bytes(b"")  # a file where the folder should be
    (value, linker, hits), err = _run_small(_numba_env(tmp_path / "pt"))
    assert "Numba" not in linker and "compiling with C instead" in err
    assert_allclose(value, (2 * special.psi(np.array([1.0, 6.0]))).tolist(), rtol=1e-9)
