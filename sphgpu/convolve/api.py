"""convolve: one entry point for every way of convolving a map with a radial kernel.

    method="harmonic"   map2alm (iter=0) -> * K_l -> alm2map, through the SHT backend
    method="realspace"  the kernel truncated at theta_cut, summed over neighbouring pixels
    method="split"      the paper's split at (l_cut, theta_cut): both parts run concurrently
    method="auto"       whatever :func:`optimize_split` finds cheapest for the error bound

All four compute the same operator up to the kernel's truncation error: with K_l = b_l the
harmonic method equals ``healpy.smoothing(m, beam_window=b_l, iter=0, lmax=lmax)``.

The call reads its arguments once: the maps (:func:`sphgpu._validate.as_maps`: masked and
``UNSEEN`` pixels set to zero, NaN refused), then what to run as a
:class:`~sphgpu.convolve.parts.Parts` with its backends resolved (:func:`parts_of`); the one
executor, :func:`sphgpu.convolve.run.execute`, runs those parts and puts ``UNSEEN`` back.
"""

from __future__ import annotations

import functools

from .._validate import as_maps, check_int
from ..sht.transforms import resolve_geometry
from .kernels import CompactKernel, _check_angle
from .optimize import Plan, optimize_split
from .parts import Parts
from .run import execute
from .split import KernelSplit, _check_kernel, split_kernel

__all__ = ["convolve", "parts_of", "METHODS"]

METHODS = ("auto", "harmonic", "realspace", "split")


@functools.lru_cache(maxsize=8)
def _cached_split(kernel, l_cut, theta_cut, fit):
    # split_kernel refuses a theta_cut below one knot of the real-space basis (a split with no
    # real-space part would return the harmonic part alone)
    return split_kernel(kernel, l_cut, theta_cut, fit=fit)


@functools.lru_cache(maxsize=8)
def _cached_tabulation(kernel, theta_cut):
    return kernel.tabulate(theta_cut, rtol=1e-12)


@functools.lru_cache(maxsize=8)
def _cached_plan(kernel, nside, error_bound, fit):
    return optimize_split(kernel, nside=nside, error_bound=error_bound, cost_model="measured",
                          fit=fit)


def _check_l_cut(l_cut, lmax):
    return check_int("l_cut", l_cut, minimum=-1, maximum=lmax) if l_cut is not None else None


def convolve(maps, kernel, *, method="auto", l_cut=None, theta_cut=None, backend="auto",
             harmonic_backend=None, error_bound=1e-5, fit="sphgpu", geometry=None):
    """Convolve HEALPix map(s) with a radially symmetric kernel.

    Pixels equal to ``healpy.UNSEEN`` (within healpy's ``mask_bad`` tolerance) and the masked
    pixels of a ``numpy.ma`` array enter as zero and come out as ``UNSEEN``, as in healpy's
    ``smoothing``, whichever method runs (harmonic, real space or both); NaN or infinity
    elsewhere raises.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), float64; NumPy, CuPy or Numba
        HEALPix RING maps (or maps on ``geometry``). Device arrays give device arrays back.
    kernel : RadialKernel, array of K_l, CompactKernel, KernelSplit or Plan
        The kernel (l = 0..lmax; lmax is the band limit of the convolution). A CompactKernel
        is applied as is with method "realspace"; a KernelSplit or a Plan (from
        :func:`split_kernel` / :func:`optimize_split`) is run as it stands.
    method : {"auto", "harmonic", "realspace", "split"}
        "auto": the cheapest plan for ``error_bound`` (:func:`optimize_split` with the
        measured cost model, cached per kernel).
    l_cut : int, optional
        "split": the harmonic part's band limit, -1 <= l_cut <= lmax (required).
        "harmonic": a lower band limit than lmax (optional).
    theta_cut : float, optional
        Radians, 0 < theta_cut <= pi. "realspace": support of the truncated kernel (required);
        "split": support of the real-space part (required).
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the real-space part runs (and the harmonic part, unless ``harmonic_backend``).
    harmonic_backend : str, optional
        Where the harmonic part of a split runs: "cpu" (ducc0 threads, concurrently with the
        GPU) or "cuda" (a second stream); by default the same as ``backend``.
    error_bound : float
        "auto" only: the paper's fractional error bound (Eq. 6, alpha = 5).
    fit : "sphgpu" or "paper"
        "split"/"auto": the fit preset (:data:`sphgpu.convolve.FIT_PRESETS`).
    geometry : RingGeometry, optional
        The grid of ``maps`` (default: HEALPix of their length); "auto" needs HEALPix.

    Returns
    -------
    array of the shape and kind of ``maps``, float64.

    Raises
    ------
    TypeError
        If ``maps`` is a GPU array on CPU backends, ``kernel`` or ``theta_cut`` has the wrong
        type, or ``backend`` is not a string.
    ValueError
        For an unknown ``method`` or ``backend``, cuts missing, out of range or given where the
        method takes none, a map length that is no HEALPix grid or not ``geometry``'s, or NaN
        in ``maps``.
    BackendUnavailableError
        If ``backend="cuda"`` is asked for without a usable GPU.
    """
    arr, bad = as_maps("maps", maps)
    parts = parts_of(kernel, arr.shape[-1], method=method, l_cut=l_cut, theta_cut=theta_cut,
                     backend=backend, harmonic_backend=harmonic_backend,
                     error_bound=error_bound, fit=fit, geometry=geometry)
    return execute(parts, arr, bad, maps)


def parts_of(kernel, npix=None, *, method="auto", l_cut=None, theta_cut=None, backend="auto",
             harmonic_backend=None, error_bound=1e-5, fit="sphgpu", geometry=None):
    """What :func:`convolve` runs for maps of ``npix`` pixels, before it runs: the arguments
    checked, the kernel split or tabulated, the backends resolved.

    :func:`sphgpu.distributed.convolution.convolve` makes its Parts here too, inside
    :func:`sphgpu.convolve.parts.resolved_by` (backends of its cluster), and runs them through
    the same executor.

    Parameters
    ----------
    kernel : RadialKernel, array of K_l, CompactKernel, KernelSplit or Plan
        As in :func:`convolve`.
    npix : int, optional
        Pixels of the maps, checked against ``geometry`` or the Plan (default: not checked;
        then a grid other than a Plan's needs ``geometry``).
    method, l_cut, theta_cut, backend, harmonic_backend, error_bound, fit, geometry
        As in :func:`convolve`.

    Returns
    -------
    Parts
        The harmonic part's K_l, the real-space part and their concrete backends, on the
        maps' grid.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As :func:`convolve` raises them for these arguments.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(kernel, Plan):              # its own backends, unless ``backend`` names one
        return kernel.parts(backend, npix=npix)
    geom = resolve_geometry(None, geometry, npix=npix, name="maps")
    return _parts(kernel, method, l_cut, theta_cut, backend, harmonic_backend, error_bound, fit,
                  geom)


def _parts(kernel, method, l_cut, theta_cut, backend, harmonic_backend, error_bound, fit, geom):
    """The :class:`Parts` that convolve() runs for a kernel that is not a Plan."""
    if not isinstance(kernel, KernelSplit):
        kernel = _resolve(kernel, method, l_cut, theta_cut, error_bound, fit, geom)
    if isinstance(kernel, Plan):              # method "auto"
        return kernel.parts(backend, npix=geom.npix)
    if isinstance(kernel, KernelSplit):
        return Parts.of_split(geom, kernel, backend=backend, harmonic_backend=harmonic_backend)
    if isinstance(kernel, CompactKernel):
        return Parts.of(geom, compact=kernel, backend=backend)
    return Parts.of(geom, bl=kernel, backend=backend)


def _resolve(kernel, method, l_cut, theta_cut, error_bound, fit, geom):
    """What :func:`convolve` computes for a kernel that is not yet a Plan or KernelSplit, before
    any backend: the K_l of a harmonic convolution (ndarray), a CompactKernel (real space), a
    KernelSplit (split) or a Plan (auto). Validates the arguments as convolve() documents."""
    if isinstance(kernel, CompactKernel):
        if method not in ("auto", "realspace"):
            raise ValueError("a CompactKernel is applied in real space: use method='realspace'")
        if l_cut is not None or theta_cut is not None:
            raise ValueError("a CompactKernel carries its own support: give no l_cut or "
                             "theta_cut")
        return kernel
    kernel = _check_kernel(kernel)
    l_cut = _check_l_cut(l_cut, kernel.lmax)
    if theta_cut is not None:
        theta_cut = _check_angle("theta_cut", theta_cut)
    if method == "harmonic":
        if theta_cut is not None:
            raise ValueError("method='harmonic' takes no theta_cut")
        return kernel.bl if l_cut is None else kernel.bl[: l_cut + 1]
    if method == "realspace":
        if theta_cut is None:
            raise ValueError("method='realspace' needs theta_cut (radians): the support of the "
                             "truncated kernel")
        if l_cut is not None:
            raise ValueError("method='realspace' takes no l_cut")
        return _cached_tabulation(kernel, theta_cut)
    if method == "split":
        if l_cut is None or theta_cut is None:
            raise ValueError("method='split' needs both l_cut and theta_cut (radians)")
        return _cached_split(kernel, l_cut, theta_cut, fit)
    # auto
    if l_cut is not None or theta_cut is not None:
        raise ValueError("method='auto' chooses l_cut and theta_cut itself; give them with "
                         "method='split'")
    if geom.kind != "healpix":
        raise ValueError("method='auto' prices HEALPix maps; choose a method for other grids")
    return _cached_plan(kernel, geom.nside, float(error_bound), fit)
