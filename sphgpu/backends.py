"""The one backend registry: ``"cuda"``, ``"cpu"``, ``"reference"``, and ``"auto"``.

Every public function takes ``backend="auto"``. The choice is made, in order, from the explicit
argument, the innermost :func:`use_backend` context, the environment variable ``SPHGPU_BACKEND``,
and finally "auto": CUDA when a GPU is usable and the capability has a CUDA implementation,
otherwise CPU (said once per process with a warning).

This is the only module that reads a backend name. Each capability (``sht``, ``sort``,
``tpacf``, ``convolve``, ``master``) has one module per backend, named by convention
(``sphgpu.sht._cpu``, ``sphgpu.sht.reference``, ``sphgpu.sht._cuda``...) and imported on first
use, so importing sphgpu never touches a GPU. What such a module provides is declared below as
a :class:`typing.Protocol` per capability (:data:`PROTOCOLS`); callers get the module from
:func:`load` and facts about a backend from :func:`info`, and never compare names themselves.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import importlib.util
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["BACKENDS", "CAPABILITIES", "PROTOCOLS", "BackendInfo", "BackendUnavailableError",
           "SHTBackend", "SortBackend", "TpacfBackend", "ConvolveBackend", "MasterBackend",
           "available",
           "cuda_available", "default", "info", "load", "named", "protocol_members", "resolve",
           "resolve_remote", "use_backend"]


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
CAPABILITIES = ("sht", "sort", "tpacf", "convolve", "master")
_context: contextvars.ContextVar[str | None] = contextvars.ContextVar("sphgpu_backend", default=None)
_fallback_warned = False


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here (no GPU, or not implemented for this capability)."""


# ----------------------------------------------------------------------------- protocols
# Modules implement these (PEP 544): the methods' ``self`` is the module. Shapes are per call;
# "k" is a batch of maps or coefficient sets. Each backend module is checked against its
# protocol by tests/test_architecture.py.
@runtime_checkable
class SHTBackend(Protocol):
    """A backend module of :mod:`sphgpu.sht` (``reference``, ``_cpu``, ``_cuda``).

    ``layout`` is an :class:`sphgpu.AlmLayout`, ``geometry`` a :class:`sphgpu.RingGeometry`;
    a_lm are complex128, maps float64. ``ACCEPTS_DEVICE_ARRAYS`` says whether the functions
    take device arrays (then NumPy in gives NumPy out, device in gives device out). The four
    transforms take ``prepared``, what :meth:`prepare` made for their layout, grid and spin
    (a :class:`sphgpu.SHT` holds it); without it the backend finds its own.
    """

    ACCEPTS_DEVICE_ARRAYS: bool

    def prepare(self, layout: Any, geometry: Any, spin: int) -> Any:
        """What the transforms of one layout, grid and spin reuse from call to call.

        Parameters
        ----------
        layout : AlmLayout
            Layout of the a_lm.
        geometry : RingGeometry
            The grid.
        spin : int
            0 for :meth:`synthesis` and :meth:`analysis`, else the spin of
            :meth:`synthesis_spin` and :meth:`analysis_spin`.

        Returns
        -------
        object or None
            The backend's own plan (the GPU's tables and FFT set-up), None where there is none.
        """

    def to_device(self, a: Any) -> Any:
        """``a`` where this backend computes.

        Parameters
        ----------
        a : array
            Host or device array.

        Returns
        -------
        array
            A device copy on the GPU backend; ``a`` itself on the host backends.
        """

    def to_host(self, a: Any) -> Any:
        """``a`` as a NumPy array.

        Parameters
        ----------
        a : array
            A result of this backend.

        Returns
        -------
        numpy.ndarray
        """

    def synthesis(self, alm: Any, layout: Any, geometry: Any, *, prepared: Any = None) -> Any:
        """Spin-0 synthesis.

        Parameters
        ----------
        alm : array, shape (k, nalm), complex128
            Coefficient sets in ``layout``.
        layout : AlmLayout
            Their layout.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, 0).

        Returns
        -------
        array, shape (k, npix), float64
        """

    def analysis(self, maps: Any, layout: Any, geometry: Any, *, prepared: Any = None) -> Any:
        """Quadrature-weighted adjoint of :meth:`synthesis`.

        Parameters
        ----------
        maps : array, shape (k, npix), float64
            Maps on ``geometry``.
        layout : AlmLayout
            Layout of the result.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, 0).

        Returns
        -------
        array, shape (k, nalm), complex128
        """

    def synthesis_spin(self, alm: Any, spin: int, layout: Any, geometry: Any, *,
                       prepared: Any = None) -> Any:
        """Spin synthesis with healpy's conventions.

        Parameters
        ----------
        alm : array, shape (k, 2, nalm) E, B or (k, 3, nalm) T, E, B, complex128
            Coefficient sets.
        spin : int
            Spin of the E, B rows, >= 1.
        layout : AlmLayout
            Their layout.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, spin).

        Returns
        -------
        array, shape (k, 2 or 3, npix), float64
        """

    def analysis_spin(self, maps: Any, spin: int, layout: Any, geometry: Any, *,
                      prepared: Any = None) -> Any:
        """Quadrature-weighted adjoint of :meth:`synthesis_spin`.

        Parameters
        ----------
        maps : array, shape (k, 2 or 3, npix), float64
            Q, U or I, Q, U maps.
        spin : int
            Spin, >= 1.
        layout : AlmLayout
            Layout of the result.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, spin).

        Returns
        -------
        array, shape (k, 2 or 3, nalm), complex128
        """

    def stage_alm2leg(self, alm: Any, layout: Any, geometry: Any, mvals: Any, astart: Any, *,
                      nthreads: int | None = None) -> Any:
        """Legendre step of a subset of orders (:func:`sphgpu.sht.stages.alm2leg`).

        Parameters
        ----------
        alm : array, shape (k, n), complex128
            Packed coefficients: order mvals[c]'s coefficient l at ``alm[:, astart[c] + l]``.
        layout : AlmLayout
            lmax and mmax of the transform.
        geometry : RingGeometry
            The rings.
        mvals : ndarray, shape (nm,), int64
            The orders.
        astart : ndarray, shape (nm,), int64
            Their offsets (negative where the hypothetical l = 0 entry lies before ``alm``).
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nrings, nm), complex128
        """

    def stage_leg2alm(self, leg: Any, layout: Any, geometry: Any, mvals: Any, astart: Any,
                      nalm: int, *, nthreads: int | None = None) -> Any:
        """Adjoint of :meth:`stage_alm2leg`.

        Parameters
        ----------
        leg : array, shape (k, nrings, nm), complex128
            Delta_m per ring and order.
        layout : AlmLayout
            lmax and mmax of the transform.
        geometry : RingGeometry
            The rings.
        mvals : ndarray, shape (nm,), int64
            The orders.
        astart : ndarray, shape (nm,), int64
            Their offsets in the result.
        nalm : int
            Length of the packed result.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nalm), complex128
        """

    def stage_leg2map(self, leg: Any, geometry: Any, *, nthreads: int | None = None) -> Any:
        """Ring step of a synthesis.

        Parameters
        ----------
        leg : array, shape (k, nrings, mmax + 1), complex128
            Column m is order m.
        geometry : RingGeometry
            The rings.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, npix), float64
        """

    def stage_map2leg(self, maps: Any, geometry: Any, mmax: int, quadrature: bool, *,
                      nthreads: int | None = None) -> Any:
        """Ring step of an analysis.

        Parameters
        ----------
        maps : array, shape (k, npix), float64
            Maps on ``geometry``.
        geometry : RingGeometry
            The rings.
        mmax : int
            Last order returned.
        quadrature : bool
            Multiply by the rings' quadrature weights.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nrings, mmax + 1), complex128
        """


@runtime_checkable
class SortBackend(Protocol):
    """A backend module of :mod:`sphgpu.sort`.

    ``NATIVE_KEYS``: the backend sorts signed and float keys itself (``sort_pairs`` takes a
    ``transform``); otherwise it is given unsigned radix keys made on the host.
    """

    ACCEPTS_DEVICE_ARRAYS: bool
    NATIVE_KEYS: bool
    DEFAULT_RADIX_BITS: int

    def choose_radix_bits(self, n: int, key_bits: int, itemsize: int, want_perm: bool) -> int:
        """Radix bits for a sort.

        Parameters
        ----------
        n : int
            Number of keys.
        key_bits : int
            Significant bits of the keys.
        itemsize : int
            Bytes per key.
        want_perm : bool
            Whether the permutation is wanted too.

        Returns
        -------
        int
        """

    def sort_pairs(self, ukeys: Any, key_bits: int, radix_bits: int, want_perm: bool,
                   **kw: Any) -> tuple:
        """Stable LSD radix sort of unsigned keys.

        Parameters
        ----------
        ukeys : array, shape (n,), uint32 or uint64
            The keys (signed and float bits too, with ``transform``, where NATIVE_KEYS).
        key_bits : int
            Low bits to sort by.
        radix_bits : int
            Bits per pass.
        want_perm : bool
            Return the permutation.
        **kw
            Backend options (``transform`` where NATIVE_KEYS).

        Returns
        -------
        tuple
            (sorted keys, int64 permutation or None).
        """


@runtime_checkable
class TpacfBackend(Protocol):
    """A backend module of :mod:`sphgpu.tpacf`: exact pair counts in angular bins."""

    PRECISIONS: tuple
    DEFAULT_PRECISION: str

    def count_pairs(self, cat1: Any, cat2: Any, bins: Any, *, n_regions: int = 0,
                    weighted: bool = False, precision: str = "float64") -> Any:
        """Exact pair counts of catalogs in angular bins.

        Parameters
        ----------
        cat1 : Catalog
            The first catalog.
        cat2 : Catalog or None
            The second (None: unique pairs of ``cat1``).
        bins : AngularBins
            The bins.
        n_regions : int
            Jackknife regions (0: none).
        weighted : bool
            Sum weights too.
        precision : str
            One of PRECISIONS.

        Returns
        -------
        RawCounts
            Counts per bin (and per jackknife region).
        """


@runtime_checkable
class ConvolveBackend(Protocol):
    """A backend module of :mod:`sphgpu.convolve`: the real-space part of a convolution (the
    harmonic part runs on the SHT backend of the same name)."""

    ACCEPTS_DEVICE_ARRAYS: bool

    def convolve(self, maps: Any, plan: Any, kernel: Any, *, concurrent: bool = False) -> Any:
        """The real-space sum over pixel pairs within the support of ``kernel``.

        Parameters
        ----------
        maps : array, shape (k, npix), float64
            Maps on ``plan.geometry`` (device arrays where ACCEPTS_DEVICE_ARRAYS).
        plan : RingPlan
            Rings and their ranges (:func:`sphgpu.convolve.realspace.ring_plan`).
        kernel : CompactKernel
            The compact kernel.
        concurrent : bool
            Other work of this process (a split's harmonic part) may use the device meanwhile.

        Returns
        -------
        array, shape (k, npix), float64
            NumPy for NumPy input.
        """


@runtime_checkable
class MasterBackend(Protocol):
    """A backend module of :mod:`sphgpu.master`: MASTER mode-coupling matrices."""

    ACCEPTS_DEVICE_ARRAYS: bool

    def coupling_blocks(self, wl: Any, lmax: int, blocks: tuple) -> Any:
        """Mode-coupling blocks of a mask power spectrum.

        Parameters
        ----------
        wl : array, shape (nw,), float64
            Mask power spectrum W_L (zero beyond nw - 1).
        lmax : int
            Last multipole of the matrices.
        blocks : tuple of str
            Names from ("00", "02", "++", "--").

        Returns
        -------
        array, shape (len(blocks), lmax + 1, lmax + 1), float64
            out[b, l, l'] = M^b_ll'.
        """


PROTOCOLS: dict[str, type] = {"sht": SHTBackend, "sort": SortBackend, "tpacf": TpacfBackend,
                              "convolve": ConvolveBackend, "master": MasterBackend}


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


@functools.lru_cache(maxsize=None)     # asked by every public call; the answer never changes
def _has_module(capability: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"sphgpu.{capability}.{_INFO[name].module}") is not None
    except ModuleNotFoundError:  # the capability package itself does not exist
        return False


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
    TypeError, ValueError, BackendUnavailableError
        As :func:`resolve`.
    """
    name = resolve(backend, capability)
    return importlib.import_module(f"sphgpu.{capability}.{_INFO[name].module}")


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
    gpu = _cuda_status()[0] and _has_module(capability, "cuda")
    return tuple(n for n, i in _INFO.items() if gpu or not i.gpu)


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
