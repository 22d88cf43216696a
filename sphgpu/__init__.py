"""sphgpu: GPU computing on the sphere, for notebooks.

Importing sphgpu touches no GPU and prints nothing; the backend ("cuda", "cpu", "reference") is
chosen at the first call (see :mod:`sphgpu.backends`).
"""

from .alm import AlmLayout
from .backends import BackendUnavailableError, cuda_available, use_backend
from .geometry import RingGeometry
from ._validate import UNSEEN
from .sht import (alm2cl, alm2map, alm2map_der1, alm2map_spin, almxfl, anafast, gauss_beam,
                  map2alm, map2alm_spin, pixwin, smoothing, synalm, synfast)
from .sht import beam2bl, bl2beam, map2alm_lsq, resize_alm, rotate_alm
from .sht import SHT
from .sort import argsort, radix_sort
from .io import read_alm, read_cl, read_map, write_alm, write_cl, write_map
from .pixelfunc import nest2ring, reorder, ring2nest, ud_grade
from .warmup import warmup

def __getattr__(name):
    """A public subpackage not imported above (``sphgpu.sims``, ``from sphgpu import tpacf``),
    imported on first use: found in this package's folder, not listed, so that a new capability
    needs no entry here. Several compile or load Numba code at import, and Numba alone holds
    about 60 MB of a kernel's memory, which a notebook that never calls them should not pay."""
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = "0.2.0"   # the one copy: pyproject.toml reads it (tests/test_release.py)

__all__ = [
    "RingGeometry", "AlmLayout", "SHT",
    "alm2map", "map2alm", "alm2map_spin", "map2alm_spin", "alm2map_der1", "synalm", "synfast",
    "alm2cl", "anafast", "almxfl", "gauss_beam", "smoothing", "pixwin", "UNSEEN",
    "rotate_alm", "resize_alm", "beam2bl", "bl2beam", "map2alm_lsq",
    "radix_sort", "argsort",
    "read_map", "write_map", "read_alm", "write_alm", "read_cl", "write_cl",
    "reorder", "nest2ring", "ring2nest", "ud_grade",
    "use_backend", "cuda_available", "BackendUnavailableError", "warmup",
]
