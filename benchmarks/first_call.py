"""First calls: how long a user waits for the first call of each capability in a new process.

Run on the GPU machine:  python benchmarks/first_call.py --out benchmarks/results
Check the script on a CPU: python benchmarks/first_call.py --cpu --out /tmp/first_call

Every number comes from a fresh Python process (subprocess) that imports sphgpu, builds its
NumPy inputs (not timed), then times the first call of one public function, and the second.
Cases and goals (issue 16), on backend "cuda" (``--cpu``: "cpu", at small sizes):

    alm2map         nside 2048, lmax 4096, NumPy a_lm in, map out                  <= 2 s
    radix_sort      2^20 float64 keys from NumPy                                   <= 1.5 s
    pair_counts     DR of 20,000 x 20,000 points from NumPy arrays, 10 bins to 5 deg   <= 1.5 s
    convolve        real space, nside 512, Gaussian 60', theta_cut 3 deg              <= 1.5 s
    convolve_split  the same kernel split at l_cut 256, theta_cut 2 deg (no goal)
    optimize_split  cost_model="measured", CMB beam 10' at nside 2048, lmax 4096     <= 5 s
                    (cost-model cache empty: the timing itself; kernel caches warm)
    optimize_split_cached  the same with the cost model cached (no goal)

Cache states, each in its own directories (NUMBA_CACHE_DIR, SPHGPU_CACHE_DIR, CUPY_CACHE_DIR):
"empty": the very first call on a machine (fresh, empty directories, one process per case);
"warm": the same directories after that, ``--repeat`` fresh processes per case (median and
max reported). The JSON (first_call.json) holds every process's times, the machine (GPU name),
the number of Numba cache files and sphgpu cubins written (0 would mean a disk cache is not
working), each process's kernels loaded from sphgpu's cubin cache and through Numba (a warm
process should load all from disk and never start Numba's compiler), Numba's cache hits and
misses for the SHT's module-level kernels, whether each warm run's output is bit for bit the
empty-cache run's (kernels loaded from disk compute what freshly compiled ones do), and any
warning line a process printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GOALS = {"alm2map": 2.0, "radix_sort": 1.5, "pair_counts": 1.5, "convolve": 1.5,
         "optimize_split": 5.0}
CASES = ("alm2map", "radix_sort", "pair_counts", "convolve", "convolve_split", "optimize_split",
         "optimize_split_cached")

SIZES = {
    "gpu": dict(nside=2048, lmax=4096, sort_n=1 << 20, pairs_n=20_000, conv_nside=512,
                conv_lmax=1024, conv_fwhm=60.0, conv_theta_deg=3.0, opt_nside=2048,
                opt_lmax=4096, opt_fwhm=10.0),
    "cpu": dict(nside=64, lmax=128, sort_n=1 << 14, pairs_n=2_000, conv_nside=32,
                conv_lmax=64, conv_fwhm=960.0, conv_theta_deg=40.0, opt_nside=32, opt_lmax=64,
                opt_fwhm=320.0),
}


# ----------------------------------------------------------------------------- child
def child(case, backend, size):
    """Runs in the fresh process: prints one JSON line with the times of ``case``."""
    t0 = time.perf_counter()
    import numpy as np

    import sphgpu
    from sphgpu import tpacf
    from sphgpu.convolve import ARCMIN, RadialKernel, convolve, optimize_split

    t_import = time.perf_counter() - t0
    s = SIZES[size]
    rng = np.random.default_rng(0)
    if case == "alm2map":
        layout = sphgpu.AlmLayout(s["lmax"])
        alm = rng.standard_normal(layout.size) + 1j * rng.standard_normal(layout.size)
        alm[: s["lmax"] + 1] = alm[: s["lmax"] + 1].real
        call = lambda: sphgpu.alm2map(alm, s["nside"], backend=backend)
    elif case == "radix_sort":
        keys = rng.standard_normal(s["sort_n"])
        call = lambda: sphgpu.radix_sort(keys, backend=backend)
    elif case == "pair_counts":
        n = s["pairs_n"]
        ra, dec = rng.uniform(0, 60, n), rng.uniform(-20, 20, n)
        ra2, dec2 = rng.uniform(0, 60, n), rng.uniform(-20, 20, n)
        bins = tpacf.AngularBins.log(0.01, 5.0, 10)
        call = lambda: tpacf.pair_counts(ra, dec, ra2, dec2, bins=bins, backend=backend)
    elif case in ("convolve", "convolve_split"):
        nside = s["conv_nside"]
        m = rng.standard_normal(12 * nside * nside)
        k = RadialKernel.gaussian(s["conv_fwhm"], s["conv_lmax"])
        theta = s["conv_theta_deg"] * 60 * ARCMIN
        if case == "convolve":
            call = lambda: convolve(m, k, method="realspace", theta_cut=theta, backend=backend)
        else:
            call = lambda: convolve(m, k, method="split", l_cut=s["conv_lmax"] // 4,
                                    theta_cut=2 * theta / 3, backend=backend)
    elif case.startswith("optimize_split"):
        k = RadialKernel.cmb(s["opt_fwhm"], s["opt_lmax"])
        opts = {} if backend == "cuda" else dict(harmonic_backends=("cpu",),
                                                 realspace_backends=("cpu",))
        call = lambda: optimize_split(k, nside=s["opt_nside"], error_bound=1e-5,
                                      cost_model="measured", cost_model_options=opts)
    else:
        raise SystemExit(f"unknown case {case!r}")

    def timed():
        t = time.perf_counter()
        out = call()
        if backend == "cuda":    # through CuPy: Numba's sync would start Numba's context
            import cupy

            cupy.cuda.runtime.deviceSynchronize()
        return time.perf_counter() - t, out

    if os.environ.get("SPHGPU_FIRST_CALL_PROFILE") == "1":
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        first, out = timed()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(35)
        print(text.getvalue(), flush=True)
    else:
        first, out = timed()
    second, _ = timed()
    row = {"case": case, "import_s": t_import, "first_s": first, "second_s": second}
    if case.startswith("optimize_split"):
        row["plan"] = {"method": out.method, "l_cut": out.l_cut,
                       "theta_cut_arcmin": out.theta_cut_arcmin, "time_total": out.time_total}
    else:
        # kernels compiled afresh (empty caches) and loaded from disk must agree
        arr = np.asarray(out.counts if hasattr(out, "counts") else out)
        row["output_sha1"] = hashlib.sha1(np.ascontiguousarray(arr).tobytes()).hexdigest()
        row["output_norm"] = float(np.linalg.norm(arr.astype(np.float64)))
    if backend == "cuda":
        row["numba_cache"] = _cache_stats()
    print("RESULT " + json.dumps(row), flush=True)


def _cache_stats():
    """Kernels this process loaded from sphgpu's disk cache and through Numba (a warm process
    should load every kernel from disk), Numba's own disk-cache hits and misses for the
    module-level kernels of the SHT and convolve, and whether Numba's compiler was started
    (its lowering registries imported: the second of start-up sphgpu's cache avoids)."""
    from sphgpu import _fast_launch
    from sphgpu.convolve import _cuda_kernels as _realspace_cuda_kernels
    from sphgpu.sht import _cuda_kernels

    hits = misses = 0
    for mod in (_cuda_kernels, _realspace_cuda_kernels):
        for obj in vars(mod).values():
            stats = getattr(obj, "stats", None)
            if stats is not None and hasattr(stats, "cache_hits"):
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
    return {"hits": hits, "misses": misses,
            "sphgpu": {"from_disk": len(_fast_launch.LOADED_FROM_DISK),
                       "through_numba": len(_fast_launch.THROUGH_NUMBA)},
            "through_numba": _fast_launch.THROUGH_NUMBA,
            "numba_compiler_started": "numba.cuda.np.arrayobj" in sys.modules}


# ----------------------------------------------------------------------------- parent
def _run_child(case, backend, size, dirs, log):
    env = dict(os.environ, NUMBA_CACHE_DIR=dirs["numba"], SPHGPU_CACHE_DIR=dirs["sphgpu"],
               CUPY_CACHE_DIR=dirs["cupy"])
    cmd = [sys.executable, os.path.abspath(__file__), "--child", case, "--backend", backend,
           "--size", size]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        log(f"{case}: the child failed (rc {p.returncode})\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
        return {"case": case, "error": p.stderr[-4000:], "rc": p.returncode}
    row = json.loads(lines[-1][len("RESULT "):])
    row["process_s"] = wall
    # what the library printed (progress of first-time work) and any warning it raised
    keep = 80 if os.environ.get("SPHGPU_FIRST_CALL_PROFILE") == "1" else 20
    row["stdout"] = [l for l in p.stdout.splitlines() if not l.startswith("RESULT ")][-keep:]
    row["warnings"] = [l for l in p.stderr.splitlines() if "Warning" in l][-20:]
    return row


def _cache_files(root, ends=(".nbi", ".nbc")):
    return sum(1 for _, _, files in os.walk(root) for f in files if f.endswith(ends))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--cpu", action="store_true", help="backend 'cpu' at small sizes (a check "
                   "of the script on a machine without GPU)")
    p.add_argument("--repeat", type=int, default=3, help="warm-cache processes per case")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--profile", action="store_true", help="also profile (cProfile) one more "
                   "warm-cache process per case and print where its first call spends time")
    p.add_argument("--name", help="output file name (default first_call.json, "
                   "first_call_cpu.json with --cpu)")
    p.add_argument("--keep-caches", action="store_true", help="copy sphgpu's cache directory "
                   "(tuned launches, cost model, cubins and their key texts) to --out")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--backend", help=argparse.SUPPRESS)
    p.add_argument("--size", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.backend, args.size)

    from sphgpu.bench import machine_info

    backend, size = ("cpu", "cpu") if args.cpu else ("cuda", "gpu")
    os.makedirs(args.out, exist_ok=True)
    log = lambda s: print(s, flush=True)
    info = machine_info()
    log(json.dumps(info))
    root = tempfile.mkdtemp(prefix="sphgpu-first-call-")
    dirs = {k: os.path.join(root, k) for k in ("numba", "sphgpu", "cupy")}
    for d in dirs.values():
        os.makedirs(d)
    result = {"machine": info, "backend": backend, "sizes": SIZES[size], "goals_s": GOALS,
              "empty": {}, "warm": {}}
    try:
        # the very first call on this machine: empty caches, filled by these processes in turn
        for case in args.cases:
            if case == "optimize_split_cached":
                continue        # its "empty" run is optimize_split's
            row = _run_child(case, backend, size, dirs, log)
            result["empty"][case] = row
            log(f"empty caches  {case:22s} first call {row.get('first_s', float('nan')):7.3f} s")
        result["numba_cache_files"] = _cache_files(dirs["numba"])
        result["sphgpu_cubin_files"] = _cache_files(dirs["sphgpu"], (".cubin",))
        log(f"cache files written: Numba {result['numba_cache_files']}, "
            f"sphgpu cubins {result['sphgpu_cubin_files']}")
        cost_file = os.path.join(dirs["sphgpu"], "convolve_cost.json")
        for case in args.cases:
            rows = []
            for _ in range(args.repeat):
                if case == "optimize_split" and os.path.exists(cost_file):
                    os.remove(cost_file)       # time the cost model's measurement itself
                rows.append(_run_child(case, backend, size, dirs, log))
            firsts = [r["first_s"] for r in rows if "first_s" in r]
            summary = {"runs": rows}
            if firsts:
                summary.update(first_median_s=statistics.median(firsts), first_max_s=max(firsts))
                goal = GOALS.get(case)
                summary["goal_s"] = goal
                summary["meets_goal"] = None if goal is None else max(firsts) <= goal
                log(f"warm caches   {case:22s} first call median {summary['first_median_s']:7.3f}"
                    f" s, max {summary['first_max_s']:7.3f} s"
                    + ("" if goal is None else f"  (goal {goal} s: "
                       f"{'met' if summary['meets_goal'] else 'NOT met'})"))
            empty = result["empty"].get(case, {}).get("output_sha1")
            if empty is not None:
                summary["same_output_as_empty_caches"] = all(
                    r.get("output_sha1") == empty for r in rows)
            result["warm"][case] = summary
            if args.profile:
                if case == "optimize_split" and os.path.exists(cost_file):
                    os.remove(cost_file)
                os.environ["SPHGPU_FIRST_CALL_PROFILE"] = "1"
                row = _run_child(case, backend, size, dirs, log)
                del os.environ["SPHGPU_FIRST_CALL_PROFILE"]
                summary["profiled_first_s"] = row.get("first_s")
                log(f"profile of a warm {case} first call ({row.get('first_s')} s):\n"
                    + "\n".join(l for l in row.get("stdout", []) if l.strip()))
    finally:
        if args.keep_caches:
            shutil.copytree(dirs["sphgpu"], os.path.join(args.out, "sphgpu_cache"),
                            dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    name = args.name or ("first_call_cpu.json" if args.cpu else "first_call.json")
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(result, f, indent=1)
    log(f"wrote {os.path.join(args.out, name)}")


if __name__ == "__main__":
    main()
