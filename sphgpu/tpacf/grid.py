"""Grid pruning: which pairs a backend compares, so that cost follows the pairs inside theta_max.

The sky is cut into declination bands of height ``h`` (about theta_max / 4). Each catalog is
sorted, with :func:`sphgpu.sort.radix_sort`, by the key

    (band, jackknife label, RA quantised to 32 bits)        (:mod:`sphgpu.tpacf.sky`)

so every (band, label) is a contiguous *run*, ordered by RA. A :class:`Preparer` does the
per-point work (keys, sort, sorted unit vectors) on the host (NumPy and Numba) or on the GPU
(CuPy arrays and CUDA kernels); both give the same keys and the same stable order, hence the
same sorted catalog. The plan is built on the host from small per-run and per-chunk arrays;
its only look at a whole catalog, the binary search of range ends, runs where the catalog is.

The first catalog's runs are cut into *chunks*: at most ``i_tile`` consecutive points spanning
a limited RA width. For a chunk (declinations within its band [D0, D1], RA within [A0, A1]) and
a band of the second catalog (declinations [F0, F1]), every point within theta_max of a chunk
point has an RA within [A0 - da, A1 + da], where, with g the declination gap between the two bands,

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

from .._device import to_host
from ..sort import radix_sort
from . import sky
from .sky import QBITS

__all__ = ["band_height", "SortedCatalog", "sorted_catalog", "PairPlan", "build_plan",
           "unit_weights", "chunks_of", "Preparer", "HOST", "ALL_PAIRS_FROM_DEG", "BAND_FRACTION"]

#: Band height as a fraction of theta_max (measured tuning parameter, see benchmarks/tpacf.py).
BAND_FRACTION = 0.25
#: Smallest band height (degrees): below it, bands hold too few points to fill a chunk.
MIN_BAND_DEG = 0.02
#: theta_max (degrees) from which every pair is compared (one band).
ALL_PAIRS_FROM_DEG = 60.0
#: Relative and absolute (radians) padding of theta_max in the pruning bounds: covers the
#: rounding of declinations, bands and unit vectors (all far below 1e-12 rad) many times over.
PAD_REL, PAD_ABS = 1e-6, 1e-8
_Q = 2.0 * math.pi / 2.0**QBITS               # radians per RA quantum
_QMASK = 2**QBITS - 1


def band_height(theta_max_rad: float) -> float:
    """Height (radians) of the declination bands for a given theta_max; bands tile [-90, 90]."""
    if theta_max_rad >= math.radians(ALL_PAIRS_FROM_DEG):
        return math.pi
    h = max(theta_max_rad * BAND_FRACTION, math.radians(MIN_BAND_DEG))
    return math.pi / math.ceil(math.pi / h)


class Preparer:
    """Where a catalog is prepared: the host (this class) or the GPU (``_cuda.DevicePreparer``).

    ``xp`` is the array module of the per-point arrays, ``sort_backend`` the radix sort's
    backend; :meth:`keys` and :meth:`points` do the per-point passes of :mod:`sphgpu.tpacf.sky`.
    """

    name = "host"
    xp = np
    sort_backend = "cpu"

    def keys(self, ra, dec, labels, nbands, nreg):
        """(n,) uint64 cell keys ((band * nreg + label) << 32) | q, in catalog order, of
        coordinates ``ra``, ``dec`` (``xp`` arrays) and host ``labels`` (None: all 0)."""
        n = ra.shape[0]
        lab = labels if (labels is not None and nreg > 1) else np.zeros(0, np.int64)
        keys = np.empty(n, np.uint64)
        sky.parallel_slices(sky.cell_keys_into, n, ra, dec, lab, nbands, nreg, keys)
        return keys

    def points(self, ra, dec, weights, perm):
        """Unit vectors (3, n) float64 and float32 and weights (n,) or None (host ``weights``
        None), in the sorted order ``perm``."""
        n = ra.shape[0]
        xyz, xyz32 = np.empty((3, n)), np.empty((3, n), np.float32)
        w = weights if weights is not None else np.zeros(0)
        ws = np.empty(n if weights is not None else 0)
        sky.parallel_slices(sky.sorted_points_into, n, ra, dec, w, perm, xyz, xyz32, ws)
        return xyz, xyz32, (ws if weights is not None else None)


HOST = Preparer()


@dataclass
class SortedCatalog:
    """A catalog sorted by (band, label, RA) for one band height and number of regions.

    Per-point arrays (``xp``: NumPy, or CuPy for a catalog prepared on the GPU) are indexed by
    sorted position; ``perm[k]`` is the catalog index of position k. Run r holds positions
    ``run_start[r]:run_start[r+1]`` (band ``run_band[r]``, label ``run_label[r]``, key prefix
    ``run_hi[r]`` = band * nreg + label); the runs of band b are ``band_runs[b]:band_runs[b+1]``.
    The run arrays are NumPy arrays on the host.
    """

    h: float
    nbands: int
    nreg: int                 # regions in the keys (>= 1)
    keys: object              # (n,) uint64, sorted: (run_hi << 32) | quantised RA
    perm: object              # (n,) int64
    xyz: object               # (3, n) float64, C-contiguous
    xyz32: object             # (3, n) float32
    weights: object           # (n,) float64 or None
    run_start: np.ndarray     # (nruns + 1,) int64
    run_hi: np.ndarray        # (nruns,) int64
    run_band: np.ndarray      # (nruns,) int64
    run_label: np.ndarray     # (nruns,) int64
    band_runs: np.ndarray     # (nbands + 1,) int64
    xp: object = field(default=np, repr=False)
    cache: dict = field(default_factory=dict, repr=False)   # chunks

    @property
    def size(self):
        return self.perm.shape[0]

    def search(self, queries):
        """Positions where the (m,) int64 keys ``queries`` would go (left), (m,) int64 NumPy."""
        q = self.xp.asarray(np.asarray(queries, dtype=np.uint64))
        return to_host(self.xp.searchsorted(self.keys, q, side="left")).astype(np.int64)


def sorted_catalog(cat, h: float, n_regions: int, prep: Preparer = HOST) -> SortedCatalog:
    """The catalog sorted for band height ``h`` by ``prep`` (cached on the Catalog)."""
    key = ("sorted", prep.name, h, n_regions)
    if key in cat._cache:
        return cat._cache[key]
    nbands = max(1, round(math.pi / h))
    nreg = max(n_regions, 1)
    if cat.labels is not None and n_regions and cat.labels.max() >= nreg:
        raise ValueError(f"labels go up to {cat.labels.max()} but n_regions is {n_regions}")
    xp = prep.xp
    bits = QBITS + max(1, (nbands * nreg - 1).bit_length())
    ra, dec = cat.coordinates(xp)
    keys, perm = radix_sort(prep.keys(ra, dec, cat.labels, nbands, nreg), key_bits=bits,
                            return_permutation=True, backend=prep.sort_backend)
    xyz, xyz32, ws = prep.points(ra, dec, cat.weights, perm)
    hi = keys >> np.uint64(QBITS)
    brk = to_host(xp.flatnonzero(hi[1:] != hi[:-1]) + 1)
    run_start = np.concatenate(([0], brk, [cat.size])).astype(np.int64)
    run_hi = to_host(hi[xp.asarray(run_start[:-1])]).astype(np.int64)
    run_band = run_hi // nreg
    sc = SortedCatalog(
        h=h, nbands=nbands, nreg=nreg, keys=keys, perm=perm, xyz=xyz, xyz32=xyz32, weights=ws,
        run_start=run_start, run_hi=run_hi, run_band=run_band, run_label=run_hi % nreg,
        band_runs=np.searchsorted(run_band, np.arange(nbands + 1)).astype(np.int64), xp=xp)
    cat._cache[key] = sc
    return sc


def unit_weights(sc):
    """The sorted weights, or ones for a catalog without weights (a weighted count in which
    only one catalog carries weights treats the other's as 1)."""
    return sc.weights if sc.weights is not None else sc.xp.ones(sc.size)


def _chunks(sc, i_tile, wq_band):
    """Chunks of the sorted catalog: (c_start (nchunks + 1,), c_run, q_first, q_last
    (nchunks,)) int64 NumPy arrays, the last two the quantised RA of each chunk's first and
    last point.

    A chunk is at most ``i_tile`` consecutive points of one run and one RA cell of the run's
    band (cells are ``wq_band[band]`` quanta wide). Cells are found where the points are, the
    rest on the host from the cells' starts."""
    xp, keys, n = sc.xp, sc.keys, sc.size
    hi = keys >> np.uint64(QBITS)
    cell = (keys & np.uint64(_QMASK)) // xp.asarray(wq_band.astype(np.uint64))[hi // sc.nreg]
    new = xp.empty(n, bool)
    new[0] = True
    new[1:] = (hi[1:] != hi[:-1]) | (cell[1:] != cell[:-1])
    first = to_host(xp.flatnonzero(new)).astype(np.int64)
    pieces = -(-np.diff(np.append(first, n)) // i_tile)
    starts = np.repeat(first, pieces) + i_tile * (
        np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces))
    c_start = np.append(starts, n).astype(np.int64)
    c_run = np.searchsorted(sc.run_start, starts, side="right") - 1
    ends = to_host(keys[xp.asarray(np.concatenate([starts, c_start[1:] - 1]))] & np.uint64(_QMASK))
    ends = ends.astype(np.int64)
    return c_start, c_run, ends[:starts.size], ends[starts.size:]


def _q_floor(a):
    return np.floor(a / _Q).astype(np.int64) - 1


def _q_ceil(a):
    return np.ceil(a / _Q).astype(np.int64) + 1


def _items(s1, chunks, s2, theta, auto, j_max):
    """Work items (nitems, 6) int64: i0, i1, j0, j1, label_i, label_j (module docstring)."""
    h, nbands = s1.h, s1.nbands
    c_start, c_run, q_first, q_last = chunks
    qmax = _QMASK
    two_pi = 2.0 * math.pi
    nc = c_run.size
    i0, i1 = c_start[:-1], c_start[1:]
    b1 = s1.run_band[c_run]
    a0 = q_first * _Q
    a1 = (q_last + 1) * _Q
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
    prefix = s2.run_hi[r2] << QBITS
    j = s2.search(np.concatenate([prefix + rows_lo[rep], prefix + rows_hi[rep] + 1]))
    j0, j1 = j[:r2.size], j[r2.size:]
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


def chunks_of(sc, i_tile):
    """The chunks of a sorted catalog (:func:`_chunks`), cut once and cached on it."""
    ckey = ("chunks", int(i_tile))
    if ckey not in sc.cache:                       # depends on the catalog only: kept
        h, nbands = sc.h, sc.nbands
        # chunk RA width: about a band height of true angle at the band's widest declination
        edges = -0.5 * math.pi + h * np.arange(nbands + 1)
        cmin = np.minimum(np.cos(edges[:-1]), np.cos(edges[1:]))
        width = np.where(cmin > 1e-9, h / np.maximum(cmin, 1e-9), 2 * math.pi)
        wq = np.minimum(width / _Q, 2.0**QBITS).astype(np.int64)
        sc.cache[ckey] = _chunks(sc, int(i_tile), np.maximum(wq, 1))
    return sc.cache[ckey]


def build_plan(cat1, cat2, bins, *, n_regions=0, i_tile=256, j_max=4096, groups=1024,
               prep=HOST, h=None):
    """Sort both catalogs (``prep``; cached), cut chunks, list the work items and group them.

    ``cat2`` is None for an auto-correlation. ``n_regions`` 0 means no jackknife labels.
    ``h`` (radians) replaces the band height :func:`band_height` of the bins' theta_max
    (finer cells for :mod:`sphgpu.tpacf.slop`; pruning is exact for any height).
    """
    theta_max = bins.theta_max_rad
    h = band_height(theta_max) if h is None else h
    s1 = sorted_catalog(cat1, h, n_regions, prep)
    s2 = s1 if cat2 is None else sorted_catalog(cat2, h, n_regions, prep)
    theta = min(math.pi, theta_max * (1.0 + PAD_REL) + PAD_ABS)
    items = _items(s1, chunks_of(s1, i_tile), s2, theta, cat2 is None, int(j_max))
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
