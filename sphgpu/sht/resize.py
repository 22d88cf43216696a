"""Truncating or zero-padding a_lm to other band limits (healpy's ``resize_alm``)."""

from __future__ import annotations

import numpy as np

from .._device import is_device_array, like_input
from .._validate import check_finite, check_int
from ..alm import AlmLayout

__all__ = ["resize_alm"]


def _index_maps(layout_in, layout_out):
    """(source, destination) indices of the coefficients both layouts hold, int64."""
    lmax = min(layout_in.lmax, layout_out.lmax)
    mmax = min(layout_in.mmax, layout_out.mmax)
    common = AlmLayout(lmax, mmax)
    l, m = common.lm()
    return layout_in.index(l, m), layout_out.index(l, m)


def resize_alm(alm, lmax, mmax, lmax_out, mmax_out):
    """A copy of ``alm`` truncated or zero-padded to (lmax_out, mmax_out) (healpy's
    ``resize_alm``).

    Coefficients with l <= min(lmax, lmax_out) and m <= min(mmax, mmax_out) are copied, every
    other output coefficient is zero. Pure indexing on the array's own device: a CuPy or Numba
    device array gives one of the same kind, with no host copy.

    Parameters
    ----------
    alm : array, shape (nalm,) or (k, nalm), complex (or real); or a list of k 1-D arrays
        Coefficients in healpy's m-major order for (lmax, mmax); a (3, nalm) array holds
        T, E, B. Any numeric dtype, kept.
    lmax : int
        Band limit of ``alm``, >= 0.
    mmax : int
        Azimuthal limit of ``alm``, 0 <= mmax <= lmax.
    lmax_out : int
        Band limit of the result, >= 0.
    mmax_out : int
        Azimuthal limit of the result, 0 <= mmax_out <= lmax_out.

    Returns
    -------
    array, shape (nalm_out,) or (k, nalm_out), the dtype of ``alm``
        ``nalm_out = (mmax_out + 1) (lmax_out + 1) - mmax_out (mmax_out + 1) / 2``. For 2-D
        input (or a list) one 2-D array, where healpy returns a list of 1-D arrays (the same
        rows: ``numpy.array`` of healpy's list equals it).

    Raises
    ------
    TypeError
        If ``alm`` is not numeric or a limit is not an integer.
    ValueError
        If ``alm`` is not 1-D or 2-D, its length is not that of (lmax, mmax), a limit is out of
        range, or ``alm`` holds NaN or infinity.
    """
    layout_in = AlmLayout(check_int("lmax", lmax, minimum=0),
                          check_int("mmax", mmax, minimum=0, maximum=lmax))
    layout_out = AlmLayout(check_int("lmax_out", lmax_out, minimum=0),
                           check_int("mmax_out", mmax_out, minimum=0, maximum=lmax_out))
    device = is_device_array(alm)
    if device:
        import cupy

        xp, arr = cupy, cupy.asarray(alm)
    else:
        if alm is None or isinstance(alm, (str, bytes)):
            raise TypeError(f"alm must be an array of coefficients, got {type(alm).__name__}")
        xp = np
        try:
            arr = np.asarray(alm)
        except ValueError:
            raise ValueError("alm is a list of arrays of different lengths: every row must "
                             "hold the a_lm of (lmax, mmax)") from None
    if np.dtype(arr.dtype).kind not in "fciu":
        raise TypeError(f"alm must hold numbers, got dtype {arr.dtype}")
    if not 1 <= arr.ndim <= 2:
        raise ValueError(f"alm must be 1-D or 2-D (rows such as T, E, B), got shape "
                         f"{arr.shape}")
    if arr.shape[-1] != layout_in.size:
        raise ValueError(f"alm has {arr.shape[-1]} coefficients per row but lmax={lmax}, "
                         f"mmax={mmax} needs {layout_in.size}")
    check_finite("alm", arr)
    src, dst = _index_maps(layout_in, layout_out)
    out = xp.zeros(arr.shape[:-1] + (layout_out.size,), dtype=arr.dtype)
    out[..., xp.asarray(dst)] = arr[..., xp.asarray(src)]
    return like_input(out, alm) if device else out
