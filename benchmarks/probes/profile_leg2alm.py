"""Per-map time of the CUDA adjoint Legendre step (leg2alm) for launch shapes (threads, ring pairs
per thread[, chunk]) at nside 2048 / lmax 4096 (or the nside given), 8 maps, 2 a launch
(private step, device-resident, synchronised; medians of 3), and each result's difference from
the first shape's.

Run on the GPU machine:  python benchmarks/probes/profile_leg2alm.py OUT.json [NSIDE]
"""
import json, sys
import cupy, numpy as np
import sphgpu
from sphgpu.bench import time_call
from sphgpu.sht import _cuda, _cuda_kernels as K

nside = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
lmax = 2 * nside
g = sphgpu.RingGeometry.healpix(nside)
pl = _cuda.plan(g, lmax, lmax)
rng = np.random.default_rng(0)
shape = (8, pl.nrings, pl.mmax + 1)
leg = cupy.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
sync = cupy.cuda.Device().synchronize
variants = [(2, (32, 8)), (2, (32, 8, 12)), (2, (32, 8, 8)), (2, (32, 4, 8)), (2, (64, 4, 8)),
            (2, (32, 6, 12)), (2, (32, 4, 16)), (2, (32, 8))]
ref = None
out = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "nside": nside, "rows": []}
for per, launch in variants:
    K.LEG2ALM_MAX_MAPS = per
    pl.launch["leg2alm"] = pl.launch["leg2alm|maps=2"] = launch     # 1 and 2 maps a launch
    n = 8 - 8 % per
    lg = cupy.ascontiguousarray(leg[:n])
    try:
        a = _cuda._leg2alm(lg, pl, cupy)
    except Exception as e:
        print(per, launch, "failed", repr(e)[:300], flush=True)
        continue
    if ref is None:
        ref = a
    err = float(cupy.abs(a[:6] - ref[:6]).max() / cupy.abs(ref[:6]).max())
    t = time_call(lambda: _cuda._leg2alm(lg, pl, cupy), repeat=3, sync=sync).median
    out["rows"].append(dict(per=per, launch=list(launch), ms_per_map=t / n * 1e3, rel_err=err))
    print(f"per {per} launch {launch}: leg2alm {t / n * 1e3:.2f} ms a map, rel err {err:.1e}",
          flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
