"""Bundled example data: present, well-formed, and faithful to its stated provenance."""

import numpy as np
import pandas as pd
import pytest

import passmix
from passmix.examples import EXAMPLES, example_path, load_example

#: no test here compiles a graph: the unit lane (pytest -m unit)
pytestmark = pytest.mark.unit


def test_every_example_loads():
    for name in EXAMPLES:
        assert example_path(name).is_file()
    for name in ("math_m10", "math_10k"):
        assert len(load_example(name)) == 7 * 128


def test_subsample_is_a_draw_from_the_reference():
    ref = load_example("math_10k").set_index(["model", "problem"]).sort_index()
    sub = load_example("math_m10").set_index(["model", "problem"]).sort_index()
    assert ref.index.equals(sub.index)
    assert (sub["trials"] == 10).all() and (ref["trials"] == 10_000).all()
    # a draw without replacement cannot exceed the successes or failures available
    assert (sub["successes"] <= np.minimum(10, ref["successes"])).all()
    assert (10 - sub["successes"] <= ref["trials"] - ref["successes"]).all()
    # and its success rate tracks the reference (binomial SE of 896 x 10 draws)
    p_ref, p_sub = ref["successes"].sum() / ref["trials"].sum(), sub["successes"].mean() / 10
    assert abs(p_sub - p_ref) < 4 * np.sqrt(p_ref * (1 - p_ref) / (896 * 10))


@pytest.mark.parametrize("name,columns,rows,groups,options", [
    ("taubench_airline", ["model", "domain", "task_id", "trial", "reward"], 200, 1, {}),
    ("livecodebench", ["model", "problem", "difficulty", "platform", "trials", "successes"],
     43 * 400, 43, {}),
    ("mizrahi_bbh", ["task", "model", "prompt", "questions", "successes"], None, 165,
     {"task": "prompt", "group_by": ["task", "model"]}),
])
def test_other_examples(name, columns, rows, groups, options):
    df = load_example(name)
    assert list(df.columns) == columns
    if rows is not None:
        assert len(df) == rows
    read = passmix.read_counts(example_path(name), **{"group_by": columns[0], **options})
    assert len(read) == groups and all(c.n_observed > 0 for c in read.values())


def test_every_example_is_documented():
    readme = (example_path("math_m10").parent / "README.md").read_text()
    for name, (file, _) in EXAMPLES.items():
        assert f"`{name}`" in readme and f"`{file}`" in readme


def test_reads_as_counts_by_model():
    groups = passmix.read_counts(example_path("math_m10"), group_by="model")
    assert len(groups) == 7 and all(c.n_tasks == 128 for c in groups.values())


def test_unknown_example():
    with pytest.raises(ValueError, match="unknown example"):
        example_path("gsm8k")
