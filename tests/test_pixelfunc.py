"""sphgpu.pixelfunc against healpy 1.20.1 (and ducc0): index conversions, reorder, ud_grade.

Maps are compared bit for bit (their bytes). CI covers ud_grade for every nside pair of
1 .. 128 (RING and NEST in, float32 and float64, each power and pess) and a few pairs with
256 in the other orderings, the conversions at every pixel of nside 1 .. 256; the slow test
covers every pair up to 1024.
"""

import numpy as np
import pytest

import sphgpu
from sphgpu import pixelfunc
from sphgpu.pixelfunc import _cpu, _cuda, api, reference

hp = pytest.importorskip("healpy")

NSIDES = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=")
    assert a.astype(a.dtype.newbyteorder("=")).tobytes() == b.astype(
        b.dtype.newbyteorder("=")).tobytes()


@pytest.mark.parametrize("nside", NSIDES)
def test_index_conversions_equal_healpy_and_ducc0_at_every_pixel(nside):
    p = np.arange(12 * nside**2)
    for mine, theirs, to_ring in ((sphgpu.nest2ring, hp.nest2ring, True),
                                  (sphgpu.ring2nest, hp.ring2nest, False)):
        want = theirs(nside, p)
        np.testing.assert_array_equal(mine(nside, p), want)
        np.testing.assert_array_equal(reference.pixel_index(nside, p, to_ring), want)


def test_index_conversions_at_the_largest_nside():
    nside = 1 << 29
    p = np.array([0, 1, 12 * nside**2 // 2 + 12345, 12 * nside**2 - 1], dtype=np.int64)
    np.testing.assert_array_equal(sphgpu.nest2ring(nside, p), hp.nest2ring(nside, p))
    np.testing.assert_array_equal(sphgpu.ring2nest(nside, p), hp.ring2nest(nside, p))


def test_index_shapes_and_scalars():
    p = np.arange(48, dtype=np.int32).reshape(4, 12)
    out = sphgpu.nest2ring(2, p)
    assert out.shape == (4, 12) and out.dtype == np.int64
    np.testing.assert_array_equal(out, hp.nest2ring(2, p))
    s = sphgpu.ring2nest(4, 17)
    assert isinstance(s, np.int64) and s == hp.ring2nest(4, 17)


def test_index_errors_name_the_argument():
    with pytest.raises(ValueError, match="nside=3 is not a power of two"):
        sphgpu.nest2ring(3, [0])
    with pytest.raises(ValueError, match="ipix must lie in 0 .. 47"):
        sphgpu.ring2nest(2, [48])
    with pytest.raises(ValueError, match="ipix"):
        sphgpu.ring2nest(2, [-1])
    with pytest.raises(TypeError, match="ipix must hold integers"):
        sphgpu.nest2ring(2, [1.0])


def test_npix2nside_and_nside2npix():
    for nside in (1, 3, 1024):
        assert pixelfunc.npix2nside(12 * nside**2) == hp.npix2nside(12 * nside**2) == nside
        assert pixelfunc.nside2npix(nside) == hp.nside2npix(nside)
    for bad in (0, 13, 47, 12.0):
        with pytest.raises(ValueError, match="not a HEALPix size"):
            pixelfunc.npix2nside(bad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.int64])
@pytest.mark.parametrize("nside", [1, 2, 16, 256])
def test_reorder_equals_healpy(nside, dtype, rng):
    m = (rng.standard_normal((3, 12 * nside**2)) * 100).astype(dtype)
    for kw in (dict(n2r=True), dict(r2n=True), dict(inp="NESTED", out="ring"),
               dict(inp="RING", out="NEST")):
        _same(sphgpu.reorder(m, **kw), hp.reorder(m, **kw))
        _same(sphgpu.reorder(m[1], **kw), hp.reorder(m[1], **kw))
        _same(sphgpu.reorder(list(m), **kw), hp.reorder(list(m), **kw))
    # round trip, and healpy's "same ordering" returns the input itself
    np.testing.assert_array_equal(sphgpu.reorder(sphgpu.reorder(m, r2n=True), n2r=True), m)
    assert sphgpu.reorder(m, inp="RING", out="RING") is m


def test_reorder_moves_a_mask_with_its_pixels(rng):
    m = np.ma.masked_array(rng.standard_normal(192), mask=rng.random(192) < 0.3)
    r = sphgpu.reorder(m, r2n=True)
    assert isinstance(r, np.ma.MaskedArray)
    idx = hp.ring2nest(4, np.arange(192))
    np.testing.assert_array_equal(r.mask[idx], m.mask)
    np.testing.assert_array_equal(r.data[idx][~m.mask], m.data[~m.mask])


def test_reorder_errors_name_the_argument():
    with pytest.raises(ValueError, match="inp must be 'RING' or 'NEST'"):
        sphgpu.reorder(np.zeros(12), inp="galactic", out="RING")
    with pytest.raises(ValueError, match="map_in has 13 pixels"):
        sphgpu.reorder(np.zeros(13), n2r=True)
    with pytest.raises(ValueError, match="not a power of two"):
        sphgpu.reorder(np.zeros(12 * 9), n2r=True)
    with pytest.raises(ValueError, match="one length"):
        sphgpu.reorder([np.zeros(12), np.zeros(48)], n2r=True)


def _bad_pixels(m, rng, nonfinite=False):
    """UNSEEN and values within healpy's tolerance of it in a few pixels (NaN and infinity too
    with ``nonfinite``)."""
    n = m.shape[-1]
    m[..., rng.integers(0, n, max(1, n // 7))] = hp.UNSEEN
    m[..., rng.integers(0, n, max(1, n // 13))] = hp.UNSEEN * (1 + 1e-7)
    if nonfinite:
        m[..., rng.integers(0, n, max(1, n // 17))] = np.nan
        m[..., rng.integers(0, n, max(1, n // 19))] = -np.inf
    return m


def _ud_grade_cases(nsides, rng, dtypes=(np.float32, np.float64)):
    for nside_in in nsides:
        maps = {dt: _bad_pixels((rng.standard_normal((2, 12 * nside_in**2)) * 10).astype(dt),
                                rng) for dt in dtypes}
        for nside_out in nsides:
            for dt, m in maps.items():
                yield nside_in, nside_out, m


POWERS = [None, 0, 2, -2, 1.5]
#: CI: every pair of these (81 pairs, both dtypes, each power and pess); slow test: to 1024
CI_NSIDES = [1, 2, 4, 8, 16, 32, 64, 128]


@pytest.mark.parametrize("order_in, order_out", [("RING", None), ("NEST", "RING")])
def test_ud_grade_equals_healpy_for_every_nside_pair_to_128(order_in, order_out, rng):
    for nside_in, nside_out, m in _ud_grade_cases(CI_NSIDES, rng):
        for pess in (False, True):
            for power in POWERS:
                kw = dict(pess=pess, order_in=order_in, order_out=order_out, power=power)
                _same(sphgpu.ud_grade(m, nside_out, **kw), hp.ud_grade(m, nside_out, **kw))
        _same(sphgpu.ud_grade(m[0], nside_out, order_in=order_in),
              hp.ud_grade(m[0], nside_out, order_in=order_in))


@pytest.mark.parametrize("order_in, order_out", [("RING", "NESTED"), ("NEST", None)])
def test_ud_grade_equals_healpy_in_the_other_orderings(order_in, order_out, rng):
    for nside_in, nside_out, m in _ud_grade_cases([1, 4, 16, 256], rng, (np.float32,)):
        for pess in (False, True):
            kw = dict(pess=pess, order_in=order_in, order_out=order_out, power=-2)
            _same(sphgpu.ud_grade(m, nside_out, **kw), hp.ud_grade(m, nside_out, **kw))


@pytest.mark.slow
def test_ud_grade_equals_healpy_for_every_nside_pair_to_1024(rng):
    nsides = CI_NSIDES + [256, 512, 1024]
    for nside_in, nside_out, m in _ud_grade_cases(nsides, rng):
        if max(nside_in, nside_out) < 256:
            continue                   # the CI test has these
        for pess in (False, True):
            for power in (None, 2, -2):
                kw = dict(pess=pess, power=power)
                _same(sphgpu.ud_grade(m, nside_out, **kw), hp.ud_grade(m, nside_out, **kw))


def test_ud_grade_leaves_nan_and_infinity_out_of_the_mean(rng):
    # healpy 1.20.1 multiplies NaN by 0 and returns NaN parents; sphgpu leaves non-finite
    # children out as its documentation says: the same as healpy with those pixels UNSEEN
    m = _bad_pixels(rng.standard_normal((2, 12 * 16**2)), rng, nonfinite=True)
    as_unseen = np.where(np.isfinite(m), m, hp.UNSEEN)
    assert np.isnan(hp.ud_grade(m, 4)).any()
    for pess in (False, True):
        _same(sphgpu.ud_grade(m, 4, pess=pess), hp.ud_grade(as_unseen, 4, pess=pess))


def test_ud_grade_dtype_and_integer_maps(rng):
    m = rng.integers(0, 1000, 12 * 16**2)
    for kw in (dict(), dict(power=-2), dict(dtype=np.float32), dict(dtype=np.float64, pess=True)):
        for nside_out in (4, 64):
            _same(sphgpu.ud_grade(m, nside_out, **kw), hp.ud_grade(m, nside_out, **kw))
    f = rng.standard_normal(192).astype(np.float32)
    _same(sphgpu.ud_grade(f, 2, dtype=np.float64), hp.ud_grade(f, 2, dtype=np.float64))


def test_ud_grade_of_a_masked_map(rng):
    data = rng.standard_normal(12 * 8**2)
    mask = np.zeros(data.size, bool)
    mask[:64] = True          # RING pixels near the north pole: whole parents in the NEST sense
    m = np.ma.masked_array(data, mask=mask)
    out = sphgpu.ud_grade(m, 4, pess=True)
    want = hp.ud_grade(np.where(mask, hp.UNSEEN, data), 4, pess=True)
    assert isinstance(out, np.ma.MaskedArray)
    np.testing.assert_array_equal(out.filled(hp.UNSEEN), want)
    np.testing.assert_array_equal(out.mask, want == hp.UNSEEN)


def test_ud_grade_errors_name_the_argument():
    with pytest.raises(ValueError, match="nside_out=3 is not a power of two"):
        sphgpu.ud_grade(np.zeros(48), 3)
    with pytest.raises(ValueError, match="order_in must be"):
        sphgpu.ud_grade(np.zeros(48), 1, order_in="RNG")
    with pytest.raises(ValueError, match="map_in has 50 pixels"):
        sphgpu.ud_grade(np.zeros(50), 1)


# ----------------------------------------------------------------------------- the fast paths
@pytest.mark.parametrize("nside", [1, 2, 4, 8])
def test_cuda_kernels_move_every_pixel_as_healpy(nside, rng):
    # Numba's CUDA simulator in CI (a grid of 4 blocks of 32 threads: grid-stride loops)
    npix = 12 * nside**2
    p = np.arange(npix, dtype=np.int64)
    np.testing.assert_array_equal(_cuda.pixel_index(nside, p, True), hp.nest2ring(nside, p))
    np.testing.assert_array_equal(_cuda.pixel_index(nside, p, False), hp.ring2nest(nside, p))
    m = rng.standard_normal(npix)
    for to_ring, kw in ((True, dict(n2r=True)), (False, dict(r2n=True))):
        out = np.full(npix, np.nan)
        # in two pieces, as read_map moves a file's chunks
        half = npix // 2
        _cuda.scatter(m[:half], out, nside, 0, to_ring)
        _cuda.scatter(m[half:], out, nside, half, to_ring)
        _same(out, hp.reorder(m, **kw))


def test_public_functions_through_the_cuda_kernels(monkeypatch, rng):
    # the public functions on the device path (kernels under the simulator)
    monkeypatch.setattr(api, "_backend", lambda a: _cuda)
    m = _bad_pixels(rng.standard_normal((3, 192)), rng)
    _same(sphgpu.reorder(m, n2r=True), hp.reorder(m, n2r=True))
    _same(sphgpu.ud_grade(m, 2, pess=True), hp.ud_grade(m, 2, pess=True))
    _same(sphgpu.ud_grade(m, 8), hp.ud_grade(m, 8))


@pytest.mark.parametrize("nside", [512, 2048])
def test_cpu_loops_equal_the_reference_at_real_sizes(nside, rng):
    # the index arithmetic the kernels share, at sizes the simulator cannot reach
    npix = 12 * nside**2
    p = rng.integers(0, npix, 1 << 16)
    for to_ring in (True, False):
        np.testing.assert_array_equal(_cpu.pixel_index(nside, p, to_ring),
                                      reference.pixel_index(nside, p, to_ring))


def test_scatter_pixels_checks_its_range():
    out = np.zeros(48)
    with pytest.raises(ValueError, match="run past"):
        pixelfunc.scatter_pixels(np.zeros(10), out, 40, out_order="RING")
