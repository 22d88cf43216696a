"""White noise added to one value of a map, as a ``register_jitable`` function: plain Python
from Python, inlined into the CPU loop of :func:`sphgpu.sims.random.add_normals` and its CUDA
kernel alike (:mod:`sphgpu.sims._cuda_kernels`), so both run one arithmetic."""

from __future__ import annotations

from numba.extending import register_jitable

__all__ = ["add_noise_at"]


@register_jitable
def _cycle(j, size):
    # j mod size without the long 64-bit remainder where it is not needed (a scalar's one
    # value, or an array as long as out): on the GPU that remainder is a software sequence
    if size == 1:
        return 0
    return j if j < size else j % size


@register_jitable
def add_noise_at(out, j, z, scale, factor):
    """out[j] = (out[j] + scale[j mod S] z) factor[j mod F], S and F the arrays' sizes (a map's
    pixels repeat over its fields); no factor when ``factor`` is empty.

    Parameters
    ----------
    out : 1-D float64 array
        Written in place at ``j``.
    j : int
        Index into ``out``.
    z : float
        The standard normal value of index j.
    scale, factor : 1-D float64 arrays
        Standard deviations (size >= 1) and the factor after the noise (a mask; may be empty).
    """
    v = out[j] + scale[_cycle(j, scale.size)] * z
    if factor.size:
        v *= factor[_cycle(j, factor.size)]
    out[j] = v
