"""Host time against GPU time of the PIC re-sort (8M keys, 10 bits, with the permutation): the
public radix_sort, the backend's private sort_pairs and cupy.argsort, each timed four ways
(host time of a call when the GPU queue is long, pipelined wall time, synchronised wall time as
benchmarks/sort.py times it, CUDA events), then a cProfile of the public call's host side.

Run on the GPU machine:  python benchmarks/probes/profile_pic.py
"""
import cProfile
import io
import pstats
import time

import cupy
import numpy as np

import sphgpu
from sphgpu.sort import _cuda

N = 8 << 20
CALLS = 200


def timings(f, sync):
    """(host s, pipelined s, synchronised median s, CUDA-event s) of one call of ``f``."""
    for _ in range(20):
        f()
    sync()
    t0 = time.perf_counter()
    for _ in range(CALLS):            # a queue this long never makes the host wait
        f()
    host = (time.perf_counter() - t0) / CALLS
    sync()
    pipelined = (time.perf_counter() - t0) / CALLS
    synced = []
    for _ in range(50):
        sync()
        t0 = time.perf_counter()
        f()
        sync()
        synced.append(time.perf_counter() - t0)
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record()
    for _ in range(50):
        f()
    e1.record()
    e1.synchronize()
    return host, pipelined, float(np.median(synced)), cupy.cuda.get_elapsed_time(e0, e1) / 50e3


def main():
    rng = np.random.default_rng(1)
    pos = rng.random((N, 2))
    cells = cupy.asarray((np.floor(pos[:, 1] * 32) * 32
                          + np.floor(pos[:, 0] * 32)).astype(np.uint32))
    sync = cupy.cuda.Device().synchronize
    calls = {
        "public": lambda: sphgpu.radix_sort(cells, key_bits=10, return_permutation=True,
                                            backend="cuda"),
        "public_auto": lambda: sphgpu.radix_sort(cells, key_bits=10, return_permutation=True),
        "private": lambda: _cuda.sort_pairs(cells, 10, 5, True),
        "argsort": lambda: cupy.argsort(cells),
    }
    for name, f in calls.items():
        t = [v * 1e6 for v in timings(f, sync)]
        print(f"{name:12s} host {t[0]:7.1f} us  pipelined {t[1]:7.1f} us  synchronised "
              f"{t[2]:7.1f} us  events {t[3]:7.1f} us", flush=True)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(CALLS):
        calls["public"]()
    sync()
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(30)
    print(out.getvalue())


if __name__ == "__main__":
    main()
