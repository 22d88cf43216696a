"""Maps per Legendre launch: per-map time of the CUDA Legendre steps for a batch of maps at
nside 2048 / lmax 4096 as the number of maps sharing one recurrence (one launch) varies
(private stages, device-resident, synchronised; launch shapes from the autotuner).

Run on the GPU machine:  python benchmarks/probes/profile_batch.py [--per 2 3 4] [--maps 16]
"""

from __future__ import annotations

import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per", type=int, nargs="+", default=[2, 3, 4])
    p.add_argument("--maps", type=int, default=16)
    p.add_argument("--nside", type=int, default=2048)
    args = p.parse_args()
    import cupy

    import sphgpu
    from sphgpu.bench import time_call
    from sphgpu.sht import _cuda
    from sphgpu.sht import _cuda_kernels as K

    nside, lmax = args.nside, 2 * args.nside
    g = sphgpu.RingGeometry.healpix(nside)
    pl = _cuda.plan(g, lmax, lmax)
    layout = sphgpu.AlmLayout(lmax)
    rng = np.random.default_rng(0)
    alm = cupy.asarray(rng.standard_normal((args.maps, layout.size))
                       + 1j * rng.standard_normal((args.maps, layout.size)))
    sync = cupy.cuda.Device().synchronize
    leg = _cuda._alm2leg(alm, pl, cupy)
    for per in args.per:
        _cuda.MAPS_PER_LAUNCH = per
        K.LEG2ALM_MAX_MAPS = per
        n = args.maps - args.maps % per          # whole launches only
        a = alm[:n]
        t1 = time_call(lambda: _cuda._alm2leg(a, pl, cupy), repeat=3, sync=sync).median
        lg = cupy.ascontiguousarray(leg[:n])
        t2 = time_call(lambda: _cuda._leg2alm(lg, pl, cupy), repeat=3, sync=sync).median
        print(f"{per} maps a launch ({n} maps): alm2leg {t1 / n * 1e3:.2f} ms a map, "
              f"leg2alm {t2 / n * 1e3:.2f} ms a map", flush=True)


if __name__ == "__main__":
    main()
