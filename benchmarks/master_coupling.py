"""MASTER coupling-matrix benchmark: sphgpu.master.coupling_matrix on the GPU against ducc0's
``misc.experimental.coupling_matrix_rect`` on all host cores, in the same run.

Run on the GPU machine:   python benchmarks/master_coupling.py --out benchmarks/results
Quick check of the script (small lmax, seconds):
    python benchmarks/master_coupling.py --lmax 128 256 --out /tmp/master

Workload: the power spectrum W_L (L = 0..2 lmax) of an apodized cut-sky mask's shape, a smooth
falling spectrum (the timing does not depend on its values), at each --lmax, for the 0x0 block
alone and for all four blocks (00, 02, ++, --).

What is timed (medians, after one untimed call):
  * sphgpu cuda, **the public call from NumPy** (the headline):
    ``coupling_matrix(wl, lmax, spins=..., is_cl=True, backend="cuda")``, the upload of W_L and
    the download of the (nblocks, lmax + 1, lmax + 1) float64 result included;
  * sphgpu cuda from a CuPy W_L (result left on the device), labelled "device arrays";
  * ducc0 ``coupling_matrix_rect`` on all host cores (``os.cpu_count()`` threads), as sphgpu's
    CPU backend calls it (``backend="cpu"``), whole call;
  * the first call in a fresh process (kernel compilation or its disk cache), reported apart.
Agreement: the GPU's blocks against ducc0's, largest relative error per row (max over rows),
recorded with every row of the table (the issue asks 1e-12).

Writes master_coupling.json under --out and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

from sphgpu.bench import machine_info, time_call

SPINS = {"00": (0, 0), "all": "all"}


def mask_cl(lmax: int) -> np.ndarray:
    """A falling, positive W_L for L = 0..2 lmax (an apodized mask's shape)."""
    L = np.arange(2 * lmax + 1)
    return 4 * np.pi * 0.6 / (1.0 + L) ** 2


def row_err(got, want) -> float:
    """Largest over rows of max|got - want| / max|want| (rows zero in both are skipped)."""
    diff = np.abs(got - want).max(axis=-1)
    scale = np.abs(want).max(axis=-1)
    ok = scale > 0
    return float(np.max(diff[ok] / scale[ok])) if np.any(ok) else 0.0


def first_call(lmax: int, spins: str) -> float:
    """Seconds of the first GPU call in a fresh process."""
    code = textwrap.dedent(f"""
        import time, numpy as np
        t0 = time.perf_counter()
        from sphgpu.master import coupling_matrix
        L = np.arange({2 * lmax + 1})
        coupling_matrix(4 * np.pi * 0.6 / (1.0 + L) ** 2, {lmax}, spins={SPINS[spins]!r},
                        is_cl=True, backend="cuda")
        print(time.perf_counter() - t0)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmax", type=int, nargs="+", default=[1024, 2048, 4096, 6143])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-ducc0", action="store_true", help="skip the CPU peer")
    ap.add_argument("--no-first-call", action="store_true")
    args = ap.parse_args(argv)

    import cupy

    from sphgpu.master import coupling_matrix

    nthreads = os.cpu_count() or 1
    sync = cupy.cuda.Device().synchronize
    rows = []
    for lmax in args.lmax:
        wl = mask_cl(lmax)
        wl_dev = cupy.asarray(wl)
        for spins in SPINS:
            sp = SPINS[spins]
            row = {"lmax": lmax, "blocks": spins}
            gpu = time_call(lambda: coupling_matrix(wl, lmax, spins=sp, is_cl=True,
                                                    backend="cuda"),
                            repeat=args.repeat, sync=sync)
            row["sphgpu_cuda_numpy"] = gpu.as_dict()
            dev = time_call(lambda: coupling_matrix(wl_dev, lmax, spins=sp, is_cl=True,
                                                    backend="cuda"),
                            repeat=args.repeat, sync=sync)
            row["sphgpu_cuda_device_arrays"] = dev.as_dict()
            got = coupling_matrix(wl, lmax, spins=sp, is_cl=True, backend="cuda")
            if not args.no_ducc0:
                cpu = time_call(lambda: coupling_matrix(wl, lmax, spins=sp, is_cl=True,
                                                        backend="cpu", method="ducc0"),
                                repeat=max(1, args.repeat // 2), max_seconds=120.0)
                row["ducc0_cpu"] = dict(cpu.as_dict(), nthreads=nthreads)
                ref = coupling_matrix(wl, lmax, spins=sp, is_cl=True, backend="cpu",
                                      method="ducc0")
                row["max_row_rel_err_vs_ducc0"] = {
                    b: row_err(got.blocks[b], ref.blocks[b]) for b in got.blocks}
                row["speedup_vs_ducc0"] = cpu.median / gpu.median
            if not args.no_first_call:
                row["first_call_fresh_process_s"] = first_call(lmax, spins)
            rows.append(row)
            print(f"lmax {lmax:5d} {spins:>3s}: cuda {gpu.median:8.4f} s (device arrays "
                  f"{dev.median:8.4f} s)"
                  + (f", ducc0 {row['ducc0_cpu']['median_s']:8.3f} s on {nthreads} threads, "
                     f"x{row['speedup_vs_ducc0']:.1f}, max row err "
                     f"{max(row['max_row_rel_err_vs_ducc0'].values()):.2e}"
                     if "ducc0_cpu" in row else ""), flush=True)
    result = {"benchmark": "master_coupling", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
              "machine": machine_info(), "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "master_coupling.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
