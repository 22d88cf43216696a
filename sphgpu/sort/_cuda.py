"""The "cuda" backend of the radix sort: host side of :mod:`sphgpu.sort._cuda_kernels`.

A sort is 1 + passes kernel launches on CuPy's current stream, and the host never waits for the
GPU: one histogram kernel counts the digits of all passes (and clears the look-back words), its
last block to finish scans each pass's row into the start of every digit and flags the passes in
which one digit holds every key, and one onesweep kernel per pass moves the keys, and the uint32
permutation, between the result and one scratch buffer (a flagged pass only copies). The first
pass makes the permutation up (the input order) instead of reading it, the last writes it as
int64 directly. Keys of every dtype go in as their bits (uint8/16/32/64) with the transform
the kernels apply when they take a digit (:func:`sphgpu.sort._cuda_kernels.radix_key`).
Scratch arrays are kept per stream and shape for the next sort of that shape. Device arrays
(CuPy or Numba) in give CuPy arrays out; NumPy in gives NumPy out. Under Numba's CUDA simulator
the same code runs on NumPy arrays, with small tiles so that tests cross many of them.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from typing import NamedTuple

import numba
import numpy as np

from .. import _tuning
from .._device import SIMULATOR
from .._device import array_module as _xp
from . import _cuda_kernels as K
from .._fast_launch import launch as _launch

__all__ = ["sort_pairs", "choose_radix_bits", "launch_shape", "clear_scratch",
           "DEFAULT_RADIX_BITS", "ACCEPTS_DEVICE_ARRAYS", "NATIVE_KEYS"]

ACCEPTS_DEVICE_ARRAYS = True
#: takes the keys' own bits and a transform (see :mod:`sphgpu.sort.api`)
NATIVE_KEYS = True
DEFAULT_RADIX_BITS = 8       # digits of CUB's onesweep for 32-bit keys; balanced by _balanced_bits
MAX_RADIX_BITS = 8           # the per-warp digit counters must fit in shared memory
THREADS = 32 if SIMULATOR else 256          # the simulator runs one Python thread per thread
#: keys per thread; clipped to what shared memory holds (18 for uint32 keys + permutation).
#: Bigger tiles mean fewer look-back words and barriers per key, until registers spill: 24 was
#: the fastest of 15 to 30 at 256 threads, and faster than 384 or 512 threads a block
#: (benchmarks/results/sort_check.json, "variants").
DEFAULT_ITEMS = 8 if SIMULATOR else 24
#: register cap of the onesweep kernel: 64 gives 4 resident blocks of 256 threads per SM,
#: faster than no cap with and without the permutation (benchmarks/results/sort_check.json,
#: "variants"). 0 means no cap. benchmarks/sort_check.py times the choices. 64-bit keys:
#: MAX_REGISTERS_WIDE alone, MAX_REGISTERS_WIDE_PERM with the permutation: with it 64 was
#: the fastest cap of 64, 80, 96 and none; keys alone lose at 64 on some GPUs, so they take 80
#: (the whole sorts at these caps: benchmarks/results/sort.json, sort_h200.json).
MAX_REGISTERS = 64
MAX_REGISTERS_WIDE = 80
MAX_REGISTERS_WIDE_PERM = 64
#: most keys a sort takes: the pass kernel indexes a tile's keys with uint32, and the last
#: tile's indices past n (up to a tile, at most 48 KB of shared memory / 4 B) must not wrap
MAX_KEYS = 2**32 - 2**16
HIST_THREADS = 32 if SIMULATOR else 256
FILL_THREADS = 32 if SIMULATOR else 256
FILL_MAX_BLOCKS = 2048
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


@functools.lru_cache(maxsize=None)
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
    size_class = (n - 1).bit_length()                  # ceil(log2(n))
    # this process's answers are keyed by the device's number, which costs less to learn than
    # its name (the key of the cache on disk): a sort's host time matters at PIC sizes
    import cupy

    fast_key = (cupy.cuda.runtime.getDevice(), itemsize, key_bits, size_class, want_perm)
    found = _tuned.get(fast_key)
    if found is None:
        key = (f"{_tuning.device_name()}|onesweep|bytes={itemsize}|key_bits={key_bits}"
               f"|log2n={size_class}|perm={int(want_perm)}")
        cached = _tuning.lookup("sort_launch", key)
        found = tuple(cached) if cached is not None else _measure(
            size_class, key_bits, itemsize, want_perm)
        if cached is None:
            _tuning.store("sort_launch", key, list(found))
        _tuned[fast_key] = found
    return found


def _measure(size_class, key_bits, itemsize, want_perm):
    """Time the candidates: the balanced digit widths for the fewest passes and one pass more
    (each pass reads and writes every key once, so the pass count dominates), each with the
    default and a smaller tile. Every candidate compiles its kernels (in the warm-up call of
    :func:`sphgpu._tuning.seconds`), so the list is short."""
    import cupy

    n = 1 << min(size_class, 26)          # larger sorts scale like this one
    rng = np.random.default_rng(0)
    keys = cupy.asarray(rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(f"u{itemsize}"))
    fewest = math.ceil(key_bits / MAX_RADIX_BITS)
    widths = sorted({math.ceil(key_bits / p) for p in (fewest, fewest + 1)
                     if p <= key_bits})
    # enough calls that the GPU's time, not the host's few launches, decides: at PIC sizes
    # (2^23 keys, 0.2 ms a sort) 3 calls once chose 23 items over 16, which then measured
    # 186 against 163 us a sort on the GPU
    repeat = max(3, 3 * (1 << 26) // n)
    times = {}
    for bits in widths:
        for it in sorted({launch_shape(bits, itemsize, want_perm)[1],
                          launch_shape(bits, itemsize, want_perm, items=15)[1]}):
            times[(bits, it)] = _tuning.seconds(
                lambda: sort_pairs(keys, key_bits, bits, want_perm, items=it), repeat)
    return min(times, key=times.get)


def choose_radix_bits(n, key_bits, itemsize, want_perm):
    """Radix bits for a sort the caller left to us: the autotuner's choice, else the balanced
    width of :func:`_balanced_bits`."""
    tuned = _tune(n, key_bits, itemsize, want_perm)
    return tuned[0] if tuned else _balanced_bits(key_bits)


def _no_trace(label):
    pass


def sort_pairs(ukeys, key_bits, radix_bits, want_perm, items=None, threads=None,
               max_registers=None, trace=None, transform=K.UNSIGNED):
    """Stable LSD radix sort of keys on the low ``key_bits`` bits of their radix keys.

    ``ukeys`` holds the raw bits of the keys as uint8/16/32/64 (a view of any supported key
    dtype of that width) and ``transform`` (:data:`~sphgpu.sort._cuda_kernels.UNSIGNED`,
    ``SIGNED`` or ``FLOAT``) says what they are: the kernels map each key to its radix key
    (:func:`~sphgpu.sort._cuda_kernels.radix_key`) whenever they take a digit, so signed and
    float keys cost no pass of their own, and the sorted keys come back with their own bits.

    ``items`` (keys per thread in a tile) defaults to the autotuner's choice when
    ``radix_bits`` is the tuned one, else to :data:`DEFAULT_ITEMS`; ``threads`` (a multiple of
    32) to :data:`THREADS`, ``max_registers`` to :data:`MAX_REGISTERS` (64-bit keys:
    :data:`MAX_REGISTERS_WIDE`, with the permutation :data:`MAX_REGISTERS_WIDE_PERM`).
    Returns ``(sorted_keys, perm)`` (perm int64, or None without
    ``want_perm``), of the same kind (NumPy or device) as ``ukeys``; ``ukeys`` is never
    written. ``trace``, if given, is called with a label after each stage is queued
    (benchmarks/sort_check.py records CUDA events there).

    Everything is queued on CuPy's current stream (where, by the CUDA array interface's rules,
    the keys were made) and the host never waits for the GPU: a sort is 1 + passes launches.
    """
    trace = trace or _no_trace
    if radix_bits > MAX_RADIX_BITS:
        raise ValueError(f"radix_bits={radix_bits}: the cuda backend supports at most "
                         f"{MAX_RADIX_BITS}")
    xp = _xp()
    host = isinstance(ukeys, np.ndarray) and xp is not np
    keys = ukeys
    if not (isinstance(keys, xp.ndarray) and keys.flags.c_contiguous):
        keys = xp.ascontiguousarray(xp.asarray(ukeys))
    if xp is np and not keys.flags.writeable:
        # the simulator's launch copies NumPy arguments back: never into the caller's array
        keys = keys.copy()
    n = keys.shape[0]
    if n > MAX_KEYS:
        raise ValueError(f"the cuda backend sorts at most {MAX_KEYS} keys (2**32 - 2**16)")
    if items is None:
        tuned = _tune(n, key_bits, keys.dtype.itemsize, want_perm)
        items = tuned[1] if tuned and tuned[0] == radix_bits else None
    if n <= 1 or key_bits == 0:
        return _unmoved(keys, want_perm, host, xp)
    plan = _plan(keys.dtype, n, key_bits, radix_bits, want_perm, items, threads,
                 max_registers, transform)
    stream, stream_key = _stream(xp)
    scratch = _scratch(xp, stream_key, keys.dtype, n, plan.passes, radix_bits, plan.ntiles,
                       want_perm)
    try:
        _launch(plan.histogram, plan.blocks, HIST_THREADS, stream, keys, key_bits, scratch.hist,
                scratch.status_flat, scratch.digit_start, scratch.constant, scratch.ticket)
        trace("histogram and digit scan")
        if plan.fill:
            # every key of a digit has the same bits: write the runs, rank nothing
            words = xp.empty(math.ceil(n / 4), dtype=np.uint32)
            trace("buffers")
            _launch(K.fill_kernel(FILL_THREADS, transform),
                    max(1, min(math.ceil(words.size / (FILL_THREADS * 4)), FILL_MAX_BLOCKS)),
                    FILL_THREADS, stream, scratch.digit_start, words, n)
            trace("fill")
            out = words.view(np.uint8)[:n]
            return (out.get(), None) if host else (out, None)
        # made while the GPU counts: a small sort's time is mostly the host's (xp.empty, not
        # empty_like, which takes more host time; benchmarks/results/sort_check.json, "stages")
        out = xp.empty(n, dtype=keys.dtype)
        perm = xp.empty(n, dtype=np.int64) if want_perm else None
        trace("buffers")
        src_keys, src_perm = keys, scratch.unused
        last = plan.passes - 1
        for p, (kernel, shift) in enumerate(zip(plan.kernels, plan.shifts)):
            # the last pass writes the result; counting back from it, passes alternate between
            # the result and one scratch buffer
            dst_keys = out if (last - p) % 2 == 0 else scratch.keys
            if not want_perm:
                dst_perm = scratch.unused
            else:
                dst_perm = perm if p == last else scratch.perm[p % 2]
            _launch(kernel, plan.ntiles, plan.threads, stream, src_keys, src_perm, dst_keys,
                    dst_perm, shift, scratch.digit_start, scratch.status, scratch.constant, p)
            src_keys, src_perm = dst_keys, dst_perm
            trace(f"pass {p} (bits {p * radix_bits}..{min(key_bits, (p + 1) * radix_bits) - 1})")
    except BaseException:
        _SCRATCH.clear()          # its histogram may no longer be zero
        raise
    if host:
        return out.get(), (perm.get() if want_perm else None)
    return out, perm


class _Plan(NamedTuple):
    """What a sort of one shape launches, worked out once (:func:`_plan`)."""
    passes: int
    ntiles: int
    threads: int
    blocks: int           # of the histogram kernel
    histogram: object
    fill: bool            # 8-bit keys alone: runs written from the digit starts, no pass
    kernels: tuple        # one pass kernel a pass
    shifts: tuple         # each pass's shift, as the pass kernel takes it


@functools.lru_cache(maxsize=256)
def _plan(dtype, n, key_bits, radix_bits, want_perm, items, threads, max_registers, transform):
    """The :class:`_Plan` of a sort: kernels, launch shapes and shifts. Cached, since at PIC
    sizes the host's time to the first launch is part of what the caller waits for."""
    passes = math.ceil(key_bits / radix_bits)
    kt, wide = _key_types(dtype)
    itemsize = np.dtype(dtype).itemsize
    threads, items = launch_shape(radix_bits, itemsize, want_perm, items, threads)
    ntiles = math.ceil(n / (threads * items))
    blocks = max(1, min(math.ceil(n / (HIST_THREADS * HIST_ITEMS)), HIST_MAX_BLOCKS))
    histogram = K.histogram_kernel(passes, radix_bits, HIST_THREADS, kt, transform)
    fill = itemsize == 1 and key_bits == 8 and passes == 1 and not want_perm
    cache = max_registers is None          # (see onesweep_kernel's cache)
    if max_registers is None:
        max_registers = (MAX_REGISTERS if itemsize <= 4 else
                         MAX_REGISTERS_WIDE_PERM if want_perm else MAX_REGISTERS_WIDE)
    shift_bits = K.status_shift(n)
    kernels, shifts = [], []
    for p in range(0 if fill else passes):
        shift = p * radix_bits
        bits = min(radix_bits, key_bits - shift)
        mode = 0 if not want_perm else 1 if p == 0 else 2
        kernels.append(K.onesweep_kernel(bits, threads, items, kt, mode, shift_bits,
                                         max_registers, transform=transform, cache=cache))
        shifts.append(wide(shift))
    return _Plan(passes, ntiles, threads, blocks, histogram, fill, tuple(kernels),
                 tuple(shifts))


@functools.lru_cache(maxsize=None)
def _key_types(dtype):
    """(Numba type of the keys, NumPy type of a shift as the pass kernel takes it); made once
    per dtype, since Numba builds its types through a cached constructor that costs
    microseconds a call."""
    kt = numba.from_dtype(dtype)
    return kt, np.dtype(str(K.wide_type(kt))).type


def _unmoved(keys, want_perm, host, xp):
    """The result of a sort in which no key moves: a copy of the keys, the identity."""
    n = keys.shape[0]
    out = keys.copy()
    perm = xp.arange(n, dtype=np.int64) if want_perm else None
    if host:
        return out.get(), (perm.get() if want_perm else None)
    return out, perm


def _stream(xp):
    """(the stream to launch on, a key naming it) for CuPy's current stream: 0 for the legacy
    default stream, else the CuPy stream itself, which :func:`sphgpu._fast_launch.launch`
    takes as it is (no Numba stream is made for it, nor kept)."""
    if xp is np:
        return 0, 0
    current = xp.cuda.get_current_stream()
    key = (xp.cuda.runtime.getDevice(), current.ptr)
    return (0 if current.ptr == 0 else current), key


#: scratch of the last few sort shapes: (stream, dtype, n, passes, ...) -> _Scratch
_SCRATCH = OrderedDict()
SCRATCH_ENTRIES = 2


def _scratch(xp, stream_key, dtype, n, passes, radix_bits, ntiles, want_perm):
    key = (stream_key, np.dtype(dtype).str, n, passes, radix_bits, ntiles, want_perm)
    found = _SCRATCH.get(key)
    if found is None:
        found = _SCRATCH[key] = _Scratch(xp, dtype, n, passes, radix_bits, ntiles, want_perm)
        while len(_SCRATCH) > SCRATCH_ENTRIES:
            _SCRATCH.popitem(last=False)
    else:
        _SCRATCH.move_to_end(key)
    return found


def clear_scratch():
    """Give the cached scratch buffers of recent sorts back to CuPy's pool."""
    _SCRATCH.clear()


class _Scratch:
    """The work arrays of sorts of one shape on one stream, made once and reused.

    ``hist`` (passes * R,) int64 and ``ticket`` (1,) uint32 are zero between sorts (made
    zeroed; the histogram kernel's last block clears them after its scan); ``status`` (passes,
    ntiles * R + 1) holds the look-back words and tile counter of each pass, cleared by the
    histogram kernel (``status_flat`` is the same memory); ``digit_start`` (passes, R) int64
    and ``constant`` (passes,) int32 come from its scan. ``keys`` and ``perm`` (two uint32
    arrays, for three passes or more) hold the keys and the permutation between passes.
    ``unused`` stands in for the permutation the first pass does not read (and that none reads
    without one): not the keys themselves, since the simulator copies each argument and writes
    every copy back. Sorts on one stream run one after another on the GPU, so they can share
    these.
    """

    def __init__(self, xp, dtype, n, passes, radix_bits, ntiles, want_perm):
        R = 1 << radix_bits
        status_dtype = np.uint32 if K.status_shift(n) == 30 else np.uint64
        status = xp.empty((passes, ntiles * R + 1), dtype=status_dtype)
        arrays = {
            "hist": xp.zeros(passes * R, dtype=np.int64),
            "ticket": xp.zeros(1, dtype=np.uint32),
            "status": status,
            "status_flat": status.reshape(-1),
            "digit_start": xp.empty((passes, R), dtype=np.int64),
            "constant": xp.empty(passes, dtype=np.int32),
            "keys": xp.empty(n, dtype=dtype) if passes > 1 else xp.empty(1, dtype=dtype),
            "unused": xp.empty(1, dtype=np.uint32),
        }
        for name, a in arrays.items():
            setattr(self, name, a)
        self.perm = [xp.empty(n if want_perm and passes > 1 else 1, np.uint32),
                     xp.empty(n if want_perm and passes > 2 else 1, np.uint32)]
