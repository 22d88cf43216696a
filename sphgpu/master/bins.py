"""Multipole bins for bandpowers: linear, logarithmic or given edges, with weights.

Bin b holds the multipoles ``edges[b] <= l < edges[b + 1]``; its bandpower is the weighted mean
C_b = sum_{l in b} w_l C_l with the weights normalised to sum 1 in each bin (NaMaster's
convention), and its effective multipole is l_b = sum_{l in b} w_l l. Unbinning puts C_b back
on every multipole of bin b (piecewise constant), as MASTER assumes when it decouples.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Bins"]


def _int(value, name, minimum=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


class Bins:
    """Multipole bins ``edges[b] <= l < edges[b + 1]`` with weights, for l = 0..lmax.

    Parameters
    ----------
    edges : array_like of int, shape (nbins + 1,)
        Strictly increasing bin edges; ``edges[0] >= 0`` and ``edges[-1] <= lmax + 1``.
        Multipoles outside ``[edges[0], edges[-1])`` belong to no bin.
    lmax : int, optional
        Last multipole of the spectra binned (default ``edges[-1] - 1``).
    weights : array_like, shape (lmax + 1,), optional
        Non-negative weight per multipole (default: equal weights); normalised to sum 1 in
        each bin, so every bin needs a positive weight somewhere.

    Raises
    ------
    ValueError
        Edges not strictly increasing, outside 0..lmax + 1, fewer than two; weights of the
        wrong length, negative, non-finite or zero over a whole bin.
    TypeError
        Edges that are not numbers; an lmax that is not an integer.

    Examples
    --------
    >>> b = Bins.linear(lmax=383, width=16, lmin=2)
    >>> cb = b.bin_cell(cl)              # (..., lmax + 1) -> (..., nbins)
    """

    def __init__(self, edges, lmax: int | None = None, weights=None):
        e = np.asarray(edges)
        if e.dtype.kind not in "iuf":
            raise TypeError(f"edges must be integer multipoles, got dtype {e.dtype}")
        if e.ndim != 1 or e.size < 2:
            raise ValueError(f"edges must be a 1-d array of at least 2 multipoles, got shape "
                             f"{e.shape}")
        if not np.issubdtype(e.dtype, np.integer):
            if not np.all(np.isfinite(e)) or np.any(e != np.round(e)):
                raise ValueError("edges must be whole multipoles")
        e = e.astype(np.int64)
        if np.any(np.diff(e) <= 0):
            raise ValueError(f"edges must be strictly increasing, got {e.tolist()}")
        lmax = int(e[-1] - 1) if lmax is None else _int(lmax, "lmax")
        if e[0] < 0 or e[-1] > lmax + 1:
            raise ValueError(f"edges must lie in 0..lmax + 1 = {lmax + 1} (bins of multipoles "
                             f"0..lmax), got {e[0]}..{e[-1]}")
        if weights is None:
            w = np.ones(lmax + 1)
        else:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (lmax + 1,):
                raise ValueError(f"weights must have shape (lmax + 1,) = ({lmax + 1},), got "
                                 f"{w.shape}")
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError("weights must be finite and non-negative")
        self.edges = e
        self.lmax = lmax
        nb = len(e) - 1
        mat = np.zeros((nb, lmax + 1))
        for b in range(nb):
            wb = w[e[b]:e[b + 1]]
            total = wb.sum()
            if total <= 0:
                raise ValueError(f"weights are zero over all of bin {b} "
                                 f"(l = {e[b]}..{e[b + 1] - 1})")
            mat[b, e[b]:e[b + 1]] = wb / total
        self._p = mat
        self._p.setflags(write=False)
        self.edges.setflags(write=False)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def linear(cls, lmax: int, width: int, lmin: int = 2, weights=None) -> "Bins":
        """Bins of ``width`` multipoles from ``lmin``; a last partial bin is dropped.

        Parameters
        ----------
        lmax : int
            Last multipole of the spectra.
        width : int
            Multipoles per bin, >= 1.
        lmin : int
            First multipole of the first bin (2 skips the monopole and dipole).
        weights : array_like, shape (lmax + 1,), optional
            As in :class:`Bins`.

        Returns
        -------
        Bins
        """
        lmax = _int(lmax, "lmax")
        width = _int(width, "width", 1)
        lmin = _int(lmin, "lmin")
        nb = (lmax + 1 - lmin) // width
        if nb < 1:
            raise ValueError(f"no bin of width {width} fits in lmin..lmax = {lmin}..{lmax}")
        return cls(lmin + width * np.arange(nb + 1), lmax=lmax, weights=weights)

    @classmethod
    def log(cls, lmax: int, nbins: int, lmin: int = 2, weights=None) -> "Bins":
        """Bins with logarithmically spaced edges from ``lmin`` to ``lmax + 1``; edges that
        round to the same multipole are merged, so there may be fewer than ``nbins``.

        Parameters
        ----------
        lmax : int
            Last multipole of the spectra (the last bin ends there).
        nbins : int
            Number of bins asked for, >= 1.
        lmin : int
            First multipole, >= 1.
        weights : array_like, shape (lmax + 1,), optional
            As in :class:`Bins`.

        Returns
        -------
        Bins
        """
        lmax = _int(lmax, "lmax")
        nbins = _int(nbins, "nbins", 1)
        lmin = _int(lmin, "lmin", 1)
        if lmin > lmax:
            raise ValueError(f"lmin must be <= lmax, got {lmin} > {lmax}")
        e = np.unique(np.round(np.geomspace(lmin, lmax + 1, nbins + 1)).astype(np.int64))
        return cls(e, lmax=lmax, weights=weights)

    # ------------------------------------------------------------------ properties
    @property
    def nbins(self) -> int:
        """Number of bins."""
        return len(self.edges) - 1

    @property
    def matrix(self) -> np.ndarray:
        """The binning operator P, shape (nbins, lmax + 1): C_b = sum_l P_bl C_l (read-only)."""
        return self._p

    @property
    def ell_eff(self) -> np.ndarray:
        """Effective multipole of each bin, sum_l w_l l, shape (nbins,), float64."""
        return self._p @ np.arange(self.lmax + 1, dtype=np.float64)

    @property
    def unbin_matrix(self) -> np.ndarray:
        """The unbinning operator Q, shape (lmax + 1, nbins): 1 where l is in bin b (a zero
        weight included), else 0."""
        return self._q().T

    def ells(self, b: int) -> np.ndarray:
        """The multipoles of bin ``b``.

        Parameters
        ----------
        b : int
            Bin index, 0..nbins - 1.

        Returns
        -------
        ndarray of int64
        """
        b = _int(b, "b")
        if b >= self.nbins:
            raise ValueError(f"b must be < nbins = {self.nbins}, got {b}")
        return np.arange(self.edges[b], self.edges[b + 1])

    def bin_cell(self, cl) -> np.ndarray:
        """Bandpowers of spectra: the weighted mean over each bin.

        Parameters
        ----------
        cl : array_like, shape (..., lmax + 1)
            Spectra C_l, l = 0..lmax (longer spectra are cut at lmax).

        Returns
        -------
        ndarray, shape (..., nbins), float64
        """
        cl = np.asarray(cl, dtype=np.float64)
        if cl.ndim < 1 or cl.shape[-1] < self.lmax + 1:
            raise ValueError(f"cl must have at least lmax + 1 = {self.lmax + 1} multipoles on "
                             f"its last axis, got shape {cl.shape}")
        cl = cl[..., :self.lmax + 1]
        if not np.all(np.isfinite(cl)):
            raise ValueError("cl contains NaN or infinite values")
        return cl @ self._p.T

    def unbin_cell(self, cb) -> np.ndarray:
        """Spectra that are constant over each bin: C_l = C_b for l in bin b, 0 elsewhere.

        Parameters
        ----------
        cb : array_like, shape (..., nbins)
            Bandpowers.

        Returns
        -------
        ndarray, shape (..., lmax + 1), float64
        """
        cb = np.asarray(cb, dtype=np.float64)
        if cb.ndim < 1 or cb.shape[-1] != self.nbins:
            raise ValueError(f"cb must have nbins = {self.nbins} values on its last axis, got "
                             f"shape {cb.shape}")
        if not np.all(np.isfinite(cb)):
            raise ValueError("cb contains NaN or infinite values")
        return cb @ self._q()

    def _q(self):
        q = np.zeros((self.nbins, self.lmax + 1))
        for b in range(self.nbins):
            q[b, self.edges[b]:self.edges[b + 1]] = 1.0
        return q

    def __repr__(self) -> str:
        return (f"Bins(nbins={self.nbins}, lmax={self.lmax}, "
                f"l={int(self.edges[0])}..{int(self.edges[-1]) - 1})")
