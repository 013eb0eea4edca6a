"""Configuration x question matrices simulated from a known model, for studies and tests.

:func:`simulate_matrix` draws a complete 0/1 matrix from a logistic
configuration x question model, ``P(correct) = expit(theta_i - b_j)``: the
structure pIRT assumes, and one the Beta mixture only approximates (its
working model ignores which questions a configuration saw). Configuration
effects come from a two-group normal mixture, so the score distribution has
the skew and the shoulder that real prompt sets show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from .._validation import check_seed, check_whole
from .data import Configurations

__all__ = ["SimulatedMatrix", "simulate_matrix"]


@dataclass(frozen=True)
class SimulatedMatrix:
    """A simulated complete matrix with the truth that made it.

    Attributes
    ----------
    data : Configurations
        The complete matrix (every cell observed).
    configuration_effects, question_effects : numpy.ndarray
        theta_i and b_j.
    probabilities : numpy.ndarray
        ``expit(theta_i - b_j)``, shape (J, Q).
    """

    data: Configurations
    configuration_effects: np.ndarray
    question_effects: np.ndarray
    probabilities: np.ndarray

    def latent_scores(self) -> np.ndarray:
        """Each configuration's expected score on these questions."""
        return self.probabilities.mean(axis=1)


def simulate_matrix(n_configurations: int = 150, n_questions: int = 100, *,
                    mean: float = 0.0, spread: float = 0.8, weak_share: float = 0.2,
                    weak_shift: float = -1.5, question_sd: float = 1.5,
                    seed: Any = None) -> SimulatedMatrix:
    """Draw a complete configuration x question matrix from a logistic model.

    Parameters
    ----------
    n_configurations, n_questions : int
    mean : float, default 0
        Centre of the configuration effects.
    spread : float, default 0.8
        Standard deviation of the configuration effects within a group.
    weak_share, weak_shift : float
        Share of configurations in a weaker group and its shift in logits.
    question_sd : float, default 1.5
        Standard deviation of the question effects.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    SimulatedMatrix

    Examples
    --------
    >>> from passmix.sensitivity import simulate_matrix
    >>> sim = simulate_matrix(20, 30, seed=0)
    >>> sim.data.matrix.shape, sim.data.n_cells
    ((20, 30), 600)
    """
    j = check_whole(n_configurations, "n_configurations", 1)
    q = check_whole(n_questions, "n_questions", 1)
    if not 0.0 <= weak_share <= 1.0:
        raise ValueError("weak_share must lie in [0, 1].")
    rng = np.random.default_rng(check_seed(seed))
    theta = mean + spread * rng.standard_normal(j) + weak_shift * (rng.random(j) < weak_share)
    b = question_sd * rng.standard_normal(q)
    p = expit(theta[:, None] - b[None, :])
    y = (rng.random((j, q)) < p).astype(float)
    return SimulatedMatrix(Configurations.from_matrix(y), theta, b, p)
