"""Execute the notebooks in this folder and save them with their outputs.

Run:  python notebooks/execute.py [NAME.ipynb ...]
      python notebooks/execute.py --check [NAME.ipynb ...]   (run, compare, write nothing)

Every notebook (or those named) runs top to bottom in a fresh kernel that is
this interpreter, in this folder, and is written back with its outputs
(tables and figures), so that GitHub and nbviewer show them. A cell that
raises stops the script and leaves the notebook unchanged. The tests
(``tests/test_notebooks.py``) use :func:`execute` too, and :func:`differences`
to fail when a committed output no longer says what a fresh run says.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from itertools import zip_longest
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


#: a number as printed: sign, digits, decimals, exponent (NaN and inf are words)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: a ``monte-carlo`` cell's tolerance (relative, absolute): about four Monte Carlo standard
#: errors of the notebooks' posterior summaries (1,000-4,000 draws; the 2.5% quantile of a
#: metric far beyond the trials is the loosest, about a tenth of its posterior sd each run)
MONTE_CARLO = (0.15, 0.04)
#: a cell whose numbers are chaotic by design (a sampler shown failing): its words are held
WORDS_ONLY = "words-only"
#: what differs between runs without saying anything: object addresses
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def cell_text(cell) -> str:
    """A code cell's text outputs: printed (stdout) and shown (``text/plain``), in order.
    Figures, HTML twins of a table and stderr (warnings, progress bars) are left out."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            parts.append(out.get("text", ""))
        elif "text/plain" in out.get("data", {}):
            text = out["data"]["text/plain"]
            parts.append(text if isinstance(text, str) else "".join(text))
    return _ADDRESS.sub("0x", "\n".join(parts))


def differences(committed, fresh, *, rel: float = 2e-3, abs_: float = 1e-4) -> list[str]:
    """Where `fresh` (a new run) says something else than `committed`, one line per cell.

    The words must be the same (whitespace aside), and each number within `rel` of the
    committed one or `abs_` of it: a NaN where a number stood, a changed count or a
    moved interval is a difference; the last digit of an optimum is not.

    Posterior draws are reproducible from a seed only on one machine with one set of
    releases: NUTS amplifies the last bit of its starting point, and a new PyMC, PyTensor
    or NumPy moves it (CI resolves the releases of the day). So a cell tagged
    ``monte-carlo`` is held to its Monte Carlo error instead, `MONTE_CARLO` (relative,
    absolute), and a cell tagged ``words-only`` (a sampler shown failing, whose r-hat and
    effective sizes are chaotic) to its words and the count of its numbers.

    Examples
    --------
    >>> import nbformat
    >>> def nb(text):
    ...     cell = nbformat.v4.new_code_cell("x")
    ...     cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    ...     return nbformat.v4.new_notebook(cells=[cell])
    >>> differences(nb("BIC 14.61 worse"), nb("BIC 14.6100001 worse"))
    []
    >>> differences(nb("BIC 14.61 worse"), nb("BIC NaN worse"))
    ["cell 1: 'BIC 14.61 worse' became 'BIC NaN worse'"]
    """
    found = []
    code = [(i, c) for i, c in enumerate(committed.cells, 1) if c.cell_type == "code"]
    new = [c for c in fresh.cells if c.cell_type == "code"]
    if len(code) != len(new):
        return [f"{len(code)} code cells committed, {len(new)} run"]
    for (i, old), cell in zip(code, new):
        a, b = cell_text(old), cell_text(cell)
        tags = old.metadata.get("tags", [])
        r, t = MONTE_CARLO if "monte-carlo" in tags else (rel, abs_)
        if WORDS_ONLY in tags:
            r, t = 0.0, math.inf
        if not _same(a, b, r, t):
            found.append(f"cell {i}: {_first_change(a, b, r, t)}")
    return found


def _same(a: str, b: str, rel: float, abs_: float) -> bool:
    """The same words (whitespace aside) and numbers within tolerance, in order."""
    words_a, words_b = _NUMBER.split(a), _NUMBER.split(b)
    nums_a = [float(x) for x in _NUMBER.findall(a)]
    nums_b = [float(x) for x in _NUMBER.findall(b)]
    return ([" ".join(w.split()) for w in words_a] == [" ".join(w.split()) for w in words_b]
            and len(nums_a) == len(nums_b)
            and all(abs(x - y) <= max(abs_, rel * abs(x)) for x, y in zip(nums_a, nums_b)))


def _first_change(a: str, b: str, rel: float, abs_: float) -> str:
    """The first line that differs beyond the tolerance, committed then fresh, for the
    message (the whole text when the lines do not pair up)."""
    for x, y in zip_longest(a.splitlines(), b.splitlines(), fillvalue=""):
        if not _same(x, y, rel, abs_):
            return f"{x.strip()[:160]!r} became {y.strip()[:160]!r}"
    return f"{a.strip()[:160]!r} became {b.strip()[:160]!r}"


def main() -> None:
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all here)")
    parser.add_argument("--check", action="store_true",
                        help="compare each fresh run with the committed outputs; write nothing")
    args = parser.parse_args()
    paths = [HERE / n for n in args.names] if args.names else sorted(HERE.glob("*.ipynb"))
    stale = 0
    with tempfile.TemporaryDirectory() as tmp:
        dirs = kernel_dirs(Path(tmp))
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            execute(nb, dirs, path.parent)
            if args.check:
                found = differences(nbformat.read(path, as_version=4), nb)
                stale += bool(found)
                print(f"{path.name}: " + ("as committed" if not found else
                                         "differs\n  " + "\n  ".join(found)))
                continue
            # the kernelspec's display name is this machine's detail, not the notebook's
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                         "language": "python"}
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"executed {path.name}")
    sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
