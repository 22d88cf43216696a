"""@cuda.jit kernels of the SHT: the Legendre step and the ring-FFT pre/post passes.

Kernels only: launch geometry, buffers and cuFFT live in :mod:`sphgpu.sht._cuda`. Each kernel's
docstring states its launch contract. The recurrence is the one of :mod:`sphgpu.sht.legendre`
(``start_value``, ``rescale``), compiled into the kernels.

Ring FFTs use Bluestein's identity so that rings of any length n go through one batched FFT of
length M >= 2n - 1 (2**a or 3 * 2**a, see ``_cuda._bluestein_length``):

    sum_q c_q w^{jq} = z_j sum_q (c_q z_q) conj(z_{j-q}),   w = e^{2 pi i/n},  z_t = e^{i pi t^2/n}

The convolution runs as FFT(A) * FFT(B) -> inverse FFT, with A the chirped, zero-padded ring and B
the conjugate chirp (precomputed per row, see :func:`chirp_kernel`); two rings of one length
share a row (:func:`fold_pair_kernel`). Many rings of one length (HEALPix's equatorial belt,
every ring of Gauss-Legendre grids) skip the chirps and take one real FFT of that length
instead (:func:`fold_kernel`).
"""

from __future__ import annotations

import functools
import math

import numba
from numba import cuda, float64
from numba.cuda import libdevice

from .. import _dmma
from .._device import SIMULATOR
from .._cuda_launch import refresh_kernel_cache
from . import legendre

# kernels are cached on disk (cache=True); they inline legendre's device functions
refresh_kernel_cache(__file__, legendre.__file__)

__all__ = ["coefficient_tables_kernel", "first_alive_kernel", "alm2leg_kernel", "alm2leg_mma_kernel", "leg2alm_kernel", "leg2alm_mma_kernel", "chirp_kernel",
           "fold_pair_kernel", "unchirp_pair_kernel", "chirp_map_pair_kernel",
           "unfold_pair_kernel", "fold_kernel", "unchirp_kernel", "gather_rings_kernel",
           "unfold_kernel", "eth_kernel", "spin_sets_kernel", "spin_sets_adjoint_kernel",
           "cl_sums_kernel", "SPIN_FUSED", "CL_FIELDS", "ALM2LEG_THREADS", "ALM2LEG_PAIRS", "LEG2ALM_THREADS", "LEG2ALM_PAIRS",
           "LEG2ALM_MAX_MAPS", "CHECK_EVERY", "MMA_CHUNK",
           "LEG2ALM_MMA_MAPS", "RING_THREADS"]

# default launch shapes (used where the autotuner is off): the fastest of its candidates
# (_cuda.CANDIDATES; measured in docs/notes/2026-11-27-legendre-kernels.rst)
ALM2LEG_THREADS = 128      # threads per block in alm2leg; also the l chunk held in shared memory
ALM2LEG_PAIRS = 4          # ring pairs per thread in alm2leg (register blocking)
LEG2ALM_THREADS = 32       # threads per block in leg2alm
LEG2ALM_PAIRS = 8          # ring pairs per thread in leg2alm
LEG2ALM_MAX_MAPS = 2       # maps per leg2alm launch (shared memory grows with it)
LEG2ALM_UNROLL = 4         # recurrence steps per pass of leg2alm's innermost loop (even)
ALM2LEG_UNROLL = 8         # recurrence steps per pass of alm2leg's innermost loop (even)

#: recurrence steps between rescaling checks. Over 16 steps |y| grows at most by the product of
#: (|alpha_l| + 1), below 2**100 for every m at lmax <= 16384 (2**54 over 8 steps), so a value
#: checked at <= 2**HALF_BITS stays far from overflow until the next check, and one check
#: (a factor 2**-SCALE_BITS) brings it back. Deferring the check moves the point where a value
#: starts to count by < 16 steps, i.e. drops terms below 2**-200: far below float64 rounding.
CHECK_EVERY = 16

_start = legendre.start_value
_step = legendre.step
_check = legendre.rescale
# a device function of its own: inlined into the kernel by Numba's IR inliner it failed to
# compile on numba-cuda 0.30 (an assertion in the variable-lifetime pass)
_coefficients = cuda.jit(device=True)(legendre.recurrence_coefficients)


def _jit(max_registers=None, cache=True):
    """cuda.jit for a kernel, with the register limit ``max_registers`` where one is given
    (the simulator takes none). Numba's disk cache tells kernels apart by the source and the
    values they close over, not by their jit options: a cached kernel with a limit must close
    over it, or the kernels of two limits would share one cache entry."""
    if max_registers and not SIMULATOR:
        return cuda.jit(cache=cache, max_registers=max_registers)
    return cuda.jit(cache=cache)


@cuda.jit(device=True, inline=True)
def _tile_shift(npairs, covered):
    # How far the Legendre kernels' tiles of ring pairs (``covered`` pairs in all, the launch's
    # whole tiles) start before pair 0: the last tile then ends on the last pair, and the
    # ragged tile lies at the pole, where first[m] skips it for all but the smallest orders.
    # Tiles that start at pair 0 leave the ragged one at the equator, alive for every m: on
    # the 2058 Fejer ring pairs of lmax 4096, leg2alm's groups of 256 pairs were 9 for every
    # m, the 9th holding 10 pairs
    return covered - npairs


@cuda.jit(device=True)
def _zero_pair(leg, nmaps, rn, rs, col):
    """leg[:nmaps, rn, col] = 0 and, for a mirror ring (rs >= 0), leg[:nmaps, rs, col] = 0."""
    for i in range(nmaps):
        leg[i, rn, col] = 0j
        if rs >= 0:
            leg[i, rs, col] = 0j


@cuda.jit(cache=True)
def coefficient_tables_kernel(lmax, mstart, alpha, scale):
    """The tables of :func:`legendre.coefficient_tables` on the device, equal to the host's bit
    for bit (the same IEEE-rounded square roots and divisions of exact integers): one thread
    per m runs :func:`legendre.recurrence_coefficients`.

    Launch: 1-D grid covering mmax + 1 threads. mstart (mmax+1,) int64 alm offsets; alpha,
    scale (nalm,) float64, written.
    """
    m = cuda.grid(1)
    if m < mstart.shape[0]:
        _coefficients(m, lmax, alpha, scale, mstart[m])


@cuda.jit(cache=True)
def first_alive_kernel(lmax, mstart, alpha, mu, x, sin, first):
    """For each m, the smallest ring-pair index whose lambda_lm reaches a non-negligible value
    (scale k = 0) for some l <= lmax; pairs sorted from the pole, so pairs before it only
    carry values below 2**-HALF_BITS and the Legendre kernels skip blocks made of them.

    Launch: grid (ceil(npairs / 128), mmax + 1), block 128. alpha as in
    :func:`alm2leg_kernel`; first (mmax+1,) int64, preset to npairs, lowered with atomic min.
    """
    m = cuda.blockIdx.y
    p = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if p < x.shape[0]:
        cur, k = _start(mu[m], m, sin[p])
        prev = 0.0
        l = m
        xv = x[p]
        base = mstart[m]
        while cur != 0.0 and k < 0 and l < lmax:
            l += 1
            cur, prev, k = _step(alpha[base + l], xv, cur, prev, k)
        if cur != 0.0 and k == 0:
            cuda.atomic.min(first, m, p)


@functools.lru_cache(maxsize=None)
def alm2leg_kernel(nmaps: int, threads: int = ALM2LEG_THREADS, pairs: int = ALM2LEG_PAIRS,
                   max_registers: int | None = None):
    """Legendre step for ``nmaps`` maps at once (the recurrence is shared by the maps).

    ``max_registers``: the register limit given to the compiler (None: its default, which
    measured faster than a limit of 255 on sm_90: docs/notes/2026-11-27-legendre-kernels.rst).

    Launch: grid (ceil(npairs / (threads * pairs)), nm), block ``threads`` (even);
    blockIdx.y is the column of order m = mvals[column]; thread t of block b owns the ``pairs``
    consecutive ring pairs from (b * threads + t) * pairs - shift, where shift = grid x *
    threads * pairs - npairs puts the last tile's end on the last pair (:func:`_tile_shift`).
    Arguments:
        alm (nmaps, nalm) complex128 holding the orders mvals, coefficient (l, mvals[c]) at
            alm[:, astart[c] + l]; astart, mvals (nm,) int64 (0..mmax and the m-major
            offsets for a whole transform; a packed subset for :mod:`sphgpu.sht.stages`),
        lmax int, alpha, scale (ntab,) float64 from :func:`legendre.coefficient_tables`, the
            order m at tstart[m] + l; tstart, mu (mmax+1,),
        x, sin (npairs,) float64, north, south (npairs,) int64 (south -1: no mirror ring),
        first (mmax+1,) int64 from :func:`first_alive_kernel`,
        leg (nmaps, nrings, nm) complex128, written.
    The block stages alpha_l and s_l * a_lm of ``threads`` consecutive l (a chunk) in shared
    memory; each value a thread reads from there serves its ``pairs`` ring pairs and nmaps maps.
    Two chunk buffers alternate, so one barrier per chunk suffices (a buffer is refilled only
    after every thread has passed the barrier that follows its last use), and each thread loads
    the next chunk's values from global memory before the barrier and stores them after the
    chunk's steps: the load latency hides behind the arithmetic.

    Every step is the same straight-line code (see :func:`_check`): accumulation runs from
    l = m on, and the rescaling check runs once per CHECK_EVERY steps, and only in threads that
    still hold a pair below 2**-HALF_BITS (k < 0): the others would find nothing to do.
    """
    assert threads % 2 == 0, "alm2leg takes steps two at a time"
    K = nmaps
    TPB = threads
    RP = pairs
    G = math.gcd(TPB, CHECK_EVERY)     # whole groups per chunk (all of CHECK_EVERY on a GPU)
    SV = 2 * K * TPB                   # one buffer of s_l * a_lm: (map, re/im, l) flattened
    SA2, SV2 = 2 * TPB, 2 * SV         # two buffers each (compile-time shapes)
    u64 = numba.uint64                 # unsigned shared-memory indices: no negative-index wrap
    # this kernel does not close over its limit, so only the default limit is cached (_jit)
    jit = _jit(max_registers, cache=not max_registers)
    # steps per pass of the innermost loop: a whole group for one map (fewest loop and address
    # instructions), two for more maps, whose shared-memory loads need more registers
    U = min(G, ALM2LEG_UNROLL if K == 1 else 2)

    @jit
    def kernel(alm, astart, mvals, lmax, alpha, scale, tstart, mu, x, sin, north, south, first,
               leg):
        col = cuda.blockIdx.y
        m = mvals[col]
        t = cuda.threadIdx.x
        npairs = x.shape[0]
        shift = _tile_shift(npairs, cuda.gridDim.x * TPB * RP)
        p0 = (cuda.blockIdx.x * TPB + t) * RP - shift
        fm = first[m]
        if (cuda.blockIdx.x + 1) * RP * TPB - shift <= fm or fm >= npairs:
            # every pair of this block stays negligible for this m: write zeros, skip the work
            # (the same for the whole block: no thread of it reaches a barrier)
            for r in range(RP):
                p = p0 + r
                if 0 <= p < npairs:
                    _zero_pair(leg, K, north[p], south[p], col)
            return
        sa = cuda.shared.array(SA2, float64)     # alpha_l, two chunk buffers
        sv = cuda.shared.array(SV2, float64)     # s_l * a_lm, two chunk buffers
        acc = cuda.local.array((RP, K, 4), float64)   # even re, even im, odd re, odd im
        cur = cuda.local.array(RP, float64)
        prev = cuda.local.array(RP, float64)
        kk = cuda.local.array(RP, numba.int32)
        xv = cuda.local.array(RP, float64)
        nre = cuda.local.array(K, float64)            # the next chunk's s_l * a_lm of this thread
        nim = cuda.local.array(K, float64)
        active = False
        low = False        # some pair of this thread still below 2**-HALF_BITS (k < 0)
        live = False       # some pair of this thread already counts (k = 0)
        for r in range(RP):
            p = p0 + r
            # pairs past the end or before first[m] run on zeros (y stays 0, k = 0)
            cur[r] = 0.0
            prev[r] = 0.0
            kk[r] = 0
            xv[r] = 0.0
            if p < npairs and p >= fm:
                xv[r] = x[p]
                v, k = _start(mu[m], m, sin[p])
                # y_{m-2} = -lambda_mm, y_{m-1} = 0 and alpha_m = 0: the first step gives
                # y_m = lambda_mm (legendre.recurrence_coefficients)
                prev[r] = -v
                kk[r] = k
                active = True
                if k < 0:
                    low = True
                else:
                    live = True
            for i in range(K):
                for c in range(4):
                    acc[r, i, c] = 0.0
        base = tstart[m]
        abase = astart[col]
        # chunk 0 into buffer 0. Past lmax: alpha = 0 and a_lm = 0, so whole groups of steps
        # can run there; the recurrence just alternates signs of the values it has and adds
        # nothing
        l = m + t
        sa[t] = alpha[base + l] if l <= lmax else 0.0
        sc = scale[base + l] if l <= lmax else 0.0
        for i in range(K):
            v = alm[i, abase + l] if l <= lmax else 0j
            sv[(2 * i) * TPB + t] = v.real * sc
            sv[(2 * i + 1) * TPB + t] = v.imag * sc
        nchunks = (lmax - m) // TPB + 1
        for ci in range(nchunks):
            l0 = m + ci * TPB
            boff = (ci & 1) * TPB            # this chunk's buffer
            noff = TPB - boff                # the other one, for the next chunk
            # the next chunk's values, loaded now and stored after this chunk's steps
            l = l0 + TPB + t
            na = alpha[base + l] if l <= lmax else 0.0
            sc = scale[base + l] if l <= lmax else 0.0
            for i in range(K):
                v = alm[i, abase + l] if l <= lmax else 0j
                nre[i] = v.real
                nim[i] = v.imag
            cuda.syncthreads()
            n = min(TPB, lmax + 1 - l0)
            if active:
                # l0 - m is a multiple of the (even) chunk length, so even j are the even-(l-m)
                # terms: taking them two at a time keeps every accumulator index constant.
                # Groups are whole (a constant trip count the compiler can unroll).
                for g0 in range(0, n, G):
                    if live:
                        for jj in range(G // U):
                            j = u64(boff + g0 + U * jj)
                            jv = u64(2 * boff * K + g0 + U * jj)
                            for q in range(U):
                                a = sa[j + u64(q)]
                                h = 2 * (q % 2)      # even or odd l - m: constant once unrolled
                                for r in range(RP):
                                    nxt = (a * xv[r]) * cur[r] - prev[r]
                                    prev[r] = cur[r]
                                    cur[r] = nxt
                                    for i in range(K):
                                        acc[r, i, h] += nxt * sv[jv + u64(2 * i * TPB + q)]
                                        acc[r, i, h + 1] += nxt * sv[jv + u64((2 * i + 1) * TPB + q)]
                    else:
                        # every pair of this thread is below 2**-HALF_BITS: its sums would be
                        # zeroed at the check that finds k = 0, so only the recurrence runs
                        # (2 FP64 instructions a step, not 2 + 2K, in warps made only of such
                        # threads; about 1 % of the kernel's time at nside 2048; docs/notes)
                        j = u64(boff + g0)
                        for q in range(G):
                            a = sa[j + u64(q)]
                            for r in range(RP):
                                nxt = (a * xv[r]) * cur[r] - prev[r]
                                prev[r] = cur[r]
                                cur[r] = nxt
                    if low:
                        low = False
                        for r in range(RP):
                            if kk[r] < 0:
                                c0, c1, k = _check(prev[r], cur[r], kk[r])
                                cur[r] = c1
                                prev[r] = c0
                                kk[r] = k
                                if k == 0:
                                    # the sums so far hold scaled values below 2**-HALF_BITS
                                    # times 2**(SCALE_BITS * -k): start them over
                                    for i in range(K):
                                        for c in range(4):
                                            acc[r, i, c] = 0.0
                                    live = True
                                else:
                                    low = True
            # the next chunk's buffer was last read before this chunk's barrier: free
            sa[noff + t] = na
            for i in range(K):
                sv[2 * noff * K + (2 * i) * TPB + t] = nre[i] * sc
                sv[2 * noff * K + (2 * i + 1) * TPB + t] = nim[i] * sc
        for r in range(RP):
            p = p0 + r
            if 0 <= p < npairs:
                rn = north[p]
                rs = south[p]
                if kk[r] < 0:          # never reached a non-negligible value
                    for i in range(K):
                        for c in range(4):
                            acc[r, i, c] = 0.0
                for i in range(K):
                    leg[i, rn, col] = complex(acc[r, i, 0] + acc[r, i, 2],
                                              acc[r, i, 1] + acc[r, i, 3])
                    if rs >= 0:
                        leg[i, rs, col] = complex(acc[r, i, 0] - acc[r, i, 2],
                                                acc[r, i, 1] - acc[r, i, 3])

    return kernel


#: l values a block stages per chunk in :func:`alm2leg_mma_kernel` (a multiple of CHECK_EVERY)
MMA_CHUNK = 32


@functools.lru_cache(maxsize=None)
def _steps_to_shared(steps: int, stride: int, check: bool):
    """A device function ``(al, xv, prev, cur, kk, values, at) -> (prev, cur, kk)`` for the
    tensor-core kernels: ``steps`` steps of one ring pair's recurrence with alpha_l from the
    local array ``al``, value j stored at ``values[at + j * stride]`` (shared memory), or 0
    while the pair's values are still below 2**-HALF_BITS (``kk < 0``; the steps run either way
    so that the recurrence stays in step); with ``check``, such a pair is then rescaled and
    re-checked (:func:`_check`). Inlined: the same code as written in place."""
    u64 = numba.uint64

    @cuda.jit(device=True, inline=True)
    def steps_to_shared(al, xv, prev, cur, kk, values, at):
        if kk == 0:
            for j in range(steps):
                nxt = (al[j] * xv) * cur - prev
                prev = cur
                cur = nxt
                values[at + u64(j * stride)] = nxt
        else:
            for j in range(steps):
                nxt = (al[j] * xv) * cur - prev
                prev = cur
                cur = nxt
                values[at + u64(j * stride)] = 0.0
            if check:
                prev, cur, kk = _check(prev, cur, kk)
        return prev, cur, kk

    return steps_to_shared


@functools.lru_cache(maxsize=None)
def alm2leg_mma_kernel(nmaps: int, warps: int = 4):
    """Legendre step for ``nmaps`` maps (a multiple of 4) on the FP64 tensor cores.

    For one m and a tile of 16 ring pairs, the sums over l of the even and odd terms are matrix
    products: E = Lambda_even B_even, with Lambda (16 pairs x 4 l) the Legendre values and B
    (4 l x 2 nmaps) the real and imaginary parts of s_l * a_lm of every map. Each lane of a warp
    runs the recurrence of one ring pair, 8 l at a time, and puts the values in shared memory;
    the warp then reads them back as A fragments of its two tiles (:mod:`sphgpu._dmma`) and
    feeds them to the tensor cores: one m16n8k4 product per tile, parity and group of 4 maps.
    The values are made once per launch and serve every map: 2 FP64 instructions a ring pair
    and l, against 2 + 2 nmaps in :func:`alm2leg_kernel` (docs/notes/2026-11-27-legendre-kernels.rst).

    Launch: grid (ceil(npairs / (32 * warps)), nm), block 32 * warps; lane L of warp w of
    block b owns ring pair 32 * (b * warps + w) + L - shift (:func:`_tile_shift`). Arguments as
    :func:`alm2leg_kernel`. The block stages alpha_l and s_l * a_lm of MMA_CHUNK consecutive l
    in shared memory, in two alternating buffers with one barrier per chunk, the next chunk
    loaded from global memory before the barrier and stored after the chunk's steps.
    """
    assert nmaps % 4 == 0, "the tensor-core Legendre step takes maps in groups of 4"
    mma = _dmma.device_function()
    sync_warp = _dmma.warp_barrier
    W, TL = warps, MMA_CHUNK
    NT = nmaps // 4                    # groups of 4 maps: 8 columns (re, im) of B each
    # row strides (float64) of staged s_l * a_lm and of the values: = 4 (mod 8), so that the
    # lanes of a fragment (4 rows apart in l, 8 consecutive columns) hit each bank pair twice
    S = 2 * nmaps + 4
    SL = 36
    TPB = 32 * W
    SV = TL * S
    LV = 2 * 8 * SL                    # a warp's values: two buffers of 8 l x 32 pairs
    LOADS = -(-TL * nmaps // TPB)      # a_lm values each thread stages per chunk
    SCR = _dmma.SCRATCH * W
    SA2, SV2, LVW = 2 * TL, 2 * SV, LV * W     # compile-time shapes
    assert TL <= TPB and TL % CHECK_EVERY == 0
    steps = _steps_to_shared(8, SL, False)     # checked every other group, below
    u64 = numba.uint64

    @cuda.jit
    def kernel(alm, astart, mvals, lmax, alpha, scale, tstart, mu, x, sin, north, south, first,
               leg):
        col = cuda.blockIdx.y
        m = mvals[col]
        t = cuda.threadIdx.x
        lane = t % 32
        g = lane // 4          # fragment row (ring pairs g, g + 8 of a tile) and column
        c = lane % 4
        npairs = x.shape[0]
        pb = cuda.blockIdx.x * TPB - _tile_shift(npairs, cuda.gridDim.x * TPB)
        fm = first[m]
        if pb + TPB <= fm or fm >= npairs:
            # every pair of this block stays negligible for this m (the same for the block)
            p = pb + t
            if 0 <= p < npairs:
                _zero_pair(leg, nmaps, north[p], south[p], col)
            return
        sa = cuda.shared.array(SA2, float64)           # alpha_l, two chunk buffers
        sv = cuda.shared.array(SV2, float64)           # s_l * a_lm: [buffer][l][map re, im]
        sl = cuda.shared.array(LVW, float64)           # values: [warp][buffer][l][pair]
        scratch = cuda.shared.array(SCR, float64)
        acc = cuda.local.array((2, NT, 2, 4), float64)   # [tile][maps][even, odd][d0..d3]
        al = cuda.local.array(8, float64)
        nv = cuda.local.array(LOADS, numba.complex128)  # the next chunk's a_lm of this thread
        ns = cuda.local.array(LOADS, float64)
        pw = pb + 32 * (t // 32)
        p = pw + lane
        cur = 0.0
        prev = 0.0
        kk = 0
        xv = 0.0
        if p < npairs and p >= fm:
            xv = x[p]
            v, kk = _start(mu[m], m, sin[p])
            prev = -v                  # one uniform step gives y_m = lambda_mm
        for mt in range(2):
            for nt in range(NT):
                for h in range(2):
                    for i in range(4):
                        acc[mt, nt, h, i] = 0.0
        base = tstart[m]
        abase = astart[col]
        wl = u64((t // 32) * LV)
        # chunk 0 into buffer 0; past lmax alpha = 0 and a_lm = 0: the steps add nothing
        if t < TL:
            l = m + t
            sa[t] = alpha[base + l] if l <= lmax else 0.0
        for j in range(LOADS):
            e = t + j * TPB
            if e < TL * nmaps:
                q = e % TL
                l = m + q
                v = alm[e // TL, abase + l] * scale[base + l] if l <= lmax else 0j
                sv[q * S + 2 * (e // TL)] = v.real
                sv[q * S + 2 * (e // TL) + 1] = v.imag
        nchunks = (lmax - m) // TL + 1
        for ci in range(nchunks):
            l0 = m + ci * TL
            boff = (ci & 1) * TL
            noff = TL - boff
            ln = l0 + TL + t
            na = 0.0
            if t < TL and ln <= lmax:
                na = alpha[base + ln]
            for j in range(LOADS):
                e = t + j * TPB
                l = l0 + TL + e % TL
                nv[j] = 0j
                ns[j] = 0.0
                if e < TL * nmaps and l <= lmax:
                    nv[j] = alm[e // TL, abase + l]
                    ns[j] = scale[base + l]
            cuda.syncthreads()
            for gr in range(TL // 8):
                # 8 steps of this lane's recurrence into the warp's value buffer gr % 2; values
                # still below 2**-HALF_BITS (k < 0) count for nothing
                lb = wl + u64((gr & 1) * 8 * SL + lane)
                # alpha_l first, so that the steps wait only on each other: loaded inside the
                # loop, each load came after the previous step's store and held up the step
                for j in range(8):
                    al[j] = sa[u64(boff + 8 * gr + j)]
                prev, cur, kk = steps(al, xv, prev, cur, kk, sl, lb)
                # the buffer written two groups ago was read before this barrier's twin
                sync_warp()
                for h in range(2):
                    ja = wl + u64((gr & 1) * 8 * SL + (2 * c + h) * SL + g)
                    a0 = sl[ja]
                    a1 = sl[ja + u64(8)]
                    a2 = sl[ja + u64(16)]
                    a3 = sl[ja + u64(24)]
                    jb = u64((boff + 8 * gr + 2 * c + h) * S + g)
                    for nt in range(NT):
                        b = sv[jb + u64(8 * nt)]
                        d = mma(a0, a1, b, acc[0, nt, h, 0], acc[0, nt, h, 1], acc[0, nt, h, 2],
                                acc[0, nt, h, 3], scratch)
                        for i in range(4):
                            acc[0, nt, h, i] = d[i]
                        d = mma(a2, a3, b, acc[1, nt, h, 0], acc[1, nt, h, 1], acc[1, nt, h, 2],
                                acc[1, nt, h, 3], scratch)
                        for i in range(4):
                            acc[1, nt, h, i] = d[i]
                if (gr & 1) == 1 and kk < 0:
                    prev, cur, kk = _check(prev, cur, kk)
            # the next chunk's buffer was last read before this chunk's barrier: free
            if t < TL:
                sa[noff + t] = na
            for j in range(LOADS):
                e = t + j * TPB
                if e < TL * nmaps:
                    v = nv[j] * ns[j]
                    q = u64((noff + e % TL) * S + 2 * (e // TL))
                    sv[q] = v.real
                    sv[q + u64(1)] = v.imag
        for q in range(4):
            p = pw + 8 * q + g         # tile q // 2, fragment row g + 8 (q % 2)
            if 0 <= p < npairs:
                rn = north[p]
                rs = south[p]
                mt = q // 2
                h2 = 2 * (q % 2)       # D elements 0, 1 for row g, 2, 3 for row g + 8
                for nt in range(NT):
                    i = 4 * nt + c      # this lane's D columns 2c, 2c + 1: map 4 nt + c
                    e0 = acc[mt, nt, 0, h2]
                    e1 = acc[mt, nt, 0, h2 + 1]
                    o0 = acc[mt, nt, 1, h2]
                    o1 = acc[mt, nt, 1, h2 + 1]
                    leg[i, rn, col] = complex(e0 + o0, e1 + o1)
                    if rs >= 0:
                        leg[i, rs, col] = complex(e0 - o0, e1 - o1)

    return kernel

def _leg2alm_chunk(nmaps: int, threads: int) -> int:
    """l values per reduction step of :func:`leg2alm_kernel`: the largest of 16, 8, 4, 2 whose
    two reduction buffers fit in the 48 KiB of static shared memory (<= CHECK_EVERY, even)."""
    for ch in (16, 8, 4, 2):
        if ch <= CHECK_EVERY and 8 * (2 * ch * 2 * nmaps * (threads + 1) + 6 * ch) <= 48 * 1024:
            return ch
    raise ValueError(f"leg2alm: {threads} threads and {nmaps} maps exceed the shared memory")


@functools.lru_cache(maxsize=None)
def leg2alm_kernel(nmaps: int, threads: int = LEG2ALM_THREADS, pairs: int = LEG2ALM_PAIRS,
                   chunk: int | None = None, max_registers: int | None = None, split: int = 1):
    """Adjoint Legendre step for ``nmaps <= LEG2ALM_MAX_MAPS`` maps.

    ``chunk``: the l values per reduction step (even, at most CHECK_EVERY, the sums' two buffers
    within 48 KiB); default the largest that fits (:func:`_leg2alm_chunk`). A smaller chunk
    takes less shared memory a block, so more blocks fit on a multiprocessor.
    ``max_registers``: the compiler's register limit (None: its own choice; ignored by the
    simulator). One map at 168 registers (the compiler takes 201) fits 12 warps on a
    multiprocessor instead of 8 without spilling (docs/notes/2026-11-27-legendre-kernels.rst).
    ``split``: blocks per m (the launch grid's x size); block x takes every ``split``-th group
    of ring pairs from x on, and the blocks of one m add into the same a_lm. One block per m
    leaves the last multiprocessors running the few blocks of the smallest m (the most work)
    after the others are done; split blocks shorten that tail.

    Launch: grid (split, nm), block ``threads``; blockIdx.y is the column of order
    m = mvals[column] and the blocks of that column own every a_lm of that m, walking over the
    ring pairs in groups of ``threads * pairs`` (thread t owns ``pairs`` consecutive ones of
    each group), the first starting ``shift`` pairs before pair 0 (:func:`_tile_shift`).
    Arguments:
        leg (nmaps, nrings, nm) complex128 (weighted ring Fourier coefficients),
        astart, mvals, lmax, alpha, scale, tstart, mu, x, sin, north, south, first as in
        :func:`alm2leg_kernel`,
        alm (nmaps, 2*nalm) float64: the real view of complex128 a_lm, zeroed, added into.
    Each thread sums its pairs' terms in registers; every CH values of l (a chunk,
    :func:`_leg2alm_chunk`) the threads write those sums to shared memory and the block adds
    them up and into a_lm (with atomic adds, only so that the warp need not wait for the old
    value, and so that the blocks of one m may add into the same a_lm). One barrier per chunk:
    the sums alternate between two buffers and alpha_l, s_l
    rotate through three (a buffer is refilled only after every thread has passed the barrier
    that follows its last use), and a chunk's alpha_l, s_l are loaded from global memory two
    chunks ahead and stored into their slot after the chunk before theirs. (Loaded one chunk
    ahead, just before the steps, the first step of the chunk waited for those loads:
    docs/notes/2026-11-27-legendre-kernels.rst.)
    A pair's ring values enter the sums only once its lambda_lm is non-negligible (k = 0):
    until then they are held as zeros and loaded at the check that finds k = 0; the check runs
    once per chunk, only in threads that still hold such a pair.
    """
    K = nmaps
    TPB = threads
    CH = chunk or _leg2alm_chunk(K, TPB)    # also the distance between rescaling checks
    if CH % 2 or CH > CHECK_EVERY or CH > _leg2alm_chunk(K, TPB):
        raise ValueError(f"leg2alm: chunk={CH} must be even, <= {CHECK_EVERY} and fit in "
                         f"shared memory (at most {_leg2alm_chunk(K, TPB)} here)")
    RP = pairs
    NC = 2 * K
    # rows of the sums padded to TPB + 1 so the reduction's threads, each summing one row, hit
    # different shared-memory banks; flat arrays with unsigned indices (no negative-index wrap)
    ROW = TPB + 1
    BUF = CH * NC * ROW            # one buffer of sums, (j, component, thread)
    BUF2, S3 = 2 * BUF, 3 * CH     # compile-time shapes
    # threads per row of the reduction, so that every thread of the block takes part
    SPLIT = max(1, TPB // (CH * NC))
    while TPB % SPLIT:
        SPLIT -= 1
    PART = TPB // SPLIT
    NPT = (CH + TPB - 1) // TPB    # chunk values each thread loads (blocks narrower than a chunk)
    # steps per pass of the innermost loop: even, dividing the chunk
    U = max(u for u in range(2, min(CH, LEG2ALM_UNROLL) + 1, 2) if CH % u == 0)
    u64 = numba.uint64
    # the kernel reads REGS, so each register limit is cached as a kernel of its own (_jit)
    REGS = 0 if SIMULATOR else (max_registers or 0)
    jit = _jit(REGS)
    if split < 1:
        raise ValueError(f"leg2alm: split={split} must be at least 1")

    @jit
    def kernel(leg, astart, mvals, lmax, alpha, scale, tstart, mu, x, sin, north, south, first,
               alm):
        if REGS < 0:          # never (see REGS)
            return
        col = cuda.blockIdx.y
        m = mvals[col]
        t = cuda.threadIdx.x
        npairs = x.shape[0]
        sa = cuda.shared.array(S3, float64)       # alpha_l of three chunks
        ss = cuda.shared.array(S3, float64)       # s_l of three chunks
        buf = cuda.shared.array(BUF2, float64)    # the sums of two chunks
        ln = cuda.local.array((RP, K, 4), float64)    # (n+s) re, im, (n-s) re, im
        cur = cuda.local.array(RP, float64)
        prev = cuda.local.array(RP, float64)
        kk = cuda.local.array(RP, numba.int32)
        xv = cuda.local.array(RP, float64)
        sums = cuda.local.array(NC, float64)
        na = cuda.local.array(NPT, float64)      # the next chunk's alpha_l, s_l of this thread
        ns = cuda.local.array(NPT, float64)
        base = tstart[m]
        abase = astart[col]
        fm = first[m]
        nch = (lmax - m) // CH + 1
        # chunk 0 (l = m ...) into slot 0. Past lmax alpha = 0: the steps there are run (whole
        # chunks unroll) and their sums never read
        for u in range(t, CH, TPB):               # blocks may be narrower than a chunk
            sa[u] = alpha[base + m + u] if m + u <= lmax else 0.0
            ss[u] = scale[base + m + u] if m + u <= lmax else 0.0
        # na, ns hold the values of the chunk after the current one (chunks run 0 .. nch - 1
        # for every group), loaded from global memory a whole chunk before they are stored
        _chunk_values(alpha, scale, base, m + CH if nch > 1 else m, lmax, t, TPB, CH, na, ns)
        cuda.syncthreads()
        it = 0                                    # chunks done by the block, over all groups
        # groups before first[m] hold only pairs that are negligible for this m
        ngroups = (npairs + RP * TPB - 1) // (RP * TPB) if fm < npairs else 0
        shift = _tile_shift(npairs, ngroups * RP * TPB)
        for g in range((fm + shift) // (RP * TPB) + cuda.blockIdx.x, ngroups, split):
            low = False          # some pair of this thread still below 2**-HALF_BITS
            live = False         # some pair of this thread already counts (k = 0)
            for r in range(RP):
                p = (g * TPB + t) * RP + r - shift
                cur[r] = 0.0
                prev[r] = 0.0
                kk[r] = 0
                xv[r] = 0.0
                for i in range(K):
                    for c in range(4):
                        ln[r, i, c] = 0.0
                if p < npairs and p >= fm:
                    xv[r] = x[p]
                    v, k = _start(mu[m], m, sin[p])
                    prev[r] = -v         # the first step gives y_m = lambda_mm (alm2leg_kernel)
                    kk[r] = k
                    if k == 0:
                        _load_rings(leg, north[p], south[p], col, ln, r)
                        live = True
                    else:
                        low = True
            for ci in range(nch):
                l0 = m + ci * CH
                so = u64((it % 3) * CH)               # this chunk's alpha, s slot
                no = u64(((it + 1) % 3) * CH)         # the next chunk's
                bo = u64((it & 1) * BUF)              # this chunk's sums
                # even j <-> even l - m (CH is even): two steps per pass keep indices constant
                wrote = live     # this thread's sums of this chunk may be nonzero
                if live:
                    an = sa[so]
                    for j0 in range(0, CH, U):
                        ob = bo + u64(j0 * NC * ROW + t)
                        for q in range(U):
                            a = an
                            # the next step's alpha_l, loaded before this step's stores: a
                            # shared-memory load stays behind an earlier store, and each step's
                            # recurrence had waited on its own load
                            jn = j0 + q + 1
                            an = sa[so + u64(jn if jn < CH else CH - 1)]
                            h = 2 * (q % 2)      # even or odd l - m: constant once unrolled
                            for c in range(NC):
                                sums[c] = 0.0
                            for r in range(RP):
                                nxt = (a * xv[r]) * cur[r] - prev[r]
                                prev[r] = cur[r]
                                cur[r] = nxt
                                for i in range(K):
                                    sums[2 * i] += nxt * ln[r, i, h]
                                    sums[2 * i + 1] += nxt * ln[r, i, h + 1]
                            for c in range(NC):
                                buf[ob + u64((q * NC + c) * ROW)] = sums[c]
                else:
                    # every pair below 2**-HALF_BITS holds zero ring values (pairs outside the
                    # range hold zeros throughout): its sums are zero, so only the recurrence
                    # runs (2 FP64 instructions a step, not 2 + 2K)
                    for j in range(CH):
                        a = sa[so + u64(j)]
                        for r in range(RP):
                            nxt = (a * xv[r]) * cur[r] - prev[r]
                            prev[r] = cur[r]
                            cur[r] = nxt
                    for j in range(CH):
                        for c in range(NC):
                            buf[bo + u64((j * NC + c) * ROW + t)] = 0.0
                if low:
                    low = False
                    for r in range(RP):
                        if kk[r] < 0:
                            c0, c1, k = _check(prev[r], cur[r], kk[r])
                            cur[r] = c1
                            prev[r] = c0
                            kk[r] = k
                            if k == 0:
                                p = (g * TPB + t) * RP + r - shift
                                _load_rings(leg, north[p], south[p], col, ln, r)
                                live = True
                            else:
                                low = True
                # the next chunk's values into their slot (last read before the previous
                # chunk's barrier), and the chunk after it into na, ns
                c2 = ci + 2                           # that chunk, (ci + 2) mod nch
                if c2 >= nch:
                    c2 -= nch
                if c2 >= nch:
                    c2 = 0
                for e in range(NPT):
                    u = t + e * TPB
                    if u < CH:
                        sa[no + u64(u)] = na[e]
                        ss[no + u64(u)] = ns[e]
                _chunk_values(alpha, scale, base, m + c2 * CH, lmax, t, TPB, CH, na, ns)
                # a chunk in which no thread held a counting pair adds only zeros: skip it
                anywrote = cuda.syncthreads_or(1 if wrote else 0)
                # reduce over the block's threads: SPLIT threads per (j, component), each
                # summing PART rows with four independent partial sums (a serial chain of
                # dependent adds would stall the block at the next barrier). The buffer is
                # written again two chunks on, after the next barrier.
                n = min(CH, lmax + 1 - l0) if anywrote else 0
                for w in range(t, n * NC * SPLIT, TPB):
                    item = w // SPLIT
                    q0 = u64(item * ROW + (w - item * SPLIT) * PART) + bo
                    j = item // NC
                    c = item - j * NC
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    for q in range(0, PART - 3, 4):
                        qq = q0 + u64(q)
                        s0 += buf[qq]
                        s1 += buf[qq + u64(1)]
                        s2 += buf[qq + u64(2)]
                        s3 += buf[qq + u64(3)]
                    for q in range(PART - PART % 4, PART):
                        s0 += buf[q0 + u64(q)]
                    # an atomic add whose result is unused does not wait for memory, where
                    # a += would stall this warp, and the block at the next barrier, on the load
                    cuda.atomic.add(alm, (c // 2, 2 * (abase + l0 + j) + (c & 1)),
                                    ((s0 + s1) + (s2 + s3)) * ss[so + u64(j)])
                it += 1

    return kernel


#: maps of one tensor-core leg2alm launch (:func:`leg2alm_mma_kernel`)
LEG2ALM_MMA_MAPS = 8


@functools.lru_cache(maxsize=None)
def leg2alm_mma_kernel(warps: int = 4, max_registers: int | None = None):
    """Adjoint Legendre step for LEG2ALM_MMA_MAPS = 8 maps on the FP64 tensor cores.

    For one m, 16 l of one parity and 4 ring pairs, the sums over ring pairs are a matrix
    product: D = F^T Lambda, with F^T (16 x 4) the real and imaginary parts of the 8 maps' ring
    values (north + south for even l - m, north - south for odd) and Lambda (4 pairs x 8 l) the
    Legendre values. A warp owns 32 ring pairs at a time: each lane runs one pair's recurrence,
    16 l at a time, into shared memory, and the warp sums its pairs with 8 m16n8k4 products per
    parity (:mod:`sphgpu._dmma`); the F fragments stay in registers while the warp walks over l.

    Launch: grid (1, nm), block 32 * warps; the block owns every a_lm of order m = mvals[column]
    and walks over the ring pairs in groups of 32 * warps (lane L of warp w takes pair
    32 * w + L of a group), the first starting before pair 0 (:func:`_tile_shift`). Arguments
    as :func:`leg2alm_kernel` with nmaps = 8. Every 16 l each warp writes its sums to its slice
    of a shared buffer, and after one barrier the block adds the slices up and, times s_l, into
    a_lm (global atomics); two buffers alternate. (Warps
    adding into one slice with shared-memory atomics were about twice as slow:
    docs/notes/2026-11-27-legendre-kernels.rst.) A slice's rows (one l each)
    are NC + 1 doubles apart, so that the 4 lanes that write one D element each of 4 l
    (fragment columns c) hit different banks: with NC apart they hit one bank, and the stores
    took half of the kernel's shared-memory wavefronts.
    ``max_registers``: the compiler's register limit (None: its own choice).
    """
    K = LEG2ALM_MMA_MAPS
    mma = _dmma.device_function()
    sync_warp = _dmma.warp_barrier
    W = warps
    TPB = 32 * W
    TL = CHECK_EVERY                   # l per step; the rescaling check runs once a step
    NC = 2 * K                         # components (map, re/im): the 16 rows of F^T
    SL = 34                            # = 2 (mod 8): the lanes of a B fragment (l rows 2 apart,
    #                                    4 consecutive pairs) hit each bank pair twice
    LV = TL * SL
    RS = NC + 1                        # row stride of a slice (docstring)
    RB = W * TL * RS                   # one buffer of the warps' sums
    LVW, RED2 = LV * W, 2 * RB         # compile-time shapes
    SCR = _dmma.SCRATCH * W
    steps = _steps_to_shared(TL, SL, True)
    RED_ITEMS = -(-TL * NC // TPB)     # sums a thread adds up after each step's barrier
    u64 = numba.uint64

    # not cached: the kernel links the CUDA C of _dmma, which Numba's disk cache cannot hold
    jit = _jit(max_registers, cache=False)

    @jit
    def kernel(leg, astart, mvals, lmax, alpha, scale, tstart, mu, x, sin, north, south, first,
               alm):
        col = cuda.blockIdx.y
        m = mvals[col]
        t = cuda.threadIdx.x
        lane = t % 32
        g = lane // 4          # fragment row (components g, g + 8) and column (pair of 4)
        c = lane % 4
        npairs = x.shape[0]
        sl = cuda.shared.array(LVW, float64)           # values: [warp][l][pair]
        red = cuda.shared.array(RED2, float64)   # sums: [buffer][warp][l][component]
        scratch = cuda.shared.array(SCR, float64)
        fa = cuda.local.array((8, 2, 2), float64)      # F^T fragments: [pair quad][parity][a0, a1]
        acc = cuda.local.array((2, 4), float64)        # D fragments: [parity][d0..d3]
        al = cuda.local.array(TL, float64)
        sc = cuda.local.array(RED_ITEMS, float64)       # s_l of this thread's reduced sums
        base = tstart[m]
        abase = astart[col]
        fm = first[m]
        wl = u64((t // 32) * LV)
        nsteps = (lmax - m) // TL + 1
        ngroups = (npairs + TPB - 1) // TPB if fm < npairs else 0
        i0 = g // 2            # the maps of this lane's A rows g and g + 8, and re or im
        i1 = 4 + g // 2
        im = g % 2
        it = 0
        shift = _tile_shift(npairs, ngroups * TPB)
        # groups before first[m] hold only pairs that are negligible for this m
        for grp in range((fm + shift) // TPB, ngroups):
            p = grp * TPB + t - shift
            cur = 0.0
            prev = 0.0
            kk = 0
            xv = 0.0
            if p < npairs and p >= fm:
                xv = x[p]
                v, kk = _start(mu[m], m, sin[p])
                prev = -v              # one uniform step gives y_m = lambda_mm
            for ks in range(8):
                q = grp * TPB + (t - lane) + 4 * ks + c - shift
                for h in range(2):
                    fa[ks, h, 0] = 0.0
                    fa[ks, h, 1] = 0.0
                if q < npairs and q >= fm:
                    rn = north[q]
                    rs = south[q]
                    n0 = leg[i0, rn, col]
                    n1 = leg[i1, rn, col]
                    s0 = leg[i0, rs, col] if rs >= 0 else 0j
                    s1 = leg[i1, rs, col] if rs >= 0 else 0j
                    if im:
                        fa[ks, 0, 0] = n0.imag + s0.imag
                        fa[ks, 1, 0] = n0.imag - s0.imag
                        fa[ks, 0, 1] = n1.imag + s1.imag
                        fa[ks, 1, 1] = n1.imag - s1.imag
                    else:
                        fa[ks, 0, 0] = n0.real + s0.real
                        fa[ks, 1, 0] = n0.real - s0.real
                        fa[ks, 0, 1] = n1.real + s1.real
                        fa[ks, 1, 1] = n1.real - s1.real
            # alpha_l of the group's first step; each step loads the next one's before its
            # products, so that the recurrence does not wait on global memory
            for j in range(TL):
                al[j] = alpha[base + m + j] if m + j <= lmax else 0.0
            for st in range(nsteps):
                l0 = m + st * TL
                # s_l of the sums this thread reduces after the barrier, loaded now for the
                # same reason
                for q in range(RED_ITEMS):
                    l = l0 + (t + q * TPB) // NC
                    sc[q] = scale[base + l] if l <= lmax and t + q * TPB < TL * NC else 0.0
                # the warp's reads of the previous step's values are done
                sync_warp()
                prev, cur, kk = steps(al, xv, prev, cur, kk, sl, wl + u64(lane))
                sync_warp()
                ln = l0 + TL
                for j in range(TL):
                    al[j] = alpha[base + ln + j] if ln + j <= lmax else 0.0
                for h in range(2):
                    for i in range(4):
                        acc[h, i] = 0.0
                for ks in range(8):
                    for h in range(2):
                        # B[pair 4 ks + c][l 2 g + h of the step]
                        b = sl[wl + u64((2 * g + h) * SL + 4 * ks + c)]
                        d = mma(fa[ks, h, 0], fa[ks, h, 1], b, acc[h, 0], acc[h, 1], acc[h, 2],
                                acc[h, 3], scratch)
                        for i in range(4):
                            acc[h, i] = d[i]
                # D[component g + 8 (i // 2)][l index 2 c + i % 2 of parity h]: l0 + 2 n + h
                rb = u64((it & 1) * RB)
                rw = rb + u64((t // 32) * TL * RS)
                for h in range(2):
                    for i in range(4):
                        j = 2 * (2 * c + (i & 1)) + h
                        red[rw + u64(j * RS + g + 8 * (i >> 1))] = acc[h, i]
                # the buffer of the step before was read before this barrier; this one is
                # written again two steps on, after the next barrier
                cuda.syncthreads()
                for q in range(RED_ITEMS):
                    e = t + q * TPB
                    j = e // NC
                    l = l0 + j
                    if l <= lmax and e < TL * NC:
                        comp = e - j * NC
                        v = 0.0
                        for w in range(W):
                            v += red[rb + u64(w * TL * RS + j * RS + comp)]
                        cuda.atomic.add(alm, (comp // 2, 2 * (abase + l) + (comp & 1)),
                                        v * sc[q])
                it += 1

    return kernel


@cuda.jit(device=True, inline=True)
def _chunk_values(alpha, scale, base, l, lmax, t, tpb, ch, na, ns):
    # na, ns = alpha_l, s_l of the chunk from l (this thread's values: l + t, l + t + tpb, ...;
    # 0 past lmax or past the chunk's ch values)
    for e in range(na.shape[0]):
        u = t + e * tpb
        na[e] = 0.0
        ns[e] = 0.0
        if u < ch and l + u <= lmax:
            na[e] = alpha[base + l + u]
            ns[e] = scale[base + l + u]


@cuda.jit(device=True)
def _load_rings(leg, rn, rs, col, ln, r):
    # ln[r, i] = (north + south, north - south) of ring pair r's Fourier coefficients, column col
    for i in range(ln.shape[1]):
        vn = leg[i, rn, col]
        vs = leg[i, rs, col] if rs >= 0 else 0j
        ln[r, i, 0] = vn.real + vs.real
        ln[r, i, 1] = vn.imag + vs.imag
        ln[r, i, 2] = vn.real - vs.real
        ln[r, i, 3] = vn.imag - vs.imag


# ----------------------------------------------------------------------------- ring FFT passes
#: threads a block of the ring passes, along a row (the pixels or modes of a ring). The passes'
#: grids are (column blocks, rows of a class, maps): a warp's lanes take consecutive columns of
#: one row, and the row and map come from the block index, with no integer division by rows.
RING_THREADS = 128


@cuda.jit(device=True, inline=True)
def _ring_thread():
    # (column, row of the class, map) of this thread in a ring pass's grid
    return (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, cuda.blockIdx.y,
            cuda.blockIdx.z)


if SIMULATOR:        # the simulator has no libdevice
    @cuda.jit(device=True, inline=True)
    def _cis(ang):
        return complex(math.cos(ang), math.sin(ang))
else:
    @cuda.jit(device=True, inline=True)
    def _cis(ang):
        # libdevice's sincos: one argument reduction for both (cos and sin apart make two)
        s, c = libdevice.sincos(ang)
        return complex(c, s)


@cuda.jit(device=True, inline=True)
def _chirp(t, n):
    # z_t = exp(i pi t^2 / n); t^2 mod 2n in integers keeps the angle small and exact (32-bit
    # unsigned where t^2 fits: a 64-bit remainder is a long software sequence on the GPU)
    if n < 46341:
        r = float64(numba.uint32(t) * numba.uint32(t) % numba.uint32(2 * n))
    else:
        r = float64((t * t) % (2 * n))
    return _cis(math.pi * r / float64(n))


@cuda.jit(device=True, inline=True)
def _umod(a, n):
    # a mod n for 0 <= a, n < 2**32 in unsigned 32-bit arithmetic (no signed 64-bit remainder)
    return numba.int64(numba.uint32(a) % numba.uint32(n))


@cuda.jit(device=True, inline=True)
def _row_scale(scale, i, ring):
    # the sin^-s factor of map i's row (scale rows repeat over the maps), 1 for a scalar
    rows = scale.shape[0]
    return scale[_umod(i, rows) if rows > 1 else 0, ring]


#: terms of a fold between exact phase factors: in between, zeta^c steps by one multiply
FOLD_ANCHOR = 16


@cuda.jit(device=True, inline=True)
def _zeta_sum(leg, i, ring, m0, n, p0, z, conj, c0, stride):
    # sum over c = c0, c0 + stride, ... with m = m0 + c n <= mmax of D_m zeta^c, D = Delta or
    # its conjugate, zeta = e^{i n p0} and z = zeta^stride. A short ring sums thousands of m
    # (2 (mmax+1) / n); the phase advances by one complex multiply and is recomputed exactly
    # every FOLD_ANCHOR terms, so rounding grows over at most that many. (While loops: a range
    # with a step known only at run time costs a 64-bit division.)
    mmax = leg.shape[2] - 1
    v = 0j
    c = c0
    m = m0 + c0 * n
    dm = stride * n
    while m <= mmax:
        w = _cis(c * n * p0) if c > 0 else complex(1.0, 0.0)
        end = min(m + dm * FOLD_ANCHOR, mmax + 1)
        while m < end:
            d = leg[i, ring, m]
            v += (d.conjugate() if conj else d) * w
            w *= z
            m += dm
        c += stride * FOLD_ANCHOR
    return v


@cuda.jit(device=True, inline=True)
def _fold_raw(leg, i, ring, n, p0, zeta, q, c0, stride):
    # mode q of a ring of n pixels, over the orders' chunks c = c0 (mod stride), without the
    # factor e_q = e^{i q phi0}: the full mode is e_q times the sum of this over c0. Mode q is
    # the sum over m in [-mmax, mmax] with m = q (mod n) of Delta_m e^{i m phi0}, Delta_{-m}
    # the conjugate of Delta_m. With zeta = e^{i n phi0}: m = q + c n has the phase e_q zeta^c,
    # and -m with m = n - q + c n (n + c n for q = 0) has e_q conj(zeta)^(c+1): one sine and
    # cosine a thread, not one a sum
    zc = zeta.conjugate()
    z = zeta if stride == 1 else _cis(stride * n * p0)
    return (_zeta_sum(leg, i, ring, q, n, p0, z, False, c0, stride)
            + zc * _zeta_sum(leg, i, ring, n - q if q > 0 else n, n, -p0, z.conjugate(), True,
                             c0, stride))


@cuda.jit(device=True, inline=True)
def _real_mean(f):
    # mode 0 of a real ring is real: the other orders that fold onto it come with their
    # conjugates, and Delta_0's imaginary part (from those of the a_l0, which healpy and ducc0
    # ignore) is no part of the ring; in a Bluestein row it would land in the other ring
    return complex(f.real, 0.0)


@cuda.jit(device=True, inline=True)
def _pair_mode(fa, fb, q, n, a, b, phi0, scale, i):
    # out[., q] of fold_pair_kernel from the raw folds (_fold_raw) of its rings a and b:
    # z_q (s_a e^{i q phi0_a} F_a + i s_b e^{i q phi0_b} F_b); ring b absent when b < 0
    if q == 0:
        fa = _real_mean(fa)
        fb = _real_mean(fb)
    v = _cis(q * phi0[a]) * fa * _row_scale(scale, i, a)
    if b >= 0:
        v += 1j * (_cis(q * phi0[b]) * fb * _row_scale(scale, i, b))
    return v * _chirp(q, n)


@cuda.jit(device=True, inline=True)
def _fold(leg, i, ring, n, p0, zeta, q):
    # mode q of a ring of n pixels (see _fold_raw), every order in one thread
    return _cis(q * p0) * _fold_raw(leg, i, ring, n, p0, zeta, q, 0, 1)


@cuda.jit(cache=True)
def chirp_kernel(nphi, out):
    """B rows for Bluestein: out[row, t] = conj(z_t) / M for |t| < n (t < 0 at M + t), else 0
    (the 1/M of the inverse FFT of the convolution rides on them).

    Launch: grid (ceil(M / RING_THREADS), nrows, 1), RING_THREADS threads; nphi (nrows,)
    int64, out (nrows, M) complex128.
    """
    t, row, _ = _ring_thread()
    if t < out.shape[1]:
        n = nphi[row]
        M = out.shape[1]
        v = 0j
        if t < n:
            v = _chirp(t, n).conjugate()
        elif t > M - n:
            v = _chirp(M - t, n).conjugate()
        out[row, t] = v / float64(M)


# A Bluestein class runs two rings of one length n per row (HEALPix has each polar length
# twice: north and south): ring a as the real part, ring b as the imaginary part of one complex
# sequence. Synthesis: both rings are real, so the inverse DFT of X_a + i X_b is x_a + i x_b.
# Analysis: the DFT S of x_a + i x_b splits by S_a[q] = (S[q] + conj S[n-q]) / 2 and
# S_b[q] = (S[q] - conj S[n-q]) / 2i. Half the rows, half the FFT work. A row whose ring b
# is -1 carries ring a alone.
# Every ring pass below runs on a grid of (column blocks of RING_THREADS, rows, maps) and writes
# row r of map i at row i * nr + r of its (maps * nr, columns) buffer.
@cuda.jit(cache=True)
def fold_pair_kernel(leg, ring_a, ring_b, nphi, phi0, zeta, scale, out):
    """alm2map ring pass 1 of a Bluestein class: fold Delta_m of each row's two rings onto
    their n Fourier modes and chirp them.

    out[i*nr + row, q] = z_q (s_a F_a(q) + i s_b F_b(q)) for q < n, zero for q >= n, with
    F(q) = sum over m in [-mmax, mmax], m = q (mod n) of Delta_m e^{i m phi0} of the ring
    (Delta_{-m} = conj Delta_m) and s = scale[i % scale.shape[0], ring] (the sin^-s factor of
    a spin row, 1 otherwise).
    Launch: grid (ceil(M / RING_THREADS), nr, nmaps), RING_THREADS threads. leg (nmaps, nrings,
    mmax+1) complex128; ring_a, ring_b, nphi (nr,) int64 describe this class's rows; phi0
    (nrings,) float64 and zeta (nrings,) complex128 (e^{i nphi phi0}) of all rings; scale
    (rows, nrings) float64; out (nmaps*nr, M) complex128.
    """
    q, row, i = _ring_thread()
    n = nphi[row]
    a = ring_a[row]
    b = ring_b[row]
    R = i * ring_a.shape[0] + row
    if 2 * n <= RING_THREADS:
        # a ring of n <= RING_THREADS / 2 pixels folds 2 (mmax+1) / n orders onto each mode:
        # thousands for the shortest, one after another in one thread, each waiting on its
        # load, made the launch's tail (docs/notes/2026-11-27-ring-step.rst). The row's first block
        # splits them: thread t sums the chunks c = t // n (mod S) of mode t % n, and the S
        # partial sums of a mode are added in shared memory.
        if cuda.blockIdx.x > 0:
            if q < out.shape[1]:
                out[R, q] = 0j
            return
        part = cuda.shared.array((2, RING_THREADS), numba.complex128)
        S = RING_THREADS // n
        t = cuda.threadIdx.x
        mode = _umod(t, n)
        c0 = numba.int64(numba.uint32(t) // numba.uint32(n))
        va = 0j
        vb = 0j
        if c0 < S:
            va = _fold_raw(leg, i, a, n, phi0[a], zeta[a], mode, c0, S)
            if b >= 0:
                vb = _fold_raw(leg, i, b, n, phi0[b], zeta[b], mode, c0, S)
        part[0, t] = va
        part[1, t] = vb
        cuda.syncthreads()
        if t < out.shape[1]:
            v = 0j
            if t < n:
                fa = 0j
                fb = 0j
                for j in range(S):
                    fa += part[0, t + j * n]
                    fb += part[1, t + j * n]
                v = _pair_mode(fa, fb, t, n, a, b, phi0, scale, i)
            out[R, t] = v
        return
    if q < out.shape[1]:
        v = 0j
        if q < n:
            fa = _fold_raw(leg, i, a, n, phi0[a], zeta[a], q, 0, 1)
            fb = _fold_raw(leg, i, b, n, phi0[b], zeta[b], q, 0, 1) if b >= 0 else 0j
            v = _pair_mode(fa, fb, q, n, a, b, phi0, scale, i)
        out[R, q] = v


@cuda.jit(cache=True)
def unchirp_pair_kernel(conv, ring_a, ring_b, nphi, ringstart, maps):
    """alm2map ring pass 2 of a Bluestein class: with v = z_j conv[i*nr + row, j], j < n,
    ring a's pixel j is Re v and ring b's Im v.

    Launch: grid (ceil(max n of the class / RING_THREADS), nr, nmaps), RING_THREADS threads;
    ringstart (nrings,) int64.
    """
    j, row, i = _ring_thread()
    n = nphi[row]
    if j < n:
        v = _chirp(j, n) * conv[i * ring_a.shape[0] + row, j]
        maps[i, ringstart[ring_a[row]] + j] = v.real
        b = ring_b[row]
        if b >= 0:
            maps[i, ringstart[b] + j] = v.imag


@cuda.jit(cache=True)
def chirp_map_pair_kernel(maps, ring_a, ring_b, nphi, ringstart, weight, out):
    """map2alm ring pass 1 of a Bluestein class: out[i*nr + row, j] = z_j (w_a s_a[j] +
    i w_b s_b[j]) for j < n, else 0; s the rings' pixels, w their quadrature weights.

    Launch: grid (ceil(M / RING_THREADS), nr, nmaps), RING_THREADS threads; ringstart (nrings,)
    int64, weight (nrings,) float64.
    """
    j, row, i = _ring_thread()
    if j < out.shape[1]:
        n = nphi[row]
        v = 0j
        if j < n:
            a = ring_a[row]
            b = ring_b[row]
            v = complex(weight[a] * maps[i, ringstart[a] + j], 0.0)
            if b >= 0:
                v += 1j * (weight[b] * maps[i, ringstart[b] + j])
            v *= _chirp(j, n)
        out[i * ring_a.shape[0] + row, j] = v


@cuda.jit(cache=True)
def unfold_pair_kernel(conv, ring_a, ring_b, nphi, phi0, scale, leg):
    """map2alm ring pass 2 of a Bluestein class: Delta_m = s e^{-i m phi0} G(q), q = m mod n,
    for both rings of a row, G the ring's forward DFT split from the Bluestein sum
    S[q] = z_q conv[q] of the row: G_a = conj(S[q] + conj S[n-q]) / 2, G_b = conj(S[q] -
    conj S[n-q]) / 2i; s = scale[i % scale.shape[0], ring].

    Launch: grid (ceil((mmax+1) / RING_THREADS), nr, nmaps), RING_THREADS threads; leg (nmaps,
    nrings, mmax+1) complex128, phi0 (nrings,) float64.
    """
    m, row, i = _ring_thread()
    if m < leg.shape[2]:
        n = nphi[row]
        q = _umod(m, n)
        p = n - q if q > 0 else 0
        R = i * ring_a.shape[0] + row
        z = _chirp(q, n)
        # z_{n-q} = (-1)^n z_q
        zp = -z if (n & 1) == 1 and q > 0 else z
        sq = z * conv[R, q]
        sp = (zp * conv[R, p]).conjugate()
        a = ring_a[row]
        b = ring_b[row]
        e = _cis(-m * phi0[a])
        leg[i, a, m] = (0.5 * (sq + sp)).conjugate() * e * _row_scale(scale, i, a)
        if b >= 0:
            if phi0[b] != phi0[a]:
                e = _cis(-m * phi0[b])
            leg[i, b, m] = (-0.5j * (sq - sp)).conjugate() * e * _row_scale(scale, i, b)


@cuda.jit(cache=True)
def fold_kernel(leg, rings, nphi, phi0, zeta, scale, out):
    """alm2map ring pass 1 of a plain class (rings of one length n): the modes q <= n/2 of
    each ring's Hermitian spectrum, out[i*nr + row, q] = s F(q) (as in
    :func:`fold_pair_kernel`), for a complex-to-real FFT.

    Launch: grid (ceil((n//2 + 1) / RING_THREADS), nr, nmaps), RING_THREADS threads. rings,
    nphi (nr,) int64, phi0 (nr,) float64 and zeta (nr,) complex128 describe this class's
    rings; scale (rows, nrings) float64; out (nmaps*nr, n//2 + 1) complex128.
    """
    q, row, i = _ring_thread()
    if q < out.shape[1]:
        ring = rings[row]
        f = _fold(leg, i, ring, nphi[row], phi0[row], zeta[row], q)
        if q == 0:
            f = _real_mean(f)
        out[i * rings.shape[0] + row, q] = f * _row_scale(scale, i, ring)


@cuda.jit(cache=True)
def unchirp_kernel(conv, nphi, ringstart, maps):
    """alm2map ring pass 2 of a plain class whose rings do not lie one after another in the
    map: maps[i, ringstart + j] = conv[i*nr + row, j], the real FFT's output, for j < n.

    Launch: grid (ceil(n / RING_THREADS), nr, nmaps), RING_THREADS threads; conv float64.
    """
    j, row, i = _ring_thread()
    if j < nphi[row]:
        maps[i, ringstart[row] + j] = conv[i * nphi.shape[0] + row, j]


@cuda.jit(cache=True)
def gather_rings_kernel(maps, ringstart, out):
    """map2alm ring pass 1 of a plain class (one ring length n) whose rings do not lie one
    after another in the map: out[i*nr + row, j] = s_j, float64 rows for a real-to-complex FFT.

    Launch: grid (ceil(n / RING_THREADS), nr, nmaps), RING_THREADS threads.
    """
    j, row, i = _ring_thread()
    if j < out.shape[1]:
        out[i * ringstart.shape[0] + row, j] = maps[i, ringstart[row] + j]


@cuda.jit(cache=True)
def unfold_kernel(conv, rings, nphi, phi0, weight, scale, leg):
    """map2alm ring pass 2 of a plain class: Delta_m = w s e^{-i m phi0} G(q), q = m mod n, G
    the real FFT of the ring, conv (nmaps*nr, n//2 + 1) (modes above n/2 are conjugates), w
    the ring's quadrature weight (the FFT ran on the unweighted pixels) and s =
    scale[i % scale.shape[0], ring], as in :func:`fold_kernel`.

    Launch: grid (ceil((mmax+1) / RING_THREADS), nr, nmaps), RING_THREADS threads; weight (nr,)
    float64; leg (nmaps, nrings, mmax+1) complex128.
    """
    m, row, i = _ring_thread()
    if m < leg.shape[2]:
        n = nphi[row]
        q = _umod(m, n)
        R = i * rings.shape[0] + row
        g = conv[R, q] if 2 * q <= n else conv[R, n - q].conjugate()
        ring = rings[row]
        leg[i, ring, m] = g * _cis(-m * phi0[row]) * (weight[row] * _row_scale(scale, i, ring))


@cuda.jit(device=True, inline=True)
def _scaled(c, z):
    # real c times complex z: two products (Numba's c * z is a complex product, six)
    return complex(c * z.real, c * z.imag)


@cuda.jit(device=True, inline=True)
def _times_i(z):
    return complex(-z.imag, z.real)


@cuda.jit(device=True, inline=True)
def _eth_at(dn, cur, up, lv, m, e, en, j, sign_m, transpose):
    """One eth pass at one coefficient: from the set's values at j-1, j, j+1 (``dn``, ``cur``,
    ``up``) and that coefficient's l, m, eps_l, eps_{l+1} (see :func:`eth_kernel`):
    -(D - 2 j X + sign_m m) with D = (l-1) eps_l dn - (l+2) eps_{l+1} up and X = eps_l dn +
    eps_{l+1} up (D = l eps_{l+1} up - (l+1) eps_l dn transposed), each neighbour's factor
    made real first, so that the pass costs real-times-complex products only."""
    if transpose:
        cd = -e * (lv + 1.0 + 2.0 * j)
        cu = en * (lv - 2.0 * j)
    else:
        cd = e * (lv - 1.0 - 2.0 * j)
        cu = -en * (lv + 2.0 + 2.0 * j)
    cc = sign_m * m
    return complex(-(cd * dn.real + cu * up.real + cc * cur.real),
                   -(cd * dn.imag + cu * up.imag + cc * cur.imag))


@cuda.jit(cache=True)
def eth_kernel(c, fl, fm, eps, eps_next, j, sign_m, transpose, out):
    """One spin-raising (sign_m = -1) or lowering (+1) pass of :mod:`sphgpu.sht.spin` on
    coefficient sets, or its transpose (``transpose`` = 1): out = -(D c - 2 j X c + sign_m m c)
    with D = sin d/dtheta and X = cos theta acting on sums of lambda_lm (``spin._eth``).

    Launch: grid (ceil(n / 256), rows), block 256. c, out (rows, n) complex128 on the
    extended layout; fl, fm, eps, eps_next (n,) float64 from ``spin._tables``. Neighbours
    across an order's ends are multiplied by eps = 0 there, as in the NumPy passes.
    """
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y
    n = c.shape[1]
    if i < n:
        dn = c[r, i - 1] if i > 0 else 0j
        up = c[r, i + 1] if i + 1 < n else 0j
        out[r, i] = _eth_at(dn, c[r, i], up, fl[i], fm[i], eps[i], eps_next[i], j, sign_m,
                            transpose)


#: the largest spin whose coefficient passes run as one kernel (:func:`spin_sets_kernel`): a
#: thread holds the 2 * SPIN_FUSED + 1 values of each set around its coefficient in registers
SPIN_FUSED = 2


@cuda.jit(device=True, inline=True)
def _orig_index(lv, mv, lmax):
    """Index of (l, m) in the m-major layout of band limit lmax (-1 where l > lmax)."""
    l = int(lv)
    m = int(mv)
    if l > lmax:
        return -1
    return m * (2 * lmax + 1 - m) // 2 + l


@cuda.jit(device=True, inline=True)
def _eth_at_index(dn, cur, up, x, n, fl, fm, eps, eps_next, j, sign_m, transpose):
    """:func:`_eth_at` at coefficient x with its tables, 0 outside 0..n-1 (as the NumPy passes,
    which have no value there)."""
    if x < 0 or x >= n:
        return 0j
    return _eth_at(dn, cur, up, fl[x], fm[x], eps[x], eps_next[x], j, sign_m, transpose)


@cuda.jit(device=True, inline=True)
def _ladder(v0, v1, v2, v3, v4, p, n, fl, fm, eps, eps_next, spin, sign_m, transpose):
    """``spin`` (1 or 2) eth passes at coefficient p of one set, from its values at p-2..p+2
    (v0..v4, zero outside 0..n-1): raising (sign_m = -1) or lowering (+1) with j = 0, 1, or
    the transposed passes in reverse order (j = spin - 1 .. 0). Scalars only, so that the
    window stays in registers."""
    if spin == 1:
        return _eth_at_index(v1, v2, v3, p, n, fl, fm, eps, eps_next, 0.0, sign_m, transpose)
    j = 1.0 if transpose else 0.0
    u0 = _eth_at_index(v0, v1, v2, p - 1, n, fl, fm, eps, eps_next, j, sign_m, transpose)
    u1 = _eth_at_index(v1, v2, v3, p, n, fl, fm, eps, eps_next, j, sign_m, transpose)
    u2 = _eth_at_index(v2, v3, v4, p + 1, n, fl, fm, eps, eps_next, j, sign_m, transpose)
    return _eth_at_index(u0, u1, u2, p, n, fl, fm, eps, eps_next, 1.0 - j, sign_m, transpose)


@cuda.jit(device=True, inline=True)
def _embedded(alm, q, row, x, n, norm, fl, fm, lmax, reach):
    """N_l a_lm of ``alm[q, row]`` at extended coefficient x (0 outside 0..n-1, beyond
    ``reach``, i.e. unused, or where l > lmax)."""
    if reach < 0 or x < 0 or x >= n:
        return 0j
    i = _orig_index(fl[x], fm[x], lmax)
    if i < 0:
        return 0j
    return _scaled(norm[x], alm[q, row, i])


@cuda.jit(cache=True)
def spin_sets_kernel(alm, norm, fl, fm, eps, eps_next, lmax, spin, out):
    """Every row's scalar coefficient set of a spin-s synthesis in one pass
    (:func:`sphgpu.sht.spin.coefficient_sets`, s <= SPIN_FUSED): the embedding into the
    extended layout, the factor N_l, the s raising and s lowering passes and their sums, at
    once.

    Launch: grid (ceil(n / 128), k), block 128. alm (k, r, nalm) complex128, r = 2 (E, B) or
    3 (T, E, B), in the m-major layout of ``lmax``; norm, fl, fm, eps, eps_next (n,) float64 of
    ``spin._tables`` on the extended layout (lmax + spin); out (k, r, n) complex128: T embedded
    as it is, then the Q and U sets.
    """
    p = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    q = cuda.blockIdx.y
    n = out.shape[2]
    r = out.shape[1]
    if p >= n:
        return
    e, b = r - 2, r - 1
    # spin 1 needs p-1..p+1 only: the outer two are zero (reach < 0) and never read
    e0 = _embedded(alm, q, e, p - 2, n, norm, fl, fm, lmax, spin - 2)
    e1 = _embedded(alm, q, e, p - 1, n, norm, fl, fm, lmax, spin - 1)
    e2 = _embedded(alm, q, e, p, n, norm, fl, fm, lmax, spin)
    e3 = _embedded(alm, q, e, p + 1, n, norm, fl, fm, lmax, spin - 1)
    e4 = _embedded(alm, q, e, p + 2, n, norm, fl, fm, lmax, spin - 2)
    b0 = _embedded(alm, q, b, p - 2, n, norm, fl, fm, lmax, spin - 2)
    b1 = _embedded(alm, q, b, p - 1, n, norm, fl, fm, lmax, spin - 1)
    b2 = _embedded(alm, q, b, p, n, norm, fl, fm, lmax, spin)
    b3 = _embedded(alm, q, b, p + 1, n, norm, fl, fm, lmax, spin - 1)
    b4 = _embedded(alm, q, b, p + 2, n, norm, fl, fm, lmax, spin - 2)
    up_e = _ladder(e0, e1, e2, e3, e4, p, n, fl, fm, eps, eps_next, spin, -1.0, False)
    dn_e = _ladder(e0, e1, e2, e3, e4, p, n, fl, fm, eps, eps_next, spin, 1.0, False)
    up_b = _ladder(b0, b1, b2, b3, b4, p, n, fl, fm, eps, eps_next, spin, -1.0, False)
    dn_b = _ladder(b0, b1, b2, b3, b4, p, n, fl, fm, eps, eps_next, spin, 1.0, False)
    # C_Q = -(P+ E + i P- B), C_U = -(P+ B - i P- E), P+- = (up +- dn) / 2
    pe = _scaled(0.5, up_e + dn_e)
    me = _scaled(0.5, up_e - dn_e)
    pb = _scaled(0.5, up_b + dn_b)
    mb = _scaled(0.5, up_b - dn_b)
    out[q, e, p] = -(pe + _times_i(mb))
    out[q, b, p] = -(pb - _times_i(me))
    if r == 3:
        i = _orig_index(fl[p], fm[p], lmax)
        out[q, 0, p] = alm[q, 0, i] if i >= 0 else 0j


@cuda.jit(device=True, inline=True)
def _half(a, b, sign):
    # (a + sign i b) / 2 without complex products
    return complex(0.5 * (a.real - sign * b.imag), 0.5 * (a.imag + sign * b.real))


@cuda.jit(device=True, inline=True)
def _row_at(g, q, row, x, n, reach):
    """g[q, row, x] (0 outside 0..n-1 or beyond ``reach``)."""
    if reach < 0 or x < 0 or x >= n:
        return 0j
    return g[q, row, x]


@cuda.jit(cache=True)
def spin_sets_adjoint_kernel(g, inner, norm, fl, fm, eps, eps_next, spin, out):
    """Adjoint of :func:`spin_sets_kernel` (:func:`sphgpu.sht.spin.coefficient_sets_adjoint`)
    in one pass.

    Launch: grid (ceil(nalm / 128), k), block 128. g (k, r, n) complex128 on the extended
    layout (rows T, Q, U or Q, U); inner (nalm,) int64, the extended index of each coefficient
    of the original layout; tables as in :func:`spin_sets_kernel`; out (k, r, nalm)
    complex128: T, E, B or E, B.
    """
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    q = cuda.blockIdx.y
    n = g.shape[2]
    r = g.shape[1]
    if i >= out.shape[2]:
        return
    p = inner[i]
    rq, ru = r - 2, r - 1
    q0 = _row_at(g, q, rq, p - 2, n, spin - 2)
    q1 = _row_at(g, q, rq, p - 1, n, spin - 1)
    q2 = _row_at(g, q, rq, p, n, spin)
    q3 = _row_at(g, q, rq, p + 1, n, spin - 1)
    q4 = _row_at(g, q, rq, p + 2, n, spin - 2)
    u0 = _row_at(g, q, ru, p - 2, n, spin - 2)
    u1 = _row_at(g, q, ru, p - 1, n, spin - 1)
    u2 = _row_at(g, q, ru, p, n, spin)
    u3 = _row_at(g, q, ru, p + 1, n, spin - 1)
    u4 = _row_at(g, q, ru, p + 2, n, spin - 2)
    # gp = (gq, gu) and gm = (i gu, -i gq) on the E and B rows; the passes start from
    # up = (gp + gm) / 2 and dn = (gp - gm) / 2
    up_e = _ladder(_half(q0, u0, 1), _half(q1, u1, 1), _half(q2, u2, 1), _half(q3, u3, 1),
                   _half(q4, u4, 1), p, n, fl, fm, eps, eps_next, spin, -1.0, True)
    dn_e = _ladder(_half(q0, u0, -1), _half(q1, u1, -1), _half(q2, u2, -1), _half(q3, u3, -1),
                   _half(q4, u4, -1), p, n, fl, fm, eps, eps_next, spin, 1.0, True)
    up_b = _ladder(_half(u0, q0, -1), _half(u1, q1, -1), _half(u2, q2, -1), _half(u3, q3, -1),
                   _half(u4, q4, -1), p, n, fl, fm, eps, eps_next, spin, -1.0, True)
    dn_b = _ladder(_half(u0, q0, 1), _half(u1, q1, 1), _half(u2, q2, 1), _half(u3, q3, 1),
                   _half(u4, q4, 1), p, n, fl, fm, eps, eps_next, spin, 1.0, True)
    out[q, r - 2, i] = -_scaled(norm[p], up_e + dn_e)
    out[q, r - 1, i] = -_scaled(norm[p], up_b + dn_b)
    if r == 3:
        out[q, 0, i] = g[q, 0, p]


#: fields and pairs of fields :func:`cl_sums_kernel` takes (T, E, B and a few more)
CL_FIELDS = 6
CL_PAIRS = CL_FIELDS * (CL_FIELDS + 1) // 2


@cuda.jit(cache=True)
def cl_sums_kernel(alm, pair_i, pair_j, lmax, mmax, chunk, part):
    """Partial sums of healpy's alm2cl: part[q, c, s, l] = sum over the orders m of chunk c
    (m = c * chunk .. c * chunk + chunk - 1, m <= min(l, mmax)) of w_m Re(a_i a_j*) at (l, m),
    w_0 = 1 and w_m = 2 (the +-m pair), for the pairs s = (pair_i[s], pair_j[s]) of fields.

    Launch: grid (ceil((lmax + 1) / 128), nchunks, k), block 128. alm (k, n, nalm) complex128
    in the m-major layout (lmax, mmax), n <= CL_FIELDS; pair_i, pair_j (npairs,) int64;
    part (k, nchunks, npairs, lmax + 1) float64. Every entry is written (zeros where the chunk
    holds no order of l), so the sum over chunks in a fixed order is the whole, run to run the
    same (no atomics).
    """
    l = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y
    q = cuda.blockIdx.z
    if l > lmax:
        return
    npairs = pair_i.shape[0]
    nf = alm.shape[1]
    acc = cuda.local.array(CL_PAIRS, numba.float64)
    a = cuda.local.array(CL_FIELDS, numba.complex128)
    for s in range(npairs):
        acc[s] = 0.0
    m0 = c * chunk
    m1 = min(m0 + chunk, min(l, mmax) + 1)
    for m in range(m0, m1):
        at = m * (2 * lmax + 1 - m) // 2 + l
        wm = 1.0 if m == 0 else 2.0
        for f in range(nf):
            a[f] = alm[q, f, at]
        for s in range(npairs):
            x = a[pair_i[s]]
            y = a[pair_j[s]]
            acc[s] += wm * (x.real * y.real + x.imag * y.imag)
    for s in range(npairs):
        part[q, c, s, l] = acc[s]

