"""Shared fixtures, the test markers, and where CUDA kernels run.

CUDA kernels run through Numba's simulator unless the run asks for the real GPU: with
``SPHGPU_TEST_REAL_GPU=1``, or with a ``-m`` expression that selects the tests marked ``gpu``
(``pytest -m gpu`` on the GPU machine runs exactly those). Tests marked ``gpu`` skip wherever
no real GPU runs them. "backend='auto'" calls resolve to the CPU during tests so the simulator
is used only where a test asks for backend="cuda".

Helpers and the table of tolerances live in :mod:`sphgpu.testing`. This file imports no sphgpu
module at import time: numba reads NUMBA_ENABLE_CUDASIM once, when first imported, and that is
decided in ``pytest_configure`` from the command line.
"""

import os

os.environ.setdefault("SPHGPU_BACKEND", "cpu")
# Numba's OpenMP threads busy-wait by default; with pytest-xdist workers sharing two cores that
# turns millisecond calls into tens of milliseconds.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Likewise one BLAS thread per test worker: two workers on two cores, each with a spinning
# OpenBLAS pool, inflated the panels' measured interaction times past their 1 s budget.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402


def real_gpu_requested(markexpr):
    """Whether this run uses the real GPU: ``SPHGPU_TEST_REAL_GPU=1`` (``=0`` forces the
    simulator), else whether ``markexpr`` (``-m``) selects a test marked ``gpu`` alone and
    not an unmarked one (``-m gpu``, ``-m "gpu and not slow"``)."""
    env = os.environ.get("SPHGPU_TEST_REAL_GPU")
    if env in ("0", "1"):
        return env == "1"
    if not markexpr.strip():
        return False
    from _pytest.mark.expression import Expression  # pytest's own parser of -m

    expr = Expression.compile(markexpr)
    return bool(expr.evaluate(lambda name, **kw: name == "gpu")
                and not expr.evaluate(lambda name, **kw: False))


def pytest_configure(config):
    if not real_gpu_requested(config.getoption("markexpr") or ""):
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"      # before numba is first imported


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    from sphgpu.testing import real_gpu

    ok, why = real_gpu()
    if not ok:
        skip = pytest.mark.skip(reason=f"needs a real GPU: {why}")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture
def rng():
    """A fresh, seeded generator per test: inputs are random but reproducible."""
    from sphgpu.testing import default_rng

    return default_rng()
