"""The order-preserving key transforms: unsigned order == NumPy's stable order, exactly."""

import numpy as np
import pytest

from sphgpu.sort.keys import (SUPPORTED_DTYPES, bits_needed, float_radix_keys, from_radix_keys,
                              to_radix_keys)

INTS = [d for d in SUPPORTED_DTYPES if d.kind in "ui"]
FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


def sample(rng, dtype, n=2000):
    """Random keys over the whole range of dtype, with duplicates and the extreme values."""
    if dtype.kind == "f":
        decades = 6 if dtype.itemsize == 2 else 30     # float16 keeps some finite values
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-decades, decades, n)).astype(dtype)
        x[rng.integers(0, n, 200)] = x[rng.integers(0, n, 200)]          # duplicates
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0,
                             np.finfo(dtype).max, -np.finfo(dtype).max,
                             np.finfo(dtype).smallest_subnormal,
                             -np.finfo(dtype).smallest_subnormal], dtype=dtype)
        x[rng.integers(0, n, 100)] = rng.choice(specials, 100)
        # a NaN with another payload and the sign bit set
        bits = x.view(f"u{dtype.itemsize}")
        bits[7] = np.array(-1, dtype=f"i{dtype.itemsize}").view(bits.dtype)  # all bits set: -NaN
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[rng.integers(0, n, 200)] = x[rng.integers(0, n, 200)]
    x[:4] = [info.min, info.max, 0, info.min + 1]
    return x


def numpy_equal(a, b):
    """Equality as NumPy's sort sees it: NaNs are all equal to each other."""
    return (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_unsigned_order_is_numpy_stable_order(rng, dtype):
    x = sample(rng, dtype)
    before = x.copy()
    u, full_bits = to_radix_keys(x)
    assert np.array_equal(x.view(np.uint8), before.view(np.uint8))        # input untouched
    assert full_bits == 8 * dtype.itemsize
    assert u.dtype == (np.uint64 if dtype.itemsize == 8 else np.uint32)
    order = np.argsort(x, kind="stable")
    us, xs = u[order], x[order]
    assert np.all(us[1:] >= us[:-1])
    # ties in the radix keys exactly where NumPy sees equal keys
    assert np.array_equal(us[1:] == us[:-1], numpy_equal(xs[1:], xs[:-1]))
    assert np.array_equal(np.argsort(u, kind="stable"), order)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_round_trip_is_exact(rng, dtype):
    x = sample(rng, dtype)
    back = from_radix_keys(to_radix_keys(x)[0], dtype)
    assert back.dtype == dtype and np.array_equal(back, x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_placement_of_nan_zero_and_inf(dtype):
    x = np.array([np.nan, 1.0, -0.0, np.inf, -np.nan, 0.0, -np.inf, -1.0], dtype=dtype)
    u, _ = to_radix_keys(x)
    assert u[6] < u[7] < u[2] == u[5] < u[1] < u[3] < u[0] == u[4]   # -inf < -1 < 0 < 1 < inf < NaN
    back = from_radix_keys(u, dtype)
    # floats come back canonical: -0.0 as +0.0, every NaN as the positive quiet NaN
    assert np.array_equal(back[[1, 3, 6, 7]], x[[1, 3, 6, 7]])
    assert not np.signbit(back[2]) and back[2] == 0.0
    assert np.isnan(back[4]) and not np.signbit(back[4])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_round_trip_is_exact_without_nan_and_negative_zero(rng, dtype):
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(1000) * 10.0 ** rng.integers(-30, 30, 1000)).astype(dtype)
    x[x == 0] = 0.0                                  # small values rounded to -0.0
    x[:4] = [np.inf, -np.inf, 0.0, np.finfo(dtype).smallest_subnormal]
    u, exact = float_radix_keys(x)
    assert exact and np.array_equal(u, to_radix_keys(x)[0])
    assert np.array_equal(from_radix_keys(u, dtype).view(u.dtype), x.view(u.dtype))
    for special in (-0.0, np.nan):
        y = x.copy()
        y[5] = special
        assert not float_radix_keys(y)[1]


def test_widening_and_identity(rng):
    x = rng.integers(0, 2**32, 100, dtype=np.uint64).astype(np.uint32)
    assert to_radix_keys(x)[0] is x                                     # nothing to do
    small = np.array([3, 255, 0], dtype=np.uint8)
    u, bits = to_radix_keys(small)
    assert u.dtype == np.uint32 and bits == 8 and np.array_equal(u, [3, 255, 0])
    assert np.array_equal(to_radix_keys(np.array([-1, 0, 1], np.int16))[0],
                          [0x7FFF, 0x8000, 0x8001])


def test_bits_needed():
    assert bits_needed(np.array([], np.uint32)) == 0
    assert bits_needed(np.zeros(5, np.uint32)) == 0
    assert bits_needed(np.array([1], np.uint32)) == 1
    assert bits_needed(np.array([255, 3], np.uint32)) == 8
    assert bits_needed(np.array([256], np.uint32)) == 9
    assert bits_needed(np.array([2**64 - 1], np.uint64)) == 64


@pytest.mark.parametrize("bad", [np.bool_, np.complex128, "datetime64[s]", object])
def test_unsupported_dtype(bad):
    with pytest.raises(TypeError, match="keys must have one of the dtypes"):
        to_radix_keys(np.zeros(3, dtype=bad))
