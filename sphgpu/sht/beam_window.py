"""Beam transfer functions b_l: the one parser of a ``beam_window`` and the Gaussian rows.

:func:`smoothing` and :class:`sphgpu.sims.MonteCarlo` read a user's ``beam_window`` through
:func:`parse_beam_window` only, so both accept and refuse the same layouts:

- ``(L,)``: one b_l for every field (healpy's ``beam_window``; for I, Q, U maps it multiplies T,
  E and B alike, as healpy's ``smoothalm``).
- ``(L, n)`` with n >= 3: healpy's polarized layout (``gauss_beam(pol=True)`` gives n = 4), columns
  T, E, B (further columns such as TE are not used); more than 4 columns only with at least as
  many multipoles (a wider table is a transposed one). ``(L, 1)`` and ``(1, L)`` are the 1-D
  case.
- ``(3, L)`` or ``(4, L)`` with L > 4: the same table transposed (rows T, E, B[, TE]). A beam
  has more multipoles than columns, so a first axis of 3 or 4 facing a longer second axis can
  only be rows; when both axes are at most 4 the array is read in healpy's (L, n) layout.
- Everything else is refused with an error naming ``beam_window``: (L, 2) and (2, L) (two
  columns are no layout of healpy's), (L, n) with n > max(L, 4), more than 2 dimensions, no multipoles, strings, booleans, complex
  numbers, ragged lists, NaN or infinity.

For maps that are not polarized the T column (row) is used. Multipoles past the end of the table
get b_l = 0, as healpy's ``almxfl`` does.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["parse_beam_window", "gaussian_rows", "beam_rows"]


def _as_table(beam_window, name):
    if isinstance(beam_window, (str, bytes)):
        raise TypeError(f"{name} must be an array of b_l numbers, got the string {beam_window!r}")
    try:
        arr = np.asarray(beam_window)
    except ValueError as err:              # NumPy >= 1.24: ragged nested sequences
        raise ValueError(f"{name} is ragged (rows of different lengths); give an array of shape "
                         "(L,), (L, 3 or more) or (3 or 4, L)") from err
    if arr.dtype == object:
        raise ValueError(f"{name} is ragged or holds non-numbers; give an array of shape (L,), "
                         "(L, 3 or more) or (3 or 4, L)")
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real, got dtype {arr.dtype} (a beam transfer function "
                        "is real; pass its real part if that is meant)")
    if kind not in "fiu":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def parse_beam_window(beam_window, lmax: int, polarized: bool, *,
                      name: str = "beam_window") -> np.ndarray:
    """The transfer functions of a user's ``beam_window``, one row per field.

    Parameters
    ----------
    beam_window : array_like, shape (L,), (L, n >= 3), (3, L) or (4, L), real
        b_l from l = 0; layouts as in this module's docstring.
    lmax : int
        Largest multipole needed; rows are cut or zero-padded to ``lmax + 1``.
    polarized : bool
        True: return the T, E, B rows; False: the T row only.
    name : str, optional
        The argument's name in error messages.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(3, lmax + 1)`` (T, E, B) if ``polarized`` else ``(1, lmax + 1)``;
        dimensionless.

    Raises
    ------
    TypeError
        A string, boolean, complex or non-numeric ``beam_window``.
    ValueError
        A ragged, empty, NaN/infinite one, or a layout not listed above.
    """
    arr = _as_table(beam_window, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim == 2 and arr.shape[0] == 1 and arr.shape[1] > 4:
        arr = arr[0]
    rows_layout = arr.ndim == 2 and arr.shape[0] in (3, 4) and arr.shape[1] > 4
    if arr.ndim == 1:
        table = arr[None, :]
    elif rows_layout:
        table = arr[:3]
    elif arr.ndim == 2 and 3 <= arr.shape[1] <= max(4, arr.shape[0]):
        table = arr[:, :3].T
    else:
        raise ValueError(
            f"{name} has shape {arr.shape}: give b_l of shape (L,) (one beam for every field), "
            "(L, n >= 3) with columns T, E, B as healpy's gauss_beam(pol=True), or that table "
            "transposed, (3 or 4, L) with L > 4")
    if table.shape[1] == 0:
        raise ValueError(f"{name} is empty: give at least b_0")
    if not np.all(np.isfinite(table)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if table.shape[0] == 1 and polarized:
        table = np.repeat(table, 3, axis=0)
    elif not polarized:
        table = table[:1]
    out = np.zeros((table.shape[0], lmax + 1))
    n = min(table.shape[1], lmax + 1)
    out[:, :n] = table[:, :n]
    return out


def gaussian_rows(fwhm: float, lmax: int, polarized: bool) -> np.ndarray:
    """The T (, E, B) factors of a Gaussian beam of full width ``fwhm`` (radians):
    ``gauss_beam(fwhm, lmax, pol=True)``'s first three columns, float64 of shape
    ``(3 or 1, lmax + 1)``."""
    sigma2 = (fwhm / math.sqrt(8.0 * math.log(2.0))) ** 2
    ell = np.arange(lmax + 1, dtype=np.float64)
    g = np.exp(-0.5 * ell * (ell + 1.0) * sigma2)
    if not polarized:
        return g[None, :]
    return g[None, :] * np.exp(np.array([0.0, 2.0 * sigma2, 2.0 * sigma2]))[:, None]


def beam_rows(nrows: int, polarized: bool, lmax: int, fwhm: float, beam_window) -> np.ndarray:
    """(nrows, lmax + 1) transfer functions: ``beam_window`` through :func:`parse_beam_window`
    when given, else a Gaussian of width ``fwhm`` (radians). ``polarized`` rows are T, E, B
    (nrows must be 3); otherwise the T row repeated ``nrows`` times. float64, dimensionless."""
    if beam_window is not None:
        rows = parse_beam_window(beam_window, lmax, polarized)
    else:
        rows = gaussian_rows(fwhm, lmax, polarized)
    if polarized:
        if nrows != 3:
            raise ValueError(f"a polarized beam has 3 rows (T, E, B), asked for {nrows}")
        return rows
    return np.repeat(rows, nrows, axis=0)
