"""The pooled model: many systems on shared tasks, task difficulty shared across them.

System ``i`` on task ``j`` has success probability ``p_ij``; its mean is a
Rasch (1PL) term and a Beta-binomial layer lets each system's own counts
depart from it::

    mu_ij = expit(a_i - d_j),     p_ij ~ Beta(mu_ij kappa_i, (1 - mu_ij) kappa_i),
    y_ij | p_ij ~ Binomial(m_ij, p_ij),     d_j ~ G  (independent over tasks).

``a_i`` is system i's ability (the abilities sum to 0, the one
identifiability constraint: free coordinates minus their mean), ``kappa_i`` its concentration: as
``kappa_i -> inf`` the model is plain Rasch (a task's difficulty fixes every
system's rate), and a small ``kappa_i`` lets system i's own counts on a task
dominate, so pooling is as strong as the data support. With
``concentration="shared"`` one concentration serves every system (I - 1
fewer parameters); by default (``"auto"``) both are fitted and the criterion
picks, so per-system concentrations are kept only where the data can tell
them apart. With ``slope=True``
each system also has a slope (a 2PL-style discrimination, per system):
``mu_ij = expit(a_i - s_i d_j)``, the log-slopes summing to 0 (the
difficulties' scale is otherwise free); a system with a steeper slope
separates easy from hard tasks more sharply. The difficulty
distribution ``G`` lives on a fixed grid of logits (:data:`DEFAULT_GRID`) and
is integrated out per task by summing over the grid:

- ``"grid"``: nonparametric, one weight per grid point (softmax of free
  logits), the maximum-likelihood mixing distribution on the grid. The
  weights are profiled out by EM (for fixed abilities and concentrations the
  NPMLE weights have a fixed-point update), so L-BFGS-B searches the 2I
  abilities and concentrations only; it reaches the joint optimum (tested);
- ``"normal"``: weights proportional to a normal density with free mean and
  spread, i.e. quadrature of a normal ``G`` on the grid.

The marginal likelihood depends on the data through the distinct pairs
``(y, m)`` of each system: a table ``l[i, g, p]`` of Beta-binomial
log-probabilities is gathered into a tasks x grid matrix by one product with
a 0/1 incidence matrix (cells to (system, pair)), then reduced by a
log-sum-exp over the grid. The model is written in PyMC (flat priors on the
free coordinates, so the mode is the MLE) and its ``logp`` and gradient are
compiled once per panel shape and maximised by L-BFGS-B
(:mod:`passmix.inference`).

The metrics of system ``i`` average over each task's posterior: given the
data, task ``j``'s difficulty is at grid point ``g`` with probability
``r_jg`` (prior weight times the likelihood of every system's counts on
``j``), and then ``p_ij ~ Beta(mu_ig kappa_i + y_ij, (1 - mu_ig) kappa_i +
m_ij - y_ij)``. So system ``i``'s Pass@k over the J tasks is that of a Beta
mixture with components ``(j, g)`` of weight ``r_jg / J``: the closed forms
of :mod:`passmix.metrics` apply unchanged, at any k.

The modules: :mod:`~passmix.models.pooled.fit` (:func:`fit_pooled`, the
candidates and the choice among them), :mod:`~passmix.models.pooled.result`
(:class:`PooledFit`, :class:`PooledSystem`, their delta and profile
intervals), and private ones for the coordinates (``_layout``), the numpy
likelihood and its derivatives (``_likelihood``) and the PyMC graph with its
compiled objective (``_graph``).
"""

from ..._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "._layout": ["CONCENTRATIONS", "CRITERIA", "DEFAULT_GRID", "FAMILIES", "WEAK_POOLED_PRIOR", "block_names", "coordinate_blocks", "panel_layout", "split_blocks"],
    "._likelihood": ["PooledDerivatives", "beta_shapes", "em_grid_weights", "task_grid_loglik"],
    "._graph": ["PooledObjective", "build_pooled_model", "get_pooled_objective"],
    ".result": ["PROFILE_CELLS", "PooledFit", "PooledSystem", "heldout_loglik"],
    ".fit": ["fit_pooled", "fit_pooled_groups"],
    ".sharded": ["ShardedObjective", "TaskShards"],
})
