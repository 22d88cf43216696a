"""Ring grids on the sphere: one description for HEALPix, Gauss-Legendre and equiangular maps.

Every grid sphgpu transforms on is a stack of iso-latitude rings. Ring ``i`` sits at colatitude
``theta[i]`` (radians, 0 at the north pole), holds ``nphi[i]`` equally spaced pixels starting at
longitude ``phi0[i]`` (radians), and its first pixel is element ``ringstart[i]`` of the flat map.
``weight[i]`` is the quadrature weight of one pixel of that ring (steradians): the weights of all
pixels add up to 4 pi, and ``sum(weight * f)`` over the map integrates a band-limited ``f`` exactly
on Gauss-Legendre and equiangular grids (approximately on HEALPix, where map2alm iterates).

The same five arrays are what ducc0 (``theta, nphi, phi0, ringstart``) and the paper's GPU
kernels consume, so a geometry is built once and handed to any backend.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import ducc0
import numpy as np

from ._validate import check_fits_in_memory, check_int

__all__ = ["RingGeometry", "MAX_NSIDE"]

#: HEALPix's largest resolution (as in HEALPix and healpy): 12 * nside**2 pixels must fit in
#: a 64-bit integer, and at nside 2**30 they do not (1.3e19 > 9.2e18)
MAX_NSIDE = 2**29
#: the largest pixel count of any grid: pixel indices are int64
_MAX_NPIX = np.iinfo(np.int64).max
#: bytes per ring while a grid is built: about 16 float64/int64 arrays of one value per ring
#: (the ring number, its distance from the pole, theta three ways, nphi, phi0, ringstart, the
#: weights, and their temporaries in _build_healpix; ducc0's rules need fewer)
_BUILD_BYTES_PER_RING = 128

_KINDS = ("healpix", "gauss-legendre", "clenshaw-curtis", "fejer1", "custom")


def _freeze(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class RingGeometry:
    """An iso-latitude ring grid.

    Attributes
    ----------
    theta : ndarray, shape (nrings,), float64
        Colatitude of each ring in radians, in [0, pi].
    phi0 : ndarray, shape (nrings,), float64
        Longitude of the first pixel of each ring, radians.
    nphi : ndarray, shape (nrings,), int64
        Number of pixels in each ring (>= 1).
    ringstart : ndarray, shape (nrings,), int64
        Index of each ring's first pixel in the flat map (relative to ``pixel_offset``).
    weight : ndarray, shape (nrings,), float64
        Quadrature weight of one pixel of each ring, steradians.
    kind : str
        ``"healpix"``, ``"gauss-legendre"``, ``"clenshaw-curtis"``, ``"fejer1"`` or ``"custom"``.
    nside : int or None
        HEALPix resolution parameter (HEALPix only).
    pixel_offset : int
        Where this geometry's pixels start in a parent map; 0 unless made by :meth:`rings`.
    """

    theta: np.ndarray
    phi0: np.ndarray
    nphi: np.ndarray
    ringstart: np.ndarray
    weight: np.ndarray
    kind: str = "custom"
    nside: int | None = None
    pixel_offset: int = 0
    _npix: int = field(init=False, repr=False)
    _recipe: tuple | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        theta = _freeze(self.theta, np.float64)
        n = theta.shape[0] if theta.ndim == 1 else -1
        if theta.ndim != 1 or n == 0:
            raise ValueError(f"theta must be a non-empty 1-D array, got shape {theta.shape}")
        arrays = {"theta": theta}
        for name, dtype in (("phi0", np.float64), ("nphi", np.int64),
                            ("ringstart", np.int64), ("weight", np.float64)):
            a = _freeze(getattr(self, name), dtype)
            if a.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},) like theta, got {a.shape}")
            arrays[name] = a
        if not np.all(np.isfinite(theta)) or theta.min() < 0 or theta.max() > math.pi:
            raise ValueError("theta must lie in [0, pi] radians")
        if not np.all(np.isfinite(arrays["phi0"])) or not np.all(np.isfinite(arrays["weight"])):
            raise ValueError("phi0 and weight must be finite")
        if arrays["nphi"].min() < 1:
            raise ValueError("nphi must be >= 1 in every ring")
        if arrays["ringstart"].min() < 0:
            raise ValueError("ringstart must be >= 0")
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        for name, a in arrays.items():
            object.__setattr__(self, name, a)
        object.__setattr__(self, "_npix", int((arrays["ringstart"] + arrays["nphi"]).max()))

    def _made_by(self, *recipe) -> "RingGeometry":
        """Record the constructor call that made this grid (:attr:`recipe`); returns self."""
        object.__setattr__(self, "_recipe", recipe)
        return self

    # ------------------------------------------------------------------ constructors
    @classmethod
    def healpix(cls, nside: int) -> "RingGeometry":
        """HEALPix in RING order for any ``nside >= 1`` (powers of two not required).

        There are ``4*nside - 1`` rings and ``12*nside**2`` pixels; each pixel's weight is its area
        ``4*pi / npix``. Geometries are immutable, so the same object is returned for the same
        nside, and plans cached per geometry (GPU transforms) are found again.

        Parameters
        ----------
        nside : int
            HEALPix resolution parameter, >= 1.

        Returns
        -------
        RingGeometry
            ``kind="healpix"``, ``4*nside - 1`` rings, north to south.

        Raises
        ------
        ValueError
            ``nside`` above :data:`MAX_NSIDE` (2**29, HEALPix's limit).
        MemoryError
            The rings alone need more memory than this machine has (said before allocating).
        """
        nside = check_int("nside", nside, minimum=1)
        if nside > MAX_NSIDE:
            raise ValueError(f"nside={nside} is above HEALPix's largest, 2**29 = {MAX_NSIDE}: "
                             f"its 12 * nside**2 = {12 * nside**2:.3g} pixels do not fit in "
                             "64-bit integers")
        _check_rings_fit(4 * nside - 1, f"nside={nside}")
        return _healpix(nside)

    @classmethod
    def _build_healpix(cls, nside: int) -> "RingGeometry":
        i = np.arange(1, 4 * nside, dtype=np.int64)           # ring number, 1-based
        north = np.minimum(i, 4 * nside - i)                   # distance from the nearer pole
        cap = north < nside
        nphi = np.where(cap, 4 * north, 4 * nside)
        # Polar caps: z = 1 - k^2 / (3 nside^2); theta through asin keeps full precision near the
        # poles, where acos(z) would lose half the digits.
        theta_cap = 2.0 * np.arcsin(north / (math.sqrt(6.0) * nside))
        z_eq = (2 * nside - i) * (2.0 / (3.0 * nside))
        theta_eq = np.arccos(np.clip(z_eq, -1.0, 1.0))
        theta = np.where(cap, np.where(i < 2 * nside, theta_cap, math.pi - theta_cap), theta_eq)
        # Cap rings start half a pixel east; equatorial rings alternate, starting shifted on the
        # first equatorial ring (i == nside).
        shifted = cap | ((i - nside) % 2 == 0)
        phi0 = np.where(shifted, math.pi / nphi, 0.0)
        ringstart = np.concatenate(([0], np.cumsum(nphi)[:-1]))
        weight = np.full(i.shape, 4.0 * math.pi / (12 * nside * nside))
        return cls(theta, phi0, nphi, ringstart, weight, kind="healpix",
                   nside=nside)._made_by("healpix", nside)

    @classmethod
    def gauss_legendre(cls, ntheta: int, nphi: int | None = None) -> "RingGeometry":
        """Gauss-Legendre rings: exact quadrature for ``lmax <= ntheta - 1``.

        Parameters
        ----------
        ntheta : int
            Number of rings, >= 1.
        nphi : int, optional
            Pixels per ring; ``2*ntheta - 1`` by default, enough for
            ``mmax = lmax = ntheta - 1``.

        Returns
        -------
        RingGeometry
            ``kind="gauss-legendre"``, rings north to south.

        Raises
        ------
        ValueError
            ``ntheta * nphi`` pixels do not fit in 64-bit integers.
        MemoryError
            The rings alone need more memory than this machine has (said before allocating).
        """
        ntheta = check_int("ntheta", ntheta, minimum=1)
        nphi = 2 * ntheta - 1 if nphi is None else check_int("nphi", nphi, minimum=1)
        _check_regular_size(ntheta, nphi)
        theta = ducc0.misc.GL_thetas(ntheta)                  # north pole first
        return cls._regular(theta, _ring_weights("GL", ntheta) / nphi, nphi,
                            "gauss-legendre")._made_by("gauss-legendre", ntheta, nphi)

    @classmethod
    def equiangular(cls, ntheta: int, nphi: int | None = None, *, poles: bool = True) -> "RingGeometry":
        """Equiangular rings with exact quadrature weights.

        ``poles=True`` gives Clenshaw-Curtis rings ``theta_k = pi k / (ntheta - 1)`` including both
        poles; ``poles=False`` gives Fejer's first rule, ``theta_k = pi (k + 1/2) / ntheta`` (ECP).
        Either rule integrates polynomials in cos(theta) of degree < ntheta exactly, so
        map2alm by quadrature is exact for ``lmax <= (ntheta - 1) // 2`` (products of two
        harmonics have degree 2*lmax).

        Parameters
        ----------
        ntheta : int
            Number of rings: >= 2 with poles, >= 1 without.
        nphi : int, optional
            Pixels per ring; ``2*ntheta`` by default.
        poles : bool, optional
            Clenshaw-Curtis rings through both poles (True) or Fejer's first rule (False).

        Returns
        -------
        RingGeometry
            ``kind="clenshaw-curtis"`` or ``"fejer1"``, rings north to south.

        Raises
        ------
        ValueError, MemoryError
            As :meth:`gauss_legendre`.
        """
        ntheta = check_int("ntheta", ntheta, minimum=2 if poles else 1)
        nphi = 2 * ntheta if nphi is None else check_int("nphi", nphi, minimum=1)
        _check_regular_size(ntheta, nphi)
        if poles:
            theta = np.pi * np.arange(ntheta) / (ntheta - 1)
            kind = "clenshaw-curtis"
        else:
            theta = np.pi * (np.arange(ntheta) + 0.5) / ntheta
            kind = "fejer1"
        w = _ring_weights("CC" if poles else "F1", ntheta)
        return cls._regular(theta, w / nphi, nphi, kind)._made_by(kind, ntheta, nphi)

    @classmethod
    def clenshaw_curtis(cls, ntheta: int, nphi: int | None = None) -> "RingGeometry":
        """Equiangular rings including both poles (see :meth:`equiangular`).

        Parameters
        ----------
        ntheta : int
            Number of rings, >= 2.
        nphi : int, optional
            Pixels per ring; ``2*ntheta`` by default.

        Returns
        -------
        RingGeometry
            ``kind="clenshaw-curtis"``.
        """
        return cls.equiangular(ntheta, nphi, poles=True)

    @classmethod
    def _regular(cls, theta, ring_weight, nphi, kind):
        n = theta.shape[0]
        nphi_a = np.full(n, nphi, dtype=np.int64)
        return cls(theta, np.zeros(n), nphi_a, np.arange(n, dtype=np.int64) * nphi, ring_weight,
                   kind=kind)

    @property
    def recipe(self) -> tuple | None:
        """The constructor call that makes this grid again, as a small tuple: ``("healpix",
        nside)``, ``("gauss-legendre", ntheta, nphi)``, ``("clenshaw-curtis", ntheta, nphi)`` or
        ``("fejer1", ntheta, nphi)``; None for a grid made from arrays (or by :meth:`rings`).
        :meth:`from_recipe` reads it: a transform plan travels to Dask workers as this, not as
        the rings' arrays."""
        return self._recipe

    @classmethod
    def from_recipe(cls, recipe: tuple) -> "RingGeometry":
        """The grid of a :attr:`recipe` (HEALPix: the object :meth:`healpix` keeps per process).

        Parameters
        ----------
        recipe : tuple
            As :attr:`recipe` gives it.

        Returns
        -------
        RingGeometry

        Raises
        ------
        ValueError
            If ``recipe`` names no constructor.
        """
        if not isinstance(recipe, tuple) or not recipe or recipe[0] not in _RECIPES:
            raise ValueError(f"recipe must be one of {sorted(_RECIPES)} with its arguments "
                             f"(RingGeometry.recipe), got {recipe!r}")
        return _RECIPES[recipe[0]](cls, *recipe[1:])

    # ------------------------------------------------------------------ properties
    @property
    def nrings(self) -> int:
        """Number of rings."""
        return int(self.theta.shape[0])

    @property
    def npix(self) -> int:
        """Number of pixels of a map on this geometry (``max(ringstart + nphi)``)."""
        return self._npix

    @property
    def natural_lmax(self) -> int:
        """Default lmax of map2alm on this grid: HEALPix ``3*nside - 1`` (as healpy);
        Gauss-Legendre ``ntheta - 1`` and equiangular ``(ntheta - 1) // 2``, the largest band
        limits whose quadrature is exact; custom grids ``nrings - 1``."""
        if self.kind == "healpix" and self.pixel_offset == 0 and self.nside is not None:
            return 3 * self.nside - 1
        if self.kind in ("clenshaw-curtis", "fejer1"):
            return (self.nrings - 1) // 2
        return self.nrings - 1

    def rings(self, index: slice) -> "RingGeometry":
        """The sub-geometry of a contiguous slice of rings (for distributing work).

        Its ``ringstart`` counts from the slice's first pixel, and ``pixel_offset`` says where
        that pixel sits in the parent map, so ``parent_map[g.pixel_offset:g.pixel_offset+g.npix]``
        is the part of the map the sub-geometry describes.

        Parameters
        ----------
        index : slice
            A contiguous (step 1), non-empty slice of ring numbers.

        Returns
        -------
        RingGeometry
            The selected rings, with ``pixel_offset`` set.

        Raises
        ------
        TypeError
            If ``index`` is not a slice.
        ValueError
            If it selects no rings or has a step other than 1.
        """
        if not isinstance(index, slice):
            raise TypeError(f"index must be a slice, got {type(index).__name__}")
        start, stop, step = index.indices(self.nrings)
        if step != 1 or stop <= start:
            raise ValueError(f"index must select a non-empty contiguous slice of rings, got {index}")
        first = int(self.ringstart[start:stop].min())
        return RingGeometry(self.theta[start:stop], self.phi0[start:stop], self.nphi[start:stop],
                            self.ringstart[start:stop] - first, self.weight[start:stop],
                            kind=self.kind, nside=self.nside,
                            pixel_offset=self.pixel_offset + first)

    def packed(self, rings) -> "RingGeometry":
        """The rings ``rings`` as a grid of their own, their pixels packed ring after ring
        (a map of it holds those rings' pixels, in the order given).

        Parameters
        ----------
        rings : array of int, shape (k,)
            Ring numbers, any subset (sorted for a grid north to south).

        Returns
        -------
        RingGeometry
            ``kind="custom"``, ``ringstart`` from 0.
        """
        nphi = self.nphi[rings]
        return RingGeometry(self.theta[rings], self.phi0[rings], nphi,
                            np.concatenate(([0], np.cumsum(nphi)[:-1])), self.weight[rings],
                            kind="custom")

    def pixel_weights(self) -> np.ndarray:
        """Quadrature weight of every pixel.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(npix,)``, steradians.
        """
        self._check_pixels_fit(1, "pixel_weights")
        w = np.zeros(self.npix)
        for wr, n, s in zip(self.weight, self.nphi, self.ringstart):
            w[s:s + n] = wr
        return w

    def ring_pairs(self, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
        """Pair each northern ring with its mirror image for the Legendre step.

        lambda_lm(-x) = (-1)^(l+m) lambda_lm(x), so one recurrence serves a ring at theta and one
        at pi - theta. Pairs come ordered by the distance of their ring from the nearer pole
        (sin theta ascending). Every ring appears exactly once.

        Parameters
        ----------
        rtol : float, optional
            Two rings are mirrors when ``|theta_i + theta_j - pi| <= rtol * pi``.

        Returns
        -------
        north, south : numpy.ndarray
            int64, equal lengths: the ring the recurrence runs for (at x = cos theta) and its
            mirror at -x (``-1`` where there is none).
        """
        order = np.argsort(self.theta, kind="stable")
        lo, hi = 0, self.nrings - 1
        north, south = [], []
        while lo <= hi:
            i, j = order[lo], order[hi]
            if lo < hi and abs(self.theta[i] + self.theta[j] - math.pi) <= rtol * math.pi:
                north.append(i)
                south.append(j)
                lo += 1
                hi -= 1
            elif math.pi - self.theta[j] < self.theta[i]:
                # the southern ring is closer to its pole: it stands alone, described by -x
                north.append(j)
                south.append(-1)
                hi -= 1
            else:
                north.append(i)
                south.append(-1)
                lo += 1
        return np.asarray(north, dtype=np.int64), np.asarray(south, dtype=np.int64)

    def pixel_angles(self) -> tuple[np.ndarray, np.ndarray]:
        """Colatitude and longitude of every pixel.

        Returns
        -------
        theta, phi : numpy.ndarray
            float64, shape ``(npix,)`` each, radians.
        """
        self._check_pixels_fit(2, "pixel_angles")
        theta = np.empty(self.npix)
        phi = np.empty(self.npix)
        for t, p0, n, s in zip(self.theta, self.phi0, self.nphi, self.ringstart):
            theta[s:s + n] = t
            phi[s:s + n] = p0 + (2.0 * math.pi / n) * np.arange(n)
        return theta, phi

    def _check_pixels_fit(self, arrays, what):
        """MemoryError naming the size before ``arrays`` float64 arrays of npix are made."""
        size = f"nside={self.nside}" if self.nside is not None else f"npix={self.npix}"
        check_fits_in_memory(8 * arrays * self.npix, f"{what} ({arrays} x {self.npix:,} "
                             "float64 values)", size)

    def __repr__(self):
        extra = f", nside={self.nside}" if self.nside is not None else ""
        return (f"RingGeometry(kind={self.kind!r}{extra}, nrings={self.nrings}, npix={self.npix}"
                + (f", pixel_offset={self.pixel_offset}" if self.pixel_offset else "") + ")")


def _check_rings_fit(nrings: int, asked_by: str) -> None:
    """MemoryError naming ``asked_by`` when building ``nrings`` rings would not fit in memory
    (NumPy would otherwise fail part-way with a size and no argument, or the machine swap)."""
    check_fits_in_memory(_BUILD_BYTES_PER_RING * nrings, f"the {nrings:,} rings of the grid",
                         asked_by)


def _check_regular_size(ntheta: int, nphi: int) -> None:
    """A regular grid's pixel count fits in int64 and its rings in memory."""
    if ntheta * nphi > _MAX_NPIX:
        raise ValueError(f"ntheta={ntheta} rings of nphi={nphi} pixels make {ntheta * nphi:.3g} "
                         "pixels, more than 64-bit pixel indices can number (9.2e18)")
    _check_rings_fit(ntheta, f"ntheta={ntheta}")


#: RingGeometry.from_recipe: the constructor of each recipe's first entry
_RECIPES = {
    "healpix": lambda cls, nside: cls.healpix(nside),
    "gauss-legendre": lambda cls, ntheta, nphi: cls.gauss_legendre(ntheta, nphi),
    "clenshaw-curtis": lambda cls, ntheta, nphi: cls.equiangular(ntheta, nphi, poles=True),
    "fejer1": lambda cls, ntheta, nphi: cls.equiangular(ntheta, nphi, poles=False),
}


@functools.lru_cache(maxsize=16)
def _healpix(nside: int) -> RingGeometry:
    return RingGeometry._build_healpix(nside)


def _ring_weights(rule: str, ntheta: int) -> np.ndarray:
    """Quadrature weight of each whole ring (they sum to 4 pi), from ducc0's exact rules."""
    return np.asarray(ducc0.sht.experimental.get_gridweights(rule, ntheta), dtype=np.float64)
