"""Kernel launches with little host time, for the sort and the SHT: the sort's kernels take a few
microseconds each on the GPU at PIC sizes, and the SHT's ring step makes about 40 launches a
transform, so the host must issue them faster than Numba's dispatcher does.

Numba's dispatcher types every argument, wraps every array (a CuPy array becomes a Numba view,
which also synchronizes the stream CuPy names in it) and builds a launch configuration at each
call: about 45 us a launch on the H200 machine, and a 4-launch sort then spent 0.26 ms on the
host against 0.18 ms on the GPU. Here the kernel is compiled once per kind of arguments
(dtype, ndim; every array must be C-contiguous) and launched through ``cuda.core`` with the
parameters flattened as Numba's kernel ABI lays them out: an array is (meminfo, parent, size,
itemsize, data pointer, *shape, *strides in bytes), a scalar a ctypes value of its type. CuPy
arrays go in as they are. Where this Numba lacks the pieces (another version), the dispatcher
launches as usual, with Numba views of the CuPy arrays. Under Numba's simulator (NumPy arrays)
the dispatcher always launches. Launches through the dispatcher silence its low-occupancy
warning ("Grid size N will likely result in GPU under-utilization"): the sort's small grids
(the one-block digit scan, the few tiles of a small sort) are by design, and the warning,
meant for a user's own kernels, would otherwise reach the user from inside sphgpu. The SHT's
ring kernels took about 90 us each through the dispatcher on the H200 machine (their GPU
time at nside 1024 is a few microseconds), and its ring step at nside 1024 was bound by it.

A kernel compiled here is also kept on disk (:mod:`sphgpu._kernel_cache`), and a later process
loads its cubin through cuda.core without asking Numba: that skips Numba's compiler start-up,
about a second of every first call.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _kernel_cache
from ._cuda_launch import quiet
from ._device import SIMULATOR

__all__ = ["launch", "launch_default", "kernel_params", "FAST", "LOADED_FROM_DISK",
           "THROUGH_NUMBA"]

#: launch compiled kernels directly (False: through Numba's dispatcher; for comparisons)
FAST = True
_compiled = {}            # (dispatcher, argument kinds) -> the CUfunction's cuda.core Kernel
#: the cuda.core ObjectCode of each kernel this process loaded from sphgpu's disk cache (kept
#: alive while its kernel may run)
LOADED_FROM_DISK = []
#: (qualified name, cache key or None) of each kernel this process had Numba compile or load
THROUGH_NUMBA = []
_configs = {}             # (grid, block) -> cuda.core LaunchConfig
_core_streams = {}        # id of a Numba stream (0: the default) -> cuda.core Stream
_C_SCALARS = {np.dtype(t): c for t, c in (
    (np.int8, ctypes.c_int8), (np.int16, ctypes.c_int16), (np.int32, ctypes.c_int32),
    (np.int64, ctypes.c_int64), (np.uint8, ctypes.c_uint8), (np.uint16, ctypes.c_uint16),
    (np.uint32, ctypes.c_uint32), (np.uint64, ctypes.c_uint64),
    (np.float32, ctypes.c_float), (np.float64, ctypes.c_double))}


def _kind(a):
    """What the compiled kernel depends on: (dtype, ndim) of an array or NumPy scalar (ndim
    0), ``int`` or ``float`` for a Python number. (Not by ``__cuda_array_interface__``: CuPy
    builds that dict at every access.) Called for every argument of every launch, so the
    common cases come first and take no isinstance."""
    if type(a) is int or type(a) is float:
        return type(a)
    try:
        return a.dtype, a.ndim
    except AttributeError:
        raise TypeError(f"cannot launch with an argument of type {type(a).__name__}") from None


def _numba_type(a):
    from numba import from_dtype, types

    if isinstance(a, int):
        return types.int64                     # what Numba's typeof gives a Python int
    if isinstance(a, float):
        return types.float64
    if isinstance(a, np.generic):
        return from_dtype(a.dtype)
    return types.Array(from_dtype(a.dtype), a.ndim, "C")


def kernel_params(args):
    """The flat parameter list of Numba's kernel ABI for ``args`` (C-contiguous device arrays
    with ``data.ptr`` (CuPy), NumPy scalars, Python ints and floats)."""
    flat = []
    for a in args:
        if isinstance(a, int):
            flat.append(ctypes.c_int64(a))
        elif isinstance(a, float):
            flat.append(ctypes.c_double(a))
        elif isinstance(a, np.generic):
            flat.append(_C_SCALARS[a.dtype](a))
        else:
            if not a.flags.c_contiguous:
                raise ValueError("kernel arrays must be C-contiguous")
            flat += [0, 0, a.size, a.itemsize, a.data.ptr, *a.shape, *a.strides]
    return flat


def launch(kernel, grid, block, stream, *args):
    """``kernel[grid, block, stream](*args)`` with less host time; ``grid`` and ``block`` are
    ints or tuples of up to 3 ints (as Numba takes them).

    ``kernel``: a ``@cuda.jit`` dispatcher; ``stream``: 0 (the legacy default stream), a Numba
    stream or a CuPy stream; ``args``: CuPy arrays (C-contiguous), NumPy scalars, Python ints
    and floats (as int64 and float64), or under the simulator NumPy arrays and Numba device
    arrays.
    """
    if SIMULATOR:
        _dispatch(kernel, grid, block, stream, args)
        return
    key = (kernel, tuple(map(_kind, args)))
    handle = _compiled.get(key, False) if FAST else None
    if handle is False:
        handle = _compiled[key] = _compile(kernel, args)
    if handle is None:
        _dispatch(kernel, grid, block, _numba_stream(stream), [_numba_view(a) for a in args])
        return
    from cuda.core import launch as core_launch

    config = _configs.get((grid, block))
    if config is None:
        config = _configs[(grid, block)] = _config(grid, block)
    core_launch(_core_stream(stream), config, handle, *kernel_params(args))


def launch_default(kernel, grid, block, *args):
    """:func:`launch` on the legacy default stream, where CuPy works unless told otherwise."""
    launch(kernel, grid, block, 0, *args)


def _dispatch(kernel, grid, block, stream, args):
    """``kernel[grid, block, stream](*args)`` through Numba's dispatcher, without its
    low-occupancy warning (see the module docstring; :func:`sphgpu._cuda_launch.quiet` knows
    numba-cuda's warning class as well as numba's); other warnings pass."""
    with quiet():
        kernel[grid, block, stream](*args)


def _compile(kernel, args):
    """The cuda.core Kernel of ``kernel`` for these arguments: loaded from sphgpu's disk cache,
    else compiled by Numba (from Numba's own disk cache where it has it) and stored there; None
    where this Numba does not expose the compiled kernel."""
    key = _kernel_cache.key(kernel, tuple(map(_kind, args)))
    found = _kernel_cache.load(key) if key else None
    if found is not None:
        try:
            code = _object_code(found[0])
            handle = code.get_kernel(found[1])
            LOADED_FROM_DISK.append(code)
            return handle
        except Exception:  # noqa: BLE001  a damaged or foreign file: compile and rewrite it
            pass
    try:
        compiled = kernel.compile(tuple(_numba_type(a) for a in args))
        library = compiled._codelibrary
        handle = library.get_cufunc().kernel
    except (AttributeError, ImportError):
        return None
    THROUGH_NUMBA.append((getattr(getattr(kernel, "py_func", None), "__qualname__", "?"), key))
    # kernels that need Numba's module set-up at load time, or cooperative launches, are
    # left to Numba
    if key and not library._setup_functions and not getattr(library, "use_cooperative", False):
        cubin = library.get_cubin()
        _kernel_cache.store(key, getattr(cubin, "code", cubin), library._entry_name)
    return handle


def _object_code(cubin):
    try:
        from cuda.core import ObjectCode
    except ImportError:                      # cuda.core before 0.4
        from cuda.core.experimental import ObjectCode
    return ObjectCode.from_cubin(cubin)


def _dim3(d):
    d = (d,) if isinstance(d, int) else tuple(d)
    return d + (1,) * (3 - len(d))


def _config(grid, block):
    from cuda.core import LaunchConfig

    return LaunchConfig(grid=_dim3(grid), block=_dim3(block), shmem_size=0)


def _core_stream(stream):
    """The cuda.core stream of ``stream``: 0 (the legacy default) and Numba streams made once
    per stream; a CuPy stream wrapped at each launch (a few us), since caching it by its id
    would keep every short-lived one alive (convolve makes a side stream per call)."""
    if stream and hasattr(stream, "ptr"):
        from cuda.core import Stream

        return Stream.from_handle(stream.ptr)
    key = id(stream) if stream else 0
    found = _core_streams.get(key)
    if found is None:
        from numba.cuda.cudadrv import driver

        # the Numba stream is kept with it: the id stays its own while it lives
        found = _core_streams[key] = (stream, driver._to_core_stream(stream))
    return found[1]


def _numba_stream(stream):
    """What Numba's launch takes for ``stream``: a CuPy stream becomes a Numba external stream."""
    if stream and hasattr(stream, "ptr"):
        from numba import cuda

        return cuda.external_stream(stream.ptr)
    return stream


def _numba_view(a):
    """A Numba view of a CuPy array for the dispatcher, without the stream synchronization
    Numba makes by the CUDA array interface's rules (every launch of a sort goes to CuPy's
    current stream, after the work that made its arrays). Other arguments pass through."""
    if isinstance(a, np.ndarray) or not hasattr(a, "__cuda_array_interface__"):
        return a
    from numba import cuda

    return cuda.as_cuda_array(a, sync=False)
