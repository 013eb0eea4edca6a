"""pIRT, PromptEval's baseline: a logistic model with configuration and question effects.

The probability that configuration i answers question j correctly is
``expit(theta_i - b_j)``. The effects are fitted on the observed cells alone
by maximising the Bernoulli log-likelihood minus the ridge penalty
``(theta'theta + b'b) / (2 reg)`` (a Gaussian prior of variance `reg` on
every effect, PromptEval's ``C = 100``), which also fixes the otherwise free
shift between the two sets of effects. The estimated score of a
configuration is PromptEval's: its observed answers where a cell was seen,
the model's probability where it was not, averaged over all questions. The
score distribution is the empirical distribution of these J estimates.

Differences from PromptEval's code, written independently here: every
effect is penalised (PromptEval fixes one question's effect at 0), and the
fit is L-BFGS-B on the exact penalised objective (PromptEval calls
liblinear, which minimises the same objective).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from .._validation import FitWarning, shown
from .data import Configurations

__all__ = ["PIRTFit", "fit_pirt"]


@dataclass(frozen=True, repr=False)
class PIRTFit:
    """A fitted pIRT model.

    Attributes
    ----------
    configuration_effects : numpy.ndarray
        theta_i, shape (J,).
    question_effects : numpy.ndarray
        b_j (difficulty), shape (Q,).
    reg : float
        Prior variance of the effects.
    converged : bool
    data : Configurations
        The observed cells fitted.
    """

    configuration_effects: np.ndarray
    question_effects: np.ndarray
    reg: float
    converged: bool
    data: Configurations

    def probabilities(self) -> np.ndarray:
        """Fitted ``P(correct)`` of every cell, shape (J, Q)."""
        return expit(self.configuration_effects[:, None] - self.question_effects[None, :])

    def scores(self) -> np.ndarray:
        """PromptEval's score estimates: observed answers, else fitted probabilities, averaged."""
        filled = np.where(np.isnan(self.data.matrix), self.probabilities(), self.data.matrix)
        return filled.mean(axis=1)

    def percentiles(self, q=(5, 25, 50, 75, 95)) -> np.ndarray:
        """Percentiles (0..100) of the estimated scores (``numpy.percentile``)."""
        return np.percentile(self.scores(), q)

    def summary(self) -> pd.DataFrame:
        """One row per configuration: effect and estimated score."""
        return pd.DataFrame({"effect": self.configuration_effects, "score": self.scores()},
                            index=self.data.labels.index)

    def __repr__(self) -> str:
        return (f"PIRTFit(J={self.configuration_effects.size}, Q={self.question_effects.size}, "
                f"cells={self.data.n_cells}, converged={self.converged})")


def fit_pirt(data: Configurations, *, reg: float = 100.0) -> PIRTFit:
    """Fit pIRT to the observed cells of a configuration x question matrix.

    Parameters
    ----------
    data : Configurations
        Matrix form (question identity is needed); NaN cells are unobserved.
    reg : float, default 100
        Prior variance of every effect (the ridge is ``1 / (2 reg)``).

    Returns
    -------
    PIRTFit

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.sensitivity import Configurations, fit_pirt
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(0, 1, 60), rng.normal(0, 1, 80)
    >>> y = rng.random((60, 80)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    >>> res = fit_pirt(Configurations.from_matrix(y.astype(float)))
    >>> bool(np.corrcoef(res.configuration_effects, theta)[0, 1] > 0.9)
    True
    """
    if not isinstance(data, Configurations):
        raise TypeError(f"data must be Configurations, got {type(data).__name__}.")
    if not data.has_questions:
        raise ValueError("pIRT needs question identity (a configuration x question matrix); "
                         "count data do not have it.")
    if not (np.isfinite(reg) and reg > 0):
        raise ValueError(f"reg must be positive and finite, got {shown(reg)}.")
    rows, cols = np.nonzero(data.observed())
    y = data.matrix[rows, cols]
    n_conf, n_q = data.matrix.shape
    if rows.size == 0:
        raise ValueError("no observed cells to fit.")

    def objective(params):
        theta, b = params[:n_conf], params[n_conf:]
        eta = theta[rows] - b[cols]
        # -log p(y | eta) = log(1 + e^eta) - y eta, written stably
        loss = -np.sum(y * log_expit(eta) + (1.0 - y) * log_expit(-eta))
        loss += params @ params / (2.0 * reg)
        resid = expit(eta) - y
        grad = np.concatenate([np.bincount(rows, resid, n_conf),
                               -np.bincount(cols, resid, n_q)]) + params / reg
        return loss, grad

    res = minimize(objective, np.zeros(n_conf + n_q), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-8})
    # the ridge makes the loss strictly convex: converged where its gradient is ~0
    # (L-BFGS-B's "abnormal" line-search exits at the optimum are not failures)
    converged = bool(res.success) or bool(
        np.max(np.abs(objective(res.x)[1])) < 1e-5 * np.sqrt(rows.size))
    if not converged:
        warnings.warn(f"the pIRT fit did not converge (L-BFGS-B: {res.message}); its "
                      "estimates are of a point short of the optimum.", FitWarning,
                      stacklevel=2)
    theta, b = res.x[:n_conf].copy(), res.x[n_conf:].copy()
    for arr in (theta, b):
        arr.flags.writeable = False
    return PIRTFit(theta, b, float(reg), converged, data)
