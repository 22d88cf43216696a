"""Batches of the polarized Monte Carlo (nside 2048 / lmax 4096, beam, noise, apodized cut) run
one after the other on one stream, against two host threads each running its own batches on a
CuPy stream of its own, so that one batch's memory-bound steps (theta resampling, ring FFTs) may
overlap the other's compute-bound Legendre steps. Prints ms a simulation for each layout and
whether the spectra are the same bit for bit; writes OUT.json.

Run on the GPU machine:  python benchmarks/probes/mc_streams.py NSIMS OUT.json
"""
import json
import math
import sys
import threading
import time

import numpy as np

import cupy

from sphgpu.bench import machine_info
from sphgpu.data import planck2018_cl
from sphgpu.sims import MonteCarlo, latitude_cut_mask, simulate_batch

nsims, path = int(sys.argv[1]), sys.argv[2]
nside, lmax = 2048, 4096
arcmin = math.pi / 10800
mc = MonteCarlo(planck2018_cl(lmax, spectra=("TT", "EE", "BB", "TE")), nside, lmax, pol=True,
                fwhm=5 * arcmin, mask=latitude_cut_mask(nside, 20.0, apodization_deg=5.0),
                noise_sigma=10.0, seed=1, backend="cuda")
plan = mc.plan
sync = cupy.cuda.Device().synchronize
pool = cupy.get_default_memory_pool()


def serial(batch):
    out = {}
    for s in range(0, nsims, batch):
        part = list(range(s, min(s + batch, nsims)))
        for i, row in zip(part, simulate_batch(plan, part, "cuda")):
            out[i] = row
    return out


def threaded(batch, nthreads=2):
    out, errors = {}, []
    parts = [list(range(s, min(s + batch, nsims))) for s in range(0, nsims, batch)]

    def work(t):
        try:
            with cupy.cuda.Stream():
                for part in parts[t::nthreads]:
                    for i, row in zip(part, simulate_batch(plan, part, "cuda")):
                        out[i] = row
        except Exception as e:   # noqa: BLE001  reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise RuntimeError(errors)
    return out


simulate_batch(plan, list(range(8)), "cuda")       # compile, tune, plans
threaded(4) if nsims >= 8 else None                 # the second thread's FFT plans
sync()
rows = {}
reference = None
for name, fn in [("serial batch 8", lambda: serial(8)), ("2 streams, batch 4", lambda: threaded(4)),
                 ("2 streams, batch 8", lambda: threaded(8)), ("serial batch 8 again", lambda: serial(8)),
                 ("3 streams, batch 4", lambda: threaded(4, 3))]:
    sync()
    pool.free_all_blocks()
    t0 = time.perf_counter()
    try:
        out = fn()
    except Exception as e:      # noqa: BLE001  (out of memory: recorded)
        rows[name] = {"error": repr(e)[:300]}
        print(name, "failed", repr(e)[:300], flush=True)
        continue
    sync()
    dt = time.perf_counter() - t0
    spectra = np.stack([out[i] for i in range(nsims)])
    if reference is None:
        reference = spectra
    same = bool(np.array_equal(spectra, reference))
    rows[name] = {"ms_per_sim": dt / nsims * 1e3, "same_bits_as_serial": same,
                  "pool_bytes": int(pool.total_bytes())}
    print(f"{name}: {dt / nsims * 1e3:.2f} ms a simulation, same bits: {same}, "
          f"pool {pool.total_bytes() / 2**30:.1f} GiB", flush=True)
with open(path, "w") as f:
    json.dump({"machine": machine_info(), "nside": nside, "lmax": lmax, "nsims": nsims,
               "rows": rows}, f, indent=1)
