"""Stable radix sort with free key bits b and radix bits r (Helluy 2011), on CPU and GPU.

:func:`radix_sort` and :func:`argsort` sort every integer and float dtype in NumPy's stable order
(``numpy.argsort(kind="stable")``), with the permutation or values carried along. Backends:
"cpu" (Numba, parallel), "reference" (NumPy), "cuda" (Numba CUDA). Also here: the key transforms
(:mod:`sphgpu.sort.keys`), the paper's particle-in-cell test (:mod:`sphgpu.sort.pic`) and the
bucketing of points on the sphere into HEALPix cells (:func:`bucket_points`).
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from . import pic
from .api import argsort, radix_sort
from .cells import bucket_points, healpix_cells
from .keys import bits_needed, from_radix_keys, to_radix_keys

__all__ = ["radix_sort", "argsort", "to_radix_keys", "from_radix_keys", "bits_needed",
           "healpix_cells", "bucket_points", "pic"]
