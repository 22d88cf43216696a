"""alm2map and map2alm: the healpy-compatible entry points, dispatching to a backend.

Each backend module (``reference``, ``_cpu``, later ``_cuda``) provides two functions on validated
2-D arrays, and everything else (argument checks, batching, healpy's Jacobi iterations) lives
here once:

    synthesis(alm (k, nalm) complex128, layout, geometry) -> maps (k, npix) float64
    analysis(maps (k, npix) float64, layout, geometry)    -> alm (k, nalm) complex128
        = sum over pixels of weight * map * conj(Y_lm)   (one quadrature pass, "iter=0")
"""

from __future__ import annotations

from .. import backends
from .._device import like_input
from .._validate import as_complex_array, as_real_array, check_int, is_device_array
from ..alm import AlmLayout
from ..geometry import RingGeometry

__all__ = ["alm2map", "map2alm", "resolve_geometry", "nside_from_npix"]


def nside_from_npix(npix: int, name: str = "map") -> int:
    """nside of a HEALPix map with ``npix`` pixels; ValueError naming ``name`` if there is none."""
    nside = int(round((npix / 12) ** 0.5))
    if nside < 1 or 12 * nside * nside != npix:
        raise ValueError(f"{name} has {npix} pixels, which is not 12*nside**2 for any nside "
                         "(pass geometry= for other grids)")
    return nside


def resolve_geometry(nside, geometry, npix=None, name="map") -> RingGeometry:
    """The grid of a transform, from ``nside`` or ``geometry`` (or a map's length, ``npix``)."""
    if geometry is not None:
        if not isinstance(geometry, RingGeometry):
            raise TypeError(f"geometry must be a RingGeometry, got {type(geometry).__name__}")
        if nside is not None and (geometry.kind != "healpix" or geometry.nside != nside):
            raise ValueError(f"nside={nside!r} disagrees with geometry={geometry!r}: give one")
        if npix is not None and npix != geometry.npix:
            raise ValueError(f"{name} has {npix} pixels but the geometry has {geometry.npix}")
        return geometry
    if nside is None:
        if npix is None:
            raise ValueError("give nside (HEALPix) or geometry=")
        nside = nside_from_npix(npix, name)
    nside = check_int("nside", nside, minimum=1)
    if npix is not None and npix != 12 * nside * nside:
        raise ValueError(f"{name} has {npix} pixels but nside={nside} needs {12 * nside * nside}")
    return RingGeometry.healpix(nside)


def _check_kind(name, a, impl):
    if is_device_array(a) and not getattr(impl, "ACCEPTS_DEVICE_ARRAYS", False):
        raise TypeError(f"{name} is a GPU array; the CPU backends take NumPy arrays "
                        "(use backend='cuda', or copy it to the host)")


def _batch(a):
    return (a[None, :], True) if a.ndim == 1 else (a, False)


def alm2map(alm, nside=None, lmax=None, mmax=None, *, backend="auto", geometry=None):
    """Synthesize a map from spherical-harmonic coefficients (healpy's ``alm2map``).

    Parameters
    ----------
    alm : array, shape (nalm,) or (k, nalm), complex
        Coefficients in healpy's m-major order (:class:`sphgpu.AlmLayout`); a 2-D array is a
        batch of k coefficient sets.
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    lmax, mmax : int, optional
        Band limits; by default inferred from the length of ``alm`` with mmax = lmax.
    backend : {"auto", "cuda", "cpu", "reference"}
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.

    Returns
    -------
    ndarray, shape (npix,) or (k, npix), float64
    """
    arr = as_complex_array("alm", alm)
    geometry = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alm")
    impl = backends.load("sht", backend)
    _check_kind("alm", arr, impl)
    batch, single = _batch(arr)
    maps = impl.synthesis(batch, layout, geometry)
    return like_input(maps[0] if single else maps, alm)


def map2alm(maps, lmax=None, mmax=None, iter=3, *, backend="auto", geometry=None):
    """Spherical-harmonic coefficients of a map (healpy's ``map2alm``).

    One quadrature pass (``sum weight * map * conj(Y_lm)``) followed by ``iter`` Jacobi
    iterations that correct it with the residual map, exactly as healpy does. On Gauss-Legendre
    and equiangular grids the quadrature is exact for band-limited maps, and ``iter=0`` suffices.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), real
        HEALPix RING map(s) (npix = 12*nside**2), or maps on ``geometry``.
    lmax, mmax : int, optional
        Band limits; lmax defaults to ``3*nside - 1`` (the grid's natural limit), mmax to lmax.
    iter : int
        Number of Jacobi iterations (healpy's default, 3).

    Returns
    -------
    ndarray, shape (nalm,) or (k, nalm), complex128
    """
    arr = as_real_array("maps", maps)
    geometry = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    lmax = geometry.natural_lmax if lmax is None else lmax
    layout = AlmLayout(lmax, mmax)
    iter = check_int("iter", iter, minimum=0)
    impl = backends.load("sht", backend)
    _check_kind("maps", arr, impl)
    batch, single = _batch(arr)
    # GPU backends keep the Jacobi iterations on the device: one copy in, one copy out.
    to_device = getattr(impl, "to_device", None)
    work = to_device(batch) if to_device else batch
    alm = impl.analysis(work, layout, geometry)
    for _ in range(iter):
        alm += impl.analysis(work - impl.synthesis(alm, layout, geometry), layout, geometry)
    if to_device and not is_device_array(maps):
        alm = impl.to_host(alm)
    return like_input(alm[0] if single else alm, maps)
