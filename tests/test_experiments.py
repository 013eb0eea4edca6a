"""Tests for passmix.experiments: the repeated-trial protocol, its report and figures.

The harness's numbers are checked against a computation by hand (permutation,
fit, metric, reference) on small synthetic data; the real data sets run in a
reduced configuration (two MATH models, one seed, m in {5, 10}).
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

import passmix
import passmix.experiments.figures
import passmix.experiments.repeated
import passmix.experiments.report
from passmix.examples import example_path
from passmix.estimators.registry import get_estimator, register_estimator
from passmix.cli import main
from passmix.experiments import (
    PAPER_K,
    PAPER_M,
    default_k_grid,
    default_m_grid,
    group_id,
    load_repeated,
    nested_subsets,
    run_repeated,
)
from passmix.experiments import report as rep

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

MATH = example_path("math_10k")
TAU = example_path("taubench_airline")
LCB = example_path("livecodebench")
METRICS = ("pass@k", "pass^k", "auc@k")
COLUMNS = ["seed", "m", "k", "metric", "method", "estimate", "lower", "upper", "reference",
           "abs_error"]
FAST = {"max_components": 2, "n_init": 2}


def _as_long_file(groups: dict[tuple, np.ndarray], path: Path) -> Path:
    """0/1 matrices as a file with one row per attempt (NaN attempts left out)."""
    frames = []
    for (name,), x in groups.items():
        task, trial = np.nonzero(~np.isnan(x))
        frames.append(pd.DataFrame({"system": name, "task": task,
                                    "outcome": x[task, trial].astype(int)}))
    pd.concat(frames).to_csv(path, index=False)
    return path


def matrices(seed: int = 0, n_tasks: int = 40, n_trials: int = 12) -> dict[tuple, np.ndarray]:
    """Two groups of 0/1 outcomes; one with a few attempts not run (NaN)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (a, b) in {"easy": (2.0, 1.0), "hard": (0.4, 2.0)}.items():
        theta = rng.beta(a, b, n_tasks)
        x = (rng.random((n_tasks, n_trials)) < theta[:, None]).astype(float)
        out[(name,)] = x
    out[("hard",)][0, -2:] = np.nan  # task 0 ran 10 of 12 attempts
    return out


@pytest.fixture(scope="module")
def synthetic():
    groups = matrices()
    res = run_repeated(groups, group_cols=["system"], m=[3, 6], k=[2, 5, 10], seeds=[0, 1],
                       **FAST)
    return groups, res


# --------------------------------------------------------------------------
# grids and subsets
# --------------------------------------------------------------------------


@pytest.mark.unit
class TestGrids:
    def test_paper_grids_at_80_trials(self):
        assert default_m_grid(80) == PAPER_M
        assert default_k_grid(80) == PAPER_K

    @pytest.mark.parametrize("n, m, k", [
        (10_000, (5, 10, 20, 50, 100, 200),
         (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)),
        (10, (2, 3, 5), (2, 3, 4, 5, 6, 7, 8, 9, 10)),
        (4, (2, 3), (2, 3, 4)),
        (40, (5, 10, 20), (2, 5, 10, 20, 40)),
    ])
    def test_adapted_grids(self, n, m, k):
        assert default_m_grid(n) == m
        assert default_k_grid(n) == k

    def test_invalid(self):
        with pytest.raises(ValueError, match="no default budgets"):
            default_m_grid(2)
        with pytest.raises(TypeError, match="whole number"):
            default_k_grid(2.5)


@pytest.mark.unit
class TestNestedSubsets:
    def test_matrix_is_the_documented_permutation(self):
        x = matrices()[("hard",)]
        got = nested_subsets(x, [4, 12], rng=np.random.default_rng(7))
        keys = np.random.default_rng(7).random(x.shape)
        keys[np.isnan(x)] = 2.0
        for m in (4, 12):
            for j in range(x.shape[0]):
                row = x[j, np.argsort(keys[j], kind="stable")][:m]
                assert got[m].successes[j] == np.nansum(row)
                assert got[m].trials[j] == np.count_nonzero(~np.isnan(row))
        assert got[12].trials[0] == 10  # NaN attempts are never kept

    @pytest.mark.parametrize("kind", ["counts", "matrix"])
    def test_nested_and_independent_of_other_budgets(self, kind):
        x = matrices()[("easy",)]
        data = passmix.Counts.from_matrix(x) if kind == "counts" else x
        a = nested_subsets(data, [2, 5, 9], rng=3)
        b = nested_subsets(data, [5], rng=3)
        assert_array_equal(a[5].successes, b[5].successes)
        assert np.all(a[2].successes <= a[5].successes)
        assert np.all(a[5].successes <= a[9].successes)
        assert np.all(a[9].successes - a[5].successes <= 4)

    def test_counts_draw_is_hypergeometric(self):
        # 3 successes of 10 trials, keep 4: P(Y = y) is hypergeometric(10, 3, 4)
        counts = passmix.Counts(np.full(4000, 3), np.full(4000, 10))
        y = nested_subsets(counts, [4], rng=0)[4].successes
        observed = np.bincount(y, minlength=4)
        expected = stats.hypergeom(10, 3, 4).pmf(np.arange(4)) * y.size
        assert stats.chisquare(observed, expected).pvalue > 1e-3
        # and the same for the matrix path
        x = np.tile([1.0] * 3 + [0.0] * 7, (4000, 1))
        y2 = nested_subsets(x, [4], rng=0)[4].successes
        assert stats.chisquare(np.bincount(y2, minlength=4), expected).pvalue > 1e-3

    def test_group_id_is_stable(self):
        assert group_id(("a", 1)) == group_id((np.str_("a"), np.int64(1)))
        assert group_id(("a",)) != group_id(("b",))


# --------------------------------------------------------------------------
# the protocol against a computation by hand
# --------------------------------------------------------------------------


class TestRunRepeated:
    def test_columns_and_shape(self, synthetic):
        _, res = synthetic
        assert list(res.errors.columns) == ["system", *COLUMNS]
        # naive and mixture at every k; combinatorial only where k <= m
        # groups * seeds * metrics * (m = 3: 3 + 3 + 1 rows, m = 6: 3 + 3 + 2 rows)
        n_rows = 2 * 2 * 3 * (7 + 8)
        assert len(res.errors) == n_rows
        comb = res.errors[res.errors["method"] == "combinatorial"]
        assert (comb["k"] <= comb["m"]).all()
        assert res.errors["abs_error"].notna().all()
        assert len(res.fits) == 2 * 2 * 2
        assert set(res.fits["n_components"]) <= {1, 2}

    @pytest.mark.parametrize("key, seed", [(("hard",), 1), (("easy",), 0)])
    def test_equals_direct_computation(self, synthetic, key, seed):
        groups, res = synthetic
        x = groups[key]
        full = passmix.Counts.from_matrix(x)
        gid = group_id(key)
        keys = np.random.default_rng([seed, gid, 0]).random(x.shape)
        keys[np.isnan(x)] = 2.0
        shuffled = np.take_along_axis(x, np.argsort(keys, axis=1, kind="stable"), axis=1)
        rows = res.errors[(res.errors["system"] == key[0]) & (res.errors["seed"] == seed)]
        for m in (3, 6):
            head = shuffled[:, :m]
            sub = passmix.Counts(np.nansum(head, axis=1).astype(int),
                                 np.count_nonzero(~np.isnan(head), axis=1))
            fitted = passmix.fit(sub, seed=np.random.default_rng([seed, gid, 1, m]), **FAST)
            fit_row = res.fits[(res.fits["system"] == key[0]) & (res.fits["seed"] == seed)
                               & (res.fits["m"] == m)].iloc[0]
            assert fit_row["n_components"] == fitted.n_components
            summary = fitted.summary([2, 5, 10])  # profile intervals, the harness's default
            for metric in METRICS:
                ks = np.array([2, 5, 10])
                ref = passmix.combinatorial_estimate(full, metric, ks)
                part = summary[summary["metric"] == metric]
                expected = {
                    "naive": (passmix.naive_estimate(sub, metric, ks), None, None),
                    "mixture": (part["estimate"].to_numpy(), part["lower"].to_numpy(),
                                part["upper"].to_numpy()),
                }
                ok = ks <= m
                expected["combinatorial"] = (
                    passmix.combinatorial_estimate(sub, metric, ks[ok]), None, None)
                for method, (est, lo, hi) in expected.items():
                    got = rows[(rows["m"] == m) & (rows["metric"] == metric)
                               & (rows["method"] == method)].sort_values("k")
                    kk = ks[ok] if method == "combinatorial" else ks
                    assert_array_equal(got["k"], kk)
                    assert_allclose(got["estimate"], est, rtol=1e-12, atol=0)
                    r = ref[ok] if method == "combinatorial" else ref
                    assert_allclose(got["reference"], r, rtol=1e-12, atol=0)
                    assert_allclose(got["abs_error"], 100 * np.abs(np.asarray(est) - r),
                                    rtol=1e-9, atol=1e-12)
                    if lo is None:
                        assert got["lower"].isna().all() and got["upper"].isna().all()
                    else:
                        assert_allclose(got["lower"], lo, rtol=1e-12, atol=0)
                        assert_allclose(got["upper"], hi, rtol=1e-12, atol=0)

    def test_counts_input_and_k_beyond_reference(self):
        rng = np.random.default_rng(1)
        full = passmix.Counts(rng.binomial(20, rng.beta(1, 2, 30)), np.full(30, 20))
        with pytest.warns(UserWarning, match="dropping k = 50"):
            res = run_repeated(full, m=[5], k=[2, 20, 50], seeds=1, **FAST)
        assert sorted(res.errors["k"].unique()) == [2, 20]
        assert res.group_cols == ["group"] and (res.errors["group"] == "all").all()

    @pytest.mark.unit
    def test_a_method_all_leaves_out_runs_when_named(self):
        # the scaling baseline is not in "all"; named, it runs, after the protocol's
        rng = np.random.default_rng(2)
        full = passmix.Counts(rng.binomial(20, rng.beta(1, 2, 30)), np.full(30, 20))
        res = run_repeated(full, m=[5], k=[2, 10], seeds=1, methods=["loglog", "naive"],
                           **FAST)
        assert list(res.errors["method"].unique()) == ["naive", "loglog"]
        direct = passmix.estimators.registry.get_estimator("loglog")
        assert res.errors["estimate"].notna().any() and direct.in_all is False

    @pytest.mark.unit
    def test_invalid_input(self):
        with pytest.raises(ValueError, match="must be 0, 1 or NaN"):
            run_repeated(np.array([[0.0, 2.0]]), m=[1], k=[1])
        with pytest.raises(ValueError, match="clashes"):
            run_repeated({("a",): matrices()[("easy",)]}, group_cols=["k"], m=[2], k=[2])
        with pytest.raises(ValueError, match="jobs"):
            run_repeated(matrices()[("easy",)], m=[2], k=[2], jobs=0)


@pytest.fixture
def swap_mixture():
    """Replace the registered mixture estimator's function for one test."""
    original = get_estimator("mixture")

    def swap(function):
        register_estimator("mixture", function, options=original.options, replace=True)

    yield swap
    register_estimator("mixture", original.fit, options=original.options,
                       description=original.description, replace=True)


class TestParallelAndCache:
    @pytest.mark.slow
    def test_loky_and_dask_equal_serial(self, synthetic):
        groups, serial = synthetic
        kwargs = {"group_cols": ["system"], "m": [3, 6], "k": [2, 5, 10], "seeds": [0, 1],
                  **FAST}
        loky = run_repeated(groups, jobs=2, **kwargs)
        pd.testing.assert_frame_equal(loky.errors, serial.errors)
        distributed = pytest.importorskip("dask.distributed")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            dask = run_repeated(groups, jobs=-1, client=client, **kwargs)
        # threads in one worker would share process-wide state (warnings, BLAS limits)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, \
                pytest.raises(ValueError, match="one thread each"):
            run_repeated(groups, jobs=-1, client=client, **kwargs)
        pd.testing.assert_frame_equal(dask.errors, serial.errors)
        pd.testing.assert_frame_equal(dask.fits.drop(columns="seconds"),
                                      serial.fits.drop(columns="seconds"))

    def test_second_run_reads_the_cache(self, tmp_path, swap_mixture):
        groups = matrices(seed=5)
        kwargs = {"group_cols": ["system"], "m": [3, 6], "k": [2, 5], "seeds": [0, 1],
                  "cache_dir": tmp_path, **FAST}
        first = run_repeated(groups, **kwargs)
        assert first.timings["units_computed"] == 8
        assert len(list(tmp_path.rglob("*.json"))) == 8

        def broken(*args, **kwargs):
            raise AssertionError("fit called although the result is cached")

        swap_mixture(broken)
        second = run_repeated(groups, **kwargs)
        assert second.timings["units_cached"] == 8
        pd.testing.assert_frame_equal(second.errors, first.errors)
        # other settings are another cache
        with pytest.raises(AssertionError, match="cached"):
            run_repeated(groups, **{**kwargs, "k": [2, 4]})

    def test_interrupted_run_resumes(self, tmp_path, swap_mixture):
        groups = matrices(seed=6)
        kwargs = {"group_cols": ["system"], "m": [3, 6], "k": [2, 5], "seeds": [0],
                  "cache_dir": tmp_path, **FAST}
        reference = run_repeated(groups, **{**kwargs, "cache_dir": None})
        real_fit = get_estimator("mixture").fit
        calls = []

        def interrupted(*args, **kw):
            calls.append(1)
            if len(calls) > 2:
                raise KeyboardInterrupt
            return real_fit(*args, **kw)

        swap_mixture(interrupted)
        with pytest.raises(KeyboardInterrupt):
            run_repeated(groups, **kwargs)
        assert len(list(tmp_path.rglob("*.json"))) == 2  # group 1 done, group 2 not started
        assert not list(tmp_path.rglob("*.tmp*"))
        calls.clear()
        swap_mixture(real_fit)
        resumed = run_repeated(groups, **kwargs)
        assert resumed.timings["units_cached"] == 2
        assert resumed.timings["units_computed"] == 2
        pd.testing.assert_frame_equal(resumed.errors, reference.errors)


# --------------------------------------------------------------------------
# summary tables
# --------------------------------------------------------------------------


def toy_errors() -> pd.DataFrame:
    """Two groups, two seeds; naive and mixture at (m=2, k=1) and (m=2, k=4)."""
    rows = []
    for g, scale in (("a", 1.0), ("b", 3.0)):
        for seed in (0, 1):
            for k in (1, 4):
                for method, err in (("naive", 4.0), ("mixture", 2.0)):
                    e = scale * err * (1 + seed) * (k / 4)
                    ref = 0.5
                    rows.append({"group": g, "seed": seed, "m": 2, "k": k, "metric": "pass@k",
                                 "method": method, "estimate": ref + e / 100,
                                 "lower": ref if method == "mixture" else np.nan,
                                 "upper": ref + 0.5 if method == "mixture" else np.nan,
                                 "reference": ref, "abs_error": e})
    return pd.DataFrame(rows)


@pytest.mark.unit
class TestReportTables:
    def test_regime_two_stage_average(self):
        out = rep.mae_by_regime(toy_errors()).set_index(["regime", "method"])["mae"]
        # k > m: group a mean over seeds (4, 8) -> 6; group b (12, 24) -> 18; mean 12
        assert out[("k > m", "naive")] == pytest.approx(12.0)
        assert out[("k > m", "mixture")] == pytest.approx(6.0)
        assert out[("k <= m", "naive")] == pytest.approx(3.0)

    def test_win_rates_and_seed_table(self):
        win = rep.win_rates(toy_errors(), m=2, k=4).set_index("target")
        assert win.loc["pass@k", "win_rate"] == 100.0
        assert win.loc["pass@k", "naive"] == pytest.approx(12.0)
        seeds = rep.mae_by_seed(toy_errors()).set_index("method")
        assert seeds.loc["naive", "seed 0"] == pytest.approx(8.0)
        assert seeds.loc["naive", "seed 1"] == pytest.approx(16.0)
        assert seeds.loc["naive", "sd"] == pytest.approx(np.std([8, 16], ddof=1))

    def test_trials_needed(self):
        err = toy_errors()
        err = pd.concat([err, err.assign(m=10, abs_error=err["abs_error"] / 10)])
        out = rep.trials_needed(err, k=4, n_trials=80, tolerances=[3, 7],
                                target=("pass@k",)).set_index("tolerance")
        # mixture at m=2: a 3, b 9; naive: a 6, b 18; at m=10 all below 2
        assert out.loc[3, "mixture"] == pytest.approx(np.median([2, 10]))
        assert out.loc[7, "naive"] == pytest.approx(np.median([2, 10]))
        assert out.loc[3, "fewer"] == pytest.approx(100 * (1 - 6 / 80))

    def test_coverage(self):
        cov = rep.coverage(toy_errors()).set_index("regime")
        # interval [0.5, 1.0] always contains the reference 0.5
        assert (cov["coverage"] == 100.0).all()
        assert cov["n_intervals"].sum() == 8

    def test_markdown_table(self):
        text = rep.markdown_table(pd.DataFrame({"a": ["x"], "b": [np.nan]}))
        assert text.splitlines()[-1] == "| x | – |"


# --------------------------------------------------------------------------
# real data, reduced configurations, through the command line
# --------------------------------------------------------------------------


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], prog_name="passmix")
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


@pytest.fixture(scope="module")
def math_run(tmp_path_factory):
    df = pd.read_csv(MATH)
    small = tmp_path_factory.mktemp("data") / "math2.csv"
    df[df["model"].isin(["Pythia 12B", "Pythia 6.9B"])].to_csv(small, index=False)
    out = tmp_path_factory.mktemp("math")
    result = invoke("experiment", "repeated", small, "--group-by", "model", "--m", "5,10",
                    "--k", "2,10,100,1000", "--seeds", "1", "--max-components", "2",
                    "--n-init", "3", "--out", out, "--quiet")
    return out, result, small


@pytest.mark.slow
class TestRealData:
    def test_math_outputs(self, math_run):
        out, result, _ = math_run
        assert "rows from 4 fits" in result.stdout
        errors = pd.read_csv(out / "errors.csv")
        assert list(errors.columns) == ["model", *COLUMNS]
        # the two models share their problems: "all" includes the pooled model
        assert set(errors["method"]) == {"naive", "combinatorial", "mixture", "pooled"}
        joint = pd.read_csv(out / "joint_fits.csv")
        assert list(joint[["seed", "m"]].itertuples(index=False, name=None)) == [(0, 5), (0, 10)]
        for name in ("report.md", "fits.csv", "references.csv", "mae_by_regime.csv",
                     "mae_at_k.csv", "mae_by_seed.csv", "win_rates.csv", "trials_needed.csv",
                     "bic_shares.csv", "coverage.csv", "mae_by_group.csv", "config.json"):
            assert (out / name).exists(), name
        for stem in ("fig_mae_vs_k", "fig_mae_vs_m_k100", "fig_mae_vs_m_k1000",
                     "fig_horizons_m10", "fig_bic_shares"):
            assert (out / f"{stem}.png").exists() and (out / f"{stem}.pdf").exists()
        report = (out / "report.md").read_text()
        assert "passmix experiment repeated" in report and "--m 5,10" in report
        assert json.loads((out / "config.json").read_text())["m"] == [5, 10]

    def test_math_mixture_beats_naive_beyond_m(self, math_run):
        out, _, _ = math_run
        errors = pd.read_csv(out / "errors.csv")
        far = errors[(errors["m"] == 10) & (errors["k"] > 10) & (errors["metric"] == "pass@k")]
        mae = far.groupby("method")["abs_error"].mean()
        assert mae["mixture"] < mae["naive"]
        ref = pd.read_csv(out / "references.csv")
        full = passmix.read_counts(MATH, group_by="model")[("Pythia 12B",)]
        row = ref[(ref["model"] == "Pythia 12B") & (ref["metric"] == "pass@k")
                  & (ref["k"] == 1000)]
        assert row["reference"].iloc[0] == pytest.approx(
            passmix.combinatorial_estimate(full, "pass@k", 1000), rel=1e-12)

    def test_rerun_uses_cache(self, math_run, swap_mixture):
        out, _, df_path = math_run
        before = (out / "errors.csv").read_text()
        def never(*args, **kwargs):
            raise AssertionError("fit called although the result is cached")

        swap_mixture(never)
        result = invoke("experiment", "repeated", df_path, "--group-by", "model", "--m", "5,10",
                        "--k", "2,10,100,1000", "--seeds", "1", "--max-components", "2",
                        "--n-init", "3", "--out", out, "--quiet", "--no-figures")
        # 2 models x 2 budgets, and the pooled model's 2 (seed, m) joint fits
        assert "(6 cached)" in result.stdout
        assert (out / "errors.csv").read_text() == before

    def test_taubench_long_format_is_permuted(self, tmp_path):
        groups = load_repeated(TAU, group_by=["model", "domain"])
        x = groups[("gpt-4o", "airline")]
        assert x.shape == (50, 4)
        res = run_repeated(groups, group_cols=["model", "domain"], seeds=1, **FAST)
        assert res.config.m == (2, 3) and res.config.k == (2, 3, 4)
        counts = passmix.read_counts(TAU, group_by=["model", "domain"])[("gpt-4o", "airline")]
        assert_array_equal(np.nansum(x, axis=1), counts.successes)
        # the same outcomes as one 0/1 column per attempt (matrix layout)
        wide = pd.read_csv(TAU).pivot(index="task_id", columns="trial", values="reward")
        wide.columns = [f"t{c}" for c in wide.columns]
        path = tmp_path / "wide.csv"
        wide.reset_index().to_csv(path, index=False)
        (matrix,) = load_repeated(path).values()
        assert_array_equal(np.sort(matrix.sum(axis=1)), np.sort(x.sum(axis=1)))
        assert matrix.shape == (50, 4)

    def test_livecodebench_reference_only_up_to_10(self):
        df = pd.read_csv(LCB)
        two = df[df["model"].isin(df["model"].unique()[:2])]
        with pytest.warns(UserWarning, match="no reference beyond k = 10"):
            res = run_repeated(passmix.read_counts(two, group_by="model"), group_cols=["model"],
                               m=[2, 5], k=[2, 10, 100], seeds=1, **FAST)
        assert res.errors["k"].max() == 10
        assert res.n_trials == 10
        assert default_m_grid(res.n_trials) == (2, 3, 5)


class TestCommandLine:
    def test_mixed_trial_counts_keep_k_where_reached(self, tmp_path):
        # one model with all 10,000 trials, another cut to 128 per problem
        df = pd.read_csv(MATH)
        full = df[df["model"] == "Pythia 12B"]
        short = df[df["model"] == "Pythia 6.9B"].copy()
        rng = np.random.default_rng(3)
        short["successes"] = rng.hypergeometric(short["successes"],
                                                short["trials"] - short["successes"], 128)
        short["trials"] = 128
        data = tmp_path / "mixed.csv"
        pd.concat([full, short]).to_csv(data, index=False)
        result = invoke("experiment", "repeated", data, "--group-by", "model", "--m", "5",
                        "--k", "10,1000", "--seeds", "1", "--method", "naive",
                        "--method", "mixture", "--max-components", "1", "--n-init", "2",
                        "--no-figures", "--out", tmp_path / "out", "--quiet")
        errors = pd.read_csv(tmp_path / "out" / "errors.csv")
        at_1000 = errors[errors["k"] == 1000]
        assert set(at_1000["model"]) == {"Pythia 12B"}
        assert len(at_1000) == 3 * 2
        assert set(errors.loc[errors["k"] == 10, "model"]) == {"Pythia 12B", "Pythia 6.9B"}
        # the warning names the group that cannot reach k = 1000, and only it
        assert "Pythia 6.9B" in result.stderr and "1000" in result.stderr
        assert "Pythia 12B" not in result.stderr
        refs = pd.read_csv(tmp_path / "out" / "references.csv")
        assert refs.groupby("model")["n_trials"].max().to_dict() == {"Pythia 12B": 10000,
                                                                     "Pythia 6.9B": 128}

    @pytest.mark.parametrize("methods", [["naive"], ["combinatorial"], ["naive", "combinatorial"],
                                         ["mixture"]])
    def test_report_with_some_methods(self, tmp_path, methods):
        groups = matrices(seed=2, n_tasks=20, n_trials=8)
        res = passmix.experiments.repeated_experiment(
            _as_long_file(groups, tmp_path / "t.csv"), tmp_path / "out", group_by=["system"],
            m=[3], k=[2, 6], seeds=[0], methods=methods, **FAST)
        assert set(res.errors["method"]) == set(methods)
        report = (tmp_path / "out" / "report.md").read_text()
        assert "fits failed" not in report
        assert ("Needs the naive and the mixture" in report) == (
            not {"naive", "mixture"} <= set(methods))
        pngs = {p.name for p in (tmp_path / "out").glob("*.png")}
        assert "fig_mae_vs_k.png" in pngs
        assert ("fig_bic_shares.png" in pngs) == ("mixture" in methods)

    @pytest.mark.unit
    def test_errors(self, tmp_path):
        runner = CliRunner()
        res = runner.invoke(main, ["experiment", "repeated", str(TAU)])
        assert res.exit_code == 2 and "--out" in res.stderr
        res = runner.invoke(main, ["experiment", "repeated", str(TAU), "--out",
                                   str(tmp_path), "--jobs", "0"])
        assert res.exit_code == 2
        res = runner.invoke(main, ["experiment", "repeated", str(LCB), "--out",
                                   str(tmp_path)])
        assert res.exit_code == 1 and "group_by" in res.stderr


@pytest.mark.parametrize("module", [passmix.experiments.repeated, passmix.experiments.report,
                                    passmix.experiments.figures])
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


@pytest.mark.unit
def test_repeated_report_is_the_driver_the_package_exports():
    """The repeated protocol's driver lives in repeated_report (so repeated imports neither
    report nor figures back) and is what passmix.experiments exports."""
    import passmix.experiments as experiments
    from passmix.experiments import repeated, repeated_report

    assert experiments.repeated_experiment is repeated_report.repeated_experiment
    assert not hasattr(repeated, "repeated_experiment")
