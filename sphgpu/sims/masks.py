"""Simple sky masks for simulations: a band around the equator of the map's coordinates (a
galactic-plane cut when the maps are in galactic coordinates), sharp or apodized."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_int
from ..geometry import RingGeometry

__all__ = ["latitude_cut_mask"]


def latitude_cut_mask(nside, cut_deg, *, apodization_deg=0.0) -> np.ndarray:
    """Weights that hide the band |latitude| < ``cut_deg``, optionally with a cosine edge.

    Parameters
    ----------
    nside : int
        HEALPix resolution (RING order).
    cut_deg : float
        Half-width of the hidden band in degrees, 0 (nothing hidden) to 90 (everything).
    apodization_deg : float
        Width in degrees of the edge over which the weight rises from 0 to 1 as
        (1 - cos)/2, starting at ``cut_deg``; 0: a binary mask.

    Returns
    -------
    numpy.ndarray, float64, shape (12 * nside**2,)
        Weights in [0, 1] (0 hidden, 1 observed).

    Raises
    ------
    ValueError
        ``cut_deg`` outside [0, 90], a negative ``apodization_deg``, or bad ``nside``.
    """
    nside = check_int("nside", nside, minimum=1)
    for name, value, top in (("cut_deg", cut_deg, 90.0), ("apodization_deg", apodization_deg,
                                                          math.inf)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise TypeError(f"{name} must be a number of degrees, got {type(value).__name__}")
        if not (0.0 <= value <= top and math.isfinite(value)):
            raise ValueError(f"{name} must be finite and in [0, {top}] degrees, got {value}")
    theta = RingGeometry.healpix(nside).pixel_angles()[0]
    lat = np.abs(90.0 - np.degrees(theta))
    if apodization_deg == 0:
        return (lat >= cut_deg).astype(np.float64)
    x = np.clip((lat - cut_deg) / apodization_deg, 0.0, 1.0)
    return 0.5 - 0.5 * np.cos(math.pi * x)
