"""synalm, synfast, alm2cl, anafast, almxfl, gauss_beam, smoothing against healpy and statistics."""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout
from sphgpu.data import planck2018_cl

from sphgpu.testing import TOL, random_alm, random_map, rel_err

hp = pytest.importorskip("healpy")


@pytest.mark.parametrize("pol", [False, True])
def test_gauss_beam_matches_healpy(pol):
    fwhm = math.radians(0.5)
    np.testing.assert_allclose(sphgpu.gauss_beam(fwhm, 300, pol), hp.gauss_beam(fwhm, 300, pol),
                               rtol=TOL["gauss_beam_rtol"])
    np.testing.assert_allclose(sphgpu.gauss_beam(fwhm_arcmin=30.0, lmax=300, pol=pol),
                               hp.gauss_beam(fwhm, 300, pol),
                               rtol=TOL["gauss_beam_rtol"])


@pytest.mark.parametrize("lmax, mmax", [(12, None), (12, 5)])
def test_alm2cl_and_almxfl_match_healpy(lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    a, b = random_alm(rng, layout), random_alm(rng, layout)
    np.testing.assert_allclose(sphgpu.alm2cl(a, lmax=lmax, mmax=mmax),
                               hp.alm2cl(a, lmax=lmax, mmax=mmax),
                               rtol=TOL["alm2cl_rtol"])
    np.testing.assert_allclose(sphgpu.alm2cl(a, b, lmax=lmax, mmax=mmax),
                               hp.alm2cl(a, b, lmax=lmax, mmax=mmax),
                               rtol=TOL["alm2cl_cross_rtol"], atol=TOL["alm2cl_cross_atol"])
    fl = rng.standard_normal(lmax - 3)        # shorter than lmax+1: the rest become zero
    np.testing.assert_allclose(sphgpu.almxfl(a, fl, mmax, lmax=lmax if mmax else None),
                               hp.almxfl(a, fl, mmax), rtol=TOL["almxfl_rtol"])
    # two sets: healpy's three spectra by diagonal, aa, bb, ab; a leading axis is a batch
    # lmax_out above lmax gives lmax + 1 values, as healpy (issue 38)
    two = sphgpu.alm2cl(np.stack([a, b]), lmax=lmax, mmax=mmax, lmax_out=lmax + 2)
    assert two.shape == (3, lmax + 1)
    np.testing.assert_allclose(two[:, :lmax + 1], hp.alm2cl([a, b], lmax=lmax, mmax=mmax),
                               rtol=TOL["alm2cl_cross_rtol"], atol=TOL["alm2cl_cross_atol"])
    batch = sphgpu.alm2cl(np.stack([a, b])[:, None], lmax=lmax, mmax=mmax)
    assert batch.shape == (2, 1, lmax + 1)
    np.testing.assert_allclose(batch[1, 0], hp.alm2cl(b, lmax=lmax, mmax=mmax))


def test_almxfl_inplace():
    layout = AlmLayout(6)
    a = np.ones(layout.size, dtype=complex)
    out = sphgpu.almxfl(a, np.arange(7.0), inplace=True)
    assert out is a and a[layout.index(5, 2)] == 5.0


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_smoothing_matches_healpy(backend, rng):
    nside = 8
    m = random_map(rng, nside)
    fwhm = math.radians(10.0)
    want = hp.smoothing(m, fwhm=fwhm, iter=3)
    assert rel_err(sphgpu.smoothing(m, fwhm, backend=backend), want) <= TOL["vs_healpy_iter"]
    sigma = fwhm / math.sqrt(8 * math.log(2))
    assert rel_err(sphgpu.smoothing(m, sigma=sigma, backend=backend), want) <= TOL["vs_healpy_iter"]
    bl = hp.gauss_beam(fwhm, 3 * nside - 1)
    assert rel_err(sphgpu.smoothing(m, beam_window=bl, backend=backend), want) \
        <= TOL["vs_healpy_iter"]


def test_anafast_matches_healpy(rng):
    nside = 16
    m1, m2 = random_map(rng, nside, 2)
    np.testing.assert_allclose(sphgpu.anafast(m1), hp.anafast(m1, iter=3),
                               rtol=TOL["vs_healpy_elementwise_rtol"])
    np.testing.assert_allclose(sphgpu.anafast(m1, m2, lmax=20), hp.anafast(m1, m2, lmax=20),
                               rtol=TOL["vs_healpy_cross_rtol"],
                               atol=TOL["vs_healpy_elementwise_atol"])
    cl, a1 = sphgpu.anafast(m1, alm=True, iter=0)
    np.testing.assert_allclose(a1, hp.map2alm(m1, iter=0),
                               rtol=TOL["vs_healpy_elementwise_rtol"],
                               atol=TOL["vs_healpy_elementwise_atol"])


def test_synalm_recovers_the_spectrum():
    cl = planck2018_cl(400)
    a = sphgpu.synalm(cl, seed=3)
    est = sphgpu.alm2cl(a)
    ell = np.arange(2, 401)
    # each C_l estimate has relative variance 2/(2l+1): the mean of the normalised deviations
    # over 399 multipoles must be within 4 standard errors of zero
    dev = (est[ell] / cl[ell] - 1) / np.sqrt(2 / (2 * ell + 1))
    assert abs(dev.mean()) < 4 / math.sqrt(ell.size)
    assert 0.8 < dev.std() < 1.2
    assert np.all(a[AlmLayout(400).lm()[1] == 0].imag == 0)
    np.testing.assert_array_equal(sphgpu.synalm(cl, seed=3), a)


def test_synfast_is_reproducible_and_beamed():
    cl = planck2018_cl(47)
    m, a = sphgpu.synfast(cl, 16, seed=7, fwhm_arcmin=120.0, alm=True)
    assert m.shape == (12 * 16**2,)
    np.testing.assert_array_equal(m, sphgpu.synfast(cl, 16, seed=7, fwhm_arcmin=120.0))
    raw = sphgpu.synalm(cl, seed=7)
    np.testing.assert_allclose(a, sphgpu.almxfl(raw, sphgpu.gauss_beam(math.radians(2.0), 47)))
    np.testing.assert_allclose(m, sphgpu.alm2map(a, 16), rtol=TOL["same_path_rtol"])
