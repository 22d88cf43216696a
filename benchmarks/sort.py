"""Radix sort benchmark: sphgpu's public radix_sort / argsort on CuPy arrays against CuPy (CUB).

Run on the GPU machine:

    python benchmarks/sort.py --out benchmarks/results            # the full run
    python benchmarks/sort.py --quick --out /tmp/sort_quick       # checks + a few timings

What it does, every sphgpu time being a whole call of a public function (``sphgpu.radix_sort``
with CuPy arrays in, synchronized, host time included), CuPy's in the same run:

1. Correctness at small sizes (every dtype uint8 ... float64; NaN of both signs and payloads,
   -0.0, +-inf, many duplicates; n = 0, 1, 2, 33, 4099, 70001): sorted keys bit for bit and the
   permutation against ``numpy.argsort(kind="stable")``, from NumPy and from CuPy arrays, with
   and without key_bits.
2. Every dtype at each --log2n (default 25 and 28): keys alone (``radix_sort(d)``) against
   ``cupy.sort(d)``; keys + permutation (``radix_sort(d, return_permutation=True)``, the code
   ``argsort`` runs) against ``cupy.argsort(d)``. Integer keys have random bits (the whole range),
   float keys are normal deviates with NaN, -0.0 and infinities sprinkled in. Each result is
   checked on the GPU first (keys[perm] bit for bit, the permutation a permutation, its radix
   keys non-decreasing, ties in input order: that is numpy's stable order exactly).
3. The particle-in-cell re-sort (8M particles on 32 x 32 cells, 10-bit keys with the
   permutation) through ``radix_sort(cells, key_bits=10, return_permutation=True)`` against
   ``cupy.argsort(cells)``; the private ``_cuda.sort_pairs`` path is timed too, labelled private.
4. The first call in a fresh process (a subprocess, run twice on one cache directory: empty,
   then as the first run left it), as a user's, autotuner on: import, a tiny sort, and a 2^25
   float32 argsort, each called twice.

Launch parameters: by default the autotuner is off here (SPHGPU_AUTOTUNE=0), so sorts use the
balanced radix bits and default tile (--autotune measures as a user's first call does, which
compiles several candidates per dtype and size: minutes). The tuner's candidates include the
defaults, so a tuned sort is at least as fast as the one timed here, up to noise.

Writes DIR/sort.json (machine info with the GPU's name) and DIR/sort_throughput.png (ratios
against CuPy per dtype, with the goals). Goals (issue 16), on an H100 and an H200 alike: at 2^25
and 2^28 every dtype at least 0.8x cupy.sort for keys and 1.0x cupy.argsort for keys +
permutation; the PIC re-sort at least 2x cupy.argsort.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32",
          "uint64", "int64", "float64"]
GOAL_KEYS, GOAL_PERM, GOAL_PIC = 0.8, 1.0, 2.0


def small_keys(rng, dtype, n):
    """n keys of dtype with the cases that matter for the order: duplicates, extremes, and for
    floats NaN (both signs, another payload), -0.0 and infinities."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = (rng.standard_normal(n) * 100).astype(dtype)
        if n >= 16:
            x[rng.integers(0, n, n // 8)] = x[rng.integers(0, n, n // 8)]
            specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=dtype)
            x[rng.integers(0, n, max(n // 10, 6))] = rng.choice(specials, max(n // 10, 6))
            x.view(f"u{dtype.itemsize}")[5] = np.iinfo(f"u{dtype.itemsize}").max   # -NaN, payload
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if n >= 16:
        x[rng.integers(0, n, n // 4)] = x[rng.integers(0, n, n // 4)]
        x[:4] = [info.min, info.max, 0, info.min + 1]
    return x


def same_bits(a, b):
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def check_small(cupy, sphgpu, rng):
    """Part 1: every dtype against numpy.argsort(kind="stable"); returns the cases checked."""
    cases = 0
    for name in DTYPES:
        dtype = np.dtype(name)
        for n in (0, 1, 2, 33, 4099, 70001):
            x = small_keys(rng, dtype, n)
            want = np.argsort(x, kind="stable")
            d = cupy.asarray(x)
            s, p = sphgpu.radix_sort(d, return_permutation=True, backend="cuda")
            assert isinstance(p, cupy.ndarray) and p.dtype == np.int64, name
            assert np.array_equal(p.get(), want), (name, n, "permutation")
            assert same_bits(s.get(), x[want]), (name, n, "keys with permutation")
            assert same_bits(sphgpu.radix_sort(d, backend="cuda").get(), x[want]), (name, n)
            assert np.array_equal(sphgpu.argsort(x, backend="cuda"), want), (name, n, "NumPy in")
            cases += 4
        if dtype.kind in "ui":                  # a key_bits that the keys fit in
            x = rng.integers(0, min(1000, np.iinfo(dtype).max), 5000).astype(dtype)
            bits = int(x.max()).bit_length()
            want = np.argsort(x, kind="stable")
            for keys in (x, cupy.asarray(x)):
                s, p = sphgpu.radix_sort(keys, key_bits=bits, return_permutation=True,
                                         backend="cuda")
                p = p if isinstance(p, np.ndarray) else p.get()
                assert np.array_equal(p, want), (name, "key_bits")
                cases += 1
    return cases


def check_on_gpu(cupy, d, sorted_keys, perm, keys_only):
    """Part 2's check of a large sort, on the GPU: True when ``perm`` is numpy's stable argsort
    of ``d`` and both sorted key arrays are ``d[perm]`` bit for bit."""
    from sphgpu.sort.keys import to_radix_keys

    n = d.size
    u = to_radix_keys(d)[0][perm]          # radix keys: unsigned order == numpy's order
    ordered = bool((u[1:] >= u[:-1]).all())
    stable = bool(((u[1:] != u[:-1]) | (perm[1:] > perm[:-1])).all())
    del u
    seen = cupy.zeros(n, dtype=cupy.bool_)
    seen[perm] = True
    is_perm = bool(seen.all())
    del seen
    bits = f"u{d.dtype.itemsize}"
    gathered = d.view(bits)[perm]
    keys_ok = bool((sorted_keys.view(bits) == gathered).all())
    keys_only_ok = bool((keys_only.view(bits) == gathered).all())
    return ordered and stable and is_perm and keys_ok and keys_only_ok


def device_keys(cupy, dtype, n, seed):
    """n keys on the GPU: integers with random bits, floats normal with a few specials."""
    dtype = np.dtype(dtype)
    rs = cupy.random.RandomState(seed)
    if dtype.kind in "ui":
        return rs.randint(0, 256, n * dtype.itemsize, dtype=cupy.uint8).view(dtype)
    x = rs.standard_normal(n, dtype=cupy.float32 if dtype.itemsize <= 4 else cupy.float64)
    x = x.astype(dtype)
    step = max(n // 1000, 1)
    x[::step] = cupy.nan
    x[1::step] = -0.0
    x[2::7 * step] = cupy.inf
    x[3::7 * step] = -cupy.inf
    return x


def timed(cupy, fn, repeat):
    from sphgpu.bench import time_call

    try:
        return time_call(fn, repeat=repeat, sync=cupy.cuda.Device().synchronize)
    except Exception as exc:              # e.g. a dtype CuPy does not sort: say so, go on
        print(f"  ({type(exc).__name__}: {exc})", flush=True)
        return None


def bench_dtype(cupy, sphgpu, name, log2n, repeat, check, numpy_too):
    n = 1 << log2n
    d = device_keys(cupy, name, n, seed=log2n)
    row = {"dtype": name, "n": n}
    if check:
        s, p = sphgpu.radix_sort(d, return_permutation=True, backend="cuda")
        row["checked"] = check_on_gpu(cupy, d, s, p, sphgpu.radix_sort(d, backend="cuda"))
        del s, p
        assert row["checked"], f"{name} 2^{log2n}: wrong sort"
    t = {
        "sphgpu_keys": timed(cupy, lambda: sphgpu.radix_sort(d, backend="cuda"), repeat),
        "cupy_sort": timed(cupy, lambda: cupy.sort(d), repeat),
        "sphgpu_keys_perm": timed(cupy, lambda: sphgpu.radix_sort(
            d, return_permutation=True, backend="cuda"), repeat),
        "cupy_argsort": timed(cupy, lambda: cupy.argsort(d), repeat),
    }
    if numpy_too:
        h = d.get()
        from sphgpu.bench import time_call

        t["numpy_sort_stable"] = time_call(lambda: np.sort(h, kind="stable"), repeat=2,
                                           warmup=0)
    t = {k: v for k, v in t.items() if v is not None}
    row["timings"] = {k: v.as_dict() for k, v in t.items()}
    row["gkeys_per_s"] = {k: n / v.median / 1e9 for k, v in t.items()}
    if "cupy_sort" in t:
        row["ratio_keys_vs_cupy_sort"] = t["cupy_sort"].median / t["sphgpu_keys"].median
    if "cupy_argsort" in t:
        row["ratio_perm_vs_cupy_argsort"] = (t["cupy_argsort"].median
                                             / t["sphgpu_keys_perm"].median)
    print(f"{name:>8} 2^{log2n}: " + ", ".join(f"{k} {v.median * 1e3:.3f} ms"
                                               for k, v in t.items())
          + f" | keys {row.get('ratio_keys_vs_cupy_sort', float('nan')):.2f}x cupy.sort,"
          f" keys+perm {row.get('ratio_perm_vs_cupy_argsort', float('nan')):.2f}x"
          " cupy.argsort", flush=True)
    del d
    free(cupy)
    return row


def free(cupy):
    from sphgpu.sort import _cuda

    _cuda.clear_scratch()
    cupy.get_default_memory_pool().free_all_blocks()


def bench_pic(cupy, sphgpu, repeat):
    """Part 3: 8M particles, 32 x 32 cells, 10-bit keys with the permutation."""
    from sphgpu.sort import _cuda

    rng = np.random.default_rng(1)
    n = 8 * 2**20
    pos = rng.random((n, 2))
    cells = (np.floor(pos[:, 1] * 32) * 32 + np.floor(pos[:, 0] * 32)).astype(np.uint32)
    dc = cupy.asarray(cells)
    _, p = sphgpu.radix_sort(dc, key_bits=10, return_permutation=True, backend="cuda")
    assert np.array_equal(p.get(), np.argsort(cells, kind="stable")), "PIC: wrong sort"
    t = {
        "sphgpu_radix_sort": timed(cupy, lambda: sphgpu.radix_sort(
            dc, key_bits=10, return_permutation=True, backend="cuda"), repeat),
        "cupy_argsort": timed(cupy, lambda: cupy.argsort(dc), repeat),
        "private_sort_pairs_2x5_bits": timed(cupy, lambda: _cuda.sort_pairs(dc, 10, 5, True),
                                             repeat),
    }
    row = {k: v.as_dict() for k, v in t.items()}
    row["n"] = n
    row["ratio_vs_cupy_argsort"] = t["cupy_argsort"].median / t["sphgpu_radix_sort"].median
    row["note"] = ("sphgpu_radix_sort is the public call; private_sort_pairs_2x5_bits is the "
                   "backend's own entry point, for comparison only")
    print("PIC 8M: " + ", ".join(f"{k} {v.median * 1e3:.3f} ms" for k, v in t.items())
          + f" | public radix_sort {row['ratio_vs_cupy_argsort']:.2f}x cupy.argsort",
          flush=True)
    return row


FRESH = r"""
import json, time
t0 = time.perf_counter()
import cupy
import sphgpu
out = {"import_s": time.perf_counter() - t0}
sync = cupy.cuda.Device().synchronize
tiny = cupy.arange(1 << 16, dtype=cupy.uint32)[::-1].copy()
big = cupy.random.RandomState(0).standard_normal(1 << 25, dtype=cupy.float32)
sync()
for label, call in (("tiny_sort_2e16_uint32", lambda: sphgpu.radix_sort(tiny)),
                    ("argsort_2e25_float32", lambda: sphgpu.argsort(big))):
    for k in ("first", "second"):
        t0 = time.perf_counter()
        call()
        sync()
        out[f"{label}_{k}_s"] = time.perf_counter() - t0
print("RESULT " + json.dumps(out))
"""


def fresh_process(cache_dir):
    """Part 4: a new Python process's first calls, as a user's (autotuner on: the 2^25 sort
    measures its launch parameters when the cache directory has none)."""
    env = dict(os.environ, SPHGPU_CACHE_DIR=cache_dir, SPHGPU_AUTOTUNE="1")
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", FRESH], env=env, capture_output=True, text=True,
                         timeout=600)
    wall = time.perf_counter() - t0
    line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
    if res.returncode or not line:
        return {"error": res.stderr[-2000:], "process_wall_s": wall}
    out = json.loads(line[-1][7:])
    out["process_wall_s"] = wall
    out["stderr"] = res.stderr[-2000:]         # any warning printed to the user shows here
    return out


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["n"] for r in result["dtypes"]})
    fig, axes = plt.subplots(len(sizes), 1, figsize=(9, 3.2 * len(sizes)), squeeze=False)
    for ax, n in zip(axes[:, 0], sizes):
        rows = [r for r in result["dtypes"] if r["n"] == n]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r.get("ratio_keys_vs_cupy_sort", 0) for r in rows], 0.4,
               label="keys: radix_sort / cupy.sort")
        ax.bar(x + 0.2, [r.get("ratio_perm_vs_cupy_argsort", 0) for r in rows], 0.4,
               label="keys + permutation / cupy.argsort")
        ax.axhline(GOAL_KEYS, color="C0", ls="--", lw=1)
        ax.axhline(GOAL_PERM, color="C1", ls="--", lw=1)
        ax.set_xticks(x, [r["dtype"] for r in rows])
        ax.set_ylabel("speed vs CuPy (x)")
        ax.set_title(f"n = 2^{int(np.log2(n))}, CuPy arrays in, whole public calls")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="lower right")
    pic = result.get("pic_8M")
    extra = f"; PIC re-sort {pic['ratio_vs_cupy_argsort']:.2f}x cupy.argsort" if pic else ""
    fig.suptitle(f"sphgpu radix sort on {result['machine'].get('gpu')}{extra}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, nargs="+", default=[25, 28])
    p.add_argument("--dtypes", nargs="+", default=DTYPES, choices=DTYPES)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--quick", action="store_true",
                   help="checks at small sizes, then uint32/float32/int64 at 2^20 and the PIC "
                        "case; no fresh processes")
    p.add_argument("--autotune", action="store_true",
                   help="let the autotuner measure launch parameters (slow first calls)")
    args = p.parse_args()
    if not args.autotune:
        os.environ["SPHGPU_AUTOTUNE"] = "0"
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info

    os.makedirs(args.out, exist_ok=True)
    info = machine_info()
    print(json.dumps(info), flush=True)
    result = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "autotune": bool(args.autotune), "quick": bool(args.quick),
              "what": "whole calls of sphgpu.radix_sort on CuPy arrays (synchronized), "
                      "keys_perm = radix_sort(..., return_permutation=True); CuPy in the same "
                      "run"}
    t0 = time.perf_counter()
    result["small_checks"] = check_small(cupy, sphgpu, np.random.default_rng(0))
    result["small_checks_s"] = time.perf_counter() - t0
    print(f"part 1: {result['small_checks']} small sorts equal numpy.argsort(kind='stable') "
          f"({result['small_checks_s']:.1f} s, most of it kernel compiles)", flush=True)

    sizes = [20] if args.quick else args.log2n
    dtypes = ["uint32", "float32", "int64"] if args.quick else args.dtypes
    rows = []
    for e in sizes:
        for name in dtypes:
            rows.append(bench_dtype(cupy, sphgpu, name, e, args.repeat, check=True,
                                    numpy_too=name == "uint32" and e <= 25))
    result["dtypes"] = rows
    # the rows sphgpu's speedup panel reads (same fields as before)
    result["uint32"] = [r for r in rows if r["dtype"] == "uint32"]
    result["pic_8M"] = bench_pic(cupy, sphgpu, max(args.repeat, 20))
    if not args.quick:
        with tempfile.TemporaryDirectory() as cache:
            result["fresh_process"] = {
                "cold_cache": fresh_process(cache), "warm_cache": fresh_process(cache)}
        for k, v in result["fresh_process"].items():
            print(f"fresh process, {k}: " + ", ".join(
                f"{a} {b:.2f} s" for a, b in v.items() if a.endswith("_s")), flush=True)

    worst = {}
    for r in rows:
        if r["n"] >= 1 << 25:
            worst.setdefault("keys", []).append(r.get("ratio_keys_vs_cupy_sort", 0))
            worst.setdefault("perm", []).append(r.get("ratio_perm_vs_cupy_argsort", 0))
    result["goals"] = {
        "keys_min_ratio": min(worst["keys"]) if worst else None,
        "perm_min_ratio": min(worst["perm"]) if worst else None,
        "pic_ratio": result["pic_8M"]["ratio_vs_cupy_argsort"],
        "met": bool(worst) and min(worst["keys"]) >= GOAL_KEYS
        and min(worst["perm"]) >= GOAL_PERM
        and result["pic_8M"]["ratio_vs_cupy_argsort"] >= GOAL_PIC}
    print("goals: " + json.dumps(result["goals"]), flush=True)
    name = "sort_quick" if args.quick else "sort"
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(result, os.path.join(args.out, f"{name}_throughput.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
