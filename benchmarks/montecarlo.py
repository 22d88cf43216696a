"""Simulations per second of the Monte Carlo pipeline (sphgpu.sims) on 1, 2 and 4 GPUs,
against the same pipeline written with ducc0 (all host cores) and with healpy, in one run.

The pipeline, per simulation: Gaussian a_lm from the Planck 2018 TT spectrum (lmax = 2 nside),
times a Gaussian beam (FWHM ``--fwhm`` arcmin), alm2map at ``nside``, white noise (``--sigma``
muK per pixel), times an apodized mask (``|b| < 20 deg`` hidden, 5 deg cosine edge), map2alm
(one pass, ``iter=0``), pseudo-C_l. It is timed as a user runs it:

  sphgpu 1 GPU   ``MonteCarlo(..., backend="cuda").run(n)`` in this process (a_lm drawn on the
                 GPU, everything on the device up to the spectra);
  sphgpu k GPUs  the same ``run(n, client=...)`` on a local Dask cluster of k GPU workers;
                 parallel efficiency E(k) = rate(k) / (k * rate(1 GPU, this process));
  ducc0          NumPy draws, ``ducc0.sht.experimental`` synthesis / adjoint_synthesis on all
                 host cores, NumPy mask and spectra;
  healpy         ``healpy.synalm``, ``almxfl``, ``alm2map``, ``map2alm(iter=0)``, ``alm2cl``.
The first run of each sphgpu configuration (compilation, autotuning, plans) is timed apart
(``first_s``) and not counted in the rates.

Correctness, in the same run: (1) at the largest nside, simulations 0 and 1 on the GPU equal
the same simulations on the CPU backend (ducc0; the random numbers are the same on both) to
1e-9; (2) on the GPU, the spectra of simulations 0..7 are the same whether run in one batch or
one by one, and on the cluster (1e-10); (3) at nside 16 the mean of 2000 GPU simulations agrees
with the exact expectation (``MonteCarlo.expected``, brute force through the same transforms)
within 4.5 sigma at every l; (4) the device alm2cl equals the NumPy one at the largest nside
(1e-12).

Goals (issue 17), at nside 2048 / lmax 4096: >= 40 simulations/s on one GPU, >= 40x the ducc0
pipeline, E(4) >= 0.9.

  python benchmarks/montecarlo.py                 # nside 512 1024 2048, 1/2/4 GPUs as present
  python benchmarks/montecarlo.py --quick         # correctness + nside 512 on one GPU, < 2 min

Writes DIR/montecarlo.json (machine info, every row; rewritten after each) and
DIR/montecarlo.png; ``--replot JSON`` redraws the plot.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

ARCMIN = math.pi / 10800


def log(msg):
    print(msg, flush=True)


def setup(nside, args):
    """Input spectrum, beam, mask and noise shared by every pipeline at this nside."""
    from sphgpu.data import planck2018_cl
    from sphgpu.sims import latitude_cut_mask

    lmax = 2 * nside
    return dict(nside=nside, lmax=lmax, cl=planck2018_cl(lmax), fwhm=args.fwhm * ARCMIN,
                mask=latitude_cut_mask(nside, 20.0, apodization_deg=5.0), sigma=args.sigma)


def montecarlo(s, args, backend, **kw):
    from sphgpu.sims import MonteCarlo

    return MonteCarlo(s["cl"], s["nside"], s["lmax"], fwhm=s["fwhm"], mask=s["mask"],
                      noise_sigma=s["sigma"], seed=args.seed, backend=backend,
                      batch_size=args.batch_size, **kw)


def rate_of(run, nsims):
    t0 = time.perf_counter()
    run(nsims)
    dt = time.perf_counter() - t0
    return nsims / dt, dt


# ----------------------------------------------------------------------------- sphgpu
def bench_gpu(s, args):
    mc = montecarlo(s, args, "cuda")
    t0 = time.perf_counter()
    mc.run(1, progress=False)
    first = time.perf_counter() - t0
    # whole batches only, in the warm-up and the timing: a batch of another size launches
    # kernels for another number of maps, compiled (or loaded) on first use
    b = args.batch_size or mc._auto_batch("cuda")
    whole = lambda n: max(b, int(round(n / b)) * b)
    rate_of(lambda k: mc.run(k, progress=False), whole(args.warm))
    # the rate that sizes the timed run comes from a second warm-up: the first one's includes
    # compiles and FFT plans, and sized timed runs of a single batch (0.3 s) at nside 1024
    warm_rate, _ = rate_of(lambda k: mc.run(k, progress=False), whole(args.warm))
    n = whole(sims_for(args.gpu_seconds, warm_rate))
    rate, dt = rate_of(lambda k: mc.run(k, progress=False), n)
    return dict(rate=rate, seconds=dt, nsims=n, first_s=first, batch_size=b)


def bench_cluster(s, args, k):
    from distributed import get_task_stream

    import sphgpu.distributed as sd

    ids = sd.visible_gpus()
    if len(ids) < k:
        return dict(skipped=f"{len(ids)} GPU(s) visible")
    client = sd.local_cluster(gpus=ids[:k], cpu_workers=0, dashboard_address=":0")
    try:
        mc = montecarlo(s, args, "cuda")
        # whole batches of one size on every worker, as in bench_gpu: the size the library
        # picks on a worker (that GPU's free memory; the same kind as this process's)
        b = args.batch_size or mc._auto_batch("cuda")
        whole = lambda n: max(k * b, int(round(n / (k * b))) * k * b)
        run = lambda m: mc.run(m, progress=False, client=client, batch_size=b)
        t0 = time.perf_counter()
        run(whole(k * args.warm))
        first = time.perf_counter() - t0
        warm_rate, _ = rate_of(run, whole(k * args.warm))
        n = whole(sims_for(args.gpu_seconds, warm_rate))
        # which workers held the plan and which processes ran, before and after the timed
        # run (a worker without the plan was once left idle: sphgpu.sims._dask)
        holders = lambda: len(client.who_has([mc._plan_future[1]])[mc._plan_future[1].key])
        pids = client.run(os.getpid)
        before = holders()
        with get_task_stream(client) as stream:
            rate, dt = rate_of(run, n)
        row = dict(rate=rate, seconds=dt, nsims=n, first_s=first, batch_size=b,
                   per_worker=per_worker(client, stream.data),
                   plan_holders_before=before, plan_holders_after=holders(),
                   workers_restarted=sorted(set(pids.items()) ^ set(client.run(os.getpid).items())))
        if k == max(args.gpus):
            row["check_equal_to_one_gpu"] = check_same(s, args, mc)
        # the plan it keeps on the workers goes before they do (the scheduler logs an error
        # for scattered data lost with a worker)
        del mc
        return row
    finally:
        client.shutdown()
        client.close()


def per_worker(client, tasks):
    """What each worker did in the timed run: its GPU (the device its CuPy sees, and
    CUDA_VISIBLE_DEVICES), the batches it ran and their seconds of compute, from Dask's task
    stream; an uneven share shows where a cluster's rate went."""
    def device():
        import os
        try:
            import cupy
            bus = cupy.cuda.Device().pci_bus_id
        except Exception as e:  # noqa: BLE001  a CPU worker
            bus = repr(e)
        return dict(visible=os.environ.get("CUDA_VISIBLE_DEVICES"), pci_bus=bus)

    out = {w: dict(device=d, batches=0, compute_s=0.0)
           for w, d in client.run(device).items()}
    for t in tasks:
        if not str(t.get("key", "")).startswith("sphgpu-sims-"):
            continue
        w = out.setdefault(t["worker"], dict(batches=0, compute_s=0.0))
        w["batches"] += 1
        w["compute_s"] += sum(s["stop"] - s["start"] for s in t.get("startstops", ())
                              if s.get("action") == "compute")
    return out


def sims_for(seconds, rate_guess):
    """About ``seconds`` of work at the warm-up's rate, at least 16 simulations."""
    return int(max(16, min(4000, seconds * max(rate_guess, 1.0))))


def check_same(s, args, other):
    """Simulations 0..7 of ``other`` (a cluster's, or another batch size's) equal one GPU's in
    one batch of 8, and one GPU's one by one."""
    one = montecarlo(s, args, "cuda").run(8, progress=False, batch_size=8).spectra
    single = montecarlo(s, args, "cuda").run(8, progress=False, batch_size=1).spectra
    err = lambda a, b: float(np.max(np.abs(a - b)) / np.max(np.abs(b)))  # noqa: E731
    out = dict(other_vs_batch8=err(other.spectra[:8], one), batch1_vs_batch8=err(single, one))
    out["ok"] = all(v is None or v <= 1e-10 for v in out.values())
    return out


# ----------------------------------------------------------------------------- peers
def ducc0_pipeline(s, nthreads):
    import ducc0

    lmax, nside = s["lmax"], s["nside"]
    base = ducc0.healpix.Healpix_Base(nside, "RING")
    geom = base.sht_info()
    bl = np.exp(-0.5 * np.arange(lmax + 1) * (np.arange(lmax + 1) + 1)
                * (s["fwhm"] / math.sqrt(8 * math.log(2))) ** 2)
    m = np.concatenate([np.arange(mm, lmax + 1) * 0 + mm for mm in range(lmax + 1)])
    l = np.concatenate([np.arange(mm, lmax + 1) for mm in range(lmax + 1)])
    amp = (np.sqrt(s["cl"]) * bl)[l] * np.where(m == 0, 1.0, math.sqrt(0.5))
    w = np.where(m == 0, 1.0, 2.0)
    npix = 12 * nside * nside
    rng = np.random.default_rng(1)

    def one():
        z = rng.standard_normal(l.size) + 1j * np.where(m == 0, 0.0, rng.standard_normal(l.size))
        alm = (amp * z)[None]
        maps = ducc0.sht.experimental.synthesis(alm=alm, lmax=lmax, spin=0, nthreads=nthreads,
                                                **geom)
        maps[0] += s["sigma"] * rng.standard_normal(npix)
        maps[0] *= s["mask"]
        back = ducc0.sht.experimental.adjoint_synthesis(map=maps * (4 * math.pi / npix),
                                                        lmax=lmax, spin=0, nthreads=nthreads,
                                                        **geom)[0]
        return np.bincount(l, weights=w * np.abs(back) ** 2) / (2 * np.arange(lmax + 1) + 1)

    return one


def healpy_pipeline(s):
    import healpy as hp

    lmax, nside = s["lmax"], s["nside"]
    bl = hp.gauss_beam(s["fwhm"], lmax)
    npix = 12 * nside * nside
    rng = np.random.default_rng(2)

    def one():
        alm = hp.almxfl(hp.synalm(s["cl"], lmax), bl)
        maps = hp.alm2map(alm, nside, lmax=lmax) + s["sigma"] * rng.standard_normal(npix)
        return hp.alm2cl(hp.map2alm(maps * s["mask"], lmax, iter=0))

    return one


def bench_peer(one, seconds, max_n):
    t0 = time.perf_counter()
    first_cl = one()
    first = time.perf_counter() - t0
    n = int(max(1, min(max_n, seconds / max(first, 1e-3))))
    rate, dt = rate_of(lambda k: [one() for _ in range(k)], n)
    return dict(rate=rate, seconds=dt, nsims=n, first_s=first), first_cl


# ----------------------------------------------------------------------------- correctness
def check_statistics(args):
    """Mean of 2000 GPU simulations at nside 16 against the exact expectation."""
    from sphgpu.sims import MonteCarlo, latitude_cut_mask
    from sphgpu.data import planck2018_cl

    nside, lmax = 16, 32
    mc = MonteCarlo(planck2018_cl(lmax), nside, lmax, fwhm=3 * math.pi / 180,
                    mask=latitude_cut_mask(nside, 20.0, apodization_deg=10.0), noise_sigma=5.0,
                    seed=args.seed, backend="cuda").run(2000, progress=False)
    expected = mc.expected()[0]
    keep = np.arange(lmax + 1) >= 2
    z = ((mc.mean[0] - expected) / (mc.std[0] / math.sqrt(mc.nsims)))[keep]
    return dict(nside=nside, lmax=lmax, nsims=mc.nsims, max_abs_z=float(np.abs(z).max()),
                chi2_per_dof=float(np.mean(z**2)), ok=bool(np.abs(z).max() < 4.5))


def check_gpu_equals_cpu(s, args):
    """Simulations 0 and 1 on the GPU against the CPU backend, same seed."""
    gpu = montecarlo(s, args, "cuda").run(2, progress=False).spectra
    cpu = montecarlo(s, args, "cpu").run(2, progress=False).spectra
    err = float(np.max(np.abs(gpu - cpu)) / np.max(np.abs(cpu)))
    return dict(nside=s["nside"], max_rel=err, ok=err <= 1e-9)


def check_alm2cl(nside):
    import cupy

    import sphgpu
    from sphgpu import AlmLayout

    rng = np.random.default_rng(3)
    n = AlmLayout(2 * nside).size
    a = rng.standard_normal((2, 1, n)) + 1j * rng.standard_normal((2, 1, n))
    want = sphgpu.alm2cl(a)
    got = cupy.asnumpy(sphgpu.alm2cl(cupy.asarray(a)))
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    return dict(nside=nside, max_rel=err, ok=err <= 1e-12)


# ----------------------------------------------------------------------------- plot
def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels = ["sphgpu 1 GPU"] + [f"sphgpu {k} GPUs" for k in data["gpus"] if k > 1] + \
        ["ducc0", "healpy"]
    for i, label in enumerate(labels):
        pts = [(r["nside"], r[label]["rate"]) for r in rows if "rate" in r.get(label, {})]
        if pts:
            x, y = zip(*pts)
            ax.plot(x, y, "o-", color=f"C{i}", label=label)
    ax.axhline(40, color="0.5", ls=":", lw=1, label="goal at nside 2048: 40/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nside (lmax = 2 nside)")
    ax.set_ylabel("simulations per second")
    m = data["machine"]
    ax.set_title(f"Monte Carlo of pseudo-C_l (beam, noise, mask): {m.get('gpu')}, "
                 f"{m['cpu_count']} host cores", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# ----------------------------------------------------------------------------- main
def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nside", type=int, nargs="+", default=[512, 1024, 2048])
    p.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4],
                   help="GPU counts; counts above the visible GPUs are recorded as skipped")
    p.add_argument("--fwhm", type=float, default=5.0, help="beam FWHM, arcmin")
    p.add_argument("--sigma", type=float, default=10.0, help="white noise per pixel, muK")
    p.add_argument("--batch-size", type=int, default=None, help="default: from free memory")
    p.add_argument("--warm", type=int, default=32, help="simulations of the untimed warm-up")
    p.add_argument("--gpu-seconds", type=float, default=8.0,
                   help="about how long each timed sphgpu run lasts")
    p.add_argument("--peer-seconds", type=float, default=6.0,
                   help="about how long each ducc0 / healpy run lasts")
    p.add_argument("--no-healpy", action="store_true")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--quick", action="store_true",
                   help="correctness checks and nside 512 on one GPU only (< 2 minutes)")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), os.path.splitext(args.replot)[0] + ".png")
        return 0
    if args.quick:
        args.nside, args.gpus, args.gpu_seconds, args.peer_seconds = [512], [1], 3.0, 2.0
        args.warm = 8

    from sphgpu.bench import machine_info

    os.makedirs(args.out, exist_ok=True)
    info = machine_info()
    log(json.dumps(info))
    nthreads = os.cpu_count() or 1
    name = "montecarlo_quick.json" if args.quick else "montecarlo.json"
    path = os.path.join(args.out, name)
    data = dict(machine=info, gpus=args.gpus, fwhm_arcmin=args.fwhm, sigma_muK=args.sigma,
                mask="|b| < 20 deg hidden, 5 deg cosine edge", iter=0, ducc0_threads=nthreads,
                rows=[], checks={})

    def save():
        data["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        with open(path, "w") as f:
            json.dump(data, f, indent=1)

    data["checks"]["statistics"] = check_statistics(args)
    log(f"check, mean vs exact expectation: {data['checks']['statistics']}")
    data["checks"]["alm2cl"] = check_alm2cl(max(args.nside))
    log(f"check, device alm2cl: {data['checks']['alm2cl']}")
    data["checks"]["gpu_vs_cpu"] = check_gpu_equals_cpu(setup(max(args.nside), args), args)
    log(f"check, GPU against the CPU backend: {data['checks']['gpu_vs_cpu']}")
    save()
    for nside in args.nside:
        s = setup(nside, args)
        row = dict(nside=nside, lmax=s["lmax"])
        data["rows"].append(row)
        row["sphgpu 1 GPU"] = bench_gpu(s, args)
        log(f"nside {nside}: 1 GPU {row['sphgpu 1 GPU']}")
        save()
        for k in args.gpus:
            if k > 1:
                row[f"sphgpu {k} GPUs"] = r = bench_cluster(s, args, k)
                if "rate" in r:
                    r["efficiency"] = r["rate"] / (k * row["sphgpu 1 GPU"]["rate"])
                log(f"nside {nside}: {k} GPUs {r}")
                save()
        row["ducc0"], _ = bench_peer(ducc0_pipeline(s, nthreads), args.peer_seconds, 50)
        row["speedup_vs_ducc0"] = row["sphgpu 1 GPU"]["rate"] / row["ducc0"]["rate"]
        log(f"nside {nside}: ducc0 {row['ducc0']}, 1 GPU / ducc0 = "
            f"{row['speedup_vs_ducc0']:.1f}x")
        if not args.no_healpy:
            row["healpy"], _ = bench_peer(healpy_pipeline(s), args.peer_seconds, 20)
            log(f"nside {nside}: healpy {row['healpy']}")
        save()
    if args.quick:
        s = setup(64, args)
        data["checks"]["batches"] = check_same(s, args, montecarlo(s, args, "cuda").run(
            8, progress=False, batch_size=3))
        log(f"check, batches: {data['checks']['batches']}")
    save()
    plot(data, os.path.splitext(path)[0] + ".png")
    failed = [k for k, v in data["checks"].items() if not v.get("ok", True)] + \
        [f"nside {r['nside']} {k}" for r in data["rows"] for k, v in r.items()
         if isinstance(v, dict) and not v.get("check_equal_to_one_gpu", {}).get("ok", True)]
    log("checks: " + ("all passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
