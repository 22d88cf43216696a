"""The "cpu" sort backend: a stable LSD radix sort in Numba, parallel over blocks of the input.

The scheme is the paper's (Helluy 2011), with one work item per CPU thread: the input is cut into
``nblocks`` contiguous blocks (one per Numba thread) and every pass over a digit of ``r`` bits

1. *histogram*: each block counts its keys per digit value, ``hist[block, digit]``;
2. *scan*: an exclusive prefix sum over ``(digit, block)`` in digit-major order gives each block
   the position of its first key of each digit in the output;
3. *reorder*: each block walks its keys in order and writes each one (and its permutation entry)
   to its digit's next position, which keeps the pass stable.

Passes go from the least significant digit up; ``key_bits`` b and ``radix_bits`` r are free and
there are ``ceil(b / r)`` passes, the last one over the ``b - (p - 1) r`` remaining bits when r
does not divide b. Keys and permutation ping-pong between two buffers.

Two measured shortcuts beyond the paper: the histograms of *all* passes are counted in one call
before the first pass (digit counts do not depend on the order), and a pass whose
digit takes a single value over all keys (one non-zero bin) is skipped, which is common (small
keys in wide types, sorted high bits, the PIC cells). The permutation is carried as uint32 while
``n < 2**32`` (half the memory traffic of int64) and the last pass writes it as int64 directly.

Interface: see :mod:`sphgpu.sort.reference`.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._validate import check_host_array

__all__ = ["sort_pairs", "choose_radix_bits", "DEFAULT_RADIX_BITS", "ACCEPTS_DEVICE_ARRAYS",
           "NATIVE_KEYS"]

#: Digit width when the caller gives none, measured on the 2-core development machine (AMD EPYC
#: VM, 1 MiB L2 per core, numba 0.68, 2 threads) on 2**24 random uint32 keys (b = 32), warm,
#: median of 5, seconds, keys only / keys + permutation:
#:
#:     r =  8 (4 passes)  0.155 / 0.263
#:     r = 11 (3 passes)  0.118 / 0.206
#:     r = 12 (3 passes)  0.122 / 0.213
#:     r = 16 (2 passes)  0.109 / 0.193
#:     numpy.sort(kind="stable") 1.27-1.31, numpy.argsort(kind="stable") 2.2-2.7
#:
#: A reorder pass costs about the same at 256 and 2048 digit values here, so fewer passes win.
#: r = 16 is a little faster still at this size but needs 65536-entry tables per block, which
#: dominate for small n and press on smaller caches; 11 is the default.
DEFAULT_RADIX_BITS = 11
#: takes NumPy radix keys (uint32/uint64) only; see :mod:`sphgpu.sort.api`
ACCEPTS_DEVICE_ARRAYS = False
NATIVE_KEYS = False

#: Below this many keys one block is used: thread start-up costs more than it saves.
PARALLEL_FROM = 1 << 16


@numba.njit(parallel=True, cache=True)
def _histograms(src, shifts, mask, nblocks, radix):
    """counts[q, b, d]: number of keys of block b whose digit q, ``(key >> shifts[q]) & mask``,
    equals d. Blocks are the ``nblocks`` contiguous slices ``[b*n//nblocks, (b+1)*n//nblocks)``.
    One call counts every pass in ``shifts``; a simple loop per pass over the block measured
    faster than one loop updating every pass's counts per key."""
    n = src.size
    npass = shifts.size
    counts = np.zeros((npass, nblocks, radix), np.int64)
    for b in prange(nblocks):
        lo = b * n // nblocks
        hi = (b + 1) * n // nblocks
        for q in range(npass):
            s = shifts[q]
            row = counts[q, b]
            for i in range(lo, hi):
                row[(src[i] >> s) & mask] += 1
    return counts


@numba.njit(parallel=True, cache=True)
def _scatter(src, dst, psrc, pdst, offsets, shift, mask, nblocks, mode):
    """One stable reorder pass: the key ``src[i]`` of block b with digit d goes to
    ``dst[offsets[b, d]++]`` (blocks as in :func:`_histograms`). The permutation follows:
    mode 0 keys only, mode 1 ``pdst`` gets the source index ``i`` (first pass, identity
    permutation: nothing to read), mode 2 ``pdst`` gets ``psrc[i]``."""
    n = src.size
    for b in prange(nblocks):
        lo = b * n // nblocks
        hi = (b + 1) * n // nblocks
        pos = offsets[b].copy()
        if mode == 0:
            for i in range(lo, hi):
                k = src[i]
                d = (k >> shift) & mask
                p = pos[d]
                dst[p] = k
                pos[d] = p + 1
        elif mode == 1:
            for i in range(lo, hi):
                k = src[i]
                d = (k >> shift) & mask
                p = pos[d]
                dst[p] = k
                pdst[p] = i
                pos[d] = p + 1
        else:
            for i in range(lo, hi):
                k = src[i]
                d = (k >> shift) & mask
                p = pos[d]
                dst[p] = k
                pdst[p] = psrc[i]
                pos[d] = p + 1


def _block_offsets(hist):
    """Exclusive scan of hist (nblocks, radix) in digit-major order: where each (block, digit)
    starts in the output."""
    flat = hist.T.ravel()
    starts = np.cumsum(flat) - flat
    return np.ascontiguousarray(starts.reshape(hist.shape[1], hist.shape[0]).T)


def choose_radix_bits(n, key_bits, itemsize, want_perm):
    """Radix bits for ``n`` keys of ``key_bits`` significant bits: DEFAULT_RADIX_BITS, fewer
    for keys of fewer bits (the size and dtype do not change the choice on this backend)."""
    return min(DEFAULT_RADIX_BITS, max(key_bits, 1))


def sort_pairs(ukeys, key_bits, radix_bits, want_perm, nblocks=None):
    """Stable LSD radix sort of radix keys; see :mod:`sphgpu.sort.reference` for the contract.

    Parameters
    ----------
    ukeys : ndarray, 1-D, uint32 or uint64, every key < 2**key_bits (not checked here)
    key_bits : int >= 0
        Bits to sort on, b; 0 sorts nothing (returns a copy and the identity).
    radix_bits : int >= 1
        Digit width r of a pass; there are ceil(key_bits / radix_bits) passes.
    want_perm : bool
    nblocks : int, optional
        Number of blocks (parallel work items); by default one per Numba thread, or one for
        fewer than ``PARALLEL_FROM`` keys. Tests set it to check the block split at small n.

    Returns
    -------
    sorted_ukeys : ndarray, same dtype as ``ukeys``, a new array
    perm : int64 ndarray of shape (n,) with ``sorted_ukeys == ukeys[perm]``, or None
    """
    check_host_array("keys", ukeys)
    if not isinstance(ukeys, np.ndarray):
        raise TypeError(f"ukeys must be a NumPy array, got {type(ukeys).__name__}")
    if ukeys.ndim != 1 or ukeys.dtype not in (np.uint32, np.uint64):
        raise TypeError(f"ukeys must be a 1-D uint32 or uint64 array, got {ukeys.dtype} "
                        f"with shape {ukeys.shape}")
    ukeys = np.ascontiguousarray(ukeys)
    n = ukeys.size
    key_bits, radix_bits = int(key_bits), int(radix_bits)
    if radix_bits < 1:
        raise ValueError(f"radix_bits must be >= 1, got {radix_bits}")
    if nblocks is None:
        nblocks = numba.get_num_threads() if n >= PARALLEL_FROM else 1
    nblocks = max(1, min(int(nblocks), n))

    shifts = np.arange(0, key_bits, radix_bits).astype(ukeys.dtype)
    radix = 1 << min(radix_bits, max(key_bits, 0))
    mask = ukeys.dtype.type(radix - 1)
    counts = _histograms(ukeys, shifts, mask, nblocks, radix)
    active = [q for q in range(shifts.size) if np.count_nonzero(counts[q].sum(axis=0)) > 1]
    if not active:
        return ukeys.copy(), (np.arange(n, dtype=np.int64) if want_perm else None)

    perm_dtype = np.uint32 if n < 2**32 else np.int64
    none = np.empty(0, dtype=perm_dtype)
    keybuf = [np.empty_like(ukeys), np.empty_like(ukeys) if len(active) > 1 else None]
    permbuf = [None, None]
    src, psrc = ukeys, none
    for j, q in enumerate(active):
        last = j == len(active) - 1
        hist = counts[q] if j == 0 else _histograms(src, shifts[q:q + 1], mask, nblocks, radix)[0]
        dst = keybuf[j % 2]
        if want_perm:
            if last:
                pdst = np.empty(n, dtype=np.int64)
            else:
                if permbuf[j % 2] is None:
                    permbuf[j % 2] = np.empty(n, dtype=perm_dtype)
                pdst = permbuf[j % 2]
            mode = 1 if j == 0 else 2
        else:
            pdst, mode = none, 0
        _scatter(src, dst, psrc, pdst, _block_offsets(hist), shifts[q], mask, nblocks, mode)
        src, psrc = dst, pdst
    return src, (psrc if want_perm else None)
