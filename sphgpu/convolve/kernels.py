"""Radial kernels on the sphere: Legendre coefficients K_l and profiles K(theta).

Convention (the one every part of :mod:`sphgpu.convolve` uses): convolving a map m with a
radial kernel K multiplies its harmonic coefficients by K_l,

    (K * m)_lm = K_l m_lm,

so that with K_l = b_l (a beam transfer function, b_0 = 1) the convolution is healpy's
``smoothing``. The kernel's profile is then

    K(theta) = sum_l (2l+1)/(4 pi) K_l P_l(cos theta)          (units: K_l per steradian)

and the same convolution in pixel space is the sum over pixels j of K(theta_ij) m_j Omega_pix
(Omega_pix = 4 pi / npix). The two agree exactly when map2alm is one quadrature pass
(``iter=0``, which sums m_j Omega_pix conj(Y_lm)): by the addition theorem the harmonic route
*is* that pixel sum with the kernel band-limited at lmax.

Two classes:

* :class:`RadialKernel`: a band-limited kernel given by K_l, l = 0..lmax (Gaussian beams, the
  paper's K_l = sqrt(C_l) B_l, anything from a profile).
* :class:`CompactKernel`: a kernel that is exactly zero beyond theta_cut, stored as a piecewise
  cubic polynomial in u = 1 - cos(theta) on knots equally spaced in chord length
  c = 2 sin(theta/2). This is what the real-space convolution evaluates: the split's real-space
  part is such a spline by construction (so it is evaluated exactly), and any RadialKernel can be
  tabulated into one to a stated accuracy (:meth:`RadialKernel.tabulate`).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .._validate import check_int
from . import _series

__all__ = ["RadialKernel", "CompactKernel", "ARCMIN"]

#: One arcminute in radians.
ARCMIN = math.pi / (180.0 * 60.0)

#: A compact kernel whose support reaches this chord covers the whole sphere (theta_cut = pi,
#: up to the rounding of n * h): every pair of points is inside, antipodes included.
FULL_CHORD = 2.0 - 1e-12


def _check_angle(name, value, *, allow_zero=False, maximum=math.pi):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (radians), got {type(value).__name__}")
    value = float(value)
    low_ok = value >= 0 if allow_zero else value > 0
    if not math.isfinite(value) or not low_ok or value > maximum:
        bound = "[0" if allow_zero else "(0"
        raise ValueError(f"{name} must be in {bound}, {maximum:.6g}] radians "
                         f"({bound}, {maximum / ARCMIN:.6g}] arcmin), got {value!r}")
    return value


def _check_fwhm_arcmin(fwhm_arcmin):
    if isinstance(fwhm_arcmin, bool) or not isinstance(fwhm_arcmin, numbers.Real):
        raise TypeError(f"fwhm_arcmin must be a real number, got {type(fwhm_arcmin).__name__}")
    f = float(fwhm_arcmin)
    if not math.isfinite(f) or f <= 0 or f > 180 * 60:
        raise ValueError(f"fwhm_arcmin must be positive and at most 10800 (180 degrees), got "
                         f"{fwhm_arcmin!r}")
    return f


def _as_bl(name, bl):
    if bl is None or isinstance(bl, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of real numbers, got {type(bl).__name__}")
    arr = np.asarray(bl)
    if np.dtype(arr.dtype).kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array (K_l for l = 0..lmax), got "
                         f"shape {arr.shape}")
    arr = np.array(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    arr.setflags(write=False)
    return arr


def _u_of_theta(theta):
    """u = 1 - cos(theta) = 2 sin^2(theta/2), accurate near theta = 0."""
    s = np.sin(0.5 * np.asarray(theta, dtype=np.float64))
    return 2.0 * s * s


# ------------------------------------------------------------------ quadrature of piecewise data
@functools.lru_cache(maxsize=64)
def _gauss(q):
    """Gauss-Legendre nodes and weights on [-1, 1] (cached: every piece asks again)."""
    x, w = np.polynomial.legendre.leggauss(q)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _legendre_transform_pieces(u_edges, values_at, lmax, chunk_nodes=4096):
    """2 pi * integral over [u_edges[0], u_edges[-1]] of f(u) P_l(1 - u) du for l = 0..lmax,
    where f is smooth (polynomial) on every piece [u_edges[i], u_edges[i+1]].

    ``values_at(piece_index, u)`` returns f (shape (len(u),)) or a matrix (len(u), ncols) for
    several functions at once. Gauss-Legendre nodes per piece: enough for P_l over the piece's
    width in theta (about lmax * dtheta / 2 oscillations) plus the polynomial's degree; checked
    against twice as many nodes in the tests.
    """
    u_edges = np.asarray(u_edges, dtype=np.float64)
    theta = 2.0 * np.arcsin(np.sqrt(np.clip(u_edges / 2.0, 0.0, 1.0)))
    pieces = []                      # (nodes, weights, values of the live columns, live columns)
    ncols = 1
    for i in range(u_edges.shape[0] - 1):
        a, b = u_edges[i], u_edges[i + 1]
        if b <= a:
            continue
        q = 8 + int(math.ceil(0.5 * lmax * (theta[i + 1] - theta[i])))
        x, w = _gauss(q)
        u = a + (b - a) * 0.5 * (x + 1.0)
        f = np.asarray(values_at(i, u), dtype=np.float64)
        f = f if f.ndim == 2 else f[:, None]
        ncols = f.shape[1]
        live = np.flatnonzero(np.any(f != 0.0, axis=0))
        pieces.append((u, w * (b - a) * math.pi, f[:, live], live))   # 2 pi (b - a)/2 w
    if not pieces:
        return np.zeros(lmax + 1)
    out = _sparse_transform(pieces, lmax, ncols) if ncols > 8 else None
    if out is None:
        out = _dense_transform(pieces, lmax, ncols, chunk_nodes)
    return out[:, 0] if out.shape[1] == 1 else out


def _dense_transform(pieces, lmax, ncols, chunk_nodes):
    """The transform as (lmax+1, nodes) x (nodes, ncols) products, ``chunk_nodes`` at a time."""
    out = np.zeros((lmax + 1, ncols))
    chunk, count = [], 0
    for k, piece in enumerate(pieces):
        chunk.append(piece)
        count += piece[0].shape[0]
        if count >= chunk_nodes or k == len(pieces) - 1:
            rows = _series.legendre_rows(lmax, np.concatenate([p[0] for p in chunk]),
                                         np.concatenate([p[1] for p in chunk]))
            f = np.zeros((rows.shape[1], ncols))
            at = 0
            for u, _, values, live in chunk:
                f[at:at + u.shape[0], live] = values
                at += u.shape[0]
            out += rows @ f
            chunk, count = [], 0
    return out


def _sparse_transform(pieces, lmax, ncols):
    """The transform when every piece has few live columns (a B-spline basis: 4 of 681 for the
    split fit at l = 16384, where the dense product was 8e10 multiply-adds, 2 s of
    optimize_split on a 2-core machine), by :func:`_series.legendre_piece_sums`; None when the
    pieces are not that sparse or no split into rounds of column-disjoint pieces is found."""
    k = max(p[3].size for p in pieces)
    if k == 0 or k > ncols // 4:
        return None
    npieces = len(pieces)
    cols = np.full((npieces, k), -1, dtype=np.int64)
    for p, (_, _, _, live) in enumerate(pieces):
        cols[p, :live.size] = live
    for stride in range(k, 4 * k + 1):          # pieces p, p + stride, ... share no column
        rounds = [np.arange(r, npieces, stride) for r in range(stride)]
        if all(np.unique(c[c >= 0]).size == np.count_nonzero(c >= 0)
               for c in (cols[r] for r in rounds)):
            break
    else:
        return None
    ptr = np.zeros(npieces + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([p[0].shape[0] for p in pieces])
    wf = np.zeros((ptr[-1], k))
    for p, (u, w, values, live) in enumerate(pieces):
        wf[ptr[p]:ptr[p + 1], :live.size] = w[:, None] * values
    return _series.legendre_piece_sums(lmax, np.concatenate([p[0] for p in pieces]), wf,
                                       cols, ptr, rounds, ncols)


# ------------------------------------------------------------------ the band-limited kernel
class RadialKernel:
    """A radially symmetric kernel on the sphere, band-limited at ``lmax``.

    Parameters
    ----------
    bl : array_like, shape (lmax+1,), real
        Legendre coefficients K_l for l = 0..lmax.
    name : str, optional
        A short description (default: "kernel(lmax=...)").

    Raises
    ------
    TypeError
        If ``bl`` does not hold real numbers.
    ValueError
        If ``bl`` is not a non-empty 1-D array or holds NaN or infinite values.

    Attributes
    ----------
    bl : ndarray, shape (lmax+1,), float64, read-only
        Legendre coefficients K_l (see the module docstring for the convention).
    name : str
        A short description for plots and plan reports.

    Build one with :meth:`from_bl`, :meth:`from_profile`, :meth:`gaussian` or :meth:`cmb`.
    """

    def __init__(self, bl, name: str | None = None):
        self.bl = _as_bl("bl", bl)
        self.name = name or f"kernel(lmax={self.lmax})"

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_bl(cls, bl, name: str | None = None) -> "RadialKernel":
        """The kernel with coefficients ``bl``.

        Parameters
        ----------
        bl : array_like, shape (lmax+1,), real
            K_l for l = 0..lmax.
        name : str, optional
            A short description.

        Returns
        -------
        RadialKernel

        Raises
        ------
        TypeError, ValueError
            As the constructor.
        """
        return cls(bl, name)

    @classmethod
    def from_profile(cls, theta, K, lmax: int, name: str | None = None) -> "RadialKernel":
        """The kernel whose profile is ``K`` sampled at ``theta``, zero beyond ``theta[-1]``,
        projected onto l = 0..lmax.

        Between samples the profile is a cubic spline in u = 1 - cos(theta) (smooth at the pole);
        K_l = 2 pi * integral K(u) P_l(1 - u) du is then computed by Gauss quadrature on each
        interval, exactly up to rounding for that spline.

        Parameters
        ----------
        theta : array_like, shape (n,), float64
            Radians, strictly increasing from 0 to at most pi; n >= 4.
        K : array_like, shape (n,), float64
            The profile at ``theta`` (per steradian).
        lmax : int
            Band limit of the result, >= 0.
        name : str, optional
            A short description.

        Returns
        -------
        RadialKernel

        Raises
        ------
        ValueError
            If the arrays differ in shape, have fewer than 4 samples, are not finite, or
            ``theta`` does not increase from 0 to at most pi; if ``lmax`` is negative.
        """
        from scipy.interpolate import CubicSpline

        lmax = check_int("lmax", lmax, minimum=0)
        th = np.asarray(theta, dtype=np.float64)
        k = np.asarray(K, dtype=np.float64)
        if th.ndim != 1 or k.ndim != 1 or th.shape != k.shape:
            raise ValueError(f"theta and K must be 1-D arrays of the same length, got shapes "
                             f"{th.shape} and {k.shape}")
        if th.shape[0] < 4:
            raise ValueError(f"from_profile needs at least 4 samples, got {th.shape[0]}")
        if not (np.all(np.isfinite(th)) and np.all(np.isfinite(k))):
            raise ValueError("theta and K must be finite")
        if th[0] != 0.0 or np.any(np.diff(th) <= 0) or th[-1] > math.pi:
            raise ValueError("theta must increase strictly from 0 to at most pi radians")
        u = _u_of_theta(th)
        spline = CubicSpline(u, k, bc_type="not-a-knot")
        bl = _legendre_transform_pieces(u, lambda i, uu: spline(uu), lmax)
        return cls(bl, name or f"profile(lmax={lmax})")

    @classmethod
    def gaussian(cls, fwhm_arcmin, lmax: int) -> "RadialKernel":
        """A Gaussian beam, K_l = b_l = exp(-l(l+1) sigma^2 / 2), sigma = fwhm / sqrt(8 ln 2).

        Parameters
        ----------
        fwhm_arcmin : float
            Full width at half maximum in arcminutes, in (0, 10800].
        lmax : int
            Band limit, >= 0.

        Returns
        -------
        RadialKernel

        Raises
        ------
        TypeError
            If ``fwhm_arcmin`` is not a real number.
        ValueError
            If it is out of range, or ``lmax`` is negative.
        """
        fwhm = _check_fwhm_arcmin(fwhm_arcmin) * ARCMIN
        lmax = check_int("lmax", lmax, minimum=0)
        sigma2 = fwhm * fwhm / (8.0 * math.log(2.0))
        l = np.arange(lmax + 1, dtype=np.float64)
        return cls(np.exp(-0.5 * l * (l + 1.0) * sigma2), f"Gaussian {fwhm_arcmin:g}'")

    @classmethod
    def cmb(cls, fwhm_arcmin, lmax: int, cl=None) -> "RadialKernel":
        """The paper's kernel K_l = sqrt(C_l) B_l (Eq. 9): convolving white noise of unit
        spectrum with it gives a sky of spectrum C_l seen through a Gaussian beam.

        Parameters
        ----------
        fwhm_arcmin : float
            FWHM of the Gaussian beam B_l in arcminutes, in (0, 10800].
        lmax : int
            Band limit, >= 0.
        cl : array_like, shape (>= lmax+1,), optional
            Raw C_l (muK^2); the shipped Planck 2018 TT spectrum by default (the paper used
            WMAP 7-year).

        Returns
        -------
        RadialKernel
            K_l in muK (per unit white-noise amplitude).

        Raises
        ------
        TypeError, ValueError
            As :meth:`gaussian`; ValueError if ``cl`` is shorter than lmax+1, negative or not
            finite.
        """
        fwhm_arcmin = _check_fwhm_arcmin(fwhm_arcmin)
        lmax = check_int("lmax", lmax, minimum=0)
        if cl is None:
            from ..data import planck2018_cl

            cl = planck2018_cl(lmax)
        cl = _as_bl("cl", cl)
        if cl.shape[0] < lmax + 1:
            raise ValueError(f"cl must have at least lmax+1 = {lmax + 1} entries, got "
                             f"{cl.shape[0]}")
        if np.any(cl[:lmax + 1] < 0):
            raise ValueError("cl must be non-negative")
        beam = cls.gaussian(fwhm_arcmin, lmax).bl
        return cls(np.sqrt(cl[:lmax + 1]) * beam, f"sqrt(C_l) B_l, {fwhm_arcmin:g}'")

    # ---------------------------------------------------------------- properties
    @property
    def lmax(self) -> int:
        """Band limit: the last multipole of ``bl``."""
        return int(self.bl.shape[0] - 1)

    def power(self, input_cl=None) -> float:
        """The variance sum_l (2l+1) K_l^2 C_l / (4 pi) that a map of spectrum C_l has after
        convolution (the denominator of the paper's Eq. 6).

        Parameters
        ----------
        input_cl : array_like, shape (>= lmax+1,), optional
            C_l of the input map (default: 1 for every l, white noise).

        Returns
        -------
        float
        """
        l = np.arange(self.lmax + 1)
        c = 1.0 if input_cl is None else np.asarray(input_cl, dtype=np.float64)[: self.lmax + 1]
        return float(np.sum((2 * l + 1) * self.bl ** 2 * c) / (4 * math.pi))

    def profile(self, theta) -> np.ndarray:
        """The profile K(theta) = sum_l (2l+1)/(4 pi) K_l P_l(cos theta), the exact Legendre sum.

        Accurate near theta = 0 (see :mod:`sphgpu.convolve._series`).

        Parameters
        ----------
        theta : array_like, float64, any shape
            Radians in [0, pi].

        Returns
        -------
        ndarray, float64, the shape of ``theta``
            K per steradian.

        Raises
        ------
        ValueError
            If an angle is outside [0, pi] or not finite.
        """
        th = np.asarray(theta, dtype=np.float64)
        if not np.all(np.isfinite(th)) or np.any(th < 0) or np.any(th > math.pi):
            raise ValueError("theta must lie in [0, pi] radians")
        return _series.series(self.bl, _u_of_theta(th))

    def tabulate(self, theta_cut, *, rtol: float = 1e-12, max_intervals: int = 1 << 22
                 ) -> "CompactKernel":
        """This kernel truncated at ``theta_cut`` as a :class:`CompactKernel`.

        Cubic Hermite interpolation of the exact profile and its derivative on chord-uniform
        knots, refined until the error at every interval's midpoint is below ``rtol`` times the
        profile's largest value.

        Parameters
        ----------
        theta_cut : float
            Support radius in radians, in (0, pi].
        rtol : float
            Interpolation error bound relative to ``max |K|``.
        max_intervals : int
            Most intervals the refinement may reach.

        Returns
        -------
        CompactKernel

        Raises
        ------
        TypeError, ValueError
            If ``theta_cut`` is not an angle in (0, pi]; ValueError if ``max_intervals`` is not
            enough for ``rtol``.
        """
        theta_cut = _check_angle("theta_cut", theta_cut)
        return CompactKernel.interpolate(self, theta_cut, rtol=rtol, max_intervals=max_intervals)

    def truncate(self, lmax: int) -> "RadialKernel":
        """The same kernel with K_l = 0 above ``lmax``.

        Parameters
        ----------
        lmax : int
            The new band limit, 0 <= lmax <= self.lmax.

        Returns
        -------
        RadialKernel

        Raises
        ------
        ValueError
            If ``lmax`` is out of range.
        """
        lmax = check_int("lmax", lmax, minimum=0, maximum=self.lmax)
        return RadialKernel(self.bl[: lmax + 1], self.name)

    def __repr__(self):
        return f"RadialKernel({self.name!r}, lmax={self.lmax})"


# ------------------------------------------------------------------ the compact kernel
class CompactKernel:
    """A radial kernel that is exactly zero for theta >= theta_cut.

    On interval k (chord c = 2 sin(theta/2) in [k h, (k+1) h), k = 0..n-1) the kernel is the
    cubic ``coef[k, 0] + s (coef[k, 1] + s (coef[k, 2] + s coef[k, 3]))`` in

        s = (u - u_k) / (u_{k+1} - u_k) = (c - k h)(c + k h) / (h^2 (2k + 1)),   u = c^2 / 2,

    i.e. a cubic polynomial in u = 1 - cos(theta), hence smooth on the sphere at theta = 0.
    Knots uniform in chord are nearly uniform in theta, and the interval of a pair of pixels is
    found from their squared chord with one square root.

    Parameters
    ----------
    h : float
        Chord spacing of the knots, > 0.
    coef : array_like, shape (n, 4), float64
        Cubic coefficients per interval; n h <= 2.
    name : str
        A short description.

    Raises
    ------
    ValueError
        If ``coef`` has the wrong shape or is not finite, or h <= 0 or n h > 2.

    Attributes
    ----------
    h : float
        Chord spacing of the knots (dimensionless; ~ radians for small angles).
    coef : ndarray, shape (n, 4), float64, read-only
        Cubic coefficients per interval.
    theta_cut : float
        Support radius in radians: 2 asin(n h / 2).
    """

    def __init__(self, h, coef, name: str = "compact kernel"):
        coef = np.array(coef, dtype=np.float64)
        if coef.ndim != 2 or coef.shape[1] != 4 or coef.shape[0] == 0:
            raise ValueError(f"coef must have shape (n, 4) with n >= 1, got {coef.shape}")
        if not np.all(np.isfinite(coef)):
            raise ValueError("coef contains NaN or infinite values")
        h = float(h)
        if not (h > 0 and coef.shape[0] * h <= 2.0 + 1e-12):
            raise ValueError(f"h must be positive with n*h <= 2 (the chord of pi), got h={h}, "
                             f"n={coef.shape[0]}")
        coef.setflags(write=False)
        self.h = h
        self.coef = coef
        self.name = name

    @property
    def n(self) -> int:
        """Number of table intervals in chord distance."""
        return int(self.coef.shape[0])

    @property
    def chord_cut(self) -> float:
        """Chord distance where the table ends (at most 2, the antipode)."""
        return min(self.n * self.h, 2.0)

    @property
    def theta_cut(self) -> float:
        """Angular radius of the support, radians (the chord cut as an angle)."""
        return 2.0 * math.asin(min(1.0, 0.5 * self.chord_cut))

    @property
    def u_knots(self) -> np.ndarray:
        """u at the knots, shape (n+1,)."""
        c = np.arange(self.n + 1) * self.h
        return 0.5 * c * c

    # ---------------------------------------------------------------- evaluation
    def evaluate_chord(self, c) -> np.ndarray:
        """K at chord lengths ``c``.

        Parameters
        ----------
        c : array_like, float64, any shape
            Chord lengths 2 sin(theta/2), in [0, 2].

        Returns
        -------
        ndarray, float64, the shape of ``c``
            0 where c > n h.
        """
        c = np.asarray(c, dtype=np.float64)
        k = np.floor(c / self.h).astype(np.int64)
        # closed support; a kernel reaching chord 2 (theta = pi) covers every pair
        end = (k >= self.n) & ((c <= self.n * self.h) | (self.n * self.h >= FULL_CHORD))
        k = np.where(end, self.n - 1, k)
        inside = (k >= 0) & (k < self.n)
        kk = np.where(inside, k, 0)
        kh = kk * self.h
        s = (c - kh) * (c + kh) / (self.h * self.h * (2.0 * kk + 1.0))
        a = self.coef[kk]
        val = a[..., 0] + s * (a[..., 1] + s * (a[..., 2] + s * a[..., 3]))
        return np.where(inside, val, 0.0)

    def __call__(self, theta) -> np.ndarray:
        """K(theta) at angles in radians (any shape)."""
        th = np.asarray(theta, dtype=np.float64)
        return self.evaluate_chord(2.0 * np.sin(0.5 * th))

    def bl(self, lmax: int) -> np.ndarray:
        """Exact Legendre coefficients K_l (Gauss quadrature on each interval, exact up to
        rounding for this piecewise polynomial).

        Parameters
        ----------
        lmax : int
            Band limit, >= 0.

        Returns
        -------
        ndarray, shape (lmax+1,), float64

        Raises
        ------
        ValueError
            If ``lmax`` is negative.
        """
        lmax = check_int("lmax", lmax, minimum=0)
        u = self.u_knots
        du = np.diff(u)

        def values(i, uu):
            s = (uu - u[i]) / du[i]
            a = self.coef[i]
            return a[0] + s * (a[1] + s * (a[2] + s * a[3]))

        return _legendre_transform_pieces(u, values, lmax)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_bspline(cls, h, coefficients, name="compact kernel") -> "CompactKernel":
        """The cubic spline sum_j x_j B_j(u) on the knots of :func:`bspline_knots` as a
        CompactKernel.

        Parameters
        ----------
        h : float
            Chord spacing of the knots.
        coefficients : array_like, shape (n,), float64
            x_j for the n basis functions (all vanishing with two derivatives at u_n).
        name : str
            A short description.

        Returns
        -------
        CompactKernel
        """
        x = np.asarray(coefficients, dtype=np.float64)
        n = x.shape[0]
        t = bspline_knots(h, n + 3)                     # 3 more knots: the base interval
        u = 0.5 * (np.arange(n + 1) * h) ** 2
        s = np.array([0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0])
        uu = u[:-1, None] + np.diff(u)[:, None] * s[None, :]
        uu[:, -1] = np.minimum(uu[:, -1], u[1:])       # stay inside piece i
        # piece i: sum over its live B_i..B_{i+3} (those past n - 1 have coefficient 0)
        padded = np.concatenate([x, np.zeros(3)])
        live = padded[np.arange(n)[:, None] + np.arange(4)]
        pieces = np.arange(n)[:, None]
        vals = np.einsum("isk,ik->is", bspline_piece_values(t, pieces, uu), live)
        vinv = np.linalg.inv(np.vander(s, 4, increasing=True))
        return cls(h, vals @ vinv.T, name)

    @classmethod
    def interpolate(cls, kernel: RadialKernel, theta_cut: float, *, rtol=1e-12,
                    max_intervals=1 << 22) -> "CompactKernel":
        """Cubic Hermite interpolation (values and exact du-derivatives at the knots) of
        ``kernel``'s profile on [0, theta_cut], refined by doubling the number of intervals until
        every midpoint is within ``rtol * max |K|``.

        Parameters
        ----------
        kernel : RadialKernel
            The kernel to tabulate.
        theta_cut : float
            Support radius in radians, in (0, pi].
        rtol : float
            Error bound relative to ``max |K|``.
        max_intervals : int
            Most intervals the refinement may reach.

        Returns
        -------
        CompactKernel

        Raises
        ------
        TypeError, ValueError
            If ``theta_cut`` is not an angle in (0, pi]; ValueError if ``max_intervals`` is not
            enough.
        """
        theta_cut = _check_angle("theta_cut", theta_cut)
        c_cut = 2.0 * math.sin(0.5 * theta_cut)
        # start near 8 intervals per 2 pi / lmax; the error of cubic Hermite falls as h^4
        n = max(8, int(math.ceil(c_cut * max(kernel.lmax, 1) * 4.0 / math.pi)))
        while True:
            h = c_cut / n
            c = np.arange(n + 1) * h
            u = 0.5 * c * c
            f, df = _series.series_and_derivative(kernel.bl, u)
            du = np.diff(u)
            m0 = df[:-1] * du
            m1 = df[1:] * du
            coef = np.stack([f[:-1], m0, 3.0 * (f[1:] - f[:-1]) - 2.0 * m0 - m1,
                             2.0 * (f[:-1] - f[1:]) + m0 + m1], axis=1)
            ck = cls(h, coef, f"{kernel.name} within {theta_cut / ARCMIN:.4g}'")
            cmid = np.sqrt(0.5 * (c[:-1] ** 2 + c[1:] ** 2))          # s = 1/2
            exact = _series.series(kernel.bl, 0.5 * cmid * cmid)
            err = np.max(np.abs(ck.evaluate_chord(cmid) - exact))
            scale = max(np.max(np.abs(f)), np.max(np.abs(exact)), np.finfo(float).tiny)
            if err <= rtol * scale:
                return ck
            if 2 * n > max_intervals:
                raise ValueError(f"tabulating the kernel to rtol={rtol:g} needs more than "
                                 f"max_intervals={max_intervals} intervals (reached "
                                 f"{err / scale:.2e} with {n}); raise rtol or max_intervals")
            n *= 2

    def __repr__(self):
        return (f"CompactKernel({self.name!r}, theta_cut={self.theta_cut / ARCMIN:.4g} arcmin, "
                f"{self.n} intervals)")


def bspline_knots(h: float, n: int) -> np.ndarray:
    """Knot vector in u of the real-space basis: u_k = (k h)^2 / 2 for k = 0..n, mirrored
    (u_{-k} = -u_k) for the three knots below 0; shape (n+4,). Basis function j is the cubic
    B-spline on knots u_{j-3}..u_{j+1}; with support chord n h the basis is j = 0..n-1, the last
    one ending at u_n with zero value, slope and curvature, so any combination is a compact
    kernel. (A cubic spline is defined on [t[3], t[-4]], so callers pass n + 3 to cover u_n.)"""
    k = np.arange(-3, n + 1, dtype=np.float64)
    return np.sign(k) * 0.5 * (k * h) ** 2


def bspline_piece_values(t, piece, u):
    """The four cubic B-splines alive on knot interval ``piece`` at u.

    Parameters
    ----------
    t : ndarray, float64, shape (nknots,)
        Strictly increasing knots (:func:`bspline_knots`).
    piece : int or int array broadcasting with ``u``
        i >= 0: the interval [t[i + 3], t[i + 4]].
    u : ndarray, float64
        Points in their piece's interval.

    Returns
    -------
    ndarray, float64, shape u.shape + (4,)
        B_i .. B_{i+3} at u (B_j the cubic B-spline on t[j] .. t[j + 4]), by the Cox-de Boor
        recurrence one degree at a time; non-negative, summing to 1.
    """
    u = np.asarray(u, dtype=np.float64)
    span = np.broadcast_to(np.asarray(piece) + 3, u.shape)
    values = np.zeros(u.shape + (4,))
    values[..., 0] = 1.0
    left = np.zeros(u.shape + (4,))
    right = np.zeros(u.shape + (4,))
    for j in range(1, 4):
        left[..., j] = u - t[span + 1 - j]
        right[..., j] = t[span + j] - u
        saved = 0.0
        for r in range(j):
            part = values[..., r] / (right[..., r + 1] + left[..., j - r])
            values[..., r] = saved + right[..., r + 1] * part
            saved = left[..., j - r] * part
        values[..., j] = saved
    return values
