"""Every notebook runs top to bottom on the CPU (each ends with its own accuracy check).

Where Chromium and Playwright are installed, tests/browser runs every notebook in JupyterLab
(all cells, failing on any error output) and drives its panels: running them here as well
would double the longest part of the suite, so this headless run is for machines without a
browser.
"""

import pathlib

import pytest

from tests.browser.test_lab_browser import missing_browser

NOTEBOOKS = sorted((pathlib.Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    if not missing_browser():
        pytest.skip("tests/browser runs this notebook in JupyterLab")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("SPHGPU_BACKEND", "cpu")        # Binder has no GPU: the notebooks' default
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    assert any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    errors = [o for cell in nb.cells for o in cell.get("outputs", [])
              if o.get("output_type") == "error" or o.get("name") == "stderr"
              and "Traceback" in o.get("text", "")]
    assert not errors, errors
