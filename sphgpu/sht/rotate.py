"""Rotation of spherical-harmonic coefficients (healpy's ``rotate_alm``).

The rotation is the active rotation ``R = Rz(phi) Ry(theta) Rz(psi)`` of a right-handed frame
(first psi about z, then theta about the original y, then phi about the original z), applied to
the map that the a_lm describe; it is ducc0's ``sht.rotate_alm`` (Wigner-d matrices by
recursion, O(lmax^3)), the CPU engine of :mod:`sphgpu.sht`. A rotation matrix (such as
``healpy.Rotator(...).mat``) is turned into those Euler angles first.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _host_threads
from .._device import is_device_array
from .._validate import check_finite, check_int
from ..alm import AlmLayout

__all__ = ["rotate_alm", "euler_from_matrix"]

#: largest |R R^T - I| and |det R - 1| accepted for a rotation matrix: well above the rounding
#: of a float64 product of a few rotations (1e-15), well below any matrix that is not a rotation
ROTATION_TOL = 1e-9


def _angle(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (radians), got {value!r} of type "
                        f"{type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite angle in radians, got {value!r}")
    return value


def _rotation_matrix(matrix):
    if is_device_array(matrix):
        matrix = matrix.get() if hasattr(matrix, "get") else matrix.copy_to_host()
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"matrix must be a 3x3 array of real numbers, got "
                        f"{type(matrix).__name__}") from None
    if m.shape != (3, 3):
        raise ValueError(f"matrix must have shape (3, 3), got {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("matrix contains NaN or infinite values")
    orth = float(np.max(np.abs(m @ m.T - np.eye(3))))
    det = float(np.linalg.det(m))
    if orth > ROTATION_TOL or abs(det - 1.0) > ROTATION_TOL:
        raise ValueError(f"matrix must be a rotation (orthogonal with determinant +1): "
                         f"max |M M^T - I| = {orth:.3g}, det M = {det:.15g}")
    return m


def euler_from_matrix(matrix) -> tuple[float, float, float]:
    """ZYZ Euler angles (psi, theta, phi) of a rotation matrix, the convention of
    :func:`rotate_alm`: ``matrix == Rz(phi) @ Ry(theta) @ Rz(psi)``.

    theta and phi come from the third column, ``sin(theta) (cos phi, sin phi, 0) +
    (0, 0, cos theta)``; psi from the upper-left 2x2 block, which holds
    ``(1 + cos theta) R2(psi + phi)`` plus ``(1 - cos theta)`` times a reflection by
    ``psi - phi``. The angles reproduce the matrix to rounding, at theta = 0 and pi too
    (where only ``psi + phi``, resp. ``psi - phi``, is defined).

    Parameters
    ----------
    matrix : array_like, shape (3, 3), float64
        A rotation matrix (orthogonal, determinant +1, to :data:`ROTATION_TOL`).

    Returns
    -------
    psi, theta, phi : float
        Radians; theta in [0, pi], phi in [-pi, pi], psi in [-2 pi, 2 pi].

    Raises
    ------
    TypeError
        If ``matrix`` is not numeric.
    ValueError
        If it is not a finite 3x3 rotation matrix.
    """
    m = _rotation_matrix(matrix)
    # the third column is sin(theta) (cos phi, sin phi), m[2, 2] cos(theta): theta to
    # rounding (1e-16 radians) at the poles too, where cos alone would lose half the digits
    theta = math.atan2(math.hypot(m[0, 2], m[1, 2]), m[2, 2])
    # phi from the third column, to rounding over sin(theta), which is what the matrix
    # resolves of it; psi from psi + phi (block R2(psi + phi) (1 + cos theta)) on the northern
    # half, from psi - phi (a reflection times 1 - cos theta) on the southern one
    phi = math.atan2(m[1, 2], m[0, 2])
    if m[2, 2] >= 0.0:
        psi = math.atan2(m[1, 0] - m[0, 1], m[0, 0] + m[1, 1]) - phi
    else:
        psi = math.atan2(m[0, 1] + m[1, 0], m[1, 1] - m[0, 0]) + phi
    return psi, theta, phi


def _layout(name, n, lmax, mmax):
    layout = AlmLayout.from_size(n, lmax, mmax, name=name)
    if layout.mmax != layout.lmax:
        raise ValueError(f"rotate_alm needs mmax == lmax (a rotation mixes every m of a "
                         f"degree l, as healpy requires), got lmax={layout.lmax}, "
                         f"mmax={layout.mmax}: pad the a_lm first with resize_alm")
    return layout


def _rows(alm):
    """The arrays to rotate in place: one array (1-D or 2-D), or the items of a list."""
    if isinstance(alm, (list, tuple)):
        if not alm:
            raise ValueError("alm is an empty sequence")
        if not all(isinstance(a, np.ndarray) or is_device_array(a) for a in alm):
            raise TypeError("alm must be an array or a list of arrays: rotate_alm works in "
                            "place (as healpy's), so a list of numbers would be rotated in a "
                            "copy and lost")
        return list(alm)
    if isinstance(alm, np.ndarray) or is_device_array(alm):
        return [alm]
    raise TypeError(f"alm must be a complex128 array (or a list of them), got "
                    f"{type(alm).__name__}: rotate_alm works in place, as healpy's")


def _host_copy(name, a):
    if isinstance(a, np.ndarray):
        if not a.flags.writeable:
            raise ValueError(f"{name} is read-only: rotate_alm rotates in place")
        return np.ascontiguousarray(a)
    return a.get() if hasattr(a, "get") else a.copy_to_host()


def _write_back(a, host):
    if isinstance(a, np.ndarray):
        if not np.shares_memory(a, host):
            a[...] = host
    elif hasattr(a, "get"):          # CuPy: one copy up, into the caller's array (or view)
        import cupy

        a[...] = cupy.asarray(host)
    else:                            # Numba device array
        a.copy_to_device(np.ascontiguousarray(host))


def rotate_alm(alm, psi=0.0, theta=0.0, phi=0.0, matrix=None, lmax=None, mmax=None) -> None:
    """Rotate a_lm in place, as if the map they describe were rotated (healpy's
    ``rotate_alm``).

    The rotation is active, in a right-handed frame: first ``psi`` about the z axis, then
    ``theta`` about the original y axis, then ``phi`` about the original z axis, i.e. the
    matrix ``Rz(phi) Ry(theta) Rz(psi)``. T, E and B coefficients all rotate this way (E and B
    are rotation-invariant fields on the sphere). Computed by ducc0 on the host (Wigner-d
    recursion, O(lmax^3) operations): a device array (CuPy or Numba) is copied to the host,
    rotated and copied back into itself, so device in, device out, with two transfers and no
    GPU kernel.

    Parameters
    ----------
    alm : array, shape (nalm,) or (k, nalm), complex128; or a list of such 1-D arrays
        Coefficients in healpy's m-major order (:class:`sphgpu.AlmLayout`), overwritten with
        the rotated ones; a (3, nalm) array holds T, E, B. NumPy, CuPy or Numba device arrays.
    psi : float
        First rotation, about the z axis, in radians (any finite value).
    theta : float
        Second rotation, about the original y axis, in radians.
    phi : float
        Third rotation, about the original z axis, in radians.
    matrix : array_like, shape (3, 3), float64, optional
        A rotation matrix instead of the angles (they are then ignored, as in healpy), e.g.
        ``healpy.Rotator(coord=["G", "C"]).mat`` to go from Galactic to equatorial
        coordinates. It must be orthogonal with determinant +1 (to 1e-9).
    lmax : int, optional
        Band limit; inferred from the length of ``alm`` by default.
    mmax : int, optional
        Must equal ``lmax`` (healpy's requirement: a rotation mixes every m of each l; pad
        with :func:`sphgpu.resize_alm` first).

    Returns
    -------
    None
        As healpy's: the result is ``alm`` itself.

    Raises
    ------
    TypeError
        If ``alm`` is not an array (or list of them), or an angle is not a number.
    ValueError
        If ``alm`` is not complex128 (as healpy), an angle is not finite, ``matrix`` is not a 3x3 rotation, ``alm``'s length matches
        no layout (or not ``lmax``), ``mmax != lmax``, or ``alm`` holds NaN or infinity.
    """
    if matrix is not None:
        psi, theta, phi = euler_from_matrix(matrix)
    else:
        psi, theta, phi = _angle("psi", psi), _angle("theta", theta), _angle("phi", phi)
    items = _rows(alm)
    import ducc0          # the CPU engine, imported at the first call as by the cpu backend
    for i, a in enumerate(items):
        name = "alm" if len(items) == 1 and not isinstance(alm, (list, tuple)) else f"alm[{i}]"
        if np.dtype(a.dtype) != np.complex128:
            # ValueError as healpy's (its own test asks for it): a drop-in catches the same type
            raise ValueError(f"{name} must be complex128 (it is rotated in place), got dtype "
                            f"{a.dtype}")
        if not 1 <= a.ndim <= 2 or (a.ndim == 2 and isinstance(alm, (list, tuple))):
            raise ValueError(f"{name} must be 1-D (or a 2-D array of rows such as T, E, B), "
                             f"got shape {a.shape}")
        layout = _layout(name, a.shape[-1], lmax, mmax)
        host = _host_copy(name, a)
        check_finite(name, host)
        out = host if host.flags.writeable else host.copy()
        ducc0.sht.rotate_alm(out, layout.lmax, psi, theta, phi, nthreads=_host_threads.count(),
                             out=out)
        _write_back(a, out)
    return None
