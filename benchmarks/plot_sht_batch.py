"""Plot the results of ``sht_batch.py``: ms a map against maps a call, one line per GPU and
nside, with issue 17's goals at nside 2048 (one map: alm2map 10 ms, map2alm 14 ms; 16 maps: 7
and 9 ms a map).

    python benchmarks/plot_sht_batch.py benchmarks/results/sht_batch_h100.json \\
        benchmarks/results/sht_batch_h200.json --out benchmarks/results/sht_batch.png
"""

from __future__ import annotations

import argparse
import json

#: (maps a call, ms a map) of the goals at nside 2048
GOALS = {"alm2map": [(1, 10.0), (16, 7.0)], "map2alm": [(1, 14.0), (16, 9.0)]}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ("alm2map", "map2alm")):
        for res in results:
            gpu = res["machine"].get("gpu", "?")
            for nside in sorted({r["nside"] for r in res["rows"]}):
                rows = sorted((r for r in res["rows"] if r["nside"] == nside),
                              key=lambda r: r["maps"])
                ax.plot([r["maps"] for r in rows], [r[f"{op}_ms_per_map"] for r in rows], "o-",
                        label=f"{gpu}, nside {nside}")
        k, ms = zip(*GOALS[op])
        ax.plot(k, ms, "rx", markersize=10, mew=2, label="goal at nside 2048")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("maps a call (k)")
        ax.set_ylabel("ms a map")
        ax.set_title(f"public {op}, CuPy arrays in and out", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", help="JSON files written by sht_batch.py")
    p.add_argument("--out", default="benchmarks/results/sht_batch.png")
    args = p.parse_args()
    results = []
    for path in args.results:
        with open(path) as f:
            results.append(json.load(f))
    plot(results, args.out)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
