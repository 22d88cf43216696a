"""The "cuda" backend of the radix sort: host side of :mod:`sphgpu.sort._cuda_kernels`.

Per pass: tile histograms, an exclusive scan of the (digit, tile) counts with CuPy (CUB), and
the stable scatter; keys and the uint32 permutation ping-pong between two buffers. A pass whose
digit is the same for every key is skipped. Device arrays (CuPy or Numba) in give CuPy arrays
out; NumPy in gives NumPy out. Under Numba's CUDA simulator the same code runs on NumPy arrays.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _tuning
from .._device import SIMULATOR
from .._device import array_module as _xp
from . import _cuda_kernels as K

__all__ = ["sort_pairs", "choose_radix_bits", "DEFAULT_RADIX_BITS", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = True
DEFAULT_RADIX_BITS = 4       # fastest in the H200 sweep of benchmarks/sort.py (4..8)
MAX_RADIX_BITS = 8           # the per-thread digit counters must fit in shared memory
AUTOTUNE_MIN_N = 1 << 20     # smaller sorts take the defaults: launches dominate them
_tuned = {}                  # this process's answers of :func:`_tune`


def _tune(n, key_bits, itemsize, want_perm):
    """(radix_bits, items per thread) for sorts of this size class, measured once per GPU on
    random keys of the same width and key bits, then kept in the tuning cache
    (:mod:`sphgpu._tuning`, file sort_launch.json). None where defaults apply."""
    if SIMULATOR or n < AUTOTUNE_MIN_N or not _tuning.enabled():
        return None
    size_class = math.ceil(math.log2(n))
    key = (f"{_tuning.device_name()}|bytes={itemsize}|key_bits={key_bits}|log2n={size_class}"
           f"|perm={int(want_perm)}")
    if key not in _tuned:
        cached = _tuning.lookup("sort_launch", key)
        _tuned[key] = tuple(cached) if cached is not None else _measure(
            size_class, key_bits, itemsize, want_perm)
        if cached is None:
            _tuning.store("sort_launch", key, list(_tuned[key]))
    return _tuned[key]


def _measure(size_class, key_bits, itemsize, want_perm):
    import cupy

    n = 1 << min(size_class, 26)          # larger sorts scale like this one
    dtype = np.uint32 if itemsize == 4 else np.uint64
    rng = np.random.default_rng(0)
    keys = cupy.asarray(rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype))
    times = {}
    for bits in range(4, min(MAX_RADIX_BITS, key_bits) + 1):
        threads, items = K.tile_shape(bits, itemsize)
        for it in sorted({items, items // 2}):
            times[(bits, it)] = _tuning.seconds(
                lambda: sort_pairs(keys, key_bits, bits, want_perm, items=it), 3)
    return min(times, key=times.get) if times else (DEFAULT_RADIX_BITS, None)


def choose_radix_bits(n, key_bits, itemsize, want_perm):
    """Radix bits for a sort the caller left to us: the autotuner's choice, else the default."""
    tuned = _tune(n, key_bits, itemsize, want_perm)
    return tuned[0] if tuned else min(DEFAULT_RADIX_BITS, key_bits)


def sort_pairs(ukeys, key_bits, radix_bits, want_perm, items=None):
    """Stable LSD radix sort of uint32/uint64 keys on their low ``key_bits`` bits.

    ``items`` (keys per thread in a tile) defaults to the autotuner's choice when
    ``radix_bits`` is the tuned one, else to :func:`_cuda_kernels.tile_shape`. Returns
    ``(sorted_keys, perm)`` (perm int64, or None without ``want_perm``), of the same
    kind (NumPy or device) as ``ukeys``.
    """
    if radix_bits > MAX_RADIX_BITS:
        raise ValueError(f"radix_bits={radix_bits}: the cuda backend supports at most "
                         f"{MAX_RADIX_BITS}")
    xp = _xp()
    host = isinstance(ukeys, np.ndarray) and xp is not np
    keys = xp.asarray(ukeys)
    n = keys.shape[0]
    perm = xp.arange(n, dtype=np.uint32) if want_perm else None
    if items is None:
        tuned = _tune(n, key_bits, keys.dtype.itemsize, want_perm)
        items = tuned[1] if tuned and tuned[0] == radix_bits else None
    if n > 1 and key_bits > 0:
        if n >= 2**32:
            raise ValueError("the cuda backend sorts fewer than 2**32 keys")
        kt = numba.from_dtype(keys.dtype)
        # ping-pong buffers of our own: the caller's keys are read, never written
        kbufs = [xp.empty_like(keys), None]
        pbufs = [xp.empty_like(perm), None] if want_perm else [xp.empty(1, np.uint32)] * 2
        for shift in range(0, key_bits, radix_bits):
            bits = min(radix_bits, key_bits - shift)
            threads, default_items = K.tile_shape(bits, keys.dtype.itemsize)
            items = items or default_items
            ntiles = math.ceil(n / (threads * items))
            hist = xp.empty((1 << bits) * ntiles, dtype=np.int32)
            sh = keys.dtype.type(shift)
            K.histogram_kernel(bits, threads, items, kt)[ntiles, threads](keys, sh, hist)
            if int(xp.count_nonzero(hist.reshape(1 << bits, ntiles).sum(axis=1))) == 1:
                continue                    # every key has the same digit: nothing moves
            offsets = xp.cumsum(hist, dtype=np.int64) - hist
            i = 1 if keys is kbufs[0] else 0
            if kbufs[i] is None:
                kbufs[i] = xp.empty_like(keys)
                if want_perm:
                    pbufs[i] = xp.empty_like(perm)
            K.scatter_kernel(bits, threads, items, kt, want_perm)[ntiles, threads](
                keys, perm if want_perm else pbufs[0], sh, offsets, kbufs[i], pbufs[i])
            keys = kbufs[i]
            if want_perm:
                perm = pbufs[i]
    if keys is ukeys or (host and n <= 1):
        keys = keys.copy()                  # never hand back the caller's own array
    out_perm = perm.astype(np.int64) if want_perm else None
    if host:
        return keys.get(), (out_perm.get() if want_perm else None)
    return keys, out_perm
