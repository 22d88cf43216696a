"""Array kinds and the conversions between them, for every capability: host (NumPy) or
device (anything with ``__cuda_array_interface__``: CuPy, Numba), the array module of each,
copies up and down, and results in the kind of the caller's input.

This module and :mod:`sphgpu._validate` (the argument checks, which build on it) sit at the
bottom of sphgpu's import graph: they import no kernel code, so every capability can use them.
Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, used by CI) device work runs on NumPy
arrays; on a GPU it runs on CuPy arrays, which Numba kernels take without copies.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _host_threads
from ._cuda_launch import SIMULATOR

__all__ = ["SIMULATOR", "is_device_array", "array_module_of", "as_contiguous", "array_module",
           "device_constant", "to_device", "to_host", "like_input", "free_device_bytes"]


def is_device_array(a) -> bool:
    """True for GPU arrays (Numba device arrays, CuPy): anything with __cuda_array_interface__
    (which NumPy arrays never have). NumPy and CuPy arrays are told by their type first:
    CuPy builds the interface's dict at every access, microseconds a call, which a sort of
    a PIC step's size feels."""
    if isinstance(a, np.ndarray):
        return False
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray):
        return True
    return hasattr(a, "__cuda_array_interface__")


def array_module_of(a):
    """The array module of ``a``: CuPy for device arrays (the gpu extra installs it), else
    NumPy."""
    if is_device_array(a):
        import cupy

        return cupy
    return np


def as_contiguous(a, dtype):
    """``a`` as a C-contiguous ``dtype`` array of its own kind (NumPy; CuPy for device
    arrays: a CuPy view of a Numba one), copied only when it is not one already. No values are
    looked at: the checks of the healpy-named functions (NaN, UNSEEN, masks) are
    :mod:`sphgpu._validate`'s, and a plan's methods take arrays as they are."""
    if isinstance(a, np.ndarray):
        return np.ascontiguousarray(a, dtype=dtype)
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(a), dtype=dtype)


def array_module():
    """NumPy under the simulator, else CuPy (the gpu extra installs it)."""
    if SIMULATOR:
        return np
    import cupy

    return cupy


def device_constant(a):
    """A kernel argument made from host data: a C-contiguous CuPy copy of ``a``, as
    :func:`sphgpu._fast_launch.launch` takes them; under the simulator a NumPy copy (the
    simulator writes kernel arguments back after a launch, read-only ones too)."""
    if SIMULATOR:
        return np.array(a, order="C")
    import cupy

    return cupy.asarray(np.ascontiguousarray(a))


def free_device_bytes() -> int:
    """Bytes a computation can still allocate on the current GPU: the driver's free memory plus
    what CuPy's pool holds but does not use (after work at another size the pool keeps
    gigabytes, which the next allocation reuses)."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    return int(free + cupy.get_default_memory_pool().free_bytes())


#: device arrays at least this large come back through page-locked host memory
PINNED_MIN_BYTES = 1 << 22


#: bytes of each page-locked buffer a large upload goes through (two alternate)
UPLOAD_CHUNK_BYTES = 1 << 25


def to_device(a):
    """``a`` on the device (CuPy; NumPy under the simulator): device arrays as they are, host
    arrays copied once.

    A large NumPy array goes through two page-locked buffers from CuPy's pinned pool in turn:
    the host threads copy one chunk into a buffer (:mod:`sphgpu._host_threads`) while the bus
    carries the chunk before from the other. CuPy's own copy from pageable memory ran at
    6.3-10.5 GB/s on the GPU machines (an nside 2048 map: 38-64 ms), the bus from page-locked
    memory at about 54 GB/s (docs/performance.rst).
    """
    if SIMULATOR:
        return np.asarray(a)
    import cupy

    if (not isinstance(a, np.ndarray) or a.nbytes < 2 * UPLOAD_CHUNK_BYTES
            or not a.dtype.isnative or a.dtype.kind not in "biufc"):
        return cupy.asarray(a)        # (CuPy also swaps the bytes of big-endian data)
    import cupyx

    runtime = cupy.cuda.runtime
    src = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    out = cupy.empty(a.shape, a.dtype)
    stream = cupy.cuda.get_current_stream()
    bufs = [cupyx.empty_pinned(UPLOAD_CHUNK_BYTES, np.uint8) for _ in range(2)]
    done = [None, None]
    for k, s in enumerate(range(0, src.size, UPLOAD_CHUNK_BYTES)):
        e = min(s + UPLOAD_CHUNK_BYTES, src.size)
        buf = bufs[k % 2]
        if done[k % 2] is not None:
            done[k % 2].synchronize()          # the copy out of this buffer has finished
        _host_threads.run_spans(
            lambda _, i, j: np.copyto(buf[i:j], src[s + i:s + j]), e - s, 1 << 16)
        runtime.memcpyAsync(out.data.ptr + s, buf.ctypes.data, e - s,
                            runtime.memcpyHostToDevice, stream.ptr)
        done[k % 2] = stream.record()
    # the buffers go back to the pool when dropped: no copy may still read them then
    stream.synchronize()
    return out


def to_host(a):
    """A NumPy array of ``a`` (a copy from the device, or ``a`` itself): ``a`` a NumPy, CuPy
    or Numba device array.

    Large CuPy arrays are copied into page-locked memory from CuPy's pinned pool: the copy runs at
    the bus's speed, several times that of the driver's pageable staging
    (benchmarks/results/sht.json, "bus"), and the pool reuses the buffer once the returned
    array is dropped.
    """
    if isinstance(a, np.ndarray):
        return a
    if not hasattr(a, "get"):          # a Numba device array (the simulator's too)
        return np.asarray(a.copy_to_host())
    if a.nbytes >= PINNED_MIN_BYTES:
        import cupyx

        out = cupyx.empty_pinned(a.shape, a.dtype)
        a.get(out=out)
        return out
    return a.get()


def like_input(out, original):
    """Device results in the caller's kind: Numba device arrays for Numba input, else as is."""
    if (out is not None and is_device_array(original)
            and type(original).__module__.startswith("numba")):
        from numba import cuda

        return cuda.as_cuda_array(out)
    return out
