"""Jackknife regions on the sphere (k-means or HEALPix cells) and the jackknife covariance.

Regions are fitted on one catalog (usually the randoms, which trace the footprint evenly) and
then label any catalog, so data and randoms share one numbering. Leave-one-out counts come from
the per-region counts of :class:`PairCounts` (one counting pass, every pair once); this module
only makes labels and turns leave-one-out estimates into a covariance.
"""

from __future__ import annotations

import numpy as np

from ._nearest import nearest_radec, nearest_xyz
from .catalog import unit_vectors
from ..sort.cells import healpix_cells

__all__ = ["JackknifeRegions", "jackknife_covariance"]


def jackknife_covariance(w_loo):
    """Mean and covariance of K leave-one-out estimates.

    C = (K - 1) / K * sum_k (w_k - mean)(w_k - mean)^T.

    Parameters
    ----------
    w_loo : array_like, shape (K, nbins)
        w with each of K regions left out (K >= 2).

    Returns
    -------
    mean : ndarray, shape (nbins,)
    covariance : ndarray, shape (nbins, nbins)

    Raises
    ------
    ValueError
        For another shape or K < 2.
    """
    w = np.asarray(w_loo, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] < 2:
        raise ValueError(f"w_loo must be (K >= 2, nbins), got shape {w.shape}")
    mean = w.mean(axis=0)
    d = w - mean
    k = w.shape[0]
    return mean, (k - 1) / k * (d.T @ d)


def _nearest(xyz, centers):
    """Index of the nearest centre (largest dot product; ties to the lowest index), (n,) int64,
    of unit vectors ``xyz`` (3, n) and centres (K, 3): the Numba kernel of :mod:`._nearest`."""
    return nearest_xyz(xyz, centers)


class JackknifeRegions:
    """A partition of the sphere into regions, fitted on a catalog; labels any catalog.

    Make one with :meth:`kmeans` or :meth:`healpix`; ``labels(ra, dec)`` gives int64 region
    numbers in [0, n_regions).

    Parameters
    ----------
    centers : array_like, shape (n_regions, 3)
        Unit vectors of the regions' centres.
    kind : {"kmeans", "healpix"}
    nside : int, optional
        HEALPix resolution (kind "healpix").
    cells : ndarray, optional
        Sorted occupied HEALPix cells; region k is cell ``cells[k]`` (kind "healpix").
    """

    def __init__(self, centers, *, kind, nside=None, cells=None):
        self.centers = np.asarray(centers, dtype=np.float64)
        self.kind = kind
        self.nside = nside
        self.cells = cells             # healpix: sorted occupied cells; region = position

    @property
    def n_regions(self) -> int:
        """Number of regions."""
        return self.centers.shape[0]

    def __repr__(self):
        extra = f", nside={self.nside}" if self.nside else ""
        return f"JackknifeRegions({self.kind}, n_regions={self.n_regions}{extra})"

    @classmethod
    def kmeans(cls, ra, dec, n_regions, *, seed=0, iterations=25, sample=200_000):
        """Spherical k-means: ``n_regions`` compact regions of about equal numbers of points.

        Lloyd iterations with centres renormalised to the sphere; deterministic for a given
        ``seed``.

        Parameters
        ----------
        ra, dec : array_like, shape (n,), degrees
            The points to fit on (usually a random catalog).
        n_regions : int
            Number of regions, 2 <= n_regions <= n.
        seed : int
            Seed of the initial centres and the subsample.
        iterations : int
            Most Lloyd iterations.
        sample : int
            Fit on at most this many of the points (a random subsample).

        Returns
        -------
        JackknifeRegions

        Raises
        ------
        TypeError
            If ``n_regions`` is not an integer.
        ValueError
            For bad coordinates or n_regions out of range.
        """
        if isinstance(n_regions, bool) or not isinstance(n_regions, (int, np.integer)):
            raise TypeError(f"n_regions must be an integer, got {n_regions!r}")
        xyz = _points(ra, dec)
        n = xyz.shape[1]
        if not 2 <= n_regions <= n:
            raise ValueError(f"n_regions must be between 2 and the number of points ({n}), "
                             f"got {n_regions}")
        rng = np.random.default_rng(seed)
        if n > sample:
            xyz = xyz[:, rng.choice(n, sample, replace=False)]
            n = sample
        centers = xyz[:, rng.choice(n, n_regions, replace=False)].T.copy()
        for _ in range(iterations):
            lab = _nearest(xyz, centers)
            sums = np.zeros((n_regions, 3))
            for c in range(3):
                sums[:, c] = np.bincount(lab, weights=xyz[c], minlength=n_regions)
            norm = np.linalg.norm(sums, axis=1)
            empty = norm == 0
            if empty.any():                    # re-seed empty regions on random points
                sums[empty] = xyz[:, rng.choice(n, int(empty.sum()), replace=False)].T
                norm = np.linalg.norm(sums, axis=1)
            new = sums / norm[:, None]
            if np.allclose(new, centers, rtol=0, atol=1e-12):
                centers = new
                break
            centers = new
        return cls(centers, kind="kmeans")

    @classmethod
    def healpix(cls, nside, ra, dec):
        """One region per HEALPix (RING) cell at ``nside`` holding points of (ra, dec).

        Points of other catalogs in cells that held none of these go to the region with the
        nearest centre (the mean direction of the region's fitting points).

        Parameters
        ----------
        nside : int
            HEALPix resolution.
        ra, dec : array_like, shape (n,), degrees

        Returns
        -------
        JackknifeRegions

        Raises
        ------
        ValueError
            For bad coordinates.
        """
        xyz = _points(ra, dec)
        cells = healpix_cells(*_theta_phi(ra, dec), nside)
        occupied, inv = np.unique(cells, return_inverse=True)
        sums = np.zeros((occupied.size, 3))
        for c in range(3):
            sums[:, c] = np.bincount(inv, weights=xyz[c], minlength=occupied.size)
        centers = sums / np.linalg.norm(sums, axis=1)[:, None]
        return cls(centers, kind="healpix", nside=int(nside), cells=occupied)

    def labels(self, ra, dec):
        """Region of each point.

        Parameters
        ----------
        ra, dec : array_like, shape (n,), degrees

        Returns
        -------
        ndarray, shape (n,), int64

        Raises
        ------
        ValueError
            For bad coordinates.
        """
        ra, dec = _coordinates(ra, dec)
        if self.kind == "kmeans":
            # unit vectors made inside the kernel, block by block: no (3, n) array
            return nearest_radec(ra, dec, self.centers)
        cells = healpix_cells(*_theta_phi(ra, dec), self.nside)
        pos = np.searchsorted(self.cells, cells)
        pos = np.minimum(pos, self.cells.size - 1)
        known = self.cells[pos] == cells
        out = pos.astype(np.int64)
        if not known.all():
            out[~known] = nearest_radec(ra[~known], dec[~known], self.centers)
        return out


def _coordinates(ra, dec):
    """(ra, dec) as float64 C-contiguous arrays, checked: 1-D, one non-zero length, finite,
    dec in [-90, 90] degrees (ValueError otherwise)."""
    ra = np.asarray(ra, dtype=np.float64)       # not ascontiguousarray: it makes a scalar 1-D
    dec = np.asarray(dec, dtype=np.float64)
    if ra.ndim != 1 or ra.shape != dec.shape or ra.size == 0:
        raise ValueError(f"ra and dec must be non-empty 1-D arrays of one length, got shapes "
                         f"{ra.shape} and {dec.shape}")
    if not (np.all(np.isfinite(ra)) and np.all(np.isfinite(dec))):
        raise ValueError("ra and dec must be finite")
    if dec.min() < -90 or dec.max() > 90:
        raise ValueError("dec must be in [-90, 90] degrees")
    return np.ascontiguousarray(ra), np.ascontiguousarray(dec)


def _points(ra, dec):
    """Unit vectors (3, n) of the checked coordinates (see :func:`_coordinates`)."""
    return unit_vectors(*_coordinates(ra, dec))


def _theta_phi(ra, dec):
    return (np.deg2rad(90.0 - np.asarray(dec, dtype=np.float64)),
            np.deg2rad(np.mod(np.asarray(ra, dtype=np.float64), 360.0)))
