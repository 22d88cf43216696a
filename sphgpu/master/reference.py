"""The "reference" backend of :mod:`sphgpu.master`: the coupling matrices straight from their
definition, with Wigner-3j symbols from Racah's explicit sum in exact rational arithmetic.
Slow (lmax of a few tens); the specification the fast paths are tested against.

    M^00_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L (l l' L; 0 0 0)^2
    M^02_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L (l l' L; 0 0 0) (l l' L; 2 -2 0)
    M^++_ll' = (2l'+1)/(8 pi) sum_L (2L+1) W_L (1 + (-1)^(l+l'+L)) (l l' L; 2 -2 0)^2
    M^--_ll' = (2l'+1)/(8 pi) sum_L (2L+1) W_L (1 - (-1)^(l+l'+L)) (l l' L; 2 -2 0)^2
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

__all__ = ["ACCEPTS_DEVICE_ARRAYS", "wigner3j", "coupling_blocks"]

ACCEPTS_DEVICE_ARRAYS = False


@functools.lru_cache(maxsize=None)
def wigner3j(j1: int, j2: int, j3: int, m1: int, m2: int, m3: int) -> float:
    """(j1 j2 j3; m1 m2 m3) by Racah's formula, exact until the final square root.

    Parameters
    ----------
    j1, j2, j3 : int
        Angular momenta, >= 0.
    m1, m2, m3 : int
        Their projections.

    Returns
    -------
    float
        The symbol (0 where the selection rules forbid it).
    """
    if m1 + m2 + m3 != 0 or abs(m1) > j1 or abs(m2) > j2 or abs(m3) > j3:
        return 0.0
    if j3 < abs(j1 - j2) or j3 > j1 + j2:
        return 0.0
    f = math.factorial
    delta = Fraction(f(j1 + j2 - j3) * f(j1 - j2 + j3) * f(-j1 + j2 + j3), f(j1 + j2 + j3 + 1))
    prod = f(j1 + m1) * f(j1 - m1) * f(j2 + m2) * f(j2 - m2) * f(j3 + m3) * f(j3 - m3)
    kmin = max(0, j2 - j3 - m1, j1 - j3 + m2)
    kmax = min(j1 + j2 - j3, j1 - m1, j2 + m2)
    total = Fraction(0)
    for k in range(kmin, kmax + 1):
        den = (f(k) * f(j3 - j2 + k + m1) * f(j3 - j1 + k - m2) * f(j1 + j2 - j3 - k)
               * f(j1 - k - m1) * f(j2 - k + m2))
        total += Fraction((-1) ** k, den)
    if total == 0:
        return 0.0
    sign = (-1) ** ((j1 - j2 - m3) % 2) * (1 if total > 0 else -1)
    return sign * math.sqrt(delta * prod * total * total)


def coupling_blocks(wl, lmax: int, blocks: tuple) -> np.ndarray:
    """Coupling blocks of a mask power spectrum, from the definition.

    Parameters
    ----------
    wl : ndarray, shape (nw,), float64
        Mask power spectrum W_L, L = 0..nw-1 (zero beyond).
    lmax : int
        Last multipole of the matrices.
    blocks : tuple of str
        Names from ``("00", "02", "++", "--")``.

    Returns
    -------
    ndarray, shape (len(blocks), lmax + 1, lmax + 1), float64
        ``out[b, l, l']`` = M^b_ll'.
    """
    wl = np.asarray(wl, dtype=np.float64)
    out = np.zeros((len(blocks), lmax + 1, lmax + 1))
    for l in range(lmax + 1):
        for lp in range(lmax + 1):
            for L in range(abs(l - lp), min(l + lp, len(wl) - 1) + 1):
                w = (2 * L + 1) * wl[L] * (2 * lp + 1) / (4 * math.pi)
                f0 = wigner3j(l, lp, L, 0, 0, 0)
                f2 = wigner3j(l, lp, L, 2, -2, 0)
                even = (l + lp + L) % 2 == 0
                terms = {"00": f0 * f0, "02": f0 * f2,
                         "++": f2 * f2 if even else 0.0, "--": 0.0 if even else f2 * f2}
                for b, name in enumerate(blocks):
                    out[b, l, lp] += w * terms[name]
    return out
