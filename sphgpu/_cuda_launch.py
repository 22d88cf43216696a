"""What every CUDA backend of sphgpu needs around its Numba launches, written once.

* :func:`quiet`: Numba warns ``NumbaPerformanceWarning: Grid size N will likely result in GPU
  under-utilization`` whenever a launch has fewer than about 128 blocks. sphgpu's small launches
  (short ring classes, small maps, per-m tables) are small on purpose, and the warning tells a
  user nothing they can act on, so sphgpu's backends run their launches inside :func:`quiet`
  (a context manager and decorator). It hides that one warning only, and only while sphgpu
  code runs; the user's own kernels keep it.
* :func:`refresh_kernel_cache`: kernels are compiled with Numba's on-disk cache
  (``cache=True``), which keys a kernel on its own source file (time stamp and size), its
  bytecode and its closure's values, but not on the device functions it calls from other
  files. A kernel module calls this, before its kernels are defined, with the files it takes
  device functions from, so that editing one of them compiles the kernels afresh.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

__all__ = ["quiet", "refresh_kernel_cache", "UNDER_UTILIZATION", "SIMULATOR"]


def _simulator_configured() -> bool:
    """``numba.config.ENABLE_CUDASIM`` without importing Numba where it is not imported yet:
    Numba alone holds about 60 MB of a kernel, and a notebook on ducc0's transforms never needs
    it. Numba reads the variable as an integer, 0 when unset or unreadable."""
    numba = sys.modules.get("numba")
    if numba is not None:
        return bool(numba.config.ENABLE_CUDASIM)
    try:
        return bool(int(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") or 0))
    except ValueError:
        return False


#: whether CUDA kernels run in Numba's simulator. Kept here, in a module that imports neither
#: Numba nor the rest of sphgpu, so that the array kinds (:mod:`sphgpu._device`, at the bottom of
#: the import graph) read the same flag as the kernel launcher (:mod:`sphgpu._fast_launch`) and
#: the checks' count kernel (:mod:`sphgpu._check_kernels`) without importing either: the argument
#: checks look that kernel up by name (:data:`sphgpu._validate.DEVICE_CHECKS`)
SIMULATOR = _simulator_configured()

#: the message of Numba's low-occupancy warning (a regular expression, matched at the start of
#: the message; Numba may put terminal colour codes before it, NUMBA_COLOR_SCHEME)
UNDER_UTILIZATION = r".*Grid size \d+ will likely result in GPU under-utilization"


def _categories():
    """Numba's NumbaPerformanceWarning classes: numba-cuda defines its own, next to numba's."""
    found = []
    for module in ("numba.cuda.core.errors", "numba.core.errors"):
        try:
            mod = __import__(module, fromlist=["NumbaPerformanceWarning"])
        except ImportError:
            continue
        cls = getattr(mod, "NumbaPerformanceWarning", None)
        if cls is not None and cls not in found:
            found.append(cls)
    return found


_lock = threading.Lock()
_depth = 0
_filters: list = []


@contextlib.contextmanager
def quiet():
    """Hide Numba's grid under-utilization warning while the block runs.

    ``warnings.catch_warnings`` cannot be used here: it saves and restores the whole filter
    list, so two threads inside it at once (convolve runs its harmonic part in a worker thread
    next to the real-space part) can leave the filter behind for good. Instead the first thread
    in adds one filter per warning class and the last one out removes exactly those.
    """
    global _depth
    with _lock:
        if _depth == 0:
            for cls in _categories():
                warnings.filterwarnings("ignore", message=UNDER_UTILIZATION, category=cls)
                _filters.append(warnings.filters[0])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for f in _filters:
                    with contextlib.suppress(ValueError):   # the user reset the filters
                        warnings.filters.remove(f)
                _filters.clear()
                getattr(warnings, "_filters_mutated", lambda: None)()


def refresh_kernel_cache(kernel_file: str, *dependencies: str) -> None:
    """If a file in ``dependencies`` is newer than ``kernel_file``, give ``kernel_file`` that
    modification time, so Numba finds its cached kernels out of date and compiles them again.
    Call it before the kernels of ``kernel_file`` are defined (Numba reads the time stamp when
    a kernel is decorated). A read-only installation is left as it is."""
    try:
        newest = max(os.stat(d).st_mtime for d in dependencies)
        st = os.stat(kernel_file)
        if newest > st.st_mtime:
            os.utime(kernel_file, (st.st_atime, newest))
    except (OSError, ValueError):
        pass
