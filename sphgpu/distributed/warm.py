"""``sphgpu.distributed.warmup``: the first-call costs of every worker (compilation, launch
autotuning, CUDA context and cuFFT plans) paid once, on all workers at the same time.

Each worker runs :func:`sphgpu.warmup` in one task pinned to it, all at once: the workers of
one machine share sphgpu's on-disk caches (compiled kernels, tuned launch parameters), which
:func:`sphgpu.warmup` fills or reads. A worker that already ran the same warm-up through the
same client is skipped (``once=True``), so callers such as :meth:`sphgpu.sims.MonteCarlo.run`
can ask before every run and pay only on a fresh cluster (or for workers that joined since).
"""

from __future__ import annotations

import uuid
import weakref

from . import cluster as _cluster

__all__ = ["warmup"]

#: {client: {(worker address, warm-up arguments)}}: what each client's workers have run
_DONE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _run_warmup(kwargs):
    """On a worker: :func:`sphgpu.warmup` silently; its seconds per step."""
    from ..warmup import warmup

    return warmup(progress=False, **kwargs)


def warmup(client=None, nside=None, lmax=None, *, backend="auto", steps=None, batch=1,
           pol=False, once=True, **options) -> dict:
    """Run :func:`sphgpu.warmup` on every worker of the cluster at once.

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current Dask client.
    nside, lmax
        As in :func:`sphgpu.warmup`. All arguments are checked here first, so a bad one is a
        clear error in this process, not one per worker.
    backend : {"auto", "cuda", "cpu", "reference"}
        The backend the later calls will use; picks the workers that run their tasks (the GPU
        workers for "auto" on a cluster that has them) and is what each of them warms.
    steps, batch, pol
        As in :func:`sphgpu.warmup`.
    once : bool
        Skip workers that already ran this same warm-up through ``client``.
    **options
        Passed to :func:`sphgpu.warmup` (e.g. ``sort_dtypes``).

    Returns
    -------
    dict
        ``{worker address: {step: seconds}}`` for the workers that ran it now (a worker lost
        meanwhile is left out: a warm-up only saves time, it never holds a result).

    Raises
    ------
    TypeError, ValueError
        For arguments :func:`sphgpu.warmup` refuses.
    """
    from ..warmup import warmup as local_warmup

    client = _cluster.get_client(client)
    with _cluster.one_view(client):
        name, resources = _cluster.placement(client, backend)
        where = _cluster.eligible_workers(client, resources)
    kwargs = dict(nside=nside, lmax=lmax, backend=name, steps=steps, batch=batch, pol=pol,
                  **options)
    # the argument checks of sphgpu.warmup, without running a step (steps=())
    local_warmup(**dict(kwargs, steps=(), progress=False))
    if steps is not None and "cost_model" in steps and nside is None:
        raise ValueError("the 'cost_model' step needs nside (and lmax): the resolution to time")
    key = repr(sorted(kwargs.items()))
    try:
        done = _DONE.setdefault(client, set())
    except TypeError:                      # a client-like object that takes no weak reference
        done = set()
    todo = [w for w in where if not (once and (w, key) in done)]
    # one task per worker, pinned to it; loose, so that a worker that dies hands its task to
    # another (a second warm-up costs little) instead of leaving it waiting forever
    run = uuid.uuid4().hex[:8]
    futures = {w: client.submit(_run_warmup, kwargs, workers=[w], allow_other_workers=True,
                                resources=resources, pure=False,
                                key=f"sphgpu-warmup-{i}-{run}")
               for i, w in enumerate(todo)}
    out = {}
    try:
        for w, f in futures.items():
            res = _cluster.result(f)              # a task's own error is raised here
            if res is not _cluster.LOST:
                out[w] = res
                done.add((w, key))
    except BaseException:
        client.cancel(list(futures.values()))
        raise
    return out
