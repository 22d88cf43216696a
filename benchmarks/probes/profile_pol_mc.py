"""Where the time of a polarized Monte Carlo batch and of the polarized transforms goes on the
GPU (private stages, synchronised around each: not what users call).

Run on the GPU machine:  python benchmarks/probes/profile_pol_mc.py [--nside 2048] --out DIR

1. Public calls on device arrays (medians): alm2map / map2alm of T alone, of 3 spin-0 maps in
   one batch, of T, E, B (polarized) and of E, B (spin 2).
2. One ``simulate_batch`` of a polarized, masked, beamed, noisy Monte Carlo (the batch size the
   Monte Carlo picks), whole, then again with every stage wrapped: the stages' times add to
   more than the whole (the syncs), but show the shares.
Writes DIR/profile_pol_mc.json.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import math
import os
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--out", default=None)
    p.add_argument("--batches", type=int, nargs="*", default=[4, 8, 16])
    p.add_argument("--nsims", type=int, default=48)
    args = p.parse_args()
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info, time_call
    from sphgpu.data import planck2018_cl
    from sphgpu.sims import MonteCarlo, latitude_cut_mask
    from sphgpu.sims import pipeline as P

    nside, lmax = args.nside, 2 * args.nside
    sync = cupy.cuda.Device().synchronize
    sht = sphgpu.SHT(nside, lmax)
    rng = np.random.default_rng(0)
    nalm = sht.nalm
    alm3 = cupy.asarray(rng.standard_normal((3, nalm)) + 1j * rng.standard_normal((3, nalm)))
    alm3[:, :lmax + 1] = alm3[:, :lmax + 1].real
    rows = {}

    def t(name, fn, repeat=7):
        rows[name] = time_call(fn, repeat=repeat, sync=sync).median
        print(f"{name:48s} {rows[name] * 1e3:9.2f} ms", flush=True)

    t("alm2map T", lambda: sht.alm2map(alm3[0], pol=False))
    t("alm2map 3 spin-0 maps (batch)", lambda: sht.alm2map(alm3, pol=False))
    t("alm2map pol T,E,B", lambda: sht.alm2map(alm3, pol=True))
    t("alm2map_spin 2", lambda: sht.alm2map_spin(alm3[1:], 2))
    m3 = sht.alm2map(alm3, pol=True)
    t("map2alm T", lambda: sht.map2alm(m3[0], iter=0, pol=False))
    t("map2alm 3 spin-0 maps (batch)", lambda: sht.map2alm(m3, iter=0, pol=False))
    t("map2alm pol", lambda: sht.map2alm(m3, iter=0, pol=True))
    t("map2alm_spin 2", lambda: sht.map2alm_spin(m3[1:], 2, iter=0))
    del m3

    cls = planck2018_cl(lmax, spectra=("TT", "EE", "BB", "TE"))
    mask = latitude_cut_mask(nside, 20.0, apodization_deg=5.0)
    mc = MonteCarlo(cls, nside, lmax, pol=True, fwhm=5.0 * math.pi / 10800, mask=mask,
                    noise_sigma=10.0, seed=1, backend="cuda")
    k = mc._auto_batch("cuda")
    print("auto batch", k, flush=True)
    idx = list(range(k))
    P.simulate_batch(mc.plan, idx, "cuda")
    sync()
    whole = []
    for _ in range(3):
        t0 = time.perf_counter()
        P.simulate_batch(mc.plan, idx, "cuda")
        sync()
        whole.append(time.perf_counter() - t0)
    rows[f"simulate_batch {k} sets, whole"] = float(np.median(whole))
    print(f"simulate_batch of {k}: {np.median(whole) * 1e3:.1f} ms, "
          f"{np.median(whole) / k * 1e3:.1f} ms a simulation", flush=True)

    # every stage wrapped with syncs: (owner, attribute, label)
    from sphgpu.sht import _cuda as C
    from sphgpu.sht import spin as S
    from sphgpu.sht import plan as PL
    from sphgpu.sims import random as R

    laps = collections.defaultdict(float)
    counts = collections.Counter()

    originals = []

    def wrap(owner, name, label):
        fn = getattr(owner, name)
        originals.append((owner, name, fn))

        @functools.wraps(fn)
        def timed(*a, **kw):
            sync()
            t0 = time.perf_counter()
            out = fn(*a, **kw)
            sync()
            laps[label] += time.perf_counter() - t0
            counts[label] += 1
            return out
        setattr(owner, name, timed)

    for owner, name, label in [
            (P, "_draw_alm", "draw a_lm (incl. normals)"),
            (R.Stream, "standard_normal", "normals (all)"),
            (PL.SHT, "alm2map", "SHT.alm2map pol"),
            (PL.SHT, "map2alm", "SHT.map2alm pol"),
            (P, "alm2cl", "alm2cl"),
            (S, "coefficient_sets", "  spin coefficient sets"),
            (S, "coefficient_sets_adjoint", "  spin coefficient sets adjoint"),
            (C, "_alm2leg", "  alm2leg"),
            (C, "_leg2map", "  leg2map (ring step)"),
            (C, "_map2leg", "  map2leg (ring step)"),
            (C, "_leg2alm", "  leg2alm")]:
        wrap(owner, name, label)
    P.simulate_batch(mc.plan, idx, "cuda")
    laps.clear()
    counts.clear()
    P.simulate_batch(mc.plan, idx, "cuda")
    for label, v in laps.items():
        rows[f"batch stage: {label}"] = v
        print(f"  {label:40s} {v * 1e3:9.2f} ms ({counts[label]} calls)", flush=True)
    # the rate of whole runs at several batch sizes (stages unwrapped again)
    for owner, name, fn in originals:
        setattr(owner, name, fn)
    pool = cupy.get_default_memory_pool()
    for b in args.batches:
        # the pool's size after a batch from an empty pool: the batch's peak device memory
        pool.free_all_blocks()
        mc.run(b, progress=False, batch_size=b)
        sync()
        rows[f"pool bytes after a batch of {b}"] = pool.total_bytes()
        print(f"pool after one batch of {b}: {pool.total_bytes() / 2**30:.2f} GiB "
              f"({pool.total_bytes() / b / 2**30:.2f} a simulation; the plan's estimate "
              f"{mc.plan.bytes_per_simulation() / 2**30:.2f})", flush=True)
        t0 = time.perf_counter()
        mc.run(args.nsims, progress=False, batch_size=b)
        sync()
        dt = time.perf_counter() - t0
        rows[f"run {args.nsims} sims, batch {b}"] = dt
        print(f"run of {args.nsims} at batch {b}: {dt:.2f} s, {dt / args.nsims * 1e3:.1f} ms a "
              "simulation", flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "profile_pol_mc.json"), "w") as fh:
            json.dump({"machine": machine_info(), "nside": nside, "lmax": lmax, "batch": k,
                       "median_s": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
