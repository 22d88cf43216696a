"""Time each step of the CUDA SHT separately (Legendre step, ring step, both directions).

Run on the GPU machine: python benchmarks/probes/profile_sht.py --nside 1024 2048

``--resources`` prints the registers, local and shared memory of the compiled Legendre kernels,
``--sweep`` times both kernels at a grid of (threads, pairs) launch shapes, and ``--launch``
fixes the shapes instead of the autotuner's pick.
"""

import argparse

import cupy
import numpy as np

from sphgpu import AlmLayout, RingGeometry
from sphgpu.bench import time_call
from sphgpu.sht import _cuda


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nside", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--nmaps", type=int, default=1)
    p.add_argument("--sweep", action="store_true", help="try launch parameters of both kernels")
    p.add_argument("--resources", action="store_true",
                   help="registers, local memory and local loads/stores of the compiled kernels")
    p.add_argument("--launch", type=int, nargs=4, metavar=("A_THREADS", "A_PAIRS", "L_THREADS",
                                                            "L_PAIRS"),
                   help="launch parameters of alm2leg and leg2alm (default: the autotuner's)")
    args = p.parse_args()
    sync = cupy.cuda.Device().synchronize
    for nside in args.nside:
        lmax = 2 * nside
        layout = AlmLayout(lmax)
        g = RingGeometry.healpix(nside)
        rng = np.random.default_rng(0)
        alm = cupy.asarray(rng.standard_normal((args.nmaps, layout.size)) + 0j)
        maps = cupy.asarray(rng.standard_normal((args.nmaps, g.npix)))
        pl = _cuda.plan(g, lmax, lmax)
        if args.launch:
            pl.launch = {"alm2leg": tuple(args.launch[:2]), "leg2alm": tuple(args.launch[2:])}
        leg = _cuda._alm2leg(alm, pl, cupy)
        steps = {
            "alm2leg": lambda: _cuda._alm2leg(alm, pl, cupy),
            "leg2map": lambda: _cuda._leg2map(leg, pl, cupy),
            "map2leg": lambda: _cuda._map2leg(maps, pl, cupy),
            "leg2alm": lambda: _cuda._leg2alm(leg, pl, cupy),
        }
        if args.resources:
            from sphgpu.sht import _cuda_kernels as K
            launch = _cuda._launch(pl)
            for name, kern in (("alm2leg", K.alm2leg_kernel(min(args.nmaps, 2),
                                                            *launch["alm2leg"])),
                               ("leg2alm", K.leg2alm_kernel(min(args.nmaps, 2),
                                                            *launch["leg2alm"]))):
                regs, local = kern.get_regs_per_thread(), kern.get_local_mem_per_thread()
                shared = kern.get_shared_mem_per_block()
                for sig, ptx in kern.inspect_asm().items():
                    print(f"{name}: registers {regs[sig]}, local bytes {local[sig]}, "
                          f"shared bytes {shared[sig]}, "
                          f"ld.local {ptx.count('ld.local')}, st.local {ptx.count('st.local')}",
                          flush=True)
        line = [f"nside {nside} nmaps {args.nmaps} classes {len(pl.classes)} "
                f"launch {_cuda._launch(pl)}:"]
        for name, fn in steps.items():
            t = time_call(fn, repeat=5, sync=sync)
            line.append(f"{name} {t.median * 1e3:.2f} ms")
        print("  ".join(line), flush=True)
        if args.sweep:
            default = dict(_cuda._launch(pl))
            for kern, fn in (("alm2leg", steps["alm2leg"]), ("leg2alm", steps["leg2alm"])):
                for tpb in (64, 128):
                    for rp in (1, 2, 4, 8):
                        pl.launch[kern] = (tpb, rp)
                        try:
                            t = time_call(fn, repeat=3, sync=sync)
                        except Exception as exc:   # e.g. too much shared memory
                            print(f"  {kern} threads {tpb} pairs {rp}: {type(exc).__name__}")
                            continue
                        print(f"  {kern} threads {tpb} pairs {rp}: {t.median * 1e3:.2f} ms",
                              flush=True)
                pl.launch.update(default)


if __name__ == "__main__":
    main()
