"""The first pair count of a fresh process: where its seconds go. Runs the same child twice,
one fresh process after the other (the second finds the first's disk caches), each timing
import, the first and the second ``pair_counts`` of N full-sky randoms (20 log bins 2.5'-250',
cuda), the count's own steps (``sphgpu.tpacf._cuda.count_pairs``'s profile), which kernels went
through Numba rather than the disk cache, and a cProfile of the first call (top 25 by
cumulative time). Writes OUT.json.

Run on the GPU machine:  python benchmarks/probes/tpacf_first_call.py N OUT.json
"""
import json
import subprocess
import sys

CHILD = r"""
import cProfile, io, json, pstats, sys, time
t0 = time.perf_counter()
import numpy as np
from sphgpu.tpacf import AngularBins, pair_counts
from sphgpu.tpacf.mocks import uniform_randoms
from sphgpu import _fast_launch
t1 = time.perf_counter()
n = int(sys.argv[1])
ra, dec = uniform_randoms(n, (0.0, 360.0, -90.0, 90.0), seed=1)
bins = AngularBins.log(2.5, 250.0, 20, unit="arcmin")
prof = cProfile.Profile()
t = time.perf_counter()
prof.enable()
pair_counts(ra, dec, bins=bins, backend="cuda")
prof.disable()
first = time.perf_counter() - t
t = time.perf_counter()
pair_counts(ra, dec, bins=bins, backend="cuda")
second = time.perf_counter() - t
s = io.StringIO()
pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
print("RESULT " + json.dumps({"import_s": t1 - t0, "first_s": first, "second_s": second,
      "through_numba": [list(map(str, x)) for x in _fast_launch.THROUGH_NUMBA],
      "loaded_from_disk": len(_fast_launch.LOADED_FROM_DISK), "profile": s.getvalue()}))
"""

n, path = sys.argv[1], sys.argv[2]
runs = []
for k in range(2):
    p = subprocess.run([sys.executable, "-c", CHILD, n], capture_output=True, text=True)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if not line:
        print(p.stdout[-2000:], p.stderr[-4000:])
        raise SystemExit(1)
    r = json.loads(line[0][7:])
    runs.append(r)
    print(f"process {k}: import {r['import_s']:.2f} s, first {r['first_s']:.2f} s, second "
          f"{r['second_s']:.3f} s; through Numba {r['through_numba']}; from disk "
          f"{r['loaded_from_disk']}", flush=True)
    print(r["profile"][:5000], flush=True)
with open(path, "w") as f:
    json.dump({"n": int(n), "runs": runs}, f, indent=1)
