"""Circular beams: transfer function b_l <-> radial profile b(theta) (healpy's ``beam2bl`` and
``bl2beam``).

healpy's normalisation, the one of :mod:`sphgpu.convolve.kernels` as well:

    b(theta) = sum_l (2l+1)/(4 pi) b_l P_l(cos theta),
    b_l      = 2 pi * integral_0^pi b(theta) P_l(cos theta) sin(theta) dtheta,

the integral taken, as healpy takes it, by the trapezoidal rule over the given samples (so a
profile sampled too coarsely gives the same b_l as healpy's, errors included). ``bl2beam`` is
:meth:`sphgpu.convolve.RadialKernel.profile`, ``beam2bl`` ducc0's Legendre analysis step
(``sht.leg2alm`` at m = 0), both on the host.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _host_threads
from .._device import is_device_array, like_input
from .._validate import as_real_array, check_int

__all__ = ["beam2bl", "bl2beam"]


def _host(a):
    """A NumPy array of a NumPy, CuPy or Numba device array (one copy from the device)."""
    if is_device_array(a):
        import cupy

        return cupy.asnumpy(cupy.asarray(a))
    return a


def _host_real(name, a, allow_batch=False):
    return _host(as_real_array(name, a, allow_batch=allow_batch))


def _check_theta(theta):
    if np.any(theta < 0.0) or np.any(theta > math.pi):
        raise ValueError(f"theta must lie in [0, pi] radians, got values from {theta.min()!r} "
                         f"to {theta.max()!r}")


def _like(out, *inputs):
    """``out`` on the device when any input was a device array (as the first of them)."""
    for a in inputs:
        if is_device_array(a):
            import cupy

            return like_input(cupy.asarray(out), a)
    return out


def beam2bl(beam, theta, lmax) -> np.ndarray:
    """Transfer function b_l of a circular beam from its profile (healpy's ``beam2bl``).

    ``b_l = 2 pi sum_i w_i sin(theta_i) beam_i P_l(cos theta_i)`` with the trapezoidal weights
    ``w_i`` of the samples ``theta`` (healpy's quadrature), for l = 0..lmax. A profile normalised
    to unit integral over the sphere has b_0 = 1.

    Parameters
    ----------
    beam : array_like, shape (n,), float64
        The profile b(theta) at ``theta`` (per steradian, or any unit: b_l carries it times sr).
    theta : array_like, shape (n,), float64
        Radians in [0, pi], usually increasing from 0; n >= 2.
    lmax : int
        Largest multipole of the result, >= 0.

    Returns
    -------
    numpy.ndarray, shape (lmax + 1,), float64
        b_l; a CuPy (or Numba) device array if ``beam`` or ``theta`` was one.

    Raises
    ------
    TypeError
        If ``beam`` or ``theta`` is not real, or ``lmax`` not an integer.
    ValueError
        If they differ in length, have fewer than 2 samples, hold NaN or infinity, or an angle
        is outside [0, pi]; if ``lmax`` is negative.
    """
    import ducc0

    b = _host_real("beam", beam)
    th = _host_real("theta", theta)
    lmax = check_int("lmax", lmax, minimum=0)
    if b.shape != th.shape:
        raise ValueError(f"beam and theta must have the same length, got {b.shape[0]} and "
                         f"{th.shape[0]}")
    if th.shape[0] < 2:
        raise ValueError(f"beam2bl needs at least 2 samples of the profile to integrate, got "
                         f"{th.shape[0]}")
    _check_theta(th)
    # trapezoidal rule as weights: w_0 = (t_1 - t_0)/2, w_i = (t_{i+1} - t_{i-1})/2, ...
    w = np.empty_like(th)
    w[0] = 0.5 * (th[1] - th[0])
    w[-1] = 0.5 * (th[-1] - th[-2])
    w[1:-1] = 0.5 * (th[2:] - th[:-2])
    leg = (w * np.sin(th) * b).astype(np.complex128).reshape(1, -1, 1)
    alm = ducc0.sht.leg2alm(leg=leg, lmax=lmax, theta=th, spin=0,
                            mval=np.zeros(1, dtype=np.uintp), mstart=np.zeros(1, dtype=np.uintp),
                            nthreads=_host_threads.count())
    l = np.arange(lmax + 1, dtype=np.float64)
    # ducc0 sums lambda_l0 = sqrt((2l+1)/(4 pi)) P_l
    bl = 2.0 * math.pi * np.sqrt(4.0 * math.pi / (2.0 * l + 1.0)) * alm[0].real
    return _like(bl, beam, theta)


def bl2beam(bl, theta) -> np.ndarray:
    """Profile of a circular beam from its transfer function (healpy's ``bl2beam``).

    ``b(theta) = sum_l (2l+1)/(4 pi) b_l P_l(cos theta)``, summed by the recurrence of
    :class:`sphgpu.convolve.RadialKernel` in ``1 - cos theta`` (accurate near theta = 0). Unlike
    healpy's, a single coefficient (lmax = 0) is accepted.

    Parameters
    ----------
    bl : array_like, shape (lmax + 1,), float64
        Transfer function b_l, l = 0..lmax.
    theta : array_like, float64, any shape
        Radians in [0, pi].

    Returns
    -------
    numpy.ndarray, float64, the shape of ``theta``
        b(theta) (per steradian for a b_l with b_0 = 1); a CuPy (or Numba) device array if
        ``bl`` or ``theta`` was one.

    Raises
    ------
    TypeError
        If ``bl`` or ``theta`` is not real.
    ValueError
        If ``bl`` is not a non-empty 1-D array, either holds NaN or infinity, or an angle is
        outside [0, pi].
    """
    from ..convolve.kernels import RadialKernel

    coefficients = _host_real("bl", bl)
    if coefficients.shape[0] == 0:
        raise ValueError("bl must hold at least one coefficient (b_0)")
    th = np.atleast_1d(_host(theta))
    th = _host_real("theta", th, allow_batch=th.ndim)
    _check_theta(th)
    out = RadialKernel(coefficients).profile(th).reshape(np.shape(theta))
    return _like(out, bl, theta)
