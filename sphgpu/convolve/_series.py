"""Legendre series of radial kernels, evaluated in u = 1 - cos(theta) so that nothing is lost
near theta = 0.

A radial kernel with Legendre coefficients K_l has the profile

    K(theta) = sum_l (2l+1)/(4 pi) K_l P_l(cos theta).

Near theta = 0 the profile varies on the scale du ~ 1/lmax**2 (1e-8 at lmax 4096), below the
rounding of z = cos(theta) itself (1e-16 absolute, so 1e-8 relative in u). The recurrence here
therefore runs on the differences d_l = P_l - P_{l-1}, driven by u (which callers compute as
2 sin^2(theta/2) or half the squared chord, accurate to full relative precision):

    d_{l+1} = (l d_l - (2l+1) u P_l) / (l+1),    P_{l+1} = P_l + d_{l+1}

(the three-term recurrence rewritten around z = 1). The derivative with respect to u uses
dP_l/dz: P'_{l+1} = P'_{l-1} + (2l+1) P_l, and dK/du = -dK/dz.

Everything is float64, compiled with Numba, except in a process whose Numba CPU compiler has
not started yet: there series up to ``len(u) * lmax`` = :data:`NUMPY_WORK` run as NumPy loops
over l. Starting the compiler (the first Numba function a process calls) takes longer than the
NumPy loop at that limit, and was much of a first ``convolve``
(benchmarks/results/first_call.json, docs/notes/2026-11-26-first-calls.rst). Both do the same
float64 operations in the same
order and agree bit for bit, so which one ran never shows in a result.
"""

from __future__ import annotations

import math
import sys

import numba
import numpy as np

__all__ = ["series", "series_and_derivative", "legendre_rows", "legendre_piece_sums"]

FOUR_PI = 4.0 * math.pi
#: most len(u) * lmax evaluated by the NumPy loop before Numba's CPU compiler has started
NUMPY_WORK = 1 << 25


def _coefficients(lmax):
    """Recurrence factors l/(l+1) and (2l+1)/(l+1) for l = 0..lmax (no divisions in the loop)."""
    l = np.arange(lmax + 1, dtype=np.float64)
    return l / (l + 1.0), (2.0 * l + 1.0) / (l + 1.0)


@numba.njit(parallel=True, cache=True)
def _series(wbl, fa, fb, u, out, dout, want_derivative):
    # wbl[l] = (2l+1) K_l / (4 pi); fa, fb from _coefficients
    lmax = wbl.shape[0] - 1
    for i in numba.prange(u.shape[0]):
        x = u[i]
        acc = wbl[0]
        dacc = 0.0
        if lmax >= 1:
            d = -x                   # P_1 - P_0 = z - 1
            p = 1.0 - x              # P_1
            dp_prev = 0.0            # P'_0
            dp = 1.0                 # P'_1
            acc += wbl[1] * p
            dacc += wbl[1]
            for l in range(1, lmax):
                d = fa[l] * d - fb[l] * x * p
                if want_derivative:
                    dp_new = dp_prev + (2.0 * l + 1.0) * p
                    dp_prev = dp
                    dp = dp_new
                    dacc += wbl[l + 1] * dp
                p = p + d
                acc += wbl[l + 1] * p
        out[i] = acc
        if want_derivative:
            dout[i] = -dacc


def _run_series(bl, u, want_derivative):
    bl = np.ascontiguousarray(bl, dtype=np.float64)
    lmax = bl.shape[0] - 1
    fa, fb = _coefficients(lmax)
    wbl = (2.0 * np.arange(lmax + 1) + 1.0) * bl / FOUR_PI
    uu = np.ascontiguousarray(np.ravel(u), dtype=np.float64)
    if uu.size * lmax <= NUMPY_WORK and not _numba_cpu_started():
        out, dout = _series_numpy(wbl, fa, fb, uu, want_derivative)
    else:
        out = np.empty_like(uu)
        dout = np.empty_like(uu) if want_derivative else out
        _series(wbl, fa, fb, uu, out, dout, want_derivative)
    return out.reshape(np.shape(u)), dout.reshape(np.shape(u))


def _numba_cpu_started() -> bool:
    """Whether Numba's CPU compiler has started in this process (it imports its NumPy
    lowering, numba.np.arraymath, as it starts)."""
    return "numba.np.arraymath" in sys.modules


def _series_numpy(wbl, fa, fb, x, want_derivative):
    """:func:`_series` as a loop over l of NumPy operations on all u at once (the same
    operations in the same order); returns (out, dout), dout is out without the derivative."""
    lmax = wbl.shape[0] - 1
    acc = np.full_like(x, wbl[0])
    dacc = np.zeros_like(x)
    if lmax >= 1:
        d = -x
        p = 1.0 - x
        dp_prev = np.zeros_like(x)
        dp = np.ones_like(x)
        acc += wbl[1] * p
        dacc += wbl[1]
        for l in range(1, lmax):
            d = fa[l] * d - fb[l] * x * p
            if want_derivative:
                dp_prev, dp = dp, dp_prev + (2.0 * l + 1.0) * p
                dacc += wbl[l + 1] * dp
            p = p + d
            acc += wbl[l + 1] * p
    return acc, (-dacc if want_derivative else acc)


def series(bl, u) -> np.ndarray:
    """K(u) = sum_l (2l+1)/(4 pi) bl[l] P_l(1 - u) for every u (any shape), float64."""
    return _run_series(bl, u, False)[0]


def series_and_derivative(bl, u) -> tuple[np.ndarray, np.ndarray]:
    """(K(u), dK/du) of the Legendre series of ``bl``, each of the shape of ``u``."""
    return _run_series(bl, u, True)


@numba.njit(parallel=True, cache=True)
def _rows(lmax, fa, fb, u, weights, out):
    # out[l, q] += weights[q] * P_l(1 - u[q]); parallel over quadrature nodes in blocks so that
    # threads never write the same column.
    nq = u.shape[0]
    for q in numba.prange(nq):
        x = u[q]
        w = weights[q]
        p = 1.0
        out[0, q] = w
        if lmax >= 1:
            d = -x
            p = 1.0 - x
            out[1, q] = w * p
            for l in range(1, lmax):
                d = fa[l] * d - fb[l] * x * p
                p = p + d
                out[l + 1, q] = w * p


def legendre_rows(lmax: int, u, weights=None) -> np.ndarray:
    """Matrix P[l, q] = weights[q] * P_l(1 - u[q]) for l = 0..lmax; shape (lmax+1, len(u))."""
    uu = np.ascontiguousarray(u, dtype=np.float64)
    w = np.ones_like(uu) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    out = np.empty((lmax + 1, uu.shape[0]))
    fa, fb = _coefficients(int(lmax))
    _rows(int(lmax), fa, fb, uu, w, out)
    return out


@numba.njit(parallel=True, cache=True)
def _piece_sums(lmax, fa, fb, u, wf, cols, ptr, pieces, out):
    # out[l, cols[p, c]] += sum over the nodes q of piece p of wf[q, c] * P_l(1 - u[q]), for
    # the pieces of one round (no two of which share a column, so threads never write the
    # same entry); the recurrence of _rows, run for a piece's nodes together
    k = cols.shape[1]
    for t in numba.prange(pieces.shape[0]):
        p = pieces[t]
        q0 = ptr[p]
        nq = ptr[p + 1] - q0
        d = np.empty(nq)
        pv = np.empty(nq)
        acc = np.zeros(k)
        for q in range(nq):
            for c in range(k):
                acc[c] += wf[q0 + q, c]
        for c in range(k):
            if cols[p, c] >= 0:
                out[0, cols[p, c]] += acc[c]
        if lmax >= 1:
            acc[:] = 0.0
            for q in range(nq):
                d[q] = -u[q0 + q]
                pv[q] = 1.0 - u[q0 + q]
                for c in range(k):
                    acc[c] += wf[q0 + q, c] * pv[q]
            for c in range(k):
                if cols[p, c] >= 0:
                    out[1, cols[p, c]] += acc[c]
        for l in range(1, lmax):
            acc[:] = 0.0
            for q in range(nq):
                d[q] = fa[l] * d[q] - fb[l] * u[q0 + q] * pv[q]
                pv[q] = pv[q] + d[q]
                for c in range(k):
                    acc[c] += wf[q0 + q, c] * pv[q]
            for c in range(k):
                if cols[p, c] >= 0:
                    out[l + 1, cols[p, c]] += acc[c]


def legendre_piece_sums(lmax: int, u, wf, cols, ptr, rounds, ncols: int) -> np.ndarray:
    """Matrix S[l, j] = sum over nodes q with a column of j of wf[q, c] * P_l(1 - u[q]).

    ``u`` (nq,) the nodes of all pieces in order, piece p holding ``ptr[p]:ptr[p+1]``; ``wf``
    (nq, k) float64 the values (times the quadrature weight) of the k functions live on each
    node's piece, which are the columns ``cols[p]`` (int64 (npieces, k), -1 for none);
    ``rounds``: lists of pieces, no two pieces of one round sharing a column (they run in
    parallel). Returns (lmax+1, ncols) float64. It is ``legendre_rows(lmax, u) @ W`` for the
    sparse W these describe, without making the (lmax+1, nq) matrix.
    """
    fa, fb = _coefficients(int(lmax))
    out = np.zeros((lmax + 1, ncols))
    u = np.ascontiguousarray(u, dtype=np.float64)
    wf = np.ascontiguousarray(wf, dtype=np.float64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    for pieces in rounds:
        _piece_sums(int(lmax), fa, fb, u, wf, cols, ptr,
                    np.ascontiguousarray(pieces, dtype=np.int64), out)
    return out
