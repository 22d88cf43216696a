"""radix_sort and argsort: argument checks, key transforms and dispatch to a sort backend.

Each backend module (``reference``, ``_cpu``, ``_cuda``) provides ``DEFAULT_RADIX_BITS`` and

    sort_pairs(ukeys, key_bits, radix_bits, want_perm) -> (sorted_ukeys, perm int64 or None)

on 1-D uint32/uint64 radix keys (NumPy for the CPU backends; NumPy or CuPy for CUDA, which sets
``ACCEPTS_DEVICE_ARRAYS = True`` and returns arrays of the kind it was given). A backend that
measures its radix bits (CUDA) also provides
``choose_radix_bits(n, key_bits, itemsize, want_perm)``. Everything else
lives here once: validation, the order-preserving key transforms of :mod:`sphgpu.sort.keys`,
carrying values and returning the original float keys. Backends are only called with n >= 2 and
key_bits >= 1; shorter inputs and keys that are all zero are answered here.
"""

from __future__ import annotations

import numpy as np

from .. import backends
from .._device import like_input
from .._validate import check_int, is_device_array
from .keys import (SUPPORTED_DTYPES, bits_needed, float_radix_keys, from_radix_keys, radix_dtype,
                   to_radix_keys)

__all__ = ["radix_sort", "argsort", "MAX_RADIX_BITS"]

#: Largest digit width a pass may use (65536 digit values).
MAX_RADIX_BITS = 16

_DTYPES_TEXT = "uint8/16/32/64, int8/16/32/64, float32 or float64"


def _cupy(a):
    """A CuPy view of a device array (CuPy or Numba); the gpu extra installs CuPy."""
    import cupy

    return cupy.asarray(a)


def _cupy_module():
    import cupy

    return cupy


def _as_keys(keys):
    """Validated 1-D keys of a supported native dtype: (array, is_device). Device arrays are
    returned untouched (converted to CuPy only once a backend has accepted them)."""
    if is_device_array(keys):
        arr, device = keys, True
    else:
        if keys is None or isinstance(keys, (str, bytes)):
            raise TypeError(f"keys must be a 1-D array of integers or floats, got "
                            f"{type(keys).__name__}")
        arr, device = np.asarray(keys), False
    dtype = np.dtype(arr.dtype)
    if not dtype.isnative and dtype.kind in "uif":
        dtype = dtype.newbyteorder("=")
        arr = arr.astype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"keys must have dtype {_DTYPES_TEXT}, got {dtype}")
    if arr.ndim != 1:
        raise ValueError(f"keys must be 1-D, got {arr.ndim} dimensions with shape {arr.shape}")
    return arr, device


def _as_values(values, n, device):
    if is_device_array(values) != device:
        where = "a GPU array" if device else "a NumPy array"
        raise TypeError(f"values must be the same kind of array as keys ({where})")
    vals = values if device else np.asarray(values)
    if vals.ndim == 0 or vals.shape[0] != n:
        raise ValueError(f"values must have the length of keys ({n}) along its first axis, got "
                         f"shape {vals.shape}")
    return vals


def _radix_keys(arr):
    """(ukeys, inverse): ``inverse`` maps sorted radix keys back to keys, or is None where only
    the permutation can (floats holding -0.0 or NaN). Signed integer keys that are all >= 0 are
    sorted as their values (no sign flip), so that key_bits means the same for them as for
    unsigned keys and small non-negative keys need few passes."""
    if arr.dtype.kind == "f":
        ukeys, exact = float_radix_keys(arr)
        return ukeys, (lambda u: from_radix_keys(u, arr.dtype)) if exact else None
    if arr.dtype.kind == "i" and arr.size and int(arr.min()) >= 0:
        return arr.astype(radix_dtype(arr.dtype)), lambda u: u.astype(arr.dtype)
    return to_radix_keys(arr)[0], lambda u: from_radix_keys(u, arr.dtype)


def _sort(keys, key_bits, radix_bits, values, want_perm, backend):
    """The work of radix_sort and argsort: (sorted_keys or None, sorted_values or None, perm)."""
    arr, device = _as_keys(keys)
    n = arr.shape[0]
    vals = None if values is None else _as_values(values, n, device)
    full_bits = 8 * arr.dtype.itemsize
    if key_bits is not None:
        key_bits = check_int("key_bits", key_bits, minimum=1, maximum=full_bits)
    if radix_bits is not None:
        radix_bits = check_int("radix_bits", radix_bits, minimum=1, maximum=MAX_RADIX_BITS)
    impl = backends.load("sort", backend)
    if device and not getattr(impl, "ACCEPTS_DEVICE_ARRAYS", False):
        raise TypeError("keys is a GPU array; the CPU backends take NumPy arrays "
                        "(use backend='cuda', or copy it to the host)")
    if device:
        arr = _cupy(arr)
        vals = None if vals is None else _cupy(vals)

    ukeys, inverse = _radix_keys(arr)
    need = bits_needed(ukeys)
    if key_bits is None:
        key_bits = need
    elif key_bits < need:
        extra = ("" if arr.dtype.kind == "u" else
                 "; negative integer keys and float keys use all the bits of their dtype")
        raise ValueError(f"key_bits={key_bits} is too small: the keys need {need} bits{extra}")
    if ukeys.dtype == np.uint64 and key_bits <= 32:   # e.g. int64 cell indices: half the traffic
        ukeys = ukeys.astype(np.uint32)
    need_perm = want_perm or vals is not None or inverse is None
    if radix_bits is None:
        choose = getattr(impl, "choose_radix_bits", None)
        radix_bits = (choose(n, max(key_bits, 1), ukeys.dtype.itemsize, need_perm) if choose
                      else min(int(impl.DEFAULT_RADIX_BITS), max(key_bits, 1)))
    xp = _cupy_module() if device else np
    if n <= 1 or key_bits == 0:               # nothing to order: all keys equal or too few
        sorted_u, perm = ukeys.copy(), xp.arange(n, dtype=np.int64)
    else:
        sorted_u, perm = impl.sort_pairs(ukeys, key_bits, radix_bits, need_perm)
    sorted_keys = arr[perm] if inverse is None else inverse(sorted_u)
    sorted_vals = None if vals is None else vals[perm]
    return (like_input(sorted_keys, keys), like_input(sorted_vals, values),
            like_input(perm, keys) if want_perm else None)


def radix_sort(keys, *, key_bits=None, radix_bits=None, return_permutation=False, values=None,
               backend="auto"):
    """Stable radix sort of keys, optionally returning the permutation or carrying values along.

    An LSD radix sort over ``key_bits`` bits in ``ceil(key_bits / radix_bits)`` passes of
    ``radix_bits``-bit digits (Helluy 2011). Signed and float keys are sorted through the
    order-preserving transforms of :mod:`sphgpu.sort.keys`, so the order is exactly
    ``numpy.sort(keys, kind="stable")``'s: -0.0 and +0.0 tie (input order kept) and NaNs go
    last in input order.

    Parameters
    ----------
    keys : array, shape (n,), dtype uint8/16/32/64, int8/16/32/64, float32 or float64
        NumPy array, or a device array (CuPy or Numba, anything with
        ``__cuda_array_interface__``), which is sorted on the GPU without a host copy.
    key_bits : int, optional
        Bits b that the keys occupy, 1 to the dtype's width; passes only look at these. By
        default what the largest key needs (``bits_needed``). Unsigned keys and signed keys that
        are all >= 0 need the bit length of their largest value; negative integer keys and float
        keys need the full width of their dtype. A value smaller than the keys need raises.
    radix_bits : int, optional
        Digit width r of a pass, 1 to 16; by default the backend's measured best
        (``DEFAULT_RADIX_BITS``), at most key_bits. r need not divide b: the last pass then
        sorts on the remaining bits.
    return_permutation : bool
        Also return the permutation (see Returns).
    values : array, shape (n, ...), optional
        Carried along: ``sorted_values = values[permutation]``. Same kind of array as keys.
    backend : {"auto", "cuda", "cpu", "reference"}

    Returns
    -------
    sorted_keys : array, shape (n,), the dtype of keys
        Alone when neither ``return_permutation`` nor ``values`` is given.
    sorted_values : array, shape of values
        Second item when ``values`` is given.
    permutation : array, shape (n,), int64
        Last item when ``return_permutation``: ``sorted_keys == keys[permutation]``, equal to
        ``numpy.argsort(keys, kind="stable")``.
    """
    sorted_keys, sorted_vals, perm = _sort(keys, key_bits, radix_bits, values,
                                           bool(return_permutation), backend)
    out = (sorted_keys,)
    if values is not None:
        out += (sorted_vals,)
    if return_permutation:
        out += (perm,)
    return out[0] if len(out) == 1 else out


def argsort(keys, *, key_bits=None, radix_bits=None, backend="auto"):
    """The stable sorting permutation of keys, equal to ``numpy.argsort(keys, kind="stable")``.

    Parameters are those of :func:`radix_sort`.

    Returns
    -------
    array, shape (n,), int64 (a device array for device keys)
    """
    return _sort(keys, key_bits, radix_bits, None, True, backend)[2]
