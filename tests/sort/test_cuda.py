"""The CUDA radix sort kernels (Numba's simulator in CI, the GPU on the GPU machine) against
numpy.argsort(kind="stable").

Under the simulator a tile is 32 threads x 8 keys (``_cuda.THREADS``, ``DEFAULT_ITEMS``), so a
few hundred keys already cross several tiles and the decoupled look-back runs; the tests that
pick ``threads`` and ``items`` themselves use several warps per tile.
"""

import sys
import warnings

import numba
import numpy as np
import pytest
from numba import cuda

from sphgpu._device import to_host
from sphgpu.backends import cuda_available
from sphgpu.sort import _cuda
from sphgpu.sort import _cuda_kernels as K
from sphgpu.sort.keys import FLOAT, SIGNED, SUPPORTED_DTYPES, UNSIGNED

_TRANSFORM = {"u": UNSIGNED, "i": SIGNED, "f": FLOAT}

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")


@pytest.fixture(autouse=True)
def _fresh_plans():
    """Sort plans hold the kernels they were built with: tests that replace a kernel factory
    must not find a plan made before (or leave theirs to the next test)."""
    _cuda._plan.cache_clear()
    yield
    _cuda._plan.cache_clear()


@pytest.fixture(autouse=True)
def _fast_simulator_barriers(monkeypatch):
    """The simulator's block manager polls its threads; with Python's default 5 ms switch
    interval each barrier costs milliseconds, and shorter slices make these tests ~3x faster.
    But the simulator creates a block's shared arrays on first use, keyed by the calling source
    line, without a lock, so more frequent switches let two threads each create their own copy
    (seen as garbage indices). The shorter interval comes only with the same creation under a
    lock."""
    import threading
    import traceback

    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAShared
        from numba.np.numpy_support import as_dtype
    except ImportError:
        FakeCUDAShared = None
    if (not _cuda.SIMULATOR or FakeCUDAShared is None
            or not hasattr(FakeCUDAShared(0), "_allocations")):
        yield
        return
    lock = threading.Lock()
    unlocked = FakeCUDAShared.array

    def array(self, shape, dtype):
        if shape == 0:                                      # dynamic shared memory
            return unlocked(self, shape, dtype)
        caller = tuple(traceback.extract_stack(sys._getframe(1), limit=1)[0][0:2])
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(
                    shape, as_dtype(dtype) if not isinstance(dtype, np.dtype) else dtype)
        return res

    monkeypatch.setattr(FakeCUDAShared, "array", array)
    before = sys.getswitchinterval()
    sys.setswitchinterval(2e-4)
    yield
    sys.setswitchinterval(before)


def tied_keys(rng, n, key_bits, dtype):
    """n keys below 2**key_bits, a third of them equal (stability matters), largest present."""
    keys = rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype)
    if n:
        keys[: n // 3] = keys[n // 2]
        keys[-1] = 2**key_bits - 1
    return keys


def check_pairs(keys, key_bits, radix_bits, **launch):
    before = keys.copy()
    want = np.argsort(keys, kind="stable")
    out, perm = _cuda.sort_pairs(keys, key_bits, radix_bits, True, **launch)
    assert perm.dtype == np.int64
    np.testing.assert_array_equal(perm, want)
    np.testing.assert_array_equal(out, keys[want])
    out2, none = _cuda.sort_pairs(keys, key_bits, radix_bits, False, **launch)
    assert none is None
    np.testing.assert_array_equal(out2, keys[want])
    np.testing.assert_array_equal(keys, before)                # input untouched


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 31, 33, 300])
@pytest.mark.parametrize("key_bits, radix_bits", [(10, 5), (10, 3), (7, 8), (12, 4)])
def test_sort_pairs_is_a_stable_sort(dtype, n, key_bits, radix_bits, rng):
    check_pairs(tied_keys(rng, n, key_bits, dtype), key_bits, min(radix_bits, key_bits))


@pytest.mark.parametrize("threads, items, dtype, key_bits, radix_bits", [
    (64, 2, np.uint32, 16, 8),       # 2 warps, R = 256 > threads: several digits per thread
    (96, 1, np.uint64, 12, 6),       # 3 warps, one key each
    (32, 3, np.uint32, 9, 3),        # one warp, 3 passes
])
def test_look_back_over_many_tiles(threads, items, dtype, key_bits, radix_bits, rng):
    """At least 6 tiles, ragged last tile, many equal keys."""
    n = 6 * threads * items + 5
    check_pairs(tied_keys(rng, n, key_bits, dtype), key_bits, radix_bits, threads=threads,
                items=items)


def test_pass_kernel_copies_a_constant_digit_on_its_own(rng):
    """A pass whose digit is the same for every key only copies (keys and permutation)."""
    keys = (tied_keys(rng, 3 * 96 + 5, 6, np.uint32) << np.uint32(4)) | np.uint32(9)
    check_pairs(keys, 10, 4, threads=32, items=3)


def test_look_back_over_aggregates_only(rng, monkeypatch):
    """Tiles that publish only their own counts: every look-back sums aggregates back to tile
    0 (the simulator runs blocks in order, so otherwise it meets only inclusive prefixes)."""
    build = K.onesweep_kernel
    monkeypatch.setattr(K, "onesweep_kernel",
                        lambda *a, **kw: build(*a, publish_inclusive=False, **kw))
    check_pairs(tied_keys(rng, 7 * 64 + 3, 11, np.uint32), 11, 6, threads=32, items=2)


def test_wide_look_back_words(rng, monkeypatch):
    """The uint64 look-back words of sorts of 2**30 keys or more, at a small size."""
    monkeypatch.setattr(K, "status_shift", lambda n: 40)
    check_pairs(tied_keys(rng, 5 * 64 + 1, 14, np.uint64), 14, 7, threads=32, items=2)


def test_constant_digits_only_copy(rng):
    """Keys whose middle and top digits are constant: the histogram kernel's scan flags
    exactly those passes (which then only copy), and the sort still comes out right, also
    when no digit varies at all."""

    def flags():
        return [to_host(s.constant).tolist() for s in _cuda._SCRATCH.values()]

    n = 600
    keys = (rng.integers(0, 256, n) | (0xAB << 8) | (rng.integers(0, 256, n) << 16)
            | (0x7F << 24)).astype(np.uint32)
    keys[: n // 2] = keys[n // 4]
    want = np.argsort(keys, kind="stable")
    _cuda.clear_scratch()
    out, perm = _cuda.sort_pairs(keys, 32, 8, True)
    np.testing.assert_array_equal(perm, want)
    np.testing.assert_array_equal(out, keys[want])
    assert flags() == [[0, 1, 0, 1]]
    for want_perm in (True, False):
        _cuda.clear_scratch()
        out, perm = _cuda.sort_pairs(np.full(300, 5, np.uint64), 3, 2, want_perm)
        np.testing.assert_array_equal(out, np.full(300, 5))
        if want_perm:
            np.testing.assert_array_equal(perm, np.arange(300))
        assert flags() == [[1, 1]]


def test_scratch_is_reused_and_left_clean(rng):
    """The second sort of a shape takes the first one's scratch (its histogram zeroed by the
    scan kernel, its look-back words by the histogram kernel) and still sorts right."""
    _cuda.clear_scratch()
    keys = tied_keys(rng, 333, 12, np.uint32)
    check_pairs(keys, 12, 4)
    assert len(_cuda._SCRATCH) == 2                     # with and without the permutation
    held = [s.hist for s in _cuda._SCRATCH.values()]
    assert all(not np.any(h) for h in held)
    other = tied_keys(rng, 333, 12, np.uint32)
    check_pairs(other, 12, 4)
    assert all(a is b for a, b in zip([s.hist for s in _cuda._SCRATCH.values()], held))


@pytest.mark.parametrize("dtype, key_bits, radix_bits, threads, copies", [
    (np.uint32, 13, 5, 32, None), (np.uint64, 64, 8, 32, None), (np.uint32, 10, 5, 128, 4),
    (np.uint32, 10, 5, 128, 2)])
def test_histogram_of_all_passes_counts_and_scans_every_digit(dtype, key_bits, radix_bits,
                                                              threads, copies, rng):
    """Each digit's start in each pass is the exclusive cumulative count of the smaller digits,
    written by whichever of the 3 blocks finishes last, which leaves the counts and its
    ticket zero for the next sort (twice in a row, to see that); with the block's counts
    split into copies (several warps a block) too."""
    import numba

    n = 500
    keys = rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype)
    keys[:7] = keys[7]
    passes = -(-key_bits // radix_bits)
    R = 1 << radix_bits
    hist = np.zeros(passes * R, np.int64)
    ticket = np.zeros(1, np.uint32)
    kernel = K.histogram_kernel(passes, radix_bits, threads, numba.from_dtype(keys.dtype),
                                copies=copies)
    for _ in range(2):
        status = np.full(77, 9, np.uint32)
        digit_start = np.full((passes, R), -1, np.int64)
        constant = np.full(passes, 7, np.int32)
        kernel[3, threads](keys, key_bits, hist, status, digit_start, constant, ticket)
        assert not status.any() and not hist.any() and ticket[0] == 0
        for p in range(passes):
            bits = min(radix_bits, key_bits - p * radix_bits)
            digits = (keys >> dtype(p * radix_bits)) & dtype(2**bits - 1)
            count = np.bincount(digits.astype(np.int64), minlength=R)
            np.testing.assert_array_equal(digit_start[p], np.cumsum(count) - count)
            assert constant[p] == int(count.max() == n)


def test_histogram_copies_one_a_warp_within_the_budget():
    assert K.histogram_copies(2, 5, 256) == 8          # PIC: 2 x 32 digits, 8 warps
    assert K.histogram_copies(4, 8, 256) == 4          # 4 KiB of counts a copy, 16 KiB in all
    assert K.histogram_copies(8, 8, 256) == 2
    assert K.histogram_copies(2, 5, 32) == 1


def test_balanced_radix_bits():
    assert [_cuda._balanced_bits(b) for b in (1, 8, 9, 10, 16, 20, 30, 32, 64)] == [
        1, 8, 5, 5, 8, 7, 8, 8, 8]


def test_full_width_keys(rng):
    keys = rng.integers(0, 2**32, 700, dtype=np.uint64) << np.uint64(31)   # low 31 bits zero
    want = np.argsort(keys, kind="stable")
    out, perm = _cuda.sort_pairs(keys, 64, 8, True)
    np.testing.assert_array_equal(perm, want)
    np.testing.assert_array_equal(out, keys[want])


def test_radix_bits_above_the_shared_memory_limit_is_refused():
    with pytest.raises(ValueError, match="radix_bits"):
        _cuda.sort_pairs(np.zeros(4, np.uint32), 16, 9, True)


def test_launch_shape_fits_shared_memory():
    for bits in range(1, _cuda.MAX_RADIX_BITS + 1):
        for key_bytes in (4, 8):
            for perm in (False, True):
                threads, items = _cuda.launch_shape(bits, key_bytes, perm, items=64,
                                                    threads=256)
                assert items >= 1 and items <= K.max_items(bits, 256, key_bytes, perm)
    # uint32 keys + permutation, 256 threads: ptxas (sm_90) reports 47,140 bytes of static
    # shared memory at 18 items, the most below 48 KB
    items = _cuda.launch_shape(8, 4, True, threads=256)[1]
    assert items == min(_cuda.DEFAULT_ITEMS, K.max_items(8, 256, 4, True))
    if not _cuda.SIMULATOR:
        assert K.max_items(8, 256, 4, True) == 18


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_public_api_on_the_cuda_backend(dtype, rng):
    import sphgpu.sort as S
    n = 300
    keys = (rng.standard_normal(n) * 50).astype(dtype)
    keys[rng.integers(0, n, n // 2)] = keys[7]                  # ties
    if dtype.kind == "f":
        keys[[3, 7]] = np.nan
        keys[10] = -0.0
    if dtype.kind == "f":
        keys.view(f"u{dtype.itemsize}")[12] = np.iinfo(f"u{dtype.itemsize}").max    # -NaN
    want = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(S.argsort(keys, backend="cuda"), want)
    out, vals = S.radix_sort(keys, values=np.arange(float(n)), backend="cuda")
    np.testing.assert_array_equal(vals, want.astype(float))
    # bit for bit: -0.0 and the NaN payloads come back as they went in, with or without the
    # permutation (the kernels move the keys' own bits)
    np.testing.assert_array_equal(out.view(np.uint8), keys[want].view(np.uint8))
    out = S.radix_sort(keys, backend="cuda")
    np.testing.assert_array_equal(out.view(np.uint8), keys[want].view(np.uint8))


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_device_radix_key_orders_as_numpy(dtype, rng):
    """The kernels' order-preserving map (radix_key) against NumPy's stable order: sorted,
    and ties exactly where NumPy sees equal keys (-0.0 == +0.0, every NaN equal)."""
    from .test_keys import numpy_equal, sample

    x = sample(rng, dtype, 200)
    bits = x.view(f"u{dtype.itemsize}")
    to_radix = K.radix_key(numba.from_dtype(bits.dtype), _TRANSFORM[dtype.kind])
    wide = np.uint64 if dtype.itemsize == 8 else np.uint32

    @cuda.jit
    def apply(src, dst):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < src.size:
            dst[i] = to_radix(src[i])

    u = np.zeros(x.size, wide)
    apply[(x.size + 63) // 64, 64](bits, u)
    order = np.argsort(x, kind="stable")
    us, xs = u[order], x[order]
    assert np.all(us[1:] >= us[:-1])
    np.testing.assert_array_equal(us[1:] == us[:-1], numpy_equal(xs[1:], xs[:-1]))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_eight_bit_keys_alone_are_written_as_runs(dtype, rng, monkeypatch):
    """8-bit keys without the permutation: the digit is the whole key, so the sorted keys are
    written from the digit starts (fill_kernel) and no pass kernel is built; ragged lengths
    (n not a multiple of the 4 keys of a word), empty digits, one digit holding most keys."""
    built = []
    build = K.onesweep_kernel
    monkeypatch.setattr(K, "onesweep_kernel", lambda *a, **kw: built.append(a) or build(*a, **kw))
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    transform = _TRANSFORM[dtype.kind]
    for n in (2, 3, 5, 8, 333, 1001):
        keys = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        keys[: n // 2] = keys[-1]
        out, perm = _cuda.sort_pairs(keys.view(np.uint8), 8, 8, False, transform=transform)
        assert perm is None
        np.testing.assert_array_equal(out.view(dtype), np.sort(keys, kind="stable"))
    assert not built
    # a grid smaller than the work: each thread walks on over several words
    keys = np.sort(rng.integers(info.min, 0, 1003, endpoint=True).astype(dtype))  # few digits
    radix = keys.view(np.uint8) ^ np.uint8(0x80 if dtype.kind == "i" else 0)
    start = np.searchsorted(np.sort(radix), np.arange(256)).astype(np.int64)[None, :]
    words = np.zeros(251, np.uint32)
    K.fill_kernel(32, transform)[2, 32](start, words, 1003)
    np.testing.assert_array_equal(words.view(np.uint8)[:1003].view(dtype), keys)


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.float32, np.int8])
def test_device_keys_sort_every_bit_without_reading_them_on_the_host(dtype, rng, monkeypatch):
    """Device keys without key_bits: no host read of their range (it would make the host wait
    for the GPU); every bit of the dtype is sorted, the passes whose digit is the same for
    every key only copying. Small keys in a wide type make most passes such copies. (The
    simulator's "device" arrays are NumPy arrays, so the device path is called directly.)"""
    from sphgpu.sort import api

    def host_read(*a):
        raise AssertionError("the host read the keys")

    monkeypatch.setattr(api, "bits_needed", host_read)
    monkeypatch.setattr(api, "_radix_keys", host_read)
    dtype = np.dtype(dtype)
    keys = rng.integers(-40 if dtype.kind in "if" else 0, 90, 150).astype(dtype)
    keys[::7] = keys[3]
    want = np.argsort(keys, kind="stable")
    for need_perm in (True, False):
        out, perm = api._sort_native(_cuda, keys, True, None, None, need_perm)
        np.testing.assert_array_equal(out.view(np.uint8), keys[want].view(np.uint8))
        if need_perm:
            np.testing.assert_array_equal(perm, want)


# -- real GPU only --------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("log2n", [20, 22, 25])
@pytest.mark.parametrize("dtype, key_bits", [(np.uint32, 32), (np.uint32, 10), (np.uint64, 64),
                                             (np.uint64, 40)])
def test_large_sorts_on_the_gpu(log2n, dtype, key_bits, rng, monkeypatch):
    import cupy

    monkeypatch.setenv("SPHGPU_AUTOTUNE", "0")      # the tuner has its own test below
    n = (1 << log2n) + 7                                        # a ragged last tile
    keys = rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype)
    keys[rng.integers(0, n, n // 8)] = keys[0]                  # ties across tiles
    want = np.argsort(keys, kind="stable")
    d = cupy.asarray(keys)
    for bits in sorted({_cuda.choose_radix_bits(n, key_bits, keys.itemsize, True), 8, 5}):
        out, perm = _cuda.sort_pairs(d, key_bits, bits, True)
        assert isinstance(perm, cupy.ndarray) and perm.dtype == np.int64
        np.testing.assert_array_equal(perm.get(), want)
        np.testing.assert_array_equal(out.get(), keys[want])
        out = _cuda.sort_pairs(d, key_bits, bits, False)[0]
        np.testing.assert_array_equal(out.get(), keys[want])
    np.testing.assert_array_equal(d.get(), keys)                # input untouched


@pytest.mark.gpu
def test_every_dtype_on_the_gpu(rng, monkeypatch):
    import cupy

    import sphgpu.sort as S
    monkeypatch.setenv("SPHGPU_AUTOTUNE", "0")
    n = (1 << 20) + 3
    for dtype in SUPPORTED_DTYPES:
        keys = (rng.standard_normal(n) * 1000).astype(dtype)
        if dtype.kind == "f":
            keys[[5, 9]] = np.nan
            keys[11] = -0.0
        want = np.argsort(keys, kind="stable")
        d = cupy.asarray(keys)
        perm = S.argsort(d, backend="cuda")
        np.testing.assert_array_equal(perm.get(), want)
        out = S.radix_sort(d, backend="cuda")         # keys alone: no permutation to gather by
        np.testing.assert_array_equal(out.get().view(np.uint8), keys[want].view(np.uint8))


@pytest.mark.gpu
def test_small_sorts_on_the_gpu_warn_nothing(rng):
    """Grids of one block (the digit scan) or a few tiles: nothing printed to the user."""
    import cupy

    import sphgpu.sort as S
    keys = cupy.asarray(rng.standard_normal(1000).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S.radix_sort(keys, return_permutation=True, backend="cuda")
        S.radix_sort(keys, key_bits=32, radix_bits=4, backend="cuda")


@pytest.mark.gpu
def test_autotuner_measures_once_caches_on_disk_and_sorts_correctly(tmp_path, monkeypatch, rng):
    import json

    import sphgpu

    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cuda, "_tuned", {})
    keys = rng.integers(0, 2**20, (1 << 20) + 7, dtype=np.uint32)
    perm = sphgpu.argsort(keys, backend="cuda")
    np.testing.assert_array_equal(perm, np.argsort(keys, kind="stable"))
    cache = json.loads((tmp_path / "sort_launch.json").read_text())
    (key, (bits, items)), = cache.items()
    assert "key_bits=20" in key and "log2n=21" in key and 4 <= bits <= _cuda.MAX_RADIX_BITS
    # a new process reads the file and measures nothing
    monkeypatch.setattr(_cuda, "_tuned", {})
    monkeypatch.setattr(_cuda, "_measure", lambda *a: pytest.fail("measured twice"))
    assert _cuda.choose_radix_bits(len(keys), 20, 4, True) == bits
    np.testing.assert_array_equal(sphgpu.argsort(keys, backend="cuda"), perm)


@pytest.mark.gpu
def test_copy_passes_and_streams_on_the_gpu(rng, monkeypatch):
    """Keys whose second byte is constant (that pass only copies), sorted on a non-blocking
    stream, twice (the second sort reuses the first one's scratch)."""
    import cupy

    monkeypatch.setenv("SPHGPU_AUTOTUNE", "0")
    n = (1 << 20) + 7
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    keys = (keys & np.uint32(0xFFFF00FF)) | np.uint32(0x5A00)
    keys[rng.integers(0, n, n // 8)] = keys[0]
    want = np.argsort(keys, kind="stable")
    with cupy.cuda.Stream(non_blocking=True) as stream:
        d = cupy.asarray(keys)
        for _ in range(2):
            out, perm = _cuda.sort_pairs(d, 32, 8, True)
            stream.synchronize()
            np.testing.assert_array_equal(perm.get(), want)
            np.testing.assert_array_equal(out.get(), keys[want])
