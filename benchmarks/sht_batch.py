"""Batched transforms: time per map of the public alm2map and map2alm for k maps at once
(device arrays in and out, autotuned launches, including each batch's tensor-core or plain
Legendre choice), against k = 1, and the private Legendre steps alone (on Fejer rings and
resampled, where the transforms resample: ``sphgpu.sht.theta_resample``); JSON with machine info.
For the sizes in ``--direct-maps`` the public calls are also timed with the resampling off
(``SPHGPU_THETA_RESAMPLE=0``) in the same process.

The first call of each batch size in the process (compilation and autotuning) is timed apart,
as ``first_s``. Run on the GPU machine:

    python benchmarks/sht_batch.py --nside 1024 2048 --maps 1 4 8 16 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--maps", type=int, nargs="+", default=[1, 4, 8, 16])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--name", default="sht_batch.json")
    p.add_argument("--direct-maps", type=int, nargs="*", default=[1])
    args = p.parse_args()
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info, time_call
    from sphgpu.sht import _cuda

    sync = cupy.cuda.Device().synchronize
    rows = []
    rng = np.random.default_rng(0)
    for nside in args.nside:
        lmax = 2 * nside
        layout = sphgpu.AlmLayout(lmax)
        g = sphgpu.RingGeometry.healpix(nside)
        kmax = max(args.maps)
        alm = cupy.asarray(rng.standard_normal((kmax, layout.size))
                           + 1j * rng.standard_normal((kmax, layout.size)))
        maps = cupy.asarray(rng.standard_normal((kmax, 12 * nside * nside)))
        for k in args.maps:
            a, m = alm[:k], maps[:k]
            t0 = time.perf_counter()
            sphgpu.alm2map(a, nside, lmax, pol=False, backend="cuda")
            sphgpu.map2alm(m, lmax, iter=0, pol=False, backend="cuda")
            sync()
            first = time.perf_counter() - t0
            syn = time_call(lambda: sphgpu.alm2map(a, nside, lmax, pol=False, backend="cuda"),
                            repeat=args.repeat, sync=sync).median
            ana = time_call(lambda: sphgpu.map2alm(m, lmax, iter=0, pol=False, backend="cuda"),
                            repeat=args.repeat, sync=sync).median
            pl = _cuda.plan(g, lmax, lmax)
            rs = _cuda._resampler(pl)
            leg = _cuda._synthesis_legendre(a, pl, cupy)
            s1 = time_call(lambda: _cuda._synthesis_legendre(a, pl, cupy), repeat=args.repeat,
                           sync=sync).median
            s2 = time_call(lambda: _cuda._analysis_legendre(leg, pl, cupy), repeat=args.repeat,
                           sync=sync).median
            launches = (rs.plan if rs is not None else pl).launch
            row = dict(nside=nside, lmax=lmax, maps=k, first_s=first, resampled=rs is not None,
                       alm2map_ms_per_map=syn / k * 1e3, map2alm_ms_per_map=ana / k * 1e3,
                       alm2leg_ms_per_map=s1 / k * 1e3, leg2alm_ms_per_map=s2 / k * 1e3,
                       launches={s: list(v) for s, v in launches.items()})
            if k in args.direct_maps and rs is not None:
                os.environ["SPHGPU_THETA_RESAMPLE"] = "0"
                try:
                    sphgpu.alm2map(a, nside, lmax, pol=False, backend="cuda")
                    sphgpu.map2alm(m, lmax, iter=0, pol=False, backend="cuda")
                    row["direct_alm2map_ms_per_map"] = time_call(
                        lambda: sphgpu.alm2map(a, nside, lmax, pol=False, backend="cuda"),
                        repeat=args.repeat, sync=sync).median / k * 1e3
                    row["direct_map2alm_ms_per_map"] = time_call(
                        lambda: sphgpu.map2alm(m, lmax, iter=0, pol=False, backend="cuda"),
                        repeat=args.repeat, sync=sync).median / k * 1e3
                finally:
                    os.environ.pop("SPHGPU_THETA_RESAMPLE")
            rows.append(row)
            print(f"nside {nside} k {k:2d}: alm2map {row['alm2map_ms_per_map']:.2f} ms/map, "
                  f"map2alm {row['map2alm_ms_per_map']:.2f}; Legendre steps (private) "
                  f"{row['alm2leg_ms_per_map']:.2f} / {row['leg2alm_ms_per_map']:.2f}; "
                  f"first {first:.1f} s; resampled {row['resampled']}; direct "
                  f"{row.get('direct_alm2map_ms_per_map', float('nan')):.2f} / "
                  f"{row.get('direct_map2alm_ms_per_map', float('nan')):.2f}", flush=True)
    info = machine_info()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name)
    with open(path, "w") as f:
        json.dump({"machine": info, "rows": rows,
                   "what": "public alm2map/map2alm (iter=0) on CuPy arrays, k maps a call, "
                           "median of --repeat synchronized calls, per map; alm2leg/leg2alm: "
                           "the private Legendre steps alone, with the resampling where the "
                           "transforms resample (resampled); direct_*: the public calls with "
                           "SPHGPU_THETA_RESAMPLE=0 in the same process"}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
