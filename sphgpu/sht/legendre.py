"""The associated-Legendre recurrence of the SHT paper, with rescaling, as Numba functions.

Normalised functions lambda_lm(x), x = cos(theta), with Y_lm(theta, phi) = lambda_lm(x) e^{i m phi}
(Condon-Shortley phase included, as healpy and ducc0). For fixed m (paper Eqs. 2.9-2.12):

    lambda_mm     = (-1)^m mu_m sin(theta)^m,   mu_m = sqrt((2m+1)/(4 pi) prod_{k=1..m} (2k-1)/(2k))
    lambda_m+1,m  = a_{m+1} x lambda_mm
    lambda_lm     = a_l (x lambda_l-1,m - b_l lambda_l-2,m)
    a_l = sqrt((4 l^2 - 1) / (l^2 - m^2)),   b_l = sqrt(((l-1)^2 - m^2) / (4 (l-1)^2 - 1))

That step costs three floating-point operations per ring and l. We run it on scaled values
lambda_lm = s_l y_l with s_m = s_m+1 = 1 and s_l = a_l b_l s_l-2, for which it becomes

    y_l = (alpha_l x) y_l-1 - y_l-2,   alpha_l = a_l s_l-1 / s_l,

one multiply and one fused multiply-add. The factors s_l depend on l and m only, so they are
folded into the coefficients once (``alm * s_l`` in synthesis, the sum over rings times s_l in
the adjoint) instead of once per ring. s_l stays between about l^-1/2 and l^1/2: the
scaling changes no range argument below.

sin(theta)^m spans far more than double precision (1e-65536 one pixel from the pole at
lmax 16384), so every value is carried as ``v * 2**(SCALE_BITS * k)`` with an integer k <= 0.
While k < 0 the true value is below 2**-HALF_BITS (about 5e-91) and contributes nothing, so it is
not accumulated; the recurrence keeps running on the mantissa and, when |v| passes 2**HALF_BITS,
both carried values are multiplied by 2**-SCALE_BITS and k grows by one (the paper's "real-time
rescaling"). Multiplying by powers of two is exact, so rescaling adds no rounding error. The
starting value sin^m is formed by binary exponentiation with the same scaled representation
(about log2(m) roundings instead of m).

The functions below are registered with ``numba.extending.register_jitable``: plain Python when
called from Python, compiled inline into whatever Numba code calls them, the CPU twin's
``@numba.njit(parallel=True)`` loops and the ``@cuda.jit`` kernels alike, so the CPU twin and the
GPU run one recurrence. Everything is float64.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import register_jitable

__all__ = ["SCALE_BITS", "HALF_BITS", "mu_table", "recurrence_coefficients", "coefficient_tables",
           "start_value", "rescale", "step", "legendre_sum", "legendre_adjoint", "lambda_lm"]

SCALE_BITS = 600
HALF_BITS = 300
_BIG = 2.0 ** SCALE_BITS          # exact powers of two
_INV_BIG = 2.0 ** -SCALE_BITS
_HALF_BIG = 2.0 ** HALF_BITS
_HALF_SMALL = 2.0 ** -HALF_BITS

_jit = register_jitable(inline="always")


def mu_table(mmax: int) -> np.ndarray:
    """mu_m = |lambda_mm| / sin(theta)^m for m = 0..mmax; shape (mmax+1,), float64."""
    m = np.arange(1, mmax + 1, dtype=np.float64)
    steps = np.sqrt((2.0 * m + 1.0) / (2.0 * m))
    return np.concatenate(([1.0], np.cumprod(steps))) / math.sqrt(4.0 * math.pi)


@_jit
def recurrence_coefficients(m, lmax, alpha, scale, off):
    """Fill alpha[off + l] (l = m..lmax; alpha_m = 0) and scale[off + l] (l = m..lmax),
    float64, for this m: the scaled recurrence's alpha_l and s_l (module docstring). With
    ``off`` = the alm offset of m, the tables share the alm layout (:func:`coefficient_tables`)."""
    mm = float(m) * float(m)
    scale[off + m] = 1.0
    alpha[off + m] = 0.0    # with y_{m-1} = 0 and y_{m-2} = -lambda_mm, one uniform step gives y_m
    if m + 1 <= lmax:
        fl = float(m + 1)
        alpha[off + m + 1] = math.sqrt((4.0 * fl * fl - 1.0) / (fl * fl - mm))
        scale[off + m + 1] = 1.0
    for l in range(m + 2, lmax + 1):
        fl = float(l)
        a = math.sqrt((4.0 * fl * fl - 1.0) / (fl * fl - mm))
        fl1 = fl - 1.0
        b = math.sqrt((fl1 * fl1 - mm) / (4.0 * fl1 * fl1 - 1.0))
        scale[off + l] = a * b * scale[off + l - 2]
        alpha[off + l] = a * scale[off + l - 1] / scale[off + l]


def coefficient_tables(lmax: int, mmax: int, mstart: np.ndarray):
    """alpha_l and s_l of every (l, m) in the alm layout (index mstart[m] + l); two float64
    arrays of the alm length. The CUDA backend builds the same tables on the device."""
    n = int(mstart[mmax]) + lmax + 1
    alpha = np.zeros(n)
    scale = np.zeros(n)
    _fill_tables(lmax, mmax, np.asarray(mstart, dtype=np.int64), alpha, scale)
    return alpha, scale


@numba.njit(parallel=True, cache=True)
def _fill_tables(lmax, mmax, mstart, alpha, scale):
    for m in numba.prange(mmax + 1):
        recurrence_coefficients(m, lmax, alpha, scale, mstart[m])


@_jit
def _normalise(v, k):
    # Keep |v| in [2**-HALF_BITS, 2**HALF_BITS] by moving whole factors 2**SCALE_BITS into k.
    if v != 0.0:
        while abs(v) < _HALF_SMALL:
            v *= _BIG
            k -= 1
        while abs(v) > _HALF_BIG:
            v *= _INV_BIG
            k += 1
    return v, k


@_jit
def rescale(p0, p1, k):
    """One rescaling check of the recurrence: while k < 0 and |p1| has grown past
    2**HALF_BITS, move a factor 2**SCALE_BITS from the two carried values into k."""
    if k < 0 and abs(p1) > _HALF_BIG:
        return p0 * _INV_BIG, p1 * _INV_BIG, k + 1
    return p0, p1, k


@_jit
def start_value(mu_m, m, sin_theta):
    """lambda_mm as (v, k) with lambda_mm = v * 2**(SCALE_BITS*k), k <= 0.

    ``sin_theta`` in [0, 1]; at the poles (sin = 0) every m > 0 gives (0.0, -1).
    """
    r = 1.0
    kr = 0
    base = sin_theta
    kb = 0
    e = m
    if e > 0 and base == 0.0:
        return 0.0, -1
    while e > 0:
        if e & 1:
            r *= base
            kr += kb
            r, kr = _normalise(r, kr)
        e >>= 1
        if e > 0:
            base *= base
            kb += kb
            base, kb = _normalise(base, kb)
    v = mu_m * r
    if m & 1:
        v = -v
    v, kr = _normalise(v, kr)
    # The representation must never claim k > 0 (values are at most ~sqrt(lmax)).
    while kr > 0:
        v *= _BIG
        kr -= 1
    return v, kr


@_jit
def step(alpha, x, cur, prev, k):
    """One scaled recurrence step l-1 -> l with its rescaling check: returns the new
    (cur, prev, k). At l = m + 1, prev is 0 and alpha = a_m+1, the starting rule."""
    nxt = (alpha * x) * cur - prev
    prev, nxt, k = rescale(cur, nxt, k)
    return nxt, prev, k


@_jit
def legendre_sum(alm, mstart, m, lmax, alpha, scale, x, v, k, out):
    """Legendre step of alm2map for one m and one pair of rings at +x and -x.

    alm : (nmaps, nalm) complex128; coefficient l of this m at ``alm[:, mstart + l]``.
    alpha, scale : (nalm,) float64 tables of :func:`coefficient_tables` (same layout as alm).
    x : cos(theta) of the northern ring; (v, k) : lambda_mm from :func:`start_value`.
    out : (nmaps, 2) complex128, overwritten with Delta_m at the northern ring (``out[:, 0]``)
          and at the mirrored southern ring (``out[:, 1]``), using
          lambda_lm(-x) = (-1)^(l+m) lambda_lm(x).
    """
    nmaps = alm.shape[0]
    for i in range(nmaps):
        out[i, 0] = 0.0
        out[i, 1] = 0.0
    if v == 0.0:
        return
    # out[:, 0] collects even (l - m) terms and out[:, 1] odd ones until the end.
    cur = v
    prev = 0.0
    for l in range(m, lmax + 1):
        if l > m:
            cur, prev, k = step(alpha[mstart + l], x, cur, prev, k)
        if k == 0:
            j = (l - m) & 1
            y = cur * scale[mstart + l]
            for i in range(nmaps):
                out[i, j] += y * alm[i, mstart + l]
    for i in range(nmaps):
        even = out[i, 0]
        odd = out[i, 1]
        out[i, 0] = even + odd
        out[i, 1] = even - odd


@_jit
def legendre_adjoint(leg, mstart, m, lmax, alpha, scale, x, v, k, alm):
    """Adjoint of :func:`legendre_sum`: ``alm[:, mstart + l] += lambda_lm(x) * leg_n +
    lambda_lm(-x) * leg_s`` for l = m..lmax.

    leg : (nmaps, 2) complex128, the weighted ring Fourier coefficients of the northern
          (``leg[:, 0]``) and southern (``leg[:, 1]``; zero when the ring has no mirror) rings.
    alm : (nmaps, nalm) complex128, accumulated into.
    """
    if v == 0.0:
        return
    nmaps = alm.shape[0]
    cur = v
    prev = 0.0
    for l in range(m, lmax + 1):
        if l > m:
            cur, prev, k = step(alpha[mstart + l], x, cur, prev, k)
        if k == 0:
            y = cur * scale[mstart + l]
            sign = -1.0 if (l - m) & 1 else 1.0
            for i in range(nmaps):
                alm[i, mstart + l] += y * (leg[i, 0] + sign * leg[i, 1])


def lambda_lm(lmax: int, m: int, theta) -> np.ndarray:
    """lambda_lm(cos theta) for l = 0..lmax at one m; shape (len(theta), lmax+1), zero for l < m.

    A convenience over the same recurrence for tests and plots (unit coefficients, one ring at a
    time); the transforms never build this table.
    """
    theta = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    mu = mu_table(m)[m]
    alpha = np.zeros(lmax + 1)
    scale = np.zeros(lmax + 1)
    recurrence_coefficients(m, lmax, alpha, scale, 0)
    out = np.zeros((theta.shape[0], lmax + 1))
    _lambda_rows(mu, m, lmax, alpha, scale, theta, out)
    return out


@numba.njit(cache=True)
def _lambda_rows(mu, m, lmax, alpha, scale, theta, out):
    for r in range(theta.shape[0]):
        cur, k = start_value(mu, m, math.sin(theta[r]))
        x = math.cos(theta[r])
        prev = 0.0
        for l in range(m, lmax + 1):
            if l > m:
                cur, prev, k = step(alpha[l], x, cur, prev, k)
            if k == 0:
                out[r, l] = cur * scale[l]
