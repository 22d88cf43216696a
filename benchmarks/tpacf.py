"""Angular correlation benchmark: sphgpu's exact DD/DR/RR as users call it, against its peers.

Run on the GPU machine:   python benchmarks/tpacf.py --out benchmarks/results
Correctness only, small sizes, seconds:   python benchmarks/tpacf.py --quick --out /tmp/tpacf
Scale row (RR of 10^7 full-sky randoms; 1 and 4 GPUs; TreeCorr exact and approximate; 10^8
points over a cluster of every visible GPU):
    python benchmarks/tpacf.py --scale --scale-cluster-n 100000000 --out benchmarks/results
  TreeCorr's default bin_slop runs on the whole catalog, killed after --treecorr-limit seconds
  (then a lower bound); TreeCorr exact runs on subsamples for --treecorr-exact-limit seconds
  and is scaled to the whole catalog; the printed table labels every number full run, scaled
  or lower bound.
  quick (one GPU, no TreeCorr, < 3 minutes): ... --scale --scale-gpus 1 --no-treecorr
Cross-correlation and covariance rows:   python benchmarks/tpacf.py --cross-cov --out ...

Workloads (20 log bins from 0.01 to 10 degrees):
  * "survey": one contiguous footprint of 7,500 square degrees, Dec -5 to 70 and 127.5 degrees
    of RA centred on RA 3.75 (it crosses RA 0, as wide-field surveys do), 84,000 clustered
    points and 900,000 randoms (the headline), and both scaled by ``--fractions`` (rows of
    "results" in the JSON);
  * "quarter": RA 0-180, Dec 0-90 (a quarter of the sky), full size ("quarter_sky"), the
    workload of earlier tables.

What is timed (medians; same process, same run):
  * sphgpu cuda, **whole call from NumPy arrays** (the headline): ``pair_counts(ra, dec, ra2,
    dec2, bins=..., backend="cuda")``, preparation of both catalogs on the device included;
  * sphgpu cuda from CuPy arrays (whole call, coordinates already on the device);
  * sphgpu cuda with prepared catalogs: ``Catalog`` objects counted before (their sorted device
    copies cached on them), as a user reusing random catalogs gets them;
  * sphgpu's "cpu" backend (Numba, all host cores), whole call from NumPy arrays;
  * TreeCorr exact (bin_slop=0, metric="Arc", all host threads), whole call from NumPy arrays
    (its Catalogs built inside the timing).
Counts: the GPU's must equal the CPU backend's bin for bin (asserted) and, at every size,
TreeCorr's (differences recorded; TreeCorr decides pairs within rounding of an edge with its
own arithmetic). Also: one DR call broken into prepare / plan / upload / kernel / download; the
first call in fresh processes (subprocesses: the first of them may fill on-disk caches, the
second finds them warm). Writes tpacf.json and tpacf_speed.png under --out and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

from sphgpu.bench import machine_info, time_call

NAMES = ("DD", "DR", "RR")
#: RA width (degrees) of a 7,500 deg^2 footprint between Dec -5 and 70
SURVEY_RA_WIDTH = 7500.0 / (np.rad2deg(1.0) * (np.sin(np.deg2rad(70)) - np.sin(np.deg2rad(-5))))
FOOTPRINTS = {
    # generated in the box (0, width) and turned by -width/2 + 3.75 degrees: through RA 0
    "survey": ((0.0, SURVEY_RA_WIDTH, -5.0, 70.0), 3.75 - SURVEY_RA_WIDTH / 2),
    "quarter": ((0.0, 180.0, 0.0, 90.0), 0.0),
}
SIZES = {"full": (84_000, 900_000), "quick": (1_500, 12_000)}


def workload(footprint, n_data, n_random, seed=1):
    """(ra, dec, rra, rdec) NumPy arrays in degrees."""
    from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

    box, turn = FOOTPRINTS[footprint]
    ra, dec = clustered_catalog(n_data, box, seed=seed)
    rra, rdec = uniform_randoms(n_random, box, seed=seed + 1)
    return np.mod(ra + turn, 360.0), dec, np.mod(rra + turn, 360.0), rdec


def treecorr_counts(bins, d, r, threads):
    """TreeCorr exact counts of (ra, dec) arrays d with r (None: auto), whole call."""
    import treecorr

    def cat(c):
        return treecorr.Catalog(ra=c[0], dec=c[1], ra_units="deg", dec_units="deg")

    nn = treecorr.NNCorrelation(min_sep=bins.edges[0], max_sep=bins.edges[-1],
                                nbins=bins.nbins, sep_units=bins.unit, bin_slop=0,
                                metric="Arc")
    if r is None:
        nn.process(cat(d), num_threads=threads)
    else:
        nn.process(cat(d), cat(r), num_threads=threads)
    return np.rint(nn.npairs).astype(np.int64)


def _args(name, d, r):
    return {"DD": (d, None), "DR": (d, r), "RR": (r, None)}[name]


def _call(name, d, r, bins, **kw):
    """pair_counts of the count ``name`` on (ra, dec) tuples or Catalogs d and r."""
    from sphgpu.tpacf import pair_counts

    a, b = _args(name, d, r)
    if isinstance(a, tuple):
        return pair_counts(*a, *(b if b is not None else ()), bins=bins, **kw)
    return pair_counts(a, b, bins=bins, **kw)


def run_footprint(footprint, nd, nr, bins, args, threads):
    """Every timing and check of DD, DR and RR on one footprint: a row of tpacf.json."""
    import cupy
    from numba import cuda

    from sphgpu.tpacf import Catalog, _cuda

    ra, dec, rra, rdec = workload(footprint, nd, nr)
    host = ((ra, dec), (rra, rdec))
    dev = tuple((cupy.asarray(a), cupy.asarray(b)) for a, b in host)
    cats = (Catalog(ra, dec), Catalog(rra, rdec))
    sync = cuda.synchronize
    out = {"footprint": footprint, "n_data": nd, "n_random": nr, "counts": {}}
    for name in NAMES:
        res = {}
        gpu = _call(name, *host, bins, backend="cuda")
        res["pairs_in_bins"] = int(gpu.counts.sum())
        res["pairs_compared"] = gpu.pairs_compared
        res["refined"] = gpu.refined
        for label, inputs in (("sphgpu_cuda_float32", host), ("sphgpu_cuda_cupy", dev),
                              ("sphgpu_cuda_prepared", cats)):
            again = _call(name, *inputs, bins, backend="cuda")
            assert np.array_equal(again.counts, gpu.counts), f"{name} {label}"
            t = time_call(lambda: _call(name, *inputs, bins, backend="cuda"), repeat=args.repeat,
                          warmup=1, sync=sync)
            res[label] = t.as_dict()
        res["sphgpu_cuda_float64"] = time_call(
            lambda: _call(name, *host, bins, backend="cuda", precision="float64"),
            repeat=max(3, args.repeat // 3), warmup=1, sync=sync).as_dict()
        prof = {}
        a, b = _args(name, *host)
        _cuda.count_pairs(Catalog(*a, copy=False), None if b is None else Catalog(*b, copy=False),
                          bins, profile=prof)
        res["cuda_breakdown_s"] = prof
        t0 = time.perf_counter()
        cpu = _call(name, *host, bins, backend="cpu")
        res["cpu"] = {"median_s": time.perf_counter() - t0, "repeats": 1}
        assert np.array_equal(cpu.counts, gpu.counts), f"{footprint} {name}: cpu != cuda"
        res["cpu_equal"] = True
        if not args.no_treecorr:
            a, b = _args(name, *host)
            t0 = time.perf_counter()
            tc = treecorr_counts(bins, a, b, threads)
            res["treecorr"] = {"median_s": time.perf_counter() - t0, "repeats": 1}
            diff = tc - gpu.counts
            res["treecorr_diff"] = diff.tolist()
            res["treecorr_equal"] = bool(np.all(diff == 0))
        g = res["sphgpu_cuda_float32"]["median_s"]
        for peer in ("cpu", "treecorr"):
            if peer in res:
                res[f"speedup_vs_{peer}"] = res[peer]["median_s"] / g
        out["counts"][name] = res
        print(f"{footprint} {name}: numpy {g * 1e3:.1f} ms, cupy "
              f"{res['sphgpu_cuda_cupy']['median_s'] * 1e3:.1f} ms, prepared "
              f"{res['sphgpu_cuda_prepared']['median_s'] * 1e3:.1f} ms, cpu "
              f"{res['cpu']['median_s']:.3f} s"
              + (f", treecorr {res['treecorr']['median_s']:.3f} s (equal: "
                 f"{res['treecorr_equal']})" if "treecorr" in res else "")
              + " | " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in prof.items()
                                  if isinstance(v, float)), flush=True)
    tot = {}
    for key in ("sphgpu_cuda_float32", "sphgpu_cuda_cupy", "sphgpu_cuda_prepared", "cpu",
                "treecorr"):
        vals = [out["counts"][n].get(key) for n in NAMES]
        if all(isinstance(v, dict) for v in vals):
            tot[key] = sum(v["median_s"] for v in vals)
    out["total_s"] = tot
    for peer in ("cpu", "treecorr"):
        if peer in tot:
            out[f"total_speedup_vs_{peer}"] = tot[peer] / tot["sphgpu_cuda_float32"]
    return out


FRESH = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from sphgpu.tpacf import AngularBins, pair_counts
    t_import = time.perf_counter() - t0
    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    z = np.load(sys.argv[1])
    ra, dec, rra, rdec = (z[k] for k in ("ra", "dec", "rra", "rdec"))
    out = {"import_s": t_import}
    for k in ("first_s", "second_s"):
        t0 = time.perf_counter()
        pair_counts(ra, dec, rra, rdec, bins=bins, backend="cuda")
        out[k] = time.perf_counter() - t0
    print(json.dumps(out))
""")


def fresh_process(ra, dec, rra, rdec, tmp):
    """Import, first and second call of a DR count from NumPy arrays in two fresh processes,
    one after the other (the first may fill on-disk caches that the second finds)."""
    path = os.path.join(tmp, "tpacf_fresh.npz")
    np.savez(path, ra=ra, dec=dec, rra=rra, rdec=rdec)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", FRESH, path], capture_output=True, text=True,
                           timeout=600)
        runs.append({"error": p.stderr[-2000:]} if p.returncode else
                    json.loads(p.stdout.strip().splitlines()[-1]))
    os.remove(path)
    return {"n_data": ra.size, "n_random": rra.size, "runs": runs}


def check_unit_vectors(n=1_000_003):
    """The device's unit vectors equal the host's bit for bit (random points, with poles, RA
    wraps and multiples of 90 degrees); raises if not."""
    import cupy

    from sphgpu.tpacf import Catalog, grid
    from sphgpu.tpacf._cuda import DEVICE

    rng = np.random.default_rng(7)
    ra = np.concatenate([rng.uniform(-400, 800, n), [0, 90, 180, 270, 360, -1e-14, 720, 45]])
    dec = np.concatenate([rng.uniform(-90, 90, n), [90, -90, 0, 45, -45, 0, 89.9999, -5]])
    cat = Catalog(ra, dec)
    h = grid.band_height(np.deg2rad(10.0))
    host = grid.sorted_catalog(cat, h, 0)
    dev = grid.sorted_catalog(cat, h, 0, DEVICE)
    same = {"perm": bool(np.array_equal(host.perm, cupy.asnumpy(dev.perm))),
            "xyz": bool(np.array_equal(host.xyz, cupy.asnumpy(dev.xyz))),
            "xyz32": bool(np.array_equal(host.xyz32, cupy.asnumpy(dev.xyz32))),
            "runs": bool(np.array_equal(host.run_start, dev.run_start))}
    assert all(same.values()), f"device and host preparation differ: {same}"
    return same


def run(args):
    import warnings

    import treecorr  # noqa: F401  (fail early if the peer is missing)
    from sphgpu.tpacf import AngularBins

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    threads = os.cpu_count()
    info = machine_info()
    info["treecorr"] = treecorr.__version__
    print(json.dumps(info), flush=True)
    result = {"machine": info, "host_threads": threads, "quick": args.quick, "results": [],
              "bins": {"theta_min_deg": 0.01, "theta_max_deg": 10, "nbins": 20,
                       "spacing": "log"}}
    _warm(bins)
    result["unit_vectors_equal"] = check_unit_vectors(20_000 if args.quick else 1_000_003)
    print("device preparation equals the host's:", result["unit_vectors_equal"], flush=True)
    nd, nr = SIZES["quick" if args.quick else "full"]
    with warnings.catch_warnings(record=True) as caught:   # none may reach a user
        warnings.simplefilter("always")
        for f in [1.0] if args.quick else args.fractions:
            result["results"].append(run_footprint("survey", round(nd * f), round(nr * f), bins,
                                                   args, threads))
            save(result, args.out)
        if not args.no_quarter:
            result["quarter_sky"] = run_footprint("quarter", nd, nr, bins, args, threads)
            save(result, args.out)
    result["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    ra, dec, rra, rdec = workload("survey", nd, nr)
    result["fresh_process"] = [fresh_process(ra[:2000], dec[:2000], rra[:2000], rdec[:2000],
                                             args.out)]
    if not args.quick:
        result["fresh_process"].append(fresh_process(ra, dec, rra, rdec, args.out))
    save(result, args.out)
    if args.sweep:
        result["sweep"] = sweep(bins)
        save(result, args.out)
    plot(result, os.path.join(args.out, "tpacf_speed.png"))
    print(table(result))
    return 0


def _warm(bins):
    """One tiny count of every kind, so that no timing below pays for a first call (those
    are measured apart, in fresh processes)."""
    ra, dec, rra, rdec = (a[:300] for a in workload("survey", 300, 300))
    for backend in ("cuda", "cpu"):
        _call("DR", (ra, dec), (rra, rdec), bins, backend=backend)
        _call("RR", (ra, dec), (rra, rdec), bins, backend=backend)
    treecorr_counts(bins, (ra, dec), None, 1)


def save(result, out):
    result["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with open(os.path.join(out, "tpacf.json"), "w") as f:
        json.dump(result, f, indent=1)


def sweep(bins):
    """DR on the survey footprint over launch parameters and the band height (kernel time,
    float32, prepared catalogs)."""
    from sphgpu.tpacf import Catalog, _cuda, grid

    ra, dec, rra, rdec = workload("survey", *SIZES["full"])
    d, r = Catalog(ra, dec), Catalog(rra, rdec)
    out = []
    base = grid.BAND_FRACTION
    for bf in (0.125, 0.25, 0.5):
        grid.BAND_FRACTION = bf
        for th in (128, 256, 512):
            for it in (64, 128, 256):
                for jm in (1024, 4096, 16384):
                    prof = {}
                    try:
                        _cuda.count_pairs(d, r, bins, threads=th, i_tile=it, j_max=jm)
                        _cuda.count_pairs(d, r, bins, threads=th, i_tile=it, j_max=jm,
                                          profile=prof)
                    except Exception as exc:   # a shape that does not fit: recorded
                        prof = {"error": str(exc)}
                    prof.update(band_fraction=bf)
                    out.append(prof)
                    print("sweep", prof, flush=True)
    grid.BAND_FRACTION = base
    return out


STYLES = {"sphgpu_cuda_float32": ("o-", "sphgpu cuda, whole call from NumPy"),
          "sphgpu_cuda_prepared": ("o--", "sphgpu cuda, prepared Catalogs"),
          "cpu": ("s:", "sphgpu cpu"), "treecorr": ("^:", "TreeCorr exact")}


def plot(result, path):
    """Seconds against catalog size on the survey footprint: DR, and DD + DR + RR."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["results"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, what in zip(axes, ("DR", "DD + DR + RR")):
        for key, (style, label) in STYLES.items():
            pts = [(r["n_random"], r["total_s"][key] if what != "DR"
                    else r["counts"]["DR"][key]["median_s"]) for r in rows
                   if key in r["total_s"]]
            if pts:
                ax.loglog(*zip(*pts), style, label=label)
        if what == "DR":
            ax.axhline(0.030, color="k", lw=0.8, alpha=0.5, label="30 ms")
        ax.set_xlabel("randoms (data: 84/900 of them)")
        ax.set_ylabel("seconds per call (median)")
        ax.set_title(f"{what}, survey footprint (7,500 deg^2)", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Exact pair counts, 20 log bins 0.01-10 deg, on {result['machine'].get('gpu')}"
                 f" ({result.get('host_threads')} host threads)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def table(result):
    """The README's markdown table."""
    def sec(t):
        return "–" if t is None else (f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s")

    def ms(v):
        return sec(v["median_s"]) if isinstance(v, dict) else "–"

    def x(v):
        return "–" if v is None else (f"{v:.0f}x" if v >= 10 else f"{v:.2g}x")

    lines = [f"GPU: {result['machine'].get('gpu')}; host threads: {result.get('host_threads')}",
             "| footprint, data / randoms | count | pairs in bins | cuda from NumPy (headline) | "
             "cuda from CuPy | cuda, prepared Catalogs | sphgpu cpu | TreeCorr exact | speedup "
             "vs cpu / TreeCorr | equal to cpu / TreeCorr |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["results"] + ([result["quarter_sky"]] if "quarter_sky" in result else []):
        where = f"| {r['footprint']} {r['n_data']:,} / {r['n_random']:,}"
        for name in NAMES:
            c = r["counts"][name]
            lines.append(" | ".join([
                where, name, f"{c['pairs_in_bins']:.3g}", ms(c["sphgpu_cuda_float32"]),
                ms(c["sphgpu_cuda_cupy"]), ms(c["sphgpu_cuda_prepared"]), ms(c.get("cpu")),
                ms(c.get("treecorr")),
                f"{x(c.get('speedup_vs_cpu'))} / {x(c.get('speedup_vs_treecorr'))}",
                f"{c.get('cpu_equal')} / {c.get('treecorr_equal', '–')} |"]))
        tot = r["total_s"]
        lines.append(" | ".join([
            where, "**DD+DR+RR**", "", sec(tot.get("sphgpu_cuda_float32")),
            sec(tot.get("sphgpu_cuda_cupy")), sec(tot.get("sphgpu_cuda_prepared")),
            sec(tot.get("cpu")), sec(tot.get("treecorr")),
            f"{x(r.get('total_speedup_vs_cpu'))} / {x(r.get('total_speedup_vs_treecorr'))}",
            " |"]))
    for fresh in result.get("fresh_process", []):
        for i, run in enumerate(fresh["runs"]):
            lines.append(f"fresh process {i + 1}, DR {fresh['n_data']:,} x {fresh['n_random']:,}"
                         " from NumPy: " + ", ".join(f"{k} {v:.3f} s" for k, v in run.items()
                                                     if isinstance(v, float))
                         + (" FAILED: " + run["error"] if "error" in run else ""))
    for w in result.get("warnings", []):
        lines.append(f"WARNING printed: {w}")
    return "\n".join(lines)


# ------------------------------------------------------------------ scale: RR of 10^7 points
def _device_pool():
    """CuPy's default pool, emptied: its total afterwards is the call's high-water mark of
    CuPy allocations (the pool keeps what it grew to)."""
    import cupy

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    return pool


TREECORR_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import treecorr
    path, m, opts, threads = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    z = np.load(path)
    ra, dec = z["ra"][:m], z["dec"][:m]
    print(json.dumps({"ready": time.monotonic()}), flush=True)
    t0 = time.perf_counter()
    cat = treecorr.Catalog(ra=ra, dec=dec, ra_units="deg", dec_units="deg")
    print(json.dumps({"build_s": time.perf_counter() - t0}), flush=True)
    nn = treecorr.NNCorrelation(**opts)
    t0 = time.perf_counter()
    nn.process(cat, num_threads=int(threads))
    print(json.dumps({"process_s": time.perf_counter() - t0, "npairs": nn.npairs.tolist()}),
          flush=True)
""")


def treecorr_run(path, m, bins, bin_slop, threads, limit_s):
    """TreeCorr's auto count (RR) of the first ``m`` points of the catalog saved at ``path``
    (npz with ra, dec), in a child process killed after ``limit_s`` seconds of wall clock
    (its start, imports and loading included), so that a run that would take hours costs only
    the limit. ``bin_slop`` None: TreeCorr's default (approximate); 0: exact.

    Returns {"finished": True, "build_s" (the Catalog), "process_s" (process(), which also
    builds the tree), "seconds" (their sum), "npairs"}, or, when killed, {"finished": False,
    "seconds": None, "lower_bound_s": the seconds build + process had run, "build_s" if the
    Catalog was made}; a child that fails gives {"finished": False, "error": ...}.
    """
    opts = {"min_sep": float(bins.edges[0]), "max_sep": float(bins.edges[-1]),
            "nbins": bins.nbins, "sep_units": bins.unit, "metric": "Arc"}
    if bin_slop is not None:
        opts["bin_slop"] = bin_slop
    proc = subprocess.Popen([sys.executable, "-c", TREECORR_CHILD, path, str(m),
                             json.dumps(opts), str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=limit_s)
        killed = None
    except subprocess.TimeoutExpired:
        proc.kill()
        killed = time.monotonic()
        out, err = proc.communicate()
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            got.update(json.loads(line))
    res = {"points": m, "limit_s": limit_s, "bin_slop": bin_slop}
    if "build_s" in got:
        res["build_s"] = got["build_s"]
    if killed is not None and "ready" in got:
        res.update(finished=False, seconds=None, lower_bound_s=killed - got["ready"])
    elif killed is None and proc.returncode == 0 and "npairs" in got:
        res.update(finished=True, process_s=got["process_s"],
                   seconds=got["build_s"] + got["process_s"],
                   npairs=np.rint(got["npairs"]).astype(np.int64).tolist())
    else:     # died, or killed before it had loaded the catalog: nothing to bound
        res.update(finished=False, seconds=None,
                   error=(f"killed after {limit_s} s before loading the catalog"
                          if killed is not None else err[-2000:]))
    return res


def treecorr_exact_scaled(path, n, bins, threads, limit_s, start=50_000):
    """TreeCorr exact (bin_slop=0) RR of ``n`` points, predicted from the largest subsample
    (the first m points, m doubling from ``start``) that runs within ``limit_s`` seconds of wall
    clock for all runs together: Catalog build scaled by points (n/m), process() by pairs
    (n(n-1) / m(m-1)), labelled as such. With two or more runs, also the exponent of
    process() against m between the last two, and the prediction with that exponent: below 2,
    the tree merges more pairs of cells as the catalog gets denser and the pair scaling
    overstates TreeCorr's time. A whole catalog that finishes is reported as measured."""
    deadline = time.monotonic() + limit_s
    runs, m = [], min(n, start)
    while True:
        t0 = time.monotonic()
        r = treecorr_run(path, m, bins, 0, threads, max(deadline - t0, 0.0))
        runs.append(r)
        wall = time.monotonic() - t0
        print(f"  TreeCorr exact on {m:,} points: "
              + (f"{r['seconds']:.2f} s" if r["finished"] else "not finished"), flush=True)
        # doubling the points quadruples the pairs: try only what can finish in time
        if not r["finished"] or m == n or 4 * wall > deadline - time.monotonic():
            break
        m = min(n, 2 * m)
    done = [r for r in runs if r["finished"]]
    out = {"runs": runs, "limit_s": limit_s}
    if not done:
        return dict(out, seconds=None, scaled=False,
                    note=f"no subsample from {runs[0]['points']:,} points finished within "
                         f"{limit_s} s")
    last = done[-1]
    m = last["points"]
    out.update(scaled=m < n, measured_points=m, measured_s=last["seconds"],
               npairs_of_measured=last["npairs"])
    for r in runs:                      # the runs' log: the measured counts are kept above
        r.pop("npairs", None)
    if m == n:
        return dict(out, seconds=last["seconds"], build_s=last["build_s"])
    pairs = n * (n - 1) / (m * (m - 1))
    out.update(seconds=last["build_s"] * n / m + last["process_s"] * pairs,
               how=(f"scaled from {m:,} points: Catalog build by points (x{n / m:.3g}), "
                    f"process() by pairs (x{pairs:.3g})"))
    if len(done) >= 2:
        a, b = done[-2], done[-1]
        k = np.log(b["process_s"] / a["process_s"]) / np.log(b["points"] / a["points"])
        out["process_exponent"] = float(k)
        out["seconds_by_exponent"] = (last["build_s"] * n / m
                                      + last["process_s"] * (n / m) ** k)
    return out


def uniform_rr_expected(n, bins):
    """Mean and standard deviation of the auto count in each bin of ``n`` points uniform on
    the whole sphere: the squared chord 2 - 2 cos(theta) of two such points is uniform on
    [0, 4], so a pair falls in a bin with probability p = (its width in squared chord) / 4;
    two pairs sharing a point fall in it independently (whatever the shared point, the sky
    around it is the same), so the count's variance is that of independent pairs."""
    p = np.diff(bins.chord2_edges) / 4
    pairs = n * (n - 1) / 2
    return pairs * p, np.sqrt(pairs * p * (1 - p))


def cluster_nchunks(n, workers, budget_bytes, point_bytes):
    """Chunks per catalog of a distributed auto count of ``n`` points: a task holds two
    chunks, whose prepared points must take at most half of ``budget_bytes`` (the RR of 10^7
    points on an H100 peaked at 158 bytes a point in CuPy's pool, twice the budget's 76),
    with at least four tasks (chunk pairs) a worker so that the uneven tasks (a chunk with
    itself counts half the pairs of two chunks) even out."""
    if n < 1 or workers < 1:
        raise ValueError(f"n and workers must be >= 1, got {n} and {workers}")
    k = max(1, math.ceil(2 * n * point_bytes / (budget_bytes / 2)))
    while k * (k + 1) // 2 < 4 * workers:
        k += 1
    return k


def _pool_reset():
    """On a worker: CuPy's pool emptied (its total afterwards is the high-water mark)."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


def _pool_total():
    import cupy

    return int(cupy.get_default_memory_pool().total_bytes())


def _scale_cluster(n, bins, check_m):
    """RR of ``n`` uniform full-sky randoms over a sphgpu.distributed cluster of every visible
    GPU (one worker each), whole call from NumPy, timed once: seconds, chunks, each worker's
    CuPy pool peak; counts of the first ``check_m`` points over the same cluster against the
    CPU backend (equal as integers); the whole count against the uniform expectation."""
    import sphgpu.distributed as sd
    from sphgpu.tpacf import budget, pair_counts
    from sphgpu.tpacf.mocks import uniform_randoms

    ids = sd.visible_gpus()
    if not ids:
        print("  cluster row: skipped, no GPU visible", flush=True)
        return {"skipped": "no GPU visible"}
    print(f"cluster row: {n:,} uniform full-sky randoms ...", flush=True)
    t0 = time.perf_counter()
    # linear in n: 2 * 10^7 points took 1.6 s and 0.73 GB at the peak on a 2-core machine
    ra, dec = uniform_randoms(n, (0.0, 360.0, -90.0, 90.0), seed=31)
    made = time.perf_counter() - t0
    k = cluster_nchunks(n, len(ids), budget.DEFAULT_BUDGET, budget.POINT_BYTES)
    out = {"n": n, "gpu_workers": len(ids), "nchunks": k, "tasks": k * (k + 1) // 2,
           "generate_s": made, "budget_bytes": budget.DEFAULT_BUDGET}
    print(f"  made in {made:.1f} s; cluster of {len(ids)} GPU worker(s), {k} chunks "
          f"({out['tasks']} tasks)", flush=True)
    t0 = time.perf_counter()
    client = sd.local_cluster(gpus=ids, cpu_workers=0, dashboard_address=":0")
    out["cluster_start_s"] = time.perf_counter() - t0
    try:
        sd.pair_counts(ra[:1000], dec[:1000], bins=bins, client=client, nchunks=2)  # compile
        client.run(_pool_reset)
        t0 = time.perf_counter()
        got = sd.pair_counts(ra, dec, bins=bins, client=client, nchunks=k, progress=True)
        out["seconds"] = time.perf_counter() - t0
        out["cupy_pool_peak_bytes"] = client.run(_pool_total)
        print(f"\n  {n:,} points over {len(ids)} GPU(s): {out['seconds']:.1f} s", flush=True)
        m = min(check_m, n)
        sub = sd.pair_counts(ra[:m], dec[:m], bins=bins, client=client, nchunks=k)
    finally:
        client.close()
        client.cluster.close()
    cpu = pair_counts(ra[:m], dec[:m], bins=bins, backend="cpu")
    out["subsample_check"] = {"points": m, "counts_equal_cpu": bool(np.array_equal(
        sub.counts, cpu.counts))}
    mean, spread = uniform_rr_expected(n, bins)
    out["pairs_in_bins"] = int(got.counts.sum())
    out["counts"] = got.counts.tolist()
    # a sanity check of the whole count, which has no exact twin at this size: chance moves
    # each bin by about one standard deviation, a lost or doubled chunk pair by hundreds
    out["max_abs_sd_from_uniform_expectation"] = float(np.max(np.abs(got.counts - mean)
                                                             / spread))
    print(f"  subsample of {m:,} equal to the CPU backend: "
          f"{out['subsample_check']['counts_equal_cpu']}; counts within "
          f"{out['max_abs_sd_from_uniform_expectation']:.1f} standard deviations of the uniform "
          "expectation", flush=True)
    return out


def scale(args):
    """RR of ``--scale-n`` uniform full-sky randoms, 20 log bins 0.01-10 deg, whole call from
    NumPy: one GPU (and its device memory against the budget), ``--scale-gpus`` GPUs over
    sphgpu.distributed; equality with a chunked CPU count, cross counts and mean separations
    on a subsample; TreeCorr with its default bin_slop on the whole catalog (or a lower bound)
    and exact (scaled from a subsample), all host threads; ``--scale-cluster-n`` points over a
    cluster of every visible GPU. Writes tpacf_scale.json after each part."""
    import cupy
    from numba import cuda

    from sphgpu.tpacf import AngularBins, budget, pair_counts
    from sphgpu.tpacf.mocks import uniform_randoms

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    full_sky = (0.0, 360.0, -90.0, 90.0)
    n = args.scale_n
    ra, dec = uniform_randoms(n, full_sky, seed=21)
    threads = os.cpu_count()
    out = {"machine": machine_info(), "n": n, "host_threads": threads,
           "bins": "20 log bins 0.01-10 deg", "budget_bytes": budget.DEFAULT_BUDGET}
    os.makedirs(args.out, exist_ok=True)

    def save():
        with open(os.path.join(args.out, "tpacf_scale.json"), "w") as f:
            json.dump(out, f, indent=1)
    print(json.dumps(out["machine"]), flush=True)
    _warm(bins)
    sync = cuda.synchronize
    # one GPU, whole call from NumPy; device memory: CuPy's pool high-water mark plus the
    # Numba arrays of the plan (items, histograms), which budget.plan_bytes counts
    pool = _device_pool()
    t0 = time.perf_counter()
    rr = pair_counts(ra, dec, bins=bins, backend="cuda")
    sync()
    first = time.perf_counter() - t0
    out["one_gpu"] = {"first_call_s": first, "cupy_pool_peak_bytes": int(pool.total_bytes()),
                      "pairs_in_bins": int(rr.counts.sum()),
                      "pairs_compared": rr.pairs_compared}
    out["one_gpu"]["whole_call"] = time_call(lambda: pair_counts(ra, dec, bins=bins,
                                                                 backend="cuda"),
                                             repeat=3, warmup=0, sync=sync).as_dict()
    print(f"RR {n:,} on one GPU: {out['one_gpu']['whole_call']['median_s']:.3f} s (first "
          f"{first:.3f} s), CuPy pool peak {pool.total_bytes() / 2**30:.2f} GiB, budget "
          f"{budget.DEFAULT_BUDGET / 2**30:.0f} GiB", flush=True)
    # the same count under a budget of 1 GiB: made in parts, the same counts
    pool = _device_pool()
    small = 2**30 if n * budget.POINT_BYTES < 2**29 else 2 * n * budget.POINT_BYTES
    splits = []          # the count's messages when it goes over its budget and splits
    t0 = time.perf_counter()
    parts = pair_counts(ra, dec, bins=bins, backend="cuda", max_device_bytes=small,
                        progress=splits.append)
    sync()
    out["one_gpu_small_budget"] = {"budget_bytes": small, "seconds": time.perf_counter() - t0,
                                   "splits": len(splits), "split_messages": splits[:4],
                                   "cupy_pool_peak_bytes": int(pool.total_bytes()),
                                   "cupy_pool_within_budget": pool.total_bytes() <= small,
                                   "equal": bool(np.array_equal(parts.counts, rr.counts))}
    out["one_gpu"]["cupy_pool_within_budget"] = (out["one_gpu"]["cupy_pool_peak_bytes"]
                                                 <= budget.DEFAULT_BUDGET)
    print(f"  under a {small / 2**30:.2f} GiB budget: {out['one_gpu_small_budget']}",
          flush=True)
    assert out["one_gpu_small_budget"]["equal"], "budgeted count differs"
    for g in args.scale_gpus:
        if g > 1:
            out[f"{g}_gpus"] = _scale_distributed(g, ra, dec, bins, rr)
    # correctness on a subsample: GPU against a chunked CPU count (a budget that splits it),
    # auto and cross, with mean separations
    m = args.scale_check
    rb, db = uniform_randoms(m, full_sky, seed=22)
    chk = {}
    for label, a in (("auto", (ra[:m], dec[:m])), ("cross", (ra[:m], dec[:m], rb, db))):
        g = pair_counts(*a, bins=bins, backend="cuda", mean_theta=True)
        c = pair_counts(*a, bins=bins, backend="cpu", mean_theta=True,
                        max_device_bytes=budget.POINT_BYTES * 2 * m + 2**20)
        rel = np.nanmax(np.abs(g.mean_theta - c.mean_theta) / c.mean_theta)
        chk[label] = {"counts_equal": bool(np.array_equal(g.counts, c.counts)),
                      "mean_theta_max_rel_diff": float(rel), "pairs": int(g.counts.sum())}
        assert chk[label]["counts_equal"] and rel < 1e-10, (label, chk[label])
    out["subsample_check"] = {"points": m, **chk}
    print(f"  subsample of {m:,}: {chk}", flush=True)
    save()
    if not args.no_treecorr:
        _scale_treecorr(out, ra, dec, bins, rr, args.treecorr_limit, args.treecorr_exact_limit)
        save()
    cupy.get_default_memory_pool().free_all_blocks()
    if args.scale_cluster_n:
        out["cluster"] = _scale_cluster(args.scale_cluster_n, bins, args.scale_check)
        save()
        assert out["cluster"].get("subsample_check", {}).get("counts_equal_cpu", True), \
            "distributed subsample counts differ from the CPU backend's"
    print(scale_table(out))
    return out


def _scale_treecorr(out, ra, dec, bins, rr, limit_s, exact_limit_s, backend="cuda"):
    """TreeCorr's RR of the whole catalog with its default bin_slop (killed after ``limit_s``:
    then a lower bound) and exact (scaled from a subsample within ``exact_limit_s``), on all
    host threads, into ``out``: each against sphgpu's one-GPU whole call (out["one_gpu"]) and
    its exact counts ``rr``; the exact subsample's counts against ``backend``'s."""
    import tempfile

    from sphgpu.tpacf import pair_counts

    n, threads = ra.size, out["host_threads"]
    ours = out["one_gpu"]["whole_call"]["median_s"]
    out["treecorr_note"] = ("TreeCorr seconds = Catalog build (build_s) + process() (process_s, "
                            "which builds its tree), in a child process on all host threads; "
                            "against sphgpu's one-GPU whole call from NumPy")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "randoms.npz")
        np.savez(path, ra=ra, dec=dec)
        print(f"TreeCorr default bin_slop on all {n:,} points, {threads} threads, limit "
              f"{limit_s:g} s ...", flush=True)
        t = treecorr_run(path, n, bins, None, threads, limit_s)
        if t["finished"]:
            got, want = np.array(t["npairs"]), rr.counts
            has = want > 0
            # TreeCorr's approximation moves pairs between bins: how far from the exact counts
            t["max_rel_count_diff_vs_exact"] = float(np.max(np.abs(got - want)[has]
                                                            / want[has]))
            t["speedup_of_sphgpu_one_gpu"] = t["seconds"] / ours
        elif "lower_bound_s" in t:
            t["speedup_of_sphgpu_one_gpu_lower_bound"] = t["lower_bound_s"] / ours
        out["treecorr_default_bin_slop"] = t
        print("  " + _treecorr_line("default bin_slop", t, ours), flush=True)
        print(f"TreeCorr exact (bin_slop=0), subsamples within {exact_limit_s:g} s ...",
              flush=True)
        t = treecorr_exact_scaled(path, n, bins, threads, exact_limit_s)
    if t["seconds"] is not None:
        t["speedup_of_sphgpu_one_gpu"] = t["seconds"] / ours
        m = t["measured_points"]
        sub = pair_counts(ra[:m], dec[:m], bins=bins, backend=backend)
        t["count_diff_of_measured_vs_sphgpu"] = (np.array(t["npairs_of_measured"])
                                                 - sub.counts).tolist()
    out["treecorr_exact"] = t
    print("  " + _treecorr_line("exact", t, ours), flush=True)


def _treecorr_line(label, t, ours):
    """One line on a TreeCorr row of the scale table: seconds (Catalog build + process()),
    what kind of number it is, and sphgpu's one-GPU speedup over it."""
    if t.get("seconds") is None:
        if "lower_bound_s" in t:
            return (f"TreeCorr {label}: > {t['lower_bound_s']:.1f} s, LOWER BOUND (killed at the "
                    f"{t['limit_s']:g} s limit); speedup > {t['lower_bound_s'] / ours:.3g}x "
                    "(lower bound)")
        return f"TreeCorr {label}: no result ({t.get('error') or t.get('note')})"
    if t.get("scaled"):
        line = (f"TreeCorr {label}: {t['seconds']:.1f} s, SCALED ({t['how']}; measured "
                f"{t['measured_s']:.1f} s); speedup {t['seconds'] / ours:.3g}x (scaled)")
        if "process_exponent" in t:
            line += (f"; process() grew as m^{t['process_exponent']:.2f} between the last two "
                     f"subsamples: scaled by that, {t['seconds_by_exponent']:.1f} s, speedup "
                     f"{t['seconds_by_exponent'] / ours:.3g}x")
        return line
    return (f"TreeCorr {label}: {t['seconds']:.1f} s (Catalog {t['build_s']:.1f} s + process() "
            f"{t['seconds'] - t['build_s']:.1f} s), FULL RUN; speedup {t['seconds'] / ours:.3g}x"
            + (f"; counts differ from the exact ones by up to "
               f"{t['max_rel_count_diff_vs_exact']:.1e} (relative)"
               if "max_rel_count_diff_vs_exact" in t else ""))


def scale_table(out):
    """The scale row as lines of text: every number labelled full run, scaled or lower bound,
    with the GPU and host threads it ran on."""
    m = out["machine"]
    one = out["one_gpu"]
    ours = one["whole_call"]["median_s"]
    lines = [f"Scale: RR of {out['n']:,} uniform full-sky randoms, {out['bins']}, on "
             f"{m.get('gpu')} and {out['host_threads']} host threads",
             f"sphgpu cuda, one GPU, whole call from NumPy: {ours:.2f} s, FULL RUN (median of "
             f"{one['whole_call']['repeats']}; first call {one['first_call_s']:.2f} s), CuPy "
             f"pool peak {one['cupy_pool_peak_bytes'] / 2**30:.2f} GiB"]
    for key, r in out.items():
        if key.endswith("_gpus"):
            lines.append(f"sphgpu.distributed, {key.split('_')[0]} GPUs: "
                         + (f"{r['seconds']:.2f} s, FULL RUN, equal to one GPU: {r['equal']}"
                            if "seconds" in r else f"skipped ({r['skipped']})"))
    for key, label in (("treecorr_default_bin_slop", "default bin_slop"),
                       ("treecorr_exact", "exact")):
        if key in out:
            lines.append(_treecorr_line(label, out[key], ours))
    c = out.get("cluster")
    if c and "seconds" in c:
        peak = ", ".join(f"{v / 2**30:.2f}" for v in c["cupy_pool_peak_bytes"].values())
        lines.append(f"sphgpu.distributed, {c['n']:,} points over {c['gpu_workers']} "
                     f"{m.get('gpu')} worker(s), {c['nchunks']} chunks ({c['tasks']} tasks): "
                     f"{c['seconds']:.1f} s, FULL RUN (one call, cluster start apart); CuPy pool "
                     f"peak per worker {peak} GiB; subsample of {c['subsample_check']['points']:,}"
                     f" equal to the CPU backend: {c['subsample_check']['counts_equal_cpu']}; "
                     f"within {c['max_abs_sd_from_uniform_expectation']:.1f} standard deviations "
                     "of the uniform expectation")
    elif c:
        lines.append(f"cluster row: {c.get('skipped')}")
    return "\n".join(lines)


def _scale_distributed(g, ra, dec, bins, rr):
    """RR over g GPU workers (sphgpu.distributed.pair_counts), whole call from NumPy, each
    worker holding two chunks: seconds and equality with the one-GPU counts."""
    import sphgpu.distributed as sd

    ids = sd.visible_gpus()
    if len(ids) < g:
        print(f"  {g} GPUs: skipped, this machine shows {len(ids)}", flush=True)
        return {"skipped": f"{len(ids)} GPUs visible"}
    client = sd.local_cluster(gpus=ids[:g], cpu_workers=0, dashboard_address=":0")
    try:
        sd.pair_counts(ra[:1000], dec[:1000], bins=bins, client=client)     # warm the workers
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            got = sd.pair_counts(ra, dec, bins=bins, client=client, nchunks=2 * g)
            times.append(time.perf_counter() - t0)
        res = {"seconds": min(times), "all_s": times, "nchunks": 2 * g,
               "equal": bool(np.array_equal(got.counts, rr.counts))}
    finally:
        client.close()
        client.cluster.close()
    print(f"  {g} GPUs: {res}", flush=True)
    assert res["equal"], "distributed counts differ"
    return res


# ------------------------------------------------------- cross-correlation and covariances
def cross_cov(args):
    """Two clustered data sets on the survey footprint with their own randoms: the
    cross-correlation whole call (D1D2, D1R2, R1D2, R1R2 with --cross-regions regions) on the GPU,
    the CPU backend and TreeCorr exact (same patches); then each covariance from those counts,
    against TreeCorr's estimate_cov (values compared, normalization="treecorr")."""
    import treecorr
    from numba import cuda

    from sphgpu.tpacf import AngularBins, Catalog, JackknifeRegions, angular_correlation

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    f = args.cross_fraction
    nd, nr = (round(v * f) for v in SIZES["full"])
    ra1, dec1, rra1, rdec1 = workload("survey", nd, nr, seed=1)
    ra2, dec2, rra2, rdec2 = workload("survey", round(0.7 * nd), nr, seed=5)
    reg = JackknifeRegions.kmeans(rra1, rdec1, args.cross_regions, seed=0)
    cats = [Catalog(a, b, labels=reg.labels(a, b)) for a, b in
            ((ra1, dec1), (rra1, rdec1), (ra2, dec2), (rra2, rdec2))]
    out = {"machine": machine_info(), "n_data": [nd, round(0.7 * nd)], "n_random": nr,
           "regions": args.cross_regions, "rows": {}}

    def ours(backend):
        return angular_correlation(cats[0], cats[1], data2=cats[2], randoms2=cats[3], bins=bins,
                                   jackknife="labels", normalization="treecorr",
                                   backend=backend)
    _warm(bins)
    ours("cuda")
    t = time_call(lambda: ours("cuda"), repeat=3, warmup=0, sync=cuda.synchronize)
    out["rows"]["cross_cuda_whole_call"] = t.as_dict()
    t0 = time.perf_counter()
    res = ours("cpu")
    out["rows"]["cross_cpu_whole_call"] = {"median_s": time.perf_counter() - t0}
    gpu = ours("cuda")
    assert np.array_equal(gpu.dd.counts, res.dd.counts)
    if not args.no_treecorr:
        def tc(c):
            return treecorr.Catalog(ra=c.ra, dec=c.dec, ra_units="deg", dec_units="deg",
                                    patch=c.labels)

        def nn():
            return treecorr.NNCorrelation(min_sep=0.01, max_sep=10, nbins=20, sep_units="deg",
                                          bin_slop=0, metric="Arc",
                                          cross_patch_weight="simple")
        t0 = time.perf_counter()
        tcs = [tc(c) for c in cats]
        dd, dr, rd, rr = nn(), nn(), nn(), nn()
        dd.process(tcs[0], tcs[2])
        dr.process(tcs[0], tcs[3])
        rd.process(tcs[1], tcs[2])
        rr.process(tcs[1], tcs[3])
        dd.calculateXi(rr=rr, dr=dr, rd=rd)
        out["rows"]["cross_treecorr_exact_whole_call"] = {"median_s": time.perf_counter() - t0}
        out["w_max_rel_diff_vs_treecorr"] = float(np.nanmax(np.abs(gpu.w - dd.xi)
                                                            / np.abs(dd.xi)))
        out["counts_equal_treecorr"] = bool(np.array_equal(
            gpu.dd.counts, np.rint(dd.npairs).astype(np.int64)))
    for method in ("jackknife", "sample", "bootstrap", "marked_bootstrap", "shot"):
        t0 = time.perf_counter()
        c = gpu.estimate_cov(method, seed=1)
        row = {"sphgpu_s": time.perf_counter() - t0}
        if not args.no_treecorr:
            dd._rng = np.random.default_rng(1)
            t0 = time.perf_counter()
            want = dd.estimate_cov(method)
            row["treecorr_s"] = time.perf_counter() - t0
            want = np.diag(want) if method == "shot" else want
            # bins without random pairs: NaN here, an arbitrary number in TreeCorr
            ok = np.isfinite(c)
            row["max_rel_diff_vs_treecorr"] = float(np.max(np.abs(c - want)[ok])
                                                    / np.max(np.abs(want)[ok]))
            row["bins_without_randoms"] = int((~ok).sum())
        out["rows"][f"cov_{method}"] = row
    print(json.dumps(out["rows"], indent=1), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "tpacf_cross_cov.json"), "w") as f:
        json.dump(out, f, indent=1)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--quick", action="store_true",
                   help="small catalogs: the correctness checks in seconds")
    p.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0],
                   help="survey catalogs scaled by these fractions (pairs by their squares)")
    p.add_argument("--no-quarter", action="store_true",
                   help="skip the quarter-sky footprint (full size) of earlier tables")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--no-treecorr", action="store_true", help="skip TreeCorr")
    p.add_argument("--sweep", action="store_true", help="also sweep launch parameters")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    p.add_argument("--scale", action="store_true",
                   help="only the scale row: RR of --scale-n full-sky randoms")
    p.add_argument("--scale-n", type=int, default=10_000_000)
    p.add_argument("--scale-gpus", type=int, nargs="+", default=[1, 4])
    p.add_argument("--scale-check", type=int, default=200_000,
                   help="subsample checked against a chunked CPU count")
    p.add_argument("--treecorr-limit", type=float, default=240.0,
                   help="seconds of wall clock for TreeCorr's default-bin_slop run on the whole "
                        "scale catalog (a child process, killed then: a lower bound)")
    p.add_argument("--treecorr-exact-limit", type=float, default=60.0,
                   help="seconds of wall clock for all TreeCorr exact subsample runs together "
                        "(the largest that finishes is scaled to the whole catalog)")
    p.add_argument("--scale-cluster-n", type=int, default=0,
                   help="also RR of this many full-sky randoms over a sphgpu.distributed "
                        "cluster of every visible GPU (0: skip)")
    p.add_argument("--cross-cov", action="store_true",
                   help="only the cross-correlation and covariance rows")
    p.add_argument("--cross-fraction", type=float, default=0.25,
                   help="survey sizes scaled by this for the cross/covariance rows")
    p.add_argument("--cross-regions", type=int, default=50,
                   help="k-means regions (patches) of the cross/covariance rows")
    args = p.parse_args()
    if args.scale:
        scale(args)
        return 0
    if args.cross_cov:
        cross_cov(args)
        return 0
    if args.replot:
        with open(args.replot) as f:
            result = json.load(f)
        plot(result, os.path.join(os.path.dirname(args.replot), "tpacf_speed.png"))
        print(table(result))
        return 0
    os.makedirs(args.out, exist_ok=True)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
