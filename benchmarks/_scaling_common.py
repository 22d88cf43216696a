"""What ``distributed_scaling.py`` and ``tpacf_survey.py`` share: their command line of worker
counts and sizes, one fresh local Dask cluster per number of workers, and the JSON file they
write after every step. Not a script: those two import it (``python benchmarks/<script>.py``
puts the script's folder first on ``sys.path``)."""

from __future__ import annotations

import contextlib
import json
import os
import time


def log(msg):
    print(msg, flush=True)


def sync(backend):
    """Wait for the GPU's queued work (a no-op on the cpu backend), so that a timing ends
    when the work does."""
    if backend == "cuda":
        import cupy

        cupy.cuda.Device().synchronize()


def free_pool(backend):
    """Give CuPy's cached device memory back, so that the next workload starts with the GPU
    as free as the first did (a no-op on the cpu backend)."""
    if backend == "cuda":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def add_worker_args(p, gpu_counts):
    """``--gpus``, ``--cpu-workers`` and ``--quick`` on the ArgumentParser ``p``;
    ``gpu_counts``: the numbers of GPU workers run by default (those the machine has)."""
    shown = " ".join(str(n) for n in gpu_counts)
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help=f"numbers of GPU workers (default {shown}, up to the GPUs there are); "
                        "0: CPU workers instead (see --cpu-workers)")
    p.add_argument("--cpu-workers", type=int, default=2,
                   help="with --gpus 0: the largest number of single-thread CPU workers")
    p.add_argument("--quick", action="store_true", help="small sizes (a CPU smoke test)")


def add_size_args(p, full, quick):
    """``--out`` and one integer option a size (``--rr-n`` for the key ``rr_n`` of ``full``,
    the sizes of a full run; ``quick``: those of ``--quick``, with the same keys)."""
    p.add_argument("--out", default="benchmarks/results")
    for key, value in full.items():
        p.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                       help=f"default {value} ({quick[key]} with --quick)")


def sizes(args, full, quick):
    """{size key: int}: ``quick`` or ``full`` as ``--quick`` asks, with the sizes given on
    the command line in their place."""
    cfg = dict(quick if args.quick else full)
    cfg.update({k: getattr(args, k) for k in full if getattr(args, k) is not None})
    return cfg


def workers(args, gpu_counts):
    """(backend, [numbers of workers]): "cpu" and 1, 2, 4, 8 up to ``--cpu-workers`` for
    ``--gpus 0``; else "cuda" and ``--gpus``, by default those of ``gpu_counts`` that the
    visible GPUs allow."""
    if args.gpus == [0]:
        return "cpu", [n for n in (1, 2, 4, 8) if n <= args.cpu_workers]
    import sphgpu.distributed as sd

    have = len(sd.visible_gpus())
    return "cuda", args.gpus or [n for n in gpu_counts if n <= have]


def results(out, name, backend, units, cfg, quick, **extra):
    """The record of a run and how to write it: (data, save, path). ``data`` holds the
    machine, ``backend``, ``units`` (numbers of workers), ``sizes`` (``cfg``), ``quick``, the
    ``extra`` entries, ``plain`` (baselines) and ``rows`` ({str(n): {}} for each n of
    ``units``); ``save()`` stamps it with the UTC date and writes it to ``path`` =
    ``out``/``name`` (the folder made here)."""
    from sphgpu.bench import machine_info

    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    data = {"machine": machine_info(), "backend": backend, "units": units, "sizes": cfg,
            "quick": quick, **extra, "plain": {}, "rows": {str(n): {} for n in units}}
    log(json.dumps(data["machine"]))

    def save():
        data["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        with open(path, "w") as f:
            json.dump(data, f, indent=1)

    return data, save, path


def cluster(n, backend):
    """A fresh local Dask cluster's client: one worker per GPU on the first ``n`` visible
    GPUs ("cuda"), or ``n`` single-thread CPU workers ("cpu")."""
    import sphgpu.distributed as sd

    if backend == "cuda":
        ids = sd.visible_gpus()
        if len(ids) < n:
            raise SystemExit(f"asked for {n} GPUs, this machine shows {len(ids)}")
        return sd.local_cluster(gpus=ids[:n], cpu_workers=0, dashboard_address=":0")
    return sd.local_cluster(gpus=0, cpu_workers=n, threads_per_worker=1,
                            dashboard_address=":0")


@contextlib.contextmanager
def fresh_cluster(n, backend, row):
    """The client of a fresh cluster of ``n`` workers (:func:`cluster`), shut down on leaving;
    the seconds it took to start go to ``row["cluster_start_s"]``."""
    t0 = time.perf_counter()
    client = cluster(n, backend)
    row["cluster_start_s"] = time.perf_counter() - t0
    log(f"{n} {'GPU' if backend == 'cuda' else 'CPU'} worker(s), started in "
        f"{row['cluster_start_s']:.1f} s")
    try:
        yield client
    finally:
        client.shutdown()
        client.close()


def header(units, width):
    """The first line of a results table: the workload column ``width`` wide, the plain
    call's, then one column a number of workers."""
    return f"{'workload':<{width}}{'plain':>12}" + "".join(f"{str(n) + ' workers':>14}"
                                                          for n in units)
