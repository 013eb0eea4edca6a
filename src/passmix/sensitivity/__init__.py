"""Sensitivity analysis: configurations (prompts, templates, temperatures) as instances.

* :mod:`~passmix.sensitivity.data`: :class:`Configurations`, a 0/1 matrix or counts;
* :mod:`~passmix.sensitivity.sampling`: which cells a budget observes;
* :mod:`~passmix.sensitivity.analysis`: :func:`sensitivity`, the fitted score
  distribution with its quantiles, and :func:`score_errors` (W1, percentiles);
* :mod:`~passmix.sensitivity.pirt`: PromptEval's pIRT baseline;
* :mod:`~passmix.sensitivity.simulate`: matrices from a known model.

The distribution itself is :class:`passmix.distributions.BetaMixture`.

The package is callable: ``passmix.sensitivity(data, ...)`` is
:func:`passmix.sensitivity.sensitivity`, while ``passmix.sensitivity.<name>``
still reaches everything listed here.
"""

from .._lazy import make_callable
from ..distributions import BetaMixture, wasserstein1, wasserstein1_midpoint
from .analysis import PERCENTILES, SensitivityResult, as_configurations, score_errors, sensitivity
from .data import Configurations, read_configurations
from .pirt import PIRTFit, fit_pirt
from .sampling import CELL_SAMPLERS, sample_cells
from .simulate import SimulatedMatrix, simulate_matrix

__all__ = ["CELL_SAMPLERS", "PERCENTILES", "BetaMixture", "Configurations", "PIRTFit",
           "SensitivityResult", "SimulatedMatrix", "as_configurations", "fit_pirt",
           "read_configurations", "sample_cells", "score_errors", "sensitivity",
           "simulate_matrix", "wasserstein1", "wasserstein1_midpoint"]


make_callable(__name__, sensitivity)
