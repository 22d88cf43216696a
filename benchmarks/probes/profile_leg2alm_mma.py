"""Per-map time of the tensor-core adjoint Legendre step (leg2alm_mma_kernel) for launch shapes
("mma", warps) at nside 2048 / lmax 4096 (or the nside given), 16 maps in groups of 8 (private
step, device-resident, synchronised; medians of 5), and each result's difference from the first
shape's.

Run on the GPU machine:  python benchmarks/probes/profile_leg2alm_mma.py OUT.json [NSIDE [SHAPE ...]]
with each SHAPE as warps or warps,max_registers (default: 4 8 2 4).
"""
import json
import sys

import cupy

import sphgpu
from sphgpu.bench import machine_info, time_call
from sphgpu.sht import _cuda

nside = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
lmax = 2 * nside
pl = _cuda.plan(sphgpu.RingGeometry.healpix(nside), lmax, lmax)
_cuda._tuned = lambda pl: True                 # the forced shapes below, not the tuner's
rng = cupy.random.default_rng(0)
shape = (16, pl.nrings, pl.mmax + 1)
leg = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
sync = cupy.cuda.Device().synchronize
ref = None
out = {"machine": machine_info(), "nside": nside, "maps": 16, "rows": []}
shapes = sys.argv[3:] or ["4", "8", "2", "4"]
for launch in [("mma", *map(int, s.split(","))) for s in shapes]:
    pl.launch["leg2alm|maps=8"] = launch
    try:
        a = _cuda._leg2alm(leg, pl, cupy)
    except Exception as e:  # noqa: BLE001  a shape that does not build: say so, go on
        print(launch, "failed", repr(e)[:300], flush=True)
        continue
    ref = a if ref is None else ref
    err = float(cupy.abs(a - ref).max() / cupy.abs(ref).max())
    t = time_call(lambda: _cuda._leg2alm(leg, pl, cupy), repeat=5, sync=sync).median
    out["rows"].append(dict(launch=list(launch), ms_per_map=t / 16 * 1e3, rel_err=err))
    print(out["rows"][-1], flush=True)
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
