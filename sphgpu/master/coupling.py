"""MASTER mode-coupling matrices of a mask (Hivon et al. 2002), for spin-0 and spin-2 fields.

A mask w multiplies the sky, which couples multipoles: the pseudo-spectrum of the masked sky
has expectation

    <pseudo-C_l> = sum_l' M_ll' C_l'

with M built from the mask's power spectrum W_L through Wigner-3j symbols
(:mod:`sphgpu.master.wigner` states the four blocks). For polarization the blocks M^++ and
M^-- mix E and B:

    EE~ = M^++ EE + M^-- BB,   BB~ = M^-- EE + M^++ BB,
    EB~ = M^++ EB - M^-- BE,   BE~ = -M^-- EB + M^++ BE,   TE~ = M^02 TE,   TB~ = M^02 TB,

which :meth:`Coupling.matrix` writes as one matrix on NaMaster's stacking of spectra: (TT,)
for spins (0, 0); (TE, TB) for (0, 2); (EE, EB, BE, BB) for (2, 2).

With pure B (``purify_b=True``, :mod:`sphgpu.master.purify`) the pure-B coefficients are
B^pure_lm = a_lm[W beta] / N_l, the spin-0 pseudo-a_lm of the scalar beta = sum N_l B_lm Y_lm
divided by N_l = sqrt((l+2)!/(l-2)!): they hold no E, and their couplings are the spin-0 and
spin-0 x 2 blocks rescaled by R_ll' = N_l' / N_l (l, l' >= 2; 0 otherwise):

    M^pp = R^2 M^00 (pure B x pure B),   M^+p = R M^02 (E x pure B),   M^0p = R M^00 (T x pure B),

    EE~ = M^++ EE + M^-- BB,   EB~ = M^+p EB,   BE~ = M^+p BE,   BB~ = M^pp BB,
    TE~ = M^02 TE,   TB~ = M^0p TB.

This is the exact expectation of the pure estimator (E is not purified): the three-term
kernels of Grain, Tristram & Stompor (2009), with the window's spin-0, 1 and 2 spectra, reduce
to it term by term in L through the same integration by parts that defines the estimator
(tests/master/test_purify.py checks it against the estimator's exact linear map).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import backends
from .._device import array_module_of, is_device_array
from .._validate import check_int
from ..sht import anafast

__all__ = ["Coupling", "coupling_matrix", "mask_spectrum", "pure_ratio", "require_apodized",
           "BLOCKS", "SPIN_PAIRS", "PURE_BLOCKS"]

#: the coupling blocks, in the order every backend returns them (and
#: :func:`sphgpu.master.wigner.pair_sums` sums them)
BLOCKS = ("00", "02", "++", "--")
#: the spin pairs and the blocks each needs; "all" asks for every block at once
SPIN_PAIRS = {(0, 0): ("00",), (0, 2): ("02",), (2, 0): ("02",), (2, 2): ("++", "--"),
              "all": BLOCKS}
#: spectra on which each spin pair's full matrix acts, in NaMaster's order
SPECTRA = {(0, 0): ("TT",), (0, 2): ("TE", "TB"), (2, 0): ("ET", "BT"),
           (2, 2): ("EE", "EB", "BE", "BB")}
#: with pure B: the blocks each spin pair's matrix uses, and the standard blocks they come from
PURE_BLOCKS = {(0, 2): ("02", "0p"), (2, 0): ("02", "0p"), (2, 2): ("++", "--", "+p", "pp"),
               "all": BLOCKS + ("0p", "+p", "pp")}
_PURE_SOURCE = {"0p": ("00", 1), "+p": ("02", 1), "pp": ("00", 2)}


def _spins(spins):
    key = spins if isinstance(spins, str) else tuple(spins) if np.ndim(spins) == 1 else None
    if key is not None and not isinstance(key, str):
        if len(key) != 2 or not all(isinstance(s, (int, np.integer)) for s in key):
            key = None
        else:
            key = tuple(int(s) for s in key)
    if key not in SPIN_PAIRS:
        raise ValueError(f"spins must be (0, 0), (0, 2), (2, 0), (2, 2) or 'all' (spin 0 and "
                         f"spin 2 fields only), got {spins!r}")
    return key


def _nside_of(npix, name):
    nside = int(round(math.sqrt(npix / 12)))
    if nside < 1 or 12 * nside * nside != npix:
        raise ValueError(f"{name} must be a HEALPix map (12 nside^2 pixels, RING order), got "
                         f"{npix} pixels")
    return nside


def _mask_map(mask, name, keep_device=False):
    """The window as a float64 map and its nside, checked: a real map, finite, non-negative,
    not zero everywhere. A device array comes to the host unless ``keep_device`` (then it is
    checked where it is: a few reductions instead of copying a map across)."""
    if np.ma.isMaskedArray(mask):
        mask = np.ma.filled(mask, 0.0)       # a masked pixel of the mask is a hidden pixel
    if keep_device and is_device_array(mask):
        xp = array_module_of(mask)
        m = mask
    else:
        xp = np
        m = np.asarray(mask.get() if hasattr(mask, "get") and is_device_array(mask) else mask)
    if m.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real map, got dtype {m.dtype}")
    m = xp.asarray(m, dtype=np.float64)
    if m.ndim != 1:
        raise ValueError(f"{name} must be one map of shape (npix,), got shape {m.shape}")
    nside = _nside_of(m.size, name)
    if not bool(xp.all(xp.isfinite(m))):
        raise ValueError(f"{name} contains NaN or infinite values")
    if bool(xp.any(m < 0)):
        raise ValueError(f"{name} must be non-negative (a weight per pixel), got minimum "
                         f"{float(m.min()):.3g}")
    if not bool(xp.any(m > 0)):
        raise ValueError(f"{name} is zero everywhere: nothing of the sky is seen")
    return m, nside


def mask_spectrum(mask, mask2=None, lmax: int | None = None, *, iter: int = 3,
                  backend: str = "auto") -> np.ndarray:
    """Power spectrum W_L of a mask (the cross-spectrum of two masks with ``mask2``).

    Parameters
    ----------
    mask : array_like, shape (npix,)
        A HEALPix map (RING) of non-negative weights: binary or apodized.
    mask2 : array_like, shape (npix,), optional
        A second mask of the same nside.
    lmax : int, optional
        Last multipole L (default 3 nside - 1).
    iter : int
        Jacobi iterations of the analysis (healpy's ``iter``).
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the spherical-harmonic analysis.

    Returns
    -------
    ndarray, shape (lmax + 1,), float64
        W_L = sum_m w_Lm conj(w2_Lm) / (2L + 1); 4 pi at L = 0 for the full sky.
    """
    m1, nside = _mask_map(mask, "mask")
    m2 = None
    if mask2 is not None:
        m2, nside2 = _mask_map(mask2, "mask2")
        if nside2 != nside:
            raise ValueError(f"mask2 must have the nside of mask ({nside}), got {nside2}")
    lmax = 3 * nside - 1 if lmax is None else check_int("lmax", lmax, minimum=0)
    return np.asarray(anafast(m1, m2, lmax=lmax, iter=iter, pol=False, backend=backend),
                      dtype=np.float64)


@dataclass(frozen=True)
class Coupling:
    """Mode-coupling blocks of a mask, as :func:`coupling_matrix` returns them.

    ``blocks[name][l, l']`` is M^name_ll' for name in ``"00"``, ``"02"``, ``"++"``, ``"--"``
    (those computed), l, l' = 0..lmax; pseudo-C_l = sum_l' M_ll' C_l'.

    Attributes
    ----------
    lmax : int
        Last multipole of the matrices.
    spins : tuple of int or str
        The spin pair asked for, or "all".
    blocks : dict of str to ndarray, shape (lmax + 1, lmax + 1), float64
        The blocks (NumPy arrays; CuPy for device input on the GPU backend).
    mask_cl : array, shape (nw,), float64
        The mask power spectrum W_L they were made from (a device array if it was given so).
    nside : int or None
        The mask's nside when it was given as a map.
    purify_b : bool
        The spin-2 fields' B is pure B (:mod:`sphgpu.master.purify`): ``blocks`` then also
        holds "0p", "+p", "pp" (module docstring of :mod:`sphgpu.master.coupling`), which
        :meth:`matrix` uses for TB, EB/BE and BB.
    """

    lmax: int
    spins: tuple | str
    blocks: dict
    mask_cl: np.ndarray = field(repr=False)
    nside: int | None = None
    purify_b: bool = False

    def matrix(self, spins=None):
        """The full coupling matrix of a spin pair, on NaMaster's stacking of spectra.

        Parameters
        ----------
        spins : tuple of int, optional
            (0, 0), (0, 2), (2, 0) or (2, 2); default the pair this coupling was made for
            (required when it was made for "all").

        Returns
        -------
        ndarray, shape (n (lmax + 1), n (lmax + 1)), float64
            n = 1, 2, 2, 4 spectra ((TT), (TE, TB), (ET, BT), (EE, EB, BE, BB)); entry
            [i (lmax + 1) + l, j (lmax + 1) + l'] couples spectrum j at l' into i at l.
            With ``purify_b`` the B rows are those of pure B (module docstring).
        """
        key = _spins(self.spins if spins is None else spins)
        if key == "all":
            raise ValueError("spins must name one spin pair for a coupling made with "
                             "spins='all', e.g. spins=(2, 2)")
        pure = self.purify_b and key != (0, 0)
        need = PURE_BLOCKS[key] if pure else SPIN_PAIRS[key]
        missing = [b for b in need if b not in self.blocks]
        if missing:
            raise ValueError(f"spins={key} needs blocks {missing}, which this coupling (made "
                             f"for spins={self.spins!r}) does not have")
        b = self.blocks
        xp = np if isinstance(next(iter(b.values())), np.ndarray) else _cupy()
        if key == (0, 0):
            return b["00"]

        def grid(rows):                       # numpy.block, written with what CuPy also has
            return xp.concatenate([xp.concatenate(r, axis=1) for r in rows], axis=0)

        if key in ((0, 2), (2, 0)):
            z = xp.zeros_like(b["02"])
            return grid([[b["02"], z], [z, b["0p" if pure else "02"]]])
        p, m = b["++"], b["--"]
        z = xp.zeros_like(p)
        if pure:
            x, bb = b["+p"], b["pp"]
            return grid([[p, z, z, m], [z, x, z, z], [z, z, x, z], [z, z, z, bb]])
        return grid([[p, z, z, m], [z, p, -m, z], [z, -m, p, z], [m, z, z, p]])

    def couple_cell(self, cl, spins=None):
        """The expected pseudo-spectra of true spectra: pseudo-C = M C.

        Parameters
        ----------
        cl : array_like, shape (..., n, lmax + 1)
            True spectra on the stacking of :meth:`matrix` (n = 1 may be left out for spins
            (0, 0)); longer spectra are cut at lmax.
        spins : tuple of int, optional
            As in :meth:`matrix`.

        Returns
        -------
        ndarray, shape of ``cl`` (cut at lmax)
        """
        key = _spins(self.spins if spins is None else spins)
        mat = self.matrix(key)
        n = mat.shape[0] // (self.lmax + 1)
        cl = np.asarray(cl, dtype=np.float64)
        flat = cl.ndim >= 1 and n == 1 and (cl.ndim == 1 or cl.shape[-2] != 1)
        c = cl[..., None, :] if flat else cl
        if c.ndim < 2 or c.shape[-2] != n or c.shape[-1] < self.lmax + 1:
            raise ValueError(f"cl must have shape (..., {n}, >= {self.lmax + 1}) for "
                             f"spins={key}, got {cl.shape}")
        c = c[..., :self.lmax + 1]
        if not np.all(np.isfinite(c)):
            raise ValueError("cl contains NaN or infinite values")
        out = (c.reshape(c.shape[:-2] + (-1,)) @ np.asarray(mat).T).reshape(c.shape)
        return out[..., 0, :] if flat else out


def _cupy():
    import cupy

    return cupy


def coupling_matrix(mask, lmax: int | None = None, *, spins=(0, 0), purify_b: bool = False,
                    mask2=None, is_cl: bool = False, lmax_mask: int | None = None,
                    iter: int = 3, backend: str = "auto", method: str | None = None
                    ) -> Coupling:
    """MASTER mode-coupling matrix of a mask: pseudo-C_l = sum_l' M_ll' C_l'.

    For a spin pair the blocks are (the module :mod:`sphgpu.master.coupling` gives how they
    mix spectra; :mod:`sphgpu.master.wigner` their formulas, NaMaster's and ducc0's)::

        M^00_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L (l l' L; 0 0 0)^2
        M^02_ll' = (2l'+1)/(4 pi) sum_L (2L+1) W_L (l l' L; 0 0 0)(l l' L; 2 -2 0)
        M^+-_ll' = (2l'+1)/(8 pi) sum_L (2L+1) W_L (1 +- (-1)^(l+l'+L)) (l l' L; 2 -2 0)^2

    with W_L the mask's power spectrum (its cross-spectrum with ``mask2``). A full-sky mask of
    ones gives the identity (0 for the spin-2 blocks below l = 2).

    Parameters
    ----------
    mask : array_like
        A HEALPix map (RING) of non-negative weights, shape (npix,), binary or apodized; or,
        with ``is_cl=True``, its power spectrum W_L, shape (nw,), L = 0..nw - 1 (zero beyond).
    lmax : int, optional
        Last multipole of the matrices. Default: 3 nside - 1 for a map, nw - 1 for a
        spectrum.
    spins : (0, 0), (0, 2), (2, 0), (2, 2) or "all"
        The spins of the two fields (blocks "00"; "02"; "++" and "--"; all four).
    purify_b : bool
        Couple pure B (Smith 2006; :func:`sphgpu.master.pseudo_alm_spin2` with
        ``purify_b=True``) instead of the standard pseudo-B, for spins (2, 2), (0, 2), (2, 0)
        or "all": the blocks gain "0p", "+p", "pp" = R M^00, R M^02, R^2 M^00 with R_ll' =
        N_l' / N_l, N_l = sqrt((l+2)!/(l-2)!) (module docstring of
        :mod:`sphgpu.master.coupling`), the exact expectation of the pure estimator (E not
        purified). A mask given as a map must be apodized (not binary).
    mask2 : array_like, shape (npix,), optional
        The second field's mask (a map, same nside); default ``mask``.
    is_cl : bool
        ``mask`` is a power spectrum, not a map.
    lmax_mask : int, optional
        Last multipole of W_L taken from a map (default min(2 lmax, 3 nside - 1): terms
        above 2 lmax do not enter, and a map resolves no more than 3 nside - 1).
    iter : int
        Jacobi iterations of the mask's analysis (healpy's ``iter``).
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the sums run: the CUDA kernel (one thread per (l, l') pair), the CPU (ducc0 by
        default), or the exact-arithmetic reference (lmax of a few tens).
    method : {"ducc0", "twin"}, optional
        CPU backend only: ducc0's ``coupling_matrix_rect`` (default) or the Numba twin of the
        CUDA kernel.

    Returns
    -------
    Coupling
        Its ``blocks`` map "00", "02", "++", "--" (those ``spins`` needs) to float64 arrays of
        shape (lmax + 1, lmax + 1), indexed [l, l'].

    Raises
    ------
    ValueError
        A mask of the wrong size (not 12 nside^2 pixels), negative, NaN or all zero; a
        spectrum (``is_cl``) that is not finite or has W_0 <= 0; spins other than 0 and 2;
        lmax out of range; ``purify_b=True`` with spins (0, 0) (no B to purify) or with a
        binary mask.

    Examples
    --------
    >>> c = coupling_matrix(mask, lmax=383, spins=(2, 2))
    >>> expected_pseudo = c.couple_cell(np.stack([ee, 0 * ee, 0 * ee, bb]))
    >>> pure = coupling_matrix(apodized_mask, lmax=383, spins=(2, 2), purify_b=True)
    """
    key = _spins(spins)
    if not isinstance(purify_b, (bool, np.bool_)):
        raise TypeError(f"purify_b must be True or False, got {purify_b!r}")
    purify_b = bool(purify_b)
    if purify_b and key == (0, 0):
        raise ValueError("purify_b=True purifies the B of a spin-2 field: spins must be (2, 2), "
                         "(0, 2), (2, 0) or 'all', got spins=(0, 0)")
    nside = None
    if is_cl:
        if mask2 is not None:
            raise ValueError("mask2 must be None with is_cl=True: give the masks' cross-"
                             "spectrum as mask")
        wl = np.asarray(mask.get() if is_device_array(mask) and hasattr(mask, "get")
                        else mask, dtype=np.float64)
        if wl.ndim != 1 or wl.size < 1:
            raise ValueError(f"mask (a power spectrum, is_cl=True) must have shape (nw,), got "
                             f"{wl.shape}")
        if not np.all(np.isfinite(wl)):
            raise ValueError("mask (a power spectrum) contains NaN or infinite values")
        if not wl[0] > 0:
            # W_0 = 4 pi <w1> <w2> of windows that are >= 0 and see some of the sky
            raise ValueError(f"mask (a power spectrum, is_cl=True) must have W_0 > 0 (4 pi "
                             f"times the product of the masks' means), got W_0 = {wl[0]:.3g}")
        lmax = wl.size - 1 if lmax is None else check_int("lmax", lmax, minimum=0)
        if lmax_mask is not None:
            raise ValueError("lmax_mask is for masks given as maps; cut the spectrum instead")
    else:
        m, nside = _mask_map(mask, "mask")
        if purify_b:
            require_apodized(m, "mask")
            if mask2 is not None:
                require_apodized(_mask_map(mask2, "mask2")[0], "mask2")
        lmax = 3 * nside - 1 if lmax is None else check_int("lmax", lmax, minimum=0)
        lm = min(2 * lmax, 3 * nside - 1) if lmax_mask is None \
            else check_int("lmax_mask", lmax_mask, minimum=0)
        wl = mask_spectrum(mask, mask2, lm, iter=iter, backend=backend)
    wl = wl[:2 * lmax + 1]                    # L > 2 lmax never enters
    wanted = PURE_BLOCKS[key] if purify_b else SPIN_PAIRS[key]
    # the standard blocks to compute: those wanted, and those the pure ones are made from
    blocks = tuple(b for b in BLOCKS if b in wanted
                   or any(_PURE_SOURCE[p][0] == b for p in wanted if p in _PURE_SOURCE))
    module = backends.load("master", backend)
    if is_cl and is_device_array(mask) and module.ACCEPTS_DEVICE_ARRAYS:
        wl = mask[:2 * lmax + 1]              # device in, device out (checked on its host copy)
    kw = {} if method is None else {"method": method}
    if kw and not hasattr(module, "METHODS"):
        raise ValueError(f"method={method!r} is for the CPU backend; this call runs on "
                         f"{module.__name__}")
    arr = module.coupling_blocks(wl, lmax, blocks, **kw)
    made = {b: arr[i] for i, b in enumerate(blocks)}
    if purify_b:
        made = _pure_blocks(made, lmax, wanted)
    return Coupling(lmax=lmax, spins=key, blocks=made, mask_cl=wl, nside=nside,
                    purify_b=purify_b)


def pure_ratio(lmax: int) -> np.ndarray:
    """R_ll' = N_l' / N_l with N_l = sqrt((l+2)!/(l-2)!), 0 where l or l' < 2.

    Parameters
    ----------
    lmax : int
        Last multipole.

    Returns
    -------
    ndarray, shape (lmax + 1, lmax + 1), float64
        Indexed [l, l'].
    """
    l = np.arange(lmax + 1, dtype=np.float64)
    n = np.sqrt(np.maximum((l + 2.0) * (l + 1.0) * l * (l - 1.0), 0.0))
    inv = np.where(l >= 2, 1.0 / np.where(l >= 2, n, 1.0), 0.0)
    return inv[:, None] * n[None, :]


def _pure_blocks(made, lmax, wanted):
    """The pure-B blocks "0p", "+p", "pp" from the standard ones (module docstring)."""
    first = next(iter(made.values()))
    xp = np if isinstance(first, np.ndarray) else _cupy()
    r = xp.asarray(pure_ratio(lmax))
    out = {b: made[b] for b in wanted if b in made}
    for name in wanted:
        if name in _PURE_SOURCE:
            src, power = _PURE_SOURCE[name]
            out[name] = made[src] * (r if power == 1 else r * r)
    return out


def require_apodized(m, name: str) -> None:
    """ValueError naming ``name`` when the window ``m`` is binary (0 and one other value),
    which B-mode purification cannot use.

    Parameters
    ----------
    m : ndarray, shape (npix,), float64
        The window (validated: non-negative, finite, not all zero); NumPy or CuPy.
    name : str
        The argument it came from.
    """
    seen = m[m > 0]
    if bool((m == 0).any()) and bool(seen.min() == seen.max()):
        raise ValueError(
            f"{name} is binary (0 and one other value): B-mode purification needs a window "
            "that vanishes with its first derivative at the edge of the sky (Smith 2006); "
            "apodize it first, e.g. sphgpu.master.apodize_mask(mask, 5.0, apotype='C2')")
