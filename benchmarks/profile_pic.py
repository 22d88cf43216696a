"""Host time against GPU time of the PIC re-sort (8M keys, 10 bits, with the permutation): the
public radix_sort, the backend's private sort_pairs and cupy.argsort, each timed four ways
(host time of a call when the GPU queue is long, pipelined wall time, synchronised wall time as
benchmarks/sort.py times it, CUDA events), then a cProfile of the public call's host side.

Run on the GPU machine:  python benchmarks/profile_pic.py
"""
import time, cProfile, pstats, io
import numpy as np, cupy, sphgpu
from sphgpu.sort import _cuda, api

n = 8 << 20
rng = np.random.default_rng(1)
pos = rng.random((n, 2))
cells = cupy.asarray((np.floor(pos[:, 1] * 32) * 32 + np.floor(pos[:, 0] * 32)).astype(np.uint32))
sync = cupy.cuda.Device().synchronize
calls = {
    "public": lambda: sphgpu.radix_sort(cells, key_bits=10, return_permutation=True, backend="cuda"),
    "public_auto": lambda: sphgpu.radix_sort(cells, key_bits=10, return_permutation=True),
    "private": lambda: _cuda.sort_pairs(cells, 10, 5, True),
    "argsort": lambda: cupy.argsort(cells),
}
for name, f in calls.items():
    for _ in range(20): f()
    sync()
    # host time per call: the queue is long enough that the host never waits (200 calls)
    t0 = time.perf_counter()
    for _ in range(200): f()
    host = (time.perf_counter() - t0) / 200
    sync()
    total = (time.perf_counter() - t0) / 200
    # per call with sync (as benchmarks/sort.py's timed)
    ts = []
    for _ in range(50):
        sync(); t0 = time.perf_counter(); f(); sync(); ts.append(time.perf_counter() - t0)
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record(); 
    for _ in range(50): f()
    e1.record(); e1.synchronize()
    gpu = cupy.cuda.get_elapsed_time(e0, e1) / 50 * 1e-3
    print(f"{name:12s} host {host*1e6:7.1f} us  pipelined {total*1e6:7.1f} us  synced median {np.median(ts)*1e6:7.1f} us  events {gpu*1e6:7.1f} us", flush=True)
pr = cProfile.Profile(); pr.enable()
for _ in range(200): calls["public"]()
sync(); pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30); print(s.getvalue()[:7000])
