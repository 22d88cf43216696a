"""The "cuda" backend of :mod:`sphgpu.master` (:class:`sphgpu.backends.MasterBackend`): host
side of :func:`._cuda_kernels.coupling_kernel`, one launch per call.

The result is a NumPy array for NumPy input and a CuPy array for device input. Under Numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) everything runs on NumPy arrays.

``THREADS_PER_BLOCK`` (threads along l' per block) is a module attribute so the GPU machine can
tune it.
"""

from __future__ import annotations

import numpy as np

from .. import _fast_launch
from .._device import SIMULATOR, to_host
from .._device import array_module as _xp
from .._device import is_device_array, device_constant as _const
from ._cuda_kernels import coupling_kernel
from .coupling import BLOCKS

__all__ = ["ACCEPTS_DEVICE_ARRAYS", "THREADS_PER_BLOCK", "coupling_blocks"]

ACCEPTS_DEVICE_ARRAYS = True
THREADS_PER_BLOCK = 8 if SIMULATOR else 128


def coupling_blocks(wl, lmax: int, blocks: tuple, *, tpb: int | None = None):
    """The coupling blocks on the GPU, one thread per pair (l <= l').

    Parameters
    ----------
    wl : array, shape (nw,), float64
        Mask power spectrum W_L (zero beyond nw - 1); NumPy or a device array.
    lmax : int
        Last multipole of the matrices.
    blocks : tuple of str
        Names from ``("00", "02", "++", "--")``.
    tpb : int, optional
        Threads per block along l' (default THREADS_PER_BLOCK).

    Returns
    -------
    array, shape (len(blocks), lmax + 1, lmax + 1), float64
        ``out[b, l, l']`` = M^b_ll'; NumPy for NumPy input, CuPy for device input.
    """
    xp = _xp()
    device_in = is_device_array(wl)
    w = xp.ascontiguousarray(xp.asarray(wl, dtype=np.float64)) if device_in \
        else _const(np.asarray(wl, dtype=np.float64))
    tpb = int(tpb or THREADS_PER_BLOCK)
    n = lmax + 1
    out = xp.empty((len(blocks), n, n), dtype=np.float64)
    slots = _const(np.array([blocks.index(b) if b in blocks else -1 for b in BLOCKS],
                            dtype=np.int64))
    spin2 = any(b != "00" for b in blocks)
    grid = ((n + tpb - 1) // tpb, n)
    _fast_launch.launch_default(coupling_kernel, grid, (tpb, 1), w, np.int64(len(wl)),
                                np.int64(lmax), np.bool_(spin2), slots, out)
    return out if device_in else to_host(out)
