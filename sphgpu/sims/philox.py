"""Philox4x32-10 and Box-Muller as ``register_jitable`` functions: plain Python from Python,
inlined into the CPU loop of :mod:`sphgpu.sims.random` and its CUDA kernel
(:mod:`sphgpu.sims._cuda_kernels`) alike, so both run one arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

__all__ = ["philox4x32", "normal_pair"]

#: Philox4x32's multipliers (M) and key increments (W, the Weyl sequence), and the word masks;
#: public: the vectorised NumPy twin (sphgpu.sims.random) runs the same arithmetic
M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
MASK = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)
#: 2**-53: the spacing of doubles in [0.5, 1)
ULP = 1.0 / 9007199254740992.0


@register_jitable
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter (c0, c1, c2, c3) under the key (k0, k1).

    Parameters
    ----------
    c0, c1, c2, c3 : numpy.uint64
        Counter words, each < 2**32.
    k0, k1 : numpy.uint64
        Key words, each < 2**32.

    Returns
    -------
    tuple of numpy.uint64
        Four random 32-bit words.
    """
    for _ in range(10):
        p0 = M0 * c0               # exact: both factors < 2**32
        p1 = M1 * c2
        c0, c1, c2, c3 = ((p1 >> SHIFT) ^ c1 ^ k0, p1 & MASK,
                          (p0 >> SHIFT) ^ c3 ^ k1, p0 & MASK)
        k0 = (k0 + W0) & MASK
        k1 = (k1 + W1) & MASK
    return c0, c1, c2, c3


@register_jitable
def normal_pair(q, block, k0, k1):
    """Values 2q and 2q+1 of draw ``block`` under key (k0, k1): two independent standard
    normals (Box-Muller on two 53-bit uniforms).

    Parameters
    ----------
    q : int
        Pair number, < 2**64.
    block : int
        Draw number within the key's stream, < 2**32.
    k0, k1 : int
        The key, as :func:`stream_key` returns it.

    Returns
    -------
    tuple of float
        Two standard normal values.
    """
    q = np.uint64(q)
    a, b, c, d = philox4x32(q & MASK, q >> SHIFT, np.uint64(block), np.uint64(0),
                            np.uint64(k0), np.uint64(k1))
    u1 = 1.0 - (float(a >> np.uint64(5)) * 67108864.0 + float(b >> np.uint64(6))) * ULP
    u2 = (float(c >> np.uint64(5)) * 67108864.0 + float(d >> np.uint64(6))) * ULP
    r = math.sqrt(-2.0 * math.log(u1))           # u1 in (0, 1]: no log(0)
    return r * math.cos(2.0 * math.pi * u2), r * math.sin(2.0 * math.pi * u2)
