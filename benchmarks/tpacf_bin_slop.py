"""Approximate pair counts (``bin_slop``): sphgpu against its exact counts and TreeCorr's
default bin_slop.

The approximate mode runs on the cpu backend; "cuda" counts exactly whatever the slop (its
exact kernel beat an approximate one, see sphgpu.tpacf.pair_counts), so on the GPU machine
this compares the GPU's exact count with TreeCorr's approximate one and the host's
approximate one (--backend cpu):
    python benchmarks/tpacf_bin_slop.py --out benchmarks/results
Small CPU run (a minute; 2x10^4 and 6x10^4 points on a 20 x 20 degree patch, dense enough
for cells to be counted at once, where the same numbers over the full sky are counted exactly):
    python benchmarks/tpacf_bin_slop.py --quick --backend cpu --out /tmp/bin_slop
On a node of 4 GPUs, the exact count also over the 4 GPUs (Dask):
    python benchmarks/tpacf_bin_slop.py --gpus 4 --sizes 10000000 100000000 --no-fresh \
        --out benchmarks/results/tpacf_bin_slop_4gpu

Workload: n uniform random points over the full sky (10^6, 10^7, 10^8 by default), an auto
count (RR) in 20 log bins from 2.5 to 250 arcmin.

What is timed (whole calls from NumPy arrays, as a user makes them):
  * sphgpu ``pair_counts(ra, dec, bins=..., backend=B, bin_slop=s)`` for each s of --slops
    (0 is the exact count): up to --fresh-max points, the first call in a fresh process apart
    (import, then the first call, then a second one; subprocesses reading the catalog from an
    .npy file); then in this process the first call (``first_s``) and the median of up to
    --repeat more (fewer once they pass --max-seconds);
  * TreeCorr's ``NNCorrelation`` with its default bin_slop (metric "Arc", all host threads,
    --treecorr-threads), Catalog built inside the timing, at sizes up to --treecorr-max.
  * with --gpus N: the same exact count through ``sphgpu.distributed.pair_counts`` on a fresh
    local cluster of N GPU workers (one per GPU, started before the first size), the first
    call on the cluster apart; its counts must equal the one-GPU exact counts as integers.
Accuracy: for every approximate count, the largest relative difference per bin from sphgpu's
exact count (bins with pairs), and the fraction of pairs counted at once; the same for
TreeCorr's counts. Writes tpacf_bin_slop.json and tpacf_bin_slop.png under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from sphgpu.bench import machine_info

BINS = dict(theta_min=2.5, theta_max=250.0, nbins=20, unit="arcmin")
SIZES = {"full": [10**6, 10**7, 10**8], "quick": [20_000, 60_000]}
BOXES = {"full": (0.0, 360.0, -90.0, 90.0), "quick": (0.0, 20.0, 0.0, 20.0)}

FRESH = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from sphgpu.tpacf import AngularBins, pair_counts
t1 = time.perf_counter()
path, backend, s, b = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])
x = np.load(path)
bins = AngularBins.log(b["theta_min"], b["theta_max"], b["nbins"], unit=b["unit"])
runs = []
for _ in range(2):
    t = time.perf_counter()
    pair_counts(x[0], x[1], bins=bins, backend=backend, bin_slop=s)
    runs.append(time.perf_counter() - t)
print(json.dumps({"import_s": t1 - t0, "first_s": runs[0], "second_s": runs[1]}))
"""


def catalog(n, box, seed=1):
    """(ra, dec) of n points uniform in an RA/Dec box (degrees), degrees."""
    from sphgpu.tpacf.mocks import uniform_randoms

    return uniform_randoms(n, box, seed=seed)


def max_rel(counts, exact):
    """Largest |counts / exact - 1| over the bins with exact pairs."""
    c, e = np.asarray(counts, float), np.asarray(exact, float)
    keep = e > 0
    return float(np.max(np.abs(c[keep] / e[keep] - 1.0))) if keep.any() else 0.0


def fresh_process(path, backend, s):
    """Import, first and second call of one count in a fresh process (seconds)."""
    p = subprocess.run([sys.executable, "-c", FRESH, path, backend, str(s), json.dumps(BINS)],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def treecorr_run(ra, dec, threads):
    """TreeCorr's default-bin_slop auto count, whole call: (seconds, npairs, its bin_slop)."""
    import treecorr

    t = time.perf_counter()
    nn = treecorr.NNCorrelation(min_sep=BINS["theta_min"], max_sep=BINS["theta_max"],
                                nbins=BINS["nbins"], sep_units=BINS["unit"], metric="Arc",
                                bin_type="Log")
    nn.process(treecorr.Catalog(ra=ra, dec=dec, ra_units="deg", dec_units="deg"),
               num_threads=threads)
    return time.perf_counter() - t, nn.npairs.tolist(), float(nn.bin_slop)


def dask_client(args):
    """A fresh cluster of --gpus GPU workers (or --gpus CPU workers with --backend cpu), or
    None without --gpus."""
    if not args.gpus:
        return None
    import sphgpu.distributed as sd

    if args.backend == "cpu":
        return sd.local_cluster(gpus=0, cpu_workers=args.gpus, threads_per_worker=1,
                                dashboard_address=":0")
    ids = sd.visible_gpus()
    if len(ids) < args.gpus:
        raise SystemExit(f"--gpus {args.gpus}: this machine shows {len(ids)} GPUs")
    return sd.local_cluster(gpus=ids[:args.gpus], cpu_workers=0, dashboard_address=":0")


def dask_entry(client, args, ra, dec, bins, exact):
    """The exact count over the cluster: first call, median of --repeat more, equality."""
    import sphgpu.distributed as sd

    seconds = []
    while len(seconds) < 1 + args.repeat and (len(seconds) < 2
                                              or sum(seconds[1:]) < args.max_seconds):
        t0 = time.perf_counter()
        pc = sd.pair_counts(ra, dec, bins=bins, backend=args.backend, client=client)
        seconds.append(time.perf_counter() - t0)
    return {"workers": args.gpus, "first_s": seconds[0],
            "median_s": float(np.median(seconds[1:] or seconds)), "seconds": seconds[1:],
            "counts_equal": bool(np.array_equal(pc.counts, exact))}


def run(args):
    from sphgpu.tpacf import AngularBins, pair_counts

    bins = AngularBins.log(BINS["theta_min"], BINS["theta_max"], BINS["nbins"],
                           unit=BINS["unit"])
    sizes = args.sizes or SIZES["quick" if args.quick else "full"]
    box = BOXES["quick" if args.quick else "full"]
    out = {"machine": machine_info(), "backend": args.backend, "bins": BINS, "box_deg": box,
           "slops": args.slops, "treecorr_threads": args.treecorr_threads,
           "treecorr_max": args.treecorr_max, "rows": []}
    print(json.dumps(out["machine"]), flush=True)
    tmp = tempfile.mkdtemp(prefix="bin_slop_")
    t0 = time.perf_counter()
    client = dask_client(args)
    if client is not None:
        out["dask_workers"] = args.gpus
        out["cluster_start_s"] = time.perf_counter() - t0
    for n in sizes:
        ra, dec = catalog(n, box)
        path = os.path.join(tmp, f"cat_{n}.npy")
        np.save(path, np.stack([ra, dec]))
        row = {"n": n, "sphgpu": [], "treecorr": None}
        exact = None
        for s in args.slops:
            fresh = (fresh_process(path, args.backend, s)
                     if not args.no_fresh and n <= args.fresh_max else None)
            seconds = []
            while len(seconds) < 1 + args.repeat and (len(seconds) < 2
                                                      or sum(seconds[1:]) < args.max_seconds):
                t0 = time.perf_counter()
                pc = pair_counts(ra, dec, bins=bins, backend=args.backend, bin_slop=s)
                seconds.append(time.perf_counter() - t0)
            if s == 0:
                exact = pc.counts
            entry = {"bin_slop": s, "first_s": seconds[0],
                     "median_s": float(np.median(seconds[1:] or seconds)),
                     "seconds": seconds[1:], "fresh_process": fresh,
                     "counts": pc.counts.tolist(),
                     "pairs_at_once_fraction": pc.pairs_at_once / max(1, int(pc.counts.sum()))}
            row["sphgpu"].append(entry)
            print(f"n={n:>11,} sphgpu {args.backend} bin_slop={s:<4}: {entry['median_s']:9.3f} s"
                  f" (first in this process {seconds[0]:.3f} s; at once "
                  f"{entry['pairs_at_once_fraction']:.3f})", flush=True)
        if exact is not None:
            for entry in row["sphgpu"]:
                entry["max_rel_diff"] = max_rel(entry["counts"], exact)
        if client is not None:
            row["dask"] = d = dask_entry(client, args, ra, dec, bins, exact)
            print(f"n={n:>11,} sphgpu.distributed, {args.gpus} workers: {d['median_s']:9.3f} s "
                  f"(first on the cluster {d['first_s']:.3f} s); counts equal: "
                  f"{d['counts_equal']}", flush=True)
        if not args.no_treecorr and n <= args.treecorr_max:
            try:
                secs, npairs, slop = treecorr_run(ra, dec, args.treecorr_threads)
                row["treecorr"] = {"seconds": secs, "npairs": npairs, "bin_slop": slop,
                                   "max_rel_diff": (None if exact is None
                                                    else max_rel(npairs, exact))}
                print(f"n={n:>11,} TreeCorr default bin_slop ({slop:.3f}), "
                      f"{args.treecorr_threads} threads: {secs:9.3f} s", flush=True)
            except ImportError:
                row["treecorr"] = {"error": "treecorr is not installed"}
        os.remove(path)
        out["rows"].append(row)
        write(out, args.out)
    os.rmdir(tmp)
    if client is not None:
        client.shutdown()
        client.close()
    return out


def write(out, where):
    """tpacf_bin_slop.json and its plot under ``where``."""
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, "tpacf_bin_slop.json"), "w") as f:
        json.dump(out, f, indent=1)
    plot(out, where)


def plot(out, where):
    """tpacf_bin_slop.png under ``where`` (skipped, said, where matplotlib is missing;
    ``--replot`` draws it from the JSON elsewhere)."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing: no plot (redraw it with --replot)", flush=True)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ns = [r["n"] for r in out["rows"]]
    for k, s in enumerate(out["slops"]):
        ts = [r["sphgpu"][k]["median_s"] for r in out["rows"]]
        ax.loglog(ns, ts, "o-", label=f"sphgpu {out['backend']}, bin_slop={s}"
                  + (" (exact)" if s == 0 else ""))
    tc = [(r["n"], r["treecorr"]["seconds"]) for r in out["rows"]
          if r["treecorr"] and "seconds" in r["treecorr"]]
    if tc:
        ax.loglog(*zip(*tc), "s--k", label=f"TreeCorr default bin_slop, "
                  f"{out['treecorr_threads']} threads")
    dk = [(r["n"], r["dask"]["median_s"]) for r in out["rows"] if r.get("dask")]
    if dk:
        ax.loglog(*zip(*dk), "^-", label=f"sphgpu.distributed exact, {out['dask_workers']} "
                  f"{'GPU' if out['backend'] == 'cuda' else 'CPU'} workers")
    ax.set_xlabel(f"points (RA/Dec box {out['box_deg']}, auto count)")
    ax.set_ylabel("seconds a call (median)")
    m = out["machine"]
    ax.set_title(f"20 log bins 2.5'-250'; {m.get('host')}, GPU: {m.get('gpu')}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(where, "tpacf_bin_slop.png"), dpi=100)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="benchmarks/results", help="folder of the JSON and plot")
    p.add_argument("--backend", default="cuda", help="sphgpu backend (default cuda)")
    p.add_argument("--quick", action="store_true", help="small sizes (CPU, seconds)")
    p.add_argument("--sizes", type=int, nargs="+", help="numbers of points (overrides)")
    p.add_argument("--slops", type=float, nargs="+", default=[0.0, 0.1, 1.0],
                   help="bin_slop values; 0 is the exact count the others are compared with")
    p.add_argument("--repeat", type=int, default=2,
                   help="timed calls after the first one, at most")
    p.add_argument("--max-seconds", type=float, default=60.0,
                   help="stop repeating once the calls after the first pass this")
    p.add_argument("--fresh-max", type=int, default=10**7,
                   help="largest n timed in fresh processes too (each costs two calls)")
    p.add_argument("--treecorr-max", type=int, default=10**8,
                   help="largest n TreeCorr runs at (its time grows fastest)")
    p.add_argument("--treecorr-threads", type=int, default=os.cpu_count(),
                   help="TreeCorr threads (default: all host cores)")
    p.add_argument("--no-treecorr", action="store_true")
    p.add_argument("--no-fresh", action="store_true", help="skip the fresh-process calls")
    p.add_argument("--gpus", type=int, default=0,
                   help="also count exactly over a fresh Dask cluster of this many workers "
                        "(GPU workers; CPU workers with --backend cpu)")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    args = p.parse_args(argv)
    if args.replot:
        with open(args.replot) as f:
            os.makedirs(args.out, exist_ok=True)
            plot(json.load(f), args.out)
        return
    if 0.0 not in args.slops:
        args.slops = [0.0] + args.slops
    if args.backend != "cpu":
        # only the cpu backend approximates: any other slop would time the exact count again
        print(f"backend {args.backend!r} counts exactly whatever the slop: timing bin_slop=0 "
              "only", flush=True)
        args.slops = [0.0]
    run(args)


if __name__ == "__main__":
    main()
