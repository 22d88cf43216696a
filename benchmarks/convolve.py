"""Kernel-split convolution benchmark: the paper's Table 1 and Fig. 10 again (its cost model and
this machine's), predicted against measured errors, and the chosen plan against the peers.

Peers (the GPU machine needs them installed): ducc0 (a sphgpu dependency) and healpy
(``pip install healpy``). Run on the GPU machine:

    python benchmarks/convolve.py --out benchmarks/results

or in parts (``--part``; the other parts' results in the JSON are kept), e.g. the error study at
small nside on a CPU machine:

    python benchmarks/convolve.py --part errors --error-nsides 256 512 --backend cpu

It first checks the CUDA real-space kernel against the numba CPU path (nside 128) and a split
with the harmonic part on the GPU and on the CPU, then

1. table: optimize_split for FWHM 5..15 arcmin at nside 2048 / lmax 4096 / bound 1e-5 with the
   paper's cost model (Table 1, Fig. 10) and with the measured one (this GPU and host);
2. errors: for nside 256, 512, 2048 (lmax = 2 nside; FWHM 7', 10', 15' at lmax 4096, scaled to
   lmax) the optimizer's plan (paper cost model), the smallest l_cut meeting 1e-5 at a few
   supports and one l_cut below it, each convolved with a white-noise map: predicted (Eq. 6)
   against measured spectrum and map errors, plotted side by side (convolve_errors.png);
3. speed: the plan chosen (measured cost model) for FWHM 10' at nside 2048 / lmax 4096 / 1e-5,
   timed against ducc0 map2alm + alm2map (iter 0, every host thread), healpy.smoothing (iter 0,
   and healpy's default iter 3), sphgpu's all-harmonic route on the GPU, and splits at fixed
   cuts, all in this one run; plus the real-space kernel's throughput (pixel pairs per second).

Writes convolve.json (machine info and every number) and convolve_table.png,
convolve_errors.png, convolve_speed.png. ``--replot JSON`` redraws the plots from a run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import sphgpu
from sphgpu import RingGeometry
from sphgpu.bench import machine_info, time_call
from sphgpu.convolve import (ARCMIN, MeasuredCostModel, PaperCostModel, RadialKernel,
                             SplitFitter, convolve, default_theta_grid, measure_error,
                             optimize_split, white_noise)
from sphgpu.convolve.harmonic import harmonic_convolve
from sphgpu.convolve.realspace import pair_count, ring_plan

TABLE1 = {7: (1158, 390), 8: (1070, 390), 9: (1055, 360), 10: (979, 360), 11: (1014, 330),
          12: (960, 330), 13: (940, 330), 14: (929, 300), 15: (961, 270)}
#: Support radii of the paper's theta_cut scan: its theta_cut is the support's full width (see
#: PaperCostModel), in 30' steps up to 600', so radii 15', 30', ... 300'.
PAPER_GRID = PaperCostModel().theta_grid(600.0)


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _sync():
    import cupy

    return cupy.cuda.Device().synchronize


# ----------------------------------------------------------------------------- checks
def checks(log):
    from sphgpu.convolve import _cpu as _realspace_cpu
    from sphgpu.convolve import _cuda as _realspace_cuda
    from sphgpu.convolve import split_kernel

    out = {}
    for nside, theta in ((128, 0.1), (64, 0.5), (33, 0.3)):
        g = RingGeometry.healpix(nside)
        ck = RadialKernel.gaussian(3000.0 / nside, 3 * nside).tabulate(theta)
        pl = ring_plan(g, ck.theta_cut)
        m = white_noise(nside, 1, nmaps=2)
        e = rel(_realspace_cuda.convolve(m, pl, ck), _realspace_cpu.convolve(m, pl, ck))
        out[f"realspace_cuda_vs_cpu_nside{nside}"] = e
        log(f"check: real space cuda vs cpu, nside {nside}, theta {theta}: {e:.1e}")
        assert e < 1e-12, "the CUDA real-space kernel disagrees with the CPU path"
    nside, lmax = 128, 256
    k = RadialKernel.cmb(10.0 * 4096 / lmax, lmax)
    s = split_kernel(k, 60, 60 * ARCMIN * 4096 / lmax)
    m = white_noise(nside, 2)
    want = convolve(m, s, backend="cpu")
    for hb in ("cuda", "cpu"):
        e = rel(convolve(m, s, backend="cuda", harmonic_backend=hb), want)
        out[f"split_cuda_harmonic_{hb}_vs_cpu"] = e
        log(f"check: split on cuda (harmonic part on {hb}) vs cpu: {e:.1e}")
        assert e < 1e-11
    return out


# ----------------------------------------------------------------------------- 1. table
def table(log, fwhms, nside, lmax):
    rows = []
    measured = MeasuredCostModel(nside, lmax, progress=log)
    log(measured.describe())
    for fw in fwhms:
        k = RadialKernel.cmb(fw, lmax)
        fitter = SplitFitter(k, PAPER_GRID.max())
        row = {"fwhm_arcmin": fw}
        for name, cm in (("paper", "paper"), ("measured", measured)):
            t0 = time.perf_counter()
            p = optimize_split(k, nside=nside, cost_model=cm, theta_grid=PAPER_GRID,
                               fitter=fitter)
            row[name] = {"method": p.method, "l_cut": p.l_cut,
                         "theta_cut_arcmin": p.theta_cut_arcmin,
                         "full_width_arcmin": 2 * p.theta_cut_arcmin,
                         "predicted_error": p.predicted_error,
                         "time_harmonic_s": p.time_harmonic, "time_realspace_s": p.time_realspace,
                         "time_total_s": p.time_total, "time_all_harmonic_s": p.time_all_harmonic,
                         "speedup": p.speedup, "harmonic_backend": p.harmonic_backend,
                         "realspace_backend": p.realspace_backend,
                         "optimize_s": time.perf_counter() - t0}
            log(f"FWHM {fw}': {name:8s} {p!r}")
        if fw in TABLE1:
            lc, th = TABLE1[fw]
            row["paper_table1"] = {"l_cut": lc, "theta_cut_arcmin": th,    # full width
                                   "error_here": fitter.error(lc, th / 2 * ARCMIN)}
        rows.append(row)
    return rows, measured.describe()


# ----------------------------------------------------------------------------- 2. errors
#: Beams of the error study, arcmin at lmax 4096 (scaled by 4096 / lmax at other resolutions).
ERROR_FWHMS = (7.0, 10.0, 15.0)
#: Supports of the error study per nside: indices into default_theta_grid(lmax) (30' steps at
#: lmax 4096, scaled), so the pixels per support are the same at every nside. Small on CPU
#: (the real-space sum there runs at ~6e7 pixel pairs per second on two cores).
ERROR_THETA_STEPS = {256: (0, 1), 512: (0,), 2048: (1, 3, 6)}
ERROR_BOUND = 1e-5


def error_pairs(fitter, nside, grid, steps, bound=ERROR_BOUND):
    """The (role, l_cut, theta_cut) pairs measured for one kernel: the optimizer's plan (the
    paper's cost model over the scanned supports), the smallest l_cut meeting ``bound`` at each
    support, and at the smallest support one l_cut below that (a predicted error above the
    bound, to show the estimate on both sides of it)."""
    lmax = fitter.kernel.lmax
    pairs = []
    plan = optimize_split(fitter.kernel, nside=nside, error_bound=bound, cost_model="paper",
                          theta_grid=grid[: max(steps) + 1], fitter=fitter)
    if plan.method != "harmonic":
        # the plan reports the fitted support (a knot at or below the scanned theta_cut)
        theta = float(grid[np.argmin(np.abs(grid - plan.theta_cut))])
        pairs.append(("optimizer", plan.l_cut, theta))
    for i, step in enumerate(steps):
        theta = float(grid[step])
        lc = fitter.smallest_l_cut(theta, bound)
        if lc is None:
            continue
        pairs.append(("smallest l_cut", lc, theta))
        if i == 0 and lc > 0:
            pairs.append(("l_cut too small", max(0, lc - max(4, lmax // 16)), theta))
    seen, out = set(), []
    for role, lc, theta in pairs:         # the optimizer's pair is usually a scanned one too
        if (lc, round(theta, 9)) not in seen:
            seen.add((lc, round(theta, 9)))
            out.append((role, lc, theta))
    return out


def errors(log, nsides, backend, fwhms=ERROR_FWHMS, bound=ERROR_BOUND, seed=11):
    """Predicted (paper Eq. 6, alpha 5) against measured errors of splits on one white-noise
    map per nside: the fractional rms error of the output power spectrum (the bound's quantity)
    and of the map, each against the full-kernel (harmonic) convolution of the same map."""
    rows = []
    for nside in nsides:
        lmax = 2 * nside
        grid = default_theta_grid(lmax)
        steps = ERROR_THETA_STEPS.get(nside, (0, 1))
        m = white_noise(nside, seed)
        geom = RingGeometry.healpix(nside)
        for fw0 in fwhms:
            fw = fw0 * 4096 / lmax
            k = RadialKernel.cmb(fw, lmax)
            fitter = SplitFitter(k, float(grid[max(steps)]))
            full = harmonic_convolve(m, k.bl, geom, backend=backend)
            pairs = error_pairs(fitter, nside, grid, steps, bound)
            if not pairs:
                log(f"nside {nside}, FWHM {fw:.4g}': no split within {bound:g} at theta_cut <= "
                    f"{grid[max(steps)] / ARCMIN:.0f}' (l_cut would reach lmax)")
            for role, l_cut, theta in pairs:
                s = fitter.split(l_cut, theta)
                t0 = time.perf_counter()
                me = measure_error(s, nside, maps=m, full=full, backend=backend)
                rows.append({"nside": nside, "lmax": lmax, "fwhm_arcmin": fw,
                             "fwhm_arcmin_at_lmax_4096": fw0, "role": role, "l_cut": l_cut,
                             "theta_cut_arcmin": s.theta_cut_arcmin, "bound": bound,
                             "predicted": me.predicted, "predicted_no_alpha": me.predicted_no_alpha,
                             "spectrum": me.spectrum, "map": me.map,
                             "predicted_within_bound": me.predicted <= bound,
                             "measured_within_bound": me.spectrum <= bound,
                             "backend": backend, "seconds": time.perf_counter() - t0})
                log(f"nside {nside}, FWHM {fw:.4g}', {role}: l_cut {l_cut}, theta "
                    f"{s.theta_cut_arcmin:.0f}': predicted {me.predicted:.2e} (alpha 5), measured "
                    f"spectrum {me.spectrum:.2e}, map {me.map:.2e} ({rows[-1]['seconds']:.0f} s)")
                bad = me.predicted <= bound < me.spectrum
                if bad:
                    log("  MEASURED ERROR ABOVE THE BOUND for a split predicted within it")
    return rows


# ----------------------------------------------------------------------------- 3. speed
def _l_of(lmax):
    return sphgpu.AlmLayout(lmax).lm()[0]


def speed(log, nside, lmax, fwhm, repeat):
    import cupy

    sync = _sync()
    k = RadialKernel.cmb(fwhm, lmax)
    m = white_noise(nside, 5)
    d = cupy.asarray(m)
    geom = RingGeometry.healpix(nside)
    out = {"nside": nside, "lmax": lmax, "fwhm_arcmin": fwhm}
    t = {}
    log("choosing the plan (measured cost model)")
    t0 = time.perf_counter()
    plan = optimize_split(k, nside=nside, error_bound=1e-5, cost_model="measured")
    out["optimize_s"] = time.perf_counter() - t0
    out["plan"] = {"method": plan.method, "l_cut": plan.l_cut,
                   "theta_cut_arcmin": plan.theta_cut_arcmin,
                   "predicted_error": plan.predicted_error, "predicted_s": plan.time_total,
                   "harmonic_backend": plan.harmonic_backend,
                   "realspace_backend": plan.realspace_backend, "explain": plan.explain()}
    log(plan.explain())
    t["plan_device"] = time_call(lambda: plan.apply(d), repeat=repeat, sync=sync)
    t["plan_host"] = time_call(lambda: plan.apply(m), repeat=repeat, sync=sync)
    t["sphgpu_harmonic_cuda_device"] = time_call(
        lambda: convolve(d, k, method="harmonic", backend="cuda"), repeat=repeat, sync=sync)

    # the peers
    import ducc0

    info = ducc0.healpix.Healpix_Base(nside, "RING").sht_info()
    w = 4 * np.pi / geom.npix
    fl = k.bl[_l_of(lmax)]
    nthreads = os.cpu_count()

    def ducc0_conv():
        a = ducc0.sht.adjoint_synthesis(map=(m * w)[None], lmax=lmax, mmax=lmax, spin=0,
                                        nthreads=nthreads, **info)
        a *= fl
        return ducc0.sht.synthesis(alm=a, lmax=lmax, mmax=lmax, spin=0, nthreads=nthreads,
                                   **info)[0]

    ref = ducc0_conv()
    out["err_plan_vs_ducc0"] = rel(cupy.asnumpy(plan.apply(d)), ref)
    out["err_harmonic_cuda_vs_ducc0"] = rel(
        cupy.asnumpy(convolve(d, k, method="harmonic", backend="cuda")), ref)
    t["ducc0_map2alm_alm2map_all_threads"] = time_call(ducc0_conv, repeat=repeat)
    try:
        import healpy as hp

        t["healpy_smoothing_iter0"] = time_call(
            lambda: hp.smoothing(m, beam_window=k.bl, iter=0, lmax=lmax,
                                 use_pixel_weights=False), repeat=2, max_seconds=60)
        t["healpy_smoothing_iter3"] = time_call(
            lambda: hp.smoothing(m, beam_window=k.bl, lmax=lmax, use_pixel_weights=False),
            repeat=1, max_seconds=60)
        out["err_healpy_iter0_vs_ducc0"] = rel(
            hp.smoothing(m, beam_window=k.bl, iter=0, lmax=lmax, use_pixel_weights=False), ref)
    except ImportError:
        log("healpy not installed: skipped")

    # splits at fixed cuts: where the real-space kernel stands
    fitter = SplitFitter(k, PAPER_GRID.max())
    fixed = []
    for theta_arcmin in (15, 30, 60, 120, 210):
        theta = theta_arcmin * ARCMIN
        lc = fitter.smallest_l_cut(theta, 1e-5)
        if lc is None:
            continue
        s = fitter.split(lc, theta)
        row = {"theta_cut_arcmin": s.theta_cut_arcmin, "l_cut": lc,
               "predicted_error": s.predicted_error, "pairs": pair_count(nside, s.theta_cut)}
        for hb in ("cuda", "cpu"):
            tt = time_call(lambda: convolve(d, s, backend="cuda", harmonic_backend=hb),
                           repeat=max(2, repeat // 2), sync=sync, max_seconds=30)
            row[f"split_harmonic_{hb}_s"] = tt.median
        pl = ring_plan(geom, s.realspace.theta_cut)
        from sphgpu.convolve import _cuda as _realspace_cuda

        tt = time_call(lambda: _realspace_cuda.convolve(d[None], pl, s.realspace),
                       repeat=max(2, repeat // 2), sync=sync, max_seconds=30)
        row["realspace_s"] = tt.median
        row["pairs_per_s"] = row["pairs"] / tt.median
        if theta_arcmin <= 60:           # the quarter-turn symmetry's gain
            tt = time_call(lambda: _realspace_cuda.convolve(d[None], pl, s.realspace, fold=1),
                           repeat=2, sync=sync, max_seconds=30)
            row["realspace_fold1_s"] = tt.median
        tt = time_call(lambda: harmonic_convolve(d, s.harmonic_bl, geom, backend="cuda"),
                       repeat=repeat, sync=sync)
        row["harmonic_cuda_s"] = tt.median
        log(f"split at {s.theta_cut_arcmin:.0f}' / l_cut {lc}: real space {row['realspace_s']:.3g} s "
            f"({row['pairs_per_s']:.3g} pairs/s), harmonic cuda {row['harmonic_cuda_s']:.3g} s, "
            f"split {row['split_harmonic_cuda_s']:.3g} s (harmonic on cuda) / "
            f"{row['split_harmonic_cpu_s']:.3g} s (on cpu)")
        fixed.append(row)
    out["fixed_splits"] = fixed
    out["timings"] = {key: v.as_dict() for key, v in t.items()}
    base = t["ducc0_map2alm_alm2map_all_threads"].median
    out["speedup_plan_device_vs_ducc0"] = base / t["plan_device"].median
    out["speedup_plan_host_vs_ducc0"] = base / t["plan_host"].median
    for key, v in t.items():
        log(f"{key:40s} {v.median * 1e3:10.2f} ms   ({base / v.median:6.2f}x ducc0 all threads)")
    return out


# ----------------------------------------------------------------------------- plots
def plot_errors(errs, path, plt):
    """Predicted and measured errors side by side (the paper's Fig. 9 layout): one panel per
    nside, the splits along x (grouped by beam), log error up, the bound dashed."""
    nsides = sorted({e["nside"] for e in errs})
    fig, axes = plt.subplots(1, len(nsides) + 1, figsize=(5.2 * (len(nsides) + 1), 4.6),
                             squeeze=False)
    axes = axes[0]
    for ax, nside in zip(axes, nsides):
        sel = [e for e in errs if e["nside"] == nside]
        x = np.arange(len(sel))
        ax.semilogy(x, [e["predicted"] for e in sel], "r*", ms=10,
                    label="predicted (Eq. 6, alpha 5)")
        ax.semilogy(x, [e["predicted_no_alpha"] for e in sel], "r*", mfc="none", ms=9,
                    label="predicted, alpha 1")
        ax.semilogy(x, [e["spectrum"] for e in sel], "b^", label="measured: power spectrum")
        ax.semilogy(x, [e["map"] for e in sel], "go", mfc="none", label="measured: map")
        ax.axhline(sel[0]["bound"], color="k", ls="--", lw=1, label="bound")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{e['fwhm_arcmin']:.3g}'\n{e['l_cut']}\n{e['theta_cut_arcmin']:.0f}'"
                            + ("\nopt" if e["role"] == "optimizer" else "") for e in sel],
                           fontsize=7)
        ax.set_xlabel("FWHM / l_cut / theta_cut (opt: optimizer's plan, paper costs)", fontsize=8)
        ax.set_ylabel("fractional rms error")
        ax.set_title(f"nside {nside}, lmax {sel[0]['lmax']} ({sel[0].get('backend', '?')})")
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    ax = axes[-1]
    for nside, marker in zip(nsides, "osd^v"):
        sel = [e for e in errs if e["nside"] == nside]
        ax.loglog([e["predicted_no_alpha"] for e in sel], [e["spectrum"] for e in sel], marker,
                  label=f"nside {nside}: spectrum")
        ax.loglog([e["predicted_no_alpha"] for e in sel], [e["map"] for e in sel], marker,
                  mfc="none", label=f"nside {nside}: map")
    x = np.array([min(e["predicted_no_alpha"] for e in errs) / 2,
                  max(e["predicted_no_alpha"] for e in errs) * 2])
    ax.loglog(x, x, "k:", label="measured = estimate (alpha 1)")
    ax.loglog(x, 5 * x, "k--", lw=0.8, label="alpha 5 (paper)")
    ax.set_xlabel("predicted fractional error without alpha")
    ax.set_ylabel("measured fractional error")
    ax.legend(fontsize=7)
    ax.set_title("measured against predicted, white noise")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot(data, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data.get("table", [])
    if rows:
        fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
        for name, style in (("paper", "o-"), ("measured", "s-")):
            ok = [r for r in rows if r[name]["method"] != "harmonic" and r[name]["speedup"] > 1.01]
            ax[0].plot([r["fwhm_arcmin"] for r in ok], [r[name]["speedup"] for r in ok], style,
                       label=f"sphgpu, {name} costs")
            ax[1].plot([r["fwhm_arcmin"] for r in ok], [r[name]["l_cut"] for r in ok], style,
                       label=f"sphgpu, {name} costs")
            # results from before the full-width reading hold the radius only
            width = [r[name].get("full_width_arcmin", r[name]["theta_cut_arcmin"]) for r in ok]
            ax[2].plot([r["fwhm_arcmin"] for r in ok], width, style,
                       label=f"sphgpu, {name} costs")
        pt = [r for r in rows if "paper_table1" in r]
        ax[1].plot([r["fwhm_arcmin"] for r in pt], [r["paper_table1"]["l_cut"] for r in pt], "k^--",
                   label="paper, Table 1")
        ax[2].plot([r["fwhm_arcmin"] for r in pt],
                   [r["paper_table1"]["theta_cut_arcmin"] for r in pt], "k^--",
                   label="paper, Table 1")
        ax[0].set_ylabel("predicted speedup over all-harmonic")
        ax[0].set_title("Fig. 10 again (paper: 12-18x, its costs)")
        ax[1].set_ylabel("l_cut")
        ax[2].set_ylabel("support full width (the paper's theta_cut) [arcmin]")
        for a in ax:
            a.set_xlabel("beam FWHM [arcmin]")
            a.legend(fontsize=8)
            a.grid(alpha=0.3)
        fig.suptitle(f"Kernel split, nside 2048, lmax 4096, bound 1e-5 ({data['machine'].get('gpu')})")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "convolve_table.png"), dpi=100)
        plt.close(fig)
    errs = data.get("errors", [])
    if errs:
        plot_errors(errs, os.path.join(outdir, "convolve_errors.png"), plt)
    sp = data.get("speed")
    if sp:
        t = {k: v["median_s"] for k, v in sp["timings"].items()}
        fig, ax = plt.subplots(1, 2, figsize=(14, 4.2))
        labels = list(t)
        ax[0].barh(labels, [t[k] for k in labels], color="#4393c3")
        ax[0].set_xscale("log")
        ax[0].invert_yaxis()
        ax[0].set_xlabel("seconds (median)")
        ax[0].set_title(f"FWHM {sp['fwhm_arcmin']}', nside {sp['nside']}, lmax {sp['lmax']}: "
                        f"plan = {sp['plan']['method']}")
        fx = sp.get("fixed_splits", [])
        if fx:
            th = [r["theta_cut_arcmin"] for r in fx]
            ax[1].loglog(th, [r["realspace_s"] for r in fx], "o-", label="real-space part (GPU)")
            ax[1].loglog(th, [r["harmonic_cuda_s"] for r in fx], "s-", label="harmonic part (GPU)")
            ax[1].loglog(th, [r["split_harmonic_cuda_s"] for r in fx], "^-",
                         label="split, both on the GPU")
            ax[1].loglog(th, [r["split_harmonic_cpu_s"] for r in fx], "v-",
                         label="split, harmonic on the CPU")
            ax[1].axhline(t["ducc0_map2alm_alm2map_all_threads"], color="k", ls="--",
                          label="ducc0 all threads")
            ax[1].axhline(t["sphgpu_harmonic_cuda_device"], color="k", ls=":",
                          label="sphgpu all-harmonic GPU")
            ax[1].set_xlabel("theta_cut [arcmin] (l_cut: smallest meeting 1e-5)")
            ax[1].set_ylabel("seconds")
            ax[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "convolve_speed.png"), dpi=100)
        plt.close(fig)


PARTS = ("table", "errors", "speed")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--fwhm", type=float, nargs="+", default=[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
    p.add_argument("--part", nargs="+", default=list(PARTS), choices=PARTS,
                   help="parts to run (default all); the results of the others already in "
                        "--out are kept, e.g. '--part errors --error-nsides 256 512 --backend "
                        "cpu' on a CPU machine and '--part errors --error-nsides 2048' on a GPU")
    p.add_argument("--skip", nargs="*", default=[], choices=PARTS,
                   help="parts to leave out (their results already in --out are kept)")
    p.add_argument("--error-nsides", type=int, nargs="+", default=[256, 512, 2048])
    p.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                   help="backend of the errors part (auto: cuda if usable)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--replot", metavar="JSON", help="only redraw the plots of an earlier run")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), os.path.dirname(args.replot) or ".")
        return 0
    os.makedirs(args.out, exist_ok=True)
    parts = [x for x in args.part if x not in args.skip]
    gpu = sphgpu.cuda_available() and not os.environ.get("NUMBA_ENABLE_CUDASIM")
    if ("table" in parts or "speed" in parts) and not gpu:
        p.error("the table and speed parts need a CUDA GPU (run '--part errors --backend cpu' "
                "without one)")
    backend = args.backend if args.backend != "auto" else ("cuda" if gpu else "cpu")

    def log(msg):
        print(msg, flush=True)

    path = os.path.join(args.out, "convolve.json")
    data = {}
    if set(parts) != set(PARTS) and os.path.exists(path):  # a run in parts keeps the others
        with open(path) as f:
            data = json.load(f)
    info = machine_info()
    now = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if "machine" not in data or gpu:          # the headline machine is the GPU one
        data.update(machine=info, date=now)
    for part in parts:                        # which machine made each part
        data.setdefault("part_machines", {})[part] = {"machine": info, "date": now,
                                                      "backend": backend if part == "errors"
                                                      else "cuda"}
    log(json.dumps(info))

    def save():
        with open(path, "w") as f:
            json.dump(data, f, indent=1, default=float)

    if gpu:
        data["checks"] = checks(log)
        save()
    if "table" in parts:
        data["table"], data["measured_cost_model"] = table(log, args.fwhm, 2048, 4096)
        save()
    if "errors" in parts:
        rows = errors(log, args.error_nsides, backend)
        kept = [e for e in data.get("errors", []) if e["nside"] not in args.error_nsides]
        data["errors"] = sorted(kept + rows, key=lambda e: e["nside"])
        save()
    if "speed" in parts:
        data["speed"] = speed(log, 2048, 4096, 10.0, args.repeat)
        save()
    plot(data, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
