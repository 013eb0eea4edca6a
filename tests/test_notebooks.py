"""Execute every notebook in notebooks/ top to bottom, and check each is committed with outputs.

The kernel is this interpreter (``sys.executable``), through a ``python3``
kernelspec written to a temporary directory by ``notebooks/execute.py`` (the
script that saves the notebooks with their outputs): the tests then run the
notebooks against the passmix they are testing even when the virtualenv is
not on ``PATH``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def _load_script():
    spec = importlib.util.spec_from_file_location("passmix_execute_notebooks",
                                                  NOTEBOOK_DIR / "execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


script = _load_script()


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory) -> list[str]:
    """A directory holding one kernelspec, ``python3``, that runs this interpreter."""
    return script.kernel_dirs(tmp_path_factory.mktemp("kernels"))


def execute(nb, kernel_dirs: list[str], cwd: Path):
    return script.execute(nb, kernel_dirs, cwd)


def stream_text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


@pytest.mark.unit
def test_notebooks_found():
    assert NOTEBOOK_DIR / "quickstart.ipynb" in NOTEBOOKS


@pytest.mark.unit
def test_kernel_is_this_interpreter(kernel_dirs):
    """The helper runs cells with sys.executable, in the notebooks folder."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os, sys\nprint(sys.executable)\nprint(os.getcwd())"),
    ])
    env_path = os.environ.get("PATH", "")
    executable, cwd = stream_text(execute(nb, kernel_dirs, NOTEBOOK_DIR).cells[0]).split("\n")[:2]
    assert os.path.samefile(executable, sys.executable), (executable, sys.executable, env_path)
    assert os.path.samefile(cwd, NOTEBOOK_DIR)


@pytest.mark.unit
def test_cell_error_fails(kernel_dirs):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="ZeroDivisionError"):
        execute(nb, kernel_dirs, NOTEBOOK_DIR)


@pytest.mark.unit
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_with_outputs(path):
    """Run in one go by notebooks/execute.py: every code cell in order, no error, a figure."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: run `python notebooks/execute.py {path.name}` before committing "
        f"(execution counts {counts})")
    outputs = [out for cell in code for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], f"{path.name}: an error output"
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name}: no figure among the outputs"


def _with_stdout(*texts):
    cells = []
    for text in texts:
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


@pytest.mark.unit
class TestDifferences:
    """What counts as a committed output gone stale."""

    def test_optimiser_noise_is_not_a_difference(self):
        old = _with_stdout("H = 2 scores 14.61 worse\nlower 0.1822 upper 0.7582", "Figure 1")
        new = _with_stdout("H = 2 scores 14.6101 worse\nlower  0.1822  upper 0.75821", "Figure 1")
        assert script.differences(old, new) == []

    @pytest.mark.parametrize("fresh", ["H = 2 scores NaN worse", "H = 2 scores 13.2 worse",
                                       "H = 3 scores 14.61 worse", "H = 2 scores 14.61 better",
                                       "H = 2 scores 14.61 worse (skipped)"])
    def test_a_changed_number_or_word_is(self, fresh):
        found = script.differences(_with_stdout("x", "H = 2 scores 14.61 worse"),
                                   _with_stdout("x", fresh))
        assert found == [f"cell 2: 'H = 2 scores 14.61 worse' became {fresh!r}"]

    def test_a_monte_carlo_cell_is_held_to_its_monte_carlo_error(self):
        old = _with_stdout("posterior 0.087 0.138 certified\ness 1993")
        near = _with_stdout("posterior 0.098 0.112 certified\ness 2210")
        far = _with_stdout("posterior 0.087 0.190 certified\ness 1993")
        assert script.differences(old, near) != []  # untagged: the 2e-3 rule
        old.cells[0].metadata["tags"] = ["monte-carlo"]
        assert script.differences(old, near) == []
        # the message names the line whose number moved, not the first line that changed
        far_ess = _with_stdout("posterior 0.088 0.138 certified\ness 2400")
        assert script.differences(old, far_ess) == ["cell 1: 'ess 1993' became 'ess 2400'"]
        assert script.differences(old, far) == [
            "cell 1: 'posterior 0.087 0.138 certified' became 'posterior 0.087 0.190 certified'"]
        assert script.differences(old, _with_stdout("posterior 0.087 0.138 refuted\ness 1993")) != []

    def test_a_words_only_cell_is_held_to_its_words(self):
        old = _with_stdout("r_hat > 1.01 for logit_mean_first (2.325)\nbulk ESS 3")
        old.cells[0].metadata["tags"] = ["words-only"]
        assert script.differences(old, _with_stdout(
            "r_hat > 1.01 for logit_mean_first (1.7)\nbulk ESS 11")) == []
        for fresh in ("r_hat > 1.01 for log_concentration (2.325)\nbulk ESS 3",
                      "r_hat > 1.01 for logit_mean_first (2.325)\nbulk ESS NaN",
                      "r_hat > 1.01 for logit_mean_first (2.325)"):
            assert script.differences(old, _with_stdout(fresh)) != []

    def test_tables_figures_and_stderr(self):
        old, new = _with_stdout("a"), _with_stdout("a")
        old.cells[0].outputs.append(nbformat.v4.new_output(
            "execute_result", data={"text/plain": "   bic\n0  21.4", "image/png": "AAA"},
            execution_count=1))
        new.cells[0].outputs.append(nbformat.v4.new_output(
            "execute_result", data={"text/plain": "   bic\n0   NaN", "image/png": "BBB"},
            execution_count=1))
        new.cells[0].outputs.append(nbformat.v4.new_output("stream", name="stderr",
                                                           text="a warning"))
        assert script.differences(old, new) == ["cell 1: '0  21.4' became '0   NaN'"]


# every notebook runs in CI's slow lane (the longest take 40-80 s), and its committed
# outputs must still be what a fresh run prints: the docs show the committed ones
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_says_what_is_committed(path, kernel_dirs):
    nb = nbformat.read(path, as_version=4)
    execute(nb, kernel_dirs, path.parent)
    n_code = sum(cell.cell_type == "code" for cell in nb.cells)
    assert n_code > 0
    assert all(cell.execution_count is not None
               for cell in nb.cells if cell.cell_type == "code" and cell.source.strip())
    stale = script.differences(nbformat.read(path, as_version=4), nb)
    assert not stale, (f"{path.name}: committed outputs differ from a fresh run (run `python "
                       f"notebooks/execute.py {path.name}`):\n" + "\n".join(stale))
