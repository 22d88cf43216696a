"""Power spectra, beams and random skies around the transforms, with healpy's names.

Angles are radians (``fwhm``, ``sigma``) unless given through ``fwhm_arcmin``. Spectra are raw
C_l (not l(l+1)C_l/2pi), indexed by l from 0.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .._device import array_module_of, is_device_array, like_input, to_host
from .._validate import (UNSEEN, as_complex_array, as_maps, as_real_array, check_fits_in_memory,
                         check_flag, check_int)
from ..alm import AlmLayout
from .beam_window import beam_rows
from .transforms import (alm2map, apply_pixwin, check_healpix_pixwin, map2alm, resolve_geometry,
                         times_fl)

__all__ = ["synalm", "synfast", "alm2cl", "anafast", "almxfl", "gauss_beam", "smoothing"]

_ARCMIN = math.pi / (180.0 * 60.0)


def fwhm_radians(fwhm, fwhm_arcmin, name="fwhm"):
    """One beam width in radians from ``fwhm`` (radians) or ``fwhm_arcmin``."""
    if fwhm_arcmin is not None:
        if fwhm not in (None, 0, 0.0):
            raise ValueError(f"give {name} (radians) or fwhm_arcmin, not both")
        fwhm, name = fwhm_arcmin * _ARCMIN, "fwhm_arcmin"
    fwhm = 0.0 if fwhm is None else fwhm
    if isinstance(fwhm, bool) or not isinstance(fwhm, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(fwhm).__name__}")
    if not math.isfinite(fwhm) or fwhm < 0 or fwhm > 2 * math.pi:
        raise ValueError(f"{name} must be finite and in [0, 2 pi] radians, got {fwhm}")
    return float(fwhm)


def gauss_beam(fwhm=None, lmax=512, pol=False, *, fwhm_arcmin=None):
    """Transfer function b_l = exp(-l(l+1) sigma^2 / 2) of a Gaussian beam, sigma = fwhm/sqrt(8 ln 2).

    Parameters
    ----------
    fwhm : float, optional
        Full width at half maximum, radians, in [0, 2 pi]; give this or ``fwhm_arcmin``.
    lmax : int, optional
        Largest multipole (512, as healpy).
    pol : bool, optional
        Also return the polarization factors.
    fwhm_arcmin : float, optional
        The full width at half maximum in arcminutes instead.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(lmax+1,)``; with ``pol=True`` shape ``(lmax+1, 4)`` holding the T, E,
        B and TE factors (spin-2 beams carry an extra exp(2 sigma^2), TE the geometric mean),
        as healpy.
    """
    fwhm = fwhm_radians(fwhm, fwhm_arcmin)
    if isinstance(lmax, (float, np.floating)):       # healpy takes lmax=1e4 (np.arange does)
        if not math.isfinite(lmax) or lmax != int(lmax):
            raise ValueError(f"lmax must be a whole number, got {lmax!r}")
        lmax = int(lmax)
    lmax = check_int("lmax", lmax, minimum=0)
    # ell, the Gaussian and the (lmax+1, 4) product: NumPy's own failure names no argument
    check_fits_in_memory(8 * (lmax + 1) * (6 if pol else 2), "the beam", f"lmax={lmax}")
    sigma2 = (fwhm / np.sqrt(8.0 * np.log(2.0))) ** 2         # as healpy computes it
    l = np.arange(lmax + 1, dtype=np.float64)
    bl = np.exp(-0.5 * l * (l + 1.0) * sigma2)
    if not pol:
        return bl
    # healpy's expression, to the last bit: exp([0, 2 sigma^2, 2 sigma^2, sigma^2])
    return bl[:, None] * np.exp([0.0, 2 * sigma2, 2 * sigma2, sigma2])


def almxfl(alm, fl, mmax=None, inplace=False, *, lmax=None):
    """Multiply a_lm by fl[l] (coefficients with l >= len(fl) become 0, as in healpy).

    Parameters
    ----------
    alm : array, shape (nalm,) or (..., nalm), complex
        Coefficients in healpy's m-major order; NumPy or a device array.
    fl : array_like, shape (L,), real or complex
        The factor of each l, from l = 0.
    mmax : int, optional
        Azimuthal limit; ``lmax`` by default.
    inplace : bool, optional
        Multiply ``alm`` itself (a contiguous complex128 NumPy array) and return it.
    lmax : int, optional
        Band limit; inferred from the length of ``alm`` by default.

    Returns
    -------
    array, complex128
        The product, the shape and kind (NumPy or device) of ``alm``.
    """
    alm_arr = as_complex_array("alm", alm, allow_batch=3)
    fl = np.asarray(fl)
    if fl.ndim != 1 or np.dtype(fl.dtype).kind not in "fiuc":
        raise ValueError(f"fl must be a 1-D array of numbers, got shape {fl.shape}, dtype {fl.dtype}")
    if not np.all(np.isfinite(fl)):
        raise ValueError("fl contains NaN or infinite values")
    layout = AlmLayout.from_size(alm_arr.shape[-1], lmax, mmax, name="alm")
    full = np.zeros(layout.lmax + 1, dtype=np.result_type(fl.dtype, np.float64))
    n = min(fl.shape[0], layout.lmax + 1)
    full[:n] = fl[:n]
    if inplace:
        if not (isinstance(alm, np.ndarray) and alm.dtype == np.complex128
                and alm.flags.c_contiguous):
            raise TypeError("inplace=True needs alm to be a contiguous complex128 NumPy array")
        alm *= full[layout.lm()[0]]
        return alm
    return times_fl(alm_arr, full, layout)


def _pairs_by_diagonal(n):
    """healpy's order of the n(n+1)/2 spectra of n fields: by diagonal, (0,0), (1,1), ...,
    (0,1), (1,2), ..., (0,n-1): TT, EE, BB, TE, EB, TB for T, E, B."""
    return [(i, i + d) for d in range(n) for i in range(n - d)]


#: fields of one set whose spectra the GPU sums in one kernel (``_cuda_kernels.CL_FIELDS``)
_DEVICE_SUM_FIELDS = 6


def alm2cl(alms1, alms2=None, lmax=None, mmax=None, lmax_out=None, nspec=None):
    """Angular power (cross-)spectra, as healpy's ``alm2cl``.

    C_l = sum_m a1_lm conj(a2_lm) / (2l+1) over m = -l..l (real part).

    Parameters
    ----------
    alms1 : array, shape (nalm,), (n, nalm) or (k, n, nalm), complex
        One set gives one spectrum; n sets (e.g. T, E, B) give healpy's n(n+1)/2 auto and
        cross spectra ordered by diagonal (TT, EE, BB, TE, EB, TB), of alms1[i] with
        alms2[j]. A leading k is a batch.
    alms2 : array, optional
        The second field, same shape as ``alms1``; ``alms1`` by default (auto spectra).
    lmax, mmax : int, optional
        Band limits; by default inferred from the length of ``alms1`` with mmax = lmax.
    lmax_out : int, optional
        Largest l returned: ``min(lmax_out, lmax)``, as healpy; ``lmax`` by default.
    nspec : int, optional
        Keep the first nspec spectra (nspec = n: the auto spectra).

    Returns
    -------
    array
        float64, shape ``(L,)``, ``(nspec, L)`` or ``(k, nspec, L)`` with
        L = min(lmax_out, lmax) + 1; units of the a_lm squared. NumPy for NumPy a_lm; device
        a_lm (CuPy or Numba) give a device array, computed on the device.
    """
    a1 = as_complex_array("alms1", alms1, allow_batch=3)
    a2 = a1 if alms2 is None else as_complex_array("alms2", alms2, allow_batch=3)
    if is_device_array(a1) != is_device_array(a2):
        raise TypeError("alms1 and alms2 must both be NumPy arrays or both device arrays")
    if a2.shape != a1.shape:
        raise ValueError(f"alms2 has shape {a2.shape} but alms1 has {a1.shape}")
    xp = array_module_of(a1)
    layout = AlmLayout.from_size(a1.shape[-1], lmax, mmax, name="alms1")
    # healpy: lmax_out above lmax gives lmax + 1 values (nothing is invented past the a_lm)
    lmax_out = layout.lmax if lmax_out is None else min(
        check_int("lmax_out", lmax_out, minimum=0), layout.lmax)
    single = a1.ndim == 1
    b1 = a1.reshape((-1,) + a1.shape[-2:]) if not single else a1[None, None]
    b2 = a2.reshape(b1.shape)
    pairs = _pairs_by_diagonal(b1.shape[1])
    if nspec is not None:
        pairs = pairs[:check_int("nspec", nspec, minimum=1, maximum=len(pairs))]
    lk, keep = _l_index(xp, layout.lmax, layout.mmax, lmax_out)
    if keep is not None:           # the usual case (lmax_out >= lmax) copies no a_lm
        b1, b2 = b1[..., keep], b2[..., keep]
    # m > 0 stands for +m and -m, whose products are complex conjugates: twice the real part;
    # the m = 0 entries, counted once, are the first n0 (m-major order, l = 0, 1, ...)
    n0 = min(layout.lmax, lmax_out) + 1
    if (alms2 is None and keep is None and is_device_array(a1)
            and b1.shape[1] <= _DEVICE_SUM_FIELDS):
        # auto and cross spectra of one set on the GPU: one kernel, no atomics (bincount's
        # were most of a polarized Monte Carlo's spectra time, and rounded differently run to
        # run)
        from . import _cuda

        cl = _cuda.spectra_sums(b1, pairs, layout.lmax, layout.mmax)
    else:
        cl = xp.zeros((b1.shape[0], len(pairs), lmax_out + 1))
        for q in range(b1.shape[0]):
            for s, (i, j) in enumerate(pairs):
                prod = (b1[q, i] * xp.conj(b2[q, j])).real
                cl[q, s] = 2.0 * xp.bincount(lk, weights=prod, minlength=lmax_out + 1)
                cl[q, s, :n0] -= prod[:n0]
    cl /= xp.asarray(2.0 * np.arange(lmax_out + 1) + 1.0)
    if single:
        cl = cl[0, 0]
    elif a1.ndim == 2:
        cl = cl[0]
    else:
        cl = cl.reshape(a1.shape[:-2] + cl.shape[1:])
    return like_input(cl, alms1)


@functools.lru_cache(maxsize=4)
def _l_index(xp, lmax, mmax, lmax_out):
    """(l of each coefficient kept, as int32 of ``xp``; the indices kept, or None for all) for
    alm2cl. Kept per process: building and uploading them took 0.2 s a call at lmax 4096."""
    l, _ = AlmLayout(lmax, mmax).lm()
    keep = l <= lmax_out
    if keep.all():
        return xp.asarray(l.astype(np.int32)), None
    return xp.asarray(l[keep].astype(np.int32)), xp.asarray(np.flatnonzero(keep))


def field_spectra(cls, new, pol, allow_negative=False):
    """The spectra of synalm/synfast as an (n, n, L) covariance table of n fields (negative auto
    spectra raise unless ``allow_negative``: synalm handles them as healpy)."""
    if isinstance(cls, (list, tuple)):
        rows = [None if c is None else np.asarray(c, dtype=np.float64) for c in cls]
        size = max((r.shape[0] for r in rows if r is not None), default=0)
        arr = np.zeros((len(rows), size))
        for i, r in enumerate(rows):
            if r is not None:
                if r.ndim != 1:
                    raise ValueError(f"cls[{i}] must be 1-D, got shape {r.shape}")
                arr[i, :r.shape[0]] = r
    else:
        arr = np.asarray(as_real_array("cls", cls), dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None]
    if not np.all(np.isfinite(arr)):
        raise ValueError("cls contains NaN or infinite values")
    nspec = arr.shape[0]
    if nspec == 4:                  # T, E, B with TE only (healpy)
        arr = (np.stack([arr[0], arr[1], arr[2], arr[3], 0 * arr[0], 0 * arr[0]]) if new else
               np.stack([arr[0], arr[1], 0 * arr[0], arr[2], 0 * arr[0], arr[3]]))
        nspec = 6
    n = int(round((math.sqrt(8 * nspec + 1) - 1) / 2))
    if n * (n + 1) // 2 != nspec:
        raise ValueError(f"cls has {arr.shape[0]} spectra: give 1, 4 (TT EE BB TE with new=True, "
                         "TT TE EE BB with new=False) or n(n+1)/2 for n fields")
    if pol and n not in (1, 3):
        raise ValueError(f"cls has {arr.shape[0]} spectra, {n} fields: with pol=True give 1, 4 or "
                         "6 spectra (T, E, B), or pass pol=False for spin-0 fields")
    # healpy: new=True orders the spectra by diagonal, new=False by row of the upper triangle
    order = (_pairs_by_diagonal(n) if new else
             [(i, j) for i in range(n) for j in range(i, n)])
    cov = np.zeros((n, n, arr.shape[1]))
    for spec, (i, j) in zip(arr, order):
        cov[i, j] = cov[j, i] = spec
    if not allow_negative and np.any(np.diagonal(cov) < 0):
        raise ValueError("cls: auto spectra must be non-negative")
    return cov


def cholesky_factors(cov):
    """healpy's per-l factor of the covariance of n fields: the lower-triangular Cholesky factor
    L_l with L_l L_l^T = C_l, where a pivot <= 0 (C_l not positive definite) is set to 0 and the
    rest of its column too, as healpy's ``synalm`` does.

    Parameters
    ----------
    cov : numpy.ndarray, float64, shape (n, n, L)
        Symmetric covariance of n fields per multipole.

    Returns
    -------
    factors : numpy.ndarray
        float64, shape (L, n, n), lower triangular.
    changed : numpy.ndarray
        bool, shape (L,): the multipoles where L_l L_l^T differs from C_l by more than
        1e-10 of C_l's largest entry (C_l not positive semi-definite).
    """
    c = np.moveaxis(np.asarray(cov, dtype=np.float64), 2, 0)
    n = c.shape[1]
    f = np.zeros_like(c)
    for j in range(n):                           # column by column, healpy's order of sums
        pivot = c[:, j, j].copy()
        for k in range(j):
            pivot -= f[:, j, k] * f[:, j, k]
        d = np.sqrt(np.where(pivot > 0, pivot, 0.0))
        f[:, j, j] = d
        for i in range(j + 1, n):
            t = c[:, i, j].copy()
            for k in range(j):
                t -= f[:, i, k] * f[:, j, k]
            f[:, i, j] = np.where(d != 0, t / np.where(d != 0, d, 1.0), 0.0)
    scale = np.abs(c).max(axis=(1, 2))
    err = np.abs(np.einsum("lik,ljk->lij", f, f) - c).max(axis=(1, 2))
    return f, err > 1e-10 * scale


def _name_multipoles(ls):
    shown = ", ".join(str(int(x)) for x in ls[:20])
    return shown + (f", ... ({len(ls)} multipoles)" if len(ls) > 20 else "")


def synalm(cls, lmax=None, mmax=None, new=False, verbose=True, *, seed=None):
    """Gaussian random a_lm with the (cross-)spectra ``cls``, as healpy's ``synalm``.

    The fields are correlated per l through healpy's Cholesky factor of the covariance
    (:func:`cholesky_factors`). Spectra that are not a covariance (an auto spectrum below 0, a
    cross spectrum larger than its autos allow: healpy's own WMAP test spectra have EE < 0 at
    31 multipoles) are accepted as healpy accepts them, the offending pivots set to 0, with a
    ``UserWarning`` naming the multipoles changed.

    Parameters
    ----------
    cls : array_like, shape (L,) or (nspec, L), or a sequence of spectra
        One spectrum, or n(n+1)/2 spectra of n correlated fields (healpy's order: by row,
        TT TE TB EE EB BB, or with ``new=True`` by diagonal, TT EE BB TE EB TB; 4 spectra are
        TT EE BB TE with new=True, TT TE EE BB otherwise). Values past the end are 0; None
        entries are 0.
    lmax : int, optional
        Band limit; L-1 by default.
    mmax : int, optional
        Azimuthal limit; lmax by default.
    new : bool, optional
        The order of the spectra, as healpy's ``new``.
    verbose : bool, optional
        Accepted for healpy's signature and ignored (healpy deprecates it).
    seed : int, numpy.random.Generator or numpy.random.RandomState, optional
        For reproducible skies; fresh entropy when None (sphgpu never touches NumPy's global
        generator, which healpy draws from). A ``RandomState`` is drawn from in healpy's order,
        so ``synalm(cls, seed=numpy.random.RandomState(s))`` equals ``numpy.random.seed(s);
        healpy.synalm(cls)`` to rounding (``seed=numpy.random.mtrand._rand`` shares healpy's
        global stream).

    Returns
    -------
    numpy.ndarray
        complex128, shape ``(nalm,)`` for one spectrum, else ``(n, nalm)``: a_l0 real, Re and
        Im of a_lm (m > 0) each with half the variance; the fields correlated per l as
        ``cls`` says.

    Warns
    -----
    UserWarning
        ``cls`` is not positive semi-definite at some multipoles (named in the message).
    """
    cov = field_spectra(cls, check_flag("new", new), pol=False, allow_negative=True)
    n, _, size = cov.shape
    if lmax is not None:
        lmax = check_int("lmax", lmax, minimum=0)
    lmax = size - 1 if lmax is None else lmax
    # a_lm, the normal draws and the einsum's operands: check before NumPy allocates
    nalm = (lmax + 1) * (lmax + 2) // 2
    check_fits_in_memory(16 * 4 * n * nalm, f"{n} x {nalm:,} random a_lm", f"lmax={lmax}")
    layout = AlmLayout(lmax, mmax)
    rng = (seed if isinstance(seed, (np.random.Generator, np.random.RandomState))
           else np.random.default_rng(seed))
    full = np.zeros((n, n, layout.lmax + 1))
    k = min(size, layout.lmax + 1)
    full[:, :, :k] = cov[:, :, :k]
    f, changed = cholesky_factors(full)
    if changed.any():
        bad = np.flatnonzero(changed)
        warnings.warn(
            f"cls is not positive semi-definite at l = {_name_multipoles(bad)}: as healpy, "
            "synalm sets the Cholesky factor's non-positive pivots to 0 there (a field with "
            "negative power gets none, and its correlations beyond what the autos allow are "
            "dropped)", UserWarning, stacklevel=2)
    l, m = layout.lm()
    if isinstance(rng, np.random.RandomState):
        # healpy's draws: per field the real parts of every a_lm, then the imaginary parts
        draws = np.stack([rng.standard_normal((2, layout.size)) for _ in range(n)])
        re, im = draws[:, 0], np.where(m == 0, 0.0, draws[:, 1])
    else:
        re = rng.standard_normal((n, layout.size))
        im = np.where(m == 0, 0.0, rng.standard_normal((n, layout.size)))
    z = (re + 1j * im) * np.sqrt(np.where(m == 0, 1.0, 0.5))
    alm = np.ascontiguousarray(np.einsum("pij,jp->ip", f[l], z))
    return alm[0] if n == 1 else alm


def _apply_rows(a, rows_fl, mmax, lmax):
    """almxfl of each row of a (..., r, nalm) with its own transfer function."""
    out = np.array(a, dtype=np.complex128, copy=True) if isinstance(a, np.ndarray) else a.copy()
    for i, fl in enumerate(rows_fl):
        out[..., i, :] = almxfl(out[..., i, :], fl, mmax, lmax=lmax)
    return out


def synfast(cls, nside=None, lmax=None, mmax=None, alm=False, pol=True, pixwin=False, fwhm=0.0,
            sigma=None, new=False, verbose=True, *, fwhm_arcmin=None, seed=None,
            backend="auto", geometry=None):
    """Gaussian random map(s) with the spectra ``cls``, smoothed by a Gaussian beam (healpy's
    ``synfast``, healpy's arguments in healpy's order).

    cls : one spectrum (L,) gives a temperature map (npix,). With ``pol=True`` (healpy's
    default) 4 or 6 spectra (order set by ``new``, see :func:`synalm`) give I, Q, U maps
    (3, npix) from T, E, B a_lm; with ``pol=False`` n(n+1)/2 spectra give n correlated spin-0
    maps. Spectra that are not a covariance are handled as :func:`synalm` (and healpy) do.

    Parameters
    ----------
    cls : array_like or sequence of spectra
        The spectra, as in :func:`synalm`.
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    lmax : int, optional
        Band limit; as healpy, the smaller of the spectra's last l and the grid's natural limit
        (3*nside-1 for HEALPix).
    mmax : int, optional
        Azimuthal limit; lmax by default.
    alm : bool, optional
        Also return the a_lm of the maps (beam and pixel window applied, as healpy).
    pol : bool, optional
        Read 4 or 6 spectra as T, E, B (healpy's default, True) or as spin-0 fields.
    pixwin : bool, optional
        Apply HEALPix's pixel window (polarization window to E, B).
    fwhm : float, optional
        Gaussian beam full width at half maximum, radians (0: no beam).
    sigma : float, optional
        The Gaussian's standard deviation in radians; overrides ``fwhm`` as in healpy.
    new : bool, optional
        The order of the spectra, as healpy's ``new``.
    verbose : bool, optional
        Accepted for healpy's signature and ignored (healpy deprecates it).
    fwhm_arcmin : float, optional
        The beam width in arcminutes instead.
    seed : int, numpy.random.Generator or numpy.random.RandomState, optional
        For reproducible skies; a ``RandomState`` reproduces healpy's draws (see
        :func:`synalm`).
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the transforms run (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.

    Returns
    -------
    maps : numpy.ndarray
        float64, shape ``(npix,)`` or ``(n, npix)`` (I, Q, U for a polarized sky).
    alm : numpy.ndarray
        complex128, the a_lm behind the maps (beam and pixel window applied, as healpy);
        only with ``alm=True``.

    Warns
    -----
    UserWarning
        ``cls`` is not positive semi-definite at some multipoles (see :func:`synalm`).
    """
    geom = resolve_geometry(nside, geometry)
    pol = check_flag("pol", pol)
    alm = check_flag("alm", alm)
    new = check_flag("new", new)
    cov = field_spectra(cls, new, pol, allow_negative=True)     # count and order, up front
    if lmax is None:
        lmax = min(cov.shape[2] - 1, geom.natural_lmax)
    lmax = check_int("lmax", lmax, minimum=0)
    asked = f"nside={geom.nside}" if geom.kind == "healpix" else f"geometry={geom!r}"
    check_fits_in_memory(8 * geom.npix * cov.shape[0], f"{cov.shape[0]} map(s)", asked)
    a = synalm(cls, lmax, mmax, new, seed=seed)       # contiguous: alm2map scales it in place
    m = alm2map(a, None, lmax, mmax, pixwin, fwhm, sigma, pol and a.ndim == 2, True,
                fwhm_arcmin=fwhm_arcmin, backend=backend, geometry=geom)
    return (m, a) if alm else m


def anafast(map1, map2=None, nspec=None, lmax=None, mmax=None, iter=3, alm=False, pol=True,
            use_weights=False, datapath=None, gal_cut=0, use_pixel_weights=False, *,
            backend="auto", geometry=None):
    """Power (cross-)spectra of map(s) through :func:`map2alm` and :func:`alm2cl` (healpy's
    ``anafast``): UNSEEN and ``numpy.ma`` pixels count as zero (pseudo-spectra of the masked
    sky).

    map1, map2 : (npix,) gives C_l (lmax+1,); I, Q, U maps (3, npix) with ``pol=True`` give
    the 6 spectra TT, EE, BB, TE, EB, TB (of map1's T, E, B with map2's when given, healpy's
    order); with ``pol=False`` n maps give their n(n+1)/2 spectra. (k, 3, npix) is a batch.
    ``nspec`` keeps the first nspec spectra.

    Parameters
    ----------
    map1 : array, shape (npix,), (n, npix) or (k, 3, npix), real
        The map(s).
    map2 : array, optional
        A second set of maps, same shape, for cross spectra.
    nspec : int, optional
        Keep the first nspec spectra.
    lmax, mmax : int, optional
        Band limits; lmax defaults to the grid's natural limit, mmax to lmax.
    iter : int, optional
        Jacobi iterations of :func:`map2alm` (3, as healpy).
    alm : bool, optional
        Also return the a_lm.
    pol : bool, optional
        Read 3 rows as I, Q, U (True, healpy's default).
    use_weights, datapath, gal_cut, use_pixel_weights : optional
        HEALPix's ring or pixel weights and healpy's galactic cut (degrees), as in
        :func:`map2alm`.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the transforms run (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        The grid of the maps when it is not HEALPix.

    Returns
    -------
    cl : numpy.ndarray
        float64, shape ``(lmax+1,)`` or ``(nspec, lmax+1)`` (batch axes first).
    alm1, alm2 : array, complex128
        The a_lm of ``map1`` (and of ``map2`` when given); only with ``alm=True``.
    """
    if map2 is not None and np.shape(map2) != np.shape(map1):
        raise ValueError(f"map2 has shape {np.shape(map2)} but map1 has {np.shape(map1)}")
    kw = dict(backend=backend, geometry=geometry)
    weighting = (use_weights, datapath, gal_cut, use_pixel_weights)
    a1 = map2alm(map1, lmax, mmax, iter, pol, *weighting, **kw)
    a2 = None if map2 is None else map2alm(map2, lmax, mmax, iter, pol, *weighting, **kw)
    h1 = _host(a1)
    h2 = None if a2 is None else _host(a2)
    cl = alm2cl(h1, h2, mmax=mmax, lmax=_lmax_of(h1, mmax), nspec=nspec)
    if not alm:
        return cl
    return (cl, a1) if a2 is None else (cl, a1, a2)


def _host(a):
    """A NumPy copy of device a_lm (CuPy or Numba), or a NumPy array as it is."""
    if isinstance(a, np.ndarray):
        return a
    import cupy

    return to_host(cupy.asarray(a))


def _lmax_of(a, mmax):
    return AlmLayout.from_size(a.shape[-1], None, mmax).lmax


def smoothing(map_in, fwhm=0.0, sigma=None, beam_window=None, pol=True, iter=3, lmax=None,
              mmax=None, use_weights=False, use_pixel_weights=False, datapath=None,
              verbose=True, nest=False, *, gal_cut=0, fwhm_arcmin=None, backend="auto",
              geometry=None):
    """Smooth map(s) with a Gaussian beam (``fwhm`` or ``sigma`` in radians, or ``fwhm_arcmin``)
    or any transfer function ``beam_window`` b_l: map2alm (``iter`` iterations), multiply by
    b_l, alm2map, as healpy (healpy's arguments in healpy's order). I, Q, U maps (3, npix) with
    ``pol=True`` are smoothed as a polarized field (E and B take the spin-2 Gaussian factors).
    UNSEEN and ``numpy.ma`` pixels enter as zero and come out as ``UNSEEN`` (healpy).

    Parameters
    ----------
    map_in : array, shape (npix,), (n, npix) or (k, 3, npix), real
        The map(s).
    fwhm : float, optional
        Gaussian beam full width at half maximum, radians.
    sigma : float, optional
        The Gaussian's standard deviation, radians, instead of ``fwhm``.
    beam_window : array_like, shape (L,), (L, n >= 3) or (3 or 4, L), optional
        Any transfer function b_l instead of a Gaussian: (L,) for every map (healpy's), or T, E,
        B columns (healpy's ``gauss_beam(pol=True)`` layout) or rows; the layouts and the
        errors are those of :func:`sphgpu.sht.beam_window.parse_beam_window`. b_l past its end
        is 0.
    pol : bool, optional
        Smooth 3 rows as I, Q, U (True, healpy's default).
    iter : int, optional
        Jacobi iterations of :func:`map2alm` (3, as healpy).
    lmax, mmax : int, optional
        Band limits; lmax defaults to the grid's natural limit, mmax to lmax.
    use_weights, use_pixel_weights, datapath : optional
        HEALPix's ring or pixel weights in the analysis, as in :func:`map2alm`.
    verbose : bool, optional
        Accepted for healpy's signature and ignored (healpy deprecates it).
    nest : bool, optional
        The maps are in NESTED order (healpy's ``nest``): reordered to RING for the transforms
        and back.
    gal_cut : float, optional
        Degrees: healpy's galactic cut in the analysis (:func:`map2alm`; healpy's smoothing
        has no such argument).
    fwhm_arcmin : float, optional
        The beam width in arcminutes instead.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the transforms run (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        The grid of the maps when it is not HEALPix.

    Returns
    -------
    numpy.ndarray
        float64, the shape of ``map_in``; a ``numpy.ma.MaskedArray`` (UNSEEN pixels masked) for
        a masked ``map_in``, as healpy.
    """
    arr, bad = as_maps("map_in", map_in, max_ndim=3)
    geom = resolve_geometry(None, geometry, npix=arr.shape[-1], name="map_in")
    nest = check_flag("nest", nest)
    if nest:
        if geom.kind != "healpix":
            raise ValueError(f"nest=True needs HEALPix maps, got {geom!r}")
        arr = _reorder(arr, to_ring=True)
        bad = None if bad is None else _reorder(bad, to_ring=True)
    lmax = geom.natural_lmax if lmax is None else check_int("lmax", lmax, minimum=0)
    if beam_window is not None:
        if sigma is not None or fwhm_arcmin is not None or fwhm not in (None, 0, 0.0):
            raise ValueError("give beam_window or a Gaussian width (fwhm, sigma), not both")
    elif sigma is not None:
        if fwhm_arcmin is not None or fwhm not in (None, 0, 0.0):
            raise ValueError("give sigma or fwhm, not both")
        fwhm = fwhm_radians(sigma, None, "sigma") * math.sqrt(8.0 * math.log(2.0))
    else:
        fwhm = fwhm_radians(fwhm, fwhm_arcmin)
    pol = check_flag("pol", pol)
    polarized = pol and arr.ndim >= 2 and arr.shape[-2] == 3
    # parse the beam before the transform: a bad beam_window fails at once
    rows = beam_rows(3 if polarized else 1, polarized, lmax, fwhm, beam_window)
    a = map2alm(arr, lmax, mmax, iter, pol, use_weights, datapath, gal_cut, use_pixel_weights,
                backend=backend, geometry=geom)
    if polarized:
        a = _apply_rows(a, rows, mmax, lmax)
    else:
        a = almxfl(a, rows[0], mmax, lmax=lmax)
    out = alm2map(a, None, lmax, mmax, pol=pol, backend=backend, geometry=geom)
    if bad is not None:
        out[bad] = UNSEEN
    if nest:
        out = _reorder(out, to_ring=False)
    if _is_masked(map_in):                       # healpy's accept_ma: masked in, masked out
        out = np.ma.masked_array(out, mask=out == UNSEEN, fill_value=UNSEEN)
    return out


def _reorder(a, to_ring):
    """NESTED maps (..., npix) to RING order (``to_ring``) or back, any batch shape."""
    from ..pixelfunc import reorder

    flat = a.reshape(-1, a.shape[-1])
    return reorder(flat, n2r=to_ring, r2n=not to_ring).reshape(a.shape)


def _is_masked(m):
    """healpy's ``is_ma``: a masked array, or a sequence of them."""
    if isinstance(m, np.ma.MaskedArray):
        return True
    return isinstance(m, (list, tuple)) and len(m) > 0 and isinstance(m[0], np.ma.MaskedArray)
