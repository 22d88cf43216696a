"""Maps are drawn with their true pixels: every drawn cell shows the pixel containing its
centre, as HEALPix's ang2pix (healpy, the peer library) says."""

import numpy as np
import pytest

import sphgpu
from sphgpu.widgets.plots import gnomview, mollview, pixel_of

healpy = pytest.importorskip("healpy")


def _mollweide_axes():
    from matplotlib.figure import Figure

    return Figure().add_subplot(projection="mollweide")


@pytest.mark.parametrize("nside", [16, 128, 1024])
def test_mollview_cells_are_ang2pix_of_their_centres(nside):
    geom = sphgpu.RingGeometry.healpix(nside)
    index_map = np.arange(geom.npix, dtype=np.float64)     # each pixel shows its own index
    nlon, nlat = 360, 180
    mesh = mollview(index_map, geom, _mollweide_axes(), nlon=nlon, nlat=nlat)
    drawn = np.asarray(mesh.get_array()).reshape(nlat, nlon).astype(np.int64)
    # cell centres: rows from the south, columns from the axes' left (longitude +180 deg)
    x = np.linspace(-np.pi, np.pi, nlon + 1)
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)
    xc, latc = np.meshgrid(0.5 * (x[1:] + x[:-1]), 0.5 * (lat[1:] + lat[:-1]))
    want = healpy.ang2pix(nside, np.pi / 2 - latc, np.mod(-xc, 2 * np.pi))
    np.testing.assert_array_equal(drawn, want)


def test_longitude_grows_to_the_left():
    geom = sphgpu.RingGeometry.healpix(16)
    theta, phi = healpy.pix2ang(16, np.arange(geom.npix))
    mesh = mollview(phi, geom, _mollweide_axes(), nlon=36, nlat=18)
    row = np.asarray(mesh.get_array()).reshape(18, 36)[9]     # just north of the equator
    # from the left edge (longitude 180) to the centre (0) the longitude falls
    assert row[0] > row[8] > row[16]


def test_rectangular_grids_use_their_ring_cells():
    geom = sphgpu.RingGeometry.gauss_legendre(8)
    theta = np.repeat(geom.theta, geom.nphi)
    phi = np.concatenate([p0 + 2 * np.pi * np.arange(n) / n
                          for p0, n in zip(geom.phi0, geom.nphi)])
    np.testing.assert_array_equal(pixel_of(geom, theta, phi), np.arange(geom.npix))
    custom = sphgpu.RingGeometry(geom.theta, geom.phi0, geom.nphi, geom.ringstart, geom.weight)
    with pytest.raises(ValueError, match="geometry must be"):
        pixel_of(custom, theta, phi)


def test_gnomview_shows_true_pixels_on_the_tangent_plane():
    from matplotlib.figure import Figure

    nside, lon, lat, width, n = 128, 40.0, -30.0, 20.0, 64
    geom = sphgpu.RingGeometry.healpix(nside)
    ax = Figure().add_subplot()
    img = gnomview(np.arange(geom.npix, dtype=np.float64), geom, ax, lon_deg=lon, lat_deg=lat,
                   width_deg=width, npix=n)
    drawn = np.asarray(img.get_array()).astype(np.int64)
    # the centre cells hold the pixel of the chosen point
    centre = healpy.ang2pix(nside, np.deg2rad(90 - lat), np.deg2rad(lon))
    assert centre in drawn[n // 2 - 1:n // 2 + 1, n // 2 - 1:n // 2 + 1]
    # each cell's pixel is within one pixel size of the gnomonic inverse of the cell centre
    half = np.tan(np.deg2rad(width) / 2)
    u = (np.arange(n) + 0.5) / n * 2 * half - half
    x, y = np.meshgrid(u[::-1], u)                 # east on the left, north up
    rho = np.hypot(x, y)
    c = np.arctan(rho)
    lat0, lon0 = np.deg2rad(lat), np.deg2rad(lon)
    with np.errstate(invalid="ignore", divide="ignore"):
        b = np.arcsin(np.cos(c) * np.sin(lat0) + np.where(rho > 0, y * np.sin(c) * np.cos(lat0)
                                                          / rho, 0))
    a = lon0 + np.arctan2(x * np.sin(c), rho * np.cos(lat0) * np.cos(c)
                          - y * np.sin(lat0) * np.sin(c))
    want = healpy.ang2pix(nside, np.pi / 2 - b, np.mod(a, 2 * np.pi))
    np.testing.assert_array_equal(drawn, want)
    with pytest.raises(ValueError, match="lat_deg"):
        gnomview(np.zeros(geom.npix), geom, ax, lon_deg=0, lat_deg=91)


def test_values_of_the_wrong_shape_are_refused():
    geom = sphgpu.RingGeometry.healpix(4)
    with pytest.raises(ValueError, match="values must have shape"):
        mollview(np.zeros(10), geom, _mollweide_axes())


def test_unseen_and_masked_pixels_are_drawn_as_masked():
    """hp.UNSEEN pixels (and numpy.ma masks) are masked cells in the colormap's grey, not the
    colour of -1.6e30 at the bottom of the scale, and do not stretch an automatic scale."""
    from matplotlib.colors import to_rgba

    from sphgpu.widgets import plots

    geom = sphgpu.RingGeometry.healpix(8)
    theta, _ = healpy.pix2ang(8, np.arange(geom.npix))
    values = np.cos(theta)
    cut = np.abs(values) < 0.3
    for given in (np.where(cut, sphgpu.UNSEEN, values), np.ma.masked_array(values, cut)):
        mesh = mollview(given, geom, _mollweide_axes(), nlon=72, nlat=36, cmap="RdBu_r")
        mask = np.ma.getmaskarray(mesh.get_array()).ravel()
        lat = np.linspace(-90, 90, 37)
        lat_c = np.repeat(0.5 * (lat[1:] + lat[:-1]), 72)
        # cells well inside the cut are masked, cells well outside are drawn
        assert mask[np.abs(lat_c) < 15].all() and not mask[np.abs(lat_c) > 20].any()
        assert mesh.norm.vmin > -1.0 - 1e-12
        assert mesh.cmap.get_bad() == pytest.approx(to_rgba(plots.MASKED_COLOR))
    from matplotlib.figure import Figure

    image = gnomview(np.where(cut, sphgpu.UNSEEN, values), geom, Figure().add_subplot(),
                     lon_deg=0, lat_deg=0, width_deg=10, npix=20)
    assert np.ma.getmaskarray(image.get_array()).all()         # the zoom lies in the cut
