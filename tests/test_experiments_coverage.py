"""Coverage of the intervals by simulation and on real data (issue 7's study).

The fast tests check the harness of :mod:`passmix.experiments.coverage`
against hand computation. The slow class is a reduced run of
``benchmarks/coverage_study.py``: data simulated near the binomial limit
(J = 128, m = 10, 0.9 Beta(0.05, 40) + 0.1 Beta(1, 3)) and the bundled MATH
data subsampled to m = 10 against all 10,000 trials; it asserts the coverage
that made profile likelihood the default interval.
"""

import numpy as np
import pytest

import passmix
from passmix.examples import example_path
from passmix.experiments.coverage import (NEAR_LIMIT, Case, coverage_table, interval_coverage,
                                          math_cases, near_limit_cases, simulate_counts)
from passmix.metrics import metric_value

KS = (10, 100, 1000)


class TestHarness:
    @pytest.mark.unit
    def test_simulate_counts_is_seeded_and_binomial(self):
        a = simulate_counts(*NEAR_LIMIT, 128, 10, 3)
        b = simulate_counts(*NEAR_LIMIT, 128, 10, 3)
        assert np.array_equal(a.successes, b.successes)
        assert np.all(a.trials == 10) and np.all(a.successes <= 10)
        # the mixture's mean success rate is 0.9 * 0.05/40.05 + 0.1 * 1/4
        many = simulate_counts(*NEAR_LIMIT, 20000, 10, 4)
        mean = 0.9 * 0.05 / 40.05 + 0.1 * 0.25
        assert many.successes.mean() / 10 == pytest.approx(mean, abs=4 * np.sqrt(mean / 2e5))

    def test_rows_match_the_fit(self):
        case = next(near_limit_cases(1, KS))
        rows = interval_coverage([case], KS, methods=["profile", "delta"])
        assert len(rows) == 2 * 3 * len(KS)
        fit = passmix.fit(case.counts, seed=0)
        summary = fit.summary(KS)
        for metric in ("pass@k", "pass^k", "auc@k"):
            mine = rows[(rows["method"] == "profile") & (rows["metric"] == metric)]
            want = summary[summary["metric"] == metric]
            np.testing.assert_allclose(mine["lower"], want["lower"], rtol=1e-12)
            truth = metric_value(metric, *NEAR_LIMIT, KS)
            np.testing.assert_allclose(mine["truth"], truth, rtol=1e-12)
            covered = (want["lower"].to_numpy() <= truth) & (truth <= want["upper"].to_numpy())
            assert mine["covered"].tolist() == covered.tolist()

    @pytest.mark.unit
    def test_math_cases_truth_is_all_trials(self):
        cases = list(math_cases([0], 10, KS))
        assert len(cases) == 7 and all(c.counts.trials.max() == 10 for c in cases)
        full = passmix.read_counts(example_path("math_10k"), group_by="model")
        first = cases[0]
        model = first.replicate.split(" / ")[0]
        np.testing.assert_allclose(
            first.truth["pass@k"], passmix.combinatorial_estimate(full[(model,)], "pass@k", KS))

    def test_table(self):
        counts = passmix.Counts([0, 1, 2], [3, 3, 3])
        case = Case("toy", "0", counts, {m: np.full(1, 2.0) for m in ("pass@k", "pass^k",
                                                                        "auc@k")})
        table = coverage_table(interval_coverage([case], [2], methods=["delta"]))
        assert table["coverage"].tolist() == [0.0, 0.0, 0.0]  # a truth of 2 is never covered
        with pytest.raises(ValueError, match="unknown methods"):
            interval_coverage([case], [2], methods=["bootstrap"])


@pytest.fixture(scope="module")
def near_limit():
    return coverage_table(interval_coverage(near_limit_cases(150, KS), KS,
                                            methods=["profile", "delta"]))


@pytest.fixture(scope="module")
def math():
    return coverage_table(interval_coverage(math_cases(range(10), 10, KS), KS,
                                            methods=["profile", "delta"]))


@pytest.mark.slow
class TestCoverageStudy:
    """95% intervals of Pass@k; Monte Carlo standard errors are ~1.5-3 points."""

    @pytest.mark.study
    def test_profile_near_the_binomial_limit(self, near_limit):
        got = near_limit[(near_limit["method"] == "profile")
                         & (near_limit["metric"] == "pass@k")]["coverage"]
        assert np.all((got >= 90) & (got <= 99)), got.tolist()

    @pytest.mark.study
    def test_profile_on_math(self, math):
        prof = math[(math["method"] == "profile") & (math["metric"] == "pass@k")]
        # the bar: >= 90% for Pass@1000 at m = 10 (70 model-seed pairs)
        assert prof.loc[prof["k"] == 1000, "coverage"].item() >= 90
        assert np.all(prof["coverage"] >= 88), prof["coverage"].tolist()
        # and where the delta method treats bounded coordinates as known, it covers less
        delta = math[(math["method"] == "delta") & (math["metric"] == "pass@k")]
        assert prof.loc[prof["k"] == 1000, "coverage"].item() > \
            delta.loc[delta["k"] == 1000, "coverage"].item()

    @pytest.mark.study
    def test_posterior_near_the_binomial_limit(self):
        rows = interval_coverage(near_limit_cases(30, KS, seed=8), KS, methods=["posterior"],
                                 draws=500, chains=2)
        table = coverage_table(rows)
        got = table[table["metric"] == "pass@k"]["coverage"]
        assert np.all(got >= 80), got.tolist()
