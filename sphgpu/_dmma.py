"""FP64 tensor-core multiply-accumulate for Numba kernels: PTX ``mma.sync.aligned.m16n8k4`` in
double precision, D = A B + C for a 16x4 A, a 4x8 B and 16x8 C, D, held across the 32 lanes of a
warp (the fragment layout of the PTX ISA, "Matrix fragments for mma.m16n8k4" with .f64; with
g = L // 4 and t = L % 4 for lane L):

    lane L holds A[g, t] and A[g + 8, t] (a0, a1), B[t, g] (b), and
    D[g, 2t], D[g, 2t + 1], D[g + 8, 2t], D[g + 8, 2t + 1] (d0..d3).

The m16n8 shapes are new in sm_90, and m8n8k4 runs at about half their rate there
(benchmarks/results/dmma_shapes_h200.json), hence m16n8k4.

Numba has no tensor-core intrinsic, so the instruction comes from a few lines of CUDA C++ linked
into the kernel (Numba's foreign-function interface; with nvJitLink the link is link-time
optimised and the call inlined). Under Numba's CUDA simulator, which has no warp shuffles, a
twin computes the same product through shared memory, so the kernels that use it run in CI.

Every lane of the warp must call :func:`device_function`'s function together (the instruction
is warp-collective), and under the simulator every thread of the block (it synchronises the
block): kernels call it in code that all threads reach.
"""

from __future__ import annotations

import functools

from numba import cuda, float64

from ._device import SIMULATOR

__all__ = ["device_function", "warp_barrier", "SCRATCH", "SOURCE"]

#: the foreign function, with Numba's device-function ABI (int return, result through the
#: first pointer): the four D elements of this lane
SOURCE = r"""
extern "C" __device__ int sphgpu_dmma_m16n8k4(double *d, double a0, double a1, double b,
                                              double c0, double c1, double c2, double c3)
{
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=d"(d[0]), "=d"(d[1]), "=d"(d[2]), "=d"(d[3])
                 : "d"(a0), "d"(a1), "d"(b), "d"(c0), "d"(c1), "d"(c2), "d"(c3));
    return 0;
}
"""

#: float64 elements of the shared scratch array a kernel passes for each of its warps (the
#: simulator's exchange; one unused element on a GPU)
SCRATCH = 96 if SIMULATOR else 1


@cuda.jit(device=True, inline=True)
def _block_barrier():
    cuda.syncthreads()


@cuda.jit(device=True, inline=True)
def _warp_barrier():
    cuda.syncwarp()


#: ``warp_barrier()``: orders the shared-memory accesses of a warp (``__syncwarp``); under the
#: simulator, which lacks it, a block barrier, so kernels call it where every thread of the
#: block does
warp_barrier = _block_barrier if SIMULATOR else _warp_barrier


@cuda.jit(device=True)
def _simulated(a0, a1, b, c0, c1, c2, c3, scratch):
    # warp w's A at scratch[w * 96 + 4 row + col], its B at scratch[w * 96 + 64 + 4 col + row]
    t = cuda.threadIdx.x
    lane = t % 32
    g = lane // 4
    k = lane % 4
    base = (t // 32) * 96
    scratch[base + 4 * g + k] = a0
    scratch[base + 4 * (g + 8) + k] = a1
    scratch[base + 64 + 4 * g + k] = b
    cuda.syncthreads()
    d0, d1, d2, d3 = c0, c1, c2, c3
    for j in range(4):
        lo = scratch[base + 4 * g + j]
        hi = scratch[base + 4 * (g + 8) + j]
        b0 = scratch[base + 64 + 4 * (2 * k) + j]
        b1 = scratch[base + 64 + 4 * (2 * k + 1) + j]
        d0 += lo * b0
        d1 += lo * b1
        d2 += hi * b0
        d3 += hi * b1
    cuda.syncthreads()
    return d0, d1, d2, d3


@functools.lru_cache(maxsize=None)
def device_function():
    """``mma(a0, a1, b, c0, c1, c2, c3, scratch) -> (d0, d1, d2, d3)``: this lane's elements of
    D = A B + C (module docstring); ``scratch`` is a shared float64 array of ``SCRATCH``
    elements per warp of the block. Declares the foreign function at the first call, which
    starts Numba's CUDA compiler: call it when building a kernel, not at import."""
    if SIMULATOR:
        return _simulated
    from numba import types

    extern = cuda.declare_device(
        "sphgpu_dmma_m16n8k4", types.UniTuple(float64, 4)(*(float64,) * 7),
        link=[cuda.CUSource(SOURCE)])

    @cuda.jit(device=True, inline=True)
    def mma(a0, a1, b, c0, c1, c2, c3, scratch):
        return extern(a0, a1, b, c0, c1, c2, c3)

    return mma
