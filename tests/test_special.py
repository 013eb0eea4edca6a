"""Log rising-factorial ratios against 60-digit mpmath and exact rationals."""

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import digamma

from passmix._special import (expm1_ratio, log_binom_ratio, log_rising_ratio,
                              log_rising_ratio_per_d, stirling_tail)

#: no test here compiles a graph: the unit lane (pytest -m unit)
pytestmark = pytest.mark.unit


def reference(x, d, k):
    """log prod_{i<k} (x + i) / (x + d + i) in high precision.

    Short products are summed term by term; long ones use log-gamma with a
    working precision raised until two precisions agree to 30 digits (the
    log-gamma values can exceed the result by hundreds of orders).
    """
    if k <= 300:
        with mp.workdps(60):
            xs, ds = mp.mpf(x), mp.mpf(d)
            return -mp.fsum(mp.log1p(ds / (xs + i)) for i in range(int(k)))
    previous = None
    for dps in (200, 400, 800, 1600):
        with mp.workdps(dps):
            xs, ds, ks = mp.mpf(x), mp.mpf(d), mp.mpf(k)
            value = (mp.loggamma(xs + ks) + mp.loggamma(xs + ds) - mp.loggamma(xs)
                     - mp.loggamma(xs + ds + ks))
            if previous is not None and abs(value - previous) <= abs(value) * mp.mpf(10) ** -30:
                return value
            previous = value
    raise AssertionError("no reference")


def random_cases(seed, n):
    rng = np.random.default_rng(seed)
    for i in range(n):
        x = 10 ** rng.uniform(-300, 300) if i % 3 == 0 else 10 ** rng.uniform(-5, 8)
        d = 10 ** rng.uniform(-300, 300) if i % 5 == 0 else 10 ** rng.uniform(-20, 8)
        if i % 7 == 0:
            d = -x * rng.uniform(0.0, 0.99)  # x + d > 0: the AUC@k use, alpha < 1
        k = int(10 ** rng.uniform(0, 18.9)) if i % 2 else int(rng.integers(1, 200))
        yield x, d, k


class TestLogRisingRatio:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_relative_error_over_the_whole_range(self, seed):
        # shapes from 1e-300 to 1e300, horizons up to 8e18, negative d
        worst, worst_per_d = 0.0, 0.0
        for x, d, k in random_cases(seed, 150):
            want = reference(x, d, k)
            if abs(want) > 1e-300:
                got = float(log_rising_ratio(x, d, k))
                worst = max(worst, float(abs((got - want) / want)))
            per_d = want / mp.mpf(d)
            if 1e-300 < abs(per_d) < 1e300:
                got = float(log_rising_ratio_per_d(x, d, k))
                worst_per_d = max(worst_per_d, float(abs((got - per_d) / per_d)))
        assert worst < 1e-13
        assert worst_per_d < 1e-13

    def test_exact_rationals(self):
        for x, d, k in [(Fraction(5, 2), Fraction(1, 3), 7), (Fraction(1, 1000), Fraction(7), 64),
                        (Fraction(3), Fraction(1, 10**9), 65), (Fraction(40), Fraction(2), 200)]:
            exact = 1
            for i in range(k):
                exact *= (x + i) / (x + d + i)
            got = log_rising_ratio(float(x), float(d), k)
            assert got == pytest.approx(math.log(exact), rel=1e-14)

    def test_d_below_x_spacing_is_not_lost(self):
        # 0.5 + 1e-60 == 0.5: the ratio must still be -d (psi(x + k) - psi(x))
        for k in (10, 64, 65, 10**6, 10**18):
            want = -1e-60 * (digamma(0.5 + k) - digamma(0.5))
            assert float(log_rising_ratio(0.5, 1e-60, k)) == pytest.approx(want, rel=1e-12)

    def test_per_d_limit_at_zero(self):
        x, k = np.array([0.7, 3.0, 2e5]), np.array([5, 500, 10**9])
        assert_allclose(log_rising_ratio_per_d(x, 0.0, k), -(digamma(x + k) - digamma(x)),
                        rtol=1e-12)

    def test_broadcasts_and_k_zero(self):
        out = log_rising_ratio(np.array([[1.0], [2.0]]), np.array([1.0, 3.0]), 0)
        assert out.shape == (2, 2) and np.all(out == 0.0)

    def test_no_warnings_at_extremes(self, recwarn):
        log_rising_ratio([1e-300, 1e300, 1.0], [1e300, 1e-300, -0.999], [10**18, 3, 70])
        log_rising_ratio_per_d([1e-300, 1e300], [1e300, 1e-300], [10**18, 3])
        assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


class TestHelpers:
    def test_log_binom_ratio_against_math_comb(self):
        for a, m, k in [(7, 10, 3), (5000, 10000, 4000), (9990, 10000, 5000), (99, 100, 99),
                        (100, 100, 100), (30, 10**6, 20)]:
            with mp.workdps(50):
                want = float(mp.log(mp.mpf(math.comb(a, k))) - mp.log(mp.mpf(math.comb(m, k))))
            assert float(log_binom_ratio(a, m, k)) == pytest.approx(want, rel=1e-13, abs=1e-15)
        assert float(log_binom_ratio(2, 10, 3)) == -np.inf

    def test_stirling_tail(self):
        for z in (10.0, 17.3, 1e4):
            with mp.workdps(40):
                want = (mp.loggamma(z) - ((z - 0.5) * mp.log(z) - z + mp.log(2 * mp.pi) / 2))
            assert float(stirling_tail(z)) == pytest.approx(float(want), rel=1e-13)

    def test_expm1_ratio(self):
        v = np.array([-30.0, -1e-3, -1e-7, 0.0, 1e-7, 2e-3, 5.0])
        with mp.workdps(40):
            want = [float(mp.expm1(x) / x) if x != 0 else 1.0 for x in v]
        assert_allclose(expm1_ratio(v), want, rtol=1e-14)
