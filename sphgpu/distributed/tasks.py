"""How the Dask forms send work to the workers, run it and bring it back: the task plumbing that
:mod:`sphgpu.distributed.sht`, :mod:`~sphgpu.distributed.convolution` and
:mod:`~sphgpu.distributed.tpacf` share.

:mod:`sphgpu.distributed.cluster` says which workers there are and where a task may run (and
sends one scatter again when a worker dies under it); this module builds on it: task keys,
the inputs a Dask form accepts (NumPy arrays here, or futures already on the workers), sends
counted in bytes and seconds, and :func:`run_items`, which computes independent items, sends
again an item whose input died with its worker, and returns every result or none.
"""

from __future__ import annotations

import time
import uuid

import numpy as np

from .. import backends
from .._validate import check_flag, check_host_array
from . import cluster as _cluster

__all__ = ["key", "host_array", "is_future_list", "scatter", "submit_each", "run_items",
           "stack", "check_on_device", "check_report", "reported"]


def key(stage: str) -> str:
    """A new task key for the tasks of ``stage`` (e.g. "legendre"): ``"sphgpu-<stage>-<hex>"``.

    Parameters
    ----------
    stage : str
        Alphabetic words; Dask's dashboard groups tasks by the words before the first token.

    Returns
    -------
    str
        Unique to this call (a random hex token), so a retried round never meets old results.
    """
    return f"sphgpu-{stage}-{uuid.uuid4().hex}"


def host_array(name: str, a, check):
    """An argument of a Dask form that must be on the host, checked by ``check(name, a)``.

    Parameters
    ----------
    name : str
        The argument's name, for the error.
    a : array_like
        The argument.
    check : callable(name, a)
        The argument's own check (e.g. :func:`sphgpu._validate.as_maps`); its result is
        returned.

    Returns
    -------
    object
        What ``check`` returns.

    Raises
    ------
    TypeError
        If ``a`` is a device array (each worker copies its own share to its GPU).
    """
    check_host_array(name, a, why="sphgpu.distributed takes NumPy arrays (each worker copies "
                                  "its share to its own GPU); copy it to the host first")
    return check(name, a)


def is_future_list(x) -> bool:
    """Whether ``x`` is a non-empty list or tuple of Dask futures (data already on the workers).

    Parameters
    ----------
    x : object

    Returns
    -------
    bool
    """
    from distributed import Future

    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(f, Future) for f in x)


def _nbytes(x) -> int:
    return int(getattr(x, "nbytes", 0) or 0)


def scatter(client, data: list, resources, transfer=None) -> list:
    """Send ``data`` to the workers that can run tasks asking for ``resources``, one transfer
    per object in one call (:func:`sphgpu.distributed.cluster.scatter`, which sends again to
    the workers left when one dies meanwhile).

    Parameters
    ----------
    client : distributed.Client
    data : list
        Objects to send (NumPy arrays, usually).
    resources : dict or None
        What the tasks that will read them ask for (:func:`~sphgpu.distributed.cluster.
        placement`).
    transfer : sphgpu.distributed.sht.Transfer, optional
        The call's counters: the arrays' bytes are added to ``sent_bytes`` and the wall
        seconds of the send to ``send_seconds``.

    Returns
    -------
    list of distributed.Future
        One per object of ``data``, in order.
    """
    t0 = time.perf_counter()
    futures = _cluster.scatter(client, data, resources)
    if transfer is not None:
        transfer.send_seconds += time.perf_counter() - t0
        transfer.sent_bytes += sum(_nbytes(d) for d in data)
    return futures


def check_report(report, what: str):
    """``report`` (a callable of one argument, or None), or TypeError saying it takes ``what``
    (e.g. "a Transfer")."""
    if report is not None and not callable(report):
        raise TypeError(f"report must be a function of one argument ({what}) or None, "
                        f"got {type(report).__name__}")
    return report


def reported(report, record, started: float, value):
    """``value``, after ``report(record)`` with the call's seconds since ``started``
    (time.perf_counter()) stamped on ``record.seconds``; nothing without a ``report``."""
    if report is not None:
        record.seconds = time.perf_counter() - started
        report(record)
    return value


def submit_each(client, fn, *columns, keys, resources=None, **kwargs) -> list:
    """One task ``fn(columns[0][i], columns[1][i], ..., **kwargs)`` for each i, keyed
    ``keys[i]``, all sent to the scheduler in one message (``client.map``).

    Each ``client.submit`` is a graph update of its own, and the scheduler pays a fixed cost
    for each: a call of 64 one-map transforms on futures, on 2 CPU workers of a 2-core
    machine, took 44 ms in one message against 85 ms submitted one by one
    (``benchmarks/results/submit_paths_cpu.json``).
    Tasks run in the order of ``keys`` where they compete for a worker.

    Parameters
    ----------
    client : distributed.Client
    fn : callable
    *columns : lists of equal length
        The positional arguments, one list per argument (futures among them become the
        tasks' inputs); repeat a shared argument (``[plan] * n``) or give it in ``kwargs``.
    keys : list
        One new task key per task (e.g. ``(key("stage"), i)``).
    resources : dict, optional
        What every task asks for.
    **kwargs
        Keyword arguments shared by every task (not named like ``client.map``'s own).

    Returns
    -------
    list of distributed.Future
        In the order of ``keys``.
    """
    keys = list(keys)
    if any(len(c) != len(keys) for c in columns):
        raise ValueError("submit_each: every column needs one entry per key")
    if not keys:
        return []
    return client.map(fn, *columns, key=keys, resources=resources, **kwargs)


def run_items(client, n: int, build, *, progress=False, transfer=None) -> list:
    """Compute ``n`` independent items and return their results, in order; all or none.

    An item whose futures are cancelled because a lost worker held its scattered input is
    built again (up to :data:`sphgpu.distributed.cluster.ATTEMPTS` times in all); a task's
    error cancels everything and is raised. Results are gathered one by one through
    :func:`sphgpu.distributed.cluster.result`, which does not wait out a gather from a worker
    killed under it.

    Parameters
    ----------
    client : distributed.Client
    n : int
        Number of items.
    build : callable(list of int) -> list of list of distributed.Future
        Given the indices of the items to (re)compute, scatters their inputs and submits
        their tasks, returning for each listed item the futures whose results make it up.
    progress : bool
        Show Dask's progress bar of each round's futures.
    transfer : sphgpu.distributed.sht.Transfer, optional
        The call's counters: tasks submitted are added to ``tasks``, and the bytes and seconds
        of the gathers (each of a finished task) to ``received_bytes`` and
        ``receive_seconds``.

    Returns
    -------
    list of list
        Per item, the results of its futures in the order ``build`` gave them.

    Raises
    ------
    WorkersLostError
        If some item still lost its input with a dying worker at the last attempt.
    """
    from distributed import as_completed

    results = [None] * n
    todo = list(range(n))
    for _ in range(_cluster.ATTEMPTS):
        owner, parts, lost = {}, {}, set()
        try:
            for i, futs in zip(todo, build(todo)):
                parts[i] = [None] * len(futs)
                for j, f in enumerate(futs):
                    owner[f] = (i, j)
            if transfer is not None:
                transfer.tasks += len(owner)
            if progress:
                _cluster.show_progress(list(owner))
            for fut in as_completed(list(owner)):
                i, j = owner[fut]
                if i in lost:
                    continue
                t0 = time.perf_counter()
                res = _cluster.result(fut)       # a task's error is raised here
                if res is _cluster.LOST:
                    lost.add(i)
                    continue
                parts[i][j] = res
                if transfer is not None:
                    transfer.receive_seconds += time.perf_counter() - t0
                    transfer.received_bytes += _nbytes(res)
        except BaseException:
            client.cancel(list(owner))
            raise
        for i in todo:
            if i not in lost:
                results[i] = parts[i]
        todo = sorted(lost)
        if not todo:
            return results
    raise _cluster.WorkersLostError(
        f"{len(todo)} of {n} item(s) lost their input with a dying worker "
        f"{_cluster.ATTEMPTS} times in a row; no result is returned (does a task crash its "
        "worker, or is the cluster losing workers?)")


def stack(results: list, single: bool):
    """The results of :func:`run_items` as one array, when they are all NumPy arrays.

    Parameters
    ----------
    results : list of list
        Per item, its results: arrays of shape (n,) or (rows, ...).
    single : bool
        The caller gave one 1-D input: return its row alone.

    Returns
    -------
    ndarray or list
        The results concatenated along the first axis (a 1-D result counts as one row),
        shape (total rows, ...), or ``(...)`` when ``single``; the flat list of results when
        some are not NumPy arrays (device arrays stay where they are).
    """
    flat = [r for item in results for r in item]
    if not all(isinstance(r, np.ndarray) for r in flat):
        return flat
    out = np.concatenate([r if r.ndim >= 2 else r[None] for r in flat], axis=0)
    return out[0] if single else out


def check_on_device(on_device, name: str, does: str) -> bool:
    """``on_device`` as a bool: TypeError unless a flag, ValueError when True where the tasks
    run on backend ``name`` and it is not a GPU one; ``does`` says what on_device=True does
    there, for the message (e.g. "keeps results on the workers' GPUs")."""
    on_device = check_flag("on_device", on_device)
    if on_device and not backends.info(name).gpu:
        raise ValueError(f"on_device=True {does}, but the tasks run on the {name!r} backend (a "
                         "cluster without GPU workers, or backend='cpu')")
    return on_device
