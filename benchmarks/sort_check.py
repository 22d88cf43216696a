"""One-shot GPU check of the onesweep radix sort: does it sort, and where does the time go.

Run on the GPU machine (about 2-3 minutes for parts 1-3, most of it kernel compiles; part 4
adds a few more):

    python3 benchmarks/sort_check.py [--out DIR] [--quick] [--variants | --variants-only]

The kernel variants alone (part 1's checks, then part 4):

    python3 benchmarks/sort_check.py --variants-only --out DIR

Where the time of each key dtype's sort goes (part 1's checks, then part 5; names optional,
all dtypes without):

    python3 benchmarks/sort_check.py --dtypes uint8 float64 --out DIR

1. Correctness of ``sphgpu.sort._cuda.sort_pairs`` at several sizes, key widths and radix bits
   (ragged last tiles, many ties): against numpy.argsort(kind="stable") up to 2^22 keys, and on
   the GPU beyond (sorted keys equal cupy.sort's, keys[perm] equal them, perm is a permutation
   and increases within runs of equal keys, i.e. the sort is stable).
   Also: passes whose digit is constant (they only copy), the same shape twice (reused
   scratch), a sort on a non-blocking CuPy stream, and the launch variants of part 3.
2. Per-stage GPU time of one sort (CUDA events after each queued stage: buffer set-up, the
   all-pass histogram, the digit scan, each onesweep pass) and the host time spent issuing
   it, at 2^20, 2^25 (and 2^28 without --quick). A stage's GPU time includes any time the GPU
   waited for the host to issue it, so small sorts show the host's launch costs here. Then
   the same at 2^20 keys through Numba's dispatcher and through the direct launches of
   ``sphgpu._fast_launch`` (``_launch.FAST``).
3. Launch variants (items per thread, register cap) at 2^25 uint32 keys, keys only and
   keys + permutation, against cupy.sort / cupy.argsort (CUB), and the PIC case (8M 10-bit
   keys + permutation, 2 passes of 5 bits) against cupy.argsort.
4. (--variants) The look-back's reads (relaxed loads or atomic adds of 0) and launch shapes
   (threads, items, register cap): medians at 2^25 keys, keys + permutation and the PIC case,
   against CuPy in the same run; then per-stage times and host issue time of the defaults.
5. (--dtypes) Per key dtype at 2^25 (random bits for integers, normal floats with NaN, -0.0
   and infinities): per-stage GPU times of the backend sort with the dtype's transform, at the
   default tile and at 15 keys a thread, against cupy.sort / cupy.argsort and the public
   radix_sort, keys and keys + permutation.
Prints a table per part and writes DIR/sort_check.json when --out is given. Peers: cupy only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from sphgpu import _fast_launch as _launch
from sphgpu.sort import _cuda


def _events_trace(cupy):
    """A trace callback for sort_pairs recording a CUDA event after each queued stage."""
    marks = []

    def trace(label):
        ev = cupy.cuda.Event()
        ev.record()
        marks.append((label, ev))

    return marks, trace


def staged(cupy, d, key_bits, bits, perm, **launch):
    """(total GPU ms, host issue ms, [(stage, GPU ms)]) of one sort, after a warm-up."""
    _cuda.sort_pairs(d, key_bits, bits, perm, **launch)
    cupy.cuda.Device().synchronize()
    marks, trace = _events_trace(cupy)
    start = cupy.cuda.Event()
    start.record()
    t0 = time.perf_counter()
    _cuda.sort_pairs(d, key_bits, bits, perm, trace=trace, **launch)
    t_issue = time.perf_counter() - t0
    end = cupy.cuda.Event()
    end.record()
    end.synchronize()
    stages, prev = [], start
    for label, ev in marks:
        stages.append((label, cupy.cuda.get_elapsed_time(prev, ev)))
        prev = ev
    return cupy.cuda.get_elapsed_time(start, end), t_issue * 1e3, stages


def median_ms(cupy, fn, repeat=7):
    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b))
    return float(np.median(times))


def random_keys(rng, n, key_bits, dtype, ties=True):
    keys = rng.integers(0, 2**key_bits, n, dtype=np.uint64).astype(dtype)
    if ties and n > 8:
        keys[rng.integers(0, n, n // 8)] = keys[n // 2]
    return keys


def check_one(cupy, rng, n, dtype, key_bits, bits, constant_byte=None, **launch):
    """True when keys + permutation and keys alone come back right. ``constant_byte``: set
    byte b of every key (0..3) to 0x5A, so that pass's digit is constant (a copy pass)."""
    h = random_keys(rng, n, key_bits, dtype)
    if constant_byte is not None:
        b = dtype(8 * constant_byte)
        h = (h & ~(dtype(0xFF) << b)) | (dtype(0x5A) << b)
    d = cupy.asarray(h)
    out, perm = _cuda.sort_pairs(d, key_bits, bits, True, **launch)
    out2, _ = _cuda.sort_pairs(d, key_bits, bits, False, **launch)
    if n <= 1 << 22:
        want = np.argsort(h, kind="stable")
        return (np.array_equal(perm.get(), want) and np.array_equal(out.get(), h[want])
                and np.array_equal(out2.get(), h[want]) and np.array_equal(d.get(), h))
    ref = cupy.sort(d)
    ok = bool((out == ref).all()) and bool((out2 == ref).all()) and bool((d[perm] == ref).all())
    ok = ok and bool((cupy.sort(perm) == cupy.arange(n)).all())
    same = out[1:] == out[:-1]
    return ok and bool((perm[1:][same] > perm[:-1][same]).all())


def main():
    import cupy

    from sphgpu.bench import machine_info

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true", help="skip 2^28 and most launch variants")
    p.add_argument("--variants", action="store_true", help="add part 4 (kernel variants)")
    p.add_argument("--variants-only", action="store_true",
                   help="only the checks and part 4")
    p.add_argument("--dtypes", nargs="*", default=None,
                   help="only part 1 and part 5 for these dtypes (all without names)")
    args = p.parse_args()
    info = machine_info()
    print(json.dumps(info), flush=True)
    rng = np.random.default_rng(7)
    result = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}

    # 1. correctness
    cases = [(1000, np.uint32, 32, 8), (3841, np.uint32, 32, 8), (1 << 16, np.uint32, 10, 5),
             ((1 << 20) + 7, np.uint32, 32, 8), ((1 << 20) + 7, np.uint32, 32, 7),
             ((1 << 20) + 7, np.uint32, 32, 4), ((1 << 20) + 7, np.uint64, 64, 8),
             ((1 << 20) + 7, np.uint64, 40, 7), ((1 << 22) + 1, np.uint32, 10, 5),
             ((1 << 25) + 3, np.uint32, 32, 8)]
    checks = []
    t0 = time.perf_counter()
    for n, dtype, kb, rb in cases:
        ok = check_one(cupy, rng, n, dtype, kb, rb)
        checks.append({"n": n, "dtype": np.dtype(dtype).name, "key_bits": kb, "radix_bits": rb,
                       "ok": ok})
        print(f"check n={n} {np.dtype(dtype).name} key_bits={kb} r={rb}: "
              f"{'ok' if ok else 'WRONG'}", flush=True)
    for items, regs in ((12, None), (15, 80), (15, 0)):
        ok = check_one(cupy, rng, (1 << 20) + 7, np.uint32, 32, 8, items=items,
                       max_registers=regs)
        checks.append({"n": (1 << 20) + 7, "items": items, "max_registers": regs, "ok": ok})
        print(f"check 2^20+7 items={items} max_registers={regs}: {'ok' if ok else 'WRONG'}",
              flush=True)
    # constant digits (those passes only copy), the same shape twice (reused scratch), and
    # a sort on a non-default stream
    for n, byte in (((1 << 20) + 7, 3), ((1 << 20) + 7, 1), ((1 << 20) + 7, 1),
                    ((1 << 25) + 3, 0)):
        ok = check_one(cupy, rng, n, np.uint32, 32, 8, constant_byte=byte)
        checks.append({"n": n, "constant_byte": byte, "ok": ok})
        print(f"check n={n} byte {byte} constant: {'ok' if ok else 'WRONG'}", flush=True)
    with cupy.cuda.Stream(non_blocking=True) as stream:
        ok = check_one(cupy, rng, (1 << 22) + 1, np.uint32, 32, 8)
        stream.synchronize()
    checks.append({"n": (1 << 22) + 1, "stream": "non-blocking", "ok": ok})
    print(f"check 2^22+1 on a non-blocking stream: {'ok' if ok else 'WRONG'}", flush=True)
    result["checks"] = checks
    print(f"checks took {time.perf_counter() - t0:.1f} s (with compiles)", flush=True)

    if args.dtypes is not None:                    # part 1's checks, then part 5 alone
        per_dtype(cupy, args, result)
    else:
        if not args.variants_only:
            parts_2_3(cupy, rng, args, result)
        if args.variants or args.variants_only:
            compare_variants(cupy, rng, args, result)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sort_check.json"), "w") as f:
            json.dump(result, f, indent=1)
    return 0 if all(c["ok"] for c in result["checks"]) else 1


def per_dtype(cupy, args, result):
    """Part 5: for each dtype at 2^25 keys (those of benchmarks/sort.py), where a sort's time
    goes (per-stage CUDA events of the backend's sort_pairs with the dtype's transform, at the
    default tile and at 15 keys a thread), against CuPy and against the public radix_sort,
    whose extra time is the host's work before the first launch."""
    import sphgpu
    from sort import DTYPES, device_keys          # benchmarks/sort.py
    from sphgpu.sort.api import _TRANSFORMS

    rows = []
    for name in args.dtypes or DTYPES:
        d = device_keys(cupy, name, 1 << 25, seed=25)
        width = 8 * d.dtype.itemsize
        bits = d.view(f"u{d.dtype.itemsize}")
        r = _cuda._balanced_bits(width)           # the default, not tuned
        for perm in (False, True):
            peer = median_ms(cupy, (lambda: cupy.argsort(d)) if perm else (lambda: cupy.sort(d)))
            public = median_ms(cupy, lambda: sphgpu.radix_sort(d, return_permutation=perm,
                                                               backend="cuda"))
            for items in (None, 15):
                total, issue, parts = staged(cupy, bits, width, r, perm, items=items,
                                             transform=_TRANSFORMS[d.dtype.kind])
                rows.append({"dtype": name, "perm": perm, "items": items, "radix_bits": r,
                             "total_ms": total, "host_issue_ms": issue, "stages_ms": parts,
                             "public_ms": public, "cupy_ms": peer})
                print(f"{name:>8} {'keys+perm' if perm else 'keys':9s} items={items}: GPU "
                      f"{total:.3f} ms (issued in {issue:.3f}), public radix_sort {public:.3f},"
                      f" cupy {peer:.3f} -> {peer / total:.2f}x / public {peer / public:.2f}x"
                      " | " + ", ".join(f"{k} {v:.3f}" for k, v in parts), flush=True)
        del d, bits
        _cuda.clear_scratch()
    result["per_dtype_2e25"] = rows


def compare_variants(cupy, rng, args, result):
    """Part 4: the look-back's reads (ld.relaxed against atomic adds of 0 after a fence) and
    launch shapes (threads, items, register cap) at 2^25 keys, keys + permutation and the PIC
    case; every shape checked first."""
    from sphgpu.sort import _cuda_kernels as K

    d = cupy.asarray(random_keys(rng, 1 << 25, 32, np.uint32, ties=False))
    cells = cupy.asarray(rng.integers(0, 1024, 8 << 20).astype(np.uint32))
    peers = {"sort": median_ms(cupy, lambda: cupy.sort(d)),
             "argsort": median_ms(cupy, lambda: cupy.argsort(d)),
             "pic_argsort": median_ms(cupy, lambda: cupy.argsort(cells))}
    print("cupy: sort 2^25 {sort:.3f} ms, argsort 2^25 {argsort:.3f} ms, PIC argsort "
          "{pic_argsort:.3f} ms".format(**peers), flush=True)
    # (look-back reads relaxed, threads, items, max_registers); items above what shared memory
    # holds are clipped (launch_shape)
    shapes = [(False, 256, 15, 64), (True, 256, 15, 64), (True, 256, 20, 64),
              (True, 256, 24, 64), (True, 256, 30, 64), (True, 256, 20, 0),
              (True, 384, 15, 64), (True, 384, 18, 56), (True, 384, 22, 56),
              (True, 384, 22, 64), (True, 512, 12, 64), (True, 512, 16, 56),
              (True, 512, 16, 64)]
    rows = []
    for relaxed, threads, items, regs in shapes:
        K.LOOKBACK_RELAXED = relaxed
        K.onesweep_kernel.cache_clear()
        _cuda._plan.cache_clear()
        launch = dict(threads=threads, items=items, max_registers=regs)
        ok = check_one(cupy, rng, (1 << 20) + 7, np.uint32, 32, 8, **launch)
        result["checks"].append({"n": (1 << 20) + 7, "relaxed": relaxed, **launch, "ok": ok})
        k = median_ms(cupy, lambda: _cuda.sort_pairs(d, 32, 8, False, **launch))
        kp = median_ms(cupy, lambda: _cuda.sort_pairs(d, 32, 8, True, **launch))
        pic = median_ms(cupy, lambda: _cuda.sort_pairs(cells, 10, 5, True, **launch))
        used = {"keys": _cuda.launch_shape(8, 4, False, items, threads)[1],
                "keys+perm": _cuda.launch_shape(8, 4, True, items, threads)[1]}
        rows.append({"relaxed": relaxed, **launch, "items_used": used, "ok": ok,
                     "keys_ms": k, "keys_perm_ms": kp, "pic_ms": pic})
        print(f"relaxed={relaxed} threads={threads} items={items} (used {used}) regs={regs}: "
              f"{'ok' if ok else 'WRONG'} keys {k:.3f} ms ({peers['sort'] / k:.2f}x), "
              f"keys+perm {kp:.3f} ({peers['argsort'] / kp:.2f}x), PIC {pic:.3f} "
              f"({peers['pic_argsort'] / pic:.2f}x)", flush=True)
    K.LOOKBACK_RELAXED = True
    K.onesweep_kernel.cache_clear()
    _cuda._plan.cache_clear()
    for label, x, kb, rb, perm in (("2^25 keys", d, 32, 8, False),
                                   ("2^25 keys+perm", d, 32, 8, True),
                                   ("PIC 8M", cells, 10, 5, True)):
        total, issue, parts = staged(cupy, x, kb, rb, perm)
        rows.append({"case": label, "total_ms": total, "host_issue_ms": issue,
                     "stages_ms": parts})
        print(f"{label}: GPU {total:.3f} ms, host issue {issue:.3f} ms | "
              + ", ".join(f"{k} {v:.3f}" for k, v in parts), flush=True)
    result["variants"] = {"rows": rows, "cupy_ms": peers}


def parts_2_3(cupy, rng, args, result):
    # 2. where the time goes
    stages = []
    for e in ((20, 25) if args.quick else (20, 25, 28)):
        n = 1 << e
        d = cupy.asarray(random_keys(rng, n, 32, np.uint32, ties=False))
        for perm in (False, True):
            total, issue, parts = staged(cupy, d, 32, 8, perm)
            peer = median_ms(cupy, (lambda: cupy.argsort(d)) if perm else (lambda: cupy.sort(d)))
            stages.append({"log2n": e, "perm": perm, "total_ms": total, "host_issue_ms": issue,
                           "stages_ms": parts, "cupy_ms": peer})
            print(f"2^{e} {'keys+perm' if perm else 'keys':9s} r=8: GPU {total:.3f} ms "
                  f"(host issued in {issue:.3f} ms), cupy {peer:.3f} ms -> "
                  f"{peer / total:.2f}x | "
                  + ", ".join(f"{k} {v:.3f}" for k, v in parts), flush=True)
    result["stages"] = stages
    # host cost of a launch: Numba's dispatcher against the direct launches of _launch
    d = cupy.asarray(random_keys(rng, 1 << 20, 32, np.uint32, ties=False))
    launch_rows = []
    for fast in (False, True):
        _launch.FAST = fast
        total, issue, parts = staged(cupy, d, 32, 8, True)
        launch_rows.append({"fast_launch": fast, "total_ms": total, "host_issue_ms": issue})
        print(f"2^20 keys+perm FAST={fast}: GPU {total:.3f} ms, host issued in "
              f"{issue:.3f} ms | " + ", ".join(f"{k} {v:.3f}" for k, v in parts), flush=True)
    _launch.FAST = True
    result["launch_paths_2e20"] = launch_rows

    # 3. launch-shape variants at 2^25, and the PIC case
    n = 1 << 25
    d = cupy.asarray(random_keys(rng, n, 32, np.uint32, ties=False))
    # max_registers None: the module's default cap (_cuda.MAX_REGISTERS), 0: no cap
    variants = [(15, None)]
    if not args.quick:
        variants += [(12, None), (15, 80), (15, 0)]
    rows = []
    sort_ms = median_ms(cupy, lambda: cupy.sort(d))
    argsort_ms = median_ms(cupy, lambda: cupy.argsort(d))
    for items, regs in variants:
        for bits in (8, 7) if (items, regs) == (15, None) else (8,):
            launch = dict(items=items, max_registers=regs)
            k = median_ms(cupy, lambda: _cuda.sort_pairs(d, 32, bits, False, **launch))
            kp = median_ms(cupy, lambda: _cuda.sort_pairs(d, 32, bits, True, **launch))
            rows.append({"items": items, "max_registers": regs, "radix_bits": bits,
                         "keys_ms": k, "keys_perm_ms": kp,
                         "vs_cupy_sort": sort_ms / k, "vs_cupy_argsort": argsort_ms / kp})
            print(f"2^25 r={bits} items={items:2d} max_registers={regs}: keys "
                  f"{k:.3f} ms ({sort_ms / k:.2f}x cupy.sort {sort_ms:.3f}), keys+perm "
                  f"{kp:.3f} ms ({argsort_ms / kp:.2f}x cupy.argsort {argsort_ms:.3f})",
                  flush=True)
    result["variants_2e25"] = rows
    n = 8 << 20
    cells = cupy.asarray(rng.integers(0, 1024, n).astype(np.uint32))
    pic = median_ms(cupy, lambda: _cuda.sort_pairs(cells, 10, 5, True))
    peer = median_ms(cupy, lambda: cupy.argsort(cells))
    total, issue, parts = staged(cupy, cells, 10, 5, True)
    result["pic_8M"] = {"sphgpu_ms": pic, "cupy_argsort_ms": peer, "host_issue_ms": issue,
                        "stages_ms": parts}
    print(f"PIC 8M 10-bit + perm (2 x 5 bits): {pic:.3f} ms vs cupy.argsort {peer:.3f} ms "
          f"-> {peer / pic:.2f}x (host issued in {issue:.3f} ms) | "
          + ", ".join(f"{k} {v:.3f}" for k, v in parts), flush=True)


if __name__ == "__main__":
    sys.exit(main())
