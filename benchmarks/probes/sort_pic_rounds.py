"""The PIC re-sort (8M particles, 10-bit cell keys with the permutation) in rounds within one
process: public ``radix_sort``, the backend's private ``sort_pairs`` and ``cupy.argsort``,
interleaved, so that a drift of either side from round to round shows (issue 16 saw ours slow
by up to a quarter across rounds while CuPy's stayed put). Autotuner off, as benchmarks/sort.py.

    python benchmarks/probes/sort_pic_rounds.py [--rounds 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=60)
    p.add_argument("--out", default="build/probes")
    args = p.parse_args()
    os.environ["SPHGPU_AUTOTUNE"] = "0"
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info, time_call
    from sphgpu.sort import _cuda

    rng = np.random.default_rng(1)
    n = 8 * 2**20
    pos = rng.random((n, 2))
    cells = (np.floor(pos[:, 1] * 32) * 32 + np.floor(pos[:, 0] * 32)).astype(np.uint32)
    dc = cupy.asarray(cells)
    want = np.argsort(cells, kind="stable")
    s, perm = sphgpu.radix_sort(dc, key_bits=10, return_permutation=True, backend="cuda")
    assert np.array_equal(perm.get(), want) and np.array_equal(s.get(), cells[want])
    sync = cupy.cuda.Device().synchronize

    def ms(fn):
        return time_call(fn, repeat=args.repeat, warmup=3, sync=sync).median * 1e3

    rounds = []
    for r in range(args.rounds):
        row = {"public_radix_sort_ms": ms(lambda: sphgpu.radix_sort(
                   dc, key_bits=10, return_permutation=True, backend="cuda")),
               "private_sort_pairs_ms": ms(lambda: _cuda.sort_pairs(dc, 10, 5, True)),
               "cupy_argsort_ms": ms(lambda: cupy.argsort(dc))}
        row["ratio_public_vs_cupy_argsort"] = (row["cupy_argsort_ms"]
                                               / row["public_radix_sort_ms"])
        rounds.append(row)
        print(f"round {r}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()), flush=True)
    info = machine_info()
    result = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "n": n, "repeat": args.repeat, "rounds": rounds,
              "what": "synchronized whole calls, median of repeat; private_sort_pairs is the "
                      "backend's own entry point, for comparison only"}
    os.makedirs(args.out, exist_ok=True)
    gpu = "h200" if "H200" in info.get("gpu", "") else "h100"
    with open(os.path.join(args.out, f"sort_pic_rounds_{gpu}.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
