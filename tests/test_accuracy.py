"""Extrapolation accuracy on real data: the mixture beats the naive plug-in at k >> m."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy_math.py"


@pytest.fixture(scope="module")
def errors():
    spec = importlib.util.spec_from_file_location("accuracy_math", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run(seeds=(0, 1, 2), m=10)


@pytest.mark.slow
def test_mixture_error_below_naive_at_large_k(errors):
    # 7 models x 3 seeds of m = 10 subsampled trials; reference: all 10,000 trials
    assert len(errors) == 7 * 3 * 2
    mae = errors.groupby("k")[["mixture_error", "naive_error"]].mean()
    for k in (100, 1000):
        assert mae.loc[k, "mixture_error"] < mae.loc[k, "naive_error"]


def test_naive_is_biased_low_for_pass_at_k(errors):
    # Jensen: the plug-in underestimates Pass@k for k > 1 whenever tasks are heterogeneous
    assert (errors["naive"] <= errors["reference"] + 1e-12).mean() > 0.9
