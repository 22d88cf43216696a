"""@cuda.jit kernels of the onesweep LSD radix sort: one histogram kernel, then one kernel a pass.

:func:`histogram_kernel` reads the keys once and counts the digits of *every* pass into a
``(passes, 2**r)`` array, and its last block to finish scans each row into the global start of
each digit and flags the passes whose digit is the same for all keys (they only copy).
:func:`onesweep_kernel` then does a whole pass in one launch, reading each key once: a block
takes the next tile (``threads * items`` keys) from a global counter, ranks its keys stably by
digit, publishes its per-digit counts, learns how many keys of each digit the earlier tiles hold
by a decoupled look-back over their published counts (Merrill & Garland 2016; Adinets & Merrill
2022, "Onesweep"), and writes its keys, through a digit-sorted copy in shared memory, to their
final places. The histogram / scan / reorder of the paper (Helluy 2011) are all still there, but
the keys cross memory twice a pass (read, write) instead of three times, and the host never
waits for the GPU.

Keys stay in memory as they are (their bits as uint8/16/32/64): a kernel maps a key to its
radix key (:func:`radix_key`: the sign flip of signed integers, the float transform with -0.0
tied to +0.0 and NaN last) each time it takes a digit, a few integer instructions, so signed
and float keys cost no pass of their own and leave the sort with their own bits.

Look-back words: ``status[pass, tile * R + digit]`` (uint32, or uint64 for n >= 2**30) hold a
flag in their top bits (:data:`AGGREGATE`: the tile's own count of that digit; :data:`INCLUSIVE`:
the count of that digit over tiles 0..tile) and the count in the low bits, so one read
sees value and flag together, and the look-back reads them with plain relaxed loads, without
a fence (:func:`_load_relaxed`: the atomic reads it replaced loaded the L2 and slowed every
pass; the pass times: benchmarks/results/sort_check.json, "variants"). Tiles are taken in the
order blocks start (an atomic counter, not
blockIdx), so a tile only ever waits for tiles that running blocks already hold: no deadlock.

Ranking inside a tile: warp ``w`` owns ``32 * items`` consecutive keys and walks them in rounds
of 32 (lane order = input order). In each round the lanes holding the same digit find each other
(one ``ballot_sync`` per digit bit, as CUB does; a shared-memory table under Numba's
simulator, which lacks warp intrinsics, chosen when the kernel is built), the
lowest of them bumps the warp's counter of the digit, and each key's rank is the counter before
the round plus the number of its peers in lower lanes. A scan over warps and one over digits
(warp shuffles on the GPU) turn these into positions in the tile. Equal digits keep their input
order, so every pass is stable.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, int32, int64, uint32, uint64

from .._device import SIMULATOR
from .keys import FLOAT, SIGNED, UNSIGNED

__all__ = ["histogram_kernel", "onesweep_kernel", "fill_kernel", "radix_key",
           "max_items", "status_shift", "UNSIGNED", "SIGNED", "FLOAT",
           "AGGREGATE", "INCLUSIVE", "WARP"]

WARP = 32
#: Flag values of a look-back word, above its count (see :func:`status_shift`).
AGGREGATE = 1
INCLUSIVE = 2
_SHARED_BYTES = 48 * 1024          # static shared memory a block may declare
#: look-back reads by ld.relaxed.gpu and no fence (True), or by atomic adds of 0 after a fence
LOOKBACK_RELAXED = True


def status_shift(n: int) -> int:
    """Bit position of the flag in a look-back word for n keys: counts must stay below it.
    uint32 words (shift 30) up to 2**30 keys, uint64 words (shift 40) beyond."""
    return 30 if n < (1 << 30) else 40


#: bits of +inf, by float width: exponent all ones, mantissa zero
_INF_BITS = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}


@functools.lru_cache(maxsize=None)
def wide_type(key_type):
    """The integer type digits are computed in for keys stored as ``key_type``: uint32 for keys
    of up to 32 bits, uint64 for 64 (Numba widens narrower integers anyway)."""
    return uint64 if np.dtype(str(key_type)).itemsize == 8 else uint32


@functools.lru_cache(maxsize=None)
def radix_key(key_type, transform: int):
    """A device function ``key -> radix key``: the order-preserving map of a key's raw bits
    (stored as the unsigned ``key_type`` of its width) to an unsigned integer of
    :func:`wide_type`, whose unsigned order is ``numpy.argsort(kind="stable")``'s order.

    ``transform`` UNSIGNED: the bits themselves. SIGNED: the sign bit flipped. FLOAT: -0.0
    maps where +0.0 does (they tie), every NaN (any sign or payload) to all ones of the width
    (after +inf; NaNs tie, so they keep their input order), a negative value to its bits
    inverted, a non-negative one to its bits with the sign bit set. The kernels apply it each
    time they take a digit, to the raw keys they move, so keys are never transformed in
    memory and come out with their own bits (NaN payloads, -0.0) without an inverse.
    """
    width = 8 * np.dtype(str(key_type)).itemsize
    wide = wide_type(key_type)
    np_wide = np.dtype(str(wide)).type
    SIGN = np_wide(1 << (width - 1))
    ALL = np_wide((1 << width) - 1)
    MAGNITUDE = np_wide((1 << (width - 1)) - 1)
    if transform == UNSIGNED:
        @cuda.jit(device=True, inline=True)
        def to_radix(key):
            return wide(key)
    elif transform == SIGNED:
        @cuda.jit(device=True, inline=True)
        def to_radix(key):
            return wide(wide(key) ^ SIGN)
    elif transform == FLOAT:
        INF = np_wide(_INF_BITS[width])

        @cuda.jit(device=True, inline=True)
        def to_radix(key):
            b = wide(key)
            if wide(b & MAGNITUDE) > INF:        # NaN: after everything, all equal
                return ALL
            if b == SIGN:                        # -0.0: where +0.0 goes
                return SIGN
            if b >= SIGN:                        # negative: larger magnitude sorts first
                return wide(b ^ ALL)
            return wide(b | SIGN)
    else:
        raise ValueError(f"transform must be UNSIGNED, SIGNED or FLOAT, got {transform}")
    return to_radix


def _fixed_shared_bytes(radix_bits: int, threads: int) -> int:
    """Static shared memory of :func:`onesweep_kernel` besides the staged tile (bytes)."""
    R = 1 << radix_bits
    warps = threads // WARP
    scans = 0 if _shuffle_scan(radix_bits, threads) else 3 * R     # scan (2, R), tile_count
    table = warps * WARP if SIMULATOR else 1
    # warp_count, tile_excl + dest_base, the table, warp_total, tile_sh and alignment
    return 4 * (warps * R + scans + 2 * R + table + warps) + 64


def _shuffle_scan(radix_bits: int, threads: int) -> bool:
    """Whether the pass kernel scans digits by warp shuffles (one digit a thread; 2 barriers)
    rather than Hillis-Steele in shared memory (the simulator, which lacks shuffles, or fewer
    threads than digits; a barrier a step)."""
    return not SIMULATOR and threads >= (1 << radix_bits)


def max_items(radix_bits: int, threads: int, key_bytes: int, with_perm: bool) -> int:
    """Most keys per thread whose staged tile (keys, and the uint32 permutation) still fits in
    static shared memory next to the counters of :func:`onesweep_kernel`."""
    per_key = key_bytes + (4 if with_perm else 0)
    return (_SHARED_BYTES - _fixed_shared_bytes(radix_bits, threads)) // (per_key * threads)


@functools.lru_cache(maxsize=None)
def histogram_kernel(passes: int, radix_bits: int, threads: int, key_type, transform=UNSIGNED,
                     copies: int | None = None):
    """Digit counts of all passes at once, scanned into each digit's start by the block that
    finishes last, and the look-back words of all passes cleared: one launch before the passes.

    Launch: any grid (grid-stride loops), block ``threads``. Arguments: keys (n,) of
    ``key_type`` (uint8/16/32/64: the raw bits of the keys, read through
    ``radix_key(key_type, transform)``); key_bits (int); hist (passes * 2**radix_bits,) int64,
    zero, to which each block adds its counts (``hist[p * R + d]`` = number of keys whose radix
    key's digit of pass p, bits ``p*r .. min(p*r + r, key_bits) - 1``, is d) and which the last
    block leaves zero again for the next sort; status (words,) uint32 or uint64, the flattened
    look-back words and tile counters of :func:`onesweep_kernel`, set to 0 here so that a sort
    needs no memset launch of its own; digit_start (passes, 2**radix_bits) int64, written with
    the exclusive scan of each row of the counts (where each digit's keys start in the pass's
    output); constant (passes,) int32, written: 1 where one digit holds all n keys (the pass
    would move nothing, so :func:`onesweep_kernel` only copies), else 0; ticket (1,) uint32,
    zero, counting finished blocks (left zero).

    The scan is done by the last block to finish (each block fences its counts before it takes
    a ticket, so the last ticket sees every count), not by a kernel of its own: at PIC sizes a
    sort takes about as long on the GPU as the host takes to issue a launch, and the launch
    saved is host time the caller waits for.

    ``copies``: the block's counts are kept in that many copies, warp w adding into copy
    w % copies (default :func:`histogram_copies`). With few digits (the PIC sort's 2 x 32)
    every warp of a block otherwise adds into the same few words, and shared-memory atomics on
    one word wait for each other. On the PIC sort a copy a warp was no slower than one copy,
    within the spread of the runs (the stage's time: benchmarks/results/sort_check.json,
    "pic_8M"); kept since it costs no pass and no launch.
    """
    R = 1 << radix_bits
    SIZE = passes * R
    COPIES = copies or histogram_copies(passes, radix_bits, threads)
    CSIZE = COPIES * SIZE
    UNROLL = 4
    wide = wide_type(key_type)
    to_radix = radix_key(key_type, transform)
    scan_rows = _row_scan(passes, radix_bits, threads)

    @cuda.jit(device=True, inline=True)
    def count_digits(key, counts, key_bits, row0):
        """Add the key's digit of every pass to the counts at row0 (row p at row0 + p * R)."""
        u = to_radix(key)
        for p in range(passes):
            shift = p * radix_bits
            bits = min(radix_bits, key_bits - shift)
            mask = (1 << bits) - 1
            d = uint32((u >> wide(shift)) & wide(mask))
            cuda.atomic.add(counts, row0 + uint32(p * R) + d, uint32(1))

    @cuda.jit(cache=True)
    def kernel(keys, key_bits, hist, status, digit_start, constant, ticket):
        # uint32: a count, and a digit's start, is at most n < 2**32 (MAX_KEYS); the last
        # block scans in this array and one more of its size, 8 B a digit in all
        counts = cuda.shared.array(CSIZE, uint32)
        held = cuda.local.array(UNROLL, key_type)
        last = cuda.shared.array(1, int32)
        t = cuda.threadIdx.x
        row0 = uint32(((t // WARP) % COPIES) * SIZE)
        for j in range(t, CSIZE, threads):
            counts[j] = 0
        cuda.syncthreads()
        n = keys.shape[0]
        stride = cuda.gridDim.x * threads
        start = cuda.blockIdx.x * threads + t
        for j in range(start, status.shape[0], stride):
            status[j] = 0
        # UNROLL coalesced loads in flight per thread before any is counted; unsigned indices
        # (Numba wraps signed ones around, a few instructions each), and no bounds checks
        # where all UNROLL keys exist (every round but the grid's last)
        for first in range(start, n, stride * UNROLL):
            if first + (UNROLL - 1) * stride < n:
                for u in range(UNROLL):
                    held[u] = keys[uint64(first + u * stride)]
                for u in range(UNROLL):
                    count_digits(held[u], counts, key_bits, row0)
            else:
                for u in range(UNROLL):
                    i = first + u * stride
                    held[u] = keys[uint64(i)] if i < n else key_type(0)
                for u in range(UNROLL):
                    if first + u * stride < n:
                        count_digits(held[u], counts, key_bits, row0)
        cuda.syncthreads()
        for j in range(t, SIZE, threads):
            c = counts[j]
            for k in range(1, COPIES):
                c += counts[j + k * SIZE]
            if c != 0:
                cuda.atomic.add(hist, j, int64(c))
        # the block's counts before its ticket, as a grid barrier orders them: every thread's
        # at the block barrier, then one fence and the ticket by thread 0
        cuda.syncthreads()
        if t == 0:
            cuda.threadfence()
            last[0] = int32(cuda.atomic.add(ticket, 0, uint32(1)) == cuda.gridDim.x - 1)
            cuda.threadfence()
        cuda.syncthreads()
        if last[0] == 0:
            return
        other = cuda.shared.array(SIZE, uint32)
        flag = cuda.shared.array(passes, int32)
        scan_rows(hist, n, digit_start, constant, counts, other, flag, t)
        if t == 0:
            ticket[0] = 0

    return kernel


#: shared memory the histogram kernel's copies of the counts may take (bytes)
HIST_COPIES_BYTES = 16 * 1024


def histogram_copies(passes: int, radix_bits: int, threads: int) -> int:
    """Copies of the counts for :func:`histogram_kernel`: one a warp where they fit in
    HIST_COPIES_BYTES (a power of two, so that each copy serves as many warps), at least one."""
    size = 4 * passes * (1 << radix_bits)
    copies = 1
    while 2 * copies <= max(1, threads // WARP) and 2 * copies * size <= HIST_COPIES_BYTES:
        copies *= 2
    return copies


def _row_scan(passes: int, radix_bits: int, threads: int):
    """A device function ``scan_rows(hist, n, digit_start, constant, a, b, flag, t)`` run by
    one block of ``threads`` threads (t: the thread's index; a and b (passes * R,) uint32 and
    flag (passes,) int32 in shared memory, their contents not needed): digit_start[p] = the
    exclusive scan of hist[p * R : (p + 1) * R], constant[p] = 1 where one digit holds all n
    keys, hist left zero. The caller has made every block's counts visible (a fence after
    its last ticket); no block of this launch has read hist, so no stale copy is cached."""
    R = 1 << radix_bits
    SIZE = passes * R

    @cuda.jit(device=True, inline=True)
    def scan_rows(hist, n, digit_start, constant, a, b, flag, t):
        for p in range(t, passes, threads):
            flag[p] = 0
        cuda.syncthreads()
        # a gets each row shifted by one (the inclusive scan of the shifted row is the
        # exclusive scan of the row); the caller's barrier ended every read of a
        for j in range(t, SIZE, threads):
            v = hist[j]
            hist[j] = 0
            if v == n:
                flag[j // R] = 1                 # same value from any thread: no race
            if (j + 1) % R != 0:
                a[j + 1] = uint32(v)
            if j % R == 0:
                a[j] = 0
        cuda.syncthreads()
        # Hillis-Steele inclusive scan within each row of R, between a and b
        for s in range(radix_bits):
            step = 1 << s
            for j in range(t, SIZE, threads):
                v = a[j] if s % 2 == 0 else b[j]
                if j % R >= step:
                    v += a[j - step] if s % 2 == 0 else b[j - step]
                if s % 2 == 0:
                    b[j] = v
                else:
                    a[j] = v
            cuda.syncthreads()
        for j in range(t, SIZE, threads):
            digit_start[j // R, j % R] = int64(b[j] if radix_bits % 2 == 1 else a[j])
        for p in range(t, passes, threads):
            constant[p] = flag[p]

    return scan_rows


@functools.lru_cache(maxsize=None)
def fill_kernel(threads: int, transform: int):
    """The sorted keys of a sort of 8-bit keys without the permutation, written from the digit
    starts alone: with 8 key bits the digit is the whole radix key, so every key of digit d has
    the same bits (d, or d with the sign bit flipped for signed keys) and the output is runs of
    equal bytes. This replaces the one pass's ranking with a pass of stores.

    Launch: any grid (grid-stride loops), block ``threads``. Arguments: digit_start (passes,
    256) int64 from :func:`histogram_kernel` (row 0 is used); out_words (ceil(n / 4),) uint32, the
    output as words (little-endian: byte j of word w is sorted key 4 w + j; the bytes past n
    are written too, with digit 255); n (int), the number of keys.
    """
    FLIP = uint32(0x80 if transform == SIGNED else 0)

    @cuda.jit(cache=True)
    def kernel(digit_start, out_words, n):
        start = cuda.shared.array(257, int64)       # start[256] = n: the end of digit 255
        t = cuda.threadIdx.x
        for j in range(t, 256, threads):
            start[j] = digit_start[0, j]
        if t == 0:
            start[256] = n
        cuda.syncthreads()
        stride = cuda.gridDim.x * threads
        w = cuda.blockIdx.x * threads + t
        nwords = out_words.shape[0]
        if w < nwords:
            # the digit of the first position: the largest d with start[d] <= 4 w
            lo = 0
            hi = 256
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if start[mid] <= int64(w) * 4:
                    lo = mid
                else:
                    hi = mid
            d = lo
            while w < nwords:
                # positions only grow, so the digit is found by walking on from the last one
                p = int64(w) * 4
                word = uint32(0)
                for j in range(4):
                    while d < 255 and start[d + 1] <= p + j:
                        d += 1
                    word = uint32(word | (uint32(uint32(d) ^ FLIP) << uint32(8 * j)))
                out_words[w] = word
                w += stride

    return kernel


# -- one ranking round of a warp (see the module docstring), in two builds ---------------------

FULL = 0xFFFFFFFF


@cuda.jit(device=True)
def _rank_round_table(peers, value, valid, lane, w, table, warp_count):
    """One ranking round without warp intrinsics (Numba's simulator; ``peers`` is unused):
    the rank of this lane's key among the warp's keys with digit ``value`` so far; the lanes'
    values go through the shared ``table``. Every thread of the block runs every round, so
    the barriers are uniform. The write of the counter needs no barrier after it: the next
    round reads counters only after its own first barrier."""
    table[w, lane] = value
    cuda.syncthreads()
    below = 0
    total = 0
    for other in range(WARP):
        if table[w, other] == value:
            total += 1
            if other < lane:
                below += 1
    before = warp_count[w, value] if valid else 0
    cuda.syncthreads()                  # table and counters read by every lane
    if valid and below == 0:
        warp_count[w, value] = before + total
    return before + below


@functools.lru_cache(maxsize=None)
def _peers_vote(nbits: int):
    """A device function ``peers(value) -> uint32``: the mask of the lanes whose ``value``
    (uint32, below ``2**nbits``) equals this lane's, from one ballot per bit, kept where this
    lane's bit is set and inverted where it is clear (CUB's MatchAny). Written as one block of
    inline PTX, four instructions a bit: built from Numba's ballot_sync the same test compiled
    to 64-bit compares and per-bit select masks that the compiler computed for all the keys
    ahead of the ballots, which cost registers and spills. Real GPU only (the simulator has no
    inline PTX and no ballots)."""
    from llvmlite import ir
    from numba import types
    try:
        from numba.cuda.extending import intrinsic
    except ImportError:                              # Numba's own CUDA target
        from numba.core.extending import intrinsic

    body = []
    for b in range(nbits):
        body += [f"and.b32 bit, $1, {1 << b};", "setp.ne.u32 p, bit, 0;",
                 "vote.sync.ballot.b32 bit, p, 0xffffffff;", "@!p not.b32 bit, bit;",
                 "and.b32 acc, acc, bit;"]
    text = ("{ .reg .pred p; .reg .b32 bit; .reg .b32 acc; mov.b32 acc, 0xffffffff; "
            + " ".join(body) + " mov.b32 $0, acc; }")

    @intrinsic
    def peers(typingctx, value):
        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32)])
            # side effect: the ballots must stay where every lane of the warp runs them
            return builder.call(ir.InlineAsm(fnty, text, "=r,r", side_effect=True),
                                [args[0]])
        return types.uint32(types.uint32), codegen

    return _stable_identity(peers, f"peers_vote_{nbits}")


def _stable_identity(fn, name):
    """Give an intrinsic the same pickling identity in every process. Numba's disk cache keys a
    kernel on the pickled values of its closure, and an intrinsic pickles with a uuid made
    afresh in each process: every process missed the cache and compiled the pass kernel again
    (most of a fresh process's first sort: benchmarks/results/sort.json, "fresh_process")."""
    fn._set_uuid(f"sphgpu.sort._cuda_kernels.{name}")
    return fn


@cuda.jit(device=True, inline=True)
def _read_atomic(status, p, j, zero):
    """``status[p, j]`` by an atomic add of ``zero`` (works everywhere, the simulator too)."""
    return cuda.atomic.add(status, (p, j), zero)


@functools.lru_cache(maxsize=None)
def _load_relaxed():
    """A device function ``load(status, p, j)``: ``status[p, j]`` of a 2-D uint32 or uint64
    array, read with ``ld.relaxed.gpu`` (PTX) from the GPU's point of coherence (L2), for
    the look-back. Each word carries its own flag and count, so a relaxed read, which sees a
    whole word either before or after another block's atomic add, is all it needs: no fence
    and no atomic. An atomic add of 0, the portable way to read it, is a read-modify-write
    at L2 for every digit of every tile passed over. Volatile inline PTX: the compiler keeps
    every read inside the spin loop. Real GPU only."""
    from llvmlite import ir
    from numba import types
    try:
        from numba.cuda import cgutils
        from numba.cuda.extending import intrinsic
    except ImportError:                              # Numba's own CUDA target
        from numba.core import cgutils
        from numba.core.extending import intrinsic

    @intrinsic
    def load(typingctx, ary, i, j):
        if not isinstance(ary, types.Array) or ary.ndim != 2:
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            arr = context.make_array(aryty)(context, builder, value=args[0])
            inds = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:],
                                                                           sig.args[1:])]
            ptr = cgutils.get_item_pointer(context, builder, aryty, arr, inds)
            width = aryty.dtype.bitwidth
            fnty = ir.FunctionType(ir.IntType(width), [ptr.type])
            text = f"ld.relaxed.gpu.global.u{width} $0, [$1];"
            asm = ir.InlineAsm(fnty, text, ("=r" if width == 32 else "=l") + ",l",
                               side_effect=True)
            return builder.call(asm, [ptr])

        return ary.dtype(ary, i, j), codegen

    return _stable_identity(load, "load_relaxed")


@functools.lru_cache(maxsize=None)
def _rank_round_leader():
    """A device function for one ranking round, ``(peers, value, valid, lane, w, table,
    warp_count) -> int32``: the rank of this lane's key among the warp's keys with digit
    ``value`` so far. The highest of its ``peers`` (same digit this round, valid lanes only)
    adds their number to the warp's counter with one shared atomic, and its old value reaches
    every peer by a shuffle. Lanes with no valid peer (keys past the end) have no leader and
    get a value they never use. Atomics of one warp on one shared word take effect in the
    order the warp issues them, so round k + 1 sees round k's count (CUB ranks the same way).
    Returns ``rank | value << 16``, through a shuffle to the lane itself: otherwise ptxas
    adds the rank's two parts only where the staging uses them, after the barrier, and keeps
    both and the digit in registers until then (120 bytes of spills at 64 registers; with the
    packed digit and rank the staging takes the digit from here). ``table`` is unused here."""

    @cuda.jit(device=True, inline=True)
    def rank_round(peers, value, valid, lane, w, table, warp_count):
        below = int32(cuda.popc(uint32(peers & uint32(cuda.lanemask_lt()))))
        leader = int32(int32(WARP - 1) - int32(cuda.clz(peers)))     # -1 without peers
        old = int32(0)
        if lane == leader:
            old = int32(cuda.atomic.add(warp_count, (w, value), int32(cuda.popc(peers))))
        old = int32(cuda.shfl_sync(FULL, old, leader & int32(WARP - 1)))
        return int32(cuda.shfl_sync(FULL, int32(old + below) | int32(value << 16), lane))

    return rank_round


@cuda.jit(device=True, inline=True)
def _stage(key, packed, i, w, warp_count, stage_keys, stage_perm, perm_in, perm_mode):
    """Put key ``i`` (its rank and digit ``packed`` as rank | digit << 16) at its place in the
    digit-sorted tile, and its permutation entry (perm_mode 1: i itself, 2: perm_in[i])."""
    packed = uint32(packed)
    pos = uint32(warp_count[w, uint32(packed >> uint32(16))] + uint32(packed & uint32(0xFFFF)))
    stage_keys[pos] = key
    if perm_mode == 1:
        stage_perm[pos] = i
    elif perm_mode == 2:                # loaded here: fewer registers
        stage_perm[pos] = perm_in[i]


@cuda.jit(device=True, inline=True)
def _write(j, shift, mask, stage_keys, stage_perm, dest_base, keys_out, perm_out, with_perm,
           to_radix):
    """Write the j-th key of the digit-sorted tile (and its permutation entry) to its place."""
    key = stage_keys[j]
    dest = uint32(dest_base[uint32((to_radix(key) >> shift) & mask)] + j)
    keys_out[dest] = key
    if with_perm:
        perm_out[dest] = stage_perm[j]


@functools.lru_cache(maxsize=None)
def onesweep_kernel(radix_bits: int, threads: int, items: int, key_type, perm_mode: int,
                    shift_bits: int, max_registers: int | None = None,
                    publish_inclusive: bool = True, transform: int = UNSIGNED,
                    cache: bool = False):
    """One stable pass of the LSD radix sort on the digit
    ``(radix_key(key) >> shift) & (2**radix_bits - 1)`` (:func:`radix_key` of ``key_type`` and
    ``transform``; keys move with their raw bits).

    Launch: grid (ntiles,) with ``ntiles = ceil(n / (threads * items))``, block ``threads`` (a
    multiple of 32), n + threads * items < 2**32 (indices are uint32). Arguments:

    - keys_in (n,) ``key_type`` (uint8/16/32/64); keys_out (n,) the same dtype;
    - perm_in (n,) uint32 and perm_out (n,) uint32 or int64: the permutation carried along.
      ``perm_mode`` 0: none (pass any arrays), 1: the input order itself (perm_in is not read:
      the first pass), 2: read perm_in;
    - shift, of :func:`wide_type` (mixing signed and unsigned 64-bit integers would make Numba
      compute in floating point);
    - digit_start (passes, >= 2**radix_bits) int64: ``digit_start[p, d]`` is where the keys of
      digit d start in the output (the exclusive scan of row p of the counts, written by
      :func:`histogram_kernel`);
    - status (passes, ntiles * 2**radix_bits + 1) uint32 (``shift_bits`` 30) or uint64 (40),
      zeroed (by :func:`histogram_kernel`): row p holds this pass's look-back words, and its
      last word counts the tiles handed out;
    - constant (passes,) int32: where ``constant[p]`` is set the pass only copies keys_in to
      keys_out (and the permutation along), decided on the GPU so that the host never waits;
    - p: the pass, the row of digit_start, status and constant.
    Two-dimensional arrays with a row index, rather than row views, keep the host's work per
    launch small.

    Each tile publishes its digit counts once its ranking has made them. ``max_registers`` caps
    the registers of a thread (more resident blocks, maybe spills; ignored by the simulator).
    ``publish_inclusive=False`` is for tests only: tiles after the first then publish only
    their own counts, so every look-back walks back to tile 0 over aggregates (Numba's
    simulator runs blocks one after another, so it would otherwise only ever meet inclusive
    words).
    """
    R = 1 << radix_bits
    WARPS = threads // WARP
    TILE = threads * items
    WSPAN = WARP * items                       # keys of one warp
    LOG_R = radix_bits
    if threads % WARP or items < 1:
        raise ValueError(f"threads={threads} must be a multiple of {WARP}, items={items} >= 1")
    wide = wide_type(key_type)
    MASK = np.dtype(str(wide)).type(R - 1)
    to_radix = radix_key(key_type, transform)
    with_perm = perm_mode != 0
    status_type = uint32 if shift_bits == 30 else uint64
    AGG = AGGREGATE << shift_bits
    INC = INCLUSIVE << shift_bits
    COUNT_MASK = (1 << shift_bits) - 1
    TABLE_RANK = SIMULATOR
    if SIMULATOR:
        rank_round, peers_of, TABLE = _rank_round_table, None, (WARPS, WARP)
    else:
        rank_round, peers_of, TABLE = (_rank_round_leader(),
                                         _peers_vote(radix_bits), (1, 1))
    # output base of each digit, dest_base[d] + j for the tile's j-th key: digit_start[d]
    # counts every key of a smaller digit, so it is at least tile_excl[d] and the base is never
    # below 0; below n < 2**32, so uint32 (the scatter adds to it without sign fix-ups)
    DEST = uint32
    SHUFFLE_SCAN = _shuffle_scan(radix_bits, threads)
    SCAN = (1, 1) if SHUFFLE_SCAN else (2, R)
    TILE_COUNT = 1 if SHUFFLE_SCAN else R
    STAGE_PERM = TILE if with_perm else 1
    U_TILE = uint32(TILE)

    # Numba's disk cache keys a kernel on its code and closure, not on max_registers: the cap
    # enters the closure (CAP, read by the kernel and folded away), so that a cache written
    # under another cap is not taken for this one
    CAP = int(max_registers or 0)
    options = {"cache": cache}
    if max_registers and not SIMULATOR:
        options["max_registers"] = max_registers
    RELAXED = LOOKBACK_RELAXED and not SIMULATOR
    FENCE = not RELAXED
    if RELAXED:
        load = _load_relaxed()

        @cuda.jit(device=True, inline=True)
        def read_word(status, p, j, zero):
            return load(status, p, j)
    else:
        read_word = _read_atomic

    @cuda.jit(**options)
    def kernel(keys_in, perm_in, keys_out, perm_out, shift, digit_start, status, constant, p):
        if CAP < 0:
            return
        warp_count = cuda.shared.array((WARPS, R), int32)
        scan = cuda.shared.array(SCAN, int32)               # Hillis-Steele, double-buffered
        tile_count = cuda.shared.array(TILE_COUNT, int32)
        tile_excl = cuda.shared.array(R, int32)             # keys of smaller digits in the tile
        warp_total = cuda.shared.array(WARPS, int32)
        dest_base = cuda.shared.array(R, DEST)              # output index = dest_base[d] + j
        stage_keys = cuda.shared.array(TILE, key_type)      # the tile, sorted by digit
        stage_perm = cuda.shared.array(STAGE_PERM, uint32)
        table = cuda.shared.array(TABLE, int32)
        tile_sh = cuda.shared.array(1, int32)
        keys = cuda.local.array(items, key_type)
        rank = cuda.local.array(items, int32)

        t = int32(cuda.threadIdx.x)
        lane = int32(t & int32(WARP - 1))
        w = int32(t >> int32(5))
        n = uint32(keys_in.shape[0])
        if constant[p] != 0:
            # one digit holds every key: the pass keeps the order, so it only copies. The
            # flag is the same for every thread, so the whole block returns (no barrier is
            # left waiting).
            i0 = uint32(uint32(cuda.blockIdx.x) * U_TILE + uint32(t))
            for k in range(items):
                i = uint32(i0 + uint32(k * threads))
                if i < n:
                    keys_out[i] = keys_in[i]
                    if perm_mode == 1:
                        perm_out[i] = i
                    elif perm_mode == 2:
                        perm_out[i] = perm_in[i]
            return
        if t == 0:
            tile_sh[0] = cuda.atomic.add(status, (p, status.shape[1] - 1), status_type(1))
        for j in range(t, WARPS * R, threads):
            warp_count[j // R, j % R] = 0
        cuda.syncthreads()
        tile = tile_sh[0]
        base = uint32(uint32(tile) * U_TILE)
        m = min(U_TILE, uint32(n - base))        # keys in this tile
        flag = INC if tile == 0 else AGG

        # 1. load the warp's keys (all loads in flight at once), then rank each key among the
        #    keys of its warp with the same digit, in input order
        first = uint32(base + uint32(w * WSPAN + lane))
        full = m == U_TILE
        if full:
            for k in range(items):
                keys[k] = keys_in[uint32(first + uint32(k * WARP))]     # coalesced
        else:
            for k in range(items):
                i = uint32(first + uint32(k * WARP))
                keys[k] = keys_in[i] if i < n else key_type(0)
        for k in range(items):
            valid = uint32(first + uint32(k * WARP)) < n
            value = uint32((to_radix(keys[k]) >> shift) & MASK)
            if TABLE_RANK:
                if not valid:
                    value = uint32(R)            # no digit
                peers = uint32(0)
            else:
                peers = uint32(peers_of(value) & uint32(cuda.ballot_sync(FULL, valid)))
            # the rank and the digit, packed: rank | digit << 16 (rank < WSPAN < 2**16)
            packed = rank_round(peers, value, valid, lane, w, table, warp_count)
            if TABLE_RANK:                       # that round returns the rank alone
                packed = int32(packed) | int32(value << 16)
            rank[k] = packed
        cuda.syncthreads()

        # 2. per digit: exclusive scan over warps, the tile's count (published at once), and
        #    the exclusive scan over digits (tile_excl); warp_count[v, d] becomes the place in
        #    the digit-sorted tile of warp v's first key of digit d
        if SHUFFLE_SCAN:
            d = t                                # one digit a thread (threads >= R)
            run = int32(0)
            if d < R:
                for v in range(WARPS):
                    c = warp_count[v, d]
                    warp_count[v, d] = run
                    run += c
                cuda.atomic.add(status, (p, int64(tile) * R + d),
                                status_type(int64(flag) + run))
            x = run                              # inclusive scan of the warp's 32 digits
            for s in range(5):
                y = cuda.shfl_up_sync(FULL, x, 1 << s)
                if lane >= (1 << s):
                    x += y
            if lane == WARP - 1:
                warp_total[w] = x
            cuda.syncthreads()
            for v in range(w):
                x += warp_total[v]
            if d < R:
                excl = x - run
                tile_excl[d] = excl
                for v in range(WARPS):
                    warp_count[v, d] += excl
        else:
            for d in range(t, R, threads):
                run = int32(0)
                for v in range(WARPS):
                    c = warp_count[v, d]
                    warp_count[v, d] = run
                    run += c
                scan[0, d] = run
                tile_count[d] = run
                cuda.atomic.add(status, (p, int64(tile) * R + d),
                                status_type(int64(flag) + run))
            cuda.syncthreads()
            for s in range(LOG_R):               # every thread runs every step
                src = s % 2
                step = 1 << s
                for d in range(t, R, threads):
                    v = scan[src, d]
                    if d >= step:
                        v += scan[src, d - step]
                    scan[1 - src, d] = v
                cuda.syncthreads()
            for d in range(t, R, threads):
                excl = scan[LOG_R % 2, d] - tile_count[d]
                tile_excl[d] = excl
                for v in range(WARPS):
                    warp_count[v, d] += excl
        cuda.syncthreads()

        # 3. stage the tile in shared memory, sorted by digit. A full tile (all but the last)
        #    checks no index: without the branch a key, the compiler overlaps the keys' loads
        if full:
            for k in range(items):
                _stage(keys[k], rank[k], uint32(first + uint32(k * WARP)), w, warp_count,
                       stage_keys, stage_perm, perm_in, perm_mode)
        else:
            for k in range(items):
                i = uint32(first + uint32(k * WARP))
                if i < n:
                    _stage(keys[k], rank[k], i, w, warp_count, stage_keys, stage_perm,
                           perm_in, perm_mode)

        # 4. decoupled look-back: keys of digit d in tiles before this one
        for d in range(t, R, threads):
            prefix = int64(0)
            if tile > 0:
                k = tile - 1
                while k >= 0:
                    word = int64(read_word(status, p, int64(k) * R + d, status_type(0)))
                    wflag = word >> shift_bits
                    if wflag != 0:
                        prefix += word & COUNT_MASK
                        if wflag == INCLUSIVE:
                            break
                        k -= 1
                if publish_inclusive:
                    if FENCE:
                        cuda.threadfence()
                    # AGGREGATE + AGGREGATE == INCLUSIVE: one add turns the word inclusive
                    cuda.atomic.add(status, (p, int64(tile) * R + d),
                                    status_type(AGG + prefix))
            dest_base[d] = DEST(digit_start[p, d] + prefix - tile_excl[d])
        cuda.syncthreads()

        # 5. coalesced write-out: runs of equal digits go to consecutive places
        if full:
            for k in range(items):
                _write(uint32(k * threads + t), shift, MASK, stage_keys, stage_perm, dest_base,
                       keys_out, perm_out, with_perm, to_radix)
        else:
            for k in range(items):
                j = uint32(k * threads + t)
                if j < m:
                    _write(j, shift, MASK, stage_keys, stage_perm, dest_base, keys_out,
                           perm_out, with_perm, to_radix)

    return kernel
