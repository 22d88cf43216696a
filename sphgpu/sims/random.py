"""Counter-based Gaussian random numbers: the same values on the CPU and the GPU.

Each simulation i gets a 64-bit key from ``numpy.random.SeedSequence(seed, spawn_key=(i,))``;
value j of its draw number b is a function of (key, b, j) alone, Philox4x32-10 (Salmon et al.
2011, "Parallel random numbers: as easy as 1, 2, 3") followed by the Box-Muller transform. So
a simulation's numbers depend neither on the batch it runs in nor on the device, and no
generator state is made or kept. (CuPy's own generators were not used: they reduce the seed to
32 bits, so two of a few ten thousand simulations would share a stream, and each one sets up
the states of millions of threads.)

Where the numbers are made is a backend of :mod:`sphgpu.sims`, chosen through
:mod:`sphgpu.backends` like every capability's: "cpu" (a compiled loop, NumPy arrays), "cuda"
(a kernel, device arrays) and "reference" (vectorised NumPy, the twin the others are tested
against). :func:`philox4x32` and :func:`normal_pair` (:mod:`sphgpu.sims.philox`) are
``register_jitable``: plain Python from Python, inlined into the CPU loop (``@numba.njit``) and
the CUDA kernel alike, so both run one arithmetic.
"""

from __future__ import annotations

import numpy as np

from .. import backends
from .philox import normal_pair, philox4x32

__all__ = ["stream_key", "philox4x32", "normal_pair", "normals", "normals_reference",
           "add_normals", "Stream"]


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


def _backend(backend, device):
    """The concrete backend of :mod:`sphgpu.sims` that ``backend`` or ``device`` asks for."""
    if backend is not None and device is not None:
        raise ValueError("give backend or device, not both (device=True is the GPU backend)")
    if backend is None:
        backend = backends.for_arrays(False if device is None else device)
    return backends.resolve(backend, "sims")


def normals(shape, block, key, *, backend=None, device=None):
    """Standard normal values of draw ``block`` of the stream ``key``, float64, of ``shape``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the result; value j of the flattened result is fixed by (key, block, j).
    block : int
        Draw number within the stream (0 <= block < 2**32).
    key : tuple of int
        (k0, k1) from :func:`stream_key`.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the numbers are made (:mod:`sphgpu.backends`); default: from ``device``.
    device : bool, optional
        For callers that know where their arrays live rather than a backend: True is the GPU
        backend, False (the default when neither is given) the CPU one.

    Returns
    -------
    array, float64, of ``shape``
        NumPy on the host backends; on "cuda" a device array (CuPy; NumPy under Numba's CUDA
        simulator).

    Raises
    ------
    ValueError
        If both ``backend`` and ``device`` are given, or ``backend`` names no backend.
    TypeError
        If ``backend`` is not a string or ``device`` not a bool.
    BackendUnavailableError
        If "cuda" is asked for where it cannot run.
    """
    return backends.load("sims", _backend(backend, device)).normals(shape, block, key)


def add_normals(out, block, key, scale, factor=None, *, backend=None):
    """``out`` = (``out`` + ``scale`` * z) * ``factor`` in place, z the values
    ``normals(out.shape, block, key)`` gives: white noise added to a map and a mask applied,
    in one pass and without an array of the numbers (the same values as the separate steps,
    to rounding).

    Parameters
    ----------
    out : array, float64, C-contiguous
        The values to add to: NumPy on the host backends, a device array on "cuda".
    block : int
        Draw number within the stream (0 <= block < 2**32).
    key : tuple of int
        (k0, k1) from :func:`stream_key`.
    scale : float or array of float64
        Standard deviation: a number, or an array whose size divides ``out.size``, repeated
        over the flattened ``out`` (a (npix,) array serves every field of (3, npix) maps).
    factor : array of float64, optional
        Multiplied in after the noise, repeated as ``scale`` (a mask of npix values).
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the work runs; default: where ``out`` is.

    Returns
    -------
    array
        ``out``.

    Raises
    ------
    ValueError
        If ``out`` is not C-contiguous float64, or ``scale`` or ``factor`` has a size that
        does not divide ``out.size``, each naming the argument.
    """
    device = hasattr(out, "__cuda_array_interface__")
    if getattr(out, "dtype", None) != np.float64 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float64 array (it is written in place)")
    for name, v in (("scale", scale), ("factor", factor)):
        size = 1 if v is None or np.isscalar(v) else int(np.prod(np.shape(v)))
        if size == 0 or out.size % size:
            raise ValueError(f"{name} has {size} values, which do not repeat over out's "
                             f"{out.size}")
    backend = _backend(backend, device if backend is None else None)
    return backends.load("sims", backend).add_normals(out, block, key, scale, factor)


def normals_reference(n, block, key):
    """The first ``n`` values of :func:`normals` computed by the "reference" backend
    (vectorised NumPy, the twin the compiled versions are tested against).

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
    return normals(n, block, key, backend="reference")


class Stream:
    """The random numbers of one simulation: successive :meth:`standard_normal` calls take
    successive draw numbers (blocks) of its key.

    Parameters
    ----------
    seed : int
        The Monte Carlo's seed.
    index : int
        The simulation's number.
    device : bool, optional
        Make the numbers on the GPU (device arrays) instead of the CPU; the default when
        neither this nor ``backend`` is given is the CPU.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the numbers are made, resolved once here (:mod:`sphgpu.backends`).

    Attributes
    ----------
    key : tuple of int
        The stream's key (:func:`stream_key`).
    backend : str
        The concrete backend.
    device : bool
        Whether its numbers are device arrays.
    block : int
        The next draw number.

    Raises
    ------
    ValueError, TypeError, BackendUnavailableError
        As :func:`normals`.
    """

    def __init__(self, seed, index, device=None, *, backend=None):
        self.key = stream_key(seed, index)
        self.backend = _backend(backend, device)
        self.device = backends.info(self.backend).gpu
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
        out = normals(shape, self.block, self.key, backend=self.backend)
        self.block += 1
        return out

    def add_standard_normal(self, out, scale, factor=None):
        """The next draw, of ``out``'s shape, times ``scale`` added to ``out`` in place, then
        times ``factor``: :func:`add_normals` (the same numbers as
        ``out += scale * standard_normal(out.shape)``, to rounding).

        Parameters
        ----------
        out : array, float64, C-contiguous (a device array when ``device``)
        scale : float or array of float64
        factor : array of float64, optional

        Returns
        -------
        array
            ``out``.
        """
        add_normals(out, self.block, self.key, scale, factor, backend=self.backend)
        self.block += 1
        return out
