"""Panels simulated from the pooled model, shared by the scale benchmarks."""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def simulate(n_sys: int, n_tasks: int, m: int, missing: float, seed: int = 0):
    """A panel of `n_sys` systems x `n_tasks` tasks and each system's true mean success.

    Abilities ~ N(0, 1), difficulties ~ N(0, 1.5), concentrations
    ``exp(N(1, 0.5))``, `m` trials per cell and a share `missing` of cells not
    run (m = 0); systems are named s0, s1, ...
    """
    import passmix

    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, 1.0, n_sys)
    d = rng.normal(0.0, 1.5, n_tasks)
    kappa = np.exp(rng.normal(1.0, 0.5, n_sys))
    mu = expit(a[:, None] - d[None, :])
    theta = rng.beta(mu * kappa[:, None], (1 - mu) * kappa[:, None])
    trials = np.full((n_sys, n_tasks), m)
    trials[rng.random((n_sys, n_tasks)) < missing] = 0
    panel = passmix.Panel(rng.binomial(trials, theta), trials,
                          systems=[f"s{i}" for i in range(n_sys)])
    return panel, theta.mean(axis=1)
