"""Wigner-3j recursions and the MASTER coupling sums of one (l, l') pair, as Numba functions that
the CPU twin (:mod:`._cpu`) and the CUDA kernel (:mod:`._cuda_kernels`) both compile.

For fixed l, l' and spin s (0 or 2) the symbols f_s(L) = (L l l'; 0 s -s), which equal
(l l' L; s -s 0) by a cyclic permutation, obey for L = |l - l'| .. l + l' the three-term
recursion of Schulten & Gordon (J. Math. Phys. 16, 1961, 1975) specialised to m1 = 0 (the common
factor L (L + 1) divided out, which removes its 0/0 at L = 0):

    A(L+1) f(L+1) = 2 s (2L + 1) f(L) - A(L) f(L-1),
    A(L) = sqrt((L^2 - (l - l')^2) ((l + l' + 1)^2 - L^2)),   A(|l - l'|) = 0.

It is run forward only, from f(|l - l'|) = 1, and the values are normalised at the end with
sum_L (2L + 1) f(L)^2 = 1, which every sum below can use without storing the values. The signs
are Condon-Shortley's (those of ducc0's ``wigner3j_int``): f(l + l') has the sign of (-1)^(l-l').
Measured against ducc0's two-sided Schulten-Gordon values, forward-only recursion agrees to
1.2e-14 of the largest |f| up to l, l' = 6000 (tests/master/test_wigner.py checks 1e-13 up to
2000): for |s| <= 2 the classically forbidden ends of the L range, where one-sided recursion
loses digits, are only a few multipoles wide. Values are rescaled by 2**-600 (exactly) when they
pass 2**600 so nothing overflows.

The coupling blocks of a mask whose power spectrum is W_L (Hivon et al. 2002; the convention of
NaMaster and ducc0), pseudo-C_l = sum_l' M_ll' C_l':

    M^00_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L f_0(L)^2
    M^02_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L f_0(L) f_2(L)
    M^++_ll' = (2l'+1)/(4 pi) sum_{L: l+l'+L even} (2L+1) W_L f_2(L)^2
    M^--_ll' = (2l'+1)/(4 pi) sum_{L: l+l'+L odd}  (2L+1) W_L f_2(L)^2

:func:`pair_sums` returns the four sums without the factor (2l'+1)/(4 pi), which are symmetric
in (l, l'), so one pair gives two matrix entries.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import register_jitable

__all__ = ["recurrence_step", "pair_sums", "wigner3j_row", "wigner3j"]

_BIG = 2.0 ** 600          # rescaling threshold and factor: powers of two, so rescaling is exact
_SMALL = 2.0 ** -600

# Numba-level inlining ("always") trips numba-cuda 0.30.4 (an assertion in its variable-deletion
# pass); LLVM inlines the plain device functions anyway
_jit = register_jitable


@_jit
def recurrence_step(L, l, lp):
    """A(L) of the recursion: sqrt((L^2 - (l-l')^2) ((l+l'+1)^2 - L^2)), 0 outside the range.

    Parameters
    ----------
    L, l, lp : int
        Multipoles.

    Returns
    -------
    float
    """
    d = float(l - lp)
    s = float(l + lp + 1)
    x = float(L)
    v = (x * x - d * d) * (s * s - x * x)
    return math.sqrt(v) if v > 0.0 else 0.0


@_jit
def pair_sums(l, lp, w00, w02, w22, nw, spin2):
    """The four coupling sums of one pair (l, l'), without the factor (2l'+1)/(4 pi).

    Parameters
    ----------
    l, lp : int
        The multipoles, >= 0.
    w00, w02, w22 : ndarray, shape (>= nw,), float64
        Mask power spectra W_L for the 00, 02 and 22 blocks (the same array where one mask
        serves all).
    nw : int
        W_L is zero for L >= nw.
    spin2 : bool
        Compute the spin-2 sums (f_2) too; otherwise the last three are 0.

    Returns
    -------
    tuple of 4 float
        sum (2L+1) W f_0^2, sum (2L+1) W f_0 f_2, the even-parity and the odd-parity
        sum (2L+1) W f_2^2.
    """
    lmin = abs(l - lp)
    lmax = l + lp
    two = spin2 and l >= 2 and lp >= 2       # (l l' L; 2 -2 0) vanishes for l or l' below 2
    # f_0 and f_2 at L-1 and L, their running normalisations and weighted sums
    a_prev = 0.0
    a_cur = 1.0
    b_prev = 0.0
    b_cur = 1.0
    na = 0.0
    nb = 0.0
    s00 = 0.0
    s02 = 0.0
    spp = 0.0
    smm = 0.0
    amp_cur = 0.0                            # A(L), the recursion's coefficient, A(lmin) = 0
    even = (l + lp + lmin) % 2 == 0
    for L in range(lmin, lmax + 1):
        g = 2.0 * L + 1.0
        na += g * a_cur * a_cur
        if L < nw:
            ga = g * a_cur
            s00 += ga * w00[L] * a_cur
            if two:
                s02 += ga * w02[L] * b_cur
                v = g * w22[L] * b_cur * b_cur
                if even:
                    spp += v
                else:
                    smm += v
        if two:
            nb += g * b_cur * b_cur
        if L == lmax:
            break
        amp_next = recurrence_step(L + 1, l, lp)
        inv = 1.0 / amp_next
        a_next = -amp_cur * a_prev * inv
        a_prev = a_cur
        a_cur = a_next
        if two:
            b_next = (4.0 * g * b_cur - amp_cur * b_prev) * inv
            b_prev = b_cur
            b_cur = b_next
            if abs(b_cur) > _BIG:            # f_2 can grow in a forbidden region: rescale
                b_cur *= _SMALL
                b_prev *= _SMALL
                nb *= _SMALL * _SMALL
                s02 *= _SMALL
                spp *= _SMALL * _SMALL
                smm *= _SMALL * _SMALL
        amp_cur = amp_next
        even = not even
    # normalise, and give f_0 f_2 its sign: both recursions started at +1 at lmin, and both
    # true values have the sign of (-1)^(l-l') at lmax, so the product's sign is that of the
    # two raw values at lmax (f_0(lmax) and f_2(lmax) never vanish)
    s00 /= na
    if two:
        spp /= nb
        smm /= nb
        sign = 1.0 if a_cur * b_cur > 0.0 else -1.0
        s02 *= sign / math.sqrt(na * nb)
    return s00, s02, spp, smm


@_jit
def wigner3j_row(l, lp, spin, out):
    """The symbols (L l l'; 0 spin -spin) for L = |l-l'| .. l+l', by the same recursion.

    Parameters
    ----------
    l, lp : int
        Multipoles, >= 0.
    spin : int
        0 or 2.
    out : ndarray, shape (>= 2 min(l, l') + 1,), float64
        Receives f(|l-l'| + i) at index i (zeros where l or l' < spin).

    Returns
    -------
    int
        |l - l'|, the L of ``out[0]``.
    """
    lmin = abs(l - lp)
    n = l + lp - lmin + 1
    for i in range(n):
        out[i] = 0.0
    if l < spin or lp < spin:
        return lmin
    out[0] = 1.0
    amp_cur = 0.0
    for i in range(n - 1):
        L = lmin + i
        amp_next = recurrence_step(L + 1, l, lp)
        prev = out[i - 1] if i > 0 else 0.0
        out[i + 1] = (2.0 * spin * (2.0 * L + 1.0) * out[i] - amp_cur * prev) / amp_next
        amp_cur = amp_next
        if abs(out[i + 1]) > _BIG:
            for j in range(i + 2):
                out[j] *= _SMALL
    norm = 0.0
    for i in range(n):
        norm += (2.0 * (lmin + i) + 1.0) * out[i] * out[i]
    scale = 1.0 / math.sqrt(norm)
    if (out[n - 1] > 0.0) != ((l - lp) % 2 == 0):
        scale = -scale
    for i in range(n):
        out[i] *= scale
    return lmin


def wigner3j(l: int, lp: int, spin: int = 0) -> tuple[int, np.ndarray]:
    """(L l l'; 0 spin -spin) for every L, in ducc0's ``wigner3j_int`` layout.

    Parameters
    ----------
    l, lp : int
        Multipoles, >= 0.
    spin : int
        0 or 2.

    Returns
    -------
    Lmin : int
        abs(l - l').
    values : ndarray, shape (2 min(l, l') + 1,), float64
        The symbol at L = Lmin + i.
    """
    out = np.empty(2 * min(l, lp) + 1)
    return int(_row(int(l), int(lp), int(spin), out)), out


# compiled at the first call, not at import (importing sphgpu compiles nothing)
_row = numba.njit(cache=True)(wigner3j_row)
