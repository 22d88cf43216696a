"""The "cuda" backend of the convolution (:class:`sphgpu.backends.ConvolveBackend`): host side
of the real-space kernel (:mod:`._cuda_kernels`): device copies of the ring tables and the
kernel, the work items, launches (on a stream of their own when the harmonic part of a split
runs at the same time); the harmonic part runs on the SHT's "cuda" backend.

NumPy in gives NumPy out (one copy each way); CuPy or Numba device arrays in give CuPy arrays
out (the public API turns them back into the caller's kind). Under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) everything runs on NumPy arrays.

Launch parameters are module attributes so the GPU machine can tune them:
``THREADS_PER_BLOCK`` (threads per block), ``ROW_MAX`` (float64 entries of the shared
kernel row; 4096 = 32 KB), ``MAPS_PER_LAUNCH``, ``FOLD``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _fast_launch
from .._device import SIMULATOR, to_device, to_host
from .._device import array_module as _xp
from .._device import device_constant as _const
from ._cuda_kernels import realspace_kernel

__all__ = ["convolve", "ACCEPTS_DEVICE_ARRAYS", "THREADS_PER_BLOCK", "ROW_MAX",
           "MAPS_PER_LAUNCH", "FOLD", "work_items", "fold_of"]

ACCEPTS_DEVICE_ARRAYS = True
THREADS_PER_BLOCK = 32 if SIMULATOR else 128
ROW_MAX = 256 if SIMULATOR else 4096
MAPS_PER_LAUNCH = 4
#: 4: use HEALPix's quarter-turn symmetry (one kernel value for four pixel pairs); 1: do not.
FOLD = 4


def fold_of(plan) -> int:
    """4 on HEALPix rings, the whole sphere or a band of it (a quarter turn about the pole maps
    each ring onto itself, see :mod:`._cuda_kernels`), else 1."""
    g = plan.geometry
    ok = g.kind == "healpix" and bool(np.all(plan.nphi % 4 == 0)) and FOLD == 4
    return 4 if ok else 1


def work_items(nphi, tpb, fold=1, rings=None):
    """(item_ring, item_start), int64: one item per ``tpb`` consecutive pixels of the first
    ``1/fold`` of each ring (of each ring in ``rings``, sorted indices, when given)."""
    rings = np.arange(len(nphi), dtype=np.int64) if rings is None \
        else np.asarray(rings, dtype=np.int64)
    counts = (np.asarray(nphi)[rings] // fold + tpb - 1) // tpb
    ring = np.repeat(rings, counts)
    start = np.concatenate([np.arange(c, dtype=np.int64) * tpb for c in counts])
    return ring, start


def _device_tables(plan, tpb, fold):
    cache = plan.__dict__.setdefault("_cuda_tables", {})
    if (tpb, fold) not in cache:
        ring, start = work_items(plan.nphi, tpb, fold, plan.out_rings)
        cache[tpb, fold] = dict(theta=_const(plan.theta), sin_theta=_const(plan.sin_theta),
                          phi0=_const(plan.phi0), nphi=_const(plan.nphi),
                          ringstart=_const(plan.ringstart), weight=_const(plan.weight),
                          r_lo=_const(plan.r_lo), r_hi=_const(plan.r_hi),
                          item_ring=_const(ring), item_start=_const(start), n_items=len(ring))
    return cache[tpb, fold]


def convolve(maps, plan, kernel, *, concurrent=False, stream=None, tpb=None, rowmax=None,
             fold=None):
    """maps (k, npix) float64 (NumPy, CuPy or Numba) -> (k, npix) of the kind given (CuPy for
    device input): the real-space sum with ``kernel`` (CompactKernel) over ``plan``
    (RingPlan).

    ``concurrent``: the harmonic part of a split runs meanwhile on the default stream (from
    another thread); the launches then go to a stream of their own that waits for the work
    queued before this call (the input may still be in flight) but not for later work, so
    the two overlap. ``stream``: a Numba or CuPy stream to launch on instead (CuPy's current
    stream if None);
    ``fold``: 1, or 4 to use HEALPix's quarter-turn symmetry (default: 4 where the grid has
    it). ``tpb``, ``rowmax``: launch parameters (default ``THREADS_PER_BLOCK``, ``ROW_MAX``).
    """
    if concurrent and stream is None and not SIMULATOR:
        import cupy

        side = cupy.cuda.Stream(non_blocking=True)
        side.wait_event(cupy.cuda.get_current_stream().record())
        with side:                   # CuPy's copies and buffers go to the side stream too
            out = _convolve(maps, plan, kernel, side, tpb, rowmax, fold)
        side.synchronize()
        return out
    return _convolve(maps, plan, kernel, stream, tpb, rowmax, fold)


def _convolve(maps, plan, kernel, stream, tpb, rowmax, fold):
    xp = _xp()
    tpb = THREADS_PER_BLOCK if tpb is None else int(tpb)
    rowmax = ROW_MAX if rowmax is None else int(rowmax)
    host = isinstance(maps, np.ndarray) and xp is not np
    d = xp.ascontiguousarray(to_device(maps), dtype=np.float64)
    out = xp.empty_like(d)
    fold = fold_of(plan) if fold is None else int(fold)
    if fold not in (1, 4) or (fold == 4 and np.any(plan.nphi % 4)):
        raise ValueError(f"fold must be 1, or 4 on a grid whose rings all have a multiple of 4 "
                         f"pixels, got {fold}")
    t = _device_tables(plan, tpb, fold)
    coef = _const(kernel.coef)
    nmaps = d.shape[0]
    for i in range(0, nmaps, MAPS_PER_LAUNCH):
        j = min(i + MAPS_PER_LAUNCH, nmaps)
        k = realspace_kernel(tpb, rowmax, j - i, fold)
        _fast_launch.launch(k, t["n_items"], tpb, stream or _fast_launch.current_stream(),
                            d[i:j], t["theta"], t["sin_theta"], t["phi0"], t["nphi"],
                            t["ringstart"], t["weight"], t["r_lo"], t["r_hi"], t["item_ring"],
                            t["item_start"],
                            float(kernel.h), int(kernel.n), coef, out[i:j])
    return to_host(out) if host else out


def simulator_launch_size(plan, tpb=None, fold=1) -> int:
    """Threads one launch would start (the simulator runs one Python thread per CUDA thread)."""
    tpb = THREADS_PER_BLOCK if tpb is None else tpb
    return int(math.fsum((n // fold + tpb - 1) // tpb for n in plan.nphi)) * tpb
