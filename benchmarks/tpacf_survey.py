"""Survey-scale exact pair counts on 1, 2, ... N GPUs of one node through sphgpu.distributed
(issue 42), against the plain one-GPU call without Dask in the same run; whole public calls
from NumPy arrays.

    python benchmarks/tpacf_survey.py --gpus 1 2 4 --out $OUT                  # 4-GPU node
    python benchmarks/tpacf_survey.py --gpus 0 --cpu-workers 2 --quick --out /tmp/s   # CPU
    python benchmarks/tpacf_survey.py --only des --gpus 4 --no-plain --out $OUT   # full DES size
    python benchmarks/tpacf_survey.py --merge A.json B.json --out DIR    # one file of two runs

Workloads (``--only``; ``--quick`` shrinks them to seconds on a CPU):
  des    a DES-Y6-like auto-correlation: --des-n (1.5x10^8) data points and --des-randoms
         (as many) randoms, uniform over a 4961 deg^2 footprint (RA 0-100, Dec -60-0),
         --patches (100) k-means jackknife patches from the randoms, 20 log bins 2.5'-250';
         DD, DR and RR with per-patch counts, then Landy-Szalay w and its jackknife
         covariance (``landy_szalay(..., leave_one_out=True)``, ``jackknife_covariance``).
         The plain call is ``sphgpu.tpacf.pair_counts`` for each term in this process; the
         Dask one ``sphgpu.distributed.pair_counts`` with the same arguments. Counts (per
         patch pair too) must be equal as integers; w and the covariance are compared.
         ``--no-plain`` skips the plain calls, for a size whose one-GPU count would not fit
         the device time at hand: the Dask counts are then timed and not compared
         (``counts_equal`` null; ``plain_skipped`` true in the JSON).
  des-files (with --files DIR) the same catalogs written to DIR as .npy columns and counted
         through ``sphgpu.distributed.CatalogFiles`` (the workers read them; the client never
         holds them), against the same baseline.
  rr7    exact RR of --rr-small (10^7) full-sky randoms, 20 log bins 0.01-10 deg.
  rr8    the same for --rr-large (10^8).
Every timing is a whole public call from NumPy arrays (the catalogs are sent at every call).
The first call of each workload in the process (plain) or on a fresh cluster (Dask: workers
compile from the shared disk caches, prepare, count) is timed apart (``first_s``); then
--repeat calls (--des-repeat for des; median ``seconds``; 0: the first call only). Every
count is given ``max_device_bytes`` = --max-device-gb GiB (96: the catalogs of a DES-like DR,
3x10^8 points, need 23 GB prepared, over the default budget of 8 GiB; in a Dask count it is
each task's budget). The DES-like size is large: its DD holds about 1.2x10^14 pairs within
250' (the script logs the estimate, N^2 / 2 times the cap's share of the footprint), DR twice
that, so on a lent node with little device time give a smaller --des-n. One fresh cluster per
number of workers (``local_cluster(gpus=[...])``, one worker per GPU; ``--gpus 0``:
single-thread CPU workers with the cpu backend). Writes DIR/tpacf_survey.json (machine info,
every timing, whether the counts were equal) after every step and DIR/tpacf_survey.png
(seconds against workers, the plain call dashed); exits 1 when any count differs from the
baseline. ``--merge`` writes one DIR/tpacf_survey.json (and its plot) from the JSONs of
separate runs on one machine kind with different workloads, each run's date, wall time and
``plain_skipped`` kept under ``runs``, so that a device time too short for one call can still
give one table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
from _scaling_common import (add_size_args, add_worker_args, fresh_cluster, free_pool, header,
                            log, results, sizes, sync, workers)

FULL = {"des_n": 150_000_000, "des_randoms": 150_000_000, "patches": 100,
        "rr_small": 10_000_000, "rr_large": 100_000_000, "repeat": 1, "des_repeat": 0,
        "max_device_gb": 96}
QUICK = {"des_n": 20_000, "des_randoms": 20_000, "patches": 100, "rr_small": 20_000,
         "rr_large": 60_000, "repeat": 1, "des_repeat": 1, "max_device_gb": 8}
#: RA 0-100 deg, Dec -60-0 deg: 100 * (pi / 180) * sin(60 deg) sr = 4961 deg^2
FOOTPRINT = (0.0, 100.0, -60.0, 0.0)
FULL_SKY = (0.0, 360.0, -90.0, 90.0)
#: numbers of GPU workers run by default (those the machine has)
GPU_COUNTS = (1, 2, 4, 8)


def _budget(cfg):
    return int(cfg["max_device_gb"] * 2**30)


def _timed(fn, repeat, backend):
    """(first seconds, median of the next ``repeat`` or None, all of them, last result)."""
    t0 = time.perf_counter()
    out = fn()
    sync(backend)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync(backend)
        times.append(time.perf_counter() - t0)
    return first, (statistics.median(times) if times else None), times, out


# ----------------------------------------------------------------------------- inputs
def des_inputs(cfg, log):
    from sphgpu.tpacf import AngularBins, JackknifeRegions
    from sphgpu.tpacf.mocks import uniform_randoms

    t0 = time.perf_counter()
    ra, dec = uniform_randoms(cfg["des_n"], FOOTPRINT, seed=41)
    rra, rdec = uniform_randoms(cfg["des_randoms"], FOOTPRINT, seed=42)
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    regions = JackknifeRegions.kmeans(rra, rdec, cfg["patches"], seed=0)
    lab, rlab = regions.labels(ra, dec), regions.labels(rra, rdec)
    labelled = time.perf_counter() - t0
    log(f"DES-like inputs: {ra.size:.2e} data, {rra.size:.2e} randoms in {made:.1f} s; "
        f"{cfg['patches']} k-means patches in {labelled:.1f} s")
    bins = AngularBins.log(2.5 / 60, 250 / 60, 20, unit="deg")
    # pairs within theta_max if the footprint had no edge: n^2 / 2 times the cap's share
    ra0, ra1, dec0, dec1 = np.radians(FOOTPRINT)
    area = (ra1 - ra0) * (np.sin(dec1) - np.sin(dec0))
    share = 2 * np.pi * (1 - np.cos(bins.theta_max_rad)) / area
    log(f"  about {ra.size ** 2 / 2 * share:.2e} DD pairs within 250', "
        f"{ra.size * rra.size * share:.2e} DR, {rra.size ** 2 / 2 * share:.2e} RR")
    return {"ra": ra, "dec": dec, "lab": lab, "rra": rra, "rdec": rdec, "rlab": rlab,
            "bins": bins,
            "make_s": made, "label_s": labelled}


def rr_inputs(n):
    from sphgpu.tpacf import AngularBins
    from sphgpu.tpacf.mocks import uniform_randoms

    ra, dec = uniform_randoms(n, FULL_SKY, seed=31)
    return {"ra": ra, "dec": dec, "bins": AngularBins.log(0.01, 10, 20, unit="deg")}


# ----------------------------------------------------------------------------- one run
def des_terms(count, d):
    """{"dd", "dr", "rr": callable(**keywords)} counting each term of the DES-like w from the
    NumPy arrays through ``count`` (the plain or the distributed pair_counts, with its
    backend), with per-patch counts."""
    return {"dd": lambda **kw: count(d["ra"], d["dec"], labels1=d["lab"], **kw),
            "dr": lambda **kw: count(d["ra"], d["dec"], d["rra"], d["rdec"],
                                     labels1=d["lab"], labels2=d["rlab"], **kw),
            "rr": lambda **kw: count(d["rra"], d["rdec"], labels1=d["rlab"], **kw)}


def des_run(terms, bins, progress=None):
    """DD, DR, RR, then Landy-Szalay w and its jackknife covariance: (results dict, seconds
    of each step)."""
    from sphgpu.tpacf import jackknife_covariance, landy_szalay

    kw = {"bins": bins}
    if progress is not None:
        kw["progress"] = progress
    steps, out = {}, {}
    for name in ("dd", "dr", "rr"):
        t0 = time.perf_counter()
        out[name] = terms[name](**kw)
        steps[name + "_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["w"] = landy_szalay(out["dd"], out["dr"], out["rr"])
    _, out["cov"] = jackknife_covariance(landy_szalay(out["dd"], out["dr"], out["rr"],
                                                      leave_one_out=True))
    steps["estimator_s"] = time.perf_counter() - t0
    return out, steps


def des_equal(got, want):
    """Whether every count (per patch pair too) is equal as integers, and how far w and the
    covariance are from the baseline's (largest relative difference)."""
    equal = all(np.array_equal(got[k].counts, want[k].counts)
                and np.array_equal(got[k].patch_counts, want[k].patch_counts)
                for k in ("dd", "dr", "rr"))

    def rel(a, b):
        scale = np.max(np.abs(b))
        return float(np.max(np.abs(a - b)) / scale) if scale > 0 else 0.0

    return {"counts_equal": bool(equal), "w_max_rel_diff": rel(got["w"], want["w"]),
            "cov_max_rel_diff": rel(got["cov"], want["cov"])}


def des_plain(cfg, backend, d, log):
    from sphgpu.tpacf import pair_counts

    def count(*a, **k):
        return pair_counts(*a, backend=backend, max_device_bytes=_budget(cfg), **k)

    steps = {}

    def run():
        out, s = des_run(des_terms(count, d), d["bins"])
        steps.update(s)
        return out

    first, med, times, out = _timed(run, cfg["des_repeat"], backend)
    log(f"DES-like w with {cfg['patches']} patches, plain call: first {first:.1f} s, then "
        f"{_fmt(med)} s ({_steps(steps)}); pairs DD {out['dd'].counts.sum():.3e}")
    free_pool(backend)
    return {"first_s": first, "seconds": med, "all_s": times, "last_steps": steps,
            "pairs": {k: int(out[k].counts.sum()) for k in ("dd", "dr", "rr")}}, out


def des_dask(client, cfg, backend, d, want, log, progress, files=None):
    """The DES-like w through sphgpu.distributed from the NumPy arrays, or (``files``: the
    data's and the randoms' CatalogFiles) from catalogs on disk that the workers read."""
    import sphgpu.distributed as sd

    def count(*a, **k):
        return sd.pair_counts(*a, client=client, backend=backend,
                              max_device_bytes=_budget(cfg), **k)

    if files is None:
        terms = des_terms(count, d)
    else:
        fd, fr = files
        terms = {"dd": lambda **kw: count(fd, **kw), "dr": lambda **kw: count(fd, fr, **kw),
                 "rr": lambda **kw: count(fr, **kw)}
    steps = {}

    def run():
        out, s = des_run(terms, d["bins"], progress)
        steps.update(s)
        return out

    first, med, times, out = _timed(run, cfg["des_repeat"], "cpu")
    check = des_equal(out, want) if want is not None else {"counts_equal": None}
    log(f"  DES-like{' from files' if files else ''}: first {first:.1f} s, then {_fmt(med)} s "
        f"({_steps(steps)}); {check}")
    return {"first_s": first, "seconds": med, "all_s": times, "last_steps": steps, **check}


def des_files(d, folder, log):
    """The DES-like catalogs written as .npy columns (ra, dec, patch labels) under
    ``folder``: (data, randoms) CatalogFiles."""
    from sphgpu.distributed import CatalogFiles

    os.makedirs(folder, exist_ok=True)
    t0 = time.perf_counter()
    out = []
    for name, keys in (("data", ("ra", "dec", "lab")), ("randoms", ("rra", "rdec", "rlab"))):
        paths = [os.path.join(folder, f"{name}_{k}.npy") for k in ("ra", "dec", "labels")]
        for path, k in zip(paths, keys):
            np.save(path, d[k])
        out.append(CatalogFiles(paths[0], paths[1], labels=paths[2]))
    log(f"DES-like catalogs written to {folder} in {time.perf_counter() - t0:.1f} s")
    return tuple(out)


def rr_plain(cfg, backend, d, n, log):
    from sphgpu.tpacf import pair_counts

    first, med, times, got = _timed(
        lambda: pair_counts(d["ra"], d["dec"], bins=d["bins"], backend=backend,
                            max_device_bytes=_budget(cfg)),
        cfg["repeat"], backend)
    log(f"RR {n:.0e} plain call: first {first:.2f} s, then {_fmt(med)} s")
    free_pool(backend)
    return {"first_s": first, "seconds": med, "all_s": times,
            "pairs": int(got.counts.sum())}, got.counts


def rr_dask(client, cfg, backend, d, want, log, progress):
    import sphgpu.distributed as sd

    kw = {"progress": progress} if progress is not None else {}
    first, med, times, got = _timed(
        lambda: sd.pair_counts(d["ra"], d["dec"], bins=d["bins"], client=client,
                               backend=backend, max_device_bytes=_budget(cfg), **kw),
        cfg["repeat"], "cpu")
    equal = None if want is None else bool(np.array_equal(got.counts, want))
    log(f"  RR {d['ra'].size:.0e}: first {first:.2f} s, then {_fmt(med)} s; counts equal: "
        f"{equal}")
    return {"first_s": first, "seconds": med, "all_s": times, "counts_equal": equal}


def _fmt(t):
    return "-" if t is None else f"{t:.2f}"


def _steps(steps):
    return ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in steps.items())


# ----------------------------------------------------------------------------- report
def _plain(data, w):
    """The baseline of workload ``w`` (the catalogs on disk have the in-memory one's)."""
    return data["plain"].get("des" if w == "des-files" else w, {})


def table(data):
    units = data["units"]
    lines = [header(units, 30)]
    for w in data["workloads"]:
        for key, label in (("seconds", "s"), ("first_s", "first call s")):
            p = _plain(data, w).get(key)
            cells = [data["rows"][str(n)].get(w, {}).get(key) for n in units]
            lines.append(f"{w + ' ' + label:<30}{_fmt(p):>12}"
                         + "".join(f"{_fmt(c):>14}" for c in cells))
        eq = [data["rows"][str(n)].get(w, {}).get("counts_equal") for n in units]
        lines.append(f"{w + ' counts equal':<30}{'':>12}" + "".join(f"{str(e):>14}"
                                                                  for e in eq))
    return "\n".join(lines)


def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = data["workloads"]
    sz = data["sizes"]
    titles = {"des": f"DES-like w: {sz['des_n']:.1e} points, {sz['patches']} patches",
              "des-files": "the same, catalogs read from .npy files by the workers",
              "rr7": f"RR of {sz['rr_small']:.0e} full-sky randoms",
              "rr8": f"RR of {sz['rr_large']:.0e} full-sky randoms"}
    fig, axes = plt.subplots(1, len(ws), figsize=(4.2 * len(ws), 3.6), squeeze=False)
    units = data["units"]
    kind = "GPU" if data["backend"] == "cuda" else "CPU"
    for ax, w in zip(axes[0], ws):
        for key, style, label in (("seconds", "o-", "Dask, whole call"),
                                  ("first_s", "s:", "Dask, first call")):
            ys = [data["rows"][str(n)].get(w, {}).get(key) for n in units]
            xs = [n for n, y in zip(units, ys) if y is not None]
            ax.plot(xs, [y for y in ys if y is not None], style, label=label)
        p = _plain(data, w).get("seconds") or _plain(data, w).get("first_s")
        if p is not None:
            ax.axhline(p, color="k", ls="--", lw=1, label=f"plain call, one {kind}")
        ax.set_xticks(units)
        ax.set_xlabel(f"{kind} workers")
        ax.set_ylabel("seconds")
        ax.set_yscale("log")
        ax.set_title(titles[w], fontsize=9)
        ax.legend(fontsize=7)
    on = data["machine"].get("gpu") if data["backend"] == "cuda" else (
        f"CPU workers of one thread ({data['machine'].get('host')})")
    fig.suptitle(f"Exact pair counts through sphgpu.distributed on {on}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def merge(paths):
    """One record of the runs in the JSON files ``paths`` (same machine kind, backend and
    workers; no workload in two of them): workloads, baselines and rows side by side, each
    run's date, wall time, workloads and ``plain_skipped`` under ``runs``."""
    runs = [json.load(open(path)) for path in paths]
    first = runs[0]
    data = {k: first[k] for k in ("machine", "backend", "units", "quick")}
    data.update(sizes={}, workloads=[], plain={}, rows={str(n): {} for n in first["units"]},
                runs=[])
    for path, run in zip(paths, runs):
        for key in ("backend", "units", "quick"):
            if run[key] != first[key]:
                raise SystemExit(f"--merge: {path} has {key} {run[key]!r}, "
                                 f"{paths[0]} {first[key]!r}")
        if run["machine"].get("gpu") != first["machine"].get("gpu"):
            raise SystemExit(f"--merge: {path} ran on another GPU")
        twice = set(run["workloads"]) & set(data["workloads"])
        if twice:
            raise SystemExit(f"--merge: workloads {sorted(twice)} are in two runs")
        data["sizes"].update(run["sizes"])
        data["workloads"] += run["workloads"]
        data["plain"].update(run["plain"])
        for n, row in run["rows"].items():
            data["rows"][n].update(row)
        data["runs"].append({"file": os.path.basename(path), "date": run.get("date"),
                             "wall_s": run.get("wall_s"), "workloads": run["workloads"],
                             "plain_skipped": run.get("plain_skipped", False)})
    data["date"] = max(str(r["date"]) for r in data["runs"])
    return data


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_worker_args(p, GPU_COUNTS)
    p.add_argument("--only", nargs="+", choices=["des", "rr7", "rr8"],
                   default=["des", "rr7", "rr8"])
    p.add_argument("--no-plain", action="store_true",
                   help="skip the plain one-GPU calls (their counts are then not compared: "
                        "for sizes whose plain call would not fit the time at hand)")
    p.add_argument("--progress", action="store_true",
                   help="print each stripe of a Dask count as it finishes")
    p.add_argument("--files", default=None, metavar="DIR",
                   help="also count the DES-like catalogs from .npy files written to DIR "
                        "(sphgpu.distributed.CatalogFiles: read by the workers), workload "
                        "'des-files'")
    add_size_args(p, FULL, QUICK)
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="only combine these runs' JSONs into --out's tpacf_survey.json")
    args = p.parse_args()
    if args.merge:
        data = merge(args.merge)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "tpacf_survey.json"), "w") as f:
            json.dump(data, f, indent=1)
        plot(data, os.path.join(args.out, "tpacf_survey.png"))
        log(table(data))
        return 0
    cfg = sizes(args, FULL, QUICK)
    backend, units = workers(args, GPU_COUNTS)
    progress = log if args.progress else None
    workloads = list(args.only) + (["des-files"] if args.files and "des" in args.only
                                   else [])
    data, save, path = results(args.out, "tpacf_survey.json", backend, units, cfg, args.quick,
                               workloads=workloads)

    data["plain_skipped"] = bool(args.no_plain)
    t_start = time.perf_counter()
    inputs, want = {}, {}
    # the plain calls first, in this process: the baseline every Dask count must equal
    if "des" in args.only:
        inputs["des"] = des_inputs(cfg, log)
        data["sizes"]["des_make_s"] = inputs["des"]["make_s"]
        data["sizes"]["des_label_s"] = inputs["des"]["label_s"]
        if args.no_plain:
            want["des"] = None
        else:
            data["plain"]["des"], want["des"] = des_plain(cfg, backend, inputs["des"], log)
        save()
        if "des-files" in workloads:
            files = des_files(inputs["des"], args.files, log)
            inputs["des-files"], want["des-files"] = inputs["des"], want["des"]
    for w, key in (("rr7", "rr_small"), ("rr8", "rr_large")):
        if w in args.only:
            inputs[w] = rr_inputs(cfg[key])
            if args.no_plain:
                want[w] = None
            else:
                data["plain"][w], want[w] = rr_plain(cfg, backend, inputs[w], cfg[key], log)
            save()
    for n in units:
        row = data["rows"][str(n)]
        with fresh_cluster(n, backend, row) as client:
            for w in workloads:
                if w == "des":
                    row[w] = des_dask(client, cfg, backend, inputs[w], want[w], log, progress)
                elif w == "des-files":
                    row[w] = des_dask(client, cfg, backend, inputs[w], want[w], log, progress,
                                      files=files)
                else:
                    row[w] = rr_dask(client, cfg, backend, inputs[w], want[w], log, progress)
                save()
    data["wall_s"] = time.perf_counter() - t_start
    save()
    plot(data, os.path.join(args.out, "tpacf_survey.png"))
    log("\n" + table(data))
    log(f"\nwall {data['wall_s']:.0f} s; written {path}")
    bad = [(n, w) for n in units for w in workloads
           if data["rows"][str(n)].get(w, {}).get("counts_equal", False) is False
           or (not args.no_plain and "counts_equal" not in data["rows"][str(n)].get(w, {}))]
    if bad:
        log(f"COUNTS DIFFER from the plain call: {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
