"""The compiled metric logit of the profile search against the numpy path and against
finite differences of itself."""

import numpy as np
import pytest

from passmix._logit_kernel import mixture_logit
from passmix.metrics import evaluate_logit
from passmix.models.mixture.parameters import bounds, unpack, unpack_jacobian

METRICS = ("pass@k", "pass^k", "auc@k")
HORIZONS = (1, 2, 10, 63, 64, 65, 100, 1000, 2000, 2001, 10**4, 10**6, 10**12, 10**18)


def _numpy_logit(metric, z, h, k):
    mixture = unpack(z, h)
    u, (d_w, d_a, d_b) = evaluate_logit(metric, *mixture, np.array([k]))
    return float(u[0]), np.concatenate([d_w[0], d_a[0], d_b[0]]) @ unpack_jacobian(z, h, mixture)


def _points(seed, n):
    """Coordinates over the whole box (shapes from ~1e-80 to ~1e6) and near the origin."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        h = int(rng.integers(1, 5))
        box = bounds(h)
        z = (rng.uniform(box[:, 0], box[:, 1]) if i % 2 else
             np.clip(rng.normal(0.0, 2.0, 3 * h - 1), box[:, 0], box[:, 1]))
        yield h, z, METRICS[i % 3], int(rng.choice(HORIZONS))


@pytest.mark.parametrize("seed", [0, 1])
def test_value_matches_the_numpy_path(seed):
    """The logit to rounding wherever the numpy path gives one, from the box's corners
    to horizons of 1e18 (AUC@k to 1e-8: its complement is a difference near 1)."""
    checked = 0
    with np.errstate(all="ignore"):
        for h, z, metric, k in _points(seed, 1500):
            ref, _ = _numpy_logit(metric, z, h, k)
            got, grad = mixture_logit(metric, z, h, k)
            assert grad.shape == z.shape
            if not np.isfinite(ref):
                assert got == ref or (np.isnan(ref) and np.isnan(got)), (metric, h, k, z)
                continue
            tol = 1e-8 if metric == "auc@k" else 1e-12
            assert abs(got - ref) <= tol * (1.0 + abs(ref)), (metric, h, k, z, got, ref)
            checked += 1
    assert checked > 1300


@pytest.mark.parametrize("seed", [2, 3])
def test_gradient_matches_the_numpy_path_and_finite_differences(seed):
    """Where the metric is not within ~3e-4 of 0 or 1 (where the gradient's own
    cancellations set its precision), the gradient equals the numpy chain rule and a
    central difference of the compiled logit."""
    checked = 0
    with np.errstate(all="ignore"):
        for h, z, metric, k in _points(seed, 1500):
            value, grad = mixture_logit(metric, z, h, k)
            if not (np.isfinite(value) and abs(value) < 8.0):
                continue
            _, ref = _numpy_logit(metric, z, h, k)
            scale = 1.0 + np.max(np.abs(ref))
            np.testing.assert_allclose(grad, ref, rtol=0, atol=1e-6 * scale,
                                       err_msg=f"{metric} h={h} k={k} z={z}")
            step = 1e-5
            central = np.array([
                (mixture_logit(metric, z + step * e, h, k)[0]
                 - mixture_logit(metric, z - step * e, h, k)[0]) / (2 * step)
                for e in np.eye(z.size)])
            np.testing.assert_allclose(grad, central, rtol=0, atol=1e-4 * scale,
                                       err_msg=f"{metric} h={h} k={k} z={z}")
            checked += 1
    assert checked > 300
