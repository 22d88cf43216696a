"""HEALPix RING cells of points (against healpy.ang2pix) and bucketing points by cell."""

import numpy as np
import pytest

from sphgpu.sort import bucket_points, healpix_cells


def points(rng, nside, n=20000):
    """Random points on the sphere, plus the hard places: poles, the belt edges z = +-2/3,
    the cap ring edges, phi on quadrant boundaries and outside [0, 2 pi)."""
    z = np.concatenate([rng.uniform(-1, 1, n), [1.0, -1.0, 2 / 3, -2 / 3, 0.0],
                        1 - np.arange(1, nside + 1) ** 2 / (3.0 * nside**2),
                        np.linspace(-2 / 3, 2 / 3, 4 * nside + 1)])
    z = np.concatenate([z, -z[n:]])
    theta = np.arccos(z)
    theta = np.concatenate([theta, rng.uniform(0, 0.02, 200), np.pi - rng.uniform(0, 0.02, 200),
                            [1e-14, np.pi - 1e-14]])
    phi = rng.uniform(-4 * np.pi, 4 * np.pi, theta.size)
    phi[: 8 * 4] = np.repeat(np.arange(8) * np.pi / 2, 4)
    phi[-3:] = [-1e-300, np.nextafter(2 * np.pi, 0), 2 * np.pi]
    return theta, phi


@pytest.mark.parametrize("nside", [1, 2, 3, 5, 16, 1000])
def test_matches_healpy(rng, nside):
    healpy = pytest.importorskip("healpy")
    theta, phi = points(rng, nside)
    cells = healpix_cells(theta, phi, nside)
    assert cells.dtype == np.int64
    assert np.array_equal(cells, healpy.ang2pix(nside, theta, phi))


@pytest.mark.parametrize("nside", [1, 3, 8])
def test_pixel_centres_map_to_their_pixel(nside):
    healpy = pytest.importorskip("healpy")
    npix = 12 * nside**2
    theta, phi = healpy.pix2ang(nside, np.arange(npix))
    assert np.array_equal(healpix_cells(theta, phi, nside), np.arange(npix))


def test_shapes_broadcast():
    assert healpix_cells(0.0, 0.0, 4).shape == ()
    assert healpix_cells(0.0, 0.0, 4) == 0
    assert healpix_cells(np.pi, 0.0, 4) == 12 * 16 - 4
    assert healpix_cells([[0.5], [2.5]], [0.0, 1.0, 2.0], 4).shape == (2, 3)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("nside, n", [(1, 0), (1, 1), (2, 33), (5, 2000), (64, 100001)])
def test_bucket_points(rng, backend, nside, n):
    theta = np.arccos(rng.uniform(-1, 1, n))
    phi = rng.uniform(0, 2 * np.pi, n)
    if n:
        theta[: n // 4] = theta[0]                                       # duplicate points
    order, start = bucket_points(theta, phi, nside, backend=backend)
    cells = healpix_cells(theta, phi, nside)
    assert order.dtype == np.int64 and start.dtype == np.int64
    assert start.shape == (12 * nside**2 + 1,) and start[0] == 0 and start[-1] == n
    assert np.array_equal(order, np.argsort(cells, kind="stable"))
    assert np.array_equal(np.diff(start), np.bincount(cells, minlength=12 * nside**2))
    for c in rng.integers(0, 12 * nside**2, 20):
        assert np.all(cells[order[start[c]:start[c + 1]]] == c)
