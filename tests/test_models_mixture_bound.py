"""The bound on any mixture's log-likelihood, and the BIC search that skips by it.

The bound must lie above every Beta mixture's maximised log-likelihood (the
compiled PyMC objective's, at every H) and above the nonparametric maximum
found by a long EM on a finer grid, and within a fraction of a nat of the
latter; skipping the H it rules out must leave the chosen fit exactly as
fitting every H does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import binom

import passmix
from conftest import simulate_mixture
from passmix.models.mixture.bound import mixture_loglik_bound


def _npmle_loglik(y, m, w, n_grid=4001, n_iter=1500):
    """The nonparametric maximum by plain EM on a grid twice as fine as the bound's, uniform
    in arcsine (as fine near 0 and 1 as a binomial's width): a lower bound on the sup."""
    grid = np.sin(np.linspace(0, np.pi / 2, n_grid)) ** 2
    f = binom.pmf(y[:, None], m[:, None], grid[None, :])
    g = np.full(n_grid, 1.0 / n_grid)
    for _ in range(n_iter):
        g *= (w / (f @ g)) @ f / w.sum()
    return float(w @ np.log(f @ g))


def _data_sets():
    rng = np.random.default_rng(11)
    return {
        "beta J=40 m=10": simulate_mixture(rng, 40, 10, [1.0], [2.0], [3.0]),
        "bimodal J=300 m=8": simulate_mixture(rng, 300, 8, [0.6, 0.4], [1.0, 8.0], [6.0, 1.5]),
        "uneven m": simulate_mixture(rng, 120, rng.integers(1, 40, 120), [1.0], [1.5], [1.0]),
        "three tasks": passmix.Counts([1, 4, 2], [5, 5, 5]),
        "no success": passmix.Counts([0] * 12, [6] * 12),
        "no failure": passmix.Counts([9, 9, 9, 9], [9] * 4),
        "large m": simulate_mixture(rng, 25, 2000, [1.0], [20.0], [30.0]),
        # rates ~1e-4 of m = 10,000 trials: each pmf is ~1e-4 wide, near theta = 0
        "rare successes": simulate_mixture(rng, 30, 10_000, [0.7, 0.3], [0.8, 3.0],
                                           [8000.0, 3000.0]),
    }


@pytest.mark.unit
@pytest.mark.parametrize("name", list(_data_sets()))
def test_the_bound_is_above_the_nonparametric_maximum_and_close_to_it(name):
    y, m, w = _data_sets()[name].pairs()
    w = w.astype(float)
    bound = mixture_loglik_bound(y, m, w)
    npmle = _npmle_loglik(y.astype(float), m.astype(float), w)
    assert npmle <= bound + 1e-9
    assert bound - npmle < 0.25


@pytest.mark.parametrize("name", ["beta J=40 m=10", "bimodal J=300 m=8", "uneven m",
                                  "no success", "rare successes"])
def test_the_bound_is_above_every_mixture_fit(name):
    counts = _data_sets()[name]
    y, m, w = counts.pairs()
    bound = mixture_loglik_bound(y, m, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = passmix.fit(counts, seed=0, skip_hopeless=False).bic_table
    assert (table["loglik"] <= bound + 1e-9).all()


def test_skipping_keeps_the_fit_that_every_h_gives():
    rng = np.random.default_rng(5)
    skipped_any = False
    for n in range(8):
        j = int(rng.choice([30, 80, 400]))
        counts = (simulate_mixture(rng, j, 10, [0.5, 0.5], [1.0, 6.0], [6.0, 1.0]) if n % 3 == 0
                  else simulate_mixture(rng, j, int(rng.integers(3, 20)), [1.0],
                                        [rng.uniform(0.5, 3)], [rng.uniform(0.5, 3)]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            every = passmix.fit(counts, seed=n, skip_hopeless=False)
            fast = passmix.fit(counts, seed=n)
        assert fast.n_components == every.n_components
        np.testing.assert_array_equal(fast.params, every.params)
        assert fast.loglik == every.loglik
        table = fast.bic_table
        fitted = table["fitted"].to_numpy()
        np.testing.assert_array_equal(table["bic"][fitted], every.bic_table["bic"][fitted])
        skipped_any |= not fitted.all()
        # no skipped H could have beaten the chosen one
        assert (table["bic_bound"][~fitted] > fast.bic).all()
        # and the table says so in words, with the bound, where the numbers are NaN
        assert table["status"][table["selected"]].tolist() == ["selected"]
        for row in table[~fitted].itertuples():
            assert row.status == f"skipped: its BIC is at least {row.bic_bound:.4g}"
        assert set(table["status"][fitted & ~table["selected"].to_numpy()]) <= {"fitted"}
    assert skipped_any  # the search did skip somewhere, so the check above meant something


def test_the_zero_inflated_fit_asks_for_every_h():
    from passmix.models.zero_inflated import fit_zero_inflated

    counts = simulate_mixture(np.random.default_rng(2), 40, 10, [1.0], [2.0], [3.0])
    plain = passmix.fit(counts, seed=0)
    assert not plain.bic_table["fitted"].all()
    with pytest.raises(ValueError, match="skip_hopeless=False"):
        fit_zero_inflated(plain)
