"""A Monte Carlo's batches as Dask tasks: one task per batch, a few in flight per worker.

The plan (spectra factors, mask, noise map) is sent to every worker once per client (a copy
scattered to each, see :func:`_plan_copies`); each task runs
:func:`sphgpu.sims.pipeline.simulate_batch` on its worker's device and returns only the
spectra. Tasks are submitted as earlier ones finish, each to the worker with the fewest in
flight, so a stop leaves little work to cancel, every worker gets batches and none holds more
than its share.

There is no warm-up step: the first batches start on every worker at once and are the
warm-up (kernels loaded from the on-disk caches, launch parameters tuned for the run's batch,
plans made). A separate :func:`sphgpu.distributed.warmup` before them ran transforms the run
never uses (single maps, whose tuning took 18 s on a machine's first cluster at nside 2048,
and 2.9 s with every cache warm), after which the first batch still cost 0.84 s against
0.21 s (benchmarks/results/mc_first_run_h200.json).
"""

from __future__ import annotations

import uuid

from ..distributed import cluster as _cluster
from .batching import auto_batch_size, tunes
from .pipeline import simulate_batch

#: tasks in flight per worker: one running, one queued so that the worker never waits
IN_FLIGHT = 2


def _plan_copies(mc, client, resources) -> dict:
    """``{worker address: future of mc.plan held there}``, one copy on every eligible worker,
    sent once per client and kept on ``mc``: the plan holds the mask and noise maps (400 MB
    each at nside 2048), which a run of a few seconds should not send again. Workers that
    joined (or were restarted, under a new address) since get theirs; copies of workers that
    left are dropped.

    Each copy is scattered to its worker alone, not broadcast: Dask's broadcast (and
    ``replicate``) keeps trying a worker that died meanwhile, 30 s a try, without end (seen
    with a worker killed as the run began). Every worker holding its own copy also keeps the
    scheduler from preferring the workers that hold the plan and leaving one idle (a suspected
    cause, not established, of an idle worker of four:
    docs/notes/2026-11-27-monte-carlo-on-dask.rst)."""
    import time

    kept = getattr(mc, "_plan_copies", None)
    copies = dict(kept[1]) if kept is not None and kept[0] is client else {}
    deadline = time.monotonic() + _cluster.WORKER_WAIT
    while True:
        now = _cluster.eligible_workers(client, resources)
        copies = {w: f for w, f in copies.items() if w in now and f.status == "finished"}
        for w in now:
            if w not in copies:
                try:
                    copies[w] = client.scatter([mc.plan], workers=[w], hash=False,
                                              direct=_cluster.direct(client))[0]
                except (OSError, KeyError):   # it died or left meanwhile: the others serve
                    pass
        if copies:
            mc._plan_copies = (client, copies)
            return copies
        if time.monotonic() > deadline:       # every worker restarting, and none came back
            raise _cluster.WorkersLostError(
                f"no worker that can run the simulations has been up for "
                f"{_cluster.WORKER_WAIT:.0f} s; the {mc.nsims} finished simulations are kept")
        time.sleep(0.2)


def _batch_size(size, nworkers, ntodo):
    """``size``, lowered so that every worker gets a batch."""
    return max(1, min(size, -(-ntodo // nworkers)))


def _worker_batch(mc, client, backend, resources):
    """The batch size every worker's own device affords (:func:`batching.auto_batch_size` run
    on each at once; the smallest): a fixed 8 makes batches a quarter of one GPU's at nside 512
    and 1024, and the cluster well short of its workers' summed rate
    (benchmarks/results/montecarlo_h200x2.json has the rates with this).

    Asked of all workers at once, because on a fresh cluster the first task of a worker pays
    its CUDA context and imports (0.84 s at nside 2048, benchmarks/results/
    mc_first_run_h200.json): asked of one worker, that was paid once here and once more by
    each other worker's first batch. Asked again (with the plan sent again) when every copy
    died with its worker meanwhile."""
    for _ in range(_cluster.ATTEMPTS):
        copies = _plan_copies(mc, client, resources)
        futures = [client.submit(auto_batch_size, plan, backend, resources=resources,
                                 pure=False, workers=[w], allow_other_workers=True)
                   for w, plan in copies.items()]
        sizes = [s for s in (_cluster.result(f) for f in futures) if s is not _cluster.LOST]
        if sizes:
            return min(sizes)
    raise _cluster.WorkersLostError(f"the Monte Carlo's plan was lost with dying workers "
                                    f"{_cluster.ATTEMPTS} times in a row; nothing was run")


def run_on_cluster(mc, client, todo, batch_size, show, t0):
    """Run simulations ``todo`` of ``mc`` on ``client``'s workers, keeping each batch as it
    arrives (``mc._keep``); a stop (``mc.stop()``) or KeyboardInterrupt cancels what is left.

    A worker killed mid-run costs time only: Dask runs its tasks again elsewhere, a batch
    whose plan died with the workers that held it (its future cancelled) is submitted again
    with the plan sent again, and results are gathered by :func:`sphgpu.distributed.cluster.
    result`, which does not wait out a gather from a dead worker. Each simulation depends only
    on (seed, its number), so the spectra are those of a run without the kill. A batch lost
    more than ATTEMPTS times raises WorkersLostError (finished batches stay kept)."""
    from distributed import as_completed

    client = _cluster.get_client(client)
    backend, resources = _cluster.placement(client, mc.backend)
    size = batch_size or mc.batch_size or _worker_batch(mc, client, backend, resources)
    size = _batch_size(size, len(_plan_copies(mc, client, resources)), len(todo))
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]

    # batches in flight on each worker: a batch goes to the worker with fewest, named in the
    # submission, not left to the scheduler's placement (with four workers it once left one
    # without a batch). The restriction is loose: a worker that left hands its batches to others
    copies = _plan_copies(mc, client, resources)
    load = dict.fromkeys(copies, 0)
    sent = {}                              # first simulation of a batch -> submissions
    run = uuid.uuid4().hex[:8]             # task keys of this run

    def submit(batch):
        attempt = sent[batch[0]] = sent.get(batch[0], 0) + 1
        if attempt > _cluster.ATTEMPTS:
            raise _cluster.WorkersLostError(
                f"simulations {batch[0]}..{batch[-1]} lost their plan with dying workers "
                f"{_cluster.ATTEMPTS} times; the {mc.nsims} finished simulations are kept")
        worker = min(load, key=load.get)
        load[worker] += 1
        plan = copies.get(worker)
        if plan is None or plan.status != "finished":   # its copy died: any other serves
            plan = next(iter(copies.values()))
        tune = tunes(len(batch), size, batch is batches[0])
        future = client.submit(simulate_batch, plan, batch, backend, tune=tune,
                               resources=resources, pure=False,
                               key=f"sphgpu-sims-{batch[0]}-{run}-{attempt}",
                               workers=[worker], allow_other_workers=True)
        running[future] = (batch, worker)
        return future

    def refresh_workers():
        """After a loss: the workers now up (a restarted one has a new address) and a copy
        of the plan on each."""
        nonlocal copies
        copies = _plan_copies(mc, client, resources)
        for w in list(load):
            if w not in copies:
                del load[w]
        for w in copies:
            load.setdefault(w, 0)

    queue = list(reversed(batches))
    running = {}
    for _ in range(min(len(queue), IN_FLIGHT * len(load))):
        submit(queue.pop())
    pending = as_completed(list(running))
    try:
        for fut in pending:
            batch, worker = running.pop(fut)
            if worker in load:
                load[worker] -= 1
            spectra = _cluster.result(fut)    # a task's error is raised here
            if spectra is _cluster.LOST:
                refresh_workers()
                pending.add(submit(batch))
                continue
            mc._keep(batch, spectra, show, t0)
            if mc._stop.is_set():
                break
            if queue:
                pending.add(submit(queue.pop()))
    finally:
        if running:
            client.cancel(list(running))
