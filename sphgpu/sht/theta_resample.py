"""Legendre steps on fewer rings: compute Delta_m(theta) on equiangular rings, then resample it
to the grid's own rings (HEALPix has about 2 lmax rings, twice what a band limit of lmax needs).

For every m, Delta_m(theta) = sum_l a_lm lambda_lm(theta) is a trigonometric polynomial of degree
<= lmax in theta, even about theta = 0 for even m and odd for odd m. Its values on n >= lmax + 1
Fejer rings theta_j = (j + 1/2) pi / n, mirrored onto the whole circle, are 2n equispaced samples
of it, from which its values at any colatitude follow exactly (to rounding). This module does that
step for every m as a non-uniform FFT: an FFT of the 2n samples, a correction for the
interpolation kernel, zero padding to an oversampled grid of N points, an inverse FFT and a
W-point interpolation at each target ring. An even and an odd m travel together as the real and
"imaginary" parts of one complex function h = e + o on the circle (h(-theta) = e - o), so that
no FFT is spent on the mirrored half. ducc0 offers the same idea for irregular ring grids
(``theta_interpol`` of its ``alm2leg``/``leg2alm``); this implementation is sphgpu's own.

The adjoint (for map2alm) is the exact transpose of the same linear map: since the map is exact
on band-limited functions, sum_r lambda_lm(theta_r) G(r) = sum_j lambda_lm(theta_j) (R^T G)(j),
so leg2alm on the Fejer rings after :func:`adjoint` equals leg2alm on the grid's rings.

Shapes: ``leg`` arrays are (k, rings, nm) complex128 with column c the order m = c (all orders
0..mmax, as the transforms use them). This module holds the plan (tables, NumPy) and the NumPy
reference of both directions; the CUDA kernels are :mod:`sphgpu.sht._resample_kernels`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..geometry import RingGeometry

__all__ = ["ResamplePlan", "worth_it", "resample_plan", "spread_ranges", "forward", "adjoint"]

#: kernel width W (grid points) and oversampling of the interpolation grid: an
#: exponential-of-semicircle kernel exp(beta (sqrt(1 - (2y/W)^2) - 1)) with beta = BETA_PER_W * W.
#: W = 16 at 2x oversampling kept the resampling error of random trigonometric polynomials at
#: lmax 256-512 below 1.4e-13 of their largest value (6e-14 in L2); 1.5x oversampling gave
#: 1.4e-12 in L2 (tests/sht/test_theta_resample.py checks it and the Legendre sums). The grid
#: may be a little under 2x: a spin-2 transform at lmax 4096 resamples band limit 4098, whose
#: grid at 2x or more is 17496 points (2^3 3^7, in 6 rows of 2916, a slower FFT than rows of
#: 4096), at 1.999x 16384
WIDTH = 16
OVERSAMPLING = 1.99
BETA_PER_W = 2.30
#: resample only where the grid has this many times more rings than the Fejer rings it needs
#: (HEALPix at lmax = 2 nside: about 2x), and from this band limit up: at nside 1024, lmax 2048
#: the resampling cost what it saved, at nside 2048, lmax 4096 it saved time each way
#: (benchmarks/results/sht_batch_h200.json, "resampled")
MIN_RING_RATIO = 1.5
MIN_LMAX = 3072


def _smooth(n, even=False, primes=(2, 3, 5, 7)):
    """The smallest integer >= n whose prime factors are ``primes`` (cuFFT's fast radices), and
    even if ``even``."""
    m = max(int(n), 1)
    while True:
        k = m
        for p in primes:
            while k % p == 0:
                k //= p
        if k == 1 and (m % 2 == 0 or not even):
            return m
        m += 1


def _kernel(y, width, beta):
    """The interpolation kernel at offsets y (grid points), zero outside |y| < width / 2."""
    z = 2.0 * np.asarray(y, dtype=np.float64) / width
    inside = np.abs(z) < 1.0
    out = np.zeros_like(z)
    out[inside] = np.exp(beta * (np.sqrt(1.0 - z[inside] ** 2) - 1.0))
    return out


def _kernel_transform(omega, width, beta, nodes=400):
    """integral phi(y) cos(omega y) dy over the kernel's support, by Gauss-Legendre quadrature
    (the kernel is smooth inside, and below e^-beta at its ends)."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    y = 0.5 * width * t
    return 0.5 * width * (np.cos(np.multiply.outer(omega, y)) * (w * _kernel(y, width, beta))).sum(-1)


def worth_it(geometry: RingGeometry, lmax: int) -> bool:
    """Whether the transforms of ``geometry`` at band limit ``lmax`` resample: a grid with many
    more rings than Fejer rings for lmax (HEALPix), from MIN_LMAX up."""
    return lmax >= MIN_LMAX and geometry.nrings >= MIN_RING_RATIO * _smooth(lmax + 1, even=True)


@dataclass(frozen=True, eq=False)
class ResamplePlan:
    """Tables of one resampling from ``n`` Fejer rings to a grid's rings, band limit ``lmax``.

    Attributes
    ----------
    lmax, n, N, width : int
        Band limit; Fejer rings (even; 2n is cuFFT-friendly); points of the oversampled grid on
        the circle; kernel width.
    fejer : RingGeometry
        The Fejer rings (``kind="fejer1"``) the Legendre step runs on.
    spectral : ndarray, (2 lmax + 1,) complex128
        Factor of the FFT's mode k (index k + lmax): the 1/(2n) of the inverse transform, the
        half-step phase of the Fejer rings and the kernel's correction 1/phi^(k).
    first : ndarray, (nrings,) int64
        First grid point of each target ring's window (may be negative: indices wrap mod N).
    weights : ndarray, (nrings, width) float64
        Kernel weights of each target ring's window.
    """

    lmax: int
    n: int
    N: int
    width: int
    fejer: RingGeometry
    spectral: np.ndarray
    first: np.ndarray
    weights: np.ndarray

    @property
    def nrings(self) -> int:
        """Target rings."""
        return int(self.first.shape[0])


@functools.lru_cache(maxsize=8)
def resample_plan(geometry: RingGeometry, lmax: int) -> ResamplePlan:
    """The :class:`ResamplePlan` from Fejer rings for ``lmax`` to the rings of ``geometry``."""
    n = _smooth(lmax + 1, even=True)          # even: ring pairs; 2n is then 7-smooth too
    # the grid's oversampling is of the band limit (the kernel's correction is exact there);
    # lengths 2^a 3^b: cuFFT is slow on lengths with a factor 7^3, such as 16464
    # (benchmarks/results/fft_lengths_h200.txt)
    N = _smooth(math.ceil(OVERSAMPLING * 2 * lmax), even=True, primes=(2, 3))
    width, beta = WIDTH, BETA_PER_W * WIDTH
    k = np.arange(-lmax, lmax + 1)
    step = 2 * math.pi / N
    spectral = np.exp(-0.5j * k * math.pi / n) / (2 * n * _kernel_transform(k * step, width, beta))
    x = geometry.theta / step
    first = np.ceil(x - 0.5 * width).astype(np.int64)
    weights = _kernel(x[:, None] - first[:, None] - np.arange(width), width, beta)
    fejer = RingGeometry.equiangular(n, 4, poles=False)
    return ResamplePlan(lmax, n, N, width, fejer, spectral, first, weights)


def spread_ranges(rp: ResamplePlan):
    """The windows of :func:`forward` by grid point, for the transpose's gather (rings sorted by
    theta): (j_d, lo_d, hi_d, j_m, lo_m, hi_m), int64 arrays of shape (N,). Grid point g takes
    the window position j_d (g or g - N) of the rings lo_d..hi_d - 1 at theta_r, and j_m (-g or
    N - g) of the rings lo_m..hi_m - 1 at -theta_r: ring r adds weights[r, j - first[r]] times
    (E_r + O_r) / 2 at theta_r and (E_r - O_r) / 2 at -theta_r."""
    W, N, first = rp.width, rp.N, rp.first
    if np.any(np.diff(first) < 0):
        raise ValueError("the target rings must be sorted by theta")
    g = np.arange(N, dtype=np.int64)
    top = first[-1] + W                                    # window positions lie below
    j_d = np.where(g < top, g, g - N)
    j_m = np.where(-g >= first[0], -g, N - g)

    def rings_covering(j):
        lo = np.searchsorted(first + W - 1, j, side="left")
        hi = np.searchsorted(first, j, side="right")
        return lo.astype(np.int64), np.maximum(hi, lo).astype(np.int64)

    return (j_d, *rings_covering(j_d), j_m, *rings_covering(j_m))


def _pairs_of(leg):
    """(k, rings, nm) -> even and odd columns (k, rings, P) with a zero column appended when nm
    is odd."""
    e, o = leg[..., 0::2], leg[..., 1::2]
    if o.shape[-1] < e.shape[-1]:
        o = np.concatenate([o, np.zeros_like(e[..., :1])], axis=-1)
    return e, o


def forward(leg_f: np.ndarray, rp: ResamplePlan) -> np.ndarray:
    """Delta_m on the Fejer rings (k, n, nm) -> on the target rings (k, nrings, nm), NumPy."""
    k, n, nm = leg_f.shape
    L, N = rp.lmax, rp.N
    e, o = _pairs_of(leg_f)
    h = np.concatenate([e + o, (e - o)[:, ::-1]], axis=1)              # (k, 2n, P) on the circle
    c = np.fft.fft(h, axis=1)
    grid = np.zeros((k, N, h.shape[2]), dtype=np.complex128)
    modes = np.arange(-L, L + 1)
    grid[:, modes % N] = c[:, modes % (2 * n)] * rp.spectral[None, :, None]
    u = np.fft.ifft(grid, axis=1, norm="forward")                      # unnormalised inverse
    idx = rp.first[:, None] + np.arange(rp.width)
    a = np.einsum("rt,krtp->krp", rp.weights, u[:, idx % N])           # h(theta_r)
    b = np.einsum("rt,krtp->krp", rp.weights, u[:, (-idx) % N])        # h(-theta_r)
    out = np.empty((k, rp.nrings, 2 * h.shape[2]), dtype=np.complex128)
    out[..., 0::2] = 0.5 * (a + b)
    out[..., 1::2] = 0.5 * (a - b)
    return out[..., :nm]


def adjoint(leg_h: np.ndarray, rp: ResamplePlan) -> np.ndarray:
    """The transpose of :func:`forward`: (k, nrings, nm) -> (k, n, nm), NumPy."""
    k, _, nm = leg_h.shape
    L, N, n = rp.lmax, rp.N, rp.n
    E, O = _pairs_of(leg_h)
    a, b = 0.5 * (E + O), 0.5 * (E - O)
    P = E.shape[2]
    u = np.zeros((k, N, P), dtype=np.complex128)
    idx = rp.first[:, None] + np.arange(rp.width)
    w = rp.weights[None, :, :, None]
    np.add.at(u, (slice(None), idx % N), w * a[:, :, None, :])
    np.add.at(u, (slice(None), (-idx) % N), w * b[:, :, None, :])
    d = np.fft.fft(u, axis=1)
    modes = np.arange(-L, L + 1)
    c = np.zeros((k, 2 * n, P), dtype=np.complex128)
    c[:, modes % (2 * n)] = d[:, modes % N] * np.conj(rp.spectral)[None, :, None]
    t = np.fft.ifft(c, axis=1, norm="forward")
    out = np.empty((k, n, 2 * P), dtype=np.complex128)
    out[..., 0::2] = t[:, :n] + t[:, ::-1][:, :n]
    out[..., 1::2] = t[:, :n] - t[:, ::-1][:, :n]
    return out[..., :nm]
