"""The posterior of a single-system model by NUTS, its metrics, credible intervals and checks.

The model is the fit's: the Beta mixture, or the zero-inflated mixture (its
``logit_zero`` with the prior :data:`passmix.models.zero_inflated.model.ZERO_PRIOR`),
or any :class:`~passmix.inference.LikelihoodResult` whose ``sampling_model``
gives a :class:`~passmix.models.mixture.graph.SamplingModel`.

The delta-method interval of :mod:`passmix.inference.delta` rests on asymptotics
that are weakest where passmix is most needed: few tasks, few trials,
horizons far past the data, weights near 0, components that nearly coincide.
This module samples the posterior of *the same PyMC model* the
maximum-likelihood fit maximises (:func:`passmix.models.mixture.graph.build_model`, same
unconstrained coordinates, same ordered component means, same grouped
``(y, m)`` likelihood) with ``pymc.sample`` (or nutpie), and returns an ArviZ
:class:`~xarray.DataTree` so that the usual ArviZ diagnostics and plots
apply.

Data flow: :func:`sample` -> ``DataTree`` (posterior with the metric
draws, sample_stats, observed_data and posterior_predictive count
histograms, constant_data with the ``(y, m)`` pairs) -> :func:`posterior_metrics`,
:func:`credible_interval`, :func:`posterior_summary`,
:func:`compare_intervals` (against the delta method), :func:`diagnose` and
:func:`check_diagnostics` (r_hat, ESS, divergences, improper flat posterior,
posterior predictive check). Plots are in :mod:`passmix.bayes.plots`.

Priors (``prior=``):

``"weak"`` (default)
    Independent normal priors on the unconstrained coordinates
    (:data:`passmix.models.mixture.graph.WEAK_PRIOR`). Proper, so the posterior is proper
    for any data, and weak enough that with a few hundred tasks the data
    dominate (the posterior mean is then close to the MLE).
``"flat"``
    Flat on the unconstrained coordinates: the posterior mode is the MLE of
    :func:`passmix.fit`, for a direct comparison. This posterior is
    *improper* in general: as the concentration grows the likelihood tends to
    the binomial likelihood of a common success rate (a positive constant),
    and for H > 1 also as a weight goes to 0 or two means coincide. It
    behaves as proper only when the likelihood at the MLE is far above those
    limits (clearly over-dispersed counts, a component that earns its
    place), so the sampler never reaches the plateau. The optimiser's box
    bounds are *not* imposed while sampling: they would make the posterior
    formally proper but pile the draws against an arbitrary edge. Instead
    the draws are checked and a :class:`~passmix.PosteriorWarning` says when
    the flat posterior appears improper (the MLE on a box bound, or draws
    beyond the box).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from .._special import log_beta_ratio, log_choose
from .._pytensor import import_pymc, sampler_compile_kwargs
from .._defaults import POSTERIOR_K
from .._validation import (DegenerateDataWarning, FitWarning, PosteriorWarning, check_k,
                           check_seed, check_whole, shown)
from ..inference.results import LikelihoodResult
from ..models.mixture.fit import fit
from ..models.mixture.graph import pair_data
from ..models.mixture.parameters import PRIORS
from ._record import METRIC_VARS, has_group
# the statistics and checks over draws live in .stats and .checks (they read both models'
# draws); their old names here stay
from .checks import FREE_VARS, check_diagnostics, check_idata, diagnose, ppc_pvalue
from .stats import (compare_intervals, credible_interval, draws_interval,
                    metric_draws, mixture_draws, posterior_metrics, posterior_summary)

__all__ = [
    "DEFAULT_K",
    "FREE_VARS",
    "METRIC_VARS",
    "PosteriorWarning",
    "check_diagnostics",
    "check_idata",
    "compare_intervals",
    "credible_interval",
    "diagnose",
    "draws_interval",
    "metric_draws",
    "posterior_metrics",
    "posterior_summary",
    "ppc_pvalue",
    "sample",
]

#: Horizons whose metric draws are stored in the posterior by default.
DEFAULT_K = POSTERIOR_K  # horizons whose metric draws are stored

_SAMPLERS = ("pymc", "nutpie")
# the models passmix.fit refits at another H, and how
_REFIT = {"mixture": False, "zero_inflated": True}
_PPC_MAX_VALUES = 2_000_000  # cap on stored posterior predictive numbers (draws x cells)
_START_JITTER = 0.1


# -- validation ------------------------------------------------------------------

def _seed_iv(seed: Any) -> int | None:
    """The seed as the int ``pymc.sample`` takes (drawn from a Generator if given one)."""
    seed = check_seed(seed)
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**31 - 1))
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1)[0] % (2**31 - 1))
    return seed


def _sample_iv(draws, chains, tune, prior, sampler, target_accept, cores):
    draws = check_whole(draws, "draws", integral=True)
    chains = check_whole(chains, "chains", integral=True)
    tune = check_whole(tune, "tune", minimum=0, integral=True)
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(PRIORS)}.")
    if sampler not in _SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; expected one of {', '.join(_SAMPLERS)}.")
    if not isinstance(target_accept, numbers.Real) or not 0.0 < target_accept < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {shown(target_accept)}.")
    cores = min(chains, 2) if cores is None else check_whole(cores, "cores", integral=True)
    return draws, chains, tune, cores


# -- sampling --------------------------------------------------------------------

def _resolve_fit(data, n_components, zero_inflated, seed):
    """The fit to sample (a :class:`~passmix.inference.LikelihoodResult` with a Bayesian
    path), the H to sample, the optimum at that H and its on-bound coordinates."""
    if n_components is not None:
        n_components = check_whole(n_components, "n_components", integral=True)
    if zero_inflated is not None and not (
            isinstance(zero_inflated, bool) or zero_inflated == "auto"):
        raise ValueError(f"zero_inflated must be True, False or 'auto', got {zero_inflated!r}.")
    if not isinstance(data, LikelihoodResult):
        data = fit(data, n_components=n_components, zero_inflated=bool(zero_inflated)
                   if zero_inflated != "auto" else "auto", seed=seed)
    elif zero_inflated is not None and zero_inflated != "auto" and \
            zero_inflated != (data.model_kind == "zero_inflated"):
        raise ValueError(f"zero_inflated={zero_inflated!r} but the fit given is a "
                         f"{type(data).__name__}: a fit's own model is sampled; pass the "
                         "counts to fit another.")
    h = data.n_components if n_components is None else n_components
    try:
        mle, on_bound = data.start(h)
    except (KeyError, NotImplementedError):
        if data.model_kind not in _REFIT:
            raise ValueError(f"the {type(data).__name__} given has no optimum at H = {h}; "
                             f"fit H = {h} first and sample that fit.") from None
        # that H was not fitted: fit it, the same model on the same counts
        mle, on_bound = fit(data.counts, n_components=h, seed=seed,
                            zero_inflated=_REFIT[data.model_kind]).start(h)
    return data, h, np.asarray(mle), tuple(on_bound)


def _starts(mle: np.ndarray, sm, chains: int, seed: int | None,
            jitter: float) -> list[np.ndarray]:
    """Chain starts: the MLE with small normal jitter, kept where the prior has mass."""
    rng = np.random.default_rng(seed)
    lo, hi = sm.prior_box()
    centre = np.clip(mle, lo, hi)
    return [centre + rng.normal(0.0, jitter, centre.size) for _ in range(chains)]


def _run_pymc(sm, draws, tune, chains, cores, seed, starts, target_accept, progressbar, kwargs):
    pm = import_pymc()

    options = dict(init="adapt_diag", compute_convergence_checks=False, quiet=not progressbar,
                   target_accept=target_accept, compile_kwargs=sampler_compile_kwargs())
    options.update(kwargs)
    return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                     progressbar=progressbar, model=sm.model,
                     initvals=[sm.as_point(z) for z in starts], **options)


def _run_nutpie(sm, draws, tune, chains, cores, seed, starts, target_accept, progressbar,
                data, kwargs):
    try:
        import nutpie
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("sampler='nutpie' needs the optional package nutpie "
                          "(pip install nutpie); the default sampler='pymc' needs nothing more."
                          ) from None
    compiled = sm.nutpie_cache.get("compiled")
    if compiled is None:
        compiled = nutpie.compile_pymc_model(sm.model, freeze_model=False)
        names = [n for n in compiled.shapes if n in dict(sm.blocks)]
        expected = [n for n, _ in sm.blocks]
        if names != expected:  # pragma: no cover - guards a change in nutpie's ordering
            raise RuntimeError(f"unexpected nutpie variable order {names}, expected {expected}")
        sm.nutpie_cache["compiled"] = compiled
    compiled = compiled.with_data(**data)
    # nutpie takes one start for all chains and jitters it itself
    return nutpie.sample(compiled, draws=draws, tune=tune, chains=chains, cores=cores,
                         seed=seed, save_warmup=False, progress_bar=progressbar,
                         init_mean=np.mean(starts, axis=0), target_accept=target_accept,
                         **kwargs)


def sample(data, draws: int = 1000, chains: int = 4, *, n_components: int | None = None,
           zero_inflated: bool | str | None = None, prior: str = "weak", seed=None, tune: int = 1000, target_accept: float = 0.9,
           cores: int | None = None, sampler: str = "pymc", k=DEFAULT_K,
           progressbar: bool = False, check: bool = True, **kwargs) -> xr.DataTree:
    """Sample the posterior of the Beta mixture (or the zero-inflated mixture) with NUTS.

    Parameters
    ----------
    data : MixtureFit, ZeroInflatedFit, Counts or tuple of array_like
        A fit from :func:`passmix.fit` (its model, its H, its data, its MLE
        as the starting point), or counts, which are fitted first (BIC over
        H unless `n_components` is given). Any single-system
        :class:`~passmix.inference.LikelihoodResult` that supplies a
        ``sampling_model`` is sampled the same way.
    draws, chains : int, default 1000, 4
        Draws kept per chain, and chains.
    n_components : int, optional
        H to sample; default the fit's (chosen by BIC).
    zero_inflated : bool or "auto", optional
        When `data` are counts: fit (and sample) the zero-inflated mixture,
        as :func:`passmix.fit` does (default False). A fit's own model is
        sampled; a value that contradicts it is an error.
    prior : {"weak", "flat"}, default "weak"
        ``"weak"``: independent normal priors on the unconstrained coordinates
        (:data:`passmix.models.mixture.graph.WEAK_PRIOR`), proper for any data.
        ``"flat"``: flat on those coordinates, so the posterior mode is the
        MLE; improper in general and usable only when the data keep the
        sampler away from the plateaus of the likelihood (see the module
        docstring); a :class:`~passmix.PosteriorWarning` says when it is not.
        The zero-inflated model's flat posterior is always improper (as
        ``logit_zero`` falls the likelihood tends to the plain mixture's);
        its weak prior on ``logit_zero`` is ``Normal(-6, 3)``, skeptical of an
        atom (:data:`passmix.models.zero_inflated.model.ZERO_PRIOR`).
    seed : int or numpy.random.Generator, optional
        Seed of the chain starts and the sampler (and of the fit, if `data`
        are counts). Fixed seed, same draws.
    tune : int, default 1000
        Warm-up iterations per chain (discarded).
    target_accept : float, default 0.9
        NUTS target acceptance rate.
    cores : int, optional
        Processes for the chains; default ``min(chains, 2)``.
    sampler : {"pymc", "nutpie"}, default "pymc"
        ``"nutpie"`` uses nutpie (optional dependency) on the same PyMC model;
        its compiled model is cached per ``(model, H, prior)`` and only the data are
        swapped, which pays off for many or long runs.
    k : int or array_like of int, default (1, 5, 10, 60, 100, 1000)
        Horizons whose metric draws are stored in the posterior; others are
        available from :func:`posterior_metrics`.
    progressbar : bool, default False
        Show the sampler's progress bar.
    check : bool, default True
        Run :func:`check_diagnostics` and warn about each problem found.
    **kwargs
        Passed to ``pymc.sample`` (or ``nutpie.sample``).

    Returns
    -------
    xarray.DataTree
        Groups: ``posterior`` (the free coordinates; ``weights`` (not at H = 1,
        where the one weight is 1), ``alpha``, ``beta`` with dim ``component``; the zero-inflated model's
        ``logit_zero`` and ``zero_weight``; ``pass_at_k``, ``pass_hat_k``,
        ``auc_at_k`` with dim ``k``), ``sample_stats``, ``observed_data``
        and ``posterior_predictive`` (``count_histogram``: tasks with each
        number of successes, dims ``trials`` x ``successes``), and
        ``constant_data`` (the distinct ``(y, m)`` pairs). The posterior's
        ``attrs`` record the model (``passmix_model``), the prior, H, sampler
        and the MLE; the problems
        :func:`check_diagnostics` found are in
        ``idata.sample_stats.attrs["passmix_problems"]``.

    Warns
    -----
    PosteriorWarning
        For each diagnostic problem (see :func:`check_diagnostics`), and
        before sampling when H is not identified by m trials
        (more free parameters than trials: ``3H - 1 > m``, the zero-inflated
        model's ``3H > m``).

    Notes
    -----
    Component means are ordered on the logit scale by the parameterisation,
    so labels cannot switch between chains. Chains start at the MLE with
    normal jitter (sd 0.1), which shortens warm-up. The posterior predictive
    draws, for each posterior draw and each number of trials m shared by
    ``n_m`` tasks, the histogram of successes as
    ``Multinomial(n_m, p)`` with ``p`` the mixture's beta-binomial pmf: the
    same distribution as drawing each task's theta from the mixture and its
    successes from a binomial, at a cost independent of the number of tasks.
    When draws x cells would exceed two million numbers, the predictive uses
    evenly thinned draws.

    Examples
    --------
    >>> import numpy as np
    >>> import passmix
    >>> from passmix.bayes.sample import sample, posterior_metrics
    >>> rng = np.random.default_rng(0)
    >>> counts = passmix.Counts(rng.binomial(5, rng.beta(1.0, 2.0, 200)), np.full(200, 5))
    >>> res = passmix.fit(counts, n_components=1, seed=0)
    >>> idata = sample(res, draws=300, chains=2, tune=300, seed=1)
    >>> posterior_metrics(idata, k=[1, 60])["pass_at_k"].dims
    ('chain', 'draw', 'k')
    """
    draws, chains, tune, cores = _sample_iv(draws, chains, tune, prior, sampler,
                                            target_accept, cores)
    k_arr = np.unique(check_k(k)[0])
    seed = _seed_iv(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # the bound is said below, in its own terms
        warnings.simplefilter("ignore", DegenerateDataWarning)
        fit_, h, mle, on_bound = _resolve_fit(data, n_components, zero_inflated, seed)
    sm = fit_.sampling_model(prior, h)
    if mle.size != sm.n_parameters:  # pragma: no cover - guards a model's hooks
        raise RuntimeError(f"{type(fit_).__name__}.start gave {mle.size} coordinates; its "
                           f"sampling model has {sm.n_parameters}.")
    y, m, weight = fit_.counts.pairs()
    problems: list[str] = []
    if sm.n_parameters > int(m.max()):
        msg = (f"H = {h} has {sm.n_parameters} free parameters but m = {int(m.max())} "
               f"trials per task identify only {int(m.max())} moments of the mixing "
               "distribution: the posterior of the components follows the prior "
               "(prior='flat': it is improper).")
        problems.append(msg)
        warnings.warn(msg, PosteriorWarning, stacklevel=2)
    if prior == "flat" and on_bound:
        msg = (f"the flat posterior is improper for these data: the likelihood rises to the "
               f"box bound of {', '.join(on_bound)} (the MLE is on it), so it does not vanish "
               "beyond and a flat prior leaves infinite mass there. Use prior='weak'.")
        problems.append(msg)
        warnings.warn(msg, PosteriorWarning, stacklevel=2)

    starts = _starts(mle, sm, chains, seed, _START_JITTER)
    pairs = pair_data(y, m, weight)
    with sm.lock:
        sm.set_data(y, m, weight)
        if sampler == "pymc":
            idata = _run_pymc(sm, draws, tune, chains, cores, seed, starts, target_accept,
                              progressbar, kwargs)
        else:
            idata = _run_nutpie(sm, draws, tune, chains, cores, seed, starts, target_accept,
                                progressbar, pairs, kwargs)

    idata = _tidy(idata, sm)
    posterior = idata.posterior
    # the model first: the metric draws are its map's
    posterior.attrs.update({
        "passmix_model": sm.kind, "passmix_prior": prior, "passmix_n_components": h,
        "passmix_sampler": sampler, "passmix_mle": [float(v) for v in mle],
    })
    for metric, name in METRIC_VARS.items():
        posterior[name] = posterior_metrics(idata, k=k_arr, metric=metric)
    _add_predictive(idata, y, m, weight, seed)
    if not has_group(idata, "constant_data"):
        idata["constant_data"] = xr.Dataset(
            {name: ("pair", np.asarray(v)) for name, v in pairs.items()})
    found = check_diagnostics(idata, warn=check, stacklevel=3)
    idata.sample_stats.attrs["passmix_problems"] = problems + found
    return idata


_DIM_RENAMES = {
    "weights": "component", "alpha": "component", "beta": "component",
    "log_concentration": "component", "logit_weights": "higher_component",
    "log_mean_gaps": "higher_component",
}


def _tidy(idata, sm):
    """Keep the model's variables (its blocks and deterministics) and name the component
    dims (``component`` 1..H, ``higher_component`` 2..H)."""
    posterior = idata.posterior
    names = {name for name, _ in sm.blocks} | set(sm.deterministics)
    keep = [v for v in posterior.data_vars if v in names]
    out = xr.Dataset(attrs=posterior.attrs)
    for var in keep:
        da = posterior[var]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        new = _DIM_RENAMES.get(var)
        if extra and new is not None:
            da = da.rename({extra[0]: new}).drop_vars(new, errors="ignore")
            start = 1 if new == "component" else 2
            da = da.assign_coords({new: np.arange(start, start + da.sizes[new])})
        out[var] = da
    if "weights" in out and out.sizes.get("component") == 1:
        # one component's weight is 1 on every draw: ArviZ's R-hat of a constant is NaN
        # (with a warning) and its trace plot warns; the metrics read 1 where it is absent
        out = out.drop_vars("weights")
    idata["posterior"] = out.transpose("chain", "draw", ...)
    return idata


# -- posterior predictive ----------------------------------------------------------

def _mixture_pmf(weights, alpha, beta, m: int, zero_weight=None) -> np.ndarray:
    """Beta-binomial mixture pmf of y = 0..m, shape ``weights.shape[:-1] + (m + 1,)``;
    with an atom of weight `zero_weight` (shape ``weights.shape[:-1]``) at success rate 0."""
    if zero_weight is not None:
        zero = np.asarray(zero_weight, dtype=float)[..., None]
        pmf = (1.0 - zero) * _mixture_pmf(weights, alpha, beta, m)
        pmf[..., 0] += zero[..., 0]
        return pmf
    y = np.arange(m + 1, dtype=float)
    with np.errstate(all="ignore"):
        a = np.clip(alpha, 1e-300, 1e300)[..., None]
        b = np.clip(beta, 1e-300, 1e300)[..., None]
        log_c = log_beta_ratio(a, b, y, m - y, log_choose(m, y))
        log_pmf = logsumexp(np.log(weights)[..., None] + log_c, axis=-2)
        pmf = np.exp(log_pmf)
        pmf = np.where(np.isfinite(pmf), pmf, 0.0)
        total = pmf.sum(axis=-1, keepdims=True)
        uniform = np.full_like(pmf, 1.0 / (m + 1))
        return np.where(total > 0, pmf / np.where(total > 0, total, 1.0), uniform)


def _observed_histogram(y, m, weight) -> tuple[np.ndarray, np.ndarray]:
    trials = np.unique(m)
    hist = np.zeros((trials.size, int(trials.max()) + 1), dtype=np.int64)
    row = np.searchsorted(trials, m)
    np.add.at(hist, (row, y), weight)
    return trials, hist


def _add_predictive(idata, y, m, weight, seed) -> None:
    posterior = idata.posterior
    trials, observed = _observed_histogram(y, m, weight)
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    keep = max(1, min(n_draw, _PPC_MAX_VALUES // max(1, n_chain * observed.size)))
    draw_idx = np.unique(np.linspace(0, n_draw - 1, keep).round().astype(int))
    zero, w, a, b = (x[:, draw_idx] for x in mixture_draws(posterior))
    rng = np.random.default_rng(None if seed is None else [seed, 1])
    shape = w.shape[:2] + observed.shape
    replicated = np.zeros(shape, dtype=np.int64)
    expected = np.zeros(shape)
    n_tasks = observed.sum(axis=1)
    for i, mm in enumerate(trials):
        pmf = _mixture_pmf(w, a, b, int(mm), zero)
        replicated[:, :, i, : mm + 1] = rng.multinomial(n_tasks[i], pmf)
        expected[:, :, i, : mm + 1] = n_tasks[i] * pmf
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values[draw_idx],
              "trials": trials, "successes": np.arange(observed.shape[1])}
    dims = ("chain", "draw", "trials", "successes")
    predictive = xr.Dataset(
        {"count_histogram": (dims, replicated), "expected_histogram": (dims, expected)},
        coords=coords)
    obs = xr.Dataset({"count_histogram": (("trials", "successes"), observed)},
                     coords={"trials": trials, "successes": coords["successes"]})
    idata["posterior_predictive"] = predictive
    idata["observed_data"] = obs
