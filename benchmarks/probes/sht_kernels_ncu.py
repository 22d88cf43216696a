"""Every kernel one public transform launches, with its GPU time, from Nsight Compute (``ncu``):
one ``alm2map`` and one ``map2alm`` (iter 0) of one map on device arrays at --nside (``--calls``
also takes ``alm2map_pol`` and ``map2alm_pol``: T, E, B and I, Q, U), after a warm-up, the
kernels in launch order and summed by name (cuFFT's own kernels included, which CUDA events
around the private stages cannot split). ncu replays each kernel alone, so the
times are each kernel's own, without the gaps between launches.

Run on the GPU machine:  python benchmarks/probes/sht_kernels_ncu.py OUT.json [--nside 2048]
(it re-runs itself under ``ncu`` and parses its CSV).
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import json
import os
import shutil
import subprocess
import sys


def profiled(nside, calls):
    """The body run under ncu: warm up, then one of each call between profile start/stop."""
    import cupy
    import numpy as np
    from numba import cuda

    import sphgpu
    from sphgpu.testing import random_alm

    lmax = 2 * nside
    layout = sphgpu.AlmLayout(lmax)
    alm = cupy.asarray(random_alm(np.random.default_rng(1), layout))
    maps = cupy.asarray(np.random.default_rng(2).standard_normal(12 * nside ** 2))
    alm3 = cupy.stack([alm, 0.5 * alm, 0.25 * alm])
    maps3 = cupy.stack([maps, 0.5 * maps, 0.25 * maps])
    run = {"alm2map": lambda: sphgpu.alm2map(alm, nside, lmax=lmax),
           "map2alm": lambda: sphgpu.map2alm(maps, lmax=lmax, iter=0),
           "alm2map_pol": lambda: sphgpu.alm2map(alm3, nside, lmax=lmax, pol=True),
           "map2alm_pol": lambda: sphgpu.map2alm(maps3, lmax=lmax, iter=0, pol=True)}
    for name in calls:
        run[name]()
        run[name]()
    cupy.cuda.Device().synchronize()
    for name in calls:
        cuda.profile_start()
        run[name]()
        cupy.cuda.Device().synchronize()
        cuda.profile_stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--calls", nargs="+", default=["alm2map", "map2alm"],
                   choices=["alm2map", "map2alm", "alm2map_pol", "map2alm_pol"])
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inner:
        profiled(args.nside, args.calls)
        return
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    from sphgpu.bench import machine_info

    result = {"machine": machine_info(), "nside": args.nside, "lmax": 2 * args.nside, "calls": {}}
    for call in args.calls:
        cmd = [ncu, "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum",
               "--csv", "--print-units", "base", sys.executable, __file__, args.out,
               "--nside", str(args.nside), "--calls", call, "--inner"]
        out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
        text = out.stdout[out.stdout.find('"ID"'):]
        rows = [r for r in csv.DictReader(io.StringIO(text))
                if r.get("Metric Name") == "gpu__time_duration.sum"]
        if not rows:
            print(out.stdout[-3000:], out.stderr[-3000:])
            raise SystemExit(f"ncu gave no kernel times for {call}")
        launches = [{"name": r["Kernel Name"][:120], "grid": r.get("Grid Size"),
                     "block": r.get("Block Size"),
                     "ms": float(r["Metric Value"].replace(",", "")) / 1e6} for r in rows]
        by_name = collections.defaultdict(lambda: [0, 0.0])
        for k in launches:
            by_name[k["name"]][0] += 1
            by_name[k["name"]][1] += k["ms"]
        total = sum(k["ms"] for k in launches)
        result["calls"][call] = {"kernels_ms": total, "launches": launches,
                                 "by_name": {n: {"launches": c, "ms": t}
                                             for n, (c, t) in sorted(by_name.items(),
                                                                     key=lambda x: -x[1][1])}}
        print(f"{call}: {len(launches)} launches, {total:.3f} ms of kernels")
        for n, (c, t) in sorted(by_name.items(), key=lambda x: -x[1][1])[:25]:
            print(f"  {t:8.3f} ms  {c:4d}x  {n[:90]}")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
