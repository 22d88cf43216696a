"""The "cuda" backend of the pair counts: host side of :mod:`sphgpu.tpacf._cuda_kernels`.

Per count: each catalog prepared on the GPU (:class:`DevicePreparer`: coordinates uploaded, or
taken as they are from a Catalog of device arrays; cell keys, sphgpu's radix sort on CuPy
arrays, sorted unit vectors; cached on the Catalog, so a Catalog passed again is not prepared
again), the plan of :mod:`sphgpu.tpacf.grid` on the host from the per-run and per-chunk arrays
(its binary searches run on the GPU), the work items uploaded as int32, one kernel launch over
the groups, the histograms copied back (host arrays whatever the input was).

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

from .. import _fast_launch
from .._device import SIMULATOR, array_module, to_host
from . import budget, exact
from . import _cuda_kernels as K
from .grid import Preparer, band_height, build_plan, sorted_catalog, unit_weights
from .reference import RawCounts

__all__ = ["count_pairs", "DevicePreparer", "DEVICE", "PRECISIONS", "DEFAULT_PRECISION",
           "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = True        # device coordinates are prepared where they are
PRECISIONS = ("float32", "float64")
DEFAULT_PRECISION = "float32"
#: Defaults of the launch (the lead tunes them on the GPU; see benchmarks/tpacf.py --sweep).
THREADS = 32 if SIMULATOR else 256       # the simulator runs one Python thread per CUDA thread
I_TILE = 32 if SIMULATOR else 256
J_MAX = 128 if SIMULATOR else 4096
GROUPS = 4 if SIMULATOR else 8192
SHARED_LIMIT = 48 * 1024
#: The float32 decisions read from exact.float32_lookup's table; points of the second catalog a
#: thread compares at once with each staged point (1 or 2).
LOOKUP = True
JPAIR = 2
#: Most pairs one group may hold: the per-thread uint32 counters of a block cannot overflow.
MAX_GROUP_PAIRS = 2**31


def _launch_shape(threads, i_tile, nbins, p32, p64, use32, weighted, mean=False,
                  lookup=True):
    """(threads, lookup): the largest block size <= threads (a power of two >= 32) whose shared
    memory fits, with the float32 lookup table if any block size fits with it."""
    for look in ((True, False) if lookup and use32 else (False,)):
        th = threads
        while th >= 32:
            if K.shared_bytes(th, i_tile, nbins, p32, p64, use32, weighted, mean,
                              look) <= SHARED_LIMIT:
                return th, look
            th //= 2
    raise ValueError(f"{nbins} bins{' with weights' if weighted else ''} need more shared "
                     "memory than a block has on the cuda backend; use fewer bins or "
                     "backend='cpu'")


# launches through sphgpu._fast_launch: little host time, kernels from sphgpu's disk cache in
# a new process, and no Numba under-utilisation warning (small catalogs and counts make small
# grids, which is expected here and not the user's concern)
_launch = _fast_launch.launch_default


POINT_THREADS = 32 if SIMULATOR else 256


def _inputs(*arrays):
    """Kernel inputs: CuPy arrays as they are; under the simulator (NumPy arrays), device
    copies, since a launch copies NumPy arguments back and the Catalog's are read-only."""
    return [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in arrays]


class DevicePreparer(Preparer):
    """Catalog preparation on the GPU: the passes of :class:`grid.Preparer` as CUDA kernels
    on CuPy arrays (NumPy under the simulator), sorted by sphgpu's radix sort on the device."""

    name = "device"
    sort_backend = "cuda"

    @property
    def xp(self):
        return array_module()

    def keys(self, ra, dec, labels, nbands, nreg):
        xp = self.xp
        n = ra.shape[0]
        lab = (xp.asarray(labels) if (labels is not None and nreg > 1)
               else xp.zeros(0, np.int64))
        keys = xp.empty(n, np.uint64)
        _launch(K.cell_keys, -(-n // POINT_THREADS), POINT_THREADS,
                *_inputs(ra, dec, lab), nbands, nreg, keys)
        return keys

    def points(self, ra, dec, weights, perm):
        xp = self.xp
        n = ra.shape[0]
        xyz, xyz32 = xp.empty((3, n)), xp.empty((3, n), np.float32)
        w = xp.asarray(weights) if weights is not None else xp.zeros(0)
        ws = xp.empty(n if weights is not None else 0)
        _launch(K.sorted_points, -(-n // POINT_THREADS), POINT_THREADS,
                *_inputs(ra, dec, w, perm), xyz, xyz32, ws)
        return xyz, xyz32, (ws if weights is not None else None)


DEVICE = DevicePreparer()


def count_pairs(cat1, cat2, bins, *, n_regions=0, weighted=False, precision=DEFAULT_PRECISION,
                mean_theta=False, max_device_bytes=None, threads=THREADS, i_tile=I_TILE,
                j_max=J_MAX, groups=GROUPS, profile=None):
    """Pair counts of ``cat1`` x ``cat2`` (None: unique pairs of ``cat1``) on the GPU.

    ``profile``, a dict, receives the seconds spent in each step (prepare: the catalogs on the
    device, nothing for Catalogs prepared before; plan; upload; kernel; download; the device
    is synchronised between them) and the launch shape.
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
    mean = bool(mean_theta)
    th, lookup = _launch_shape(threads, i_tile, nb, T.size, E.size, use32, weighted, mean,
                               LOOKUP)
    h = band_height(bins.theta_max_rad)
    for c in (cat1, cat2):               # (cached on the Catalog: then build_plan finds them)
        if c is not None:
            sorted_catalog(c, h, n_regions, DEVICE)
    clock.lap("prepare")
    plan = build_plan(cat1, cat2, bins, n_regions=n_regions, i_tile=i_tile, j_max=j_max,
                      groups=groups, prep=DEVICE)
    clock.lap("plan")
    work = int(np.sum((plan.items[:, 1] - plan.items[:, 0])
                      * (plan.items[:, 3] - plan.items[:, 2]))) if plan.items.size else 0
    if work > MAX_GROUP_PAIRS * (plan.group_start.size - 1):
        plan = build_plan(cat1, cat2, bins, n_regions=n_regions, i_tile=i_tile, j_max=j_max,
                          groups=math.ceil(2 * work / MAX_GROUP_PAIRS), prep=DEVICE)
    budget.check(plan, nb, n_regions, weighted, mean, max_device_bytes)
    s1, s2 = plan.s1, plan.s2
    ngroups = plan.group_start.size - 1
    if plan.items.shape[0] == 0:
        return RawCounts.zeros(nb, n_regions, weighted, mean)
    w1 = unit_weights(s1) if weighted else None
    w2 = unit_weights(s2) if weighted else None
    nreg = max(n_regions, 1)
    # CuPy arrays (its memory pool): Numba's cuda.to_device allocates with cuMemAlloc and
    # copies synchronously, about 0.3 ms an array, which was a tenth of a survey DR call
    xp = array_module()
    cnt = xp.zeros(nb, np.int64)
    wsum = xp.zeros(nb if weighted else 1)
    rsize = nreg * nreg * nb
    rc = xp.zeros(rsize if n_regions else 1, np.int64)
    rw = xp.zeros(rsize if (n_regions and weighted) else 1)
    nref = xp.zeros(1, np.int64)
    one = xp.zeros(1)
    # without mean separations the kernel never touches these: no allocation for them
    tsum, lsum = (xp.zeros(nb), xp.zeros(nb)) if mean else (one, one)
    kernel = K.pair_kernel(th, int(i_tile), nb, T.size, E.size, use32, bool(weighted),
                           n_regions > 0, plan.auto, mean, lookup, JPAIR)
    items = xp.asarray(plan.items.astype(np.int32))
    gstart = xp.asarray(plan.group_start.astype(np.int32))
    L, b0, shift = exact.float32_lookup(T, gap)
    tables = xp.asarray(T), xp.asarray(gap), xp.asarray(E), xp.asarray(L)
    clock.lap("upload")
    _launch(kernel, ngroups, th, items, gstart, s1.xyz32, s2.xyz32, s1.xyz, s2.xyz, *tables,
            np.int32(b0), np.int32(shift), exact.float32_cutoff(T, gap), np.float64(E[nb]),
            w1 if weighted else one, w2 if weighted else one,
            cnt, wsum, rc, rw, nref, np.int32(nreg), tsum, lsum)
    clock.lap("kernel")
    out = RawCounts(
        counts=to_host(cnt), weights=to_host(wsum) if weighted else None,
        patch_counts=to_host(rc).reshape(nreg, nreg, nb) if n_regions else None,
        patch_weights=to_host(rw).reshape(nreg, nreg, nb) if (n_regions and weighted)
        else None,
        theta_sum=to_host(tsum) if mean else None,
        log_theta_sum=to_host(lsum) if mean else None,
        refined=int(to_host(nref)[0]), pairs_compared=plan.pairs_compared)
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
