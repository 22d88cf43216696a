"""The Legendre steps of the resampled Fejer rings at nside 2048 (lmax 4096 and the spin plan's
4098) for 1 to 8 maps a call: the private ``_cuda._alm2leg`` / ``_cuda._leg2alm``, each with the
launches the autotuner picks for that many maps (plain kernels, or the tensor-core ones for the
group sizes they take), medians on device arrays, synchronised. Whether a polarized set's 3 rows
would go faster padded to 4 or 8 maps. Prints a line per count; writes OUT.json.

Run on the GPU machine:  python benchmarks/probes/legendre_maps.py OUT.json
"""
import json
import sys

import numpy as np

import cupy

from sphgpu import RingGeometry
from sphgpu.bench import machine_info, time_call
from sphgpu.sht import _cuda

path = sys.argv[1]
sync = cupy.cuda.Device().synchronize
out = {"machine": machine_info(), "rows": []}
for lmax in (4096, 4098):
    rs = _cuda._resampler(_cuda.plan(RingGeometry.healpix(2048), lmax, 4096))
    pl = rs.plan
    rng = np.random.default_rng(1)
    for k in (1, 2, 3, 4, 8):
        leg = cupy.asarray(rng.standard_normal((k, pl.nrings, 4097))
                           + 1j * rng.standard_normal((k, pl.nrings, 4097)))
        alm = _cuda._leg2alm(leg, pl, cupy)
        t_a = time_call(lambda: _cuda._leg2alm(leg, pl, cupy), repeat=5, sync=sync).median
        t_s = time_call(lambda: _cuda._alm2leg(alm, pl, cupy), repeat=5, sync=sync).median
        row = {"lmax": lmax, "maps": k, "alm2leg_ms": t_s * 1e3, "leg2alm_ms": t_a * 1e3}
        out["rows"].append(row)
        print(f"lmax {lmax}, {k} maps: alm2leg {t_s * 1e3:.2f} ms, leg2alm {t_a * 1e3:.2f} ms",
              flush=True)
        del leg, alm
with open(path, "w") as fh:
    json.dump(out, fh, indent=1)
