"""Kernel launches with little host time, for the sort and the SHT: the sort's kernels take a few
microseconds each on the GPU at PIC sizes, and the SHT's ring step makes about 40 launches a
transform, so the host must issue them faster than Numba's dispatcher does.

Numba's dispatcher types every argument, wraps every array (a CuPy array becomes a Numba view,
which also synchronizes the stream CuPy names in it) and builds a launch configuration at each
call, so a small sort took longer to issue on the host than to run on the GPU
(benchmarks/results/sort_check.json, "launch_paths_2e20"). Here the kernel is compiled once per
kind of arguments (dtype, ndim; every array must be C-contiguous) and launched by
``cuLaunchKernel`` with the parameters flattened as Numba's kernel ABI lays them out
(:func:`_slots`), packed by one ``struct`` call into a buffer kept per kernel and thread
(:class:`_Launcher`). CuPy arrays go
in as they are. Where this Numba lacks the pieces (another version), the dispatcher
launches as usual, with Numba views of the CuPy arrays. Under Numba's simulator (NumPy arrays)
the dispatcher always launches. Launches through the dispatcher silence its low-occupancy
warning ("Grid size N will likely result in GPU under-utilization"): the sort's small grids
(the one-block digit scan, the few tiles of a small sort) are by design, and the warning,
meant for a user's own kernels, would otherwise reach the user from inside sphgpu. The SHT's
ring kernels take longer to issue through the dispatcher than to run at nside 1024, so its
ring step there was bound by it (docs/notes/2026-11-27-ring-step.rst).

A kernel compiled here is also kept on disk (:mod:`sphgpu._kernel_cache`), and a later process
loads its cubin through cuda.core without asking Numba: that skips Numba's compiler start-up,
about a second of every first call.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from . import _kernel_cache
from ._cuda_launch import SIMULATOR, quiet

__all__ = ["launch", "launch_default", "current_stream", "kernel_params", "FAST",
           "LOADED_FROM_DISK", "THROUGH_NUMBA"]

#: launch compiled kernels directly (False: through Numba's dispatcher; for comparisons)
FAST = True
_compiled = {}            # (dispatcher, argument kinds) -> _Launcher, or None (the dispatcher)
#: the cuda.core ObjectCode of each kernel this process loaded from sphgpu's disk cache (kept
#: alive while its kernel may run)
LOADED_FROM_DISK = []
#: (qualified name, cache key or None) of each kernel this process had Numba compile or load
THROUGH_NUMBA = []
_numba_streams = {}       # id of a Numba stream -> (the stream, its handle as an int)
#: struct codes of a NumPy scalar parameter in its 8-byte slot (little-endian, value first)
_SLOT = {np.dtype(t): c for t, c in (
    (np.bool_, "?7x"), (np.int8, "b7x"), (np.int16, "h6x"), (np.int32, "i4x"), (np.int64, "q"),
    (np.uint8, "B7x"), (np.uint16, "H6x"), (np.uint32, "I4x"), (np.uint64, "Q"),
    (np.float32, "f4x"), (np.float64, "d"))}


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


def _slots(kinds):
    """The struct format of Numba's kernel ABI for arguments of these kinds, every parameter
    in an 8-byte slot: an array is (meminfo, parent, size, itemsize, data pointer, *shape,
    *strides in bytes), a scalar its value (int64 for a Python int, float64 for a float)."""
    fmt = []
    for k in kinds:
        if k is int:
            fmt.append("q")
        elif k is float:
            fmt.append("d")
        elif k[1] == 0:
            code = _SLOT.get(k[0])
            if code is None:
                raise TypeError(f"cannot launch with a scalar of dtype {k[0]}")
            fmt.append(code)
        else:
            fmt.append("qqqqQ" + "q" * (2 * k[1]))
    return struct.Struct("<" + "".join(fmt))


def kernel_params(args):
    """The values of Numba's kernel ABI for ``args`` (C-contiguous device arrays with
    ``data.ptr`` (CuPy), NumPy scalars, Python ints and floats), in :func:`_slots` order."""
    flat = []
    for a in args:
        if type(a) is int or type(a) is float or isinstance(a, np.generic):
            flat.append(a)
        else:
            try:
                contiguous = a._c_contiguous     # CuPy's own flag: a.flags builds an object
            except AttributeError:
                contiguous = a.flags.c_contiguous
            if not contiguous:
                raise ValueError("kernel arrays must be C-contiguous")
            flat += (0, 0, a.size, a.itemsize, a.data.ptr)
            flat += a.shape
            flat += a.strides
    return flat


class _Launcher:
    """One compiled kernel for one kind of arguments, launched by ``cuLaunchKernel`` (through
    CuPy's binding of it) with the parameters packed into a buffer made once per thread: the
    driver copies them at the call, so the buffer can be packed again for the next launch.
    ``cuda.core.launch``, used before, converts each parameter on its own, which costs host
    time on every launch (the host time of a sort's launches: benchmarks/results/sort_check.json,
    "stages", host_issue_ms)."""

    def __init__(self, handle, kinds):
        self.handle = handle                 # the cuda.core Kernel (kept alive)
        self.address = int(handle.handle)
        self.packer = _slots(kinds)
        self.local = threading.local()

    def buffers(self):
        found = getattr(self.local, "buffers", None)
        if found is None:
            n = self.packer.size // 8
            values = ctypes.create_string_buffer(max(8, self.packer.size))
            base = ctypes.addressof(values)
            pointers = (ctypes.c_void_p * max(1, n))(*[base + 8 * i for i in range(n)])
            found = self.local.buffers = (values, pointers, ctypes.addressof(pointers))
        return found

    def __call__(self, grid, block, stream, args):
        values, _, pointers = self.buffers()
        self.packer.pack_into(values, 0, *kernel_params(args))
        g = _dim3(grid)
        b = _dim3(block)
        _driver_launch(self.address, g[0], g[1], g[2], b[0], b[1], b[2], 0,
                       _stream_handle(stream), pointers, 0)


def _driver_launch(*args):
    """CuPy's ``cuLaunchKernel`` (imported on first use: the CPU paths never load CuPy)."""
    global _driver_launch
    from cupy.cuda import driver

    _driver_launch = driver.launchKernel
    return _driver_launch(*args)


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
    kinds = tuple(map(_kind, args))
    key = (kernel, kinds)
    launcher = _compiled.get(key, False) if FAST else None
    if launcher is False:
        handle = _compile(kernel, args)
        launcher = _compiled[key] = None if handle is None else _Launcher(handle, kinds)
    if launcher is None:
        _dispatch(kernel, grid, block, _numba_stream(stream), [_numba_view(a) for a in args])
        return
    launcher(grid, block, stream, args)


def launch_default(kernel, grid, block, *args):
    """:func:`launch` on CuPy's current stream (the legacy default stream unless the caller
    made another current), where CuPy's own work of the same call goes: a kernel on the legacy
    stream would not wait for a non-blocking stream's copies and elementwise steps before it."""
    launch(kernel, grid, block, current_stream(), *args)


def current_stream():
    """CuPy's current stream of this thread, which :func:`launch` takes as it is; 0 (no
    stream) under the simulator. CuPy is imported on first use, as in :func:`_driver_launch`."""
    if SIMULATOR:
        return 0
    import cupy

    return cupy.cuda.get_current_stream()


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
    if type(d) is int:
        return d, 1, 1
    d = tuple(d)
    return d + (1,) * (3 - len(d))


def _stream_handle(stream):
    """The CUstream of ``stream`` as an int: 0 for the legacy default stream, a CuPy stream's
    ``ptr``, a Numba stream's handle (looked up once per stream, kept with the stream so that
    its id stays its own while it lives)."""
    if not stream:
        return 0
    ptr = getattr(stream, "ptr", None)
    if ptr is not None:
        return ptr
    found = _numba_streams.get(id(stream))
    if found is None:
        found = _numba_streams[id(stream)] = (stream, _numba_stream_handle(stream))
    return found[1]


def _numba_stream_handle(stream):
    handle = stream.handle                   # a ctypes c_void_p, or cuda-python's CUstream
    return int(getattr(handle, "value", handle) or 0)


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
