"""beam2bl and bl2beam against healpy's (its normalisation and trapezoidal quadrature), against
a long-double Legendre sum, and their errors."""

import math

import numpy as np
import pytest

import sphgpu

hp = pytest.importorskip("healpy")

#: agreement with healpy, |ours - healpy's| <= RTOL |healpy's| + ATOL max|healpy's|: both sum
#: the same float64 terms by different Legendre recurrences, so values far below the largest
#: one (b_l of a narrow beam at high l, a profile's tail) are sums that cancel and keep only
#: the ATOL part (measured, relative to the largest value: 4e-14 at lmax 100, 1.1e-12 at
#: lmax 1000, where healpy's own error against long double is 3e-13)
VS_HEALPY_RTOL = 1e-12
VS_HEALPY_ATOL = 1e-13
#: bl2beam against a long-double Legendre sum, relative to the largest value: rounding that
#: grows with l (b_l ~ 1/l at lmax 400: ours 1.1e-13, largest at theta = pi, where the
#: recurrence in 1 - cos(theta) is least favoured; healpy's 3.6e-13, at theta = 0)
VS_LONG_DOUBLE = 1e-12


def _gaussian_profile(fwhm_arcmin, n, extent=6.0, power=1.0):
    theta = np.linspace(0.0, math.radians(extent * fwhm_arcmin / 60.0), n) ** power
    theta *= math.radians(extent * fwhm_arcmin / 60.0) / theta[-1]
    sigma = math.radians(fwhm_arcmin / 60.0) / math.sqrt(8.0 * math.log(2.0))
    return theta, np.exp(-theta ** 2 / (2 * sigma ** 2)) / (2 * math.pi * sigma ** 2)


def _assert_close(ours, ref):
    np.testing.assert_allclose(ours, ref, rtol=VS_HEALPY_RTOL,
                               atol=VS_HEALPY_ATOL * np.max(np.abs(ref)))


@pytest.mark.parametrize("lmax, n, fwhm, power", [(1, 50, 60.0, 1.0), (2, 7, 600.0, 1.0),
                                                  (7, 101, 30.0, 1.0), (64, 400, 20.0, 2.0),
                                                  (200, 3001, 10.0, 1.0)])
def test_beam2bl_matches_healpy(lmax, n, fwhm, power):
    theta, beam = _gaussian_profile(fwhm, n, power=power)       # power 2: uneven spacing
    bl = sphgpu.beam2bl(beam, theta, lmax)
    assert bl.shape == (lmax + 1,) and bl.dtype == np.float64
    _assert_close(bl, hp.beam2bl(beam, theta, lmax))


def test_beam2bl_whole_sphere_and_lmax_zero(rng):
    theta = np.sort(np.concatenate([[0.0, math.pi], rng.uniform(0, math.pi, 300)]))
    beam = rng.standard_normal(theta.size)
    _assert_close(sphgpu.beam2bl(beam, theta, 40), hp.beam2bl(beam, theta, 40))
    # lmax 0 (healpy's needs lmax >= 1): the trapezoid of 2 pi b(theta) sin(theta)
    want = 2 * math.pi * np.trapezoid(beam * np.sin(theta), theta)
    np.testing.assert_allclose(sphgpu.beam2bl(beam, theta, 0), [want], rtol=1e-14)


@pytest.mark.parametrize("lmax, fwhm", [(1, 600.0), (5, 300.0), (100, 30.0), (300, 10.0)])
def test_bl2beam_matches_healpy(lmax, fwhm):
    bl = hp.gauss_beam(math.radians(fwhm / 60.0), lmax)
    theta = np.concatenate([np.linspace(0.0, math.pi, 91), [1e-7, math.pi - 1e-7]])
    beam = sphgpu.bl2beam(bl, theta)
    assert beam.shape == theta.shape and beam.dtype == np.float64
    _assert_close(beam, hp.bl2beam(bl, theta))


def test_bl2beam_against_long_double(rng):
    lmax = 400
    bl = rng.standard_normal(lmax + 1) / (1.0 + np.arange(lmax + 1))
    theta = np.linspace(0.0, math.pi, 37)
    x = np.cos(theta.astype(np.longdouble))
    p0, p1 = np.ones_like(x), x.copy()
    want = bl[0] * p0 + 3 * bl[1] * p1
    for l in range(2, lmax + 1):
        p0, p1 = p1, ((2 * l - 1) * x * p1 - (l - 1) * p0) / l
        want += (2 * l + 1) * np.longdouble(bl[l]) * p1
    want = (want / (4 * np.pi)).astype(np.float64)
    got = sphgpu.bl2beam(bl, theta)
    assert np.max(np.abs(got - want)) <= VS_LONG_DOUBLE * np.max(np.abs(want))


def test_bl2beam_shapes_and_lmax_zero():
    # lmax 0 (healpy's needs two coefficients): a constant 1/(4 pi); theta keeps its shape
    theta = np.array([[0.0, 1.0], [2.0, math.pi]])
    np.testing.assert_allclose(sphgpu.bl2beam([1.0], theta), np.full((2, 2), 1 / (4 * math.pi)),
                               rtol=1e-15)
    assert sphgpu.bl2beam([1.0, 0.5], 0.3).shape == ()


def test_round_trip_of_a_smooth_beam():
    # b_l -> profile on a fine grid -> b_l: the trapezoid's error only, h^2/12 times the
    # integrand's second derivative (a 1 degree beam peaks at 2900 / sr): 2.6e-6 with 20001
    # samples, 1e-7 with 100001
    bl = hp.gauss_beam(math.radians(1.0), 50)
    theta = np.linspace(0.0, math.pi, 100001)
    back = sphgpu.beam2bl(sphgpu.bl2beam(bl, theta), theta, 50)
    np.testing.assert_allclose(back, bl, rtol=0, atol=2e-7)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: sphgpu.beam2bl(np.ones(3), np.linspace(0, 1, 4), 5), ValueError, "same length"),
    (lambda: sphgpu.beam2bl(np.ones(1), np.zeros(1), 5), ValueError, "at least 2"),
    (lambda: sphgpu.beam2bl(np.ones(3), np.array([0, 1, 4.0]), 5), ValueError, "theta"),
    (lambda: sphgpu.beam2bl(np.array([1, np.nan, 1]), np.linspace(0, 1, 3), 5), ValueError,
     "beam"),
    (lambda: sphgpu.beam2bl(np.ones(3, complex), np.linspace(0, 1, 3), 5), TypeError, "beam"),
    (lambda: sphgpu.beam2bl(np.ones(3), np.linspace(0, 1, 3), -1), ValueError, "lmax"),
    (lambda: sphgpu.beam2bl(np.ones(3), np.linspace(0, 1, 3), 2.0), TypeError, "lmax"),
    (lambda: sphgpu.bl2beam([], [0.1]), ValueError, "bl"),
    (lambda: sphgpu.bl2beam([1.0, np.inf], [0.1]), ValueError, "bl"),
    (lambda: sphgpu.bl2beam([1.0, 0.5], [-0.1]), ValueError, "theta"),
    (lambda: sphgpu.bl2beam([1.0, 0.5], [np.nan]), ValueError, "theta"),
])
def test_bad_input_is_named(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


@pytest.mark.gpu
def test_device_in_device_out():
    cupy = pytest.importorskip("cupy")
    theta, beam = _gaussian_profile(30.0, 200)
    bl = sphgpu.beam2bl(cupy.asarray(beam), cupy.asarray(theta), 20)
    assert isinstance(bl, cupy.ndarray)
    _assert_close(bl.get(), hp.beam2bl(beam, theta, 20))
    prof = sphgpu.bl2beam(bl, cupy.asarray(theta))
    assert isinstance(prof, cupy.ndarray)
