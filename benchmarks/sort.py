"""GPU radix sort benchmark: sphgpu's CUDA radix sort against CuPy (CUB) and NumPy, same run.

Run on the GPU machine:  python benchmarks/sort.py --out benchmarks/results
Checks every result against numpy.argsort(kind="stable") (on a sample of sizes), then times
device-resident sorts of random uint32 keys (2^20, 2^25, 2^28): keys only against cupy.sort,
keys + permutation against cupy.argsort, and numpy.sort(kind="stable") on the host; the
particle-in-cell re-sort (8M particles, 10-bit cell keys, 2 passes of 5 bits) against
cupy.argsort of the same keys; and a sweep of radix_bits for 32-bit keys at 2^25.
Writes sort.json and sort_throughput.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from sphgpu.bench import machine_info, time_call
from sphgpu.sort import _cuda


def main():
    import cupy

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2n", type=int, nargs="+", default=[20, 25, 28])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--out", default="benchmarks/results")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sync = cupy.cuda.Device().synchronize
    info = machine_info()
    print(json.dumps(info), flush=True)
    rng = np.random.default_rng(1)
    rows = []
    for e in args.log2n:
        n = 1 << e
        h = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        d = cupy.asarray(h)
        rk = _cuda.choose_radix_bits(n, 32, 4, False)      # the autotuner's choices
        rp = _cuda.choose_radix_bits(n, 32, 4, True)
        out, perm = _cuda.sort_pairs(d, 32, rp, True)
        if e <= 25:
            want = np.argsort(h, kind="stable")
            assert np.array_equal(perm.get(), want) and np.array_equal(out.get(), h[want])
        r = {"n": n, "radix_bits_keys": rk, "radix_bits_keys_perm": rp}
        t = {
            "sphgpu_keys": time_call(lambda: _cuda.sort_pairs(d, 32, rk, False),
                                     repeat=args.repeat, sync=sync),
            "cupy_sort": time_call(lambda: cupy.sort(d), repeat=args.repeat, sync=sync),
            "sphgpu_keys_perm": time_call(lambda: _cuda.sort_pairs(d, 32, rp, True),
                                          repeat=args.repeat, sync=sync),
            "cupy_argsort": time_call(lambda: cupy.argsort(d), repeat=args.repeat, sync=sync),
        }
        if e <= 25:
            t["numpy_sort_stable"] = time_call(lambda: np.sort(h, kind="stable"), repeat=3)
        r["timings"] = {k: v.as_dict() for k, v in t.items()}
        r["gkeys_per_s"] = {k: n / v.median / 1e9 for k, v in t.items()}
        r["ratio_keys_vs_cupy_sort"] = t["cupy_sort"].median / t["sphgpu_keys"].median
        r["ratio_perm_vs_cupy_argsort"] = t["cupy_argsort"].median / t["sphgpu_keys_perm"].median
        print(f"2^{e} (r={rk}/{rp}): " + ", ".join(f"{k} {v.median * 1e3:.3f} ms" for k, v in t.items())
              + f" | keys {r['ratio_keys_vs_cupy_sort']:.2f}x cupy.sort,"
              f" keys+perm {r['ratio_perm_vs_cupy_argsort']:.2f}x cupy.argsort", flush=True)
        rows.append(r)

    # radix_bits sweep, 32-bit keys, 2^25, keys + permutation
    n = 1 << 25
    d = cupy.asarray(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
    sweep = {}
    for rb in (4, 5, 6, 7, 8):
        sweep[rb] = time_call(lambda: _cuda.sort_pairs(d, 32, rb, True), repeat=5, sync=sync).median
    print("radix_bits sweep (2^25, keys+perm): "
          + ", ".join(f"r={k}: {v * 1e3:.2f} ms" for k, v in sweep.items()), flush=True)

    # particle-in-cell: 8M particles on a 32x32 grid, re-sorted after a move of <= 1 cell
    n = 8 * 2**20
    pos = rng.random((n, 2))
    cells = (np.floor(pos[:, 1] * 32) * 32 + np.floor(pos[:, 0] * 32)).astype(np.uint32)
    dc = cupy.asarray(cells)
    _, p0 = _cuda.sort_pairs(dc, 10, 5, True)
    assert np.array_equal(p0.get(), np.argsort(cells, kind="stable"))
    r10 = _cuda.choose_radix_bits(n, 10, 4, True)
    pic = {
        "sphgpu_10bit_2pass": time_call(lambda: _cuda.sort_pairs(dc, 10, 5, True),
                                        repeat=args.repeat, sync=sync),
        "sphgpu_10bit_tuned": time_call(lambda: _cuda.sort_pairs(dc, 10, r10, True),
                                        repeat=args.repeat, sync=sync),
        "sphgpu_30bit_6pass": time_call(lambda: _cuda.sort_pairs(dc, 30, 5, True),
                                        repeat=args.repeat, sync=sync),
        "cupy_argsort": time_call(lambda: cupy.argsort(dc), repeat=args.repeat, sync=sync),
    }
    pic_row = {k: v.as_dict() for k, v in pic.items()}
    pic_row["radix_bits_tuned"] = r10
    pic_row["ratio_vs_cupy_argsort"] = pic["cupy_argsort"].median / pic["sphgpu_10bit_2pass"].median
    print("PIC 8M: " + ", ".join(f"{k} {v.median * 1e3:.3f} ms" for k, v in pic.items())
          + f" | {pic_row['ratio_vs_cupy_argsort']:.2f}x cupy.argsort", flush=True)

    result = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "uint32": rows, "radix_bits_sweep_2e25_s": sweep, "pic_8M": pic_row}
    with open(os.path.join(args.out, "sort.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(result, os.path.join(args.out, "sort_throughput.png"))
    return 0


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["uint32"]
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for key, style, label in (("sphgpu_keys", "o-", "sphgpu, keys"),
                              ("cupy_sort", "s-", "cupy.sort (CUB), keys"),
                              ("sphgpu_keys_perm", "o--", "sphgpu, keys + permutation"),
                              ("cupy_argsort", "s--", "cupy.argsort (CUB)"),
                              ("numpy_sort_stable", "^:", "numpy.sort stable (host)")):
        pts = [(r["n"], r["gkeys_per_s"][key]) for r in rows if key in r["gkeys_per_s"]]
        if pts:
            ax.semilogx(*zip(*pts), style, label=label, base=2)
    ax.set_xticks(ns, [f"2^{int(np.log2(n))}" for n in ns])
    ax.set_xlabel("number of uint32 keys")
    ax.set_ylabel("Gkeys / s (median)")
    ax.set_title(f"Radix sort on {result['machine'].get('gpu')}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
