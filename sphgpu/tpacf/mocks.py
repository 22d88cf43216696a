"""Mock catalogs for tests, notebooks and benchmarks: uniform randoms and clustered "galaxies"
inside an RA/Dec box.

The clustered mock is a Neyman-Scott process: cluster centres uniform in the box, members drawn
around them with Gaussian angular offsets whose widths spread over a decade (so w(theta) falls
smoothly over the scales of the benchmark), plus a fraction of unclustered points. Every point
lies inside the box, so randoms over the same box trace the footprint.
"""

from __future__ import annotations

import numpy as np

__all__ = ["uniform_randoms", "clustered_catalog", "QUARTER_SKY"]

#: RA 0-180, Dec 0-90 degrees: pi steradians, a quarter of the sky.
QUARTER_SKY = (0.0, 180.0, 0.0, 90.0)


def _box(box):
    ra0, ra1, dec0, dec1 = (float(v) for v in box)
    if not (0.0 <= ra0 < ra1 <= 360.0 and -90.0 <= dec0 < dec1 <= 90.0):
        raise ValueError(f"box must be (ra_min, ra_max, dec_min, dec_max) in degrees, "
                         f"0 <= ra_min < ra_max <= 360, -90 <= dec_min < dec_max <= 90, "
                         f"got {box}")
    return ra0, ra1, dec0, dec1


def uniform_randoms(n, box=QUARTER_SKY, *, seed=0):
    """``n`` points uniform on the sphere inside ``box``.

    Parameters
    ----------
    n : int
        Number of points.
    box : tuple of float
        (ra_min, ra_max, dec_min, dec_max), degrees.
    seed : int
        Seed of NumPy's generator.

    Returns
    -------
    ra, dec : numpy.ndarray
        (n,) float64 each, degrees.

    Raises
    ------
    ValueError
        If ``box`` is not a valid RA/Dec box.
    """
    ra0, ra1, dec0, dec1 = _box(box)
    rng = np.random.default_rng(seed)
    ra = rng.uniform(ra0, ra1, n)
    z = rng.uniform(np.sin(np.deg2rad(dec0)), np.sin(np.deg2rad(dec1)), n)
    return ra, np.rad2deg(np.arcsin(z))


def clustered_catalog(n, box=QUARTER_SKY, *, seed=0, clustered_fraction=0.6,
                      members=40, sigma_deg=(0.05, 1.0)):
    """``n`` clustered points inside ``box``.

    ``clustered_fraction`` of the points sit in clusters of about ``members`` points with
    Gaussian angular widths log-uniform in ``sigma_deg``; the rest are uniform.

    Parameters
    ----------
    n : int
        Number of points.
    box : tuple of float
        (ra_min, ra_max, dec_min, dec_max), degrees.
    seed : int
        Seed of NumPy's generator.
    clustered_fraction : float
        Fraction of the points in clusters.
    members : int
        Mean number of points a cluster.
    sigma_deg : tuple of float
        Range of the clusters' Gaussian widths, degrees (log-uniform).

    Returns
    -------
    ra, dec : numpy.ndarray
        (n,) float64 each, degrees.

    Raises
    ------
    ValueError
        If ``box`` is not a valid RA/Dec box.
    """
    ra0, ra1, dec0, dec1 = _box(box)
    rng = np.random.default_rng(seed)
    n_cl = int(round(n * clustered_fraction))
    ra_u, dec_u = uniform_randoms(n - n_cl, box, seed=rng.integers(2**32))
    ncent = max(1, n_cl // members)
    cra, cdec = uniform_randoms(ncent, box, seed=rng.integers(2**32))
    csig = np.exp(rng.uniform(np.log(sigma_deg[0]), np.log(sigma_deg[1]), ncent))
    out_ra = np.empty(0)
    out_dec = np.empty(0)
    while out_ra.size < n_cl:
        m = n_cl - out_ra.size
        c = rng.integers(0, ncent, m)
        # offset in the tangent plane of the centre, then back to the sphere
        u = np.deg2rad(csig[c])[:, None] * rng.standard_normal((m, 2))
        ra_c, dec_c = np.deg2rad(cra[c]), np.deg2rad(cdec[c])
        e = np.stack([-np.sin(ra_c), np.cos(ra_c), np.zeros(m)])
        nv = np.stack([-np.sin(dec_c) * np.cos(ra_c), -np.sin(dec_c) * np.sin(ra_c),
                       np.cos(dec_c)])
        p = np.stack([np.cos(dec_c) * np.cos(ra_c), np.cos(dec_c) * np.sin(ra_c), np.sin(dec_c)])
        r = np.hypot(u[:, 0], u[:, 1])
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.where(r > 0, np.sin(r) / r, 1.0)
        v = p * np.cos(r) + (e * u[:, 0] + nv * u[:, 1]) * s
        dec = np.rad2deg(np.arcsin(np.clip(v[2], -1, 1)))
        ra = np.mod(np.rad2deg(np.arctan2(v[1], v[0])), 360.0)
        inside = (ra >= ra0) & (ra <= ra1) & (dec >= dec0) & (dec <= dec1)
        out_ra = np.concatenate([out_ra, ra[inside]])
        out_dec = np.concatenate([out_dec, dec[inside]])
    ra = np.concatenate([out_ra[:n_cl], ra_u])
    dec = np.concatenate([out_dec[:n_cl], dec_u])
    perm = rng.permutation(n)
    return ra[perm], dec[perm]
