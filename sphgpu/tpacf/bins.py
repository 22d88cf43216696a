"""Angular bins and the exact rule that puts a pair into one of them.

A pair of points with float64 unit vectors u1, u2 (see :func:`sphgpu.tpacf.catalog.unit_vectors`)
has the squared chord distance

    d2 = ((x1 - x2)**2 + (y1 - y2)**2) + (z1 - z2)**2        (float64, in that order, no FMA)

and falls into bin k when ``chord2_edges[k] <= d2 < chord2_edges[k + 1]``, where

    chord2_edges = (2 * sin(theta_edges / 2))**2             (float64, theta in radians)

The chord is a monotonic function of the angle (chord = 2 sin(theta / 2)), so these are angular
bins; but unlike ``acos`` of a dot product the chord keeps its relative precision at small
separations (a float64 dot product cannot tell 1 arcsecond from 0.9 arcsecond reliably; the chord
resolves far below a milliarcsecond). Every backend decides bins with this rule and these edges,
so counts agree as integers. When ``theta_max`` is 180 degrees the last upper edge is +inf, so
that antipodal pairs (d2 = 4 up to rounding) are counted.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["AngularBins", "UNITS", "chord2", "check_bins"]

#: Radians per unit.
UNITS = {"rad": 1.0, "deg": math.pi / 180.0, "arcmin": math.pi / 180.0 / 60.0,
         "arcsec": math.pi / 180.0 / 3600.0}


def chord2(theta_rad):
    """Squared chord length (2 sin(theta/2))**2 of angles in radians, float64."""
    c = 2.0 * np.sin(0.5 * np.asarray(theta_rad, dtype=np.float64))
    return c * c


def _check_unit(unit):
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
    return unit


def _check_angle(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


class AngularBins:
    """Bins in angular separation, from explicit edges or log/linear spacing.

    Build with :meth:`log`, :meth:`linear` or :meth:`from_edges`; angles are given in ``unit``
    ("deg", "arcmin", "arcsec" or "rad") and kept in radians inside.

    Parameters
    ----------
    edges : array_like, shape (nbins + 1,)
        Strictly increasing edges in ``unit``, from >= 0 to <= 180 degrees.
    unit : {"deg", "arcmin", "arcsec", "rad"}
    spacing : {"edges", "log", "linear"}
        How the edges were made (log bins have geometric centres).

    Raises
    ------
    TypeError
        For edges that are not real numbers.
    ValueError
        For edges that are not finite, not increasing, negative or beyond 180 degrees.

    Attributes
    ----------
    edges : ndarray, shape (nbins + 1,), float64
        Bin edges in ``unit``, strictly increasing, from theta_min >= 0 to theta_max <= 180 deg.
    unit : str
    edges_rad : ndarray, shape (nbins + 1,), float64, radians
    chord2_edges : ndarray, shape (nbins + 1,), float64
        (2 sin(theta/2))**2 of the edges: the values every backend compares pairs against (the
        last one is +inf when theta_max is 180 degrees).
    spacing : "log", "linear" or "edges"
    """

    def __init__(self, edges, unit="deg", *, spacing="edges"):
        unit = _check_unit(unit)
        if isinstance(edges, (str, bytes)) or edges is None:
            raise TypeError(f"edges must be an array of angles, got {type(edges).__name__}")
        e = np.asarray(edges)
        if e.dtype.kind not in "fiu":
            raise TypeError(f"edges must hold real numbers, got dtype {e.dtype}")
        e = np.array(e, dtype=np.float64)
        if e.ndim != 1 or e.size < 2:
            raise ValueError(f"edges must be 1-D with at least 2 values, got shape {e.shape}")
        if not np.all(np.isfinite(e)):
            raise ValueError("edges contains NaN or infinite values")
        if e[0] < 0:
            raise ValueError(f"edges must be >= 0, got {e[0]} {unit}")
        if np.any(np.diff(e) <= 0):
            raise ValueError("edges must be strictly increasing (sorted, no repeats)")
        rad = e * UNITS[unit]
        if rad[-1] > math.pi * (1 + 1e-12):
            raise ValueError(f"theta_max must be <= 180 degrees, got {e[-1]} {unit}")
        rad[-1] = min(rad[-1], math.pi)
        self.edges = e
        self.edges.setflags(write=False)
        self.unit = unit
        self.spacing = spacing
        self.edges_rad = rad
        self.edges_rad.setflags(write=False)
        c2 = chord2(rad)
        if rad[-1] >= math.pi:
            c2[-1] = np.inf
        if np.any(np.diff(c2) <= 0):
            k = int(np.argmax(np.diff(c2) <= 0))
            raise ValueError(f"edges {e[k]} and {e[k + 1]} {unit} are too close to tell apart: "
                             "pairs are binned on their float64 squared chord distance, which "
                             "is the same at both")
        self.chord2_edges = c2
        self.chord2_edges.setflags(write=False)

    # --- constructors -------------------------------------------------------------------------
    @classmethod
    def from_edges(cls, edges, unit="deg"):
        """Bins from explicit, strictly increasing edges, 0 <= edges <= 180 deg.

        Parameters
        ----------
        edges : array_like, shape (nbins + 1,)
            In ``unit``.
        unit : {"deg", "arcmin", "arcsec", "rad"}

        Returns
        -------
        AngularBins

        Raises
        ------
        TypeError, ValueError
            For bad edges (see the class).
        """
        return cls(edges, unit, spacing="edges")

    @classmethod
    def log(cls, theta_min, theta_max, nbins, unit="deg"):
        """``nbins`` logarithmically spaced bins from theta_min > 0 to theta_max.

        Parameters
        ----------
        theta_min, theta_max : float
            Range in ``unit``.
        nbins : int
            Number of bins (>= 1).
        unit : {"deg", "arcmin", "arcsec", "rad"}

        Returns
        -------
        AngularBins

        Raises
        ------
        TypeError
            If ``nbins`` is not an integer.
        ValueError
            For an empty or out-of-range interval (theta_min must be > 0).
        """
        lo, hi, n = cls._range(theta_min, theta_max, nbins, unit)
        if lo <= 0:
            raise ValueError(f"theta_min must be > 0 for log bins, got {lo}")
        e = np.exp(np.linspace(math.log(lo), math.log(hi), n + 1))
        e[0], e[-1] = lo, hi
        return cls(e, unit, spacing="log")

    @classmethod
    def linear(cls, theta_min, theta_max, nbins, unit="deg"):
        """``nbins`` equal bins from theta_min >= 0 to theta_max.

        Parameters
        ----------
        theta_min, theta_max : float
            Range in ``unit``.
        nbins : int
            Number of bins (>= 1).
        unit : {"deg", "arcmin", "arcsec", "rad"}

        Returns
        -------
        AngularBins

        Raises
        ------
        TypeError
            If ``nbins`` is not an integer.
        ValueError
            For an empty or out-of-range interval.
        """
        lo, hi, n = cls._range(theta_min, theta_max, nbins, unit)
        e = np.linspace(lo, hi, n + 1)
        return cls(e, unit, spacing="linear")

    @staticmethod
    def _range(theta_min, theta_max, nbins, unit):
        _check_unit(unit)
        lo = _check_angle("theta_min", theta_min)
        hi = _check_angle("theta_max", theta_max)
        if isinstance(nbins, (bool, np.bool_)) or not isinstance(nbins, numbers.Integral):
            raise TypeError(f"nbins must be an integer, got {nbins!r}")
        if nbins < 1:
            raise ValueError(f"nbins must be >= 1, got {nbins}")
        if lo < 0:
            raise ValueError(f"theta_min must be >= 0, got {lo} {unit}")
        if hi <= lo:
            raise ValueError(f"theta_max must be > theta_min, got {hi} <= {lo} {unit}")
        return lo, hi, int(nbins)

    # --- derived quantities -------------------------------------------------------------------
    @property
    def nbins(self) -> int:
        """Number of bins."""
        return self.edges.size - 1

    @property
    def theta_min_rad(self) -> float:
        """Lower edge of the first bin, radians."""
        return float(self.edges_rad[0])

    @property
    def theta_max_rad(self) -> float:
        """Upper edge of the last bin, radians."""
        return float(self.edges_rad[-1])

    @property
    def centers(self):
        """Bin centres in ``unit``: geometric means for log bins, else arithmetic means."""
        lo, hi = self.edges[:-1], self.edges[1:]
        if self.spacing == "log":
            return np.sqrt(lo * hi)
        return 0.5 * (lo + hi)

    def to(self, unit):
        """Edges in another unit (the bins themselves stay as they are).

        Parameters
        ----------
        unit : {"deg", "arcmin", "arcsec", "rad"}

        Returns
        -------
        ndarray, shape (nbins + 1,), float64
        """
        return self.edges_rad / UNITS[_check_unit(unit)]

    def same_as(self, other) -> bool:
        """Whether both decide every pair identically (equal chord**2 edges).

        Parameters
        ----------
        other : object

        Returns
        -------
        bool
        """
        return (isinstance(other, AngularBins)
                and np.array_equal(self.chord2_edges, other.chord2_edges))

    def __eq__(self, other):
        return self.same_as(other)

    def __hash__(self):
        return hash(self.chord2_edges.tobytes())

    def __repr__(self):
        return (f"AngularBins({self.spacing}, nbins={self.nbins}, {self.edges[0]:g} to "
                f"{self.edges[-1]:g} {self.unit})")

    def __getstate__(self):
        return {"edges": np.array(self.edges), "unit": self.unit, "spacing": self.spacing}

    def __setstate__(self, state):
        self.__init__(state["edges"], state["unit"], spacing=state["spacing"])


def check_bins(bins):
    """``bins`` itself if it is an :class:`AngularBins`, else TypeError naming ``bins``: the
    check of every counting function's ``bins`` argument (serial and distributed)."""
    if not isinstance(bins, AngularBins):
        raise TypeError("bins must be an AngularBins (e.g. AngularBins.log(0.01, 10, 20, "
                        f"unit='deg')), got {type(bins).__name__}")
    return bins
