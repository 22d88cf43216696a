"""Shipped reference data for sphgpu.

Currently one table: the lensed CMB angular power spectra of the Planck 2018
base-LCDM cosmology, computed once with CAMB and stored as
``planck2018_cl.txt`` inside this package (see ``README.md`` next to it for
provenance and how to regenerate it).  Nothing is downloaded or computed at
run time; the table is read from the installed package on first use and
cached.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from importlib.resources import files

import numpy as np

__all__ = ["planck2018_cl"]

_FILENAME = "planck2018_cl.txt"
_COLUMNS = ("TT", "EE", "BB", "TE")


@functools.lru_cache(maxsize=1)
def _load_planck2018_table() -> np.ndarray:
    """Parse the shipped table once.

    Returns a read-only float64 array of shape (4, lmax_table + 1) holding
    raw C_ell in muK^2 for TT, EE, BB, TE (rows in that order), indexed by ell.
    """
    resource = files(__package__) / _FILENAME
    with resource.open("r", encoding="ascii") as fh:
        raw = np.loadtxt(fh, dtype=np.float64, comments="#", ndmin=2)
    if raw.shape[1] != 1 + len(_COLUMNS):
        raise RuntimeError(f"{_FILENAME}: expected {1 + len(_COLUMNS)} columns, found {raw.shape[1]}")
    ell = raw[:, 0]
    if not np.array_equal(ell, np.arange(ell.size, dtype=np.float64)):
        raise RuntimeError(f"{_FILENAME}: ell column must be 0, 1, 2, ... without gaps")
    table = np.ascontiguousarray(raw[:, 1:].T)
    table.setflags(write=False)
    return table


def _check_lmax(lmax, lmax_table: int) -> int:
    if lmax is None:
        return lmax_table
    if isinstance(lmax, (bool, np.bool_)):
        raise TypeError("lmax must be an int or None, got bool")
    if isinstance(lmax, numbers.Real) and not isinstance(lmax, numbers.Integral):
        raise ValueError(f"lmax must be an integer, got non-integer {lmax!r}")
    if not isinstance(lmax, numbers.Integral):
        raise TypeError(f"lmax must be an int or None, got {type(lmax).__name__}")
    lmax = int(lmax)
    if lmax < 0:
        raise ValueError(f"lmax must be non-negative, got {lmax}")
    if lmax > lmax_table:
        raise ValueError(f"lmax={lmax} exceeds the table's lmax={lmax_table}")
    return lmax


def _spectrum_index(name) -> int:
    if isinstance(name, str):
        key = name.upper()
        if key in _COLUMNS:
            return _COLUMNS.index(key)
    raise ValueError(f"spectra: unknown spectrum name {name!r}; expected one of {', '.join(_COLUMNS)}")


def planck2018_cl(lmax=None, *, spectra="TT") -> np.ndarray:
    """Planck 2018 base-LCDM lensed CMB angular power spectra.

    Computed with CAMB for the Planck 2018 TT,TE,EE+lowE+lensing parameters
    (Planck Collaboration 2018 results VI, A&A 641, A6 (2020), Table 2); see
    ``README.md`` in this package for the full provenance.

    Parameters
    ----------
    lmax : int or None, optional
        Largest multipole returned.  ``None`` (default) returns the whole
        table (ell up to 8192).  Must be an integer (Python or NumPy) with
        ``0 <= lmax <= table lmax``.  Floats are rejected, even integral
        ones such as ``5.0``; so is ``bool``.
    spectra : str or sequence of str, keyword-only
        ``"TT"`` (default), ``"EE"``, ``"BB"`` or ``"TE"`` (case-insensitive),
        or a sequence of these names.

    Returns
    -------
    numpy.ndarray
        float64, raw C_ell in muK^2 (not ell(ell+1)C_ell/2pi), indexed by ell
        starting at 0.  Shape ``(lmax + 1,)`` for a single name, or
        ``(k, lmax + 1)`` for a sequence of ``k`` names, rows in the order
        given.  C_0 and C_1 are zero.  The array is a fresh, writable copy.

    Raises
    ------
    TypeError
        If ``lmax`` is neither an integer, a real number nor ``None`` (for
        example a string), or is a ``bool``; or if ``spectra`` is neither a
        string nor a sequence.
    ValueError
        If ``lmax`` is a non-integer number (e.g. ``5.5`` or ``5.0``),
        negative, or above the table's lmax; or if ``spectra`` contains an
        unknown name or is an empty sequence.
    """
    table = _load_planck2018_table()
    lmax = _check_lmax(lmax, table.shape[1] - 1)

    if isinstance(spectra, str):
        return table[_spectrum_index(spectra), : lmax + 1].copy()
    if not isinstance(spectra, Sequence):
        raise TypeError(
            f"spectra must be a spectrum name or a sequence of names, got {type(spectra).__name__}"
        )
    if len(spectra) == 0:
        raise ValueError("spectra must not be an empty sequence")
    rows = [_spectrum_index(name) for name in spectra]
    return table[rows, : lmax + 1].copy()
