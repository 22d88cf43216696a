"""Compiled CUDA kernels kept on disk by sphgpu, loaded in later processes without Numba's
compiler.

Why: Numba's own disk cache (``cache=True``) saves the compilation, not the start-up. Before it
loads the first cached kernel of a process, Numba builds its CUDA typing and target contexts,
which imports and installs every lowering registry of numba-cuda: in a fresh process that costs
more than the first call's own work (benchmarks/results/first_call.json,
docs/notes/2026-11-26-first-calls.rst). :mod:`sphgpu._fast_launch` needs only a kernel's cubin
and entry name, so
it keeps both here after the first compilation and later processes load them through cuda.core.

A cubin is valid only for the code that made it, so its file name hashes:

* every ``.py`` file of the sphgpu package: kernels call device functions from other modules,
  and Numba's cache does not follow those (:func:`sphgpu._cuda_launch.refresh_kernel_cache`);
* the kernel: its module and qualified name, Numba's options for it, and the values it reads
  as globals or closes over: numbers, strings, tuples, dtypes, NumPy arrays (by content), and,
  recursively, the sphgpu functions, device functions and intrinsics it calls (another
  library's modules, functions and classes by package and name). A kernel factory's
  parameters are in its closure, so each specialisation has its own file;
* the kinds of the arguments (dtype and ndim of each), the GPU's compute capability and the
  numba-cuda and numba versions.

A kernel that reads a value with no stable description (an object shown by its address) is
not cached here: it is compiled through Numba as before. Files are
``<cache dir>/kernels/<hash>.cubin`` (the cache directory of :mod:`sphgpu._tuning`): the entry
name, a newline, the cubin; ``<hash>.txt`` next to it holds the text that was hashed. They are
written atomically; one that fails to load is compiled again and rewritten. Every edit of the
package makes new files, so a process that stores a kernel first removes the files written more
than :data:`KEEP_DAYS` days ago (a kernel still in use is then compiled once more).
``SPHGPU_KERNEL_CACHE=0`` switches this cache off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
import types

import numpy as np

from . import _tuning
from ._atomic import atomic_write

__all__ = ["enabled", "directory", "key", "load", "store", "package_digest", "fingerprint",
           "Uncacheable"]

#: changes when the file format or the key's recipe changes
FORMAT = "1"
#: files older than this are removed when a process first stores a kernel
KEEP_DAYS = 30
_PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))


class Uncacheable(Exception):
    """A kernel reads a value that has no stable description."""


def enabled() -> bool:
    return os.environ.get("SPHGPU_KERNEL_CACHE") != "0"


def directory() -> str:
    return os.path.join(_tuning.cache_dir(), "kernels")


@functools.lru_cache(maxsize=None)
def package_digest() -> str:
    """SHA-256 of the relative paths and contents of the package's ``.py`` files (a few ms, once
    per process). Symbolic links to folders (a development checkout's data and widgets) are
    not followed."""
    h = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(_PACKAGE_ROOT):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, _PACKAGE_ROOT).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
                h.update(b"\0")
    return h.hexdigest()


def _names(code) -> set:
    """Global names a code object and the code objects nested in it may read."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def fingerprint(func, _seen=None) -> str:
    """What the machine code of ``func`` (a Python function) depends on besides the source
    files: its module and name, and the values of the globals it names and the cells it closes
    over. Raises :class:`Uncacheable`."""
    seen = set() if _seen is None else _seen
    code = func.__code__
    if code in seen:                     # recursion (or a function called twice)
        return f"see:{func.__module__}.{func.__qualname__}"
    seen.add(code)
    parts = [f"{func.__module__}.{func.__qualname__}"]
    g = func.__globals__
    for name in sorted(_names(code)):
        if name in g:
            parts.append(f"{name}={_describe(g[name], seen)}")
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        parts.append(f"{name}:{_describe(cell.cell_contents, seen)}")
    return "{" + ";".join(parts) + "}"


def _describe(v, seen) -> str:
    """A description of ``v`` that is equal across processes exactly when ``v`` makes the
    same machine code."""
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, np.generic):
        return f"{v.dtype}:{v!r}"
    if isinstance(v, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
        return f"ndarray:{v.dtype}:{v.shape}:{digest}"
    if isinstance(v, np.dtype):
        return f"dtype:{v}"
    if isinstance(v, (tuple, list, frozenset)):
        items = sorted(v, key=repr) if isinstance(v, frozenset) else v
        return f"{type(v).__name__}(" + ",".join(_describe(x, seen) for x in items) + ")"
    if isinstance(v, types.ModuleType):
        # another library's module by its package alone: Numba rebinds names such as
        # numba.types (to numba.core.types) once its compiler has started, which must not
        # change the key (the versions in the key stand for the libraries' code)
        return f"module:{_where(v.__name__)}"
    py_func = getattr(v, "py_func", None)            # a Numba dispatcher (device function)
    if isinstance(py_func, types.FunctionType):
        return "jit" + fingerprint(py_func, seen)
    defn = getattr(v, "_defn", None)                 # a Numba intrinsic: its typing function
    if isinstance(defn, types.FunctionType):         # closes over what its code depends on
        return "intrinsic" + fingerprint(defn, seen)
    if isinstance(v, types.FunctionType):
        if (v.__module__ or "").startswith("sphgpu"):
            return "fn" + fingerprint(v, seen)
        return f"fn:{_where(v.__module__)}.{v.__qualname__}"  # another library's: its version
    if isinstance(v, type):
        return f"class:{_where(v.__module__)}.{v.__qualname__}"
    if type(v).__name__ == "ExternFunction":
        # a foreign function of cuda.declare_device (sphgpu._dmma): its code lives in a sphgpu
        # file, which the package digest covers
        return f"extern:{v.name}:{v.sig}"
    text = repr(v)
    if " at 0x" in text:
        raise Uncacheable(f"no stable description of {type(v).__name__} {text}")
    return f"{_where(type(v).__module__)}.{type(v).__qualname__}:{text}"


def _where(module_name) -> str:
    """A module's name, or for another library's module only its package (see _describe)."""
    name = module_name or "?"
    return name if name.startswith("sphgpu") else name.partition(".")[0]


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    try:
        from numba_cuda import __version__ as numba_cuda
    except ImportError:
        numba_cuda = "?"
    import numba

    return f"numba-cuda {numba_cuda}, numba {numba.__version__}"


def _compute_capability() -> str:
    import cupy

    return str(cupy.cuda.Device().compute_capability)


def key(kernel, kinds) -> str | None:
    """The file name (a hex digest) of ``kernel`` (a ``@cuda.jit`` dispatcher) compiled for
    arguments of ``kinds`` on the current GPU, or None when it is not to be cached here."""
    if not enabled():
        return None
    try:
        text = "\n".join([
            fingerprint(kernel.py_func),
            _describe(tuple(sorted((k, _describe(v, set()))
                                   for k, v in getattr(kernel, "targetoptions", {}).items())),
                      set()),
            repr(kinds), FORMAT, _versions(), _compute_capability(), package_digest()])
    except (Uncacheable, AttributeError, ImportError, OSError):
        return None
    digest = hashlib.sha256(text.encode()).hexdigest()
    _texts[digest] = text
    return digest


_texts: dict = {}         # hex digest -> the text it hashes (written next to the cubin)


def _path(key_: str) -> str:
    return os.path.join(directory(), key_ + ".cubin")


def load(key_: str):
    """(cubin bytes, entry name) stored under ``key_``, or None."""
    try:
        with open(_path(key_), "rb") as f:
            data = f.read()
    except OSError:
        return None
    name, sep, cubin = data.partition(b"\n")
    if not sep or not name or not cubin:
        return None
    return cubin, name.decode("ascii", "replace")


def store(key_: str, cubin: bytes, entry: str) -> None:
    """Keep ``cubin`` with its entry name under ``key_`` (atomically; a read-only cache
    directory keeps nothing)."""
    d = directory()
    try:
        os.makedirs(d, exist_ok=True)
        _prune_once(d)
        with atomic_write(_path(key_)) as tmp, open(tmp, "wb") as f:
            f.write(entry.encode("ascii") + b"\n" + bytes(cubin))
        if key_ in _texts:           # what the key stands for, for a person reading the cache
            with open(_path(key_)[:-len(".cubin")] + ".txt", "w") as f:
                f.write(_texts[key_])
    except OSError:
        pass


_pruned: set = set()


def _prune_once(d: str) -> None:
    """Remove the files of ``d`` written more than KEEP_DAYS days ago (once per process)."""
    if d in _pruned:
        return
    _pruned.add(d)
    cutoff = time.time() - KEEP_DAYS * 86400
    for name in os.listdir(d):
        path = os.path.join(d, name)
        try:
            if os.stat(path).st_mtime < cutoff:
                os.unlink(path)
        except OSError:                      # another process removed it first
            pass
