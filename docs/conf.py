"""Sphinx configuration of sphgpu's API reference (``make docs``: HTML in build/docs/html).

The pages are built from the docstrings (numpydoc format, checked by tests/test_docstrings.py)
without a GPU or a network: importing sphgpu touches no GPU, and nothing is fetched.
"""

import os
import re
import sys

sys.path.insert(0, os.path.abspath(".."))   # the checkout, when sphgpu is not installed

import sphgpu  # noqa: E402

project = "sphgpu"
author = "the sphgpu developers"
release = version = sphgpu.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.mathjax", "numpydoc"]

root_doc = "index"
exclude_patterns = ["_build", "notes/README.md"]
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
    app.connect("autodoc-process-docstring", _absolute_values, priority=400)
    # numpydoc rewrites docstrings at the default priority (500): keep the text before it and
    # put it back after it
    app.connect("autodoc-process-docstring", _keep_original, priority=100)
    app.connect("autodoc-process-docstring", _show_verbatim, priority=900)
