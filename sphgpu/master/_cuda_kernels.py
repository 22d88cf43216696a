"""@cuda.jit kernel of the MASTER coupling matrices: one thread per multipole pair (l, l'),
running the Wigner-3j recursion of :func:`sphgpu.master.wigner.pair_sums` (compiled in) in
float64 over L = |l - l'| .. l + l'.

Threads of a warp share l and take consecutive l', so they run loops of one length (2 l + 1)
and read consecutive W_L: no divergence, coalesced loads.
"""

from __future__ import annotations

import math

from numba import cuda

from .._cuda_launch import refresh_kernel_cache
from . import wigner

# kernels are cached on disk (cache=True); they inline wigner's device functions
refresh_kernel_cache(__file__, wigner.__file__)

__all__ = ["coupling_kernel"]

_pair_sums = wigner.pair_sums
_INV_4PI = 1.0 / (4.0 * math.pi)


@cuda.jit(cache=True)
def coupling_kernel(wl, nw, lmax, spin2, slots, out):
    """Coupling blocks of the mask spectrum ``wl``.

    Launch contract: a 2-d grid; x covers l' = 0..lmax (``blockIdx.x * blockDim.x +
    threadIdx.x``), y covers l = 0..lmax (one l per block row, ``blockIdx.y``); blockDim.y = 1.
    A thread with l' < l or either index above lmax returns at once; the one of (l, l') with
    l <= l' writes both out[b, l, l'] and out[b, l', l].

    Parameters: ``wl`` (>= nw,) float64 the mask spectrum; ``nw`` int64 (W_L = 0 for L >= nw);
    ``lmax`` int64; ``spin2`` bool (compute the spin-2 sums); ``slots`` (4,) int64, the block
    of ``out`` that receives each of the sums 00, 02, ++, -- (-1: not wanted); ``out``
    (nblocks, lmax + 1, lmax + 1) float64, written at every (l, l').
    """
    lp = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    l = cuda.blockIdx.y
    if lp > lmax or l > lp:
        return
    sums = _pair_sums(l, lp, wl, wl, wl, nw, spin2)
    f_lp = (2.0 * lp + 1.0) * _INV_4PI
    f_l = (2.0 * l + 1.0) * _INV_4PI
    for k in range(4):
        b = slots[k]
        if b >= 0:
            out[b, l, lp] = f_lp * sums[k]
            out[b, lp, l] = f_l * sums[k]
