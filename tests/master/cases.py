"""Shared inputs of tests/master (their tolerances are in sphgpu.testing.TOL).

Coupling matrices are compared by the largest relative error per row (``row_err``): the
largest |difference| in row l over the largest |entry| of row l of the reference, then the
maximum over rows (rows that are zero in the reference, l < 2 of spin-2 blocks, must be zero).
"""

from __future__ import annotations

import math

import numpy as np

from sphgpu.testing import TOL  # noqa: F401  (the tests import it from here)



def row_err(got, want) -> float:
    """Largest over rows of max|got - want| / max|want| in that row (see the module)."""
    got = np.asarray(got)
    want = np.asarray(want)
    diff = np.abs(got - want).max(axis=-1)
    scale = np.abs(want).max(axis=-1)
    zero = scale == 0
    if np.any(diff[zero] > 0):
        return math.inf
    return float(np.max(diff[~zero] / scale[~zero])) if np.any(~zero) else 0.0


def random_mask_cl(rng, lmax):
    """A positive, falling mask spectrum W_L, L = 0..2 lmax, like an apodized mask's."""
    L = np.arange(2 * lmax + 1)
    return (4 * math.pi * 0.6) * rng.uniform(0.5, 1.5, L.size) / (1.0 + L) ** 2


def healpix_theta(nside):
    """Colatitude of every HEALPix RING pixel centre."""
    import ducc0

    return ducc0.healpix.Healpix_Base(nside, "RING").pix2ang(np.arange(12 * nside * nside))[:, 0]


def cut_mask(nside, band_rad):
    """Binary mask hiding |latitude| < band_rad."""
    return (np.abs(healpix_theta(nside) - math.pi / 2) >= band_rad).astype(np.float64)
