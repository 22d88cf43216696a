"""@cuda.jit kernels of the pixel functions: the index arithmetic of
:mod:`sphgpu.pixelfunc.indexing`, one thread a pixel (grid-stride loops, so any grid covers any
map). Reads are coalesced, writes go to the pixels' new places."""

from __future__ import annotations

from numba import cuda

from .._cuda_launch import refresh_kernel_cache
from . import indexing
from .indexing import nest2ring_one, ring2nest_one

refresh_kernel_cache(__file__, indexing.__file__)

__all__ = ["scatter_kernel", "index_kernel"]


@cuda.jit(cache=True)
def scatter_kernel(src, dst, nside, order, first, to_ring):
    """``dst[new(first + i)] = src[i]`` for every i < len(src).

    Launch contract: 1-D grid and block of any size; ``src`` (n,) and ``dst`` (12 nside**2,) are
    C-contiguous device arrays of one dtype; nside = 2**order (int64); to_ring (int64 0/1):
    NESTED to RING, else RING to NESTED.
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, src.shape[0], stride):
        if to_ring:
            dst[nest2ring_one(nside, order, first + i)] = src[i]
        else:
            dst[ring2nest_one(nside, order, first + i)] = src[i]


@cuda.jit(cache=True)
def index_kernel(ipix, out, nside, order, to_ring):
    """``out[i] = new(ipix[i])``.

    Launch contract: 1-D grid and block of any size; ``ipix`` and ``out`` (n,) int64 device
    arrays, ``ipix`` in range (checked by the caller); nside = 2**order; to_ring as
    :func:`scatter_kernel`.
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, ipix.shape[0], stride):
        if to_ring:
            out[i] = nest2ring_one(nside, order, ipix[i])
        else:
            out[i] = ring2nest_one(nside, order, ipix[i])
