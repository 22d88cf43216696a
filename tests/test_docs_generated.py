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


def test_the_api_reference_documents_every_package():
    import tomllib

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]
    documented = set(re.findall(r"^\.\. automodule:: (\S+)", (DOCS / "api.rst").read_text(),
                                re.M))
    missing = sorted(set(packages) - documented)
    assert packages and not missing, f"docs/api.rst has no automodule for {missing}"


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
