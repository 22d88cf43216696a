"""The one backend registry: ``"cuda"``, ``"cpu"``, ``"reference"``, and ``"auto"``.

Every public function takes ``backend="auto"``. The choice is made, in order, from the explicit
argument, the innermost :func:`use_backend` context, the environment variable ``SPHGPU_BACKEND``,
and finally "auto": CUDA when a GPU is usable and the capability has a CUDA implementation,
otherwise CPU (said once per process with a warning).

This is the only module that reads a backend name. It holds no list of capabilities: each
capability declares itself from its own package, in a module ``sphgpu/<capability>/_declare.py``
that defines ``CAPABILITY = Capability(<its Protocol>, ...)``: the :class:`typing.Protocol` its
backend modules implement, which backends it has (modules named by convention,
``sphgpu.sht._cpu``, ``sphgpu.sht.reference``, ``sphgpu.sht._cuda``...) and its Dask form in
:mod:`sphgpu.distributed`. The registry finds those modules in the folders of the ``sphgpu``
package (:data:`CAPABILITIES`) and reads them without importing the capability's package, so
adding a capability edits nothing here. Backend modules are imported on first use, so importing
sphgpu never touches a GPU. Callers get the module from :func:`load` and facts about a backend
from :func:`info`, and never compare names themselves.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: the public names but the capabilities' protocols (SHTBackend...), which ``__all__`` adds
#: from their declarations
_OWN_ALL = ("BACKENDS", "CAPABILITIES", "PROTOCOLS", "BackendInfo", "BackendUnavailableError",
            "Capability", "available", "cuda_available", "declaration", "dask_forms", "default",
            "for_arrays", "info", "load", "named", "protocol_members", "resolve",
            "resolve_remote", "use_backend")


@dataclass(frozen=True)
class BackendInfo:
    """What callers may ask about a concrete backend, instead of comparing its name; the
    parameters are also its attributes.

    Parameters
    ----------
    name : str
        "cuda", "cpu" or "reference".
    module : str
        The module that implements it inside each capability package ("_cuda", "_cpu",
        "reference").
    gpu : bool
        It runs on a GPU: work for it needs a GPU (a Dask task asks for one) and its natural
        arrays are device arrays.
    reference : bool
        It is the plain NumPy specification, for small sizes only.
    """

    name: str
    module: str
    gpu: bool
    reference: bool


_INFO = {"cuda": BackendInfo("cuda", "_cuda", gpu=True, reference=False),
         "cpu": BackendInfo("cpu", "_cpu", gpu=False, reference=False),
         "reference": BackendInfo("reference", "reference", gpu=False, reference=True)}
BACKENDS = tuple(_INFO)
_context: contextvars.ContextVar[str | None] = contextvars.ContextVar("sphgpu_backend", default=None)
_fallback_warned = False


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here (no GPU, or not implemented for this capability)."""


# ----------------------------------------------------------------------------- capabilities
@dataclass(frozen=True)
class Capability:
    """A capability's declaration to the registry, made in its own package: the module
    ``sphgpu/<name>/_declare.py`` defines ``CAPABILITY = Capability(...)``. That module is read
    without importing the package around it, so it may import only ``typing`` and this module.

    Parameters
    ----------
    protocol : type
        The :class:`typing.Protocol` (``runtime_checkable``) that each of its backend modules
        implements (PEP 544 with a module for ``self``; tests/test_architecture.py checks each
        module against it).
    backends : tuple of str
        The backends it has, from :data:`BACKENDS`; backend ``b`` is the module
        ``sphgpu.<name>.<info(b).module>`` (``_cuda``, ``_cpu``, ``reference``).
    dask : str, optional
        The module of its Dask form (``"sphgpu.distributed.sht"``); :mod:`sphgpu.distributed`
        offers ``dask_names`` from it.
    dask_names : tuple of str
        The public names of its Dask form.
    name : str
        Filled in by the registry: the capability's name, its folder's.
    package : str
        Filled in by the registry: its package (``"sphgpu.sht"``).

    Raises
    ------
    TypeError
        If ``protocol`` is not a class or a name is not a string.
    ValueError
        If ``backends`` names no backend or an unknown one, or ``dask_names`` is given
        without ``dask``.
    """

    protocol: type
    backends: tuple[str, ...] = BACKENDS
    dask: str | None = None
    dask_names: tuple[str, ...] = ()
    name: str = ""
    package: str = ""

    def __post_init__(self):
        if not isinstance(self.protocol, type):
            raise TypeError(f"protocol must be a Protocol class, got {self.protocol!r}")
        for field in ("backends", "dask_names"):
            value = getattr(self, field)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{field} must be a tuple of strings, got {value!r}")
            object.__setattr__(self, field, tuple(value))
        unknown = [b for b in self.backends if b not in _INFO]
        if unknown or not self.backends:
            raise ValueError(f"backends must name some of {BACKENDS}, got {self.backends!r}")
        if self.dask_names and not isinstance(self.dask, str):
            raise ValueError("dask_names needs dask, the module that defines them")

    def module(self, backend: str) -> str:
        """The module of one of its backends.

        Parameters
        ----------
        backend : {"cuda", "cpu", "reference"}
            A concrete backend it has.

        Returns
        -------
        str
            The module's full name (``"sphgpu.sht._cpu"``).

        Raises
        ------
        BackendUnavailableError
            If the capability has no such backend.
        """
        if backend not in self.backends:
            raise BackendUnavailableError(f"{self.package} has no {backend!r} backend")
        return f"{self.package}.{_INFO[backend].module}"


#: the module of a capability's package that declares it
_DECLARATION = "_declare"
_reading = threading.RLock()    # two threads must not execute one declaration twice


def _root():
    """The ``sphgpu`` package (looked up, not imported: it imports this module)."""
    return sys.modules[__name__.rpartition(".")[0]]


@functools.lru_cache(maxsize=8)
def _folders(path: tuple[str, ...]) -> dict[str, str]:
    """{capability: its folder}: the subpackages in ``path`` (the ``sphgpu`` package's
    folders) that hold a declaration module; nothing is imported."""
    found = {}
    for sub in pkgutil.iter_modules(list(path)):
        if not sub.ispkg or sub.name in found:
            continue
        folder = os.path.join(sub.module_finder.path, sub.name)
        if importlib.machinery.PathFinder.find_spec(_DECLARATION, [folder]) is not None:
            found[sub.name] = folder
    return dict(sorted(found.items()))


def _capabilities() -> dict[str, str]:
    return _folders(tuple(_root().__path__))


@functools.lru_cache(maxsize=64)
def _read(name: str, folder: str) -> Capability:
    """The declaration of capability ``name`` from ``folder``, its module executed without
    importing the capability's package (which may import Numba) when that is not imported yet;
    it is put in ``sys.modules`` under its own name, so a later import finds the same module."""
    package = f"{_root().__name__}.{name}"
    modname = f"{package}.{_DECLARATION}"
    with _reading:
        module = sys.modules.get(modname)
        if module is None and package in sys.modules:
            module = importlib.import_module(modname)
        elif module is None:
            spec = importlib.machinery.PathFinder.find_spec(modname, [folder])
            module = importlib.util.module_from_spec(spec)
            sys.modules[modname] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[modname]
                raise
    declared = getattr(module, "CAPABILITY", None)
    if not isinstance(declared, Capability):
        raise TypeError(f"{modname} must define CAPABILITY = sphgpu.backends.Capability(...), "
                        f"got {declared!r}")
    return dataclasses.replace(declared, name=name, package=package)


def _declared(name) -> Capability | None:
    """The declaration of capability ``name``, None where there is none."""
    folder = _capabilities().get(name) if isinstance(name, str) else None
    return None if folder is None else _read(name, folder)


def declaration(name: str) -> Capability:
    """What capability ``name`` declares (its protocol, backends and Dask form).

    Parameters
    ----------
    name : str
        One of :data:`CAPABILITIES`.

    Returns
    -------
    Capability
        With ``name`` and ``package`` filled in.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If no package of sphgpu declares it.
    """
    if not isinstance(name, str):
        raise TypeError(f"capability must be a string, got {type(name).__name__}")
    declared = _declared(name)
    if declared is None:
        raise ValueError(f"capability must be one of {tuple(_capabilities())}, got {name!r}")
    return declared


def dask_forms() -> dict[str, str]:
    """The Dask forms the capabilities declare: {public name: module that defines it}, for
    :mod:`sphgpu.distributed`; reading them imports no capability and no Dask.

    Returns
    -------
    dict of str to str

    Raises
    ------
    ValueError
        If two capabilities declare the same name.
    """
    out = {}
    for name in _capabilities():
        declared = _declared(name)
        for public in declared.dask_names:
            if public in out and out[public] != declared.dask:
                raise ValueError(f"{public!r} is declared by two Dask forms: {out[public]} and "
                                 f"{declared.dask}")
            out[public] = declared.dask
    return out


def __getattr__(name):
    # computed on each use, from the declarations found now (a capability added to the
    # package's folders is seen without editing this module); other dunders (the import
    # system asks for __path__) and private names are never a capability's
    if name == "__all__":
        return [*_OWN_ALL, *(_declared(c).protocol.__name__ for c in _capabilities())]
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "CAPABILITIES":
        return tuple(_capabilities())
    if name == "PROTOCOLS":
        return {c: _declared(c).protocol for c in _capabilities()}
    for c in _capabilities():   # a capability's protocol by its name (SHTBackend...)
        protocol = _declared(c).protocol
        if protocol.__name__ == name:
            return protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__getattr__("__all__")))


def protocol_members(protocol: type) -> list[str]:
    """The names a module must define to implement ``protocol`` (methods and attributes).

    Parameters
    ----------
    protocol : type
        One of the classes of :data:`PROTOCOLS`.

    Returns
    -------
    list of str
        Sorted member names.
    """
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return sorted(names)


def _no_cuda_driver() -> bool:
    """True when no CUDA driver library can be loaded here, so Numba (about 60 MB of a kernel)
    need not be imported to learn that there is no GPU. Looks where Numba looks on Linux
    (``libcuda.so``, ``libcuda.so.1``, in the loader's path and in /usr/lib and /usr/lib64);
    elsewhere, under the simulator or with ``NUMBA_CUDA_DRIVER`` set, Numba is asked."""
    import ctypes
    import sys

    from ._cuda_launch import SIMULATOR

    if SIMULATOR or not sys.platform.startswith("linux") or os.environ.get("NUMBA_CUDA_DRIVER"):
        return False
    names = ("libcuda.so", "libcuda.so.1")
    for path in names + tuple(os.path.join(d, n) for d in ("/usr/lib", "/usr/lib64")
                              for n in names):
        try:
            ctypes.CDLL(path)
        except OSError:
            continue
        return False
    return True


@functools.lru_cache(maxsize=1)
def _cuda_status() -> tuple[bool, str]:
    if _no_cuda_driver():
        return False, "no CUDA driver (libcuda.so) found: no usable CUDA GPU here"
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
    if name != "auto" and name not in _INFO:
        raise ValueError(f"{argname} must be one of {('auto',) + BACKENDS}, got {backend!r}")
    return name


def _has_module(capability: str, name: str) -> bool:
    """Whether ``capability`` declares backend ``name`` (False for an unknown capability)."""
    declared = _declared(capability)
    return declared is not None and name in declared.backends


def _requested(backend):
    """The validated name asked for: the argument, else the use_backend context, else
    SPHGPU_BACKEND, else "auto"."""
    name = _check_name(backend)
    if name == "auto":
        name = _context.get() or _check_name(os.environ.get("SPHGPU_BACKEND", "auto"),
                                             "the environment variable SPHGPU_BACKEND")
    return name


def _auto(capability):
    """(name, reason): what "auto" means here, and why it is not CUDA when it is not."""
    ok, why = _cuda_status()
    if ok and _has_module(capability, "cuda"):
        return "cuda", None
    return "cpu", why if not ok else f"sphgpu.{capability} has no CUDA backend yet"


def resolve(backend: str = "auto", capability: str = "sht") -> str:
    """Turn a backend request into a concrete backend name for ``capability``.

    Parameters
    ----------
    backend : {"auto", "cuda", "cpu", "reference"}
        The request; "auto" defers to :func:`use_backend`, then ``SPHGPU_BACKEND``, then to
        CUDA where a GPU is usable (else CPU, said once per process with a RuntimeWarning).
    capability : str
        One of :data:`CAPABILITIES`.

    Returns
    -------
    str
        "cuda", "cpu" or "reference".

    Raises
    ------
    TypeError
        If ``backend`` is not a string.
    ValueError
        If it names no backend.
    BackendUnavailableError
        If "cuda" is asked for explicitly but cannot run here.
    """
    global _fallback_warned
    name = _requested(backend)
    if name == "auto":
        name, reason = _auto(capability)
        if reason and not _fallback_warned:
            _fallback_warned = True
            warnings.warn(f"sphgpu: running on the CPU backend ({reason}).", RuntimeWarning,
                          stacklevel=3)
        return name
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
    """Resolve ``backend`` and import that capability's implementation module.

    Parameters
    ----------
    capability : str
        One of :data:`CAPABILITIES`.
    backend : {"auto", "cuda", "cpu", "reference"}
        As in :func:`resolve`.

    Returns
    -------
    module
        The backend module; it implements ``PROTOCOLS[capability]``.

    Raises
    ------
    TypeError, ValueError
        As :func:`resolve`; also when ``capability`` is not declared.
    BackendUnavailableError
        As :func:`resolve`; also when the capability has no module for that backend.
    """
    declared = declaration(capability)
    module = importlib.import_module(declared.module(resolve(backend, capability)))
    # the declaration may have been read before its package was imported: make it reachable
    # as an attribute too (sphgpu.sht._declare), as an ordinary import would have
    package = sys.modules[declared.package]
    if not hasattr(package, _DECLARATION):
        setattr(package, _DECLARATION, sys.modules[f"{declared.package}.{_DECLARATION}"])
    return module


def info(backend: str) -> BackendInfo:
    """Facts about a concrete backend (whether it runs on a GPU, is the reference...).

    Parameters
    ----------
    backend : {"cuda", "cpu", "reference"}
        A concrete name, e.g. from :func:`resolve`.

    Returns
    -------
    BackendInfo

    Raises
    ------
    TypeError
        If ``backend`` is not a string.
    ValueError
        If it names no backend, or is "auto" (resolve it first).
    """
    name = _check_name(backend)
    if name == "auto":
        raise ValueError("backend 'auto' has no facts of its own: resolve it first "
                         "(sphgpu.backends.resolve)")
    return _INFO[name]


def available(capability: str = "sht") -> tuple[str, ...]:
    """The backends that can run ``capability`` here: "cpu" and "reference", and "cuda" where
    a GPU is usable (Numba's simulator counts) and the capability has a CUDA module.

    Parameters
    ----------
    capability : str
        One of :data:`CAPABILITIES`.

    Returns
    -------
    tuple of str
        In the order of :data:`BACKENDS`.
    """
    declared = _declared(capability)
    gpu = _cuda_status()[0] and _has_module(capability, "cuda")
    return tuple(n for n, i in _INFO.items()
                 if (gpu or not i.gpu) and (declared is None or n in declared.backends))


def default(capability: str = "sht") -> str:
    """The concrete backend that "auto" stands for here, without warning or raising: the
    :func:`use_backend` context or ``SPHGPU_BACKEND`` when they name one (even one that cannot
    run here, so that a panel can say why), else "cuda" where it can run, else "cpu".

    Parameters
    ----------
    capability : str
        One of :data:`CAPABILITIES`.

    Returns
    -------
    str
    """
    try:
        name = _requested("auto")
    except ValueError:           # a misspelt SPHGPU_BACKEND: resolve() reports it at the call
        name = "auto"
    return _auto(capability)[0] if name == "auto" else name


def named(backend: str | None) -> str | None:
    """The concrete backend that the argument ``backend`` names, or None for "auto" (and for
    None): for callers whose "auto" means "as chosen before" (a Plan's own backends).

    Parameters
    ----------
    backend : {"auto", "cuda", "cpu", "reference"} or None
        The argument as the user gave it.

    Returns
    -------
    str or None

    Raises
    ------
    TypeError
        If ``backend`` is neither a string nor None.
    ValueError
        If it names no backend.
    """
    if backend is None:
        return None
    name = _check_name(backend)
    return None if name == "auto" else name


def for_arrays(device: bool) -> str:
    """The concrete backend whose natural arrays are device arrays (``device`` true) or NumPy
    arrays (false), the reference aside: for callers that know where their arrays live rather
    than a backend's name (a Monte Carlo batch draws its random numbers where its transforms'
    arrays are).

    Parameters
    ----------
    device : bool
        Whether the arrays are device arrays.

    Returns
    -------
    str
        "cuda" or "cpu".

    Raises
    ------
    TypeError
        If ``device`` is not a bool (or NumPy bool).
    """
    if not isinstance(device, (bool, np.bool_)):
        raise TypeError(f"device must be a bool, got {type(device).__name__}")
    return next(n for n, i in _INFO.items() if i.gpu == bool(device) and not i.reference)


def resolve_remote(backend: str, has_gpu: Callable[[], bool]) -> str:
    """The concrete backend for work that runs elsewhere (Dask workers): "auto" means "cuda"
    when ``has_gpu()`` says the workers have GPUs, else "cpu". This machine's GPU, the
    :func:`use_backend` context and ``SPHGPU_BACKEND`` do not enter.

    Parameters
    ----------
    backend : {"auto", "cuda", "cpu", "reference"}
        The request.
    has_gpu : callable() -> bool
        Called only for "auto".

    Returns
    -------
    str
        "cuda", "cpu" or "reference".

    Raises
    ------
    TypeError
        If ``backend`` is not a string.
    ValueError
        If it names no backend.
    """
    name = _check_name(backend)
    if name == "auto":
        return "cuda" if has_gpu() else "cpu"
    return name


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
