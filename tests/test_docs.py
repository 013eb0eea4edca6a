"""The documentation site: built by Sphinx with warnings as errors, a page for every public name.

A broken cross-reference, a docstring numpydoc rejects or a notebook that does
not render fails here. About half a minute: with the slow studies.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    for name in ("sphinx", "numpydoc", "myst_nb", "pydata_sphinx_theme"):
        pytest.importorskip(name)
    out = tmp_path_factory.mktemp("docs") / "html"
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def conf():
    spec = importlib.util.spec_from_file_location("passmix_docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_page(built):
    config = conf()
    missing = []
    for namespace in config.public_namespaces() + config.EXTRA_MODULES:
        for name in importlib.import_module(namespace).__all__:
            full = f"{namespace}.{name}"
            target = config.shadowed.get(full, full)
            page = built / "api" / "generated" / f"{target}.html"
            text = page.read_text(encoding="utf-8") if page.exists() else ""
            if full not in config.aliases and f'id="{target}"' not in text \
                    and f'id="module-{target}"' not in text:
                missing.append(full)
    assert missing == []
    assert len(list((built / "api" / "generated").glob("*.html"))) > 200


def test_guides_notebooks_and_results_are_pages(built):
    for page in ("getting_started", "formulas", "guides/inspect", "guides/many_systems",
                 "_notebooks/compare", "results/compare/report"):
        assert (built / f"{page}.html").exists(), page
    # the notebooks render their committed outputs (figures), not re-executed
    assert "<img" in (built / "_notebooks" / "compare.html").read_text(encoding="utf-8")
