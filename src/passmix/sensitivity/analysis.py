"""The fitted distribution of configuration scores: :func:`sensitivity` and its result.

Configurations are instances of the Beta mixture (``docs/formulas.md``
section 8): configuration j has ``y_j`` correct answers among ``m_j``
observed questions, and the same marginal likelihood and BIC choose the
mixture ``G``. The result reads the distribution of scores across
configurations off ``G``: CDF, quantiles, percentiles with intervals, mean
and spread, and compares it with the scores of a complete reference (W1 and
percentile errors, see :func:`score_errors`).

``G`` is the distribution of a configuration's success rate over the pool
its questions are drawn from. When that pool is the reference's own Q
questions (drawn without replacement, as the budget samplers do), the rate
is the reference score itself. Against an infinite population of questions,
scores on Q of them are more spread: ``Var(S) = Var(theta) +
E[theta (1 - theta)] / Q`` under the working model of independent answers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logit

from .._validation import (FitWarning, check_interval_method, check_level, check_percentiles,
                           check_seed)
from ..distributions import BetaMixture, mixture_ppf, wasserstein1, wasserstein1_midpoint
from ..models.mixture.fit import MixtureFit, fit
from ..models.mixture.parameters import unpack
from ..inference.delta import logit_wald_ends, wald_ends
from .data import Configurations
from .sampling import sample_cells

__all__ = ["PERCENTILES", "SensitivityResult", "score_errors", "sensitivity"]

#: Percentiles reported by default (PromptEval's).
PERCENTILES = (5, 25, 50, 75, 95)
# central-difference step in the fit's unconstrained coordinates
_STEP = 1e-5
# quantiles are kept this far inside (0, 1) on the logit scale
_EDGE = 1e-12


@dataclass(frozen=True, repr=False)
class SensitivityResult:
    """The fitted distribution of configuration scores.

    Attributes
    ----------
    fit : MixtureFit
        The Beta-mixture fit of the configurations' counts.
    distribution : BetaMixture
        The fitted score distribution G.
    data : Configurations
        The observed cells that were fitted.
    percentiles : tuple of float
        Percentiles (0..100) reported by :meth:`summary`.
    level : float
        Confidence level of the intervals.
    """

    fit: MixtureFit
    distribution: BetaMixture
    data: Configurations
    percentiles: tuple[float, ...]
    level: float

    # -- the distribution ------------------------------------------------------------
    def cdf(self, x: Any):
        """Fitted CDF of configuration scores at `x`."""
        return self.distribution.cdf(x)

    def ppf(self, q: Any):
        """Fitted quantile function at probabilities `q` (0..1)."""
        return self.distribution.ppf(q)

    quantile = ppf

    @property
    def mean(self) -> float:
        """Mean score across configurations."""
        return self.distribution.mean

    @property
    def std(self) -> float:
        """Standard deviation of the latent score across configurations."""
        return self.distribution.std

    # -- uncertainty -------------------------------------------------------------------
    def _perturbed(self, z0: np.ndarray) -> tuple[np.ndarray, ...]:
        """Mixture parameters at z0 and at z0 +- one step in each coordinate, shape (2n+1, H)."""
        h = self.fit.n_components
        steps = np.vstack([np.zeros(z0.size), np.eye(z0.size) * _STEP, -np.eye(z0.size) * _STEP])
        parts = [unpack(z0 + d, h) for d in steps]
        return tuple(np.array([p[i] for p in parts]) for i in range(3))

    def _value_and_gradient(self, func, z0: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
        """``func(weights, alpha, beta)`` (rows of mixtures -> rows of values) at z0, and its
        central-difference gradient in the coordinates, shape (values, n)."""
        z0 = self.fit.params if z0 is None else z0
        out = np.asarray(func(*self._perturbed(z0)), dtype=float)
        out = out.reshape(out.shape[0], -1)
        n = z0.size
        return out[0], ((out[1:n + 1] - out[n + 1:]) / (2.0 * _STEP)).T

    def _delta(self, func, level: float, scale: str):
        value, grad = self._value_and_gradient(func)
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", grad, self.fit.covariance, grad), 0.0))
        if scale == "logit":
            v = np.clip(value, _EDGE, 1.0 - _EDGE)
            lo, hi = logit_wald_ends(logit(v), se / (v * (1.0 - v)), level)
        else:
            lo, hi = wald_ends(value, se, level, "identity")
        return value, se, lo, hi

    def _profile_quantiles(self, u: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Profile-likelihood ends of the quantiles at levels `u` (see :mod:`passmix.inference.profile`)."""
        fit_ = self.fit

        def quantile_logit(z, t):
            value, grad = self._value_and_gradient(
                lambda w, a, b: logit(np.clip(mixture_ppf(w, a, b, t), _EDGE, 1.0 - _EDGE)), z)
            return float(value[0]), grad[0]

        def quantile_value(z, t):
            return float(mixture_ppf(*unpack(z, fit_.n_components), t))

        lower, upper, _ = fit_.profile_function(quantile_logit, quantile_value, u, level)
        estimate = self.ppf(u)
        return np.minimum(lower, estimate), np.maximum(upper, estimate)

    def _warn_bound(self) -> None:
        if self.fit.on_bound:
            warnings.warn(f"the optimum lies on the box bound of {', '.join(self.fit.on_bound)};"
                          " the delta-method intervals of the quantiles and the spread treat "
                          "those coordinates as known (at the binomial limit the spread could "
                          "be wider than they show; the profile intervals do not assume it).",
                          FitWarning, stacklevel=3)

    def percentile(self, q: Any = None, level: float | None = None, *,
                   method: str = "profile") -> pd.DataFrame:
        """Percentiles of configuration scores with intervals.

        Parameters
        ----------
        q : float or array_like, optional
            Percentiles in 0..100 (default :attr:`percentiles`).
        level : float, optional
            Confidence level (default :attr:`level`).
        method : {"profile", "delta"}, default "profile"
            Profile likelihood: the smallest and largest quantile over the
            parameters whose log-likelihood is within ``chi2(1).ppf(level)/2``
            of the maximum (as :meth:`passmix.MixtureFit.profile`, searched
            with the same code). Delta method: on the logit scale, with the
            quantile's gradient by central differences in the fit's
            coordinates.

        Returns
        -------
        pandas.DataFrame
            Columns percentile, estimate, se (delta method), lower, upper.
        """
        q = np.atleast_1d(np.asarray(self.percentiles if q is None else q, dtype=float))
        if np.any(~np.isfinite(q)) or np.any((q < 0) | (q > 100)):
            raise ValueError("percentiles must lie in [0, 100].")
        level = self.level if level is None else check_level(level)
        method = check_interval_method(method)
        u = q / 100.0
        if method == "delta":
            self._warn_bound()
        value, se, lo, hi = self._delta(lambda w, a, b: mixture_ppf(
            w[:, None, :], a[:, None, :], b[:, None, :], u[None, :]), level, "logit")
        if method == "profile":
            lo, hi = self._profile_quantiles(u, level)
        table = pd.DataFrame({"percentile": q, "estimate": value, "se": se, "lower": lo,
                              "upper": hi})
        table.attrs["method"] = method
        return table

    def summary(self, level: float | None = None, *, method: str = "profile") -> pd.DataFrame:
        """Mean, spread and percentiles of configuration scores, with intervals.

        Parameters
        ----------
        level : float, optional
            Confidence level (default :attr:`level`).
        method : {"profile", "delta"}, default "profile"
            Interval of the mean (Pass@1, with the core fit's interval) and of
            the percentiles (see :meth:`percentile`). The spread's interval is
            always the delta method's.

        Returns
        -------
        pandas.DataFrame
            Rows mean, std, p5, p25, ...; columns estimate, se, lower,
            upper; ``attrs["method"]`` names the mean's interval method.
        """
        level = self.level if level is None else check_level(level)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            mean_lo, mean_hi = self.fit.interval("pass@k", 1, level, method=method)
            mean_se = self.fit.standard_error("pass@k", 1)
            _, std_se, std_lo, std_hi = self._delta(_mixture_std, level, "identity")
            pct = self.percentile(level=level, method=method)
        self._warn_bound()
        rows = [("mean", self.mean, mean_se, mean_lo, mean_hi),
                ("std", self.std, float(std_se[0]), float(std_lo[0]), float(std_hi[0]))]
        rows += [(f"p{_fmt(p)}", e, s, lo, hi) for p, e, s, lo, hi in pct.itertuples(
            index=False)]
        table = pd.DataFrame(rows, columns=["statistic", "estimate", "se", "lower", "upper"]
                             ).set_index("statistic")
        table.attrs["method"] = check_interval_method(method)
        return table

    def compare(self, reference: Any, percentiles: Any = None) -> pd.DataFrame:
        """Errors against the scores of a complete reference (see :func:`score_errors`)."""
        ref = reference.scores() if isinstance(reference, Configurations) else reference
        return score_errors(self.distribution, ref, self.percentiles if percentiles is None
                            else percentiles)

    def info(self) -> dict[str, Any]:
        """The fit at a glance (as :meth:`passmix.MixtureFit.info`) plus the data's size."""
        out = self.fit.info()
        out.update(estimator="sensitivity", n_configurations=self.data.n_configurations,
                   n_cells=self.data.n_cells)
        return out

    def plot(self, ax=None, *, reference: Any = None, band: bool = True,
             method: str = "profile"):
        """Fitted CDF over the empirical CDF of the observed scores, with the quantile band
        (:func:`passmix.plots.plot_sensitivity`, which takes the same arguments)."""
        from ..plots.sensitivity import plot_sensitivity

        return plot_sensitivity(self, ax, reference=reference, band=band, method=method)

    def __repr__(self) -> str:
        pct = ", ".join(f"p{_fmt(p)}={v:.3f}" for p, v in zip(
            self.percentiles, self.ppf(np.asarray(self.percentiles) / 100.0)))
        return (f"SensitivityResult(J={self.data.n_configurations}, cells={self.data.n_cells}, "
                f"H={self.fit.n_components}, mean={self.mean:.3f}, std={self.std:.3f}, {pct})")

    def _repr_html_(self) -> str:
        return f"<p><b>{self!r}</b></p>" + self.summary(method="delta").to_html(
            float_format="%.4g")


def _mixture_std(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = a / (a + b)
    mean = np.sum(w * mu, axis=-1)
    second = np.sum(w * (mu * (1.0 - mu) / (a + b + 1.0) + mu ** 2), axis=-1)
    return np.sqrt(np.maximum(second - mean ** 2, 0.0))


def _fmt(p: float) -> str:
    return f"{p:g}"


def as_configurations(data: Any) -> Configurations:
    """`data` as :class:`Configurations`: itself, a 0/1 matrix, :class:`passmix.Counts`, or a
    DataFrame of counts (columns ``successes`` and ``questions``, the configuration in
    ``prompt`` or else the first column)."""
    from ..data.counts import Counts

    if isinstance(data, Configurations):
        return data
    if isinstance(data, Counts):
        return Configurations.from_counts(data.successes, data.trials, data.tasks)
    if isinstance(data, pd.DataFrame) and {"successes", "questions"} <= set(data.columns):
        from .data import read_configurations

        return read_configurations(data, config=data.columns[0] if "prompt" not in data.columns
                                   else "prompt")
    if isinstance(data, pd.DataFrame) or np.ndim(data) == 2:
        return Configurations.from_matrix(data)
    raise TypeError("data must be Configurations, a configuration x question 0/1 matrix, or "
                    f"passmix.Counts; got {type(data).__name__}.")


def sensitivity(data: Any, *, budget: int | None = None, sampler: str = "stratified",
                percentiles: Any = PERCENTILES, level: float = 0.95,
                max_components: int = 4, n_components: int | None = None, n_init: int = 10,
                seed: Any = None) -> SensitivityResult:
    """Fit the distribution of a system's score across configurations (prompts, ...).

    Parameters
    ----------
    data : Configurations, array_like or Counts
        A configuration x question 0/1 matrix (NaN = not observed), per
        configuration counts, or :class:`Configurations`.
    budget : int, optional
        Observe only this many cells, chosen by `sampler` (for a study of
        what a budget buys); by default every observed cell is used.
    sampler : {"stratified", "uniform"}, default "stratified"
        See :func:`passmix.sensitivity.sample_cells`.
    percentiles : sequence of float, default (5, 25, 50, 75, 95)
    level : float, default 0.95
    max_components, n_components, n_init
        As for :func:`passmix.fit`.
    seed : int or numpy.random.Generator, optional
        Seeds the budget sampler and the fit; None (the default) means 0, as
        in :func:`passmix.fit`.

    Returns
    -------
    SensitivityResult

    Examples
    --------
    >>> import numpy as np
    >>> from passmix.sensitivity import Configurations, sensitivity
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.beta(4, 6, size=150)                 # 150 prompts
    >>> data = Configurations.from_counts(rng.binomial(20, theta), np.full(150, 20))
    >>> res = sensitivity(data, seed=0)
    >>> round(res.mean, 2), res.summary().index.tolist()[:3]
    (0.4, ['mean', 'std', 'p5'])
    >>> bool(abs(res.ppf(0.5) - np.median(theta)) < 0.05)
    True
    """
    data = as_configurations(data)
    percentiles = check_percentiles(percentiles)
    level = check_level(level)
    rng = np.random.default_rng(0 if seed is None else check_seed(seed))
    if budget is not None:
        data = sample_cells(data, budget, method=sampler, seed=rng)
    if data.n_cells == 0:
        raise ValueError("no observed cells: every configuration has 0 questions.")
    fitted = fit(data.counts(), max_components=max_components, n_components=n_components,
                 n_init=n_init, seed=rng)
    return SensitivityResult(fitted, BetaMixture.from_fit(fitted), data, percentiles, level)


def score_errors(estimate: Any, reference: Any, percentiles: Any = PERCENTILES) -> pd.DataFrame:
    """W1 and percentile errors of an estimated score distribution against reference scores.

    Parameters
    ----------
    estimate : BetaMixture or array_like
        A fitted distribution, or estimated scores (one per configuration:
        the empirical baseline's observed scores, pIRT's estimates).
    reference : array_like
        The complete scores ``S_j``.
    percentiles : sequence of float, default (5, 25, 50, 75, 95)

    Returns
    -------
    pandas.DataFrame
        Rows ``w1`` (the first paper's midpoint approximation for a
        mixture), ``w1_exact`` and ``p5``, ``p25``, ...; columns estimate,
        reference and abs_error, in score units. For the W1 rows the
        estimate is the distance and the reference 0. A percentile of the
        reference is ``numpy.percentile`` (linear interpolation); of a
        mixture its quantile; of estimated scores ``numpy.percentile``. For
        estimated scores both W1 rows are the exact distance between the two
        samples.

    Examples
    --------
    >>> from passmix.sensitivity import score_errors
    >>> score_errors([0.2, 0.4], [0.3, 0.5], [50]).round(6)["abs_error"].tolist()
    [0.1, 0.1, 0.1]
    """
    ref = np.asarray(reference, dtype=float).ravel()
    if ref.size == 0 or not np.all(np.isfinite(ref)):
        raise ValueError("reference scores must be a non-empty array of finite numbers.")
    q = np.asarray(check_percentiles(percentiles))
    if isinstance(estimate, BetaMixture):
        w1 = wasserstein1_midpoint(estimate, ref)
        exact = wasserstein1(estimate, ref)
        est_q = estimate.ppf(q / 100.0)
    else:
        est = np.asarray(estimate, dtype=float).ravel()
        est = est[np.isfinite(est)]
        if est.size == 0:
            raise ValueError("no finite estimated score to compare.")
        w1 = exact = wasserstein1(est, ref)
        est_q = np.percentile(est, q)
    ref_q = np.percentile(ref, q)
    rows = [("w1", w1, 0.0, w1), ("w1_exact", exact, 0.0, exact)]
    rows += [(f"p{_fmt(p)}", e, r, abs(e - r)) for p, e, r in zip(q, est_q, ref_q)]
    return pd.DataFrame(rows, columns=["target", "estimate", "reference", "abs_error"]
                        ).set_index("target")
