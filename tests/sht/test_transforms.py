"""alm2map / map2alm on every backend against ducc0, healpy and exact quadrature."""

import ducc0
import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.sht import _cpu

from sphgpu.testing import TOL, assert_rel_close, random_alm, random_map, rel_err

NSIDES = [1, 2, 3, 5, 16, 33, 64, 256]
REFERENCE_MAX_NSIDE = 16     # the NumPy reference is slow: small sizes only


def _cases():
    for nside in NSIDES:
        for lmax in sorted({nside, 2 * nside, 3 * nside - 1, 4 * nside}):
            for mmax in sorted({lmax, lmax // 2}):
                yield nside, lmax, mmax


CASES = list(_cases())


def _ducc0_synthesis(alm, nside, layout):
    base = ducc0.healpix.Healpix_Base(nside, "RING")
    return base.sht_info() and ducc0.sht.synthesis(
        alm=alm[None], lmax=layout.lmax, mmax=layout.mmax, spin=0,
        **base.sht_info())[0]


def _ducc0_adjoint(m, nside, layout):
    base = ducc0.healpix.Healpix_Base(nside, "RING")
    w = 4 * np.pi / m.size
    return ducc0.sht.adjoint_synthesis(map=(m * w)[None], lmax=layout.lmax, mmax=layout.mmax,
                                       spin=0, **base.sht_info())[0]


def _backends(nside):
    yield "cpu", lambda a, L, g: sphgpu.alm2map(a, g.nside, L.lmax, L.mmax, backend="cpu"), \
        lambda m, L, g: sphgpu.map2alm(m, L.lmax, L.mmax, iter=0, backend="cpu")
    # the numba twin of the GPU algorithm (recurrence of sphgpu.sht.legendre)
    yield "twin", lambda a, L, g: _cpu.twin_synthesis(a[None], L, g)[0], \
        lambda m, L, g: _cpu.twin_analysis(m[None], L, g)[0]
    if nside <= REFERENCE_MAX_NSIDE:
        yield "reference", \
            lambda a, L, g: sphgpu.alm2map(a, g.nside, L.lmax, L.mmax, backend="reference"), \
            lambda m, L, g: sphgpu.map2alm(m, L.lmax, L.mmax, iter=0, backend="reference")


@pytest.mark.parametrize("nside, lmax, mmax", CASES)
def test_every_backend_matches_ducc0(nside, lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    g = RingGeometry.healpix(nside)
    alm = random_alm(rng, layout)
    m = rng.standard_normal(g.npix)
    want_map = _ducc0_synthesis(alm, nside, layout)
    want_alm = _ducc0_adjoint(m, nside, layout)
    for name, synth, anal in _backends(nside):
        assert_rel_close(synth(alm, layout, g), want_map, "vs_ducc0", f"{name} synthesis")
        assert_rel_close(anal(m, layout, g), want_alm, "vs_ducc0", f"{name} adjoint")


@pytest.mark.parametrize("nside", [1, 2, 5, 16, 64])
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_map2alm_iter3_matches_healpy(nside, backend, rng):
    hp = pytest.importorskip("healpy")
    if backend == "reference" and nside > REFERENCE_MAX_NSIDE:
        pytest.skip("reference backend: small sizes only")
    m = random_map(rng, nside)
    want = hp.map2alm(m, iter=3)
    got = sphgpu.map2alm(m, backend=backend)
    assert rel_err(got, want) <= TOL["vs_healpy_iter"]
    lmax = 2 * nside
    want = hp.map2alm(m, lmax=lmax, mmax=nside, iter=1)
    got = sphgpu.map2alm(m, lmax, nside, iter=1, backend=backend)
    assert rel_err(got, want) <= TOL["vs_healpy_iter"]


@pytest.mark.parametrize("nside", [4, 33])
def test_alm2map_matches_healpy(nside, rng):
    hp = pytest.importorskip("healpy")
    layout = AlmLayout(3 * nside - 1)
    alm = random_alm(rng, layout)
    assert rel_err(sphgpu.alm2map(alm, nside), hp.alm2map(alm, nside)) <= TOL["vs_ducc0"]


@pytest.mark.parametrize("make", [lambda L: RingGeometry.gauss_legendre(L + 1),
                                  lambda L: RingGeometry.gauss_legendre(L + 1, 2 * L + 5),
                                  lambda L: RingGeometry.clenshaw_curtis(2 * L + 2),
                                  lambda L: RingGeometry.equiangular(2 * L + 1, poles=False)])
@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("lmax", [0, 1, 7, 40])
def test_exact_grids_round_trip(make, backend, lmax, rng):
    layout = AlmLayout(lmax)
    g = make(lmax)
    alm = random_alm(rng, layout)
    m = sphgpu.alm2map(alm, geometry=g, backend=backend)
    back = sphgpu.map2alm(m, lmax, iter=0, geometry=g, backend=backend)
    assert rel_err(back, alm) <= TOL["gl_roundtrip"]


def test_gauss_legendre_round_trip_twin_at_lmax_256(rng):
    layout = AlmLayout(256, 200)
    g = RingGeometry.gauss_legendre(257)
    alm = random_alm(rng, layout)
    m = _cpu.twin_synthesis(alm[None], layout, g)
    assert rel_err(_cpu.twin_analysis(m, layout, g)[0], alm) <= TOL["gl_roundtrip"]


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_batches_equal_single_transforms(backend, rng):
    nside, layout = 4, AlmLayout(9)
    alms = random_alm(rng, layout, k=3)
    # pol=False: three rows are a batch of spin-0 sets, not T, E, B
    maps = sphgpu.alm2map(alms, nside, pol=False, backend=backend)
    assert maps.shape == (3, 12 * nside**2)
    for i in range(3):
        np.testing.assert_allclose(maps[i], sphgpu.alm2map(alms[i], nside, backend=backend),
                                   rtol=0, atol=TOL["same_path_atol"])
    back = sphgpu.map2alm(maps, 9, pol=False, backend=backend)
    assert back.shape == (3, layout.size)
    for i in range(3):
        np.testing.assert_allclose(back[i], sphgpu.map2alm(maps[i], 9, backend=backend),
                                   rtol=0, atol=TOL["same_path_atol"])


def test_ring_subgeometry_synthesizes_its_part_of_the_map(rng):
    g = RingGeometry.healpix(8)
    layout = AlmLayout(20)
    alm = random_alm(rng, layout)
    full = sphgpu.alm2map(alm, geometry=g)
    sub = g.rings(slice(5, 17))
    part = sphgpu.alm2map(alm, geometry=sub)
    np.testing.assert_allclose(part, full[sub.pixel_offset:sub.pixel_offset + sub.npix],
                               rtol=0, atol=TOL["same_path_atol"])
