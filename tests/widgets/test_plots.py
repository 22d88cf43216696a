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


def _cut_texts(fig):
    """Texts of a rendered figure that run past its edges, and titles wider than their axes."""
    from sphgpu.widgets._base import figure_png

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure_png(fig)                                   # renders as the panels do
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
        fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    bad = []
    for ax in fig.axes:
        box = ax.get_window_extent(r)
        for t in (ax.title, ax.xaxis.label, ax.yaxis.label):
            if not t.get_text() or not t.get_visible():
                continue
            e = t.get_window_extent(r)
            if e.x0 < -1 or e.x1 > W + 1 or e.y0 < -1 or e.y1 > H + 1:
                bad.append(("outside the figure", t.get_text()))
            if t is ax.title and e.width > box.width * 1.05:
                bad.append(("wider than its axes", t.get_text()))
    return bad


def test_long_titles_are_wrapped_not_cut():
    from sphgpu.widgets._base import new_figure

    fig = new_figure(6.0, 3.0)
    axs = fig.subplots(1, 2)
    axs[1].set_title("time (measured cost model; predicted speedup over all harmonic 0.0558x)")
    assert not _cut_texts(fig)
    assert "\n" in axs[1].get_title()


def test_panel_figures_cut_no_text(tmp_path, monkeypatch, no_gpu):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    from sphgpu.widgets.kernel_split import KernelSplitModel
    from sphgpu.widgets.montecarlo import MonteCarloModel
    from sphgpu.widgets.speedup import SpeedupModel

    ks = KernelSplitModel(nside=16, backend="cpu", cost_model="measured", l_cut=10,
                          theta_cut_arcmin=3000.0)
    ks.run()
    mc = MonteCarloModel(nsims=3, nside=8, backend="cpu")
    mc.run()
    figs = {"kernel split": ks.figure(), "kernel split map": ks.map_figure(),
            "monte carlo": mc.figure(), "speedup": SpeedupModel(backend="cpu").figure()}
    for name, fig in figs.items():
        assert fig is not None, name
        assert not _cut_texts(fig), (name, _cut_texts(fig))
