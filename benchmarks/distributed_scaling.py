"""Scaling of sphgpu.distributed over several GPUs of one machine (or CPU workers).

Run on a multi-GPU machine:  python benchmarks/distributed_scaling.py --gpus 1 2 4 --out benchmarks/results
(peers needed beyond the gpu extra: none; dask-cuda is used when installed, not required).

1. Batch: ``--maps`` (16) alm2map at ``--nside`` (2048, lmax = 2 nside) with
   ``sphgpu.distributed.alm2map_many`` on 1, 2, 4 GPU workers (one process per GPU). Two modes:
     device -- a_lm made on each GPU by a task, maps left on the GPUs (CuPy arrays): the
               transforms alone plus Dask's scheduling;
     host   -- NumPy a_lm already on the workers, NumPy maps left there: adds each map's copies
               between host and device inside the workers.
   Parallel efficiency E(n) = T(1) / (n T(n)); the goal is E >= 0.85.
2. One large transform: nside ``--big-nside`` (8192) / lmax ``--big-lmax`` (16384) on one GPU
   against n GPUs, split by rings (pattern "rings": every GPU holds the a_lm, made on it from
   the same seed, and synthesizes its ring chunk; there is no exchange, so each GPU times its
   own chunk and the slowest one is the distributed time). The m-chunk pattern ("m", the
   paper's all-to-all) needs the CUDA Legendre/ring stages; ``--host-big`` also times both
   patterns host to host (NumPy a_lm in, whole map back through Dask) and records which ran.
3. ``--convolve``: one split-plan convolution, nside ``--conv-nside`` (2048, lmax 2 nside),
   the 10' beam (``RadialKernel.cmb``) cut at ``--conv-theta`` (30') with the smallest l_cut
   meeting 1e-5, with ``sphgpu.distributed.convolve`` on 1, 2, 4 GPUs (harmonic part on one
   GPU, real-space latitude bands on the others; one GPU runs the serial split there), against
   the serial ``sphgpu.convolve.convolve`` in this process in the same run. Host to host
   (NumPy map in, NumPy map out, as the serial call here): the wall time, and the span of the
   workers' tasks (first start to last end) without the client's sending and gathering; on 2
   and 4 units also with ``harmonic_weight`` (the measured time of the harmonic part over the
   real-space part's), which gives the harmonic part's worker a smaller band too.
Correctness: one map of the batch against ducc0, sample pixels of the split large transform
against the one-GPU map, and every distributed convolution against the serial one, in the
same run.

Writes DIR/distributed.json (machine info, every timing), DIR/distributed_scaling.png and,
with ``--convolve``, DIR/distributed_convolve.png;
``--replot JSON`` redraws the plot from an earlier run. ``--backend cpu --units 1 2`` runs the
same harness with single-threaded CPU workers at small sizes (a smoke test on any machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


# ----------------------------------------------------------------------------- worker tasks
# Defined in this script: Dask sends them to the workers by value.
def _make_alm(lmax, seed, device):
    """Random a_lm (a_l0 real) on this worker: a CuPy array on its GPU, or NumPy."""
    from sphgpu import AlmLayout

    layout = AlmLayout(lmax)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(layout.size) + 1j * rng.standard_normal(layout.size)
    a[:lmax + 1] = a[:lmax + 1].real
    if device:
        import cupy

        return cupy.asarray(a)
    return a


def _random_catalog(n, seed):
    """A uniform random catalog over the benchmark's quarter sky, made on this worker and kept
    there as a Catalog (which caches its sorted copies on first use)."""
    from sphgpu.tpacf import Catalog
    from sphgpu.tpacf.mocks import uniform_randoms

    return Catalog(*uniform_randoms(n, seed=seed))


def _visible_devices():
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def _sync(device):
    if device:
        import cupy

        cupy.cuda.Device().synchronize()


def _timed_rings(nside, lmax, rings, seed, backend, repeat, sample):
    """Synthesize the rings ``rings`` (None: all) of a HEALPix map from the seeded a_lm on this
    worker; return the median seconds and the map's values at the pixel offsets ``sample``
    (within this chunk)."""
    import sphgpu
    from sphgpu import RingGeometry
    from sphgpu._device import to_host
    from sphgpu.distributed.sht import _subgeometry

    device = backend == "cuda"
    alm = _make_alm(lmax, seed, device)
    g = RingGeometry.healpix(nside) if rings is None else _subgeometry(("healpix", nside), rings)

    def run():
        return sphgpu.alm2map(alm, lmax=lmax, geometry=g, backend=backend)

    out = run()                                       # plan, JIT, autotune
    _sync(device)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = run()
        _sync(device)
        times.append(time.perf_counter() - t0)
    vals = to_host(out[np.asarray(sample, dtype=np.int64)]) if len(sample) else np.empty(0)
    return statistics.median(times), vals


# ----------------------------------------------------------------------------- measurements
def _cluster(n, backend):
    import sphgpu.distributed as sd

    if backend == "cuda":
        ids = sd.visible_gpus()
        if len(ids) < n:
            raise SystemExit(f"asked for {n} GPUs, this machine shows {len(ids)}")
        return sd.local_cluster(gpus=ids[:n], cpu_workers=0, dashboard_address=":0")
    return sd.local_cluster(gpus=0, cpu_workers=n, threads_per_worker=1, dashboard_address=":0")


def _workers(client, backend):
    import sphgpu.distributed as sd

    if backend == "cuda":
        return sd.gpu_workers(client)
    return sorted(a for a, w in sd.cluster.workers(client).items() if w["name"].startswith("cpu"))


def bench_batch(n, args, log):
    """Seconds for the batch on n units, in the device and host modes (medians)."""
    from distributed import wait

    import sphgpu.distributed as sd

    client = _cluster(n, args.backend)
    try:
        ws = _workers(client, args.backend)
        lmax = 2 * args.nside
        row = {"units": n}
        modes = ["device", "host"] if args.backend == "cuda" else ["host"]
        for mode in modes:
            device = mode == "device"
            res = {"GPU": 1} if args.backend == "cuda" else None
            # inputs made on the workers, spread evenly, before any timing
            alms = [client.submit(_make_alm, lmax, 1000 + i, device, workers=[ws[i % n]],
                                  resources=res, pure=False) for i in range(args.maps)]
            wait(alms)

            def batch():
                futs = sd.alm2map_many(alms, args.nside, lmax, client=client,
                                       backend=args.backend, gather=False)
                wait(futs)
                return futs

            first = batch()                                 # warm-up: JIT, plans, autotune
            if n == 1 and mode == modes[0]:
                row["check"] = _check_one(client, alms[0], first[0], args.nside, lmax, log)
            del first
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                futs = batch()
                times.append(time.perf_counter() - t0)
                del futs
            row[f"{mode}_s"] = statistics.median(times)
            row[f"{mode}_all_s"] = times
            log(f"batch {args.maps} x nside {args.nside} on {n} {_unit(args)}: {mode} "
                f"{row[f'{mode}_s']:.3f} s")
            alms = None                      # release the inputs before the next mode
        return row
    finally:
        client.shutdown()
        client.close()


def _check_one(client, alm_f, map_f, nside, lmax, log):
    """Relative L2 error of one distributed map against ducc0 (all host threads)."""
    import ducc0

    from sphgpu import AlmLayout
    from sphgpu._device import to_host

    alm, m = (to_host(x) for x in client.gather([alm_f, map_f]))
    layout = AlmLayout(lmax)
    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    ref = ducc0.sht.synthesis(alm=alm[None], lmax=lmax, mmax=layout.mmax, spin=0,
                              nthreads=os.cpu_count(), **info)[0]
    err = float(np.linalg.norm(m - ref) / np.linalg.norm(ref))
    log(f"batch check: one map against ducc0, relative L2 error {err:.2e}")
    return {"err_vs_ducc0": err}


def bench_dr(units, args, log):
    """DR pair counts of one clustered catalog against ``--randoms`` random catalogs (made on
    the workers, one per task) on n units; the counts must be equal on every n."""
    from distributed import wait

    import sphgpu.distributed as sd
    from sphgpu.tpacf import AngularBins, Catalog
    from sphgpu.tpacf.mocks import clustered_catalog

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    data = clustered_catalog(args.n_data, seed=1)
    out = {"n_data": args.n_data, "n_random": args.n_random, "randoms": args.randoms,
           "rows": []}
    first = None
    for n in sorted(set(units)):
        client = _cluster(n, args.backend)
        try:
            ws = _workers(client, args.backend)
            res = {"GPU": 1} if args.backend == "cuda" else None
            rs = [client.submit(_random_catalog, args.n_random, 100 + i, workers=[ws[i % n]],
                                resources=res, pure=False) for i in range(args.randoms)]
            wait(rs)

            # the data are sent once, to every worker, as callers repeating counts would do
            d = client.scatter(Catalog(*data), broadcast=True, hash=False,
                               workers=ws)

            def run():
                return sd.pair_counts_many(d, rs, bins=bins, client=client,
                                           backend=args.backend)

            counts = [c.counts for c in run()]              # warm-up: JIT, plans
            first = counts if first is None else first
            equal = all(np.array_equal(a, b) for a, b in zip(counts, first))
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            from distributed import get_task_stream

            with get_task_stream(client) as stream:         # where the time of one call goes
                run()
            tasks = [(t["worker"], sum(s["stop"] - s["start"] for s in t["startstops"]
                                       if s["action"] == "compute")) for t in stream.data]
            row_tasks = {"compute_s": [d for _, d in tasks], "workers": [w for w, _ in tasks],
                         "devices": client.run(_visible_devices)}
            log(f"  tasks: {len(tasks)}, compute {min(d for _, d in tasks):.3f}.."
                f"{max(d for _, d in tasks):.3f} s on {len(set(w for w, _ in tasks))} workers; "
                f"devices {sorted(str(v) for v in row_tasks['devices'].values())}")
            per_worker = {}
            for w, dt in tasks:
                per_worker[w] = per_worker.get(w, 0.0) + dt
            row = {"units": n, "seconds": statistics.median(times), "all_s": times,
                   "one_call": row_tasks,
                   # what a call costs beyond its busiest worker's counting: Dask's share
                   "overhead_s": statistics.median(times) - max(per_worker.values()),
                   "counts_equal_to_first": equal,
                   "pairs_in_bins": int(sum(int(c.sum()) for c in counts))}
            out["rows"].append(row)
            log(f"DR against {args.randoms} random catalogs on {n} {_unit(args)}: "
                f"{row['seconds']:.3f} s, counts equal: {equal}")
        finally:
            client.shutdown()
            client.close()
    t1 = out["rows"][0]["seconds"] if out["rows"][0]["units"] == 1 else None
    for r in out["rows"]:
        if t1:
            r["efficiency"] = t1 / (r["units"] * r["seconds"])
    return out


def bench_big(units, args, log):
    """One large synthesis: one unit (whole map) against n units (ring chunks, pattern
    "rings"), each timed on its worker with the a_lm already there."""
    from sphgpu import AlmLayout, RingGeometry
    from sphgpu.distributed.sht import _pixel_runs, _plan

    nside, lmax = args.big_nside, args.big_lmax
    g = RingGeometry.healpix(nside)
    layout = AlmLayout(lmax)
    n_max = max(units)
    client = _cluster(n_max, args.backend)
    out = {"nside": nside, "lmax": lmax, "rows": []}
    try:
        ws = _workers(client, args.backend)
        res = {"GPU": 1} if args.backend == "cuda" else None
        rng = np.random.default_rng(7)
        for n in sorted(set(units)):
            if n == 1:
                chunks, samples = [None], [np.empty(0, np.int64)]
            else:
                _, chunks = _plan(g, layout, n, "rings")
                # sample pixels of each chunk: offsets in the chunk and in the whole map
                samples, whole_pix = [], []
                for rings in chunks:
                    runs = _pixel_runs(g, rings)
                    pix = np.concatenate([np.arange(a, b) for a, b in runs])
                    pick = np.sort(rng.choice(pix.size, min(500, pix.size), replace=False))
                    samples.append(pick)
                    whole_pix.append(pix[pick])
            futs = [client.submit(_timed_rings, nside, lmax, rings, 99, args.backend,
                                  args.repeat, smp, workers=[ws[i]], resources=res,
                                  pure=False)
                    for i, (rings, smp) in enumerate(zip(chunks, samples))]
            got = client.gather(futs)
            del futs
            row = {"units": n, "seconds": max(t for t, _ in got),
                   "chunk_seconds": [t for t, _ in got]}
            if n > 1:
                # compare with the one-unit map at the same pixels (computed now on worker 0)
                pix = np.concatenate(whole_pix)
                [(_, ref)] = client.gather([client.submit(
                    _timed_rings, nside, lmax, None, 99, args.backend, 1, pix,
                    workers=[ws[0]], resources=res, pure=False)])
                vals = np.concatenate([v for _, v in got])
                row["err_vs_one_unit"] = float(np.linalg.norm(vals - ref) / np.linalg.norm(ref))
            log(f"large alm2map nside {nside} lmax {lmax} on {n} {_unit(args)}: "
                f"{row['seconds']:.3f} s" + (f" (error {row['err_vs_one_unit']:.1e})"
                                              if "err_vs_one_unit" in row else ""))
            out["rows"].append(row)
        if args.host_big:
            out["host_to_host"] = _host_big(client, args, log)
    finally:
        client.shutdown()
        client.close()
    return out


def _host_big(client, args, log):
    """Host to host: NumPy a_lm in, the whole map back through Dask, for both patterns; one
    GPU (in this process) for reference."""
    import sphgpu
    import sphgpu.distributed as sd

    nside, lmax = args.big_nside, args.big_lmax
    alm = _make_alm(lmax, 5, False)
    res = {}
    t0 = time.perf_counter()
    ref = sphgpu.alm2map(alm, nside, lmax, backend=args.backend)
    res["one_unit_in_client_s"] = time.perf_counter() - t0
    for pattern in ("rings", "m"):
        try:
            t0 = time.perf_counter()
            m = sd.alm2map(alm, nside, lmax, client=client, backend=args.backend,
                           pattern=pattern)
            res[f"{pattern}_s"] = time.perf_counter() - t0
            res[f"{pattern}_err"] = float(np.linalg.norm(m - ref) / np.linalg.norm(ref))
            del m
        except NotImplementedError as exc:
            res[f"{pattern}_s"] = None
            res[f"{pattern}_note"] = str(exc)
        log(f"host to host, pattern {pattern}: {res.get(f'{pattern}_s')}")
    return res


def _unit(args):
    return "GPU(s)" if args.backend == "cuda" else "CPU worker(s)"


# ----------------------------------------------------------------------------- convolution
def bench_convolve(units, args, log):
    """One split convolution on n units against the serial one in this process."""
    from distributed import get_task_stream

    import sphgpu.distributed as sd
    from sphgpu.bench import time_call
    from sphgpu.convolve import ARCMIN, RadialKernel, SplitFitter, convolve, white_noise

    nside, lmax = args.conv_nside, 2 * args.conv_nside
    k = RadialKernel.cmb(args.conv_fwhm, lmax)
    theta = args.conv_theta * ARCMIN
    fitter = SplitFitter(k, theta)
    l_cut = fitter.smallest_l_cut(theta, 1e-5)
    if l_cut is None:
        raise SystemExit(f"no l_cut meets 1e-5 at theta_cut {args.conv_theta}'")
    split = fitter.split(l_cut, theta)
    m = white_noise(nside, 5)
    out = {"nside": nside, "lmax": lmax, "fwhm_arcmin": args.conv_fwhm, "l_cut": int(l_cut),
           "theta_cut_arcmin": split.theta_cut_arcmin,
           "predicted_error": split.predicted_error, "rows": []}
    log(f"convolution: nside {nside}, {args.conv_fwhm}' beam, split at l_cut {l_cut} / "
        f"{split.theta_cut_arcmin:.1f}'")
    want = convolve(m, split, backend=args.backend)
    serial = time_call(lambda: convolve(m, split, backend=args.backend), repeat=args.repeat,
                       max_seconds=60)
    out["serial_s"] = serial.median
    out["serial_all_s"] = serial.seconds
    # each part alone (host to host): their ratio sizes the harmonic worker's own band
    from sphgpu import RingGeometry
    from sphgpu.convolve.harmonic import harmonic_convolve

    geom = RingGeometry.healpix(nside)
    th = time_call(lambda: harmonic_convolve(m, split.harmonic_bl, geom, backend=args.backend),
                   repeat=args.repeat, max_seconds=60).median
    tr = time_call(lambda: convolve(m, split.realspace, backend=args.backend),
                   repeat=args.repeat, max_seconds=60).median
    out["serial_harmonic_s"], out["serial_realspace_s"] = th, tr
    weight = th / tr
    log(f"  serial in this process: {serial.median:.3f} s (harmonic part alone {th:.3f} s, "
        f"real-space part alone {tr:.3f} s)")
    for n in sorted(set(units)):
        client = _cluster(n, args.backend)
        try:
            def run(w=None):
                return sd.convolve(m, split, backend=args.backend, client=client,
                                   harmonic_weight=w)

            got = run()                                     # warm-up: JIT, plans, tables
            err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            del got
            row = {"units": n, "err_vs_serial": err}
            # plain: the harmonic part's worker runs only it; weighted: it also gets a band
            # sized by the measured ratio of the two parts (same as plain on one worker)
            for mode, w in (("plain", None), ("weighted", weight)) if n > 1 else \
                    (("plain", None),):
                run(w)                                      # warm-up of this band layout
                t = time_call(lambda: run(w), repeat=args.repeat, warmup=0, max_seconds=60)
                with get_task_stream(client) as stream:
                    run(w)
                comp = [s for tk in stream.data for s in tk["startstops"]
                        if s["action"] == "compute"]
                span = max(s["stop"] for s in comp) - min(s["start"] for s in comp)
                sfx = "" if mode == "plain" else "_weighted"
                row.update({f"seconds{sfx}": t.median, f"all_s{sfx}": t.seconds,
                            f"task_span_s{sfx}": span, f"tasks{sfx}": len(stream.data),
                            f"speedup_vs_serial{sfx}": out["serial_s"] / t.median,
                            f"span_speedup_vs_serial{sfx}": out["serial_s"] / span})
                log(f"  {n} {_unit(args)}, {mode}: {t.median:.3f} s host to host, tasks' "
                    f"span {span:.3f} s ({len(stream.data)} tasks), error vs serial {err:.1e}")
            out["rows"].append(row)
        finally:
            client.shutdown()
            client.close()
    return out


def plot_convolve(conv, path, machine):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = conv["rows"]
    ns = [r["units"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    x = np.arange(len(ns))
    ax.bar(x - 0.3, [r["seconds"] for r in rows], 0.2, label="host to host")
    ax.bar(x - 0.1, [r["task_span_s"] for r in rows], 0.2, label="span of the tasks (one call)")
    ax.bar(x + 0.1, [r.get("seconds_weighted", np.nan) for r in rows], 0.2,
           label="host to host, harmonic worker with a band")
    ax.bar(x + 0.3, [r.get("task_span_s_weighted", np.nan) for r in rows], 0.2,
           label="span, harmonic worker with a band")
    ax.axhline(conv["serial_s"], color="k", ls="--", lw=1, label="serial, one process")
    ax.set_xticks(x)
    ax.set_xticklabels([str(n) for n in ns])
    ax.set_xlabel("workers")
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"split convolution, nside {conv['nside']}, {conv['fwhm_arcmin']:g}' beam, "
                 f"l_cut {conv['l_cut']} / {conv['theta_cut_arcmin']:.0f}'", fontsize=9)
    ax.legend(fontsize=8)
    fig.suptitle(f"sphgpu.distributed.convolve on {machine.get('gpu') or machine['host']}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# ----------------------------------------------------------------------------- plot
def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = "GPUs" if data["backend"] == "cuda" else "CPU workers"
    rows = data["batch"]["rows"]
    ns = [r["units"] for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    for mode, style in (("device", "o-"), ("host", "s--")):
        pts = [(r["units"], r[f"{mode}_s"]) for r in rows if f"{mode}_s" in r]
        if not pts:
            continue
        ax[0].plot(*zip(*pts), style, label=mode)
        t1 = dict(pts).get(1)
        if t1:
            ax[0].plot(ns, [t1 / n for n in ns], "k:", lw=0.8)
            ax[1].plot([n for n, _ in pts], [t1 / (n * t) for n, t in pts], style, label=mode)
    ax[0].set_title(f"{data['batch']['maps']} x alm2map, nside {data['batch']['nside']}")
    ax[0].set_ylabel("seconds (median); dotted: ideal")
    for key, style in (("dr", "^-"), ("dr_large", "v-")):      # dr_large: a second --dr run
        dr = data.get(key)
        if dr and all("efficiency" in r for r in dr["rows"]):
            ax[1].plot([r["units"] for r in dr["rows"]], [r["efficiency"] for r in dr["rows"]],
                       style, label=f"DR {dr['n_data']:.2g} x {dr['randoms']} x "
                                    f"{dr['n_random']:.2g} randoms")
    ax[1].axhline(0.85, color="r", lw=0.8, label="goal 0.85")
    ax[1].set_ylim(0, 1.1)
    ax[1].set_title("parallel efficiency T(1) / (n T(n))")
    big = data.get("big")
    if big:
        bn = [r["units"] for r in big["rows"]]
        ax[2].bar([str(n) for n in bn], [r["seconds"] for r in big["rows"]])
        ax[2].set_title(f"one alm2map, nside {big['nside']}, lmax {big['lmax']} (rings)")
        ax[2].set_ylabel("seconds")
        ax[2].set_xlabel(unit)
    for a in ax[:2]:
        a.set_xticks(ns)
        a.set_xlabel(unit)
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(f"sphgpu.distributed on {data['machine'].get('gpu') or data['machine']['host']}"
                 f" ({data['machine']['cpu_count']} cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", "--units", dest="units", type=int, nargs="+", default=None,
                   help="numbers of GPUs (or CPU workers) to run on; default 1 2 4, as many "
                        "as there are")
    p.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--nside", type=int, default=2048)
    p.add_argument("--maps", type=int, default=16)
    p.add_argument("--big-nside", type=int, default=8192)
    p.add_argument("--big-lmax", type=int, default=16384)
    p.add_argument("--no-big", action="store_true", help="skip the large transform")
    p.add_argument("--no-batch", action="store_true", help="skip the batch of transforms")
    p.add_argument("--dr", action="store_true", help="also time DR against several randoms")
    p.add_argument("--convolve", action="store_true",
                   help="also time one split convolution against the serial one")
    p.add_argument("--conv-nside", type=int, default=2048)
    p.add_argument("--conv-fwhm", type=float, default=10.0, help="beam FWHM, arcmin")
    p.add_argument("--conv-theta", type=float, default=30.0, help="theta_cut, arcmin")
    p.add_argument("--randoms", type=int, default=8)
    p.add_argument("--n-data", type=int, default=84000)
    p.add_argument("--n-random", type=int, default=900000)
    p.add_argument("--host-big", action="store_true",
                   help="also time the large transform host to host (both patterns)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            data = json.load(f)
        where = os.path.dirname(args.replot) or "."
        plot(data, os.path.join(where, "distributed_scaling.png"))
        if data.get("convolve"):
            plot_convolve(data["convolve"], os.path.join(where, "distributed_convolve.png"),
                          data["machine"])
        return 0

    import sphgpu.distributed as sd
    from sphgpu.bench import machine_info

    if args.units is None:
        have = len(sd.visible_gpus()) if args.backend == "cuda" else (os.cpu_count() or 1)
        args.units = [n for n in (1, 2, 4) if n <= have] or [1]
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    info = machine_info()
    log(json.dumps(info))
    data = {"machine": info, "backend": args.backend,
            "batch": {"nside": args.nside, "lmax": 2 * args.nside, "maps": args.maps,
                      "rows": []}}
    path = os.path.join(args.out, "distributed.json")

    def save():
        data["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        with open(path, "w") as f:
            json.dump(data, f, indent=1)

    if args.dr:
        data["dr"] = bench_dr(args.units, args, log)
        save()
    if args.convolve:
        data["convolve"] = bench_convolve(args.units, args, log)
        save()
        plot_convolve(data["convolve"], os.path.join(args.out, "distributed_convolve.png"),
                      info)
    for n in [] if args.no_batch else sorted(set(args.units)):
        data["batch"]["rows"].append(bench_batch(n, args, log))
        save()
    rows = data["batch"]["rows"]
    t1 = {k: rows[0][k] for k in ("device_s", "host_s")
          if rows and rows[0]["units"] == 1 and k in rows[0]}
    for r in rows:
        for k, v in t1.items():
            r[f"efficiency_{k[:-2]}"] = v / (r["units"] * r[k])
    if rows:
        log("efficiency: " + ", ".join(f"{r['units']}: " + "/".join(
            f"{r[k]:.2f}" for k in r if k.startswith("efficiency")) for r in rows))
    if not args.no_big:
        data["big"] = bench_big(args.units, args, log)
    save()
    plot(data, os.path.join(args.out, "distributed_scaling.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
