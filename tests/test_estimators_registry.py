"""The estimator registry and the FittedResult protocol.

A toy estimator registered in the test (the Laplace rule: each task's rate
(y + 1) / (m + 2) plugged into the metrics) must reach ``estimate_table``, the
command line and the repeated-trial harness with no other change, and every
registered estimator must pass :func:`passmix.testing.check_estimator`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from numpy.testing import assert_allclose

import passmix
from passmix.cli import main
from passmix.examples import example_path
from passmix.experiments import run_repeated
from passmix.inference.delta import ConfidenceInterval
from passmix.estimators.registry import (estimator_names, get_estimator, register_estimator,
                              resolve_methods, unregister_estimator)
from passmix.estimators.base import SUMMARY_COLUMNS, FittedResult
from passmix.testing import check_estimator

METRICS = ("pass@k", "pass^k", "auc@k")


def laplace_truth(y, m, metric: str, k: int) -> float:
    """The Laplace rule's metric, written out per task (independent of passmix)."""
    p = (np.asarray(y, float) + 1) / (np.asarray(m, float) + 2)
    if metric == "pass@k":
        return float(np.mean(1 - (1 - p) ** k))
    if metric == "pass^k":
        return float(np.mean(p ** k))
    # AUC@k: the mean over r = 1..k of Pass@r
    return float(np.mean([np.mean(1 - (1 - p) ** r) for r in range(1, k + 1)]))


@dataclass(frozen=True)
class LaplaceEstimate:
    """A fitted result built on the protocol alone, with no passmix base class."""

    counts: passmix.Counts

    def metric(self, metric: str, k):
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}")
        ks = np.atleast_1d(np.asarray(k))
        if np.any(ks < 1):
            raise ValueError("k must be >= 1")
        y, m = self.counts.successes, self.counts.trials
        keep = m > 0
        out = np.array([laplace_truth(y[keep], m[keep], metric, int(v)) for v in ks])
        return float(out[0]) if np.ndim(k) == 0 else out

    def interval(self, metric: str, k, level: float = 0.95, *, method=None):
        est = np.asarray(self.metric(metric, k))
        return ConfidenceInterval(est * 0.9, np.minimum(1.0, est * 1.1 + 1e-3))

    def summary(self, k=(1, 10, 100), level: float = 0.95, *, method=None):
        ks = np.atleast_1d(np.asarray(k, dtype=np.int64))
        frames = []
        for metric in METRICS:
            lo, hi = self.interval(metric, ks, level)
            frames.append(pd.DataFrame({"metric": metric, "k": ks,
                                        "estimate": self.metric(metric, ks), "se": np.nan,
                                        "lower": lo, "upper": hi}))
        return pd.concat(frames, ignore_index=True)

    def info(self):
        return {"estimator": "laplace", "n_tasks": self.counts.n_tasks}


@pytest.fixture
def laplace():
    calls = []

    def fit(counts, seed=None):
        calls.append(seed)
        return LaplaceEstimate(counts)

    register_estimator("laplace", fit, options=("seed",), description="the Laplace rule")
    yield calls
    unregister_estimator("laplace")


def test_builtins_conform():
    assert estimator_names()[:3] == ["mixture", "naive", "combinatorial"]
    for name in ("mixture", "naive", "combinatorial"):
        check_estimator(name)


@pytest.mark.slow
def test_every_registered_estimator_conforms():
    """The whole registry, joint estimators (pooled) and the scaling predictors included."""
    for name in estimator_names():
        check_estimator(name)


def test_toy_conforms_and_reaches_estimate_table(laplace):
    assert isinstance(LaplaceEstimate(passmix.Counts([1], [2])), FittedResult)
    check_estimator("laplace")
    laplace.clear()
    counts = passmix.read_counts(example_path("math_m10"), group_by="model")
    # pooled: test_models_pooled.py; the scaling predictors (not in "all"): test_scaling.py
    every = [n for n in estimator_names() if n != "pooled" and get_estimator(n).in_all]
    table = passmix.estimate_table(counts, ["model"], k=[1, 10, 1000], method=every)
    assert list(table["method"].unique()) == ["mixture", "naive", "combinatorial", "laplace"]
    mine = table[table["method"] == "laplace"]
    assert len(mine) == len(counts) * 3 * 3
    for (model,), c in counts.items():
        for metric in METRICS:
            for k in (1, 10, 1000):
                row = mine[(mine["model"] == model) & (mine["metric"] == metric)
                           & (mine["k"] == k)]
                assert_allclose(row["estimate"], laplace_truth(c.successes, c.trials, metric, k),
                                rtol=1e-12)
    # the seed option reaches the estimator, the others do not
    assert set(laplace) == {0}


@pytest.mark.unit
def test_toy_through_the_cli(laplace, tmp_path):
    out = tmp_path / "est.csv"
    result = CliRunner().invoke(main, ["estimate", "--example", "--method", "laplace",
                                       "--k", "1,100", "--format", "csv", "-o", str(out),
                                       "--quiet"])
    assert result.exit_code == 0, (result.output, result.exception)
    table = pd.read_csv(out)
    n_models = pd.read_csv(example_path("math_m10"))["model"].nunique()
    assert set(table["method"]) == {"laplace"} and len(table) == n_models * 3 * 2
    assert np.all(table["lower"] <= table["estimate"])
    help_text = CliRunner().invoke(main, ["estimate", "--help"]).output
    assert "laplace" in help_text


def test_toy_through_the_repeated_harness(laplace, tmp_path):
    rng = np.random.default_rng(7)
    theta = rng.beta(0.5, 1.5, 30)
    matrix = (rng.random((30, 40)) < theta[:, None]).astype(float)
    res = run_repeated({("a",): matrix}, group_cols=["system"], m=[4], k=[2, 10], seeds=[0, 1],
                       methods=["naive", "laplace"], max_components=2, n_init=2)
    assert set(res.errors["method"]) == {"naive", "laplace"}
    ref = res.references
    for seed in (0, 1):
        rows = res.errors[(res.errors["method"] == "laplace") & (res.errors["seed"] == seed)]
        assert len(rows) == 2 * 3
    # every registered method is in "all"
    everything = run_repeated({("a",): matrix}, group_cols=["system"], m=[4], k=[2], seeds=[0],
                              max_components=2, n_init=2)
    assert "laplace" in set(everything.errors["method"])
    assert len(ref) > 0

    # and through `passmix experiment repeated`
    data = tmp_path / "trials.csv"
    pd.DataFrame({"system": "a", "task": np.repeat(np.arange(30), 40),
                  "outcome": matrix.ravel().astype(int)}).to_csv(data, index=False)
    result = CliRunner().invoke(main, ["experiment", "repeated", str(data), "--group-by", "system",
                                       "--m", "4", "--k", "2,10", "--seeds", "1",
                                       "--method", "naive", "--method", "laplace",
                                       "--no-figures", "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, (result.output, result.exception)
    errors = pd.read_csv(tmp_path / "out" / "errors.csv")
    assert set(errors["method"]) == {"naive", "laplace"}
    # the report quotes a command that runs as typed
    assert "--method naive --method laplace" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.unit
def test_registry_validation(laplace):
    with pytest.raises(ValueError, match="registered already"):
        register_estimator("laplace", LaplaceEstimate)
    for bad in ("", "All", "all", " x", 3):
        with pytest.raises(ValueError, match="lower-case"):
            register_estimator(bad, LaplaceEstimate)
    with pytest.raises(TypeError, match="callable"):
        register_estimator("other", "not a function")
    with pytest.raises(ValueError, match="unknown options"):
        register_estimator("other", LaplaceEstimate, options=("alpha",))
    with pytest.raises(ValueError, match="built in"):
        unregister_estimator("naive")
    with pytest.raises(ValueError, match="unknown method 'nope'.*laplace"):
        get_estimator("nope")
    assert resolve_methods(["Laplace", "naive"]) == ["naive", "laplace"]
    assert resolve_methods("all")[-1] == "laplace"
    with pytest.raises(ValueError, match="empty"):
        resolve_methods([])
    result = CliRunner().invoke(main, ["estimate", "--example", "--method", "nope"])
    assert result.exit_code == 2 and "'laplace'" in result.output


class Broken(LaplaceEstimate):
    def summary(self, k=(1, 10, 100), level=0.95, *, method=None):
        table = super().summary(k, level)
        est = table["estimate"].to_numpy()
        table["lower"] = est + 0.01  # an interval above its estimate
        return table


@pytest.mark.unit
@pytest.mark.parametrize("make, message", [
    (lambda c: Broken(c), "bracket"),
    (lambda c: object(), "lacks"),
    (lambda c: _Unordered(c), "Pass\\^k <= AUC@k <= Pass@k|Pass@k falls"),
])
def test_check_estimator_catches_violations(make, message):
    est = passmix.estimators.registry.Estimator("broken", make)
    with pytest.raises(AssertionError, match=message):
        check_estimator(est)


class _Unordered(LaplaceEstimate):
    def metric(self, metric, k):
        flipped = {"pass@k": "pass^k", "pass^k": "pass@k"}.get(metric, metric)
        return super().metric(flipped, k)


def test_summary_columns_are_the_protocols():
    fit = passmix.fit(passmix.Counts([1, 2, 0, 5], [5, 5, 5, 5]), max_components=1, n_init=2)
    assert tuple(fit.summary([1, 2]).columns) == SUMMARY_COLUMNS
