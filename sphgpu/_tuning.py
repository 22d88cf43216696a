"""The on-disk cache of measured launch parameters, shared by every autotuned CUDA backend.

Each backend measures its candidates once per GPU and problem size and keeps the winner in
``<cache dir>/<name>.json`` (``SPHGPU_CACHE_DIR``, default ``$XDG_CACHE_HOME/sphgpu`` or
``~/.cache/sphgpu``), keyed by a string that starts with the GPU's name. ``SPHGPU_AUTOTUNE=0``
switches measuring off: backends then use their defaults.
"""

from __future__ import annotations

import json
import os
import time

__all__ = ["enabled", "cache_path", "device_name", "lookup", "store", "seconds"]


def enabled() -> bool:
    return os.environ.get("SPHGPU_AUTOTUNE") != "0"


def cache_path(name: str) -> str:
    root = os.environ.get("SPHGPU_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "sphgpu")
    return os.path.join(root, f"{name}.json")


def device_name() -> str:
    from numba import cuda

    dev = cuda.get_current_device()
    return dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)


def _load(name):
    try:
        with open(cache_path(name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def lookup(name: str, key: str):
    """The cached value of ``key`` in cache ``name``, or None."""
    return _load(name).get(key)


def store(name: str, key: str, value) -> None:
    """Add ``key: value`` (JSON-serialisable) to cache ``name``; a read-only home keeps the
    tuned value for this process only."""
    cache = _load(name)
    cache[key] = value
    path = cache_path(name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(cache, f, indent=1)
    except OSError:
        pass


def seconds(run, repeat: int) -> float:
    """Wall seconds of ``repeat`` calls of ``run`` on the GPU, after one call that compiles
    and warms up (synchronised before and after)."""
    import cupy

    sync = cupy.cuda.Device().synchronize
    run()
    sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        run()
    sync()
    return time.perf_counter() - t0
