"""The PyMC model and its compiled objective against scipy.stats and finite differences."""

import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import betabinom

from passmix.models.mixture.graph import (
    bounds,
    build_model,
    coordinate_names,
    get_objective,
    n_free_parameters,
    pack,
    unpack,
    unpack_jacobian,
)


def _scipy_loglik(z, h, y, m, weight):
    w, a, b = unpack(z, h)
    pmf = betabinom.pmf(y[:, None], m[:, None], a[None, :], b[None, :])
    return float(np.sum(weight * np.log(pmf @ w)))


def _data(rng, n=12, m_max=15):
    m = rng.integers(1, m_max, n)
    y = rng.integers(0, m + 1)
    return y, m, rng.integers(1, 5, n).astype(float)


class TestObjective:
    @pytest.mark.parametrize("h", [1, 2, 3, 4])
    def test_logp_equals_scipy_betabinom(self, h):
        rng = np.random.default_rng(h)
        y, m, weight = _data(rng)
        obj = get_objective(h)
        obj.set_data(y, m, weight)
        for _ in range(3):
            z = rng.normal(0, 1, n_free_parameters(h))
            assert obj.logp_dlogp(z)[0] == pytest.approx(_scipy_loglik(z, h, y, m, weight),
                                                         rel=1e-12)

    @pytest.mark.parametrize("h", [1, 2, 3])
    def test_gradient_equals_finite_differences(self, h):
        rng = np.random.default_rng(10 + h)
        y, m, weight = _data(rng)
        obj = get_objective(h)
        obj.set_data(y, m, weight)
        z = rng.normal(0, 1, n_free_parameters(h))
        eps = 1e-6
        fd = [(obj.logp_dlogp(z + eps * e)[0] - obj.logp_dlogp(z - eps * e)[0]) / (2 * eps)
              for e in np.eye(z.size)]
        assert_allclose(obj.logp_dlogp(z)[1], fd, rtol=1e-6, atol=1e-6)

    def test_hessian_equals_second_differences_of_logp(self):
        rng = np.random.default_rng(5)
        y, m, weight = _data(rng)
        obj = get_objective(2)
        obj.set_data(y, m, weight)
        z = rng.normal(0, 0.5, 5)
        eps = 1e-4
        f = lambda v: obj.logp_dlogp(v)[0]  # noqa: E731
        eye = np.eye(5)
        fd = np.array([[(f(z + eps * (ei + ej)) - f(z + eps * (ei - ej))
                         - f(z - eps * (ei - ej)) + f(z - eps * (ei + ej))) / (4 * eps**2)
                        for ej in eye] for ei in eye])
        assert_allclose(obj.hessian(z), fd, rtol=1e-4, atol=1e-4)

    def test_compiled_once_and_data_swapped_in_place(self):
        obj = get_objective(2)
        fn = obj._fn
        assert get_objective(2) is obj
        rng = np.random.default_rng(0)
        z = rng.normal(0, 1, 5)
        for n in (3, 40, 7):  # data of different sizes through the same function
            y, m, weight = _data(rng, n=n)
            obj.set_data(y, m, weight)
            assert obj._fn is fn
            assert obj.logp_dlogp(z)[0] == pytest.approx(_scipy_loglik(z, 2, y, m, weight),
                                                         rel=1e-12)

    def test_a_view_evaluates_only_data_it_set(self):
        one, two = get_objective(1), get_objective(2)
        assert one._fn is two._fn  # the views of one switchable graph
        y, m = np.array([0, 2, 5]), np.array([5, 5, 5])
        one.set_data(y, m, np.ones(3))
        value = one.logp_dlogp(np.zeros(2))[0]
        two.set_data(y, m, np.ones(3))  # switches the second component on
        with pytest.raises(RuntimeError, match="call set_data first"):
            one.logp_dlogp(np.zeros(2))
        one.set_data(y, m, np.ones(3))
        assert one.logp_dlogp(np.zeros(2))[0] == value

    def test_extreme_means_stay_finite(self):
        # a component mean at logit ~155 gives beta ~ 1e-68; (beta + m) - y would round to 0
        obj = get_objective(2)
        obj.set_data(np.arange(6), np.full(6, 5), np.array([9, 8, 2, 5, 3, 3.0]))
        logp, grad = obj.logp_dlogp(np.array([2.856, 7.306, 5.0, 3.601, 0.508]))
        assert np.isfinite(logp) and np.all(np.isfinite(grad))


def _store_and_load(path, fn, values, z, rounds=3):
    """One worker: store the function, load it back, evaluate; None if a load failed."""
    from passmix.models.mixture import graph as model

    got = []
    for _ in range(rounds):
        model._store_cached(path, fn)
        loaded = model._load_cached(path)
        if loaded is None:
            return None
        data = {v.name: v for v in loaded.get_shared()}
        for name, value in values.items():
            data[name].set_value(value)
        got.append(float(loaded(z)[0]))
    return got[-1] if len(set(got)) == 1 else None


class TestDiskCache:
    """The compiled objective kept on disk between processes gives the same numbers."""

    def test_round_trip_gives_the_same_logp_and_gradient(self, tmp_path):
        from passmix.models.mixture import graph as model

        shared = model._compiled(model.OBJECTIVE_CAPACITY)
        path = tmp_path / "objective.pkl"
        model._store_cached(path, shared.fn)
        loaded = model._load_cached(path)
        assert loaded is not None and loaded is not shared.fn
        data = {v.name: v for v in loaded.get_shared()}
        rng = np.random.default_rng(3)
        y, m, weight = _data(rng)
        values = {**model.pair_data(y, m, weight), "active": np.array([1.0, 1.0, 0.0, 0.0])}
        z = rng.normal(0, 1, model.n_free_parameters(model.OBJECTIVE_CAPACITY))
        with shared.lock:
            for name, value in values.items():
                data[name].set_value(value)
                shared.data[name].set_value(value)
            want = shared.fn(z)
        got = loaded(z)
        assert float(got[0]) == pytest.approx(float(want[0]), rel=1e-14)
        assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-15)
        # and it is the H = 2 likelihood scipy computes
        h2 = get_objective(2)
        zz = z[h2._embed]
        assert float(got[0]) == pytest.approx(_scipy_loglik(zz, 2, y, m, weight), rel=1e-12)

    def test_unreadable_or_foreign_files_are_rebuilt(self, tmp_path):
        import pytensor
        import pytensor.tensor as pt

        from passmix.models.mixture import graph as model

        junk = tmp_path / "junk.pkl"
        junk.write_bytes(b"not a pickle")
        assert model._load_cached(junk) is None
        assert model._load_cached(tmp_path / "absent.pkl") is None
        x = pt.dvector("x")
        other = pytensor.function([x], x.sum(), mode="FAST_COMPILE")
        foreign = tmp_path / "foreign.pkl"
        foreign.write_bytes(pickle.dumps(other))
        assert model._load_cached(foreign) is None  # no data containers of the model
        model._store_cached(tmp_path / "nodir" / "sub" / "x.pkl", other)  # makes the folders
        assert (tmp_path / "nodir" / "sub" / "x.pkl").is_file()
        # storing prunes files of the same capacity not written for a month, and no other
        old, recent = (tmp_path / f"objective-4-{n}.pkl" for n in ("old", "new"))
        for f in (old, recent):
            f.write_bytes(b"")
        other_h = tmp_path / "objective-5-old.pkl"
        other_h.write_bytes(b"")
        month = 31 * 24 * 3600
        os.utime(old, (old.stat().st_atime - month, old.stat().st_mtime - month))
        os.utime(other_h, (other_h.stat().st_atime - month, other_h.stat().st_mtime - month))
        model._store_cached(tmp_path / "objective-4-current.pkl", other)
        assert not old.exists() and recent.exists() and other_h.exists()
        assert not list(tmp_path.glob("*.tmp"))

    def test_switched_off_and_keyed_by_what_it_is_made_of(self, monkeypatch):
        import pytensor

        from passmix.models.mixture import graph as model

        path = model._cache_path(4)
        assert path.parent == Path(pytensor.config.compiledir) / "passmix"
        assert model._cache_path(5) != path
        monkeypatch.setenv(model.CACHE_ENV, "0")
        assert model._cache_path(4) is None

    def test_an_unwritable_cache_is_skipped(self, tmp_path):
        from passmix.models.mixture import graph as model

        fn = model._compiled(model.OBJECTIVE_CAPACITY).fn
        # a folder that cannot be made (its parent is a file: unwritable even for root)
        blocker = tmp_path / "file"
        blocker.write_bytes(b"")
        model._store_cached(blocker / "passmix" / "objective.pkl", fn)  # no error
        assert not (blocker.parent / "passmix").exists()
        assert model._load_cached(blocker / "passmix" / "objective.pkl") is None

    def test_an_unmakeable_compile_directory_falls_back_with_a_warning(self, tmp_path):
        # PyTensor itself refuses to import then; passmix points it elsewhere and warns
        blocker = tmp_path / "file"
        blocker.write_bytes(b"")
        code = ("import warnings\n"
                "with warnings.catch_warnings(record=True) as w:\n"
                "    warnings.simplefilter('always')\n"
                "    from passmix.models.mixture.graph import _cache_path\n"
                "    path = _cache_path(4)\n"
                "import pytensor\n"
                "print(pytensor.config.base_compiledir)\n"
                "print(any('compile directory' in str(x.message) for x in w))\n"
                "print(path is not None and str(path).startswith(str(pytensor.config.compiledir)))")
        env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={blocker / 'pt'}")
        env.pop("PASSMIX_OBJECTIVE_CACHE", None)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        base, warned, under = out.stdout.split()
        assert "passmix-pytensor" in base and not base.startswith(str(blocker))
        assert warned == "True" and under == "True"

    def test_a_truncated_file_is_rebuilt(self, tmp_path):
        from passmix.models.mixture import graph as model

        fn = model._compiled(model.OBJECTIVE_CAPACITY).fn
        path = tmp_path / "objective.pkl"
        model._store_cached(path, fn)
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 2])  # e.g. a disk that filled up
        assert model._load_cached(path) is None

    def test_concurrent_writers_leave_a_whole_file(self, tmp_path):
        """Forked workers (``--jobs``) storing and loading one file at once."""
        import multiprocessing

        from passmix.models.mixture import graph as model

        if "fork" not in multiprocessing.get_all_start_methods():
            pytest.skip("needs fork")
        shared = model._compiled(model.OBJECTIVE_CAPACITY)
        path = tmp_path / "objective.pkl"
        rng = np.random.default_rng(5)
        y, m, weight = _data(rng)
        z = rng.normal(0, 1, model.n_free_parameters(model.OBJECTIVE_CAPACITY))
        values = {**model.pair_data(y, m, weight), "active": np.ones(model.OBJECTIVE_CAPACITY)}
        with shared.lock:
            for name, value in values.items():
                shared.data[name].set_value(value)
            want = float(shared.fn(z)[0])
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(4) as pool:
            seen = pool.starmap(_store_and_load, [(path, shared.fn, values, z)] * 8)
        # every load saw a whole function (never a partial file), and the same numbers
        assert all(v is not None and v == pytest.approx(want, rel=1e-14) for v in seen)
        assert not list(tmp_path.glob("*.tmp"))
        loaded = model._load_cached(path)
        assert loaded is not None

    def test_the_flags_pymc_sets_are_the_ones_loading_uses(self):
        # loading without PyMC links under pymc_cxxflags; if PyMC's own drift, every
        # warm process would compile its C modules again (slow, not wrong): catch it
        code = ("import pytensor\nbefore = pytensor.config.gcc__cxxflags\n"
                "import pymc\nfrom passmix._pytensor import pymc_cxxflags\n"
                "print(pymc_cxxflags(before) == pytensor.config.gcc__cxxflags)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, timeout=300)
        assert out.stdout.split()[-1] == "True"

    @pytest.mark.slow
    def test_a_second_process_compiles_nothing_after_a_cold_first(self, tmp_path):
        """From empty caches, the first process compiles; the next loads (no C modules)."""
        code = ("import time\nfrom passmix.models.mixture.graph import _compiled\n"
                "t = time.perf_counter(); _compiled(4); print(time.perf_counter() - t)")
        env = {k: v for k, v in os.environ.items() if k != "PASSMIX_OBJECTIVE_CACHE"}
        env["PYTENSOR_FLAGS"] = f"base_compiledir={tmp_path / 'pt'}"
        modules = []
        for _ in range(2):
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env=env, timeout=1200)
            modules.append(sorted(p.name for p in (tmp_path / "pt").rglob("*.so")))
        assert modules[0] and modules[1] == modules[0]
        assert list((tmp_path / "pt").rglob("passmix/objective-4-*.pkl"))

    def test_a_new_process_loads_it_without_pymc(self):
        from passmix.models.mixture import graph as model

        if model._cache_path(model.OBJECTIVE_CAPACITY) is None:
            pytest.skip(f"{model.CACHE_ENV}=0 in this environment")
        model._compiled(model.OBJECTIVE_CAPACITY)  # written by this process if absent
        rng = np.random.default_rng(8)
        y, m, weight = _data(rng)
        z = rng.normal(0, 1, 5)
        code = (
            "import sys, numpy as np\n"
            "from passmix.models.mixture.graph import get_objective\n"
            "obj = get_objective(2)\n"
            f"obj.set_data(np.array({y.tolist()}), np.array({m.tolist()}), "
            f"np.array({weight.tolist()}))\n"
            f"print(repr(obj.logp_dlogp(np.array({z.tolist()}))[0]), 'pymc' in sys.modules)\n"
        )
        env = {k: v for k, v in os.environ.items() if k != model.CACHE_ENV}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=env).stdout.split()
        assert out[1] == "False"
        assert float(out[0]) == pytest.approx(_scipy_loglik(z, 2, y, m, weight), rel=1e-12)


class TestModel:
    @pytest.mark.parametrize("h", [1, 3])
    def test_unpack_matches_pymc_deterministics(self, h):
        import pymc as pm
        import pytensor

        model = build_model(h)
        rng = np.random.default_rng(h)
        z = rng.normal(0, 1, n_free_parameters(h))
        point, start = {}, 0
        for rv in model.free_RVs:
            size = int(np.prod(model.initial_point()[rv.name].shape))
            point[rv.name] = z[start:start + size].reshape(model.initial_point()[rv.name].shape)
            start += size
        outs = model.replace_rvs_by_values([model["weights"], model["alpha"], model["beta"]])
        fn = pytensor.function(model.value_vars, outs, on_unused_input="ignore")
        got = fn(*[point[v.name] for v in model.value_vars])
        for a, b in zip(got, unpack(z, h)):
            assert_allclose(a, b, rtol=1e-12)
        assert isinstance(model, pm.Model)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="n_components"):
            build_model(0)
        with pytest.raises(ValueError, match="unknown prior"):
            build_model(1, prior="horseshoe")

    def test_names_and_bounds(self):
        assert coordinate_names(2) == ["logit_weights[0]", "logit_mean_first",
                                       "log_mean_gaps[0]", "log_concentration[0]",
                                       "log_concentration[1]"]
        assert bounds(3).shape == (8, 2)


class TestParameterisation:
    @pytest.mark.parametrize("h", [1, 2, 4])
    def test_pack_inverts_unpack(self, h):
        rng = np.random.default_rng(h)
        z = rng.normal(0, 1, n_free_parameters(h))
        w, a, b = unpack(z, h)
        assert_allclose(pack(w, np.log(a / b), np.log(a + b)), z, atol=1e-10)

    def test_pack_keeps_underflowing_shapes_and_empty_weights(self):
        # a mean of expit(-800) has beta = 0 in floating point, a weight may be 0:
        # the coordinates stay finite, with no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            z = pack([0.0, 1.0], [-800.0, 0.5], [np.log(3.0), np.log(7.0)])
        assert np.all(np.isfinite(z))
        assert z[1] == -800.0

    def test_means_ordered_and_weights_simplex(self):
        rng = np.random.default_rng(1)
        z = rng.normal(0, 2, (50, 11))
        w, a, b = unpack(z, 4)
        assert np.all(np.diff(a / (a + b), axis=-1) >= 0)
        assert_allclose(w.sum(-1), 1.0)

    @pytest.mark.parametrize("h", [1, 2, 3])
    def test_jacobian_equals_finite_differences(self, h):
        rng = np.random.default_rng(20 + h)
        z = rng.normal(0, 1, n_free_parameters(h))
        eps = 1e-6
        flat = lambda v: np.concatenate(unpack(v, h))  # noqa: E731
        fd = np.column_stack([(flat(z + eps * e) - flat(z - eps * e)) / (2 * eps)
                              for e in np.eye(z.size)])
        assert_allclose(unpack_jacobian(z, h), fd, rtol=1e-6, atol=1e-8)


class TestBackend:
    def test_an_unknown_backend_is_an_error_naming_it(self, monkeypatch):
        from passmix._pytensor import BACKEND_ENV, backend

        monkeypatch.setenv(BACKEND_ENV, "jax")
        with pytest.raises(ValueError, match="'jax'.*c, numba"):
            backend()
        monkeypatch.setenv(BACKEND_ENV, "NUMBA")
        assert backend() == "numba"
        monkeypatch.delenv(BACKEND_ENV)
        assert backend() == "c"

    @pytest.mark.slow
    def test_numba_reaches_the_optima_of_c(self):
        """PASSMIX_BACKEND=numba: the same optima on the bundled MATH data (1e-6)."""
        import json

        code = (
            "import json, warnings, passmix\n"
            "from passmix.examples import example_path\n"
            "warnings.simplefilter('ignore')\n"
            "g = passmix.read_counts(example_path('math_m10'), group_by=['model'])\n"
            "out = {'/'.join(k): passmix.fit(c, seed=0).loglik for k, c in g.items()}\n"
            "out['pooled'] = passmix.fit_pooled(example_path('math_m10'), system='model',"
            " seed=0).loglik\n"
            "from passmix.models.mixture.graph import get_objective\n"
            "out['linker'] = type(get_objective(2)._fn.maker.linker).__name__\n"
            "print(json.dumps(out))")
        env = dict(os.environ, PASSMIX_BACKEND="numba")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=1800)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert "Numba" in got.pop("linker")
        ref = json.loads((Path(__file__).parent / "data" / "optima" / "a389681.json")
                         .read_text())
        for key, loglik in got.items():
            want = ref["pooled|math_m10" if key == "pooled" else f"mixture|math_m10|{key}"][1]
            assert loglik == pytest.approx(want, abs=1e-6), key
