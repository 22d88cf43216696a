"""Plots shared by the panels and notebooks, with matplotlib alone (no healpy needed)."""

from __future__ import annotations

import numpy as np

__all__ = ["mollview", "spectrum_plot"]


def mollview(values, geometry, ax, *, nlon=480, nlat=240, **kw):
    """Draw a map on a Mollweide axes (``projection="mollweide"``) by nearest-pixel lookup.

    Every cell of a regular longitude/latitude grid takes the value of the nearest pixel: the
    nearest ring by colatitude, then the nearest pixel along that ring. Longitude grows to
    the left, as on the sky.

    Parameters
    ----------
    values : ndarray, shape (geometry.npix,)
        The map, pixels ordered ring by ring (HEALPix RING for ``RingGeometry.healpix``).
    geometry : sphgpu.RingGeometry
    ax : matplotlib Axes with projection="mollweide"
    nlon, nlat : int
        Resolution of the drawn grid (the cost of drawing grows with nlon * nlat).
    **kw
        Passed to ``pcolormesh`` (cmap, vmin, vmax...).

    Returns
    -------
    The QuadMesh, for a colorbar.
    """
    values = np.asarray(values)
    if values.shape != (geometry.npix,):
        raise ValueError(f"values must have shape ({geometry.npix},) for {geometry}, "
                         f"got {values.shape}")
    lon = np.linspace(np.pi, -np.pi, nlon + 1)
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat + 1)
    theta = np.pi / 2 - 0.5 * (lat[1:] + lat[:-1])
    phi = np.mod(0.5 * (lon[1:] + lon[:-1]), 2 * np.pi)
    ring_edges = 0.5 * (geometry.theta[1:] + geometry.theta[:-1])
    ring = np.searchsorted(ring_edges, theta)[:, None]
    nphi = geometry.nphi[ring]
    k = np.rint((phi - geometry.phi0[ring]) * nphi / (2 * np.pi)).astype(np.int64) % nphi
    mesh = ax.pcolormesh(lon, lat, values[geometry.ringstart[ring] + k], rasterized=True, **kw)
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    ax.grid(False)
    return mesh


def spectrum_plot(ax, cl_model, cl_hat, *, lmin=2):
    """Input against recovered angular power spectrum, as D_l = l(l+1)C_l/2pi, with the
    cosmic-variance band sqrt(2/(2l+1)) C_l of a full-sky measurement.

    Parameters
    ----------
    ax : matplotlib Axes
    cl_model, cl_hat : ndarray, shape (lmax + 1,)
        Raw C_l (muK^2 for the shipped Planck table), indexed from l = 0.
    """
    ell = np.arange(lmin, len(cl_model))
    dl = ell * (ell + 1) / (2 * np.pi)
    model = dl * cl_model[lmin:]
    band = model * np.sqrt(2.0 / (2 * ell + 1))
    ax.fill_between(ell, model - band, model + band, color="0.85", lw=0, label="cosmic variance")
    ax.plot(ell, dl * cl_hat[lmin:], color="#b2182b", lw=1, label="recovered")
    ax.plot(ell, model, color="k", lw=1.5, label=r"input $C_\ell b_\ell^2$")
    ax.set_xlabel(r"$\ell$")
    ax.set_ylabel(r"$\ell(\ell+1)C_\ell/2\pi$ [μK²]")
    if len(ell):
        ax.set_xlim(lmin, max(lmin + 1, ell[-1]))
    ax.legend(frameon=False, fontsize="small")
