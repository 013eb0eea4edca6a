"""Tests for passmix.plots: horizon curves and the fitted mixing density."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

import passmix
from passmix.plots import plot_horizon, plot_mixture_density

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

METRICS = ("pass@k", "pass^k", "auc@k")


# --------------------------------------------------------------------------
# shared fits (one optimisation each, per module). H <= 2 is enough here and
# spares compiling the H = 3, 4 objectives, which dominates the run time.
# --------------------------------------------------------------------------
def fit(y, m):
    return passmix.fit(passmix.Counts(y, m), seed=0, max_components=2)


@pytest.fixture(scope="module")
def hump_fit():
    """One smooth, unimodal component (alpha, beta > 1): 300 tasks x 10 trials."""
    rng = np.random.default_rng(2)
    theta = rng.beta(3.0, 6.0, size=300)
    res = fit(rng.binomial(10, theta), np.full(300, 10))
    assert res.n_components == 1 and res.alpha[0] > 1 and res.beta[0] > 1
    return res


@pytest.fixture(scope="module")
def u_fit():
    """Two components with alpha < 1 (density unbounded at 0): 300 tasks x 20 trials."""
    rng = np.random.default_rng(1)
    hard = rng.random(300) < 0.5
    theta = np.where(hard, rng.beta(0.3, 3.0, 300), rng.beta(8.0, 2.0, 300))
    res = fit(rng.binomial(20, theta), np.full(300, 20))
    assert res.n_components == 2 and res.alpha.min() < 1
    return res


@pytest.fixture(scope="module")
def ragged_fit():
    """Unequal trials per task, some tasks never run (m_j = 0)."""
    rng = np.random.default_rng(3)
    m = rng.choice([0, 5, 8, 12], size=150)
    y = rng.binomial(m, rng.beta(2.0, 3.0, size=150))
    return fit(y, m)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------
# reading back what was drawn
# --------------------------------------------------------------------------
def line_labelled(ax, prefix):
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith(prefix)]
    assert len(lines) == 1, [ln.get_label() for ln in ax.get_lines()]
    return lines[0]


def band_of(ax):
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1
    return bands[0]


def band_at(band, k):
    """(lowest, highest) y of the band's outline at each horizon in `k`."""
    vertices = np.concatenate([p.vertices for p in band.get_paths()])
    lo, hi = [], []
    for kk in k:
        ys = vertices[np.isclose(vertices[:, 0], kk), 1]
        assert ys.size >= 2, f"no band vertices at k = {kk}"
        lo.append(ys.min())
        hi.append(ys.max())
    return np.array(lo), np.array(hi)


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


# --------------------------------------------------------------------------
class TestPlotHorizon:
    def test_new_axes_by_default(self, hump_fit):
        n_before = len(plt.get_fignums())
        ax = plot_horizon(hump_fit)
        assert isinstance(ax, Axes)
        assert len(plt.get_fignums()) == n_before + 1
        assert ax.get_xscale() == "log"
        assert ax.get_ylabel() == "Pass@k"
        lo, hi = ax.get_ylim()
        assert -0.1 < lo < 0.0 and 1.0 < hi < 1.1

    def test_uses_given_axes(self, hump_fit):
        fig, ax = plt.subplots()
        assert plot_horizon(hump_fit, ax=ax) is ax
        assert fig.axes == [ax]
        assert len(ax.get_lines()) >= 1

    def test_default_horizons(self, hump_fit):
        k = line_labelled(plot_horizon(hump_fit), "Beta mixture").get_xdata()
        assert k[0] == 1 and k[-1] == 1000
        assert 50 <= k.size <= 70
        assert np.all(np.diff(k) > 0) and np.all(k == np.round(k))

    @pytest.mark.parametrize("level", [0.95, 0.8])
    @pytest.mark.parametrize("metric", METRICS)
    @pytest.mark.parametrize("interval", ["profile", "delta"])
    def test_curve_and_band_match_fit(self, hump_fit, metric, level, interval):
        k = np.array([1, 2, 5, 10, 30, 100, 500, 2000])
        ax = plot_horizon(hump_fit, metric, k, level=level, interval=interval)
        line = line_labelled(ax, "Beta mixture")
        assert_array_equal(line.get_xdata(), k)
        assert_allclose(line.get_ydata(), hump_fit.metric(metric, k), rtol=1e-12)
        res = (hump_fit.profile(metric, k, level) if interval == "profile"
               else hump_fit.delta(metric, k, level))
        lo, hi = band_at(band_of(ax), k)
        assert_allclose(lo, res.lower, rtol=1e-12, atol=1e-15)
        assert_allclose(hi, res.upper, rtol=1e-12, atol=1e-15)
        assert ax.get_ylabel() == {"pass@k": "Pass@k", "pass^k": "Pass^k",
                                   "auc@k": "AUC@k"}[metric]
        name = {"profile": "profile-likelihood", "delta": "delta-method"}[interval]
        assert f"{100 * level:g}% {name} interval" in legend_texts(ax)

    def test_unknown_interval(self, hump_fit):
        with pytest.raises(ValueError, match="unknown interval"):
            plot_horizon(hump_fit, "pass@k", [1, 10], interval="bootstrap")

    @pytest.mark.parametrize("scale", ["logit", "identity"])
    def test_band_scale_passed_on(self, hump_fit, scale):
        k = np.array([1, 10, 100])
        lo, hi = band_at(band_of(plot_horizon(hump_fit, "pass@k", k, interval="delta",
                                              scale=scale)), k)
        res = hump_fit.delta("pass@k", k, 0.95, scale=scale)
        assert_allclose(lo, res.lower, rtol=1e-12, atol=1e-15)
        assert_allclose(hi, res.upper, rtol=1e-12, atol=1e-15)

    def test_band_is_not_degenerate(self, hump_fit):
        k = np.array([2, 5, 10])
        lo, hi = band_at(band_of(plot_horizon(hump_fit, "pass@k", k)), k)
        assert np.all(hi - lo > 1e-3)

    def test_unsorted_horizons_are_sorted(self, hump_fit):
        ax = plot_horizon(hump_fit, "pass@k", [100, 1, 10, 10])
        assert_array_equal(line_labelled(ax, "Beta mixture").get_xdata(), [1, 10, 100])

    def test_reference_and_observed_markers(self, hump_fit):
        ref = {300: 0.99, 3: 0.6, 30: 0.9}  # a dict, unsorted
        obs_k = np.array([1, 5, 10])
        obs_v = passmix.naive_estimate(hump_fit.counts, "pass@k", obs_k)
        ax = plot_horizon(hump_fit, reference=ref, observed=(obs_k, obs_v),
                          reference_label="10k samples", observed_label="naive")
        r = line_labelled(ax, "10k samples")
        assert_array_equal(r.get_xdata(), [3, 30, 300])
        assert_array_equal(r.get_ydata(), [0.6, 0.9, 0.99])
        assert r.get_marker() not in (None, "None", "")
        o = line_labelled(ax, "naive")
        assert_array_equal(o.get_xdata(), obs_k)
        assert_allclose(o.get_ydata(), obs_v)
        assert o.get_linestyle() == "None"
        assert o.get_marker() not in (None, "None", "", r.get_marker())
        assert {"10k samples", "naive"} <= set(legend_texts(ax))

    def test_reference_as_series(self, hump_fit):
        series = pd.Series([0.5, 0.8], index=[2, 20])
        ax = plot_horizon(hump_fit, reference=series)
        assert_array_equal(line_labelled(ax, "reference").get_xdata(), [2, 20])

    def test_no_reference_no_observed(self, hump_fit):
        ax = plot_horizon(hump_fit)
        labels = [ln.get_label() for ln in ax.get_lines()]
        assert not any(lab.startswith(("reference", "observed")) for lab in labels)

    def test_trials_observed_line(self, hump_fit):
        vline = line_labelled(plot_horizon(hump_fit), "trials observed")
        assert_array_equal(vline.get_xdata(), [10, 10])
        assert vline.get_linestyle() == ":"
        assert vline.get_label() == "trials observed (m = 10)"

    def test_trials_observed_line_only_within_range(self, hump_fit):
        ax = plot_horizon(hump_fit, k=[20, 50, 100])
        assert not any(ln.get_label().startswith("trials observed") for ln in ax.get_lines())

    def test_trials_observed_uses_largest_m(self, ragged_fit):
        vline = line_labelled(plot_horizon(ragged_fit), "trials observed")
        assert_array_equal(vline.get_xdata(), [12, 12])
        assert vline.get_label() == "trials observed (max m = 12)"

    def test_color_and_label(self, hump_fit):
        ax = plot_horizon(hump_fit, color="C3", label="model A")
        line = line_labelled(ax, "model A")
        assert to_rgba(line.get_color()) == to_rgba("C3")
        assert_allclose(band_of(ax).get_facecolor()[0][:3], to_rgba("C3")[:3])

    @pytest.mark.slow
    def test_two_fits_on_one_axes(self, hump_fit, u_fit):
        fig, ax = plt.subplots()
        plot_horizon(hump_fit, ax=ax, label="A")
        plot_horizon(u_fit, ax=ax, label="B")
        a, b = line_labelled(ax, "A"), line_labelled(ax, "B")
        assert a.get_color() != b.get_color()
        assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2

    def test_invalid_inputs(self, hump_fit):
        with pytest.raises(ValueError, match="unknown metric 'pass@x'"):
            plot_horizon(hump_fit, "pass@x")
        with pytest.raises(ValueError, match="k must be >= 1"):
            plot_horizon(hump_fit, k=[0, 1])
        with pytest.raises(ValueError, match="level must be in"):
            plot_horizon(hump_fit, level=1.5)
        with pytest.raises(TypeError, match="reference must be"):
            plot_horizon(hump_fit, reference=0.5)
        with pytest.raises(ValueError, match="equal length"):
            plot_horizon(hump_fit, observed=([1, 2, 3], [0.1, 0.2]))
        with pytest.raises(ValueError, match=r"finite and >= 1 \(log axis\), got 0.0"):
            plot_horizon(hump_fit, reference={0: 0.1, 1: 0.2})


# --------------------------------------------------------------------------
class TestPlotMixtureDensity:
    def test_new_axes_by_default(self, hump_fit):
        n_before = len(plt.get_fignums())
        ax = plot_mixture_density(hump_fit)
        assert isinstance(ax, Axes)
        assert len(plt.get_fignums()) == n_before + 1
        assert ax.get_xlim() == (0.0, 1.0)

    def test_uses_given_axes(self, hump_fit):
        fig, ax = plt.subplots()
        assert plot_mixture_density(hump_fit, ax=ax) is ax
        assert fig.axes == [ax]

    def test_density_integrates_to_one(self, hump_fit):
        line = line_labelled(plot_mixture_density(hump_fit), "fitted mixing density")
        x, y = line.get_xdata(), line.get_ydata()
        assert 0.0 < x.min() < 1e-3 and 1 - 1e-3 < x.max() < 1.0
        assert_allclose(np.trapezoid(y, x), 1.0, atol=1e-4)

    @pytest.mark.parametrize("which", ["hump_fit", "u_fit"])
    def test_density_is_weighted_beta_pdfs(self, which, request):
        res = request.getfixturevalue(which)
        line = line_labelled(plot_mixture_density(res), "fitted mixing density")
        x = line.get_xdata()
        truth = sum(w * stats.beta(a, b).pdf(x)
                    for w, a, b in zip(res.weights, res.alpha, res.beta))
        assert_allclose(line.get_ydata(), truth, rtol=1e-10)

    def test_components_dashed(self, u_fit):
        ax = plot_mixture_density(u_fit)
        density = line_labelled(ax, "fitted mixing density")
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert len(dashed) == u_fit.n_components
        for ln, w, a, b in zip(dashed, u_fit.weights, u_fit.alpha, u_fit.beta):
            assert_allclose(ln.get_ydata(), w * stats.beta(a, b).pdf(ln.get_xdata()),
                            rtol=1e-10)
        assert_allclose(sum(ln.get_ydata() for ln in dashed), density.get_ydata(), rtol=1e-10)
        assert legend_texts(ax).count("weighted components") == 1

    def test_no_components_for_one_component_or_when_off(self, hump_fit, u_fit):
        for ax in (plot_mixture_density(hump_fit), plot_mixture_density(u_fit, components=False)):
            assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]

    def test_histogram_of_observed_fractions(self, hump_fit):
        ax = plot_mixture_density(hump_fit)
        bars = ax.patches
        assert len(bars) == 11  # one bin per possible y/m with m = 10
        heights = np.array([p.get_height() for p in bars])
        widths = np.array([p.get_width() for p in bars])
        assert_allclose(np.sum(heights * widths), 1.0)
        frac = hump_fit.counts.successes / hump_fit.counts.trials
        expected, _ = np.histogram(frac, bins=np.linspace(0, 1, 12), density=True)
        assert_allclose(heights, expected)
        assert "observed y/m (300 tasks)" in legend_texts(ax)

    def test_histogram_skips_tasks_without_trials(self, ragged_fit):
        counts = ragged_fit.counts
        run = counts.trials > 0
        assert not run.all()
        ax = plot_mixture_density(ragged_fit, bins=10)
        heights = np.array([p.get_height() for p in ax.patches])
        expected, _ = np.histogram(counts.successes[run] / counts.trials[run], bins=10,
                                   range=(0, 1), density=True)
        assert_allclose(heights, expected)
        assert f"observed y/m ({run.sum()} tasks)" in legend_texts(ax)

    def test_no_histogram(self, hump_fit):
        assert len(plot_mixture_density(hump_fit, hist=False).patches) == 0

    def test_u_shape_is_clipped(self, u_fit):
        ax = plot_mixture_density(u_fit)
        density = line_labelled(ax, "fitted mixing density")
        top = ax.get_ylim()[1]
        assert np.isfinite(top)
        assert density.get_ydata().max() > 10 * top  # the spike at 0 leaves the axes
        assert top >= max(p.get_height() for p in ax.patches)  # the histogram does not
        # the body of the density is still on scale
        x = density.get_xdata()
        body = (x > 0.1) & (x < 0.9)
        assert density.get_ydata()[body].max() < top
        assert "peak off scale" in density.get_label()

    def test_bounded_density_not_clipped(self, hump_fit):
        ax = plot_mixture_density(hump_fit)
        density = line_labelled(ax, "fitted mixing density")
        assert density.get_ydata().max() <= ax.get_ylim()[1]
        assert "off scale" not in density.get_label()

    def test_invalid_inputs(self, hump_fit):
        with pytest.raises(ValueError, match="n_points must be a whole number >= 3, got 2"):
            plot_mixture_density(hump_fit, n_points=2)
        with pytest.raises(ValueError, match=r"clip_quantile must be in \(0, 1\], got 0"):
            plot_mixture_density(hump_fit, clip_quantile=0)


# --------------------------------------------------------------------------
class TestFitPlotMethods:
    """The fits' own ``plot()``: the horizon curve of :func:`plot_horizon`, labelled by name."""

    def test_mixture_fit_plot_is_plot_horizon(self, hump_fit):
        k = [1, 10, 100]
        ax = hump_fit.plot(k=k, interval="delta", label="mine")
        line = line_labelled(ax, "mine")
        assert_allclose(line.get_ydata(), hump_fit.metric("pass@k", k))
        lo, hi = band_at(band_of(ax), k)
        want = hump_fit.delta("pass@k", k)
        assert_allclose(lo, want.lower, rtol=1e-6)
        assert_allclose(hi, want.upper, rtol=1e-6)
        assert hump_fit.plot(k=k, metric="pass^k", interval="delta").get_ylabel() == "Pass^k"

    def test_pooled_fit_plot_draws_every_system_by_name(self):
        rng = np.random.default_rng(0)
        p = rng.beta(1, 3, size=(2, 40))
        y = rng.binomial(6, np.stack([p[0], np.sqrt(p[0])]))
        frame = pd.DataFrame({"model": np.repeat(["small", "large"], 40),
                              "task": np.tile(np.arange(40), 2),
                              "successes": y.ravel(), "trials": 6})
        groups = passmix.read_counts(frame, group_by="model")  # keys ('large',), ('small',)
        fit = passmix.fit_pooled(groups, seed=0)
        k = [1, 5, 50]
        ax = fit.plot(k=k)
        labels = legend_texts(ax)
        assert "small" in labels and "large" in labels and "('small',)" not in labels
        # the notes once for both curves: one band entry, one trials line
        assert sum("interval" in text for text in labels) == 1
        assert sum(text.startswith("trials observed") for text in labels) == 1
        small = line_labelled(ax, "small")
        assert_allclose(small.get_ydata(), fit.system("small").metric("pass@k", k))
        lower, upper = fit.system(("small",)).interval("pass@k", k, method="delta")
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == 2
        lo, hi = band_at(bands[[ln.get_label() for ln in ax.get_lines()
                                if not ln.get_label().startswith("trials")].index("small")], k)
        assert_allclose(lo, lower, rtol=1e-6)
        assert_allclose(hi, upper, rtol=1e-6)
        one = fit.plot(k=k, systems=["large"])
        assert [ln.get_label() for ln in one.get_lines()][0] == "large"


@pytest.mark.unit
class TestPlotEstimates:
    def test_groups_by_plain_name_one_panel_per_metric(self):
        from passmix.plots import plot_estimates

        groups = {("small",): passmix.Counts([0, 2, 5, 1], [5] * 4),
                  ("large",): passmix.Counts([3, 4, 5, 2], [5] * 4)}
        table = passmix.estimate_table(groups, ["model"], k=[1, 5], method="naive")
        before = table.copy()
        axes = plot_estimates(table, ["model"])
        assert [a.get_ylabel() for a in axes] == ["Pass@k", "Pass^k", "AUC@k"]
        assert sorted(legend_texts(axes[0])) == ["large", "small"]
        pd.testing.assert_frame_equal(table, before)
        (small,) = [c for c in axes[0].containers if c.get_label() == "small"]
        want = table[(table["model"] == "small") & (table["metric"] == "pass@k")]
        assert_allclose(small.lines[0].get_ydata(), want["estimate"])
        with pytest.raises(ValueError, match="table has no column 'system'"):
            plot_estimates(table, ["system"])


def test_never_calls_show(hump_fit, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("plt.show() called")

    monkeypatch.setattr(plt, "show", boom)
    plot_horizon(hump_fit)
    plot_mixture_density(hump_fit)


@pytest.mark.unit
def test_matplotlib_imported_lazily():
    """plots.py imports matplotlib only inside functions (or for type checking)."""
    import ast
    import inspect

    import passmix.plots

    tree = ast.parse(inspect.getsource(passmix.plots))
    top_level = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            if isinstance(sub, ast.Import):
                top_level += [alias.name for alias in sub.names]
            elif isinstance(sub, ast.ImportFrom):
                top_level.append(sub.module or "")
    assert top_level and not [name for name in top_level if name.startswith("matplotlib")]
