"""A Monte Carlo's batches as Dask tasks: one task per batch, a few in flight per worker.

The plan (spectra factors, mask, noise map) is sent to every worker once per client; each task
runs :func:`sphgpu.sims.pipeline.simulate_batch` on its worker's device and returns only the
spectra. Tasks are submitted as earlier ones finish, each to the worker with the fewest in
flight, so a stop leaves little work to cancel, every worker gets batches and none holds more
than its share.
"""

from __future__ import annotations

from ..distributed import cluster as _cluster
from .batching import auto_batch_size
from .pipeline import simulate_batch

#: tasks in flight per worker: one running, one queued so that the worker never waits
IN_FLIGHT = 2


def _scattered_plan(mc, client):
    """The future of ``mc.plan`` on every worker, sent once per client and kept on ``mc``: the
    plan holds the mask and noise maps (400 MB each at nside 2048), which a run of a few
    seconds should not send again. A worker that lacks it (one that joined or was restarted
    since) gets a copy first: the scheduler may prefer the workers that hold the plan to moving
    800 MB, and leave that worker idle (a suspected cause, not established, of one idle worker
    of four on an H200 machine: README, *Monte Carlo*)."""
    kept = getattr(mc, "_plan_future", None)
    if kept is not None and kept[0] is client and kept[1].status == "finished":
        future = kept[1]
        missing = set(_cluster.workers(client)) - set(client.who_has([future]).get(future.key, ()))
        if missing:
            client.replicate([future], workers=sorted(missing), n=len(missing))
        return future
    future = client.scatter([mc.plan], broadcast=True, hash=False)[0]
    mc._plan_future = (client, future)
    return future


def _batch_size(size, nworkers, ntodo):
    """``size``, lowered so that every worker gets a batch."""
    return max(1, min(size, -(-ntodo // nworkers)))


def _worker_batch(client, plan, backend, resources):
    """The batch size a worker's own device affords (:func:`batching.auto_batch_size` run
    there). A fixed 8 had made batches a quarter of one GPU's at nside 512 and 1024: on two
    H200 workers the cluster ran at 0.59 and 0.80 of twice one GPU's rate."""
    return client.submit(auto_batch_size, plan, backend, resources=resources,
                         pure=False).result()


def run_on_cluster(mc, client, todo, batch_size, show, t0):
    """Run simulations ``todo`` of ``mc`` on ``client``'s workers, keeping each batch as it
    arrives (``mc._keep``); a stop (``mc.stop()``) or KeyboardInterrupt cancels what is left."""
    from distributed import as_completed

    client = _cluster.get_client(client)
    backend, resources = _cluster.placement(client, mc.backend)
    workers = sorted(_cluster.workers(client))
    plan = _scattered_plan(mc, client)
    size = batch_size or mc.batch_size or _worker_batch(client, plan, backend, resources)
    size = _batch_size(size, len(workers), len(todo))
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]

    # batches in flight on each worker: a batch goes to the worker with fewest, named in the
    # submission, not left to the scheduler's placement (on four H200 one worker once ran no
    # batch at all). The restriction is loose: a worker that left hands its batches to others
    load = dict.fromkeys(workers, 0)

    def submit(batch):
        worker = min(load, key=load.get)
        load[worker] += 1
        future = client.submit(simulate_batch, plan, batch, backend, resources=resources,
                               pure=False, key=f"sphgpu-sims-{batch[0]}-{plan.key[-8:]}",
                               workers=[worker], allow_other_workers=True)
        running[future] = (batch, worker)
        return future

    queue = list(reversed(batches))
    running = {}
    for _ in range(min(len(queue), IN_FLIGHT * len(workers))):
        submit(queue.pop())
    pending = as_completed(list(running), with_results=True)
    try:
        for fut, spectra in pending:
            batch, worker = running.pop(fut)
            load[worker] -= 1
            mc._keep(batch, spectra, show, t0)
            if mc._stop.is_set():
                break
            if queue:
                pending.add(submit(queue.pop()))
    finally:
        if running:
            client.cancel(list(running))
