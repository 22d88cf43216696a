"""Multipole bins for bandpowers: linear, logarithmic or given edges, with weights.

Bin b holds the multipoles ``edges[b] <= l < edges[b + 1]``; its bandpower is the weighted mean
C_b = sum_{l in b} w_l f_l C_l with the weights normalised to sum 1 in each bin (NaMaster's
convention), and its effective multipole is l_b = sum_{l in b} w_l l. The factor f_l is 1 by
default; ``f_ell="dell"`` (f_l = l (l + 1) / 2 pi, NaMaster's ``is_Dell``) makes bandpowers of
D_l. Unbinning puts C_b / f_l back on every multipole of bin b (f_l C_l piecewise constant), as
MASTER assumes when it decouples: for a spectrum as steep as the CMB's C_l at low l, D_l is the
nearer to constant over a bin, so binning D_l leaves decoupled bandpowers closer to the binned
input.
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
    f_ell : "dell" or array_like, shape (lmax + 1,), optional
        Factor f_l applied to each multipole before binning (default 1: bandpowers of C_l);
        ``"dell"``: l (l + 1) / 2 pi, bandpowers of D_l. Must be positive and finite on every
        binned multipole (so "dell" needs ``edges[0] >= 1``).

    Raises
    ------
    ValueError
        Edges not strictly increasing, outside 0..lmax + 1, fewer than two; weights of the
        wrong length, negative, non-finite or zero over a whole bin; f_ell of the wrong length
        or not positive and finite over the bins.
    TypeError
        Edges that are not numbers; an lmax that is not an integer.

    Examples
    --------
    >>> b = Bins.linear(lmax=383, width=16, lmin=2)
    >>> cb = b.bin_cell(cl)              # (..., lmax + 1) -> (..., nbins)
    """

    def __init__(self, edges, lmax: int | None = None, weights=None, f_ell=None):
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
        f = self._factor(f_ell, lmax, e)
        nb = len(e) - 1
        mat = np.zeros((nb, lmax + 1))
        for b in range(nb):
            wb = w[e[b]:e[b + 1]]
            total = wb.sum()
            if total <= 0:
                raise ValueError(f"weights are zero over all of bin {b} "
                                 f"(l = {e[b]}..{e[b + 1] - 1})")
            mat[b, e[b]:e[b + 1]] = wb / total
        self._w = mat                                   # normalised weights, without f_l
        self._f = f
        self._p = mat * f
        for a in (self._w, self._f, self._p, self.edges):
            a.setflags(write=False)

    @staticmethod
    def _dell_factor(lmax):
        ell = np.arange(lmax + 1, dtype=np.float64)
        return ell * (ell + 1) / (2 * np.pi)

    @staticmethod
    def _factor(f_ell, lmax, edges):
        """f_l, shape (lmax + 1,): ones, l (l + 1) / 2 pi for "dell", or the array given."""
        if f_ell is None:
            return np.ones(lmax + 1)
        if isinstance(f_ell, str):
            if f_ell != "dell":
                raise ValueError(f'f_ell must be "dell", an array of lmax + 1 values or None, '
                                 f"got {f_ell!r}")
            f = Bins._dell_factor(lmax)
        else:
            f = np.asarray(f_ell, dtype=np.float64)
            if f.shape != (lmax + 1,):
                raise ValueError(f"f_ell must have shape (lmax + 1,) = ({lmax + 1},), got "
                                 f"{f.shape}")
        binned = f[edges[0]:edges[-1]]
        if not np.all(np.isfinite(binned)) or np.any(binned <= 0):
            raise ValueError(f"f_ell must be positive and finite on the binned multipoles "
                             f"{edges[0]}..{edges[-1] - 1}" + (" (l (l + 1) is 0 at l = 0: "
                             "start the bins at l >= 1)" if isinstance(f_ell, str) else ""))
        return f

    # ------------------------------------------------------------------ constructors
    @classmethod
    def linear(cls, lmax: int, width: int, lmin: int = 2, weights=None,
               f_ell=None) -> "Bins":
        """Bins of ``width`` multipoles from ``lmin``; a last partial bin is dropped.

        Parameters
        ----------
        lmax : int
            Last multipole of the spectra.
        width : int
            Multipoles per bin, >= 1.
        lmin : int
            First multipole of the first bin (2 skips the monopole and dipole).
        weights, f_ell : optional
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
        return cls(lmin + width * np.arange(nb + 1), lmax=lmax, weights=weights, f_ell=f_ell)

    @classmethod
    def log(cls, lmax: int, nbins: int, lmin: int = 2, weights=None, f_ell=None) -> "Bins":
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
        weights, f_ell : optional
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
        return cls(e, lmax=lmax, weights=weights, f_ell=f_ell)

    # ------------------------------------------------------------------ properties
    @property
    def nbins(self) -> int:
        """Number of bins."""
        return len(self.edges) - 1

    @property
    def matrix(self) -> np.ndarray:
        """The binning operator P, shape (nbins, lmax + 1): C_b = sum_l P_bl C_l, P_bl = w_l f_l
        (read-only)."""
        return self._p

    @property
    def weights(self) -> np.ndarray:
        """The normalised weights w_l of each bin, shape (nbins, lmax + 1), without f_l."""
        return self._w

    @property
    def f_ell(self) -> np.ndarray:
        """The factor f_l applied before binning, shape (lmax + 1,) (ones by default)."""
        return self._f

    @property
    def ell_eff(self) -> np.ndarray:
        """Effective multipole of each bin, sum_l w_l l, shape (nbins,), float64."""
        return self._w @ np.arange(self.lmax + 1, dtype=np.float64)

    @property
    def unbin_matrix(self) -> np.ndarray:
        """The unbinning operator Q, shape (lmax + 1, nbins): 1 / f_l where l is in bin b (a
        zero weight included), else 0."""
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
        """Spectra whose f_l C_l is constant over each bin: C_l = C_b / f_l for l in bin b, 0
        elsewhere.

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
            lo, hi = self.edges[b], self.edges[b + 1]
            q[b, lo:hi] = 1.0 / self._f[lo:hi]
        return q

    def __repr__(self) -> str:
        dell = ", D_l" if np.allclose(self._f[1:], self._dell_factor(self.lmax)[1:]) else ""
        return (f"Bins(nbins={self.nbins}, lmax={self.lmax}, "
                f"l={int(self.edges[0])}..{int(self.edges[-1]) - 1}{dell})")
