"""Every public sort function refuses bad input with an error that names the argument."""

import numpy as np
import pytest

import sphgpu
from sphgpu.sort import argsort, bucket_points, healpix_cells, pic, radix_sort

K = np.arange(1000, dtype=np.uint32)          # needs 10 bits
TH = np.full(4, 1.0)


class FakeDeviceArray:
    """Looks like a GPU array to sphgpu (it has __cuda_array_interface__), holds nothing."""

    dtype = np.dtype(np.uint32)
    ndim = 1
    shape = (4,)
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<u4", "data": (0, False),
                                "version": 3}


@pytest.mark.parametrize("call, exc, match", [
    (lambda: radix_sort(K.reshape(10, 100)), ValueError, "keys must be 1-D"),
    (lambda: radix_sort(np.uint32(5)), ValueError, "keys must be 1-D"),
    (lambda: argsort(K.reshape(10, 100)), ValueError, "keys must be 1-D"),
    (lambda: radix_sort(K.astype(bool)), TypeError, "keys must have dtype"),
    (lambda: radix_sort(K + 0j), TypeError, "keys must have dtype"),
    (lambda: radix_sort(K.astype(object)), TypeError, "keys must have dtype"),
    (lambda: radix_sort(K.astype("datetime64[s]")), TypeError, "keys must have dtype"),
    (lambda: radix_sort(np.array(["b", "a"])), TypeError, "keys must have dtype"),
    (lambda: radix_sort("keys"), TypeError, "keys"),
    (lambda: radix_sort(None), TypeError, "keys"),
    # issue 19: np.asarray dropped the mask, and the hidden entries were sorted as data
    (lambda: radix_sort(np.ma.masked_array(K, mask=K % 3 == 0)), TypeError,
     "keys is a numpy.ma masked array"),
    (lambda: argsort(np.ma.masked_array(K)), TypeError, r"keys\.compressed\(\)"),
    (lambda: radix_sort(K, values=np.ma.masked_array(np.ones(1000), mask=K < 5)), TypeError,
     "values is a numpy.ma masked array"),
    (lambda: radix_sort(K, values=np.ones(999)), ValueError, "values must have the length"),
    (lambda: radix_sort(K, values=np.ones((2, 1000))), ValueError, "values"),
    (lambda: radix_sort(K, values=np.float64(1.0)), ValueError, "values"),
    (lambda: radix_sort(K, key_bits=10.0), TypeError, "key_bits must be an integer"),
    (lambda: radix_sort(K, key_bits="10"), TypeError, "key_bits"),
    (lambda: radix_sort(K, key_bits=True), TypeError, "key_bits"),
    (lambda: radix_sort(K, key_bits=9), ValueError, "key_bits=9 is too small: the keys need 10"),
    (lambda: argsort(K, key_bits=3), ValueError, "key_bits=3 is too small"),
    (lambda: radix_sort(-K.astype(np.int32), key_bits=31), ValueError, "key_bits=31 is too small"),
    (lambda: radix_sort(K, key_bits=0), ValueError, "key_bits must be >= 1"),
    (lambda: radix_sort(K, key_bits=33), ValueError, "key_bits must be <= 32"),
    (lambda: radix_sort(K.astype(np.uint8), key_bits=9), ValueError, "key_bits must be <= 8"),
    (lambda: radix_sort(K, radix_bits=2.5), TypeError, "radix_bits must be an integer"),
    (lambda: radix_sort(K, radix_bits=0), ValueError, "radix_bits must be >= 1"),
    (lambda: radix_sort(K, radix_bits=17), ValueError, "radix_bits must be <= 16"),
    (lambda: argsort(K, radix_bits=None, key_bits=np.float32(8)), TypeError, "key_bits"),
    (lambda: radix_sort(K, backend="gpu"), ValueError, "backend"),
    (lambda: sphgpu.argsort(K, backend=3), TypeError, "backend"),
    (lambda: radix_sort(FakeDeviceArray(), backend="cpu"), TypeError, "keys is a GPU array"),
    (lambda: radix_sort(FakeDeviceArray(), backend="reference"), TypeError, "GPU array"),
    (lambda: radix_sort(K[:4], values=FakeDeviceArray()), TypeError, "values must be the same"),
    (lambda: healpix_cells(TH, TH, 0), ValueError, "nside must be >= 1"),
    (lambda: healpix_cells(TH, TH, 2.0), TypeError, "nside"),
    (lambda: healpix_cells(TH + 3, TH, 2), ValueError, r"theta must be in \[0, pi\]"),
    (lambda: healpix_cells(-TH, TH, 2), ValueError, "theta"),
    (lambda: healpix_cells(TH * np.nan, TH, 2), ValueError, "theta contains NaN"),
    (lambda: healpix_cells(TH, TH * np.inf, 2), ValueError, "phi contains NaN"),
    (lambda: healpix_cells(TH, np.ones(3), 2), ValueError, "theta and phi"),
    (lambda: bucket_points(np.ones((2, 2)), np.ones((2, 2)), 2), ValueError, "theta must be 1-D"),
    (lambda: bucket_points(TH, TH[:3], 2), ValueError, "phi must have the shape of theta"),
    (lambda: pic.make_particles(-1), ValueError, "n must be >= 0"),
    (lambda: pic.make_particles(10, grid=0), ValueError, "grid"),
    (lambda: pic.make_particles(10, grid=2**17), ValueError, "grid"),
    (lambda: pic.cell_index(np.zeros((5, 3)), 32), ValueError, r"pos must have shape \(n, 2\)"),
    (lambda: pic.cell_index(np.zeros(5), 32), ValueError, "pos"),
    (lambda: pic.move(np.zeros((5, 2)), 32.0, np.random.default_rng()), TypeError, "grid"),
    (lambda: pic.run_pic(n=100, key_bits=9), ValueError, "key_bits=9 is too small"),
    (lambda: pic.run_pic(n=100, key_bits=33), ValueError, "key_bits must be <= 32"),
    (lambda: pic.run_pic(n=0), ValueError, "n must be >= 1"),
    (lambda: pic.run_pic(n=100, steps=1.5), TypeError, "steps"),
    (lambda: pic.run_pic(n=100, radix_bits=0), ValueError, "radix_bits"),
])
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("backend", ["cpu", "reference", "cuda"])
def test_read_only_keys_are_sorted_and_left_alone(backend):
    # the simulator's launch copied its NumPy argument back into the caller's read-only keys
    keys = np.array([5, -3, 2, -3, 0, 7, 1, -8], dtype=np.int64)
    keys.flags.writeable = False
    before = keys.copy()
    assert np.array_equal(argsort(keys, backend=backend), np.argsort(before, kind="stable"))
    assert np.array_equal(radix_sort(keys, backend=backend), np.sort(before, kind="stable"))
    assert np.array_equal(keys, before) and not keys.flags.writeable
