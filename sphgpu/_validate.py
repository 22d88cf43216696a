"""Argument checks shared by every public function: each error names the argument at fault."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_int", "check_finite", "as_real_array", "as_complex_array", "is_device_array"]


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Integral floats (``4.0``) are refused like any float: an lmax or nside that is not an int is
    usually a bug upstream. ``bool`` is refused too.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def is_device_array(a) -> bool:
    """True for GPU arrays (Numba device arrays, CuPy): anything with __cuda_array_interface__
    (which NumPy arrays never have)."""
    return hasattr(a, "__cuda_array_interface__")


def check_finite(name: str, a) -> None:
    """Raise ValueError if ``a`` (host or device array) holds NaN or infinity."""
    xp = _array_module(a)
    if not bool(xp.all(xp.isfinite(a))):
        raise ValueError(f"{name} contains NaN or infinite values")


def _array_module(a):
    if is_device_array(a):
        import cupy  # device arrays are checked with CuPy, which the gpu extra installs

        return cupy
    return np


def _device_as(a, dtype):
    """A C-contiguous CuPy view of a device array (Numba or CuPy), cast to dtype if needed."""
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(a), dtype=dtype)


def _finish(name, arr, allow_batch, dtype):
    """Shape check, cast to a contiguous ``dtype`` array of the same kind, then the NaN check."""
    _check_dims(name, arr, allow_batch)
    if isinstance(arr, np.ndarray):
        arr = np.ascontiguousarray(arr, dtype=dtype)
    else:
        arr = _device_as(arr, dtype)
    check_finite(name, arr)
    return arr


def _check_dims(name: str, a, allow_batch: bool):
    if a.ndim not in ((1, 2) if allow_batch else (1,)):
        want = "1-D or 2-D (a batch)" if allow_batch else "1-D"
        raise ValueError(f"{name} must be {want}, got {a.ndim} dimensions with shape {a.shape}")


def as_real_array(name: str, a, *, allow_batch: bool = True, dtype=np.float64):
    """Validate a real array (maps, spectra): numeric, not complex, finite; 1-D or 2-D.

    Host inputs become C-contiguous ``dtype`` NumPy arrays, device arrays (Numba or CuPy) CuPy
    ones, each copied only when needed.
    """
    if is_device_array(a):
        arr = a
    else:
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name} must be an array of real numbers, got {type(a).__name__}")
        arr = np.asarray(a)
    kind = np.dtype(arr.dtype).kind
    if kind == "c":
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    if kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return _finish(name, arr, allow_batch, dtype)


def as_complex_array(name: str, a, *, allow_batch: bool = True, dtype=np.complex128):
    """Validate spherical-harmonic coefficients: complex, finite; 1-D or 2-D (a batch)."""
    if is_device_array(a):
        arr = a
    else:
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name} must be an array of complex numbers, got {type(a).__name__}")
        arr = np.asarray(a)
    if np.dtype(arr.dtype).kind != "c":
        raise TypeError(f"{name} must be complex (complex64 or complex128), got dtype {arr.dtype}")
    return _finish(name, arr, allow_batch, dtype)
