"""Dask clusters for sphgpu: one worker per GPU, CPU workers, and what a client offers.

Workers tell the scheduler what they hold through Dask *resources*: a GPU worker declares
``{"GPU": 1}`` (one GPU, pinned by ``CUDA_VISIBLE_DEVICES``, one thread, so tasks on a device
run one after another) and a CPU worker made here ``{"CPU": nthreads}``. sphgpu's GPU tasks ask
for ``{"GPU": 1}`` and so run only on GPU workers; its CPU tasks ask for ``{"CPU": 1}`` when some
worker declares CPU slots, and run anywhere otherwise (a plain ``LocalCluster`` or an existing
cluster whose workers declare nothing).

Any existing cluster works the same way: start its workers with ``--resources GPU=1`` (one per
GPU; ``dask-cuda-worker`` or dask-jobqueue's ``worker_extra_args``) and pass its Client as
``client=`` to the functions of :mod:`sphgpu.distributed`.

GPUs are found without touching CUDA in this process (``CUDA_VISIBLE_DEVICES``, else
``nvidia-smi -L``), so creating a cluster never initialises a GPU context in the client.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from contextlib import contextmanager

from .. import backends
from ..backends import BackendUnavailableError

__all__ = ["GPU", "CPU", "NoGPUWorkerError", "WorkersLostError", "visible_gpus",
           "local_cluster", "get_client", "workers", "gpu_workers", "cpu_slots",
           "require_gpu_worker", "task_resources", "placement", "eligible_workers", "direct",
           "scatter",
           "result", "LOST", "ATTEMPTS", "WORKER_WAIT", "GATHER_TIMEOUT", "dashboard_link",
           "cluster_info", "show_progress"]

GPU = "GPU"    #: resource name a GPU worker declares (one per worker)
CPU = "CPU"    #: resource name of CPU slots on the CPU workers made by local_cluster

#: environment of every CPU worker process: tasks run side by side, each on one core
_CPU_WORKER_ENV = {"SPHGPU_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
#: worker options that local_cluster copies from LocalCluster's own worker template
_SHARED_OPTIONS = ("host", "interface", "protocol", "security", "silence_logs", "services",
                   "dashboard", "dashboard_address")


class NoGPUWorkerError(BackendUnavailableError):
    """A GPU task was asked for, but no worker of the cluster declares a GPU resource."""


class WorkersLostError(RuntimeError):
    """Work was lost with dying workers more often than sphgpu retries it (see ATTEMPTS);
    nothing is returned rather than a partial result."""


#: how many times work whose input was lost with its worker is sent and submitted, in all
ATTEMPTS = 3
#: seconds to wait for a suitable worker when none is up (e.g. all restarting after crashes)
WORKER_WAIT = 60.0
#: seconds the first gather of a result may take before it is cut and asked again (each
#: later one may take twice the one before). A gather that began just before its worker was
#: killed waits for Dask's connect timeout (distributed.comm.timeouts.connect, 30 s) trying
#: the dead address, while the scheduler has already recomputed the result elsewhere.
GATHER_TIMEOUT = 5.0
#: what :func:`result` returns for a future cancelled because its input died with a worker
LOST = type("Lost", (), {"__repr__": lambda self: "LOST", "__slots__": ()})()


# ----------------------------------------------------------------------------- GPU discovery
_GPU_LINE = re.compile(r"^GPU (\d+):")
_MIG_LINE = re.compile(r"^\s+MIG\b.*\(UUID:\s*(MIG-[^)\s]+)\)")


def _parse_nvidia_smi(text: str) -> list[str]:
    """Device ids from ``nvidia-smi -L``: GPU indices, or the MIG UUIDs of a GPU split by MIG
    (a process then sees one MIG instance through ``CUDA_VISIBLE_DEVICES=MIG-...``)."""
    devices: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        g = _GPU_LINE.match(line)
        if g:
            devices.append((g.group(1), []))
            continue
        mig = _MIG_LINE.match(line)
        if mig and devices:
            devices[-1][1].append(mig.group(1))
    out = []
    for index, migs in devices:
        out.extend(migs or [index])
    return out


def visible_gpus() -> list[str]:
    """Ids of the GPUs this process may use, as strings for ``CUDA_VISIBLE_DEVICES``.

    ``CUDA_VISIBLE_DEVICES`` decides when it is set (empty or ``-1``: no GPU); otherwise the
    devices ``nvidia-smi -L`` lists; no ``nvidia-smi`` (or one that fails) means no GPU.

    Returns
    -------
    list of str
        The ids, in order; empty without a GPU.
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        ids = [s.strip() for s in env.split(",") if s.strip()]
        return [] if not ids or ids[0] in ("-1", "NoDevFiles") else ids
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        done = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return _parse_nvidia_smi(done.stdout) if done.returncode == 0 else []


def _choose_gpus(gpus) -> list[str]:
    if isinstance(gpus, str):
        if gpus != "all":
            raise ValueError(f"gpus must be 'all', a count or a list of device ids, got {gpus!r}")
        return visible_gpus()
    if isinstance(gpus, bool):
        raise TypeError("gpus must be 'all', a count or a list of device ids, not a bool")
    if isinstance(gpus, int):
        if gpus < 0:
            raise ValueError(f"gpus must be >= 0, got {gpus}")
        found = visible_gpus() if gpus else []
        if gpus > len(found):
            raise ValueError(f"gpus={gpus} but this machine shows {len(found)} GPU(s) "
                             f"({', '.join(found) or 'none'}): CUDA_VISIBLE_DEVICES or "
                             "nvidia-smi -L decide")
        return found[:gpus]
    if isinstance(gpus, Sequence):
        ids = [str(g) for g in gpus]
        if len(set(ids)) != len(ids):
            raise ValueError(f"gpus names a device twice: {ids}")
        return ids
    raise TypeError(f"gpus must be 'all', a count or a list of device ids, "
                    f"got {type(gpus).__name__}")


# ----------------------------------------------------------------------------- local clusters
def local_cluster(gpus="all", *, cpu_workers: int | None = None,
                  threads_per_worker: int | None = None, processes: bool = True,
                  dashboard_address: str | None = ":8787", use_dask_cuda: bool | None = None,
                  timeout: float = 120, **worker_options):
    """Start a Dask cluster on this machine and return a connected ``distributed.Client``.

    Parameters
    ----------
    gpus : "all", int or list of device ids
        GPU workers: one per GPU, each pinned to its device by ``CUDA_VISIBLE_DEVICES``, with one
        thread and the resource ``{"GPU": 1}``. ``"all"`` takes every visible GPU (none on a
        machine without one), ``0`` none.
    cpu_workers : int, optional
        Workers for CPU work, each with the resource ``{"CPU": threads}``. Default: 1 when there
        is no GPU worker, else 0 (pass 1 or more to run CPU parts next to the GPUs).
    threads_per_worker : int, optional
        Threads of each CPU worker; default: the cores left after one per GPU worker, shared.
    processes : bool
        Workers in their own processes (needed to pin GPUs; separate processes also survive a
        crash of another worker). ``False`` runs threads in this process: quick to start, for
        CPU work, tests and small notebooks; at most one GPU then.
    dashboard_address : str or None
        Where Dask's dashboard listens (``":0"``: any free port; ``None``: no dashboard
        plots). See :func:`dashboard_link`.
    use_dask_cuda : bool, optional
        Start the GPU workers with dask-cuda's ``LocalCUDACluster`` (default: when dask-cuda is
        installed and ``processes`` is True).
    timeout : float
        Seconds to wait for all workers to come up.
    **worker_options
        Passed to every worker (e.g. ``memory_limit``; default: the machine's memory shared
        equally by the workers).

    Returns
    -------
    distributed.Client
        ``client.shutdown()`` stops the cluster and its workers.
    """
    from distributed import Client, LocalCluster, Nanny, Worker

    gpu_ids = _choose_gpus(gpus)
    if not processes and len(gpu_ids) > 1:
        raise ValueError(f"{len(gpu_ids)} GPU workers need processes=True: each GPU is pinned "
                         "by CUDA_VISIBLE_DEVICES in its own process")
    if cpu_workers is None:
        cpu_workers = 0 if gpu_ids else 1
    if isinstance(cpu_workers, bool) or not isinstance(cpu_workers, int) or cpu_workers < 0:
        raise ValueError(f"cpu_workers must be an integer >= 0, got {cpu_workers!r}")
    if not gpu_ids and cpu_workers == 0:
        raise ValueError("the cluster would have no worker: ask for gpus or cpu_workers")
    cores = os.cpu_count() or 1
    if threads_per_worker is None:
        threads_per_worker = max(1, (cores - len(gpu_ids)) // max(cpu_workers, 1))
    if isinstance(threads_per_worker, bool) or not isinstance(threads_per_worker, int) \
            or threads_per_worker < 1:
        raise ValueError(f"threads_per_worker must be an integer >= 1, got {threads_per_worker!r}")
    if use_dask_cuda is None:
        use_dask_cuda = bool(gpu_ids) and processes \
            and importlib.util.find_spec("dask_cuda") is not None
    if use_dask_cuda and not (gpu_ids and processes):
        raise ValueError("use_dask_cuda=True needs GPU workers and processes=True")

    import dask

    # Work stealing would move a GPU task away from the GPU that holds its device-resident
    # input, which then travels through host memory and TCP (hundreds of MB per map): on
    # clusters with GPU workers, tasks stay where the scheduler put them, next to their data.
    with dask.config.set({"distributed.scheduler.work-stealing": not gpu_ids}):
        if use_dask_cuda:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(gpu_ids),
                                       resources={GPU: 1}, threads_per_worker=1,
                                       dashboard_address=dashboard_address, **worker_options)
        else:
            cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=processes,
                                   dashboard_address=dashboard_address, **worker_options)
    try:
        base = {k: v for k, v in cluster.new_spec["options"].items() if k in _SHARED_OPTIONS}
        if "memory_limit" not in worker_options:
            # Dask's default gives a one-thread worker its thread's share of the memory
            # (1/16 on 16 cores), too little for a GPU worker's maps: share it per worker.
            from distributed.system import MEMORY_LIMIT

            base["memory_limit"] = int(MEMORY_LIMIT // (len(gpu_ids) + cpu_workers))
        base.update(worker_options)
        cls = Nanny if processes else Worker
        specs = {}
        if not use_dask_cuda:
            # each GPU worker's host-side work (catalog sorting, plans) gets its share of the
            # cores: unbounded, every process started a thread per core, and on a 4-GPU node
            # the first count of each call took 0.4 s instead of 0.05 s
            share = str(max(1, (cores - cpu_workers * threads_per_worker) // max(1, len(gpu_ids))))
            for i, dev in enumerate(gpu_ids):
                opts = dict(base, nthreads=1, resources={GPU: 1})
                if processes:
                    opts["env"] = {"CUDA_VISIBLE_DEVICES": dev, "NUMBA_NUM_THREADS": share,
                                   "SPHGPU_NUM_THREADS": share, "OMP_WAIT_POLICY": "PASSIVE"}
                specs[f"gpu-{i}"] = {"cls": cls, "options": opts}
        for i in range(cpu_workers):
            opts = dict(base, nthreads=threads_per_worker, resources={CPU: threads_per_worker})
            if processes:
                opts["env"] = dict(_CPU_WORKER_ENV)
            specs[f"cpu-{i}"] = {"cls": cls, "options": opts}
        # SpecCluster keeps the wanted workers in .worker_spec; scale() to the same size brings
        # the running workers in line with it (workers of different kinds in one cluster).
        cluster.worker_spec.update(specs)
        cluster.scale(len(cluster.worker_spec))
        # the workers run on this machine, so the client reaches them: inputs and results go
        # straight between it and each worker, not through the scheduler (one hop instead of
        # two, and the scheduler's one event loop no longer carries every byte)
        client = Client(cluster, direct_to_workers=True)
        client.wait_for_workers(len(cluster.worker_spec), timeout=timeout)
    except BaseException:
        cluster.close()
        raise
    return client


# ----------------------------------------------------------------------------- existing clients
def get_client(client=None):
    """``client``, or the default Dask client.

    Parameters
    ----------
    client : distributed.Client, optional
        The client to use; Dask's default client when None.

    Returns
    -------
    distributed.Client
        An open client.

    Raises
    ------
    TypeError
        If ``client`` is not a Dask client.
    ValueError
        If ``client`` is closed, or none is given and there is no default client; the
        message says how to make one.
    """
    if client is not None:
        if not hasattr(client, "submit") or not hasattr(client, "scheduler_info"):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        if getattr(client, "status", None) in ("closing", "closed"):
            # else the first use fails deep inside Dask (an AttributeError about `scatter`,
            # or a wait for workers that never come)
            raise ValueError(f"client is {client.status}: pass an open one (distributed."
                             "Client(...) or sphgpu.distributed.local_cluster())")
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        raise ValueError("no Dask client: pass client=, or create one with "
                         "sphgpu.distributed.local_cluster() (or distributed.Client(...))") \
            from None


_VIEW = threading.local()


@contextmanager
def one_view(client):
    """Within the block, :func:`workers` (and everything built on it: placement, eligible
    workers, GPU checks) asks the scheduler once for ``client`` and reuses the answer: one
    round trip per call of a distributed function instead of one per question."""
    views = _VIEW.__dict__.setdefault("views", {})
    outer = id(client) in views
    if not outer:
        views[id(client)] = None
    try:
        yield
    finally:
        if not outer:
            views.pop(id(client), None)


def workers(client) -> dict:
    """``{address: info}`` of every worker (``info`` has ``name``, ``nthreads``, ``resources``)."""
    views = _VIEW.__dict__.get("views", {})
    if id(client) in views:
        if views[id(client)] is None:
            views[id(client)] = _ask_workers(client)
        return dict(views[id(client)])
    return _ask_workers(client)


def _ask_workers(client) -> dict:
    # Asked of the scheduler directly: scheduler_info() returns the client's cached copy, which
    # its periodic refresh (made without the per-worker part) can replace at any moment; seen
    # on a 4-GPU node as GPU workers that came and went between two calls.
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1)
    except Exception:             # an older scheduler: its identity has every worker anyway
        info = client.scheduler_info()
    return dict(info.get("workers", {}))


def gpu_workers(client) -> list[str]:
    """Addresses of the workers declaring a GPU resource.

    Parameters
    ----------
    client : distributed.Client
        A connected Dask client.

    Returns
    -------
    list of str
        Sorted worker addresses; empty when no worker has a GPU.
    """
    return sorted(a for a, w in workers(client).items() if w.get("resources", {}).get(GPU, 0) > 0)


def cpu_slots(client) -> int:
    """How many CPU tasks the cluster runs at once: declared CPU slots, or, when no worker
    declares any, the threads of all workers without a GPU (all workers if every one has)."""
    ws = workers(client)
    declared = sum(int(w.get("resources", {}).get(CPU, 0)) for w in ws.values())
    if declared:
        return declared
    plain = [w for w in ws.values() if not w.get("resources", {}).get(GPU, 0)]
    return sum(int(w.get("nthreads", 1)) for w in (plain or ws.values()))


def require_gpu_worker(client) -> list[str]:
    """The GPU workers' addresses, or an error with the remedy if there are none.

    Parameters
    ----------
    client : distributed.Client
        A connected Dask client.

    Returns
    -------
    list of str
        Sorted addresses of the workers declaring a GPU resource.

    Raises
    ------
    NoGPUWorkerError
        When no worker declares a GPU; the message lists the workers and how to start GPU
        workers.
    """
    found = gpu_workers(client)
    if not found:
        ws = workers(client)
        desc = ", ".join(f"{w.get('name', a)} {w.get('resources') or {}}" for a, w in ws.items())
        raise NoGPUWorkerError(
            f"a GPU task was asked for, but none of the cluster's {len(ws)} worker(s) declares "
            f"a GPU resource ({desc or 'no workers'}). Start one worker per GPU with "
            "resources={'GPU': 1} (sphgpu.distributed.local_cluster(gpus='all') does), or use "
            "backend='cpu'.")
    return found


#: what a task needs: a GPU worker, or any worker (declaring a CPU resource where some do)
TASK_KINDS = ("gpu", "cpu")


def task_resources(client, kind: str):
    """Resources a task of ``kind`` ("gpu" or "cpu") asks for on this cluster."""
    if kind not in TASK_KINDS:
        raise ValueError(f"kind must be one of {TASK_KINDS}, got {kind!r}")
    if kind == "gpu":
        require_gpu_worker(client)
        return {GPU: 1}
    declared = any(w.get("resources", {}).get(CPU, 0) for w in workers(client).values())
    return {CPU: 1} if declared else None


def placement(client, backend: str):
    """Where tasks run: the concrete backend and the resources each task asks for.

    Parameters
    ----------
    client : distributed.Client
        A connected Dask client.
    backend : {"auto", "cuda", "cpu", "reference"}
        "auto": the GPU workers when the cluster has any, else the CPU workers.

    Returns
    -------
    name : str
        "cuda", "cpu" or "reference".
    resources : dict or None
        What :func:`task_resources` gives for the backend's kind of worker.

    Raises
    ------
    NoGPUWorkerError
        If the backend runs on GPUs and the cluster has no GPU worker.
    """
    name = backends.resolve_remote(backend, lambda: bool(gpu_workers(client)))
    return name, task_resources(client, "gpu" if backends.info(name).gpu else "cpu")


# ----------------------------------------------------------------------------- faults
def eligible_workers(client, resources) -> list[str]:
    """Addresses of the workers that can run a task asking for ``resources`` (a dict, or
    None for any worker), sorted."""
    ws = workers(client)
    if not resources:
        return sorted(ws)
    return sorted(a for a, w in ws.items()
                  if all(w.get("resources", {}).get(k, 0) >= v for k, v in resources.items()))


def direct(client) -> bool:
    """Whether data goes straight between ``client`` and the workers rather than through the
    scheduler: the client's own ``direct_to_workers`` when it was given one, else whether the
    scheduler runs on this machine (a local cluster, whose workers this process reaches).

    Parameters
    ----------
    client : distributed.Client

    Returns
    -------
    bool
    """
    own = getattr(client, "direct_to_workers", None)
    if own is not None:
        return bool(own)
    address = str(getattr(getattr(client, "scheduler", None), "address", "") or "")
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return address.startswith("inproc://") or host in ("127.0.0.1", "localhost", "::1")


def scatter(client, data: list, resources=None) -> list:
    """``client.scatter(data)`` to the workers that can run tasks with ``resources``, tried
    again (up to :data:`ATTEMPTS` times) on the workers left when one dies meanwhile.

    A worker that dies while receiving makes Dask's scatter fail (CommClosedError, OSError);
    one that died since the workers were listed makes the scheduler raise ``KeyError`` naming
    its address. When no eligible worker is up (all restarting), waits up to WORKER_WAIT s.

    Each object goes to one worker, straight from this process where :func:`direct` says so;
    tasks elsewhere fetch it from there. Never Dask's
    ``broadcast=True`` (nor ``client.replicate``): the scheduler's replicate loop keeps the
    worker list it started with, and tries a worker that died meanwhile again and again, 30 s
    (the connect timeout) a try, without end (distributed 2026.8; seen with a worker killed
    as an input was broadcast). Where every worker should hold a copy, scatter one to each
    (``workers=[address]``, as :mod:`sphgpu.sims._dask` does).

    Parameters
    ----------
    client : distributed.Client
    data : list
        The objects to send (each becomes one future).
    resources : dict, optional
        What the tasks that use them ask for (see :func:`task_resources`).

    Returns
    -------
    list of distributed.Future

    Raises
    ------
    WorkersLostError
        No eligible worker came up in WORKER_WAIT s, or every attempt met a dying worker.
    """
    import time

    from distributed.comm import CommClosedError

    for attempt in range(ATTEMPTS):
        where = eligible_workers(client, resources)
        deadline = time.monotonic() + WORKER_WAIT
        while not where:                     # workers restarting after a crash come back
            if time.monotonic() > deadline:
                raise WorkersLostError(f"no worker that can run these tasks has been up for "
                                       f"{WORKER_WAIT:.0f} s; no result is returned")
            time.sleep(0.2)
            where = eligible_workers(client, resources)
        try:
            return client.scatter(data, workers=where, hash=False, direct=direct(client))
        except (CommClosedError, OSError, KeyError) as exc:
            if isinstance(exc, KeyError) and not (exc.args and exc.args[0] in where):
                raise                         # not the scheduler's word for a departed worker
            if attempt == ATTEMPTS - 1:
                raise WorkersLostError(f"sending the inputs to the workers failed {ATTEMPTS} "
                                       f"times as workers left ({type(exc).__name__}: {exc}); "
                                       "no result is returned") from exc
            time.sleep(0.5 * (attempt + 1))


def result(future):
    """``future.result()``, or :data:`LOST` when the future is (or becomes) cancelled: its
    input, scattered data, died with a worker, and the caller should send it again.

    A gather that began just before its worker died would wait out Dask's connect timeout
    (30 s) on the dead address; it is cut after GATHER_TIMEOUT s and asked again, by when the
    scheduler knows where the result is (recomputed elsewhere). Each later gather may take
    twice as long as the one before, so a large result that simply takes long to move is cut
    a few times at most.

    Raises
    ------
    Exception
        The task's own error (including Dask's ``KilledWorker`` for a task that kept killing
        its workers), with its traceback.
    """
    import asyncio
    import concurrent.futures

    timeout = GATHER_TIMEOUT
    while True:
        if future.cancelled():
            return LOST
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            timeout *= 2
        except (concurrent.futures.CancelledError, asyncio.CancelledError):
            return LOST


# ----------------------------------------------------------------------------- notebooks
def dashboard_link(client) -> str | None:
    """URL of the cluster's Dask dashboard (its plots need bokeh, which the lab extra
    installs).

    Parameters
    ----------
    client : distributed.Client
        A connected Dask client.

    Returns
    -------
    str or None
        The URL; None when the scheduler serves no web pages.
    """
    try:
        return client.dashboard_link
    except Exception:        # a scheduler without an HTTP server
        return None


def cluster_info(client) -> dict:
    """A summary of the cluster for notebooks and logs.

    Parameters
    ----------
    client : distributed.Client
        A connected Dask client.

    Returns
    -------
    dict
        ``workers``, ``gpu_workers``, ``cpu_slots``, ``threads`` (int) and ``dashboard``
        (str or None, see :func:`dashboard_link`).
    """
    ws = workers(client)
    return {"workers": len(ws), "gpu_workers": len(gpu_workers(client)),
            "cpu_slots": cpu_slots(client), "threads": sum(w.get("nthreads", 0)
                                                           for w in ws.values()),
            "dashboard": dashboard_link(client)}


def show_progress(futures, notebook: bool | None = None) -> None:
    """Show progress of ``futures``: in a notebook an ipywidgets bar, displayed at once where
    this is called and advanced as each future completes (fed by the futures themselves, so
    it holds no connection to the scheduler that a shutdown could break); in a terminal
    Dask's text bar, which waits until they finish.

    Parameters
    ----------
    futures : iterable of distributed.Future
        The work to follow.
    notebook : bool, optional
        Draw the widget (True) or the text bar (False); by default whether this runs in a
        Jupyter kernel.
    """
    from distributed.utils import is_kernel

    futures = list(futures)
    if notebook is None:
        notebook = is_kernel()
    if not notebook:
        from distributed import progress

        progress(futures, notebook=False)
        return
    import threading

    import ipywidgets
    from IPython.display import display

    n = len(futures)
    bar = ipywidgets.IntProgress(value=0, min=0, max=max(n, 1), bar_style="info")
    label = ipywidgets.Label(f"0 of {n} tasks")
    lock = threading.Lock()
    done = [0]

    def tick(_future):
        with lock:
            done[0] += 1
            bar.value = done[0]
            label.value = f"{done[0]} of {n} tasks"
            if done[0] == n:
                bar.bar_style = "success"

    display(ipywidgets.HBox([bar, label]))
    for f in futures:
        f.add_done_callback(tick)
