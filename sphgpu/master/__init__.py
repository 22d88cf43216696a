"""MASTER pseudo-C_l bandpowers: mode-coupling matrices of masks (spin 0 and 2), bins,
decoupled bandpowers with their window functions, and mask apodization.

A mask couples multipoles: the pseudo-spectrum of a masked sky has expectation
pseudo-C_l = sum_l' M_ll' C_l' (Hivon et al. 2002). This package computes M from the mask's
power spectrum through Wigner-3j recursions (a CUDA kernel, one thread per (l, l') pair; on the
CPU ducc0 or a Numba twin of the kernel), bins it, inverts it once in a :class:`Workspace`, and
turns any number of pseudo-spectra into unbiased bandpowers.

>>> from sphgpu import master
>>> mask = master.apodize_mask(binary_mask, 5.0, apotype="C2")
>>> cpl = master.coupling_matrix(mask, lmax=3 * nside - 1, spins=(0, 0))
>>> ws = master.Workspace(cpl, master.Bins.linear(3 * nside - 1, 16))
>>> cb = ws.decouple_cell(sphgpu.anafast(mask * sky))       # (nbins,)
>>> ws.bin_theory(cl_theory)                                 # what cb estimates

Pure B (Smith 2006): on a cut sky the B of the masked maps holds leaked E; with an apodized
mask, :func:`pseudo_alm_spin2` (``purify_b=True``) returns B without it, and
``coupling_matrix(..., purify_b=True)`` its exact coupling.

>>> pcl = master.pseudo_cl_spin2(q, u, mask, purify_b=True)         # EE, EB, BE, BB
>>> cpl = master.coupling_matrix(mask, spins=(2, 2), purify_b=True)
>>> cb = master.Workspace(cpl, bins).decouple_cell(pcl)
>>> cb = master.bandpowers_spin2(q, u, mask, bins, purify_b=True)   # the same, one call
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from .apodize import APOTYPES, apodize_mask
from .bandpowers import Workspace, bandpowers_spin2, decouple
from .bins import Bins
from .coupling import Coupling, coupling_matrix, mask_spectrum
from .purify import mask_derivatives, pseudo_alm_spin2, pseudo_cl_spin2


def __getattr__(name):
    # wigner3j is Numba-compiled: imported on first use, so that `from sphgpu import master`
    # costs a notebook no compiler (about 100 MB) when ducc0 or the GPU does the sums
    if name == "wigner3j":
        from .wigner import wigner3j

        return wigner3j
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["Bins", "Coupling", "coupling_matrix", "mask_spectrum", "Workspace", "decouple",
           "apodize_mask", "APOTYPES", "wigner3j", "pseudo_alm_spin2", "pseudo_cl_spin2",
           "mask_derivatives", "bandpowers_spin2"]
