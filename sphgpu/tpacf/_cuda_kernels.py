"""@cuda.jit kernels of the pair counts: catalog preparation (cell keys, sorted unit vectors;
one thread per point, the arithmetic of :mod:`sphgpu.tpacf.sky`) and the counting kernel, one
block per group of work items (grid.PairPlan).

A work item is (chunk of the first catalog: sorted positions [i0, i1), at most ``i_tile``;
range [j0, j1) of the second catalog; label_i; label_j). A block walks its group's items in
order; when the chunk changes it stages the chunk's coordinates (and weights) in shared memory,
then each thread takes two points of the range at a time, j and j + threads (j = j0 + t,
j0 + t + 2 threads, ...), keeps them in registers and compares both with every staged point
(all threads read the same staged point at once: a shared-memory broadcast, which then serves
two pairs; a second point past the range has NaN coordinates and counts nowhere). In an auto
count only the items whose range starts inside their chunk test i < j. This is the slides'
scheme with the roles of the catalogs swapped (the chunk is small, the ranges long), plus the
grid pruning.

Binning (:mod:`sphgpu.tpacf.exact`): in float32 mode the squared chord s is computed in float32
and its decision read from the lookup table of ``exact.float32_lookup`` (shared memory, one
read indexed by the float's bits); in the few cells a threshold cuts, a branch-free binary
search in the threshold table decides. "Near an edge" means the pair is recomputed from the
float64 unit vectors with ``__dsub``/``__dmul_rn``/``__dadd_rn`` (never contracted into an
FMA, so bit-identical to NumPy) and searched in the float64 edges. In float64 mode every pair
takes that second path.

Histograms: each thread owns a column of a per-block shared table ``hist[bin * threads + t]``
(uint32; conflict-free: thread t always hits bank t mod 32), so no atomics in the inner loop.
The columns are summed by a tree reduction and added to the global int64 histograms with one
atomic per bin: at the end of the group, or with jackknife labels whenever the next item has
other labels (the items of a chunk are ordered by label_j). With labels each flushed histogram
also goes to its patch pair (label_i, label_j). The host keeps each group's work below 2**31
pairs so the uint32 columns cannot overflow.

Mean separations (``mean``, a compile-time flag, off unless the caller asks): every counted
pair adds theta = 2 asin(sqrt(d2) / 2) and ln theta, from the float64 squared chord (computed
for the pair if the float32 path did not), to two more float64 columns per thread, reduced and
flushed like the others. Off, the kernel is the one without them.

Barriers are never inside a branch or a loop that differs between threads of a block: the item
loop, the staging and the reduction loop have the same trip counts for every thread. Only
shared memory and atomics are used, so the kernel runs in Numba's CUDA simulator (where
libdevice's rounding intrinsics are replaced by plain Python arithmetic, which rounds the same).
"""

from __future__ import annotations

import functools
import math

from numba import cuda, float32, float64, int16, int32, int64, uint32, uint64

from .._cuda_launch import refresh_kernel_cache
from .._device import SIMULATOR
from . import exact, sky

# kernels are cached on disk (cache=True); they inline sky's device functions
refresh_kernel_cache(__file__, sky.__file__, exact.__file__)

__all__ = ["pair_kernel", "shared_bytes", "cell_keys", "sorted_points"]

if SIMULATOR:
    def _dmul(a, b):
        return a * b

    def _dadd(a, b):
        return a + b

    _f32_bits = exact.float32_bits
else:  # pragma: no cover - real GPU only
    from numba.cuda import libdevice

    _dmul = libdevice.dmul_rn
    _dadd = libdevice.dadd_rn
    _f32_bits = libdevice.float_as_int

_math = sky.point_math(cuda.jit(device=True, inline=True), _dmul, _dadd)
_cell = _math.cell
_unit_vector = _math.unit_vector


@cuda.jit(cache=True)
def cell_keys(ra, dec, labels, nbands, nreg, keys):
    """keys[i] = ((band * nreg + label) << 32) | q of point i (:mod:`sphgpu.tpacf.sky`).

    Launch: one thread per point, any 1-D shape. ra, dec (n,) float64 degrees; labels (n,)
    int64, or length 0 for label 0 everywhere; nbands, nreg int64; keys (n,) uint64 out."""
    i = cuda.grid(1)
    if i < ra.shape[0]:
        band, q = _cell(ra[i], dec[i], nbands)
        hi = band * nreg
        if labels.shape[0]:
            hi += labels[i]
        keys[i] = (uint64(hi) << uint64(sky.QBITS)) | uint64(q)


@cuda.jit(cache=True)
def sorted_points(ra, dec, w, perm, xyz, xyz32, ws):
    """Sorted unit vectors and weights: xyz[:, k] (float64), xyz32[:, k] (float32) and
    ws[k] = w[perm[k]] (w of length 0: no weights) from point perm[k].

    Launch: one thread per sorted position k, any 1-D shape; perm (n,) int64."""
    k = cuda.grid(1)
    if k < perm.shape[0]:
        i = perm[k]
        x, y, z = _unit_vector(ra[i], dec[i])
        xyz[0, k] = x
        xyz[1, k] = y
        xyz[2, k] = z
        xyz32[0, k] = float32(x)
        xyz32[1, k] = float32(y)
        xyz32[2, k] = float32(z)
        if w.shape[0]:
            ws[k] = w[i]


def shared_bytes(threads, i_tile, nbins, p32, p64, use32, weighted, mean=False, lookup=True):
    """Static shared memory of one block (must stay <= 48 KiB); ``lookup``: with the float32
    lookup table."""
    stage = 3 * i_tile * (4 if use32 else 8) + (8 * i_tile if weighted else 0)
    hist = nbins * threads * (4 + (8 if weighted else 0) + (16 if mean else 0))
    tables = 4 * p32 + 4 * (p32 // 2 + 1) + 8 * p64
    if use32 and lookup:
        tables += 2 * exact.LOOKUP_CELLS
    return stage + hist + tables + 4 * threads        # + the per-thread refinement counters


@functools.lru_cache(maxsize=None)
def pair_kernel(threads: int, i_tile: int, nbins: int, p32: int, p64: int, use32: bool,
                weighted: bool, jack: bool, auto: bool, mean: bool = False,
                lookup: bool = True, jpair: int = 2):
    """The counting kernel for one configuration (compile-time constants).

    Launch: grid (ngroups,), block ``threads`` (a power of two). Arguments:
    items (nitems, 6) int32; group_start (ngroups + 1,) int32; f1, f2 (3, n) float32 and
    x1, x2 (3, n) float64 sorted unit vectors (f* unused in float64 mode); T (p32,) float32,
    gap (p32 // 2 + 1,) int32, E (p64,) float64 threshold tables; L (LOOKUP_CELLS,) int16
    lookup table and its b0, shift (int32; :func:`exact.float32_lookup`; unused in float64
    mode or with ``lookup`` False); smax float32 and emax float64 scalars (nothing counts above
    them); w1, w2 (n,) float64 (weighted only); cnt (nbins,) int64; wsum (nbins,) float64;
    rc (nreg * nreg * nbins,) int64 and rw (nreg * nreg * nbins,) float64, patch pair
    (label_i, label_j) major (jack only); nref (1,) int64 (pairs recomputed in float64); nreg
    int32; tsum, lsum (nbins,) float64 sums of w theta and w ln(theta), radians (mean only).
    Outputs are added to. ``lookup``: the float32 decisions from the lookup table (else the
    search alone); ``jpair``: points of the range a thread compares at once (1 or 2).
    """
    NB = nbins
    TH = threads
    PG = p32 // 2 + 1
    STAGE_T = float32 if use32 else float64
    NI = i_tile
    NW = i_tile if weighted else 1
    HN = NB * TH                              # shared shapes must be compile-time constants
    HW = NB * TH if weighted else 1
    HM = NB * TH if mean else 1
    NL = exact.LOOKUP_CELLS if (use32 and lookup) else 1
    JP = jpair

    # Index arithmetic in the inner loop is unsigned 32-bit: signed indices make Numba emit a
    # negative-index wrap-around test at every array access.
    @cuda.jit(device=True, inline=True)
    def count_lt(T, v):                       # #{T < v}, T padded with +inf to p32 = 2**k
        pos = uint32(0)
        step = uint32(p32 >> 1)
        while step > uint32(0):
            if T[pos + step - uint32(1)] < v:
                pos += step
            step >>= uint32(1)
        return pos

    @cuda.jit(device=True, inline=True)
    def count_le(E, v):                       # #{E <= v}, E padded with +inf to p64 = 2**k
        pos = uint32(0)
        step = uint32(p64 >> 1)
        while step > uint32(0):
            if E[pos + step - uint32(1)] <= v:
                pos += step
            step >>= uint32(1)
        return pos

    @cuda.jit(device=True, inline=True)
    def d2_exact(x1, i, x2, j):              # the defining float64 expression, no FMA
        dx = x1[0, i] - x2[0, j]
        dy = x1[1, i] - x2[1, j]
        dz = x1[2, i] - x2[2, j]
        return _dadd(_dadd(_dmul(dx, dx), _dmul(dy, dy)), _dmul(dz, dz))

    @cuda.jit(device=True, inline=True)
    def flush(hist, whist, thist, lhist, t, base, cnt, wsum, rc, rw, tsum, lsum):
        cuda.syncthreads()
        s = TH >> 1
        while s > 0:                          # tree reduction of the columns into column 0
            for idx in range(t, NB * s, TH):
                k = idx // s
                c = idx - k * s
                hist[k * TH + c] += hist[k * TH + c + s]
                if weighted:
                    whist[k * TH + c] += whist[k * TH + c + s]
                if mean:
                    thist[k * TH + c] += thist[k * TH + c + s]
                    lhist[k * TH + c] += lhist[k * TH + c + s]
            cuda.syncthreads()
            s >>= 1
        for k in range(t, NB, TH):
            v = int64(hist[k * TH])
            if v != 0:
                cuda.atomic.add(cnt, k, v)
                if jack:
                    cuda.atomic.add(rc, base + k, v)
                if mean:
                    cuda.atomic.add(tsum, k, thist[k * TH])
                    cuda.atomic.add(lsum, k, lhist[k * TH])
            if weighted:
                wv = whist[k * TH]
                if wv != 0.0:
                    cuda.atomic.add(wsum, k, wv)
                    if jack:
                        cuda.atomic.add(rw, base + k, wv)
        cuda.syncthreads()
        for k in range(NB):
            hist[k * TH + t] = 0
            if weighted:
                whist[k * TH + t] = 0.0
            if mean:
                thist[k * TH + t] = 0.0
                lhist[k * TH + t] = 0.0

    @cuda.jit(device=True, inline=True)
    def pair(xs, ys, zs, xj, yj, zj, wk, wj, i, j, x1, x2, smax, emax, sL, b0, shift, sT, sgap,
             sE, hist, whist, thist, lhist, sref, tcol):
        """Bin one pair (staged point i at xs, ys, zs; point j in registers) into column tcol.
        Coordinates of NaN count nowhere (every comparison with NaN is false)."""
        dx = xs - xj
        dy = ys - yj
        dz = zs - zj
        b = uint32(NB)                        # "no bin"
        d = -1.0                              # the float64 d2, when computed
        if use32:
            s = (dx * dx + dy * dy) + dz * dz
            if s <= smax:
                if lookup:
                    cb = uint32(_f32_bits(s)) >> shift
                    v = int32(sL[min(max(cb, b0), b0 + uint32(NL - 1)) - b0])
                else:
                    v = int32(exact.LOOKUP_SEARCH)
                if v == int32(exact.LOOKUP_SEARCH):   # a threshold cuts the cell: search
                    c = count_lt(sT, s)
                    v = int32(exact.LOOKUP_REFINE) if c & uint32(1) else sgap[c >> uint32(1)]
                if v >= 0:
                    b = uint32(v)
                elif v == int32(exact.LOOKUP_REFINE):  # near an edge: the float64 decision
                    sref[tcol] += uint32(1)
                    d = d2_exact(x1, i, x2, j)
                    e = count_le(sE, d)
                    if e >= uint32(1) and e <= uint32(NB):
                        b = e - uint32(1)
        else:
            d = _dadd(_dadd(_dmul(dx, dx), _dmul(dy, dy)), _dmul(dz, dz))
            if d < emax:
                e = count_le(sE, d)
                if e >= uint32(1):
                    b = e - uint32(1)
        if b < uint32(NB):
            hist[b * uint32(TH) + tcol] += uint32(1)
            if weighted:
                whist[b * uint32(TH) + tcol] += wk * wj
            if mean:
                if d < 0.0:
                    d = d2_exact(x1, i, x2, j)
                th = 2.0 * math.asin(0.5 * math.sqrt(d))
                lt = math.log(th) if th > 0.0 else -math.inf
                if weighted:
                    th *= wk * wj
                    lt *= wk * wj
                thist[b * uint32(TH) + tcol] += th
                lhist[b * uint32(TH) + tcol] += lt

    @cuda.jit(cache=True)
    def kernel(items, group_start, f1, f2, x1, x2, T, gap, E, L, b0, shift, smax, emax, w1, w2,
               cnt, wsum, rc, rw, nref, nreg, tsum, lsum):
        t = cuda.threadIdx.x
        g = cuda.blockIdx.x
        sT = cuda.shared.array(p32, float32)
        sgap = cuda.shared.array(PG, int32)
        sE = cuda.shared.array(p64, float64)
        sL = cuda.shared.array(NL, int16)
        sx = cuda.shared.array(NI, STAGE_T)
        sy = cuda.shared.array(NI, STAGE_T)
        sz = cuda.shared.array(NI, STAGE_T)
        sw = cuda.shared.array(NW, float64)
        sref = cuda.shared.array(TH, uint32)  # pairs recomputed in float64, per thread
        hist = cuda.shared.array(HN, uint32)
        whist = cuda.shared.array(HW, float64)
        thist = cuda.shared.array(HM, float64)
        lhist = cuda.shared.array(HM, float64)
        for m in range(t, p32, TH):
            sT[m] = T[m]
        for m in range(t, PG, TH):
            sgap[m] = gap[m]
        for m in range(t, p64, TH):
            sE[m] = E[m]
        if use32 and lookup:
            for m in range(t, NL, TH):
                sL[m] = L[m]
        sref[t] = 0
        for k in range(NB):
            hist[k * TH + t] = 0
            if weighted:
                whist[k * TH + t] = 0.0
            if mean:
                thist[k * TH + t] = 0.0
                lhist[k * TH + t] = 0.0
        ub0 = uint32(b0)
        ush = uint32(shift)
        tcol = uint32(t)
        nan = STAGE_T(math.nan)
        loaded = int32(-1)
        it1 = group_start[g + 1]
        for it in range(group_start[g], it1):
            i0 = items[it, 0]
            ni = items[it, 1] - i0
            cuda.syncthreads()                # the previous chunk is no longer read
            if i0 != loaded:                  # same decision in every thread
                for k in range(t, ni, TH):
                    if use32:
                        sx[k] = f1[0, i0 + k]
                        sy[k] = f1[1, i0 + k]
                        sz[k] = f1[2, i0 + k]
                    else:
                        sx[k] = x1[0, i0 + k]
                        sy[k] = x1[1, i0 + k]
                        sz[k] = x1[2, i0 + k]
                    if weighted:
                        sw[k] = w1[i0 + k]
                loaded = i0
            cuda.syncthreads()
            j1 = items[it, 3]
            # auto: only i < j. Items start at their chunk (j - i0 >= 0); only an item whose
            # range starts inside its chunk needs the test, the others compare every pair.
            diag = auto and items[it, 2] < i0 + ni
            # Each thread takes JP points of the range at a time, ja and jb = ja + TH, and
            # compares them with every staged point: one read of a staged point serves JP
            # pairs. A jb past the range gets NaN coordinates and counts nowhere.
            for ja in range(items[it, 2] + t, j1, JP * TH):
                jb = ja + TH
                hasb = JP == 2 and jb < j1
                if not hasb:
                    jb = ja
                if use32:
                    xa, ya, za = f2[0, ja], f2[1, ja], f2[2, ja]
                    xb, yb, zb = f2[0, jb], f2[1, jb], f2[2, jb]
                else:
                    xa, ya, za = x2[0, ja], x2[1, ja], x2[2, ja]
                    xb, yb, zb = x2[0, jb], x2[1, jb], x2[2, jb]
                if not hasb:
                    xb = nan
                    yb = nan
                    zb = nan
                wa = w2[ja] if weighted else 0.0
                wb = w2[jb] if weighted else 0.0
                if diag:
                    enda = uint32(max(0, min(ni, ja - i0)))
                    endb = uint32(max(0, min(ni, jb - i0)))
                    k = uint32(0)
                    while k < max(enda, endb):
                        ik = i0 + int32(k)
                        if k < enda:
                            pair(sx[k], sy[k], sz[k], xa, ya, za, sw[k] if weighted else 0.0,
                                 wa, ik, ja, x1, x2, smax, emax, sL, ub0, ush, sT, sgap, sE,
                                 hist, whist, thist, lhist, sref, tcol)
                        if JP == 2 and k < endb:
                            pair(sx[k], sy[k], sz[k], xb, yb, zb, sw[k] if weighted else 0.0,
                                 wb, ik, jb, x1, x2, smax, emax, sL, ub0, ush, sT, sgap, sE,
                                 hist, whist, thist, lhist, sref, tcol)
                        k += uint32(1)
                else:
                    k = uint32(0)
                    while k < uint32(ni):
                        xs = sx[k]
                        ys = sy[k]
                        zs = sz[k]
                        wk = sw[k] if weighted else 0.0
                        ik = i0 + int32(k)
                        pair(xs, ys, zs, xa, ya, za, wk, wa, ik, ja, x1, x2, smax, emax, sL,
                             ub0, ush, sT, sgap, sE, hist, whist, thist, lhist, sref, tcol)
                        if JP == 2:
                            pair(xs, ys, zs, xb, yb, zb, wk, wb, ik, jb, x1, x2, smax, emax,
                                 sL, ub0, ush, sT, sgap, sE, hist, whist, thist, lhist, sref,
                                 tcol)
                        k += uint32(1)
            if jack:
                li = items[it, 4]
                lj = items[it, 5]
                last = it + 1 == it1
                if not last:
                    last = items[it + 1, 4] != li or items[it + 1, 5] != lj
                if last:                      # same decision in every thread
                    flush(hist, whist, thist, lhist, t, (li * nreg + lj) * NB, cnt, wsum, rc,
                          rw, tsum, lsum)
        if not jack:
            flush(hist, whist, thist, lhist, t, 0, cnt, wsum, rc, rw, tsum, lsum)
        if sref[t] != 0:
            cuda.atomic.add(nref, 0, int64(sref[t]))

    return kernel
