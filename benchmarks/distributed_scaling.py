"""Scale-out of sphgpu.distributed on 1, 2, 4 GPUs of one node (issue 42), against the plain
one-GPU call in the same run, whole calls from NumPy arrays.

    python benchmarks/distributed_scaling.py --gpus 1 2 4 --out $OUT        # 4-GPU node
    python benchmarks/distributed_scaling.py --gpus 0 --cpu-workers 2 --quick --out /tmp/d

Workloads (sizes: --quick shrinks all of them to seconds on a CPU):
  rr     exact RR of --rr-n (10^7) full-sky randoms, 20 log bins 0.01-10 deg:
         plain ``sphgpu.tpacf.pair_counts`` in this process (baseline), then
         ``sd.pair_counts`` from NumPy (stripes sent at every call) and from a Catalog kept
         on the workers (second call with the same object: nothing sent). Counts must be
         equal as integers to the baseline's. Each call's ``report=`` (CountSteps: the
         client's split and send, each stripe task's start, end and seconds on its worker)
         is kept in the JSON and summed up in the log.
  sht    --maps (64) maps at --nside (2048), lmax 2 nside. Baseline: the in-process plan,
         ``sphgpu.SHT(nside, lmax).alm2map``/``map2alm`` (iter 0), time per map on device
         arrays on a GPU (NumPy on CPU) -- what each Dask task runs on its worker -- and from
         NumPy to NumPy. (1) Inputs and outputs on the workers: the a_lm sent once
         (``sd.to_workers``, onto the GPUs; its reported send rate), then ``alm2map_many`` and
         ``map2alm_many`` futures in, futures out, and ``alm2cl_many`` of the a_lm futures
         (spectra back); efficiency E against the plan's time per map. (2) From and to the
         client's NumPy arrays: --gathered (16) a_lm to maps (``alm2map_many``) and those maps
         back to a_lm (``map2alm_many``), with the bytes, seconds and GB/s each call reports
         (``report=``, a ``sphgpu.distributed.sht.Transfer``) against the loopback's: one
         array of --loopback-mb to a worker and back through Dask (issue 42: within 2x), the
         way sphgpu sends (straight to a local cluster's workers), and through the scheduler
         for comparison (``loopback.send_GBps_scheduler``, ``gather_GBps_scheduler``).
  mc     ``MonteCarlo(..., fwhm_arcmin=5).run(client=...)`` T only at --mc-nside (2048): the
         first run on the fresh cluster (it is the cluster's first call; it warms every worker
         at once) and a steady-state run; baseline: the plain in-process run (steady).
Each cluster is fresh (Monte Carlo first), one worker per GPU (``local_cluster(gpus=[...])``).
Writes DIR/distributed_scaling.json (machine info, every timing), prints a table and plots
DIR/distributed_scaling.png (``--replot JSON`` redraws it from an earlier run, next to that
file, running nothing). Efficiency E(n) = t(baseline) / (n t(n)) per unit of work.
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

FULL = {"rr_n": 10_000_000, "nside": 2048, "maps": 64, "gathered": 16, "mc_nside": 2048,
        "mc_sims": 128, "loopback_mb": 1024, "repeat": 2}
QUICK = {"rr_n": 20_000, "nside": 32, "maps": 8, "gathered": 4, "mc_nside": 16,
         "mc_sims": 8, "loopback_mb": 64, "repeat": 2}
#: numbers of GPU workers run by default (those the machine has)
GPU_COUNTS = (1, 2, 4)


def _median(fn, repeat):
    """(median seconds, all seconds, last result) of ``fn()`` run ``repeat`` times."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


# ----------------------------------------------------------------------------- pair counts
def rr_inputs(cfg):
    from sphgpu.tpacf import AngularBins
    from sphgpu.tpacf.mocks import uniform_randoms

    ra, dec = uniform_randoms(cfg["rr_n"], (0.0, 360.0, -90.0, 90.0), seed=31)
    return ra, dec, AngularBins.log(0.01, 10, 20, unit="deg")


def rr_plain(cfg, backend, data, log):
    from sphgpu.tpacf import pair_counts

    ra, dec, bins = data
    t0 = time.perf_counter()
    first = pair_counts(ra, dec, bins=bins, backend=backend)
    first_s = time.perf_counter() - t0
    med, times, got = _median(lambda: pair_counts(ra, dec, bins=bins, backend=backend),
                              cfg["repeat"])
    log(f"RR {cfg['rr_n']:.0e} plain call: {med:.3f} s (first {first_s:.2f} s)")
    free_pool(backend)
    return {"seconds": med, "all_s": times, "first_s": first_s,
            "pairs_in_bins": int(got.counts.sum())}, got.counts


def _steps(steps):
    """A :class:`sphgpu.distributed.CountSteps` as JSON: where the call's time went."""
    return {"seconds": steps.seconds, "split_s": steps.split_seconds,
            "send_s": steps.send_seconds, "sent_bytes": steps.sent_bytes,
            "send_GBps": None if steps.send_rate is None else steps.send_rate / 1e9,
            "stripes": steps.stripes}


def _steps_line(name, st):
    tasks = [x["seconds"] for x in st["stripes"]]
    starts = [x["start_s"] for x in st["stripes"]]
    ends = [x["end_s"] for x in st["stripes"]]
    send = (f"sent {st['sent_bytes'] / 1e9:.2f} GB in {st['send_s']:.3f} s"
            if st["sent_bytes"] else "nothing sent")
    return (f"    {name}: {st['seconds']:.3f} s = split {st['split_s']:.3f} s, {send}; "
            f"tasks {min(tasks):.3f}-{max(tasks):.3f} s, started {min(starts):.3f}-"
            f"{max(starts):.3f} s, last ended {max(ends):.3f} s" if tasks else
            f"    {name}: {st['seconds']:.3f} s (no stripe)")


def rr_dask(client, cfg, backend, data, want, log):
    """The RR count through Dask: from NumPy arrays (sent at every call), and a Catalog kept
    on the workers (its first call, which sends and prepares, apart); with each call's
    :class:`~sphgpu.distributed.CountSteps` (the median call's)."""
    import sphgpu.distributed as sd
    from sphgpu.tpacf import Catalog

    ra, dec, bins = data
    sd.pair_counts(ra[:2000], dec[:2000], bins=bins, client=client, backend=backend)  # JIT

    def timed(*cat):
        return lambda rep: sd.pair_counts(*cat, bins=bins, client=client, backend=backend,
                                          report=rep)

    med, times, got, steps = _timed_with_report(timed(ra, dec), cfg["repeat"])
    cat = Catalog(ra, dec)
    sent_s, _, _, sent_steps = _timed_with_report(timed(cat), 1)     # sends, prepares
    kmed, ktimes, kgot, kept_steps = _timed_with_report(timed(cat), cfg["repeat"])
    equal = bool(np.array_equal(got.counts, want) and np.array_equal(kgot.counts, want))
    log(f"  from NumPy {med:.3f} s; Catalog kept on the workers {kmed:.3f} s (first call "
        f"{sent_s:.2f} s); counts equal: {equal}")
    out = {"seconds": med, "all_s": times, "kept_seconds": kmed, "kept_all_s": ktimes,
           "kept_first_s": sent_s, "counts_equal": equal, "steps": _steps(steps),
           "kept_first_steps": _steps(sent_steps), "kept_steps": _steps(kept_steps)}
    for name, key in (("from NumPy", "steps"), ("kept, first", "kept_first_steps"),
                      ("kept", "kept_steps")):
        log(_steps_line(name, out[key]))
    return out


# ----------------------------------------------------------------------------- transforms
def sht_inputs(cfg):
    from sphgpu import AlmLayout

    lmax = 2 * cfg["nside"]
    layout = AlmLayout(lmax)
    rng = np.random.default_rng(5)
    # 8 distinct random sets, repeated: drawing 64 at lmax 4096 (10^9 normals) would take
    # longer than the benchmark's transforms; the transforms do not care which values
    base = rng.standard_normal((8, layout.size)) + 1j * rng.standard_normal((8, layout.size))
    base[:, :lmax + 1] = base[:, :lmax + 1].real
    alms = np.tile(base, (-(-cfg["maps"] // 8), 1))[:cfg["maps"]]
    return lmax, alms


def sht_plain(cfg, backend, lmax, alms, log):
    """The in-process one-GPU baseline: time per map of ``sphgpu.SHT``'s alm2map and map2alm
    (iter 0) on arrays already on the device (what each Dask task runs on its worker), of the
    public ``sphgpu.alm2map`` on the same, and of the plan from NumPy a_lm to NumPy maps."""
    import sphgpu

    nside = cfg["nside"]
    plan = sphgpu.SHT(nside, lmax, backend=backend)
    a = alms[:4]
    if backend == "cuda":
        import cupy

        a = cupy.asarray(a)
    one = plan.alm2map(a[:1], pol=False)                                # plan, JIT, tuning
    plan.map2alm(one, iter=0, pol=False)
    sphgpu.alm2map(a[0], nside, lmax=lmax, backend=backend)
    sync(backend)

    def each(fn, xs):
        def run():
            out = [fn(x) for x in xs]
            sync(backend)
            return out
        return _median(run, cfg["repeat"])

    syn, _, maps = each(lambda x: plan.alm2map(x[None], pol=False), a)
    ana, _, _ = each(lambda m: plan.map2alm(m, iter=0, pol=False), maps)
    pub, _, _ = each(lambda x: sphgpu.alm2map(x, nside, lmax=lmax, backend=backend), a)
    host = [plan.alm2map(x[None], pol=False) for x in alms[:2]]
    hsyn, _, _ = _median(lambda: [plan.alm2map(x[None], pol=False) for x in alms[:2]],
                         cfg["repeat"])
    hana, _, _ = _median(lambda: [plan.map2alm(m, iter=0, pol=False) for m in host],
                         cfg["repeat"])
    ref = np.asarray(host[0])[0]
    kind = "device arrays" if backend == "cuda" else "NumPy"
    log(f"SHT plain, nside {nside}: plan alm2map {syn / 4 * 1e3:.1f} ms a map, map2alm "
        f"(iter 0) {ana / 4 * 1e3:.1f} ms a map ({kind}; sphgpu.alm2map {pub / 4 * 1e3:.1f} "
        f"ms); from NumPy {hsyn / 2 * 1e3:.1f} and {hana / 2 * 1e3:.1f} ms a map")
    del maps, a
    free_pool(backend)
    return {"alm2map_s_per_map": syn / 4, "map2alm_s_per_map": ana / 4,
            "alm2map_public_s_per_map": pub / 4, "alm2map_numpy_s_per_map": hsyn / 2,
            "map2alm_numpy_s_per_map": hana / 2, "inputs": kind}, ref


def _loopback(client, cfg):
    """Seconds to send one array to a worker through Dask and to gather it back: the
    bandwidth a NumPy array crosses between this process and a worker, the way sphgpu sends
    (``sphgpu.distributed.cluster.direct``), and also through the scheduler (``*_scheduler``)."""
    from distributed import wait

    from sphgpu.distributed.cluster import direct

    a = np.random.default_rng(1).standard_normal(cfg["loopback_mb"] * 2**20 // 8)
    w = sorted(client.scheduler_info()["workers"])[0]
    out = {"bytes": a.nbytes, "direct": direct(client)}
    for how, straight in (("", direct(client)), ("_scheduler", False)):
        t0 = time.perf_counter()
        [f] = client.scatter([a], workers=[w], hash=False, direct=straight)
        wait(f)
        t1 = time.perf_counter()
        [back] = client.gather([f], direct=straight)
        t2 = time.perf_counter()
        assert back.shape == a.shape
        out[f"send_GBps{how}"] = a.nbytes / (t1 - t0) / 1e9
        out[f"gather_GBps{how}"] = a.nbytes / (t2 - t1) / 1e9
        del f, back
    return out


def _rates(t, loopback, prefix):
    """The entries of one call's :class:`sphgpu.distributed.sht.Transfer` ``t``: bytes,
    seconds, GB/s each way and against the loopback's GB/s (issue 42 asks within 2x)."""
    def gbps(rate):
        return None if rate is None else rate / 1e9

    row = {f"{prefix}_sent_bytes": t.sent_bytes, f"{prefix}_send_s": t.send_seconds,
           f"{prefix}_received_bytes": t.received_bytes, f"{prefix}_receive_s": t.receive_seconds,
           f"{prefix}_send_GBps": gbps(t.send_rate), f"{prefix}_receive_GBps": gbps(t.receive_rate),
           f"{prefix}_GBps": gbps(t.rate)}
    if t.send_rate:
        row[f"{prefix}_send_over_loopback"] = t.send_rate / 1e9 / loopback["send_GBps"]
    if t.receive_rate:
        row[f"{prefix}_receive_over_loopback"] = t.receive_rate / 1e9 / loopback["gather_GBps"]
    return row


def _timed_with_report(fn, repeat):
    """(median seconds, all seconds, last result, Transfer of the median run) of
    ``fn(report)`` run ``repeat`` times."""
    runs = []
    for _ in range(repeat):
        got = []
        t0 = time.perf_counter()
        out = fn(got.append)
        runs.append((time.perf_counter() - t0, got[0]))
    order = sorted(range(repeat), key=lambda i: runs[i][0])
    mid = order[(repeat - 1) // 2]
    return statistics.median(r[0] for r in runs), [r[0] for r in runs], out, runs[mid][1]


def sht_dask(client, n, cfg, backend, lmax, alms, plain, ref, log):
    """The transforms through Dask on ``n`` workers: (1) inputs and outputs on the workers
    (the a_lm sent once with ``to_workers``, onto the GPUs; ``alm2map_many`` and
    ``map2alm_many`` futures in, futures out; ``alm2cl_many`` reducing the a_lm there, only
    spectra back), efficiency against the in-process plan's time per map; (2) from and to the
    client's NumPy arrays (``alm2map_many`` then ``map2alm_many``, --gathered maps), with the
    transfer rates each call reports and the loopback's for comparison."""
    from distributed import wait

    import sphgpu.distributed as sd
    from sphgpu import RingGeometry

    nside, k = cfg["nside"], cfg["maps"]
    g = RingGeometry.healpix(nside)
    gpu = backend == "cuda"
    row = {"loopback": _loopback(client, cfg)}
    lb = row["loopback"]
    sent = []
    t0 = time.perf_counter()
    futs = sd.to_workers(alms, client=client, backend=backend, on_device=gpu,
                         report=sent.append)
    wait(futs)
    row["to_workers_s"] = time.perf_counter() - t0
    row["to_workers_GBps"] = alms.nbytes / row["to_workers_s"] / 1e9
    row.update(_rates(sent[0], lb, "to_workers_scatter"))

    def synth():
        out = sd.alm2map_many(futs, lmax=lmax, geometry=g, client=client, backend=backend,
                              gather=False)
        wait(out)
        return out

    first = synth()                                            # plans, JIT, tuning
    check = np.asarray(_host(client.gather(first[0])))[0]
    row["err_vs_plain"] = float(np.linalg.norm(check - ref) / np.linalg.norm(ref))
    del first
    syn, syn_all, maps = _median(synth, cfg["repeat"])

    def analyse():
        out = sd.map2alm_many(maps, lmax, iter=0, geometry=g, client=client, backend=backend,
                              gather=False)
        wait(out)
        return out

    analyse()                                                  # plans, JIT, tuning
    ana, ana_all, alm_f = _median(analyse, cfg["repeat"])
    cl_s, cl_all, cl = _median(lambda: sd.alm2cl_many(alm_f, lmax, client=client,
                                                      backend=backend), cfg["repeat"])
    del maps, futs, alm_f
    row.update({"alm2map_kept_s": syn, "alm2map_kept_all_s": syn_all,
                "map2alm_kept_s": ana, "map2alm_kept_all_s": ana_all,
                "alm2map_kept_efficiency": plain["alm2map_s_per_map"] * k / (n * syn),
                "map2alm_kept_efficiency": plain["map2alm_s_per_map"] * k / (n * ana),
                "alm2cl_kept_s": cl_s, "alm2cl_kept_all_s": cl_all,
                "alm2cl_bytes_back": int(cl.nbytes)})
    m = cfg["gathered"]
    sub = np.ascontiguousarray(alms[:m])
    gmed, gall, got, syn_t = _timed_with_report(
        lambda rep: sd.alm2map_many(sub, nside, lmax, client=client, backend=backend,
                                    report=rep), cfg["repeat"])
    amed, aall, _, ana_t = _timed_with_report(
        lambda rep: sd.map2alm_many(got, lmax, iter=0, client=client, backend=backend,
                                    report=rep), cfg["repeat"])
    moved = sub.nbytes + got.nbytes
    row.update({"gathered_s": gmed, "gathered_all_s": gall, "gathered_bytes": moved,
                "gathered_GBps": moved / gmed / 1e9,
                "gathered_efficiency": plain["alm2map_numpy_s_per_map"] * m / (n * gmed),
                "gathered_err_vs_plain": float(np.linalg.norm(got[0] - ref)
                                               / np.linalg.norm(ref)),
                "gathered_map2alm_s": amed, "gathered_map2alm_all_s": aall,
                "gathered_map2alm_efficiency":
                    plain["map2alm_numpy_s_per_map"] * m / (n * amed),
                **_rates(syn_t, lb, "gathered_alm2map"),
                **_rates(ana_t, lb, "gathered_map2alm")})

    def r(key):
        v = row.get(key)
        return "-" if v is None else f"{v:.2f}"

    log(f"  SHT: a_lm to the workers {row['to_workers_s']:.2f} s "
        f"({r('to_workers_scatter_send_GBps')} GB/s; loopback {lb['send_GBps']:.2f} GB/s out, "
        f"{lb['gather_GBps']:.2f} back); kept: alm2map {syn:.3f} s "
        f"(E {row['alm2map_kept_efficiency']:.2f}), map2alm {ana:.3f} s "
        f"(E {row['map2alm_kept_efficiency']:.2f}), spectra back {cl_s:.3f} s; "
        f"error vs plain {row['err_vs_plain']:.1e}")
    log(f"  SHT from/to NumPy, {m} maps: alm2map {gmed:.3f} s (E "
        f"{row['gathered_efficiency']:.2f}; a_lm out {r('gathered_alm2map_send_GBps')} GB/s = "
        f"{r('gathered_alm2map_send_over_loopback')} x loopback, maps back "
        f"{r('gathered_alm2map_receive_GBps')} GB/s = "
        f"{r('gathered_alm2map_receive_over_loopback')} x), map2alm {amed:.3f} s (E "
        f"{row['gathered_map2alm_efficiency']:.2f}; maps out "
        f"{r('gathered_map2alm_send_GBps')} GB/s = "
        f"{r('gathered_map2alm_send_over_loopback')} x)")
    return row


def _host(a):
    return a.get() if hasattr(a, "get") else a


# ----------------------------------------------------------------------------- Monte Carlo
def _mc(cfg, backend):
    from sphgpu.sims import MonteCarlo

    nside = cfg["mc_nside"]
    lmax = 2 * nside
    cl = 1e3 / (np.arange(lmax + 1) + 2.0) ** 2
    return MonteCarlo(cl, nside, lmax, fwhm_arcmin=5.0, seed=7, backend=backend)


def mc_plain(cfg, backend, log):
    mc = _mc(cfg, backend)
    mc.run(cfg["mc_sims"] // 4 or 1, progress=False)                  # warm
    t0 = time.perf_counter()
    mc.run(cfg["mc_sims"], progress=False)
    rate = cfg["mc_sims"] / (time.perf_counter() - t0)
    log(f"Monte Carlo plain, nside {cfg['mc_nside']}: {rate:.1f} simulations/s")
    free_pool(backend)
    return {"sims_per_s": rate}


def mc_dask(client, n, cfg, backend, plain, log):
    mc = _mc(cfg, backend)
    k = cfg["mc_sims"] * n
    t0 = time.perf_counter()
    mc.run(k, progress=False, client=client)
    first = k / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    mc.run(k, progress=False, client=client)
    steady = k / (time.perf_counter() - t0)
    ref = _mc(cfg, backend).run(2, progress=False).spectra
    err = float(np.max(np.abs(mc.spectra[:2] - ref)) / np.max(np.abs(ref)))
    row = {"sims": k, "first_run_sims_per_s": first, "steady_sims_per_s": steady,
           "first_over_steady": first / steady,
           "efficiency": steady / (n * plain["sims_per_s"]), "max_rel_diff_vs_plain": err}
    log(f"  Monte Carlo: first run {first:.1f}/s, steady {steady:.1f}/s (first/steady "
        f"{first / steady:.2f}, E {row['efficiency']:.2f})")
    return row


# ----------------------------------------------------------------------------- table
def table(data):
    lines = [header(data["units"], 44)]
    rows = data["rows"]

    def line(name, plain, key, fmt="{:.3f}", sub=None):
        cells = []
        for n in data["units"]:
            r = rows[str(n)].get(sub, {})
            v = r.get(key)
            cells.append(f"{fmt.format(v) if v is not None else '-':>14}")
        lines.append(f"{name:<44}{plain:>12}" + "".join(cells))

    p = data["plain"]
    line(f"RR {data['sizes']['rr_n']:.0e} from NumPy (s)", f"{p['rr']['seconds']:.3f}",
         "seconds", sub="rr")
    line("RR, Catalog kept on the workers (s)", "", "kept_seconds", sub="rr")
    line("RR counts equal", "", "counts_equal", "{}", sub="rr")
    k = data["sizes"]["maps"]
    line(f"alm2map_many {k} kept (s)", f"{p['sht']['alm2map_s_per_map'] * k:.3f}",
         "alm2map_kept_s", sub="sht")
    line("  efficiency", "", "alm2map_kept_efficiency", "{:.2f}", sub="sht")
    line(f"map2alm_many {k} kept, iter 0 (s)", f"{p['sht']['map2alm_s_per_map'] * k:.3f}",
         "map2alm_kept_s", sub="sht")
    line("  efficiency", "", "map2alm_kept_efficiency", "{:.2f}", sub="sht")
    m = data["sizes"]["gathered"]
    line(f"alm2map_many {m} from/to NumPy (s)",
         f"{p['sht']['alm2map_numpy_s_per_map'] * m:.3f}", "gathered_s", sub="sht")
    line("  efficiency", "", "gathered_efficiency", "{:.2f}", sub="sht")
    line("  a_lm out GB/s (reported)", "", "gathered_alm2map_send_GBps", "{:.2f}", sub="sht")
    line("    / loopback", "", "gathered_alm2map_send_over_loopback", "{:.2f}", sub="sht")
    line("  maps back GB/s (reported)", "", "gathered_alm2map_receive_GBps", "{:.2f}",
         sub="sht")
    line("    / loopback", "", "gathered_alm2map_receive_over_loopback", "{:.2f}", sub="sht")
    line(f"map2alm_many {m} from/to NumPy (s)",
         f"{p['sht']['map2alm_numpy_s_per_map'] * m:.3f}", "gathered_map2alm_s", sub="sht")
    line("  efficiency", "", "gathered_map2alm_efficiency", "{:.2f}", sub="sht")
    line("  maps out GB/s (reported)", "", "gathered_map2alm_send_GBps", "{:.2f}", sub="sht")
    line("a_lm to the workers GB/s", "", "to_workers_GBps", "{:.2f}", sub="sht")
    line("Monte Carlo first run (sims/s)", "", "first_run_sims_per_s", "{:.1f}", sub="mc")
    line("Monte Carlo steady (sims/s)", f"{p['mc']['sims_per_s']:.1f}", "steady_sims_per_s",
         "{:.1f}", sub="mc")
    line("  efficiency", "", "efficiency", "{:.2f}", sub="mc")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- plot
#: issue 42's goals, drawn on the plot: parallel efficiency of the transforms kept on the
#: workers and of the Monte Carlo's steady rate, and seconds of RR on 4 GPUs as a whole call
#: from NumPy arrays
GOALS = {"kept_efficiency": 0.85, "mc_efficiency": 0.9, "rr_numpy_s": 0.45}


def _power(n):
    """``n`` as matplotlib's mathtext 10^k where it is a power of ten, else with commas."""
    k = len(str(n)) - 1
    return f"$10^{{{k}}}$" if n == 10 ** k and k > 1 else f"{n:,}"


def _series(data, fn):
    """([n], [fn(n, row of n)]) over the numbers of workers where ``fn`` gives a value."""
    pts = [(n, fn(n, data["rows"].get(str(n), {}))) for n in data["units"]]
    pts = [(n, v) for n, v in pts if v is not None]
    return [n for n, _ in pts], [v for _, v in pts]


def plot(data, path):
    """Against the number of workers: the parallel efficiency of each workload that has one
    (RR kept on the workers against the plain call, the kept transforms, the Monte Carlo's
    steady rate) with the ideal and issue 42's goals, and the seconds of RR from NumPy and
    kept, with the plain call's and the goal. Written to ``path`` (skipped, said, where
    matplotlib is missing; ``--replot`` draws it from the JSON elsewhere)."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing: no plot (redraw it with --replot)", flush=True)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = data["units"]
    plain = data.get("plain", {})
    kind = "GPU" if data.get("backend") == "cuda" else "CPU"
    k, m = data["sizes"]["maps"], data["sizes"]["nside"]
    rr_plain = plain.get("rr", {}).get("seconds")
    fig, (eff, rr) = plt.subplots(1, 2, figsize=(10, 4))

    def rr_kept_efficiency(n, row):
        kept = row.get("rr", {}).get("kept_seconds")
        return None if kept is None or rr_plain is None else rr_plain / (n * kept)

    curves = [("C0", "o-", f"RR {_power(data['sizes']['rr_n'])}, Catalog kept",
               rr_kept_efficiency),
              ("C1", "s-", f"alm2map_many, {k} maps kept",
               lambda n, row: row.get("sht", {}).get("alm2map_kept_efficiency")),
              ("C2", "^-", f"map2alm_many, {k} maps kept",
               lambda n, row: row.get("sht", {}).get("map2alm_kept_efficiency")),
              ("C3", "D-", "Monte Carlo, steady",
               lambda n, row: row.get("mc", {}).get("efficiency"))]
    for color, style, label, fn in curves:
        xs, ys = _series(data, fn)
        if xs:
            eff.plot(xs, ys, style, color=color, label=label)
    eff.axhline(1.0, color="k", ls="--", lw=1, label="ideal")
    goals = not data.get("quick")           # the goals are for the full sizes
    if goals:
        eff.axhline(GOALS["kept_efficiency"], color="C1", ls="--", lw=1,
                    label=f"goal, kept transforms ({GOALS['kept_efficiency']})")
        eff.axhline(GOALS["mc_efficiency"], color="C3", ls="--", lw=1,
                    label=f"goal, Monte Carlo ({GOALS['mc_efficiency']})")
    eff.set_ylim(0, 1.15)
    eff.set_ylabel("parallel efficiency  t(plain) / (n t(n))")
    eff.set_title(f"against the plain one-{kind} call (transforms at nside {m})", fontsize=9)
    eff.legend(fontsize=7, loc="lower left")

    drawn = False
    for key, style, label in (("seconds", "o-", "from NumPy"),
                              ("kept_seconds", "s-", "Catalog kept on the workers")):
        xs, ys = _series(data, lambda n, row: row.get("rr", {}).get(key))
        if xs:
            rr.plot(xs, ys, style, label=label)
            drawn = True
    if rr_plain is not None:
        rr.axhline(rr_plain, color="k", ls="--", lw=1, label=f"plain call, one {kind}")
    if drawn or rr_plain is not None:
        if goals:
            rr.axhline(GOALS["rr_numpy_s"], color="C0", ls="--", lw=1,
                       label=f"goal on 4 GPUs, from NumPy ({GOALS['rr_numpy_s']} s)")
        rr.set_ylim(bottom=0)
        rr.legend(fontsize=7)
    else:
        rr.text(0.5, 0.5, "no RR in this run", ha="center", va="center",
                transform=rr.transAxes)
        rr.set_xlim(eff.get_xlim())
    rr.set_ylabel("seconds a call (median)")
    rr.set_title(f"exact RR of {_power(data['sizes']['rr_n'])} full-sky randoms, 20 bins",
                 fontsize=9)
    for ax in (eff, rr):
        ax.set_xticks(units)
        ax.set_xlabel(f"{kind} workers")
    if kind == "GPU":
        on = f"{max(units)} x {data['machine'].get('gpu')}, one worker per GPU"
    else:
        on = f"{max(units)} CPU workers of one thread ({data['machine'].get('host')})"
    fig.suptitle(f"sphgpu.distributed on {on}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_worker_args(p, GPU_COUNTS)
    p.add_argument("--only", nargs="+", choices=["rr", "sht", "mc"],
                   default=["rr", "sht", "mc"])
    add_size_args(p, FULL, QUICK)
    p.add_argument("--replot", metavar="JSON",
                   help="only redraw the plot of an earlier run, next to JSON (its name, .png)")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), os.path.splitext(args.replot)[0] + ".png")
        return 0
    cfg = sizes(args, FULL, QUICK)
    backend, units = workers(args, GPU_COUNTS)
    # not distributed.json: that name holds the earlier batch/DR format that docs/make_performance.py
    # and widgets/speedup.py read
    data, save, path = results(args.out, "distributed_scaling.json", backend, units, cfg,
                               args.quick)

    t_start = time.perf_counter()
    rr = rr_inputs(cfg) if "rr" in args.only else None
    lmax, alms = sht_inputs(cfg) if "sht" in args.only else (None, None)
    if "mc" in args.only:
        data["plain"]["mc"] = mc_plain(cfg, backend, log)
    if rr is not None:
        data["plain"]["rr"], want = rr_plain(cfg, backend, rr, log)
    if alms is not None:
        data["plain"]["sht"], ref = sht_plain(cfg, backend, lmax, alms, log)
    save()
    for n in units:
        row = data["rows"][str(n)]
        with fresh_cluster(n, backend, row) as client:
            # the Monte Carlo first: its first run is this fresh cluster's first call
            if "mc" in args.only:
                row["mc"] = mc_dask(client, n, cfg, backend, data["plain"]["mc"], log)
                save()
            if rr is not None:
                row["rr"] = rr_dask(client, cfg, backend, rr, want, log)
                save()
            if alms is not None:
                row["sht"] = sht_dask(client, n, cfg, backend, lmax, alms,
                                      data["plain"]["sht"], ref, log)
                save()
    data["wall_s"] = time.perf_counter() - t_start
    save()
    plot(data, os.path.join(args.out, "distributed_scaling.png"))
    if set(args.only) == {"rr", "sht", "mc"}:
        log("\n" + table(data))
    log(f"\nwall {data['wall_s']:.0f} s; written {path}")
    bad = [n for n in units if not data["rows"][str(n)].get("rr", {}).get("counts_equal", True)]
    if bad:
        log(f"COUNTS DIFFER on {bad} worker(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
