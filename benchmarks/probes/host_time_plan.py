"""Host time of a reused transform plan: how long ``SHT.alm2map`` / ``SHT.map2alm`` of a batch
of device arrays hold the calling thread (the device may still be working), with and without
``out=``, and where that time goes (cProfile, the 25 functions of largest own time).

Run on the GPU machine:  python benchmarks/probes/host_time_plan.py NSIDE BATCH OUT.json
"""
import cProfile
import io
import json
import pstats
import sys
import time

import numpy as np

import sphgpu
from sphgpu.bench import machine_info

nside, k, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
import cupy  # noqa: E402

lmax = 2 * nside
plan = sphgpu.SHT(nside, lmax, backend="cuda")
rng = np.random.default_rng(0)
alm = cupy.asarray(rng.standard_normal((k, plan.nalm)) + 0j)
maps = cupy.asarray(rng.standard_normal((k, plan.npix)))
out_map = cupy.empty((k, plan.npix))
out_alm = cupy.empty((k, plan.nalm), dtype=complex)
sync = cupy.cuda.Device().synchronize
calls = {"alm2map": lambda: plan.alm2map(alm, pol=False),
         "alm2map_out": lambda: plan.alm2map(alm, pol=False, out=out_map),
         "map2alm": lambda: plan.map2alm(maps, iter=0, pol=False),
         "map2alm_out": lambda: plan.map2alm(maps, iter=0, pol=False, out=out_alm)}
row = {"machine": machine_info(), "nside": nside, "batch": k, "host_ms": {}, "device_ms": {},
       "profile": {}}
for name, fn in calls.items():
    fn()
    sync()
    host, dev = [], []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        r = fn()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        host.append(t1 - t0)
        dev.append(t2 - t0)
        del r
    row["host_ms"][name] = float(np.median(host)) * 1e3
    row["device_ms"][name] = float(np.median(dev)) * 1e3
    prof = cProfile.Profile()
    sync()
    prof.enable()
    r = fn()
    prof.disable()
    sync()
    del r
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    row["profile"][name] = s.getvalue()
    print(name, "host", row["host_ms"][name], "ms; call to synced", row["device_ms"][name],
          "ms", flush=True)
    print(s.getvalue()[:6000], flush=True)
with open(path, "w") as f:
    json.dump(row, f, indent=1)
