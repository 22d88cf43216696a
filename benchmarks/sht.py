"""GPU SHT benchmark: sphgpu's CUDA backend against ducc0 (all threads, 1 thread) and healpy.

Run on the GPU machine:  python benchmarks/sht.py --out benchmarks/results
For each HEALPix nside (lmax = 2*nside, mmax = lmax) it checks the CUDA result against ducc0
(relative L2 error of alm2map and of map2alm with iter=0), then times, in the same process:
  - sphgpu cuda, device-resident (CuPy arrays in and out),
  - sphgpu cuda, host to host (NumPy in and out, copies included),
  - ducc0 with every host thread and with one thread,
  - healpy alm2map and map2alm(iter=0).
Writes sht.json (machine info, every timing, errors) and sht_speedup.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.bench import machine_info, run_sizes, time_call


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


def ducc0_pair(nside, layout, nthreads):
    import ducc0

    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    w = 4 * np.pi / (12 * nside * nside)

    def synth(alm):
        return ducc0.sht.synthesis(alm=alm[None], lmax=layout.lmax, mmax=layout.mmax, spin=0,
                                   nthreads=nthreads, **info)[0]

    def adjoint(m):
        return ducc0.sht.adjoint_synthesis(map=(m * w)[None], lmax=layout.lmax,
                                           mmax=layout.mmax, spin=0, nthreads=nthreads, **info)[0]
    return synth, adjoint


def bench_size(nside, args, log):
    import cupy

    lmax = 2 * nside
    layout = AlmLayout(lmax)
    g = RingGeometry.healpix(nside)
    rng = np.random.default_rng(nside)
    alm = rng.standard_normal(layout.size) + 1j * rng.standard_normal(layout.size)
    alm[layout.lm()[1] == 0] = alm[layout.lm()[1] == 0].real
    sync = cupy.cuda.Device().synchronize
    row = {"nside": nside, "lmax": lmax, "npix": g.npix}

    t0 = time.perf_counter()
    m_gpu = sphgpu.alm2map(alm, nside, lmax, backend="cuda")
    sync()
    row["cuda_first_call_s"] = time.perf_counter() - t0        # JIT + plan + transform

    synth16, adj16 = ducc0_pair(nside, layout, os.cpu_count())
    m_ref = synth16(alm)
    row["err_alm2map_vs_ducc0"] = rel(m_gpu, m_ref)
    a_gpu = sphgpu.map2alm(m_ref, lmax, iter=0, backend="cuda")
    a_ref = adj16(m_ref)
    row["err_map2alm_vs_ducc0"] = rel(a_gpu, a_ref)
    log(f"nside {nside}: errors alm2map {row['err_alm2map_vs_ducc0']:.2e}, "
        f"map2alm {row['err_map2alm_vs_ducc0']:.2e}")

    d_alm = cupy.asarray(alm)
    d_map = cupy.asarray(m_ref)
    t = {}
    t["cuda_device_alm2map"] = time_call(lambda: sphgpu.alm2map(d_alm, nside, lmax, backend="cuda"),
                                         repeat=args.repeat, sync=sync)
    t["cuda_device_map2alm"] = time_call(
        lambda: sphgpu.map2alm(d_map, lmax, iter=0, backend="cuda"), repeat=args.repeat, sync=sync)
    t["cuda_host_alm2map"] = time_call(lambda: sphgpu.alm2map(alm, nside, lmax, backend="cuda"),
                                       repeat=args.repeat, sync=sync)
    t["cuda_host_map2alm"] = time_call(lambda: sphgpu.map2alm(m_ref, lmax, iter=0, backend="cuda"),
                                       repeat=args.repeat, sync=sync)
    t["ducc0_all_alm2map"] = time_call(lambda: synth16(alm), repeat=args.repeat)
    t["ducc0_all_map2alm"] = time_call(lambda: adj16(m_ref), repeat=args.repeat)
    if nside <= args.max_nside_1thread:
        s1, a1 = ducc0_pair(nside, layout, 1)
        t["ducc0_1_alm2map"] = time_call(lambda: s1(alm), repeat=2, warmup=0, max_seconds=5)
        t["ducc0_1_map2alm"] = time_call(lambda: a1(m_ref), repeat=2, warmup=0, max_seconds=5)
    try:
        import healpy as hp

        t["healpy_alm2map"] = time_call(lambda: hp.alm2map(alm, nside, lmax=lmax),
                                        repeat=args.repeat, max_seconds=10)
        t["healpy_map2alm"] = time_call(lambda: hp.map2alm(m_ref, lmax=lmax, iter=0),
                                        repeat=args.repeat, max_seconds=10)
    except ImportError:
        log("healpy not installed: skipped")
    row["timings"] = {k: v.as_dict() for k, v in t.items()}
    for op in ("alm2map", "map2alm"):
        dev = t[f"cuda_device_{op}"].median
        row[f"speedup_{op}_vs_ducc0_all"] = t[f"ducc0_all_{op}"].median / dev
        if f"ducc0_1_{op}" in t:
            row[f"speedup_{op}_vs_ducc0_1"] = t[f"ducc0_1_{op}"].median / dev
        log(f"  {op}: cuda device {dev * 1e3:8.2f} ms, host {t[f'cuda_host_{op}'].median * 1e3:8.2f} ms"
            f" | ducc0 all {t[f'ducc0_all_{op}'].median * 1e3:8.2f} ms"
            + (f" | ducc0 1 thr {t[f'ducc0_1_{op}'].median * 1e3:9.1f} ms" if f"ducc0_1_{op}" in t else "")
            + (f" | healpy {t[f'healpy_{op}'].median * 1e3:8.2f} ms" if f"healpy_{op}" in t else ""))
    return row


def odd_sizes(log):
    """CUDA against ducc0 at odd nside and mmax < lmax (small, quick)."""
    out = []
    for nside in (3, 5, 33):
        for lmax in (nside, 2 * nside, 3 * nside - 1):
            for mmax in sorted({lmax, lmax // 2}):
                layout = AlmLayout(lmax, mmax)
                rng = np.random.default_rng(lmax)
                alm = rng.standard_normal(layout.size) + 1j * rng.standard_normal(layout.size)
                alm[layout.lm()[1] == 0] = alm[layout.lm()[1] == 0].real
                synth, adj = ducc0_pair(nside, layout, 1)
                m = synth(alm)
                e1 = rel(sphgpu.alm2map(alm, nside, lmax, mmax, backend="cuda"), m)
                e2 = rel(sphgpu.map2alm(m, lmax, mmax, iter=0, backend="cuda"), adj(m))
                out.append({"nside": nside, "lmax": lmax, "mmax": mmax,
                            "err_alm2map_vs_ducc0": e1, "err_map2alm_vs_ducc0": e2})
    log(f"odd sizes: {len(out)} cases, max error alm2map "
        f"{max(r['err_alm2map_vs_ducc0'] for r in out):.1e}, map2alm "
        f"{max(r['err_map2alm_vs_ducc0'] for r in out):.1e}")
    return out


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["nside"] for r in results]
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    styles = [("cuda_device", "o-", "sphgpu cuda (device arrays)"),
              ("cuda_host", "o--", "sphgpu cuda (NumPy in and out)"),
              ("ducc0_all", "s-", f"ducc0, {results[0]['cpu_count']} threads"),
              ("ducc0_1", "s:", "ducc0, 1 thread"),
              ("healpy", "^-", "healpy")]
    for op, a in zip(("alm2map", "map2alm"), ax[:2]):
        for key, style, label in styles:
            pts = [(r["nside"], r["timings"][f"{key}_{op}"]["median_s"]) for r in results
                   if f"{key}_{op}" in r["timings"]]
            if pts:
                a.loglog(*zip(*pts), style, label=label)
        a.set_title(op + (" (iter=0)" if op == "map2alm" else ""))
        a.set_ylabel("seconds (median)")
    for op, style in (("alm2map", "o-"), ("map2alm", "s-")):
        ax[2].semilogx(ns, [r[f"speedup_{op}_vs_ducc0_all"] for r in results], style, label=op)
    ax[2].axhline(1, color="k", lw=0.8)
    ax[2].set_title("speedup over ducc0 (all threads)")
    for a in ax:
        a.set_xscale("log", base=2)
        a.set_xticks(ns, [str(n) for n in ns])
        a.set_xlabel("nside (lmax = 2 nside)")
        a.grid(True, which="major", alpha=0.3)
    ax[0].legend(fontsize=8)
    ax[2].legend(fontsize=8)
    fig.suptitle(f"HEALPix spherical harmonic transforms on {results[0]['gpu']} "
                 f"(host: {results[0]['cpu_count']} cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _t(seconds):
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def table(results):
    """The README's performance table (Markdown) from a results list."""
    lines = ["| nside | sphgpu alm2map device / host | ducc0 16 thr | ducc0 1 thr | healpy | "
             "speedup vs ducc0 16 thr | sphgpu map2alm device / host | ducc0 16 thr | speedup | "
             "error alm2map / map2alm |", "|---|" + "---|" * 9]
    for r in results:
        t = {k: v["median_s"] for k, v in r["timings"].items()}
        one = _t(t["ducc0_1_alm2map"]) if "ducc0_1_alm2map" in t else "–"
        hp = _t(t["healpy_alm2map"]) if "healpy_alm2map" in t else "–"    # not installed
        lines.append(
            f"| {r['nside']} | {_t(t['cuda_device_alm2map'])} / {_t(t['cuda_host_alm2map'])} | "
            f"{_t(t['ducc0_all_alm2map'])} | {one} | {hp} | "
            f"{r['speedup_alm2map_vs_ducc0_all']:.1f}x | "
            f"{_t(t['cuda_device_map2alm'])} / {_t(t['cuda_host_map2alm'])} | "
            f"{_t(t['ducc0_all_map2alm'])} | {r['speedup_map2alm_vs_ducc0_all']:.1f}x | "
            f"{r['err_alm2map_vs_ducc0']:.1e} / {r['err_map2alm_vs_ducc0']:.1e} |")
    return "\n".join(lines)


def bus_speed(log, nbytes=402_653_184):
    """GB/s of the copies a host-to-host transform makes, for an nside 2048 map (402 MB):
    NumPy to device (pageable memory, as sphgpu.alm2map's input) and device to NumPy (through
    the pinned pool, as its output)."""
    import cupy

    from sphgpu._device import to_host

    host = np.random.default_rng(0).standard_normal(nbytes // 8)
    dev = cupy.asarray(host)
    sync = cupy.cuda.Device().synchronize
    h2d = time_call(lambda: cupy.asarray(host), repeat=5, sync=sync).median
    d2h = time_call(lambda: to_host(dev), repeat=5, sync=sync).median
    out = {"bytes": nbytes, "h2d_pageable_GBps": nbytes / h2d / 1e9,
           "d2h_pinned_GBps": nbytes / d2h / 1e9}
    log(f"bus: host to device (pageable) {out['h2d_pageable_GBps']:.1f} GB/s, device to host "
        f"(pinned pool) {out['d2h_pinned_GBps']:.1f} GB/s")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--max-nside-1thread", type=int, default=2048)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    p.add_argument("--table", metavar="JSON", help="only print the README table of a run")
    args = p.parse_args()
    if args.table:
        with open(args.table) as f:
            print(table(json.load(f)["results"]))
        return 0
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f)["results"], os.path.join(os.path.dirname(args.replot),
                                                       "sht_speedup.png"))
        return 0
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    info = machine_info()
    log(json.dumps(info))
    bus = bus_speed(log)
    odd = odd_sizes(log)
    results = run_sizes(args.nside, lambda nside: bench_size(nside, args, log), info,
                        os.path.join(args.out, "sht.json"), bus=bus, odd_sizes=odd)
    plot(results, os.path.join(args.out, "sht_speedup.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
