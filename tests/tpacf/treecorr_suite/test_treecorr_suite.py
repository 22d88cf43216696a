"""TreeCorr's own NN tests on the sphere, run with TreeCorr's exact counts made by sphgpu.

Decision (how TreeCorr's tests run against sphgpu)
-------------------------------------------------
TreeCorr's tests call TreeCorr's classes, not functions of sphgpu's names, so (unlike the
healpy suite) nothing can be swapped by name. Instead, TreeCorr's test file runs in a
subprocess with a pytest plugin (:mod:`tests.tpacf.treecorr_suite.sphgpu_as_treecorr`) that
wraps ``NNCorrelation.process_auto``/``process_cross``: wherever TreeCorr counts exactly on
the sphere (``brute=True`` or ``bin_slop=0``, ra/dec catalogs, metric "Euclidean" or "Arc"),
the counts it accumulates (``npairs``, ``weight``, and for "Arc" ``meanr``/``meanlogr``) are
replaced by those of :func:`sphgpu.tpacf.pair_counts`, and TreeCorr's assertions (against its
own brute-force loops, its bin_slop > 0 counts, and its recorded RR statistics) then check
sphgpu's counts. Selected: the tests of ``test_nn.py`` that count on the sphere exactly
(:data:`TESTS`); the others are flat or 3-d, or use bin_slop > 0 only (nothing of sphgpu's
would run). The plugin reports how many counts sphgpu made, and each test must make some.

Mechanism: a session fixture brings TreeCorr's source package of the installed version with
pip's ordinary client (``pip download --no-deps --no-binary treecorr treecorr==<version>``:
only TreeCorr's own sdist; ``--no-binary :all:`` would build its build dependencies, NumPy
included, from source) into a cache folder (``$SPHGPU_TEST_CACHE`` or
``~/.cache/sphgpu-tests``) and unpacks its ``tests/`` folder there once. Nothing of TreeCorr's
enters this repository. Offline, the tests skip, saying so. TreeCorr's tests need ``coord``
(LSSTDESC.Coord); without it they skip too.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from tests.peer_sources import peer_tests

HERE = pathlib.Path(__file__).parent
#: TreeCorr's tests of exact counts on the sphere in test_nn.py
TESTS = ("test_direct_spherical", "test_direct_arc", "test_linear_binslop", "test_rr_linear")


def _version():
    treecorr = pytest.importorskip("treecorr")
    return treecorr.__version__


@pytest.fixture(scope="session")
def treecorr_tests() -> pathlib.Path:
    version = _version()
    pytest.importorskip("coord", reason="TreeCorr's tests need LSSTDESC.Coord")
    return peer_tests(f"treecorr=={version}", "tests", "test_nn.py")


@pytest.mark.parametrize("name", TESTS)
def test_treecorr_nn_suite_passes_on_sphgpu(treecorr_tests, name):
    env = dict(os.environ, SPHGPU_BACKEND="cpu",
               PYTHONPATH=os.pathsep.join(filter(None, [str(HERE),
                                                        os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "pytest", "-p", "sphgpu_as_treecorr", "-p",
           "no:cacheprovider", "-p", "no:xdist", "-q", "-rfEX", "--no-header", "-W", "ignore",
           f"test_nn.py::{name}"]
    done = subprocess.run(cmd, cwd=treecorr_tests, env=env, capture_output=True, text=True,
                          timeout=600)
    log = (f"TreeCorr's test_nn.py::{name} on sphgpu:\n{done.stdout[-6000:]}\n"
           f"{done.stderr[-2000:]}")
    assert done.returncode == 0, log
    used = re.search(r"sphgpu counts used: (\d+)", done.stdout)
    assert used and int(used.group(1)) > 0, log
