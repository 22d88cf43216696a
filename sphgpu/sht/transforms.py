"""alm2map, map2alm and their spin-s forms: the healpy-compatible entry points.

Each is a thin wrapper over a transform plan (:class:`sphgpu.SHT`, :mod:`sphgpu.sht.plan`):
it reads healpy's arguments (shapes, masks and UNSEEN pixels, NaN, beams, pixel windows,
HEALPix's weights), finds the plan of its grid, band limits and backend (cached), and runs the
plan's body, so that a function and a plan give the same numbers. Each backend module
(``reference``, ``_cpu``, ``_cuda``) provides four functions on validated arrays:

    synthesis(alm (k, nalm) complex128, layout, geometry) -> maps (k, npix) float64
    analysis(maps (k, npix) float64, layout, geometry)    -> alm (k, nalm) complex128
        = sum over pixels of weight * map * conj(Y_lm)   (one quadrature pass, "iter=0")
    synthesis_spin(alm (k, r, nalm), spin, layout, geometry) -> maps (k, r, npix)
    analysis_spin(maps (k, r, npix), spin, layout, geometry) -> alm (k, r, nalm)
        r = 2: gradient/curl (E, B) <-> the two maps of a spin-s field (Q, U for s = 2);
        r = 3: T, E, B <-> I, Q, U with T spin 0 (a polarized transform, healpy's pol=True)
"""

from __future__ import annotations

import numpy as np

from .._device import array_module_of, is_device_array, like_input
from .._validate import as_complex_array, as_maps, check_fits_in_memory, check_flag, check_int
from ..alm import AlmLayout
from .plan import check_kind, nside_from_npix, plan_for, resolve_geometry, shape_kind, spin_lead

__all__ = ["alm2map", "map2alm", "alm2map_spin", "map2alm_spin", "alm2map_der1",
           "resolve_geometry", "nside_from_npix"]


def check_healpix_pixwin(geometry):
    """ValueError unless ``geometry`` is a HEALPix grid (pixel windows are HEALPix's)."""
    if geometry.kind != "healpix":
        raise ValueError(f"pixwin=True needs a HEALPix map, got {geometry!r}")


def gaussian_sigma(fwhm, sigma, fwhm_arcmin=None):
    """The standard deviation (radians) of healpy's Gaussian beam from ``fwhm`` (radians),
    ``sigma`` (radians; overrides ``fwhm`` as in healpy) or ``fwhm_arcmin``."""
    for name, value in (("fwhm", fwhm), ("sigma", sigma), ("fwhm_arcmin", fwhm_arcmin)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        limit = 2 * np.pi * (60 * 180 / np.pi if name == "fwhm_arcmin" else 1.0)
        if not np.isfinite(value) or value < 0 or value > limit:
            raise ValueError(f"{name} must be finite and in [0, 2 pi] radians, got {value}")
    if fwhm_arcmin is not None:
        if fwhm not in (None, 0, 0.0) or sigma is not None:
            raise ValueError("give fwhm (radians), sigma or fwhm_arcmin, not more than one")
        fwhm = fwhm_arcmin * np.pi / (180.0 * 60.0)
    if sigma is not None:
        return float(sigma)
    return float(fwhm or 0.0) / np.sqrt(8.0 * np.log(2.0))


def _beam_factors(sigma, lmax):
    """healpy's smoothalm factors exp(-(l(l+1) - s^2) sigma^2 / 2) for s = 0 and s = 2."""
    ell = np.arange(lmax + 1, dtype=np.float64)
    t = np.exp(-0.5 * ell * (ell + 1.0) * sigma ** 2)
    return t, t * np.exp(2.0 * sigma ** 2)


def _scale_rows(arr, ft, fp, layout, polarized, inplace, original):
    """arr times ft[l] (rows T, or every row of a spin-0 set) and fp[l] (E, B rows of a
    polarized set): in place when ``inplace`` and ``original`` is a contiguous complex128 array
    (healpy's ``inplace``), else a new array."""
    in_place = inplace and arr is original
    if not polarized and not in_place:
        return times_fl(arr, ft, layout)
    out = arr if in_place else arr.copy()
    if not polarized:
        out[...] = times_fl(out, ft, layout)
    else:
        out[..., 0, :] = times_fl(out[..., 0, :], ft, layout)
        out[..., 1:, :] = times_fl(out[..., 1:, :], fp, layout)
    return out


def alm2map(alms, nside=None, lmax=None, mmax=None, pixwin=False, fwhm=0.0, sigma=None,
            pol=True, inplace=False, verbose=True, *, fwhm_arcmin=None, backend="auto",
            geometry=None):
    """Synthesize a map from spherical-harmonic coefficients (healpy's ``alm2map``).

    healpy's arguments in healpy's order and defaults; sphgpu's own options are keyword-only
    after them.

    Parameters
    ----------
    alms : array, shape (nalm,), (3, nalm), (k, nalm) or (k, 3, nalm), complex
        Coefficients in healpy's m-major order (:class:`sphgpu.AlmLayout`). With ``pol=True``
        three rows are T, E, B (healpy's convention) and give I, Q, U maps; with ``pol=False``
        a 2-D array is a batch of k spin-0 coefficient sets.
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    lmax, mmax : int, optional
        Band limits; by default inferred from the length of ``alms`` with mmax = lmax.
    pixwin : bool, optional
        Multiply by HEALPix's pixel window (:func:`sphgpu.pixwin`; polarization window for E, B),
        tabulated up to lmax <= 4*nside. (healpy's alm2map takes the window to 3*nside - 1 only
        and drops the a_lm above it.)
    fwhm : float, optional
        Full width at half maximum of a Gaussian beam applied to the a_lm, radians (0: none).
    sigma : float, optional
        The Gaussian's standard deviation in radians; overrides ``fwhm`` as in healpy. E and B
        rows take the spin-2 factor exp(2 sigma^2) as healpy's ``smoothalm``.
    pol : bool, optional
        healpy's ``pol``: True (default) reads 3 rows as T, E, B.
    inplace : bool, optional
        As healpy: the beam and pixel window may be applied to ``alms`` itself (when it is a
        contiguous complex128 array, NumPy or device); otherwise ``alms`` is left unchanged.
    verbose : bool, optional
        Accepted for healpy's signature and ignored (healpy deprecates it).
    fwhm_arcmin : float, optional
        The beam's full width at half maximum in arcminutes instead of ``fwhm``.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.

    Returns
    -------
    array, float64, shape (npix,), (3, npix), (k, npix) or (k, 3, npix); device in, device out.
    """
    pending = []          # the device array's NaN check, run after the transform is queued
    arr = as_complex_array("alms", alms, allow_batch=3, pending=pending)
    polarized, lead = shape_kind("alms", arr, check_flag("pol", pol), "a_lm set")
    pixwin = check_flag("pixwin", pixwin)
    inplace = check_flag("inplace", inplace)
    sig = gaussian_sigma(fwhm, sigma, fwhm_arcmin)
    geometry = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alms")
    check_fits_in_memory(8 * geometry.npix * max(1, arr.size // arr.shape[-1]), "the maps",
                         f"nside={geometry.nside}" if geometry.kind == "healpix"
                         else f"geometry={geometry!r}")
    plan = plan_for(geometry, layout, backend)
    check_kind("alms", arr, plan)
    if sig > 0:
        ft, fp = _beam_factors(sig, layout.lmax)
        arr = _scale_rows(arr, ft, fp, layout, polarized, inplace, alms)
    if pixwin:
        check_healpix_pixwin(geometry)
        arr = apply_pixwin(arr, geometry.nside, layout, polarized, inplace, alms)
    maps = plan._synthesis(arr, 3 if polarized else 0, 2)
    for finish in pending:
        finish()
    return like_input(maps.reshape(lead + (geometry.npix,)), alms)


def times_fl(alm, fl, layout):
    """``alm`` (..., layout.size) times ``fl[l]`` (fl: lmax + 1 numbers) of each coefficient,
    on the array's own device (only fl crosses the bus). Shared by :func:`almxfl` and the
    pixel windows (spectra.py imports this module, so it lives here)."""
    factor = np.asarray(fl)[layout.lm()[0]]
    return alm * array_module_of(alm).asarray(factor)


def apply_pixwin(arr, nside, layout, polarized, inplace=False, original=None):
    """``arr`` (a_lm rows in ``layout``; T, E, B when ``polarized``) times HEALPix's pixel
    window of ``nside`` (its polarization window for E and B), in place as
    :func:`_scale_rows` allows."""
    from .pixwin import pixwin as _pixwin

    wt, wp = _pixwin(nside, pol=True, lmax=layout.lmax)
    return _scale_rows(arr, wt, wp, layout, polarized, inplace, original)


def _weighting(geometry, use_weights, use_pixel_weights, datapath, gal_cut):
    """healpy's map2alm weighting options on a resolved grid: (the grid to analyse on, a
    per-pixel factor for the maps or None, whether the pixel weights force iter=0)."""
    from . import weights as _weights

    use_weights = check_flag("use_weights", use_weights)
    use_pixel_weights = check_flag("use_pixel_weights", use_pixel_weights)
    if use_weights and use_pixel_weights:
        raise ValueError("give use_weights (ring weights) or use_pixel_weights, not both "
                         "(healpy refuses both too)")
    if (use_weights or use_pixel_weights) and geometry.kind != "healpix":
        raise ValueError(f"use_weights and use_pixel_weights are HEALPix's weights; the maps are "
                         f"on {geometry!r}, whose own quadrature weights are used")
    factor = None
    if use_weights:
        geometry = _weights.weighted_geometry(geometry.nside, datapath)
    elif use_pixel_weights:
        factor = _weights.pixel_weight_map(geometry.nside, datapath)
    cut = _weights.gal_cut_rings(geometry, 0 if gal_cut is None else gal_cut)
    if cut.any():
        factor = np.ones(geometry.npix) if factor is None else factor
        for r in np.flatnonzero(cut):
            start = geometry.ringstart[r]
            factor[start:start + geometry.nphi[r]] = 0.0
    return geometry, factor, use_pixel_weights


def _analyse(arr, lead, rows, spin, lmax, mmax, iter, backend, geometry, original,
             weighting=None):
    """The shared body of map2alm and map2alm_spin on validated maps of batch shape ``lead``,
    read as (k, rows, npix) (rows = 0: spin-0 maps (k, npix)); returns the a_lm shaped
    lead + (nalm,), of the kind of ``original``. ``weighting``: healpy's (use_weights,
    use_pixel_weights, datapath, gal_cut)."""
    geometry = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    layout = AlmLayout(geometry.natural_lmax if lmax is None else lmax, mmax)
    check_fits_in_memory(16 * layout.size * max(1, arr.size // arr.shape[-1]), "the a_lm",
                         f"lmax={layout.lmax}")
    iter = check_int("iter", iter, minimum=0)
    factor = None
    if weighting is not None:
        geometry, factor, pixel_weights = _weighting(geometry, *weighting)
        if pixel_weights:
            iter = 0              # healpy: "pixel weighting requires 0 iterations"
    plan = plan_for(geometry, layout, backend)
    check_kind("maps", arr, plan)
    alm = plan._analysis(arr, rows, spin, iter, not is_device_array(original), factor)
    return like_input(alm.reshape(lead + (layout.size,)), original)


def map2alm(maps, lmax=None, mmax=None, iter=3, pol=True, use_weights=False, datapath=None,
            gal_cut=0, use_pixel_weights=False, verbose=True, *, backend="auto",
            geometry=None):
    """Spherical-harmonic coefficients of a map (healpy's ``map2alm``, healpy's arguments in
    healpy's order).

    One quadrature pass (``sum weight * map * conj(Y_lm)``) followed by ``iter`` Jacobi
    iterations that correct it with the residual map, exactly as healpy does. On Gauss-Legendre
    and equiangular grids the quadrature is exact for band-limited maps, and ``iter=0`` suffices.
    Pixels equal to ``healpy.UNSEEN`` and the masked pixels of a ``numpy.ma`` array count as
    zero, as in healpy (each map its own mask); NaN elsewhere raises.

    Parameters
    ----------
    maps : array, shape (npix,), (3, npix), (k, npix) or (k, 3, npix), real
        HEALPix RING map(s) (npix = 12*nside**2), or maps on ``geometry``. With ``pol=True``
        three rows are I, Q, U (healpy's convention) and give T, E, B.
    lmax, mmax : int, optional
        Band limits; lmax defaults to ``3*nside - 1`` (the grid's natural limit), mmax to lmax.
    iter : int, optional
        Number of Jacobi iterations (healpy's default, 3).
    pol : bool, optional
        healpy's ``pol``: True (default) reads 3 rows as I, Q, U; False, a 2-D array is a batch.
    use_weights : bool, optional
        Weigh each ring by HEALPix's ring weights (pixel weight ``4 pi/npix * (1 + w_ring)``),
        in the first pass and in every iteration, as healpy. Shipped for nside 2 ... 2048;
        other nside from ``datapath`` or healpy-data's folder (:mod:`sphgpu.sht.weights`).
    datapath : str or os.PathLike, optional
        healpy's ``datapath``: the folder of the weight files (``weight_ring_n%05d.fits``,
        ``full_weights/healpix_full_weights_nside_%04d.fits``); when given, the files must be
        there.
    gal_cut : float, optional
        Degrees: pixels with latitude strictly inside [-gal_cut, gal_cut] count as zero (healpy's
        ``gal_cut``; 0, no cut).
    use_pixel_weights : bool, optional
        Multiply each pixel by HEALPix's pixel weight 1 + w and make one pass (``iter`` is then
        0, as healpy). Shipped for nside 16, 32 and 64; other nside from ``datapath`` (healpy's
        layout) or ``$SPHGPU_HEALPIX_DATA``. Nothing is downloaded: a missing table is a
        ``FileNotFoundError`` (healpy downloads it, or carries on unweighted when offline).
    verbose : bool, optional
        Accepted for healpy's signature and ignored (healpy deprecates it).
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        The grid of ``maps`` when it is not HEALPix (no HEALPix weights then; ``gal_cut`` applies
        to its rings' latitudes).

    Returns
    -------
    array, complex128, shape (nalm,), (3, nalm), (k, nalm) or (k, 3, nalm)
    """
    arr, _ = as_maps("maps", maps, max_ndim=3)
    polarized, lead = shape_kind("maps", arr, check_flag("pol", pol), "map")
    return _analyse(arr, lead, 3 if polarized else 0, 2, lmax, mmax, iter, backend, geometry,
                    maps, (use_weights, use_pixel_weights, datapath, gal_cut))


def alm2map_spin(alms, nside=None, spin=None, lmax=None, mmax=None, *, backend="auto",
                 geometry=None):
    """Spin-s synthesis (healpy's ``alm2map_spin``): gradient (E) and curl (B) coefficients to
    the two real maps of a spin-s field (Q, U for s = 2), healpy's signs and conventions.

    Parameters
    ----------
    alms : array, shape (2, nalm) or (k, 2, nalm), complex
        Gradient and curl coefficients in healpy's m-major order.
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    spin : int
        The spin s, >= 0 (0: the maps of -G and -C as scalars, as healpy).
    lmax, mmax : int, optional
        Band limits; by default inferred from the length of ``alms`` with mmax = lmax.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.

    Returns
    -------
    array, float64, shape (2, npix) or (k, 2, npix)
        The two real maps; device in, device out.
    """
    arr = as_complex_array("alms", alms, allow_batch=3)
    lead = spin_lead("alms", arr)
    spin = check_int("spin", spin, minimum=0)
    geometry = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alms")
    plan = plan_for(geometry, layout, backend)
    check_kind("alms", arr, plan)
    # spin 0: healpy's spin-0 maps of -G and -C (G = -a_lm for a scalar)
    maps = plan._synthesis_spin(arr, spin)
    return like_input(maps.reshape(lead + (geometry.npix,)), alms)


def map2alm_spin(maps, spin=None, lmax=None, mmax=None, *, iter=0, backend="auto",
                 geometry=None):
    """Spin-s analysis (healpy's ``map2alm_spin``): two real maps of a spin-s field to its
    gradient (E) and curl (B) coefficients; one quadrature pass as healpy (``iter`` adds
    Jacobi iterations as in :func:`map2alm`). UNSEEN and ``numpy.ma`` pixels count as zero.

    Parameters
    ----------
    maps : array, shape (2, npix) or (k, 2, npix), real
        The two real maps of the field (Q, U for s = 2).
    spin : int
        The spin s, >= 0 (0: minus the scalar coefficients of each map, as healpy).
    lmax, mmax : int, optional
        Band limits; lmax defaults to the grid's natural limit, mmax to lmax.
    iter : int, optional
        Number of Jacobi iterations (0, as healpy's ``map2alm_spin``).
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        The grid of ``maps`` when it is not HEALPix.

    Returns
    -------
    array, complex128, shape (2, nalm) or (k, 2, nalm)
        Gradient (E) and curl (B) coefficients; device in, device out.
    """
    arr, _ = as_maps("maps", maps, max_ndim=3)
    lead = spin_lead("maps", arr)
    spin = check_int("spin", spin, minimum=0)
    if spin == 0:           # healpy: minus the spin-0 analysis of each map
        return -_analyse(arr, lead, 0, 0, lmax, mmax, iter, backend, geometry, maps)
    return _analyse(arr, lead, 2, spin, lmax, mmax, iter, backend, geometry, maps)


def alm2map_der1(alm, nside=None, lmax=None, mmax=None, *, backend="auto", geometry=None):
    """A map and its first derivatives (healpy's ``alm2map_der1``).

    The gradient of a scalar field is the spin-1 field with gradient coefficients
    sqrt(l(l+1)) a_lm and no curl, so one polarized-style synthesis (spin 0 and spin 1 rows
    sharing one Legendre recurrence on the GPU) gives all three maps.

    Parameters
    ----------
    alm : array, shape (nalm,) or (k, nalm), complex
        Coefficients of a scalar field in healpy's m-major order.
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    lmax, mmax : int, optional
        Band limits; by default inferred from the length of ``alm`` with mmax = lmax.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute (see :mod:`sphgpu.backends`).
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.

    Returns
    -------
    array, float64, shape (3, npix) or (k, 3, npix)
        The map, d/dtheta and (1/sin theta) d/dphi of it (per radian); device in, device out.
    """
    arr = as_complex_array("alm", alm)
    geometry = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alm")
    plan = plan_for(geometry, layout, backend)
    check_kind("alm", arr, plan)
    maps = plan._der1(arr)
    return like_input(maps.reshape(arr.shape[:-1] + (3, geometry.npix)), alm)
