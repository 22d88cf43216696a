"""Monte Carlo simulations of power spectra: seeded skies through beam, noise and mask, and
their pseudo-spectra, in batches on one GPU (or the CPU) and over a Dask cluster.

>>> from sphgpu.sims import simulate_spectra
>>> mask = latitude_cut_mask(128, 20, apodization_deg=5)     # |b| < 20 deg hidden
>>> mc = simulate_spectra(cl, nside=128, nsims=100, fwhm_arcmin=30, mask=mask, seed=1)
>>> mc.spectra.shape, mc.mean.shape          # (100, 1, 384), (1, 384): pseudo-C_l in muK^2
>>> mc.run(100)                              # 100 more; the first 100 are kept

Simulation i draws from a counter-based stream keyed by
``numpy.random.SeedSequence(seed, spawn_key=(i,))`` (:mod:`sphgpu.sims.random`), the same on
the CPU and the GPU, so its spectra depend only on the seed and i (to the transforms' rounding),
not on batch sizes, workers or the device.
"""

from .masks import latitude_cut_mask
from .montecarlo import MonteCarlo, simulate_spectra
from . import random
from .pipeline import SimulationPlan, expected_spectra, simulate_batch, spectrum_names

__all__ = ["MonteCarlo", "simulate_spectra", "SimulationPlan", "simulate_batch",
           "expected_spectra", "spectrum_names", "latitude_cut_mask", "random"]
