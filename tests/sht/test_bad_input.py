"""Every public transform refuses bad input with an error that names the argument."""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry

ALM = np.zeros(AlmLayout(8).size, dtype=complex)
MAP = np.zeros(12 * 4**2)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sphgpu.alm2map(ALM[:-1], 4), ValueError, "alms has 44 coefficients"),
    (lambda: sphgpu.alm2map(ALM, 4, lmax=9), ValueError, "alms has 45 coefficients"),
    (lambda: sphgpu.alm2map(ALM, 4, lmax=8, mmax=9), ValueError, "mmax"),
    (lambda: sphgpu.alm2map(ALM, 4, lmax=-1), ValueError, "lmax"),
    (lambda: sphgpu.alm2map(ALM, 4, lmax=8.0), TypeError, "lmax"),
    (lambda: sphgpu.alm2map(ALM, 0), ValueError, "nside"),
    (lambda: sphgpu.alm2map(ALM, -4), ValueError, "nside"),
    (lambda: sphgpu.alm2map(ALM, 4.5), TypeError, "nside"),
    (lambda: sphgpu.alm2map(ALM.real, 4), TypeError, "alms must be complex"),
    (lambda: sphgpu.alm2map(ALM.astype(object), 4), TypeError, "alms"),
    (lambda: sphgpu.alm2map(np.full_like(ALM, np.nan), 4), ValueError, "alms contains NaN"),
    (lambda: sphgpu.alm2map(np.zeros((2, 2, 45), complex), 4), ValueError, "alms has shape"),
    (lambda: sphgpu.alm2map(np.zeros((2, 45), complex), 4), ValueError, "3 rows"),
    (lambda: sphgpu.alm2map(np.zeros((2, 3, 45), complex), 4, pol=False), ValueError, "pol=False"),
    (lambda: sphgpu.alm2map(np.zeros((2, 2, 3, 45), complex), 4), ValueError, "alms must be"),
    (lambda: sphgpu.alm2map(ALM, 4, pol="yes"), TypeError, "pol"),
    (lambda: sphgpu.alm2map(ALM, 4, pixwin=True, geometry=RingGeometry.gauss_legendre(9)),
     ValueError, "nside=4 disagrees"),
    (lambda: sphgpu.alm2map(ALM, geometry=RingGeometry.gauss_legendre(9), pixwin=True),
     ValueError, "pixwin"),
    (lambda: sphgpu.alm2map_spin(np.zeros((2, 45), complex), 4, -1, 8), ValueError, "spin"),
    (lambda: sphgpu.alm2map_spin(np.zeros((2, 45), complex), 4, None, 8), TypeError, "spin"),
    (lambda: sphgpu.alm2map_spin(np.zeros((3, 45), complex), 4, 2, 8), ValueError, "alms"),
    (lambda: sphgpu.alm2map_spin(ALM, 4, 2, 8), ValueError, "alms"),
    (lambda: sphgpu.map2alm_spin(np.zeros((2, 192)), -2), ValueError, "spin"),
    (lambda: sphgpu.map2alm_spin(np.zeros((3, 192)), 2), ValueError, "maps"),
    (lambda: sphgpu.map2alm(np.zeros((2, 192))), ValueError, "3 rows"),
    (lambda: sphgpu.map2alm(np.where(np.arange(3 * 192).reshape(3, 192) == 5, np.nan, 0.0)),
     ValueError, "maps contains NaN"),
    (lambda: sphgpu.alm2map(ALM), ValueError, "nside"),
    (lambda: sphgpu.alm2map(ALM, 4, geometry=RingGeometry.healpix(8)), ValueError, "nside"),
    (lambda: sphgpu.alm2map(ALM, geometry="healpix"), TypeError, "geometry"),
    (lambda: sphgpu.alm2map(ALM, 4, backend="gpu"), ValueError, "backend"),
    (lambda: sphgpu.alm2map(ALM, 2**20), MemoryError, "nside=1048576 needs .* GiB for the maps"),
    (lambda: sphgpu.map2alm(MAP, lmax=2 * 10**6), MemoryError, "lmax=2000000 needs"),
    (lambda: sphgpu.map2alm_spin(np.zeros((2, 192)), 2, lmax=2 * 10**6), MemoryError, "lmax"),
    (lambda: sphgpu.map2alm(MAP[:-1]), ValueError, "maps has 191 pixels"),
    (lambda: sphgpu.map2alm(np.append(MAP, np.inf)), ValueError, "maps"),
    (lambda: sphgpu.map2alm(np.where(np.arange(192) == 5, np.nan, MAP)), ValueError, "maps contains NaN"),
    (lambda: sphgpu.map2alm(MAP + 0j), TypeError, "maps must be real"),
    (lambda: sphgpu.map2alm(MAP.astype(bool)), TypeError, "maps"),
    (lambda: sphgpu.map2alm(MAP, lmax=-2), ValueError, "lmax"),
    (lambda: sphgpu.map2alm(MAP, lmax=5, mmax=6), ValueError, "mmax"),
    (lambda: sphgpu.map2alm(MAP, iter=-1), ValueError, "iter"),
    (lambda: sphgpu.map2alm(MAP, iter=1.5), TypeError, "iter"),
    (lambda: sphgpu.map2alm(MAP, geometry=RingGeometry.gauss_legendre(5)), ValueError, "maps has 192"),
    (lambda: sphgpu.map2alm("map"), TypeError, "maps"),
    (lambda: sphgpu.smoothing(MAP, fwhm=-1.0), ValueError, "fwhm"),
    (lambda: sphgpu.smoothing(MAP, fwhm=math.nan), ValueError, "fwhm"),
    (lambda: sphgpu.smoothing(MAP, fwhm=0.1, fwhm_arcmin=3.0), ValueError, "fwhm_arcmin"),
    (lambda: sphgpu.smoothing(MAP, fwhm=0.1, beam_window=np.ones(12)), ValueError, "beam_window"),
    (lambda: sphgpu.smoothing(MAP, beam_window=np.full(12, np.nan)), ValueError, "beam_window"),
    (lambda: sphgpu.smoothing(np.zeros((3, 192)), beam_window=np.ones((12, 2))), ValueError,
     "beam_window"),
    (lambda: sphgpu.gauss_beam("1 deg"), TypeError, "fwhm"),
    (lambda: sphgpu.gauss_beam(0.1, lmax=-1), ValueError, "lmax"),
    (lambda: sphgpu.synalm(np.ones((2, 5))), ValueError, "cls has 2 spectra"),
    (lambda: sphgpu.synalm(np.ones((3, 3, 5))), ValueError, "cls must be"),
    (lambda: sphgpu.synfast(np.ones((3, 5)), 4), ValueError, "cls has 3 spectra"),
    (lambda: sphgpu.synfast(np.ones((10, 5)), 4), ValueError, "pol=True"),
    (lambda: sphgpu.synfast(np.ones(5), 0), ValueError, "nside"),
    (lambda: sphgpu.alm2cl(ALM, ALM[:-1]), ValueError, "alms2"),
    (lambda: sphgpu.almxfl(ALM, np.ones((2, 3))), ValueError, "fl"),
    (lambda: sphgpu.almxfl(ALM.astype(np.complex64), np.ones(3), inplace=True), TypeError, "inplace"),
    (lambda: sphgpu.anafast(MAP, MAP[:-12]), ValueError, "map2"),
])
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_cuda_backend_without_gpu_is_a_clear_error(monkeypatch):
    from sphgpu import backends
    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no CUDA GPU (test)"))
    with pytest.raises(sphgpu.BackendUnavailableError, match="backend='cuda'"):
        sphgpu.alm2map(ALM, 4, backend="cuda")


def test_float32_and_int_inputs_are_computed_in_float64():
    m32 = np.random.default_rng(0).standard_normal(192).astype(np.float32)
    a32 = sphgpu.map2alm(m32, iter=0)
    assert a32.dtype == np.complex128
    np.testing.assert_allclose(a32, sphgpu.map2alm(m32.astype(np.float64), iter=0))
    assert sphgpu.alm2map(ALM.astype(np.complex64), 4).dtype == np.float64
    assert sphgpu.map2alm(np.ones(192, dtype=np.int32), iter=0).dtype == np.complex128
