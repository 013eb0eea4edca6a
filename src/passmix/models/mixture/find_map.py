"""The Beta mixture's optimum by PyMC's own ``pymc.find_MAP`` (``passmix.fit(optimizer="find_MAP")``).

The default optimiser is scipy's L-BFGS-B on the compiled objective; this
path runs ``find_MAP`` on the flat-prior sampling model from the same starts,
within the same box, and reads its mode back into the fit's coordinates.
"""

from __future__ import annotations

import numpy as np

from ..._pytensor import import_pymc
from ...inference.optimize import Optimum, at_bound, is_stationary
from .graph import get_objective
from .parameters import coordinate_blocks


def find_map(h: int, starts, box, y, m, weight) -> Optimum:
    """``pymc.find_MAP`` from every start on the flat-prior H-component model, in `box`."""
    pm = import_pymc()

    from .graph import get_sampling_model

    flat = get_sampling_model(h, "flat")
    objective = get_objective(h)
    best = None
    with flat.lock, objective.lock:
        flat.set_data(y, m, weight)
        objective.set_data(y, m, weight)
        for z0 in starts:
            start = dict(zip([name for name, _ in coordinate_blocks(h)],
                             _blocks_of(z0, h)))
            # jitter and the return type said explicitly: PyMC 6 warns of new defaults otherwise
            result = pm.find_MAP(initvals=start, model=flat.model, progressbar=False,
                                 jitter=False, return_inferencedata=True,
                                 bounds=[tuple(b) for b in box])
            z = map_point(result, h)
            loglik = objective.logp_dlogp(z)[0]
            if best is None or loglik > best[1]:
                best = (z, loglik)
        z, loglik = best
        return Optimum(params=z, loglik=loglik, converged=is_stationary(objective, z, box),
                       message="pymc.find_MAP", n_iter=0,
                       on_bound=at_bound(z, box).any(axis=1), n_starts=len(starts))


def map_point(result, h: int) -> np.ndarray:
    """The coordinates of an H-component model's mode in what ``pymc.find_MAP`` returns
    with ``return_inferencedata=True`` (a DataTree whose posterior holds one draw).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from passmix.models.mixture.find_map import map_point
    >>> point = {"logit_weights": np.array([[[0.5]]]), "logit_mean_first": np.array([[-1.0]]),
    ...          "log_mean_gaps": np.array([[[0.2]]]), "log_concentration": np.ones((1, 1, 2))}
    >>> tree = xr.DataTree.from_dict({"posterior": xr.Dataset(
    ...     {name: (("chain", "draw") + tuple(f"{name}_dim_{i}" for i in range(v.ndim - 2)), v)
    ...      for name, v in point.items()})})
    >>> map_point(tree, 2)
    array([ 0.5, -1. ,  0.2,  1. ,  1. ])
    """
    posterior = result["posterior"]
    return np.concatenate([np.asarray(posterior[name].values, dtype=float).reshape(-1)
                           for name, _ in coordinate_blocks(h)])


def _blocks_of(z, h: int) -> list:
    """`z` cut into the model's variables (a scalar for the first logit mean)."""
    out, i = [], 0
    for name, size in coordinate_blocks(h):
        out.append(float(z[i]) if name == "logit_mean_first" else np.asarray(z[i:i + size]))
        i += size
    return out
