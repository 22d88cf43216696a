"""Sphinx configuration of sphgpu's guide, notebooks and API reference (``make docs``: HTML in
build/docs/html).

The API page is generated from the package at each build (docs/make_api.py writes
docs/api.rst, ignored by git) and built from the docstrings (numpydoc format, checked by
tests/test_docstrings.py) and the notebooks are executed on the CPU (myst-nb), without a GPU or
a network: importing sphgpu touches no GPU, and nothing is fetched.
"""

import importlib.util
import os
import pathlib
import re
import shutil
import sys

sys.path.insert(0, os.path.abspath(".."))   # the checkout, when sphgpu is not installed

import sphgpu  # noqa: E402

project = "sphgpu"
author = "the sphgpu developers"
release = version = sphgpu.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.mathjax", "numpydoc", "myst_nb"]

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "notes/README.md"]

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
API_GENERATOR = pathlib.Path(__file__).resolve().parent / "make_api.py"


def write_api_page(target):
    """Write the API reference page to ``target`` from the package (docs/make_api.py), so that
    no list of modules is kept by hand. Returns True when the file changed."""
    spec = importlib.util.spec_from_file_location("sphgpu_docs_make_api", API_GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_page(target)


def copy_notebooks(source, target):
    """Mirror the tracked notebooks (kept without outputs) into the source tree as pages.

    Copies, not a symlink: Sphinx resolves a link's target through the symlink, out of the
    source tree, and the notebooks' links to each other would not resolve. The modification
    time is kept so that an incremental build re-executes only the notebooks that changed;
    a copy whose notebook is gone is removed. Returns the copies' names.
    """
    target.mkdir(exist_ok=True)
    names = {p.name for p in source.glob("*.ipynb")}
    for stale in target.glob("*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    for name in sorted(names):
        src, dst = source / name, target / name
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copy2(src, dst)
    return sorted(names)


nb_execution_mode = "force"
nb_execution_in_temp = True              # what a notebook writes lands outside the checkout
# seconds a cell: every cell takes seconds at the defaults; a hung kernel (a Dask cluster that
# does not start) fails the build instead of using up CI's time
nb_execution_timeout = 300
nb_execution_raise_on_error = True       # a notebook that fails fails the build
nb_execution_show_tb = True              # and the log says where
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]   # the notebooks' $...$ and $$...$$ as math

html_theme = "alabaster"
html_static_path = []
html_title = f"sphgpu {release}"

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"            # the numpydoc sections say the types
# numpydoc's per-class method tables need autosummary stubs; the methods are documented inline
numpydoc_show_class_members = False
# types in the Parameters sections are prose ("array, shape (k, npix), float64"), not links
numpydoc_xref_param_type = False

# Packages whose docstrings are being rewritten in numpydoc form on other branches (issue 19),
# as PENDING in tests/test_docstrings.py: their pages show each docstring verbatim, so the
# build (-W) does not depend on their markup. Empty this once those branches are merged.
PENDING: tuple = ()
_verbatim = {}


def _pending(name, obj):
    home = getattr(obj, "__module__", None)
    home = home if isinstance(home, str) else name
    return any(home == p or home.startswith(p + ".") for p in PENDING)


def _keep_original(app, what, name, obj, options, lines):
    if _pending(name, obj):
        _verbatim[name] = list(lines)


def _show_verbatim(app, what, name, obj, options, lines):
    if name in _verbatim:
        lines[:] = ["::", ""] + ["    " + line for line in _verbatim.pop(name)] + [""]


_ABS = re.compile(r"(?<![`\\|])\|(?=[^\s|`])([^|`\n]*?[^\s|`])\|(?![`|])")


def _absolute_values(app, what, name, obj, options, lines):
    """Docstrings write absolute values as |x| in prose; reST would read a substitution."""
    lines[:] = [_ABS.sub(r"\\|\1\\|", line) for line in lines]


def setup(app):
    # before Sphinx looks for source files
    copy_notebooks(NOTEBOOKS, pathlib.Path(app.srcdir) / "notebooks")
    # The notebooks run on the CPU as a Binder user runs them (their defaults are
    # Binder-sized); the kernels inherit this environment. `make docs` sets the same; this
    # covers a bare `sphinx-build`.
    os.environ.setdefault("SPHGPU_BACKEND", "cpu")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # before Sphinx looks for source files, and after the environment above (the generator
    # imports every module it documents)
    write_api_page(pathlib.Path(app.srcdir) / "api.rst")
    app.connect("autodoc-process-docstring", _absolute_values, priority=400)
    # numpydoc rewrites docstrings at the default priority (500): keep the text before it and
    # put it back after it
    app.connect("autodoc-process-docstring", _keep_original, priority=100)
    app.connect("autodoc-process-docstring", _show_verbatim, priority=900)
