"""Many small tasks submitted one ``client.submit`` at a time against all at once in one
message (``client.map``, what ``sphgpu.distributed.tasks.submit_each`` does): the
scheduler's fixed cost per graph update, which a batch of one-map transforms on futures pays
once per map when submitted one by one.

A local cluster of --workers process workers of one thread, CPU backend; --tasks one-map
``alm2map`` tasks on a_lm kept on the workers (nside 4, lmax 8: the transform itself takes
microseconds, so the call's time is the task plumbing). Both paths run ``--repeat`` times in
turn; medians of the whole call (submit and wait) and of the submission alone.

Run:  python benchmarks/probes/submit_paths.py [--tasks 64] [--out OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--out")
    args = p.parse_args()
    from distributed import wait

    import sphgpu.distributed as sd
    from sphgpu import RingGeometry
    from sphgpu.alm import AlmLayout
    from sphgpu.bench import machine_info
    from sphgpu.distributed import sht as dsht
    from sphgpu.distributed import tasks

    lmax, n = 8, args.tasks
    g = RingGeometry.healpix(4)
    plan = dsht._plan(g, AlmLayout(lmax), "cpu")
    names = [f"alms[{i}]" for i in range(n)]
    alms = np.random.default_rng(1).normal(size=(n, AlmLayout(lmax).size)) + 0j
    with sd.local_cluster(gpus=0, cpu_workers=args.workers, threads_per_worker=1,
                          dashboard_address=None) as client:
        futs = sd.to_workers(alms, client=client, backend="cpu")
        wait(futs)

        def one_by_one():
            k = tasks.key("synthesis")
            return [client.submit(dsht._synthesis_task, f, nm, plan, False, key=(k, i))
                    for i, (f, nm) in enumerate(zip(futs, names))]

        def one_message():
            k = tasks.key("synthesis")
            return tasks.submit_each(client, dsht._synthesis_task, futs, names, [plan] * n,
                                     [False] * n, keys=[(k, i) for i in range(n)])

        paths = {"one_by_one": one_by_one, "one_message": one_message}
        spans = {name: [] for name in paths}
        for _ in range(args.repeat + 1):                  # the first round is a warm-up
            for name, fn in paths.items():
                t0 = time.perf_counter()
                out = fn()
                t1 = time.perf_counter()
                wait(out)
                spans[name].append((t1 - t0, time.perf_counter() - t0))
    rows = {name: {"submit_ms": 1e3 * statistics.median(s for s, _ in v[1:]),
                   "call_ms": 1e3 * statistics.median(c for _, c in v[1:])}
            for name, v in spans.items()}
    for name, r in rows.items():
        print(f"{name:12s} submit {r['submit_ms']:6.1f} ms, call {r['call_ms']:6.1f} ms "
              f"({n} tasks, {args.workers} workers)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine_info(), "tasks": n, "workers": args.workers,
                       "repeat": args.repeat, "rows": rows,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())},
                      f, indent=1)


if __name__ == "__main__":
    main()
