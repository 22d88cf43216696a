"""The documentation as a reference: generated parts current, guide examples that run, internal
links that resolve, a README within its limits, and notebooks run the way `make lab` runs them
leaving the tracked files as they are."""

import importlib.util
import pathlib
import re
import shutil
import subprocess
import textwrap
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GUIDE = sorted((DOCS / "guide").glob("*.rst"))


def _generator():
    spec = importlib.util.spec_from_file_location("make_performance",
                                                  DOCS / "make_performance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_performance_page_status_table_and_panel_data_are_generated_from_the_results():
    pytest.importorskip("ipywidgets")               # the panel's reading of the files
    stale = _generator().stale()
    assert not stale, f"run `python docs/make_performance.py`: {stale}"


def test_every_results_file_the_panel_reads_is_shipped_and_nothing_else():
    pytest.importorskip("ipywidgets")
    shipped = {p.name for p in (ROOT / "data" / "benchmarks").glob("*.json")}
    assert shipped and shipped == set(_generator().panel_files())


def _python_blocks(path):
    text = path.read_text()
    return [textwrap.dedent(m.group(1)) for m in
            re.finditer(r"^\.\. code-block:: python\n\n((?:   .*\n|[ \t]*\n)+)", text, re.M)]


@pytest.mark.parametrize("page", [p for p in GUIDE if _python_blocks(p)], ids=lambda p: p.stem)
def test_guide_examples_run_on_the_cpu(page, monkeypatch, tmp_path):
    monkeypatch.setenv("SPHGPU_BACKEND", "cpu")
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))     # measured cost models, tuning
    namespace = {"__name__": f"guide_{page.stem}"}
    for i, block in enumerate(_python_blocks(page)):
        exec(compile(block, f"{page.name}, block {i + 1}", "exec"), namespace)


def _slug(title):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _rst_anchors(path):
    lines = path.read_text().splitlines()
    return {_slug(a) for a, b in zip(lines, lines[1:])
            if a.strip() and b and set(b) <= set("=-^~") and len(b) >= len(a.strip())}


MARKDOWN = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "CHANGELOG.md"]


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_of_markdown_files_resolve(doc):
    if not doc.is_file():
        pytest.skip(f"{doc.name} is absent")
    text = doc.read_text()
    targets = (re.findall(r"\]\(([^)\s]+)\)", text)                  # [text](target)
               + re.findall(r"^\[[^\]]+\]:\s*(\S+)", text, re.M))      # [ref]: target
    for target in targets:
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        where = (doc.parent / path).resolve() if path else doc
        assert where.exists(), f"{doc.name} links to {target}, which does not exist"
        if anchor and where.suffix == ".rst":
            assert anchor in _rst_anchors(where), f"{doc.name}: no section #{anchor} in {path}"


def test_internal_references_of_the_docs_resolve():
    pages = {str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.rst")}
    # the notebooks are pages under docs/notebooks/ (docs/conf.py copies them there)
    pages |= {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    pages.add("api")           # written at each build (docs/make_api.py), ignored by git
    for page in DOCS.rglob("*.rst"):
        text = page.read_text()
        here = page.parent
        for ref in re.findall(r":doc:`(?:[^`<]*<)?([^`>]+)>?`", text):
            name = ref[1:] if ref.startswith("/") else str(
                (here / ref).resolve().relative_to(DOCS.resolve()))
            assert name in pages, f"{page.name}: :doc: {ref} has no page"
        for ref in re.findall(r":download:`[^`<]*<([^`>]+)>`", text):
            assert (here / ref).is_file(), f"{page.name}: download {ref} missing"
        for ref in re.findall(r"^\.\. (?:image|figure):: (\S+)", text, re.M):
            assert (here / ref).is_file(), f"{page.name}: image {ref} missing"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _api_generator():
    return _load("sphgpu_docs_make_api", DOCS / "make_api.py")


def _automodules(text):
    """{module: its automodule options as text} of an API page."""
    return dict(re.findall(r"^\.\. automodule:: (\S+)\n((?:   :.*\n)*)", text, re.M))


def test_the_api_reference_documents_every_package():
    pytest.importorskip("setuptools")
    make_api = _api_generator()
    # what setuptools installs (setup.py's discovery), its public packages
    installed = [p for p in _load("sphgpu_setup", ROOT / "setup.py").packages()
                 if make_api.is_public(p)]
    documented = _automodules(make_api.page())
    missing = sorted(set(installed) - set(documented))
    assert installed and not missing, f"the API page has no automodule for {missing}"
    assert make_api.packages() == sorted(installed)      # the two discoveries agree
    # the modules documented besides the packages, by the rule (none listed in make_api.py)
    assert {"sphgpu.backends", "sphgpu.testing", "sphgpu.sort.pic", "sphgpu.tpacf.mocks",
            "sphgpu.sims.random", "sphgpu.distributed.partition", "sphgpu.io.fitsfile"} \
        <= set(documented)
    assert "sphgpu.geometry" not in documented and "sphgpu.warmup" not in documented


def test_the_api_reference_documents_each_name_sphgpu_re_exports_once():
    import sphgpu

    documented = _automodules(_api_generator().page())
    assert ":exclude-members:" not in documented["sphgpu"]
    for name, options in documented.items():
        module = importlib.import_module(name)
        if name == "sphgpu":
            continue
        twice = [n for n in getattr(module, "__all__", ()) if n in sphgpu.__all__
                 and getattr(module, n) is getattr(sphgpu, n)]
        excluded = re.search(r":exclude-members: (.*)", options)
        excluded = excluded.group(1).split(", ") if excluded else []
        if twice and ":members:" not in options:
            continue                       # all its names are sphgpu's: the docstring alone
        assert excluded == twice, name
    assert ":members:" not in documented["sphgpu.sht"]     # sphgpu re-exports all of it


def test_the_api_page_is_written_only_when_it_changes(tmp_path):
    make_api = _api_generator()
    page = tmp_path / "api.rst"
    assert make_api.write_page(page) and not make_api.write_page(page)
    assert page.read_text() == make_api.page()


def test_a_new_capability_is_installed_and_documented_without_editing_a_list(tmp_path,
                                                                              monkeypatch):
    pytest.importorskip("setuptools")
    import sys

    import sphgpu

    # setuptools: a checkout's layout with one more capability folder
    layout = tmp_path / "checkout"
    for folder in ("sphgpu", "sphgpu/newcap", "widgets", "data"):
        (layout / folder).mkdir(parents=True)
        (layout / folder / "__init__.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", layout)
    assert "sphgpu.newcap" in _load("sphgpu_setup", ROOT / "setup.py").packages(layout)

    # the API page: the same folder, seen as part of the imported package
    extra = tmp_path / "extra" / "newcap"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text('"""A capability made by the test."""\n\n'
                                       "from . import steps\n\n"
                                       '__all__ = ["twice", "steps"]\n\n\n'
                                       "def twice(x):\n    return 2 * x\n")
    (extra / "steps.py").write_text('"""Its steps."""\n')
    monkeypatch.setattr(sphgpu, "__path__", [*sphgpu.__path__, str(extra.parent)])
    try:
        documented = _automodules(_api_generator().page())
    finally:
        for name in [m for m in sys.modules if m.startswith("sphgpu.newcap")]:
            del sys.modules[name]
    assert documented["sphgpu.newcap"].strip() == ":members:"
    assert "sphgpu.newcap.steps" in documented


def test_readme_is_a_reference_for_users():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines (at most 250)"
    long = [i + 1 for i, line in enumerate(lines) if len(line) > 200]
    assert not long, f"README.md lines over 200 characters: {long}"
    dated = [i + 1 for i, line in enumerate(lines) if re.search(r"\b20\d\d-\d\d-\d\d\b", line)]
    assert not dated, f"README.md lines with a date (history belongs in git): {dated}"


def test_the_benchmarks_readme_names_every_script():
    folder = ROOT / "benchmarks"
    text = (folder / "README.md").read_text()
    scripts = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*.py"))]
    # a script is named by its path under benchmarks/ (a probe as probes/name.py)
    unnamed = [s for s in scripts if not re.search(rf"(?<![\w/]){re.escape(s)}\b", text)]
    assert scripts and not unnamed, f"benchmarks/README.md does not name {unnamed}"


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _git_status():
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def _new_files(before, since):
    """Untracked files not in the status `before` and written after `since`: what a notebook
    left in the checkout. (Tracked files other than the notebooks are not watched: a notebook
    writes results, figures or catalogs, and other work in a shared checkout edits sources
    meanwhile; the time keeps out files someone else was writing.)"""
    old = set(before.splitlines())
    paths = [line[3:] for line in _git_status().splitlines()
             if line.startswith("?? ") and line not in old]
    return [p for p in paths if (ROOT / p).exists() and (ROOT / p).stat().st_mtime >= since]


@pytest.fixture(scope="module")
def lab_copies(tmp_path_factory):
    """`make lab`'s copies of the notebooks, in a LAB_DIR of the test's own, and the checkout's
    status before any of them ran."""
    make, git = shutil.which("make"), shutil.which("git")
    if not make or not git or not (ROOT / ".git").exists():
        pytest.skip("needs make and a git checkout")
    lab_dir = tmp_path_factory.mktemp("lab")
    dry = subprocess.run([make, "-n", "lab", f"LAB_DIR={lab_dir}"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert f"--notebook-dir={lab_dir}" in dry, dry
    before = _git_status()
    subprocess.run([make, "lab-notebooks", f"LAB_DIR={lab_dir}"], cwd=ROOT, check=True,
                   capture_output=True)
    assert sorted(p.name for p in lab_dir.glob("*.ipynb")) == [p.name for p in NOTEBOOKS]
    return lab_dir, before


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS])
def test_notebooks_run_as_make_lab_runs_them_leave_the_checkout_clean(name, lab_copies,
                                                                      monkeypatch):
    """Each notebook runs in its copy (in the copy's folder, as JupyterLab runs it) and is saved
    with its outputs; the tracked notebooks stay without outputs, and no file appears in the
    checkout."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    lab_dir, before = lab_copies
    monkeypatch.setenv("SPHGPU_BACKEND", "cpu")
    start = time.time() - 1                        # file times have a coarse resolution
    path = lab_dir / name
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(lab_dir)}}).execute()
    nbformat.write(nb, path)
    assert any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    # the tracked notebooks keep no outputs (not compared with git status or their bytes
    # before: other work in the checkout may commit or edit them meanwhile)
    for tracked in (ROOT / "notebooks").glob("*.ipynb"):
        cells = nbformat.read(tracked, as_version=4).cells
        assert not any(c.get("outputs") or c.get("execution_count") for c in cells
                       if c.cell_type == "code"), f"{tracked.name} has outputs after the run"
    new = _new_files(before, start)
    assert not new, f"{name} wrote {new} in the checkout"
