"""Where the time of one Monte Carlo batch goes on the GPU (the steps of
``sphgpu.sims.pipeline.simulate_batch``, synchronised between them; private stages).

Run on the GPU machine:  python benchmarks/probes/profile_sims.py [--nside 2048] [--batch 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 5])
    args = p.parse_args()
    import cupy

    import sphgpu
    from sphgpu.data import planck2018_cl
    from sphgpu.sims import MonteCarlo, latitude_cut_mask
    from sphgpu.sims import pipeline as P
    from sphgpu.sims.random import Stream

    nside, lmax = args.nside, 2 * args.nside
    mc = MonteCarlo(planck2018_cl(lmax, spectra=("TT",))[0], nside, lmax, fwhm_arcmin=5.0,
                    mask=latitude_cut_mask(nside, 20.0, apodization_deg=5.0),
                    noise_sigma=10.0, backend="cuda")
    plan = mc.plan
    sync = cupy.cuda.Device().synchronize
    print("batch size from free memory:", mc._auto_batch("cuda"), flush=True)
    for k in args.batch:
        idx = list(range(k))
        P.simulate_batch(plan, idx, "cuda")            # warm
        sync()
        t0 = time.perf_counter()
        P.simulate_batch(plan, idx, "cuda")
        sync()
        whole = time.perf_counter() - t0
        d = P._device_arrays(plan, "device")
        xp = d["xp"]
        nalm = sphgpu.AlmLayout(lmax).size
        laps = {}

        def lap(name, t=[time.perf_counter()]):
            sync()
            now = time.perf_counter()
            laps[name] = laps.get(name, 0.0) + now - t[0]
            t[0] = now

        lap("start")
        rngs = [Stream(plan.seed, i, device=True) for i in idx]
        alm = xp.empty((k, 1, nalm), dtype=np.complex128)
        for q, rng in enumerate(rngs):
            alm[q] = P._draw_alm(rng, d["factors"]["signal"], xp, 1, nalm)
        lap("draw a_lm")
        maps = sphgpu.alm2map(alm.reshape(k, nalm), nside, lmax, pol=False, backend="cuda")
        lap("alm2map")
        for q, rng in enumerate(rngs):
            maps[q] += d["sigma"] * rng.standard_normal(maps.shape[1:])
        lap("noise")
        maps *= d["mask"]
        lap("mask")
        a = sphgpu.map2alm(maps, lmax, lmax, 0, pol=False, backend="cuda")
        lap("map2alm")
        cl = sphgpu.alm2cl(a.reshape(k, 1, nalm))
        lap("alm2cl")
        print(f"batch {k}: whole {whole * 1e3:.1f} ms ({whole / k * 1e3:.1f} ms a simulation); "
              + ", ".join(f"{n} {v * 1e3:.1f} ms" for n, v in laps.items() if n != "start"),
              flush=True)


if __name__ == "__main__":
    main()
