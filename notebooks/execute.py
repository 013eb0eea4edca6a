"""Execute the notebooks in this folder and save them with their outputs.

Run:  python notebooks/execute.py [NAME.ipynb ...]

Every notebook (or those named) runs top to bottom in a fresh kernel that is
this interpreter, in this folder, and is written back with its outputs
(tables and figures), so that GitHub and nbviewer show them. A cell that
raises stops the script and leaves the notebook unchanged. The tests
(``tests/test_notebooks.py``) use :func:`execute` too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNEL_NAME = "python3"
CELL_TIMEOUT = 900  # seconds per cell


def kernel_dirs(root: Path) -> list[str]:
    """Write a ``python3`` kernelspec running this interpreter under `root`.

    A kernelspec whose argv says ``python`` would be resolved through PATH,
    and could run another environment's passmix.
    """
    spec = root / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (passmix)",
        "language": "python",
        "metadata": {"debugger": False},
    }))
    return [str(root)]


def execute(nb, dirs: list[str], cwd: Path, timeout: int = CELL_TIMEOUT):
    """Run `nb` in place; raises ``nbclient.exceptions.CellExecutionError`` on a cell error."""
    import nbclient
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    km = AsyncKernelManager(kernel_name=KERNEL_NAME,
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=dirs))
    client = nbclient.NotebookClient(
        nb, km=km, kernel_name=KERNEL_NAME, timeout=timeout, startup_timeout=180,
        allow_errors=False, resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def main() -> None:
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all here)")
    args = parser.parse_args()
    paths = [HERE / n for n in args.names] if args.names else sorted(HERE.glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        dirs = kernel_dirs(Path(tmp))
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            execute(nb, dirs, path.parent)
            # the kernelspec's display name is this machine's detail, not the notebook's
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                         "language": "python"}
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"executed {path.name}")


if __name__ == "__main__":
    main()
