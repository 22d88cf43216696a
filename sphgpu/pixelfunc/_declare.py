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
        """Write ``src``, the values of pixels ``first, first + 1, ...`` (of shape (n,)) in the
        NESTED numbering when ``to_ring``, else in RING, into ``dst`` (the whole map, shape
        (12 nside**2,), same dtype) at their numbers in the other numbering; ``nside`` is a
        power of two."""

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
