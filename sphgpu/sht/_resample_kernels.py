"""@cuda.jit kernels of the theta resampling (:mod:`sphgpu.sht.theta_resample`).

The Legendre and ring steps hold Delta_m as ``leg`` (k, rings, nm), the orders contiguous; the
FFTs along theta are fastest with theta contiguous (a strided cuFFT along the rings of ``leg``
was several times slower), so the circle ``h`` (k, P, 2n) holds one pair of orders p
(m = 2p, 2p + 1) a row, and the oversampled grid ``u`` (k, P, S, M) one pair's N = S M points as
S rows, its phases: grid point j = S y + s is u[i, p, s, y]. A phase's inverse FFT makes its
points from the modes congruent mod M, and cuFFT transforms rows of M <= 4096 points in one pass,
where rows of 16384 took two (:data:`sphgpu.sht._cuda.GRID_ROW`). The kernels that go between the two
layouts work on tiles in shared memory: rows of one layout are read and written whole by
consecutive lanes.

Tiles: a block takes TILE_PAIRS pairs (grid x) and one tile of rings, Fejer rings or grid points
(grid y); ``tiles`` (ntiles + 1,) int64 holds where each tile starts, chosen on the host so that
the grid points a tile of rings reads, or the rings a tile of grid points reads, fit in shared
memory (:mod:`sphgpu.sht._cuda`). Grid z: the maps.
"""

from __future__ import annotations

import functools

from numba import cuda, complex128, float64, uint32

from .._cuda_launch import refresh_kernel_cache
from . import theta_resample

refresh_kernel_cache(__file__, theta_resample.__file__)

__all__ = ["THREADS", "TILE_PAIRS", "SEGMENT", "RING_TILE", "SPAN", "SPREAD_RINGS", "pair_kernel",
           "to_grid_kernel", "from_grid_kernel", "interp_kernel", "spread_kernel", "unpair_kernel"]

THREADS = 256
#: pairs of orders a tile (32 orders: a 512-byte row segment of leg)
TILE_PAIRS = 16
#: grid points of u a tile of target rings may read on each side (theta and -theta)
SEGMENT = 64
#: rings of leg a tile may read (spread), or Fejer rings a tile (pair, unpair)
RING_TILE = 64
#: grid points a tile of the spread writes, and the rings it may read (its shared memory stays
#: within 48 KB)
SPAN = 32
SPREAD_RINGS = 48
#: points of a ring's window (the kernels' loops over it unroll)
WIDTH = theta_resample.WIDTH
# rows of the shared tiles, padded by one value (bank spread); plain int globals, which Numba
# takes as compile-time constants in a shared array's shape (an expression there is not)
_ROW = TILE_PAIRS + 1
_SEG_ROW = SEGMENT + 1
_V_SIZE = 2 * SPREAD_RINGS * _ROW


@cuda.jit(device=True, inline=True)
def _ring_tile():
    # (thread, first pair, first Fejer ring, map) of a block of pair_kernel or unpair_kernel
    return (cuda.threadIdx.x, cuda.blockIdx.x * TILE_PAIRS, cuda.blockIdx.y * RING_TILE,
            cuda.blockIdx.z)


@cuda.jit(cache=True)
def pair_kernel(leg, h):
    """h = e + o on the circle: h[i, p, j] = e_j + o_j, h[i, p, 2n-1-j] = e_j - o_j, with e and
    o the columns 2p and 2p + 1 of leg (k, n, nm) (o = 0 past the last column); h (k, P, 2n).
    Grid (ceil(P / TILE_PAIRS), ceil(n / RING_TILE), k), THREADS threads."""
    e_s = cuda.shared.array((RING_TILE, _ROW), complex128)
    o_s = cuda.shared.array((RING_TILE, _ROW), complex128)
    tid, p0, j0, i = _ring_tile()
    n, nm = leg.shape[1], leg.shape[2]
    for idx in range(tid, RING_TILE * 2 * TILE_PAIRS, THREADS):
        jj, col = idx // (2 * TILE_PAIRS), idx % (2 * TILE_PAIRS)
        c = 2 * p0 + col
        v = leg[i, j0 + jj, c] if j0 + jj < n and c < nm else 0j
        if col % 2 == 0:
            e_s[jj, col // 2] = v
        else:
            o_s[jj, col // 2] = v
    cuda.syncthreads()
    for idx in range(tid, TILE_PAIRS * RING_TILE, THREADS):
        pp, jj = idx // RING_TILE, idx % RING_TILE
        if p0 + pp < h.shape[1] and j0 + jj < n:
            e = e_s[jj, pp]
            o = o_s[jj, pp]
            h[i, p0 + pp, j0 + jj] = e + o
            h[i, p0 + pp, 2 * n - 1 - j0 - jj] = e - o


@functools.lru_cache(maxsize=None)
def to_grid_kernel(phases: int):
    """The grid's spectrum by phase: u[i, p, s, q] = sum over the modes k = q (mod M), |k| <= L,
    of c[i, p, k mod A] * spectral[k] e^(2 pi i k s / N), s < S = ``phases``; c (k, P, A) the
    FFT of h (A = 2n), u (k, P, S, M), factor (2, 2L + 1): spectral[k] and e^(2 pi i k / N),
    whose powers give the phases' factors. Grid (ceil(M / THREADS), P, k), THREADS threads.
    A thread takes a point of every phase, so that each mode and factor is read once (with
    the phases' factors read from a table, a thread a point read the L2 cache about five
    times what it wrote)."""
    S = phases

    @cuda.jit(cache=True)
    def kernel(c, factor, u):
        q = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        p, i = cuda.blockIdx.y, cuda.blockIdx.z
        M = u.shape[3]
        if q >= M:
            return
        A = c.shape[2]
        L = (factor.shape[1] - 1) // 2
        acc = cuda.local.array(S, complex128)
        for s in range(S):
            acc[s] = 0j
        for k in range(q - ((q + L) // M) * M, L + 1, M):     # from the lowest mode >= -L
            v = c[i, p, k + A if k < 0 else k] * factor[0, k + L]
            w = factor[1, k + L]
            for s in range(S):
                acc[s] += v
                v *= w
        for s in range(S):
            u[i, p, s, q] = acc[s]

    return kernel


@functools.lru_cache(maxsize=None)
def from_grid_kernel(phases: int):
    """The transpose of :func:`to_grid_kernel`: c[i, p, g] = sum over s of u[i, p, s, k mod M]
    * conj(spectral[k] e^(2 pi i k s / N)) for the modes |k| <= L (g = k mod A), zero
    elsewhere; u (k, P, S, M) the FFTs of the phases, c (k, P, A). Grid (ceil(A / THREADS), P,
    k), THREADS threads."""
    S = phases

    @cuda.jit(cache=True)
    def kernel(u, factor, c):
        g = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        p, i = cuda.blockIdx.y, cuda.blockIdx.z
        A = c.shape[2]
        if g >= A:
            return
        M = u.shape[3]
        L = (factor.shape[1] - 1) // 2
        k = g if g <= L else g - A
        acc = 0j
        if k >= -L:
            q = k % M                                # Python's modulo: >= 0
            f = factor[0, k + L].conjugate()
            w = factor[1, k + L].conjugate()
            for s in range(S):
                acc += u[i, p, s, q] * f
                f *= w
        c[i, p, g] = acc

    return kernel


@cuda.jit(device=True, inline=True)
def _point(j, N, S):
    # (phase, position in its row) of grid point j, -N < j < N (points wrap mod N)
    j = j + N if j < 0 else j
    return j % S, j // S


@functools.lru_cache(maxsize=None)
def interp_kernel(phases: int):
    """out[i, r, 2p] = (a + b) / 2 and out[i, r, 2p + 1] = (a - b) / 2, with a = h(theta_r) and
    b = h(-theta_r) interpolated from the grid u (k, P, S, M) over the ring's window (first[r],
    weights[r], WIDTH points); out (k, nrings, nm). The tile's rings tiles[y]..tiles[y+1] (at
    most RING_TILE) read at most SEGMENT grid points from first[tiles[y]] on, and their mirror
    images. Grid (ceil(P / TILE_PAIRS), ntiles, k), THREADS threads.
    ``phases``: S of u, a constant of the compiled kernel, so that a grid point's phase and
    position divide by a constant (a 64-bit division by a runtime value takes about 70
    instructions)."""
    S = phases

    @cuda.jit(cache=True)
    def kernel(u, first, weights, tiles, out):
        ud = cuda.shared.array((TILE_PAIRS, _SEG_ROW), complex128)
        um = cuda.shared.array((TILE_PAIRS, _SEG_ROW), complex128)
        w_s = cuda.shared.array((RING_TILE, WIDTH), float64)
        tid = cuda.threadIdx.x
        p0 = cuda.blockIdx.x * TILE_PAIRS
        r0, r1 = tiles[cuda.blockIdx.y], tiles[cuda.blockIdx.y + 1]
        i = cuda.blockIdx.z
        P = u.shape[1]
        N = S * u.shape[3]
        j0 = first[r0]
        seg = first[r1 - 1] + WIDTH - j0
        for idx in range(tid, TILE_PAIRS * SEGMENT, THREADS):
            pp, s = idx // SEGMENT, idx % SEGMENT
            j = j0 + s
            if p0 + pp < P and s < seg:
                ph, y = _point(j, N, S)
                ud[pp, s] = u[i, p0 + pp, ph, y]
                ph, y = _point(-j, N, S)
                um[pp, s] = u[i, p0 + pp, ph, y]
        for idx in range(tid, (r1 - r0) * WIDTH, THREADS):
            w_s[idx // WIDTH, idx % WIDTH] = weights[r0 + idx // WIDTH, idx % WIDTH]
        cuda.syncthreads()
        nm = out.shape[2]
        for idx in range(tid, (r1 - r0) * TILE_PAIRS, THREADS):
            rr, pp = idx // TILE_PAIRS, idx % TILE_PAIRS
            if p0 + pp < P:
                # real and imaginary parts apart: a real weight times a complex value is then two
                # fused multiply-adds, not a complex product; WIDTH is a constant, so the loop
                # unrolls and its loads overlap
                ar = 0.0
                ai = 0.0
                br = 0.0
                bi = 0.0
                s = first[r0 + rr] - j0
                for t in range(WIDTH):
                    w = w_s[rr, t]
                    x = ud[pp, s + t]
                    y = um[pp, s + t]
                    ar += w * x.real
                    ai += w * x.imag
                    br += w * y.real
                    bi += w * y.imag
                c = 2 * (p0 + pp)
                out[i, r0 + rr, c] = complex(0.5 * (ar + br), 0.5 * (ai + bi))
                if c + 1 < nm:
                    out[i, r0 + rr, c + 1] = complex(0.5 * (ar - br), 0.5 * (ai - bi))

    return kernel


@functools.lru_cache(maxsize=None)
def spread_kernel(phases: int, taps: int):
    """The transpose of :func:`interp_kernel`: u[i, p, g] = sum over the window entries that
    land on grid point g of their weight times (E_r + O_r) / 2 (ring r at theta_r) or (E_r -
    O_r) / 2 (at -theta_r); E and O the columns 2p and 2p + 1 of leg (k, nrings, nm). The
    entries of g are ``taps`` slots of the tables tap_row (N, taps) uint32, the entry's place
    in the tile's shared values (_ROW times its row: ring r - ring0[y], plus SPREAD_RINGS at
    -theta_r), and tap_weight (N, taps) float64, zero in unused slots
    (:func:`sphgpu.sht._cuda._spread_taps`). The tile's grid points tiles[y]..tiles[y+1] (at
    most SPAN) read rings ring0[y] to ring0[y] + SPREAD_RINGS - 1 at most. u (k, P, S, M) (the
    module's docstring). Grid (ceil(P / TILE_PAIRS), ntiles, k), THREADS threads. ``phases``:
    S of u (see :func:`interp_kernel`). A fixed number of slots a point, not each point's ring
    ranges: the loop unrolls, and its index arithmetic is one table read (with the ranges, the
    kernel ran about 70 instructions an entry, benchmarks/results/sht_kernels_ncu_h200.json)."""
    S, K = phases, taps

    @cuda.jit(cache=True)
    def kernel(leg, tap_row, tap_weight, tiles, ring0, u):
        # rows of _ROW values: (E + O) / 2 of the tile's rings, then (E - O) / 2; flat, so that
        # an entry's place is its table value plus the lane's pair
        v_s = cuda.shared.array(_V_SIZE, complex128)
        r_s = cuda.shared.array((SPAN, K), uint32)
        w_s = cuda.shared.array((SPAN, K), float64)
        u_s = cuda.shared.array((SPAN, _ROW), complex128)
        tid = cuda.threadIdx.x
        p0 = cuda.blockIdx.x * TILE_PAIRS
        g0, g1 = tiles[cuda.blockIdx.y], tiles[cuda.blockIdx.y + 1]
        ra = ring0[cuda.blockIdx.y]
        i = cuda.blockIdx.z
        nrings, nm = leg.shape[1], leg.shape[2]
        P = u.shape[1]
        for idx in range(tid, SPREAD_RINGS * TILE_PAIRS, THREADS):
            rr, pp = idx // TILE_PAIRS, idx % TILE_PAIRS
            c = 2 * (p0 + pp)
            e = leg[i, ra + rr, c] if ra + rr < nrings and c < nm else 0j
            o = leg[i, ra + rr, c + 1] if ra + rr < nrings and c + 1 < nm else 0j
            v_s[rr * _ROW + pp] = 0.5 * (e + o)
            v_s[(SPREAD_RINGS + rr) * _ROW + pp] = 0.5 * (e - o)
        span = g1 - g0
        for idx in range(tid, SPAN * K, THREADS):
            gg, t = idx // K, idx % K
            if gg < span:
                r_s[gg, t] = tap_row[g0 + gg, t]
                w_s[gg, t] = tap_weight[g0 + gg, t]
        cuda.syncthreads()
        # lanes take the pairs of one grid point: its slots are the same for all of them, and
        # the shared rows are read along the pairs. Unsigned offsets and a counted loop: the
        # loop unrolls and an entry costs its loads, an add and two fused multiply-adds
        for idx in range(tid, SPAN * TILE_PAIRS, THREADS):
            gg, pp = idx // TILE_PAIRS, idx % TILE_PAIRS
            if gg < span:
                lane = uint32(pp)
                xr = 0.0
                xi = 0.0
                t = 0
                while t < K:
                    w = w_s[gg, t]
                    a = v_s[r_s[gg, t] + lane]
                    xr += w * a.real
                    xi += w * a.imag
                    t += 1
                u_s[gg, pp] = complex(xr, xi)
        cuda.syncthreads()
        for idx in range(tid, TILE_PAIRS * SPAN, THREADS):
            pp, gg = idx // SPAN, idx % SPAN
            if gg < span and p0 + pp < P:
                g = g0 + gg
                u[i, p0 + pp, g % S, g // S] = u_s[gg, pp]

    return kernel


@cuda.jit(cache=True)
def unpair_kernel(t, leg):
    """The transpose of :func:`pair_kernel`: leg[i, j, 2p] = t_j + t_{2n-1-j} and leg[i, j,
    2p + 1] = t_j - t_{2n-1-j}; t (k, P, 2n), leg (k, n, nm). Grid as :func:`pair_kernel`."""
    x_s = cuda.shared.array((RING_TILE, _ROW), complex128)
    y_s = cuda.shared.array((RING_TILE, _ROW), complex128)
    tid, p0, j0, i = _ring_tile()
    n, nm = leg.shape[1], leg.shape[2]
    for idx in range(tid, TILE_PAIRS * RING_TILE, THREADS):
        pp, jj = idx // RING_TILE, idx % RING_TILE
        if p0 + pp < t.shape[1] and j0 + jj < n:
            x_s[jj, pp] = t[i, p0 + pp, j0 + jj]
            y_s[jj, pp] = t[i, p0 + pp, 2 * n - 1 - j0 - jj]
    cuda.syncthreads()
    for idx in range(tid, RING_TILE * 2 * TILE_PAIRS, THREADS):
        jj, col = idx // (2 * TILE_PAIRS), idx % (2 * TILE_PAIRS)
        c = 2 * p0 + col
        if j0 + jj < n and c < nm:
            x = x_s[jj, col // 2]
            y = y_s[jj, col // 2]
            leg[i, j0 + jj, c] = x + y if col % 2 == 0 else x - y
