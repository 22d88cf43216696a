"""Polarized masked simulations to decoupled bandpowers: ``MonteCarlo(..., pol=True,
bins=...)`` on one GPU, timed as a user runs it.

Workload (issue 41's goal: 1000 simulations at nside 2048 / lmax 4096 in at most 40 s on one
H200): Gaussian T, E, B a_lm from the Planck 2018 spectra (TT, EE, BB, TE), a Gaussian beam
(``--fwhm`` arcmin), alm2map to I, Q, U, white noise (``--sigma`` muK per pixel), an apodized
mask (``|b| < 20 deg`` hidden, 5 deg cosine edge), map2alm (``iter=0``), the six pseudo-spectra,
then decoupled bandpowers (linear bins of ``--width``) through the mask's MASTER coupling.

Timed, each apart:
  * ``construct_s``: ``MonteCarlo(...)`` itself, which computes the mask's coupling (all four
    blocks) and the Workspaces once; ``construct_again_s`` a second one in the same process
    (without the first's kernel tuning and compilation);
  * ``first_run_s``: the first ``run`` of one batch (compilation or its disk cache, plans);
  * ``run_s``: ``run(--nsims)`` after that, the bandpowers of every simulation included
    (``bandpowers`` is read inside the timed span); the rate is ``nsims / run_s``;
  * the same pipeline without ``bins`` (pseudo-spectra only, a quarter of the simulations),
    for the cost of decoupling.
Check, in the same run: the mean decoupled EE and TT bandpowers against ``expected_bandpowers``
(chi-square over the bins, recorded, not asserted).

With ``--gpus N [N ...]`` (issue 41: "on the 4 GPUs of one node through ``sphgpu.distributed``,
at least 0.9 parallel efficiency"), after the measurements above: for each N a fresh local Dask
cluster of N GPU workers (one a GPU), the same ``MonteCarlo`` (same construction, same batch as
the plain run) run twice with ``run(k, client=client)``, k = ``--dask-nsims`` a worker (256 by
default) times N: the first run on the fresh cluster (``first_run_s``: the plan sent, every
worker compiled and tuned) and a steady run; each rate is k over the run's time, the bandpowers
read inside it as above. Efficiency = steady rate / (N x the plain run's rate above, with bins).
Each simulation depends only on (seed, its number): the Dask run's bandpowers are compared with
the plain run's for the simulation numbers both ran (``max_rel_diff_vs_plain``, each spectrum's
largest difference over its largest plain value). ``--gpus 0`` runs up to ``--cpu-workers``
single-thread CPU workers instead (1, 2, 4, 8; a smoke test of the code path, with
``--backend cpu``). Recorded under ``dask``, one entry a number of workers.

  python benchmarks/montecarlo_bandpowers.py --out benchmarks/results     # GPU machine
  python benchmarks/montecarlo_bandpowers.py --gpus 1 2 4 --out benchmarks/results  # 4-GPU node
  python benchmarks/montecarlo_bandpowers.py --quick --backend cpu --out /tmp/mcb
  python benchmarks/montecarlo_bandpowers.py --quick --backend cpu --gpus 0 --cpu-workers 2 \
      --out /tmp/mcb

Writes DIR/montecarlo_bandpowers[_<gpu>].json with the machine's description.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import pathlib
import time

import numpy as np
from _scaling_common import fresh_cluster, free_pool, log, sync, workers

ARCMIN = math.pi / 10800
#: simulations a Dask worker runs in each of the two timed cluster runs (``--dask-nsims``)
DASK_NSIMS, DASK_NSIMS_QUICK = 256, 16


def make(args, bins):
    from sphgpu.data import planck2018_cl
    from sphgpu.sims import MonteCarlo, latitude_cut_mask

    lmax = args.lmax or 2 * args.nside
    cls = planck2018_cl(lmax, spectra=("TT", "EE", "BB", "TE"))
    mask = latitude_cut_mask(args.nside, 20.0, apodization_deg=5.0)
    kw = {}
    if bins:
        from sphgpu.master import Bins

        kw["bins"] = Bins.linear(lmax, args.width)
    if args.purify_b:
        kw["purify_b"] = True
    return MonteCarlo(cls, args.nside, lmax, pol=True, fwhm=args.fwhm * ARCMIN, mask=mask,
                      noise_sigma=args.sigma, seed=1, backend=args.backend, **kw)


def bench(args, bins, ref=None):
    """One row of the plain (in-process) measurements; with ``bins`` and a dict ``ref``, the
    timed run's simulation numbers and bandpowers go into it (``indices``, ``bandpowers``)."""
    from sphgpu import backends
    from sphgpu.sims.batching import auto_batch_size

    where = backends.resolve(args.backend, "sht")
    t0 = time.perf_counter()
    mc = make(args, bins)
    construct = time.perf_counter() - t0
    t0 = time.perf_counter()
    mc.run(1, progress=False)
    first = time.perf_counter() - t0
    mc.batch_size = args.batch
    # a second construction in this process: the first one's kernel tuning and compilation
    # (once per GPU and size, then on disk) apart from the coupling's own work
    t0 = time.perf_counter()
    make(args, bins)
    construct_again = time.perf_counter() - t0
    mc.run(args.warm, progress=False)
    done = mc.nsims
    # the batch the timed run takes (the Dask runs take the same): the one given, else the
    # one run() chooses from free memory now
    batch = args.batch or auto_batch_size(mc.plan, where)
    t0 = time.perf_counter()
    mc.run(args.nsims, progress=False)
    if bins:
        bp = mc.bandpowers
    sync(where)
    dt = time.perf_counter() - t0
    row = dict(bins=bins, construct_s=construct, construct_again_s=construct_again,
               first_run_s=first, nsims=args.nsims,
               run_s=dt, rate=args.nsims / dt, total_sims=mc.nsims, warm_sims=done,
               batch=int(batch))
    if bins and ref is not None:
        ref.update(indices=mc.indices, bandpowers=bp)
    if bins:
        mean = mc.bandpower_mean
        std = mc.bandpower_std
        expected = mc.expected_bandpowers
        n = mc.nsims
        chi2 = {}
        names = list(mc.names)
        for k, name in enumerate(names):
            ok = std[k] > 0
            z = (mean[k][ok] - expected[k][ok]) / (std[k][ok] / math.sqrt(n))
            chi2[name] = {"chi2": float(np.sum(z ** 2)), "bins": int(ok.sum())}
        row.update(bandpowers_shape=list(np.shape(bp)), chi2_mean_vs_expected=chi2,
                   nbins=int(mean.shape[-1]))
    return row


def dask_row(args, client, n, backend, plain, ref):
    """The Monte Carlo on ``client``'s ``n`` fresh workers: a first run and a steady one of
    ``--dask-nsims`` x ``n`` simulations each, at the batch of the plain row ``plain``; rates,
    efficiency against ``plain["rate"]``, and the bandpowers against the plain run's (``ref``)
    for the simulation numbers both ran."""
    mc = make(args, True)                        # same construction as the plain run
    free_pool(backend)                           # its coupling's memory: worker 0 shares the GPU
    mc.batch_size = plain["batch"]
    k = args.dask_nsims * n

    def timed():
        t0 = time.perf_counter()
        mc.run(k, progress=False, client=client)
        _ = mc.bandpowers                        # read inside the span, as the plain run does
        return time.perf_counter() - t0

    first = timed()
    steady = timed()
    if mc.stopped or mc.nsims != 2 * k:
        raise RuntimeError(f"the Dask runs finished {mc.nsims} of {2 * k} simulations")
    idx, bp = mc.indices, mc.bandpowers
    both = np.intersect1d(idx, ref["indices"])
    got = bp[np.searchsorted(idx, both)]
    want = ref["bandpowers"][np.searchsorted(ref["indices"], both)]
    # each spectrum against its own largest plain value (BB is far below TT)
    scale = np.max(np.abs(want), axis=(0, 2))
    scale[scale == 0] = 1.0
    diff = np.max(np.abs(got - want), axis=(0, 2)) / scale
    rate, plain_rate = k / steady, plain["rate"]
    # run(client=) lowers the batch so that every worker gets one (not at the full sizes)
    batch = min(plain["batch"], -(-k // n))
    return {"workers": n, "backend": backend, "sims": k, "batch": batch,
            "first_run_s": first, "first_run_rate": k / first, "steady_s": steady,
            "rate": rate, "first_over_steady": steady / first, "plain_rate": plain_rate,
            "efficiency": rate / (n * plain_rate), "compared_sims": int(both.size),
            "max_rel_diff_vs_plain": float(diff.max()) if both.size else None,
            "rel_diff_vs_plain": dict(zip(mc.names, map(float, diff))) if both.size else None,
            "bandpowers_equal": bool(np.array_equal(got, want)) if both.size else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nside", type=int, default=2048)
    ap.add_argument("--lmax", type=int, default=None, help="default 2 nside")
    ap.add_argument("--nsims", type=int, default=1000)
    ap.add_argument("--warm", type=int, default=32, help="simulations run before timing")
    ap.add_argument("--width", type=int, default=32, help="bin width in l")
    ap.add_argument("--fwhm", type=float, default=5.0, help="beam FWHM, arcmin")
    ap.add_argument("--sigma", type=float, default=10.0, help="white noise, muK per pixel")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--batch", type=int, default=None,
                    help="simulations a batch (default: the Monte Carlo's own choice)")
    ap.add_argument("--bins-only", action="store_true",
                    help="skip the run without bins (pseudo-spectra only)")
    ap.add_argument("--quick", action="store_true", help="nside 64, 40 simulations")
    ap.add_argument("--purify-b", action="store_true",
                    help="pure B (Smith 2006) instead of the standard pseudo-B; the file name "
                         "gains _pureb")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--gpus", type=int, nargs="+", default=None,
                    help="also run on fresh local Dask clusters of these numbers of GPU "
                         "workers (e.g. 1 2 4), after the one-GPU measurements; 0: CPU "
                         "workers instead (see --cpu-workers); default: no Dask runs")
    ap.add_argument("--cpu-workers", type=int, default=2,
                    help="with --gpus 0: the largest number of single-thread CPU workers")
    ap.add_argument("--dask-nsims", type=int, default=None,
                    help=f"simulations a worker in each Dask run (default {DASK_NSIMS}, "
                         f"{DASK_NSIMS_QUICK} with --quick): N workers run N times this")
    args = ap.parse_args()
    if args.quick:
        args.nside, args.nsims, args.warm, args.width = 64, 40, 8, 16
    if args.dask_nsims is None:
        args.dask_nsims = DASK_NSIMS_QUICK if args.quick else DASK_NSIMS
    units = []
    if args.gpus is not None:                 # checked before the one-GPU runs, not after
        if 0 in args.gpus and args.gpus != [0]:
            ap.error("--gpus 0 (CPU workers) goes alone")
        from sphgpu import backends

        dask_backend, units = workers(args, ())
        plain_backend = (backends.resolve("auto", "sht") if args.backend == "auto"
                         else args.backend)
        if dask_backend != plain_backend:
            ap.error(f"--gpus {' '.join(map(str, args.gpus))} runs {dask_backend} workers: "
                     f"give --backend {dask_backend} (the plain run it is compared with)")
        if dask_backend == "cuda":
            import sphgpu.distributed as sd

            have = len(sd.visible_gpus())
            if max(units) > have:
                ap.error(f"--gpus {max(units)}: this machine shows {have} GPU(s)")
        if not units:
            ap.error("--gpus 0 needs --cpu-workers 1 or more")
    from sphgpu.bench import machine_info

    info = machine_info()
    gpu = info.get("gpu")
    tag = "" if not gpu else "_" + "".join(c for c in gpu.split()[-1].lower() if c.isalnum())
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (f"montecarlo_bandpowers{tag}{'_batch%d' % args.batch if args.batch else ''}"
                  f"{'_pureb' if args.purify_b else ''}.json")
    rows, dask, ref = [], {}, {}

    def save():
        # written after each row: a run cut short keeps what it measured
        data = {
            "benchmark": "montecarlo_bandpowers",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "machine": info, "backend": args.backend, "nside": args.nside,
            "lmax": args.lmax or 2 * args.nside, "fwhm_arcmin": args.fwhm,
            "batch_size": args.batch or "auto",
            "sigma_uK": args.sigma, "bin_width": args.width, "purify_b": args.purify_b,
            "goal": "1000 polarized simulations to bandpowers <= 40 s (nside 2048, lmax 4096, "
                    "one H200)", "rows": rows}
        if units:
            data["dask_goal"] = ("parallel efficiency >= 0.9 on the 4 GPUs of one node "
                                 "(steady rate / (4 x the plain run's rate))")
            data["dask"] = dask
        path.write_text(json.dumps(data, indent=1))

    for bins in (True,) if args.bins_only else (True, False):
        if not bins:        # the rate without decoupling needs fewer simulations
            args.nsims = max(args.nsims // 4, 1)
        row = bench(args, bins, ref if bins else None)
        rows.append(row)
        log(f"nside {args.nside} pol bins={bins}: construct {row['construct_s']:.2f} s, first "
            f"run {row['first_run_s']:.2f} s, {row['nsims']} sims in {row['run_s']:.2f} s "
            f"({row['rate']:.1f}/s)" + (f", chi2 {row['chi2_mean_vs_expected']}" if bins
                                         else ""))
        save()
    if units:
        plain = rows[0]                            # with bins, the row the efficiency divides
        free_pool(dask_backend)                    # worker 0 shares this process's GPU
        kind = "GPU" if dask_backend == "cuda" else "CPU"
        for n in units:
            row = dask[str(n)] = {}
            with fresh_cluster(n, dask_backend, row) as client:
                row.update(dask_row(args, client, n, dask_backend, plain, ref))
            save()
            diff = row["max_rel_diff_vs_plain"]
            log(f"{n} {kind} worker(s): {row['sims']} sims a run, batch {row['batch']}: first "
                f"run {row['first_run_s']:.2f} s ({row['first_run_rate']:.1f}/s), steady "
                f"{row['steady_s']:.2f} s ({row['rate']:.1f}/s), efficiency "
                f"{row['efficiency']:.2f} (plain {row['plain_rate']:.1f}/s); bandpowers vs "
                f"plain over {row['compared_sims']} sims: "
                + ("-" if diff is None else f"equal {row['bandpowers_equal']}, max rel diff "
                                            f"{diff:.1e}"))
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
