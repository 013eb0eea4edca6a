"""Shared simulators of the test modules (``from conftest import ...``)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

import passmix


def simulate_mixture(rng: np.random.Generator, j: int, m, w, a, b) -> passmix.Counts:
    """Counts of `j` tasks whose success probabilities are drawn from the Beta mixture
    ``(w, a, b)``, with `m` trials each (a number, or one per task)."""
    comp = rng.choice(len(w), size=j, p=w)
    theta = rng.beta(np.asarray(a)[comp], np.asarray(b)[comp])
    m = np.broadcast_to(m, (j,))
    return passmix.Counts(rng.binomial(m, theta), m)


def simulate_panel(rng: np.random.Generator, a, kappa, d, m):
    """Counts of systems with abilities `a` and concentrations `kappa` on tasks of
    difficulty `d` (the pooled model): successes, trials and the true rates, each (I, J)."""
    mu = expit(np.asarray(a)[:, None] - np.asarray(d)[None, :])
    k = np.asarray(kappa, float)[:, None]
    p = rng.beta(mu * k, (1 - mu) * k)
    return rng.binomial(m, p), np.full(p.shape, m), p


def pytest_configure(config):
    """The unit lane (``pytest -m unit``) compiles nothing: there PyMC's and PyTensor's
    compile entry points raise, in fixtures as in tests, so a test marked ``unit`` that
    needs a compiled graph fails instead of quietly costing the lane its minute."""
    if (config.getoption("markexpr", "") or "").strip() != "unit":
        return
    import pymc
    import pytensor

    def refuse(*args, **kwargs):
        raise AssertionError("the unit lane compiles nothing, but this test asked PyMC or "
                             "PyTensor to compile a graph: it is not a unit test")

    pymc.pytensorf.compile = refuse
    pytensor.function = refuse
