"""Catalogs that stress exact pair counting, shared by the tpacf tests.

Every catalog here is (ra, dec) in degrees. ``edge_pairs`` builds pairs whose float64 squared
chord distance equals a bin edge exactly, or is one unit in the last place (ulp) below or above
it -- the pairs a float32 computation, or acos of a dot product, would misplace.
"""

from __future__ import annotations

import numpy as np

from sphgpu.testing import random_catalog as sky  # uniform points within an RA/Dec box
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.mocks import clustered_catalog
from sphgpu.tpacf.reference import pair_d2


def clustered(rng, n, box=(10.0, 50.0, -20.0, 20.0)):
    return clustered_catalog(n, box, seed=int(rng.integers(2**31)), members=15,
                             sigma_deg=(0.02, 0.5))


def awkward(rng):
    """Poles (any RA), points near the poles, RA 0 / 360 / tiny negatives (which wrap), exact
    duplicates and antipodes."""
    ra = [0.0, 90.0, 180.0, 359.0, 0.0, 45.0,            # north pole, several RAs
          0.0, 270.0, 10.0,                              # south pole
          0.0, 360.0, -1e-13, 359.99999999, 1e-12, 720.0, -360.0,   # RA wrap
          12.5, 12.5, 12.5, 200.0, 20.0]                 # duplicates; an antipodal pair
    dec = [90.0, 90.0, 90.0, 90.0, 89.99999, 89.9999,
           -90.0, -90.0, -89.9999,
           10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0,
           -33.0, -33.0, -33.0, 15.0, -15.0]
    near_ra, near_dec = sky(rng, 40, dec=(86.0, 90.0))
    s_ra, s_dec = sky(rng, 40, dec=(-90.0, -86.0))
    w_ra, w_dec = sky(rng, 40, dec=(5.0, 15.0), ra=(-0.5, 0.5))
    return (np.concatenate([ra, near_ra, s_ra, np.mod(w_ra, 360.0)]),
            np.concatenate([dec, near_dec, s_dec, w_dec]))


def destination(ra, dec, theta, bearing):
    """The point at angle theta (radians) from (ra, dec) (degrees) along ``bearing``."""
    d, a = np.deg2rad(dec), np.deg2rad(ra)
    d2 = np.arcsin(np.sin(d) * np.cos(theta) + np.cos(d) * np.sin(theta) * np.cos(bearing))
    a2 = a + np.arctan2(np.sin(bearing) * np.sin(theta) * np.cos(d),
                        np.cos(theta) - np.sin(d) * np.sin(d2))
    return np.rad2deg(a2), np.rad2deg(d2)


def edge_pairs(bins, rng, span=20):
    """Pairs placed on the edges of ``bins``: for each edge, partners whose float64 squared
    chord distance to the first point is exactly the edge, one ulp below and one ulp above
    (where the search finds them).

    Returns (ra1, dec1, ra2, dec2, stats); the i-th points of the two catalogs form a pair.
    ``stats`` counts the pairs found at -1, 0 and +1 ulp. Small separations start at (0, 0),
    where coordinates are fine enough to step the distance one ulp at a time.
    """
    E = bins.chord2_edges
    out = [[], [], [], []]
    stats = {-1: 0, 0: 0, 1: 0}
    steps = np.arange(-span, span + 1)
    for k, theta in enumerate(bins.edges_rad):
        if not np.isfinite(E[k]) or theta == 0.0:
            continue
        if theta < np.deg2rad(1.0):
            ra1, dec1 = 0.0, 0.0
            ra2, dec2 = destination(ra1, dec1, theta, rng.uniform(0.3, 1.2))
        else:
            ra1, dec1 = rng.uniform(20, 340), rng.uniform(-60, 60)
            ra2, dec2 = destination(ra1, dec1, theta, rng.uniform(0, 2 * np.pi))
            ra2 = np.mod(ra2, 360.0)
        RA, DEC = np.meshgrid(ra2 + steps * np.spacing(ra2), dec2 + steps * np.spacing(dec2))
        RA, DEC = RA.ravel(), DEC.ravel()
        d2 = pair_d2(unit_vectors([ra1], [dec1]), unit_vectors(RA, DEC))[0]
        for off, target in ((-1, np.nextafter(E[k], 0)), (0, E[k]), (1, np.nextafter(E[k], 9))):
            hit = np.flatnonzero(d2 == target)
            if hit.size:
                stats[off] += 1
                for lst, v in zip(out, (ra1, dec1, RA[hit[0]], DEC[hit[0]])):
                    lst.append(v)
    return (*(np.array(v) for v in out), stats)
