"""Spherical-harmonic coefficient layout, the same as healpy's.

Coefficients a_lm with 0 <= m <= mmax, m <= l <= lmax are stored m-major: all l for m = 0, then
all l for m = 1, and so on, so ``index(l, m) == healpy.Alm.getidx(lmax, l, m)``. Negative m are not
stored: maps are real, so a_{l,-m} = (-1)^m conj(a_lm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import check_int

__all__ = ["AlmLayout"]


@dataclass(frozen=True)
class AlmLayout:
    """The m-major layout of a_lm for band limit ``lmax`` and azimuthal limit ``mmax``.

    Parameters
    ----------
    lmax : int
        Band limit, >= 0.
    mmax : int, optional
        Azimuthal limit, 0 <= mmax <= lmax; ``lmax`` by default.
    """

    lmax: int
    mmax: int

    def __init__(self, lmax: int, mmax: int | None = None):
        lmax = check_int("lmax", lmax, minimum=0)
        mmax = lmax if mmax is None else check_int("mmax", mmax, minimum=0, maximum=lmax)
        object.__setattr__(self, "lmax", lmax)
        object.__setattr__(self, "mmax", mmax)

    @property
    def size(self) -> int:
        """Number of stored coefficients: ``(mmax + 1) * (lmax + 1) - mmax * (mmax + 1) // 2``."""
        return (self.mmax + 1) * (self.lmax + 1) - (self.mmax * (self.mmax + 1)) // 2

    def mstart(self) -> np.ndarray:
        """Where each m's coefficients start (ducc0's ``mstart``).

        Returns
        -------
        numpy.ndarray
            int64, shape ``(mmax + 1,)``: ``mstart[m] + l`` is the index of a_lm.
        """
        m = np.arange(self.mmax + 1, dtype=np.int64)
        return m * (2 * self.lmax + 1 - m) // 2

    def index(self, l, m):
        """Index of a_lm in the flat array.

        Parameters
        ----------
        l, m : int or array_like of int
            Degree and order, ``0 <= m <= mmax``, ``m <= l <= lmax`` (not checked);
            broadcastable against each other.

        Returns
        -------
        int or numpy.ndarray
            The index, of the broadcast shape of ``l`` and ``m``.
        """
        return m * (2 * self.lmax + 1 - m) // 2 + l

    def lm(self) -> tuple[np.ndarray, np.ndarray]:
        """Degree and order of every stored coefficient.

        Returns
        -------
        l, m : numpy.ndarray
            int64, shape ``(size,)`` each.
        """
        m = np.repeat(np.arange(self.mmax + 1), self.lmax + 1 - np.arange(self.mmax + 1))
        l = np.arange(self.size) - self.mstart()[m]
        return l.astype(np.int64), m.astype(np.int64)

    @classmethod
    def from_size(cls, size: int, lmax: int | None = None, mmax: int | None = None,
                  *, name: str = "alm") -> "AlmLayout":
        """The layout of ``size`` coefficients; infers lmax from the size like healpy
        (``Alm.getlmax``): with mmax = lmax when neither is given, or from the given mmax.

        Parameters
        ----------
        size : int
            Number of coefficients.
        lmax : int, optional
            Band limit; inferred from ``size`` when None.
        mmax : int, optional
            Azimuthal limit; ``lmax`` when None.
        name : str, optional
            The argument name used in error messages.

        Returns
        -------
        AlmLayout
            The layout with exactly ``size`` coefficients.

        Raises
        ------
        ValueError
            Naming ``name``, when no layout has that size.
        """
        if lmax is None:
            if mmax is None:
                lmax = round((math.sqrt(8 * size + 1) - 3) / 2)
            else:
                mmax = check_int("mmax", mmax, minimum=0)
                lmax = (size + mmax * (mmax + 1) // 2) // (mmax + 1) - 1
            if lmax < 0 or cls(lmax, mmax).size != size:
                raise ValueError(
                    f"{name} has {size} coefficients, which matches no triangular layout"
                    + ("" if mmax is None else f" with mmax={mmax}")
                    + ": pass lmax (and mmax) explicitly")
        layout = cls(lmax, mmax)
        if layout.size != size:
            raise ValueError(f"{name} has {size} coefficients but lmax={layout.lmax}, "
                             f"mmax={layout.mmax} needs {layout.size}")
        return layout
