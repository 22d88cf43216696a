"""The on-disk caches of measured numbers: launch parameters and cost-model constants.

Each cache is one JSON object in ``<cache dir>/<name>.json`` (``SPHGPU_CACHE_DIR``, default
``$XDG_CACHE_HOME/sphgpu`` or ``~/.cache/sphgpu``), keyed by strings that name the device and
problem size. ``SPHGPU_AUTOTUNE=0`` switches the launch autotuners off: backends then use their
defaults.

Several processes may tune at once (Dask GPU workers): :func:`store` takes an exclusive lock on
``<name>.json.lock``, re-reads the file, adds its entry and replaces the file atomically
(temporary file, then ``os.replace``), so no process loses another's entries and a reader never
sees half a file. A damaged file (not JSON, not an object) or a damaged entry (``check``
rejects it: NaN, negative or wrongly shaped) is reported once per file with a
:class:`CacheWarning` naming it, and ignored; the next :func:`store` rewrites the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings

from ._atomic import atomic_write

try:
    import fcntl
except ImportError:        # Windows: atomic replacement still holds, entries may race
    fcntl = None

__all__ = ["enabled", "paused", "cache_dir", "cache_path", "device_name", "lookup", "store",
           "seconds", "CacheWarning", "nonnegative_number", "print_progress"]


class CacheWarning(RuntimeWarning):
    """A cache file of sphgpu could not be used as it stands (it is ignored)."""


_local = threading.local()


def enabled() -> bool:
    """Whether launch autotuners measure: not with ``SPHGPU_AUTOTUNE=0``, not inside
    :func:`paused` (in this thread)."""
    return os.environ.get("SPHGPU_AUTOTUNE") != "0" and not getattr(_local, "paused", 0)


@contextlib.contextmanager
def paused():
    """Launch autotuners keep their defaults while the block runs in this thread (the cost
    model times many sizes once each: tuning each would cost more than the few per cent it
    gains)."""
    _local.paused = getattr(_local, "paused", 0) + 1
    try:
        yield
    finally:
        _local.paused -= 1


def cache_dir() -> str:
    """``SPHGPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/sphgpu`` or ``~/.cache/sphgpu``."""
    return os.environ.get("SPHGPU_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "sphgpu")


def cache_path(name: str) -> str:
    return os.path.join(cache_dir(), f"{name}.json")


def device_name() -> str:
    """The current GPU's name (as CUDA gives it, e.g. "NVIDIA H100 80GB HBM3"), through CuPy:
    asking Numba would create Numba's own CUDA context in processes that need none."""
    import cupy

    dev = cupy.cuda.Device()
    name = _device_names.get(dev.id)
    if name is None:
        raw = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
        name = _device_names[dev.id] = raw.decode() if isinstance(raw, bytes) else str(raw)
    return name


_device_names: dict = {}


_reported: set = set()


def _report(path, why):
    if path not in _reported:
        _reported.add(path)
        warnings.warn(f"sphgpu ignores the damaged cache file {path} ({why}); it is measured "
                      f"again and rewritten", CacheWarning, stacklevel=3)


def _load(path) -> dict:
    """The cache at ``path`` as a dict; {} when absent, unreadable or damaged (reported)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        _report(path, f"not JSON: {e}")
        return {}
    if not isinstance(data, dict):
        _report(path, f"a JSON {type(data).__name__}, not an object")
        return {}
    return data


def lookup(name: str, key: str, check=None):
    """The cached value of ``key`` in cache ``name``, or None. ``check(value)`` returns the value
    to use or raises ValueError, TypeError, KeyError or AttributeError for a damaged entry
    (reported, then None)."""
    path = cache_path(name)
    value = _load(path).get(key)
    if value is None or check is None:
        return value
    try:
        return check(value)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        _report(path, f"entry {key!r}: {e}")
        return None


@contextlib.contextmanager
def _locked(path):
    with open(path + ".lock", "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_UN)


def store(name: str, key: str, value) -> None:
    """Add ``key: value`` (JSON-serialisable) to cache ``name``, keeping every other entry,
    even those another process stores at the same time. A read-only home keeps the value for
    this process only (the caller holds it)."""
    path = cache_path(name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _locked(path):
            cache = _load(path)
            cache[key] = value
            with atomic_write(path) as tmp, open(tmp, "w") as f:
                json.dump(cache, f, indent=1)
    except OSError:
        pass


def nonnegative_number(x) -> float:
    """``x`` as a float if it is a finite number >= 0, else ValueError/TypeError (for checks)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"expected a number, got {type(x).__name__}")
    x = float(x)
    if not (x >= 0.0 and x != float("inf")):
        raise ValueError(f"expected a finite number >= 0, got {x}")
    return x


def print_progress(message: str) -> None:
    """The default progress report of long first-time work: one flushed line on stdout (shown
    under the running cell in Jupyter, in the terminal in scripts)."""
    print(f"sphgpu: {message}", flush=True)


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
