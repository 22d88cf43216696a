"""Apodization of binary masks, with the three kinds NaMaster documents ("C1", "C2",
"Smooth"), so that users need no second library.

For "C1" and "C2", every pixel is multiplied by f(x), with theta its angular distance to the
nearest masked pixel (mask value 0), theta_* the apodization scale and

    x = sqrt((1 - cos theta) / (1 - cos theta_*)),
    C1: f = x - sin(2 pi x) / (2 pi)    for x < 1, else 1;
    C2: f = (1 - cos(pi x)) / 2         for x < 1, else 1.

"Smooth": every pixel within 2.5 theta_* of a masked pixel is masked, the result is smoothed
with a Gaussian of standard deviation theta_*, the pixels masked at the start are set to 0
again, and the smoothing's slight ringing below 0 is cut at 0.

Distances are between HEALPix pixel centres (RING order), found with a k-d tree of the masked
pixels' unit vectors (chord distance d, theta = 2 asin(d / 2)).
"""

from __future__ import annotations

import math

import numpy as np

from ..sht import smoothing
from .coupling import _mask_map

__all__ = ["apodize_mask", "APOTYPES", "distance_to_masked"]

#: the kinds of apodization
APOTYPES = ("C1", "C2", "Smooth")


def _vectors(nside, pixels):
    import ducc0

    return ducc0.healpix.Healpix_Base(nside, "RING").pix2vec(np.asarray(pixels, np.int64))


def distance_to_masked(mask, max_distance: float) -> np.ndarray:
    """Angular distance of every pixel to the nearest pixel where ``mask`` is 0.

    Parameters
    ----------
    mask : array_like, shape (npix,)
        HEALPix map (RING); 0 marks masked pixels.
    max_distance : float
        Radians; distances beyond are not resolved (returned as inf).

    Returns
    -------
    ndarray, shape (npix,), float64
        Radians between pixel centres: 0 on masked pixels, inf where no masked pixel lies
        within ``max_distance`` (or none exists).
    """
    from scipy.spatial import cKDTree

    m = np.asarray(mask)
    nside = int(round(math.sqrt(m.size / 12)))
    out = np.full(m.size, np.inf)
    hidden = np.flatnonzero(m <= 0)
    if hidden.size == 0:
        return out
    out[hidden] = 0.0
    seen = np.flatnonzero(m > 0)
    tree = cKDTree(_vectors(nside, hidden))
    chord_max = 2.0 * math.sin(min(max_distance, math.pi) / 2.0)
    d, _ = tree.query(_vectors(nside, seen), k=1, distance_upper_bound=chord_max * (1 + 1e-12))
    ok = np.isfinite(d)
    theta = np.full(seen.size, np.inf)
    theta[ok] = 2.0 * np.arcsin(np.minimum(d[ok] / 2.0, 1.0))
    out[seen] = theta
    return out


def apodize_mask(mask, aposize_deg: float, *, apotype: str = "C1", backend: str = "auto"
                 ) -> np.ndarray:
    """Apodize a binary mask (NaMaster's definitions of "C1", "C2" and "Smooth").

    Parameters
    ----------
    mask : array_like, shape (npix,)
        HEALPix map (RING), values >= 0; 0 marks masked pixels. "C1" and "C2" multiply the
        given values by the taper, so a mask already weighted stays weighted.
    aposize_deg : float
        Apodization scale theta_* in degrees, > 0.
    apotype : {"C1", "C2", "Smooth"}
        The taper (module docstring of :mod:`sphgpu.master.apodize`).
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the smoothing ("Smooth" only).

    Returns
    -------
    ndarray, shape (npix,), float64
        The apodized mask, between 0 and the input's values ("Smooth": 0 and about 1).

    Raises
    ------
    ValueError
        A mask that is not a HEALPix map, negative, NaN or zero everywhere; aposize_deg not
        in (0, 180]; an unknown apotype; a "Smooth" scale that masks every pixel.
    """
    m, nside = _mask_map(mask, "mask")
    if isinstance(aposize_deg, bool) or not isinstance(aposize_deg, (int, float, np.number)) \
            or not math.isfinite(aposize_deg) or not 0 < aposize_deg <= 180:
        # beyond 180 degrees no pixel is farther from the cut, and C1/C2's x would turn back
        raise ValueError(f"aposize_deg must be a positive number of degrees, at most 180, got "
                         f"{aposize_deg!r}")
    if apotype not in APOTYPES:
        raise ValueError(f"apotype must be one of {APOTYPES}, got {apotype!r}")
    theta_s = math.radians(aposize_deg)
    if apotype == "Smooth":
        dist = distance_to_masked(m, 2.5 * theta_s)
        grown = np.where(dist > 2.5 * theta_s, m, 0.0)
        out = np.asarray(smoothing(grown, sigma=theta_s, pol=False, backend=backend),
                         dtype=np.float64)
        out[m <= 0] = 0.0
        # a band-limited Gaussian rings slightly below 0 beside sharp edges (-1e-3 for WMAP's
        # mask at nside 16, 5 deg); a mask must be >= 0 for coupling_matrix and pure B
        np.maximum(out, 0.0, out=out)
        if not np.any(out > 0):
            raise ValueError(f"aposize_deg={aposize_deg!r} with apotype 'Smooth' masks the whole "
                             f"sky (every pixel lies within 2.5 aposize_deg of a masked one): "
                             "give a smaller scale")
        return out
    dist = distance_to_masked(m, theta_s)
    x = np.sqrt((1.0 - np.cos(np.minimum(dist, math.pi))) / (1.0 - math.cos(theta_s)))
    x = np.where(np.isfinite(dist), x, 1.0)
    if apotype == "C1":
        f = np.where(x < 1.0, x - np.sin(2.0 * math.pi * x) / (2.0 * math.pi), 1.0)
    else:
        f = np.where(x < 1.0, 0.5 * (1.0 - np.cos(math.pi * x)), 1.0)
    return m * f
