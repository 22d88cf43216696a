"""The "cuda" backend of the pair counts: host side of :mod:`sphgpu.tpacf._cuda_kernels`.

Per count: the plan of :mod:`sphgpu.tpacf.grid` on the host (catalogs are sorted once and cached
with their device copies), the work items uploaded as int32, one kernel launch over the groups,
the histograms copied back. Catalog arrays come from host :class:`Catalog` objects, so the
results are host arrays whatever the input was.

Tuning parameters (``threads``, ``i_tile``, ``j_max``, ``groups``) are keyword arguments of
:func:`count_pairs` with the defaults below; the block size falls to fit 48 KiB of static shared
memory when there are many bins or weights. Under Numba's CUDA simulator (CI) the same code runs
on NumPy arrays at tiny sizes.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import cuda

from .._device import SIMULATOR
from . import exact
from . import _cuda_kernels as K
from .grid import build_plan, unit_weights
from .reference import RawCounts

__all__ = ["count_pairs", "PRECISIONS", "DEFAULT_PRECISION", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = False
PRECISIONS = ("float32", "float64")
DEFAULT_PRECISION = "float32"
#: Defaults of the launch (the lead tunes them on the GPU; see benchmarks/tpacf.py --sweep).
THREADS = 32 if SIMULATOR else 256       # the simulator runs one Python thread per CUDA thread
I_TILE = 32 if SIMULATOR else 256
J_MAX = 128 if SIMULATOR else 4096
GROUPS = 4 if SIMULATOR else 8192
SHARED_LIMIT = 48 * 1024
#: Most pairs one group may hold: the per-thread uint32 counters of a block cannot overflow.
MAX_GROUP_PAIRS = 2**31


def _launch_shape(threads, i_tile, nbins, p32, p64, use32, weighted):
    """The largest block size <= threads (a power of two >= 32) whose shared memory fits."""
    th = threads
    while th >= 32:
        if K.shared_bytes(th, i_tile, nbins, p32, p64, use32, weighted) <= SHARED_LIMIT:
            return th
        th //= 2
    raise ValueError(f"{nbins} bins{' with weights' if weighted else ''} need more shared "
                     "memory than a block has on the cuda backend; use fewer bins or "
                     "backend='cpu'")


def _device_arrays(sc, weighted):
    """Device copies of a sorted catalog's arrays, made once and cached on it."""
    dev = sc.cache.get("device")
    if dev is None:
        dev = sc.cache["device"] = {"f": cuda.to_device(sc.xyz32), "x": cuda.to_device(sc.xyz)}
    if weighted and "w" not in dev:
        dev["w"] = cuda.to_device(unit_weights(sc))
    return dev


def count_pairs(cat1, cat2, bins, *, n_regions=0, weighted=False, precision=DEFAULT_PRECISION,
                threads=THREADS, i_tile=I_TILE, j_max=J_MAX, groups=GROUPS, profile=None):
    """Pair counts of ``cat1`` x ``cat2`` (None: unique pairs of ``cat1``) on the GPU.

    ``profile``, a dict, receives the seconds spent in each step (plan, upload, kernel,
    download; the device is synchronised between them) and the launch shape.
    """
    clock = _Clock(profile)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if threads < 32 or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two >= 32, got {threads}")
    for c in (cat1, cat2):
        if c is not None and c.size >= 2**31:
            raise ValueError("the cuda backend counts catalogs of fewer than 2**31 points")
    use32 = precision == "float32"
    nb = bins.nbins
    E = exact.padded_edges(bins.chord2_edges)
    T, gap = exact.float32_thresholds(bins.chord2_edges)
    th = _launch_shape(threads, i_tile, nb, T.size, E.size, use32, weighted)
    plan = build_plan(cat1, cat2, bins, n_regions=n_regions, i_tile=i_tile, j_max=j_max,
                      groups=groups)
    clock.lap("plan")
    work = int(np.sum((plan.items[:, 1] - plan.items[:, 0])
                      * (plan.items[:, 3] - plan.items[:, 2]))) if plan.items.size else 0
    if work > MAX_GROUP_PAIRS * (plan.group_start.size - 1):
        plan = build_plan(cat1, cat2, bins, n_regions=n_regions, i_tile=i_tile, j_max=j_max,
                          groups=math.ceil(2 * work / MAX_GROUP_PAIRS))
    s1, s2 = plan.s1, plan.s2
    ngroups = plan.group_start.size - 1
    if plan.items.shape[0] == 0:
        zero = np.zeros(nb, np.int64)
        nreg = max(n_regions, 1)
        return RawCounts(counts=zero, weights=np.zeros(nb) if weighted else None,
                         region_counts=np.zeros((nreg, nb), np.int64) if n_regions else None,
                         region_weights=np.zeros((nreg, nb)) if (n_regions and weighted)
                         else None)
    d1 = _device_arrays(s1, weighted)
    d2 = d1 if s2 is s1 else _device_arrays(s2, weighted)
    nreg = max(n_regions, 1)
    cnt = cuda.to_device(np.zeros(nb, np.int64))
    wsum = cuda.to_device(np.zeros(nb if weighted else 1))
    rc = cuda.to_device(np.zeros(nreg * nb if n_regions else 1, np.int64))
    rw = cuda.to_device(np.zeros(nreg * nb if (n_regions and weighted) else 1))
    nref = cuda.to_device(np.zeros(1, np.int64))
    one = cuda.to_device(np.zeros(1))
    kernel = K.pair_kernel(th, int(i_tile), nb, T.size, E.size, use32, bool(weighted),
                           n_regions > 0, plan.auto)
    items = cuda.to_device(plan.items.astype(np.int32))
    gstart = cuda.to_device(plan.group_start.astype(np.int32))
    tables = cuda.to_device(T), cuda.to_device(gap), cuda.to_device(E)
    clock.lap("upload")
    kernel[ngroups, th](items, gstart, d1["f"], d2["f"], d1["x"], d2["x"], *tables,
                        exact.float32_cutoff(T, gap), np.float64(E[nb]),
                        d1["w"] if weighted else one, d2["w"] if weighted else one,
                        cnt, wsum, rc, rw, nref)
    clock.lap("kernel")
    out = RawCounts(
        counts=cnt.copy_to_host(), weights=wsum.copy_to_host() if weighted else None,
        region_counts=rc.copy_to_host().reshape(nreg, nb) if n_regions else None,
        region_weights=rw.copy_to_host().reshape(nreg, nb) if (n_regions and weighted)
        else None,
        refined=int(nref.copy_to_host()[0]), pairs_compared=plan.pairs_compared)
    clock.lap("download")
    if profile is not None:
        profile.update(threads=th, groups=ngroups, items=int(plan.items.shape[0]),
                       i_tile=int(i_tile), j_max=int(j_max))
    return out


class _Clock:
    """Seconds per step into a dict (device synchronised at each lap); inert without one."""

    def __init__(self, profile):
        self.profile = profile
        if profile is not None:
            cuda.synchronize()
            self.t = time.perf_counter()

    def lap(self, name):
        if self.profile is not None:
            cuda.synchronize()
            t = time.perf_counter()
            self.profile[name] = t - self.t
            self.t = t
