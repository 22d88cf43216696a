"""The "reference" sort backend: NumPy's stable argsort, the specification the others must match.

Backend interface (shared with ``_cpu`` and ``_cuda``)::

    sort_pairs(ukeys, key_bits, radix_bits, want_perm) -> (sorted_ukeys, perm or None)

``ukeys`` is a 1-D uint32 or uint64 array of radix keys (see :mod:`sphgpu.sort.keys`) that all
fit in ``key_bits`` bits (the public API checks this); ``radix_bits`` is the digit width of a
pass, which the reference accepts and ignores. ``perm`` is int64 with
``sorted_ukeys == ukeys[perm]``, and equal keys keep their input order (stable). ``ukeys`` is
never modified.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sort_pairs", "choose_radix_bits", "DEFAULT_RADIX_BITS", "ACCEPTS_DEVICE_ARRAYS",
           "NATIVE_KEYS"]

#: Digit width used when the caller gives none (the reference does not use it).
DEFAULT_RADIX_BITS = 8
#: takes NumPy radix keys (uint32/uint64) only; see :mod:`sphgpu.sort.api`
ACCEPTS_DEVICE_ARRAYS = False
NATIVE_KEYS = False


def choose_radix_bits(n, key_bits, itemsize, want_perm):
    """Radix bits for ``n`` keys of ``key_bits`` significant bits: DEFAULT_RADIX_BITS, fewer
    for keys of fewer bits (the size and dtype do not change the choice on this backend)."""
    return min(DEFAULT_RADIX_BITS, max(key_bits, 1))


def sort_pairs(ukeys, key_bits, radix_bits, want_perm):
    """Stable sort of radix keys: ``(ukeys[perm], perm)``, perm int64 (None unless want_perm)."""
    ukeys = np.asarray(ukeys)
    perm = np.argsort(ukeys, kind="stable").astype(np.int64, copy=False)
    return ukeys[perm], (perm if want_perm else None)
