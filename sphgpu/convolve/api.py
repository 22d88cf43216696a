"""convolve: one entry point for every way of convolving a map with a radial kernel.

    method="harmonic"   map2alm (iter=0) -> * K_l -> alm2map, through the SHT backend
    method="realspace"  the kernel truncated at theta_cut, summed over neighbouring pixels
    method="split"      the paper's split at (l_cut, theta_cut): both parts run concurrently
    method="auto"       whatever :func:`optimize_split` finds cheapest for the error bound

All four compute the same operator up to the kernel's truncation error: with K_l = b_l the
harmonic method equals ``healpy.smoothing(m, beam_window=b_l, iter=0, lmax=lmax)``.
"""

from __future__ import annotations

import functools
import importlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backends
from .._device import like_input
from .._validate import UNSEEN, as_maps, as_real_array, check_int, is_device_array
from ..geometry import RingGeometry
from ..sht.transforms import resolve_geometry
from .harmonic import harmonic_convolve
from .kernels import CompactKernel, _check_angle
from .realspace import brute_force, ring_plan
from .split import KernelSplit, _check_kernel, split_kernel

__all__ = ["convolve", "run_plan", "METHODS"]

METHODS = ("auto", "harmonic", "realspace", "split")


def _resolve(backend):
    """The concrete backend: the convolution runs on CUDA exactly where the SHT does (its
    harmonic part needs it), so "auto" follows the SHT's availability."""
    return backends.resolve(backend, "sht")


def _realspace_impl(backend):
    """The real-space module of a concrete backend ("cpu", "cuda"; "reference" -> a shim
    around the brute-force twin)."""
    if backend == "reference":
        return _Reference
    name = {"cpu": "_realspace_cpu", "cuda": "_realspace_cuda"}[backend]
    return importlib.import_module(f"sphgpu.convolve.{name}")


class _Reference:
    ACCEPTS_DEVICE_ARRAYS = False

    @staticmethod
    def convolve(maps, plan, kernel, **kw):
        return brute_force(np.asarray(maps), plan.geometry, kernel)


def _realspace(maps, geometry, compact, backend, stream=None):
    impl = _realspace_impl(backend)
    plan = ring_plan(geometry, compact.theta_cut)
    batch = maps[None, :] if maps.ndim == 1 else maps
    kw = {"stream": stream} if backend == "cuda" else {}
    out = impl.convolve(batch, plan, compact, **kw)
    return out[0] if maps.ndim == 1 else out


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
    from .optimize import optimize_split

    return optimize_split(kernel, nside=nside, error_bound=error_bound, cost_model="measured",
                          fit=fit)


@functools.lru_cache(maxsize=1)
def _worker():
    """The one thread that runs harmonic parts next to the real-space part. It lives as long
    as the process, so what CuPy and Numba keep per thread (cuFFT plans, the CUDA context) is
    set up once, not at every split."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sphgpu-harmonic")


def _run_split(maps, geometry, harmonic_bl, compact, harmonic_backend, realspace_backend):
    """Both parts at the same time: the harmonic one in a worker thread (ducc0 releases the GIL;
    on the GPU it keeps the default stream), the real-space one here, on the GPU on a stream of
    its own that does not wait for the default stream's later work (so the two overlap) but
    does wait for what was queued before this call (the caller's input may still be in
    flight)."""
    hmaps = maps
    if harmonic_backend != "cuda" and is_device_array(maps):
        hmaps = _host(maps)
    fut = _worker().submit(harmonic_convolve, hmaps, harmonic_bl, geometry,
                           backend=harmonic_backend)
    try:
        if realspace_backend == "cuda" and not _simulator():
            import cupy
            from numba import cuda

            side = cupy.cuda.Stream(non_blocking=True)
            side.wait_event(cupy.cuda.get_current_stream().record())
            with side:                   # CuPy copies and buffers on the side stream too
                rs = _realspace(cupy.asarray(maps), geometry, compact, realspace_backend,
                                stream=cuda.external_stream(side.ptr))
            side.synchronize()
        else:
            rs = _realspace(maps, geometry, compact, realspace_backend)
    except BaseException:
        fut.exception()                  # let the worker finish before the error propagates
        raise
    hs = fut.result()
    return _add(hs, rs)


def _simulator():
    from .._device import SIMULATOR

    return SIMULATOR


def _host(a):
    if isinstance(a, np.ndarray):
        return a
    import cupy

    return cupy.asnumpy(cupy.asarray(a))


def _add(a, b):
    """a + b in the kind of the device operand, if any."""
    if is_device_array(a) or is_device_array(b):
        import cupy

        return cupy.asarray(a) + cupy.asarray(b)
    return a + b


def _check_maps(maps, backend):
    arr = as_real_array("maps", maps)
    if is_device_array(arr) and backend not in ("cuda",):
        raise TypeError("maps is a GPU array; the CPU backends take NumPy arrays "
                        "(use backend='cuda', or copy it to the host)")
    return arr


def _check_l_cut(l_cut, lmax):
    return check_int("l_cut", l_cut, minimum=-1, maximum=lmax) if l_cut is not None else None


def convolve(maps, kernel, *, method="auto", l_cut=None, theta_cut=None, backend="auto",
             harmonic_backend=None, error_bound=1e-5, fit="sphgpu", geometry=None):
    """Convolve HEALPix map(s) with a radially symmetric kernel.

    Pixels equal to ``healpy.UNSEEN`` and the masked pixels of a ``numpy.ma`` array enter as
    zero and come out as ``UNSEEN``, as in healpy's ``smoothing``; NaN elsewhere raises.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), float64; NumPy, CuPy or Numba
        HEALPix RING maps (or maps on ``geometry``). Device arrays give device arrays back.
    kernel : RadialKernel, array of K_l, CompactKernel, KernelSplit or Plan
        The kernel (l = 0..lmax; lmax is the band limit of the convolution). A CompactKernel
        is applied as is with method "realspace"; a KernelSplit or a Plan (from
        :func:`split_kernel` / :func:`optimize_split`) is run as it stands.
    method : {"auto", "harmonic", "realspace", "split"}
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

    Returns
    -------
    array of the shape and kind of ``maps``, float64.
    """
    arr, bad = as_maps("maps", maps)
    out = _convolve(maps if bad is None else arr, kernel, method, l_cut, theta_cut, backend,
                    harmonic_backend, error_bound, fit, geometry)
    if bad is not None:
        out[bad] = UNSEEN
    return out


def _convolve(maps, kernel, method, l_cut, theta_cut, backend, harmonic_backend, error_bound,
              fit, geometry):
    from .optimize import Plan

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(kernel, Plan):
        return run_plan(kernel, maps, backend=None if backend == "auto" else backend)
    if isinstance(kernel, KernelSplit):
        return _apply_split(maps, kernel, backend, harmonic_backend, geometry)
    be = _resolve(backend)
    arr = _check_maps(maps, be)
    geom = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")

    what = resolve(kernel, method, l_cut, theta_cut, error_bound, fit, geom)
    if isinstance(what, CompactKernel):
        return like_input(_realspace(arr, geom, what, be), maps)
    if isinstance(what, KernelSplit):
        return _apply_split(maps, what, backend, harmonic_backend, geometry)
    if isinstance(what, np.ndarray):
        return like_input(harmonic_convolve(arr, what, geom, backend=be), maps)
    return run_plan(what, maps, backend=None if backend == "auto" else be)


def resolve(kernel, method, l_cut, theta_cut, error_bound, fit, geom):
    """What :func:`convolve` computes for a kernel that is not yet a Plan or KernelSplit, before
    any backend: the K_l of a harmonic convolution (ndarray), a CompactKernel (real space), a
    KernelSplit (split) or a Plan (auto). Validates the arguments as convolve() documents;
    :mod:`sphgpu.distributed.convolution` makes the same choices through it."""
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


def _apply_split(maps, split, backend, harmonic_backend, geometry):
    be = _resolve(backend)
    hb = be if harmonic_backend is None else _resolve(harmonic_backend)
    arr = _check_maps(maps, "cuda" if "cuda" in (be, hb) else be)
    geom = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    if split.realspace is None:
        return like_input(harmonic_convolve(arr, split.harmonic_bl, geom, backend=hb), maps)
    if split.l_cut < 0:
        return like_input(_realspace(arr, geom, split.realspace, be), maps)
    out = _run_split(arr, geom, split.harmonic_bl, split.realspace, hb, be)
    if isinstance(maps, np.ndarray) and not isinstance(out, np.ndarray):
        out = _host(out)
    return like_input(out, maps)


def run_plan(plan, maps, *, backend=None):
    """Apply a :class:`Plan`: its method on its backends (``backend`` overrides both). Plans
    priced with the paper's cost model name the paper's hardware, so they run on "auto"."""
    from .cost import MeasuredCostModel

    own = isinstance(plan.cost_model, MeasuredCostModel)
    hb = backend or (plan.harmonic_backend if own else None) or "auto"
    rb = backend or (plan.realspace_backend if own else None) or "auto"
    if plan.method == "harmonic":
        be = _resolve(hb)
        arr = _check_maps(maps, be)
        geom = RingGeometry.healpix(plan.nside)
        if arr.shape[-1] != geom.npix:
            raise ValueError(f"maps has {arr.shape[-1]} pixels but the plan is for nside "
                             f"{plan.nside} ({geom.npix} pixels)")
        return like_input(harmonic_convolve(arr, plan.kernel.bl, geom, backend=be), maps)
    geom = RingGeometry.healpix(plan.nside)
    npix = np.shape(maps)[-1] if not is_device_array(maps) else maps.shape[-1]
    if npix != geom.npix:
        raise ValueError(f"maps has {npix} pixels but the plan is for nside {plan.nside} "
                         f"({geom.npix} pixels)")
    return _apply_split(maps, plan.split, rb, hb, geom)
