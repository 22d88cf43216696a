"""resize_alm: equal, element for element, to healpy's; errors name the argument."""

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout
from sphgpu.testing import random_alm

hp = pytest.importorskip("healpy")

SIZES = [(0, 0, 0, 0), (0, 0, 3, 2), (5, 5, 2, 2), (5, 5, 8, 8), (7, 3, 7, 7), (7, 7, 9, 4),
         (6, 2, 3, 3), (9, 4, 12, 1), (4, 4, 4, 4)]


@pytest.mark.parametrize("lmax, mmax, lmax_out, mmax_out", SIZES)
def test_equals_healpy(lmax, mmax, lmax_out, mmax_out, rng):
    alm = random_alm(rng, AlmLayout(lmax, mmax))
    got = sphgpu.resize_alm(alm, lmax, mmax, lmax_out, mmax_out)
    want = hp.resize_alm(alm, lmax, mmax, lmax_out, mmax_out)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # a copy, never a view of the input
    assert not np.shares_memory(got, alm)


@pytest.mark.parametrize("lmax, mmax, lmax_out, mmax_out", SIZES[2:6])
def test_teb_equals_healpy_rows(lmax, mmax, lmax_out, mmax_out, rng):
    teb = random_alm(rng, AlmLayout(lmax, mmax), k=3)
    got = sphgpu.resize_alm(teb, lmax, mmax, lmax_out, mmax_out)
    # healpy returns a list of rows; ours is one (3, nalm_out) array of the same rows
    np.testing.assert_array_equal(got, np.array(hp.resize_alm(teb, lmax, mmax, lmax_out,
                                                              mmax_out)))
    np.testing.assert_array_equal(sphgpu.resize_alm(list(teb), lmax, mmax, lmax_out, mmax_out),
                                  got)


def test_real_dtype_and_round_trip(rng):
    weights = rng.standard_normal(AlmLayout(6, 4).size)        # any numeric dtype is kept
    got = sphgpu.resize_alm(weights, 6, 4, 8, 8)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, hp.resize_alm(weights, 6, 4, 8, 8))
    np.testing.assert_array_equal(sphgpu.resize_alm(got, 8, 8, 6, 4), weights)


@pytest.mark.parametrize("args, exc, words", [
    ((5, 5, 4, 4), ValueError, "lmax=5, mmax=5 needs 21"),       # wrong length for the input
    ((4, 5, 4, 4), ValueError, "mmax"),
    ((4, 4, 4, 5), ValueError, "mmax_out"),
    ((4, 4, -1, 0), ValueError, "lmax_out"),
    ((4.0, 4, 4, 4), TypeError, "lmax"),
])
def test_bad_limits_are_named(args, exc, words, rng):
    alm = random_alm(rng, AlmLayout(4))
    with pytest.raises(exc) as info:
        sphgpu.resize_alm(alm, *args)
    assert words in str(info.value)


def test_bad_alm_is_named(rng):
    alm = random_alm(rng, AlmLayout(3))
    bad = alm.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="alm contains NaN"):
        sphgpu.resize_alm(bad, 3, 3, 4, 4)
    with pytest.raises(ValueError, match="alm must be 1-D or 2-D"):
        sphgpu.resize_alm(alm.reshape(1, 1, -1), 3, 3, 4, 4)
    with pytest.raises(ValueError, match="different lengths"):
        sphgpu.resize_alm([alm, alm[:-1]], 3, 3, 4, 4)
    with pytest.raises(TypeError, match="alm"):
        sphgpu.resize_alm("alm", 3, 3, 4, 4)


@pytest.mark.gpu
def test_device_in_device_out(rng):
    cupy = pytest.importorskip("cupy")
    teb = random_alm(rng, AlmLayout(9, 5), k=3)
    got = sphgpu.resize_alm(cupy.asarray(teb), 9, 5, 6, 6)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), np.array(hp.resize_alm(teb, 9, 5, 6, 6)))
