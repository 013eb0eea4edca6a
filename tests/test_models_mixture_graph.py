"""The PyMC model and its compiled objective against scipy.stats and finite differences."""

import warnings

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
        fn = obj.function
        assert get_objective(2) is obj
        rng = np.random.default_rng(0)
        z = rng.normal(0, 1, 5)
        for n in (3, 40, 7):  # data of different sizes through the same function
            y, m, weight = _data(rng, n=n)
            obj.set_data(y, m, weight)
            assert obj.function is fn
            assert obj.logp_dlogp(z)[0] == pytest.approx(_scipy_loglik(z, 2, y, m, weight),
                                                         rel=1e-12)

    def test_a_view_evaluates_only_data_it_set(self):
        one, two = get_objective(1), get_objective(2)
        assert one.function is two.function  # the views of one switchable graph
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

    @pytest.mark.unit
    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="n_components"):
            build_model(0)
        with pytest.raises(ValueError, match="unknown prior"):
            build_model(1, prior="horseshoe")

    @pytest.mark.unit
    def test_names_and_bounds(self):
        assert coordinate_names(2) == ["logit_weights[0]", "logit_mean_first",
                                       "log_mean_gaps[0]", "log_concentration[0]",
                                       "log_concentration[1]"]
        assert bounds(3).shape == (8, 2)


@pytest.mark.unit
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
