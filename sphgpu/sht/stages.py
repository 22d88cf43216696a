"""The two steps of a transform as separate functions, on subsets of m and of rings.

A synthesis is ``leg2map(alm2leg(alm))`` and an analysis ``leg2alm(map2leg(maps))``, where the
"leg" array holds Delta_m(theta) = sum_l a_lm lambda_lm(cos theta) for every ring and m (the
paper's Delta_m; ducc0's "leg"). Splitting the transform here is what lets
:mod:`sphgpu.distributed` give each task a chunk of m for the Legendre step and a chunk of rings
for the ring-FFT step, as in the SHT paper's distributed algorithm.

Shapes and conventions, shared by every function:

* ``alm`` (k, n) complex128 holds the orders ``mvals`` *packed*: the block l = m..lmax of each m
  in ``mvals``, one after the other in the order given. For ``mvals = 0..mmax`` this is exactly
  healpy's m-major layout (:class:`sphgpu.AlmLayout`); for a contiguous range of m it is one
  slice of it (:func:`sphgpu.distributed.partition.alm_slice`).
* ``leg`` (k, nrings, len(mvals)) complex128: column i belongs to order ``mvals[i]``.
* ``maps`` (k, npix) float64 on ``geometry``, which may be a part of a larger grid
  (``RingGeometry.rings``): only its rings are computed.

Each step runs on the SHT backend module's ``stage_*`` function
(:class:`sphgpu.backends.SHTBackend`): "cpu" runs ducc0's own Legendre and ring steps
(``ducc0.sht.experimental``), "cuda" the kernels of the GPU transforms (NumPy in gives NumPy
out, device arrays in give device arrays out), the "reference" backend plain NumPy (small
sizes).
"""

from __future__ import annotations

import numpy as np

from .. import backends
from .._device import array_module, is_device_array
from .._validate import check_int

__all__ = ["packed_size", "alm2leg", "leg2alm", "leg2map", "map2leg"]


def _mvals(mvals, mmax):
    """mvals as a unique int64 array within 0..mmax (all of 0..mmax when None)."""
    if mvals is None:
        return np.arange(mmax + 1, dtype=np.int64)
    if isinstance(mvals, range):
        mvals = np.arange(mvals.start, mvals.stop, mvals.step)
    m = np.asarray(mvals)
    if m.ndim != 1 or m.shape[0] == 0 or np.dtype(m.dtype).kind not in "iu":
        raise ValueError(f"mvals must be a non-empty 1-D array of integers, got {mvals!r}")
    m = m.astype(np.int64)
    if m.min() < 0 or m.max() > mmax:
        raise ValueError(f"mvals must lie in 0..mmax={mmax}, got {m.min()}..{m.max()}")
    if np.unique(m).shape[0] != m.shape[0]:
        raise ValueError("mvals must not repeat an order m")
    return m


def _packed_start(layout, m):
    """Where (l=0, m) would sit in the packed array, for each m (int64; negative when a block
    that does not start at m = 0 puts that hypothetical entry before the array)."""
    sizes = layout.lmax + 1 - m
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64) - m


def packed_size(layout, mvals=None) -> int:
    """Number of coefficients of the orders ``mvals`` (all when None): sum of lmax - m + 1."""
    m = _mvals(mvals, layout.mmax)
    return int(np.sum(layout.lmax + 1 - m))


def _xp_of(a):
    """NumPy for host arrays, the device array module (CuPy) for device arrays."""
    return np if isinstance(a, np.ndarray) else array_module()


def _nthreads(nthreads):
    return None if nthreads is None else check_int("nthreads", nthreads, minimum=0)


def _check_2d(name, a, dtype, width=None):
    a = a.astype(dtype, copy=False) if is_device_array(a) else np.ascontiguousarray(a, dtype=dtype)
    if a.ndim != 2 or (width is not None and a.shape[1] != width):
        want = f"(k, {width})" if width is not None else "(k, n)"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")
    return a


def _check_leg(leg, nrings, nm):
    leg = (leg.astype(np.complex128, copy=False) if is_device_array(leg)
           else np.ascontiguousarray(leg, dtype=np.complex128))
    if leg.ndim != 3 or leg.shape[1:] != (nrings, nm):
        raise ValueError(f"leg must have shape (k, {nrings}, {nm}) (maps, rings, orders), "
                         f"got {leg.shape}")
    return leg


def alm2leg(alm, layout, geometry, mvals=None, *, backend="cpu", nthreads=None):
    """Legendre step of a synthesis for the orders ``mvals`` on every ring of ``geometry``.

    alm (k, packed_size(layout, mvals)) complex128 -> leg (k, nrings, len(mvals)) complex128.
    """
    m = _mvals(mvals, layout.mmax)
    alm = _check_2d("alm", alm, np.complex128, packed_size(layout, m))
    impl = backends.load("sht", backend)
    return impl.stage_alm2leg(alm, layout, geometry, m, _packed_start(layout, m),
                              nthreads=_nthreads(nthreads))


def leg2alm(leg, layout, geometry, mvals=None, *, backend="cpu", nthreads=None):
    """Adjoint Legendre step: leg (k, nrings, len(mvals)) -> alm (k, packed_size) complex128,
    ``alm_lm = sum over rings of leg[ring, m] * lambda_lm(cos theta_ring)``."""
    m = _mvals(mvals, layout.mmax)
    leg = _check_leg(leg, geometry.nrings, m.shape[0])
    impl = backends.load("sht", backend)
    return impl.stage_leg2alm(leg, layout, geometry, m, _packed_start(layout, m),
                              packed_size(layout, m), nthreads=_nthreads(nthreads))


def leg2map(leg, geometry, mvals=None, *, backend="cpu", nthreads=None):
    """Ring-FFT step of a synthesis: leg (k, nrings, nm) -> maps (k, npix) float64.

    ``mvals`` names the order of each column of ``leg`` (default 0..nm-1); orders missing from
    it contribute nothing, so a part of the orders gives that part's share of the map.
    """
    leg = leg if is_device_array(leg) else np.asarray(leg)
    if leg.ndim != 3:
        raise ValueError(f"leg must have shape (k, nrings, nm), got {leg.shape}")
    leg = _check_leg(leg, geometry.nrings, leg.shape[2])
    if mvals is not None:
        m = _mvals(mvals, np.iinfo(np.int64).max)
        if m.shape[0] != leg.shape[2]:
            raise ValueError(f"mvals names {m.shape[0]} orders but leg has {leg.shape[2]} columns")
        if not np.array_equal(m, np.arange(m.shape[0])):
            xp = _xp_of(leg)
            full = xp.zeros(leg.shape[:2] + (int(m.max()) + 1,), dtype=np.complex128)
            full[:, :, xp.asarray(m)] = leg
            leg = full
    impl = backends.load("sht", backend)
    return impl.stage_leg2map(leg, geometry, nthreads=_nthreads(nthreads))


def map2leg(maps, geometry, mmax, mvals=None, *, quadrature=True, backend="cpu", nthreads=None):
    """Ring-FFT step of an analysis: maps (k, npix) -> leg (k, nrings, len(mvals)) complex128.

    ``leg[ring, m] = w_ring * sum_j map_j e^{-i m phi_j}`` over the ring's pixels, with ``w`` the
    pixel quadrature weight (``quadrature=True``, as map2alm needs; ``False`` gives the plain
    adjoint of :func:`leg2map`). ``mvals`` (default 0..mmax) selects the orders returned.
    """
    mmax = check_int("mmax", mmax, minimum=0)
    m = _mvals(mvals, mmax)
    maps = _check_2d("maps", maps, np.float64, geometry.npix)
    impl = backends.load("sht", backend)
    leg = impl.stage_map2leg(maps, geometry, int(m.max()), quadrature,
                             nthreads=_nthreads(nthreads))
    if m.shape[0] == leg.shape[2]:
        return leg
    xp = _xp_of(leg)
    return xp.ascontiguousarray(leg[:, :, xp.asarray(m)])
