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


def rare(n_sys: int = 7, n_tasks: int = 159, m: int = 60, seed: int = 0):
    """A panel where successes are a few per thousand attempts (jailbreak attacks, hard
    agentic tasks): system means spread log-evenly from 1e-4 to 1e-2, as in issue 49's
    7 x 159 panel at m = 60, and each system's true mean success.

    Difficulties ~ N(0, 1.5) and success probabilities ``expit(a_i - d_j)``, each
    ability set so that the system's mean over the drawn tasks is its target rate (a
    Beta around so small a mean would put it on a task or two).
    """
    import passmix
    from scipy.optimize import brentq

    rng = np.random.default_rng(seed)
    targets = np.geomspace(1e-4, 1e-2, n_sys)
    d = rng.normal(0.0, 1.5, n_tasks)
    a = np.array([brentq(lambda x, t=t: expit(x - d).mean() - t, -40.0, 10.0)
                  for t in targets])
    theta = expit(a[:, None] - d[None, :])
    trials = np.full((n_sys, n_tasks), m)
    panel = passmix.Panel(rng.binomial(trials, theta), trials,
                          systems=[f"r{i}" for i in range(n_sys)])
    return panel, theta.mean(axis=1)
