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


#: The notebooks whose last cell says how to free their kernel.
ENDS_WITH_SHUTDOWN = [p for p in NOTEBOOKS
                      if p.name[:2] in {"00", "01", "02", "03", "04", "05", "06", "07"}]


@pytest.mark.parametrize("path", ENDS_WITH_SHUTDOWN, ids=lambda p: p.name)
def test_notebook_ends_saying_how_to_free_its_kernel(path):
    """Kernels stay alive when a tab is left: seven of them passed Binder's 2 GB and nothing
    said to shut them down."""
    import json

    cells = json.loads(path.read_text())["cells"]
    last = "".join(cells[-1]["source"])
    assert cells[-1]["cell_type"] == "markdown" and "Kernel > Shut Down Kernel" in last
    # the accuracy check stays the last code cell (the browser test waits on its output)
    code = [c for c in cells if c["cell_type"] == "code"]
    assert "passed; notebook ran in" in "".join(code[-1]["source"])


def _fake_python(tmp_path):
    """A `python` (and `jupyter`) on PATH that records its arguments and environment."""
    import os

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "calls.log"
    for name in ("python", "jupyter"):
        f = bin_ / name
        f.write_text(f"#!/bin/sh\necho \"{name} $SPHGPU_BACKEND $*\" >> {log}\n")
        f.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}"), log


def test_binder_start_warms_the_caches_in_the_background_then_runs_the_server(tmp_path):
    import subprocess
    import time

    root = pathlib.Path(__file__).parents[1]
    env, log = _fake_python(tmp_path)
    done = tmp_path / "server-ran"
    run = subprocess.run([str(root / "binder" / "start"), "sh", "-c",
                          f"echo $SPHGPU_BACKEND > {done}"], env=env, timeout=30)
    assert run.returncode == 0 and done.read_text().strip() == "cpu"
    for _ in range(100):                      # the warm-up runs in the background
        if log.exists():
            break
        time.sleep(0.05)
    assert "python cpu -c import sphgpu; sphgpu.warmup(nside=32)" in log.read_text()


def test_binder_postbuild_compiles_by_running_every_notebook(tmp_path):
    import subprocess

    root = pathlib.Path(__file__).parents[1]
    env, log = _fake_python(tmp_path)
    run = subprocess.run([str(root / "binder" / "postBuild")], cwd=root, env=env, timeout=30)
    calls = log.read_text().splitlines()
    assert run.returncode == 0
    assert calls[0] == "python cpu -c import sphgpu; sphgpu.warmup(nside=32)"
    executed = [c for c in calls if c.startswith("jupyter cpu nbconvert --to notebook --execute")]
    assert sorted(c.split()[-1] for c in executed) == [f"notebooks/{p.name}" for p in NOTEBOOKS]
