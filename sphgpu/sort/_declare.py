"""What :mod:`sphgpu.sort` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement and which backends it has.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["SortBackend", "CAPABILITY"]


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


CAPABILITY = Capability(SortBackend)
