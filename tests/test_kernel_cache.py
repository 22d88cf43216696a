"""sphgpu._kernel_cache: cubins on disk, keyed on everything their code depends on, and the
fast launcher's use of them (stand-ins for Numba's dispatcher and cuda.core; no GPU needed)."""

import types

import numpy as np
import pytest

from sphgpu import _fast_launch, _kernel_cache

SCALE = 3


def _factory(n, table):
    def device_fn(x):
        return x * n

    device = types.SimpleNamespace(py_func=device_fn)       # a Numba device function

    def kernel(out):
        out[0] = device(SCALE) + table[0]

    return kernel


COMPILED, LOADED = 1, 2           # the handles of a compiled and of a loaded kernel


class Dispatcher:
    """A stand-in for a ``@cuda.jit`` dispatcher that records its compilations."""

    def __init__(self, py_func, options=None):
        self.py_func = py_func
        self.targetoptions = options or {}
        self.compiled = 0

    def compile(self, argtypes):
        self.compiled += 1
        library = types.SimpleNamespace(
            get_cufunc=lambda: types.SimpleNamespace(kernel=types.SimpleNamespace(handle=COMPILED)),
            get_cubin=lambda: types.SimpleNamespace(code=b"\x7fELF cubin bytes"),
            _entry_name="_Z6kernel", _setup_functions=[])
        return types.SimpleNamespace(_codelibrary=library)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SPHGPU_KERNEL_CACHE", raising=False)
    monkeypatch.setattr(_kernel_cache, "_compute_capability", lambda: "90")
    return tmp_path


def _key(func, kinds=((np.dtype(np.float64), 1),), options=None):
    return _kernel_cache.key(Dispatcher(func, options), kinds)


def test_key_follows_closures_globals_options_and_argument_kinds(cache_dir, monkeypatch):
    table = np.arange(4.0)
    base = _key(_factory(2, table))
    assert base == _key(_factory(2, table.copy()))                   # same values, same key
    assert base != _key(_factory(5, table))                           # device function's closure
    assert base != _key(_factory(2, table + 1))                       # array contents
    assert base != _key(_factory(2, table), kinds=((np.dtype(np.float32), 1),))
    assert base != _key(_factory(2, table), options={"fastmath": True})
    monkeypatch.setitem(globals(), "SCALE", 4)                        # a global it reads
    assert base != _key(_factory(2, table))
    monkeypatch.setattr(_kernel_cache, "_compute_capability", lambda: "100")
    monkeypatch.setitem(globals(), "SCALE", 3)
    assert base != _key(_factory(2, table))                           # another GPU generation


def test_package_source_is_in_the_key(cache_dir, monkeypatch):
    base = _key(_factory(2, np.zeros(1)))
    monkeypatch.setattr(_kernel_cache, "package_digest", lambda: "edited")
    assert base != _key(_factory(2, np.zeros(1)))


def test_intrinsics_are_described_by_their_typing_function(cache_dir):
    def intrinsic(nbits):
        def defn(typingctx, x):
            return nbits
        return types.SimpleNamespace(_defn=defn)

    def kernel_with(obj):
        def kernel(out):
            out[0] = obj(1)
        return kernel

    assert _key(kernel_with(intrinsic(8))) != _key(kernel_with(intrinsic(4)))


def test_foreign_functions_are_described_by_name_and_signature(cache_dir):
    # cuda.declare_device's descriptor (sphgpu._dmma's tensor-core instruction): its repr holds
    # an address, but its code is in a sphgpu file, so name and signature describe it
    class ExternFunction:
        def __init__(self, name, sig):
            self.name, self.sig = name, sig

    def kernel_with(obj):
        def kernel(out):
            out[0] = obj(1)
        return kernel

    one = _key(kernel_with(ExternFunction("f", "float64(float64)")))
    assert one is not None
    assert one == _key(kernel_with(ExternFunction("f", "float64(float64)")))
    assert one != _key(kernel_with(ExternFunction("g", "float64(float64)")))
    assert one != _key(kernel_with(ExternFunction("f", "float64(int64)")))


def test_values_without_a_stable_description_are_not_cached(cache_dir):
    thing = object()

    def kernel(out):
        out[0] = thing

    assert _key(kernel) is None


def test_switched_off(cache_dir, monkeypatch):
    monkeypatch.setenv("SPHGPU_KERNEL_CACHE", "0")
    assert _key(_factory(2, np.zeros(1))) is None


def test_store_and_load(cache_dir):
    _kernel_cache.store("abc", b"\x00\x01cubin\n\xff", "_Z3fooPd")
    assert _kernel_cache.load("abc") == (b"\x00\x01cubin\n\xff", "_Z3fooPd")
    assert _kernel_cache.load("missing") is None
    (cache_dir / "kernels" / "bad.cubin").write_bytes(b"no newline")
    assert _kernel_cache.load("bad") is None
    assert not list((cache_dir / "kernels").glob(".*.tmp"))


class DeviceArray(np.ndarray):           # a NumPy array with a device pointer, like CuPy's
    data = types.SimpleNamespace(ptr=4096)


def test_a_new_process_loads_the_stored_cubin_without_compiling(cache_dir, monkeypatch):
    """First process: Numba compiles, the cubin is stored. Next process (the launcher's memory
    emptied): the cubin is loaded from disk and Numba is not asked. A damaged file: compiled
    again and rewritten."""
    launched, loaded = [], []

    class ObjectCode:
        def __init__(self, cubin):
            if not cubin.startswith(b"\x7fELF"):
                raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
            loaded.append(cubin)

        def get_kernel(self, name):
            assert name == "_Z6kernel"
            return types.SimpleNamespace(handle=LOADED)

    monkeypatch.setattr(_fast_launch, "SIMULATOR", False)
    monkeypatch.setattr(_fast_launch, "_driver_launch", lambda f, *rest: launched.append(f))
    monkeypatch.setattr(_fast_launch, "_object_code", ObjectCode)
    kern = Dispatcher(_factory(2, np.zeros(1)))
    out = np.zeros(4).view(DeviceArray)

    def new_process():
        monkeypatch.setattr(_fast_launch, "_compiled", {})
        _fast_launch.launch(kern, 1, 32, 0, out)

    new_process()
    assert kern.compiled == 1 and launched == [COMPILED]
    files = list((cache_dir / "kernels").glob("*.cubin"))
    assert len(files) == 1 and files[0].read_bytes() == b"_Z6kernel\n\x7fELF cubin bytes"
    assert "_factory.<locals>.kernel" in files[0].with_suffix(".txt").read_text()
    new_process()
    assert kern.compiled == 1 and launched[-1] == LOADED
    files[0].write_bytes(b"_Z6kernel\ngarbage")
    new_process()
    assert kern.compiled == 2 and launched[-1] == COMPILED
    assert files[0].read_bytes() == b"_Z6kernel\n\x7fELF cubin bytes"


def test_a_library_module_rebound_under_another_name_keeps_the_key(cache_dir, monkeypatch):
    """Numba binds ``numba.types`` to a module named numba.types before its compiler starts and
    numba.core.types after: a kernel reading ``types`` must keep its key (it once did not,
    and the second process recompiled the sort's pass kernel)."""
    mod = types.ModuleType("numba.types")
    monkeypatch.setitem(globals(), "lib", mod)

    def kernel(out):
        out[0] = lib.uint32(1)

    before = _key(kernel)
    mod.__name__ = "numba.core.types"
    assert _key(kernel) == before


def test_old_files_are_removed_when_a_process_first_stores(cache_dir, monkeypatch):
    import os
    import time

    _kernel_cache.store("fresh", b"cubin", "_Z1f")
    kernels = cache_dir / "kernels"
    stale = kernels / "stale.cubin"
    stale.write_bytes(b"_Z1g\ncubin")
    old = time.time() - (_kernel_cache.KEEP_DAYS + 1) * 86400
    os.utime(stale, (old, old))
    _kernel_cache.store("other", b"cubin", "_Z1h")
    assert stale.exists()                       # this process has pruned already
    monkeypatch.setattr(_kernel_cache, "_pruned", set())   # a new process
    _kernel_cache.store("other", b"cubin", "_Z1h")
    assert not stale.exists()
    assert _kernel_cache.load("fresh") == (b"cubin", "_Z1f")
