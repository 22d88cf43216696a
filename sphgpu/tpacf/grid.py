"""Grid pruning: which pairs a backend compares, so that cost follows the pairs inside theta_max.

The sky is cut into declination bands of height ``h`` (about theta_max / 4). Each catalog is
sorted, with :func:`sphgpu.sort.argsort` (radix sort), by the key

    (band, jackknife label, RA quantised to 32 bits)

so every (band, label) is a contiguous *run*, ordered by RA. The first catalog's runs are cut
into *chunks*: at most ``i_tile`` consecutive points spanning a limited RA width. For a chunk
(declinations within its band [D0, D1], RA within [A0, A1]) and a band of the second catalog
(declinations [F0, F1]), every point within theta_max of a chunk point has an RA within
[A0 - da, A1 + da], where, with g the declination gap between the two bands,

    sin^2(da / 2) = (sin^2(theta_max / 2) - sin^2(g / 2)) / (min cos(dec) over the chunk band
                                                            * min cos(dec) over the other band)

(from the haversine formula sin^2(t/2) = sin^2(ddec/2) + cos d1 cos d2 sin^2(dra/2)); the whole
band when the right side reaches 1 or a band touches a pole. That RA interval (split in two where
it wraps through RA 0) is one contiguous range of each run of the band, found by binary search.
A *work item* is (chunk, range of the second catalog): every pair in it is compared exactly
(pruning only decides what to compare, never a bin), and every pair within theta_max is in
some item. Angles are padded (``PAD_REL``, ``PAD_ABS``) so rounding can only add pairs.

Auto-correlations use one sorted catalog for both sides and keep the pairs with sorted index
i < j: an item whose range lies before its chunk is dropped, the others are clipped to start at
the chunk, and backends test j > i inside an item. Each unique pair is then compared exactly once.

With theta_max above ``ALL_PAIRS_FROM_DEG`` pruning saves little: one band and all pairs.

Items are grouped into ``groups`` contiguous lists of about equal work (pairs compared); a
CUDA block or CPU task takes one group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..sort import argsort
from .catalog import _wrap_ra

__all__ = ["band_height", "SortedCatalog", "sorted_catalog", "PairPlan", "build_plan",
           "unit_weights",
           "ALL_PAIRS_FROM_DEG", "BAND_FRACTION"]

#: Band height as a fraction of theta_max (measured tuning parameter, see benchmarks/tpacf.py).
BAND_FRACTION = 0.25
#: Smallest band height (degrees): below it, bands hold too few points to fill a chunk.
MIN_BAND_DEG = 0.02
#: theta_max (degrees) from which every pair is compared (one band).
ALL_PAIRS_FROM_DEG = 60.0
#: Relative and absolute (radians) padding of theta_max in the pruning bounds: covers the
#: rounding of declinations, bands and unit vectors (all far below 1e-12 rad) many times over.
PAD_REL, PAD_ABS = 1e-6, 1e-8
QBITS = 32
_Q = 2.0 * math.pi / 2.0**QBITS               # radians per RA quantum


def band_height(theta_max_rad: float) -> float:
    """Height (radians) of the declination bands for a given theta_max; bands tile [-90, 90]."""
    if theta_max_rad >= math.radians(ALL_PAIRS_FROM_DEG):
        return math.pi
    h = max(theta_max_rad * BAND_FRACTION, math.radians(MIN_BAND_DEG))
    return math.pi / math.ceil(math.pi / h)


@dataclass
class SortedCatalog:
    """A catalog sorted by (band, label, RA) for one band height and number of regions.

    Arrays are indexed by sorted position; ``perm[k]`` is the catalog index of position k.
    Run r holds positions ``run_start[r]:run_start[r+1]`` (band ``run_band[r]``, label
    ``run_label[r]``); the runs of band b are ``band_runs[b]:band_runs[b+1]``.
    """

    h: float
    nbands: int
    perm: np.ndarray          # (n,) int64
    xyz: np.ndarray           # (3, n) float64, C-contiguous
    xyz32: np.ndarray         # (3, n) float32
    q: np.ndarray             # (n,) int64, quantised RA in [0, 2**32)
    labels: np.ndarray        # (n,) int64 (zeros without labels)
    weights: np.ndarray | None
    run_start: np.ndarray     # (nruns + 1,) int64
    run_band: np.ndarray      # (nruns,) int64
    run_label: np.ndarray     # (nruns,) int64
    band_runs: np.ndarray     # (nbands + 1,) int64
    cache: dict = field(default_factory=dict, repr=False)   # chunks, run keys, device copies

    @property
    def size(self):
        return self.perm.shape[0]


def sorted_catalog(cat, h: float, n_regions: int) -> SortedCatalog:
    """The catalog sorted for band height ``h`` (cached on the Catalog)."""
    key = ("sorted", h, n_regions)
    if key in cat._cache:
        return cat._cache[key]
    nbands = max(1, round(math.pi / h))
    dec = np.deg2rad(cat.dec)
    band = np.floor((dec + 0.5 * math.pi) / h).astype(np.int64)
    np.clip(band, 0, nbands - 1, out=band)
    ra = np.deg2rad(_wrap_ra(cat.ra))
    q = np.floor(ra / _Q).astype(np.int64)
    np.clip(q, 0, 2**QBITS - 1, out=q)
    nreg = max(n_regions, 1)
    lab = (np.zeros(cat.size, np.int64) if cat.labels is None or n_regions == 0
           else cat.labels)
    if lab.size and lab.max() >= nreg:
        raise ValueError(f"labels go up to {lab.max()} but n_regions is {n_regions}")
    hi = band * nreg + lab
    keys = (hi.astype(np.uint64) << np.uint64(QBITS)) | q.astype(np.uint64)
    perm = argsort(keys, backend="cpu")
    hi_s = hi[perm]
    brk = np.flatnonzero(hi_s[1:] != hi_s[:-1]) + 1
    run_start = np.concatenate(([0], brk, [cat.size])).astype(np.int64)
    run_hi = hi_s[run_start[:-1]]
    run_band = run_hi // nreg
    xyz = np.ascontiguousarray(cat.xyz[:, perm])
    sc = SortedCatalog(
        h=h, nbands=nbands, perm=perm, xyz=xyz, xyz32=xyz.astype(np.float32), q=q[perm],
        labels=lab[perm], weights=None if cat.weights is None else cat.weights[perm],
        run_start=run_start, run_band=run_band, run_label=run_hi % nreg,
        band_runs=np.searchsorted(run_band, np.arange(nbands + 1)).astype(np.int64))
    cat._cache[key] = sc
    return sc


def unit_weights(sc):
    """The sorted weights, or ones for a catalog without weights (a weighted count in which
    only one catalog carries weights treats the other's as 1)."""
    return sc.weights if sc.weights is not None else np.ones(sc.size)


def _chunks(sc, i_tile, wq_band):
    """Chunks of the sorted catalog: start positions (nchunks + 1,) and runs (nchunks,).

    A chunk is at most ``i_tile`` consecutive points of one run and one RA cell of the run's
    band (cells are ``wq_band[band]`` quanta wide)."""
    n = sc.size
    counts = np.diff(sc.run_start)
    run_of = np.repeat(np.arange(counts.size), counts)
    cell = sc.q // wq_band[sc.run_band[run_of]]
    new = np.ones(n, bool)
    new[1:] = (run_of[1:] != run_of[:-1]) | (cell[1:] != cell[:-1])
    first = np.flatnonzero(new)
    group_first = first[np.cumsum(new) - 1]            # first position of each point's cell
    new |= (np.arange(n) - group_first) % i_tile == 0
    starts = np.flatnonzero(new)
    return np.append(starts, n).astype(np.int64), run_of[starts]


def _q_floor(a):
    return np.floor(a / _Q).astype(np.int64) - 1


def _q_ceil(a):
    return np.ceil(a / _Q).astype(np.int64) + 1


def _items(s1, c_start, c_run, s2, theta, auto, j_max):
    """Work items (nitems, 6) int64: i0, i1, j0, j1, label_i, label_j (module docstring)."""
    h, nbands = s1.h, s1.nbands
    qmax = 2**QBITS - 1
    two_pi = 2.0 * math.pi
    nc = c_run.size
    i0, i1 = c_start[:-1], c_start[1:]
    b1 = s1.run_band[c_run]
    a0 = s1.q[i0] * _Q
    a1 = (s1.q[i1 - 1] + 1) * _Q
    reach = int(math.ceil(theta / h)) + 1
    # band edges (padded) and the smallest cos(dec) over each band (cos is concave on
    # [-90, 90] degrees: the minimum is at an edge)
    lower = -0.5 * math.pi + np.arange(nbands) * h - 1e-12
    upper = lower + h + 2e-12
    cmin = np.minimum(np.cos(np.maximum(lower, -0.5 * math.pi)),
                      np.cos(np.minimum(upper, 0.5 * math.pi)))
    # (chunk, band) candidates, band offset major: for one offset, consecutive chunks query
    # increasing keys, which makes the binary searches below several times faster. An auto
    # count needs no band below the chunk's: those points all come before it.
    off = np.arange(0 if auto else -reach, reach + 1)
    ch = np.tile(np.arange(nc), off.size)
    b2 = b1[ch] + np.repeat(off, nc)
    ok = (b2 >= 0) & (b2 < nbands)
    ch, b2 = ch[ok], b2[ok]
    bb = b1[ch]
    gap = np.maximum(0.0, np.maximum(lower[b2] - upper[bb], lower[bb] - upper[b2]))
    ok = gap <= theta
    ch, b2, bb, gap = ch[ok], b2[ok], bb[ok], gap[ok]
    num = math.sin(0.5 * theta) ** 2 - np.sin(0.5 * gap) ** 2
    den = cmin[bb] * cmin[b2]
    full = (den <= 0.0) | (num >= den)
    with np.errstate(invalid="ignore", divide="ignore"):
        da = 2.0 * np.arcsin(np.sqrt(np.where(full, 0.0, num / np.where(full, 1.0, den))))
    da = da * (1.0 + 1e-9) + 1e-9
    lo = a0[ch] - da
    hi = a1[ch] + da
    full |= (hi - lo) >= two_pi - 1e-6
    # one or two quantised RA intervals [lo, hi] per (chunk, band): A always, B on a wrap
    below = ~full & (lo < 0)                      # wraps through RA 0 from below
    above = ~full & (hi >= two_pi)                # wraps through RA 360 from above
    inside = ~full & ~below & ~above
    qa_lo = np.select([below, above, inside], [0, _q_floor(lo), _q_floor(lo)], 0)
    qa_hi = np.select([below, above, inside], [_q_ceil(hi), qmax, _q_ceil(hi)], qmax)
    qb_lo = np.where(below, _q_floor(lo + two_pi), 0)
    qb_hi = np.where(below, qmax, _q_ceil(hi - two_pi))
    two = below | above
    qa_lo, qa_hi = np.clip(qa_lo, 0, qmax), np.clip(qa_hi, 0, qmax)
    qb_lo, qb_hi = np.clip(qb_lo, 0, qmax), np.clip(qb_hi, 0, qmax)
    rows_ch = np.concatenate([ch, ch[two]])
    rows_b2 = np.concatenate([b2, b2[two]])
    rows_lo = np.concatenate([qa_lo, qb_lo[two]])
    rows_hi = np.concatenate([qa_hi, qb_hi[two]])
    # every run (label) of the band
    nr = s2.band_runs[rows_b2 + 1] - s2.band_runs[rows_b2]
    rep = np.repeat(np.arange(rows_ch.size), nr)
    within = np.arange(rep.size) - np.repeat(np.cumsum(nr) - nr, nr)
    r2 = s2.band_runs[rows_b2[rep]] + within
    key2 = _run_keys(s2)
    j0 = np.searchsorted(key2, (r2 << QBITS) + rows_lo[rep], side="left")
    j1 = np.searchsorted(key2, (r2 << QBITS) + rows_hi[rep] + 1, side="left")
    c = rows_ch[rep]
    if auto:
        j0 = np.maximum(j0, i0[c])
    keep = j1 > j0
    c, r2, j0, j1 = c[keep], r2[keep], j0[keep], j1[keep]
    # chunk-major order (rows were offset-major, and wrapped second intervals came last)
    order = np.argsort(c, kind="stable")
    c, r2, j0, j1 = c[order], r2[order], j0[order], j1[order]
    # split long ranges
    pieces = (j1 - j0 + j_max - 1) // j_max
    rep = np.repeat(np.arange(c.size), pieces)
    k = np.arange(rep.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    js = j0[rep] + k * j_max
    je = np.minimum(js + j_max, j1[rep])
    c = c[rep]
    return np.stack([i0[c], i1[c], js, je, s1.run_label[c_run[c]], s2.run_label[r2[rep]]],
                    axis=1).astype(np.int64)


def _run_keys(sc):
    """(run << 32) | q for every sorted point: globally sorted, for vectorised range search."""
    if "run_keys" not in sc.cache:
        counts = np.diff(sc.run_start)
        sc.cache["run_keys"] = ((np.repeat(np.arange(counts.size, dtype=np.int64), counts)
                                 << QBITS) | sc.q)
    return sc.cache["run_keys"]


@dataclass
class PairPlan:
    """Everything a backend needs to count one (auto or cross) correlation.

    ``items`` is (nitems, 6) int64: i0, i1 (sorted positions of a chunk of the first catalog),
    j0, j1 (a range of the second), label_i, label_j. Items of a chunk are consecutive and,
    with jackknife labels, ordered by label_j. ``group_start`` (groups + 1,) splits the items
    into contiguous groups of about equal work.
    """

    s1: SortedCatalog
    s2: SortedCatalog
    auto: bool
    items: np.ndarray
    group_start: np.ndarray
    n_regions: int
    i_tile: int

    @property
    def pairs_compared(self) -> int:
        """Pairs the items make backends compare (for auto counts only those with j > i)."""
        i0, i1, j0, j1 = (self.items[:, k] for k in range(4))
        if not self.auto:
            return int(np.sum((i1 - i0) * (j1 - j0)))
        # i < j0 pairs with the whole range; i >= j0 with j1 - 1 - i of it
        full = np.clip(np.minimum(i1, j0) - i0, 0, None) * (j1 - j0)
        a, b = np.maximum(i0, j0), np.minimum(i1, j1)
        m = np.clip(b - a, 0, None)
        return int(np.sum(full) + np.sum(m * (j1 - 1) - (a + b - 1) * m // 2))


def build_plan(cat1, cat2, bins, *, n_regions=0, i_tile=256, j_max=4096, groups=1024):
    """Sort both catalogs (cached), cut chunks, list the work items and group them.

    ``cat2`` is None for an auto-correlation. ``n_regions`` 0 means no jackknife labels.
    """
    theta_max = bins.theta_max_rad
    h = band_height(theta_max)
    s1 = sorted_catalog(cat1, h, n_regions)
    s2 = s1 if cat2 is None else sorted_catalog(cat2, h, n_regions)
    nbands = s1.nbands
    # chunk RA width: about a band height of true angle at the band's widest declination
    edges = -0.5 * math.pi + h * np.arange(nbands + 1)
    cmin = np.minimum(np.cos(edges[:-1]), np.cos(edges[1:]))
    width = np.where(cmin > 1e-9, h / np.maximum(cmin, 1e-9), 2 * math.pi)
    wq = np.minimum(width / _Q, 2.0**QBITS).astype(np.int64)
    ckey = ("chunks", int(i_tile))
    if ckey not in s1.cache:                       # depends on the catalog only: kept
        s1.cache[ckey] = _chunks(s1, int(i_tile), np.maximum(wq, 1))
    c_start, c_run = s1.cache[ckey]
    theta = min(math.pi, theta_max * (1.0 + PAD_REL) + PAD_ABS)
    items = _items(s1, c_start, c_run, s2, theta, cat2 is None, int(j_max))
    if n_regions > 1 and items.shape[0]:
        items = items[np.lexsort((items[:, 5], items[:, 0]))]   # by chunk, then label_j
    work = (items[:, 1] - items[:, 0]) * (items[:, 3] - items[:, 2])
    cum = np.concatenate(([0], np.cumsum(work)))
    groups = max(1, min(int(groups), items.shape[0]))
    targets = cum[-1] * np.arange(groups + 1) / groups
    gs = np.searchsorted(cum, targets, side="left").astype(np.int64)
    gs[0], gs[-1] = 0, items.shape[0]
    gs = np.maximum.accumulate(gs)
    return PairPlan(s1=s1, s2=s2, auto=cat2 is None, items=items, group_start=gs,
                    n_regions=n_regions, i_tile=int(i_tile))
