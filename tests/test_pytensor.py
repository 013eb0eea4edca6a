"""PyTensor under passmix: the backend is one of PyTensor's public modes, its cache carries
compiled functions between processes, and both backends reach the same optima."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from passmix._pytensor import BACKEND_ENV, backend, compile_mode

REFERENCE = Path(__file__).parent / "data" / "optima" / "a389681.json"

# the bundled MATH models' fits: their log-likelihoods, and the linker that computed them
_FITS = (
    "import json, warnings, passmix\n"
    "from passmix.examples import example_path\n"
    "warnings.simplefilter('ignore')\n"
    "g = passmix.read_counts(example_path('math_m10'), group_by=['model'])\n"
    "out = {'/'.join(k): passmix.fit(c, seed=0).loglik for k, c in g.items()}\n"
    "out['pooled'] = passmix.fit_pooled(example_path('math_m10'), system='model',"
    " seed=0).loglik\n"
    "print(json.dumps(out))")


def _fresh(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A process environment with empty PyTensor and numba caches under `tmp_path`."""
    return dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pt'}",
                NUMBA_CACHE_DIR=str(tmp_path / "numba"), HOME=str(tmp_path / "home"), **extra)


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=1800)
    assert out.returncode == 0, out.stderr
    return out


class TestBackend:
    @pytest.mark.unit
    def test_numba_by_default_c_on_request_and_an_unknown_one_named(self, monkeypatch):
        monkeypatch.delenv(BACKEND_ENV, raising=False)
        assert backend() == "numba"
        assert "numba" in type(compile_mode().linker).__name__.lower()
        monkeypatch.setenv(BACKEND_ENV, " C ")
        assert backend() == "c"
        linker = type(compile_mode(keep_buffers=True).linker).__name__
        assert "numba" not in linker.lower() and "VM" in linker
        monkeypatch.setenv(BACKEND_ENV, "jax")
        with pytest.raises(ValueError, match="PASSMIX_BACKEND='jax'.*numba, c"):
            backend()

    @pytest.mark.study
    @pytest.mark.slow
    def test_c_reaches_the_optima_of_the_default(self):
        """PASSMIX_BACKEND=c: the optima recorded on the old stack, as the default reaches."""
        got = json.loads(_run(_FITS, dict(os.environ, PASSMIX_BACKEND="c")).stdout.strip()
                         .splitlines()[-1])
        ref = json.loads(REFERENCE.read_text())
        for key, loglik in got.items():
            want = ref["pooled|math_m10" if key == "pooled" else f"mixture|math_m10|{key}"][1]
            assert loglik == pytest.approx(want, abs=1e-6), key

    @pytest.mark.study
    @pytest.mark.slow
    def test_no_blas_warning_in_python(self):
        """Issue 35: PyTensor 2's "could not link to a BLAS installation" warning showed on
        the first fit_pooled, compare or rank in Python. The default backend never asks
        PyTensor for BLAS flags, so a fresh process warns nothing of the kind."""
        code = ("import warnings, passmix\n"
                "from passmix.examples import example_path\n"
                "warnings.simplefilter('always')\n"
                "with warnings.catch_warnings(record=True) as w:\n"
                "    warnings.simplefilter('always')\n"
                "    panel = passmix.Panel.read(example_path('math_m10'), 'model')\n"
                "    passmix.fit_pooled(panel, seed=0)\n"
                "    passmix.compare(panel, 'Pythia 1B', 'Pythia 2.8B', k=[10])\n"
                "    passmix.rank(panel, [1])\n"
                "print(sum('BLAS' in str(x.message) for x in w))")
        out = _run(code, dict(os.environ))
        assert "BLAS" not in out.stderr
        assert out.stdout.split()[-1] == "0"


@pytest.mark.slow
class TestCaches:
    @pytest.mark.study
    def test_a_second_process_compiles_nothing_after_a_cold_first(self, tmp_path):
        """From empty caches the first process compiles the objectives and numba keeps them on
        disk (PyTensor's own cache); the next process adds nothing there and gets the same
        optima."""
        env = _fresh(tmp_path)
        first = _run(_FITS, env).stdout
        cached = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
        assert any(p.suffix in (".nbi", ".nbc") for p in cached)
        second = _run(_FITS, env).stdout
        again = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
        assert again == cached
        # the same optima: a cached kernel may differ from the freshly compiled one in the
        # last bits (seen: 1.3e-11 relative in the pooled log-likelihood)
        before, after = json.loads(first.splitlines()[-1]), json.loads(second.splitlines()[-1])
        assert before.keys() == after.keys()
        for key in before:
            assert after[key] == pytest.approx(before[key], rel=1e-9, abs=1e-12), key

    @pytest.mark.study
    def test_an_unmakeable_compile_directory_falls_back_with_a_warning(self, tmp_path):
        # PyTensor itself refuses to import then; passmix points it elsewhere and warns
        blocker = tmp_path / "file"
        blocker.write_bytes(b"")
        code = ("import warnings, numpy as np, passmix\n"
                "with warnings.catch_warnings(record=True) as w:\n"
                "    warnings.simplefilter('always')\n"
                "    fit = passmix.fit(passmix.Counts([0, 2, 5], [5, 5, 5]), seed=0)\n"
                "import pytensor\n"
                "print(pytensor.config.base_compiledir)\n"
                "print(any('compile directory' in str(x.message) for x in w))\n"
                "print(np.isfinite(fit.loglik))")
        env = _fresh(tmp_path)
        env["PYTENSOR_FLAGS"] = f"base_compiledir={blocker / 'pt'}"
        base, warned, finite = _run(code, env).stdout.split()[-3:]
        assert "passmix-pytensor" in base and not base.startswith(str(blocker))
        assert warned == "True" and finite == "True"
