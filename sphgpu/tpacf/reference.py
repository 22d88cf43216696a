"""The "reference" backend: brute-force pair counts in NumPy float64, every pair, no pruning.

This is the specification the fast backends must match as integers: for every pair (i, j) of
the two catalogs (i < j for an auto-correlation), d2 = ((x1-x2)**2 + (y1-y2)**2) + (z1-z2)**2
from the catalogs' float64 unit vectors, bin = (number of chord**2 edges <= d2) - 1, kept when
0 <= bin < nbins. With R regions, the pairs with the first point labelled a and the second b
count in ``patch_counts[a, b]``. Separations (``mean_theta``): theta = 2 asin(sqrt(d2) / 2)
radians, summed per bin with the pair's weight (and ln theta). O(n1 n2) time: small catalogs
only. (The interface every backend module provides is stated in :mod:`sphgpu.tpacf.api`.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RawCounts", "count_pairs", "pair_d2", "PRECISIONS", "DEFAULT_PRECISION"]

PRECISIONS = ("float64",)
DEFAULT_PRECISION = "float64"
_BLOCK = 1 << 21            # pairs per block


@dataclass
class RawCounts:
    """What a backend returns: arrays over bins (nbins,), ``patch_*`` over (R, R, nbins)
    (pairs with the first point in region a and the second in b, as counted: an auto count's
    unordered pair may sit at [a, b] or [b, a]), ``theta_sum``/``log_theta_sum`` (nbins,)
    float64 sums of w theta and w ln(theta), theta in radians (None unless asked).

    ``refined`` is how many pairs the float32 path recomputed in float64 (0 in float64 mode);
    ``pairs_compared`` how many pairs were looked at (after pruning); ``at_once`` how many
    pairs ``bin_slop`` counted at once, without their own separation (:mod:`.slop`)."""

    counts: np.ndarray
    weights: np.ndarray | None = None
    patch_counts: np.ndarray | None = None
    patch_weights: np.ndarray | None = None
    theta_sum: np.ndarray | None = None
    log_theta_sum: np.ndarray | None = None
    refined: int = 0
    pairs_compared: int = 0
    at_once: int = 0

    def __add__(self, other):
        """Counts of two disjoint sets of pairs, added (fields that are None stay None)."""
        return RawCounts(**{f: (None if getattr(self, f) is None
                                else getattr(self, f) + getattr(other, f))
                            for f in self.__dataclass_fields__})

    @classmethod
    def zeros(cls, nbins, n_regions, weighted, mean_theta):
        """Empty counts of the given shape (a count with nothing to compare)."""
        r = max(n_regions, 1)
        return cls(counts=np.zeros(nbins, np.int64),
                   weights=np.zeros(nbins) if weighted else None,
                   patch_counts=np.zeros((r, r, nbins), np.int64) if n_regions else None,
                   patch_weights=np.zeros((r, r, nbins)) if (n_regions and weighted) else None,
                   theta_sum=np.zeros(nbins) if mean_theta else None,
                   log_theta_sum=np.zeros(nbins) if mean_theta else None)


def pair_d2(xyz1, xyz2):
    """Squared chord distances of all pairs, (n1, n2) float64, in the defining order."""
    dx = xyz1[0][:, None] - xyz2[0][None, :]
    d2 = dx * dx
    dy = xyz1[1][:, None] - xyz2[1][None, :]
    d2 += dy * dy
    dz = xyz1[2][:, None] - xyz2[2][None, :]
    d2 += dz * dz
    return d2


def count_pairs(cat1, cat2, bins, *, n_regions=0, weighted=False, precision="float64",
                mean_theta=False, **options):
    """Brute-force counts of ``cat1`` x ``cat2`` (``cat2`` None: unique pairs of ``cat1``)."""
    auto = cat2 is None
    c2 = cat1 if auto else cat2
    x1, x2 = cat1.xyz, c2.xyz
    n1, n2 = cat1.size, c2.size
    nb = bins.nbins
    edges = bins.chord2_edges
    counts = np.zeros(nb, np.int64)
    wsum = np.zeros(nb) if weighted else None
    nreg = max(n_regions, 1)
    rc = np.zeros(nreg * nreg * nb, np.int64) if n_regions else None
    rw = np.zeros(nreg * nreg * nb) if (n_regions and weighted) else None
    ts = np.zeros(nb) if mean_theta else None
    ls = np.zeros(nb) if mean_theta else None
    lab1 = cat1.labels if n_regions else None
    lab2 = c2.labels if n_regions else None
    if weighted:            # a catalog without weights counts with unit weights
        wt1 = cat1.weights if cat1.weights is not None else np.ones(n1)
        wt2 = c2.weights if c2.weights is not None else np.ones(n2)
    rows = max(1, _BLOCK // max(n2, 1))
    compared = 0
    for a in range(0, n1, rows):
        b = min(n1, a + rows)
        d2 = pair_d2(x1[:, a:b], x2)
        k = np.searchsorted(edges, d2, side="right") - 1
        keep = (k >= 0) & (k < nb)
        if auto:
            keep &= np.arange(n2)[None, :] > np.arange(a, b)[:, None]
            compared += int(np.sum(np.maximum(0, n2 - 1 - np.arange(a, b))))
        else:
            compared += (b - a) * n2
        ii, jj = np.nonzero(keep)
        kb = k[ii, jj]
        counts += np.bincount(kb, minlength=nb)
        w = wt1[a + ii] * wt2[jj] if weighted else None
        if weighted:
            wsum += np.bincount(kb, weights=w, minlength=nb)
        if mean_theta:
            theta = 2.0 * np.arcsin(0.5 * np.sqrt(d2[ii, jj]))
            with np.errstate(divide="ignore"):
                lt = np.log(theta)
            ts += np.bincount(kb, weights=theta if w is None else w * theta, minlength=nb)
            ls += np.bincount(kb, weights=lt if w is None else w * lt, minlength=nb)
        if n_regions:
            idx = (lab1[a + ii] * nreg + lab2[jj]) * nb + kb
            rc += np.bincount(idx, minlength=nreg * nreg * nb)
            if weighted:
                rw += np.bincount(idx, weights=w, minlength=nreg * nreg * nb)
    shape = (nreg, nreg, nb)
    return RawCounts(counts=counts, weights=wsum,
                     patch_counts=None if rc is None else rc.reshape(shape),
                     patch_weights=None if rw is None else rw.reshape(shape),
                     theta_sum=ts, log_theta_sum=ls, pairs_compared=compared)
