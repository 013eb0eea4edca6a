"""A compiled PyMC log-likelihood and its gradient as an objective of the generic inference.

Every passmix model compiles its ``(logp, dlogp)`` once (flat priors:
``logp`` with ``jacobian=False``, what ``pymc.find_MAP`` maximises) with
its data in ``pm.Data`` containers, and hands :mod:`passmix.inference` an
objective: ``logp_dlogp(z)``, ``negative(z)`` and ``hessian(z)`` at the
optimiser's coordinates z. :class:`CompiledObjective` is that objective;
a model says only how its coordinates become the compiled function's
inputs (:meth:`~CompiledObjective._inputs`) and which of the gradient's
entries are its own (:meth:`~CompiledObjective._own_gradient`), and sets
its data through :meth:`~CompiledObjective._set_values`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..inference.optimize import gradient_hessian

__all__ = ["CompiledObjective"]


class CompiledObjective:
    """Compiled ``logp`` and gradient of a PyMC model, driven by :mod:`passmix.inference`.

    Parameters
    ----------
    fn : pytensor.compile.function.types.Function
        Returns ``(logp, dlogp)``; its shared variables are the model's data
        containers.
    lock : threading.RLock
        Held from setting the data until the last evaluation on them: views
        of one compiled function share its data.
    state : dict, optional
        Shared by the views of one compiled function: which view set the data
        last. A view evaluates only data it set itself, else it raises (another
        view's data, or switches, would give a wrong value silently).

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.models.mixture.graph import get_objective
    >>> objective = get_objective(1)
    >>> with objective.lock:
    ...     objective.set_data(np.array([0, 5]), np.array([5, 5]), np.ones(2))
    ...     logp, grad = objective.logp_dlogp(np.zeros(2))
    >>> grad.shape
    (2,)
    """

    def __init__(self, fn: Any, lock: threading.RLock | None = None,
                 state: dict | None = None) -> None:
        self._fn = fn
        self._data = {v.name: v for v in fn.get_shared()}
        self.lock = threading.RLock() if lock is None else lock
        self._state = {} if state is None else state

    @property
    def function(self) -> Any:
        """The compiled PyTensor function, shared by every view of one model structure
        (compiled once: the views differ in their data and switches only).

        Examples
        --------
        >>> from passmix.models.mixture.graph import get_objective
        >>> get_objective(2).function is get_objective(2).function
        True
        """
        return self._fn

    def _set_values(self, values: Mapping[str, Any]) -> None:
        """Swap the data containers' values in place (nothing is recompiled)."""
        with self.lock:
            for name, value in values.items():
                var = self._data[name]
                var.set_value(np.asarray(value, dtype=var.type.dtype))
            self._state["owner"] = self

    def _inputs(self, z: np.ndarray) -> tuple:
        """The compiled function's inputs at coordinates `z`."""
        return (z,)

    def _own_gradient(self, grad: np.ndarray) -> np.ndarray:
        """The entries of the compiled gradient that belong to the coordinates."""
        return grad

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient at coordinates `z`."""
        if self._state.get("owner") is not self:
            raise RuntimeError(f"this {type(self).__name__} has not set the data of its compiled "
                               "function, or another view of it has since: call set_data "
                               "first, holding .lock until the last evaluation.")
        logp, grad = self._fn(*self._inputs(np.asarray(z, dtype=float)))
        return float(logp), self._own_gradient(np.asarray(grad))

    def negative(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """``(-logp, -dlogp)``, the form ``scipy.optimize.minimize`` takes."""
        logp, grad = self.logp_dlogp(z)
        return -logp, -grad

    def hessian(self, z: np.ndarray, rel_step: float = 1e-5) -> np.ndarray:
        """Hessian of ``logp`` by central differences of the compiled gradient.

        Compiling PyMC's symbolic ``d2logp`` costs tens of seconds; differencing
        the exact gradient agrees with it to ~1e-8 relative in milliseconds. A
        model with an analytic Hessian overrides this.
        """
        return gradient_hessian(self.logp_dlogp, z, rel_step)
