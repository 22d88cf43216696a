"""Exact binning with a float32 fast path: the thresholds, the error bound and their proof.

The bin of a pair is defined in float64 (:mod:`sphgpu.tpacf.bins`): ``E[k] <= d2 < E[k+1]``
with ``d2 = ((x1-x2)**2 + (y1-y2)**2) + (z1-z2)**2`` from float64 unit vectors, each product
and sum rounded once (no fused multiply-add). NumPy and Numba's CPU code evaluate it that way;
the CUDA kernels use ``__dmul_rn``/``__dadd_rn``, which the compiler never fuses.

The float32 fast path computes ``s`` = the same expression from the unit vectors rounded to
float32, in float32, in any evaluation order and with or without FMA. Its distance from the
float64 value is bounded (u = 2**-24, the float32 unit roundoff; a = 2**-23 (1 + u) bounds
|fl32(x1) - fl32(x2) - (x1 - x2)| plus the rounding of the difference for |x| <= 1;
g3 = 3u / (1 - 3u) the bound of a rounded 3-term dot product, FMA or not):

    |s - d2_exact| <= err32(d2) = (1 + g3) (2 a (1 + u) sqrt(3 d2) + 3 a**2 + (2u + u**2) d2)
                                  + g3 d2
    |d2_float64 - d2_exact| <= 8 * 2**-53 * d2

(per component |D - Dx| <= a + u |Dx| for the float32 difference D of the true difference Dx,
so |D**2 - Dx**2| <= (a + u|Dx|)(2|Dx| + a + u|Dx|); summing over components with
sum |Dx| <= sqrt(3 d2) and adding the rounding of the sum gives err32). Around every edge E
the margin M = 2 (err32(2E) + 8 * 2**-53 * 2E) defines an interval [E - M, E + M]. If s lies
outside every interval, the float64 value lies on the same side of every edge as s (for
s > E + M: d2 < E would give d2 < 2E and s <= d2 + err32(2E) < E + M; for s < E - M: d2 >= E
would give s >= d2 - err32(d2) >= E - err32(E), since x - err32(x) increases for
x > 4.3e-14, which holds for every edge E >= ``TINY_EDGE``; for smaller edges the interval
reaches down to -inf). Only pairs with s inside an interval (about 2e-7 sqrt(E) wide: a few
per million at the benchmark's 10 degree edge) are recomputed in float64.

:func:`float32_thresholds` merges overlapping intervals and returns them as a sorted float32
array ``T`` (rounded outward) plus the bin of each gap between intervals: with
``c = #{T < s}``, an odd c means "recompute in float64", an even c means bin ``gap_bin[c // 2]``
(-1: outside the bins). ``tests/tpacf/test_exact.py`` checks the bound on adversarial pairs and
that both paths give identical counts.

:func:`float32_lookup` replaces most of those binary searches by one table read. The bits of a
non-negative float32, read as an integer, increase with its value, so ``bits(s) >> shift``
cuts the float32 axis into cells of 2**(23 - shift) per octave. A cell on which ``#{T < s}``
is the same at its smallest and largest float holds that decision (a bin, outside, or
"recompute"); only a cell that a threshold cuts says "search", and the pair takes the binary
search as before. The decisions are the search's own, so counts stay identical.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["err32", "float32_thresholds", "float32_cutoff", "float32_lookup", "padded_edges",
           "TINY_EDGE", "LOOKUP_CELLS", "LOOKUP_REFINE", "LOOKUP_SEARCH", "float32_bits"]

_U = 2.0 ** -24
_A = 2.0 ** -23 * (1 + _U)
_G3 = 3 * _U / (1 - 3 * _U)
#: Entries of the lookup table (int16: 4 KiB of shared memory on the GPU).
LOOKUP_CELLS = 2048
#: Lookup codes besides a bin (>= 0) and -1 (outside the bins).
LOOKUP_REFINE = -2
LOOKUP_SEARCH = -3
#: Edges below this squared chord (about 0.2 arcsec) get intervals reaching down to -inf.
TINY_EDGE = 1e-12


def err32(d2):
    """Bound on |float32 squared chord - exact squared chord of the float64 vectors|."""
    d2 = np.asarray(d2, dtype=np.float64)
    return ((1 + _G3) * (2 * _A * (1 + _U) * np.sqrt(3.0 * d2) + 3 * _A * _A
                         + (2 * _U + _U * _U) * d2) + _G3 * d2)


def _pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def padded_edges(chord2_edges):
    """float64 edges padded with +inf to a power of two >= nbins + 2 (for a branch-free binary
    search: ``#{E <= d2}`` never counts the padding)."""
    e = np.asarray(chord2_edges, dtype=np.float64)
    out = np.full(_pow2(e.size + 1), np.inf)
    out[:e.size] = e
    return out


def float32_thresholds(chord2_edges):
    """(T, gap_bin): sorted float32 thresholds (padded with +inf to a power of two > len) and
    int32 bins of the gaps between them (padded with -1). See the module docstring."""
    e = np.asarray(chord2_edges, dtype=np.float64)
    nb = e.size - 1
    merged = []                 # [lo, hi, number of edges at or below this interval]
    for k, E in enumerate(e):
        if not math.isfinite(E):
            continue            # the open top of a bin ending at 180 degrees
        M = 2.0 * (float(err32(2 * E)) + 8 * 2.0 ** -53 * 2 * E)
        lo = -math.inf if E < TINY_EDGE else E - M
        hi = E + M
        lo32 = np.float32(lo)
        if lo32 > lo:
            lo32 = np.nextafter(lo32, np.float32(-np.inf))
        lo32 = np.nextafter(lo32, np.float32(-np.inf))      # one more: ties count as inside
        hi32 = np.float32(hi)
        if hi32 < hi:
            hi32 = np.nextafter(hi32, np.float32(np.inf))
        hi32 = np.nextafter(hi32, np.float32(np.inf))
        cur = [lo32, hi32, k + 1]
        while merged and cur[0] <= merged[-1][1]:
            prev = merged.pop()
            cur = [min(prev[0], cur[0]), max(prev[1], cur[1]), cur[2]]
        merged.append(cur)
    L = 2 * len(merged)
    P = _pow2(L + 1)
    T = np.full(P, np.inf, dtype=np.float32)
    gap = np.full(P // 2 + 1, -1, dtype=np.int32)
    below = 0
    for m, (lo, hi, count) in enumerate(merged):
        T[2 * m], T[2 * m + 1] = lo, hi
        gap[m] = below - 1 if 1 <= below <= nb else -1
        below = count
    gap[len(merged)] = below - 1 if 1 <= below <= nb else -1
    return T, gap


def float32_cutoff(T, gap):
    """float32 s above which no pair counts (the last finite threshold), or +inf when the last
    bin is open-ended (theta_max = 180 degrees): a quick test before the search."""
    L = int(np.count_nonzero(T < np.inf))          # -inf may open the list
    if L == 0 or gap[L // 2] >= 0:
        return np.float32(np.inf)
    return np.float32(T[L - 1])


def float32_bits(v):
    """The bit pattern of ``v`` rounded to float32, as an int (int32 range)."""
    return int(np.asarray(v, dtype=np.float32).view(np.int32))


def float32_lookup(T, gap, cells=LOOKUP_CELLS):
    """(table, b0, shift): the decision of the float32 path for s >= 0, read from
    ``table[min(max(bits(s) >> shift, b0), b0 + cells - 1) - b0]``.

    ``bits(s)`` is the float32's bit pattern as an int32. An entry is a bin (>= 0), -1 (no bin),
    ``LOOKUP_REFINE`` (odd count: recompute in float64) or ``LOOKUP_SEARCH`` (a threshold cuts
    the cell: search ``T`` as before). ``table`` is int16 of ``cells`` entries; the finest cells
    that fit the span of the finite positive thresholds are chosen, and the entries past the
    last cell repeat it (that cell reaches up to +inf).
    """
    T = np.asarray(T, dtype=np.float32)
    fin = T[np.isfinite(T)]
    pos = fin[fin > 0]
    top = float32_bits(fin[-1]) if fin.size and fin[-1] > 0 else float32_bits(1.0)
    bottom = float32_bits(pos[0]) if pos.size else top
    for shift in range(23 - 8, 32):         # 256 cells an octave, fewer until they fit
        # the first cell lies below the bottom threshold, the last above the top one
        b0, b1 = max((bottom >> shift) - 1, 0), (top >> shift) + 1
        if b1 - b0 < cells:
            break
    n = b1 - b0 + 1
    cell = np.arange(b0, b1 + 1, dtype=np.int64)
    lo = (cell << shift).astype(np.int64)
    hi = ((cell + 1) << shift) - 1
    lo[0] = 0                                # the first cell takes every smaller s >= 0
    hi[-1] = float32_bits(np.inf)            # and the last every larger one
    c_lo = np.searchsorted(T, lo.astype(np.int32).view(np.float32), side="left")
    c_hi = np.searchsorted(T, hi.astype(np.int32).view(np.float32), side="left")
    gap = np.asarray(gap)
    decided = np.where(c_lo % 2 == 1, LOOKUP_REFINE, gap[np.minimum(c_lo // 2, gap.size - 1)])
    table = np.empty(cells, dtype=np.int16)
    table[:n] = np.where(c_lo == c_hi, decided, LOOKUP_SEARCH)
    table[n:] = table[n - 1]
    return table, int(b0), int(shift)
