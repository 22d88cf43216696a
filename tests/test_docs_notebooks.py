"""The notebooks as pages of the documentation: every one listed, copied fresh, executed by the
build with docs/conf.py's settings, a failing one failing the build, the tracked files left
without outputs. (`make docs` runs the real notebooks; these tests check the mechanism in
seconds.)"""

import fnmatch
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _conf():
    spec = importlib.util.spec_from_file_location("sphgpu_docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _toctree_entries(page):
    text = page.read_text()
    entries = []
    for block in re.finditer(r"^\.\. toctree::\n((?:[ \t]+.*\n|[ \t]*\n)+)", text, re.M):
        entries += [line.strip() for line in block.group(1).splitlines()
                    if line.strip() and not line.strip().startswith(":")]
    return entries


def test_the_notebooks_page_lists_every_notebook():
    entries = _toctree_entries(DOCS / "notebooks.rst")
    missing = [p.name for p in NOTEBOOKS
               if not any(fnmatch.fnmatch(f"notebooks/{p.stem}", e) for e in entries)]
    assert NOTEBOOKS and not missing, f"docs/notebooks.rst's toctree misses {missing}"


def test_copies_follow_the_tracked_notebooks(tmp_path):
    source, target = tmp_path / "notebooks", tmp_path / "docs" / "notebooks"
    source.mkdir()
    target.parent.mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb"):
        (source / name).write_text(json.dumps({"name": name}))
    copy = _conf().copy_notebooks
    assert copy(source, target) == ["00_a.ipynb", "01_b.ipynb"]
    old = time.time() - 3600                       # an hour-old copy, to see it is not rewritten
    os.utime(target / "00_a.ipynb", (old, old))
    (source / "01_b.ipynb").write_text(json.dumps({"name": "changed"}))
    (source / "02_c.ipynb").write_text("{}")
    (target / "99_gone.ipynb").write_text("{}")     # its notebook was deleted
    assert copy(source, target) == ["00_a.ipynb", "01_b.ipynb", "02_c.ipynb"]
    assert sorted(p.name for p in target.iterdir()) == ["00_a.ipynb", "01_b.ipynb", "02_c.ipynb"]
    for p in source.iterdir():
        assert (target / p.name).read_bytes() == p.read_bytes()
    assert (target / "00_a.ipynb").stat().st_mtime == pytest.approx(old)   # not re-executed


def _notebook(*sources):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page")]
                                  + [nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nbformat.writes(nb)


def _build(tmp_path, notebook):
    """Build a one-notebook site with docs/conf.py's notebook settings, as `make docs` runs."""
    pytest.importorskip("myst_nb")
    conf = _conf()
    settings = {k: getattr(conf, k) for k in dir(conf) if k.startswith(("nb_", "myst_"))}
    assert settings["nb_execution_mode"] in {"auto", "force", "cache"}, settings
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['myst_nb']\n"
        f"source_suffix = {conf.source_suffix!r}\n"
        + "".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    (src / "index.rst").write_text("Site\n====\n\n.. toctree::\n\n   page\n")
    (src / "page.ipynb").write_text(notebook)
    env = dict(os.environ, SPHGPU_BACKEND="cpu")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                          "html", str(src), str(tmp_path / "html")],
                         capture_output=True, text=True, env=env, timeout=300)
    return run, src / "page.ipynb"


def test_the_build_executes_a_notebook_without_saving_its_outputs(tmp_path):
    text = _notebook("import os\nprint('backend', os.environ['SPHGPU_BACKEND'], 6 * 7)")
    run, page = _build(tmp_path, text)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "backend cpu 42" in (tmp_path / "html" / "page.html").read_text()
    assert page.read_text() == text


def test_a_notebook_that_fails_fails_the_build(tmp_path):
    run, _ = _build(tmp_path, _notebook("x = 1", "raise RuntimeError('the check failed')"))
    assert run.returncode != 0
    assert "page.ipynb" in run.stdout + run.stderr           # the log names the notebook
