"""sphgpu._fast_launch: kernel launches that bypass Numba's dispatcher, with stand-ins for the
dispatcher and cuda.core (no GPU needed)."""

import ctypes
import sys
import types
import warnings

import numpy as np
import pytest

from numba.core.errors import NumbaPerformanceWarning

def _read_params(pointers, packer):
    """The parameter values a launch handed to cuLaunchKernel: the array of pointers read back
    slot by slot, as the driver copies them."""
    n = packer.size // 8
    ptrs = (ctypes.c_void_p * n).from_address(pointers)
    raw = b"".join(ctypes.string_at(ptrs[i], 8) for i in range(n))
    return packer.unpack(raw)


def test_fast_launch_compiles_once_per_kind_of_arguments(monkeypatch):
    """The GPU launch path, with stand-ins for Numba's dispatcher and the driver: compiled once
    per kind of arguments (dtype, ndim, scalar type), then launched with the flat parameters of
    Numba's kernel ABI, each in its own 8-byte slot; a dispatcher without the needed pieces
    launches the usual way."""
    from sphgpu import _fast_launch as _launch

    calls = []

    class Kernel:
        def get_cufunc(self):
            return types.SimpleNamespace(kernel=types.SimpleNamespace(handle=0xBEEF))

    class Dispatcher:
        def compile(self, argtypes):
            calls.append(("compile", tuple(str(t) for t in argtypes)))
            return types.SimpleNamespace(_codelibrary=Kernel())

        def __getitem__(self, config):
            # as Numba's dispatcher does for grids under 128 blocks
            warnings.warn(NumbaPerformanceWarning(f"Grid size {config[0]} will likely result "
                                                  "in GPU under-utilization"))
            return lambda *args: calls.append(("slow", config))

    class DeviceArray(np.ndarray):           # a NumPy array with a device pointer, like CuPy's
        __cuda_array_interface__ = {}
        data = types.SimpleNamespace(ptr=4096)

    def driver(f, gx, gy, gz, bx, by, bz, shmem, stream, pointers, extra):
        packer = next(iter(_launch._compiled.values())).packer
        calls.append(("fast", f, (gx, gy, gz), (bx, by, bz), shmem, stream, extra,
                      _read_params(pointers, packer)))

    monkeypatch.setattr(_launch, "SIMULATOR", False)
    monkeypatch.setattr(_launch, "_compiled", {})
    monkeypatch.setattr(_launch, "_driver_launch", driver)
    kern = Dispatcher()
    a = np.zeros((2, 3), np.uint32).view(DeviceArray)
    for _ in range(3):
        _launch.launch(kern, 7, 64, 0, a, 5, np.uint32(2), -1.5, np.float32(0.25))
    assert calls[0] == ("compile", ("array(uint32, 2d, C)", "int64", "uint32", "float64",
                                    "float32"))
    fast = [c for c in calls if c[0] == "fast"]
    assert len(calls) == 4 and len(fast) == 3
    _, f, grid, block, shmem, stream, extra, params = fast[0]
    assert (f, grid, block, shmem, stream, extra) == (0xBEEF, (7, 1, 1), (64, 1, 1), 0, 0, 0)
    assert params == (0, 0, 6, 4, 4096, 2, 3, 12, 4, 5, 2, -1.5, 0.25)
    # a 4-byte parameter is the first 4 bytes of its slot, as the driver copies it
    slots = (ctypes.c_void_p * 13).from_address(
        next(iter(_launch._compiled.values())).buffers()[2])
    assert ctypes.c_uint32.from_address(slots[10]).value == 2
    calls.clear()
    _launch.launch(kern, (5, 3), (4, 64), types.SimpleNamespace(ptr=1234),
                   a.astype(np.uint64).view(DeviceArray), 5, np.uint32(2), 1.0, np.float32(1))
    assert calls[0][0] == "compile"                      # another dtype: compiled again
    assert calls[1][2:4] == ((5, 3, 1), (4, 64, 1)) and calls[1][5] == 1234   # a CuPy stream
    del Dispatcher.compile                                # an older or newer Numba
    calls.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _launch.launch(kern, 7, 64, 0, np.zeros(3, np.int8), 5, np.uint32(2))
    assert calls == [("slow", (7, 64, 0))]
    assert not caught                    # the low-occupancy warning stays inside sphgpu
    with pytest.raises(ValueError, match="C-contiguous"):
        _launch.kernel_params([a.T])
    with pytest.raises(TypeError, match="complex128"):
        _launch._slots(((np.dtype(np.complex128), 0),))


def test_launch_buffers_are_per_thread():
    """Two threads launching one kernel pack their parameters into buffers of their own."""
    import threading

    from sphgpu import _fast_launch as _launch

    launcher = _launch._Launcher(types.SimpleNamespace(handle=1), (int, int))
    seen = []
    t = threading.Thread(target=lambda: seen.append(launcher.buffers()))   # kept alive here
    t.start()
    t.join()
    assert launcher.buffers()[2] != seen[0][2]
    assert launcher.buffers()[2] == launcher.buffers()[2]


def test_stream_handles():
    """The legacy default stream is 0, a CuPy stream goes by its ``ptr`` and is not kept, a
    Numba stream by its handle (ctypes or cuda-python), looked up once and kept with it."""
    from sphgpu import _fast_launch as _launch

    _launch._numba_streams.clear()
    assert _launch._stream_handle(0) == 0
    assert _launch._stream_handle(types.SimpleNamespace(ptr=1234)) == 1234
    assert _launch._numba_streams == {}
    numba_stream = types.SimpleNamespace(handle=ctypes.c_void_p(777))
    assert _launch._stream_handle(numba_stream) == 777
    assert _launch._numba_streams[id(numba_stream)] == (numba_stream, 777)

    class CUstream:
        def __int__(self):
            return 888

    assert _launch._numba_stream_handle(types.SimpleNamespace(handle=CUstream())) == 888
    _launch._numba_streams.clear()
