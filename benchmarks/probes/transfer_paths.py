"""NumPy arrays sent to Dask workers and gathered back, straight between the client and the
workers (``direct=True``, what sphgpu.distributed does on a local cluster) against through the
scheduler (Dask's default for a client that was given no ``direct_to_workers``).

A local cluster of 2 process workers of one thread; one array to one worker and four to two,
sent and gathered ``--repeat`` times in turn by each path; second-best GB/s reported.

Run:  python benchmarks/probes/transfer_paths.py [--out OUT.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

CASES = ((1, 64), (1, 256), (4, 80))       # (arrays, MB each)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--out")
    args = p.parse_args()
    from distributed import Client, LocalCluster, wait

    from sphgpu.bench import machine_info

    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ws = sorted(client.scheduler_info()["workers"])
        for n, mb in CASES:
            arrs = [np.random.default_rng(k).random(mb * 2**20 // 8) for k in range(n)]
            nbytes = sum(a.nbytes for a in arrs)
            spans = {True: [], False: []}
            for _ in range(args.repeat):
                for direct in (False, True):
                    t0 = time.perf_counter()
                    fs = client.scatter(arrs, workers=ws if n > 1 else ws[:1], hash=False,
                                        direct=direct)
                    wait(fs)
                    t1 = time.perf_counter()
                    back = client.gather(fs, direct=direct)
                    t2 = time.perf_counter()
                    assert all(np.array_equal(a, b) for a, b in zip(arrs, back))
                    spans[direct].append((t1 - t0, t2 - t1))
                    del fs, back
            for direct in (False, True):
                send = sorted(s for s, _ in spans[direct])
                gather = sorted(g for _, g in spans[direct])
                k = min(1, len(send) - 1)
                row = {"arrays": n, "mb_each": mb, "direct": direct,
                       "send_GBps": nbytes / send[k] / 1e9,
                       "gather_GBps": nbytes / gather[k] / 1e9, "spans_s": spans[direct]}
                rows.append(row)
                print(f"{n} x {mb} MB, {'straight' if direct else 'via scheduler':13s}: send "
                      f"{row['send_GBps']:.2f} GB/s, gather {row['gather_GBps']:.2f} GB/s",
                      flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine_info(), "repeat": args.repeat, "rows": rows,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}, f,
                      indent=1)


if __name__ == "__main__":
    main()
