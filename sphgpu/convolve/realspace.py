"""Convolution with a compact radial kernel by summing over neighbouring pixels (ARKCoS-like).

    out_i = sum_j K(theta_ij) m_j w_j        over pixels j with theta_ij < theta_cut,

w_j being the quadrature weight of pixel j (4 pi / npix on HEALPix), K a :class:`CompactKernel`
(evaluated exactly: it is a piecewise cubic in u = 1 - cos theta). With a kernel band-limited at
lmax this is exactly what the harmonic route computes with map2alm ``iter=0`` (see
:mod:`sphgpu.convolve.kernels`).

The algorithm works ring by ring, as the paper's ARKCoS does: for an output ring i and an input
ring r the half-chord formula

    u_ij / 2 = sin^2((theta_i - theta_r)/2) + sin(theta_i) sin(theta_r) sin^2(dphi_ij / 2)

needs two numbers per ring pair (``a``, ``b``) and one per pixel pair (sin^2 of half the azimuth
difference), and tells which azimuths fall inside theta_cut (the spherical triangle). When both
rings have the same number of pixels (all equatorial HEALPix rings) every output pixel sees the
same kernel values at the same pixel offsets, so the kernel is evaluated once per ring pair into
a "row" and the sum becomes a short circular correlation; other ring pairs (the polar caps)
evaluate the kernel per pixel pair.

Backends: "cpu" (Numba, parallel over output rings, :mod:`._cpu`), "cuda" (one block
per output ring chunk, :mod:`._cuda`), "reference"
(:func:`sphgpu.convolve.reference.brute_force`, every pair, small maps only).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba.extending import register_jitable

from ..geometry import RingGeometry
from .kernels import FULL_CHORD

__all__ = ["RingPlan", "ring_plan", "pair_count", "kernel_value", "ring_window"]

# Compiled by each caller's target (the numba CPU loops and the CUDA kernel) as an ordinary
# function that LLVM inlines: Numba's IR-level inlining (inline="always") of these functions into
# a CUDA kernel trips an assertion in numba-cuda 0.30.4's variable-lifetime pass (as for the
# SHT's coefficient loop).
_jit = register_jitable

#: Azimuth margin (radians) added to each ring's window so that rounding never drops a pixel;
#: pixels beyond theta_cut inside the margin get K = 0 from the kernel itself.
PHI_MARGIN = 1e-9


@_jit
def kernel_value(hu, h, inv_h, inv_h2, n, coef):
    """K at half-squared-chord ``hu`` = u/2 = c^2/4 of a CompactKernel (h, coef[n, 4]);
    0 outside the support (which includes its end, c = n h, and every pair when n h = 2)."""
    c = 2.0 * math.sqrt(hu)
    end = n * h
    if c > end and end < FULL_CHORD:
        return 0.0
    k = min(int(c * inv_h), n - 1)
    kh = k * h
    s = (c - kh) * (c + kh) * inv_h2 / (2.0 * k + 1.0)
    return coef[k, 0] + s * (coef[k, 1] + s * (coef[k, 2] + s * coef[k, 3]))


@_jit
def ring_window(theta_i, theta_r, sin_i, sin_r, hu_cut):
    """For output ring at theta_i and input ring at theta_r: (a, b, dphi_max, kind) with
    hu = a + b sin^2(dphi/2); kind 0: no pixel within the cut, 1: the whole ring, 2: the pixels
    with |dphi| <= dphi_max (radians, margin included)."""
    sd = math.sin(0.5 * (theta_i - theta_r))
    a = sd * sd
    b = sin_i * sin_r
    if a >= hu_cut:
        return a, b, 0.0, 0
    if b <= 0.0:
        return a, b, math.pi, 1
    s2 = (hu_cut - a) / b
    if s2 >= 1.0:
        return a, b, math.pi, 1
    dphi = 2.0 * math.asin(math.sqrt(s2)) + PHI_MARGIN
    if dphi >= math.pi:
        return a, b, math.pi, 1
    return a, b, dphi, 2


@_jit
def pixel_range(kind, phi, dmax, phi0_r, dphi_r, nr):
    """(jlo, jhi): the pixels j of an input ring (first pixel at phi0_r, spacing dphi_r, nr
    pixels) within dmax of azimuth phi, for :func:`ring_window`'s kind 1 or 2; inclusive, and
    may pass the ring's ends (callers take j modulo nr). The whole ring when the window covers
    it."""
    if kind == 1:
        return 0, nr - 1
    jlo = int(math.floor((phi - dmax - phi0_r) / dphi_r))
    jhi = int(math.ceil((phi + dmax - phi0_r) / dphi_r))
    if jhi - jlo + 1 >= nr:
        return 0, nr - 1
    return jlo, jhi


@_jit
def row_offsets(kind, dmax, dphi_r, nr):
    """(d0, length): the pixel offsets d = j - p, d0 .. d0 + length - 1, that one kernel row
    needs between an output ring and an input ring of the same length nr (spacing dphi_r)
    within azimuth dmax (:func:`ring_window`); the whole ring when the window covers it."""
    half = int(dmax / dphi_r) + 2
    if kind == 1 or 2 * half + 1 >= nr:
        return -(nr // 2), nr
    return -half, 2 * half + 1


class RingPlan:
    """What the real-space backends need about a geometry and a support radius, computed once:
    ring arrays and, for every output ring, the range of input rings within theta_cut.

    Attributes (NumPy arrays over rings, float64 unless said): theta, sin_theta, phi0,
    nphi (int64), ringstart (int64), weight (pixel weight of the ring), r_lo, r_hi (int64,
    inclusive ranges of input rings), ``shuffle`` (int64: the output rings in a fixed
    pseudo-random order, so that equal contiguous chunks of it carry similar work whatever
    the scheduler) and ``out_rings`` (int64, sorted: the rings whose output is computed; all of
    them, except in a plan made by :meth:`band`).
    """

    def __init__(self, geometry: RingGeometry, theta_cut: float):
        order = np.argsort(geometry.theta, kind="stable")
        if not np.array_equal(order, np.arange(geometry.nrings)):
            raise ValueError("the real-space convolution needs rings sorted by theta")
        if geometry.pixel_offset:
            raise ValueError("the real-space convolution needs a whole-sphere geometry "
                             "(pixel_offset 0)")
        self.geometry = geometry
        self.theta_cut = float(theta_cut)
        self.theta = np.ascontiguousarray(geometry.theta)
        self.sin_theta = np.sin(self.theta)
        self.phi0 = np.ascontiguousarray(geometry.phi0)
        self.nphi = np.ascontiguousarray(geometry.nphi, dtype=np.int64)
        self.ringstart = np.ascontiguousarray(geometry.ringstart, dtype=np.int64)
        self.weight = np.ascontiguousarray(geometry.weight)
        margin = 1e-12 + 1e-9 * self.theta_cut
        self.margin = margin
        self.r_lo = np.searchsorted(self.theta, self.theta - self.theta_cut - margin,
                                    side="left").astype(np.int64)
        self.r_hi = (np.searchsorted(self.theta, self.theta + self.theta_cut + margin,
                                     side="right") - 1).astype(np.int64)
        self.shuffle = np.random.default_rng(0).permutation(geometry.nrings).astype(np.int64)
        self.out_rings = np.arange(geometry.nrings, dtype=np.int64)

    def halo(self, own: slice) -> slice:
        """The input rings that the output rings ``own`` (a contiguous slice) reach."""
        lo, hi, _ = own.indices(self.nrings)
        return slice(int(self.r_lo[lo:hi].min()), int(self.r_hi[lo:hi].max()) + 1)

    def band(self, own: slice, halo: slice) -> "RingPlan":
        """The plan of a latitude band: output rings ``own`` from input rings ``halo`` only.

        ``own`` and ``halo`` are contiguous slices of this plan's rings, ``halo`` holding every
        input ring the ``own`` rings reach (:meth:`halo`; a wider one is fine). The band plan
        describes the sub-map ``maps[..., a:b]`` of the halo rings' pixels
        (``a, b = g.pixel_offset, g.pixel_offset + g.npix`` of its ``geometry``,
        ``self.geometry.rings(halo)``): a backend given that sub-map returns an array of its
        shape whose ``own`` rings hold exactly what the whole-sphere plan gives there (the same
        numbers in the same order) and whose other pixels are unspecified.
        """
        o0, o1, ostep = own.indices(self.nrings)
        h0, h1, hstep = halo.indices(self.nrings)
        if ostep != 1 or hstep != 1 or o1 <= o0:
            raise ValueError(f"own and halo must be contiguous non-empty slices, got {own}, "
                             f"{halo}")
        need = self.halo(slice(o0, o1))
        if h0 > need.start or h1 < need.stop:
            raise ValueError(f"halo {halo} misses input rings: output rings {o0}..{o1 - 1} "
                             f"reach rings {need.start}..{need.stop - 1}")
        sub = object.__new__(RingPlan)
        sub.geometry = self.geometry.rings(slice(h0, h1))
        sub.theta_cut, sub.margin = self.theta_cut, self.margin
        for name in ("theta", "sin_theta", "phi0", "nphi", "weight"):
            setattr(sub, name, np.ascontiguousarray(getattr(self, name)[h0:h1]))
        sub.ringstart = self.ringstart[h0:h1] - self.ringstart[h0]
        # rings outside ``own`` are not computed; clip their ranges into the band anyway
        sub.r_lo = np.clip(self.r_lo[h0:h1] - h0, 0, h1 - h0 - 1)
        sub.r_hi = np.clip(self.r_hi[h0:h1] - h0, 0, h1 - h0 - 1)
        mine = self.shuffle[(self.shuffle >= o0) & (self.shuffle < o1)]
        sub.shuffle = (mine - h0).astype(np.int64)
        sub.out_rings = np.arange(o0 - h0, o1 - h0, dtype=np.int64)
        return sub

    @property
    def npix(self) -> int:
        return self.geometry.npix

    @property
    def nrings(self) -> int:
        return self.geometry.nrings


@functools.lru_cache(maxsize=16)
def _cached_plan(geometry, theta_cut):
    return RingPlan(geometry, theta_cut)


def ring_plan(geometry: RingGeometry, theta_cut: float) -> RingPlan:
    """The (cached) :class:`RingPlan` of a geometry and support radius."""
    return _cached_plan(geometry, float(theta_cut))


def pair_count(nside: int, theta_cut: float) -> float:
    """Approximate number of (output, input) pixel pairs within theta_cut on a HEALPix map:
    npix times the pixels in a disc of radius theta_cut (at least 1). The cost models use it."""
    npix = 12.0 * nside * nside
    disc = npix * 0.5 * (1.0 - math.cos(theta_cut))
    return npix * max(disc, 1.0)
