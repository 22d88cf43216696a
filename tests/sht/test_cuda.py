"""The "cuda" backend: kernels through Numba's simulator in CI (tiny sizes), the real GPU on the
GPU machine (SPHGPU_TEST_REAL_GPU=1), against the CPU backend (ducc0) and the numba twin."""

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.backends import cuda_available
from sphgpu.sht import _cpu, reference

from ..conftest import TOL, random_alm, rel_err

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")

# (geometry, lmax, mmax): HEALPix with rings shorter than 2*mmax+1, odd nside, mmax < lmax,
# and a Gauss-Legendre grid with an unpaired equator ring
CASES = [(RingGeometry.healpix(1), 3, 3), (RingGeometry.healpix(3), 8, 5),
         (RingGeometry.healpix(2), 7, 7), (RingGeometry.gauss_legendre(5), 4, 4)]


@pytest.mark.parametrize("geometry, lmax, mmax", CASES)
def test_cuda_matches_cpu(geometry, lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    alms = random_alm(rng, layout, k=2)
    want = _cpu.synthesis(alms, layout, geometry)
    got = sphgpu.alm2map(alms, lmax=lmax, mmax=mmax, geometry=geometry, backend="cuda")
    assert isinstance(got, np.ndarray) and got.shape == want.shape
    assert rel_err(got, want) <= TOL["vs_ducc0"]
    assert rel_err(got, reference.synthesis(alms, layout, geometry)) <= TOL["vs_ducc0"]
    maps = rng.standard_normal((2, geometry.npix))
    want = _cpu.analysis(maps, layout, geometry)
    got = sphgpu.map2alm(maps, lmax, mmax, iter=0, geometry=geometry, backend="cuda")
    assert rel_err(got, want) <= TOL["vs_ducc0"]
    assert rel_err(got, reference.analysis(maps, layout, geometry)) <= TOL["vs_ducc0"]


def test_cuda_map2alm_iterations_match_cpu(rng):
    m = rng.standard_normal(12 * 2**2)
    want = sphgpu.map2alm(m, 5, iter=2, backend="cpu")
    assert rel_err(sphgpu.map2alm(m, 5, iter=2, backend="cuda"), want) <= TOL["vs_healpy_iter"]


def test_legendre_kernel_matches_twin_with_three_maps(rng):
    # three maps: one launch of alm2leg_kernel(3), two launches of leg2alm_kernel
    from sphgpu.sht import _cuda
    g, layout = RingGeometry.healpix(2), AlmLayout(6, 4)
    alms = random_alm(rng, layout, k=3)
    pl = _cuda.plan(g, layout.lmax, layout.mmax)
    leg = _cuda._alm2leg(alms, pl, np)
    assert rel_err(leg, _cpu.twin_alm2leg(alms, layout, g)) <= 1e-13
    back = _cuda._leg2alm(leg, pl, np)
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= 1e-13


def test_blocks_of_negligible_ring_pairs_are_skipped_exactly(rng, monkeypatch):
    # Rings a few arcminutes from the poles: for large m their lambda_lm stays below 2**-300 up
    # to lmax, and with two pairs per block the kernels skip those blocks. Results must not
    # change: the twin runs every pair in full.
    from sphgpu.sht import _cuda
    monkeypatch.setattr(_cuda, "LAUNCH", {"alm2leg": (2, 1), "leg2alm": (2, 1)})
    theta = np.array([1e-3, 2e-3, 0.05, 1.0, np.pi - 2e-3, np.pi - 1e-3])
    g = RingGeometry(theta, np.zeros(6), np.full(6, 8), np.arange(6) * 8, np.ones(6))
    layout = AlmLayout(64)
    pl = _cuda.plan(g, 64, 64)
    first = np.asarray(pl.first)
    assert first[0] == 0 and first[64] >= 2        # the two polar pairs are dead at m = 64
    alms = random_alm(rng, layout, k=1)
    leg = _cuda._alm2leg(alms, pl, np)
    assert rel_err(leg, _cpu.twin_alm2leg(alms, layout, g)) <= 1e-13
    assert np.all(leg[0, [0, 1, 4, 5], 64] == 0)
    back = _cuda._leg2alm(leg, pl, np)
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= 1e-13


def _real_gpu():
    from sphgpu.sht import _cuda
    return not _cuda.SIMULATOR


@pytest.mark.skipif("not _real_gpu()", reason="needs a real GPU and CuPy")
def test_device_arrays_stay_on_the_device(rng):
    cupy = pytest.importorskip("cupy")
    from numba import cuda
    layout, nside = AlmLayout(20), 8
    alm = random_alm(rng, layout)
    d_alm = cupy.asarray(alm)
    m = sphgpu.alm2map(d_alm, nside, backend="cuda")
    assert isinstance(m, cupy.ndarray)
    assert rel_err(m.get(), _cpu.synthesis(alm[None], layout, RingGeometry.healpix(nside))[0]) \
        <= TOL["vs_ducc0"]
    a = sphgpu.map2alm(cuda.as_cuda_array(m), 20, iter=3, backend="cuda")   # Numba array in
    assert cuda.is_cuda_array(a) and not isinstance(a, cupy.ndarray)
    assert rel_err(cupy.asarray(a).get(), sphgpu.map2alm(m.get(), 20, iter=3, backend="cpu")) \
        <= TOL["vs_healpy_iter"]
    bad = m.copy()
    bad[3] = cupy.nan
    with pytest.raises(ValueError, match="maps contains NaN"):
        sphgpu.map2alm(bad, 20, backend="cuda")
    with pytest.raises(ValueError, match="alm has"):
        sphgpu.alm2map(d_alm[:-1], nside, backend="cuda")
    with pytest.raises(TypeError, match="GPU array"):
        sphgpu.alm2map(d_alm, nside, backend="cpu")


@pytest.mark.skipif("not _real_gpu()", reason="needs a real GPU and CuPy")
def test_autotuner_measures_once_and_caches_on_disk(tmp_path, monkeypatch, rng):
    import json
    from sphgpu.sht import _cuda
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    g = RingGeometry.gauss_legendre(600)            # a geometry no other test uses
    pl = _cuda.plan(g, 599, 599)
    launch = _cuda._launch(pl)
    cache = json.loads((tmp_path / "sht_launch.json").read_text())
    (key, stored), = cache.items()
    assert "lmax=599" in key and {k: tuple(v) for k, v in stored.items()} == launch
    assert launch["alm2leg"] in _cuda.CANDIDATES["alm2leg"]
    fresh = _cuda._Plan(g, 599, 599)                # a new plan reads the file, measures nothing
    monkeypatch.setattr(_cuda, "_measure", lambda pl: pytest.fail("measured twice"))
    assert _cuda._launch(fresh) == launch


@pytest.mark.skipif("not _real_gpu()", reason="needs a real GPU and CuPy")
def test_running_out_of_gpu_memory_is_a_clear_error(monkeypatch):
    cupy = pytest.importorskip("cupy")
    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: (1 << 20, 1 << 40))
    monkeypatch.setattr(cupy, "get_default_memory_pool",
                        lambda: type("Pool", (), {"free_bytes": lambda self: 0})())
    with pytest.raises(MemoryError, match="GiB of GPU memory per map"):
        sphgpu.alm2map(np.zeros(AlmLayout(256).size, complex), 128, backend="cuda")
