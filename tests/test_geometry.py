import math

import ducc0
import numpy as np
import pytest

from sphgpu import RingGeometry

NSIDES = [1, 2, 3, 5, 16, 33, 64, 256, 1000]


@pytest.mark.parametrize("nside", NSIDES)
def test_healpix_matches_ducc0(nside):
    g = RingGeometry.healpix(nside)
    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    assert g.nrings == 4 * nside - 1 and g.npix == 12 * nside**2
    np.testing.assert_allclose(g.theta, info["theta"], rtol=0, atol=2e-15)
    np.testing.assert_allclose(g.phi0, info["phi0"], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(g.nphi, info["nphi"].astype(np.int64))
    np.testing.assert_array_equal(g.ringstart, info["ringstart"].astype(np.int64))
    np.testing.assert_allclose(g.pixel_weights().sum(), 4 * math.pi, rtol=1e-14)


@pytest.mark.parametrize("nside", [1, 2, 4, 64, 1024])   # healpy.ringinfo needs powers of two
def test_healpix_matches_healpy_ringinfo(nside):
    hp = pytest.importorskip("healpy")
    g = RingGeometry.healpix(nside)
    start, ringpix, costheta, sintheta, shifted = hp.ringinfo(nside, np.arange(1, 4 * nside))
    np.testing.assert_array_equal(g.ringstart, start)
    np.testing.assert_array_equal(g.nphi, ringpix)
    np.testing.assert_allclose(np.cos(g.theta), costheta, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.sin(g.theta), sintheta, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(g.phi0 > 0, shifted)


@pytest.mark.parametrize("nside", [1, 4, 8])
def test_pixel_angles_match_healpy(nside):
    hp = pytest.importorskip("healpy")
    theta, phi = RingGeometry.healpix(nside).pixel_angles()
    t, p = hp.pix2ang(nside, np.arange(12 * nside**2))
    np.testing.assert_allclose(theta, t, atol=1e-14)
    np.testing.assert_allclose(phi, p, atol=1e-13)


@pytest.mark.parametrize("make, rule, ntheta", [
    (RingGeometry.gauss_legendre, "GL", 7),
    (RingGeometry.clenshaw_curtis, "CC", 9),
    (lambda n: RingGeometry.equiangular(n, poles=False), "F1", 8),
])
def test_regular_grids_integrate_exactly(make, rule, ntheta):
    g = make(ntheta)
    assert g.theta[0] < g.theta[-1] and np.all(np.diff(g.theta) > 0)
    np.testing.assert_allclose(g.weight * g.nphi,
                               ducc0.sht.experimental.get_gridweights(rule, ntheta), rtol=1e-14)
    # Integral of cos(theta)^n over the sphere is 4 pi/(n+1) for even n, 0 for odd n.
    theta, _ = g.pixel_angles()
    w = g.pixel_weights()
    for n in range(2 * g.natural_lmax + 1):     # products of two harmonics up to natural_lmax
        exact = 4 * math.pi / (n + 1) if n % 2 == 0 else 0.0
        assert abs(np.sum(w * np.cos(theta) ** n) - exact) < 1e-13


def test_equiangular_nodes():
    cc = RingGeometry.clenshaw_curtis(5)
    np.testing.assert_allclose(cc.theta, np.linspace(0, math.pi, 5))
    f1 = RingGeometry.equiangular(4, 6, poles=False)
    np.testing.assert_allclose(f1.theta, math.pi * (np.arange(4) + 0.5) / 4)
    assert f1.npix == 24 and cc.natural_lmax == 2 and f1.natural_lmax == 1


def test_rings_subgeometry_addresses_the_parent_map():
    g = RingGeometry.healpix(5)
    sub = g.rings(slice(3, 9))
    assert sub.nrings == 6
    assert sub.pixel_offset == g.ringstart[3] and sub.ringstart[0] == 0
    np.testing.assert_array_equal(sub.theta, g.theta[3:9])
    assert sub.pixel_offset + sub.npix == g.ringstart[9]
    subsub = sub.rings(slice(2, 4))
    assert subsub.pixel_offset == g.ringstart[5]
    with pytest.raises(ValueError, match="index"):
        g.rings(slice(4, 4))
    with pytest.raises(ValueError, match="index"):
        g.rings(slice(0, 9, 2))
    with pytest.raises(TypeError, match="index"):
        g.rings(3)


@pytest.mark.parametrize("g", [RingGeometry.healpix(3), RingGeometry.gauss_legendre(6),
                               RingGeometry.clenshaw_curtis(7),
                               RingGeometry(np.array([0.3, 1.0, 2.0]), np.zeros(3),
                                            np.array([4, 4, 4]), np.array([0, 4, 8]),
                                            np.ones(3))])
def test_ring_pairs_cover_every_ring_once(g):
    north, south = g.ring_pairs()
    rings = np.concatenate([north, south[south >= 0]])
    np.testing.assert_array_equal(np.sort(rings), np.arange(g.nrings))
    paired = south >= 0
    np.testing.assert_allclose(g.theta[north[paired]] + g.theta[south[paired]], math.pi)


def test_bad_geometry_input():
    with pytest.raises(ValueError, match="nside"):
        RingGeometry.healpix(0)
    with pytest.raises(TypeError, match="nside"):
        RingGeometry.healpix(4.0)
    with pytest.raises(TypeError, match="ntheta"):
        RingGeometry.gauss_legendre("8")
    with pytest.raises(ValueError, match="ntheta"):
        RingGeometry.clenshaw_curtis(1)
    with pytest.raises(ValueError, match="theta"):
        RingGeometry(np.array([4.0]), [0.0], [4], [0], [1.0])
    with pytest.raises(ValueError, match="nphi"):
        RingGeometry(np.array([1.0, 2.0]), [0.0, 0.0], [4], [0, 4], [1.0, 1.0])


def test_healpix_above_its_largest_nside_is_refused_naming_nside():
    """nside 2**30: 12 nside**2 pixels overflow int64 (NumPy had failed allocating the rings,
    naming neither nside nor the size)."""
    for nside in (2**30, 2**40):
        with pytest.raises(ValueError, match=r"nside=\d+ is above HEALPix's largest, 2\*\*29"):
            RingGeometry.healpix(nside)
    with pytest.raises(ValueError, match=r"ntheta=.*nphi=.*64-bit"):
        RingGeometry.gauss_legendre(2**20, 2**60)
    with pytest.raises(ValueError, match=r"ntheta=.*nphi=.*64-bit"):
        RingGeometry.equiangular(2**32)


@pytest.mark.parametrize("make, words", [
    (lambda: RingGeometry.healpix(2**29), r"nside=536870912 needs 256\.0 GiB"),
    (lambda: RingGeometry.healpix(2**24), r"nside=16777216 needs 8\.0 GiB"),
    (lambda: RingGeometry.gauss_legendre(2**30), r"ntheta=1073741824 needs 128\.0 GiB"),
    (lambda: RingGeometry.equiangular(2**26, poles=False), r"ntheta=67108864 needs 8\.0 GiB"),
    (lambda: RingGeometry.healpix(2**12).pixel_angles(), r"nside=4096 needs 3\.0 GiB"),
    (lambda: RingGeometry.healpix(2**12).pixel_weights(), r"nside=4096 needs 1\.5 GiB"),
])
def test_grids_too_large_for_memory_say_so_before_allocating(monkeypatch, make, words):
    """A machine of 1 GiB: the error names the size argument and the memory it needs, before
    NumPy allocates anything (and it is not cached as a geometry)."""
    from sphgpu import _validate

    monkeypatch.setattr(_validate, "_physical_memory", lambda: 2**30)
    with pytest.raises(MemoryError, match=words + r" .*this machine's 1\.0 GiB"):
        make()
