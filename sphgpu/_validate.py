"""Argument checks shared by every public function: each error names the argument at fault.

Host, device and masked inputs are told apart and converted here (masked arrays and lists of
them, healpy's ``UNSEEN``) on top of :mod:`sphgpu._device`, the home of array kinds. Both sit at
the bottom of the import graph: the count of bad values on a device array is the CUDA
backend's kernel (:data:`DEVICE_CHECKS`), looked up by name, not imported.
"""

from __future__ import annotations

import importlib
import math
import numbers
import os
import threading

import numpy as np

from . import _host_threads
# the array kinds' home is _device; the checks use them (importing them from here is refused
# by tests/test_architecture.py)
from ._device import array_module_of, as_contiguous, is_device_array

__all__ = ["check_int", "check_flag", "check_finite", "check_host_array", "check_fits_in_memory",
           "as_real_array", "as_complex_array", "as_maps", "physical_memory", "UNSEEN"]

#: healpy's value for pixels without data (``healpy.UNSEEN``)
UNSEEN = -1.6375e30
# healpy.mask_bad's default tolerance around UNSEEN: |m - UNSEEN| <= atol + rtol |UNSEEN|
_UNSEEN_TOL = 1e-8 + 1e-5 * abs(UNSEEN)


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


def check_flag(name: str, value) -> bool:
    """``value`` as a bool, or TypeError naming ``name`` (only True, False and NumPy's bools:
    a 0 or "yes" passed for a flag is usually an argument in the wrong place)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_finite(name: str, a) -> None:
    """Raise ValueError if ``a`` (host or device array) holds NaN or infinity."""
    xp = array_module_of(a)
    real = _real_view(a, xp)
    if real is None:
        finite = bool(xp.all(xp.isfinite(a)))
    elif xp is np:
        # a NaN makes the minimum NaN, an infinity the minimum or maximum infinite
        lo, hi = min_max(real)
        finite = math.isfinite(lo) and math.isfinite(hi)
    else:
        finite = count_outside(real, -math.inf) == 0
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")


#: why a device array is refused where the backend that will run is a host one
_HOST_BACKENDS_ONLY = ("the CPU backends take NumPy arrays (use backend='cuda', or copy it to "
                       "the host)")


def check_host_array(name: str, a, *, device_ok: bool = False,
                     why: str = _HOST_BACKENDS_ONLY) -> None:
    """TypeError naming ``name`` when ``a`` is a device array (anything with
    ``__cuda_array_interface__``: CuPy, Numba) where only NumPy arrays are taken.

    Parameters
    ----------
    name : str
        The argument, as the caller knows it ("alm", "maps", "keys").
    a : object
        The argument's value; only its kind is looked at (host inputs of any kind pass:
        their own checks come later).
    device_ok : bool
        Whether the code that will run takes device arrays (a backend's
        ``ACCEPTS_DEVICE_ARRAYS``); if True nothing is refused.
    why : str
        What takes NumPy arrays and what to do, the message's second half; by default the
        CPU and reference backends', which point to ``backend='cuda'``.

    Raises
    ------
    TypeError
        ``"<name> is a GPU array; <why>"``.
    """
    if not device_ok and is_device_array(a):
        raise TypeError(f"{name} is a GPU array; {why}")


#: host arrays from this many elements on are reduced by several threads (min_max)
PARALLEL_MIN_ELEMENTS = 1 << 21
#: elements one thread reduces at a time: both reductions read them while they are in cache
_BLOCK = 1 << 16


def min_max(a) -> tuple[float, float]:
    """(minimum, maximum) of a real NumPy array as floats; NaN if ``a`` holds a NaN (as
    NumPy's). A large array is cut into one span a thread, each read once block by block
    (:mod:`sphgpu._host_threads`): one thread alone reads a large map several times slower
    than the host's memory allows. Device arrays are checked by
    :func:`count_outside` instead."""
    nthreads = _host_threads.count()
    if a.size < PARALLEL_MIN_ELEMENTS or nthreads == 1 or not a.flags.c_contiguous:
        return float(a.min()), float(a.max())
    flat = a.reshape(-1)
    lo = np.empty(nthreads)
    hi = np.empty(nthreads)

    def span(k, start, stop):
        blo, bhi = [], []
        for i in range(start, stop, _BLOCK):
            b = flat[i:min(i + _BLOCK, stop)]
            blo.append(b.min())
            bhi.append(b.max())
        lo[k] = np.min(blo)          # NaN-propagating, unlike Python's min
        hi[k] = np.max(bhi)

    n = _host_threads.run_spans(span, flat.size, _BLOCK)
    return float(np.min(lo[:n])), float(np.max(hi[:n]))


#: the module that counts bad values on the device, ``count_outside(a, lower, stream=None)``
#: (:func:`sphgpu._check_kernels.count_outside`): the CUDA backend's kernel for these checks.
#: It is imported by this name at the first device array checked, as
#: :func:`sphgpu.backends.load` imports a backend: an import statement here would put Numba,
#: the kernel launcher and its disk cache under every capability's argument checks.
DEVICE_CHECKS = "sphgpu._check_kernels"


def _device_count(a, lower, stream=None):
    """The backend's count of :func:`count_outside`, launched on ``stream`` (None: CuPy's
    current stream): a (1,) int64 device array, not waited for."""
    return importlib.import_module(DEVICE_CHECKS).count_outside(a, lower, stream)


def count_outside(a, lower: float) -> int:
    """How many elements of a C-contiguous real device array (CuPy) are NaN, infinite or <=
    ``lower``: one pass over it and one wait for the GPU, by the kernel of
    :data:`DEVICE_CHECKS`."""
    return int(_device_count(a, lower)[0])


#: per thread: {device id: the non-blocking stream of the deferred checks}
_check_streams = threading.local()


def _check_stream():
    import cupy

    streams = _check_streams.__dict__.setdefault("by_device", {})
    dev = cupy.cuda.Device().id
    if dev not in streams:
        streams[dev] = cupy.cuda.Stream(non_blocking=True)
    return streams[dev]


def _finite_check_deferred(name, a):
    """:func:`check_finite` of a C-contiguous real CuPy array, to be run later: marks where
    ``a`` is ready on the current stream (an event) and returns a callable that counts on a
    stream of its own from that mark on, so that the count runs beside whatever was queued in
    between, waits for the count alone, and raises check_finite's ValueError."""
    import cupy

    ready = cupy.cuda.Event(block=False, disable_timing=True)
    ready.record()

    def finish():
        stream = _check_stream()
        stream.wait_event(ready)
        found = _device_count(a, -math.inf, stream).get(stream=stream)
        stream.synchronize()
        if found[0]:
            raise ValueError(f"{name} contains NaN or infinite values")

    return finish


def _real_view(a, xp):
    """A non-empty C-contiguous real or complex NumPy or CuPy array as real values (complex as
    pairs), else None."""
    if not isinstance(a, xp.ndarray) or not a.size or not a.flags.c_contiguous \
            or a.dtype.kind not in "fc":
        return None
    return a.view(a.dtype.char.lower()) if a.dtype.kind == "c" else a   # complex128 -> float64


def _finish(name, arr, allow_batch, dtype, pending=None):
    """Shape check, cast to a contiguous ``dtype`` array of the same kind, then the NaN check
    (started on the GPU and left to the caller where ``pending`` is a list: see
    :func:`as_complex_array`)."""
    _check_dims(name, arr, allow_batch)
    arr = as_contiguous(arr, dtype)
    if not isinstance(arr, np.ndarray):
        real = None if pending is None else _real_view(arr, array_module_of(arr))
        if real is not None:
            pending.append(_finite_check_deferred(name, real))
            return arr
    check_finite(name, arr)
    return arr


def _check_dims(name: str, a, allow_batch):
    """allow_batch: False (1-D only), True (1-D or 2-D) or an int, the most dimensions."""
    most = 1 if allow_batch is False else (2 if allow_batch is True else int(allow_batch))
    if not 1 <= a.ndim <= most:
        want = {1: "1-D", 2: "1-D or 2-D (a batch)"}.get(most, f"1-D to {most}-D")
        raise ValueError(f"{name} must be {want}, got {a.ndim} dimensions with shape {a.shape}")


def as_real_array(name: str, a, *, allow_batch: bool = True, dtype=np.float64):
    """Validate a real array (maps, spectra): numeric, not complex, finite; 1-D or 2-D.

    Host inputs become C-contiguous ``dtype`` NumPy arrays, device arrays (Numba or CuPy) CuPy
    ones, each copied only when needed.
    """
    return _finish(name, _real_input(name, a), allow_batch, dtype)


def _item_shape(x) -> str:
    try:
        return str(np.shape(x))
    except ValueError:                      # itself ragged
        return "ragged"


def _host_asarray(name, a, what):
    """``np.asarray(a)``, with a ValueError naming ``name`` and the items' shapes for a ragged
    list (e.g. ``alm2map([a1, a2_shorter])``), where NumPy's own message names neither."""
    try:
        return np.asarray(a)
    except ValueError:
        if not isinstance(a, (list, tuple)):
            raise
        shapes = ", ".join(_item_shape(x) for x in a[:8]) + (", ..." if len(a) > 8 else "")
        raise ValueError(f"{name} is a list of {len(a)} items of different shapes ({shapes}): "
                         f"every {what} must have the same length; give equal-length items or one "
                         "array of shape (k, n)") from None


def _real_input(name, a):
    """``a`` as an array (device arrays as they are) of a real numeric dtype, or TypeError
    (ValueError for a ragged list)."""
    if is_device_array(a):
        arr = a
    else:
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name} must be an array of real numbers, got {type(a).__name__}")
        arr = _host_asarray(name, a, "row (map or spectrum)")
    kind = np.dtype(arr.dtype).kind
    if kind == "c":
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    if kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr


def as_complex_array(name: str, a, *, allow_batch: bool = True, dtype=np.complex128,
                     pending: list | None = None):
    """Validate spherical-harmonic coefficients: complex, finite; 1-D or 2-D (a batch).

    ``pending``: for a CuPy array, append to this list a callable that runs the NaN check (and
    raises, naming ``name``) instead of running it here (:func:`_finite_check_deferred`).
    alm2map calls it after it has queued the transform, whose first kernel then starts without
    waiting for the check or for the host's work around it, which would leave the GPU idle,
    and the count then runs beside the transform."""
    if is_device_array(a):
        arr = a
    else:
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name} must be an array of complex numbers, got {type(a).__name__}")
        arr = _host_asarray(name, a, "a_lm set")
    if np.dtype(arr.dtype).kind != "c":
        raise TypeError(f"{name} must be complex (complex64 or complex128), got dtype {arr.dtype}")
    return _finish(name, arr, allow_batch, dtype, pending)


def _holds_masked(a) -> bool:
    """Whether ``a`` is a list or tuple holding ``numpy.ma`` arrays (at any depth), such as
    healpy's ``[hp.ma(I), hp.ma(Q), hp.ma(U)]``. A list of numbers is told by its first item."""
    if not isinstance(a, (list, tuple)) or not a:
        return False
    if not (np.ma.isMaskedArray(a[0]) or isinstance(a[0], (list, tuple, np.ndarray))):
        return False
    return any(np.ma.isMaskedArray(x) or _holds_masked(x) for x in a)


def _masked_stack(a, name="maps"):
    """One masked array of a (nested) list of maps, the items' masks kept: ``np.asarray``
    would drop them, and what lies under a mask would enter the transform."""
    if isinstance(a, (list, tuple)):
        items = [_masked_stack(x, name) for x in a]
        if len({x.shape for x in items}) > 1:
            shapes = ", ".join(str(x.shape) for x in items[:8])
            raise ValueError(f"{name} is a list of {len(items)} maps of different shapes "
                             f"({shapes}): every map must have the same number of pixels")
        return np.ma.stack(items)
    return np.ma.asarray(a)


def as_maps(name: str, a, *, max_ndim: int = 2):
    """Validate map(s) the way healpy reads them: pixels equal to ``UNSEEN`` (within healpy's
    ``mask_bad`` tolerance) and the masked pixels of a ``numpy.ma`` array (or of a list of
    them, as healpy reads ``[hp.ma(I), hp.ma(Q), hp.ma(U)]``) are excluded, i.e. set to zero;
    any other NaN or infinity is an error naming ``name``.

    Returns ``(arr, bad)``: arr a C-contiguous float64 array (NumPy, or CuPy for device
    input; a copy whenever pixels were zeroed, so the caller's maps are never modified) of
    1 to ``max_ndim`` dimensions, and bad the boolean array of excluded pixels (same shape),
    or None when there are none.
    """
    mask = None
    if _holds_masked(a):
        a = _masked_stack(a, name)
    if np.ma.isMaskedArray(a):
        mask = np.ma.getmaskarray(a)
        a = np.ma.getdata(a)
    arr = _real_input(name, a)
    _check_dims(name, arr, max_ndim)
    arr = as_contiguous(arr, np.float64)
    xp = array_module_of(arr)
    # Reductions tell the common case (no mask, no NaN) without building masks: on the host
    # the minimum is NaN if any NaN, -inf or ~UNSEEN if either is present, and the maximum
    # catches +inf; on the device one pass counts all of them
    if xp is np:
        lo, hi = min_max(arr)
        plain = math.isfinite(lo) and math.isfinite(hi) and lo > UNSEEN + _UNSEEN_TOL
    else:
        plain = count_outside(arr, UNSEEN + _UNSEEN_TOL) == 0
    if plain and (mask is None or not mask.any()):
        return arr, None
    bad = xp.abs(arr - UNSEEN) <= _UNSEEN_TOL
    if mask is not None:
        bad |= xp.asarray(mask)
    if not bool(xp.all(xp.isfinite(arr) | bad)):
        n = int(xp.count_nonzero(~(xp.isfinite(arr) | bad)))
        raise ValueError(f"{name} contains NaN or infinite values at {n} pixels that are not "
                         "masked: mask them (healpy.UNSEEN or a numpy.ma mask) to exclude them")
    if not bool(bad.any()):
        return arr, None
    return xp.where(bad, 0.0, arr), bad


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def physical_memory() -> int | None:
    """Bytes of this machine's memory, or None where the system does not say."""
    return _physical_memory()


def check_fits_in_memory(nbytes: int, what: str, asked_by: str) -> None:
    """MemoryError naming ``asked_by`` (e.g. "nside=1048576") when ``what`` needs more bytes
    than this machine has, before anything is allocated (NumPy would fail later with a number
    and no argument, or the machine would swap)."""
    have = _physical_memory()
    if have is not None and nbytes > have:
        raise MemoryError(f"{asked_by} needs {nbytes / 2**30:,.1f} GiB for {what}, more than "
                          f"this machine's {have / 2**30:,.1f} GiB of memory")
