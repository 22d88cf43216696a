"""Angular correlation benchmark: sphgpu's exact DD/DR/RR on the GPU against its peers, one run.

Peers (same machine, same run):
  * TreeCorr (pip wheel ``treecorr``), exact mode: bin_slop=0, metric="Arc" (great-circle
    angles, the quantity sphgpu bins), OpenMP on all host threads;
  * sphgpu's own "cpu" backend (Numba, all host cores), which must give identical integers.

Workload (the issue's): a clustered catalog of 84,000 points and 900,000 randoms over a quarter
of the sky (RA 0-180, Dec 0-90), 20 log bins from 0.01 to 10 degrees; also scaled-down sizes
(``--fractions``: both catalogs scaled by f, pairs by f^2).

Run on the GPU machine:  python benchmarks/tpacf.py --out benchmarks/results
Checks the GPU counts against the CPU backend (equal integers) and TreeCorr (which decides
pairs within rounding of an edge with its own arithmetic: differences are reported, not
asserted), times DD, DR and RR (medians; sphgpu from prepared catalogs: sorted, on the device;
the plan of work items is rebuilt in every call), breaks one DR call into plan / upload /
kernel, optionally sweeps launch parameters (``--sweep``), writes tpacf.json and
tpacf_speed.png and prints the README's table. ``--replot JSON`` redraws the plot and prints
the table from an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from sphgpu.bench import machine_info, time_call

NAMES = ("DD", "DR", "RR")


def _workload(fraction, seed=1):
    from sphgpu.tpacf import Catalog
    from sphgpu.tpacf.mocks import QUARTER_SKY, clustered_catalog, uniform_randoms

    nd, nr = round(84_000 * fraction), round(900_000 * fraction)
    d = Catalog(*clustered_catalog(nd, QUARTER_SKY, seed=seed))
    r = Catalog(*uniform_randoms(nr, QUARTER_SKY, seed=seed + 1))
    return d, r


def _pairs(d, r):
    return {"DD": (d, None), "DR": (d, r), "RR": (r, None)}


def _treecorr_counts(bins, c1, c2, threads):
    import treecorr

    nn = treecorr.NNCorrelation(min_sep=bins.edges[0], max_sep=bins.edges[-1],
                                nbins=bins.nbins, sep_units=bins.unit, bin_slop=0,
                                metric="Arc")
    nn.process(c1, c2, num_threads=threads) if c2 is not None else nn.process(
        c1, num_threads=threads)
    return np.rint(nn.npairs).astype(np.int64)


def _time_peer(fn, budget, predicted):
    """Time a slow peer: skipped when the prediction exceeds the budget; when the first run
    (which builds TreeCorr's trees, cached on its catalogs) is cheap, a second, warm run is
    the timing, else the first run is."""
    if predicted is not None and predicted > budget:
        return None, "skipped (predicted %.0f s > budget)" % predicted
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if first < budget / 4:
        t = time_call(fn, repeat=1, warmup=0)
        return {"median_s": t.median, "first_s": first, "warm": True}, out
    return {"median_s": first, "first_s": first, "warm": False}, out


def run(args):
    from numba import cuda

    import treecorr
    from sphgpu.tpacf import AngularBins, pair_counts
    from sphgpu.tpacf import _cuda

    bins = AngularBins.log(0.01, 10, 20, unit="deg")
    threads = os.cpu_count()
    info = machine_info()
    info["treecorr"] = treecorr.__version__
    print(json.dumps(info), flush=True)
    sync = cuda.synchronize
    rows = []
    peer_time = {}                           # (peer, name) -> (pairs, seconds): to predict
    for frac in args.fractions:
        d, r = _workload(frac)
        row = {"fraction": frac, "n_data": d.size, "n_random": r.size, "counts": {}}
        t0 = time.perf_counter()
        for c in (d, r):                      # sort, unit vectors, device copies: once
            pair_counts(c, bins=bins, backend="cuda")
        row["prepare_s"] = time.perf_counter() - t0
        tc = {c: treecorr.Catalog(ra=c.ra, dec=c.dec, ra_units="deg", dec_units="deg")
              for c in (d, r)}
        for name, (a, b) in _pairs(d, r).items():
            res = {}
            gpu = pair_counts(a, b, bins=bins, backend="cuda")
            gpu64 = pair_counts(a, b, bins=bins, backend="cuda", precision="float64")
            assert np.array_equal(gpu.counts, gpu64.counts), name
            res["pairs_in_bins"] = int(gpu.counts.sum())
            res["pairs_compared"] = gpu.pairs_compared
            res["refined"] = gpu.refined
            for prec in ("float32", "float64"):
                t = time_call(lambda: pair_counts(a, b, bins=bins, backend="cuda",
                                                  precision=prec),
                              repeat=args.repeat, warmup=1, sync=sync)
                res[f"sphgpu_cuda_{prec}"] = t.as_dict()
            prof = {}
            _cuda.count_pairs(a, b, bins, precision="float32", profile=prof)
            res["cuda_breakdown_s"] = prof
            # peers
            n_pairs = a.size * (a.size if b is None else b.size)
            for peer in ("cpu", "treecorr"):
                pred = None
                if (peer, name) in peer_time:
                    p0, s0 = peer_time[(peer, name)]
                    pred = s0 * n_pairs / p0
                if peer == "cpu":
                    fn = lambda: pair_counts(a, b, bins=bins, backend="cpu")  # noqa: E731
                else:
                    fn = lambda: _treecorr_counts(  # noqa: E731
                        bins, tc[a], None if b is None else tc[b], threads)
                t, out = _time_peer(fn, args.peer_budget, pred)
                if t is None:
                    res[peer] = out
                    continue
                res[peer] = t
                peer_time[(peer, name)] = (n_pairs, t["median_s"])
                counts = out.counts if peer == "cpu" else out
                if peer == "cpu":
                    assert np.array_equal(counts, gpu.counts), f"{name}: cpu != cuda"
                    res["cpu_equal"] = True
                else:
                    diff = counts - gpu.counts
                    res["treecorr_diff"] = diff.tolist()
                    res["treecorr_equal"] = bool(np.all(diff == 0))
            g = res["sphgpu_cuda_float32"]["median_s"]
            for peer in ("cpu", "treecorr"):
                if isinstance(res[peer], dict):
                    res[f"speedup_vs_{peer}"] = res[peer]["median_s"] / g
            row["counts"][name] = res
            msg = ", ".join(f"{k} {res[k]['median_s'] * 1e3:.1f} ms" for k in
                            ("sphgpu_cuda_float32", "sphgpu_cuda_float64", "cpu", "treecorr")
                            if isinstance(res[k], dict))
            print(f"f={frac} {name}: {msg} | compared {res['pairs_compared']:.3g}, in bins "
                  f"{res['pairs_in_bins']:.3g}, refined {res['refined']}, breakdown "
                  + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in prof.items()
                              if isinstance(v, float)), flush=True)
        tot = {}
        for key in ("sphgpu_cuda_float32", "cpu", "treecorr"):
            vals = [row["counts"][n][key] for n in NAMES]
            if all(isinstance(v, dict) for v in vals):
                tot[key] = sum(v["median_s"] for v in vals)
        row["total_s"] = tot
        for peer in ("cpu", "treecorr"):
            if peer in tot:
                row[f"total_speedup_vs_{peer}"] = tot[peer] / tot["sphgpu_cuda_float32"]
        print(f"f={frac} DD+DR+RR: " + ", ".join(f"{k} {v:.3f} s" for k, v in tot.items()),
              flush=True)
        rows.append(row)
        result = save(info, threads, rows, args)       # after every size: a cut run keeps it

    if args.sweep:
        result["sweep"] = sweep(bins)
        save(info, threads, rows, args, result)
    plot(result, os.path.join(args.out, "tpacf_speed.png"))
    print(table(result))
    return 0


def save(info, threads, rows, args, result=None):
    """Write tpacf.json; returns the result dict."""
    if result is None:
        result = {"machine": info, "host_threads": threads, "results": rows,
                  "bins": {"theta_min_deg": 0.01, "theta_max_deg": 10, "nbins": 20,
                           "spacing": "log"}}
    result["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with open(os.path.join(args.out, "tpacf.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def sweep(bins):
    """DR at full size over launch parameters and the band height (kernel time, float32)."""
    from sphgpu.tpacf import _cuda, grid, pair_counts

    d, r = _workload(1.0)
    for c in (d, r):
        pair_counts(c, bins=bins, backend="cuda")
    out = []
    base = grid.BAND_FRACTION
    for bf in (0.125, 0.25, 0.5):
        grid.BAND_FRACTION = bf
        for th in (128, 256, 512):
            for it in (64, 128, 256):
                for jm in (1024, 4096, 16384):
                    prof = {}
                    try:
                        _cuda.count_pairs(d, r, bins, threads=th, i_tile=it, j_max=jm)
                        _cuda.count_pairs(d, r, bins, threads=th, i_tile=it, j_max=jm,
                                          profile=prof)
                    except Exception as exc:   # a shape that does not fit: recorded
                        prof = {"error": str(exc)}
                    prof.update(band_fraction=bf)
                    out.append(prof)
                    print("sweep", prof, flush=True)
    grid.BAND_FRACTION = base
    return out


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["results"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"sphgpu_cuda_float32": ("o-", "sphgpu cuda"),
              "cpu": ("s--", f"sphgpu cpu ({result.get('host_threads')} threads)"),
              "treecorr": ("^:", "TreeCorr exact")}
    colors = {"DD": "C0", "DR": "C1", "RR": "C2"}
    ax = axes[0]
    for name in NAMES:
        for key, (style, label) in styles.items():
            pts = [(r["n_random"], r["counts"][name][key]["median_s"]) for r in rows
                   if isinstance(r["counts"][name].get(key), dict)]
            if pts:
                ax.loglog(*zip(*pts), style, color=colors[name], label=f"{name} {label}")
    ax.set_xlabel("randoms (data = 84/900 of them)")
    ax.set_ylabel("seconds (median)")
    ax.set_title("Exact pair counts, 20 log bins 0.01-10 deg")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax = axes[1]
    for peer, style in (("cpu", "s--"), ("treecorr", "^:")):
        for name in NAMES:
            pts = [(r["n_random"], r["counts"][name][f"speedup_vs_{peer}"]) for r in rows
                   if f"speedup_vs_{peer}" in r["counts"][name]]
            if pts:
                ax.semilogx(*zip(*pts), style, color=colors[name],
                            label=f"{name} vs {styles[peer][1]}")
    ax.axhline(20, color="k", lw=0.8, alpha=0.5)
    ax.set_yscale("log")
    ax.set_xlabel("randoms")
    ax.set_ylabel("speedup of sphgpu cuda")
    ax.set_title(f"on {result['machine'].get('gpu')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def table(result):
    """The README's markdown table (full-size workload and every size's totals)."""
    def sec(t):
        return "–" if t is None else (f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s")

    def ms(v):
        return sec(v["median_s"]) if isinstance(v, dict) else "–"

    def x(d, key):
        v = d.get(key)
        return "–" if v is None else (f"{v:.0f}x" if v >= 10 else f"{v:.2g}x")

    lines = ["| n data / randoms | count | pairs in bins | sphgpu cuda float32 / float64 | "
             f"sphgpu cpu ({result.get('host_threads')} thr) | TreeCorr exact | "
             "speedup vs cpu / TreeCorr |", "|---|---|---|---|---|---|---|"]
    for r in result["results"]:
        for name in NAMES + ("total",):
            if name == "total":
                tot = r["total_s"]
                cells = ["**DD+DR+RR**", "", sec(tot.get("sphgpu_cuda_float32")),
                         sec(tot.get("cpu")), sec(tot.get("treecorr")),
                         f"{x(r, 'total_speedup_vs_cpu')} / {x(r, 'total_speedup_vs_treecorr')}"]
            else:
                c = r["counts"][name]
                cells = [name, f"{c['pairs_in_bins']:.3g}",
                         f"{ms(c['sphgpu_cuda_float32'])} / {ms(c['sphgpu_cuda_float64'])}",
                         ms(c["cpu"]), ms(c["treecorr"]),
                         f"{x(c, 'speedup_vs_cpu')} / {x(c, 'speedup_vs_treecorr')}"]
            lines.append(f"| {r['n_data']:,} / {r['n_random']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--peer-budget", type=float, default=120.0,
                   help="seconds a peer may take for one count: a count predicted (from the "
                        "previous size, pairs scaling) to take longer is skipped")
    p.add_argument("--sweep", action="store_true", help="also sweep launch parameters")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--replot", metavar="JSON", help="only redraw the plot of an earlier run")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            result = json.load(f)
        plot(result, os.path.join(os.path.dirname(args.replot), "tpacf_speed.png"))
        print(table(result))
        return 0
    os.makedirs(args.out, exist_ok=True)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
