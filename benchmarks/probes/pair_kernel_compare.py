"""The pair-count kernel of two source trees in the same run: whole public calls from NumPy
arrays and the kernel alone (Catalogs prepared before), with the counts of both compared.

Each tree runs in its own fresh processes (alternating, ``--rounds`` of them), so the first
call of a process (kernel compilation or the disk cache) is reported apart.

Cases (every count exact, float32 mode unless named):
  rr7     RR of 10^7 full-sky randoms, 20 log bins 0.01-10 deg (auto)
  des     10^7 uniform points over a 4961 deg^2 footprint, 20 log bins 2.5'-250', 100 patch
          labels (auto, jackknife)
  dr_w    DR of 3x10^6 x 3x10^6 weighted points over the same footprint
  rr_f64  RR of 3x10^6 full-sky randoms in float64 mode

``--sweep`` instead times the kernel alone in this tree for each variant of the kernel's
compile-time choices (``_cuda.LOOKUP``, ``_cuda.JPAIR``), with its registers a thread.

Run on the GPU machine:
  python benchmarks/probes/pair_kernel_compare.py --trees before=DIR after=. --out OUT.json
  python benchmarks/probes/pair_kernel_compare.py --sweep --out OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

FULL_SKY = (0.0, 360.0, -90.0, 90.0)
FOOTPRINT = (0.0, 100.0, -60.0, 0.0)
CASES = ("rr7", "des", "dr_w", "rr_f64")


def _case(name):
    """(args, kwargs) of pair_counts for one case."""
    from sphgpu.tpacf import AngularBins
    from sphgpu.tpacf.mocks import uniform_randoms

    deg = AngularBins.log(0.01, 10, 20, unit="deg")
    if name == "rr7":
        ra, dec = uniform_randoms(10_000_000, FULL_SKY, seed=31)
        return (ra, dec), dict(bins=deg)
    if name == "des":
        ra, dec = uniform_randoms(10_000_000, FOOTPRINT, seed=41)
        lab = (np.floor(ra / 10.0) * 10 + np.floor((dec + 60.0) / 6.0)).astype(np.int64)
        return (ra, dec), dict(bins=AngularBins.log(2.5, 250, 20, unit="arcmin"),
                               labels1=np.clip(lab, 0, 99))
    if name == "dr_w":
        ra, dec = uniform_randoms(3_000_000, FOOTPRINT, seed=43)
        ra2, dec2 = uniform_randoms(3_000_000, FOOTPRINT, seed=44)
        rng = np.random.default_rng(5)
        return (ra, dec, ra2, dec2), dict(bins=AngularBins.log(2.5, 250, 20, unit="arcmin"),
                                          weights1=rng.uniform(0.5, 2, ra.size),
                                          weights2=rng.uniform(0.5, 2, ra2.size))
    if name == "rr_f64":
        ra, dec = uniform_randoms(3_000_000, FULL_SKY, seed=32)
        return (ra, dec), dict(bins=deg, precision="float64")
    raise ValueError(name)


def _catalogs(args, kw):
    """The case's Catalogs (prepared on the first count, then kept)."""
    from sphgpu.tpacf import Catalog

    return [Catalog(args[k], args[k + 1], copy=False,
                    weights=kw.get("weights1" if k == 0 else "weights2"),
                    labels=kw.get("labels1")) for k in range(0, len(args), 2)]


def _kernel_only(cats, kw):
    """(RawCounts, seconds of the kernel alone) of the cuda backend on prepared Catalogs."""
    from sphgpu.tpacf import _cuda

    prof = {}
    res = _cuda.count_pairs(cats[0], cats[1] if len(cats) > 1 else None, kw["bins"],
                            n_regions=100 if "labels1" in kw else 0, weighted="weights1" in kw,
                            precision=kw.get("precision", "float32"), profile=prof)
    return res, prof["kernel"]


def worker(cases, repeat):
    """Run in a fresh process of one tree: print one JSON line of results."""
    from numba import cuda

    from sphgpu.tpacf import pair_counts

    out = {}
    for name in cases:
        args, kw = _case(name)
        call = lambda: pair_counts(*args, backend="cuda", **kw)  # noqa: E731
        t0 = time.perf_counter()
        res = call()
        cuda.synchronize()
        first = time.perf_counter() - t0
        whole = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            call()
            cuda.synchronize()
            whole.append(time.perf_counter() - t0)
        cats = _catalogs(args, kw)
        kern = []
        for _ in range(repeat):
            kern.append(_kernel_only(cats, kw)[1])
        out[name] = dict(first_s=first, whole_s=float(np.median(whole)), whole_all_s=whole,
                         kernel_s=float(np.median(kern)), kernel_all_s=kern,
                         counts=[int(c) for c in res.counts],
                         patch_counts_sum=(int(np.asarray(res.patch_counts).sum())
                                           if getattr(res, "patch_counts", None) is not None
                                           else None),
                         pairs_compared=int(getattr(res, "pairs_compared", 0) or 0))
    print("RESULT " + json.dumps(out), flush=True)


def sweep(cases, repeat):
    """Kernel-alone seconds of every (lookup, jpair) variant on each case, counts compared."""
    from sphgpu.tpacf import _cuda

    out = {}
    for name in cases:
        args, kw = _case(name)
        cats = _catalogs(args, kw)
        ref = None
        for lookup in (False, True):
            for jpair in (1, 2):
                _cuda.LOOKUP, _cuda.JPAIR = lookup, jpair
                times = []
                for _ in range(repeat + 1):
                    res, seconds = _kernel_only(cats, kw)
                    times.append(seconds)
                ref = res.counts if ref is None else ref
                key = f"lookup={lookup} jpair={jpair}"
                out.setdefault(name, {})[key] = dict(
                    kernel_s=float(np.min(times[1:])), first_s=times[0],
                    equal=bool(np.array_equal(res.counts, ref)),
                    compared_per_s=res.pairs_compared / float(np.min(times[1:])))
                print(f"{name:7s} {key:22s} kernel {np.min(times[1:]):7.3f} s "
                      f"{res.pairs_compared / np.min(times[1:]) / 1e9:7.1f} G/s "
                      f"equal {out[name][key]['equal']}", flush=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", nargs="+", help="name=DIR ...")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.cases, args.repeat)
        return
    from sphgpu.bench import machine_info

    if args.sweep:
        res = sweep(args.cases, args.repeat)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(dict(machine=machine_info(), sweep=res, repeat=args.repeat,
                               date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())),
                          f, indent=1)
        return
    trees = dict(t.split("=", 1) for t in args.trees)
    runs = {name: [] for name in trees}
    for r in range(args.rounds):
        for name, path in trees.items():
            # the tree first: its sphgpu shadows any other on the path
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [os.path.abspath(path)] + [q for q in [os.environ.get("PYTHONPATH")] if q]))
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--trees", "x=x",
                   "--repeat", str(args.repeat), "--cases", *args.cases]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode or not line:
                print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"tree {name} round {r} failed")
            res = json.loads(line[0][7:])
            runs[name].append(res)
            for case, v in res.items():
                print(f"round {r} {name:8s} {case:7s} first {v['first_s']:7.3f} s  "
                      f"whole {v['whole_s']:7.3f} s  kernel {v['kernel_s']:7.3f} s  "
                      f"{v['pairs_compared'] / v['kernel_s'] / 1e9:8.1f} G compared/s",
                      flush=True)
    names = list(trees)
    summary = {}
    for case in args.cases:
        ref = runs[names[0]][0][case]
        summary[case] = dict(
            counts_equal=all(run[case]["counts"] == ref["counts"]
                             and run[case]["patch_counts_sum"] == ref["patch_counts_sum"]
                             for n in names for run in runs[n]),
            **{n: dict(kernel_s=min(run[case]["kernel_s"] for run in runs[n]),
                       whole_s=min(run[case]["whole_s"] for run in runs[n]),
                       first_s=[run[case]["first_s"] for run in runs[n]])
               for n in names})
        print(case, json.dumps(summary[case]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(machine=machine_info(), trees=trees, rounds=args.rounds,
                           repeat=args.repeat, summary=summary, runs=runs,
                           date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())),
                      f, indent=1)


if __name__ == "__main__":
    main()
