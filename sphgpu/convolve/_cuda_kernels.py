"""The CUDA kernel of the real-space convolution (see :mod:`sphgpu.convolve.realspace`).

Launch contract of the kernel returned by :func:`realspace_kernel` (``tpb`` threads per block,
one block per work item, ``fold`` 1 or 4):

    grid = (n_items,), block = (tpb,)
    item_ring[b], item_start[b]   block b computes output pixels p = item_start[b] + tid of ring
                                  i = item_ring[b], p < nphi[i] / fold, and with fold 4 also
                                  p + q nphi[i] / 4 for q = 1, 2, 3 (threads past the end only
                                  help and wait)
    maps (nmaps, npix) float64    input, read-only
    out  (nmaps, npix) float64    output; every pixel is written by exactly one thread

fold = 4 uses HEALPix's symmetry under a quarter turn about the pole: every ring has a multiple
of 4 pixels and turning by pi/2 moves pixel p of any ring to p + nphi/4, so the output pixels
p + q nphi_i/4 see the input pixels j + q nphi_r/4 at the same separations, and one kernel value
serves four pairs (the caller checks that the geometry has this symmetry).

For each input ring within theta_cut, a block whose ring has as many pixels as the input ring
fills a shared "row" of kernel values (one per pixel offset, at most ``rowmax``) cooperatively,
then each thread correlates it with the input ring; otherwise each thread evaluates the kernel
per pixel pair, stepping sin(dphi/2) by an exact rotation and recomputing it every
``RESYNC`` pixels. Both barriers of the ring loop are reached by every thread of the block
(the branch that fills the row depends only on the ring pair, and nothing returns early).
"""

from __future__ import annotations

import functools
import math

from numba import cuda, float64

from .. import _cuda_launch
from . import kernels, realspace
from .realspace import kernel_value, pixel_range, ring_window, row_offsets

# the kernel is cached on disk (cache=True); it inlines realspace's device functions
_cuda_launch.refresh_kernel_cache(__file__, realspace.__file__, kernels.__file__)

__all__ = ["realspace_kernel", "RESYNC"]

#: Pixels between direct evaluations of sin(dphi/2) on the per-pair path.
RESYNC = 32


@functools.lru_cache(maxsize=None)
def realspace_kernel(tpb: int, rowmax: int, nmaps: int, fold: int = 1):
    """The kernel for ``tpb`` threads per block, a shared row of ``rowmax`` float64, ``nmaps``
    maps per launch and symmetry ``fold`` (1 or 4), all compile-time constants."""
    TWO_PI = 2.0 * math.pi
    NACC = nmaps * fold

    @cuda.jit(device=True, inline=True)
    def add_folded(acc, kv, maps, sr, j, qr, nr):
        """acc[q * nmaps + m] += kv * (pixel j + q quarter turns of ring sr's row, map m), for
        the fold sectors q; j < nr, qr = nr / fold."""
        for q in range(fold):
            for m in range(nmaps):
                acc[q * nmaps + m] += kv * maps[m, sr + j]
            j += qr
            if j >= nr:
                j -= nr

    @cuda.jit(fastmath=False, cache=True)
    def kernel(maps, theta, sin_theta, phi0, nphi, ringstart, weight, r_lo, r_hi,
               item_ring, item_start, h, n, coef, out):
        row = cuda.shared.array(rowmax, dtype=float64)
        acc = cuda.local.array(NACC, dtype=float64)
        tid = cuda.threadIdx.x
        blk = cuda.blockIdx.x
        i = item_ring[blk]
        ni = nphi[i]
        qi = ni // fold                       # output pixels per symmetric sector
        p = item_start[blk] + tid
        active = p < qi
        for k in range(NACC):
            acc[k] = 0.0
        inv_h = 1.0 / h
        inv_h2 = 1.0 / (h * h)
        cc = min(n * h, 2.0)
        hu_cut = 0.25 * cc * cc
        phi = phi0[i] + p * (TWO_PI / ni)
        for r in range(r_lo[i], r_hi[i] + 1):
            a, b, dmax, kind = ring_window(theta[i], theta[r], sin_theta[i], sin_theta[r],
                                           hu_cut)
            nr = nphi[r]
            qr = nr // fold
            sr = ringstart[r]
            dphi_r = TWO_PI / nr
            w = weight[r]
            # the shared row: same ring length, offsets d0 .. d0 + length - 1
            d0, length = row_offsets(kind, dmax, dphi_r, nr)
            use_row = kind != 0 and nr == ni and length <= rowmax
            if use_row:
                delta = phi0[r] - phi0[i]
                t = tid
                while t < length:
                    s = math.sin(0.5 * (delta + (d0 + t) * dphi_r))
                    row[t] = w * kernel_value(a + b * s * s, h, inv_h, inv_h2, n, coef)
                    t += tpb
            cuda.syncthreads()
            if active and kind != 0:
                if use_row:
                    j = (p + d0) % nr
                    for t in range(length):
                        add_folded(acc, row[t], maps, sr, j, qr, nr)
                        j += 1
                        if j == nr:
                            j = 0
                else:
                    jlo, jhi = pixel_range(kind, phi, dmax, phi0[r], dphi_r, nr)
                    step_s = math.sin(0.5 * dphi_r)
                    step_c = math.cos(0.5 * dphi_r)
                    s = 0.0
                    c = 1.0
                    for j in range(jlo, jhi + 1):
                        if (j - jlo) % RESYNC == 0:
                            x = 0.5 * (phi0[r] + j * dphi_r - phi)
                            s = math.sin(x)
                            c = math.cos(x)
                        kv = kernel_value(a + b * s * s, h, inv_h, inv_h2, n, coef)
                        if kv != 0.0:
                            add_folded(acc, kv * w, maps, sr, j % nr, qr, nr)
                        s, c = s * step_c + c * step_s, c * step_c - s * step_s
            cuda.syncthreads()
        if active:
            for q in range(fold):
                pix = ringstart[i] + p + q * qi
                for m in range(nmaps):
                    out[m, pix] = acc[q * nmaps + m]

    return kernel
