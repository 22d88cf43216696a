"""What a convolution runs, as data: the harmonic part, the real-space part, where each runs.

:func:`sphgpu.convolve.convolve` and :meth:`sphgpu.convolve.Plan.apply` turn their arguments into
one :class:`Parts` (backends resolved there, once) and hand it with the validated maps to the
one executor, :func:`sphgpu.convolve.run.execute`. A Parts runs nothing itself.

Work that runs elsewhere resolves its backend requests there: inside :func:`resolved_by`, Parts
ask the given function instead of this machine (:mod:`sphgpu.distributed.convolution` asks its
Dask cluster, then runs the Parts through the same executor on the workers).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np

from .. import backends
from ..geometry import RingGeometry
from .kernels import CompactKernel
from .split import KernelSplit

__all__ = ["Parts", "resolved_by"]

#: the function that turns a backend request into a concrete name for the Parts made now (None:
#: :func:`sphgpu.backends.resolve`, this machine's backends)
_RESOLVE = contextvars.ContextVar("sphgpu_convolve_resolve", default=None)


@contextlib.contextmanager
def resolved_by(resolve):
    """Within the block, Parts resolve their backend requests through ``resolve`` instead of
    :func:`sphgpu.backends.resolve`: for parts that run on other machines (Dask workers), whose
    GPUs are not this machine's, and without a CUDA context here.

    Parameters
    ----------
    resolve : callable(request, capability) -> str
        Given a request ("auto", "cuda", "cpu", "reference") and the capability ("sht" for the
        harmonic part, "convolve" for the real-space one), the concrete backend name.

    Yields
    ------
    None
    """
    if not callable(resolve):
        raise TypeError(f"resolve must be a function (request, capability) -> backend name, "
                        f"got {type(resolve).__name__}")
    token = _RESOLVE.set(resolve)
    try:
        yield
    finally:
        _RESOLVE.reset(token)


@dataclass(frozen=True, eq=False)
class Parts:
    """The resolved parts of one convolution; the parameters are also its attributes.

    Parameters
    ----------
    geometry : RingGeometry
        The grid of the maps.
    bl : ndarray, shape (L+1,), float64, or None
        K_l of the harmonic part (L its band limit; length 0 gives zeros); None: no harmonic
        part.
    compact : CompactKernel or None
        The real-space part; None: none.
    harmonic_backend, realspace_backend : str or None
        Concrete backend names ("cuda", "cpu", "reference") of each part; None where there is
        no such part.
    """

    geometry: RingGeometry
    bl: np.ndarray | None
    compact: CompactKernel | None
    harmonic_backend: str | None
    realspace_backend: str | None

    @classmethod
    def of(cls, geometry, bl=None, compact=None, *, backend="auto", harmonic_backend=None):
        """The parts of a harmonic part ``bl`` and/or a real-space part ``compact``, the
        real-space one on ``backend`` and the harmonic one on ``harmonic_backend`` (None:
        ``backend``); both resolved here (a request of "auto" warns once where it falls back
        to the CPU, "cuda" without a GPU raises BackendUnavailableError; inside
        :func:`resolved_by`, its function decides)."""
        if bl is None and compact is None:
            raise ValueError("a convolution needs a harmonic part, a real-space part or both")
        resolve = _RESOLVE.get() or backends.resolve
        hb = rb = None
        if bl is not None:
            hb = resolve(backend if harmonic_backend is None else harmonic_backend, "sht")
            bl = np.asarray(bl, dtype=np.float64)
        if compact is not None:
            rb = resolve(backend, "convolve")
        return cls(geometry, bl, compact, hb, rb)

    @classmethod
    def of_split(cls, geometry, split: KernelSplit, *, backend="auto", harmonic_backend=None):
        """The parts of a :class:`~sphgpu.convolve.split.KernelSplit`: a split without a
        real-space part is its harmonic part alone, one with l_cut < 0 its real-space part
        alone."""
        bl = split.harmonic_bl if split.l_cut >= 0 or split.realspace is None else None
        return cls.of(geometry, bl, split.realspace, backend=backend,
                      harmonic_backend=harmonic_backend)

    @property
    def takes_device_arrays(self) -> bool:
        """Whether a part runs on a backend that takes device arrays (maps on the GPU are
        refused otherwise)."""
        return any(backends.load(cap, name).ACCEPTS_DEVICE_ARRAYS
                   for cap, name in (("sht", self.harmonic_backend),
                                     ("convolve", self.realspace_backend)) if name is not None)
