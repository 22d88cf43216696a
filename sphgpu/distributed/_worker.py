"""What a Dask worker keeps between tasks: set-up made once per worker and reused.

Tasks receive small descriptions of their set-up (a HEALPix nside, or a grid with a content
token), never the set-up itself, and find it here. A GPU transform's plan is cached by the
identity of its geometry (:func:`sphgpu.sht._cuda.plan`): a geometry unpickled anew for every
task would make a new plan (tables uploaded, launch parameters looked up) in every task, so
each worker keeps one geometry object per token.

Everything here runs on the workers; the functions are module-level so that Dask sends them
by reference. No Dask import: this module is also imported by the client side, cheaply.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .._kept import Kept

__all__ = ["geometry_ref", "geometry", "to_device", "cached", "clear"]

#: set-ups kept per worker: a worker seldom serves more than a few grids and band limits at once
KEEP = 16
_KEPT = Kept(KEEP)


def cached(key: tuple, make):
    """The worker's object for ``key``, made by ``make()`` the first time (the least recently
    used of more than :data:`KEEP` is dropped)."""
    return _KEPT.get(key, make)


def clear() -> None:
    """Forget every kept set-up (tests; a worker that must free memory)."""
    _KEPT.clear()


def _token(g) -> str:
    h = hashlib.sha1(g.kind.encode())
    for a in (g.theta, g.phi0, g.nphi, g.ringstart, g.weight):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def geometry_ref(g):
    """What a task receives for geometry ``g``: ``("healpix", nside)`` for a whole HEALPix
    grid (whose object :meth:`RingGeometry.healpix` already keeps per process), otherwise
    ``("grid", token, g)`` with a hash of its rings, under which each worker keeps the first
    copy it receives."""
    if g.kind == "healpix" and g.nside is not None and g.pixel_offset == 0 \
            and g.nrings == 4 * g.nside - 1:
        return ("healpix", g.nside)
    return ("grid", _token(g), g)


def geometry(ref):
    """The worker's geometry object for a :func:`geometry_ref` (one object per grid and
    worker, so plans cached by geometry are found again)."""
    from ..geometry import RingGeometry

    if ref[0] == "healpix":
        return RingGeometry.healpix(ref[1])
    return cached(("geometry", ref[1]), lambda: ref[2])


def to_device(a):
    """``a`` on this worker's GPU (a CuPy array; no copy if it is one already)."""
    import cupy

    return cupy.asarray(a)
