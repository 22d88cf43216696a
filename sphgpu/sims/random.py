"""Counter-based Gaussian random numbers: the same values on the CPU and the GPU.

Each simulation i gets a 64-bit key from ``numpy.random.SeedSequence(seed, spawn_key=(i,))``;
value j of its draw number b is a function of (key, b, j) alone, Philox4x32-10 (Salmon et al.
2011, "Parallel random numbers: as easy as 1, 2, 3") followed by the Box-Muller transform. So
a simulation's numbers depend neither on the batch it runs in nor on the device, and no
generator state is made or kept. (CuPy's own generators were not used: they reduce the seed to
32 bits, so two of a few ten thousand simulations would share a stream, and each one sets up
the states of millions of threads.)

:func:`philox4x32` and :func:`normal_pair` (:mod:`sphgpu.sims.philox`) are
``register_jitable``: plain Python from Python, inlined into the CPU loop (``@numba.njit``) and
the CUDA kernel alike, so both run one arithmetic. :func:`normals_reference` is a vectorised NumPy twin for the tests.
"""

from __future__ import annotations

import numba
import numpy as np

from .._device import array_module
from .philox import M0, M1, MASK, SHIFT, ULP, W0, W1, normal_pair, philox4x32

__all__ = ["stream_key", "philox4x32", "normal_pair", "normals", "normals_reference", "Stream"]

def stream_key(seed: int, index: int) -> tuple[int, int]:
    """The Philox key (two 32-bit words) of simulation ``index`` of a Monte Carlo.

    Parameters
    ----------
    seed : int
        The Monte Carlo's seed (>= 0).
    index : int
        The simulation's number (>= 0).

    Returns
    -------
    tuple of int
        (k0, k1), each in [0, 2**32).
    """
    k = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(2, np.uint32)
    return int(k[0]), int(k[1])


# One thread: on a shared or small machine (Binder's two cores) Numba's parallel loops cost
# more in thread hand-offs than the 70 ns per value they would share (measured 15x slower on a
# loaded two-core host); the transforms use the cores.
@numba.njit(cache=True)
def _fill_cpu(out, block, k0, k1):
    n = out.size
    for q in range((n + 1) // 2):
        z0, z1 = normal_pair(q, block, k0, k1)
        out[2 * q] = z0
        if 2 * q + 1 < n:
            out[2 * q + 1] = z1


def normals(shape, block, key, *, device=False):
    """Standard normal values of draw ``block`` of the stream ``key``, float64, of ``shape``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the result; value j of the flattened result is fixed by (key, block, j).
    block : int
        Draw number within the stream (0 <= block < 2**32).
    key : tuple of int
        (k0, k1) from :func:`stream_key`.
    device : bool
        False: a NumPy array made on the CPU. True: a device array (CuPy; NumPy under Numba's
        CUDA simulator) made by the CUDA kernel.

    Returns
    -------
    array, float64, of ``shape``
    """
    if not device:
        out = np.empty(shape, dtype=np.float64)
        _fill_cpu(out.reshape(-1), block, key[0], key[1])
        return out
    out = array_module().empty(shape, dtype=np.float64)
    flat = out.reshape(-1)
    if flat.size:
        threads = 128
        blocks = ((flat.size + 1) // 2 + threads - 1) // threads
        from .._fast_launch import launch_default
        from ._cuda_kernels import fill_normals

        launch_default(fill_normals, blocks, threads, flat, block, key[0], key[1])
    return out


def normals_reference(n, block, key):
    """The first ``n`` values of :func:`normals`, computed by vectorised NumPy (the twin the
    compiled versions are tested against).

    Parameters
    ----------
    n : int
        Number of values.
    block : int
        Draw number.
    key : tuple of int
        (k0, k1).

    Returns
    -------
    numpy.ndarray, float64, shape (n,)
    """
    q = np.arange((n + 1) // 2, dtype=np.uint64)
    c = [q & MASK, q >> SHIFT, np.full_like(q, block), np.zeros_like(q)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> SHIFT) ^ c[1] ^ k0, p1 & MASK, (p0 >> SHIFT) ^ c[3] ^ k1, p0 & MASK]
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    hi = lambda w: (w >> np.uint64(5)).astype(np.float64) * 67108864.0  # noqa: E731
    lo = lambda w: (w >> np.uint64(6)).astype(np.float64)  # noqa: E731
    u1 = 1.0 - (hi(c[0]) + lo(c[1])) * ULP
    u2 = (hi(c[2]) + lo(c[3])) * ULP
    r = np.sqrt(-2.0 * np.log(u1))
    return np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1).ravel()[:n]


class Stream:
    """The random numbers of one simulation: successive :meth:`standard_normal` calls take
    successive draw numbers (blocks) of its key.

    Parameters
    ----------
    seed : int
        The Monte Carlo's seed.
    index : int
        The simulation's number.
    device : bool
        Make the numbers on the GPU (device arrays) instead of the CPU.
    """

    def __init__(self, seed, index, device=False):
        self.key = stream_key(seed, index)
        self.device = device
        self.block = 0

    def standard_normal(self, shape):
        """The next draw: standard normal values, float64.

        Parameters
        ----------
        shape : int or tuple of int
            Shape of the result.

        Returns
        -------
        array, float64, of ``shape`` (a device array when ``device``)
        """
        out = normals(shape, self.block, self.key, device=self.device)
        self.block += 1
        return out
