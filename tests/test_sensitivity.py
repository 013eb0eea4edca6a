"""Sensitivity analysis: data, budget samplers, the fitted score distribution, pIRT, harness, CLI."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats

import passmix
from passmix.distributions import BetaMixture
from passmix.sensitivity import (Configurations, fit_pirt, read_configurations, sample_cells,
                                 score_errors, sensitivity, simulate_matrix)

PCT = np.array([5, 25, 50, 75, 95])


# -- data ------------------------------------------------------------------------------

@pytest.mark.unit
def test_configurations_from_matrix_and_counts():
    m = np.array([[1, 0, np.nan], [1, 1, 1]])
    data = Configurations.from_matrix(pd.DataFrame(m, index=["p1", "p2"], columns=["a", "b", "c"]))
    assert data.names.tolist() == ["p1", "p2"]
    assert data.question_labels.tolist() == ["a", "b", "c"]
    assert data.successes.tolist() == [1, 3] and data.questions.tolist() == [2, 3]
    np.testing.assert_allclose(data.scores(), [0.5, 1.0])
    assert data.counts().tasks.tolist() == ["p1", "p2"]
    counts = Configurations.from_counts([3, 0], [10, 0], labels=pd.DataFrame(
        {"temperature": [0.0, 0.7]}, index=pd.Index(["x", "y"], name="prompt")))
    assert np.isnan(counts.scores()[1]) and not counts.has_questions
    assert counts.to_frame().columns.tolist() == ["temperature", "successes", "questions",
                                                  "score"]


@pytest.mark.unit
def test_configurations_reject_bad_input():
    with pytest.raises(ValueError, match="2"):
        Configurations.from_matrix([[0, 2], [1, 0]])
    with pytest.raises(ValueError, match="successes"):
        Configurations.from_counts([5], [3])
    with pytest.raises(ValueError, match="unique"):
        Configurations.from_counts([1, 2], [3, 3], labels=["a", "a"])
    with pytest.raises(ValueError, match="cells"):
        Configurations.from_counts([1], [3]).observed()


@pytest.mark.unit
def test_read_configurations_both_layouts_and_errors(tmp_path):
    counts = pd.DataFrame({"model": ["a", "a", "b"], "prompt": [1, 2, 1],
                           "successes": [3, 5, 7], "questions": [10, 10, 10],
                           "template": ["x", "y", "x"]})
    groups = read_configurations(counts, group_by="model")
    assert list(groups) == [("a",), ("b",)]
    assert groups[("a",)].labels["template"].tolist() == ["x", "y"]
    cells = pd.DataFrame({"prompt": [1, 1, 2, 2, 2], "question": ["q1", "q2", "q1", "q2", "q3"],
                          "outcome": [1, 0, 1, 1, 0]})
    path = tmp_path / "cells.csv"
    cells.to_csv(path, index=False)
    data = read_configurations(path)
    assert data.matrix.shape == (2, 3) and np.isnan(data.matrix[0, 2])
    np.testing.assert_allclose(data.scores(), [0.5, 2 / 3])
    with pytest.raises(ValueError, match="unknown column"):
        read_configurations(counts, group_by="system")
    with pytest.raises(ValueError, match="more than one row"):
        read_configurations(pd.concat([cells, cells.iloc[:1]]))
    with pytest.raises(FileNotFoundError):
        read_configurations(tmp_path / "missing.csv")


# -- samplers --------------------------------------------------------------------------

@pytest.mark.unit
def test_stratified_sampling_covers_configurations_and_questions_evenly():
    full = simulate_matrix(30, 20, seed=0).data
    for budget in (1, 29, 45, 250, 600):
        obs = sample_cells(full, budget, seed=budget)
        assert obs.n_cells == budget
        per_row = obs.questions
        per_col = (~np.isnan(obs.matrix)).sum(axis=0)
        assert per_row.max() - per_row.min() <= 1
        assert per_col.max() - per_col.min() <= 1
        observed = ~np.isnan(obs.matrix)
        np.testing.assert_array_equal(obs.matrix[observed], full.matrix[observed])
    again = sample_cells(full, 45, seed=45)
    np.testing.assert_array_equal(np.isnan(again.matrix),
                                  np.isnan(sample_cells(full, 45, seed=45).matrix))


@pytest.mark.unit
def test_samplers_never_pick_unobserved_cells_and_do_not_mutate():
    rng = np.random.default_rng(1)
    m = (rng.random((12, 15)) < 0.5).astype(float)
    m[rng.random(m.shape) < 0.3] = np.nan
    full = Configurations.from_matrix(m)
    before = full.matrix.copy()
    for method in ("stratified", "uniform"):
        obs = sample_cells(full, full.n_cells - 3, method=method, seed=2)
        assert obs.n_cells == full.n_cells - 3
        assert not np.any(~np.isnan(obs.matrix) & np.isnan(full.matrix))
    np.testing.assert_array_equal(full.matrix, before)
    with pytest.raises(ValueError, match="exceeds"):
        sample_cells(full, full.n_cells + 1)
    with pytest.raises(ValueError, match="budget"):
        sample_cells(full, 0)
    with pytest.raises(ValueError, match="unknown sampler"):
        sample_cells(full, 5, method="random")


@pytest.mark.unit
def test_count_sampling_draws_questions_without_replacement():
    full = Configurations.from_counts([10, 40, 0, 80, 5], [100, 100, 100, 100, 5])
    obs = sample_cells(full, 23, seed=0)
    assert obs.questions.tolist().count(5) >= 2 and obs.questions.sum() == 23
    assert obs.questions.max() - obs.questions.min() <= 1
    # each configuration's successes are hypergeometric: their mean over many
    # draws is n * y / m (and the capped configuration gives all of its 5)
    draws = np.array([sample_cells(full, 250, seed=s).successes for s in range(400)])
    n = sample_cells(full, 250, seed=0).questions
    expect = n * full.successes / full.questions
    se = np.sqrt(n * (full.successes / 100) * (1 - full.successes / 100) / 400) + 1e-9
    assert np.all(np.abs(draws.mean(axis=0) - expect) < 4 * se + 1e-9)
    assert np.all(draws[:, 4] == 5)
    uniform = sample_cells(full, 250, method="uniform", seed=3)
    assert uniform.n_cells == 250 and np.all(uniform.questions <= full.questions)


# -- the fitted distribution ----------------------------------------------------------------

def test_fitted_percentiles_converge_to_the_truth_as_the_budget_grows():
    g = BetaMixture([0.3, 0.7], [2.0, 12.0], [8.0, 6.0])
    truth = g.ppf(PCT / 100)
    n_conf, n_q = 1500, 200
    mean_error = {}
    for budget in (2 * n_conf, 40 * n_conf):
        errors = []
        for seed in range(3):
            rng = np.random.default_rng(seed)
            theta = g.rvs(n_conf, seed=rng)
            full = Configurations.from_counts(rng.binomial(n_q, theta), np.full(n_conf, n_q))
            res = sensitivity(full, budget=budget, seed=seed)
            errors.append(np.abs(res.ppf(PCT / 100) - truth))
        mean_error[budget] = float(np.mean(errors))
    assert mean_error[40 * n_conf] < 0.015
    assert mean_error[40 * n_conf] < 0.5 * mean_error[2 * n_conf]


def test_mixture_w1_beats_the_empirical_distribution_at_small_budgets():
    diffs = []
    for seed in range(6):
        sim = simulate_matrix(150, 100, seed=seed)
        reference = sim.data.scores()
        obs = sample_cells(sim.data, 300, seed=seed)
        mixture = sensitivity(obs, seed=seed).compare(reference).loc["w1", "abs_error"]
        empirical = score_errors(obs.scores(), reference).loc["w1", "abs_error"]
        diffs.append(empirical - mixture)
    diffs = np.array(diffs)
    assert diffs.mean() > 0.05
    assert diffs.mean() > 3 * diffs.std(ddof=1) / np.sqrt(diffs.size)


@pytest.mark.slow
def test_percentile_intervals_cover_at_their_level():
    g = BetaMixture([1.0], [3.0], [5.0])
    truth = g.ppf([0.05, 0.5, 0.95])
    hits = {"profile": np.zeros(3), "delta": np.zeros(3)}
    n = 100
    for s in range(n):
        rng = np.random.default_rng(100 + s)
        data = Configurations.from_counts(rng.binomial(10, g.rvs(300, seed=rng)),
                                          np.full(300, 10))
        res = sensitivity(data, n_components=1, seed=s, percentiles=[5, 50, 95])
        for method in hits:
            table = res.percentile(method=method)
            hits[method] += (table["lower"].to_numpy() <= truth) & (
                truth <= table["upper"].to_numpy())
    # 95% intervals: 100 replications put the coverage within ~0.05 of 0.95
    for method, count in hits.items():
        assert np.all((count / n >= 0.88) & (count / n <= 0.995)), (method, count / n)


def test_profile_percentiles_widen_at_the_binomial_limit():
    # every configuration has the same rate: the fit sits at the binomial limit,
    # the delta method sees no spread, the profile shows how much the data allow
    # fewer 0s and 2s than binomial counts of one common rate would give
    y = np.repeat([0, 1, 2], [40, 80, 30])
    data = Configurations.from_counts(y, np.full(y.size, 2))
    res = sensitivity(data, seed=0)
    assert res.fit.binomial_limit
    with pytest.warns(passmix.FitWarning):
        delta = res.percentile(method="delta")
    profile = res.percentile()
    assert np.all(profile["lower"] <= profile["estimate"] + 1e-12)
    assert np.all(profile["estimate"] <= profile["upper"] + 1e-12)
    width = lambda t: (t["upper"] - t["lower"]).to_numpy()  # noqa: E731
    assert width(profile)[0] > 2 * width(delta)[0] and width(profile)[-1] > 2 * width(delta)[-1]
    # the tails' ends are reached by parameters inside the likelihood region:
    # a spread-out Beta with that p5 explains the data nearly as well
    assert profile["lower"].iloc[0] < 0.35 and profile["upper"].iloc[-1] > 0.55


def test_result_summary_compare_plot_and_callable_module(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    sim = simulate_matrix(60, 40, seed=3)
    res = passmix.sensitivity(sim.data, budget=400, seed=1)
    same = passmix.sensitivity.sensitivity(sim.data, budget=400, seed=1)
    assert res.distribution == same.distribution
    table = res.summary(method="delta")
    assert table.index.tolist() == ["mean", "std", "p5", "p25", "p50", "p75", "p95"]
    assert np.all(table["lower"] <= table["estimate"]) and np.all(
        table["estimate"] <= table["upper"])
    assert table.loc["mean", "estimate"] == pytest.approx(res.fit.pass_at_k(1))
    assert table.loc["p50", "estimate"] == pytest.approx(res.ppf(0.5))
    errors = res.compare(sim.data)
    assert errors.index.tolist() == ["w1", "w1_exact", "p5", "p25", "p50", "p75", "p95"]
    assert errors.loc["p50", "reference"] == pytest.approx(np.percentile(sim.data.scores(), 50))
    ax = res.plot(reference=sim.data)
    assert len(ax.lines) >= 3
    assert res.info()["n_cells"] == 400
    assert "SensitivityResult" in repr(res)


def test_degenerate_and_bad_input():
    with pytest.warns(passmix.DegenerateDataWarning):
        res = sensitivity(Configurations.from_counts([0, 0, 0], [10, 10, 10]), seed=0)
    with pytest.warns(passmix.FitWarning, match="bound"):
        table = res.summary(method="delta")
    assert res.ppf(0.95) < 0.01 and np.isfinite(table.to_numpy()).all()
    with pytest.raises(ValueError, match="percentiles"):
        sensitivity(Configurations.from_counts([1, 2], [3, 3]), percentiles=[5, 120])
    with pytest.raises(ValueError, match="no observed cells"):
        sensitivity(Configurations.from_counts([0, 0], [0, 0]))
    with pytest.raises(TypeError, match="Configurations"):
        sensitivity("data.csv")
    with pytest.raises(ValueError, match="reference"):
        score_errors([0.1], [np.nan])


@pytest.mark.unit
def test_score_errors_of_samples_agree_with_scipy_and_numpy():
    rng = np.random.default_rng(0)
    est, ref = rng.random(30), rng.random(50)
    table = score_errors(est, ref)
    assert table.loc["w1", "abs_error"] == pytest.approx(stats.wasserstein_distance(est, ref))
    np.testing.assert_allclose(table.loc[["p5", "p50", "p95"], "estimate"],
                               np.percentile(est, [5, 50, 95]))


# -- pIRT ------------------------------------------------------------------------------------

@pytest.mark.unit
def test_pirt_recovers_simulated_effects():
    sim = simulate_matrix(80, 120, seed=4)
    full = fit_pirt(sim.data)
    assert full.converged
    theta, b = sim.configuration_effects, sim.question_effects
    # the ridge fixes the common shift; compare after centring
    shift = np.mean(full.configuration_effects - theta)
    assert np.corrcoef(full.configuration_effects, theta)[0, 1] > 0.93
    assert np.corrcoef(full.question_effects, b)[0, 1] > 0.95
    assert np.mean(np.abs(full.configuration_effects - shift - theta)) < 0.3
    assert np.mean(np.abs(full.question_effects - shift - b)) < 0.35
    # from 40% of the cells the effects are still recovered, and observed cells are kept
    half = fit_pirt(sample_cells(sim.data, int(0.4 * sim.data.n_cells), seed=0))
    assert np.corrcoef(half.configuration_effects, theta)[0, 1] > 0.85
    filled = np.where(np.isnan(half.data.matrix), half.probabilities(), half.data.matrix)
    np.testing.assert_allclose(half.scores(), filled.mean(axis=1))
    np.testing.assert_allclose(half.percentiles([50]), np.percentile(half.scores(), [50]))


@pytest.mark.unit
def test_pirt_stationary_point_of_its_penalised_likelihood():
    sim = simulate_matrix(15, 12, seed=5)
    obs = sample_cells(sim.data, 100, seed=0)
    res = fit_pirt(obs, reg=10.0)
    rows, cols = np.nonzero(obs.observed())
    y = obs.matrix[rows, cols]

    def loss(params):
        eta = params[:15][rows] - params[15:][cols]
        return np.sum(np.logaddexp(0, eta) - y * eta) + params @ params / 20.0

    x = np.concatenate([res.configuration_effects, res.question_effects])
    grad = [(loss(x + e) - loss(x - e)) / 2e-6 for e in np.eye(x.size) * 1e-6]
    assert np.max(np.abs(grad)) < 1e-4


@pytest.mark.unit
def test_pirt_that_did_not_converge_warns(monkeypatch):
    import scipy.optimize

    import passmix.sensitivity.pirt as pirt

    real = scipy.optimize.minimize

    def one_step(*args, **kwargs):  # as if L-BFGS-B had stopped after one iteration
        kwargs["options"] = {**kwargs.get("options", {}), "maxiter": 1}
        return real(*args, **kwargs)

    monkeypatch.setattr(pirt, "minimize", one_step)
    sim = simulate_matrix(15, 12, seed=5)
    with pytest.warns(passmix.FitWarning, match="pIRT fit did not converge"):
        res = fit_pirt(sample_cells(sim.data, 100, seed=0), reg=10.0)
    assert not res.converged


@pytest.mark.unit
def test_pirt_needs_questions():
    with pytest.raises(ValueError, match="question identity"):
        fit_pirt(Configurations.from_counts([1, 2], [3, 3]))


# -- harness and CLI ----------------------------------------------------------------------------

def test_run_sensitivity_matrix_counts_cache_and_skips(tmp_path):
    from passmix.experiments.sensitivity import ERROR_COLUMNS, run_sensitivity

    sim = simulate_matrix(40, 25, seed=0)
    counts = Configurations.from_counts(sim.data.successes, sim.data.questions)
    groups = {("matrix",): sim.data, ("counts",): counts}
    with pytest.warns(UserWarning, match="skipped"):
        run = run_sensitivity(groups, ["case"], budgets=[80, 5000], seeds=2,
                              cache_dir=tmp_path / "cache")
    assert run.errors.columns.tolist() == ["case", *ERROR_COLUMNS]
    assert set(run.errors["budget"]) == {80}
    methods = run.errors.groupby("case")["method"].unique()
    assert set(methods["matrix"]) == {"mixture", "empirical", "pirt"}
    assert set(methods["counts"]) == {"mixture", "empirical"}
    assert (run.errors["abs_error"] >= 0).all()
    w1 = run.errors[(run.errors["target"] == "w1") & (run.errors["method"] != "mixture")]
    exact = run.errors[(run.errors["target"] == "w1_exact") & (run.errors["method"] != "mixture")]
    np.testing.assert_allclose(w1["abs_error"], exact["abs_error"])
    with pytest.warns(UserWarning, match="skipped"):
        again = run_sensitivity(groups, ["case"], budgets=[80, 5000], seeds=2,
                                cache_dir=tmp_path / "cache")
    assert again.timings["units_cached"] == again.timings["units"] == 4
    pd.testing.assert_frame_equal(run.errors, again.errors)
    assert run.table("w1").shape == (1, 3)
    assert 0 <= run.wins().iloc[0] <= 1
    with pytest.raises(ValueError, match="unknown method"):
        run_sensitivity(groups, ["case"], methods=["irt"])


@pytest.mark.slow
def test_cli_sensitivity_writes_the_report(tmp_path):
    from click.testing import CliRunner

    from passmix.cli import main

    rng = np.random.default_rng(0)
    rows = []
    for model in ("m1", "m2"):
        theta = rng.beta(4, 5, 50)
        rows += [(model, j, 40, int(rng.binomial(40, t))) for j, t in enumerate(theta)]
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows, columns=["model", "prompt", "questions", "successes"]).to_csv(
        path, index=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["experiment", "sensitivity", str(path), "--group-by",
                                       "model", "--budget", "100,300", "--seeds", "2",
                                       "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    errors = pd.read_csv(out / "errors.csv")
    assert set(errors["method"]) == {"mixture", "empirical"}
    assert set(errors["target"]) == {"w1", "w1_exact", "p5", "p25", "p50", "p75", "p95"}
    assert len(errors) == 2 * 2 * 2 * 2 * 7
    report = (out / "report.md").read_text()
    assert "## W1" in report and (out / "fig_error_vs_budget.png").exists()
    bad = CliRunner().invoke(main, ["experiment", "sensitivity", str(path), "--group-by",
                                    "system", "--out", str(out), "--quiet"])
    assert bad.exit_code != 0 and "unknown column" in bad.output


def test_bundled_bbh_prompts_and_a_real_group():
    from passmix.examples import example_path
    from passmix.experiments.sensitivity import run_sensitivity

    groups = read_configurations(example_path("mizrahi_bbh"), group_by=["task", "model"])
    assert len(groups) == 165
    sizes = [g.n_configurations for g in groups.values()]
    assert min(sizes) == 136 and max(sizes) == 189
    assert all(np.all(g.questions == 100) for g in groups.values())
    some = {key: groups[key] for key in [("sports_understanding", "airoboros-13b"),
                                         ("navigate", "flan-t5-xxl")]}
    run = run_sensitivity(some, ["task", "model"], budgets=[300], seeds=2)
    table = run.table("w1")
    assert table.loc[300, "mixture"] < table.loc[300, "empirical"]
    # a DataFrame of counts goes straight in
    frame = groups[("navigate", "flan-t5-xxl")].to_frame().reset_index()
    res = sensitivity(frame[["prompt", "successes", "questions"]], budget=500, seed=0)
    assert res.data.n_cells == 500


def test_write_sensitivity_report_tables_bold_best_and_figures(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from passmix.experiments.sensitivity import run_sensitivity
    from passmix.experiments.sensitivity_report import (plot_error_vs_budget,
                                                        write_sensitivity_report)

    sims = {(f"m{i}",): simulate_matrix(40, 25, seed=i).data for i in range(2)}
    run = run_sensitivity(sims, ["matrix"], budgets=[80, 200], seeds=1)
    path = write_sensitivity_report(run, tmp_path, data=sims, title="T", command="cmd")
    text = path.read_text()
    assert text.startswith("# T") and "    cmd" in text
    for name in ("errors.csv", "fits.csv", "fig_error_vs_budget.png", "fig_example_cdf.png"):
        assert (tmp_path / name).exists()
    # the bold cell of each W1 row is the smallest mean error of that budget
    w1 = run.table("w1")
    section = text.split("## W1")[1].split("##")[0]
    for budget, row in w1.iterrows():
        line = next(ln for ln in section.splitlines() if ln.startswith(f"| {budget} |"))
        assert f"**{row.min():.2f}**" in line
    assert "mixture below pirt" in text
    errors = pd.read_csv(tmp_path / "errors.csv")
    assert len(errors) == len(run.errors)
    fig = plot_error_vs_budget(run, ["w1", "p50"])
    assert len(fig.axes) == 2
