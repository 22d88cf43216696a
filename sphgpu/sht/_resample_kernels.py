"""@cuda.jit kernels of the theta resampling (:mod:`sphgpu.sht.theta_resample`).

Every array is laid out with the pair of orders p (m = 2p and 2p + 1) along its last, contiguous
axis, so that a warp's lanes read and write consecutive pairs; the FFTs in between run along the
middle axis (strided cuFFT plans, :mod:`sphgpu.sht._cuda`). Launch: grids (ceil(P / THREADS),
rows, maps), THREADS threads, with P = ceil(nm / 2) pairs; the interpolation and its adjoint
take ``run`` consecutive rows a block, so that the rows their windows share stay in L1.
"""

from __future__ import annotations

from numba import cuda

from .._cuda_launch import refresh_kernel_cache

refresh_kernel_cache(__file__)

__all__ = ["THREADS", "pair_kernel", "spectral_kernel", "interp_kernel", "spread_kernel",
           "spectral_adjoint_kernel", "unpair_kernel"]

THREADS = 128


@cuda.jit(device=True, inline=True)
def _lane():
    return cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, cuda.blockIdx.y, cuda.blockIdx.z


@cuda.jit(cache=True)
def pair_kernel(leg, h):
    """h = e + o on the circle: h[i, j, p] = e_j + o_j, h[i, 2n-1-j, p] = e_j - o_j, with e and
    o the columns 2p and 2p + 1 of leg (k, n, nm) (o = 0 past the last column); h (k, 2n, P).
    Grid rows: the n Fejer rings."""
    p, j, i = _lane()
    if p >= h.shape[2]:
        return
    e = leg[i, j, 2 * p]
    o = leg[i, j, 2 * p + 1] if 2 * p + 1 < leg.shape[2] else 0j
    h[i, j, p] = e + o
    h[i, h.shape[1] - 1 - j, p] = e - o


@cuda.jit(cache=True)
def spectral_kernel(c, spectral, u):
    """u[i, g] = c[i, k mod 2n] * spectral[k + L] for the modes |k| <= L (row g = k mod N),
    zero elsewhere; c (k, 2n, P) the FFT of h, u (k, N, P), spectral (2L + 1,). Grid rows: N."""
    p, g, i = _lane()
    if p >= u.shape[2]:
        return
    L = (spectral.shape[0] - 1) // 2
    N = u.shape[1]
    k = g if g <= L else g - N
    if k < -L:
        u[i, g, p] = 0j
    else:
        u[i, g, p] = c[i, k + c.shape[1] if k < 0 else k, p] * spectral[k + L]


@cuda.jit(cache=True)
def interp_kernel(u, first, weights, run, out):
    """out[i, r, 2p] = (a + b) / 2 and out[i, r, 2p + 1] = (a - b) / 2, with a = h(theta_r) and
    b = h(-theta_r) interpolated from the grid u (k, N, P) with the ring's window (first[r],
    weights[r]); out (k, nrings, nm). Grid rows: ceil(nrings / run)."""
    p, blk, i = _lane()
    if p >= u.shape[2]:
        return
    N = u.shape[1]
    nm = out.shape[2]
    r_end = min((blk + 1) * run, first.shape[0])
    for r in range(blk * run, r_end):
        a = 0j
        b = 0j
        g = first[r]
        for t in range(weights.shape[1]):
            w = weights[r, t]
            a += w * u[i, g + N if g < 0 else g, p]
            b += w * u[i, N - g if g > 0 else -g, p]
            g += 1
        out[i, r, 2 * p] = 0.5 * (a + b)
        if 2 * p + 1 < nm:
            out[i, r, 2 * p + 1] = 0.5 * (a - b)


@cuda.jit(cache=True)
def spread_kernel(leg, ptr, ring, w_even, w_odd, run, u):
    """The transpose of :func:`interp_kernel`: u[i, g, p] = sum over the windows that cover g of
    w_even * E_r + w_odd * O_r, E and O the columns 2p and 2p + 1 of leg (k, nrings, nm); the
    entries of grid point g are ptr[g]..ptr[g+1] of (ring, w_even, w_odd), w_even = w / 2 and
    w_odd = +-w / 2 (+ for a window at theta_r, - at -theta_r). u (k, N, P). Grid rows:
    ceil(N / run)."""
    p, blk, i = _lane()
    if p >= u.shape[2]:
        return
    nm = leg.shape[2]
    g_end = min((blk + 1) * run, u.shape[1])
    for g in range(blk * run, g_end):
        acc = 0j
        for e in range(ptr[g], ptr[g + 1]):
            r = ring[e]
            acc += w_even[e] * leg[i, r, 2 * p]
            if 2 * p + 1 < nm:
                acc += w_odd[e] * leg[i, r, 2 * p + 1]
        u[i, g, p] = acc


@cuda.jit(cache=True)
def spectral_adjoint_kernel(d, spectral, c):
    """c[i, q] = d[i, k mod N] * conj(spectral[k + L]) for the modes |k| <= L (row q = k mod
    2n), zero elsewhere; d (k, N, P) the forward FFT of the spread grid, c (k, 2n, P). Grid
    rows: 2n."""
    p, q, i = _lane()
    if p >= c.shape[2]:
        return
    L = (spectral.shape[0] - 1) // 2
    n2 = c.shape[1]
    k = q if q <= L else q - n2
    if k < -L:
        c[i, q, p] = 0j
    else:
        c[i, q, p] = d[i, k + d.shape[1] if k < 0 else k, p] * spectral[k + L].conjugate()


@cuda.jit(cache=True)
def unpair_kernel(t, leg):
    """The transpose of :func:`pair_kernel`: leg[i, j, 2p] = t_j + t_{2n-1-j} and leg[i, j,
    2p + 1] = t_j - t_{2n-1-j}; t (k, 2n, P), leg (k, n, nm). Grid rows: the n Fejer rings."""
    p, j, i = _lane()
    if p >= t.shape[2]:
        return
    x = t[i, j, p]
    y = t[i, t.shape[1] - 1 - j, p]
    leg[i, j, 2 * p] = x + y
    if 2 * p + 1 < leg.shape[2]:
        leg[i, j, 2 * p + 1] = x - y
