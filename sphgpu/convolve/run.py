"""The one executor of a convolution: :func:`execute` runs the parts of a
:class:`~sphgpu.convolve.parts.Parts` on maps already validated by the public entry
(:func:`sphgpu.convolve.convolve`, :meth:`sphgpu.convolve.Plan.apply`): the harmonic part, the
real-space part, or both at the same time, then ``UNSEEN`` back at the input's masked pixels.

The tasks of :mod:`sphgpu.distributed.convolution` run it too, on the workers. Backends are
concrete names ("cuda", "cpu", "reference"): the real-space part runs on the convolve backend
module of that name, the harmonic part on the SHT backend.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backends
from .._device import is_device_array, like_input
from .._validate import UNSEEN, check_host_array
from .harmonic import harmonic_convolve
from .realspace import ring_plan

__all__ = ["execute", "realspace_part", "run_split", "host_copy"]


def execute(parts, arr, bad=None, original=None):
    """Run ``parts`` (a :class:`~sphgpu.convolve.parts.Parts`) on validated maps.

    Parameters
    ----------
    parts : Parts
        What to run and where (backends concrete).
    arr : array, shape (npix,) or (k, npix), float64, C-contiguous; NumPy or CuPy
        The maps on ``parts.geometry``, finite (masked pixels already zero).
    bad : array of bool, shape of ``arr``, or None
        Pixels that enter as zero and come out as ``UNSEEN``.
    original : array, optional
        The caller's maps: the result takes their kind (a Numba device array for Numba input).

    Returns
    -------
    array of the shape of ``arr``, float64: NumPy for NumPy input, else a device array.

    Raises
    ------
    TypeError
        If ``arr`` is a device array and no part runs on a backend that takes one.
    """
    device = is_device_array(arr)
    check_host_array("maps", arr, device_ok=parts.takes_device_arrays)
    g, hb, rb = parts.geometry, parts.harmonic_backend, parts.realspace_backend
    if parts.compact is None:
        out = harmonic_convolve(arr, parts.bl, g, backend=hb)
    elif parts.bl is None:
        out = realspace_part(arr, g, parts.compact, rb)
    else:
        out = run_split(arr, g, parts.bl, parts.compact, hb, rb, device=device)
        if not device and not isinstance(out, np.ndarray):
            out = host_copy(out)
    if bad is not None:
        out[bad] = UNSEEN
    return like_input(out, arr if original is None else original)


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


def run_split(maps, geometry, harmonic_bl, compact, harmonic_backend, realspace_backend, *,
              device=None):
    """Both parts of a split at the same time: the harmonic one (K_l ``harmonic_bl``) in a
    worker thread (ducc0 releases the GIL; on the GPU it keeps the default stream), the
    real-space one (``compact``) here. Returns harmonic + real-space, in the kind of the
    device operand if either part returned one. ``device``: whether ``maps`` is a device
    array, if the caller knows."""
    if device is None:
        device = is_device_array(maps)
    hmaps = maps
    if device and not backends.load("sht", harmonic_backend).ACCEPTS_DEVICE_ARRAYS:
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
    """a + b in the kind of the device operand, if any (the parts return NumPy or CuPy)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        import cupy

        return cupy.asarray(a) + cupy.asarray(b)
    return a + b


