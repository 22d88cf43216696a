"""How distributed work is cut into tasks: m chunks, ring chunks, catalog chunk pairs, bands.

Pure functions on sizes and small index arrays; this module imports only NumPy (not Dask, not
the rest of sphgpu), so a scheduler-free caller, a test or another orchestrator can reuse it.

Every partition covers its items exactly once and balances a stated cost model:

* :func:`m_chunks` -- the Legendre step for azimuthal order m runs the recurrence over
  l = m..lmax on every ring, so it costs ``(lmax - m + 1) * nrings``; the SHT paper gives each
  process a set of m with equal total cost. Chunks are contiguous ranges of m, so the a_lm of a
  chunk are one contiguous slice of healpy's m-major array (:func:`alm_slice`).
* :func:`ring_chunks` -- the ring-FFT step costs about the number of pixels of a ring; with
  ``pairs`` (north/south mirror rings) a chunk keeps both rings of each pair, so a Legendre step
  run on that chunk still evaluates each recurrence once for two rings.
* :func:`catalog_chunks` / :func:`chunk_pairs` -- pair counting over chunks of catalogs: every
  unordered pair of points of one catalog (auto counts) or every (point, point) of two
  catalogs (cross counts) falls in exactly one task.
* :func:`declination_stripes` -- pair counting over declination stripes of equal estimated
  pairs: a stripe's points with themselves and with the points of the next stripes that lie
  within ``theta_max`` in declination (:func:`stripe_members`), so each pair falls in exactly
  one task and each task is sized by its pairs, not by its points.
* :func:`latitude_bands` -- compact real-space work split into colatitude bands, each with the
  halo of input rings or points within ``overlap`` radians that it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["balanced_cuts", "m_costs", "m_chunks", "alm_slice", "ring_chunks",
           "transform_ring_costs", "catalog_chunks", "ChunkPair", "chunk_pairs",
           "declination_stripes", "stripe_members", "STRIPE_SAMPLE", "Band",
           "latitude_bands"]


def _check_count(name, value, minimum=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def balanced_cuts(costs, nchunks: int, *, shares=None) -> np.ndarray:
    """Cut a sequence of items into contiguous chunks of nearly equal total cost.

    Parameters
    ----------
    costs : array_like, shape (n,), non-negative
        Cost of each item, in any unit.
    nchunks : int >= 1
        Wanted number of chunks; ``min(nchunks, n)`` non-empty chunks are made.
    shares : array_like, shape (nchunks,), positive, optional
        Wanted cost of each chunk relative to the others (default: equal). Each boundary is
        then the item boundary nearest to its chunk's cumulative share of the total.

    Returns
    -------
    ndarray, shape (nchunks_made + 1,), int64
        Boundaries: chunk ``k`` is items ``bounds[k]:bounds[k+1]``; ``bounds[0] == 0`` and
        ``bounds[-1] == n``. Each boundary is the item boundary nearest to its share of the
        total cost, so no chunk exceeds ``total / nchunks + max(costs)`` (unless there are so
        few items that chunks of one item are forced). With all costs zero the chunks hold
        equal numbers of items.
    """
    nchunks = _check_count("nchunks", nchunks)
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 1:
        raise ValueError(f"costs must be 1-D, got shape {c.shape}")
    n = c.shape[0]
    if n == 0:
        raise ValueError("costs is empty: there is nothing to partition")
    if not np.all(np.isfinite(c)) or c.min() < 0:
        raise ValueError("costs must be finite and >= 0")
    k = min(nchunks, n)
    if shares is None:
        frac = np.arange(k + 1) / k
    else:
        sh = np.asarray(shares, dtype=np.float64)
        if sh.shape != (nchunks,) or not np.all(np.isfinite(sh)) or np.any(sh <= 0):
            raise ValueError(f"shares must be {nchunks} positive numbers, got {shares!r}")
        sh = sh[:k]
        frac = np.concatenate(([0.0], np.cumsum(sh) / sh.sum()))
    cum = np.cumsum(c)
    total = cum[-1]
    if total == 0:
        cum = np.arange(1, n + 1, dtype=np.float64)
        total = float(n)
    bounds = np.empty(k + 1, dtype=np.int64)
    bounds[0], bounds[k] = 0, n
    for j in range(1, k):
        target = total * frac[j]
        i = int(np.searchsorted(cum, target))          # first item whose prefix reaches target
        # cut after item i (prefix cum[i]) or before it (prefix cum[i-1]): the nearer one
        before = cum[i - 1] if i > 0 else 0.0
        cut = i + 1 if (i < n and cum[i] - target < target - before) else i
        # keep every chunk non-empty: leave room for the chunks still to come
        bounds[j] = min(max(cut, bounds[j - 1] + 1), n - (k - j))
    return bounds


# ----------------------------------------------------------------------------- m chunks
def m_costs(lmax: int, mmax: int | None = None, nrings: int = 1) -> np.ndarray:
    """Cost of the Legendre step of each m: ``(lmax - m + 1) * nrings``.

    Parameters
    ----------
    lmax : int
        Band limit, >= 0.
    mmax : int, optional
        Azimuthal limit, <= lmax; lmax by default.
    nrings : int, optional
        Rings the recurrence runs for, >= 1.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(mmax+1,)``, recurrence steps.
    """
    lmax = _check_count("lmax", lmax, 0)
    mmax = lmax if mmax is None else _check_count("mmax", mmax, 0)
    if mmax > lmax:
        raise ValueError(f"mmax must be <= lmax={lmax}, got {mmax}")
    nrings = _check_count("nrings", nrings)
    return (lmax - np.arange(mmax + 1, dtype=np.float64) + 1) * nrings


def m_chunks(lmax: int, mmax: int | None = None, nchunks: int = 1, *,
             nrings: int = 1) -> list[range]:
    """Contiguous ranges of m with nearly equal Legendre cost (see :func:`m_costs`).

    Parameters
    ----------
    lmax : int
        Band limit, >= 0.
    mmax : int, optional
        Azimuthal limit, <= lmax; lmax by default.
    nchunks : int, optional
        Number of chunks wanted, >= 1.
    nrings : int, optional
        Scales every cost equally (it matters only to callers comparing costs across
        problems).

    Returns
    -------
    list of range
        ``min(nchunks, mmax + 1)`` ranges covering ``0..mmax`` in order.
    """
    costs = m_costs(lmax, mmax, nrings)
    b = balanced_cuts(costs, nchunks)
    return [range(int(b[i]), int(b[i + 1])) for i in range(b.shape[0] - 1)]


def alm_slice(lmax: int, mrange: range) -> slice:
    """The slice of healpy's m-major a_lm array (band limit ``lmax``) holding orders ``mrange``.

    The block of order m (l = m..lmax) starts at index ``m * (2 lmax + 3 - m) / 2``, so a
    contiguous range of m is one contiguous slice, from the start of its first m to the start
    of the m after its last.

    Parameters
    ----------
    lmax : int
        Band limit, >= 0.
    mrange : range
        Non-empty, step 1, within 0..lmax.

    Returns
    -------
    slice
        Indices of the a_lm with m in ``mrange``.
    """
    lmax = _check_count("lmax", lmax, 0)
    if not isinstance(mrange, range) or mrange.step != 1 or len(mrange) == 0:
        raise TypeError(f"mrange must be a non-empty range of m with step 1, got {mrange!r}")
    if mrange.start < 0 or mrange.stop - 1 > lmax:
        raise ValueError(f"mrange {mrange!r} must lie within 0..lmax={lmax}")

    def start(m):
        return m * (2 * lmax + 3 - m) // 2

    return slice(start(mrange.start), start(mrange.stop))


# ----------------------------------------------------------------------------- ring chunks
def ring_chunks(nphi, nchunks: int, *, pairs=None, cost=None) -> list[np.ndarray]:
    """Chunks of rings with nearly equal cost.

    Parameters
    ----------
    nphi : array_like, shape (nrings,), int
        Pixels per ring (``RingGeometry.nphi``).
    nchunks : int >= 1
    pairs : (north, south) int arrays, optional
        Mirror-ring pairs in the order to keep (``RingGeometry.ring_pairs()``; ``south == -1``
        where a ring has no mirror). Chunks are then made of whole pairs, contiguous in this
        order, so both rings of a pair land in the same chunk.
    cost : array_like, shape (nrings,), optional
        Cost of each ring; default: its number of pixels (the ring-FFT step). A pair costs the
        sum of its rings.

    Returns
    -------
    list of ndarray, int64
        ``min(nchunks, number of items)`` sorted arrays of ring indices; together they hold every
        ring exactly once. Without ``pairs`` each chunk is a contiguous run of rings.
    """
    nphi = np.asarray(nphi)
    if nphi.ndim != 1 or nphi.shape[0] == 0:
        raise ValueError(f"nphi must be a non-empty 1-D array, got shape {nphi.shape}")
    nrings = nphi.shape[0]
    c = nphi.astype(np.float64) if cost is None else np.asarray(cost, dtype=np.float64)
    if c.shape != (nrings,):
        raise ValueError(f"cost must have shape ({nrings},) like nphi, got {c.shape}")
    if pairs is None:
        b = balanced_cuts(c, nchunks)
        return [np.arange(b[i], b[i + 1], dtype=np.int64) for i in range(b.shape[0] - 1)]
    north, south = (np.asarray(p, dtype=np.int64) for p in pairs)
    if north.ndim != 1 or north.shape != south.shape:
        raise ValueError("pairs must be two 1-D integer arrays of equal length (north, south)")
    rings = np.concatenate([north, south[south >= 0]])
    if rings.shape[0] != nrings or not np.array_equal(np.sort(rings), np.arange(nrings)):
        raise ValueError(f"pairs must name each of the {nrings} rings exactly once")
    pair_cost = c[north] + np.where(south >= 0, c[np.maximum(south, 0)], 0.0)
    b = balanced_cuts(pair_cost, nchunks)
    out = []
    for i in range(b.shape[0] - 1):
        n, s = north[b[i]:b[i + 1]], south[b[i]:b[i + 1]]
        out.append(np.sort(np.concatenate([n, s[s >= 0]])))
    return out


def transform_ring_costs(nphi, pairs, nalm: int) -> np.ndarray:
    """Per-ring cost of a whole transform run on a chunk of rings (flops, a model).

    The Legendre recurrence runs once per mirror pair over the whole (l, m) triangle, 8 flops
    a step (4 for the recurrence, 4 for the complex accumulation), and each ring adds its FFT,
    about 5 n log2 n flops. The pair's Legendre cost is charged to its first ring, so
    ``ring_chunks(nphi, k, pairs=pairs, cost=transform_ring_costs(nphi, pairs, nalm))`` balances
    whole transforms. (Rings near the poles, where most lambda_lm underflow and backends skip
    them, are costed as if they were complete.)

    Parameters
    ----------
    nphi : array_like, shape (nrings,), int
        Pixels per ring.
    pairs : (north, south) int arrays
        Mirror-ring pairs (``RingGeometry.ring_pairs()``).
    nalm : int
        Number of a_lm of the transform, >= 1.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(nrings,)``, flops.
    """
    nphi = np.asarray(nphi, dtype=np.float64)
    north = np.asarray(pairs[0], dtype=np.int64)
    nalm = _check_count("nalm", nalm)
    cost = 5.0 * nphi * np.log2(np.maximum(nphi, 2.0))
    cost[north] += 8.0 * nalm
    return cost


# ----------------------------------------------------------------------------- catalogs
def catalog_chunks(n: int, nchunks: int) -> list[slice]:
    """Contiguous slices of ``n`` points, sizes differing by at most one.

    Parameters
    ----------
    n : int
        Number of points, >= 1.
    nchunks : int
        Number of slices wanted, >= 1.

    Returns
    -------
    list of slice
        ``min(nchunks, n)`` slices covering ``0..n`` in order.
    """
    n = _check_count("n", n)
    nchunks = _check_count("nchunks", nchunks)
    b = balanced_cuts(np.ones(n), nchunks)
    return [slice(int(b[i]), int(b[i + 1])) for i in range(b.shape[0] - 1)]


@dataclass(frozen=True)
class ChunkPair:
    """One pair-counting task: points ``first`` of catalog 1 against ``second`` of catalog 2.

    ``same`` is True for a diagonal block of an auto count (``first == second`` in one catalog):
    that task must count each unordered pair once, i.e. only i < j.

    Parameters
    ----------
    first : slice
        Points of catalog 1.
    second : slice
        Points of catalog 2 (of catalog 1 in an auto count).
    same : bool
        A diagonal block of an auto count.
    """

    first: slice
    second: slice
    same: bool

    @property
    def npairs(self) -> int:
        """Number of point pairs the task examines (its cost before any pruning)."""
        a = self.first.stop - self.first.start
        b = self.second.stop - self.second.start
        return a * (a - 1) // 2 if self.same else a * b


def chunk_pairs(n1: int, n2: int | None = None, nchunks: int = 1) -> list[ChunkPair]:
    """Tasks covering every pair of points once.

    Auto counts (``n2`` None): each catalog chunk against itself (``same=True``) and against
    every later chunk, ``nchunks * (nchunks + 1) / 2`` tasks; the unordered pairs {i, j}, i != j,
    of the n1 points each fall in exactly one task. Cross counts (``n2`` given, e.g. data against
    randoms): every chunk of catalog 1 against every chunk of catalog 2, ``nchunks**2`` tasks.
    Partial counts from the tasks add up (``PairCounts`` addition) to the whole count.

    Parameters
    ----------
    n1 : int
        Points in catalog 1, >= 1.
    n2 : int, optional
        Points in catalog 2; None for an auto count.
    nchunks : int, optional
        Chunks per catalog, >= 1.

    Returns
    -------
    list of ChunkPair
        The tasks.
    """
    c1 = catalog_chunks(n1, nchunks)
    if n2 is None:
        return [ChunkPair(a, b, i == j) for i, a in enumerate(c1) for j, b in enumerate(c1)
                if i <= j]
    c2 = catalog_chunks(n2, nchunks)
    return [ChunkPair(a, b, False) for a in c1 for b in c2]


# ----------------------------------------------------------------------------- stripes
#: points of each catalog that the stripe cost model looks at (every k-th point): enough for
#: a few per cell of its histogram, few enough to cost milliseconds on 10^9 points
STRIPE_SAMPLE = 200_000
#: cells of the cost model: declination rows (at least; more for small theta_max) x RA columns
_STRIPE_ROWS, _STRIPE_COLS = 512, 64


def _sample(a, m):
    a = np.asarray(a, dtype=np.float64)
    return a[::max(1, a.size // m)]


def declination_stripes(dec1, nstripes: int, theta_max: float, *, ra1=None, dec2=None,
                        ra2=None) -> np.ndarray:
    """Declination edges of ``nstripes`` stripes of about equal pair-counting work.

    The work of a count is about its pairs within ``theta_max``: a point has about
    (surface density around it) x (area of a cap of radius theta_max) neighbours. The model
    histograms a sample of the points (:data:`STRIPE_SAMPLE`) into cells of declination and
    RA (so a survey footprint that covers part of a ring is seen as such) and gives each
    declination row the sum over its cells of n1 (n1 - 1) / area (auto) or n1 n2 / area
    (cross); rows are then cut into stripes of equal total (:func:`balanced_cuts`). Only the
    balance depends on the model: any edges give exact counts.

    Parameters
    ----------
    dec1 : array, shape (n1,), degrees
        Declinations of the first catalog (the one cut into stripes).
    nstripes : int >= 1
        Stripes wanted (fewer when the model has fewer rows).
    theta_max : float
        Largest separation counted, radians.
    ra1 : array, shape (n1,), degrees, optional
        Its right ascensions (default: points spread evenly in RA).
    dec2, ra2 : array, degrees, optional
        The second catalog of a cross count.

    Returns
    -------
    ndarray, shape (nstripes_made + 1,), float64, degrees
        ``edges[0] == -90``, ``edges[-1] == 90``, increasing; stripe i holds the points with
        ``edges[i] <= dec < edges[i + 1]`` (the last one ``dec == 90`` too, see
        :func:`stripe_members`).
    """
    k = _check_count("nstripes", nstripes)
    if not np.isfinite(theta_max) or theta_max <= 0:
        raise ValueError(f"theta_max must be a positive number of radians, got {theta_max!r}")
    rows = max(_STRIPE_ROWS, min(4096, int(np.ceil(4 * math.pi / theta_max))))
    dedges = np.linspace(-90.0, 90.0, rows + 1)
    redges = np.linspace(0.0, 360.0, _STRIPE_COLS + 1)
    # cell areas (steradians): RA width x (sin of the upper edge - sin of the lower edge)
    area = np.diff(np.sin(np.radians(dedges)))[:, None] * (2 * math.pi / _STRIPE_COLS)

    def hist(dec, ra):
        d = _sample(dec, STRIPE_SAMPLE)
        scale = np.asarray(dec).size / max(d.size, 1)
        if ra is None:                      # no RA: the row's points spread over its cells
            h = np.histogram(d, dedges)[0][:, None] / _STRIPE_COLS * np.ones(_STRIPE_COLS)
        else:
            h = np.histogram2d(d, np.mod(_sample(ra, STRIPE_SAMPLE), 360.0),
                               (dedges, redges))[0]
        return h, scale

    h1, s1 = hist(dec1, ra1)
    if dec2 is None:
        cost = (s1 * s1) * np.sum(h1 * np.maximum(h1 - 1.0, 0.0) / area, axis=1)
    else:
        h2, s2 = hist(dec2, ra2)
        cost = (s1 * s2) * np.sum(h1 * h2 / area, axis=1)
    # rows with points but no sampled pairs still prepare their points: a small floor, so
    # that they are spread over the stripes rather than all given to one
    cost = cost + 1e-6 * max(float(cost.max()), 1.0) * (h1.sum(axis=1) > 0)
    cuts = balanced_cuts(cost, k)
    edges = dedges[cuts]
    edges[0], edges[-1] = -90.0, 90.0
    return edges


def stripe_members(dec, edges, theta_max_deg: float, *, auto: bool):
    """Which points each stripe task holds.

    Parameters
    ----------
    dec : array, shape (n,), degrees
        Declinations (of the first catalog for ``auto``, of the second for a cross count).
    edges : array, shape (k + 1,), degrees
        From :func:`declination_stripes`.
    theta_max_deg : float
        Largest separation counted, degrees, padded by the caller for rounding.
    auto : bool
        True: for stripe i, its own points and then (its *halo*) the points of the stripes
        above with ``dec <= edges[i + 1] + theta_max_deg``: every pair of points of different
        stripes within theta_max is then in exactly one task, that of the lower stripe,
        because the separation of two points is at least their difference in declination.
        False (the second catalog of a cross count): for stripe i, the points with
        ``edges[i] - theta_max_deg <= dec <= edges[i + 1] + theta_max_deg``.

    Returns
    -------
    list of (ndarray of int64, int)
        Per stripe, point indices and how many of them come first as the stripe's own
        (``auto``; 0 for a cross count's second catalog, whose points are all halo).
    """
    dec = np.asarray(dec, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    k = edges.size - 1
    # the stripe of each point; dec == 90 belongs to the last stripe
    s = np.minimum(np.searchsorted(edges[1:-1], dec, side="right"), k - 1)
    s = s.astype(np.uint16 if k < 2**16 else np.int64)
    order = np.argsort(s, kind="stable")     # NumPy's radix sort for 16-bit keys: one pass
    bounds = np.searchsorted(s[order], np.arange(k + 1), side="left")
    dec_o = dec[order]
    out = []
    for i in range(k):
        if auto:
            lim = edges[i + 1] + theta_max_deg
            j = min(k, int(np.searchsorted(edges, lim, side="right")))   # stripes to look in
            lo, hi = bounds[i + 1], bounds[j]
            halo = order[lo:hi][dec_o[lo:hi] <= lim]
            own = order[bounds[i]:bounds[i + 1]]
            out.append((np.concatenate([own, halo]), own.size))
        else:
            a, b = edges[i] - theta_max_deg, edges[i + 1] + theta_max_deg
            j0 = max(0, int(np.searchsorted(edges, a, side="right")) - 1)
            j1 = min(k, int(np.searchsorted(edges, b, side="right")))
            lo, hi = bounds[j0], bounds[j1]
            d = dec_o[lo:hi]
            out.append((order[lo:hi][(d >= a) & (d <= b)], 0))
    return out


# ----------------------------------------------------------------------------- latitude bands
@dataclass(frozen=True)
class Band:
    """A colatitude band of sorted rings (or points).

    ``own`` are the items whose output the band computes; ``halo`` (a superset, contiguous) are
    all items within the overlap of them, the inputs a compact kernel reaches. ``theta_min`` and
    ``theta_max`` (radians) bound the owned items.

    Parameters
    ----------
    own : slice
        Items whose output the band computes.
    halo : slice
        Items the band reads: ``own`` plus those within the overlap.
    theta_min, theta_max : float
        Colatitude range of the owned items, radians.
    """

    own: slice
    halo: slice
    theta_min: float
    theta_max: float


def latitude_bands(theta, nbands: int, overlap: float, *, cost=None,
                   shares=None) -> list[Band]:
    """Split rings (or points) sorted by colatitude into bands with halos.

    Parameters
    ----------
    theta : array_like, shape (n,), float, radians
        Colatitudes in non-decreasing order (HEALPix and the other ring grids are; sort a
        catalog first).
    nbands : int >= 1
    overlap : float >= 0, radians
        Reach of the kernel (``theta_cut`` of a split plan, or a pair counter's ``theta_max``).
        Two points at angular distance d differ in colatitude by at most d, so the halo (all
        items with colatitude within ``overlap`` of the band's owned range) holds every item a
        compact kernel centred on an owned item can touch.
    cost : array_like, shape (n,), optional
        Cost of each item (pixels per ring for a convolution); default 1 each.
    shares : array_like, shape (nbands,), optional
        Relative cost of each band (default equal; see :func:`balanced_cuts`), e.g. a smaller
        band for a worker that has other work too.

    Returns
    -------
    list of Band, ``min(nbands, n)`` of them, whose ``own`` slices cover 0..n in order.
    """
    t = np.asarray(theta, dtype=np.float64)
    if t.ndim != 1 or t.shape[0] == 0:
        raise ValueError(f"theta must be a non-empty 1-D array, got shape {t.shape}")
    if not np.all(np.isfinite(t)) or t.min() < 0 or t.max() > math.pi:
        raise ValueError("theta must lie in [0, pi] radians")
    if np.any(np.diff(t) < 0):
        raise ValueError("theta must be sorted in non-decreasing order (sort the catalog first)")
    if isinstance(overlap, (bool, np.bool_)) or not isinstance(overlap, (int, float, np.number)):
        raise TypeError(f"overlap must be a number of radians, got {type(overlap).__name__}")
    overlap = float(overlap)
    if not math.isfinite(overlap) or overlap < 0:
        raise ValueError(f"overlap must be a finite angle >= 0 in radians, got {overlap}")
    c = np.ones(t.shape[0]) if cost is None else np.asarray(cost, dtype=np.float64)
    if c.shape != t.shape:
        raise ValueError(f"cost must have shape {t.shape} like theta, got {c.shape}")
    b = balanced_cuts(c, nbands, shares=shares)
    bands = []
    for i in range(b.shape[0] - 1):
        lo, hi = float(t[b[i]]), float(t[b[i + 1] - 1])
        h0 = int(np.searchsorted(t, lo - overlap, side="left"))
        h1 = int(np.searchsorted(t, hi + overlap, side="right"))
        bands.append(Band(slice(int(b[i]), int(b[i + 1])), slice(h0, h1), lo, hi))
    return bands
