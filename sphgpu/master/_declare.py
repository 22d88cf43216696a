"""What :mod:`sphgpu.master` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement and which backends it has.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["MasterBackend", "CAPABILITY"]


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


CAPABILITY = Capability(MasterBackend)
