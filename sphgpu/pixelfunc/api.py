"""healpy's pixel functions for maps: reorder, ud_grade, nest2ring, ring2nest, npix2nside.

NumPy arrays are handled by the Numba loops of :mod:`sphgpu.pixelfunc._cpu`, device arrays
(CuPy or Numba, anything with ``__cuda_array_interface__``) by the CUDA kernels of
:mod:`sphgpu.pixelfunc._cuda`, without a host copy. The kind of the input chooses, as everywhere
in sphgpu: NumPy in, NumPy out; device in, device (CuPy) out. Both compute each pixel's new
number where they move it, so no index array is made.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._device import is_device_array
from .._validate import UNSEEN, check_int

__all__ = ["reorder", "ud_grade", "nest2ring", "ring2nest", "npix2nside", "nside2npix",
           "scatter_pixels"]

#: healpy's ``mask_bad`` tolerance around UNSEEN (atol 1e-8, rtol 1e-5), a float64 scalar as
#: healpy forms it, so float32 maps are compared with it in float64 as healpy compares them
_BAD_TOL = np.float64(1e-8 + 1e-5 * abs(UNSEEN))
#: largest HEALPix nside whose pixel numbers fit in int64 (HEALPix's own limit, order 29)
MAX_NSIDE = 1 << 29


def nside2npix(nside):
    """Number of pixels of a HEALPix map: ``12 * nside**2``.

    Parameters
    ----------
    nside : int
        Resolution, >= 1 (any integer for RING maps, as healpy).

    Returns
    -------
    int
    """
    return 12 * check_int("nside", nside, minimum=1, maximum=MAX_NSIDE) ** 2


def npix2nside(npix, *, name="npix"):
    """The nside of a map of ``npix`` pixels, or a ValueError if ``npix`` is no HEALPix size.

    Parameters
    ----------
    npix : int
        Number of pixels.
    name : str
        What the error message calls ``npix`` (a caller's argument or file).

    Returns
    -------
    int
        ``nside`` with ``12 * nside**2 == npix``.

    Raises
    ------
    ValueError
        ``npix`` is not 12 nside**2 for an integer nside >= 1.
    """
    if isinstance(npix, numbers.Integral) and not isinstance(npix, (bool, np.bool_)):
        npix = int(npix)
        if npix > 0 and npix % 12 == 0:
            nside = _isqrt(npix // 12)
            if nside * nside * 12 == npix:
                return nside
    raise ValueError(f"{name} has {npix!r} pixels, which is not a HEALPix size 12 * nside**2 "
                     "(12, 48, 192, 768, ...)")


def _isqrt(n):
    import math

    return math.isqrt(n)


def _check_nest_nside(nside, name):
    """nside as an int, which NESTED numbering needs to be a power of two."""
    nside = check_int(name, nside, minimum=1, maximum=MAX_NSIDE)
    if nside & (nside - 1):
        raise ValueError(f"{name}={nside} is not a power of two, which NESTED ordering needs")
    return nside


def _backend(a):
    """The module that moves pixels of ``a``: CUDA kernels for device arrays, else Numba."""
    if is_device_array(a):
        from . import _cuda

        return _cuda
    from . import _cpu

    return _cpu


def _xp(a):
    if is_device_array(a):
        from .._device import array_module

        return array_module()
    return np


def _convert_index(nside, ipix, to_ring):
    nside = _check_nest_nside(nside, "nside")
    npix = 12 * nside * nside
    device = is_device_array(ipix)
    if device:
        import cupy

        a = cupy.asarray(ipix)
        xp = cupy
    else:
        a = np.asarray(ipix)
        xp = np
    if a.dtype.kind not in "iu":
        raise TypeError(f"ipix must hold integers, got dtype {a.dtype}")
    flat = xp.ascontiguousarray(a.reshape(-1), dtype=np.int64)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= npix):
        raise ValueError(f"ipix must lie in 0 .. {npix - 1} (12 * nside**2 - 1 for nside={nside})"
                         f", got values from {int(flat.min())} to {int(flat.max())}")
    out = _backend(flat).pixel_index(nside, flat, to_ring).reshape(a.shape)
    return out if (a.ndim or device) else np.int64(out)


def nest2ring(nside, ipix):
    """RING numbers of NESTED pixel numbers (healpy's ``nest2ring``).

    Parameters
    ----------
    nside : int
        Resolution, a power of two.
    ipix : int or array of int, any shape
        NESTED pixel numbers in 0 .. 12 nside**2 - 1 (NumPy or device array).

    Returns
    -------
    int64 or array of int64, the shape of ``ipix``
        The same pixels' RING numbers (a device array for a device array).
    """
    return _convert_index(nside, ipix, True)


def ring2nest(nside, ipix):
    """NESTED numbers of RING pixel numbers (healpy's ``ring2nest``).

    Parameters
    ----------
    nside : int
        Resolution, a power of two.
    ipix : int or array of int, any shape
        RING pixel numbers in 0 .. 12 nside**2 - 1 (NumPy or device array).

    Returns
    -------
    int64 or array of int64, the shape of ``ipix``
        The same pixels' NESTED numbers (a device array for a device array).
    """
    return _convert_index(nside, ipix, False)


def scatter_pixels(values, out, first, *, out_order):
    """Put consecutive pixels of one ordering at their places in a map of the other.

    The piece of :func:`reorder` that a reader of a file uses chunk by chunk, so that a NESTED
    file becomes a RING map without a second whole map in memory.

    Parameters
    ----------
    values : array, shape (n,)
        Values of pixels ``first .. first + n - 1``, numbered in the ordering that is not
        ``out_order``; the dtype of ``out``; NumPy or device array like ``out``.
    out : array, shape (12 nside**2,)
        The whole map, C-contiguous, written at the pixels' numbers in ``out_order``.
    first : int
        Number of ``values[0]``.
    out_order : {"RING", "NEST"}
        Ordering of ``out``.
    """
    to_ring = _ordering("out_order", out_order)
    nside = _check_nest_nside(npix2nside(out.shape[0], name="out"), "out's nside")
    first = check_int("first", first, minimum=0)
    if first + values.shape[0] > out.shape[0]:
        raise ValueError(f"values: pixels {first} .. {first + values.shape[0] - 1} run past the "
                         f"map's {out.shape[0]} pixels")
    _backend(out).scatter(_xp(values).ascontiguousarray(values), out, nside, first, to_ring)


def _ordering(name, value):
    """True for RING, False for NESTED; healpy reads the first four letters, in any case."""
    key = str(value).upper()[:4]
    if key == "RING":
        return True
    if key == "NEST":
        return False
    raise ValueError(f"{name} must be 'RING' or 'NEST' (or 'NESTED'), got {value!r}")


class _Maps:
    """One map or several, as a 2-D array (k, npix), with how to give results back."""

    def __init__(self, name, map_in):
        self.device = is_device_array(map_in)
        self.mask = None
        if self.device:
            self.xp = _xp(map_in)
            a = map_in
        else:
            self.xp = np
            if isinstance(map_in, np.ma.MaskedArray):
                self.mask = np.ma.getmaskarray(map_in)
                a = map_in.filled(UNSEEN) if map_in.dtype.kind == "f" else map_in.data
            elif isinstance(map_in, (list, tuple)) and map_in:
                shapes = {np.shape(m) for m in map_in}
                if len(shapes) != 1:
                    raise ValueError(f"{name}: the maps must have one length, got shapes "
                                     f"{sorted(shapes)}")
                a = np.asarray(map_in)
            else:
                a = np.asarray(map_in)
        if a.ndim not in (1, 2) or a.shape[-1] == 0:
            raise ValueError(f"{name} must be a map (npix,) or maps (k, npix), got shape "
                             f"{tuple(a.shape)}")
        self.single = a.ndim == 1
        self.maps = a.reshape(1, -1) if self.single else a
        self.nside = npix2nside(a.shape[-1], name=name)

    def give_back(self, out, mask=None):
        out = out[0] if self.single else out
        if mask is not None:
            mask = mask[0] if self.single else mask
            return np.ma.MaskedArray(out, mask=mask, fill_value=UNSEEN)
        return out


def _permute(maps, nside, to_ring):
    """(k, npix) maps moved to the other ordering: a new array of the same kind and dtype."""
    xp = _xp(maps)
    backend = _backend(maps)
    out = xp.empty(maps.shape, maps.dtype)
    for k in range(maps.shape[0]):
        backend.scatter(xp.ascontiguousarray(maps[k]), out[k], nside, 0, to_ring)
    return out


def reorder(map_in, inp=None, out=None, r2n=None, n2r=None):
    """A map (or maps) from one pixel ordering to the other (healpy's ``reorder``).

    Parameters
    ----------
    map_in : array, shape (npix,) or (k, npix), or a sequence of k maps
        NumPy, masked (the mask moves with the pixels) or device array; any dtype.
    inp, out : {"RING", "NEST", "NESTED"}
        Orderings of ``map_in`` and of the result (first four letters, any case).
    r2n : bool, optional
        Shorthand for ``inp="RING", out="NEST"``.
    n2r : bool, optional
        Shorthand for ``inp="NEST", out="RING"``.

    Returns
    -------
    array, the shape and dtype of ``map_in``
        A new array (NumPy, masked or device like the input); ``map_in`` itself when ``inp``
        and ``out`` are the same ordering, as healpy.

    Raises
    ------
    ValueError
        An ordering that is neither RING nor NEST, a length that is not 12 nside**2, or an
        nside that is not a power of two.
    """
    if r2n:
        inp, out = "RING", "NEST"
    if n2r:
        inp, out = "NEST", "RING"
    from_ring = _ordering("inp", inp)
    to_ring = _ordering("out", out)
    maps = _Maps("map_in", map_in)
    if from_ring == to_ring:
        return map_in
    nside = _check_nest_nside(maps.nside, "map_in's nside")
    result = _permute(maps.maps, nside, to_ring)
    mask = None if maps.mask is None else _permute(maps.mask.reshape(maps.maps.shape), nside,
                                                   to_ring)
    return maps.give_back(result, mask)


def _is_bad(xp, m):
    """healpy's ``mask_bad``: values within its tolerance of UNSEEN."""
    return xp.abs(m - UNSEEN) <= _BAD_TOL


def _ud_grade_nest(xp, m, nside_in, nside_out, pess, power, dtype):
    """One NESTED map (npix_in,) at ``nside_out``; the arithmetic and dtypes of healpy's, step
    by step, so that NumPy results equal healpy's bit for bit."""
    type_out = np.dtype(dtype) if dtype else m.dtype
    ratio = (float(nside_out) / float(nside_in)) ** float(power) if power else 1
    if nside_out > nside_in:
        children = (nside_out // nside_in) ** 2
        # each child takes its parent's value times ratio, in the promotion of a product of the
        # map with an array of type_out (as healpy's outer product)
        fact = xp.ones(children, dtype=type_out) * ratio
        return (m[:, None] * fact[None, :]).reshape(-1).astype(type_out)
    if nside_out == nside_in:
        return m.astype(type_out)
    children = (nside_in // nside_out) ** 2
    mr = m.reshape(-1, children)
    good = ~(_is_bad(xp, mr) | ~xp.isfinite(mr))
    # healpy sums ``mr * good``, which makes a NaN or infinite child's parent NaN although its
    # goods exclude them; zeroing bad children instead gives healpy's intended mean and the same
    # bits wherever the children are finite
    out = xp.sum(xp.where(good, mr, 0), axis=1).astype(type_out)
    nhit = good.sum(axis=1)
    bad_out = nhit != children if pess else nhit == 0
    if power:
        nhit = nhit / ratio
    hit = nhit != 0
    out[hit] = out[hit] / nhit[hit]
    if type_out.kind in "fc":
        out[bad_out] = UNSEEN
    return out.astype(type_out)


def ud_grade(map_in, nside_out, pess=False, order_in="RING", order_out=None, power=None,
             dtype=None):
    """A map at another resolution by averaging or copying pixels (healpy's ``ud_grade``).

    Degrading sets each parent pixel to the mean of its children that are neither UNSEEN nor
    NaN/infinite (or UNSEEN if none is, or with ``pess`` if any is not); upgrading copies each
    pixel to its children. Results equal healpy's bit for bit on NumPy arrays, except that a
    NaN or infinite child is left out of its parent's mean as healpy's documentation says (healpy
    1.20.1 returns NaN there); on a GPU the sums of a degrade run in another order (differences
    of a few ulp).

    Parameters
    ----------
    map_in : array, shape (npix,) or (k, npix), or a sequence of k maps
        NumPy, masked (masked pixels count as UNSEEN; the result is masked where UNSEEN) or
        device array; nside_in must be a power of two.
    nside_out : int
        Resolution of the result, a power of two.
    pess : bool
        Degrading: a parent with any bad child is UNSEEN (pessimistic), instead of the mean of
        its good children.
    order_in : {"RING", "NEST"}
        Ordering of ``map_in``.
    order_out : {"RING", "NEST"}, optional
        Ordering of the result (None: ``order_in``).
    power : float, optional
        Multiply the result by ``(nside_out / nside_in) ** power`` (``-2`` keeps sums, as of a
        hit count; ``2`` suits variance maps). None or 0: no factor.
    dtype : numpy dtype, optional
        dtype of the result (None: the map's).

    Returns
    -------
    array, shape (12 nside_out**2,) or (k, 12 nside_out**2)
        NumPy, masked or device array as ``map_in``.

    Raises
    ------
    ValueError
        A length that is not 12 nside**2, an nside that is not a power of two, or an ordering
        that is neither RING nor NEST.
    """
    in_ring = _ordering("order_in", order_in)
    out_ring = in_ring if order_out is None else _ordering("order_out", order_out)
    nside_out = _check_nest_nside(nside_out, "nside_out")
    maps = _Maps("map_in", map_in)
    nside_in = _check_nest_nside(maps.nside, "map_in's nside")
    xp = maps.xp
    rows = maps.maps
    if in_ring:
        rows = _permute(rows, nside_in, False)
    out = xp.stack([_ud_grade_nest(xp, rows[k], nside_in, nside_out, pess, power, dtype)
                    for k in range(rows.shape[0])])
    if out_ring:
        out = _permute(out, nside_out, True)
    mask = None
    if maps.mask is not None:
        mask = _is_bad(np, out) if out.dtype.kind == "f" else np.zeros(out.shape, bool)
    return maps.give_back(out, mask)
