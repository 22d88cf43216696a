"""The Numba twin of the CUDA coupling kernel: the same :func:`sphgpu.master.wigner.pair_sums`,
one l per parallel iteration, on host threads, so that CI checks the kernel's arithmetic at
real sizes (the "cpu" backend's ``method="twin"``)."""

from __future__ import annotations

import math

import numba
import numpy as np

from . import wigner
from .coupling import BLOCKS

__all__ = ["coupling_blocks_twin"]


def _slots(blocks):
    return np.array([blocks.index(b) if b in blocks else -1 for b in BLOCKS],
                    dtype=np.int64)


@numba.njit(parallel=True, cache=True)
def _twin(wl, nw, lmax, spin2, slots, out):
    inv4pi = 1.0 / (4.0 * math.pi)
    # l descending so the long rows (cost ~ l (lmax - l)) start first and the threads balance
    for i in numba.prange(lmax + 1):
        l = lmax - i
        for lp in range(l, lmax + 1):
            sums = wigner.pair_sums(l, lp, wl, wl, wl, nw, spin2)
            f_lp = (2.0 * lp + 1.0) * inv4pi
            f_l = (2.0 * l + 1.0) * inv4pi
            for k in range(4):
                b = slots[k]
                if b >= 0:
                    out[b, l, lp] = f_lp * sums[k]
                    out[b, lp, l] = f_l * sums[k]


def coupling_blocks_twin(wl, lmax: int, blocks: tuple) -> np.ndarray:
    """The coupling blocks by the CUDA kernel's recursion, on host threads.

    Parameters
    ----------
    wl : ndarray, shape (nw,), float64
        Mask power spectrum W_L (zero beyond nw - 1).
    lmax : int
        Last multipole of the matrices.
    blocks : tuple of str
        Names from ``("00", "02", "++", "--")``.

    Returns
    -------
    ndarray, shape (len(blocks), lmax + 1, lmax + 1), float64
        ``out[b, l, l']`` = M^b_ll'.
    """
    wl = np.ascontiguousarray(wl, dtype=np.float64)
    out = np.empty((len(blocks), lmax + 1, lmax + 1))
    spin2 = any(b != "00" for b in blocks)
    _twin(wl, len(wl), int(lmax), spin2, _slots(blocks), out)
    return out
