"""sphgpu._fast_launch: kernel launches that bypass Numba's dispatcher, with stand-ins for the
dispatcher and cuda.core (no GPU needed)."""

import sys
import types
import warnings

import numpy as np
import pytest

from numba.core.errors import NumbaPerformanceWarning

def test_fast_launch_compiles_once_per_kind_of_arguments(monkeypatch):
    """The GPU launch path, with stand-ins for Numba's dispatcher and cuda.core: compiled once
    per kind of arguments (dtype, ndim, scalar type), then launched with the flat parameters of
    Numba's kernel ABI; a dispatcher without the needed pieces launches the usual way."""
    from sphgpu import _fast_launch as _launch

    calls = []

    class Kernel:
        def get_cufunc(self):
            return types.SimpleNamespace(kernel="handle")

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

    core = types.SimpleNamespace(launch=lambda *a: calls.append(("fast",) + a),
                                 LaunchConfig=lambda **kw: tuple(sorted(kw.items())))
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    monkeypatch.setattr(_launch, "SIMULATOR", False)
    monkeypatch.setattr(_launch, "RAW", False)          # through cuda.core (below: the driver)
    monkeypatch.setattr(_launch, "_compiled", {})
    monkeypatch.setattr(_launch, "_configs", {})
    monkeypatch.setattr(_launch, "_core_stream", lambda s: "core")
    kern = Dispatcher()
    a = np.zeros((2, 3), np.uint32).view(DeviceArray)
    for _ in range(3):
        _launch.launch(kern, 7, 64, 0, a, 5, np.uint32(2))
    assert calls[0] == ("compile", ("array(uint32, 2d, C)", "int64", "uint32"))
    fast = [c for c in calls if c[0] == "fast"]
    assert len(calls) == 4 and len(fast) == 3
    _, stream, config, handle, *params = fast[0]
    assert (stream, handle) == ("core", "handle")
    assert config == (("block", (64, 1, 1)), ("grid", (7, 1, 1)), ("shmem_size", 0))
    assert params[:9] == [0, 0, 6, 4, 4096, 2, 3, 12, 4]
    assert [(type(v).__name__, v.value) for v in params[9:]] == [("c_long", 5), ("c_uint", 2)]
    calls.clear()
    _launch.launch(kern, 7, 64, 0, a.astype(np.uint64).view(DeviceArray), 5, np.uint32(2))
    assert calls[0][0] == "compile"                      # another dtype: compiled again
    del Dispatcher.compile                                # an older or newer Numba
    calls.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _launch.launch(kern, 7, 64, 0, np.zeros(3, np.int8), 5, np.uint32(2))
    assert calls == [("slow", (7, 64, 0))]
    assert not caught                    # the low-occupancy warning stays inside sphgpu
    with pytest.raises(ValueError, match="C-contiguous"):
        _launch.kernel_params([a.T])


def test_fast_launch_takes_2d_grids(monkeypatch):
    """The SHT launches with 2-d grids and blocks: they reach cuda.core as 3-d ones."""
    from sphgpu import _fast_launch as _launch

    seen = []
    core = types.SimpleNamespace(LaunchConfig=lambda **kw: seen.append(kw))
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    _launch._config((5, 3), (4, 64))
    _launch._config(7, 128)
    assert seen == [dict(grid=(5, 3, 1), block=(4, 64, 1), shmem_size=0),
                    dict(grid=(7, 1, 1), block=(128, 1, 1), shmem_size=0)]


def test_cupy_streams_are_wrapped_per_launch_and_not_kept(monkeypatch):
    """A CuPy stream (an object with ``ptr``) goes to cuda.core by its handle at each launch;
    the launcher keeps no reference to it (convolve makes a side stream per call)."""
    from sphgpu import _fast_launch as _launch

    core = types.SimpleNamespace(Stream=types.SimpleNamespace(from_handle=lambda h: ("core", h)))
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    monkeypatch.setattr(_launch, "_core_streams", {})
    side = types.SimpleNamespace(ptr=1234)
    assert _launch._core_stream(side) == ("core", 1234)
    assert _launch._core_streams == {}


class _FakeDriver:
    """cuLaunchKernel that reads the parameters back through the pointers it is given."""

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self, sizes, refuse=False):
        self.sizes, self.refuse, self.calls = sizes, refuse, []

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        import ctypes
        if self.refuse:
            raise TypeError("Argument 'f' is not instance of type CUfunction")
        pointers = (ctypes.c_uint64 * len(self.sizes)).from_address(params)
        got = []
        for p, size in zip(pointers, self.sizes):
            got.append(bytes((ctypes.c_char * size).from_address(p)))
        self.calls.append((f, (gx, gy, gz), (bx, by, bz), shmem, stream, got, extra))
        return (0,)


def test_driver_launch_packs_numba_abi_parameters(monkeypatch):
    """Each parameter in its own 8-byte slot, read back through the pointer array the driver
    gets: array fields, a Python int and float, NumPy scalars of 4 and 8 bytes (negative, above
    2**63, float32 bits in the low bytes)."""
    import struct
    from sphgpu import _fast_launch as _launch

    class DeviceArray(np.ndarray):
        __cuda_array_interface__ = {}
        data = types.SimpleNamespace(ptr=4096)

    a = np.zeros((2, 3), np.float64).view(DeviceArray)
    args = (a, -5, 2.5, np.int32(-7), np.uint64(2**64 - 3), np.float32(1.5), np.float64(-0.25))
    sizes = [8] * 9 + [8, 8, 4, 8, 4, 8]
    fake = _FakeDriver(sizes)
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.SimpleNamespace(driver=fake))
    _launch._launch_raw(77, (3, 2, 1), (64, 1, 1), 0, args)
    f, grid, block, shmem, stream, got, extra = fake.calls[0]
    assert (f, grid, block, shmem, stream, extra) == (77, (3, 2, 1), (64, 1, 1), 0, 0, 0)
    words = [struct.unpack("<q", g)[0] for g in got[:9]]
    assert words == [0, 0, 6, 8, 4096, 2, 3, 24, 8]
    assert struct.unpack("<q", got[9])[0] == -5
    assert struct.unpack("<d", got[10])[0] == 2.5
    assert struct.unpack("<i", got[11])[0] == -7
    assert struct.unpack("<Q", got[12])[0] == 2**64 - 3
    assert struct.unpack("<f", got[13])[0] == 1.5
    assert struct.unpack("<d", got[14])[0] == -0.25
    # many parameters: the table of slot offsets grows
    many = (a,) * 40
    fake.sizes = [8] * 360
    _launch._launch_raw(77, (1, 1, 1), (32, 1, 1), 0, many)
    assert len(fake.calls[-1][5]) == 360
    assert struct.unpack("<q", fake.calls[-1][5][-3])[0] == 3      # the last shape[1]


def test_a_refused_driver_launch_falls_back_to_cuda_core(monkeypatch):
    """Where cuLaunchKernel refuses the call (another cuda.bindings), the launch goes through
    cuda.core, and so do the later ones."""
    from sphgpu import _fast_launch as _launch

    calls = []
    core = types.SimpleNamespace(launch=lambda *a: calls.append(("core",) + a[:3]),
                                 LaunchConfig=lambda **kw: "config")
    fake = _FakeDriver([8], refuse=True)
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.SimpleNamespace(driver=fake))
    monkeypatch.setattr(_launch, "SIMULATOR", False)
    monkeypatch.setattr(_launch, "RAW", True)
    monkeypatch.setattr(_launch, "RAW_REFUSED", None)
    monkeypatch.setattr(_launch, "_configs", {})
    monkeypatch.setattr(_launch, "_raw_handles", {})
    monkeypatch.setattr(_launch, "_core_stream", lambda s: "core stream")
    handle = types.SimpleNamespace(handle=99)
    kern = object()
    monkeypatch.setattr(_launch, "_compiled", {(kern, (int,)): handle})
    _launch.launch(kern, 4, 32, 0, 5)
    _launch.launch(kern, 4, 32, 0, 6)
    assert calls == [("core", "core stream", "config", handle)] * 2
    assert _launch.RAW is False and "CUfunction" in _launch.RAW_REFUSED
