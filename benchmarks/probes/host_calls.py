"""Whole calls from NumPy on the CUDA backend: public ``map2alm`` (``iter=0``) of a map and
``alm2map`` of a_lm, both NumPy arrays in pageable memory as a user's are (medians of 5 after a
warm-up call), and the host checks of those inputs alone (``as_maps``, ``as_complex_array``).
Appends one JSON line to OUT.jsonl; run it once per code version (each from its own source
tree) in the same machine call to compare them.

Run on the GPU machine:  python benchmarks/probes/host_calls.py LABEL NSIDE OUT.jsonl
"""
import json
import os
import sys
import time

import numpy as np

import sphgpu
from sphgpu import _validate as V

label, nside, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lmax = 2 * nside
m = np.random.default_rng(0).standard_normal(12 * nside ** 2)
alm = np.array(sphgpu.map2alm(m, lmax=lmax, iter=0, backend="cuda"))   # pageable, as a user's
sphgpu.alm2map(alm, nside, backend="cuda")


def median_ms(f, n=5):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


row = dict(nside=nside, code=label,
           as_maps_ms=median_ms(lambda: V.as_maps("maps", m)),
           check_alm_ms=median_ms(lambda: V.as_complex_array("alm", alm)),
           map2alm_host_ms=median_ms(lambda: sphgpu.map2alm(m, lmax=lmax, iter=0, backend="cuda")),
           alm2map_host_ms=median_ms(lambda: sphgpu.alm2map(alm, nside, backend="cuda")))
import cupy  # noqa: E402  (after sphgpu has chosen the device)

row["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
row["host_cores"] = os.cpu_count()
print(json.dumps(row), flush=True)
with open(path, "a") as f:
    f.write(json.dumps(row) + "\n")
