"""Decoupled bandpowers (MASTER): the binned coupling matrix, inverted once, applied to many
pseudo-spectra.

With P the binning and Q the unbinning operators of :class:`~sphgpu.master.Bins` (on each of
the n spectra of a spin pair), M the full coupling matrix (:meth:`Coupling.matrix`) and
F_l = b1_l b2_l p1_l p2_l the transfer of beams and pixel windows, the binned coupling is

    K = P M diag(F) Q          (n nbins x n nbins)

and the decoupled bandpowers of pseudo-spectra C~ are C_b = K^-1 P C~. Their expectation is
sum_l W_bl C_l with the bandpower window functions W = K^-1 P M diag(F), which is what a theory
spectrum is to be compared with (:meth:`Workspace.bin_theory`); for a C_l constant over each bin
(and zero outside the bins) it equals that constant exactly.

A coupling made with ``purify_b=True`` gives the bandpowers of pure B (Smith 2006), whose
pseudo-spectra :func:`sphgpu.master.pseudo_cl_spin2` computes; :func:`bandpowers_spin2` goes
from Q, U maps and a mask to decoupled EE, EB, BE, BB in one call.
"""

from __future__ import annotations

import numpy as np

from .._device import is_device_array
from .._validate import check_int
from ..sht import pixwin as _pixwin
from .bins import Bins
from .coupling import SPECTRA, Coupling, _nside_of, _spins, coupling_matrix
from .purify import pseudo_cl_spin2

__all__ = ["Workspace", "decouple", "bandpowers_spin2", "COND_MAX"]

#: largest condition number of the binned coupling K accepted: beyond it the inversion loses
#: more than half of float64's digits (1e-8 of the largest bandpower), and it means "too much
#: sky masked for bins this narrow". Measured at nside 32, lmax 80 (binary polar caps): a 7 %
#: sky has 7 (spin 0) and 181 (spin 2) with 4-wide bins, 2.5e8 with single multipoles; a
#: 0.5 % sky has 4.1 and 2.0e3 with 16-wide bins, 6.3e12 with single multipoles.
COND_MAX = 1e8


def _window(arg, name, n, pair_index):
    """A per-field transfer: None (1), an array (lmax+1,) or (2, lmax+1) (T and P rows)."""
    if arg is None:
        return np.ones(n)
    a = np.asarray(arg, dtype=np.float64)
    if a.ndim == 2 and a.shape[0] == 2:
        a = a[pair_index]
    if a.ndim != 1 or a.shape[0] < n:
        raise ValueError(f"{name} must have shape (>= lmax + 1,) = ({n},) or (2, {n}) (T and "
                         f"P rows), got {a.shape}")
    if not np.all(np.isfinite(a[:n])):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a[:n]


def _bin_rows(op, a, n):
    """``kron(eye(n), op) @ a`` for a binning operator with a few nonzeros a row.

    Parameters
    ----------
    op : ndarray, shape (nb, nl)
        A binning operator (:attr:`Bins.matrix`, or ``Bins.unbin_matrix.T``).
    a : ndarray, shape (n nl, m)
        n stacked blocks of nl rows.
    n : int
        Number of blocks.

    Returns
    -------
    ndarray, shape (n nb, m), float64
    """
    nb, nl = op.shape
    out = np.empty((n * nb, a.shape[1]))
    for b in range(nb):
        cols = np.flatnonzero(op[b])
        w = op[b, cols]
        for i in range(n):
            out[i * nb + b] = w @ a[i * nl + cols]
    return out


class Workspace:
    """MASTER workspace: a coupling and bins, the binned coupling inverted once; decouples any
    number of pseudo-spectra (NaMaster's ``NmtWorkspace``).

    Parameters
    ----------
    coupling : Coupling
        From :func:`sphgpu.master.coupling_matrix`, for one spin pair (or "all" with
        ``spins`` given); made with ``purify_b=True``, it decouples pure B.
    bins : Bins
        Its ``lmax`` must equal the coupling's.
    spins : tuple of int, optional
        The spin pair, when ``coupling`` was made for "all".
    beam : array_like or tuple of two, optional
        Beam transfer b_l, shape (lmax + 1,) or (2, lmax + 1) (T and P rows), of both fields,
        or a pair (beam1, beam2) of the two fields; default none.
    pixwin : bool or array_like or tuple of two, optional
        True: HEALPix pixel windows of the coupling's nside (T for spin 0, P for spin 2, both
        fields); an array: a window as for ``beam``; False (default): none.
    nside : int, optional
        For ``pixwin=True`` when the coupling was made from a spectrum.

    Attributes
    ----------
    spins : tuple of int
        The spin pair.
    spectra : tuple of str
        The spectra of the stacking, e.g. ("EE", "EB", "BE", "BB").
    purify_b : bool
        B is pure B (the coupling was made with ``purify_b=True``): decouple pseudo-spectra
        of :func:`sphgpu.master.pseudo_cl_spin2` with ``purify_b=True``.
    nside : int or None
        The mask's nside (the coupling's, or ``nside`` given); None when the coupling was
        made from a mask spectrum and no ``nside`` was given.

    Raises
    ------
    ValueError
        Bins of another lmax; the binned coupling cannot be inverted (condition number above
        :data:`COND_MAX`: too much of the sky masked for these bins, or bins over l < 2 for
        spin 2, where no spin-2 mode exists).

    Examples
    --------
    >>> w = Workspace(coupling_matrix(mask, spins=(0, 0)), Bins.linear(383, 16))
    >>> cb = w.decouple_cell(pseudo_cl)          # (..., lmax + 1) -> (..., nbins)
    """

    def __init__(self, coupling: Coupling, bins: Bins, *, spins=None, beam=None, pixwin=False,
                 nside: int | None = None):
        if not isinstance(coupling, Coupling):
            raise TypeError(f"coupling must be a Coupling (from coupling_matrix), got "
                            f"{type(coupling).__name__}")
        if not isinstance(bins, Bins):
            raise TypeError(f"bins must be a Bins, got {type(bins).__name__}")
        if bins.lmax != coupling.lmax:
            raise ValueError(f"bins must cover l = 0..lmax of the coupling ({coupling.lmax}), "
                             f"got bins with lmax {bins.lmax}")
        key = _spins(coupling.spins if spins is None else spins)
        mat = coupling.matrix(key)
        mat = mat if isinstance(mat, np.ndarray) else mat.get()    # blocks made on the GPU
        self.spins = key
        if nside is not None:
            nside = check_int("nside", nside, minimum=1)
        self.nside = coupling.nside if nside is None else nside
        self.purify_b = bool(coupling.purify_b) and key != (0, 0)
        self.bins = bins
        self.lmax = lmax = coupling.lmax
        self.spectra = SPECTRA[key]
        n = len(self.spectra)
        nl = lmax + 1
        # transfer F_l = b1 b2 p1 p2; pol rows for spin-2 fields
        s1, s2 = key
        b1, b2 = beam if isinstance(beam, tuple) else (beam, beam)
        transfer = (_window(b1, "beam", nl, int(s1 == 2)) * _window(b2, "beam", nl, int(s2 == 2)))
        if pixwin is True:
            ns = coupling.nside if nside is None else nside
            if ns is None:
                raise ValueError("pixwin=True needs nside= when the coupling was made from a "
                                 "mask spectrum")
            t, p = _pixwin(ns, pol=True, lmax=lmax)
            transfer = transfer * (p if s1 == 2 else t) * (p if s2 == 2 else t)
        elif pixwin is not False and pixwin is not None:
            p1, p2 = pixwin if isinstance(pixwin, tuple) else (pixwin, pixwin)
            transfer = transfer * _window(p1, "pixwin", nl, int(s1 == 2)) \
                * _window(p2, "pixwin", nl, int(s2 == 2))
        self.transfer = transfer
        P = np.kron(np.eye(n), bins.matrix)                    # (n nb, n nl)
        mf = mat * np.tile(transfer, n)[None, :]               # M diag(F)
        # P and Q have one bin's few multipoles a row: binning through them row by row is
        # O(n^2 nl^2), where the dense products P @ mf @ Q cost O(n^3 nb nl^2) (seconds at
        # lmax 4096 with all four spin-2 spectra)
        pm = _bin_rows(bins.matrix, mf, n)                      # P M diag(F), (n nb, n nl)
        K = _bin_rows(bins.unbin_matrix.T, pm.T, n).T           # P M diag(F) Q
        cond = np.linalg.cond(K)
        if not np.isfinite(cond) or cond > COND_MAX:
            raise ValueError(
                f"the binned coupling matrix cannot be inverted for these bins (condition "
                f"number {cond:.3g} > {COND_MAX:.0e}): too much of the sky is masked for "
                "bins this narrow, a beam or window vanishes in a bin, or a bin covers only "
                "l < 2 of a spin-2 field; widen the bins or start them at lmin=2")
        self._mf = mf
        self.coupling_binned = K
        self._kinv = np.linalg.inv(K)
        self._decoupler = self._kinv @ P                       # (n nb, n nl)
        self._window = self._kinv @ pm                         # (n nb, n nl)
        self._device = None

    @property
    def window(self) -> np.ndarray:
        """Bandpower window functions W, shape (n, nbins, n, lmax + 1): the expected bandpower
        b of spectrum i is sum_j sum_l W[i, b, j, l] C_j,l."""
        n, nb, nl = len(self.spectra), self.bins.nbins, self.lmax + 1
        return self._window.reshape(n, nb, n, nl)

    def _shape(self, cl, what, xp=np):
        n, nl = len(self.spectra), self.lmax + 1
        flat = n == 1 and (cl.ndim == 1 or cl.shape[-2] != 1)
        c = cl[..., None, :] if flat else cl
        if c.ndim < 2 or c.shape[-2] != n or c.shape[-1] < nl:
            raise ValueError(f"{what} must have shape (..., {n}, >= {nl}) for spins "
                             f"{self.spins} (spectra {self.spectra}), got {cl.shape}")
        c = c[..., :nl]
        # a NaN would spread through the decoupler into every bandpower of its spin pair
        if not bool(xp.all(xp.isfinite(c))):
            raise ValueError(f"{what} contains NaN or infinite values")
        return c, flat

    def decouple_cell(self, pseudo_cl):
        """Decoupled bandpowers of pseudo-spectra: K^-1 P pseudo-C.

        Parameters
        ----------
        pseudo_cl : array, shape (..., n, lmax + 1) or, for spins (0, 0), (..., lmax + 1)
            Pseudo-spectra (of the masked maps, noise bias removed by the caller) on the
            stacking of :attr:`spectra`; any leading batch axes. A device array (CuPy) gives
            a device array; longer spectra are cut at lmax.

        Returns
        -------
        array, shape (..., n, nbins) (or (..., nbins)), float64

        Raises
        ------
        ValueError
            ``pseudo_cl`` of the wrong shape, or holding NaN or infinite values.
        """
        dev = is_device_array(pseudo_cl)
        if dev:
            import cupy as xp
            if self._device is None:
                self._device = xp.asarray(self._decoupler.T)
            d = self._device
        else:
            xp = np
            d = self._decoupler.T
        cl = xp.asarray(pseudo_cl, dtype=np.float64)
        c, flat = self._shape(cl, "pseudo_cl", xp)
        out = (c.reshape(c.shape[:-2] + (-1,)) @ d).reshape(
            c.shape[:-2] + (len(self.spectra), self.bins.nbins))
        return out[..., 0, :] if flat else out

    def couple_cell(self, cl) -> np.ndarray:
        """Expected pseudo-spectra of true spectra: M diag(F) C.

        Parameters
        ----------
        cl : array_like, shape (..., n, lmax + 1) or, for spins (0, 0), (..., lmax + 1)
            True spectra on the stacking of :attr:`spectra`.

        Returns
        -------
        ndarray, shape of ``cl`` (cut at lmax), float64
        """
        c, flat = self._shape(np.asarray(cl, dtype=np.float64), "cl")
        out = (c.reshape(c.shape[:-2] + (-1,)) @ self._mf.T).reshape(c.shape)
        return out[..., 0, :] if flat else out

    def bin_theory(self, cl) -> np.ndarray:
        """Theory spectra through the bandpower windows: what decoupled bandpowers estimate.

        Parameters
        ----------
        cl : array_like, shape (..., n, lmax + 1) or, for spins (0, 0), (..., lmax + 1)
            True (unbeamed) spectra on the stacking of :attr:`spectra`.

        Returns
        -------
        ndarray, shape (..., n, nbins) (or (..., nbins)), float64
        """
        c, flat = self._shape(np.asarray(cl, dtype=np.float64), "cl")
        out = (c.reshape(c.shape[:-2] + (-1,)) @ self._window.T).reshape(
            c.shape[:-2] + (len(self.spectra), self.bins.nbins))
        return out[..., 0, :] if flat else out

    def __repr__(self) -> str:
        pure = ", purify_b=True" if self.purify_b else ""
        return f"Workspace(spins={self.spins}, lmax={self.lmax}, nbins={self.bins.nbins}{pure})"


def decouple(pseudo_cl, coupling: Coupling, bins: Bins, *, spins=None, beam=None,
             pixwin=False, nside: int | None = None):
    """Decoupled bandpowers of pseudo-spectra (MASTER), through a one-off :class:`Workspace`.

    For many spectra build the :class:`Workspace` once and call its
    :meth:`~Workspace.decouple_cell`; ``pseudo_cl`` may hold a batch here too.

    Parameters
    ----------
    pseudo_cl : array, shape (..., n, lmax + 1) or, for spins (0, 0), (..., lmax + 1)
        Pseudo-spectra of the masked maps (noise bias removed), stacked as
        ``Workspace.spectra`` ((TT), (TE, TB), (EE, EB, BE, BB)).
    coupling : Coupling
        From :func:`sphgpu.master.coupling_matrix` (with ``purify_b=True`` for pseudo-spectra
        of pure B, :func:`sphgpu.master.pseudo_cl_spin2`).
    bins : Bins
        Bins over l = 0..coupling.lmax.
    spins : tuple of int, optional
        The spin pair when ``coupling`` was made for "all".
    beam : array_like or tuple of two, optional
        As in :class:`Workspace`.
    pixwin : bool or array_like or tuple of two, optional
        As in :class:`Workspace`.
    nside : int, optional
        As in :class:`Workspace`.

    Returns
    -------
    array, shape (..., n, nbins) (or (..., nbins)), float64
        The bandpowers; compare them with ``Workspace.bin_theory`` of a theory.

    Raises
    ------
    ValueError
        As :class:`Workspace`; a ``pseudo_cl`` of the wrong shape.
    """
    ws = Workspace(coupling, bins, spins=spins, beam=beam, pixwin=pixwin, nside=nside)
    return ws.decouple_cell(pseudo_cl)


def bandpowers_spin2(q, u, mask, bins: Bins | None = None, *, workspace: Workspace | None = None,
                     purify_b: bool = False, beam=None, pixwin=False,
                     lmax_mask: int | None = None, iter: int = 3, backend: str = "auto"):
    """Decoupled EE, EB, BE, BB bandpowers of Q, U maps on a masked sky, B purified on request.

    The whole MASTER chain for a spin-2 field: the pseudo-spectra of the masked maps
    (:func:`sphgpu.master.pseudo_cl_spin2`, pure B with ``purify_b=True``), the coupling of the
    mask (:func:`sphgpu.master.coupling_matrix` with the same ``purify_b``) and its binned
    inverse (:class:`Workspace`). A batch of maps shares one coupling; for many calls make
    the workspace once and pass it as ``workspace``. Noise bias is not removed.

    Parameters
    ----------
    q, u : array, shape (npix,) or (k, npix), float
        Stokes Q and U maps (RING HEALPix), not multiplied by the mask; a leading k is a
        batch. NumPy or device arrays.
    mask : array_like, shape (npix,)
        The window; apodized (not binary) for ``purify_b=True``.
    bins : Bins, optional
        Bins over l = 0..lmax (their lmax is the spectra's); give this or ``workspace``.
    workspace : Workspace, optional
        A workspace for spins (2, 2) made from this mask's coupling with the same
        ``purify_b``; then ``bins``, ``beam`` and ``pixwin`` stay unset.
    purify_b : bool
        Pure B (Smith 2006): B without the E a cut sky leaks into it.
    beam : array_like, optional
        Beam transfer b_l of the maps, as in :class:`Workspace`.
    pixwin : bool or array_like, optional
        Pixel windows, as in :class:`Workspace`.
    lmax_mask : int, optional
        Band limit of the window's derivatives (default 3 nside - 1).
    iter : int
        Jacobi iterations of the analyses.
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the transforms and of the coupling.

    Returns
    -------
    array, shape (4, nbins) or (k, 4, nbins), float64
        EE, EB, BE, BB bandpowers; compare them with ``Workspace.bin_theory`` of a theory.

    Raises
    ------
    ValueError
        Neither or both of ``bins`` and ``workspace``; a workspace of other spins, of the
        other ``purify_b`` or of a mask of another nside; as
        :func:`~sphgpu.master.pseudo_cl_spin2` and :class:`Workspace`.

    Examples
    --------
    >>> mask = apodize_mask(binary, 10.0, apotype="C2")
    >>> cb = bandpowers_spin2(q, u, mask, Bins.linear(3 * nside - 1, 8), purify_b=True)
    """
    if (bins is None) == (workspace is None):
        raise ValueError("give bins or workspace (one of them)")
    if workspace is None:
        if not isinstance(bins, Bins):
            raise TypeError(f"bins must be a Bins, got {type(bins).__name__}")
        coupling = coupling_matrix(mask, bins.lmax, spins=(2, 2), purify_b=purify_b, iter=iter,
                                   backend=backend)
        workspace = Workspace(coupling, bins, beam=beam, pixwin=pixwin)
    else:
        if not isinstance(workspace, Workspace):
            raise TypeError(f"workspace must be a Workspace, got {type(workspace).__name__}")
        if workspace.spins != (2, 2):
            raise ValueError(f"workspace must be for spins (2, 2), got {workspace.spins}")
        ns = _nside_of(np.size(mask), "mask")
        if workspace.nside is not None and workspace.nside != ns:
            raise ValueError(f"workspace was made for a mask of nside {workspace.nside}; mask "
                             f"has nside {ns}")
        if workspace.purify_b != bool(purify_b):
            raise ValueError(f"purify_b={purify_b!r} disagrees with the workspace's coupling "
                             f"(made with purify_b={workspace.purify_b})")
        if beam is not None or pixwin is not False:
            raise ValueError("beam and pixwin belong to the workspace: leave them unset when "
                             "workspace is given")
    pcl = pseudo_cl_spin2(q, u, mask, workspace.lmax, purify_b=purify_b, lmax_mask=lmax_mask,
                          iter=iter, backend=backend)
    return workspace.decouple_cell(pcl)
