"""Tests for passmix.estimators: naive plug-in and combinatorial estimators."""

from __future__ import annotations

import csv
import math
import warnings
from fractions import Fraction
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import comb

from passmix.estimators import combinatorial_estimate, direct_estimate, naive_estimate
from passmix.examples import example_path

#: no test here compiles a graph: the unit lane (pytest -m unit)
pytestmark = pytest.mark.unit

METRICS = ("pass@k", "pass^k", "auc@k")
ESTIMATORS = (naive_estimate, combinatorial_estimate)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def brute_force(y, m, metric, k):
    """Average over tasks (m > 0) of the metric over all k-subsets of the trials."""
    values = []
    for yj, mj in zip(y, m):
        if mj == 0:
            continue
        outcomes = [1] * yj + [0] * (mj - yj)

        def pass_at(r):
            subsets = list(combinations(outcomes, r))
            return sum(any(s) for s in subsets) / len(subsets)

        if metric == "pass@k":
            values.append(pass_at(k))
        elif metric == "pass^k":
            subsets = list(combinations(outcomes, k))
            values.append(sum(all(s) for s in subsets) / len(subsets))
        else:
            values.append(sum(pass_at(r) for r in range(1, k + 1)) / k)
    return sum(values) / len(values)


def naive_loop(y, m, metric, k):
    """The naive plug-in written as a plain loop, AUC as an explicit sum."""
    values = []
    for yj, mj in zip(y, m):
        if mj == 0:
            continue
        p = yj / mj
        if metric == "pass@k":
            values.append(1 - (1 - p) ** k)
        elif metric == "pass^k":
            values.append(p**k)
        else:
            values.append(sum(1 - (1 - p) ** r for r in range(1, k + 1)) / k)
    return sum(values) / len(values)


def exact_combinatorial(y, m, metric, k):
    """Exact rational combinatorial estimate with math.comb (AUC as a sum over r)."""
    total = Fraction(0)
    for yj, mj in zip(y, m):
        if metric == "pass^k":
            total += Fraction(math.comb(yj, k), math.comb(mj, k))
        else:
            rs = [k] if metric == "pass@k" else range(1, k + 1)
            s = sum(1 - Fraction(math.comb(mj - yj, r), math.comb(mj, r)) for r in rs)
            total += s / len(rs)
    return float(total / len(y))


def random_counts(rng, n_tasks, m_choices, with_unrun=False):
    m = rng.choice(m_choices, size=n_tasks)
    if with_unrun:
        m[rng.choice(n_tasks, size=2, replace=False)] = 0
    y = rng.integers(0, m + 1)
    return y, m


# --------------------------------------------------------------------------
# inputs shared by both estimators
# --------------------------------------------------------------------------
class TestInputs:
    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_counts_object_equals_tuple_and_is_not_mutated(self, estimate):
        y = np.array([1, 3, 0, 4], dtype=np.int64)
        m = np.array([4, 4, 4, 4], dtype=np.int64)
        y.flags.writeable = False
        m.flags.writeable = False
        counts = SimpleNamespace(successes=y, trials=m, tasks=np.array(list("abcd")))
        for metric in METRICS:
            a = estimate(counts, metric, [1, 2, 4])
            b = estimate(([1, 3, 0, 4], [4, 4, 4, 4]), metric, [1, 2, 4])
            assert_allclose(a, b, rtol=1e-14, atol=0)
        assert_allclose(y, [1, 3, 0, 4])
        assert_allclose(m, [4, 4, 4, 4])

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_writable_inputs_not_mutated(self, estimate):
        y = np.array([1.0, 3.0, 0.0])
        m = np.array([4.0, 4.0, 0.0])
        estimate((y, m), "auc@k", [1, 3])
        assert_allclose(y, [1.0, 3.0, 0.0])
        assert_allclose(m, [4.0, 4.0, 0.0])

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_scalar_k_gives_float_array_k_gives_array(self, estimate):
        counts = ([1, 2], [5, 5])
        assert type(estimate(counts, "pass@k", 3)) is float
        assert type(estimate(counts, "pass@k", np.int64(3))) is float
        out = estimate(counts, "pass@k", [1, 2, 3])
        assert isinstance(out, np.ndarray) and out.shape == (3,)
        assert estimate(counts, "pass@k", [2]).shape == (1,)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_metric_aliases(self, estimate):
        counts = ([1, 2], [5, 5])
        assert estimate(counts, "pass_at_k", 3) == pytest.approx(estimate(counts, "pass@k", 3),
                                                                 rel=1e-14)
        assert estimate(counts, "PASS^K", 3) == pytest.approx(estimate(counts, "pass^k", 3),
                                                              rel=1e-14)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_unrun_tasks_are_excluded(self, estimate):
        a = estimate(([1, 0, 2, 0, 5], [4, 0, 6, 0, 5]), "auc@k", [1, 4])
        b = estimate(([1, 2, 5], [4, 6, 5]), "auc@k", [1, 4])
        assert_allclose(a, b, rtol=1e-14, atol=0)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    @pytest.mark.parametrize(
        "counts, match",
        [
            (([3, 1], [2, 4]), r"successes \(3\) exceeds trials \(2\) in row 0"),
            (([-1, 1], [2, 4]), r"successes must be non-negative; got -1 in row 0"),
            (([1, 1], [2, -4]), r"trials must be non-negative; got -4 in row 1"),
            (([1.5, 1], [2, 4]), r"successes must be whole numbers; got 1.5 in row 0"),
            (([1, 1], [2, 4.25]), r"trials must be whole numbers; got 4.25 in row 1"),
            (([np.nan, 1], [2, 4]), r"successes has a missing value \(NaN\) in row 0"),
            (([1, 1], [2, np.inf]), r"trials has an infinite value \(inf\) in row 1"),
            (([], []), r"successes and trials are empty"),
            (([1, 1, 1], [2, 4]), r"same length, got 3 and 2"),
            (([[1, 1]], [[2, 4]]), r"must be 1-d"),
            (([0, 0], [0, 0]), r"no task has any trial"),
        ],
    )
    def test_bad_counts(self, estimate, counts, match):
        with pytest.raises(ValueError, match=match):
            estimate(counts, "pass@k", 1)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_bad_counts_types(self, estimate):
        with pytest.raises(TypeError, match=r"a \(successes, trials\) tuple"):
            estimate([[1, 2], [3, 4]], "pass@k", 1)
        with pytest.raises(TypeError, match="successes must be numeric"):
            estimate((["a", "b"], [3, 4]), "pass@k", 1)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    @pytest.mark.parametrize(
        "metric, k, match",
        [
            ("pass@x", 1, r"unknown metric 'pass@x'"),
            ("pass@k", 0, r"k must be >= 1, got .*0"),
            ("pass@k", [1, -2], r"k must be >= 1, got .*-2"),
            ("pass@k", 2.5, r"k must be whole numbers, got .*2\.5"),
            ("pass@k", [], r"k is empty"),
        ],
    )
    def test_bad_metric_or_k(self, estimate, metric, k, match):
        with pytest.raises(ValueError, match=match):
            estimate(([1, 2], [4, 4]), metric, k)

    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_k1_equals_mean_success_rate(self, estimate):
        rng = np.random.default_rng(11)
        y, m = random_counts(rng, 40, [1, 3, 10, 80, 10_000], with_unrun=True)
        seen = m > 0
        mean_p = np.mean(y[seen] / m[seen])
        for metric in METRICS:
            assert_allclose(estimate((y, m), metric, 1), mean_p, rtol=1e-13)


# --------------------------------------------------------------------------
# naive plug-in
# --------------------------------------------------------------------------
class TestNaiveEstimate:
    @pytest.mark.parametrize("seed", range(4))
    def test_equals_python_loop(self, seed):
        rng = np.random.default_rng(seed)
        y, m = random_counts(rng, 15, [1, 2, 5, 9, 40], with_unrun=True)
        ks = [1, 2, 3, 7, 50, 200]
        for metric in METRICS:
            got = naive_estimate((y, m), metric, ks)
            want = [naive_loop(y.tolist(), m.tolist(), metric, k) for k in ks]
            assert_allclose(got, want, rtol=1e-12, atol=1e-15)

    def test_auc_closed_form_equals_explicit_sum(self):
        y = np.array([0, 1, 1, 7, 50, 99, 100, 3])
        m = np.array([100, 100, 10_000, 10, 100, 100, 100, 4])
        ks = np.array([1, 2, 10, 37, 500, 999, 1000])
        p = y / m
        r = np.arange(1, ks.max() + 1)
        pass_at_r = 1 - (1 - p[:, None]) ** r[None, :]  # (J, R)
        want = np.cumsum(pass_at_r.mean(axis=0))[ks - 1] / ks
        assert_allclose(naive_estimate((y, m), "auc@k", ks), want, rtol=1e-12, atol=1e-15)

    def test_auc_at_a_million_is_accurate(self):
        y = np.array([0, 1, 3, 500, 9_999, 10_000])
        m = np.full(6, 10_000)
        k = 10**6
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = naive_estimate((y, m), "auc@k", k)
        # reference: chunked, exactly rounded sums of q^r, r = 1..k
        aucs = []
        for p in y / m:
            if p == 0:
                aucs.append(0.0)
                continue
            log_q = math.log1p(-p) if p < 1 else -math.inf
            parts = []
            for start in range(1, k + 1, 200_000):
                r = np.arange(start, min(start + 200_000, k + 1))
                parts.extend(np.exp(r * log_q).tolist())
            s = math.fsum(parts)
            aucs.append(1 - s / k)
        assert np.isfinite(got)
        assert_allclose(got, np.mean(aucs), rtol=1e-13)

    def test_huge_k_is_finite_and_fast(self):
        y = np.array([0, 1, 5, 10])
        m = np.array([10, 10, 10, 10])
        ks = np.array([1, 10, 10**4, 10**6, 10**9])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for metric in METRICS:
                out = naive_estimate((y, m), metric, ks)
                assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
        # limits: Pass@k -> share of tasks with a success; Pass^k -> share of all-success tasks
        assert_allclose(naive_estimate((y, m), "pass@k", 10**9), 0.75)
        assert_allclose(naive_estimate((y, m), "pass^k", 10**9), 0.25)
        assert_allclose(naive_estimate((y, m), "auc@k", 10**9), 0.75, atol=1e-8)

    def test_bias_direction_against_combinatorial(self):
        # Per task, (y - i)/(m - i) <= y/m, so naive Pass^k >= combinatorial and
        # naive Pass@k, AUC@k <= combinatorial, deterministically.
        rng = np.random.default_rng(3)
        y, m = random_counts(rng, 30, [10, 20])
        ks = np.arange(2, 11)
        naive = {metric: naive_estimate((y, m), metric, ks) for metric in METRICS}
        comb_ = {metric: combinatorial_estimate((y, m), metric, ks) for metric in METRICS}
        assert np.all(naive["pass^k"] >= comb_["pass^k"])
        assert np.all(naive["pass@k"] <= comb_["pass@k"])
        assert np.all(naive["auc@k"] <= comb_["auc@k"])


# --------------------------------------------------------------------------
# combinatorial
# --------------------------------------------------------------------------
class TestCombinatorialEstimate:
    @pytest.mark.parametrize("seed", range(5))
    def test_equals_brute_force_enumeration(self, seed):
        rng = np.random.default_rng(100 + seed)
        y, m = random_counts(rng, 8, [4, 5, 7, 9], with_unrun=seed % 2 == 0)
        k_max = m[m > 0].min()
        ks = np.arange(1, k_max + 1)
        for metric in METRICS:
            got = combinatorial_estimate((y, m), metric, ks)
            want = [brute_force(y.tolist(), m.tolist(), metric, int(k)) for k in ks]
            assert_allclose(got, want, rtol=1e-12, atol=1e-15)
            for k in (1, int(k_max)):
                assert_allclose(combinatorial_estimate((y, m), metric, k), got[k - 1], rtol=1e-15)

    def test_edge_tasks_brute_force(self):
        # all-failure, all-success and one-trial tasks
        y, m = [0, 6, 1, 0, 3], [6, 6, 1, 1, 6]
        for metric in METRICS:
            assert_allclose(
                combinatorial_estimate((y, m), metric, 1), brute_force(y, m, metric, 1), rtol=1e-14
            )
        y, m = [0, 6, 2, 5], [6, 6, 6, 6]
        for metric in METRICS:
            for k in range(1, 7):
                assert_allclose(
                    combinatorial_estimate((y, m), metric, k),
                    brute_force(y, m, metric, k),
                    rtol=1e-13,
                    atol=1e-16,
                )

    @pytest.mark.parametrize("metric", METRICS)
    def test_exact_at_ten_thousand_trials(self, metric):
        y = [0, 1, 2, 37, 5_000, 9_990, 9_999, 10_000]
        m = [10_000] * len(y)
        ks = [1, 3, 40, 700] if metric == "auc@k" else [1, 3, 40, 700, 5_000, 9_999, 10_000]
        got = combinatorial_estimate((y, m), metric, ks)
        want = [exact_combinatorial(y, m, metric, k) for k in ks]
        assert_allclose(got, want, rtol=1e-13, atol=1e-15)

    def test_auc_equals_mean_of_pass_at_r(self):
        rng = np.random.default_rng(5)
        m = rng.choice([2_000, 3_000, 10_000], size=60)
        y = rng.binomial(m, rng.beta(0.3, 0.5, size=60))
        ks = np.arange(1, 2_001)
        pass_at = combinatorial_estimate((y, m), "pass@k", ks)
        auc = combinatorial_estimate((y, m), "auc@k", ks)
        assert_allclose(auc, np.cumsum(pass_at) / ks, rtol=1e-12)

    def test_large_m_is_accurate_and_fast(self):
        m = np.full(5, 10**6)
        y = np.array([0, 1, 2, 999_999, 10**6])
        assert_allclose(combinatorial_estimate((y, m), "pass@k", 1), np.mean(y / m), rtol=1e-14)
        # C(m - 1, k) / C(m, k) = (m - k) / m, C(m - 2, k) / C(m, k) = (m-k)(m-k-1)/(m(m-1))
        k = 123_456
        mm = 10**6
        want = np.mean([0, k / mm, 1 - (mm - k) * (mm - k - 1) / (mm * (mm - 1)), 1, 1])
        assert_allclose(combinatorial_estimate((y, m), "pass@k", k), want, rtol=1e-13)
        out = combinatorial_estimate((y, m), "auc@k", np.arange(1, 10**6 + 1, 997))
        assert np.all(np.isfinite(out)) and np.all(np.diff(out) >= -1e-15)

    def test_speed_ten_thousand_horizons(self):
        import time

        rng = np.random.default_rng(0)
        m = np.full(100, 10_000)
        y = rng.integers(0, 10_001, size=100)
        t0 = time.perf_counter()
        for metric in METRICS:
            out = combinatorial_estimate((y, m), metric, 10_000)
            assert 0 <= out <= 1
        combinatorial_estimate((y, m), "auc@k", np.arange(1, 10_001, 10))
        assert time.perf_counter() - t0 < 1.0

    @pytest.mark.parametrize("metric", METRICS)
    def test_error_when_k_exceeds_trials(self, metric):
        y = [1] * 50
        m = [10] * 37 + [30] * 13
        msg = (
            r"combinatorial estimator needs k <= m_j for every task; k = 20 but 37 of 50 "
            r"tasks have fewer trials \(smallest m_j = 10\)\. Use the mixture fit"
        )
        with pytest.raises(ValueError, match=msg):
            combinatorial_estimate((y, m), metric, 20)
        with pytest.raises(ValueError, match=msg):
            combinatorial_estimate((y, m), metric, [1, 5, 20, 3])
        with pytest.raises(ValueError, match=r"k = 11 but 37 of 50"):
            combinatorial_estimate((y, m), metric, np.array([11, 2]))
        assert 0 <= combinatorial_estimate((y, m), metric, 10) <= 1

    def test_unrun_tasks_do_not_trigger_k_error(self):
        out = combinatorial_estimate(([2, 0], [5, 0]), "pass@k", 5)
        assert out == 1.0

    def test_unbiased_by_simulation_naive_is_not(self):
        rng = np.random.default_rng(2024)
        p = np.array([0.02, 0.1, 0.3, 0.6, 0.9])
        m, k, reps = 20, 10, 3_000
        truth = np.mean(1 - (1 - p) ** k)
        y = rng.binomial(m, p, size=(reps, p.size))
        trials = np.full(p.size, m)
        comb_est = np.array([combinatorial_estimate((row, trials), "pass@k", k) for row in y])
        naive_est = np.array([naive_estimate((row, trials), "pass@k", k) for row in y])
        se = comb_est.std(ddof=1) / np.sqrt(reps)
        assert abs(comb_est.mean() - truth) < 4 * se
        assert truth - naive_est.mean() > 10 * naive_est.std(ddof=1) / np.sqrt(reps)
        # Pass^k too (naive biased upwards)
        truth_hat = np.mean(p**k)
        comb_hat = np.array([combinatorial_estimate((row, trials), "pass^k", k) for row in y])
        assert abs(comb_hat.mean() - truth_hat) < 4 * comb_hat.std(ddof=1) / np.sqrt(reps)


# --------------------------------------------------------------------------
# dispatcher
# --------------------------------------------------------------------------
class TestDirectEstimate:
    def test_dispatches(self):
        counts = ([1, 3, 0], [4, 5, 6])
        for metric in METRICS:
            assert direct_estimate(counts, metric, 3) == pytest.approx(
                naive_estimate(counts, metric, 3), rel=1e-14)
            assert direct_estimate(counts, metric, 3, method="naive") == (
                naive_estimate(counts, metric, 3)
            )
            assert direct_estimate(counts, metric, [2, 4], method="combinatorial").tolist() == (
                combinatorial_estimate(counts, metric, [2, 4]).tolist()
            )

    def test_unknown_method(self):
        msg = r"unknown method 'mixture'; expected one of naive, combinatorial"
        with pytest.raises(ValueError, match=msg):
            direct_estimate(([1], [2]), "pass@k", 1, method="mixture")


# --------------------------------------------------------------------------
# real data: Large Language Monkeys, 10,000 samples per MATH problem
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def monkeys():
    path = example_path("math_10k")
    groups: dict[str, tuple[list[int], list[int]]] = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            ys, ms = groups.setdefault(row["model"], ([], []))
            ys.append(int(row["successes"]))
            ms.append(int(row["trials"]))
    return {k: (np.array(v[0]), np.array(v[1])) for k, v in groups.items()}


class TestRealData:
    def test_pass_at_k_monotone_and_matches_direct_computation(self, monkeys):
        assert len(monkeys) == 7
        ks = np.array([1, 10, 100, 1_000, 10_000])
        for model, (y, m) in monkeys.items():
            assert np.all(m == 10_000), model
            est = combinatorial_estimate((y, m), "pass@k", ks)
            assert np.all((est >= 0) & (est <= 1)), model
            assert np.all(np.diff(est) >= 0), model
            assert_allclose(est[0], np.mean(y / m), rtol=1e-13)
            assert_allclose(est[-1], np.mean(y > 0), rtol=1e-15)
            direct = np.mean(1 - comb(m - y, 100, exact=False) / comb(m, 100, exact=False))
            assert_allclose(est[2], direct, rtol=1e-10, atol=1e-13)

    def test_auc_and_pass_hat_are_consistent(self, monkeys):
        ks = np.array([1, 10, 100, 1_000, 10_000])
        for y, m in monkeys.values():
            auc = combinatorial_estimate((y, m), "auc@k", ks)
            hat = combinatorial_estimate((y, m), "pass^k", ks)
            pass_at = combinatorial_estimate((y, m), "pass@k", ks)
            assert np.all(np.diff(auc) >= 0) and np.all(np.diff(hat) <= 0)
            assert np.all(hat <= auc + 1e-15) and np.all(auc <= pass_at + 1e-15)
            # the naive plug-in underestimates Pass@k on real data too
            assert np.all(naive_estimate((y, m), "pass@k", ks) <= pass_at + 1e-15)


class TestFuzzedReproducers:
    @pytest.mark.parametrize("estimate", ESTIMATORS)
    def test_huge_trial_counts_do_not_overflow_the_grouping(self, estimate):
        # the (y, m) grouping key y * (max m + 1) + m used to overflow int64
        got = estimate(([4, 0, 0], [10, 14, 2**62]), "pass@k", 1)
        assert got == pytest.approx((0.4 + 0.0 + 0.0) / 3, rel=1e-12)

    def test_k_beyond_int64_is_an_error_not_zero(self):
        with pytest.raises(ValueError, match="too large"):
            combinatorial_estimate(([4, 0, 0], [10, 14, 20]), "pass@k", 2**63)
        with pytest.raises(ValueError, match="too large"):
            naive_estimate(([4, 0, 0], [10, 14, 20]), "pass@k", np.uint64(2**64 - 1))
