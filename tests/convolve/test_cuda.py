"""The CUDA real-space kernel: through Numba's simulator in CI (tiny maps), on the real GPU on
the GPU machine (`pytest -m gpu`), against the numba CPU path and brute force."""

import math

import numpy as np
import pytest

from sphgpu import RingGeometry
from sphgpu.backends import cuda_available
from sphgpu.convolve import RadialKernel, convolve, split_kernel
from sphgpu.convolve import _cpu as _realspace_cpu
from sphgpu.convolve import _cuda as _realspace_cuda
from sphgpu.convolve.realspace import ring_plan
from sphgpu.convolve.reference import brute_force

from sphgpu.testing import TOL, rel_err

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")


@pytest.mark.parametrize("nside, theta_cut, rowmax, fold", [
    (2, 0.8, 64, 4), (3, 1.3, 64, 4), (3, 0.6, 4, 4), (2, math.pi, 64, 4), (3, 0.6, 4, 1),
    (2, 1.1, 64, 1)])
def test_kernel_matches_cpu_and_brute_force(nside, theta_cut, rowmax, fold, rng):
    # rowmax 4 forces the per-pair path on every ring pair; 64 takes the shared row where the
    # ring lengths agree; fold 4 uses HEALPix's quarter-turn symmetry. Few threads per block
    # so the simulator stays quick.
    g = RingGeometry.healpix(nside)
    ck = RadialKernel.gaussian(1200.0, 3 * nside).tabulate(theta_cut)
    pl = ring_plan(g, ck.theta_cut)
    assert _realspace_cuda.fold_of(pl) == 4
    assert _realspace_cuda.simulator_launch_size(pl, 8, fold) < 10_000
    maps = rng.standard_normal((2, g.npix))
    got = _realspace_cuda.convolve(maps, pl, ck, tpb=8, rowmax=rowmax, fold=fold)
    assert isinstance(got, np.ndarray) and got.shape == maps.shape
    assert rel_err(got, _realspace_cpu.convolve(maps, pl, ck)) <= TOL["realspace_cuda_vs_cpu"]
    assert rel_err(got, brute_force(maps, g, ck)) <= TOL["realspace"]


def test_grids_without_the_quarter_turn_symmetry_fold_once(rng):
    g = RingGeometry.gauss_legendre(6)                  # 11 pixels per ring
    ck = RadialKernel.gaussian(1500.0, 5).tabulate(1.0)
    pl = ring_plan(g, ck.theta_cut)
    assert _realspace_cuda.fold_of(pl) == 1
    m = rng.standard_normal((1, g.npix))
    got = _realspace_cuda.convolve(m, pl, ck, tpb=8)
    assert rel_err(got, brute_force(m, g, ck)) <= TOL["realspace"]
    with pytest.raises(ValueError, match="fold must be 1, or 4"):
        _realspace_cuda.convolve(m, pl, ck, tpb=8, fold=4)


@pytest.mark.parametrize("fold", [1, 4])
def test_work_items_cover_every_pixel_once(fold):
    nphi = np.array([4, 8, 12, 16, 16, 12, 8, 4])
    ring, start = _realspace_cuda.work_items(nphi, 3, fold)
    covered = np.zeros(nphi.sum(), dtype=int)
    first = np.concatenate([[0], np.cumsum(nphi)[:-1]])
    for r, s in zip(ring, start):
        for t in range(3):
            p = s + t
            if p < nphi[r] // fold:
                for q in range(fold):
                    covered[first[r] + p + q * nphi[r] // fold] += 1
    assert np.all(covered == 1)


@pytest.mark.gpu
@pytest.mark.parametrize("nside, theta_cut", [(64, 0.05), (128, 0.1), (33, 0.3)])
def test_real_gpu_matches_cpu(nside, theta_cut, rng):
    g = RingGeometry.healpix(nside)
    ck = RadialKernel.gaussian(3000.0 / nside, 3 * nside).tabulate(theta_cut)
    pl = ring_plan(g, ck.theta_cut)
    maps = rng.standard_normal((3, g.npix))
    assert rel_err(_realspace_cuda.convolve(maps, pl, ck), _realspace_cpu.convolve(maps, pl, ck)) \
        <= TOL["realspace_cuda_vs_cpu"]


@pytest.mark.gpu
def test_real_gpu_device_arrays_and_concurrent_split(rng):
    cupy = pytest.importorskip("cupy")
    from numba import cuda
    nside, lmax = 64, 128
    k = RadialKernel.cmb(10.0 * 4096 / lmax, lmax)
    s = split_kernel(k, 40, 60 * math.pi / 180 / 60 * 4096 / lmax)
    m = rng.standard_normal(12 * nside * nside)
    want = convolve(m, s, backend="cpu")
    d = cupy.asarray(m)
    for hb in ("cuda", "cpu"):
        got = convolve(d, s, backend="cuda", harmonic_backend=hb)
        assert isinstance(got, cupy.ndarray)
        assert rel_err(got.get(), want) <= TOL["convolve_gpu_vs_cpu"]
    got = convolve(cuda.as_cuda_array(d), s, backend="cuda")        # Numba array in and out
    assert cuda.is_cuda_array(got) and not isinstance(got, cupy.ndarray)
    host = convolve(m, s, backend="cuda")
    assert isinstance(host, np.ndarray) and rel_err(host, want) <= TOL["convolve_gpu_vs_cpu"]
    whole = convolve(m, k, method="harmonic", backend="cuda")      # one copy each way
    assert isinstance(whole, np.ndarray)
    assert rel_err(whole, convolve(m, k, method="harmonic", backend="cpu")) \
        <= TOL["convolve_gpu_vs_cpu"]


def test_kernel_computes_a_latitude_band_from_its_halo(rng):
    # a band of HEALPix rings (RingPlan.band): only its output rings get work items, the
    # quarter-turn symmetry still holds, and the numbers equal the whole-sphere CPU plan's
    g = RingGeometry.healpix(3)
    ck = RadialKernel.gaussian(1200.0, 9).tabulate(0.7)
    pl = ring_plan(g, ck.theta_cut)
    maps = rng.standard_normal((2, g.npix))
    whole = _realspace_cpu.convolve(maps, pl, ck)
    own = slice(3, 7)
    band = pl.band(own, pl.halo(own))
    assert _realspace_cuda.fold_of(band) == 4
    a, n = band.geometry.pixel_offset, band.geometry.npix
    got = _realspace_cuda.convolve(maps[:, a:a + n], band, ck, tpb=8)
    p0 = g.ringstart[own.start]
    p1 = g.ringstart[own.stop - 1] + g.nphi[own.stop - 1]
    assert rel_err(got[:, p0 - a:p1 - a], whole[:, p0:p1]) <= TOL["realspace_cuda_vs_cpu"]
