"""sphgpu.master's public docstrings by the rules of tests/test_docstrings.py (whose package
list is edited elsewhere; this runs the same checker on this package meanwhile)."""

import pytest

pytest.importorskip("numpydoc.docscrape")

from tests.test_docstrings import _public, problems  # noqa: E402


def test_master_docstrings_follow_numpydoc():
    found = [p for q, obj, kind in _public("sphgpu.master") for p in problems(q, obj, kind)]
    assert not found, f"{len(found)} docstring problems:\n" + "\n".join(found)
