"""Plots shared by the panels and notebooks, with matplotlib (and ducc0 for HEALPix pixels).

Maps are drawn with their true pixels: every drawn cell shows the pixel that contains the
cell's centre. On HEALPix that pixel is ducc0's ``ang2pix`` (the HEALPix library's own
answer); on the other ring grids sphgpu makes (Gauss-Legendre, Clenshaw-Curtis, Fejer) a pixel
is by construction the band between the midpoints of neighbouring rings times an equal share
of its ring in longitude, so the nearest ring and the nearest pixel along it are exact there.
"""

from __future__ import annotations

import numpy as np

from sphgpu import UNSEEN

__all__ = ["mollview", "gnomview", "pixel_of", "mollweide_x", "spectrum_plot", "graticule",
           "readable", "fit_titles", "MASKED_COLOR", "coupling_image", "bandpower_plot"]
#: the names sphgpu.widgets offers from this module; the package reads this line from the
#: source, since importing a panel module imports ipywidgets and matplotlib
_PACKAGE_EXPORTS = ("mollview", "spectrum_plot")

#: Font sizes (points) of the panels' figures: at 96 dpi 10 pt is 13 screen pixels.
FONT = {"tick": 10, "label": 11, "legend": 10, "title": 11}
#: Grid kinds whose pixels are the cells of their rings (see the module docstring).
_RECTANGULAR_KINDS = ("gauss-legendre", "clenshaw-curtis", "fejer1")


def pixel_of(geometry, theta, phi) -> np.ndarray:
    """Index of the pixel of ``geometry`` that contains each direction.

    Parameters
    ----------
    geometry : sphgpu.RingGeometry
        HEALPix (any nside, the whole sphere) or a Gauss-Legendre / Clenshaw-Curtis / Fejer grid.
    theta, phi : ndarray of float64, same shape
        Colatitude in [0, pi] and longitude in radians.

    Returns
    -------
    ndarray of int64, the shape of ``theta``: indices into the flat map (RING order).
    """
    theta = np.asarray(theta, dtype=np.float64)
    phi = np.mod(np.asarray(phi, dtype=np.float64), 2 * np.pi)
    if theta.shape != phi.shape:
        raise ValueError(f"theta and phi must have one shape, got {theta.shape} and {phi.shape}")
    if geometry.kind == "healpix" and geometry.pixel_offset == 0 and geometry.nside:
        import ducc0

        base = ducc0.healpix.Healpix_Base(int(geometry.nside), "RING")
        ang = np.stack([theta.ravel(), phi.ravel()], axis=-1)
        return base.ang2pix(ang).astype(np.int64).reshape(theta.shape)
    if geometry.kind not in _RECTANGULAR_KINDS:
        raise ValueError(f"geometry must be a whole-sphere HEALPix grid or one of "
                         f"{', '.join(_RECTANGULAR_KINDS)}, not {geometry!r}: its pixels have no "
                         f"shape to draw")
    ring_edges = 0.5 * (geometry.theta[1:] + geometry.theta[:-1])
    ring = np.searchsorted(ring_edges, theta)
    nphi = geometry.nphi[ring]
    k = np.floor((phi - geometry.phi0[ring]) * nphi / (2 * np.pi) + 0.5).astype(np.int64) % nphi
    return geometry.ringstart[ring] + k


#: Colour of masked pixels (healpy draws them grey too).
MASKED_COLOR = "0.75"


def _check_values(values, geometry):
    """The map as a masked array: pixels masked in a ``numpy.ma`` array, equal to ``UNSEEN``
    or not finite are masked, so that they are drawn as masked rather than as a colour."""
    shape = np.shape(values)
    if shape != (geometry.npix,):
        raise ValueError(f"values must have shape ({geometry.npix},) for {geometry}, "
                         f"got {shape}")
    data = np.ma.getdata(values)
    bad = np.ma.getmaskarray(values) | (data == UNSEEN) | ~np.isfinite(data)
    return np.ma.masked_array(data, mask=bad)


def _masked_style(kw):
    """``kw`` with a colormap that draws masked cells in :data:`MASKED_COLOR`."""
    import matplotlib

    cmap = kw.get("cmap") or matplotlib.rcParams["image.cmap"]
    cmap = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
    return dict(kw, cmap=cmap.with_extremes(bad=MASKED_COLOR))


def mollview(values, geometry, ax, *, nlon=480, nlat=240, grid=True, **kw):
    """Draw a map on a Mollweide axes (``projection="mollweide"``) with its true pixels.

    The map is sampled on a regular longitude/latitude grid of ``nlon`` x ``nlat`` cells;
    each cell shows the pixel containing its centre (:func:`pixel_of`). Longitude grows to the
    left, as on the sky.

    Parameters
    ----------
    values : ndarray, shape (geometry.npix,)
        The map, pixels ordered ring by ring (HEALPix RING for ``RingGeometry.healpix``).
        ``UNSEEN``, NaN and ``numpy.ma``-masked pixels are drawn grey (:data:`MASKED_COLOR`).
    geometry : sphgpu.RingGeometry
    ax : matplotlib Axes with projection="mollweide"
    nlon, nlat : int
        Resolution of the drawn grid (the cost of drawing grows with nlon * nlat).
    grid : bool
        Draw a graticule (meridians and parallels every 30 degrees).
    **kw
        Passed to ``pcolormesh`` (cmap, vmin, vmax...).

    Returns
    -------
    The QuadMesh, for a colorbar; its array holds the drawn values, row by row from the south,
    each row from the axes' left (longitude +180 degrees) to its right. A direction at longitude
    ``lon`` (radians) is at the axes' x = -lon (:func:`mollweide_x`).
    """
    values = _check_values(values, geometry)
    x = np.linspace(-np.pi, np.pi, nlon + 1)
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)
    theta = np.pi / 2 - 0.5 * (lat[1:] + lat[:-1])
    phi = -0.5 * (x[1:] + x[:-1])               # the axes' x grows to the right, longitude left
    pix = pixel_of(geometry, np.repeat(theta[:, None], nlon, 1), np.tile(phi, (nlat, 1)))
    mesh = ax.pcolormesh(x, lat, values[pix], rasterized=True, **_masked_style(kw))
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    graticule(ax, grid)
    return mesh


def mollweide_x(lon_deg):
    """The Mollweide axes' x (radians) of a longitude in degrees (longitude grows to the left)."""
    return -np.deg2rad((np.asarray(lon_deg, dtype=np.float64) + 180.0) % 360.0 - 180.0)


def graticule(ax, on=True):
    """Meridians and parallels every 30 degrees on a Mollweide axes, thin and grey."""
    ax.grid(on, color="0.3", lw=0.4, alpha=0.6)


def _gnomonic_directions(lon_deg, lat_deg, width_deg, npix):
    """(theta, phi) of the centres of an npix x npix image of the tangent plane at (lon, lat),
    ``width_deg`` wide through the centre; rows from the bottom, x growing to the east (left
    on the sky is east: the image's x axis is drawn reversed)."""
    half = np.tan(np.deg2rad(width_deg) / 2)
    u = (np.arange(npix) + 0.5) / npix * 2 * half - half
    # columns run from east to west so that east is on the left, as on the sky
    x, y = np.meshgrid(u[::-1], u)
    lon0, lat0 = np.deg2rad(lon_deg), np.deg2rad(lat_deg)
    centre = np.array([np.cos(lat0) * np.cos(lon0), np.cos(lat0) * np.sin(lon0), np.sin(lat0)])
    east = np.array([-np.sin(lon0), np.cos(lon0), 0.0])
    north = np.cross(centre, east)
    d = centre[:, None, None] + x * east[:, None, None] + y * north[:, None, None]
    d /= np.linalg.norm(d, axis=0)
    theta = np.arccos(np.clip(d[2], -1.0, 1.0))
    phi = np.arctan2(d[1], d[0])
    return theta, phi


def gnomview(values, geometry, ax, *, lon_deg, lat_deg, width_deg=10.0, npix=200, **kw):
    """Draw a gnomonic (tangent-plane) zoom of a map around (lon_deg, lat_deg).

    Parameters
    ----------
    values : ndarray, shape (geometry.npix,)
    geometry : sphgpu.RingGeometry
    ax : a plain matplotlib Axes
    lon_deg, lat_deg : float
        Centre of the view in degrees (longitude in any range, latitude in [-90, 90]).
    width_deg : float
        Angle across the view through its centre, degrees, in (0, 120].
    npix : int
        Image cells per side; each shows the map's pixel containing the cell's centre.
    **kw
        Passed to ``imshow`` (cmap, vmin, vmax...).

    Returns
    -------
    The AxesImage, for a colorbar. The axes are offsets from the centre in degrees on the
    tangent plane (east to the left, as on the sky).
    """
    values = _check_values(values, geometry)
    if not -90.0 <= float(lat_deg) <= 90.0:
        raise ValueError(f"lat_deg must be in [-90, 90] degrees, got {lat_deg!r}")
    if not 0.0 < float(width_deg) <= 120.0:
        raise ValueError(f"width_deg must be in (0, 120] degrees, got {width_deg!r}")
    theta, phi = _gnomonic_directions(float(lon_deg), float(lat_deg), float(width_deg),
                                      int(npix))
    img = values[pixel_of(geometry, theta, phi)]
    half = np.rad2deg(np.tan(np.deg2rad(width_deg) / 2))
    image = ax.imshow(img, origin="lower", extent=(half, -half, -half, half),
                      interpolation="nearest", **_masked_style(kw))
    ax.set_xlabel("east offset [deg, tangent plane]")
    ax.set_ylabel("north offset [deg]")
    ax.plot([0], [0], "+", color="k", ms=10)
    return image


def readable(fig):
    """Set the fonts of a finished figure to readable sizes (:data:`FONT`); log axes get
    labels at decades only, or at 1, 2, 5 times a decade as plain numbers when the axis spans
    less than two decades (instead of minor labels like "2×10¹ 3×10¹")."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    for ax in fig.axes:
        ax.tick_params(labelsize=FONT["tick"])
        ax.xaxis.label.set_fontsize(FONT["label"])
        ax.yaxis.label.set_fontsize(FONT["label"])
        ax.title.set_fontsize(FONT["title"])
        leg = ax.get_legend()
        if leg is not None:
            for t in leg.get_texts():
                t.set_fontsize(FONT["legend"])
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale != "log":
                continue
            axis.set_minor_formatter(NullFormatter())
            lo, hi = sorted(axis.get_view_interval())
            if lo > 0 and hi / lo < 100:
                axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(plain)
    fit_titles(fig)
    return fig


def fit_titles(fig):
    """Wrap each axes title (and axis label) wider than its axes onto more lines: at the
    readable font sizes a long title ran past its neighbour or the figure's edge and was cut
    off ("time (measured cost model; predicted speedup ..." in the split tuner)."""
    import textwrap

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()        # the layout sets the axes' final widths
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        texts = [(ax.title, box.width), (ax._left_title, box.width),
                 (ax._right_title, box.width), (ax.xaxis.label, box.width),
                 (ax.yaxis.label, box.height)]
        for text, room in texts:
            s = text.get_text()
            if not s or room <= 0:
                continue
            for _ in range(3):              # the widest line sets the width: wrap, re-measure
                width = text.get_window_extent(renderer).width if text is not \
                    ax.yaxis.label else text.get_window_extent(renderer).height
                if width <= room * 1.02:
                    break
                longest = max(len(line) for line in s.splitlines())
                chars = max(8, int(longest * room / width * 0.95))
                s = "\n".join(textwrap.fill(line, chars) for line in s.splitlines())
                text.set_text(s)
    return fig


def spectrum_plot(ax, cl_model, cl_hat, *, lmin=2, band=None):
    """Input against recovered angular power spectrum, as D_l = l(l+1)C_l/2pi, with the
    cosmic-variance band of a full-sky measurement.

    Parameters
    ----------
    ax : matplotlib Axes
    cl_model, cl_hat : ndarray, shape (lmax + 1,)
        Raw C_l (muK^2 for the shipped Planck table), indexed from l = 0.
    band : ndarray, shape (lmax + 1,), optional
        One-sigma scatter of C_hat in raw C_l units; default sqrt(2/(2l+1)) C_l, that of an
        auto spectrum (a cross spectrum such as TE needs its own).
    """
    ell = np.arange(lmin, len(cl_model))
    dl = ell * (ell + 1) / (2 * np.pi)
    model = dl * cl_model[lmin:]
    band = (model * np.sqrt(2.0 / (2 * ell + 1)) if band is None
            else dl * np.asarray(band)[lmin:])
    ax.fill_between(ell, model - band, model + band, color="0.85", lw=0, label="cosmic variance")
    ax.plot(ell, dl * cl_hat[lmin:], color="#b2182b", lw=1, label="recovered")
    ax.plot(ell, model, color="k", lw=1.5, label=r"input $C_\ell b_\ell^2$")
    ax.set_xlabel(r"multipole $\ell$")
    ax.set_ylabel(r"$\ell(\ell+1)C_\ell/2\pi$ [μK²]")
    if len(ell):
        ax.set_xlim(lmin, max(lmin + 1, ell[-1]))
    ax.legend(frameon=False, fontsize=FONT["legend"])


def coupling_image(ax, matrix, *, decades=6.0):
    """A mode-coupling matrix |M_ll'| as a picture on a log colour scale (no colorbar: the
    title gives the scale, and a colorbar's extra axes slow every redraw).

    Parameters
    ----------
    ax : matplotlib Axes
    matrix : ndarray, shape (lmax + 1, lmax + 1), float64
        M[l, l'] (:attr:`sphgpu.master.Coupling.blocks`), rows l, columns l'.
    decades : float
        Decades shown below the largest |M|; smaller values are drawn at the floor.
    """
    from matplotlib.colors import LogNorm

    m = np.abs(np.asarray(matrix, dtype=np.float64))
    top = float(m.max()) or 1.0
    floor = top * 10.0 ** -decades
    ax.imshow(np.maximum(m, floor), norm=LogNorm(floor, top), origin="upper", cmap="magma",
              interpolation="nearest", aspect="auto")
    ax.set_xlabel(r"$\ell'$")
    ax.set_ylabel(r"$\ell$")
    ax.set_title(rf"coupling $|M_{{\ell\ell'}}|$, log {floor:.2g}..{top:.2g}",
                 fontsize=FONT["title"])


def bandpower_plot(ax, ell_eff, expected, bandpowers, *, label="decoupled $C_b$",
                   binned=None, log=False, sigma=None):
    """Decoupled bandpowers against the binned input, as D_b = l(l+1)C_b/2pi at each bin's
    effective multipole.

    Parameters
    ----------
    ax : matplotlib Axes
    ell_eff : ndarray, shape (nbins,), float64
        Effective multipole of each bin.
    expected, bandpowers : ndarray, shape (nbins,), float64
        The binned input (what the bandpowers estimate) and the bandpowers, raw C_b (μK²).
    label : str
        Legend entry of the bandpowers.
    binned : ndarray, shape (nbins,), optional
        The input averaged over each bin alone (``Bins.bin_cell``, μK²), a thin line: where the
        expected bandpowers leave it, the bandpower windows mix in other bins or spectra (the
        E-to-B leakage of standard B on a cut sky).
    log : bool
        Symmetric-log y axis (EE, BB: decades apart, and a bandpower may be negative).
    sigma : ndarray, shape (nbins,), optional
        One-sigma error of each bandpower (μK², raw C_b), drawn as error bars.
    """
    lb = np.asarray(ell_eff, dtype=np.float64)
    db = lb * (lb + 1) / (2 * np.pi)
    if binned is not None:
        ax.plot(lb, db * np.asarray(binned), color="0.6", lw=1, label="input × beam, binned")
    ax.plot(lb, db * expected, "ks", ms=6, mfc="none",
            label="expected (input × beam through the windows)")
    if sigma is None:
        ax.plot(lb, db * bandpowers, "o", ms=4, color="#2166ac", label=label)
    else:
        ax.errorbar(lb, db * bandpowers, yerr=db * np.asarray(sigma), fmt="o", ms=4,
                    color="#2166ac", elinewidth=1, capsize=0, label=label)
    if log:
        pos = np.abs(db * np.asarray(expected))
        pos = pos[pos > 0]
        ax.set_yscale("symlog", linthresh=float(pos.min()) / 10 if pos.size else 1.0)
    else:
        ax.axhline(0.0, color="0.5", lw=0.5)
    ax.set_xlabel(r"multipole $\ell$")
    ax.set_ylabel(r"$\ell(\ell+1)C_b/2\pi$ [μK²]")
    ax.legend(frameon=False, fontsize=FONT["legend"])
