"""Where the first Monte Carlo run on a fresh GPU cluster spends its time (issue 42: the first
run should reach half the steady rate).

1. The plain run in this process first (it fills the on-disk caches, as a user's earlier
   session would).
2. Fresh cluster A of N GPU workers: each worker's calls of ``sphgpu.warmup`` (none since
   the Monte Carlo stopped warming workers up; mc_first_run_h200.json has the spans from
   before), ``auto_batch_size`` and ``simulate_batch`` are wrapped to record their wall-clock
   spans, and so are the client's steps of ``MonteCarlo.run``; then the first run and a
   steady run.
3. Fresh cluster B: ``sphgpu.warmup`` (the run's "sht" step at its batch size) under cProfile
   on every worker (``client.run``: the worker's own thread), the 30 functions of largest
   cumulative time; then one ``simulate_batch`` of that size, timed, on each worker.

Run on the GPU machine:  python benchmarks/probes/mc_first_run.py NGPUS OUT.json
"""
import json
import sys
import time

import numpy as np

NSIDE, SIMS_PER_WORKER = 2048, 128


def _mc():
    from sphgpu.sims import MonteCarlo

    lmax = 2 * NSIDE
    cl = 1e3 / (np.arange(lmax + 1) + 2.0) ** 2
    return MonteCarlo(cl, NSIDE, lmax, fwhm_arcmin=5.0, seed=7, backend="cuda")


def _record_spans(mod, names, spans):
    """Replace each function ``names`` of module ``mod`` by one that appends (name, start,
    end) wall-clock times of its every call to ``spans``."""
    import functools

    for name in names:
        fn = getattr(mod, name)

        @functools.wraps(fn)
        def timed(*a, _fn=fn, _name=name, **k):
            t0 = time.time()
            try:
                return _fn(*a, **k)
            finally:
                spans.append((_name, t0, time.time()))
        setattr(mod, name, timed)


def _install_spans():
    """On a worker: record the spans of the warm-up, batch sizing and batches."""
    import sphgpu.sims.batching as batching
    import sphgpu.sims.pipeline as pipeline
    import sphgpu.warmup  # noqa: F401  (the package's name "warmup" is the function)

    spans = []
    sys.modules["sphgpu"].PROBE_SPANS = spans       # where _spans finds them
    _record_spans(sys.modules["sphgpu.warmup"], ["warmup"], spans)
    _record_spans(batching, ["auto_batch_size"], spans)
    _record_spans(pipeline, ["simulate_batch"], spans)
    return True


def _spans():
    return getattr(sys.modules["sphgpu"], "PROBE_SPANS", [])


def _profiled_warmup(size):
    import cProfile
    import io
    import pstats

    from sphgpu.warmup import warmup

    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    steps = warmup(NSIDE, 2 * NSIDE, backend="cuda", steps=("sht",), batch=size, progress=False)
    pr.disable()
    total = time.perf_counter() - t0
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
    return {"total_s": total, "steps": steps, "profile": s.getvalue()[-6000:]}


def _one_batch(size):
    import cupy

    from sphgpu.sims.pipeline import simulate_batch

    mc = _mc()
    out = []
    for _ in range(2):
        t0 = time.perf_counter()
        simulate_batch(mc.plan, list(range(size)), "cuda")
        cupy.cuda.Device().synchronize()
        out.append(time.perf_counter() - t0)
    return out


def main():
    import sphgpu.distributed as sd
    import sphgpu.sims._dask as sdask
    from sphgpu.bench import machine_info

    n, path = int(sys.argv[1]), sys.argv[2]
    row = {"machine": machine_info(), "nside": NSIDE, "workers": n}
    t0 = time.perf_counter()
    mc = _mc()
    mc.run(32, progress=False)
    row["plain_warm_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mc.run(128, progress=False)
    row["plain_rate"] = 128 / (time.perf_counter() - t0)
    print("plain", row["plain_rate"], flush=True)

    client_spans = []
    _record_spans(sdask, ["_worker_batch", "_plan_copies"], client_spans)

    ids = sd.visible_gpus()[:n]
    t0 = time.perf_counter()
    client = sd.local_cluster(gpus=ids, cpu_workers=0, dashboard_address=":0")
    row["cluster_start_s"] = time.perf_counter() - t0
    client.run(_install_spans)
    k = SIMS_PER_WORKER * n
    mc = _mc()
    start = time.time()
    t0 = time.perf_counter()
    mc.run(k, progress=False, client=client)
    row["first_run_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mc.run(k, progress=False, client=client)
    row["steady_run_s"] = time.perf_counter() - t0
    row["sims"] = k
    row["client_spans"] = [(nm, a - start, b - start) for nm, a, b in client_spans]
    row["worker_spans"] = {w: [(nm, a - start, b - start) for nm, a, b in sp]
                           for w, sp in client.run(_spans).items()}
    print(json.dumps({x: row[x] for x in ("cluster_start_s", "first_run_s", "steady_run_s")}),
          flush=True)
    for w, sp in row["worker_spans"].items():
        print(w, [(nm, round(a, 2), round(b - a, 3)) for nm, a, b in sp[:8]], flush=True)
    print("client", [(nm, round(a, 2), round(b - a, 3)) for nm, a, b in row["client_spans"]],
          flush=True)
    client.shutdown()
    client.close()

    # the batch size the run used: that of the plan's auto batch on a worker
    client = sd.local_cluster(gpus=ids, cpu_workers=0, dashboard_address=":0")
    from sphgpu.sims.batching import auto_batch_size
    size = client.submit(auto_batch_size, _mc().plan, "cuda", pure=False).result()
    row["batch"] = size
    row["profiled_warmup"] = client.run(_profiled_warmup, size)
    row["batch_after_warmup_s"] = client.run(_one_batch, size)
    for w, r in row["profiled_warmup"].items():
        print(w, "warmup", round(r["total_s"], 2), r["steps"], flush=True)
    print(next(iter(row["profiled_warmup"].values()))["profile"], flush=True)
    print("batch after warmup", row["batch_after_warmup_s"], flush=True)
    client.shutdown()
    client.close()
    with open(path, "w") as f:
        json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
