"""What :mod:`sphgpu.pixelfunc` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement and which backends it has.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["PixelfuncBackend", "CAPABILITY"]


@runtime_checkable
class PixelfuncBackend(Protocol):
    """A backend module of :mod:`sphgpu.pixelfunc`: HEALPix pixels between RING and NESTED
    numbering. The host backends take NumPy arrays, the GPU backend device arrays."""

    def scatter(self, src: Any, dst: Any, nside: int, first: int, to_ring: bool) -> None:
        """Write pixel values at their numbers in the other numbering.

        Parameters
        ----------
        src : array, shape (n,)
            The values of pixels ``first, first + 1, ...``: NESTED numbers when ``to_ring``,
            else RING.
        dst : array, shape (12 nside**2,), the dtype of ``src``
            The whole map in the other numbering, written in place.
        nside : int
            A power of two.
        first : int
            The number of ``src[0]``.
        to_ring : bool
            NESTED to RING (else RING to NESTED).
        """

    def pixel_index(self, nside: int, ipix: Any, to_ring: bool) -> Any:
        """Pixel numbers in the other ordering.

        Parameters
        ----------
        nside : int
            A power of two.
        ipix : array, shape (n,), int64
            Pixel numbers, in range.
        to_ring : bool
            NESTED to RING (True) or RING to NESTED (False).

        Returns
        -------
        array, shape (n,), int64
        """


CAPABILITY = Capability(PixelfuncBackend)
