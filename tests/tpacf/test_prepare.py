"""Catalog preparation: the unit vectors and cell keys of sphgpu.tpacf.sky, the host and device
(simulator; real GPU with `pytest -m gpu`) sorted catalogs, and what is cached."""

import math
import warnings

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, grid, pair_counts, sky
from sphgpu.tpacf.catalog import unit_vectors

from .cases import awkward, sky as sky_points

needs_cuda = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
SPECIAL_RA = [0.0, 90.0, 180.0, 270.0, 360.0, -1e-14, 720.0, 45.0, -90.0, 1e300 % 360]
SPECIAL_DEC = [90.0, -90.0, 0.0, 45.0, -45.0, 0.0, 89.9999, -5.0, 30.0, 12.0]


def _numpy_twin(ra, dec):
    """The definition of sky.py written with NumPy array operations (no Numba, no FMA)."""
    def sincos(x):
        k = np.floor(x / 90.0 + 0.5)
        t = (x + -90.0 * k) * (math.pi / 180.0)
        t2 = t * t
        ps = np.full_like(t, sky._SIN[-1])
        for c in sky._SIN[-2::-1]:
            ps = c + t2 * ps
        pc = np.full_like(t, sky._COS[-1])
        for c in sky._COS[-2::-1]:
            pc = c + t2 * pc
        s, c = t + (t * t2) * ps, 1.0 + t2 * pc
        quadrant = k.astype(np.int64) & 3
        return (np.choose(quadrant, [s, c, -s, -c]), np.choose(quadrant, [c, -s, -c, s]))

    w = np.mod(ra, 360.0)
    w = np.where(w >= 360.0, 0.0, w)
    sr, cr = sincos(w)
    sd, cd = sincos(dec)
    return np.stack([cd * cr, cd * sr, sd])


def test_unit_vectors_equal_their_numpy_twin_and_are_accurate(rng):
    ra = np.concatenate([rng.uniform(-400, 800, 20000), SPECIAL_RA])
    dec = np.concatenate([rng.uniform(-90, 90, 20000), SPECIAL_DEC])
    u = unit_vectors(ra, dec)
    np.testing.assert_array_equal(u, _numpy_twin(ra, dec))       # bit for bit
    # against long double (80-bit on x86: 11 more bits than float64)
    L = np.longdouble
    if np.finfo(L).nmant <= 52:
        pytest.skip("no extended precision long double here")
    w = np.mod(ra, 360.0)
    w[w >= 360.0] = 0.0
    pi = L("3.14159265358979323846264338327950288")
    a, d = w.astype(L) * pi / 180, dec.astype(L) * pi / 180
    exact = np.stack([np.cos(d) * np.cos(a), np.cos(d) * np.sin(a), np.sin(d)])
    assert float(np.max(np.abs(u.astype(L) - exact))) < TOL["unit_vector_vs_long_double_atol"]
    # exact at multiples of 90 degrees (NumPy's cos(pi/2) is 6e-17)
    np.testing.assert_array_equal(np.abs(unit_vectors([0.0, 90.0, 180.0, 270.0], [0.0] * 4)),
                                  [[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(unit_vectors([33.0, 33.0], [90.0, -90.0])[2], [1.0, -1.0])


def test_cell_keys_follow_band_and_ra(rng):
    ra = np.concatenate([rng.uniform(-10, 370, 3000), [0.0, 359.9999999, -1e-14]])
    dec = np.concatenate([rng.uniform(-90, 90, 3000), [-90.0, 90.0, 0.0]])
    nbands, nreg = 72, 3
    lab = rng.integers(0, nreg, ra.size)
    keys = grid.HOST.keys(ra, dec, lab, nbands, nreg)
    hi, q = keys >> np.uint64(32), keys & np.uint64(2**32 - 1)
    w = np.mod(ra, 360.0)
    w[w >= 360.0] = 0.0
    band = np.clip(np.floor((dec + 90.0) * (nbands / 180.0)), 0, nbands - 1).astype(np.int64)
    np.testing.assert_array_equal(hi, band * nreg + lab)
    np.testing.assert_array_equal(q, np.clip(np.floor(w * sky.Q_PER_DEG), 0, 2**32 - 1))
    assert q[-1] == 0 and hi[-3] // nreg == 0 and hi[-2] // nreg == nbands - 1


@needs_cuda
@pytest.mark.parametrize("with_extras", [False, True])
def test_device_preparation_equals_the_host_one(with_extras, rng):
    """Same keys, same stable order, same unit vectors bit for bit: host and device prepare
    the same sorted catalog, so every backend compares the same pairs in the same cells."""
    from sphgpu._device import to_host
    from sphgpu.tpacf._cuda import DEVICE

    ra, dec = np.concatenate([sky_points(rng, 60), awkward(rng)], axis=1)
    kw = {}
    if with_extras:
        kw = {"weights": rng.uniform(0.5, 2, ra.size), "labels": rng.integers(0, 4, ra.size)}
    cat = Catalog(ra, dec, **kw)
    h = grid.band_height(np.deg2rad(10.0))
    n_regions = 4 if with_extras else 0
    host = grid.sorted_catalog(cat, h, n_regions)
    dev = grid.sorted_catalog(cat, h, n_regions, DEVICE)
    assert dev is not host and dev is grid.sorted_catalog(cat, h, n_regions, DEVICE)
    for name in ("keys", "perm", "xyz", "xyz32", "weights"):
        a, b = getattr(host, name), getattr(dev, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, to_host(b), err_msg=name)
    for name in ("run_start", "run_hi", "run_band", "run_label", "band_runs"):
        np.testing.assert_array_equal(getattr(host, name), getattr(dev, name), err_msg=name)
    chunks = [grid._chunks(s, 7, np.full(s.nbands, 2**26)) for s in (host, dev)]
    for a, b in zip(*chunks):
        np.testing.assert_array_equal(a, b)


@needs_cuda
def test_a_catalog_is_prepared_once_per_backend(rng):
    cat = Catalog(*sky_points(rng, 50, dec=(0, 10), ra=(0, 10)))
    bins = AngularBins.log(0.1, 3, 4)
    first = pair_counts(cat, bins=bins, backend="cuda")
    prepared = [k for k in cat._cache if k[:2] == ("sorted", "device")]
    assert len(prepared) == 1
    kept = cat._cache[prepared[0]]
    again = pair_counts(cat, bins=bins, backend="cuda")
    assert cat._cache[prepared[0]] is kept
    np.testing.assert_array_equal(first.counts, again.counts)
    np.testing.assert_array_equal(first.counts,
                                  pair_counts(cat, bins=bins, backend="reference").counts)


def test_catalog_copies_or_borrows(rng):
    ra, dec = sky_points(rng, 20)
    own = Catalog(ra, dec)
    assert own.ra is not ra and not own.ra.flags.writeable
    assert ra.flags.writeable                           # the caller's array is left alone
    borrowed = Catalog(ra, dec, copy=False)
    assert borrowed.ra is ra and ra.flags.writeable
    assert not own.on_device and own.coordinates()[0] is own.ra


@pytest.mark.gpu
def test_real_gpu_preparation_equals_the_host_one_at_size(rng):
    import cupy

    from sphgpu.tpacf._cuda import DEVICE

    n = 1_000_003
    ra = np.concatenate([rng.uniform(-400, 800, n), SPECIAL_RA])
    dec = np.concatenate([rng.uniform(-90, 90, n), SPECIAL_DEC])
    cat = Catalog(ra, dec)
    h = grid.band_height(np.deg2rad(2.0))
    host, dev = grid.sorted_catalog(cat, h, 0), grid.sorted_catalog(cat, h, 0, DEVICE)
    for name in ("keys", "perm", "xyz", "xyz32"):
        np.testing.assert_array_equal(getattr(host, name), cupy.asnumpy(getattr(dev, name)),
                                      err_msg=name)
    np.testing.assert_array_equal(host.run_start, dev.run_start)


@pytest.mark.gpu
def test_real_gpu_cupy_input_and_no_warnings(rng):
    import cupy

    ra, dec = sky_points(rng, 3000, dec=(-5, 30), ra=(0, 40))
    bins = AngularBins.log(0.05, 5, 8)
    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)   # small grids warned here
        host = pair_counts(ra, dec, ra[:40], dec[:40], bins=bins, backend="cuda")
        dev = pair_counts(cupy.asarray(ra), cupy.asarray(dec), cupy.asarray(ra[:40]),
                          cupy.asarray(dec[:40]), bins=bins, backend="cuda")
    np.testing.assert_array_equal(host.counts, dev.counts)
    np.testing.assert_array_equal(
        host.counts, pair_counts(ra, dec, ra[:40], dec[:40], bins=bins, backend="cpu").counts)
    assert Catalog(cupy.asarray(ra), cupy.asarray(dec)).on_device


@pytest.mark.gpu
def test_real_gpu_preparation_kernels_round_every_product():
    """No FMA in the unit-vector arithmetic of the device (it would differ from the host)."""
    from numba import cuda, types

    from sphgpu.tpacf import _cuda_kernels as K

    f64 = types.Array(types.float64, 1, "C")
    sig = (f64, f64, f64, types.Array(types.int64, 1, "C"), types.Array(types.float64, 2, "C"),
           types.Array(types.float32, 2, "C"), f64)
    ptx, _ = cuda.compile_ptx(K.sorted_points.py_func, sig,
                              cc=cuda.get_current_device().compute_capability)
    assert "mul.rn.f64" in ptx and "fma.rn.f64" not in ptx
