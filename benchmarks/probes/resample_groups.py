"""The theta resampling's interpolation and its transpose at nside 2048 / lmax 4096 with the
target rings (interpolation) and the grid points (transpose) taken in groups of several sizes
by one thread (``_resample_kernels.interp_kernel`` / ``spread_kernel``, the ``group`` of
``sphgpu.sht._cuda._interp_groups`` / ``_spread_groups``; 1 is one ring or point a thread, as
before the groups). Private stages on device arrays (``_cuda._resample``,
``_cuda._resample_adjoint``, one map, medians, synchronised), each result against group 1's
(max relative difference). Prints a line per size; writes OUT.json.

Run on the GPU machine:  python benchmarks/probes/resample_groups.py OUT.json [NSIDE]
"""
import json
import sys

import numpy as np

import cupy

from sphgpu import RingGeometry
from sphgpu.bench import machine_info, time_call
from sphgpu.sht import _cuda, theta_resample
from sphgpu.sht import _resample_kernels as RK

path = sys.argv[1]
nside = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
lmax = 2 * nside
rs = _cuda._resampler(_cuda.plan(RingGeometry.healpix(nside), lmax, lmax))
rp = rs.rp
rng = np.random.default_rng(5)
nm = lmax + 1
legf = cupy.asarray(rng.standard_normal((1, rp.n, nm)) + 1j * rng.standard_normal((1, rp.n, nm)))
legh = cupy.asarray(rng.standard_normal((1, rp.nrings, nm))
                    + 1j * rng.standard_normal((1, rp.nrings, nm)))
sync = cupy.cuda.Device().synchronize
out = {"machine": machine_info(), "nside": nside, "lmax": lmax, "interp": {}, "spread": {}}


def rel(a, b):
    return float(cupy.abs(a - b).max() / cupy.abs(b).max())


ref = None
for g in (1, 2, 4, 8):
    RK.RING_GROUP = g
    tiles, wpad, got = _cuda._interp_groups(rp.first, rp.weights)
    rs.interp_tiles, rs.interp_weights, rs.interp_group = (cupy.asarray(tiles),
                                                           cupy.asarray(wpad), got)
    res = _cuda._resample(legf, rs, cupy)
    ref = res if ref is None else ref
    t = time_call(lambda: _cuda._resample(legf, rs, cupy), repeat=9, sync=sync).median
    out["interp"][g] = {"group": got, "window": wpad.shape[1], "ms": t * 1e3,
                        "max_rel_diff_vs_1": rel(res, ref)}
    print(f"resample, rings in groups of {got} (window {wpad.shape[1]}): {t * 1e3:.3f} ms, "
          f"vs 1: {out['interp'][g]['max_rel_diff_vs_1']:.1e}", flush=True)

ranges = theta_resample.spread_ranges(rp)
tiles, ring0 = _cuda._spread_tiles(*ranges[1:3], *ranges[4:6])
taps = _cuda._spread_taps(rp, ranges, tiles, ring0)
ref = None
for g in (1, 2, 4):
    gfirst, rows, _, weights = _cuda._spread_groups(*taps, tiles, g)
    rs.spread_gfirst, rs.grp_row, rs.grp_weight = (cupy.asarray(gfirst), cupy.asarray(rows),
                                                   cupy.asarray(weights))
    rs.spread_group = g
    res = _cuda._resample_adjoint(legh, rs, cupy)
    ref = res if ref is None else ref
    t = time_call(lambda: _cuda._resample_adjoint(legh, rs, cupy), repeat=9, sync=sync).median
    out["spread"][g] = {"union": rows.shape[1], "ms": t * 1e3,
                        "max_rel_diff_vs_1": rel(res, ref)}
    print(f"resample_adjoint, points in groups of {g} ({rows.shape[1]} slots): "
          f"{t * 1e3:.3f} ms, vs 1: {out['spread'][g]['max_rel_diff_vs_1']:.1e}", flush=True)
with open(path, "w") as fh:
    json.dump(out, fh, indent=1)
