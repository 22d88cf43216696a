"""A roofline of the transforms' stages: the FP64 flops and device bytes each stage must spend
(a model of the work, not of how a kernel does it), its measured time, and the rates achieved
against the device's measured ceilings.

A stage's *bound* is the longer of its flops at the FP64 ceiling and its bytes at the copy
bandwidth; ``time / bound`` says how far the stage is from what the device allows for that
work (1 would be at the roof). The models count useful work only:

* Legendre steps (``alm2leg``, ``leg2alm``): the three-term recurrence runs once per (l, m,
  ring pair) for every pair at or after the first one whose values are not negligible for m
  (``first``, as the kernels skip the others; all pairs when not given): a multiply and a
  fused multiply-add (3 flops), then for each map a complex value times a real one, two FMAs
  (4 flops). Bytes: the a_lm and the Legendre sums of every map once, and the two
  coefficient tables (alpha_l, s_l) once.
* Ring steps (``leg2map``, ``map2leg``): a real FFT of every ring, 2.5 n log2 n flops for n
  pixels; bytes: the Legendre sums and the map once.
* Theta resampling (``resample``, ``resample_adjoint``, :mod:`sphgpu.sht.theta_resample`): per
  pair of orders, an FFT of the 2n Fejer samples, one of the N-point grid, the kernel
  correction on the grid and a W-tap interpolation at each target ring; bytes: the Legendre
  sums on the Fejer rings and on the grid's rings once.

Ceilings are measured in the same run (:func:`measure_ceilings`): an FP64 FMA loop in every
thread of the device and a device-to-device copy.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numba import cuda, float64

from .._validate import check_int
from ..alm import AlmLayout

__all__ = ["Work", "Ceilings", "legendre_steps", "legendre", "ring_fft", "resample", "point",
           "measure_ceilings"]


@dataclass(frozen=True)
class Work:
    """What a stage must spend: ``flops`` (FP64 operations, an FMA counting 2) and ``bytes``
    (device memory read and written)."""

    flops: float
    bytes: float

    def __add__(self, other):
        return Work(self.flops + other.flops, self.bytes + other.bytes)


@dataclass(frozen=True)
class Ceilings:
    """The device's measured FP64 rate (``flops_per_s``) and copy bandwidth (``bytes_per_s``,
    read + write)."""

    flops_per_s: float
    bytes_per_s: float


def legendre_steps(lmax: int, mmax: int, npairs: int, first=None) -> int:
    """(l, m, ring pair) steps of a Legendre stage: for each m <= mmax, l = m..lmax, over the
    pairs from ``first[m]`` on.

    Parameters
    ----------
    lmax, mmax : int
        Band limits, 0 <= mmax <= lmax.
    npairs : int
        Ring pairs (a ring and its mirror, or an unpaired ring).
    first : array_like, shape (mmax + 1,), int, optional
        The first pair of each m whose values count (the plan's ``first``); default 0.

    Returns
    -------
    int
    """
    if not 0 <= mmax <= lmax:
        raise ValueError(f"need 0 <= mmax <= lmax, got lmax={lmax}, mmax={mmax}")
    npairs = check_int("npairs", npairs, minimum=1)
    m = np.arange(mmax + 1, dtype=np.int64)
    f = np.zeros(mmax + 1, np.int64) if first is None else np.asarray(first, np.int64)
    if f.shape != (mmax + 1,):
        raise ValueError(f"first must have mmax + 1 = {mmax + 1} entries, got shape {f.shape}")
    return int(np.sum((lmax - m + 1) * np.clip(npairs - f, 0, npairs)))


def legendre(lmax: int, mmax: int, nrings: int, npairs: int, nmaps: int = 1,
             first=None) -> Work:
    """The work of ``alm2leg`` or ``leg2alm`` for ``nmaps`` maps sharing one recurrence, on
    ``nrings`` rings in ``npairs`` pairs (see the module docstring)."""
    nmaps = check_int("nmaps", nmaps, minimum=1)
    steps = legendre_steps(lmax, mmax, npairs, first)
    nalm = AlmLayout(lmax, mmax).size
    data = nmaps * 16 * (nalm + nrings * (mmax + 1))
    return Work(flops=steps * (3.0 + 4.0 * nmaps), bytes=float(data + 16 * nalm))


def ring_fft(nphi, mmax: int, nmaps: int = 1) -> Work:
    """The work of ``leg2map`` or ``map2leg``: rings of ``nphi`` pixels each (array), Legendre
    sums of orders 0..mmax."""
    nmaps = check_int("nmaps", nmaps, minimum=1)
    n = np.asarray(nphi, dtype=np.float64)
    flops = nmaps * float(np.sum(2.5 * n * np.log2(np.maximum(n, 2.0))))
    data = nmaps * (16.0 * n.size * (mmax + 1) + 8.0 * float(n.sum()))
    return Work(flops=flops, bytes=data)


def resample(n: int, N: int, nrings: int, mmax: int, width: int, nmaps: int = 1) -> Work:
    """The work of a theta resampling (either way) from ``n`` Fejer rings through an
    ``N``-point grid to ``nrings`` rings with a ``width``-tap kernel, orders 0..mmax, an even
    and an odd order together (``(mmax + 2) // 2`` pairs)."""
    nmaps = check_int("nmaps", nmaps, minimum=1)
    pairs = (mmax + 2) // 2
    per_pair = (5.0 * 2 * n * math.log2(2 * n) + 5.0 * N * math.log2(N) + 6.0 * N
                + 4.0 * width * nrings)
    data = nmaps * 16.0 * (mmax + 1) * (n + nrings)
    return Work(flops=nmaps * pairs * per_pair, bytes=data)


def point(work: Work, seconds: float, ceilings: Ceilings) -> dict:
    """One stage on the roofline.

    Returns
    -------
    dict
        ``flops``, ``bytes``, ``seconds``; ``flops_per_s`` and ``bytes_per_s`` achieved;
        ``flops_fraction`` and ``bytes_fraction`` of the ceilings; ``intensity`` (flops a
        byte); ``bound_s`` (the longer of the two ceilings' times for this work), ``limit``
        ("flops" or "bytes": which ceiling sets it) and ``time_over_bound``.
    """
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    t_flops = work.flops / ceilings.flops_per_s
    t_bytes = work.bytes / ceilings.bytes_per_s
    bound = max(t_flops, t_bytes)
    return {"flops": work.flops, "bytes": work.bytes, "seconds": seconds,
            "flops_per_s": work.flops / seconds, "bytes_per_s": work.bytes / seconds,
            "flops_fraction": work.flops / seconds / ceilings.flops_per_s,
            "bytes_fraction": work.bytes / seconds / ceilings.bytes_per_s,
            "intensity": work.flops / work.bytes if work.bytes else math.inf,
            "bound_s": bound, "limit": "flops" if t_flops >= t_bytes else "bytes",
            "time_over_bound": seconds / bound if bound else math.inf}


def _fma_kernel(chains: int):
    # cuda and float64 are this module's globals: the simulator swaps a kernel's global cuda
    # for its own, not a closure's
    @cuda.jit
    def kernel(out, a, b, iters):
        x = cuda.local.array(16, float64)
        for i in range(chains):
            x[i] = a + 0.001 * i
        for _ in range(iters):
            for i in range(chains):
                x[i] = x[i] * a + b
        s = 0.0
        for i in range(chains):
            s += x[i]
        out[cuda.grid(1)] = s      # every chain's result is kept: none is optimised away
    return kernel


def measure_ceilings(iters: int = 20000, copy_bytes: int = 1 << 30, repeat: int = 3,
                     chains: int = 8, blocks_per_sm: int = 8) -> tuple[Ceilings, dict]:
    """The FP64 FMA rate and the device copy bandwidth of the current GPU, best of ``repeat``.

    FP64: ``chains`` independent FMA chains of ``iters`` steps in each of 128 threads of
    ``blocks_per_sm`` blocks per multiprocessor. Copy: a CuPy array of ``copy_bytes`` copied on
    the device, counted as read + write.

    Returns
    -------
    (Ceilings, dict)
        The ceilings and how they were measured (the dict goes into a benchmark's JSON).
    """
    import cupy

    if not 1 <= chains <= 16:
        raise ValueError(f"chains must be in 1..16, got {chains}")
    blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT * blocks_per_sm
    kernel = _fma_kernel(chains)
    out = cuda.device_array(blocks * 128)
    kernel[blocks, 128](out, 0.999, 1e-9, 2)                     # compile, warm up
    best = math.inf
    for _ in range(repeat):
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        kernel[blocks, 128](out, 0.999, 1e-9, iters)
        e1.record()
        e1.synchronize()
        best = min(best, cuda.event_elapsed_time(e0, e1) / 1e3)
    flops = 2.0 * blocks * 128 * chains * iters
    a = cupy.ones(copy_bytes // 8)
    b = cupy.empty_like(a)
    b[...] = a                                                   # first touch
    copy = math.inf
    for _ in range(repeat):
        e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
        e0.record()
        b[...] = a
        e1.record()
        e1.synchronize()
        copy = min(copy, cupy.cuda.get_elapsed_time(e0, e1) / 1e3)
    c = Ceilings(flops_per_s=flops / best, bytes_per_s=2.0 * a.nbytes / copy)
    return c, {**asdict(c), "fma_blocks": blocks, "fma_threads": 128, "fma_chains": chains,
               "fma_iters": iters, "fma_s": best, "copy_bytes": int(a.nbytes), "copy_s": copy}
