"""Least-squares analysis of HEALPix maps (healpy's ``map2alm_lsq``).

The a_lm minimising ``|| alm2map(alm) - map ||_2`` are found by LSQR (``scipy.sparse.linalg.
lsqr``) on the real-valued form of the problem, started from one quadrature pass. The operator
is sphgpu's own public :func:`~sphgpu.alm2map` and its adjoint, ``npix / (4 pi)`` times
:func:`~sphgpu.map2alm` with ``iter=0`` (HEALPix pixels have equal areas, so the quadrature pass
is the adjoint up to that factor), on whichever backend is chosen.

Real-valued form: for each map, ``Re a_l0`` (l = 0..lmax) and then ``sqrt(2) (Re a_lm, Im a_lm)``
for m >= 1, in the a_lm's own order. The factor sqrt(2) makes the real inner product equal the
complex one over all m (each m > 0 stands for m and -m), so the operator's adjoint is the
analysis above, and LSQR runs on the same quantities as healpy's and stops at the same step.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._device import is_device_array, like_input
from .._validate import as_maps, check_int
from ..alm import AlmLayout
from .transforms import alm2map, map2alm

__all__ = ["map2alm_lsq"]


def _to_real(alm, nm0):
    """(k, nalm) complex -> (k * nreal,) float64 (see the module docstring); nm0 = lmax + 1."""
    k = alm.shape[0]
    rest = np.ascontiguousarray(alm[:, nm0:]).view(np.float64) * math.sqrt(2.0)
    return np.concatenate([alm[:, :nm0].real, rest], axis=1).reshape(k * (nm0 + rest.shape[1]))


def _to_complex(x, k, nm0):
    """The inverse of :func:`_to_real`: (k * nreal,) float64 -> (k, nalm) complex128."""
    x = np.asarray(x, dtype=np.float64).reshape(k, -1)
    out = np.empty((k, nm0 + (x.shape[1] - nm0) // 2), dtype=np.complex128)
    out[:, :nm0] = x[:, :nm0]
    out[:, nm0:] = np.ascontiguousarray(x[:, nm0:]).view(np.complex128) / math.sqrt(2.0)
    return out


def _tolerance(tol):
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number, got {type(tol).__name__}")
    tol = float(tol)
    if not (math.isfinite(tol) and tol >= 0.0):
        raise ValueError(f"tol must be finite and >= 0, got {tol!r}")
    return tol


def map2alm_lsq(maps, lmax, mmax, pol=True, tol=1e-10, maxiter=20, *, backend="auto"):
    """a_lm whose map is closest to ``maps`` in the least-squares sense, with the quality of
    the fit (healpy's ``map2alm_lsq``).

    Minimises ``|| alm2map(alm) - maps ||_2`` over the a_lm up to (lmax, mmax) by LSQR, started
    from ``map2alm(maps, iter=0)``, stopping when LSQR's tests reach ``tol`` (its ``atol`` and
    ``btol``) or after ``maxiter`` iterations. Masked pixels (``UNSEEN`` or a ``numpy.ma`` mask)
    are left out of the fit: the a_lm fit the seen pixels only (healpy fits UNSEEN as a value).
    The iteration runs on the host (SciPy's LSQR); each step is one :func:`~sphgpu.alm2map` and
    one :func:`~sphgpu.map2alm` on ``backend``. A device array (CuPy or Numba) is copied to the
    host once and the a_lm come back on the device.

    Parameters
    ----------
    maps : array, shape (npix,) or (n, npix), float64
        HEALPix map(s) in RING order, npix = 12 nside**2; with ``pol=True`` three rows are
        I, Q, U.
    lmax : int
        Band limit of the result, >= 0.
    mmax : int
        Azimuthal limit, 0 <= mmax <= lmax. (healpy's 1.20.1 ignores it and returns
        mmax = lmax; here it is honoured.)
    pol : bool
        True (default): 3 maps are I, Q, U and give T, E, B; False: every map is spin 0.
    tol : float
        LSQR's ``atol`` and ``btol``, >= 0 (default 1e-10).
    maxiter : int
        Most LSQR iterations, >= 0 (default 20).
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where the transforms run (see :mod:`sphgpu.backends`).

    Returns
    -------
    alm : array, shape (nalm,) or (n, nalm), complex128
        The fitted a_lm in healpy's m-major order; the imaginary parts at m = 0 are zero.
        A device array for device input.
    rel_res : float
        ``|| maps - alm2map(alm) || / || maps ||`` over the seen pixels: the fraction of the
        map the a_lm cannot describe (0.0 for an all-zero map).
    n_iter : int
        LSQR iterations done.

    Raises
    ------
    TypeError
        If ``maps`` is not real, ``lmax``/``mmax``/``maxiter`` not integers, ``tol`` not a
        number.
    ValueError
        If the pixel count is not 12 nside**2, a limit is out of range, ``maps`` holds NaN or
        infinity outside masked pixels, or its shape does not fit ``pol``.
    """
    from scipy.sparse.linalg import LinearOperator, lsqr

    lmax = check_int("lmax", lmax, minimum=0)
    mmax = check_int("mmax", mmax, minimum=0, maximum=lmax)
    tol = _tolerance(tol)
    maxiter = check_int("maxiter", maxiter, minimum=0)
    arr, bad = as_maps("maps", maps, max_ndim=2)
    if is_device_array(arr):
        import cupy

        arr = cupy.asnumpy(arr)
        bad = None if bad is None else cupy.asnumpy(bad)
    npix = arr.shape[-1]
    nside = math.isqrt(max(npix // 12, 0))
    if npix != 12 * nside * nside or nside == 0:
        raise ValueError(f"maps has {npix} pixels, which is not 12 * nside**2 of a HEALPix map")
    shape = arr.shape
    k = 1 if arr.ndim == 1 else shape[0]
    nm0 = lmax + 1
    layout = AlmLayout(lmax, mmax)
    seen = None if bad is None else ~bad.reshape(-1)
    scale = npix / (4.0 * math.pi)          # map2alm(iter=0) = (4 pi / npix) Y^H

    def synthesis(x):
        alm = _to_complex(x, k, nm0).reshape(shape[:-1] + (layout.size,))
        y = np.asarray(alm2map(alm, nside=nside, lmax=lmax, mmax=mmax, pol=pol,
                               backend=backend)).reshape(-1)
        return y if seen is None else y * seen

    def adjoint(y):
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if seen is not None:
            y = y * seen
        alm = map2alm(y.reshape(shape), lmax=lmax, mmax=mmax, iter=0, pol=pol,
                      backend=backend)
        return _to_real(np.asarray(alm).reshape(k, layout.size) * scale, nm0)

    b = arr.reshape(-1)
    norm_b = float(np.linalg.norm(b))
    x0 = adjoint(b) / scale
    if norm_b == 0.0:
        alm, rel_res, n_iter = _to_complex(x0, k, nm0), 0.0, 0
    else:
        op = LinearOperator(shape=(b.size, x0.size), matvec=synthesis, rmatvec=adjoint,
                            dtype=np.float64)
        x, _, n_iter, r1norm = lsqr(op, b, x0=x0, atol=tol, btol=tol, iter_lim=maxiter)[:4]
        alm, rel_res = _to_complex(x, k, nm0), float(r1norm) / norm_b
    alm = alm.reshape(shape[:-1] + (layout.size,))
    if is_device_array(maps):
        import cupy

        alm = like_input(cupy.asarray(alm), maps)
    return alm, rel_res, int(n_iter)
