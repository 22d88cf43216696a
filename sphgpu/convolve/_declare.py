"""What :mod:`sphgpu.convolve` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement, which backends it has and its Dask form.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["ConvolveBackend", "CAPABILITY"]


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


CAPABILITY = Capability(ConvolveBackend,
                        dask="sphgpu.distributed.convolution",
                        dask_names=("convolve", "convolve_many"))
