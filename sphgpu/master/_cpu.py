"""The "cpu" backend of :mod:`sphgpu.master` (:class:`sphgpu.backends.MasterBackend`): ducc0's
``misc.experimental.coupling_matrix_rect`` (all host cores) as the fast path, and a Numba twin
of the CUDA kernel (the same :func:`sphgpu.master.wigner.pair_sums`, one l per parallel
iteration) so that CI checks the kernel's arithmetic at real sizes.
"""

from __future__ import annotations

import numpy as np

from .. import _host_threads

__all__ = ["ACCEPTS_DEVICE_ARRAYS", "METHODS", "coupling_blocks", "coupling_blocks_twin",
           "coupling_blocks_ducc0"]

ACCEPTS_DEVICE_ARRAYS = False
#: the CPU paths: ducc0 (default, fastest) and the twin of the CUDA kernel
METHODS = ("ducc0", "twin")
_OPTYPE = {"00": 0, "02": 1, "++": 2, "--": 3}     # ducc0's operation codes, one matrix each


def coupling_blocks_twin(wl, lmax: int, blocks: tuple) -> np.ndarray:
    """The coupling blocks by the CUDA kernel's recursion, on host threads
    (:func:`sphgpu.master._twin.coupling_blocks_twin`; Numba is imported on this first use
    only, so the ducc0 path costs a notebook no compiler)."""
    from ._twin import coupling_blocks_twin as twin

    return twin(wl, lmax, blocks)


def coupling_blocks_ducc0(wl, lmax: int, blocks: tuple, *, nthreads: int | None = None
                          ) -> np.ndarray:
    """The coupling blocks by ducc0's ``coupling_matrix_rect``.

    ducc0 returns Xi_ll' = M_ll' / (2l' + 1) (symmetric); the factor is put back here.

    Parameters
    ----------
    wl : ndarray, shape (nw,), float64
        Mask power spectrum W_L.
    lmax : int
        Last multipole of the matrices.
    blocks : tuple of str
        Names from ``("00", "02", "++", "--")``.
    nthreads : int, optional
        Host threads (None: SPHGPU_NUM_THREADS, else the cores up to 16).

    Returns
    -------
    ndarray, shape (len(blocks), lmax + 1, lmax + 1), float64
    """
    import ducc0

    wl = np.asarray(wl, dtype=np.float64)
    # ducc0 reads the spectrum up to L = 2 lmax: pad with zeros (W_L = 0 beyond the given)
    spec = np.zeros(2 * lmax + 1)
    n = min(len(wl), len(spec))
    spec[:n] = wl[:n]
    specs = np.repeat(spec[None, :], len(blocks), axis=0)
    out = np.empty((len(blocks), lmax + 1, lmax + 1))
    ducc0.misc.experimental.coupling_matrix_rect(
        specs, tuple(_OPTYPE[b] for b in blocks), out, nthreads=nthreads or _host_threads.count())
    out *= (2.0 * np.arange(lmax + 1) + 1.0)[None, None, :]
    return out


def coupling_blocks(wl, lmax: int, blocks: tuple, *, method: str = "ducc0",
                    nthreads: int | None = None) -> np.ndarray:
    """The coupling blocks on the CPU.

    Parameters
    ----------
    wl : ndarray, shape (nw,), float64
        Mask power spectrum W_L (zero beyond nw - 1).
    lmax : int
        Last multipole of the matrices.
    blocks : tuple of str
        Names from ``("00", "02", "++", "--")``.
    method : {"ducc0", "twin"}
        ducc0's implementation, or the Numba twin of the CUDA kernel.
    nthreads : int, optional
        Host threads for ducc0 (the twin uses Numba's thread count).

    Returns
    -------
    ndarray, shape (len(blocks), lmax + 1, lmax + 1), float64
        ``out[b, l, l']`` = M^b_ll'.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "twin":
        return coupling_blocks_twin(wl, lmax, blocks)
    return coupling_blocks_ducc0(wl, lmax, blocks, nthreads=nthreads)
