"""radix_sort / argsort on the "cpu" and "reference" backends against numpy.argsort(kind="stable").

Sorted keys are compared bit for bit (so -0.0 and NaN payloads must come back where NumPy puts
them), permutations exactly.
"""

import numpy as np
import pytest

from sphgpu.sort import _cpu, argsort, radix_sort
from sphgpu.sort.keys import SUPPORTED_DTYPES

from .test_keys import sample

BACKENDS = ["cpu", "reference"]
SIZES = [0, 1, 2, 31, 32, 33, 2**6 + 1, 2**10 + 1, 2**16 + 1]   # 2**16 + 1: the parallel path


def keys_of(rng, dtype, n, few=False):
    """n keys of dtype: over the whole range, or from a handful of values (many ties)."""
    pool = sample(rng, dtype, max(n, 16))
    if few:
        pool = pool[rng.integers(0, 8, max(n, 16))]
    return pool[:n].copy()


def same_bits(a, b):
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def check(x, backend, **kw):
    """Every public output of a sort of x against NumPy's stable order."""
    before = x.copy()
    ref = np.argsort(x, kind="stable")
    s = radix_sort(x, backend=backend, **kw)
    assert same_bits(s, x[ref])
    values = np.arange(x.size, dtype=np.float64)[:, None] * [1.0, -1.0]
    s2, v2, p2 = radix_sort(x, backend=backend, values=values, return_permutation=True, **kw)
    assert p2.dtype == np.int64 and np.array_equal(p2, ref)
    assert same_bits(s2, x[ref]) and np.array_equal(v2, values[ref])
    if x.size < 5000:                    # the same path as return_permutation: small sizes only
        assert np.array_equal(argsort(x, backend=backend, **kw), ref)
    assert same_bits(x, before)                                          # input untouched


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_every_dtype_and_size(rng, dtype, backend):
    for n in SIZES:
        check(keys_of(rng, dtype, n), backend)
        check(keys_of(rng, dtype, n, few=True), backend)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_large_cpu(rng, dtype):
    x = keys_of(rng, dtype, 2**20 + 7, few=dtype.itemsize == 1)
    ref = np.argsort(x, kind="stable")
    s, p = radix_sort(x, backend="cpu", return_permutation=True)
    assert np.array_equal(p, ref) and same_bits(s, x[ref])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern", ["equal", "sorted", "reversed", "sawtooth"])
def test_patterns(rng, backend, pattern):
    cases = [(d, n) for d in SUPPORTED_DTYPES for n in (33, 1025)]
    cases += [(np.dtype(d), 2**16 + 1) for d in (np.uint32, np.int64, np.float64)]
    for dtype, n in cases:
        x = np.sort(keys_of(rng, dtype, n), kind="stable")
        if pattern == "equal":
            x = np.full(n, x[n // 2])
        elif pattern == "reversed":
            x = x[::-1].copy()
        elif pattern == "sawtooth":
            x = np.concatenate([x[::2], x[1::2]])
        check(x, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, key_bits, radix_bits", [
    (np.uint32, 10, 5), (np.uint32, 10, 3), (np.uint32, 10, 4), (np.uint32, 10, 10),
    (np.uint32, 10, 16), (np.uint32, 1, 1), (np.uint32, 17, 6), (np.uint32, 32, 8),
    (np.uint32, 32, 11), (np.uint32, 32, 16), (np.uint32, 32, 7), (np.uint16, 16, 3),
    (np.uint8, 8, 8), (np.uint64, 64, 11), (np.uint64, 64, 13), (np.uint64, 40, 16),
    (np.uint64, 20, 7), (np.uint64, 32, 11),
    (np.int64, 64, 9), (np.float32, 32, 5), (np.float64, 64, 12),
])
def test_key_and_radix_bits(rng, backend, dtype, key_bits, radix_bits):
    dtype = np.dtype(dtype)
    for n in (33, 3000):
        if dtype.kind == "u":
            x = rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype)
            x[0] = 2**key_bits - 1
        else:
            x = keys_of(rng, dtype, n)
        check(x, backend, key_bits=key_bits, radix_bits=radix_bits)


@pytest.mark.parametrize("nblocks", [1, 2, 3, 7])
@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_cpu_block_split(rng, nblocks, dtype):
    """The parallel scheme with any number of blocks, including more blocks than threads and
    blocks of unequal length, at small n."""
    for n in (2, 5, 31, 1001):
        u = rng.integers(0, 2**20, n).astype(dtype)
        u[rng.integers(0, n, n // 3)] = u[0]                             # ties across blocks
        ref = np.argsort(u, kind="stable")
        for key_bits, radix_bits in ((20, 8), (20, 3), (20, 20)):
            s, p = _cpu.sort_pairs(u, key_bits, radix_bits, True, nblocks=nblocks)
            assert np.array_equal(p, ref) and np.array_equal(s, u[ref])
            s, none = _cpu.sort_pairs(u, key_bits, radix_bits, False, nblocks=nblocks)
            assert none is None and np.array_equal(s, u[ref])


def test_cpu_skips_constant_digits_correctly(rng):
    """Keys whose middle and top digits are constant: those passes are skipped."""
    n = 5000
    u = (rng.integers(0, 256, n) | (0xAB << 8) | (rng.integers(0, 256, n) << 16)
         | (0x7F << 24)).astype(np.uint32)
    ref = np.argsort(u, kind="stable")
    for want in (True, False):
        s, p = _cpu.sort_pairs(u, 32, 8, want, nblocks=3)
        assert np.array_equal(s, u[ref])
        assert p is None if not want else np.array_equal(p, ref)
    s, p = _cpu.sort_pairs(np.full(10, 7, np.uint64), 3, 2, True)       # every pass skipped
    assert np.array_equal(s, np.full(10, 7)) and np.array_equal(p, np.arange(10))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_floats_without_nan_or_negative_zero(rng, backend, dtype):
    """No -0.0 and no NaN: the keys come back through the inverse transform, not a gather."""
    for n in (33, 2**16 + 1):
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(dtype)
        x[x == 0] = 0.0                              # small values rounded to -0.0
        x[:3] = [np.inf, -np.inf, 0.0]
        x[rng.integers(0, n, n // 4)] = x[rng.integers(0, n, n // 4)]
        check(x, backend)


def test_small_non_negative_signed_keys_sort_on_their_bits(rng):
    x = rng.integers(0, 1024, 5000).astype(np.int64)
    for backend in BACKENDS:
        check(x, backend, key_bits=10, radix_bits=5)
        check((x // 9).astype(np.int8), backend, key_bits=7)
        check(x * 2**40, backend)                                       # 50 bits, 64-bit passes
    check(np.zeros(9, np.int32), "cpu")                                 # all zero: no pass


def test_other_inputs(rng):
    x = rng.integers(-50, 50, 1001).astype(np.int32)
    assert np.array_equal(argsort(x[::3]), np.argsort(x[::3], kind="stable"))  # strided view
    big_endian = x.astype(">i4")
    assert np.array_equal(argsort(big_endian), np.argsort(x, kind="stable"))
    assert np.array_equal(radix_sort([3, -1, 2]), [-1, 2, 3])          # a list: int64
    values = rng.standard_normal((1001, 2, 3))
    s, v = radix_sort(x, values=values)
    assert np.array_equal(v, values[np.argsort(x, kind="stable")])
    s, v, p = radix_sort(np.empty(0, np.float32), values=np.empty((0, 2)), return_permutation=True)
    assert s.shape == (0,) and s.dtype == np.float32 and v.shape == (0, 2) and p.dtype == np.int64
    one = np.array([-0.0])
    s = radix_sort(one)
    assert np.signbit(s[0]) and s is not one
