"""The one backend registry: ``"cuda"``, ``"cpu"``, ``"reference"``, and ``"auto"``.

Every public function takes ``backend="auto"``. The choice is made, in order, from the explicit
argument, the innermost :func:`use_backend` context, the environment variable ``SPHGPU_BACKEND``,
and finally "auto": CUDA when a GPU is usable and the capability has a CUDA implementation,
otherwise CPU (said once per process with a warning).

Backends are modules named by convention inside each capability package (``sphgpu.sht._cpu``,
``sphgpu.sht.reference``, ``sphgpu.sht._cuda``...) and imported on first use, so importing sphgpu
never touches a GPU.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import importlib.util
import os
import warnings

__all__ = ["BACKENDS", "BackendUnavailableError", "resolve", "load", "use_backend",
           "cuda_available"]

BACKENDS = ("cuda", "cpu", "reference")
_MODULES = {"cuda": "_cuda", "cpu": "_cpu", "reference": "reference"}
_context: contextvars.ContextVar[str | None] = contextvars.ContextVar("sphgpu_backend", default=None)
_fallback_warned = False


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here (no GPU, or not implemented for this capability)."""


@functools.lru_cache(maxsize=1)
def _cuda_status() -> tuple[bool, str]:
    try:
        from numba import cuda
    except Exception as exc:  # numba-cuda missing or broken
        return False, f"numba.cuda cannot be imported ({exc}); install the 'gpu' extra"
    try:
        if not cuda.is_available():
            return False, "numba.cuda found no usable CUDA GPU or driver"
    except Exception as exc:
        return False, f"CUDA initialisation failed: {exc}"
    return True, "a CUDA GPU is available"


def cuda_available() -> bool:
    """Whether Numba can use a CUDA GPU (or its simulator, NUMBA_ENABLE_CUDASIM=1).

    Returns
    -------
    bool
        True when CUDA kernels can run here; checked once per process.
    """
    return _cuda_status()[0]


def _check_name(backend, argname="backend"):
    if not isinstance(backend, str):
        raise TypeError(f"{argname} must be a string, got {type(backend).__name__}")
    name = backend.strip().lower()
    if name != "auto" and name not in BACKENDS:
        raise ValueError(f"{argname} must be one of {('auto',) + BACKENDS}, got {backend!r}")
    return name


def _has_module(capability: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"sphgpu.{capability}.{_MODULES[name]}") is not None
    except ModuleNotFoundError:  # the capability package itself does not exist
        return False


def resolve(backend: str = "auto", capability: str = "sht") -> str:
    """Turn a backend request into a concrete backend name for ``capability``.

    Raises ValueError for unknown names and BackendUnavailableError when ``"cuda"`` is requested
    explicitly but cannot run.
    """
    global _fallback_warned
    name = _check_name(backend)
    if name == "auto":
        name = _context.get() or _check_name(os.environ.get("SPHGPU_BACKEND", "auto"),
                                             "the environment variable SPHGPU_BACKEND")
    if name == "auto":
        ok, why = _cuda_status()
        if ok and _has_module(capability, "cuda"):
            return "cuda"
        if not _fallback_warned:
            _fallback_warned = True
            reason = why if not ok else f"sphgpu.{capability} has no CUDA backend yet"
            warnings.warn(f"sphgpu: running on the CPU backend ({reason}).", RuntimeWarning,
                          stacklevel=3)
        return "cpu"
    if name == "cuda":
        ok, why = _cuda_status()
        if not ok:
            raise BackendUnavailableError(f"backend='cuda' was requested but {why}")
        if not _has_module(capability, "cuda"):
            raise BackendUnavailableError(
                f"backend='cuda' was requested but sphgpu.{capability} has no CUDA backend yet; "
                "use backend='cpu'")
    return name


def load(capability: str, backend: str = "auto"):
    """Resolve ``backend`` and import that capability's implementation module."""
    name = resolve(backend, capability)
    return importlib.import_module(f"sphgpu.{capability}.{_MODULES[name]}")


@contextlib.contextmanager
def use_backend(backend: str):
    """Context manager: calls with ``backend="auto"`` inside it use ``backend``.

    Parameters
    ----------
    backend : str
        ``"cuda"``, ``"cpu"``, ``"reference"`` or ``"auto"`` (case and spaces ignored).

    Yields
    ------
    str
        The normalised backend name.

    Examples
    --------
    >>> with use_backend("reference"):
    ...     m = alm2map(alm, nside)      # runs the NumPy reference
    """
    name = _check_name(backend)
    token = _context.set(None if name == "auto" else name)
    try:
        yield name
    finally:
        _context.reset(token)
