"""Where the CUDA SHT's ring step spends its time: every launch of the private ring steps
(_leg2map, _map2leg) timed with CUDA events and summed by pass (fold, FFTs, chirp product,
unchirp ...), in ms a map, every launch kept in order in the JSON; for one map and for a batch,
device-resident. (cuFFT calls made through plans of their own, the in-place real FFTs of ring
blocks, are in the whole step's time but in no pass.)

Run on the GPU machine:  python benchmarks/probes/profile_ring.py OUT.json [--nside 2048] [--maps 1 16]
"""

from __future__ import annotations

import argparse
import collections
import json


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--maps", type=int, nargs="+", default=[1, 16])
    args = p.parse_args()
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info, time_call
    from sphgpu.sht import _cuda

    nside, lmax = args.nside, 2 * args.nside
    g = sphgpu.RingGeometry.healpix(nside)
    pl = _cuda.plan(g, lmax, lmax)
    sync = cupy.cuda.Device().synchronize
    log = []

    def timed(name, f):
        def call(*a, **kw):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record()
            r = f(*a, **kw)
            e.record()
            log.append((name(a) if callable(name) else name, s, e))
            return r
        return call

    go = _cuda._go
    fft = cupy.fft
    originals = {k: getattr(fft, k) for k in ("fft", "ifft", "rfft", "irfft")}
    convolve = _cuda._convolve

    def instrument(on):
        if on:
            _cuda._go = timed(lambda a: a[0].py_func.__name__.replace("_kernel", ""), go)
            for k, f in originals.items():
                setattr(fft, k, timed(k, f))
            _cuda._convolve = timed("convolve", convolve)
        else:
            _cuda._go = go
            for k, f in originals.items():
                setattr(fft, k, f)
            _cuda._convolve = convolve

    rng = cupy.random.default_rng(0)
    out = {"machine": machine_info(), "nside": nside, "lmax": lmax,
           "classes": [dict(M=c["M"], rows=c["nr"], chirped=c["chirped"]) for c in pl.classes],
           "runs": []}
    for k in args.maps:
        shape = (k, pl.nrings, pl.mmax + 1)
        leg = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        maps = rng.standard_normal((k, pl.npix))
        for step, run in (("leg2map", lambda: _cuda._leg2map(leg, pl, cupy)),
                          ("map2leg", lambda: _cuda._map2leg(maps, pl, cupy))):
            run()
            whole = time_call(run, repeat=3, sync=sync).median
            instrument(True)
            try:
                log.clear()
                run()
                sync()
            finally:
                instrument(False)
            by_pass = collections.defaultdict(float)
            seq = []
            for name, s, e in log:
                ms = cupy.cuda.get_elapsed_time(s, e)
                seq.append((name, ms))
                if name != "convolve":
                    by_pass[name] += ms / k
            # the chirp product is what a convolution takes beyond its two FFTs
            conv = sum(ms for n, ms in seq if n == "convolve")
            ffts = sum(ms for n, ms in seq if n in ("fft", "ifft"))
            by_pass["chirp product"] = (conv - ffts) / k
            row = dict(step=step, maps=k, whole_ms_per_map=whole / k * 1e3,
                       passes_ms_per_map=dict(by_pass), launches=seq)
            out["runs"].append(row)
            print(f"{step} k={k}: whole {row['whole_ms_per_map']:.3f} ms a map; "
                  + ", ".join(f"{n} {v:.3f}" for n, v in sorted(by_pass.items(),
                                                                 key=lambda x: -x[1])),
                  flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
