"""Which points each declination stripe's task holds, in two parallel passes over the catalog.

The fast twin of :func:`sphgpu.distributed.partition.stripe_members` (same indices in the same
order; that function is the readable reference, kept NumPy-only). At 10^7 points the reference
sorts the points by stripe and gathers their declinations: 0.6-0.7 s of the client's time in
every split count on a 2-core machine, where these two passes took 0.3 s (on more cores, less:
each pass runs in parallel over blocks of points).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["stripe_members", "take"]


@numba.njit(cache=True)
def _stripe(d, edges, k):
    """The stripe of declination ``d``: how many inner edges are <= d (dec == 90 in the last)."""
    lo, hi = 0, k - 1                        # answer in [0, k - 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if edges[mid] <= d:
            lo = mid
        else:
            hi = mid - 1
    return lo


@numba.njit(cache=True)
def _targets(d, s, edges, k, pad, auto):
    """The first and last stripe whose task holds a point of declination ``d`` in stripe ``s``:
    auto, the stripes below it whose halo reaches it and its own; cross, every stripe within
    ``pad`` of it. They are contiguous because the edges increase."""
    lo = s
    while lo > 0 and d <= edges[lo] + pad:
        lo -= 1
    hi = s
    if not auto:
        while hi < k - 1 and d >= edges[hi + 1] - pad:
            hi += 1
    return lo, hi


@numba.njit(parallel=True, cache=True)
def _count(dec, edges, pad, auto, block, stripe, cnt):
    """Pass 1: each point's stripe into ``stripe``; ``cnt[b, t, s]``: points of stripe s in
    block b (points ``b * block`` on) that stripe t's task holds."""
    k = edges.size - 1
    for b in numba.prange(cnt.shape[0]):
        for i in range(b * block, min(dec.size, (b + 1) * block)):
            s = _stripe(dec[i], edges, k)
            stripe[i] = s
            lo, hi = _targets(dec[i], s, edges, k, pad, auto)
            for t in range(lo, hi + 1):
                cnt[b, t, s] += 1


@numba.njit(parallel=True, cache=True)
def _fill(dec, edges, pad, auto, block, stripe, at, out):
    """Pass 2: each point's index into every task that holds it, block b writing from
    ``at[b, t, s]`` on: a task's points are grouped by their stripe, in index order within it
    (the blocks' offsets follow each other in that order)."""
    k = edges.size - 1
    for b in numba.prange(at.shape[0]):
        for i in range(b * block, min(dec.size, (b + 1) * block)):
            s = stripe[i]
            lo, hi = _targets(dec[i], s, edges, k, pad, auto)
            for t in range(lo, hi + 1):
                out[at[b, t, s]] = i
                at[b, t, s] += 1


@numba.njit(parallel=True, cache=True)
def _take(src, idx, out):
    for i in numba.prange(idx.size):
        out[i] = src[idx[i]]


def take(a, idx):
    """``a[idx]`` for a 1-D array ``a`` and int64 indices ``idx``, gathered in parallel: the
    stripes' copies of a catalog's columns (NumPy's ``take`` runs on one core).

    Parameters
    ----------
    a : ndarray, shape (n,)
    idx : ndarray of int64, shape (m,), each in [0, n)

    Returns
    -------
    ndarray, shape (m,), ``a``'s dtype
    """
    a = np.ascontiguousarray(a)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    out = np.empty(idx.size, a.dtype)
    if idx.size:
        _take(a, idx, out)
    return out


#: fewest points a block of the two passes holds; there are at most 4 blocks a thread, so the
#: per-block counts (blocks x k x k integers) stay small at any catalog size
MIN_BLOCK = 1 << 16
#: most bytes of per-block counts: with many stripes (k in the hundreds) fewer blocks
COUNT_BYTES = 1 << 26


def stripe_members(dec, edges, theta_max_deg: float, *, auto: bool):
    """As :func:`sphgpu.distributed.partition.stripe_members` (the same arguments, indices and
    order), in two compiled passes over blocks of points, in parallel.

    Parameters
    ----------
    dec : array, shape (n,), degrees
    edges : array, shape (k + 1,), degrees, increasing
    theta_max_deg : float
        Largest separation counted, degrees, padded by the caller for rounding.
    auto : bool

    Returns
    -------
    list of (ndarray of int64, int)
        Per stripe, point indices (views into one array) and how many come first as its own.
    """
    dec = np.ascontiguousarray(dec, dtype=np.float64)
    edges = np.ascontiguousarray(edges, dtype=np.float64)
    k = edges.size - 1
    pad = float(theta_max_deg)
    nblocks = max(1, min(-(-dec.size // MIN_BLOCK), 4 * numba.get_num_threads(),
                         COUNT_BYTES // (8 * k * k)))
    block = -(-dec.size // nblocks)
    stripe = np.empty(dec.size, np.int32)
    cnt = np.zeros((nblocks, k, k), np.int64)
    _count(dec, edges, pad, auto, block, stripe, cnt)
    total = cnt.sum(axis=0)                                  # (t, s)
    start = np.concatenate([[0], np.cumsum(total.sum(axis=1))])
    # where block b's points of stripe s go in task t: after task t's points of the stripes
    # below s, and after the points of stripe s in the blocks before b
    below = np.cumsum(total, axis=1) - total
    at = start[:-1, None] + below + (np.cumsum(cnt, axis=0) - cnt)
    out = np.empty(int(start[-1]), np.int64)
    _fill(dec, edges, pad, auto, block, stripe, at, out)
    own = np.diagonal(total) if auto else np.zeros(k, np.int64)
    return [(out[start[t]:start[t + 1]], int(own[t])) for t in range(k)]
