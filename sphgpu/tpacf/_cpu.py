"""The "cpu" backend: the grid-pruned pair counts in Numba, parallel over groups of work items.

Same plan (:mod:`sphgpu.tpacf.grid`) and the same two arithmetic modes as the CUDA kernels, so
CI checks the GPU algorithm's decisions at real sizes on the CPU:

* ``precision="float64"``: the defining float64 squared chord, binary search on the chord**2
  edges.
* ``precision="float32"`` (default, as on the GPU): the float32 squared chord classified against
  the thresholds of :mod:`sphgpu.tpacf.exact`; pairs near an edge are recomputed in float64.
  Counts are identical, and so are the weight sums and mean separations up to the order of
  their additions; it ran 2-6x faster than float64 on 2 cores (300,000 full-sky randoms,
  20 log bins 0.01-10 degrees: 1.1 s against 6.7 s; 2.2x with mean separations).
  As in the CUDA kernel, the decision is read from ``exact.float32_lookup``'s table, indexed by
  the float's bits; only where a threshold cuts the table's cell is the binary search done.

Slices of the groups of items (about equal work, contiguous) run on a pool of
``numba.get_num_threads()`` threads (the counting function releases the GIL; it compiles much
faster than a ``prange`` loop); each running slice adds into one of as many sets of histograms
as there are threads, summed at the end. With jackknife labels an item's histogram goes to the
patch pair (label of its chunk, label of its range). ``mean_theta`` adds, for every counted
pair, theta = 2 asin(sqrt(d2) / 2) from the float64 squared chord (recomputed in float32 mode),
and ln theta, to float64 sums per bin: off, each counted pair pays one well-predicted branch.
"""

from __future__ import annotations

import queue

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import budget, exact, slop as slop_
from .grid import build_plan, chunks_of, unit_weights
from .reference import RawCounts
from .sky import host_add, host_mul, pool

__all__ = ["count_pairs", "PRECISIONS", "DEFAULT_PRECISION", "BIN_SLOP", "cell_geometry"]

BIN_SLOP = True                     # counts approximately with bin_slop (sphgpu.tpacf.slop)

PRECISIONS = ("float64", "float32")
DEFAULT_PRECISION = "float32"
#: Chunk size (points of the first catalog per work item) and longest range of the second.
I_TILE, J_MAX = 256, 4096
#: Groups per thread: several, so that a slow group does not hold the others up.
GROUPS_PER_THREAD = 16


@numba.njit(cache=True)
def _count_le(E, P, v):
    """#{E[m] <= v} for E sorted and padded with +inf to P = 2**k entries."""
    pos = 0
    step = P >> 1
    while step > 0:
        if E[pos + step - 1] <= v:
            pos += step
        step >>= 1
    return pos


@numba.njit(cache=True)
def _count_lt(T, P, v):
    """#{T[m] < v} for T sorted and padded with +inf to P = 2**k entries."""
    pos = 0
    step = P >> 1
    while step > 0:
        if T[pos + step - 1] < v:
            pos += step
        step >>= 1
    return pos


@intrinsic
def _f32_bits(typingctx, x):
    """The bit pattern of a float32 as an int32 (a register bitcast: nothing through memory)."""
    if not (isinstance(x, types.Float) and x.bitwidth == 32):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@numba.njit(cache=True, inline="always")
def _d2(x1, i, x2, j):
    """The defining float64 squared chord of pair (i, j)."""
    ex = x1[0, i] - x2[0, j]
    ey = x1[1, i] - x2[1, j]
    ez = x1[2, i] - x2[2, j]
    return (ex * ex + ey * ey) + ez * ez


@numba.njit(cache=True, inline="always")
def _add_theta(ts, ls, k, d2, w):
    """Add the pair's separation (radians) and its log, weighted, to bin k."""
    th = 2.0 * np.arcsin(0.5 * np.sqrt(d2))
    ts[k] += w * th
    ls[k] += w * np.log(th)


@numba.njit(cache=True, inline="always")
def _tally64(d, E, P64, emax, hc, hw, ts, ls, w, weighted, mean):
    """Add a pair at float64 squared chord ``d`` with weight ``w`` to its bin, if any."""
    if d >= emax:
        return
    k = _count_le(E, P64, d) - 1
    if k < 0:
        return
    hc[k] += 1
    if weighted:
        hw[k] += w
    if mean:
        _add_theta(ts, ls, k, d, w)


@numba.njit(nogil=True, cache=True)
def _count_groups(g0, g1, items, group_start, x1, x2, f1, f2, E, T, gap, L, b0, shift, smax,
                  auto, use32, w1, w2, weighted, nreg, mean, cnt, wsum, rc, rw, ts, ls):
    """Add the counts of the items of groups [g0, g1) to the histograms (no GIL: the host runs
    several of these at once on threads, each with its own histograms). Returns the number of
    pairs recomputed in float64."""
    nb = cnt.shape[0]
    P64 = E.shape[0]
    P32 = T.shape[0]
    btop = b0 + L.shape[0] - 1
    emax = E[nb]
    hc = np.zeros(nb, np.int64)
    hw = np.zeros(nb)
    nref = 0
    for it in range(group_start[g0], group_start[g1]):
        i0, i1, j0, j1 = items[it, 0], items[it, 1], items[it, 2], items[it, 3]
        hc[:] = 0
        hw[:] = 0.0
        for i in range(i0, i1):
            js = max(j0, i + 1) if auto else j0
            if use32:
                fx, fy, fz = f1[0, i], f1[1, i], f1[2, i]
                for j in range(js, j1):
                    dx = fx - f2[0, j]
                    dy = fy - f2[1, j]
                    dz = fz - f2[2, j]
                    s = (dx * dx + dy * dy) + dz * dz
                    # NaN goes too: its bits would index the table's top cell
                    if not (s <= smax):
                        continue
                    k = L[min(max(_f32_bits(s) >> shift, b0), btop) - b0]
                    if k == exact.LOOKUP_SEARCH:   # a threshold cuts the cell
                        c = _count_lt(T, P32, s)
                        k = exact.LOOKUP_REFINE if c & 1 else gap[c >> 1]
                    d = -1.0                       # the float64 d2, when computed
                    if k == exact.LOOKUP_REFINE:   # near an edge: the float64 decision
                        nref += 1
                        d = _d2(x1, i, x2, j)
                        k = _count_le(E, P64, d) - 1
                        if k < 0 or k >= nb:
                            continue
                    elif k < 0:
                        continue
                    hc[k] += 1
                    if weighted:
                        hw[k] += w1[i] * w2[j]
                    if mean:
                        _add_theta(ts, ls, k, d if d >= 0.0 else _d2(x1, i, x2, j),
                                   w1[i] * w2[j] if weighted else 1.0)
            else:
                xx, xy, xz = x1[0, i], x1[1, i], x1[2, i]
                for j in range(js, j1):
                    ex = xx - x2[0, j]
                    ey = xy - x2[1, j]
                    ez = xz - x2[2, j]
                    _tally64((ex * ex + ey * ey) + ez * ez, E, P64, emax, hc, hw, ts, ls,
                             w1[i] * w2[j] if weighted else 1.0, weighted, mean)
        base = (items[it, 4] * nreg + items[it, 5]) * nb
        for k in range(nb):
            cnt[k] += hc[k]
            wsum[k] += hw[k]
            if nreg > 0:
                rc[base + k] += hc[k]
                if weighted:
                    rw[base + k] += hw[k]
    return nref


# the cell geometry and decisions of sphgpu.tpacf.slop, compiled for the host
_cell = slop_.geometry_math(numba.njit(inline="always"), host_mul, host_add)
_decide = slop_.decision_math(numba.njit(inline="always"), host_mul, host_add)


@numba.njit(nogil=True, cache=True)
def _cells_into(xyz, c_start, w, cen, rad, wcum):
    for c in range(c_start.shape[0] - 1):
        _cell(c, xyz, c_start, w, cen, rad, wcum)


def cell_geometry(sc, i_tile, weighted):
    """Chunk starts (nchunks + 1,) and ids (n,) int64, centres (3, nchunks) and radii
    (nchunks,) float64, and (``weighted``) the within-chunk running sums of the weights (n,)
    float64 (else an empty array), of a sorted catalog on the host (:mod:`sphgpu.tpacf.slop`);
    cached on it."""
    key = ("cells", int(i_tile), bool(weighted))
    if key not in sc.cache:
        c_start = chunks_of(sc, i_tile)[0]
        nc = c_start.size - 1
        cen, rad = np.empty((3, nc)), np.empty(nc)
        w = unit_weights(sc) if weighted else np.zeros(0)
        wcum = np.empty(w.size)
        _cells_into(sc.xyz, c_start, w, cen, rad, wcum)
        cid = np.repeat(np.arange(nc, dtype=np.int64), np.diff(c_start))
        sc.cache[key] = (c_start, cid, cen, rad, wcum)
    return sc.cache[key]


@numba.njit(nogil=True, cache=True)
def _count_groups_slop(g0, g1, items, group_start, x1, x2, cs1, cid1, cen1, rad1, wc1, cs2,
                       cid2, cen2, rad2, wc2, E, lo, hi, cmin, cmax, auto, w1, w2, weighted,
                       nreg, mean, cnt, wsum, rc, rw, ts, ls):
    """:func:`_count_groups` with bin_slop: an item's range is walked by the parts of it in
    one chunk b; the pairs of the item's chunk a with such a part are counted at once,
    skipped or, when ``slop.decision_math`` decides EXACT for (a, b), decided again for
    (a, each point of the part as a cell of its own) and counted exactly only where that
    is EXACT too. Returns the pairs counted at once."""
    nb = cnt.shape[0]
    P64 = E.shape[0]
    emax = E[nb]
    hc = np.zeros(nb, np.int64)
    hw = np.zeros(nb)
    at_once = 0
    for it in range(group_start[g0], group_start[g1]):
        i0, i1, j0, j1 = items[it, 0], items[it, 1], items[it, 2], items[it, 3]
        hc[:] = 0
        hw[:] = 0.0
        a = cid1[i0]
        ni = i1 - i0
        wa = wc1[i1 - 1] if weighted else 0.0      # items hold whole chunks
        j = j0
        while j < j1:
            b = cid2[j]
            q = min(j1, cs2[b + 1])
            if auto and a == b:            # pairs inside one chunk: always exact
                dec = slop_.EXACT
            else:
                dec = _decide(cen1[0, a], cen1[1, a], cen1[2, a], rad1[a], cen2[0, b],
                              cen2[1, b], cen2[2, b], rad2[b], E, P64, nb, lo, hi, cmin, cmax)
            if dec >= 0:
                m = ni * (q - j)
                hc[dec] += m
                at_once += m
                sb = 0.0
                if weighted:
                    sb = wc2[q - 1] - (wc2[j - 1] if j > cs2[b] else 0.0)
                    hw[dec] += wa * sb
                if mean:
                    ex = cen1[0, a] - cen2[0, b]
                    ey = cen1[1, a] - cen2[1, b]
                    ez = cen1[2, a] - cen2[2, b]
                    _add_theta(ts, ls, dec, (ex * ex + ey * ey) + ez * ez,
                               wa * sb if weighted else float(m))
            elif dec == slop_.EXACT:
                for jj in range(j, q):
                    # the point alone as a cell (radius: rounding pad only)
                    dj = slop_.EXACT
                    if not (auto and a == b):
                        dj = _decide(cen1[0, a], cen1[1, a], cen1[2, a], rad1[a], x2[0, jj],
                                     x2[1, jj], x2[2, jj], slop_.RHO_ABS, E, P64, nb, lo, hi,
                                     cmin, cmax)
                    if dj >= 0:
                        hc[dj] += ni
                        at_once += ni
                        if weighted:
                            hw[dj] += wa * w2[jj]
                        if mean:
                            ex = cen1[0, a] - x2[0, jj]
                            ey = cen1[1, a] - x2[1, jj]
                            ez = cen1[2, a] - x2[2, jj]
                            _add_theta(ts, ls, dj, (ex * ex + ey * ey) + ez * ez,
                                       wa * w2[jj] if weighted else float(ni))
                        continue
                    if dj == slop_.SKIP:
                        continue
                    iend = min(i1, jj) if auto else i1
                    for i in range(i0, iend):
                        _tally64(_d2(x1, i, x2, jj), E, P64, emax, hc, hw, ts, ls,
                                 w1[i] * w2[jj] if weighted else 1.0, weighted, mean)
            j = q
        base = (items[it, 4] * nreg + items[it, 5]) * nb
        for k in range(nb):
            cnt[k] += hc[k]
            wsum[k] += hw[k]
            if nreg > 0:
                rc[base + k] += hc[k]
                if weighted:
                    rw[base + k] += hw[k]
    return at_once


def _threads():
    return max(1, numba.get_num_threads())


def count_pairs(cat1, cat2, bins, *, n_regions=0, weighted=False, precision=DEFAULT_PRECISION,
                mean_theta=False, max_device_bytes=None, i_tile=I_TILE, j_max=J_MAX,
                groups=None, slop=None):
    """Pair counts of ``cat1`` x ``cat2`` (None: unique pairs of ``cat1``) on the CPU;
    approximate with ``slop`` (a :class:`sphgpu.tpacf.slop.SlopPlan`, float64 arithmetic
    whatever ``precision``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS} on the cpu backend, got "
                         f"{precision!r}")
    if groups is None:
        groups = GROUPS_PER_THREAD * numba.get_num_threads()
    if slop is not None:
        i_tile = slop_.CELL_POINTS
    plan = build_plan(cat1, cat2, bins, n_regions=n_regions, i_tile=i_tile, j_max=j_max,
                      groups=groups, h=None if slop is None else slop.h)
    budget.check(plan, bins.nbins, n_regions, weighted, mean_theta, max_device_bytes)
    s1, s2 = plan.s1, plan.s2
    nb, G = bins.nbins, plan.group_start.size - 1
    E = exact.padded_edges(bins.chord2_edges)
    T, gap = exact.float32_thresholds(bins.chord2_edges)
    one = np.zeros(1)
    w1 = unit_weights(s1) if weighted else one
    w2 = unit_weights(s2) if weighted else one
    nreg = n_regions
    nthreads = min(_threads(), G)
    size = nreg * nreg * nb if nreg else 1
    free = queue.SimpleQueue()                    # one set of histograms per running slice
    # the per-region weight sums only when weighted: with 200 regions and 20 bins they are
    # 6.4 MB a thread, 0.8 GB on a host of 128 threads
    sets = [(np.zeros(nb, np.int64), np.zeros(nb), np.zeros(size, np.int64),
             np.zeros(size if weighted else 1),
             np.zeros(nb), np.zeros(nb)) for _ in range(max(1, nthreads))]
    for h in sets:
        free.put(h)
    if slop is None:
        fn = _count_groups
        # float64 mode never reads the table
        L, b0, shift = (exact.float32_lookup(T, gap) if precision == "float32"
                        else (np.zeros(1, np.int16), 0, 0))
        args = (plan.items, plan.group_start, s1.xyz, s2.xyz, s1.xyz32, s2.xyz32, E, T, gap,
                L, np.int64(b0), np.int64(shift), exact.float32_cutoff(T, gap), plan.auto,
                precision == "float32", w1, w2, weighted, nreg, bool(mean_theta))
    else:
        fn = _count_groups_slop
        args = (plan.items, plan.group_start, s1.xyz, s2.xyz,
                *cell_geometry(s1, i_tile, weighted), *cell_geometry(s2, i_tile, weighted), E,
                slop.lo, slop.hi, slop.cmin, slop.cmax,
                plan.auto, w1, w2, weighted, nreg, bool(mean_theta))

    def run(ab):
        h = free.get()
        try:
            return fn(ab[0], ab[1], *args, *h)
        finally:
            free.put(h)

    if nthreads <= 1:
        tally = run((0, G))
    else:
        # groups are of about equal work; threads take slices of them as they become free
        step = max(1, G // (nthreads * 4))
        tally = sum(pool(nthreads).map(run, [(a, min(G, a + step))
                                               for a in range(0, G, step)]))
    c, w, rc, rw, ts, ls = (sum(h[m] for h in sets) for m in range(6))
    shape = (nreg, nreg, nb)
    return RawCounts(counts=c, weights=w if weighted else None,
                     patch_counts=rc.reshape(shape) if n_regions else None,
                     patch_weights=rw.reshape(shape) if (n_regions and weighted) else None,
                     theta_sum=ts if mean_theta else None,
                     log_theta_sum=ls if mean_theta else None,
                     refined=0 if slop is not None else int(tally),
                     at_once=int(tally) if slop is not None else 0,
                     pairs_compared=plan.pairs_compared)
