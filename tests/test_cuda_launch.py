"""sphgpu._cuda_launch: Numba's grid under-utilization warning hidden inside sphgpu's own
launches only, and kernel caches refreshed when a device-function file changes."""

import os
import threading
import warnings

import numpy as np
import pytest

from sphgpu import _cuda_launch
from sphgpu.backends import cuda_available
from sphgpu._cuda_launch import quiet, refresh_kernel_cache
from sphgpu.testing import using_simulator

CATEGORIES = _cuda_launch._categories()


def _numba_warns(grid=4):
    """What Numba does when a launch has fewer than 128 blocks (a real GPU only)."""
    for cls in CATEGORIES:
        warnings.warn(cls(f"Grid size {grid} will likely result in GPU under-utilization due to "
                          f"low occupancy."))


def test_quiet_hides_only_the_under_utilization_warning():
    assert CATEGORIES, "Numba's NumbaPerformanceWarning was not found"
    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet():
            _numba_warns()
            warnings.warn(CATEGORIES[0]("\x1b[1mGrid size 3 will likely result in GPU "
                                        "under-utilization due to low occupancy.\x1b[0m"))
            warnings.warn(CATEGORIES[0]("Host array used in CUDA kernel will incur copy "
                                        "overhead"))
        _numba_warns()                     # the user's own launch, outside sphgpu
    messages = [str(w.message) for w in seen]
    assert len(messages) == 1 + len(CATEGORIES)
    assert "copy overhead" in messages[0]
    assert all("Grid size 4" in m for m in messages[1:])
    assert warnings.filters == before


def test_quiet_from_overlapping_threads_leaves_no_filter():
    before = list(warnings.filters)
    inside = threading.Barrier(2)
    leave = threading.Event()
    errors = []

    def worker():
        try:
            with quiet():
                inside.wait(timeout=10)
                leave.wait(timeout=10)
        except Exception as e:       # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    with quiet():
        inside.wait(timeout=10)
    # the main thread left first: the worker is still inside, so the filter stays
    with warnings.catch_warnings(record=True) as seen:
        _numba_warns()
    assert seen == []
    leave.set()
    t.join(timeout=10)
    assert not errors and warnings.filters == before


@pytest.fixture
def numba_like_launches(monkeypatch):
    """Make the simulator's kernels warn at configuration as Numba does on a GPU (on the GPU
    machine, SPHGPU_TEST_REAL_GPU=1, Numba's own warnings are the test)."""
    if not using_simulator():
        return
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    original = FakeCUDAKernel.__getitem__

    def getitem(self, configuration):
        _numba_warns()
        return original(self, configuration)

    monkeypatch.setattr(FakeCUDAKernel, "__getitem__", getitem)


@pytest.mark.slow
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
def test_sht_and_convolve_launches_are_quiet(numba_like_launches, rng):
    from sphgpu import alm2map, map2alm
    from sphgpu.convolve import RadialKernel, convolve

    nside, lmax = 2, 3
    npix = 12 * nside ** 2
    m = rng.standard_normal(npix)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alm = map2alm(m, lmax, backend="cuda")
        alm2map(alm, nside, backend="cuda")
        iqu = np.stack([m, m[::-1], 2 * m])
        alm2map(map2alm(iqu, lmax, backend="cuda"), nside, backend="cuda")     # polarized
        convolve(m, RadialKernel.gaussian(1200.0, lmax), method="realspace", theta_cut=0.8,
                 backend="cuda")
    with pytest.warns(Warning, match="Grid size"):
        _numba_warns()


def test_refresh_kernel_cache(tmp_path):
    kernel, dep = tmp_path / "k.py", tmp_path / "d.py"
    kernel.write_text("k")
    dep.write_text("d")
    os.utime(kernel, (1000, 1000))
    os.utime(dep, (2000, 2000))
    refresh_kernel_cache(str(kernel), str(dep))
    assert os.stat(kernel).st_mtime == 2000
    os.utime(kernel, (3000, 3000))
    refresh_kernel_cache(str(kernel), str(dep))          # kernel file newer: left alone
    assert os.stat(kernel).st_mtime == 3000
    refresh_kernel_cache(str(kernel), str(tmp_path / "missing.py"))   # no error
    assert kernel.read_text() == "k"
