"""Two checkouts' public transforms, timed in the same run: results and speed before and after
a change.

Each tree is imported in fresh processes of its own (``PYTHONPATH``), one after the other, the
trees alternating (``--rounds`` processes each), so that a drift of the machine falls on both.
A process times, on device arrays (CuPy) at ``--nside`` with lmax = 2 nside, the public calls a
user makes: ``alm2map`` and ``map2alm`` (iter 0) of one map and of a batch of ``--batch`` maps,
the polarized pair (T, E, B <-> I, Q, U), one set and a batch of ``--batch // 2`` sets (times
per set), and ``alm2map_spin``/``map2alm_spin`` with spin 2,
medians of ``--repeat`` after a warm-up, synchronized. With ``--more`` it also times
``sphgpu.convolve.convolve`` (a split at fixed cuts, a Gaussian kernel of 10', from device and
from NumPy maps) and a temperature ``MonteCarlo.run`` (beam, noise, apodized cut; milliseconds a
simulation after a warm-up run). For the batch it also measures the host
time of a call: how long ``alm2map`` holds the calling thread before returning (the device may
still be working), which is all a reused transform should cost the host beyond its launches.

Every output is summarised (its sum of squares and 4096 values at fixed places) and the trees'
summaries compared: ``max_rel_diff`` 0 means the two give the same numbers bit for bit there.

    python benchmarks/sht_compare.py --tree before=/tmp/base --tree after=. --out $OUT
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

SAMPLES = 4096


def _summary(x):
    """Sum of squares and SAMPLES values at fixed places of a device array (as float64 host)."""
    import cupy

    flat = cupy.ascontiguousarray(x).reshape(-1)
    if flat.dtype.kind == "c":
        flat = flat.view(flat.real.dtype)
    idx = cupy.linspace(0, flat.size - 1, SAMPLES).astype(cupy.int64)
    return {"sumsq": float(cupy.sum(flat.astype(cupy.float64) ** 2)),
            "samples": cupy.asnumpy(flat[idx]).astype(np.float64).tolist()}


def child(args):
    """Time this process's sphgpu; print one JSON line."""
    import cupy

    import sphgpu
    from sphgpu.bench import machine_info, time_call

    sync = cupy.cuda.Device().synchronize
    nside, k = args.nside, args.batch
    lmax = 2 * nside
    nalm = sphgpu.AlmLayout(lmax).size
    rng = np.random.default_rng(1)

    def alm(*shape):
        a = rng.standard_normal(shape + (nalm,)) + 1j * rng.standard_normal(shape + (nalm,))
        a[..., : lmax + 1] = a[..., : lmax + 1].real          # m = 0: real
        return cupy.asarray(a)

    kp = max(1, k // 2)                      # polarized batch: sets of (T, E, B)
    a1, ab, apol, aspin, apolb = alm(), alm(k), alm(3), alm(2), alm(kp, 3)
    npix = 12 * nside * nside
    m1 = cupy.asarray(rng.standard_normal(npix))
    mb = cupy.asarray(rng.standard_normal((k, npix)))
    mpol = cupy.asarray(rng.standard_normal((3, npix)))
    mspin = cupy.asarray(rng.standard_normal((2, npix)))
    mpolb = cupy.asarray(rng.standard_normal((kp, 3, npix)))
    calls = {
        "alm2map": lambda: sphgpu.alm2map(a1, nside, lmax, backend="cuda"),
        "map2alm": lambda: sphgpu.map2alm(m1, lmax, iter=0, backend="cuda"),
        "alm2map_batch": lambda: sphgpu.alm2map(ab, nside, lmax, pol=False, backend="cuda"),
        "map2alm_batch": lambda: sphgpu.map2alm(mb, lmax, iter=0, pol=False, backend="cuda"),
        "alm2map_pol": lambda: sphgpu.alm2map(apol, nside, lmax, pol=True, backend="cuda"),
        "map2alm_pol": lambda: sphgpu.map2alm(mpol, lmax, iter=0, pol=True, backend="cuda"),
        "alm2map_pol_batch": lambda: sphgpu.alm2map(apolb, nside, lmax, pol=True,
                                                    backend="cuda"),
        "map2alm_pol_batch": lambda: sphgpu.map2alm(mpolb, lmax, iter=0, pol=True,
                                                    backend="cuda"),
        "alm2map_spin2": lambda: sphgpu.alm2map_spin(aspin, nside, 2, lmax, backend="cuda"),
        "map2alm_spin2": lambda: sphgpu.map2alm_spin(mspin, 2, lmax, backend="cuda"),
    }
    if args.more:
        calls.update(_more_calls(nside, lmax, m1, rng))
    if args.calls:
        calls = {name: calls[name] for name in args.calls}
    out = {"machine": machine_info(), "sphgpu_file": sphgpu.__file__, "ms": {}, "summary": {}}
    for name, fn in calls.items():
        t0 = time.perf_counter()
        result = fn()
        sync()
        out.setdefault("first_s", {})[name] = time.perf_counter() - t0
        out["summary"][name] = _summary(result)
        del result
        per = (kp if "_pol" in name else k) if name.endswith("_batch") else 1
        per = MC_SIMS if name == "montecarlo_T" else per
        repeat = 3 if name == "montecarlo_T" else args.repeat
        out["ms"][name] = time_call(fn, repeat=repeat, sync=sync).median * 1e3 / per
    host = []
    for _ in range(args.repeat if "alm2map_batch" in calls else 0):
        sync()
        t0 = time.perf_counter()
        r = calls["alm2map_batch"]()
        host.append(time.perf_counter() - t0)
        sync()
        del r
    out["host_ms_alm2map_batch_call"] = float(np.median(host)) * 1e3 if host else None
    print("RESULT " + json.dumps(out), flush=True)


#: simulations a timed Monte Carlo run (``--more``)
MC_SIMS = 64


def _more_calls(nside, lmax, m1, rng):
    """The convolution and the Monte Carlo through their public calls (``--more``)."""
    import cupy

    import sphgpu
    from sphgpu.convolve import convolve
    from sphgpu.data import planck2018_cl
    from sphgpu.sims import MonteCarlo, latitude_cut_mask

    arcmin = np.pi / 180 / 60
    beam = sphgpu.gauss_beam(10 * arcmin, lmax=lmax)
    host_map = cupy.asnumpy(m1)
    split = dict(method="split", l_cut=lmax // 4, theta_cut=30 * arcmin, backend="cuda")
    mc = MonteCarlo(planck2018_cl(lmax), nside, lmax, fwhm=5 * arcmin,
                    mask=latitude_cut_mask(nside, 20.0, apodization_deg=5.0), noise_sigma=10.0,
                    seed=1, backend="cuda")

    def montecarlo():
        # a Monte Carlo's result is its spectra (host arrays): summarised as a device array
        return cupy.asarray(mc.run(MC_SIMS, progress=False).spectra)

    return {"convolve_split": lambda: convolve(m1, beam, **split),
            "convolve_split_numpy": lambda: cupy.asarray(convolve(host_map, beam, **split)),
            "montecarlo_T": montecarlo}


def _compare(a, b):
    """Largest relative difference of two summaries' samples (0: equal bit for bit there)."""
    x, y = np.array(a["samples"]), np.array(b["samples"])
    scale = max(np.abs(x).max(), 1e-300)
    return float(np.abs(x - y).max() / scale)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", required=True, metavar="NAME=PATH",
                   help="a checkout to time (give two)")
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--rounds", type=int, default=2, help="processes per tree, alternating")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--name", default="sht_compare.json")
    p.add_argument("--more", action="store_true",
                   help="also time a split convolution and a Monte Carlo run")
    p.add_argument("--calls", nargs="+", metavar="CALL",
                   help="time only these calls (alm2map, map2alm, alm2map_pol, ...)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    trees = dict(t.split("=", 1) for t in args.tree)
    runs = {name: [] for name in trees}
    for r in range(args.rounds):
        for name, path in trees.items():
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [os.path.abspath(path)] + [q for q in env.get("PYTHONPATH", "").split(os.pathsep)
                                           if q and os.path.abspath(q) != os.path.abspath(".")])
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--nside",
                   str(args.nside), "--batch", str(args.batch), "--repeat", str(args.repeat),
                   "--tree", "x=."] + (["--more"] if args.more else [])
            cmd += ["--calls", *args.calls] if args.calls else []
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  cwd=os.path.abspath(path))
            line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
            if done.returncode or not line:
                raise SystemExit(f"{name} round {r} failed:\n{done.stdout[-3000:]}"
                                 f"\n{done.stderr[-3000:]}")
            runs[name].append(json.loads(line[0][7:]))
            print(f"{name} round {r}: " + ", ".join(f"{c} {v:.2f} ms" for c, v in
                                                      runs[name][-1]["ms"].items()), flush=True)
            # written after every process, so that a run cut short keeps what it measured
            result = _result(args, trees, runs)
    for row in result["rows"]:
        print(f"{row['call']:>16}: " + "  ".join(f"{n} {row[n]['ms_median']:8.2f} ms"
                                                 for n in trees if n in row)
              + (f"  ratio {row['ratio']:.3f}  diff {row['max_rel_diff']:.1e}"
                 if "ratio" in row else ""))
    print("host ms per batch call:", result["host_ms_alm2map_batch_call"])


def _result(args, trees, runs):
    """The results file of the processes run so far (trees without a process yet left out of
    the rows), written to --out/--name; returned."""
    names = [n for n in trees if runs[n]]
    first = runs[names[0]][0]
    rows = []
    for c in first["ms"]:
        row = {"call": c}
        for n in names:
            vals = [run["ms"][c] for run in runs[n]]
            row[n] = {"ms_median": float(np.median(vals)), "ms_each_process": vals}
        if len(names) == 2:
            row["ratio"] = row[names[1]]["ms_median"] / row[names[0]]["ms_median"]
            row["max_rel_diff"] = _compare(runs[names[0]][0]["summary"][c],
                                           runs[names[1]][0]["summary"][c])
        rows.append(row)
    result = {"benchmark": "sht_compare", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                time.gmtime()),
              "machine": first["machine"], "nside": args.nside,
              "lmax": 2 * args.nside, "batch": args.batch, "repeat": args.repeat,
              "rounds": args.rounds, "processes": {n: len(runs[n]) for n in trees},
              "trees": trees, "rows": rows,
              "host_ms_alm2map_batch_call": {n: [run["host_ms_alm2map_batch_call"]
                                                 for run in runs[n]] for n in names},
              "first_s": {n: runs[n][0]["first_s"] for n in names}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, args.name), "w") as f:
        json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
