"""Order-preserving transforms between sortable keys and unsigned radix keys.

A radix sort orders unsigned integers digit by digit. Every supported key dtype is first mapped
to unsigned integers whose *unsigned* order is the order ``numpy.argsort(kind="stable")`` gives:

=====================  ===========================================  ==============
input dtype            transform                                    radix key dtype
=====================  ===========================================  ==============
uint8, uint16, uint32  none (widened)                               uint32
uint64                 none                                         uint64
int8, int16, int32     flip the sign bit, then widen                uint32
int64                  flip the sign bit                            uint64
float16, float32       canonicalize, then the float transform       uint32
float64                canonicalize, then the float transform       uint64
=====================  ===========================================  ==============

Floats: *canonicalize* turns -0.0 into +0.0 and every NaN (any sign, any payload) into one
positive quiet NaN. The *float transform* flips all bits of a negative value and only the sign
bit of a non-negative one. So -inf < negative < -0.0 == +0.0 < positive < +inf < NaN, which is
NumPy's order: -0.0 and +0.0 compare equal and keep their input order (the sort is stable), and
all NaNs go last, in input order, exactly where ``numpy.argsort(kind="stable")`` puts them.

Every function takes NumPy arrays, or CuPy arrays (the array module is taken from the input), so
the same code prepares keys for the CPU and the CUDA backends.
"""

from __future__ import annotations

import numpy as np

from .._device import array_module_of as _array_module

__all__ = ["to_radix_keys", "from_radix_keys", "float_radix_keys", "bits_needed", "radix_dtype",
           "SUPPORTED_DTYPES", "UNSIGNED", "SIGNED", "FLOAT"]

#: The key dtypes radix_sort accepts.
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64,
    np.float16, np.float32, np.float64))

#: What a key's raw bits are, for a backend that applies the transforms itself (the CUDA
#: kernels, :func:`sphgpu.sort._cuda_kernels.radix_key`): by the dtype's kind "u", "i", "f".
UNSIGNED, SIGNED, FLOAT = 0, 1, 2


def radix_dtype(dtype) -> np.dtype:
    """The unsigned radix key dtype for a key dtype: uint32 up to 32 bits, uint64 for 64."""
    return np.dtype(np.uint64) if np.dtype(dtype).itemsize == 8 else np.dtype(np.uint32)


def _unsigned(itemsize: int) -> np.dtype:
    return np.dtype(f"u{itemsize}")


def to_radix_keys(keys, xp=None):
    """Map keys to unsigned integers with the same (stable NumPy) order.

    Parameters
    ----------
    keys : ndarray, 1-D, dtype uint8/16/32/64, int8/16/32/64, float16, float32 or float64
        NumPy or CuPy array; it is never modified.
    xp : module, optional
        ``numpy`` or ``cupy``; by default the module the array belongs to.

    Returns
    -------
    ukeys : ndarray, same shape, uint32 (key types of up to 32 bits) or uint64 (64-bit types)
        ``ukeys[i] < ukeys[j]`` exactly when ``keys[i]`` sorts before ``keys[j]``. For uint32 and
        uint64 keys this is ``keys`` itself, not a copy.
    full_bits : int
        The bit width of the key dtype (8, 16, 32 or 64): no key needs more bits than this.

    Notes
    -----
    Floats are canonicalized first: -0.0 becomes +0.0 (so it ties with +0.0 and keeps its input
    position among zeros) and every NaN becomes the positive quiet NaN, which maps above +inf
    (so NaNs go last, in input order). Both match ``numpy.argsort(kind="stable")``.
    """
    xp = _array_module(keys) if xp is None else xp
    dtype = np.dtype(keys.dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"keys must have one of the dtypes {[str(d) for d in SUPPORTED_DTYPES]}, "
                        f"got {dtype}")
    full_bits = 8 * dtype.itemsize
    out = radix_dtype(dtype)
    if dtype.kind == "u":
        return keys.astype(out, copy=False), full_bits
    if dtype.kind == "i":
        sign = dtype.type(np.iinfo(dtype).min)          # only the sign bit set
        flipped = (keys ^ sign).view(_unsigned(dtype.itemsize))
        return flipped.astype(out, copy=False), full_bits
    return float_radix_keys(keys, xp)[0], full_bits


def float_radix_keys(keys, xp=None):
    """The float transform of :func:`to_radix_keys`, and whether it can be inverted exactly.

    Returns ``(ukeys, exact)``: ``exact`` is False when ``keys`` holds a -0.0 or a NaN, whose
    bits canonicalization changed (then only the permutation gives the original keys back).
    """
    xp = _array_module(keys) if xp is None else xp
    dtype = np.dtype(keys.dtype)
    same = _unsigned(dtype.itemsize)     # the transform works at the key's width, then widens
    top = same.type(8 * dtype.itemsize - 1)
    sign = same.type(1) << top
    bits = keys.view(same)
    u = bits >> top                      # 1 for a negative sign bit, else 0
    xp.negative(u, out=u)                # all ones for negatives, else 0 (unsigned wrap-around)
    u |= sign
    u ^= bits                            # negatives: all bits flipped; others: sign bit flipped
    negative_zero = u == ~sign
    nan = xp.isnan(keys)
    exact = not (bool(negative_zero.any()) or bool(nan.any()))
    if not exact:
        u[negative_zero] = sign          # -0.0 ties with +0.0
        u[nan] = np.array(np.nan, dtype=dtype).view(same)[()] | sign    # positive quiet NaN
    return u.astype(radix_dtype(dtype), copy=False), exact


def from_radix_keys(ukeys, dtype):
    """Invert :func:`to_radix_keys`: radix keys back to keys of ``dtype``.

    Exact for integer dtypes, and for floats without -0.0 or NaN. Otherwise floats come back
    canonical (-0.0 as +0.0, every NaN as the positive quiet NaN); for such keys
    :func:`sphgpu.sort.radix_sort` gathers the original keys through the permutation instead,
    which returns them bit for bit.

    Parameters
    ----------
    ukeys : ndarray of uint32 or uint64 (NumPy or CuPy)
    dtype : a supported key dtype

    Returns
    -------
    ndarray, same shape, of ``dtype``
    """
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"dtype must be one of {[str(d) for d in SUPPORTED_DTYPES]}, got {dtype}")
    nbits = 8 * dtype.itemsize
    unsigned = _unsigned(dtype.itemsize)
    if dtype.kind == "u":
        return ukeys.astype(dtype, copy=False)
    if dtype.kind == "i":
        narrow = ukeys.astype(unsigned, copy=False)
        sign = unsigned.type(1) << unsigned.type(nbits - 1)
        return (narrow ^ sign).view(dtype)
    top = unsigned.type(nbits - 1)
    sign = unsigned.type(1) << top
    u = ukeys.astype(unsigned, copy=False)
    flip = u >> top                      # 1 where the key was non-negative
    flip -= unsigned.type(1)             # 0 there, all ones for negatives (unsigned wrap-around)
    flip |= sign
    flip ^= u
    return flip.view(dtype)


def bits_needed(ukeys) -> int:
    """Number of bits of the largest radix key: 0 for an empty or all-zero array.

    A radix sort over the low ``bits_needed(ukeys)`` bits orders ``ukeys`` completely.

    Parameters
    ----------
    ukeys : numpy.ndarray, 1-D, unsigned integer
        Radix keys, as from :func:`to_radix_keys`.

    Returns
    -------
    int
        The bit length of ``ukeys.max()``, 0 to 64.
    """
    if ukeys.size == 0:
        return 0
    return int(ukeys.max()).bit_length()
