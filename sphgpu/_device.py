"""What the CUDA backends share on the host: the array module and the kind of returned arrays.

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, used by CI) device work runs on NumPy
arrays; on a GPU it runs on CuPy arrays, which Numba kernels take without copies.
"""

from __future__ import annotations

import numba
import numpy as np

from ._validate import is_device_array

__all__ = ["SIMULATOR", "array_module", "to_host", "like_input"]

SIMULATOR = bool(numba.config.ENABLE_CUDASIM)


def array_module():
    """NumPy under the simulator, else CuPy (the gpu extra installs it)."""
    if SIMULATOR:
        return np
    import cupy

    return cupy


def to_host(a):
    """A NumPy array of ``a`` (a copy from the device, or ``a`` itself)."""
    return a if isinstance(a, np.ndarray) else a.get()


def like_input(out, original):
    """Device results in the caller's kind: Numba device arrays for Numba input, else as is."""
    if (out is not None and is_device_array(original)
            and type(original).__module__.startswith("numba")):
        from numba import cuda

        return cuda.as_cuda_array(out)
    return out
