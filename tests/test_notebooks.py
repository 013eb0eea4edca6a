"""Execute every notebook in notebooks/ top to bottom, and check none is committed with outputs.

The kernel is this interpreter (``sys.executable``), through a ``python3``
kernelspec written to a temporary directory: the tests then run the
notebooks against the passmix they are testing even when the virtualenv is
not on ``PATH`` (a kernelspec whose argv says ``python`` would otherwise be
resolved through ``PATH``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds per cell
KERNEL_NAME = "python3"


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory) -> list[str]:
    """A directory holding one kernelspec, ``python3``, that runs this interpreter."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL_NAME
    spec.mkdir()
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (passmix tests)",
        "language": "python",
        "metadata": {"debugger": False},
    }))
    return [str(root)]


def execute(nb, kernel_dirs: list[str], cwd: Path):
    """Run `nb` in place with nbclient; raises ``CellExecutionError`` on any cell error."""
    km = AsyncKernelManager(kernel_name=KERNEL_NAME,
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=kernel_dirs))
    client = nbclient.NotebookClient(
        nb, km=km, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT, startup_timeout=180,
        allow_errors=False, resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def stream_text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def test_notebooks_found():
    assert NOTEBOOK_DIR / "quickstart.ipynb" in NOTEBOOKS


def test_kernel_is_this_interpreter(kernel_dirs):
    """The helper runs cells with sys.executable, in the notebooks folder."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os, sys\nprint(sys.executable)\nprint(os.getcwd())"),
    ])
    env_path = os.environ.get("PATH", "")
    executable, cwd = stream_text(execute(nb, kernel_dirs, NOTEBOOK_DIR).cells[0]).split("\n")[:2]
    assert os.path.samefile(executable, sys.executable), (executable, sys.executable, env_path)
    assert os.path.samefile(cwd, NOTEBOOK_DIR)


def test_cell_error_fails(kernel_dirs):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="ZeroDivisionError"):
        execute(nb, kernel_dirs, NOTEBOOK_DIR)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, f"{path.name}: clear the outputs of code cells {dirty} before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, kernel_dirs):
    nb = nbformat.read(path, as_version=4)
    execute(nb, kernel_dirs, path.parent)
    n_code = sum(cell.cell_type == "code" for cell in nb.cells)
    assert n_code > 0
    assert all(cell.execution_count is not None
               for cell in nb.cells if cell.cell_type == "code" and cell.source.strip())
