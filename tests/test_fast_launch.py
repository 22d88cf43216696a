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
