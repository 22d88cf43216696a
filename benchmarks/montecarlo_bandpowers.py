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

  python benchmarks/montecarlo_bandpowers.py --out benchmarks/results     # GPU machine
  python benchmarks/montecarlo_bandpowers.py --quick --backend cpu --out /tmp/mcb

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

ARCMIN = math.pi / 10800


def log(msg):
    print(msg, flush=True)


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
    return MonteCarlo(cls, args.nside, lmax, pol=True, fwhm=args.fwhm * ARCMIN, mask=mask,
                      noise_sigma=args.sigma, seed=1, backend=args.backend, **kw)


def sync():
    try:
        import cupy

        cupy.cuda.Device().synchronize()
    except Exception:       # noqa: BLE001  no CuPy or no GPU: nothing to wait for
        pass


def bench(args, bins):
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
    t0 = time.perf_counter()
    mc.run(args.nsims, progress=False)
    if bins:
        bp = mc.bandpowers
    sync()
    dt = time.perf_counter() - t0
    row = dict(bins=bins, construct_s=construct, construct_again_s=construct_again,
               first_run_s=first, nsims=args.nsims,
               run_s=dt, rate=args.nsims / dt, total_sims=mc.nsims, warm_sims=done)
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
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args()
    if args.quick:
        args.nside, args.nsims, args.warm, args.width = 64, 40, 8, 16
    from sphgpu.bench import machine_info

    info = machine_info()
    gpu = info.get("gpu")
    tag = "" if not gpu else "_" + "".join(c for c in gpu.split()[-1].lower() if c.isalnum())
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"montecarlo_bandpowers{tag}{'_batch%d' % args.batch if args.batch else ''}.json"
    rows = []
    for bins in (True,) if args.bins_only else (True, False):
        if not bins:        # the rate without decoupling needs fewer simulations
            args.nsims = max(args.nsims // 4, 1)
        row = bench(args, bins)
        rows.append(row)
        log(f"nside {args.nside} pol bins={bins}: construct {row['construct_s']:.2f} s, first "
            f"run {row['first_run_s']:.2f} s, {row['nsims']} sims in {row['run_s']:.2f} s "
            f"({row['rate']:.1f}/s)" + (f", chi2 {row['chi2_mean_vs_expected']}" if bins
                                         else ""))
        # written after each row: a run cut short keeps what it measured
        path.write_text(json.dumps({
            "benchmark": "montecarlo_bandpowers",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "machine": info, "backend": args.backend, "nside": args.nside,
            "lmax": args.lmax or 2 * args.nside, "fwhm_arcmin": args.fwhm,
            "batch_size": args.batch or "auto",
            "sigma_uK": args.sigma, "bin_width": args.width,
            "goal": "1000 polarized simulations to bandpowers <= 40 s (nside 2048, lmax 4096, "
                    "one H200)", "rows": rows}, indent=1))
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
