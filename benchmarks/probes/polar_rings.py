"""Polarized and spin-2 transforms at nside 2048 / lmax 4096 (they resample in theta) with the
rings nearest the poles taking their own Legendre step below several sin(theta) limits
(``sphgpu.sht._cuda.POLAR_SIN``, 0: none): relative L2 error against ducc0 (sphgpu's cpu
backend, all host threads) and the median time of the public call on CuPy arrays. Prints one
line per limit as it goes; writes OUT.json.

Run on the GPU machine:  python benchmarks/probes/polar_rings.py OUT.json LIMIT [LIMIT ...]
"""
import json
import sys
import time

import numpy as np

import cupy

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.bench import machine_info
from sphgpu.sht import _cpu, _cuda
from sphgpu.testing import random_alm, rel_err

path, limits = sys.argv[1], [float(x) for x in sys.argv[2:]]
nside, lmax = 2048, 4096
g = RingGeometry.healpix(nside)
layout = AlmLayout(lmax, lmax)
rng = np.random.default_rng(3)
alms = np.stack([random_alm(rng, layout, k=1)[0] for _ in range(3)])
alms[:, :lmax + 1] = alms[:, :lmax + 1].real
t0 = time.perf_counter()
ref_map = _cpu.synthesis_spin(alms[None], 2, layout, g)[0]
ref_alm = _cpu.analysis_spin(ref_map[None], 2, layout, g)[0]
print(f"ducc0 references {time.perf_counter() - t0:.1f} s", flush=True)
a_dev, m_dev = cupy.asarray(alms), cupy.asarray(ref_map)
sync = cupy.cuda.Device().synchronize
out = {"machine": machine_info(), "nside": nside, "lmax": lmax, "rows": []}


def median_ms(fn, n=5):
    fn()
    sync()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


for limit in limits:
    _cuda.POLAR_SIN = limit
    syn = lambda: sphgpu.alm2map(a_dev, nside, lmax, pol=True, backend="cuda")
    ana = lambda: sphgpu.map2alm(m_dev, lmax, iter=0, pol=True, backend="cuda")
    row = {"polar_sin": limit,
           "err_alm2map_pol": rel_err(cupy.asnumpy(syn()), ref_map),
           "err_map2alm_pol": rel_err(cupy.asnumpy(ana()), ref_alm),
           "max_err_alm2map_pol": float(np.abs(cupy.asnumpy(syn()) - ref_map).max()
                                        / np.abs(ref_map).max()),
           "ms_alm2map_pol": median_ms(syn), "ms_map2alm_pol": median_ms(ana)}
    out["rows"].append(row)
    print(json.dumps(row), flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
