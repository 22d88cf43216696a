"""Roofline of the spin-0 transforms' stages on the GPU (issue 45): each stage's FP64 flops and
bytes (the work model of :mod:`sphgpu.bench.roofline`), its time, the rates achieved and how far
it is from the bound the device's measured ceilings set for that work.

Run on the GPU machine:  python benchmarks/sht_roofline.py --out $OUT [--nside 2048 4096]
                                                              [--maps 1 16]

In one process: the ceilings (an FP64 FMA loop in every thread of the device, a device copy),
then for each nside (lmax = mmax = 2 nside) and number of maps, on device arrays:
  - the stages of alm2map: ``alm2leg`` (on the Fejer rings where the plan resamples in theta,
    else on the grid's rings), ``resample`` (Fejer rings to the grid's rings), ``leg2map``
    (ring FFTs); and of map2alm (iter 0): ``map2leg``, ``resample_adjoint``, ``leg2alm``;
    each called alone through ``sphgpu.sht._cuda``'s private stage functions (the launches the
    public call makes for that stage; the stage's input made once beforehand), CUDA events,
    median of --repeat after a warm-up;
  - the public ``sphgpu.alm2map`` / ``sphgpu.map2alm`` (iter 0) of the same device arrays,
    timed the same way, and the stages' output against the public call's (``max_rel_diff``:
    the stages are the path the public call takes).
Writes DIR/sht_roofline.json (machine, ceilings, per row every stage's point: flops, bytes,
seconds, rates, fractions of the ceilings, bound, time over bound) and DIR/sht_roofline.png
(achieved FP64 rate against arithmetic intensity, under the two ceilings).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def cuda_timer(repeat):
    """``timed(fn)``: (median seconds, last result) of ``fn()`` by CUDA events, after one
    warm-up call."""
    import cupy

    def timed(fn):
        out = fn()
        times = []
        for _ in range(repeat):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record()
            out = fn()
            e1.record()
            e1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(e0, e1) / 1e3)
        return statistics.median(times), out
    return timed


def bench(nside, k, ceilings, timed, log, xp=None):
    """One row: the stages of alm2map and map2alm (iter 0) of ``k`` maps at ``nside``, timed
    by ``timed`` (:func:`cuda_timer`), on arrays of ``xp`` (default CuPy; NumPy under the
    simulator)."""
    import sphgpu
    from sphgpu import AlmLayout, RingGeometry
    from sphgpu._device import to_host
    from sphgpu.bench import roofline as R
    from sphgpu.sht import _cuda as S

    if xp is None:
        import cupy as xp
    lmax = 2 * nside
    g = RingGeometry.healpix(nside)
    layout = AlmLayout(lmax)
    rng = np.random.default_rng(nside + k)
    alm = rng.standard_normal((k, layout.size)) + 1j * rng.standard_normal((k, layout.size))
    alm[:, :lmax + 1] = alm[:, :lmax + 1].real
    alm = xp.asarray(alm)
    pl = S.plan(g, lmax, lmax)
    rs = S._resampler(pl)
    leg_plan = pl if rs is None else rs.plan
    first = np.asarray(to_host(leg_plan.first))
    legendre = R.legendre(lmax, lmax, leg_plan.nrings, leg_plan.npairs, k, first)
    rings = R.ring_fft(g.nphi, lmax, k)
    stages = {}

    def stage(name, fn, work):
        s, out = timed(fn)
        stages[name] = R.point(work, s, ceilings)
        return out

    legf = stage("alm2leg", lambda: S._alm2leg(alm, leg_plan, xp), legendre)
    if rs is not None:
        resampling = R.resample(rs.rp.n, rs.rp.N, pl.nrings, lmax, rs.rp.width, k)
        leg = stage("resample", lambda: S._resample(legf, rs, xp), resampling)
    else:
        leg = legf
    maps = stage("leg2map", lambda: S._leg2map(leg, pl, xp), rings)
    leg2 = stage("map2leg", lambda: S._map2leg(maps, pl, xp), rings)
    if rs is not None:
        leg2 = stage("resample_adjoint", lambda: S._resample_adjoint(leg2, rs, xp),
                     resampling)
    alm2 = stage("leg2alm", lambda: S._leg2alm(leg2, leg_plan, xp), legendre)
    del legf, leg, leg2

    one = alm if k > 1 else alm[0]
    pub_syn, pmaps = timed(lambda: sphgpu.alm2map(one, nside, lmax, pol=False, backend="cuda"))
    pub_ana, palm = timed(lambda: sphgpu.map2alm(pmaps, lmax, iter=0, pol=False,
                                                 backend="cuda"))

    def diff(a, b):
        a, b = np.asarray(to_host(a)).reshape(-1), np.asarray(to_host(b)).reshape(-1)
        return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))

    row = {"nside": nside, "lmax": lmax, "maps": k, "resampled": rs is not None,
           "stages": stages,
           "stages_alm2map_s": sum(stages[n]["seconds"] for n in ("alm2leg", "resample",
                                                                  "leg2map") if n in stages),
           "stages_map2alm_s": sum(stages[n]["seconds"] for n in ("map2leg", "resample_adjoint",
                                                                  "leg2alm") if n in stages),
           "public_alm2map_s": pub_syn, "public_map2alm_s": pub_ana,
           "max_rel_diff_maps": diff(maps, pmaps), "max_rel_diff_alm": diff(alm2, palm)}
    log(f"nside {nside}, {k} map(s){', resampled' if rs is not None else ''}: public alm2map "
        f"{pub_syn * 1e3 / k:.2f} ms a map (stages {row['stages_alm2map_s'] * 1e3 / k:.2f}), "
        f"map2alm {pub_ana * 1e3 / k:.2f} (stages {row['stages_map2alm_s'] * 1e3 / k:.2f}); "
        f"stages vs public: {row['max_rel_diff_maps']:.1e}, {row['max_rel_diff_alm']:.1e}")
    for name, p in stages.items():
        log(f"  {name:17s} {p['seconds'] * 1e3:8.2f} ms  {p['flops_per_s'] / 1e12:6.2f} TFLOP/s "
            f"({p['flops_fraction']:.0%})  {p['bytes_per_s'] / 1e12:5.2f} TB/s "
            f"({p['bytes_fraction']:.0%})  {p['time_over_bound']:5.2f}x its {p['limit']} bound")
    return row


def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = data["ceilings"]
    peak, bw = c["flops_per_s"], c["bytes_per_s"]
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    xs = np.logspace(-2, 3, 200)
    ax.plot(xs, np.minimum(peak, bw * xs) / 1e12, "k-", lw=1.2,
            label=f"ceilings: {peak / 1e12:.1f} TFLOP/s, {bw / 1e12:.2f} TB/s")
    markers = dict(zip(sorted({(r["nside"], r["maps"]) for r in data["rows"]}), "osD^v<>p"))
    colors = {}
    for r in data["rows"]:
        for name, p in r["stages"].items():
            new = name not in colors
            col = colors.setdefault(name, f"C{len(colors)}")
            ax.plot(p["intensity"], p["flops_per_s"] / 1e12, markers[(r["nside"], r["maps"])],
                    color=col, ms=6, label=name if new else None)
    for (nside, k), mk in markers.items():
        ax.plot([], [], mk, color="gray", label=f"nside {nside}, {k} map(s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FP64 flops a byte, modelled)")
    ax.set_ylabel("achieved TFLOP/s (FP64)")
    ax.set_title(f"Transform stages on the roofline, {data['machine'].get('gpu')}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, nargs="+", default=[2048, 4096])
    p.add_argument("--maps", type=int, nargs="+", default=[1, 16])
    p.add_argument("--max-batch-nside", type=int, default=2048,
                   help="largest nside timed with more than one map")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), args.replot.replace(".json", ".png"))
        return 0
    from sphgpu.bench import machine_info
    from sphgpu.bench.roofline import measure_ceilings

    def log(msg):
        print(msg, flush=True)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "sht_roofline.json")
    data = {"benchmark": "sht_roofline", "machine": machine_info(), "repeat": args.repeat,
            "rows": []}
    log(json.dumps(data["machine"]))
    ceilings, how = measure_ceilings()
    data["ceilings"] = how
    log(f"ceilings: FP64 {how['flops_per_s'] / 1e12:.2f} TFLOP/s, copy "
        f"{how['bytes_per_s'] / 1e12:.2f} TB/s")
    for nside in args.nside:
        for k in args.maps:
            if k > 1 and nside > args.max_batch_nside:
                continue
            data["rows"].append(bench(nside, k, ceilings, cuda_timer(args.repeat), log))
            data["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
            with open(path, "w") as f:
                json.dump(data, f, indent=1)
    plot(data, path.replace(".json", ".png"))
    log(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
