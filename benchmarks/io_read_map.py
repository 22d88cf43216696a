"""Reading an nside 2048 I, Q, U map from a local FITS file: sphgpu.read_map against
healpy.read_map, time and extra memory (CPU only).

Each case runs in a fresh Python process (``--child``), which imports its library (timed:
healpy imports astropy then, sphgpu on its first read, so the fair first-call figure is import
plus first read), reads the file three times and reports: the first read's wall time (for
sphgpu it includes loading the Numba loops from their disk cache when the file must be
reordered), the second read's, the first read's peak resident memory above what the process
held before the call (``VmHWM`` after resetting it, less ``VmRSS`` before), and the peak of
tracemalloc (NumPy's allocations) over the third read, kept apart because tracemalloc slows
allocation and holds memory of its own. "extra / map" is the peak divided by the returned
map's bytes: 1.0 means the read costs the map and nothing else. The file is read from the page
cache in every process (it was just written), so the times are what a warm file system gives;
both libraries read the same bytes.

Files: RING and NESTED orderings (Planck's and WMAP's maps are NESTED), float32 values,
written by sphgpu.write_map (byte-identical to healpy.write_map). Results:
``benchmarks/results/io_read_map.json``.

Usage: ``python benchmarks/io_read_map.py [--nside 2048] [--repeat 3] [--dir /tmp]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def _status(key):
    """A memory figure of /proc/self/status in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def child(lib, path, nest):
    """Run in a fresh process: import ``lib``, read ``path`` three times; print one JSON line.

    The first read is timed and its peak memory taken with nothing else watching (tracemalloc
    slows allocation and adds its own memory); the third read runs under tracemalloc.
    """
    import time
    import tracemalloc

    t0 = time.perf_counter()
    if lib == "sphgpu":
        import sphgpu

        read = sphgpu.read_map
    else:
        import healpy

        read = healpy.read_map
    import_s = time.perf_counter() - t0
    import numpy as np

    # peak resident memory of this call alone: Linux keeps a parent's ru_maxrss across exec,
    # so the high-water mark (VmHWM) is reset here (clear_refs 5) and read after the call
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss0 = _status("VmRSS")
    t0 = time.perf_counter()
    m = read(path, field=(0, 1, 2), nest=nest)
    first = time.perf_counter() - t0
    rss1 = _status("VmHWM")
    nbytes = int(np.asarray(m).nbytes)
    digest = float(np.asarray(m, dtype=np.float64)[:, ::997].sum())
    del m
    t0 = time.perf_counter()
    m = read(path, field=(0, 1, 2), nest=nest)
    second = time.perf_counter() - t0
    del m
    tracemalloc.start()
    m = read(path, field=(0, 1, 2), nest=nest)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"import_s": import_s, "first_s": first, "second_s": second,
                      "map_bytes": nbytes, "rss_peak_extra_bytes": rss1 - rss0,
                      "tracemalloc_peak_bytes": traced, "dtype": str(m.dtype),
                      "check": digest}))


def run_child(lib, path, nest):
    out = subprocess.run([sys.executable, __file__, "--child", lib, path, str(nest)],
                         check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nside", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per case")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the files are written")
    ap.add_argument("--out", default=str(HERE / "results" / "io_read_map.json"))
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        lib, path, nest = args.child
        child(lib, path, nest == "True")
        return

    import numpy as np

    import sphgpu
    from sphgpu.bench.timing import machine_info

    npix = 12 * args.nside ** 2
    rng = np.random.default_rng(2048)
    maps = rng.standard_normal((3, npix), dtype=np.float32)
    maps[:, ::1000] = sphgpu.UNSEEN
    files = {}
    for ordering in ("RING", "NESTED"):
        path = os.path.join(args.dir, f"sphgpu_bench_iqu_n{args.nside}_{ordering}.fits")
        sphgpu.write_map(path, maps, nest=ordering == "NESTED", overwrite=True)
        files[ordering] = path
    del maps
    results = []
    try:
        for ordering, path in files.items():
            for lib in ("sphgpu", "healpy"):
                runs = [run_child(lib, path, False) for _ in range(args.repeat)]
                checks = {r["check"] for r in runs}
                row = {"file_ordering": ordering, "result_ordering": "RING", "library": lib,
                       "nside": args.nside, "fields": 3, "file_dtype": "float32",
                       "file_bytes": os.path.getsize(path), "map_bytes": runs[0]["map_bytes"],
                       "returned_dtype": runs[0]["dtype"],
                       "import_s": statistics.median(r["import_s"] for r in runs),
                       "first_s": statistics.median(r["first_s"] for r in runs),
                       "import_and_first_s": statistics.median(
                           r["import_s"] + r["first_s"] for r in runs),
                       "second_s": statistics.median(r["second_s"] for r in runs),
                       "rss_peak_extra_bytes": statistics.median(
                           r["rss_peak_extra_bytes"] for r in runs),
                       "tracemalloc_peak_bytes": statistics.median(
                           r["tracemalloc_peak_bytes"] for r in runs),
                       "runs": runs, "check": checks.pop() if len(checks) == 1 else None}
                row["rss_extra_per_map"] = row["rss_peak_extra_bytes"] / row["map_bytes"]
                row["tracemalloc_per_map"] = row["tracemalloc_peak_bytes"] / row["map_bytes"]
                results.append(row)
                print(f"{ordering:6s} {lib:6s} import + first {row['import_and_first_s']:.3f} s"
                      f" second "
                      f"{row['second_s']:.3f} s  extra RSS / map {row['rss_extra_per_map']:.2f}"
                      f"  tracemalloc / map {row['tracemalloc_per_map']:.2f}", flush=True)
    finally:
        for path in files.values():
            os.remove(path)
    for ordering in files:
        a, b = [r for r in results if r["file_ordering"] == ordering]
        if a["check"] != b["check"]:
            raise SystemExit(f"{ordering}: sphgpu and healpy read different values")
    goals = {"time": "sphgpu import_and_first_s and second_s <= healpy's",
             "memory": "sphgpu extra memory <= 1.2 x the map's bytes"}
    with open(args.out, "w") as f:
        json.dump({"machine": machine_info(), "goals": goals, "results": results,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}, f,
                  indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
