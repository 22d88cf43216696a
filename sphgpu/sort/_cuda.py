"""The "cuda" backend of the radix sort: host side of :mod:`sphgpu.sort._cuda_kernels`.

One histogram kernel counts the digits of all passes, and CuPy scans each pass's row into the
start of every digit; while the GPU does that, the host makes the buffers of all passes. Then
the one host sync of a sort learns which passes have a digit shared by all keys (those are
skipped: nothing would move), and one onesweep kernel per remaining pass moves the keys, and the
uint32 permutation, between two buffers; the first pass makes the permutation up (the input
order) instead of reading it, the last writes it as int64 directly. Device arrays (CuPy or
Numba) in give CuPy arrays out; NumPy in gives NumPy out. Under Numba's CUDA simulator the same
code runs on NumPy arrays, with small tiles so that tests cross many of them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _tuning
from .._device import SIMULATOR
from .._device import array_module as _xp
from . import _cuda_kernels as K

__all__ = ["sort_pairs", "choose_radix_bits", "launch_shape", "DEFAULT_RADIX_BITS",
           "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = True
DEFAULT_RADIX_BITS = 8       # digits of CUB's onesweep for 32-bit keys; balanced by _balanced_bits
MAX_RADIX_BITS = 8           # the per-warp digit counters must fit in shared memory
THREADS = 32 if SIMULATOR else 256          # the simulator runs one Python thread per thread
DEFAULT_ITEMS = 8 if SIMULATOR else 15      # keys per thread (CUB: 256 x 15 for 32-bit keys)
#: register cap of the onesweep kernel, for 3 resident blocks of 256 threads per SM. Uncapped,
#: ptxas (CUDA 13, sm_90) gives 72 registers to the passes carrying the permutation of uint32
#: keys but 102 to keys-only passes (2 blocks per SM), which fit 80 without spilling; uint64
#: keys spill a few words at 80. 0 means no cap. benchmarks/sort_check.py times the choices.
MAX_REGISTERS = 80
HIST_THREADS = 32 if SIMULATOR else 256
HIST_ITEMS = 16              # keys a histogram thread reads at least, before the grid caps
HIST_MAX_BLOCKS = 1024
AUTOTUNE_MIN_N = 1 << 20     # smaller sorts take the defaults: launches dominate them
_tuned = {}                  # this process's answers of :func:`_tune`


def _balanced_bits(key_bits, most=MAX_RADIX_BITS):
    """The smallest digit width that sorts key_bits in the fewest passes of at most ``most``
    bits (10 bits: 2 passes of 5, not 8 + 2): a pass costs about the same for any width up to 8,
    and narrower digits mean fewer counters and look-back words."""
    passes = math.ceil(key_bits / most)
    return math.ceil(key_bits / passes)


def launch_shape(radix_bits, key_bytes, with_perm, items=None, threads=None):
    """(threads, items per thread) of the onesweep kernel, items clipped to what fits in shared
    memory at these radix bits."""
    threads = threads or THREADS
    most = K.max_items(radix_bits, threads, key_bytes, with_perm)
    if most < 1:
        raise ValueError(f"radix_bits={radix_bits} with {threads} threads does not fit in "
                         f"shared memory")
    return threads, max(1, min(items or DEFAULT_ITEMS, most))


def _tune(n, key_bits, itemsize, want_perm):
    """(radix_bits, items per thread) for sorts of this size class, measured once per GPU on
    random keys of the same width and key bits, then kept in the tuning cache
    (:mod:`sphgpu._tuning`, file sort_launch.json). None where defaults apply."""
    if SIMULATOR or n < AUTOTUNE_MIN_N or not _tuning.enabled():
        return None
    size_class = math.ceil(math.log2(n))
    key = (f"{_tuning.device_name()}|onesweep|bytes={itemsize}|key_bits={key_bits}"
           f"|log2n={size_class}|perm={int(want_perm)}")
    if key not in _tuned:
        cached = _tuning.lookup("sort_launch", key)
        _tuned[key] = tuple(cached) if cached is not None else _measure(
            size_class, key_bits, itemsize, want_perm)
        if cached is None:
            _tuning.store("sort_launch", key, list(_tuned[key]))
    return _tuned[key]


def _measure(size_class, key_bits, itemsize, want_perm):
    """Time the candidates: the balanced digit widths for the fewest passes and one pass more
    (each pass reads and writes every key once, so the pass count dominates), each with the
    default and a smaller tile. Every candidate compiles its kernels (in the warm-up call of
    :func:`sphgpu._tuning.seconds`), so the list is short."""
    import cupy

    n = 1 << min(size_class, 26)          # larger sorts scale like this one
    dtype = np.uint32 if itemsize == 4 else np.uint64
    rng = np.random.default_rng(0)
    keys = cupy.asarray(rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype))
    fewest = math.ceil(key_bits / MAX_RADIX_BITS)
    widths = sorted({math.ceil(key_bits / p) for p in (fewest, fewest + 1)
                     if p <= key_bits})
    times = {}
    for bits in widths:
        for it in sorted({launch_shape(bits, itemsize, want_perm)[1],
                          launch_shape(bits, itemsize, want_perm, items=10)[1]}):
            times[(bits, it)] = _tuning.seconds(
                lambda: sort_pairs(keys, key_bits, bits, want_perm, items=it), 3)
    return min(times, key=times.get)


def choose_radix_bits(n, key_bits, itemsize, want_perm):
    """Radix bits for a sort the caller left to us: the autotuner's choice, else the balanced
    width of :func:`_balanced_bits`."""
    tuned = _tune(n, key_bits, itemsize, want_perm)
    return tuned[0] if tuned else _balanced_bits(key_bits)


def _no_trace(label):
    pass


def _host_bools(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def sort_pairs(ukeys, key_bits, radix_bits, want_perm, items=None, threads=None,
               max_registers=None, trace=None):
    """Stable LSD radix sort of uint32/uint64 keys on their low ``key_bits`` bits.

    ``items`` (keys per thread in a tile) defaults to the autotuner's choice when
    ``radix_bits`` is the tuned one, else to :data:`DEFAULT_ITEMS`; ``threads`` (a multiple of
    32) to :data:`THREADS`, ``max_registers`` to :data:`MAX_REGISTERS`. Returns
    ``(sorted_keys, perm)`` (perm int64, or None without ``want_perm``), of the same kind (NumPy
    or device) as ``ukeys``; ``ukeys`` is never written. ``trace``, if given, is called with a
    label after each stage is queued (benchmarks/sort_check.py records CUDA events there).
    """
    trace = trace or _no_trace
    if radix_bits > MAX_RADIX_BITS:
        raise ValueError(f"radix_bits={radix_bits}: the cuda backend supports at most "
                         f"{MAX_RADIX_BITS}")
    xp = _xp()
    host = isinstance(ukeys, np.ndarray) and xp is not np
    keys = xp.asarray(ukeys)
    n = keys.shape[0]
    if n >= 2**32:
        raise ValueError("the cuda backend sorts fewer than 2**32 keys")
    if items is None:
        tuned = _tune(n, key_bits, keys.dtype.itemsize, want_perm)
        items = tuned[1] if tuned and tuned[0] == radix_bits else None
    if n <= 1 or key_bits == 0:
        return _unmoved(keys, want_perm, host, xp)
    passes = math.ceil(key_bits / radix_bits)
    R = 1 << radix_bits
    kt = numba.from_dtype(keys.dtype)
    keys_view = _kernel_view(keys, sync=True)       # the caller's stream has made the keys
    hist = xp.zeros((passes, R), dtype=np.int64)
    blocks = max(1, min(math.ceil(n / (HIST_THREADS * HIST_ITEMS)), HIST_MAX_BLOCKS))
    K.histogram_kernel(passes, radix_bits, HIST_THREADS, kt)[blocks, HIST_THREADS](
        keys_view, key_bits, _kernel_view(hist).reshape(passes * R))
    constant = (hist == n).any(axis=1)  # a pass in which one digit holds every key moves nothing
    digit_start = xp.cumsum(hist, axis=1) - hist
    trace("histogram and digit scan")
    # buffers for every pass, made while the GPU counts, so that after the sync below the
    # host only launches kernels
    threads, items = launch_shape(radix_bits, keys.dtype.itemsize, want_perm, items, threads)
    ntiles = math.ceil(n / (threads * items))
    bufs = _Buffers(keys, keys_view, passes, want_perm, ntiles << radix_bits, digit_start, xp)
    trace("buffers")
    constant = _host_bools(constant)                # the one host sync
    active = [p for p in range(passes) if not constant[p]]
    trace("constant-digit check")
    if not active:
        return _unmoved(keys, want_perm, host, xp)
    max_registers = MAX_REGISTERS if max_registers is None else max_registers
    shift_bits = K.status_shift(n)
    src_keys, src_perm = keys, bufs.unused
    for which, p in enumerate(active):
        shift = p * radix_bits
        bits = min(radix_bits, key_bits - shift)
        last = which == len(active) - 1
        mode = 0 if not want_perm else (1 if which == 0 else 2)
        dst_keys = bufs.keys[which % 2]
        dst_perm = bufs.unused if not want_perm else (
            bufs.perm_final if last else bufs.perm[which % 2])
        kernel = K.onesweep_kernel(bits, threads, items, kt, mode, shift_bits, max_registers)
        kernel[ntiles, threads](bufs.view(src_keys), bufs.view(src_perm), bufs.view(dst_keys),
                                bufs.view(dst_perm), kt(shift), bufs.view(digit_start), p,
                                bufs.view(bufs.status), which)
        src_keys, src_perm = dst_keys, dst_perm
        trace(f"pass {p} (bits {shift}..{shift + bits - 1})")
    out, perm = src_keys, (bufs.perm_final if want_perm else None)
    if host:
        return out.get(), (perm.get() if want_perm else None)
    return out, perm


def _unmoved(keys, want_perm, host, xp):
    """The result of a sort in which no key moves: a copy of the keys, the identity."""
    n = keys.shape[0]
    out = keys.copy()
    perm = xp.arange(n, dtype=np.int64) if want_perm else None
    if host:
        return out.get(), (perm.get() if want_perm else None)
    return out, perm


class _Buffers:
    """The arrays of the passes, with the views kernel launches take.

    Keys ping-pong between ``keys[0]`` and ``keys[1]`` (the caller's keys are only read), the
    uint32 permutation between ``perm[0]`` and ``perm[1]``; the last pass writes the int64
    ``perm_final``. ``status`` holds a row of look-back words per pass (``words`` of them) and
    the pass's tile counter in its last column: one memset for all. ``unused`` stands in for the
    permutation the first pass does not read (and that none reads without one): not the keys
    themselves, since the simulator copies each argument and writes every copy back.
    """

    def __init__(self, keys, keys_view, passes, want_perm, words, digit_start, xp):
        n = keys.shape[0]
        shift_bits = K.status_shift(n)
        self.status = xp.zeros((passes, words + 1),
                               dtype=np.uint32 if shift_bits == 30 else np.uint64)
        self.keys = [xp.empty_like(keys), xp.empty_like(keys) if passes > 1 else None]
        self.perm = [xp.empty(n, dtype=np.uint32) if want_perm and passes > 1 else None,
                     xp.empty(n, dtype=np.uint32) if want_perm and passes > 2 else None]
        self.perm_final = xp.empty(n, dtype=np.int64) if want_perm else None
        self.unused = xp.empty(1, dtype=np.uint32)
        self._views = {id(a): _kernel_view(a) for a in (
            *self.keys, *self.perm, self.perm_final, self.unused, self.status, digit_start)
            if a is not None}
        self._views[id(keys)] = keys_view

    def view(self, a):
        return self._views[id(a)]


def _kernel_view(a, sync=False):
    """What a kernel launch takes for array ``a``: a Numba view of a CuPy array, made once per
    sort. Numba would otherwise convert each CuPy argument at every launch and, by the CUDA
    array interface's rules, synchronize the stream CuPy names in it, so every launch would
    wait for the GPU to go idle. Our own buffers are made and used on the default stream in
    order, so they need no sync; the caller's keys get one. NumPy arrays (the simulator) pass
    through."""
    if isinstance(a, np.ndarray):
        return a
    from numba import cuda

    return cuda.as_cuda_array(a, sync=sync)
