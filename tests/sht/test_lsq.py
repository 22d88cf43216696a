"""map2alm_lsq against healpy's (same a_lm, residual and iteration count), recovery of
band-limited maps (mmax < lmax and masked pixels too), the backends, and its errors."""

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout
from sphgpu.backends import cuda_available
from sphgpu.testing import random_alm, random_map, random_pol_alm, rel_err

hp = pytest.importorskip("healpy")

#: ours against healpy's a_lm, relative L2: the same LSQR on the same real-valued problem from
#: the same start, with transforms by ducc0 on both sides; measured 1e-15 to 3e-15
VS_HEALPY = 1e-12
#: rel_res against healpy's, relative
RES_RTOL = 1e-9
#: a band-limited map fitted with tol 1e-12: its a_lm back to LSQR's stopping test
RECOVER = 1e-9


@pytest.mark.parametrize("nside, lmax, pol, k", [(4, 11, True, None), (4, 8, True, 3),
                                                 (4, 9, False, 2), (2, 3, True, 3),
                                                 (2, 7, True, None), (1, 2, True, 3)])
def test_matches_healpy(nside, lmax, pol, k, rng):
    maps = random_map(rng, nside, k=k)
    alm, rel_res, n_iter = sphgpu.map2alm_lsq(maps, lmax, lmax, pol=pol)
    want_alm, want_res, want_iter = hp.map2alm_lsq(maps, lmax, lmax, pol=pol)
    assert alm.shape == want_alm.shape and alm.dtype == np.complex128
    assert rel_err(alm, want_alm) <= VS_HEALPY
    assert rel_res == pytest.approx(want_res, rel=RES_RTOL)
    assert n_iter == want_iter and isinstance(n_iter, int) and isinstance(rel_res, float)


def test_tol_and_maxiter_match_healpy(rng):
    maps = random_map(rng, 4)
    for tol, maxiter in ((1e-3, 20), (1e-10, 3), (1e-10, 0)):
        alm, rel_res, n_iter = sphgpu.map2alm_lsq(maps, 10, 10, True, tol, maxiter)
        want_alm, want_res, want_iter = hp.map2alm_lsq(maps, 10, 10, True, tol, maxiter)
        assert n_iter == want_iter <= maxiter
        assert rel_err(alm, want_alm) <= VS_HEALPY
        assert rel_res == pytest.approx(want_res, rel=RES_RTOL)


@pytest.mark.parametrize("lmax, mmax", [(8, 8), (8, 3)])
def test_recovers_band_limited_maps(lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    teb = random_pol_alm(rng, layout)
    maps = sphgpu.alm2map(teb, 4, lmax=lmax, mmax=mmax)
    alm, rel_res, n_iter = sphgpu.map2alm_lsq(maps, lmax, mmax, tol=1e-12, maxiter=50)
    assert alm.shape == (3, layout.size)            # healpy's 1.20.1 would give mmax = lmax
    assert rel_err(alm, teb) <= RECOVER and rel_res <= RECOVER
    assert np.all(alm[:, :lmax + 1].imag == 0)


def test_masked_pixels_are_left_out(rng):
    layout = AlmLayout(5)
    alm = random_alm(rng, layout)
    m = sphgpu.alm2map(alm, 4, pol=False)
    cut = m.copy()
    cut[:40] = sphgpu.UNSEEN                 # 40 of 192 pixels: still overdetermined
    got, rel_res, _ = sphgpu.map2alm_lsq(cut, 5, 5, tol=1e-12, maxiter=100)
    assert rel_err(got, alm) <= RECOVER and rel_res <= RECOVER
    masked = np.ma.masked_array(m, mask=np.arange(m.size) < 40)
    np.testing.assert_array_equal(sphgpu.map2alm_lsq(masked, 5, 5, tol=1e-12, maxiter=100)[0],
                                  got)


def test_zero_map(rng):
    alm, rel_res, n_iter = sphgpu.map2alm_lsq(np.zeros(48), 3, 3)
    assert not alm.any() and rel_res == 0.0 and n_iter == 0


def test_reference_backend_agrees(rng):
    maps = random_map(rng, 1, k=3)
    cpu = sphgpu.map2alm_lsq(maps, 2, 2, backend="cpu")
    ref = sphgpu.map2alm_lsq(maps, 2, 2, backend="reference")
    assert rel_err(ref[0], cpu[0]) <= VS_HEALPY and ref[2] == cpu[2]


@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
def test_cuda_backend_agrees(rng):
    maps = random_map(rng, 1)
    cpu = sphgpu.map2alm_lsq(maps, 2, 2, maxiter=4, backend="cpu")
    gpu = sphgpu.map2alm_lsq(maps, 2, 2, maxiter=4, backend="cuda")
    assert rel_err(gpu[0], cpu[0]) <= VS_HEALPY and gpu[2] == cpu[2]


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((np.zeros(47), 3, 3), {}, ValueError, "12 * nside**2"),
    ((np.zeros(48), 3, 4), {}, ValueError, "mmax"),
    ((np.zeros(48), -1, 0), {}, ValueError, "lmax"),
    ((np.zeros(48), 3, 3), dict(tol=-1.0), ValueError, "tol"),
    ((np.zeros(48), 3, 3), dict(tol=float("nan")), ValueError, "tol"),
    ((np.zeros(48), 3, 3), dict(maxiter=2.5), TypeError, "maxiter"),
    ((np.full(48, np.nan), 3, 3), {}, ValueError, "maps"),
    ((np.zeros(48, complex), 3, 3), {}, TypeError, "maps"),
])
def test_bad_input_is_named(args, kwargs, exc, words):
    with pytest.raises(exc) as info:
        sphgpu.map2alm_lsq(*args, **kwargs)
    assert words in str(info.value)


@pytest.mark.gpu
def test_device_in_device_out(rng):
    cupy = pytest.importorskip("cupy")
    maps = random_map(rng, 4, k=3)
    alm, rel_res, n_iter = sphgpu.map2alm_lsq(cupy.asarray(maps), 8, 8, backend="cuda")
    assert isinstance(alm, cupy.ndarray)
    want = hp.map2alm_lsq(maps, 8, 8)
    assert rel_err(alm.get(), want[0]) <= VS_HEALPY and n_iter == want[2]
