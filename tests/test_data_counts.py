"""Tests for passmix.data: the Counts container and read_counts."""

from __future__ import annotations

import doctest
import json
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

import passmix
import passmix.data.counts
from passmix.data import Counts, detect_layout, read_counts
from passmix.examples import example_path

MATH = example_path("math_10k")
TAU = example_path("taubench_airline")
LCB = example_path("livecodebench")
MIZRAHI = example_path("mizrahi_bbh")


@pytest.mark.unit
def test_doctests():
    result = doctest.testmod(passmix.data.counts, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


# ---------------------------------------------------------------------------
# Counts()
# ---------------------------------------------------------------------------


@pytest.mark.unit
class TestCounts:
    def test_basic(self):
        c = Counts([3, 0, 10], [10, 10, 10], tasks=["a", "b", "c"])
        assert c.successes.tolist() == [3, 0, 10]
        assert c.trials.tolist() == [10, 10, 10]
        assert c.tasks.tolist() == ["a", "b", "c"]
        assert c.successes.dtype == np.int64 and c.trials.dtype == np.int64
        assert c.n_tasks == len(c) == 3
        assert c.n_observed == 3

    def test_default_tasks(self):
        c = Counts([1, 2], [2, 2])
        np.testing.assert_array_equal(c.tasks, [0, 1])

    def test_read_only(self):
        c = Counts([1, 2], [2, 2])
        for arr in (c.successes, c.trials, c.tasks):
            assert not arr.flags.writeable
            with pytest.raises(ValueError):
                arr[0] = 0
        with pytest.raises(AttributeError):
            c.successes = np.array([0, 0])

    def test_copies_input(self):
        y, m, t = np.array([1, 2]), np.array([3, 3]), np.array(["a", "b"])
        c = Counts(y, m, tasks=t)
        y[0], m[0], t[0] = 0, 9, "z"
        assert c.successes[0] == 1 and c.trials[0] == 3 and c.tasks[0] == "a"
        assert y.flags.writeable  # the caller's array is untouched

    def test_integral_floats_and_pandas(self):
        c = Counts(np.array([1.0, 2.0]), pd.Series([3, 4], dtype="Int64"))
        assert c.successes.dtype == np.int64
        assert c.trials.tolist() == [3, 4]
        c = Counts(pd.Series([1, 2]), [np.uint8(3), np.uint8(4)])
        assert c.successes.tolist() == [1, 2]

    def test_unobserved_tasks(self):
        c = Counts([0, 2, 0], [0, 5, 0])
        assert c.n_tasks == 3 and c.n_observed == 1
        assert "n_observed=1" in repr(c)

    def test_repr(self):
        c = Counts([1, 2, 3, 0], [10, 10, 10, 10])
        assert repr(c) == "Counts(n_tasks=4, n_observed=4, trials=10, mean_success=0.15)"
        c = Counts([1, 2, 0], [2, 10, 0])
        assert "trials=0-10" in repr(c)
        assert "mean_success=0.35" in repr(c)  # mean of 1/2 and 2/10
        assert "mean_success=nan" in repr(Counts([0], [0]))
        assert "<table>" in c._repr_html_() and "n_tasks" in c._repr_html_()

    def test_pickle_keeps_read_only(self):
        c = Counts([1, 2], [3, 3], tasks=["a", "b"])
        d = pickle.loads(pickle.dumps(c))
        assert d.successes.tolist() == [1, 2] and d.tasks.tolist() == ["a", "b"]
        assert not d.successes.flags.writeable

    @pytest.mark.parametrize(
        ("y", "m", "kwargs", "match"),
        [
            ([], [], {}, "no tasks"),
            ([1, 2], [3], {}, "same length"),
            ([[1, 2]], [[3, 3]], {}, "must be 1-d"),
            (5, 6, {}, "must be 1-d"),
            ([1, np.nan], [3, 3], {}, r"successes has a missing value \(NaN\) in row 1"),
            ([1, 2], [3, np.inf], {}, r"trials has an infinite value \(inf\) in row 1"),
            ([1, -1], [3, 3], {}, "successes must be non-negative; got -1 in row 1"),
            ([1, 2.5], [3, 3], {}, r"successes must be whole numbers; got 2\.5 in row 1"),
            ([1, None], [3, 3], {}, r"missing value \(NaN\)"),
            (
                [0, 0, 0, 12],
                [10, 10, 10, 10],
                {"tasks": ["w", "x", "y", "abc"]},
                r"^successes \(12\) exceeds trials \(10\) in row 3 \(task 'abc'\)\.$",
            ),
            ([0, 4], [1, 3], {}, r"successes \(4\) exceeds trials \(3\) in row 1\.$"),
            ([1, 2], [3, 3], {"tasks": ["a"]}, "tasks has 1 labels but there are 2"),
            ([1, 2], [3, 3], {"tasks": [["a", "b"]]}, "tasks must be 1-d"),
            ([1, 2], [3, 3], {"tasks": ["a", "a"]}, "task 'a' appears 2 times"),
        ],
    )
    def test_value_errors(self, y, m, kwargs, match):
        with pytest.raises(ValueError, match=match):
            Counts(y, m, **kwargs)

    @pytest.mark.parametrize(
        ("y", "m", "match"),
        [
            (["1", "2"], [3, 3], "successes must be numeric"),
            ([1, 2], ["3", "x"], "trials must be numeric"),
            ([True, False], [1, 1], "got booleans"),
            (pd.Series([True]), [1], "got booleans"),
            ([1, None, "x"], [3, 3, 3], r"successes must be numeric; got 'x' in row 2"),
            ([1, 2], np.array(["a", "b"]), "trials must be numeric, got dtype"),
        ],
    )
    def test_type_errors(self, y, m, match):
        with pytest.raises(TypeError, match=match):
            Counts(y, m)


# ---------------------------------------------------------------------------
# pairs, to_frame, subsample
# ---------------------------------------------------------------------------


@pytest.mark.unit
class TestPairs:
    def test_against_counter(self):
        rng = np.random.default_rng(1)
        m = rng.choice([0, 3, 5, 10], size=500)
        y = rng.binomial(m, rng.beta(0.5, 1.5, size=500))
        c = Counts(y, m)
        ys, ms, w = c.pairs()
        expected = Counter((int(a), int(b)) for a, b in zip(y, m) if b > 0)
        assert dict(zip(zip(ys.tolist(), ms.tolist()), w.tolist())) == expected
        assert list(zip(ms, ys)) == sorted(zip(ms, ys))  # sorted by m, then y
        assert w.sum() == c.n_observed
        assert ys.dtype == ms.dtype == w.dtype == np.int64

    def test_no_observed_tasks(self):
        ys, ms, w = Counts([0, 0], [0, 0]).pairs()
        assert ys.size == ms.size == w.size == 0
        assert w.dtype == np.int64


@pytest.mark.unit
class TestToFrame:
    def test_columns_and_copy(self):
        c = Counts([1, 2], [3, 4], tasks=["a", "b"])
        df = c.to_frame()
        assert list(df.columns) == ["task", "successes", "trials"]
        assert df["successes"].tolist() == [1, 2] and df["task"].tolist() == ["a", "b"]
        df.loc[0, "successes"] = 99
        assert c.successes[0] == 1


@pytest.mark.unit
class TestSubsample:
    def setup_method(self):
        rng = np.random.default_rng(0)
        self.m = rng.choice([0, 2, 50, 100], size=300)
        self.y = rng.binomial(self.m, rng.uniform(size=300))
        self.c = Counts(self.y, self.m, tasks=[f"t{i}" for i in range(300)])

    def test_shapes(self):
        s = self.c.subsample(10, rng=1)
        np.testing.assert_array_equal(s.trials, np.minimum(self.m, 10))
        assert (s.successes <= s.trials).all() and (s.successes >= 0).all()
        assert (s.successes <= self.c.successes).all()
        assert (s.trials - s.successes <= self.c.trials - self.c.successes).all()
        np.testing.assert_array_equal(s.tasks, self.c.tasks)
        assert not s.successes.flags.writeable

    def test_reproducible(self):
        a = self.c.subsample(10, rng=123)
        b = self.c.subsample(10, rng=np.random.default_rng(123))
        np.testing.assert_array_equal(a.successes, b.successes)
        assert not np.array_equal(a.successes, self.c.subsample(10, rng=124).successes)

    def test_original_untouched(self):
        self.c.subsample(5, rng=0)
        np.testing.assert_array_equal(self.c.successes, self.y)

    def test_full_budget_is_identity(self):
        s = self.c.subsample(100, rng=0)
        np.testing.assert_array_equal(s.successes, self.c.successes)

    def test_unbiased(self):
        c = Counts([37, 5, 990, 0, 400], [1000] * 5)
        full = (c.successes / c.trials).mean()
        rng = np.random.default_rng(7)
        rates = np.array([c.subsample(8, rng).successes.mean() / 8 for _ in range(2000)])
        se = rates.std(ddof=1) / np.sqrt(rates.size)
        assert abs(rates.mean() - full) < 4 * se

    @pytest.mark.parametrize(("m", "exc"), [(0, ValueError), (-2, ValueError),
                                            (2.5, TypeError), (True, TypeError)])
    def test_bad_m(self, m, exc):
        with pytest.raises(exc, match="m must be"):
            self.c.subsample(m, rng=0)

    def test_bad_rng(self):
        with pytest.raises(TypeError, match="rng must be"):
            self.c.subsample(3, rng="seed")


# ---------------------------------------------------------------------------
# classmethods
# ---------------------------------------------------------------------------


@pytest.mark.unit
class TestFromMatrix:
    def test_numpy_with_nan(self):
        mat = np.array([[1, 0, 1, np.nan], [0, 0, 0, 0], [np.nan] * 4, [1, 1, np.nan, 1]])
        c = Counts.from_matrix(mat)
        assert c.successes.tolist() == [2, 0, 0, 3]
        assert c.trials.tolist() == [3, 4, 0, 3]
        assert c.n_observed == 3

    def test_dataframe_index_becomes_tasks(self):
        df = pd.DataFrame(
            {"s1": [True, False], "s2": [True, True], "s3": [1.0, np.nan]},
            index=pd.Index(["p", "q"], name="task"),
        )
        before = df.copy()
        c = Counts.from_matrix(df)
        assert c.tasks.tolist() == ["p", "q"]
        assert c.successes.tolist() == [3, 1] and c.trials.tolist() == [3, 2]
        pd.testing.assert_frame_equal(df, before)
        assert Counts.from_matrix(df, tasks=["x", "y"]).tasks.tolist() == ["x", "y"]

    def test_object_values(self):
        c = Counts.from_matrix([[True, None, 0], [1, False, np.nan]])
        assert c.successes.tolist() == [1, 1] and c.trials.tolist() == [2, 2]

    def test_bad_value(self):
        df = pd.DataFrame({"a": [0, 1], "b": [1, 2]}, index=["p", "q"])
        with pytest.raises(ValueError, match=r"value 2 in row 1 \(task 'q'\), column 'b'"):
            Counts.from_matrix(df)
        with pytest.raises(ValueError, match=r"value 0\.5 in row 0, column 1"):
            Counts.from_matrix(np.array([[1, 0.5]]))

    def test_string_value(self):
        df = pd.DataFrame({"a": [0, 1], "b": [1, "yes"]})
        with pytest.raises(ValueError, match=r"value 'yes' in row 1 \(task 1\), column 'b'"):
            Counts.from_matrix(df)

    def test_shape_errors(self):
        with pytest.raises(ValueError, match="must be 2-d"):
            Counts.from_matrix([1, 0, 1])
        with pytest.raises(ValueError, match="no tasks"):
            Counts.from_matrix(np.empty((0, 3)))


@pytest.mark.unit
class TestFromLong:
    def test_basic(self):
        df = pd.DataFrame(
            {
                "task": ["b", "a", "b", "a", "c", "c"],
                "outcome": [1, 0, 1, 1, np.nan, np.nan],
            }
        )
        before = df.copy()
        c = Counts.from_long(df)
        assert c.tasks.tolist() == ["b", "a", "c"]  # order of first appearance
        assert c.successes.tolist() == [2, 1, 0]
        assert c.trials.tolist() == [2, 2, 0]  # all-NaN task kept with m = 0
        pd.testing.assert_frame_equal(df, before)

    def test_bool_and_custom_columns(self):
        df = pd.DataFrame({"q": [1, 1, 2], "ok": [True, False, True]})
        c = Counts.from_long(df, task="q", outcome="ok")
        assert c.successes.tolist() == [1, 1] and c.trials.tolist() == [2, 1]

    def test_missing_column(self):
        df = pd.DataFrame({"task": [1], "reward": [1.0]})
        with pytest.raises(ValueError, match=r"outcome column 'outcome' not found; "
                           r"available columns: \['task', 'reward'\]"):
            Counts.from_long(df)

    def test_bad_outcome(self):
        df = pd.DataFrame({"task": ["a", "b"], "outcome": [1.0, 0.5]})
        with pytest.raises(ValueError, match=r"column 'outcome' has value 0\.5 in row 1 "
                           r"\(task 'b'\)"):
            Counts.from_long(df)
        # the value that is no 0/1 at all is named, as in a CSV column read as strings
        df = pd.DataFrame({"task": ["a", "b"], "outcome": ["1", "pass"]})
        with pytest.raises(ValueError, match="has value 'pass' in row 1"):
            Counts.from_long(df)
        df = pd.DataFrame({"task": ["a", "b"], "outcome": ["1", "0"]})
        with pytest.raises(ValueError, match="has value '1' in row 0"):
            Counts.from_long(df)

    def test_missing_task_label(self):
        df = pd.DataFrame({"task": ["a", None], "outcome": [1, 0]})
        with pytest.raises(ValueError, match="missing task label in row 1"):
            Counts.from_long(df)

    def test_no_rows(self):
        with pytest.raises(ValueError, match="no rows"):
            Counts.from_long(pd.DataFrame({"task": [], "outcome": []}))

    def test_not_a_frame(self):
        with pytest.raises(TypeError, match="DataFrame"):
            Counts.from_long({"task": [1], "outcome": [1]})


@pytest.mark.unit
class TestFromTable:
    def test_basic(self):
        df = pd.DataFrame({"id": ["a", "b"], "successes": [1, 0], "trials": [2, 0]})
        before = df.copy()
        c = Counts.from_table(df, task="id")
        assert c.tasks.tolist() == ["a", "b"] and c.trials.tolist() == [2, 0]
        assert Counts.from_table(df).tasks.tolist() == [0, 1]  # index by default
        pd.testing.assert_frame_equal(df, before)

    def test_missing_column(self):
        df = pd.DataFrame({"y": [1], "trials": [2]})
        with pytest.raises(ValueError, match=r"successes column 'successes' not found; "
                           r"available columns: \['y', 'trials'\]"):
            Counts.from_table(df)

    @pytest.mark.parametrize(
        ("y", "m", "match"),
        [
            ([1, 12], [10, 10],
             r"column 'y' \(12\) exceeds column 'm' \(10\) in row 'r1' \(task 'abc'\)"),
            ([1, -1], [10, 10], r"column 'y' must be non-negative; got -1 in row 'r1'"),
            ([1, 2.5], [10, 10], r"column 'y' must be whole numbers; got 2\.5 in row 'r1'"),
            ([1, 2], [10, np.nan], r"column 'm' has a missing value \(NaN\) in row 'r1'"),
        ],
    )
    def test_bad_counts(self, y, m, match):
        df = pd.DataFrame({"t": ["x", "abc"], "y": y, "m": m}, index=["r0", "r1"])
        with pytest.raises(ValueError, match=match):
            Counts.from_table(df, successes="y", trials="m", task="t")

    def test_duplicates(self):
        df = pd.DataFrame({"model": ["A", "B"], "p": [1, 1], "successes": [1, 2],
                           "trials": [3, 3]})
        with pytest.raises(ValueError, match=r"task 1 appears 2 times.*group_by=\['model'\]"):
            Counts.from_table(df, task="p")


# ---------------------------------------------------------------------------
# read_counts
# ---------------------------------------------------------------------------


@pytest.fixture
def counts_df():
    return pd.DataFrame(
        {
            "model": ["B", "B", "A", "A"],
            "problem": ["p1", "p2", "p1", "p2"],
            "successes": [1, 4, 0, 5],
            "trials": [5, 5, 5, 5],
        }
    )


@pytest.fixture
def long_df():
    return pd.DataFrame(
        {
            "task_id": [0, 0, 1, 1, 2, 2],
            "trial": [0, 1, 0, 1, 0, 1],
            "reward": [1.0, 0.0, 1.0, 1.0, 0.0, np.nan],
        }
    )


@pytest.mark.unit
def test_groups_come_in_the_order_people_read_them():
    """Model sizes by value (a string sort puts 12B before 160M), numbers within text by
    value, several group columns part by part; the file's row order does not matter."""
    sizes = ["Pythia 70M", "Pythia 160M", "Pythia 410M", "Pythia 1B", "Pythia 1.4B",
             "Pythia 2.8B", "Pythia 6.9B", "Pythia 12B"]
    runs = ["run 2", "run 9", "run 10"]
    rng = np.random.default_rng(0)
    rows = [(model, run) for model in sizes for run in runs]
    df = pd.DataFrame(rows, columns=["model", "run"]).iloc[rng.permutation(len(rows))]
    df = df.assign(problem=np.arange(len(df)), successes=1, trials=2)
    assert list(read_counts(df, group_by="model")) == [(s,) for s in sizes]
    assert list(read_counts(df, group_by="run")) == [(r,) for r in runs]
    assert list(read_counts(df, group_by=["model", "run"])) == rows
    one_run = df[df["run"] == "run 2"].assign(problem=1)
    assert passmix.Panel.read(one_run, "model").systems.tolist() == sizes
    # numeric labels by value; the same name in two cases stays two groups, in a fixed order
    df = pd.DataFrame({"model": [10, 9, 100], "problem": 1, "successes": 1, "trials": 2})
    assert list(read_counts(df, group_by="model")) == [(9,), (10,), (100,)]
    df = pd.DataFrame({"model": ["b", "B", "a"], "problem": 1, "successes": 1, "trials": 2})
    assert list(read_counts(df, group_by="model")) == [("a",), ("B",), ("b",)]


@pytest.mark.unit
class TestReadCountsFormats:
    @pytest.mark.parametrize("suffix", [".csv", ".tsv", ".csv.gz", ".jsonl", ".ndjson",
                                        ".json", ".parquet", ".pq"])
    def test_round_trip(self, tmp_path, suffix, counts_df):
        path = tmp_path / f"data{suffix}"
        df = counts_df[counts_df["model"] == "A"]
        if suffix in (".csv", ".csv.gz"):
            df.to_csv(path, index=False)
        elif suffix == ".tsv":
            df.to_csv(path, sep="\t", index=False)
        elif suffix in (".jsonl", ".ndjson", ".json"):
            df.to_json(path, orient="records", lines=True)
        else:
            df.to_parquet(path, index=False)
        for source in (path, str(path)):
            c = read_counts(source)
            assert c.tasks.tolist() == ["p1", "p2"]
            assert c.successes.tolist() == [0, 5] and c.trials.tolist() == [5, 5]

    def test_json_records(self, tmp_path, counts_df):
        path = tmp_path / "data.json"
        counts_df.to_json(path, orient="records")
        c = read_counts(path, group_by="model")
        assert c[("A",)].successes.tolist() == [0, 5]

    def test_unknown_extension(self, tmp_path):
        path = tmp_path / "data.xlsx"
        path.write_text("x")
        with pytest.raises(ValueError, match=r"unknown file extension '\.xlsx'"):
            read_counts(path)

    def test_missing_file(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="nope.csv"):
            read_counts(tmp_path / "nope.csv")

    def test_empty(self, tmp_path):
        (tmp_path / "empty.csv").write_text("")
        with pytest.raises(ValueError, match="no rows"):
            read_counts(tmp_path / "empty.csv")
        (tmp_path / "header.csv").write_text("task,successes,trials\n")
        with pytest.raises(ValueError, match="no rows"):
            read_counts(tmp_path / "header.csv")
        with pytest.raises(ValueError, match="no rows"):
            read_counts(pd.DataFrame({"successes": [], "trials": []}))

    def test_bad_source_type(self):
        with pytest.raises(TypeError, match="source must be"):
            read_counts([1, 2, 3])

    def test_file_line_in_message(self, tmp_path):
        path = tmp_path / "bad.csv"
        path.write_text("task,successes,trials\na,1,10\nabc,12,10\n")
        with pytest.raises(ValueError, match=r"column 'successes' \(12\) exceeds column "
                           r"'trials' \(10\) in line 3 of 'bad.csv' \(task 'abc'\)"):
            read_counts(path)
        path = tmp_path / "bad.jsonl"
        path.write_text('{"task": "a", "reward": 1}\n{"task": "b", "reward": 3}\n')
        with pytest.raises(ValueError, match=r"value 3 in line 2 of 'bad.jsonl'"):
            read_counts(path)


@pytest.mark.unit
class TestReadCountsLayouts:
    def test_counts(self, counts_df):
        before = counts_df.copy()
        out = read_counts(counts_df[counts_df["model"] == "B"])
        assert out.tasks.tolist() == ["p1", "p2"] and out.successes.tolist() == [1, 4]
        pd.testing.assert_frame_equal(counts_df, before)

    def test_counts_aliases_case_insensitive(self):
        df = pd.DataFrame({"Question_ID": ["q1", "q2"], "N_Correct": [1, 2],
                           "Attempts": [4, 4]})
        c = read_counts(df)
        assert c.tasks.tolist() == ["q1", "q2"] and c.successes.tolist() == [1, 2]

    def test_counts_without_task_uses_index(self):
        df = pd.DataFrame({"y": [1, 2], "m": [3, 3]}, index=["u", "v"])
        assert read_counts(df).tasks.tolist() == ["u", "v"]

    def test_correct_is_ambiguous(self):
        counts = pd.DataFrame({"item": [1, 2], "correct": [3, 4], "n": [5, 5]})
        assert read_counts(counts).successes.tolist() == [3, 4]
        long = pd.DataFrame({"item": [1, 1, 2], "correct": [1, 0, 1]})
        c = read_counts(long)
        assert c.successes.tolist() == [1, 1] and c.trials.tolist() == [2, 1]

    def test_long(self, long_df):
        before = long_df.copy()
        # the NaN outcome counts as not run, and is said
        with pytest.warns(UserWarning, match=r"1 attempt has no outcome \(row 5\)"):
            c = read_counts(long_df)
        assert c.tasks.tolist() == [0, 1, 2]
        assert c.successes.tolist() == [1, 2, 0] and c.trials.tolist() == [2, 2, 1]
        pd.testing.assert_frame_equal(long_df, before)

    def test_long_needs_task(self):
        with pytest.raises(ValueError, match="layout='long' needs a task column.*task="):
            read_counts(pd.DataFrame({"run": [1, 2], "outcome": [1, 0]}))

    def test_matrix(self):
        df = pd.DataFrame({"problem": ["a", "b", "c"], "s0": [1, 0, np.nan],
                           "s1": [True, False, np.nan], "s2": [0, 0, 1]})
        c = read_counts(df)
        assert c.tasks.tolist() == ["a", "b", "c"]
        assert c.successes.tolist() == [2, 0, 1] and c.trials.tolist() == [3, 3, 1]
        no_task = read_counts(df.drop(columns="problem"), layout="matrix")
        assert no_task.tasks.tolist() == [0, 1, 2]

    def test_matrix_grouped(self):
        df = pd.DataFrame({"model": ["A", "A", "B"], "task": [1, 2, 1],
                           "a0": [1, 0, 1], "a1": [1, 1, 0]})
        out = read_counts(df, group_by="model")
        assert out[("A",)].successes.tolist() == [2, 1]
        assert out[("B",)].trials.tolist() == [2]

    def test_matrix_bad_value_explicit(self):
        df = pd.DataFrame({"task": ["a", "b"], "a0": [1, 0], "a1": [1, 5]})
        with pytest.raises(ValueError, match="cannot tell the layout"):
            read_counts(df)
        with pytest.raises(ValueError, match=r"value 5 in row 1 \(task 'b'\), column 'a1'"):
            read_counts(df, layout="matrix")

    def test_undetectable(self):
        df = pd.DataFrame({"name": ["a"], "value": [3.2]})
        with pytest.raises(ValueError, match=r"cannot tell the layout of a table with "
                           r"columns \['name', 'value'\].*layout="):
            read_counts(df)

    def test_explicit_overrides(self):
        df = pd.DataFrame({"bench": ["x", "y"], "wins": [2, 3], "runs": [3, 3],
                           "trials": [9, 9]})
        c = read_counts(df, task="bench", successes="wins", trials="runs")
        assert c.tasks.tolist() == ["x", "y"] and c.trials.tolist() == [3, 3]
        c = read_counts(df, successes="wins")  # trials detected
        assert c.trials.tolist() == [9, 9]
        long = pd.DataFrame({"who": ["a", "a"], "hit": [1, 0]})
        c = read_counts(long, task="who", outcome="hit")
        assert c.successes.tolist() == [1] and c.trials.tolist() == [2]

    def test_explicit_layout_missing_columns(self, long_df, counts_df):
        with pytest.raises(ValueError, match="layout='counts' needs a successes column"):
            read_counts(long_df, layout="counts")
        with pytest.raises(ValueError, match="layout='long' needs an outcome column"):
            read_counts(counts_df, layout="long")

    @pytest.mark.parametrize("kw", ["task", "successes", "trials", "outcome"])
    def test_named_column_missing(self, counts_df, kw):
        with pytest.raises(ValueError, match=rf"{kw} column 'nope' not found; available "
                           r"columns: \['model', 'problem', 'successes', 'trials'\]"):
            read_counts(counts_df, **{kw: "nope"})

    def test_bad_layout_and_conflicts(self, counts_df, long_df):
        with pytest.raises(ValueError, match="unknown layout 'wide'"):
            read_counts(counts_df, layout="wide")
        with pytest.raises(ValueError, match="apply to layout='counts'"):
            read_counts(counts_df, layout="long", successes="successes")
        with pytest.raises(ValueError, match="applies to layout='long'"):
            read_counts(long_df, layout="matrix", outcome="reward")
        with pytest.raises(ValueError, match="used for two roles"):
            read_counts(counts_df, group_by="problem", task="problem")

    def test_bad_counts_name_row_and_task(self):
        df = pd.DataFrame({"task": ["a", "b"], "successes": [1.0, np.nan],
                           "trials": [2, 2]}, index=[10, 11])
        with pytest.raises(ValueError, match=r"column 'successes' has a missing value "
                           r"\(NaN\) in row 11 \(task 'b'\)"):
            read_counts(df)
        df = pd.DataFrame({"task": ["a", "b"], "successes": [1, "x"], "trials": [2, 2]})
        with pytest.raises(TypeError, match=r"column 'successes' must be numeric; got 'x' "
                           r"in row 1"):
            read_counts(df)


@pytest.mark.unit
class TestReadCountsGroups:
    def test_group_by(self, counts_df):
        before = counts_df.copy()
        out = read_counts(counts_df, group_by="model")
        assert list(out) == [("A",), ("B",)]  # sorted
        assert out[("A",)].successes.tolist() == [0, 5]
        assert out[("B",)].successes.tolist() == [1, 4]
        multi = read_counts(counts_df, group_by=["model"])
        assert list(multi) == [("A",), ("B",)]
        pd.testing.assert_frame_equal(counts_df, before)

    def test_two_columns(self, counts_df):
        df = counts_df.assign(temp=[0.2, 0.2, 0.7, 0.7])
        out = read_counts(df, group_by=["model", "temp"])
        assert list(out) == [("A", 0.7), ("B", 0.2)]
        assert all(type(v) is float for _, v in out)

    def test_duplicates_without_group_by(self, counts_df):
        with pytest.raises(ValueError, match=r"task 'p1' appears 2 times in column "
                           r"'problem'.*group_by=\['model'\]"):
            read_counts(counts_df)

    def test_duplicates_within_group(self, counts_df):
        df = counts_df.assign(benchmark="MATH")
        df = pd.concat([df, df.assign(seed=1)], ignore_index=True)
        with pytest.raises(ValueError, match=r"appears 2 times in column 'problem' within "
                           r"group \('A',\)"):
            read_counts(df, group_by="model")

    def test_unknown_group_column(self, counts_df):
        with pytest.raises(ValueError, match=r"group_by column 'system' not found; "
                           r"available columns"):
            read_counts(counts_df, group_by="system")

    def test_missing_group_value(self, counts_df):
        df = counts_df.astype({"model": object})
        df.loc[2, "model"] = None
        with pytest.raises(ValueError, match="group_by column 'model' has a missing value "
                           "in row 2"):
            read_counts(df, group_by="model")

    def test_error_row_refers_to_full_table(self, counts_df):
        df = counts_df.copy()
        df.loc[3, "successes"] = 6
        with pytest.raises(ValueError, match=r"in row 3 \(task 'p2'\)"):
            read_counts(df, group_by="model")

    def test_array_group_by_and_large_input(self):
        rng = np.random.default_rng(3)
        n = 200_000
        df = pd.DataFrame({"model": rng.choice(["a", "b"], n),
                           "task": rng.integers(0, 5000, n),
                           "outcome": rng.integers(0, 2, n).astype(float)})
        out = read_counts(df, group_by=np.array(["model"]))
        assert sum(c.trials.sum() for c in out.values()) == n
        assert sum(c.successes.sum() for c in out.values()) == df["outcome"].sum()

    def test_numpy_bools_in_object_column(self):
        outcome = np.array([np.True_, None, 0], dtype=object)
        df = pd.DataFrame({"task": [1, 1, 2], "outcome": outcome})
        with pytest.warns(UserWarning, match=r"no outcome \(row 1\)"):
            c = read_counts(df)
        assert c.successes.tolist() == [1, 0] and c.trials.tolist() == [1, 1]

    def test_long_grouped(self, long_df):
        df = pd.concat([long_df.assign(model="x"), long_df.assign(model="w")])
        with pytest.warns(UserWarning, match="2 attempts have no outcome"):
            out = read_counts(df, group_by="model")
        assert list(out) == [("w",), ("x",)]
        assert out[("x",)].successes.tolist() == [1, 2, 0]


# ---------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------


@pytest.mark.unit
class TestRealData:
    def test_math_groups(self):
        path = MATH
        raw = pd.read_csv(path)
        out = read_counts(path, group_by="model")
        assert len(out) == 7
        totals = raw.groupby("model")["successes"].sum()
        for (model,), c in out.items():
            assert c.n_tasks == 128 and (c.trials == 10_000).all()
            assert c.pairs()[2].sum() == 128
            assert c.successes.sum() == totals[model]

    def test_math_needs_group_by(self):
        with pytest.raises(ValueError, match=r"appears 7 times.*group_by=\['model'\]"):
            read_counts(MATH)

    def test_math_subsample(self):
        c = read_counts(MATH, group_by=["model", "benchmark"])[("Pythia 12B", "MATH")]
        s = c.subsample(10, rng=0)
        assert (s.trials == 10).all() and (s.successes <= 10).all()

    def test_taubench_long(self):
        path = TAU
        raw = pd.read_csv(path)
        c = read_counts(path)
        assert c.n_tasks == 50 and (c.trials == 4).all()
        expected = raw.groupby("task_id")["reward"].sum().astype(int)
        np.testing.assert_array_equal(c.successes, expected.loc[c.tasks].to_numpy())

    def test_livecodebench(self):
        path = LCB
        raw = pd.read_csv(path)
        out = read_counts(path, group_by="model")
        assert len(out) == raw["model"].nunique() == 43
        some = next(iter(out))
        c = out[some]
        assert c.n_tasks == 400 and (c.trials == 10).all()
        sub = raw[raw["model"] == some[0]]
        np.testing.assert_array_equal(c.successes, sub["successes"].to_numpy())
        np.testing.assert_array_equal(c.tasks, sub["problem"].to_numpy())

    def test_mizrahi_prompts_as_instances(self):
        path = MIZRAHI
        out = read_counts(path, task="prompt", group_by=["task", "model"])
        assert len(out) == 165
        assert all(136 <= c.n_tasks <= 189 for c in out.values())
        with pytest.raises(ValueError, match="pass task=<instance column>"):
            read_counts(path)


@pytest.mark.unit
class TestFuzzedInputs:
    """Inputs that were once read silently wrong or failed without naming the problem."""

    def test_duplicate_columns_in_a_frame(self):
        df = pd.DataFrame([["a", 1, 0], ["b", 0, 1]], columns=["task", "outcome", "outcome"])
        for call in (lambda: Counts.from_long(df), lambda: read_counts(df),
                     lambda: Counts.from_matrix(df.set_index("task"))):
            with pytest.raises(ValueError, match="column 'outcome' appears 2 times"):
                call()

    def test_duplicate_columns_in_a_csv_header(self, tmp_path):
        # pandas would rename the second 'outcome' to 'outcome.1' and detection ignore it
        path = tmp_path / "dup.csv"
        path.write_text("task,outcome,outcome\na,1,0\nb,0,1\n")
        with pytest.raises(ValueError, match=r"'outcome' appears 2 times in the header of"):
            read_counts(path)

    def test_successes_without_trials_is_not_a_matrix(self, tmp_path):
        path = tmp_path / "notrials.csv"
        path.write_text("task,successes\na,1\nb,0\n")
        with pytest.raises(ValueError, match="no trials column"):
            read_counts(path)
        # said explicitly, the same columns are a 0/1 matrix
        assert read_counts(path, layout="matrix").trials.tolist() == [1, 1]

    def test_outcome_named_like_counts_still_reads_as_long(self):
        df = pd.DataFrame({"task": ["a", "a", "b"], "correct": [1, 0, 1]})
        assert read_counts(df).successes.tolist() == [1, 1]

    @pytest.mark.parametrize("tasks", [[np.nan, np.nan], ["a", np.nan], [None, "b"],
                                       pd.Index([1.0, np.nan])])
    def test_missing_task_labels(self, tasks):
        with pytest.raises(ValueError, match="task labels must not be missing"):
            Counts([1, 2], [3, 3], tasks=tasks)

    def test_uint64_beyond_int64(self):
        big = np.array([2**63 + 5], dtype=np.uint64)
        with pytest.raises(ValueError, match="too large for int64"):
            Counts(big, big)

    def test_complex_matrix(self):
        with pytest.raises(ValueError, match=r"\(1\+1j\).*must be 0, 1"):
            Counts.from_matrix(np.array([[1 + 1j, 0]]))

    @pytest.mark.parametrize("name,content,match", [
        ("bad.jsonl", b'{"task": "a", "outcome": 1}\n{"task": \n', "cannot read .*bad.jsonl"),
        ("latin.csv", "task,outcome\ncaf\u00e9,1\nb,0\n".encode("latin-1"),
         "latin.csv.*not UTF-8"),
        ("bad.csv.gz", b"not gzip at all", "cannot read .*bad.csv.gz"),
    ])
    def test_unreadable_files_are_named(self, tmp_path, name, content, match):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=match):
            read_counts(path)


    @pytest.mark.parametrize("name, body, message", [
        # line 1 is the header: b's row is line 3, and 'five' (not its neighbour '1') is bad
        ("c.csv", "task,successes,trials\na,1,10\nb,five,10\n",
         "column 'successes' must be numeric; got 'five' in line 3 of 'c.csv'"),
        ("c.csv", "task,successes,trials\na,1,10\nb,2,ten\n",
         "column 'trials' must be numeric; got 'ten' in line 3 of 'c.csv'"),
        # pandas skips blank lines, and a quoted cell may span lines: the file's line counts
        ("c.csv", "task,successes,trials\n\na,1,10\n\nb,five,10\n", "'five' in line 5 of"),
        ("c.csv", 'task,successes,trials\n"a\nx",1,10\nb,five,10\n', "'five' in line 4 of"),
        ("c.tsv", "task\tsuccesses\ttrials\na\t1\t10\n\nb\tfive\t10\n",
         "'five' in line 4 of 'c.tsv'"),
        ("c.csv", "task,successes,trials\n\na,1,10\nb,-1,10\n",
         r"non-negative; got -1 in line 4 of 'c.csv' \(task 'b'\)"),
        ("c.csv", "task,successes,trials\na,1,10\n,2,10\n",
         "task labels must not be missing; line 3 of 'c.csv' is nan"),
        ("c.csv", "task,outcome\na,1\na,0\nb,yes\n",
         r"column 'outcome' has value 'yes' in line 4 of 'c.csv' \(task 'b'\)"),
        ("c.jsonl", '{"task": "a", "successes": 1, "trials": 10}\n\n'
                    '{"task": "b", "successes": "five", "trials": 10}\n',
         "got 'five' in line 3 of 'c.jsonl'"),
    ])
    def test_text_file_errors_name_the_bad_value_and_its_line(self, tmp_path, name, body,
                                                               message):
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises((TypeError, ValueError), match=message):
            read_counts(path)

    def test_matrix_and_compressed_file_errors_name_the_line(self, tmp_path):
        import gzip

        path = tmp_path / "m.csv"
        path.write_text("task,t1,t2\na,1,0\nb,1,maybe\n")
        with pytest.raises(ValueError, match="matrix value 'maybe' in line 3 of 'm.csv' "
                           r"\(task 'b'\), column 't2'"):
            read_counts(path, layout="matrix")
        gz = tmp_path / "c.csv.gz"
        with gzip.open(gz, "wt") as fh:
            fh.write("task,successes,trials\n\na,1,10\nb,five,10\n")
        with pytest.raises(TypeError, match="'five' in line 4 of 'c.csv.gz'"):
            read_counts(gz)

    @pytest.mark.parametrize("reader", [read_counts, passmix.read_trials])
    def test_missing_path_is_file_not_found(self, tmp_path, reader):
        for name in ("nope.eval", "nope.csv", "nope"):
            path = tmp_path / name
            with pytest.raises(FileNotFoundError, match=f"no such file: '{path}'"):
                reader(path)
            # not blamed on the log options, as if the file were a table
            with pytest.raises(FileNotFoundError, match=f"no such file: '{path}'"):
                reader(path, log_options={"scorer": "match"})


class TestPanelLabels:
    """Panel.from_counts / as_panel (fit_pooled's input), with fuzzed labels."""

    @staticmethod
    def counts(*ys):
        return Counts(list(ys), [5] * len(ys), tasks=["t1", "t2", "t3"][:len(ys)])

    @pytest.mark.unit
    def test_distinct_labels_stay_distinct(self):
        from passmix.data.panel import Panel

        # 0 and (0,) are distinct; unpacking only the 1-tuple would make them equal
        panel = Panel.from_counts({0: self.counts(1, 2), (0,): self.counts(3, 0)})
        assert panel.systems.tolist() == [0, (0,)]
        assert panel.counts((0,)).successes.tolist() == [3, 0]
        assert panel.counts(0).successes.tolist() == [1, 2]
        # read_counts' keys (all 1-tuples) are unpacked
        grouped = Panel.from_counts({("a",): self.counts(1, 2), ("b",): self.counts(0, 1)})
        assert grouped.systems.tolist() == ["a", "b"]
        assert Panel.from_counts({("a",): self.counts(1, 2)}, unpack=False).systems.tolist() \
            == [("a",)]

    @pytest.mark.unit
    def test_tuple_and_mixed_task_labels(self):
        from passmix.data.panel import Panel

        panel = Panel([[1, 2], [0, 1]], [[3, 3], [3, 3]], systems=[("m", 1), ("m", 2)],
                      tasks=[(1, "a"), "x"])
        assert panel.tasks.tolist() == [(1, "a"), "x"]
        assert panel.counts(("m", 2)).tasks.tolist() == [(1, "a"), "x"]

    def test_fit_pooled_accepts_tuple_and_scalar_labels(self):
        fit = passmix.fit_pooled({0: self.counts(1, 2, 3), (0,): self.counts(3, 0, 4)},
                                 seed=0)
        assert fit.systems_table().index.tolist() == [0, (0,)]

    @pytest.mark.unit
    @pytest.mark.parametrize("systems, error, message", [
        (["a", "a"], ValueError, r"system labels must be distinct; 'a' \(label 1\) appears "
                                 "twice"),
        ([0, False], ValueError, r"False \(label 1\) equals 0 \(label 0\) as a dict key"),
        ([[1], [2]], TypeError, r"system labels must be hashable; label 0 is \[1\], a list"),
    ])
    def test_labels_that_cannot_be_told_apart(self, systems, error, message):
        from passmix.data.panel import Panel

        with pytest.raises(error, match=message):
            Panel([[1, 2], [0, 1]], [[3, 3], [3, 3]], systems=systems)

    @pytest.mark.unit
    @pytest.mark.parametrize("data", [[1, 2, 3], np.array([[1, 2]]), 5, None])
    def test_unsupported_input_types_are_named(self, data):
        with pytest.raises(TypeError, match=r"must be a passmix\.Panel, a mapping of system "
                           r"label to Counts, a pandas DataFrame or a path to a file.*got "
                           + type(data).__name__):
            passmix.fit_pooled(data)

    @pytest.mark.unit
    def test_a_table_still_needs_its_system_column(self):
        df = pd.DataFrame({"model": ["a", "b"], "task": ["t", "t"], "successes": [1, 2],
                           "trials": [3, 3]})
        with pytest.raises(ValueError, match="name the system column"):
            passmix.fit_pooled(df)


# --------------------------------------------------------------------------
# read_trials and detect_layout: the one ingestion path
# --------------------------------------------------------------------------


def _long_frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("a", "b"):
        for task in ("t3", "t1", "t2"):
            n = 4 if task != "t2" or model == "a" else 2  # model b ran t2 twice only
            for trial in range(n):
                rows.append({"model": model, "task_id": task, "trial": trial,
                             "reward": float(rng.random() < 0.5)})
    return pd.DataFrame(rows)


@pytest.mark.unit
class TestReadTrials:
    def test_long_gives_matrices_that_sum_to_read_counts(self):
        df = _long_frame()
        before = df.copy()
        trials = passmix.read_trials(df, group_by="model")
        counts = passmix.read_counts(df, group_by="model")
        pd.testing.assert_frame_equal(df, before)
        assert trials.keys() == counts.keys()
        for key, x in trials.items():
            assert x.shape == (3, 4)
            assert np.array_equal(np.nansum(x, axis=1), counts[key].successes)
            assert np.array_equal(np.sum(~np.isnan(x), axis=1), counts[key].trials)
            assert set(np.unique(x[~np.isnan(x)])) <= {0.0, 1.0}
        # the tasks keep read_counts' order; b's t2 has two attempts not run
        t2 = list(counts[("b",)].tasks).index("t2")
        assert np.isnan(trials[("b",)][t2]).sum() == 2

    def test_matrix_and_counts_layouts(self):
        matrix = pd.DataFrame({"task": ["x", "y"], "a0": [1, 0], "a1": [1, np.nan],
                               "a2": [0, 1]})
        x = passmix.read_trials(matrix)
        assert_array_equal(x, [[1, 1, 0], [0, np.nan, 1]])
        counts = pd.DataFrame({"task": ["x", "y"], "successes": [2, 1], "trials": [3, 2]})
        got = passmix.read_trials(counts)
        assert isinstance(got, passmix.Counts)
        assert_array_equal(got.successes, [2, 1])

    def test_file_is_read_like_a_frame(self, tmp_path):
        df = _long_frame(seed=4)
        path = tmp_path / "runs.jsonl"
        df.to_json(path, orient="records", lines=True)
        from_file = passmix.read_trials(path, group_by="model")
        from_frame = passmix.read_trials(df, group_by="model")
        for key in from_frame:
            assert_array_equal(from_file[key], from_frame[key])


@pytest.mark.unit
class TestDetectLayout:
    @pytest.mark.parametrize("frame, kind", [
        (pd.DataFrame({"problem": ["p"], "n_correct": [1], "attempts": [3]}), "counts"),
        (pd.DataFrame({"task_id": ["p", "p"], "passed": [True, False]}), "long"),
        (pd.DataFrame({"task": ["p"], "s1": [1], "s2": [0], "s3": [1]}), "matrix"),
    ])
    def test_kinds(self, frame, kind):
        spec = detect_layout(frame)
        assert spec.kind == kind
        assert spec.task in frame.columns

    def test_named_columns_decide(self):
        df = pd.DataFrame({"m": ["a"], "q": ["p"], "good": [2], "n": [5]})
        spec = detect_layout(df, group_by="m", task="q", successes="good", trials="n")
        assert (spec.kind, spec.group_cols, spec.successes, spec.trials) == (
            "counts", ("m",), "good", "n")

    def test_errors_name_the_problem(self):
        with pytest.raises(ValueError, match="'nope'"):
            detect_layout(pd.DataFrame({"task": ["p"], "successes": [1], "trials": [2]}),
                          group_by="nope")
        with pytest.raises(ValueError, match="layout"):
            detect_layout(pd.DataFrame({"task": ["p"], "comment": ["hi"]}))


_HEAVY = ("pymc", "pytensor", "arviz", "matplotlib", "numba", "inspect_ai", "dask", "xarray")


def _loaded(code: str, names) -> list[str]:
    """Which of `names` a fresh interpreter has imported after running `code`."""
    code += f"\nimport sys; print('loaded:' + ','.join(m for m in {tuple(names)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    return [m for m in out.stdout.splitlines()[-1].removeprefix("loaded:").split(",") if m]


@pytest.mark.unit
def test_import_is_light():
    """``import passmix`` loads nothing but itself: its names are loaded on first use."""
    assert _loaded("import passmix", (*_HEAVY, "click", "pandas", "scipy.special",
                                      "scipy.optimize", "passmix.models.mixture.fit")) == []
    # a name asked for brings what it needs, and nothing heavy
    assert _loaded("import passmix; passmix.Counts([1], [2])", (*_HEAVY, "click")) == []


@pytest.mark.unit
def test_reading_and_help_are_light():
    """Reading a file and ``passmix --help`` import neither PyMC nor any other heavy library."""
    read = ("import passmix\nfrom passmix.examples import example_path\n"
            "passmix.read_counts(example_path(), group_by=['model'])\nimport passmix.data.readers")
    assert _loaded(read, _HEAVY) == []
    helps = ("import sys\nfrom passmix.cli import main\nsys.argv = ['passmix', '--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass")
    assert _loaded(helps, _HEAVY) == []


# ---------------------------------------------------------------------------
# what read_counts says about a table of attempts: missing outcomes, systems
# read as one, the bad value and its line, partial scores
# ---------------------------------------------------------------------------


def _attempts_csv(path: Path, models=("small", "medium"), tasks=4, trials=3) -> Path:
    """model,task,trial,outcome: every model on every task, outcomes 1 on even trials."""
    lines = ["model,task,trial,outcome"]
    lines += [f"{m},t{t},{r},{int(r % 2 == 0)}" for m in models for t in range(tasks)
              for r in range(trials)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.unit
class TestMissingOutcomes:
    def test_csv_empty_cell_and_na_are_named_by_line(self, tmp_path):
        lines = ["task,outcome", "a,1", "a,0", "a,", "b,1", "b,NA", "b,0"]
        path = tmp_path / "runs.csv"
        path.write_text("\n".join(lines) + "\n")
        with pytest.warns(UserWarning) as said:
            c = read_counts(path)
        # header is line 1: the empty cell is line 4, the NA line 6
        (message,) = [str(w.message) for w in said if "no outcome" in str(w.message)]
        assert message == ("2 attempts have no outcome (lines 4, 6 of 'runs.csv'); they are "
                           "left out as not run.")
        assert c.successes.tolist() == [1, 1] and c.trials.tolist() == [2, 2]

    def test_jsonl_null_and_many_rows(self, tmp_path):
        path = tmp_path / "runs.jsonl"
        rows = [{"task": f"t{i % 3}", "outcome": None if i % 2 else 1} for i in range(14)]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        with pytest.warns(UserWarning, match=r"^7 attempts have no outcome \(lines 2, 4, 6, "
                                             r"8, 10 \.\.\. of 'runs\.jsonl'\); they are left "
                                             r"out as not run\.$"):
            c = read_counts(path)
        assert c.trials.sum() == 7 and c.successes.sum() == 7

    def test_complete_outcomes_say_nothing(self, tmp_path):
        path = tmp_path / "runs.csv"
        path.write_text("task,outcome\na,1\na,0\nb,1\n")
        with warnings_as_errors():
            read_counts(path)
        # a matrix's NaN cells are attempts not run by design (ragged trials): no warning
        with warnings_as_errors():
            read_counts(pd.DataFrame({"task": ["a", "b"], "t1": [1, 0], "t2": [np.nan, 1]}))


@pytest.mark.unit
class TestSystemsReadAsOne:
    def test_model_column_without_group_by_is_named(self, tmp_path):
        path = _attempts_csv(tmp_path / "long.csv")
        with pytest.warns(UserWarning, match=r"column 'model' has 2 values \('small', "
                                             r"'medium'\) that share tasks.*pooled into one "
                                             r"count per task\. Pass group_by='model' "
                                             r"\(--group-by model\)"):
            merged = read_counts(path)
        assert merged.trials.tolist() == [6] * 4  # what was read: both models as one
        with warnings_as_errors():  # grouped: nothing to say, and the trial column is no system
            groups = read_counts(path, group_by="model")
        assert list(groups) == [("medium",), ("small",)]
        assert groups[("small",)].trials.tolist() == [3] * 4

    def test_a_second_system_column_within_groups(self, tmp_path):
        frame = pd.read_csv(_attempts_csv(tmp_path / "long.csv"))
        both = pd.concat([frame.assign(prompt="p1"), frame.assign(prompt="p2")])
        with pytest.warns(UserWarning, match=r"column 'prompt' .*group_by=\['model', 'prompt'\] "
                                             r"\(--group-by model,prompt\)"):
            read_counts(both, group_by="model")

    def test_an_unnamed_column_that_splits_shared_tasks(self):
        # not a known name, but attempts repeat under each value, with both outcomes
        frame = pd.DataFrame({"task": ["a", "a", "b", "b"] * 2,
                              "variant_of_the_run": ["x"] * 4 + ["y"] * 4,
                              "outcome": [1, 0, 0, 1, 1, 1, 0, 0]})
        with pytest.warns(UserWarning, match="column 'variant_of_the_run' has 2 values"):
            read_counts(frame)

    def test_columns_that_are_not_systems_say_nothing(self):
        frame = pd.DataFrame({
            "task": ["a", "a", "b", "b", "a", "b"],
            "attempt": [0, 1, 0, 1, 2, 2],             # numbers the attempts
            "category": ["x", "x", "y", "y", "x", "y"],  # a property of the task
            "answer": ["A", "B", "C", "C", "A", "D"],    # graded right or wrong as a whole
            "latency": [0.31, 1.2, 0.8, 0.5, 0.44, 2.1],
            "outcome": [1, 0, 1, 1, 1, 0]})
        with warnings_as_errors():
            c = read_counts(frame)
        assert c.trials.tolist() == [3, 3]


@pytest.mark.unit
class TestBadValuesAndTheirLines:
    @pytest.mark.parametrize("group_by", [None, "model"])
    @pytest.mark.filterwarnings("ignore:column 'model' has 2 values")
    def test_yes_in_a_01_column_is_named_with_its_line(self, tmp_path, group_by):
        path = _attempts_csv(tmp_path / "long.csv", tasks=10)
        lines = path.read_text().splitlines()
        lines[9] = lines[9].rsplit(",", 1)[0] + ",yes"  # the 10th line of the file
        path.write_text("\n".join(lines) + "\n")
        # the offending value and its own line, whichever group it is in (grouped, the
        # first group read, 'medium', holds only 0/1 read as text: not the culprit)
        with pytest.raises(ValueError, match=r"column 'outcome' has value 'yes' in line 10 "
                                             r"of 'long.csv' \(task 't2'\)"):
            read_counts(path, group_by=group_by)

    def test_true_false_text_is_not_the_culprit(self, tmp_path):
        path = tmp_path / "long.csv"
        path.write_text("task,outcome\na,True\na,False\nb,True\nb,maybe\n")
        with pytest.raises(ValueError, match="value 'maybe' in line 5"):
            read_counts(path)

    def test_matrix_in_groups(self, tmp_path):
        path = tmp_path / "m.csv"
        path.write_text("model,task,t1,t2\nA,a,1,0\nA,b,0,1\nB,a,1,1\nB,b,oops,0\n")
        with pytest.raises(ValueError, match=r"matrix value 'oops' in line 5 of 'm.csv' "
                                             r"\(task 'b'\), column 't1'"):
            read_counts(path, group_by="model", layout="matrix")

    @pytest.mark.parametrize("name, body, message", [
        ("bad.jsonl", '{"task": "a", "outcome": 1}\n\n{"task": "b", "outcome": 0}\n'
                      '{"task": "c" "outcome": 1}\n',
         r"cannot read .*bad\.jsonl' as JSONL: line 4 is not valid JSON \(Expecting ',' "
         r"delimiter at column 14\): \{\"task\": \"c\" \"outcome\": 1\}"),
        ("bad.json", '[{"task": "a", "outcome": 1},\n {"task": "b" "outcome": 0}]\n',
         r"cannot read .*bad\.json' as JSON: line 2, column 15: Expecting ',' delimiter"),
        ("lines.json", '{"task": "a", "outcome": 1}\n{"task": "b", "outcome": }\n',
         r"cannot read .*lines\.json' as JSON: line 2 is not valid JSON"),
    ])
    def test_json_errors_name_the_line(self, tmp_path, name, body, message):
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises(ValueError, match=message) as raised:
            read_counts(path)
        assert "position" not in str(raised.value)


@pytest.mark.unit
class TestThreshold:
    def test_long_scores(self, tmp_path):
        path = tmp_path / "scores.csv"
        path.write_text("task,score\na,0.9\na,0.4\na,0.5\nb,0.1\nb,\nc,1.0\n")
        with pytest.raises(ValueError, match=r"column 'score' has value 0\.9 in line 2 .*; for "
                                             r"partial scores pass threshold="):
            read_counts(path)
        with pytest.warns(UserWarning, match="no outcome"):
            c = read_counts(path, threshold=0.5)  # 0.5 itself is a success
        assert c.tasks.tolist() == ["a", "b", "c"]
        assert c.successes.tolist() == [2, 0, 1] and c.trials.tolist() == [3, 1, 1]
        # a DataFrame the same, and not modified
        frame = pd.read_csv(path)
        before = frame.copy()
        with pytest.warns(UserWarning, match=r"1 attempt has no outcome \(row 4\)"):
            assert read_counts(frame, threshold=0.95).successes.tolist() == [0, 0, 1]
        pd.testing.assert_frame_equal(frame, before)

    def test_matrix_scores_and_trials(self):
        frame = pd.DataFrame({"task": ["a", "b"], "r1": [0.2, 0.8], "r2": [0.7, np.nan]})
        c = read_counts(frame, threshold=0.5)
        assert c.successes.tolist() == [1, 1] and c.trials.tolist() == [2, 1]
        matrix = passmix.read_trials(frame, threshold=0.5)
        assert_array_equal(matrix, [[0.0, 1.0], [1.0, np.nan]])

    def test_bad_values_and_counts_refuse_it(self):
        with pytest.raises(ValueError, match=r"value 'high' in row 1 .*numbers \(scores "
                                             r"compared with the threshold\)"):
            read_counts(pd.DataFrame({"task": ["a", "b"], "score": [0.5, "high"]}),
                        threshold=0.5)
        with pytest.raises(ValueError, match=r"threshold= scores outcomes .* holds counts"):
            read_counts(pd.DataFrame({"task": ["a"], "successes": [1], "trials": [2]}),
                        threshold=0.5)
        with pytest.raises(ValueError, match="threshold must be a finite number"):
            read_counts(pd.DataFrame({"task": ["a"], "score": [0.5]}), threshold=float("nan"))


class warnings_as_errors:
    """Turn every warning inside into an error (nothing should be said)."""

    def __enter__(self):
        import warnings

        self.catch = warnings.catch_warnings()
        self.catch.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self.catch.__exit__(*exc)
