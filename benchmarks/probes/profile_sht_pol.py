"""Where the time of a polarized CUDA transform goes (private stages, not what users call).

Run on the GPU machine:  python benchmarks/probes/profile_sht_pol.py --nside 2048
Times, device-resident, with CUDA synchronisation: the spin coefficient passes, the scalar
Legendre step on 1, 2 and 3 rows (with 2 or 3 maps sharing one launch), the ring step (with
the sin^-2 ring factor fused into its fold), and their adjoints; prints a table and writes JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from sphgpu import AlmLayout, RingGeometry
from sphgpu.bench import machine_info, time_call
from sphgpu.sht import _cuda, spin


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import cupy

    nside, lmax = args.nside, 2 * args.nside
    layout, g = AlmLayout(lmax), RingGeometry.healpix(args.nside)
    ext = spin.extended_layout(layout, 2)
    pl = _cuda.plan(g, ext.lmax, ext.mmax)
    rng = np.random.default_rng(0)
    sync = cupy.cuda.Device().synchronize
    alm = cupy.asarray(rng.standard_normal((1, 3, layout.size))
                       + 1j * rng.standard_normal((1, 3, layout.size)))
    c3 = cupy.asarray(rng.standard_normal((3, ext.size)) + 1j * rng.standard_normal((3, ext.size)))
    rows = {}

    def t(name, fn):
        rows[name] = time_call(fn, repeat=5, sync=sync).median
        print(f"{name:45s} {rows[name] * 1e3:8.2f} ms", flush=True)

    t("spin coefficients E,B (fused eth passes)",
      lambda: spin.spin_coefficients(alm[:, 1:], 2, layout, cupy, _cuda._eth))
    t("spin coefficients E,B (array passes)",
      lambda: spin.spin_coefficients(alm[:, 1:], 2, layout, cupy))
    leg3 = _cuda._alm2leg(c3, pl, cupy)
    default_per = _cuda.MAPS_PER_LAUNCH
    for n in (1, 2, 3):
        for per in sorted({2, n}):
            _cuda.MAPS_PER_LAUNCH = per
            t(f"alm2leg {n} rows, {per} per launch", lambda: _cuda._alm2leg(c3[:n], pl, cupy))
    _cuda.MAPS_PER_LAUNCH = default_per
    for n in (1, 2, 3):
        t(f"leg2map {n} rows", lambda: _cuda._leg2map(cupy.ascontiguousarray(leg3[:n]), pl, cupy))
    s3 = spin.row_scale(cupy, g, 2, 3)
    t("leg2map 3 rows, sin^-2 fused into the fold (T, Q, U)",
      lambda: _cuda._leg2map(leg3, pl, cupy, s3))
    maps = _cuda._leg2map(leg3, pl, cupy)
    for n in (1, 2, 3):
        t(f"map2leg {n} rows", lambda: _cuda._map2leg(cupy.ascontiguousarray(maps[:n]), pl, cupy))
    legc = cupy.ascontiguousarray(leg3)
    for n in (1, 2, 3):
        t(f"leg2alm {n} rows", lambda: _cuda._leg2alm(legc[:n], pl, cupy))
    t("spin adjoint coefficients (fused)",
      lambda: spin.spin_coefficients_adjoint(c3[None, 1:], 2, layout, cupy, _cuda._eth))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "profile_sht_pol.json"), "w") as fh:
            json.dump({"machine": machine_info(), "nside": nside, "lmax": lmax,
                       "median_s": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
