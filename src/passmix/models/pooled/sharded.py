"""The pooled log-likelihood as a sum over shards of tasks, each evaluated on a Dask worker.

Given the parameters, tasks are independent: the log-likelihood, its
gradient and its observed information are sums over tasks. A panel too large
for one process is split into shards of tasks (every system's cells on those
tasks), each shard is sent once to a worker of a ``dask.distributed``
client, and the optimiser, in this process, sees one objective whose every
evaluation maps the compiled objective over the shards where they live and
sums. The optimum is the in-process fit's (sums in another order: equal to
rounding).

:func:`passmix.fit_pooled` takes the client (``client=``) and builds the
shards; :class:`TaskShards` is the piece to reuse across fits of one panel.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...data.panel import Panel
from ._graph import _objective
from ._layout import _Layout, coordinate_blocks, panel_layout
from ..._validation import shown

__all__ = ["ShardedObjective", "TaskShards"]


def _on_shard(method: str, layout: _Layout, family: str, grid: np.ndarray, n_components: int,
              slope: bool, shared: bool, z: np.ndarray):
    """One shard's ``logp_dlogp`` or ``hessian`` at `z` (runs on the worker holding the
    shard)."""
    objective = _objective(family, slope, shared)
    with objective.lock:
        objective.set_data(layout, grid, n_components)
        return getattr(objective, method)(z)


class TaskShards:
    """A panel's tasks split into shards, each held by a worker of a Dask client.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster's client.
    panel : Panel
        The counts.
    n_shards : int, optional
        Shards of tasks (contiguous, of nearly equal size); default one per
        worker thread of the cluster.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from dask.distributed import Client, LocalCluster
    >>> from passmix.models.pooled.sharded import TaskShards
    >>> rng = np.random.default_rng(0)
    >>> panel = passmix.Panel(rng.binomial(5, 0.5, (3, 40)), np.full((3, 40), 5))
    >>> with LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
    ...                   dashboard_address=None) as cluster, Client(cluster) as client:
    ...     shards = TaskShards(client, panel)
    ...     [len(t) for t in shards.tasks]
    [20, 20]
    """

    def __init__(self, client: Any, panel: Panel, n_shards: int | None = None) -> None:
        n_tasks = panel.shape[1]
        if n_shards is None:
            n_shards = max(1, sum(client.nthreads().values()))
        if isinstance(n_shards, bool) or int(n_shards) != n_shards or n_shards < 1:
            raise ValueError(f"n_shards must be a whole number >= 1, got {shown(n_shards)}.")
        self.client = client
        self.n_systems = panel.shape[0]
        #: each shard's task positions
        self.tasks = [t for t in np.array_split(np.arange(n_tasks), min(int(n_shards), n_tasks))]
        layouts = [panel_layout(Panel(panel.successes[:, t], panel.trials[:, t]))
                   for t in self.tasks]
        # sent once; every evaluation runs where its shard lives
        self.futures = client.scatter(layouts)

    def objective(self, family: str, slope: bool = False, shared: bool = False
                  ) -> ShardedObjective:
        """The pooled objective of `family` (and slopes, concentration) over these shards."""
        return ShardedObjective(self, family, slope, shared)


class ShardedObjective:
    """The pooled log-likelihood, gradient and Hessian summed over :class:`TaskShards`.

    The interface of :class:`~passmix.models.pooled.PooledObjective` that the
    optimiser (:func:`passmix.inference.maximize`) uses: :meth:`set_data`,
    :meth:`logp_dlogp`, :meth:`negative`, :meth:`hessian`, ``blocks`` and
    ``lock``. The data are the shards'; :meth:`set_data` takes the layout
    only for its shape, and the grid and number of normals.
    """

    def __init__(self, shards: TaskShards, family: str, slope: bool = False,
                 shared: bool = False) -> None:
        self.shards, self.family = shards, family
        self.slope, self.shared = bool(slope), bool(shared)
        self.lock = threading.RLock()
        self.blocks: list = []
        self._grid = None
        self._n_components = 1

    def set_data(self, layout: _Layout, grid: np.ndarray, n_components: int = 1) -> None:
        """Take the grid and number of normals (the shards hold the panel's data)."""
        if layout.n_systems != self.shards.n_systems:
            raise ValueError("the layout is not of the panel the shards hold.")
        self._grid = np.asarray(grid, dtype=float)
        self._n_components = int(n_components)
        self.blocks = coordinate_blocks(self.family, layout.n_systems, self._grid.size,
                                        self._n_components, self.slope, self.shared)

    def _map(self, method: str, z: np.ndarray) -> list:
        client = self.shards.client
        z = np.asarray(z, dtype=float)
        futures = [client.submit(_on_shard, method, shard, self.family, self._grid, self._n_components,
                                 self.slope, self.shared, z, pure=False)
                   for shard in self.shards.futures]
        return client.gather(futures)

    def logp_dlogp(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient at `z`: the shards' sums."""
        parts = self._map("logp_dlogp", z)
        return float(sum(p[0] for p in parts)), np.sum([p[1] for p in parts], axis=0)

    def negative(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """``-logp`` and its gradient, for minimisers."""
        logp, grad = self.logp_dlogp(z)
        return -logp, -grad

    def hessian(self, z: np.ndarray) -> np.ndarray:
        """The analytic Hessian of ``logp`` at `z`: the shards' sum."""
        return np.sum(self._map("hessian", z), axis=0)
