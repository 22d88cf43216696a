"""The CUDA kernels of :mod:`sphgpu.sims` (imported on first use of the GPU path): the normal
numbers of :mod:`sphgpu.sims.random`, alone or added to a map, and the a_lm made from them."""

from __future__ import annotations

from numba import cuda

from .._cuda_launch import refresh_kernel_cache
from . import noise, philox
from .noise import add_noise_at
from .philox import normal_pair

# cached on disk (cache=True); it inlines philox's and noise's functions
refresh_kernel_cache(__file__, philox.__file__, noise.__file__)


@cuda.jit(cache=True)
def fill_normals(out, block, k0, k1):
    """Standard normal values of draw ``block`` under key (k0, k1) into ``out``.

    Launch contract: 1-D grid, one thread per pair of values (at least (out.size + 1) // 2
    threads); out is a contiguous 1-D float64 device array; thread q writes out[2q] and
    out[2q+1], the same numbers as the CPU loop.
    """
    q = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    n = out.size
    if 2 * q < n:
        z0, z1 = normal_pair(q, block, k0, k1)
        out[2 * q] = z0
        if 2 * q + 1 < n:
            out[2 * q + 1] = z1


@cuda.jit(cache=True)
def add_normals_kernel(out, block, k0, k1, scale, factor):
    """out[j] = (out[j] + scale[j % S] * z_j) * factor[j % F] in place, z the values of
    :func:`fill_normals` (no factor when ``factor`` is empty). The noise and the mask of a
    simulated map in one pass, instead of writing the numbers and reading them back.

    Launch contract as :func:`fill_normals`; out, scale, factor contiguous 1-D float64.
    """
    q = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    n = out.size
    if 2 * q < n:
        z0, z1 = normal_pair(q, block, k0, k1)
        add_noise_at(out, 2 * q, z0, scale, factor)
        if 2 * q + 1 < n:
            add_noise_at(out, 2 * q + 1, z1, scale, factor)


@cuda.jit(cache=True)
def correlate_kernel(re, im, rows, cols, fre, fim, out):
    """out[i, a] += (sum over f with rows[f] = i of fre[f, a] re[cols[f], a]) + 1j (the same
    with fim and im), the sums in the order of f: correlated a_lm from unit normals.

    Launch: grid (ceil(nalm / threads), n), 1-D blocks; re, im (n, nalm) float64; rows, cols
    (F,) int64; fre, fim (F, nalm) float64; out (n, nalm) complex128.
    """
    a = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    i = cuda.blockIdx.y
    if a < out.shape[1]:
        sr = 0.0
        si = 0.0
        for f in range(rows.size):
            if rows[f] == i:
                j = cols[f]
                sr += fre[f, a] * re[j, a]
                si += fim[f, a] * im[j, a]
        out[i, a] += complex(sr, si)
