"""The "reference" backend: brute-force pair counts in NumPy float64, every pair, no pruning.

This is the specification the fast backends must match as integers: for every pair (i, j) of
the two catalogs (i < j for an auto-correlation), d2 = ((x1-x2)**2 + (y1-y2)**2) + (z1-z2)**2
from the catalogs' float64 unit vectors, bin = (number of chord**2 edges <= d2) - 1, kept when
0 <= bin < nbins. A jackknife region k counts the pairs with at least one point labelled k.
O(n1 n2) time: small catalogs only.
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
    """What a backend returns (arrays over bins; ``region_*`` over (n_regions, nbins)).

    ``refined`` is how many pairs the float32 path recomputed in float64 (0 in float64 mode);
    ``pairs_compared`` how many pairs were looked at (after pruning)."""

    counts: np.ndarray
    weights: np.ndarray | None = None
    region_counts: np.ndarray | None = None
    region_weights: np.ndarray | None = None
    refined: int = 0
    pairs_compared: int = 0


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
                **options):
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
    rc = np.zeros(nreg * nb, np.int64) if n_regions else None
    rw = np.zeros(nreg * nb) if (n_regions and weighted) else None
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
        if weighted:
            w = wt1[a + ii] * wt2[jj]
            wsum += np.bincount(kb, weights=w, minlength=nb)
        if n_regions:
            li, lj = lab1[a + ii], lab2[jj]
            other = lj != li
            idx = np.concatenate([li * nb + kb, lj[other] * nb + kb[other]])
            rc += np.bincount(idx, minlength=nreg * nb)
            if weighted:
                rw += np.bincount(idx, weights=np.concatenate([w, w[other]]),
                                  minlength=nreg * nb)
    return RawCounts(counts=counts, weights=wsum,
                     region_counts=None if rc is None else rc.reshape(nreg, nb),
                     region_weights=None if rw is None else rw.reshape(nreg, nb),
                     pairs_compared=compared)
