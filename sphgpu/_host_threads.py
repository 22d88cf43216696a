"""The host threads that sphgpu's own bulk host work shares (reductions over maps, copies into
page-locked memory). NumPy releases the interpreter lock in its reductions and copies, so one
large array cut into spans goes through several cores at once."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["count", "pool", "spans", "run_spans"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pid = None                 # the process that made _pool: a forked child has none of its threads


def count() -> int:
    """Threads to use: SPHGPU_NUM_THREADS if set (as for ducc0), else the cores, at most 16
    (a copy or a reduction of one array fills the memory bus well before)."""
    n = int(os.environ.get("SPHGPU_NUM_THREADS", "0") or 0)
    return max(1, n if n > 0 else min(os.cpu_count() or 1, 16))


def pool() -> ThreadPoolExecutor:
    """The shared pool of :func:`count` threads (made at first use, and again if that count
    changes or in a child process forked after it was made, where its threads do not exist)."""
    global _pool, _pid
    n = count()
    with _lock:
        if _pool is None or _pool._max_workers != n or _pid != os.getpid():
            _pool = ThreadPoolExecutor(n, thread_name_prefix="sphgpu-host")
            _pid = os.getpid()
        return _pool


def spans(n: int, parts: int, align: int = 1) -> list[tuple[int, int]]:
    """[start, stop) spans covering range(n) in at most ``parts`` pieces, starts multiples of
    ``align``."""
    step = -(-n // max(1, parts))
    step = -(-step // align) * align
    return [(s, min(s + step, n)) for s in range(0, n, step)] if n else []


def run_spans(fn, n: int, align: int = 1) -> int:
    """``fn(k, start, stop)`` for each span k of :func:`spans` (n, :func:`count`, align), on
    the pool, waiting for all (an error in one is raised here); returns the number of spans."""
    parts = spans(n, count(), align)
    for f in [pool().submit(fn, k, s, e) for k, (s, e) in enumerate(parts)]:
        f.result()
    return len(parts)
