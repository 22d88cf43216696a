"""Power spectra, beams and random skies around the transforms, with healpy's names.

Angles are radians (``fwhm``, ``sigma``) unless given through ``fwhm_arcmin``. Spectra are raw
C_l (not l(l+1)C_l/2pi), indexed by l from 0.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_complex_array, as_real_array, check_int
from ..alm import AlmLayout
from .transforms import alm2map, map2alm, resolve_geometry

__all__ = ["synalm", "synfast", "alm2cl", "anafast", "almxfl", "gauss_beam", "smoothing"]

_ARCMIN = math.pi / (180.0 * 60.0)


def _fwhm_radians(fwhm, fwhm_arcmin, name="fwhm"):
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

    Returns shape (lmax+1,) float64; with ``pol=True`` shape (lmax+1, 4) holding the T, E, B and
    TE factors (spin-2 beams carry an extra exp(2 sigma^2), TE the geometric mean), as healpy.
    """
    fwhm = _fwhm_radians(fwhm, fwhm_arcmin)
    lmax = check_int("lmax", lmax, minimum=0)
    sigma2 = (fwhm / math.sqrt(8.0 * math.log(2.0))) ** 2
    l = np.arange(lmax + 1, dtype=np.float64)
    bl = np.exp(-0.5 * l * (l + 1.0) * sigma2)
    if not pol:
        return bl
    return bl[:, None] * np.exp(np.array([0.0, 2.0, 2.0, 1.0]) * sigma2)[None, :]


def almxfl(alm, fl, mmax=None, inplace=False, *, lmax=None):
    """Multiply a_lm by fl[l] (coefficients with l >= len(fl) become 0, as in healpy).

    alm : (nalm,) or (k, nalm) complex; fl : (L,) real or complex.
    """
    alm_arr = as_complex_array("alm", alm)
    fl = np.asarray(fl)
    if fl.ndim != 1 or np.dtype(fl.dtype).kind not in "fiuc":
        raise ValueError(f"fl must be a 1-D array of numbers, got shape {fl.shape}, dtype {fl.dtype}")
    if not np.all(np.isfinite(fl)):
        raise ValueError("fl contains NaN or infinite values")
    layout = AlmLayout.from_size(alm_arr.shape[-1], lmax, mmax, name="alm")
    full = np.zeros(layout.lmax + 1, dtype=np.result_type(fl.dtype, np.float64))
    n = min(fl.shape[0], layout.lmax + 1)
    full[:n] = fl[:n]
    factor = full[layout.lm()[0]]
    if inplace:
        if not (isinstance(alm, np.ndarray) and alm.dtype == np.complex128
                and alm.flags.c_contiguous):
            raise TypeError("inplace=True needs alm to be a contiguous complex128 NumPy array")
        alm *= factor
        return alm
    return alm_arr * factor


def alm2cl(alms1, alms2=None, lmax=None, mmax=None, lmax_out=None):
    """Angular power (cross-)spectrum C_l = sum_m a1_lm conj(a2_lm) / (2l+1) over m = -l..l.

    alms1, alms2 : (nalm,) or (k, nalm) complex (same shape). Returns (lmax_out+1,) or
    (k, lmax_out+1) float64; lmax_out defaults to lmax (entries above lmax are 0).
    """
    a1 = as_complex_array("alms1", alms1)
    a2 = a1 if alms2 is None else as_complex_array("alms2", alms2)
    if a2.shape != a1.shape:
        raise ValueError(f"alms2 has shape {a2.shape} but alms1 has {a1.shape}")
    layout = AlmLayout.from_size(a1.shape[-1], lmax, mmax, name="alms1")
    lmax_out = layout.lmax if lmax_out is None else check_int("lmax_out", lmax_out, minimum=0)
    l, m = layout.lm()
    # m > 0 stands for +m and -m, whose products are complex conjugates: twice the real part.
    prod = (a1 * np.conj(a2)).real * np.where(m > 0, 2.0, 1.0)
    batch = np.atleast_2d(prod)
    cl = np.zeros((batch.shape[0], lmax_out + 1))
    keep = l <= lmax_out
    for i in range(batch.shape[0]):
        cl[i] = np.bincount(l[keep], weights=batch[i, keep], minlength=lmax_out + 1)
    cl /= 2.0 * np.arange(lmax_out + 1) + 1.0
    return cl[0] if prod.ndim == 1 else cl


def synalm(cls, lmax=None, mmax=None, *, seed=None):
    """Gaussian random a_lm with power spectrum ``cls`` (one spectrum, spin 0).

    cls : (L,) real, >= 0 (values past len(cls)-1 are taken as 0). lmax defaults to L-1.
    seed : int or numpy.random.Generator, optional, for reproducible skies.
    Returns (nalm,) complex128: a_l0 ~ N(0, C_l), Re and Im of a_lm (m > 0) ~ N(0, C_l/2).
    """
    cl = as_real_array("cls", cls, allow_batch=False)
    if np.any(cl < 0):
        raise ValueError("cls must be non-negative")
    layout = AlmLayout(cl.shape[0] - 1 if lmax is None else lmax, mmax)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    full = np.zeros(layout.lmax + 1)
    n = min(cl.shape[0], layout.lmax + 1)
    full[:n] = cl[:n]
    l, m = layout.lm()
    amp = np.sqrt(full[l] * np.where(m == 0, 1.0, 0.5))
    re = rng.standard_normal(layout.size)
    im = np.where(m == 0, 0.0, rng.standard_normal(layout.size))
    return amp * (re + 1j * im)


def synfast(cls, nside=None, lmax=None, mmax=None, *, fwhm=0.0, fwhm_arcmin=None, seed=None,
            alm=False, backend="auto", geometry=None):
    """A Gaussian random map with power spectrum ``cls`` smoothed by a Gaussian beam.

    lmax defaults to the grid's natural limit (3*nside-1 for HEALPix). Returns the map
    (npix,) float64, or ``(map, alm)`` with ``alm=True``.
    """
    geom = resolve_geometry(nside, geometry)
    lmax = geom.natural_lmax if lmax is None else lmax
    a = synalm(cls, lmax, mmax, seed=seed)
    fwhm = _fwhm_radians(fwhm, fwhm_arcmin)
    if fwhm > 0:
        a = almxfl(a, gauss_beam(fwhm, lmax), mmax, lmax=lmax)
    m = alm2map(a, lmax=lmax, mmax=mmax, backend=backend, geometry=geom)
    return (m, a) if alm else m


def anafast(map1, map2=None, lmax=None, mmax=None, iter=3, alm=False, *, backend="auto",
            geometry=None):
    """Power (cross-)spectrum of map(s) through :func:`map2alm` and :func:`alm2cl`.

    map1, map2 : (npix,) or (k, npix) real. Returns C_l (lmax+1,) or (k, lmax+1) float64, or
    ``(cl, alm1)`` / ``(cl, alm1, alm2)`` with ``alm=True``.
    """
    maps1 = as_real_array("map1", map1)
    maps2 = None if map2 is None else as_real_array("map2", map2)
    if maps2 is not None and maps2.shape != maps1.shape:
        raise ValueError(f"map2 has shape {maps2.shape} but map1 has {maps1.shape}")
    geom = resolve_geometry(None, geometry, npix=maps1.shape[-1], name="map1")
    lmax = geom.natural_lmax if lmax is None else lmax
    kw = dict(backend=backend, geometry=geom)
    a1 = map2alm(maps1, lmax, mmax, iter, **kw)
    a2 = None if maps2 is None else map2alm(maps2, lmax, mmax, iter, **kw)
    cl = alm2cl(a1, a2, lmax=lmax, mmax=mmax)
    if not alm:
        return cl
    return (cl, a1) if a2 is None else (cl, a1, a2)


def smoothing(map_in, fwhm=0.0, sigma=None, beam_window=None, iter=3, lmax=None, mmax=None, *,
              fwhm_arcmin=None, backend="auto", geometry=None):
    """Smooth map(s) with a Gaussian beam (``fwhm`` or ``sigma`` in radians, or ``fwhm_arcmin``)
    or any transfer function ``beam_window`` b_l: map2alm (``iter`` iterations), multiply by
    b_l, alm2map, as healpy. map_in : (npix,) or (k, npix); returns the same shape, float64.
    """
    maps = as_real_array("map_in", map_in)
    geom = resolve_geometry(None, geometry, npix=maps.shape[-1], name="map_in")
    lmax = geom.natural_lmax if lmax is None else check_int("lmax", lmax, minimum=0)
    if beam_window is not None:
        if sigma is not None or fwhm_arcmin is not None or fwhm not in (None, 0, 0.0):
            raise ValueError("give beam_window or a Gaussian width (fwhm, sigma), not both")
        bl = beam_window
    else:
        if sigma is not None:
            if fwhm_arcmin is not None or fwhm not in (None, 0, 0.0):
                raise ValueError("give sigma or fwhm, not both")
            fwhm = _fwhm_radians(sigma, None, "sigma") * math.sqrt(8.0 * math.log(2.0))
        bl = gauss_beam(fwhm, lmax, fwhm_arcmin=fwhm_arcmin)
    a = map2alm(maps, lmax, mmax, iter, backend=backend, geometry=geom)
    a = almxfl(a, bl, mmax, lmax=lmax)
    return alm2map(a, lmax=lmax, mmax=mmax, backend=backend, geometry=geom)
