"""healpy's ``read_alm``/``write_alm`` and ``read_cl``/``write_cl``.

a_lm files hold one binary table a set (T, E, B: HDUs 1, 2, 3) with HEALPix's explicit index
``l**2 + l + m + 1`` and the real and imaginary parts; in memory a_lm are m-major as in
:class:`sphgpu.AlmLayout`. Spectra files hold one column a spectrum (TT, EE, BB, TE, ...).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._device import is_device_array
from . import fitsfile
from .maps import _add_cards, fits_format

__all__ = ["read_alm", "write_alm", "read_cl", "write_cl", "CL_COLUMN_NAMES"]

#: healpy's default column names of 1 to 6 spectra (TT, EE, BB, TE, EB, TB in HEALPix's words)
CL_COLUMN_NAMES = ["TEMPERATURE", "GRADIENT", "CURL", "G-T", "C-T", "C-G"]


def _host(a):
    if is_device_array(a):
        from .._device import to_host

        return to_host(a)
    return a


def _lmax_of(size, mmax, name):
    """lmax of an m-major set of ``size`` coefficients with ``mmax`` (None: mmax = lmax)."""
    if mmax is None:
        lmax = (int(np.sqrt(8 * size + 1)) - 3) // 2
        if (lmax + 1) * (lmax + 2) // 2 == size:
            return lmax
        raise ValueError(f"{name} has {size} coefficients, which is (lmax+1)(lmax+2)/2 for no "
                         "lmax; give mmax_in for a set with mmax < lmax")
    num = size + mmax * (mmax + 1) // 2
    if num % (mmax + 1) == 0 and num // (mmax + 1) - 1 >= mmax:
        return num // (mmax + 1) - 1
    raise ValueError(f"{name} has {size} coefficients, which no lmax gives with mmax_in={mmax}")


def write_alm(filename, alms, out_dtype=None, lmax=-1, mmax=-1, mmax_in=-1, overwrite=False):
    """Write a_lm to a FITS file, as healpy's ``write_alm``: one table a set, with columns
    ``index`` (int32, l**2 + l + m + 1), ``real`` and ``imag``.

    Parameters
    ----------
    filename : str or os.PathLike
        The file.
    alms : complex array, shape (nalm,) or (k, nalm), or a sequence of k of them
        m-major coefficients (healpy's layout) of band limit l2max and azimuthal limit mmax_in.
    out_dtype : numpy dtype, optional
        Type of the real and imaginary columns (None: that of the a_lm's real part).
    lmax : int
        Write l <= lmax only (-1: all; at most the a_lm's band limit).
    mmax : int
        Write m <= mmax only (-1: lmax; larger values are capped at mmax_in).
    mmax_in : int
        Azimuthal limit of ``alms`` (-1: their band limit).
    overwrite : bool
        Replace an existing file.

    Raises
    ------
    ValueError
        A length that fits no (lmax, mmax_in), ``lmax`` above the a_lm's band limit, or sets of
        different lengths.
    FileExistsError
        ``filename`` exists and ``overwrite`` is False.
    OSError
        The folder is missing or not writable, or the write failed (the previous file is kept).
    """
    fits = fitsfile.astropy_fits()
    alms = _host(alms)
    if isinstance(alms, np.ndarray) and alms.ndim == 1:
        sets = [alms]
    elif isinstance(alms, np.ndarray) and alms.ndim == 2:
        sets = list(alms)
    elif isinstance(alms, (list, tuple)) and alms:
        sets = [np.asarray(_host(a)) for a in alms]
        if len({a.shape for a in sets}) != 1 or sets[0].ndim != 1:
            raise ValueError(f"alms: the sets must be 1-D of one length, got shapes "
                             f"{[a.shape for a in sets]}")
    else:
        raise ValueError(f"alms must be a complex array (nalm,) or (k, nalm), got "
                         f"{type(alms).__name__} of shape {np.shape(alms)}")
    size = sets[0].size
    mmax_in = None if mmax_in == -1 else int(mmax_in)
    l2max = _lmax_of(size, mmax_in, "alms")
    mmax_in = l2max if mmax_in is None else mmax_in
    if lmax == -1:
        lmax = l2max
    if lmax > l2max or lmax < 0:
        raise ValueError(f"lmax={lmax} must lie in 0 .. {l2max}, the a_lm's band limit")
    mmax = lmax if mmax == -1 else int(mmax)
    mmax = min(mmax, mmax_in, lmax)
    if out_dtype is None:
        out_dtype = sets[0].real.dtype
    code = fits_format(out_dtype, name="out_dtype")
    # (l, m) pairs kept, m-major as the a_lm, and where each sits in the input
    m_all = np.concatenate([np.full(lmax - m + 1, m, np.int64) for m in range(mmax + 1)])
    l_all = np.concatenate([np.arange(m, lmax + 1, dtype=np.int64) for m in range(mmax + 1)])
    where = m_all * (2 * l2max + 1 - m_all) // 2 + l_all
    index = (l_all ** 2 + l_all + m_all + 1).astype(np.int32)
    hdus = [fits.PrimaryHDU()]
    for a in sets:
        a = np.asarray(a)
        hdus.append(fits.BinTableHDU.from_columns([
            fits.Column(name="index", format="J", unit="l*l+l+m+1", array=index),
            fits.Column(name="real", format=code, unit="unknown",
                        array=a.real[where].astype(out_dtype)),
            fits.Column(name="imag", format=code, unit="unknown",
                        array=a.imag[where].astype(out_dtype))]))
    fitsfile.write_fits(filename, hdus, overwrite=overwrite)


def _table(hdul, hdu, shown, what):
    fits = fitsfile.astropy_fits()
    try:
        t = hdul[hdu]
    except (IndexError, KeyError) as exc:
        raise ValueError(f"{shown!r} has no HDU {hdu!r}: it has {len(hdul)} HDUs") from exc
    if not isinstance(t, (fits.BinTableHDU, fits.TableHDU)) or t.data is None:
        raise ValueError(f"{shown!r} holds no {what}: HDU {hdu!r} is a {type(t).__name__}, not "
                         "a binary table")
    return t


def read_alm(filename, hdu=1, return_mmax=False):
    """Read a_lm from a FITS file written as :func:`write_alm` (or HEALPix) writes them.

    Parameters
    ----------
    filename : str, os.PathLike or binary file object
        The file.
    hdu : int or sequence of int
        The table(s): 1 for T alone, (1, 2, 3) for T, E, B.
    return_mmax : bool
        Also return the largest m in the file.

    Returns
    -------
    alm : complex ndarray, shape (nalm,) or (k, nalm)
        m-major (healpy's layout) for the file's lmax and mmax, zero where the file has no
        entry; complex64 for float32 columns, else complex128.
    mmax : int
        Only with ``return_mmax``.

    Raises
    ------
    ValueError
        Not a FITS file, an HDU that is not an a_lm table (fewer than 3 columns, an index
        that gives m < 0), or tables with different lmax or mmax. Each names the file.
    """
    shown = fitsfile.display_name(filename)
    units = [hdu] if isinstance(hdu, numbers.Integral) else list(hdu)
    out, shape = [], None
    with fitsfile.open_fits(filename) as hdul:
        for unit in units:
            t = _table(hdul, unit, shown, "a_lm")
            if len(t.columns) < 3:
                raise ValueError(f"{shown!r} HDU {unit}: an a_lm table has columns index, real, "
                                 f"imag; this one has {[c.name for c in t.columns]}")
            idx = np.asarray(t.data.field(0)).astype(np.int64).reshape(-1)
            re = np.asarray(t.data.field(1)).reshape(-1)
            im = np.asarray(t.data.field(2)).reshape(-1)
            if idx.size == 0 or idx.min() < 1:
                raise ValueError(f"{shown!r} HDU {unit}: the index column must hold "
                                 "l**2 + l + m + 1 >= 1")
            ell = np.floor(np.sqrt(idx - 1)).astype(np.int64)
            ell -= ell * ell > idx - 1                 # the float root can round up
            ell += (ell + 1) ** 2 <= idx - 1
            m = idx - ell ** 2 - ell - 1
            if (m < 0).any():
                raise ValueError(f"{shown!r} HDU {unit}: index values give m < 0")
            lmax, mmax = int(ell.max()), int(m.max())
            if shape is not None and shape != (lmax, mmax):
                raise ValueError(f"{shown!r}: HDU {unit} has lmax, mmax = {lmax}, {mmax}, HDU "
                                 f"{units[0]} has {shape[0]}, {shape[1]}")
            shape = (lmax, mmax)
            ctype = np.result_type(re.dtype.newbyteorder("="), np.complex64)
            alm = np.zeros((mmax + 1) * (lmax + 1) - mmax * (mmax + 1) // 2, ctype)
            at = m * (2 * lmax + 1 - m) // 2 + ell
            alm.real[at] = re
            alm.imag[at] = im
            out.append(alm)
    alm = out[0] if len(out) == 1 else np.stack(out)
    return (alm, shape[1]) if return_mmax else alm


def write_cl(filename, cl, dtype=None, overwrite=False, column_names=None, column_units=None,
             extra_header=()):
    """Write angular power spectra to a FITS table, one column a spectrum (healpy's
    ``write_cl``).

    Parameters
    ----------
    filename : str or os.PathLike
        The file.
    cl : array, shape (lmax + 1,) or (k, lmax + 1), or a sequence of k spectra
        C_l from l = 0 (NumPy or device arrays).
    dtype : numpy dtype, optional
        Column type (None: that of ``cl``).
    overwrite : bool
        Replace an existing file.
    column_names : str or sequence of k str, optional
        Default: TEMPERATURE, GRADIENT, CURL, G-T, C-T, C-G (TT, EE, BB, TE, EB, TB), then
        COLUMN_7, ...
    column_units : str or sequence of k str, optional
        TUNIT of each column.
    extra_header : sequence of tuples
        ``(keyword, value)`` or ``(keyword, value, comment)`` cards.

    Raises
    ------
    ValueError
        Spectra of different lengths, or names/units whose number is not the number of spectra.
    FileExistsError
        ``filename`` exists and ``overwrite`` is False.
    OSError
        The folder is missing or not writable, or the write failed (the previous file is kept).
    """
    fits = fitsfile.astropy_fits()
    cl = _host(cl)
    if isinstance(cl, (list, tuple)):
        cl = [np.asarray(_host(c)) for c in cl]
        if len({c.shape for c in cl}) != 1:
            raise ValueError(f"cl: the spectra must have one length, got shapes "
                             f"{[c.shape for c in cl]}")
    cl = np.asarray(cl)
    if cl.ndim not in (1, 2):
        raise ValueError(f"cl must be a spectrum (lmax+1,) or spectra (k, lmax+1), got shape "
                         f"{cl.shape}")
    rows = [cl] if cl.ndim == 1 else list(cl)
    k = len(rows)
    code = fits_format(cl.dtype if dtype is None else dtype, name="dtype")
    if column_names is None:
        names = (CL_COLUMN_NAMES + [f"COLUMN_{n}" for n in range(7, k + 1)])[:k]
    else:
        names = [column_names] if isinstance(column_names, str) else list(column_names)
    if len(names) != k:
        raise ValueError(f"column_names has {len(names)} entries for {k} spectra")
    units = ([column_units] * k if column_units is None or isinstance(column_units, str)
             else list(column_units))
    if len(units) != k:
        raise ValueError(f"column_units has {len(units)} entries for {k} spectra")
    table = fits.BinTableHDU.from_columns(
        [fits.Column(name=n, format=code, unit=u, array=r) for n, u, r in zip(names, units, rows)])
    table.header["CREATOR"] = "sphgpu"
    _add_cards(table.header, extra_header)
    fitsfile.write_fits(filename, [fits.PrimaryHDU(), table], overwrite=overwrite)


def read_cl(filename):
    """Read angular power spectra from the first table of a FITS file (healpy's ``read_cl``).

    Parameters
    ----------
    filename : str, os.PathLike or binary file object
        The file.

    Returns
    -------
    ndarray, shape (lmax + 1,) for one column, else (k, lmax + 1)
        One row a column, in the file's type (native byte order).

    Raises
    ------
    ValueError
        Not a FITS file, or no table in HDU 1 (naming the file).
    """
    shown = fitsfile.display_name(filename)
    with fitsfile.open_fits(filename) as hdul:
        t = _table(hdul, 1, shown, "spectra")
        cols = [np.asarray(t.data.field(i)).reshape(-1) for i in range(len(t.columns))]
    dtype = np.result_type(*[c.dtype.newbyteorder("=") for c in cols])
    out = np.stack([c.astype(dtype) for c in cols])
    return out[0] if len(cols) == 1 else out
