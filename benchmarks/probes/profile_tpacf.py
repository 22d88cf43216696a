"""Where the time of a whole pair count from NumPy arrays goes (DR on the survey footprint).

Run on the GPU machine:  python benchmarks/probes/profile_tpacf.py [--out DIR]
Prints the backend's own step times (prepare, plan, upload, kernel, download: the device is
synchronised between them), the whole call's median, and a cProfile of one whole call (host
functions by cumulative time; CUDA synchronisation shows as time in the call that waits).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats

import numpy as np

from sphgpu.bench import machine_info, time_call


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out")
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args()
    from numba import cuda

    from sphgpu.tpacf import AngularBins, Catalog, _cuda, pair_counts
    from tpacf import SIZES, workload

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    ra, dec, rra, rdec = workload("survey", *SIZES["full"])

    def call():
        return pair_counts(ra, dec, rra, rdec, bins=bins, backend="cuda")

    call()
    whole = time_call(call, repeat=args.repeat, warmup=1, sync=cuda.synchronize)
    steps = {}
    for _ in range(3):
        prof = {}
        _cuda.count_pairs(Catalog(ra, dec, copy=False), Catalog(rra, rdec, copy=False), bins,
                          profile=prof)
        for k, v in prof.items():
            steps.setdefault(k, []).append(v)
    steps = {k: float(np.median(v)) for k, v in steps.items()}
    pr = cProfile.Profile()
    pr.enable()
    call()
    cuda.synchronize()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45)
    print(f"DR 84k x 900k from NumPy, whole call: median {whole.median * 1e3:.2f} ms")
    print("steps (ms):", {k: round(v * 1e3, 2) if isinstance(v, float) else v
                          for k, v in steps.items()})
    print(s.getvalue())
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "profile_tpacf.json"), "w") as fh:
            json.dump({"machine": machine_info(), "whole_call_s": whole.as_dict(),
                       "steps_s": steps, "cprofile": s.getvalue()}, fh, indent=1)


if __name__ == "__main__":
    main()
