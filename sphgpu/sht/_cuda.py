"""The "cuda" backend of the SHT (:class:`sphgpu.backends.SHTBackend`): host side of the Numba CUDA kernels and cuFFT (through CuPy).

alm2map = Legendre step (:func:`_cuda_kernels.alm2leg_kernel`, Delta_m(theta) for every ring and
m) + ring step (fold the m modes of each ring onto its n pixels, Bluestein FFT of length M for
every ring class, unchirp into the map). On grids with many more rings than the band limit needs
(HEALPix from lmax 3072), the Legendre step runs on Fejer rings and is resampled to the grid's
rings (:mod:`sphgpu.sht.theta_resample`, kernels :mod:`sphgpu.sht._resample_kernels`).
map2alm's single pass is the exact adjoint. Everything
stays on the device: NumPy in gives NumPy out (one copy each way); CuPy or Numba device arrays in
give device arrays out with no host copy.

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, used by CI) the same code runs with
NumPy arrays and NumPy FFTs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading

import numpy as np

from .. import _fast_launch, _tuning
from .._cuda_launch import quiet
from .._device import SIMULATOR, device_constant, free_device_bytes, to_device, to_host
from .._device import array_module as _xp
from ..alm import AlmLayout
from . import _cuda_kernels as K
from . import _resample_kernels as RK
from . import legendre, theta_resample
from . import spin as spin_mod

__all__ = ["synthesis", "analysis", "synthesis_spin", "analysis_spin", "to_device", "to_host", "plan",
           "prepare", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = True
#: maps sharing one Legendre recurrence in alm2leg, for lmax >= LARGE_LMAX and below: 4 was the
#: fastest at nside 2048 and 2 at nside 1024, where 4 slowed a batch (and the Monte Carlo) down
#: (benchmarks/probes/profile_batch.py; docs/notes/2026-11-27-legendre-kernels.rst)
MAPS_PER_LAUNCH = 4
MAPS_PER_LAUNCH_BELOW = 2
LARGE_LMAX = 4096
# short rings share one FFT class: fewer launches for little padding (tiny in the simulator,
# which runs one Python thread per CUDA thread)
MIN_FFT_LENGTH = 16 if SIMULATOR else 1024
MIN_PLAIN_RINGS = 3 if SIMULATOR else 64   # rings of one length that get a plain FFT


_const = device_constant
# launches with little host time: the dispatcher took about 90 us a launch, and a ring step
# makes about 40
_go = _fast_launch.launch_default


#: the most maps one ring-pass launch takes: they are its grid's third dimension
MAX_RING_MAPS = 65535


def _ring_grid(cols, rows, nmaps):
    """(grid, block) of a ring pass over ``cols`` columns of ``rows`` rows of ``nmaps`` maps."""
    return (math.ceil(cols / K.RING_THREADS), rows, nmaps), K.RING_THREADS


#: Bluestein lengths from here up may also be 3 * 2**a (below, fewer classes launch less)
SMOOTH_MIN_LENGTH = 6144


def _pair_rings(rings, nphi):
    """Rows of a Bluestein class: (ring_a, ring_b) int64 arrays, two rings of one length to a
    row (ring_b = -1 where a length is left over), ordered by length."""
    order = np.lexsort((rings, nphi[rings]))
    a, b = [], []
    i = 0
    while i < order.size:
        r = rings[order[i]]
        pair = i + 1 < order.size and nphi[rings[order[i + 1]]] == nphi[r]
        a.append(r)
        b.append(rings[order[i + 1]] if pair else -1)
        i += 2 if pair else 1
    return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)


def _bluestein_length(nphi):
    """The FFT length of each ring's Bluestein convolution: the smallest 2**a (or, from
    SMOOTH_MIN_LENGTH, 3 * 2**a) that is >= 2n - 1 and >= MIN_FFT_LENGTH. cuFFT is as quick on
    3 * 2**a as on powers of two, and the extra lengths cut the padding of the long rings
    (measured: docs/performance.rst)."""
    need = np.maximum(2 * np.asarray(nphi, dtype=np.int64) - 1, MIN_FFT_LENGTH)
    p2 = 1 << np.ceil(np.log2(need)).astype(np.int64)
    p3 = 3 << np.maximum(np.ceil(np.log2(need / 3.0)), 0).astype(np.int64)
    return np.where(p3 >= SMOOTH_MIN_LENGTH, np.minimum(p2, p3), p2)


class _Plan:
    """Everything about one (geometry, lmax, mmax) that does not depend on the data: ring pairs
    and their cos/sin, mu_m, alm offsets, and the ring classes of the FFT step with the
    Fourier-transformed Bluestein chirps. Built once, reused by every transform."""

    def __init__(self, geometry, lmax, mmax):
        xp = _xp()
        self.geometry = geometry
        self.is_resampling_source = False   # the Fejer plan of a _Resampler never resamples
        self.lmax, self.mmax = lmax, mmax
        self.launch = {}               # kernel name -> launch shape, chosen at first use (_launch)
        self.nrings, self.npix = geometry.nrings, geometry.npix
        north, south = geometry.ring_pairs()
        theta = geometry.theta[north]
        self.x = _const(np.cos(theta))
        self.sin = _const(np.sin(theta))
        self.north = _const(north)
        self.south = _const(south)
        self.npairs = int(north.shape[0])
        self.mu = _const(legendre.mu_table(mmax))
        self.mvals = _const(np.arange(mmax + 1, dtype=np.int64))
        self.unit_scale = _const(np.ones((1, self.nrings)))    # ring kernels' scale, scalar
        layout = AlmLayout(lmax, mmax)
        self.nalm = layout.size
        self.mstart = _const(layout.mstart())
        # Ring classes. Lengths shared by many rings get a plain FFT of that length; the other
        # rings are grouped by their Bluestein length M >= 2n - 1 (_bluestein_length), two
        # rings of one length to a row (_pair_rings).
        self.phi0 = _const(geometry.phi0)
        # e^{i n phi0} of each ring: the phase step between the orders that fold onto one mode
        zeta = np.exp(1j * geometry.nphi * geometry.phi0)
        self.zeta = _const(zeta)
        self.ringstart = _const(geometry.ringstart)
        self.weight = _const(geometry.weight)
        self.unit = _const(np.ones(geometry.nrings))
        lengths, counts = np.unique(geometry.nphi, return_counts=True)
        plain = set(lengths[counts >= MIN_PLAIN_RINGS].tolist())
        M_of_ring = _bluestein_length(geometry.nphi)
        key = np.where(np.isin(geometry.nphi, list(plain)), -geometry.nphi, M_of_ring)
        self.classes = []
        for k in np.unique(key):
            rings = np.flatnonzero(key == k)
            if k < 0:
                n, start = int(-k), geometry.ringstart[rings]
                # rings one after another in the map (HEALPix's equatorial belt, every ring of
                # the iso-latitude grids): their FFTs read and write the map in place
                block = bool(np.all(start == start[0] + n * np.arange(rings.size)))
                c = dict(M=n, nr=int(rings.size), n=n, chirped=0,
                         start=int(start[0]) if block else None,
                         rings=_const(rings), nphi=_const(geometry.nphi[rings]),
                         phi0=_const(geometry.phi0[rings]), zeta=_const(zeta[rings]),
                         ringstart=_const(start),
                         weight=_const(geometry.weight[rings]), unit=_const(np.ones(rings.size)))
            else:
                a, b = _pair_rings(rings, geometry.nphi)
                nphi = geometry.nphi[a]
                c = dict(M=int(k), nr=int(a.size), nmax=int(nphi.max()), chirped=1,
                         ring_a=_const(a), ring_b=_const(b), nphi=_const(nphi))
                chirp = xp.empty((c["nr"], c["M"]), dtype=np.complex128)
                _go(K.chirp_kernel, *_ring_grid(c["M"], c["nr"], 1), c["nphi"], chirp)
                c["chirp_f"] = xp.fft.fft(chirp, axis=1)
            self.classes.append(c)

    @functools.cached_property
    def _coefficients(self):
        # the CPU twin's tables, bit for bit, built on the device once per plan and only when
        # a Legendre step runs (ring-step stages of sphgpu.distributed never need them); ring
        # pairs come sorted from the pole: for each m, where the non-negligible ones start
        lmax, mmax = self.lmax, self.mmax
        xp = _xp()
        alpha, scale = xp.empty(self.nalm), xp.empty(self.nalm)
        _go(K.coefficient_tables_kernel, math.ceil((mmax + 1) / 64), 64, lmax, self.mstart,
            alpha, scale)
        first = _const(np.full(mmax + 1, self.npairs, dtype=np.int64))
        _go(K.first_alive_kernel, (math.ceil(self.npairs / 128), mmax + 1), 128,
            lmax, self.mstart, alpha, self.mu, self.x, self.sin, first)
        return alpha, scale, first

    alpha = property(lambda self: self._coefficients[0], doc="alpha_l table, (nalm,) float64")
    scale = property(lambda self: self._coefficients[1], doc="s_l table, (nalm,) float64")
    first = property(lambda self: self._coefficients[2],
                     doc="first non-negligible ring pair of each m, (mmax+1,) int64")

    def bytes_per_map(self):
        """Device bytes one map needs beyond its input and output (leg + the largest FFT class);
        the plan itself holds two float64 coefficient tables of the alm length."""
        leg = 16 * self.nrings * (self.mmax + 1)
        fft = max((3 if c["chirped"] else 2) * 16 * c["nr"] * c["M"] for c in self.classes)
        rs = _resampler(self)
        return leg + fft + (rs.bytes_per_map() if rs is not None else 0)

    @functools.cached_property
    def resampler(self):
        """The :class:`_Resampler` from Fejer rings to this plan's rings (built when first
        used), or None where the plan cannot resample: the Fejer plan of a resampler itself, or
        rings not sorted by theta or too dense for the transpose's tiles."""
        if self.is_resampling_source:
            return None
        try:
            return _Resampler(self.geometry, self.lmax, self.mmax)
        except ValueError:
            return None

    @functools.cached_property
    def resamples_by_default(self):
        """Whether resampling pays here (:func:`theta_resample.worth_it`)."""
        return theta_resample.worth_it(self.geometry, self.lmax)


#: in a spin transform, the rings with sin(theta) below this take the Legendre step on their own
#: rings rather than through the theta resampling: the resampling's error is a fraction of the
#: largest value, which lies near the poles for low orders, and the spin factor sin^-s of the
#: rings there multiplies it (about 1e5 at the first pair of an nside 2048 grid for s = 2).
#: At 0.05 the rings left to the resampling magnify its error at most 400 times, and 125 ring
#: pairs of an nside 2048 grid take their own step; limits from 0.02 to 0.1 gave the polarized
#: transforms the same error against ducc0, about 5e-13 relative L2 against 2e-12 to 4e-12
#: with none (benchmarks/results/polar_rings_h200.json)
POLAR_SIN = 0.05


class _Polar:
    """The rings of a resampled grid that take their own Legendre step in a spin transform
    (:data:`POLAR_SIN`): their plan, their numbers in the grid (``rows``, on the device) and the
    transpose's tap weights with those rings' entries zero."""

    def __init__(self, rs, rows):
        self.plan = plan(rs.geometry.packed(rows), rs.plan.lmax, rs.plan.mmax)
        self.rows = _const(rows)
        self.tap_weight = _const(np.where(np.isin(rs.tap_ring, rows), 0.0, rs.tap_weight_host))


class _Resampler:
    """A theta resampling on the device (:mod:`sphgpu.sht.theta_resample`): its tables and the
    plan of the Fejer rings that the Legendre steps run on instead of the grid's rings."""

    def __init__(self, geometry, lmax, mmax):
        rp = theta_resample.resample_plan(geometry, lmax)
        self.rp = rp
        self.geometry = geometry
        self._polar = {}
        self.plan = plan(rp.fejer, lmax, mmax)
        self.plan.is_resampling_source = True
        self.pairs = (mmax + 2) // 2
        # the grid's N points as S phases of M (_resample_kernels); mode k's factor in phase s
        # is the spectral factor times e^(2 pi i k s / N), the s-th power of the second row
        self.phases = _grid_phases(rp.N)
        k = np.arange(-rp.lmax, rp.lmax + 1)
        self.grid_factor = _const(np.stack([rp.spectral, np.exp(2j * np.pi * (k % rp.N) / rp.N)]))
        self.first = _const(rp.first)
        self.weights = _const(rp.weights)
        if rp.width != RK.WIDTH:
            raise RuntimeError(f"the kernels are compiled for windows of {RK.WIDTH} points")
        ranges = theta_resample.spread_ranges(rp)
        self.interp_tiles = _const(_interp_tiles(rp.first, rp.width))
        tiles, ring0 = _spread_tiles(*ranges[1:3], *ranges[4:6])
        self.spread_tiles, self.spread_ring0 = _const(tiles), _const(ring0)
        # the host copies of the taps' rings and weights make the _Polar variants
        tap_row, self.tap_ring, self.tap_weight_host = _spread_taps(rp, ranges, tiles, ring0)
        self.tap_row, self.tap_weight = _const(tap_row), _const(self.tap_weight_host)

    def polar(self, limit):
        """The :class:`_Polar` rings with sin(theta) < ``limit`` (built once per limit), or None
        where there are none."""
        if limit not in self._polar:
            rows = np.flatnonzero(np.sin(self.geometry.theta) < limit)
            self._polar[limit] = _Polar(self, rows) if rows.size else None
        return self._polar[limit]

    def bytes_per_map(self):
        """Device bytes of one map's Fejer rings and of the circle and grid it goes through."""
        return 16 * (self.rp.n * (self.plan.mmax + 1) + self.pairs * (2 * self.rp.n + self.rp.N))


#: the longest rows of the oversampled grid's FFTs: a grid of N points goes as S rows (phases) of
#: M = N / S <= GRID_ROW points, S as small as that allows: cuFFT transforms rows of this
#: length in one pass, and longer rows took longer for the same grid
#: (benchmarks/results/fft_lengths_h200.txt)
GRID_ROW = 4096


def _grid_phases(N):
    """S: the fewest rows of at most GRID_ROW points that a grid of N points splits into."""
    return next(s for s in range(1, N + 1) if N % s == 0 and N // s <= GRID_ROW)


def _interp_tiles(first, width):
    """Where each tile of target rings starts (and the end), consecutive rings whose windows
    span at most SEGMENT grid points (rings sorted by theta)."""
    starts, r0 = [0], 0
    for r in range(1, first.shape[0]):
        if first[r] + width - first[r0] > RK.SEGMENT or r - r0 >= RK.RING_TILE:
            starts.append(r)
            r0 = r
    return np.asarray(starts + [first.shape[0]], dtype=np.int64)


def _spread_tiles(lo_d, hi_d, lo_m, hi_m):
    """(tiles, ring0): where each tile of grid points starts (and the end), at most SPAN
    consecutive points whose rings (:func:`theta_resample.spread_ranges`) lie within
    SPREAD_RINGS consecutive rings from ring0 of the tile on."""
    big = np.iinfo(np.int64).max
    lo = np.minimum(np.where(hi_d > lo_d, lo_d, big), np.where(hi_m > lo_m, lo_m, big))
    hi = np.maximum(np.where(hi_d > lo_d, hi_d, -1), np.where(hi_m > lo_m, hi_m, -1))
    if np.any(hi - np.where(hi >= 0, lo, 0) > RK.SPREAD_RINGS):
        raise ValueError("a grid point's windows span more rings than a tile holds")
    starts, ring0 = [0], []
    tlo, thi = big, -1
    for g in range(lo.shape[0]):
        if max(thi, hi[g]) - min(tlo, lo[g]) > RK.SPREAD_RINGS or g - starts[-1] >= RK.SPAN:
            starts.append(g)
            ring0.append(tlo if thi >= 0 else 0)
            tlo, thi = big, -1
        if hi[g] >= 0:
            tlo, thi = min(tlo, lo[g]), max(thi, hi[g])
    ring0.append(tlo if thi >= 0 else 0)
    return (np.asarray(starts + [lo.shape[0]], dtype=np.int64),
            np.asarray(ring0, dtype=np.int64))


def _spread_taps(rp, ranges, tiles, ring0):
    """The window entries that land on each grid point, for RK.spread_kernel, in K slots a
    point (the most of any point): (tap_row (N, K) uint32, tap_ring (N, K) int64, tap_weight
    (N, K) float64). An entry of ring r lies at row r - ring0 of its tile's shared values (rows
    of RK._ROW) at theta_r, at row r - ring0 + SPREAD_RINGS at -theta_r; its weight is
    ``rp.weights`` at its window position. Unused slots: ring -1, weight zero. ``ranges``:
    :func:`theta_resample.spread_ranges`; ``tiles``, ``ring0``: :func:`_spread_tiles`."""
    j_d, lo_d, hi_d, j_m, lo_m, hi_m = ranges
    N, first = j_d.shape[0], rp.first
    ring0 = ring0[np.searchsorted(tiles, np.arange(N), side="right") - 1]
    nd, nmir = hi_d - lo_d, hi_m - lo_m
    K = max(int((nd + nmir).max()), 1)
    tap_row = np.zeros((N, K), dtype=np.uint32)
    tap_ring = np.full((N, K), -1, dtype=np.int64)
    tap_weight = np.zeros((N, K), dtype=np.float64)
    for t in range(K):
        for used, ring, j, shift in ((t < nd, lo_d + t, j_d, 0),
                                     ((t >= nd) & (t < nd + nmir), lo_m + t - nd, j_m,
                                      RK.SPREAD_RINGS)):
            g = np.flatnonzero(used)
            r = ring[g]
            tap_row[g, t] = (r - ring0[g] + shift) * RK._ROW
            tap_ring[g, t] = r
            tap_weight[g, t] = rp.weights[r, j[g] - first[r]]
    return tap_row, tap_ring, tap_weight


def _resampler(pl):
    """pl's :class:`_Resampler` where its transforms resample, else None.
    ``SPHGPU_THETA_RESAMPLE``: "auto" (default; :attr:`_Plan.resamples_by_default`), "0" (never)
    or "1" (wherever the plan can, :attr:`_Plan.resampler`: tests use it at small sizes)."""
    mode = os.environ.get("SPHGPU_THETA_RESAMPLE", "auto").strip().lower()
    if mode not in ("auto", "0", "1"):
        raise ValueError(f"SPHGPU_THETA_RESAMPLE must be auto, 0 or 1, got {mode!r}")
    if mode == "0" or (mode == "auto" and not pl.resamples_by_default):
        return None
    return pl.resampler


@functools.lru_cache(maxsize=8)
@quiet()
def plan(geometry, lmax, mmax):
    """The cached :class:`_Plan` of a geometry and band limits (geometries hash by identity)."""
    return _Plan(geometry, lmax, mmax)


def _batches(pl, nmaps, rows=1):
    """Split nmaps into groups that fit in free device memory, or say how much is needed;
    ``rows`` maps travel together (the Q and U, or I, Q and U, of a spin transform). One map
    (or set) goes whole without asking the driver, whose memGetInfo took 0.05 ms of the host's
    time before a 10 ms transform's first launch; where it does not fit,
    :func:`_memory_named` says so in the same words."""
    if SIMULATOR or nmaps == 1:
        return [(0, nmaps)]
    free = free_device_bytes()
    per = int(0.8 * free) // (pl.bytes_per_map() * rows)
    if per < 1:
        raise _memory_error(pl, rows, free)
    return [(i, min(i + per, nmaps)) for i in range(0, nmaps, per)]


def _memory_error(pl, rows, free):
    need = pl.bytes_per_map() * rows
    return MemoryError(f"this transform needs about {need / 2**30:.2f} GiB of GPU memory per map "
                       f"for lmax={pl.lmax}, npix={pl.npix}, but {free / 2**30:.2f} GiB is free")


@contextlib.contextmanager
def _memory_named(pl, rows=1):
    """CuPy's OutOfMemoryError (a MemoryError) inside, as :func:`_batches`'s MemoryError."""
    try:
        yield
    except MemoryError as e:
        if type(e) is MemoryError:
            raise
        raise _memory_error(pl, rows, free_device_bytes()) from e


#: default launch parameters (threads per block, ring pairs per thread) of the Legendre kernels,
#: used below AUTOTUNE_MIN_LMAX, in the simulator, and where the autotuner is switched off
LAUNCH = {"alm2leg": (K.ALM2LEG_THREADS, K.ALM2LEG_PAIRS),
          "leg2alm": (K.LEG2ALM_THREADS, K.LEG2ALM_PAIRS)}
#: what the autotuner tries: (threads, pairs), and for leg2alm optionally its chunk length
#: (default: the longest whose sums fit in 48 KiB of shared memory). Few candidates, because
#: each is a kernel compiled on the first call in a new process (the disk cache serves later
#: processes): the shapes near the best in the launch-shape sweeps, and leg2alm's chunk of 12,
#: which lets 8 blocks share a multiprocessor instead of 6 (faster at nside 2048, not at 1024);
#: that chunk again with each m over 2 blocks (the fifth entry; 255 registers, the most a thread
#: may have, is no limit), the fastest for 2 maps a launch. alm2leg's (64, 4) is for the Fejer
#: ring pairs of lmax 4096 (theta resampling), where it was the fastest
#: (benchmarks/results/fejer_launch_shapes_h200.json; benchmarks/probes/profile_leg2alm.py).
CANDIDATES = {"alm2leg": [(128, 4), (64, 8), (128, 8), (64, 4)],
              "leg2alm": [(32, 8), (64, 8), (32, 8, 12), (32, 8, 12, 255, 2)]}
#: what the autotuner tries instead for launches of one map: leg2alm with a register limit of
#: 168 (after the chunk of 16), at which 12 warps fit on a multiprocessor instead of 8; it was
#: faster than every unlimited shape at nside 512-2048, and at 2 maps a launch the same limit
#: spills. The fifth entry splits each m over 4 or 2 blocks: with one block per m, the blocks
#: of the smallest m (the most work) ran on after the rest (64 threads a block, or 6 or more
#: blocks per m, were slower). Measured with benchmarks/probes/profile_leg2alm.py; see
#: docs/notes/2026-11-27-legendre-kernels.rst
ONE_MAP_CANDIDATES = {"leg2alm": [(32, 8, 16, 168, 4), (32, 8, 16, 168, 2)]}
#: maps of one tensor-core alm2leg launch (:func:`_cuda_kernels.alm2leg_mma_kernel`), largest
#: first: a batch goes in groups of these, each group by whichever of CANDIDATES and
#: MMA_CANDIDATES measured fastest for that many maps (the CANDIDATES shapes then take the
#: group MAPS_PER_LAUNCH maps a launch)
MMA_MAPS = (16, 8, 4)
#: the tensor-core kernels' launch shapes: ("mma", warps a block[, register limit]); leg2alm's
#: takes _cuda_kernels.LEG2ALM_MMA_MAPS maps a launch. leg2alm at 128 registers fits 16 warps
#: on a multiprocessor instead of 8 (the compiler's choice is 254 registers); 8 warps a block at
#: 128 was the fastest shape at nside 1024 and 2048 on both GPU kinds, so it is leg2alm's one
#: tensor-core candidate (a tuning cache that holds the old 4-warp pick is measured again);
#: alm2leg, slower at every limit tried, has none (benchmarks/probes/profile_leg2alm_mma.py)
MMA_CANDIDATES = {"alm2leg": [("mma", 4), ("mma", 8)], "leg2alm": [("mma", 8, 128)]}


def _candidates(name, nmaps):
    """What the autotuner tries for launches of ``nmaps`` maps of kernel ``name``."""
    if nmaps == 1:
        return ONE_MAP_CANDIDATES.get(name, CANDIDATES[name])
    mma = nmaps in MMA_MAPS if name == "alm2leg" else nmaps == K.LEG2ALM_MMA_MAPS
    if mma and _has_m16n8k4():
        return CANDIDATES[name] + MMA_CANDIDATES[name]
    return CANDIDATES[name]


def _has_m16n8k4():
    """Whether the current GPU has the FP64 m16n8k4 tensor-core instruction (sm_90 and later;
    :mod:`sphgpu._dmma`); the simulator's twin stands in for it."""
    if SIMULATOR:
        return True
    import cupy

    return int(cupy.cuda.Device().compute_capability) >= 90


def _kernel(name, nmaps, tpb, rp, *extra):
    """The compiled Legendre kernel ``name`` for a launch shape (tpb, rp, *extra)."""
    if name == "alm2leg":
        return K.alm2leg_kernel(nmaps, tpb, rp, *extra)
    return K.leg2alm_kernel(nmaps, tpb, rp, *extra)


AUTOTUNE_MIN_LMAX = 512


def _launch(pl, name=None, nmaps=1):
    """Launch parameters of the Legendre kernel ``name`` ("alm2leg" or "leg2alm"; None: a dict
    of both) for launches of ``nmaps`` maps on this plan: measured once per device, problem
    size, kernel and maps a launch by trying its candidates (:func:`_candidates`) on the plan
    itself, then kept in the tuning cache (:mod:`sphgpu._tuning`, file sht_launch.json). Each
    kernel is tuned when first needed, so an alm2map compiles no leg2alm variant. Maps a
    launch count because they change the registers and shared memory of a block: leg2alm's
    chunk of 12 (CANDIDATES) paid with 2 maps a launch but not with 1, and its register limit
    of 168 (ONE_MAP_CANDIDATES) with 1 only.
    ``SPHGPU_AUTOTUNE=0`` keeps the defaults."""
    if name is None:
        return {k: _launch(pl, k) for k in CANDIDATES}
    slot = name if nmaps == 1 else f"{name}|maps={nmaps}"
    if slot in pl.launch:
        return pl.launch[slot]
    choice = LAUNCH[name]
    if _tuned(pl):
        key = (f"{_tuning.device_name()}|{name}|nrings={pl.nrings}|npix={pl.npix}"
               f"|lmax={pl.lmax}|mmax={pl.mmax}" + (f"|maps={nmaps}" if nmaps > 1 else ""))
        choice = _tuning.lookup("sht_launch", key, check=_check_launch)
        # a pick that is no longer a candidate (a cache written before CANDIDATES changed) is
        # measured again
        if choice not in _candidates(name, nmaps):
            maps = f", {nmaps} maps a launch" if nmaps > 1 else ""
            _tuning.print_progress(f"tuning the {name} kernel for lmax {pl.lmax} on "
                                   f"{pl.npix} pixels{maps} (once per GPU and size)")
            choice = _measure(pl, name, nmaps, slot)
            _tuning.store("sht_launch", key, list(choice))
    pl.launch[slot] = choice
    return choice


def _check_launch(value):
    """A cached launch choice as a tuple of positive ints (after "mma" for the tensor-core
    kernel), or ValueError."""
    ints = value[1:] if isinstance(value, list) and value[:1] == ["mma"] else value
    if not isinstance(ints, list) or not ints or not all(type(i) is int and i > 0 for i in ints):
        raise ValueError(f"expected a list of positive integers, got {value!r}")
    return tuple(value)


def _measure(pl, name, nmaps=1, slot=None):
    """The fastest of :func:`_candidates` on this plan, launches of ``nmaps`` maps of random
    data."""
    import cupy

    rng = np.random.default_rng(0)
    slot = slot or name
    if name == "alm2leg":
        alm = cupy.asarray(rng.standard_normal((nmaps, pl.nalm))
                           + 1j * rng.standard_normal((nmaps, pl.nalm)))
        run = lambda: _alm2leg(alm, pl, cupy)
    else:
        shape = (nmaps, pl.nrings, pl.mmax + 1)
        leg = cupy.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
        run = lambda: _leg2alm(leg, pl, cupy)
    times = {}
    for cand in _candidates(name, nmaps):
        pl.launch[slot] = cand
        times[cand] = _tuning.seconds(run, 2)
    return min(times, key=times.get)


def _orders(pl, orders):
    """(mvals, astart, nalm) of the kernels: every m with the m-major layout's offsets, or
    ``orders`` itself: a packed subset's (mvals, astart) device arrays and a_lm count
    (:func:`stage_alm2leg`)."""
    if orders is None:
        return pl.mvals, pl.mstart, pl.nalm
    return orders


def _groups(pl, name, nmaps, per, mma_sizes):
    """The groups a batch of ``nmaps`` maps goes in through kernel ``name``: (first map, maps,
    launch shape). Where the autotuner runs, the largest of ``mma_sizes`` that fits (the
    tensor-core kernel's group sizes, which the tuner may also give the plain kernel);
    otherwise ``per`` maps, the rest last. A plain shape takes its group ``per`` maps a launch
    (:func:`_plain_launches`)."""
    i = 0
    while i < nmaps:
        g = next((s for s in mma_sizes if s <= nmaps - i), 0) if _tuned(pl) else 0
        g = g or min(per, nmaps - i)
        yield i, g, _launch(pl, name, g)
        i += g


def _plain_launches(i, g, per):
    """(first, end) of the plain kernel's launches of ``per`` maps over maps i..i+g."""
    return [(a, min(a + per, i + g)) for a in range(i, i + g, per)]


def _legendre_args(pl, mvals, astart):
    """The arguments the Legendre kernels take between their input and output arrays."""
    return (astart, mvals, pl.lmax, pl.alpha, pl.scale, pl.mstart, pl.mu, pl.x, pl.sin,
            pl.north, pl.south, pl.first)


def _alm2leg(alm, pl, xp, orders=None):
    mvals, astart, _ = _orders(pl, orders)
    alm = xp.ascontiguousarray(alm)
    nmaps = alm.shape[0]
    leg = xp.empty((nmaps, pl.nrings, mvals.shape[0]), dtype=np.complex128)
    args = _legendre_args(pl, mvals, astart)
    # maps share one recurrence a few at a time, the last launch taking the rest; below
    # LARGE_LMAX the rows of a polarized batch go three at a time, one launch for 3 rows
    # being faster than 2 + 1 there (docs/performance.rst, Polarization). Where the autotuner runs, groups
    # of MMA_MAPS maps may go to the tensor-core kernel instead.
    if pl.lmax >= LARGE_LMAX:
        per = MAPS_PER_LAUNCH
    else:
        per = 3 if nmaps % 3 == 0 else MAPS_PER_LAUNCH_BELOW
    for i, g, shape in _groups(pl, "alm2leg", nmaps, per, MMA_MAPS):
        if shape[0] == "mma":
            warps = shape[1]
            grid = (math.ceil(pl.npairs / (32 * warps)), mvals.shape[0])
            _go(K.alm2leg_mma_kernel(g, warps), grid, 32 * warps, alm[i:i + g], *args,
                leg[i:i + g])
        else:
            tpb, rp, *regs = shape
            grid = (math.ceil(pl.npairs / (tpb * rp)), mvals.shape[0])
            for a, b in _plain_launches(i, g, per):
                _go(_kernel("alm2leg", b - a, tpb, rp, *regs), grid, tpb, alm[a:b], *args,
                    leg[a:b])
    return leg


def _fft_rows(a, forward, xp):
    """In place, the FFT along the last axis of ``a`` (k, P, length) complex128, C-contiguous:
    forward (e^-) or unnormalised inverse (e^+); on the GPU one cuFFT plan of this thread and
    device per length and row count."""
    if xp is np:
        a[...] = np.fft.fft(a, axis=2) if forward else np.fft.ifft(a, axis=2, norm="forward")
        return
    from cupy.cuda import cufft

    k, rows, n = a.shape
    p = _fft_plan(n, cufft.CUFFT_Z2Z, rows)
    for i in range(k):
        p.fft(a[i], a[i], cufft.CUFFT_FORWARD if forward else cufft.CUFFT_INVERSE)


def _tiles_grid(pairs, tiles, nmaps=1):
    return (math.ceil(pairs / RK.TILE_PAIRS), tiles, nmaps), RK.THREADS


def _resample(leg_f, rs, xp):
    """Delta_m on the Fejer rings (k, n, nm) -> on the plan's rings (k, nrings, nm), one map at
    a time (the oversampled grid of one map is about 4 (lmax+1)^2 complex values)."""
    k, n, nm = leg_f.shape
    P, S = rs.pairs, rs.phases
    M = rs.rp.N // S
    out = xp.empty((k, rs.rp.nrings, nm), dtype=np.complex128)
    h = xp.empty((1, P, 2 * n), dtype=np.complex128)
    u = xp.empty((1, P, S, M), dtype=np.complex128)
    for i in range(k):
        _go(RK.pair_kernel, *_tiles_grid(P, math.ceil(n / RK.RING_TILE)), leg_f[i:i + 1], h)
        _fft_rows(h, True, xp)
        _go(RK.to_grid_kernel(S), (math.ceil(M / RK.THREADS), P, 1), RK.THREADS, h,
            rs.grid_factor, u)
        _fft_rows(u.reshape(1, P * S, M), False, xp)
        _go(RK.interp_kernel(S), *_tiles_grid(P, rs.interp_tiles.shape[0] - 1), u, rs.first,
            rs.weights, rs.interp_tiles, out[i:i + 1])
    return out


def _resample_adjoint(leg, rs, xp, tap_weights=None):
    """The transpose of :func:`_resample`: (k, nrings, nm) -> (k, n, nm); ``tap_weights``, one
    table a map, in place of the resampler's (:class:`_Polar`: some rings left out)."""
    k, _, nm = leg.shape
    n, P, S = rs.rp.n, rs.pairs, rs.phases
    M = rs.rp.N // S
    out = xp.empty((k, n, nm), dtype=np.complex128)
    h = xp.empty((1, P, 2 * n), dtype=np.complex128)
    u = xp.empty((1, P, S, M), dtype=np.complex128)
    for i in range(k):
        _go(RK.spread_kernel(S, rs.tap_row.shape[1]),
            *_tiles_grid(P, rs.spread_tiles.shape[0] - 1), leg[i:i + 1], rs.tap_row,
            rs.tap_weight if tap_weights is None else tap_weights[i], rs.spread_tiles,
            rs.spread_ring0, u)
        _fft_rows(u.reshape(1, P * S, M), True, xp)
        _go(RK.from_grid_kernel(S), (math.ceil(2 * n / RK.THREADS), P, 1), RK.THREADS, u,
            rs.grid_factor, h)
        _fft_rows(h, False, xp)
        _go(RK.unpair_kernel, *_tiles_grid(P, math.ceil(n / RK.RING_TILE)), h, out[i:i + 1])
    return out


def _synthesis_legendre(alm, pl, xp, rows=0):
    """The Legendre step of a whole transform: on the plan's rings, or on Fejer rings and
    resampled to them (:func:`_resampler`). In a spin transform, ``rows`` a set (2: the Q and U
    sets; 3: T, Q, U), the spin rows take the rings nearest the poles (:data:`POLAR_SIN`) on
    their own rings; a T row needs no such step (the sin^-s factor that amplifies the
    resampling's error there is the spin rows')."""
    rs = _resampler(pl)
    if rs is None:
        return _alm2leg(alm, pl, xp)
    leg = _resample(_alm2leg(alm, rs.plan, xp), rs, xp)
    polar = rs.polar(POLAR_SIN) if rows else None
    if polar is not None:
        k = alm.shape[0] // rows
        spin = slice(rows - 2, rows)
        part = _alm2leg(alm.reshape(k, rows, -1)[:, spin].reshape(2 * k, -1), polar.plan, xp)
        leg.reshape(k, rows, *leg.shape[1:])[:, spin, polar.rows] = part.reshape(
            k, 2, *part.shape[1:])
    return leg


def _analysis_legendre(leg, pl, xp, rows=0):
    """The adjoint Legendre step of a whole transform (see :func:`_synthesis_legendre`): in a
    spin transform, the spin rows' polar rings by their own step, the rest through the
    resampling."""
    rs = _resampler(pl)
    if rs is None:
        return _leg2alm(leg, pl, xp)
    leg = xp.ascontiguousarray(leg)
    polar = rs.polar(POLAR_SIN) if rows else None
    if polar is None:
        return _leg2alm(_resample_adjoint(leg, rs, xp), rs.plan, xp)
    k = leg.shape[0] // rows
    spin = slice(rows - 2, rows)
    weights = [polar.tap_weight if i % rows >= rows - 2 else rs.tap_weight
               for i in range(leg.shape[0])]
    out = _leg2alm(_resample_adjoint(leg, rs, xp, weights), rs.plan, xp)
    part = leg.reshape(k, rows, *leg.shape[1:])[:, spin, polar.rows]
    part = _leg2alm(xp.ascontiguousarray(part.reshape(2 * k, *part.shape[2:])), polar.plan, xp)
    out.reshape(k, rows, -1)[:, spin] += part.reshape(k, 2, -1)
    return out


def _tuned(pl):
    """Whether launches on this plan are chosen by measurement (:func:`_launch`)."""
    return not (SIMULATOR or pl.lmax < AUTOTUNE_MIN_LMAX or not _tuning.enabled())


def _leg2alm(leg, pl, xp, orders=None):
    mvals, astart, nalm = _orders(pl, orders)
    leg = xp.ascontiguousarray(leg)
    nmaps = leg.shape[0]
    out = xp.zeros((nmaps, 2 * nalm), dtype=np.float64)
    nm = mvals.shape[0]
    args = _legendre_args(pl, mvals, astart)
    # LEG2ALM_MAX_MAPS maps a launch; where the autotuner runs, groups of LEG2ALM_MMA_MAPS
    # may go to the tensor-core kernel instead
    per = K.LEG2ALM_MAX_MAPS
    for i, g, shape in _groups(pl, "leg2alm", nmaps, per, (K.LEG2ALM_MMA_MAPS,)):
        if shape[0] == "mma":
            _go(K.leg2alm_mma_kernel(*shape[1:]), (1, nm), 32 * shape[1], leg[i:i + g], *args,
                out[i:i + g])
        else:
            # (threads, pairs[, chunk[, register limit[, blocks per m]]])
            tpb, rp, *extra = shape
            grid = (extra[2] if len(extra) > 2 else 1, nm)
            for a, b in _plain_launches(i, g, per):
                _go(_kernel("leg2alm", b - a, tpb, rp, *extra), grid, tpb, leg[a:b], *args,
                    out[a:b])
    return out.view(np.complex128)


def _map_chunks(nmaps, scale):
    """Slices of at most MAX_RING_MAPS maps (whole periods of the ``scale`` rows)."""
    per = MAX_RING_MAPS - MAX_RING_MAPS % scale.shape[0]
    return [slice(i, min(i + per, nmaps)) for i in range(0, nmaps, per)]


def _leg2map(leg, pl, xp, scale=None):
    """Ring step of a synthesis; ``scale`` (rows, nrings): spin.scale_rows fused into the fold."""
    scale = pl.unit_scale if scale is None else xp.ascontiguousarray(scale)
    leg = xp.ascontiguousarray(leg)
    nmaps = leg.shape[0]
    if nmaps > MAX_RING_MAPS:
        return xp.concatenate([_leg2map(leg[s], pl, xp, scale)
                               for s in _map_chunks(nmaps, scale)])
    maps = xp.empty((nmaps, pl.npix), dtype=np.float64)
    for c in pl.classes:
        nr = c["nr"]
        if c["chirped"]:
            a = xp.empty((nmaps * nr, c["M"]), dtype=np.complex128)
            _go(K.fold_pair_kernel, *_ring_grid(c["M"], nr, nmaps), leg, c["ring_a"],
                c["ring_b"], c["nphi"], pl.phi0, pl.zeta, scale, a)
            conv = _convolve(a, c, nmaps, xp)
            _go(K.unchirp_pair_kernel, *_ring_grid(c["nmax"], nr, nmaps), conv, c["ring_a"],
                c["ring_b"], c["nphi"], pl.ringstart, maps)
            continue
        # the modes q <= n/2 of the (Hermitian) ring spectra and a complex-to-real FFT: half
        # the work of a complex one
        n = c["n"]
        a = xp.empty((nmaps * nr, n // 2 + 1), dtype=np.complex128)
        _go(K.fold_kernel, *_ring_grid(a.shape[1], nr, nmaps), leg, c["rings"], c["nphi"],
            c["phi0"], c["zeta"], scale, a)
        if c["start"] is None:
            conv = xp.fft.irfft(a, n=n, axis=1, norm="forward")
            _go(K.unchirp_kernel, *_ring_grid(n, nr, nmaps), conv, c["nphi"], c["ringstart"],
                maps)
            continue
        block = maps[:, c["start"]:c["start"] + nr * n]
        for i in range(nmaps):
            _real_fft(c, a[i * nr:(i + 1) * nr], block[i].reshape(nr, n), xp)
    return maps


def _map2leg(maps, pl, xp, quadrature=True, scale=None):
    """Ring step of an analysis; ``scale`` (rows, nrings): spin.scale_rows fused into the
    unfold."""
    scale = pl.unit_scale if scale is None else xp.ascontiguousarray(scale)
    maps = xp.ascontiguousarray(maps)
    nmaps = maps.shape[0]
    if nmaps > MAX_RING_MAPS:
        return xp.concatenate([_map2leg(maps[s], pl, xp, quadrature, scale)
                               for s in _map_chunks(nmaps, scale)])
    leg = xp.empty((nmaps, pl.nrings, pl.mmax + 1), dtype=np.complex128)
    for c in pl.classes:
        nr = c["nr"]
        if c["chirped"]:
            a = xp.empty((nmaps * nr, c["M"]), dtype=np.complex128)
            _go(K.chirp_map_pair_kernel, *_ring_grid(c["M"], nr, nmaps),
                maps, c["ring_a"], c["ring_b"], c["nphi"], pl.ringstart,
                pl.weight if quadrature else pl.unit, a)
            conv = _convolve(a, c, nmaps, xp)
            _go(K.unfold_pair_kernel, *_ring_grid(pl.mmax + 1, nr, nmaps),
                conv, c["ring_a"], c["ring_b"], c["nphi"], pl.phi0, scale, leg)
            continue
        # a real-to-complex FFT of the real ring values (half the work of a complex one), the
        # quadrature weights applied to its modes in the unfold
        n = c["n"]
        if c["start"] is None:
            a = xp.empty((nmaps * nr, n), dtype=np.float64)
            _go(K.gather_rings_kernel, *_ring_grid(n, nr, nmaps), maps, c["ringstart"], a)
            conv = xp.fft.rfft(a, axis=1)
        else:
            conv = xp.empty((nmaps * nr, n // 2 + 1), dtype=np.complex128)
            block = maps[:, c["start"]:c["start"] + nr * n]
            for i in range(nmaps):
                _real_fft(c, block[i].reshape(nr, n), conv[i * nr:(i + 1) * nr], xp)
        _go(K.unfold_kernel, *_ring_grid(pl.mmax + 1, nr, nmaps), conv, c["rings"], c["nphi"],
            c["phi0"], c["weight"] if quadrature else c["unit"], scale, leg)
    return leg


#: the cuFFT plans of _real_fft, per thread: a plan holds one stream and one work area, so two
#: threads running one plan at once could run on each other's stream (as CuPy keeps its own
#: plan cache per thread)
_plans = threading.local()


def _real_fft(c, src, dst, xp):
    """The real FFTs of a plain class's nr rings of n, from ``src`` into ``dst`` (both C
    contiguous): float64 (nr, n) -> complex128 (nr, n//2 + 1) forward, or back (unnormalised,
    ``src`` overwritten), through a cuFFT plan of this thread and device, so that a ring block of
    the map is read or written where it lies."""
    forward = src.dtype == np.float64
    if xp is np:
        dst[...] = (np.fft.rfft(src, axis=1) if forward
                    else np.fft.irfft(src, n=c["n"], axis=1, norm="forward"))
        return
    from cupy.cuda import cufft

    plan = _fft_plan(c["n"], cufft.CUFFT_D2Z if forward else cufft.CUFFT_Z2D, c["nr"])
    plan.fft(src, dst, cufft.CUFFT_FORWARD if forward else cufft.CUFFT_INVERSE)


def _fft_plan(n, kind, rows):
    """The cuFFT plan of ``rows`` transforms of length ``n`` and type ``kind`` (cufft.CUFFT_*)
    of this thread and device (:data:`_plans`)."""
    import cupy
    from cupy.cuda import cufft

    cache = _plans.__dict__.setdefault("by_shape", {})
    key = (n, kind, rows, cupy.cuda.Device().id)
    plan = cache.get(key)
    if plan is None:
        plan = cache[key] = cufft.Plan1d(n, kind, rows)
    return plan


def _convolve(a, c, nmaps, xp):
    """sum_q a_q e^{2 pi i j q / n} for each row of a Bluestein class: the circular
    convolution with the ring's chirp (cuFFT on the GPU). The chirp's spectrum carries the
    1/M of the inverse FFT, which therefore needs no pass of its own."""
    f = xp.fft.fft(a, axis=1)
    # the product in place through a view, and the inverse FFT on f itself: CuPy copied a
    # reshaped view before transforming it (a pass as long as the product, seen in Nsight)
    product = f.reshape(nmaps, c["nr"], c["M"])
    product *= c["chirp_f"]
    return xp.fft.ifft(f, axis=1, norm="forward")


def prepare(layout, geometry, spin):
    """The :class:`_Plan` of a transform of ``layout`` on ``geometry`` (spin > 0: of the
    extended band limit lmax + spin that the spin passes run on), for a
    :class:`sphgpu.SHT` to hold and pass back as ``prepared``."""
    return plan(geometry, layout.lmax + spin, layout.mmax)


def _run(data, layout, geometry, steps, pl=None):
    xp = _xp()
    if pl is None:
        pl = plan(geometry, layout.lmax, layout.mmax)
    host = isinstance(data, np.ndarray) and xp is not np
    d = to_device(data)
    outs = []
    with _memory_named(pl):
        for i, j in _batches(pl, d.shape[0]):
            r = d[i:j]
            for step in steps:
                r = step(r, pl, xp)
            outs.append(r)
    out = outs[0] if len(outs) == 1 else xp.concatenate(outs)
    return to_host(out) if host else out


def synthesis(alm, layout, geometry, *, prepared=None):
    """alm (k, nalm) complex128, host or device -> maps (k, npix) float64 of the same kind
    (``prepared``: :func:`prepare` of spin 0, else the cached plan)."""
    return _run(alm, layout, geometry, (_synthesis_legendre, _leg2map), prepared)


def analysis(maps, layout, geometry, *, prepared=None):
    """maps (k, npix) float64 -> sum_pixels weight * map * conj(Y_lm), (k, nalm) complex128."""
    return _run(maps, layout, geometry, (_map2leg, _analysis_legendre), prepared)


def _eth(xp, c, t, j, bar, transpose=False):
    """:func:`spin.eth` as one kernel pass (the NumPy-style passes make ~20 temporaries)."""
    shape = c.shape
    c2 = xp.ascontiguousarray(c.reshape(-1, shape[-1]))
    out = xp.empty_like(c2)
    n = c2.shape[1]
    _go(K.eth_kernel, (math.ceil(n / 256), c2.shape[0]), 256,
        c2, *(xp.ascontiguousarray(a) for a in t[:4]), np.float64(j),
        np.float64(1.0 if bar else -1.0), int(transpose), out)
    return out.reshape(shape)


def _coefficient_sets(alm, spin, layout, xp):
    """:func:`spin.coefficient_sets` (alm (k, r, nalm) -> (k, r, nalm_ext)) in one kernel for
    spin <= K.SPIN_FUSED; the passes one by one above that."""
    if spin > K.SPIN_FUSED:
        return spin_mod.coefficient_sets(alm, spin, layout, xp, _eth)
    t = spin_mod._device_tables(xp, layout, spin)
    alm = xp.ascontiguousarray(alm)
    k, r, _ = alm.shape
    n = t[0].shape[0]
    out = xp.empty((k, r, n), dtype=np.complex128)
    _go(K.spin_sets_kernel, (math.ceil(n / 128), k), 128, alm, t[4], t[0], t[1], t[2], t[3],
        layout.lmax, spin, out)
    return out


def _coefficient_sets_adjoint(g, spin, layout, xp):
    """:func:`spin.coefficient_sets_adjoint` ((k, r, nalm_ext) -> (k, r, nalm)) in one kernel
    for spin <= K.SPIN_FUSED; the passes one by one above that."""
    if spin > K.SPIN_FUSED:
        return spin_mod.coefficient_sets_adjoint(g, spin, layout, xp, _eth)
    t = spin_mod._device_tables(xp, layout, spin)
    g = xp.ascontiguousarray(g)
    k, r, _ = g.shape
    nalm = t[5].shape[0]
    out = xp.empty((k, r, nalm), dtype=np.complex128)
    _go(K.spin_sets_adjoint_kernel, (math.ceil(nalm / 128), k), 128, g, t[5], t[4], t[0],
        t[1], t[2], t[3], spin, out)
    return out


#: orders summed by one block row of :func:`cl_sums_kernel`: enough blocks to fill the GPU at
#: a few sets, each chunk's partial sums one (k, npairs, lmax + 1) slice
CL_CHUNK = 256


def spectra_sums(alm, pairs, lmax, mmax):
    """healpy's alm2cl sums before the 1 / (2l + 1): alm (k, n, nalm) complex128 (device, or
    NumPy under the simulator) in the layout (lmax, mmax), n <= K.CL_FIELDS; pairs: list of
    (i, j) fields. Returns (k, len(pairs), lmax + 1) float64 of the input's kind,
    sum_m w_m Re(a_i,lm conj(a_j,lm)) with w = 1 at m = 0 and 2 above; the same bits run to
    run (partial sums per chunk of orders, then added in a fixed order)."""
    xp = _xp()
    alm = xp.ascontiguousarray(alm)
    k = alm.shape[0]
    chunks = mmax // CL_CHUNK + 1
    pi = _const(np.array([i for i, _ in pairs], dtype=np.int64))
    pj = _const(np.array([j for _, j in pairs], dtype=np.int64))
    part = xp.empty((k, chunks, len(pairs), lmax + 1))
    _go(K.cl_sums_kernel, (math.ceil((lmax + 1) / 128), chunks, k), 128, alm, pi, pj, lmax,
        mmax, CL_CHUNK, part)
    return part.sum(axis=1)


def _run_spin(data, spin, layout, geometry, forward, pl=None):
    """A spin (rows E, B) or polarized (rows T, E, B) transform on the device: the spin
    coefficient passes of :mod:`sphgpu.sht.spin` around this backend's scalar Legendre and ring
    steps, on the plan of the extended band limit lmax + spin (same rings and mmax). Batches of
    k sets are split to fit in device memory as in :func:`_run`."""
    xp = _xp()
    if pl is None:
        pl = plan(geometry, layout.lmax + spin, layout.mmax)
    host = isinstance(data, np.ndarray) and xp is not np
    d = to_device(data)
    rows = d.shape[1]
    if forward:
        def one(a):
            return spin_mod.synthesis(a, spin, layout, geometry,
                                      lambda c, ext: _synthesis_legendre(c, pl, xp, rows),
                                      lambda leg, s: _leg2map(leg, pl, xp, s), xp,
                                      sets=lambda b: _coefficient_sets(b, spin, layout, xp))
    else:
        def one(a):
            return spin_mod.analysis(a, spin, layout, geometry,
                                     lambda m, s: _map2leg(m, pl, xp, scale=s),
                                     lambda leg, ext: _analysis_legendre(leg, pl, xp, rows),
                                     xp,
                                     sets_adjoint=lambda g: _coefficient_sets_adjoint(
                                         g, spin, layout, xp))
    with _memory_named(pl, rows):
        outs = [one(d[i:j]) for i, j in _batches(pl, d.shape[0], rows)]
    out = outs[0] if len(outs) == 1 else xp.concatenate(outs)
    return to_host(out) if host else out


def synthesis_spin(alm, spin, layout, geometry, *, prepared=None):
    """alm (k, 2, nalm) E, B, or (k, 3, nalm) T, E, B -> maps (k, 2 or 3, npix) float64 (Q, U
    or I, Q, U), host or device as the input. One Legendre recurrence serves T, Q and U."""
    return _run_spin(alm, spin, layout, geometry, True, prepared)


def analysis_spin(maps, spin, layout, geometry, *, prepared=None):
    """Adjoint of :func:`synthesis_spin`, quadrature-weighted: (k, 2 or 3, npix) ->
    (k, 2 or 3, nalm) complex128."""
    return _run_spin(maps, spin, layout, geometry, False, prepared)


# ------------------------------------------------------------- stages (sphgpu.sht.stages)
# ``nthreads`` (host threads) is part of every backend's stage signature; the GPU ignores it.
def _stage(data, run):
    """run(device array) with NumPy in -> NumPy out, device in -> device out."""
    xp = _xp()
    out = run(to_device(data), xp)
    return to_host(out) if isinstance(data, np.ndarray) and xp is not np else out


def stage_alm2leg(alm, layout, geometry, mvals, astart, *, nthreads=None):
    """Legendre step for the orders ``mvals`` ((nm,) int64): alm (k, n) complex128 with order
    mvals[c] at ``alm[:, astart[c] + l]`` -> leg (k, nrings, nm) complex128."""
    pl = plan(geometry, layout.lmax, layout.mmax)
    orders = (_const(mvals), _const(astart), alm.shape[1])
    return _stage(alm, lambda a, xp: _alm2leg(a, pl, xp, orders))


def stage_leg2alm(leg, layout, geometry, mvals, astart, nalm, *, nthreads=None):
    """Adjoint of :func:`stage_alm2leg`: leg (k, nrings, nm) -> alm (k, nalm) complex128."""
    pl = plan(geometry, layout.lmax, layout.mmax)
    orders = (_const(mvals), _const(astart), nalm)
    return _stage(leg, lambda a, xp: _leg2alm(a, pl, xp, orders))


def stage_leg2map(leg, geometry, *, nthreads=None):
    """Ring step of a synthesis: leg (k, nrings, mmax+1), column m = order m -> maps (k, npix)."""
    pl = plan(geometry, leg.shape[2] - 1, leg.shape[2] - 1)
    return _stage(leg, lambda a, xp: _leg2map(xp.ascontiguousarray(a), pl, xp))


def stage_map2leg(maps, geometry, mmax, quadrature, *, nthreads=None):
    """Ring step of an analysis: maps (k, npix) -> leg (k, nrings, mmax+1), weighted by the
    rings' quadrature weights when ``quadrature``."""
    pl = plan(geometry, mmax, mmax)
    return _stage(maps, lambda a, xp: _map2leg(xp.ascontiguousarray(a), pl, xp, quadrature))
