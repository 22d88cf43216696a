"""Running a convolution once its parts are known: the harmonic part, the real-space part, or
a split's two parts at the same time; and a :class:`~sphgpu.convolve.optimize.Plan` as it
says. :func:`sphgpu.convolve.convolve` decides what to run and calls these;
``Plan.apply`` and :mod:`sphgpu.distributed.convolution` call them directly.

Backends are concrete names ("cuda", "cpu", "reference"; resolve "auto" first): the real-space
part runs on the convolve backend module of that name, the harmonic part on the SHT backend.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backends
from .._device import like_input
from .._validate import UNSEEN, as_maps, as_real_array, is_device_array
from ..geometry import RingGeometry
from ..sht.transforms import resolve_geometry
from .cost import MeasuredCostModel
from .harmonic import harmonic_convolve
from .realspace import ring_plan

__all__ = ["realspace_part", "run_split", "apply_split", "run_plan", "check_maps", "host_copy",
           "with_mask"]


def realspace_part(maps, geometry, compact, backend, *, concurrent=False):
    """maps (npix,) or (k, npix) float64 on ``geometry`` -> the real-space sum with
    ``compact`` (a CompactKernel) on the concrete ``backend``, same shape; ``concurrent`` as
    in :meth:`sphgpu.backends.ConvolveBackend.convolve`."""
    impl = backends.load("convolve", backend)
    plan = ring_plan(geometry, compact.theta_cut)
    batch = maps[None, :] if maps.ndim == 1 else maps
    out = impl.convolve(batch, plan, compact, concurrent=concurrent)
    return out[0] if maps.ndim == 1 else out


@functools.lru_cache(maxsize=1)
def _worker():
    """The one thread that runs harmonic parts next to the real-space part. It lives as long
    as the process, so what CuPy and Numba keep per thread (cuFFT plans, the CUDA context) is
    set up once, not at every split."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sphgpu-harmonic")


def run_split(maps, geometry, harmonic_bl, compact, harmonic_backend, realspace_backend):
    """Both parts of a split at the same time: the harmonic one (K_l ``harmonic_bl``) in a
    worker thread (ducc0 releases the GIL; on the GPU it keeps the default stream), the
    real-space one (``compact``) here. Returns harmonic + real-space, in the kind of the
    device operand if either part returned one."""
    hmaps = maps
    if is_device_array(maps) and not backends.load("sht", harmonic_backend).ACCEPTS_DEVICE_ARRAYS:
        hmaps = host_copy(maps)
    fut = _worker().submit(harmonic_convolve, hmaps, harmonic_bl, geometry,
                           backend=harmonic_backend)
    try:
        rs = realspace_part(maps, geometry, compact, realspace_backend, concurrent=True)
    except BaseException:
        fut.exception()                  # let the worker finish before the error propagates
        raise
    return _add(fut.result(), rs)


def host_copy(a):
    """A NumPy array of ``a`` (NumPy, CuPy or Numba)."""
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


def with_mask(maps, run):
    """``run(maps)`` with the pixels equal to ``UNSEEN`` and the masked pixels of a
    ``numpy.ma`` array set to zero, and ``UNSEEN`` put back there in the result (as healpy's
    ``smoothing``); NaN elsewhere raises. The caller's array is left as it was."""
    arr, bad = as_maps("maps", maps)
    out = run(maps if bad is None else arr)
    if bad is not None:
        out[bad] = UNSEEN
    return out


def check_maps(maps, *backend_names):
    """``maps`` as a float64 array; a device array only if one of the concrete backends
    ``backend_names`` takes device arrays."""
    arr = as_real_array("maps", maps)
    if is_device_array(arr) and not any(backends.load("convolve", b).ACCEPTS_DEVICE_ARRAYS
                                        for b in backend_names):
        raise TypeError("maps is a GPU array; the CPU backends take NumPy arrays "
                        "(use backend='cuda', or copy it to the host)")
    return arr


def apply_split(maps, split, backend, harmonic_backend, geometry):
    """Convolve with a :class:`~sphgpu.convolve.split.KernelSplit`: its real-space part on
    ``backend``, its harmonic part on ``harmonic_backend`` (None: ``backend``); both may be
    "auto". Returns an array of the shape and kind of ``maps``."""
    be = backends.resolve(backend, "convolve")
    hb = be if harmonic_backend is None else backends.resolve(harmonic_backend, "convolve")
    arr = check_maps(maps, be, hb)
    geom = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    if split.realspace is None:
        return like_input(harmonic_convolve(arr, split.harmonic_bl, geom, backend=hb), maps)
    if split.l_cut < 0:
        return like_input(realspace_part(arr, geom, split.realspace, be), maps)
    out = run_split(arr, geom, split.harmonic_bl, split.realspace, hb, be)
    if isinstance(maps, np.ndarray) and not isinstance(out, np.ndarray):
        out = host_copy(out)
    return like_input(out, maps)


def run_plan(plan, maps, *, backend=None):
    """Apply a :class:`~sphgpu.convolve.optimize.Plan`: its method on its backends (a concrete
    ``backend`` overrides both). Plans priced with the paper's cost model name the paper's
    hardware, so they run on "auto". Returns an array of the shape and kind of ``maps``."""
    own = isinstance(plan.cost_model, MeasuredCostModel)
    hb = backend or (plan.harmonic_backend if own else None) or "auto"
    rb = backend or (plan.realspace_backend if own else None) or "auto"
    geom = RingGeometry.healpix(plan.nside)
    npix = maps.shape[-1] if is_device_array(maps) else np.shape(maps)[-1]
    if npix != geom.npix:
        raise ValueError(f"maps has {npix} pixels but the plan is for nside {plan.nside} "
                         f"({geom.npix} pixels)")
    if plan.method == "harmonic":
        be = backends.resolve(hb, "convolve")
        arr = check_maps(maps, be)
        return like_input(harmonic_convolve(arr, plan.kernel.bl, geom, backend=be), maps)
    return apply_split(maps, plan.split, rb, hb, geom)
