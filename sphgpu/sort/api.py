"""radix_sort and argsort: argument checks and dispatch to a sort backend.

Each backend module (``reference``, ``_cpu``, ``_cuda``) provides ``DEFAULT_RADIX_BITS``,
``ACCEPTS_DEVICE_ARRAYS`` (whether it takes GPU arrays), ``NATIVE_KEYS`` and

    sort_pairs(ukeys, key_bits, radix_bits, want_perm) -> (sorted_ukeys, perm int64 or None)

on 1-D unsigned keys. Backends without ``NATIVE_KEYS`` (the CPU ones) take uint32/uint64 radix
keys: this module maps the keys through :mod:`sphgpu.sort.keys` first, and back (or through
the permutation) after. A backend with ``NATIVE_KEYS`` (CUDA) takes the keys' own bits as the
unsigned dtype of their width, with ``transform=`` (:data:`~sphgpu.sort.keys.UNSIGNED`,
``SIGNED`` or ``FLOAT``), maps them to radix keys inside its kernels and returns the sorted
keys with their own bits, so no pass over memory is spent on the transforms; it also provides
``choose_radix_bits(n, key_bits, itemsize, want_perm)`` (its measured choice). Backends are
only called with n >= 2 and key_bits >= 1; shorter inputs are answered here.
"""

from __future__ import annotations

import numpy as np

from .. import backends
from .._device import is_device_array, like_input
from .._validate import check_host_array, check_int
from .keys import (FLOAT, SIGNED, SUPPORTED_DTYPES, UNSIGNED, bits_needed, float_radix_keys,
                   from_radix_keys, radix_dtype, to_radix_keys)

__all__ = ["radix_sort", "argsort", "MAX_RADIX_BITS"]

#: Largest digit width a pass may use (65536 digit values).
MAX_RADIX_BITS = 16

_DTYPES_TEXT = "uint8/16/32/64, int8/16/32/64, float16, float32 or float64"
_TRANSFORMS = {"u": UNSIGNED, "i": SIGNED, "f": FLOAT}


def _cupy(a):
    """A CuPy view of a device array (CuPy or Numba); the gpu extra installs CuPy."""
    import cupy

    return a if isinstance(a, cupy.ndarray) else cupy.asarray(a)


def _cupy_module():
    import cupy

    return cupy


def _refuse_masked(name, a):
    # np.asarray would drop the mask and sort the hidden entries as if they were data
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{name} is a numpy.ma masked array; radix_sort does not apply masks: "
                        f"pass {name}.compressed() to sort the unmasked entries, or "
                        f"{name}.filled(value) to sort masked entries as value")


def _as_keys(keys):
    """Validated 1-D keys of a supported native dtype: (array, is_device). Device arrays are
    returned untouched (converted to CuPy only once a backend has accepted them)."""
    _refuse_masked("keys", keys)
    if isinstance(keys, np.ndarray):
        arr, device = keys, False
    elif is_device_array(keys):
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
    _refuse_masked("values", values)
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


def _check_key_bits(key_bits, need, kind):
    """key_bits, or what the keys ``need`` when it is None; raises where they need more."""
    if key_bits is None:
        return need
    if key_bits < need:
        extra = ("" if kind == "u" else
                 "; negative integer keys and float keys use all the bits of their dtype")
        raise ValueError(f"key_bits={key_bits} is too small: the keys need {need} bits{extra}")
    return key_bits


def _sort_radix_keys(impl, arr, key_bits, radix_bits, need_perm):
    """Sort through uint32/uint64 radix keys made on the host: (sorted keys, perm or None)."""
    ukeys, inverse = _radix_keys(arr)
    key_bits = _check_key_bits(key_bits, bits_needed(ukeys), arr.dtype.kind)
    if ukeys.dtype == np.uint64 and key_bits <= 32:   # e.g. int64 cell indices: half the traffic
        ukeys = ukeys.astype(np.uint32)
    if radix_bits is None:
        radix_bits = impl.choose_radix_bits(arr.shape[0], key_bits, ukeys.dtype.itemsize,
                                            need_perm)
    need_perm = need_perm or inverse is None
    if arr.shape[0] <= 1 or key_bits == 0:    # nothing to order: all keys equal or too few
        sorted_u, perm = ukeys.copy(), np.arange(arr.shape[0], dtype=np.int64)
    else:
        sorted_u, perm = impl.sort_pairs(ukeys, key_bits, radix_bits, need_perm)
    return (arr[perm] if inverse is None else inverse(sorted_u)), perm


def _sort_native(impl, arr, device, key_bits, radix_bits, need_perm):
    """Sort the keys' own bits on a backend that transforms them itself: (sorted keys, perm).

    Device keys are never read by the host: without key_bits every bit of the dtype is sorted
    (the backend finds passes whose digit is the same for every key on the device and only
    copies there), and a key_bits the caller gives is trusted, as CUB's end_bit is. Host keys
    are checked here (they are on the host already)."""
    width = 8 * arr.dtype.itemsize
    if device:
        key_bits = width if key_bits is None else key_bits
    else:
        key_bits = _check_key_bits(key_bits, bits_needed(_radix_keys(arr)[0]), arr.dtype.kind)
    n = arr.shape[0]
    if n <= 1 or key_bits == 0:
        xp = _cupy_module() if device else np
        return arr.copy(), xp.arange(n, dtype=np.int64)
    if radix_bits is None:
        radix_bits = impl.choose_radix_bits(n, key_bits, arr.dtype.itemsize, need_perm)
    if arr.dtype.kind == "u":
        return impl.sort_pairs(arr, key_bits, radix_bits, need_perm, transform=UNSIGNED)
    sorted_bits, perm = impl.sort_pairs(arr.view(f"u{arr.dtype.itemsize}"), key_bits,
                                        radix_bits, need_perm,
                                        transform=_TRANSFORMS[arr.dtype.kind])
    return sorted_bits.view(arr.dtype), perm


def _sort(keys, key_bits, radix_bits, values, want_perm, backend):
    """The work of radix_sort and argsort: (sorted_keys or None, sorted_values or None, perm)."""
    arr, device = _as_keys(keys)
    n = arr.shape[0]
    vals = None if values is None else _as_values(values, n, device)
    if key_bits is not None:
        key_bits = check_int("key_bits", key_bits, minimum=1, maximum=8 * arr.dtype.itemsize)
    if radix_bits is not None:
        radix_bits = check_int("radix_bits", radix_bits, minimum=1, maximum=MAX_RADIX_BITS)
    impl = backends.load("sort", backend)
    check_host_array("keys", keys, device_ok=impl.ACCEPTS_DEVICE_ARRAYS)
    if device:
        arr = _cupy(arr)
        vals = None if vals is None else _cupy(vals)
    need_perm = want_perm or vals is not None
    if impl.NATIVE_KEYS:
        sorted_keys, perm = _sort_native(impl, arr, device, key_bits, radix_bits, need_perm)
    else:
        sorted_keys, perm = _sort_radix_keys(impl, arr, key_bits, radix_bits, need_perm)
    sorted_vals = None if vals is None else like_input(vals[perm], values)
    if device and type(keys).__module__.startswith("numba"):   # Numba arrays in, Numba out
        sorted_keys = like_input(sorted_keys, keys)
        perm = like_input(perm, keys)
    return sorted_keys, sorted_vals, (perm if want_perm else None)


def radix_sort(keys, *, key_bits=None, radix_bits=None, return_permutation=False, values=None,
               backend="auto"):
    """Stable radix sort of keys, optionally returning the permutation or carrying values along.

    An LSD radix sort over ``key_bits`` bits in ``ceil(key_bits / radix_bits)`` passes of
    ``radix_bits``-bit digits (Helluy 2011). Signed and float keys are sorted through the
    order-preserving transforms of :mod:`sphgpu.sort.keys` (on the CUDA backend applied inside
    the kernels as they read each key, at no extra pass), so the order is exactly
    ``numpy.sort(keys, kind="stable")``'s: -0.0 and +0.0 tie (input order kept) and NaNs go
    last in input order. Sorted keys keep their bits (-0.0, NaN payloads).

    Parameters
    ----------
    keys : array, shape (n,), dtype uint8/16/32/64, int8/16/32/64, float16, float32 or float64
        NumPy array, or a device array (CuPy or Numba, anything with
        ``__cuda_array_interface__``), which is sorted on the GPU without a host copy and
        without the host waiting for the GPU. A ``numpy.ma`` masked array is refused
        (TypeError): pass ``keys.compressed()`` or ``keys.filled(value)``.
    key_bits : int, optional
        Bits b of the radix keys that the passes look at, 1 to the dtype's width. Unsigned
        keys and signed keys that are all >= 0 need the bit length of their largest value;
        negative integer keys and float keys need the full width of their dtype. NumPy keys:
        by default what the largest key needs (``bits_needed``), and a value smaller than the
        keys need raises. Device keys: by default the dtype's width (the GPU then only copies
        in passes whose digit is the same for every key), and a given value is trusted
        without a check (the check would make the host wait for the GPU): keys that do not
        fit in it come out ordered by their low key_bits bits only.
    radix_bits : int, optional
        Digit width r of a pass, 1 to 16; by default the backend's measured best
        (``DEFAULT_RADIX_BITS``), at most key_bits. r need not divide b: the last pass then
        sorts on the remaining bits.
    return_permutation : bool
        Also return the permutation (see Returns).
    values : array, shape (n, ...), optional
        Carried along: ``sorted_values = values[permutation]``. Same kind of array as keys;
        not a masked array.
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

    Parameters
    ----------
    keys : array, shape (n,)
        As in :func:`radix_sort`: NumPy or device, an integer or float dtype.
    key_bits : int, optional
        Bits of the radix keys the passes look at, as in :func:`radix_sort`.
    radix_bits : int, optional
        Digit width of a pass, 1 to 16, as in :func:`radix_sort`.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to sort (see :mod:`sphgpu.backends`).

    Returns
    -------
    array, shape (n,), int64
        The permutation (a device array for device keys).
    """
    return _sort(keys, key_bits, radix_bits, None, True, backend)[2]
