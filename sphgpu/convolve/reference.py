"""The "reference" backend of the convolution (:class:`sphgpu.backends.ConvolveBackend`): the
specification of the real-space part, the plain sum over every pair of pixels

    out_i = sum_j K(theta_ij) m_j w_j        (w_j: the quadrature weight of pixel j),

which the ring algorithms of :mod:`._cpu` and :mod:`._cuda` are tested against. npix^2 work:
small maps only. The harmonic part of a convolution on this backend runs on the SHT's NumPy
reference (:mod:`sphgpu.sht.reference`).
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import RingGeometry
from .kernels import CompactKernel

__all__ = ["convolve", "brute_force", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = False


def convolve(maps, plan, kernel, *, concurrent=False):
    """maps (k, npix) float64 NumPy -> (k, npix): every pixel pair within the support of
    ``kernel`` (a CompactKernel) on the geometry of ``plan`` (a whole-sphere RingPlan; its
    ring ranges are not used). ``concurrent`` changes nothing here."""
    return brute_force(np.asarray(maps), plan.geometry, kernel)


def brute_force(maps, geometry: RingGeometry, kernel, theta_cut: float | None = None):
    """The obvious sum over every pair of pixels: the specification of the real-space path.

    Separations come from 3-D unit vectors, u = |x_i - x_j|^2 / 2 (no cos/acos rounding).
    Cost npix^2: small maps only.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), float64
        Maps on ``geometry``.
    geometry : RingGeometry
        Their grid.
    kernel : CompactKernel or callable
        A CompactKernel (evaluated with its own formula, its support its own) or any ``K(u)``
        of u = 1 - cos(theta), vectorised.
    theta_cut : float, optional
        Radians, for a callable kernel: pairs farther apart contribute 0 (None or pi: every
        pair).

    Returns
    -------
    ndarray, shape of ``maps``, float64
    """
    m = np.asarray(maps, dtype=np.float64)
    single = m.ndim == 1
    m2 = m[None, :] if single else m
    theta, phi = geometry.pixel_angles()
    xyz = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], 1)
    w = geometry.pixel_weights()
    if isinstance(kernel, CompactKernel):
        def kfun(u):
            return kernel.evaluate_chord(np.sqrt(2.0 * u))
        u_cut = None
    else:
        kfun = kernel
        u_cut = None
        if theta_cut is not None and theta_cut < math.pi:
            u_cut = 2.0 * math.sin(0.5 * theta_cut) ** 2
    out = np.zeros_like(m2)
    step = max(1, 2_000_000 // max(1, xyz.shape[0]))
    for s in range(0, xyz.shape[0], step):
        d = xyz[s:s + step, None, :] - xyz[None, :, :]
        u = 0.5 * np.einsum("ijk,ijk->ij", d, d)
        kv = kfun(u)
        if u_cut is not None:
            kv = np.where(u <= u_cut, kv, 0.0)
        out[:, s:s + step] = (m2 * w[None, :]) @ kv.T
    return out[0] if single else out
