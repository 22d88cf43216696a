"""HEALPix pixel numbers, RING <-> NESTED, one pixel at a time, as Numba functions.

A pixel is located by its base face ``f`` (0..11) and its coordinates ``(ix, iy)`` inside the
face (0..nside-1), as in Gorski et al. 2005 (ApJ 622, 759), Sect. 4-5:

* NESTED: ``f * nside**2 + interleave(ix, iy)``, ``ix`` on the even bits and ``iy`` on the odd
  bits (so nside must be a power of two).
* RING: rings of constant latitude, numbered 1..4 nside - 1 from the north pole; face ``f``'s
  corner pixel lies on ring ``(2 + f // 4) * nside - 1`` and the pixel's ring is that minus
  ``ix + iy``. The polar caps have 4 i pixels on ring i, the equatorial belt 4 nside pixels on
  each ring, every second belt ring shifted by half a pixel.

The functions are registered with ``numba.extending.register_jitable``: plain Python when called
from Python, inlined into the CPU loops of :mod:`sphgpu.pixelfunc._cpu` and the ``@cuda.jit``
kernels of :mod:`sphgpu.pixelfunc._cuda_kernels` alike, so CI checks on the CPU at every size the
index arithmetic the GPU runs. Everything is int64 (nside <= 2**29, npix < 2**63): unsigned
masks would make Numba mix signed and unsigned into floats.
"""

from __future__ import annotations

import math

from numba.extending import register_jitable

__all__ = ["spread_bits", "compress_bits", "nest2ring_one", "ring2nest_one"]

# plain device functions (LLVM inlines them): Numba-level inlining trips numba-cuda 0.30.4
_jit = register_jitable


@_jit
def spread_bits(v):
    """The bits of ``v`` (< 2**31) moved to the even bit positions: b_k -> bit 2k."""
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    v = (v | (v << 1)) & 0x5555555555555555
    return v


@_jit
def compress_bits(v):
    """Inverse of :func:`spread_bits`: the even bits of ``v`` packed into the low bits."""
    v = v & 0x5555555555555555
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    v = (v | (v >> 16)) & 0x00000000FFFFFFFF
    return v


@_jit
def _isqrt(x):
    """floor(sqrt(x)) for 0 <= x < 2**62: the float root is off by at most one there."""
    r = int(math.sqrt(float(x)))
    if r * r > x:
        r -= 1
    elif (r + 1) * (r + 1) <= x:
        r += 1
    return r


@_jit
def nest2ring_one(nside, order, ipix):
    """RING number of NESTED pixel ``ipix`` (int64) of a map of ``nside = 2**order``."""
    npface = nside * nside
    face = ipix >> (2 * order)
    inner = ipix & (npface - 1)
    ix = compress_bits(inner)
    iy = compress_bits(inner >> 1)
    # the face's row (0, 1, 2 from north) and its position in longitude (columns 1, 3, 5, 7 in
    # the polar rows, 0, 2, 4, 6 in the equatorial row, in units of the quarter pixel count)
    jr = (2 + (face >> 2)) * nside - ix - iy - 1
    jp0 = 2 * (face & 3) + (((face >> 2) & 1) ^ 1)
    ncap = 2 * nside * (nside - 1)
    npix = 12 * npface
    if jr < nside:                           # north polar cap: jr pixels a quarter
        nr = jr
        start = 2 * nr * (nr - 1)
        shift = 0
    elif jr > 3 * nside:                     # south polar cap
        nr = 4 * nside - jr
        start = npix - 2 * nr * (nr + 1)
        shift = 0
    else:                                    # equatorial belt: 4 nside pixels a ring
        nr = nside
        start = ncap + (jr - nside) * 4 * nside
        shift = (jr - nside) & 1
    jp = (jp0 * nr + ix - iy + 1 + shift) // 2
    if jp > 4 * nside:
        jp -= 4 * nside
    elif jp < 1:
        jp += 4 * nside
    return start + jp - 1


@_jit
def ring2nest_one(nside, order, ipix):
    """NESTED number of RING pixel ``ipix`` (int64) of a map of ``nside = 2**order``."""
    ncap = 2 * nside * (nside - 1)
    npix = 12 * nside * nside
    if ipix < ncap:                          # north polar cap
        iring = (1 + _isqrt(1 + 2 * ipix)) >> 1
        iphi = ipix + 1 - 2 * iring * (iring - 1)
        shift = 0
        nr = iring
        face = (iphi - 1) // nr
    elif ipix < npix - ncap:                 # equatorial belt
        ip = ipix - ncap
        tmp = ip >> (order + 2)
        iring = tmp + nside
        iphi = ip - tmp * 4 * nside + 1
        shift = (iring + nside) & 1
        nr = nside
        ire = tmp + 1
        irm = 2 * nside + 2 - ire
        ifm = (iphi - ire // 2 + nside - 1) >> order
        ifp = (iphi - irm // 2 + nside - 1) >> order
        if ifp == ifm:
            face = ifp | 4
        elif ifp < ifm:
            face = ifp
        else:
            face = ifm + 8
    else:                                    # south polar cap
        ip = npix - ipix
        nr = (1 + _isqrt(2 * ip - 1)) >> 1
        iphi = 4 * nr + 1 - (ip - 2 * nr * (nr - 1))
        shift = 0
        iring = 4 * nside - nr
        face = 8 + (iphi - 1) // nr
    irt = iring - (2 + (face >> 2)) * nside + 1
    ipt = 2 * iphi - (2 * (face & 3) + (((face >> 2) & 1) ^ 1)) * nr - shift - 1
    if ipt >= 2 * nside:
        ipt -= 8 * nside
    ix = (ipt - irt) >> 1
    iy = (-ipt - irt) >> 1
    return face * nside * nside + spread_bits(ix) + (spread_bits(iy) << 1)
