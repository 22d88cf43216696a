"""Polarized and spin-2 SHT benchmark: sphgpu's CUDA backend against ducc0 and healpy.

Run on the GPU machine:  python benchmarks/sht_pol.py --out benchmarks/results
For each HEALPix nside (lmax = 2*nside, mmax = lmax), in one process:
  - checks the CUDA results against ducc0 (relative L2 error): polarized alm2map (T, E, B ->
    I, Q, U), map2alm (iter=0), alm2map_spin / map2alm_spin (spin 2);
  - times the public functions, device-resident (CuPy in and out) and host to host (NumPy in
    and out, copies included): temperature only (the baseline of the ratios), polarized, and
    spin 2 alone;
  - times ducc0 on every host thread (spin 0, spin 2 and their sum for T, E, B) and healpy's
    polarized alm2map / map2alm(iter=0).
The first call of each size (compilation, plan, autotuning) is reported apart. Writes
sht_pol.json (machine info, every timing and error) and sht_pol.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import sphgpu
from sphgpu import AlmLayout
from sphgpu.bench import machine_info, run_sizes, time_call


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def rel_max(a, b):
    """The largest difference over the largest reference value (issue 45's max norm)."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / np.abs(b).max())



def ducc0_ops(nside, layout, nthreads):
    """ducc0 synthesis / adjoint for spin 0 and spin 2 on a HEALPix grid (healpy's weights)."""
    import ducc0

    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    w = 4 * np.pi / (12 * nside * nside)
    kw = dict(lmax=layout.lmax, mmax=layout.mmax, nthreads=nthreads, **info)

    def syn(alm, spin):
        return ducc0.sht.synthesis(alm=alm, spin=spin, **kw)

    def adj(maps, spin):
        return ducc0.sht.adjoint_synthesis(map=maps * w, spin=spin, **kw)
    return syn, adj


def pol_alm(rng, layout):
    a = rng.standard_normal((3, layout.size)) + 1j * rng.standard_normal((3, layout.size))
    l, m = layout.lm()
    a[:, m == 0] = a[:, m == 0].real
    a[1:, l < 2] = 0
    return a


def bench_size(nside, args, log):
    import cupy

    lmax = 2 * nside
    layout = AlmLayout(lmax)
    rng = np.random.default_rng(nside)
    alm = pol_alm(rng, layout)
    sync = cupy.cuda.Device().synchronize
    row = {"nside": nside, "lmax": lmax, "npix": 12 * nside * nside}

    t0 = time.perf_counter()
    iqu = sphgpu.alm2map(alm, nside, lmax, backend="cuda")
    sync()
    row["cuda_first_pol_alm2map_s"] = time.perf_counter() - t0

    syn, adj = ducc0_ops(nside, layout, os.cpu_count())
    ref = np.concatenate([syn(alm[:1], 0), syn(alm[1:], 2)])
    ref_a = np.concatenate([adj(ref[:1], 0), adj(ref[1:], 2)])
    # relative L2 (err_) and max norm (maxerr_) of each against ducc0
    for name, got, want in (
            ("pol_alm2map", iqu, ref),
            ("pol_map2alm", sphgpu.map2alm(ref, lmax, iter=0, backend="cuda"), ref_a),
            ("spin2_alm2map", sphgpu.alm2map_spin(alm[1:], nside, 2, lmax, backend="cuda"),
             ref[1:]),
            ("spin2_map2alm", sphgpu.map2alm_spin(ref[1:], 2, lmax, backend="cuda"),
             ref_a[1:])):
        row[f"err_{name}_vs_ducc0"] = rel(got, want)
        row[f"maxerr_{name}_vs_ducc0"] = rel_max(got, want)
    log(f"nside {nside}: errors pol alm2map {row['err_pol_alm2map_vs_ducc0']:.2e}, map2alm "
        f"{row['err_pol_map2alm_vs_ducc0']:.2e}; spin 2 {row['err_spin2_alm2map_vs_ducc0']:.2e}"
        f" / {row['err_spin2_map2alm_vs_ducc0']:.2e}; max norm pol "
        f"{row['maxerr_pol_alm2map_vs_ducc0']:.2e} / {row['maxerr_pol_map2alm_vs_ducc0']:.2e}")

    d_alm, d_map = cupy.asarray(alm), cupy.asarray(ref)
    rp = dict(repeat=args.repeat, sync=sync)
    t = {}
    calls = {
        "t_alm2map": (lambda a: sphgpu.alm2map(a[0], nside, lmax, backend="cuda"), "alm"),
        "t_map2alm": (lambda m: sphgpu.map2alm(m[0], lmax, iter=0, backend="cuda"), "map"),
        "pol_alm2map": (lambda a: sphgpu.alm2map(a, nside, lmax, backend="cuda"), "alm"),
        "pol_map2alm": (lambda m: sphgpu.map2alm(m, lmax, iter=0, backend="cuda"), "map"),
        "spin2_alm2map": (lambda a: sphgpu.alm2map_spin(a[1:], nside, 2, lmax, backend="cuda"),
                          "alm"),
        "spin2_map2alm": (lambda m: sphgpu.map2alm_spin(m[1:], 2, lmax, backend="cuda"), "map"),
    }
    for name, (fn, kind) in calls.items():
        dev, host = (d_alm, alm) if kind == "alm" else (d_map, ref)
        t[f"cuda_device_{name}"] = time_call(lambda: fn(dev), **rp)
        t[f"cuda_host_{name}"] = time_call(lambda: fn(host), **rp)
    t["ducc0_all_t_alm2map"] = time_call(lambda: syn(alm[:1], 0), repeat=args.repeat)
    t["ducc0_all_spin2_alm2map"] = time_call(lambda: syn(alm[1:], 2), repeat=args.repeat)
    t["ducc0_all_t_map2alm"] = time_call(lambda: adj(ref[:1], 0), repeat=args.repeat)
    t["ducc0_all_spin2_map2alm"] = time_call(lambda: adj(ref[1:], 2), repeat=args.repeat)
    try:
        import healpy as hp

        if nside > args.max_nside_healpy:
            raise ImportError(f"nside {nside} > --max-nside-healpy")
        t["healpy_pol_alm2map"] = time_call(lambda: hp.alm2map(alm, nside, lmax=lmax),
                                            repeat=args.repeat, max_seconds=15)
        t["healpy_pol_map2alm"] = time_call(lambda: hp.map2alm(ref, lmax=lmax, iter=0),
                                            repeat=args.repeat, max_seconds=15)
    except ImportError:
        log("healpy skipped (not installed, or above --max-nside-healpy)")
    row["timings"] = {k: v.as_dict() for k, v in t.items()}
    med = {k: v.median for k, v in t.items()}
    for op in ("alm2map", "map2alm"):
        ducc_pol = med[f"ducc0_all_t_{op}"] + med[f"ducc0_all_spin2_{op}"]
        row[f"ducc0_all_pol_{op}_s"] = ducc_pol
        row[f"pol_over_t_{op}"] = med[f"cuda_device_pol_{op}"] / med[f"cuda_device_t_{op}"]
        row[f"spin2_over_t_{op}"] = med[f"cuda_device_spin2_{op}"] / med[f"cuda_device_t_{op}"]
        row[f"speedup_pol_{op}_vs_ducc0_all"] = ducc_pol / med[f"cuda_device_pol_{op}"]
        row[f"speedup_spin2_{op}_vs_ducc0_all"] = (med[f"ducc0_all_spin2_{op}"]
                                                   / med[f"cuda_device_spin2_{op}"])
        log(f"  {op}: T {med[f'cuda_device_t_{op}'] * 1e3:7.2f} ms | pol device "
            f"{med[f'cuda_device_pol_{op}'] * 1e3:7.2f} ms ({row[f'pol_over_t_{op}']:.2f}x T), "
            f"host {med[f'cuda_host_pol_{op}'] * 1e3:7.2f} ms | spin2 "
            f"{med[f'cuda_device_spin2_{op}'] * 1e3:7.2f} ms ({row[f'spin2_over_t_{op}']:.2f}x T)"
            f" | ducc0 pol {ducc_pol * 1e3:8.1f} ms ({row[f'speedup_pol_{op}_vs_ducc0_all']:.1f}x)"
            + (f" | healpy {med[f'healpy_pol_{op}'] * 1e3:8.1f} ms"
               if f"healpy_pol_{op}" in med else ""))
    return row


def odd_sizes(log):
    """Polarized and spin-s CUDA results against ducc0 at odd nside and mmax < lmax."""
    out = []
    for nside in (1, 3, 13, 33, 100):
        for lmax in sorted({nside + 1, 2 * nside, 4 * nside}):
            for mmax in sorted({lmax, lmax // 2}):
                layout = AlmLayout(lmax, mmax)
                alm = pol_alm(np.random.default_rng(lmax), layout)
                syn, adj = ducc0_ops(nside, layout, 0)
                rec = {"nside": nside, "lmax": lmax, "mmax": mmax}
                for spin in (s for s in (1, 2, 3) if s <= lmax):
                    a = alm[1:].copy()
                    a[:, layout.lm()[0] < spin] = 0
                    m = syn(a, spin)
                    rec[f"err_spin{spin}_alm2map"] = rel(
                        sphgpu.alm2map_spin(a, nside, spin, lmax, mmax, backend="cuda"), m)
                    rec[f"err_spin{spin}_map2alm"] = rel(
                        sphgpu.map2alm_spin(m, spin, lmax, mmax, backend="cuda"), adj(m, spin))
                out.append(rec)
    keys = sorted({k for r in out for k in r if k.startswith("err")})
    worst = {k: max(r[k] for r in out if k in r) for k in keys}
    log("odd sizes: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    return out


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["nside"] for r in results]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ("alm2map", "map2alm")):
        for key, label in ((f"cuda_device_t_{op}", "sphgpu T (device)"),
                           (f"cuda_device_pol_{op}", "sphgpu T,E,B (device)"),
                           (f"cuda_host_pol_{op}", "sphgpu T,E,B (host to host)"),
                           (f"cuda_device_spin2_{op}", "sphgpu spin 2 (device)"),
                           (f"healpy_pol_{op}", "healpy T,E,B")):
            pts = [(r["nside"], r["timings"][key]["median_s"]) for r in results
                   if key in r["timings"]]
            if pts:
                ax.loglog(*zip(*pts), "o-", label=label)
        ax.loglog(ns, [r[f"ducc0_all_pol_{op}_s"] for r in results], "s--",
                  label=f"ducc0 T,E,B ({results[0].get('cpu_count')} threads)")
        ax.set_xlabel("nside (lmax = 2 nside)")
        ax.set_ylabel("time per call [s]")
        ax.set_title(f"polarized {op} on {results[0].get('gpu')}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--max-nside-healpy", type=int, default=1024,
                   help="healpy is timed up to this nside (8.6 s a call at nside 2048)")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f)["results"], os.path.join(os.path.dirname(args.replot),
                                                       "sht_pol.png"))
        return 0
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    info = machine_info()
    log(json.dumps(info))
    odd = odd_sizes(log)
    results = run_sizes(args.nside, lambda nside: bench_size(nside, args, log), info,
                        os.path.join(args.out, "sht_pol.json"), odd_sizes=odd)
    plot(results, os.path.join(args.out, "sht_pol.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
