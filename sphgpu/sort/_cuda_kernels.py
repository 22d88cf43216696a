"""@cuda.jit kernels of the LSD radix sort: per pass, a tile histogram and a stable scatter.

One pass sorts by the digit ``(key >> shift) & (R - 1)``. The input is cut into tiles of
``threads * items`` keys, one tile per block. :func:`histogram_kernel` counts each tile's digits;
the host scans the (digit, tile) counts in digit-major order (each tile learns where its keys of
each digit go); :func:`scatter_kernel` then sorts its tile by digit in shared memory, stably, and
writes each digit's run to its place with coalesced stores. This is the paper's histogram / scan /
reorder, with the per-item counters of its "local memory" scheme held in shared memory.
Only plain shared memory and barriers are used (no warp intrinsics), so the kernels also run in
Numba's CUDA simulator.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, int32, uint16, uint32

__all__ = ["histogram_kernel", "scatter_kernel", "tile_shape"]


def tile_shape(radix_bits: int, key_bytes: int) -> tuple[int, int]:
    """(threads, items per thread) of a tile: the per-thread digit counters (2**radix_bits x
    threads x 2 bytes) and the staged tile must fit in 48 KiB of shared memory."""
    threads = 128 if radix_bits <= 6 else 64
    items = 16 if key_bytes == 4 else 8
    return threads, items          # at most 2048 keys: tile indices fit the uint16 counters


@functools.lru_cache(maxsize=None)
def histogram_kernel(radix_bits: int, threads: int, items: int, key_dtype):
    """Digit counts of each tile.

    Launch: grid (ntiles,), block ``threads``. Arguments: keys (n,) of ``key_dtype`` (uint32 or
    uint64), shift (a scalar of the same dtype: mixing signed and unsigned 64-bit integers
    would make Numba compute in floating point), hist (2**radix_bits * ntiles,) int32 written
    digit-major: hist[d * ntiles + tile].
    """
    R = 1 << radix_bits
    TILE = threads * items
    MASK = np.dtype(str(key_dtype)).type(R - 1)

    @cuda.jit
    def kernel(keys, shift, hist):
        counts = cuda.shared.array(R, int32)
        t = cuda.threadIdx.x
        b = cuda.blockIdx.x
        ntiles = cuda.gridDim.x
        for d in range(t, R, threads):
            counts[d] = 0
        cuda.syncthreads()
        n = keys.shape[0]
        start = b * TILE
        for k in range(items):
            i = start + k * threads + t          # coalesced
            if i < n:
                d = int32((keys[i] >> shift) & MASK)
                cuda.atomic.add(counts, d, 1)
        cuda.syncthreads()
        for d in range(t, R, threads):
            hist[d * ntiles + b] = counts[d]

    return kernel


@functools.lru_cache(maxsize=None)
def scatter_kernel(radix_bits: int, threads: int, items: int, key_dtype, with_perm: bool):
    """Stable scatter of each tile's keys (and permutation) to their sorted places.

    Launch: grid (ntiles,), block ``threads``. Arguments: keys_in (n,), perm_in (n,) uint32,
    shift int, offsets (2**radix_bits * ntiles,) int64 (exclusive scan of the histogram),
    keys_out, perm_out (n,). Without ``with_perm`` the perm arrays are ignored (pass any).

    Inside the tile, thread t owns the consecutive keys [t*items, (t+1)*items): it counts their
    digits, the block scans those counts over threads (per digit) and over digits, and each
    thread places its keys in order; so equal digits keep their input order (stability).
    Shared-memory indices are skewed by one word per 32 so that threads walking their own
    segments do not collide on banks.
    """
    R = 1 << radix_bits
    TILE = threads * items
    PADDED = TILE + TILE // 32 + 1
    MASK = np.dtype(str(key_dtype)).type(R - 1)

    @cuda.jit(device=True, inline=True)
    def skew(i):
        return i + i // 32

    @cuda.jit
    def kernel(keys_in, perm_in, shift, offsets, keys_out, perm_out):
        tile_keys = cuda.shared.array(PADDED, key_dtype)
        tile_perm = cuda.shared.array(PADDED if with_perm else 1, uint32)
        order = cuda.shared.array(PADDED, uint16)      # order[sorted position] = tile index
        # cnt[thread, digit]: the scan in step 2 reads consecutive digits across threads
        cnt = cuda.shared.array((threads, R), uint16)
        tile_off = cuda.shared.array(R, int32)
        t = cuda.threadIdx.x
        b = cuda.blockIdx.x
        ntiles = cuda.gridDim.x
        n = keys_in.shape[0]
        start = b * TILE
        m = min(TILE, n - start)                 # keys in this tile
        for k in range(items):                   # coalesced load of the tile
            j = k * threads + t
            if j < m:
                tile_keys[skew(j)] = keys_in[start + j]
                if with_perm:
                    tile_perm[skew(j)] = perm_in[start + j]
        for d in range(R):
            cnt[t, d] = 0
        cuda.syncthreads()
        # 1. each thread counts the digits of its own segment
        seg = t * items
        for k in range(items):
            j = seg + k
            if j < m:
                d = int32((tile_keys[skew(j)] >> shift) & MASK)
                cnt[t, d] += 1
        cuda.syncthreads()
        # 2. per digit, exclusive scan over threads; totals become the digit's tile offset
        for d in range(t, R, threads):
            run = 0
            for s in range(threads):
                c = int32(cnt[s, d])
                cnt[s, d] = run
                run += c
            tile_off[d] = run
        cuda.syncthreads()
        if t == 0:
            run = 0
            for d in range(R):
                c = tile_off[d]
                tile_off[d] = run
                run += c
        cuda.syncthreads()
        # 3. each thread ranks its keys, in order, within the tile sorted by digit
        for k in range(items):
            j = seg + k
            if j < m:
                d = int32((tile_keys[skew(j)] >> shift) & MASK)
                pos = tile_off[d] + int32(cnt[t, d])
                cnt[t, d] += 1
                order[skew(pos)] = j
        cuda.syncthreads()
        # 4. coalesced write-out: the run of digit d goes to offsets[d, tile] onwards
        for k in range(items):
            j = k * threads + t
            if j < m:
                src = int32(order[skew(j)])
                key = tile_keys[skew(src)]
                d = int32((key >> shift) & MASK)
                dest = offsets[d * ntiles + b] + (j - tile_off[d])
                keys_out[dest] = key
                if with_perm:
                    perm_out[dest] = tile_perm[skew(src)]

    return kernel

