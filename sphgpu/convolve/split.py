"""The kernel split (Sutter, Wandelt & Elsner): K_l ~ K^_l + [P K^_theta]_l.

K^_l is the harmonic part, nonzero for l <= l_cut; K^_theta the real-space part, zero beyond
theta_cut; P the Legendre transform. Both are fitted at once by weighted least squares over
l = 0..l_fit (paper Eqs. 2-5):

    minimise  sum_l (2l+1) C_l^input (K~_l - K_l)^2,   K~_l = K^_l + [P K^_theta]_l.

How this implementation sets the problem up:

* Real-space basis: the n cubic B-splines in u = 1 - cos(theta) on knots equally spaced in chord
  (:func:`sphgpu.convolve.kernels.bspline_knots`), each vanishing with two derivatives at
  theta_cut. Their Legendre transforms are computed exactly by Gauss quadrature, and the fitted
  kernel is the spline itself (a :class:`CompactKernel`), so the real-space convolution applies
  exactly the kernel that was fitted: no interpolation error. The knot spacing is
  pi / (oversample * lmax) in chord.
* The harmonic unknowns are eliminated exactly: for l <= l_cut the best K^_l is
  K_l - [P K^_theta]_l (zero residual), so only rows l > l_cut remain, and the normal matrix
  A^T W A of that reduced problem (W = diag((2l+1) C_l^input)) is decomposed (symmetric
  eigen-decomposition = SVD of a symmetric positive matrix). As in the paper, singular values
  below ``rcond`` times the largest are dropped; the columns are scaled to unit norm first
  so that the threshold does not depend on how the basis is normalised. Without truncation this
  is the paper's system (3) solved exactly.
* Error (paper Eq. 6): sigma^2 = alpha^2 sigma_rms^2 / (sum_l (2l+1) K_l^2 C_l^input / 4 pi) with
  sigma_rms^2 = sum_l (2l+1) C_l^input (K~_l - K_l)^2 / 4 pi. With C_l^input = 1, as in the
  paper, the denominator is the paper's; with another input spectrum it is the output map's
  variance, so that sigma stays a fractional error. alpha = 5 is the paper's empirical factor;
  :func:`sphgpu.convolve.calibrate_alpha` measures it.
* ``l_fit`` may extend the fit above lmax with target 0 (the default preset fits up to
  4 lmax; the paper stops at lmax): the real-space kernel is not band-limited, and in a pixel
  sum its power above lmax reaches the output map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int
from .kernels import (ARCMIN, CompactKernel, RadialKernel, _check_angle,
                      _legendre_transform_pieces, bspline_knots, bspline_piece_values)

__all__ = ["KernelSplit", "SplitFitter", "split_kernel", "clear_fit_cache", "DEFAULT_ALPHA",
           "FIT_PRESETS"]

#: The paper's empirical factor between the estimated and the actual error.
DEFAULT_ALPHA = 5.0

#: Fit settings: rows l = 0..l_fit_factor * lmax, ``oversample`` knots per pi/lmax of chord,
#: relative singular-value threshold ``rcond`` of the (column-scaled) normal matrix.
#:
#: "paper": the paper's set-up: rows up to lmax (its A has lmax rows), one knot per pi/lmax,
#: singular values of A^T W A below 1e-6 of the largest dropped.
#: "sphgpu" (default): rows up to 4 lmax with target 0 above lmax, 3 knots per pi/lmax,
#: threshold 1e-9. A real-space kernel is never band-limited and a pixel sum lets its power
#: above lmax into the map; fitting it away makes the measured error follow the estimate
#: (alpha ~ 1 instead of 5) and is what makes narrow beams unsplittable, as the paper found.
#: The threshold is relative to the basis' own scale: on this basis the paper's 1e-6 already
#: drops modes the fit needs (larger errors that jump with l_cut), while 1e-9 still keeps the
#: real-space kernel below the full kernel's amplitude (the oscillations the threshold exists
#: to damp).
FIT_PRESETS = {
    "sphgpu": dict(l_fit_factor=4, oversample=3.0, rcond=1e-9),
    "paper": dict(l_fit_factor=1, oversample=1.0, rcond=1e-6),
}
#: Row block of the stored partial normal matrices (see SplitFitter).
_BLOCK = 256
#: Largest size of the stored partial normal matrices, bytes.
_SUFFIX_BYTES = 256 << 20


def _check_kernel(kernel):
    if isinstance(kernel, RadialKernel):
        return kernel
    if isinstance(kernel, (np.ndarray, list, tuple)):
        return RadialKernel.from_bl(kernel)
    raise TypeError(f"kernel must be a RadialKernel or an array of K_l, got "
                    f"{type(kernel).__name__}")


def _check_input_cl(input_cl, lmax, l_fit):
    """C_l^input for l = 0..l_fit: a positive scalar, or an array of at least lmax+1 entries
    (continued with its last entry up to l_fit, as pixel noise would be)."""
    if input_cl is None:
        return np.ones(l_fit + 1)
    c = np.asarray(input_cl, dtype=np.float64)
    if c.ndim == 0:
        if not (math.isfinite(float(c)) and float(c) > 0):
            raise ValueError(f"input_cl must be positive, got {float(c)}")
        return np.full(l_fit + 1, float(c))
    if c.ndim != 1 or c.shape[0] < lmax + 1:
        raise ValueError(f"input_cl must be a scalar or a 1-D array of at least lmax+1 = "
                         f"{lmax + 1} entries (l = 0..lmax of the kernel), got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError("input_cl must be finite and non-negative")
    out = np.full(l_fit + 1, c[min(c.shape[0], l_fit + 1) - 1])
    n = min(c.shape[0], l_fit + 1)
    out[:n] = c[:n]
    return out


@dataclass(frozen=True, eq=False)
class KernelSplit:
    """A kernel split into a harmonic part (l <= l_cut) and a compact real-space part.

    Made by :func:`split_kernel` or :meth:`SplitFitter.split`; the parameters are also its
    attributes.

    Parameters
    ----------
    kernel : RadialKernel
        The full kernel K_l.
    l_cut : int
        Harmonic band limit (-1: no harmonic part).
    theta_cut : float
        Support radius of the real-space part, radians (0: no real-space part).
    harmonic_bl : ndarray, shape (l_cut+1,), float64
        K^_l.
    realspace : CompactKernel or None
        K^_theta (None when there is no real-space part).
    realspace_bl : ndarray, shape (l_fit+1,), float64
        [P K^_theta]_l, the Legendre transform of the real-space part.
    approx_bl : ndarray, shape (l_fit+1,)
        K~_l = K^_l + [P K^_theta]_l.
    sigma_rms : float
        sqrt(sum (2l+1) C_in (K~_l - K_l)^2 / 4 pi) over l = 0..l_fit.
    relative_rms : float
        sigma_rms / sqrt(sum (2l+1) C_in K_l^2 / 4 pi): the predicted fractional error
        without alpha.
    alpha : float
        Error factor of Eq. 6.
    l_fit : int
        Last l of the fit (>= lmax).
    input_cl : ndarray, shape (l_fit+1,), float64
        C_l^input the fit weighted by.
    """

    kernel: RadialKernel
    l_cut: int
    theta_cut: float
    harmonic_bl: np.ndarray
    realspace: CompactKernel | None
    realspace_bl: np.ndarray
    approx_bl: np.ndarray
    sigma_rms: float
    relative_rms: float
    alpha: float
    l_fit: int
    input_cl: np.ndarray = field(repr=False)

    @property
    def predicted_error(self) -> float:
        """The paper's sigma (Eq. 6): alpha * relative_rms."""
        return self.alpha * self.relative_rms

    @property
    def theta_cut_arcmin(self) -> float:
        """``theta_cut`` in arcminutes."""
        return self.theta_cut / ARCMIN

    def relative_error_per_l(self) -> np.ndarray:
        """``|1 - K~_l / K_l|`` per l (paper Eq. 10 before the log).

        Returns
        -------
        ndarray, shape (lmax+1,), float64
            NaN where K_l = 0.
        """
        k = self.kernel.bl
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(1.0 - self.approx_bl[: k.shape[0]] / k)

    def __repr__(self):
        return (f"KernelSplit({self.kernel.name!r}, l_cut={self.l_cut}, "
                f"theta_cut={self.theta_cut_arcmin:.4g}', predicted_error="
                f"{self.predicted_error:.3g} (alpha={self.alpha:g}))")


def clear_fit_cache() -> None:
    """Free the design matrices that kernel-split fits keep for reuse (about 100 MB after fits
    at nside 2048, lmax 4096; see ``_Design.KEEP``); the next fit rebuilds what it needs.

    Returns
    -------
    None
    """
    _Design._cache.clear()
    _Design._order.clear()


class _Design:
    """What a fit needs that does not depend on the kernel: the design matrix of the real-space
    basis and the weighted normal matrices of its row blocks, summed from the last block down
    (so the rows l > l_cut of any fit cost one partial block). Shared by every kernel with the
    same (knot spacing, basis size, l_fit, weights); the few latest are kept."""

    _cache: dict = {}
    _order: list = []
    KEEP = 2          # one at Planck size is ~200 MB

    @classmethod
    def get(cls, h, n_max, l_fit, w):
        key = (h, n_max, l_fit, hash(w.tobytes()))
        if key not in cls._cache:
            cls._cache[key] = cls(h, n_max, l_fit, w)
            cls._order.append(key)
            while len(cls._order) > cls.KEEP:
                cls._cache.pop(cls._order.pop(0), None)
        return cls._cache[key]

    def __init__(self, h, n_max, l_fit, w):
        self.h, self.n_max, self.l_fit = h, n_max, l_fit
        self.sw = np.sqrt(w)
        self.A = self._matrix() if n_max > 0 else np.zeros((l_fit + 1, 0))
        nblocks = (l_fit + 1 + _BLOCK - 1) // _BLOCK
        self.nblocks = nblocks
        self.G = None
        if 0 < n_max and nblocks * n_max * n_max * 8 <= _SUFFIX_BYTES:
            G = np.zeros((nblocks + 1, n_max, n_max))
            for k in range(nblocks - 1, -1, -1):
                M = self._block(k)
                G[k] = G[k + 1] + M.T @ M
            self.G = G

    def _block(self, k):
        rows = slice(k * _BLOCK, min((k + 1) * _BLOCK, self.l_fit + 1))
        return self.A[rows] * self.sw[rows, None]

    def _matrix(self):
        """A[l, j] = 2 pi * integral B_j(u) P_l(1 - u) du, shape (l_fit+1, n_max)."""
        n = self.n_max
        t = bspline_knots(self.h, n + 3)                 # the base interval reaches u_n
        u_edges = 0.5 * (np.arange(n + 1) * self.h) ** 2

        def basis(i, u):
            # B_i..B_{i+3} live on piece i; those past n - 1 are not in the basis
            f = np.zeros((u.shape[0], n))
            cols = min(4, n - i)
            f[:, i:i + cols] = bspline_piece_values(t, i, u)[:, :cols]
            return f

        return np.ascontiguousarray(_legendre_transform_pieces(u_edges, basis, self.l_fit)
                                    .reshape(self.l_fit + 1, n))

    def rhs_suffix(self, y):
        """Block suffix sums of A^T W y, shape (nblocks+1, n_max)."""
        b = np.zeros((self.nblocks + 1, self.n_max))
        if self.G is None:
            return b
        for k in range(self.nblocks - 1, -1, -1):
            rows = slice(k * _BLOCK, min((k + 1) * _BLOCK, self.l_fit + 1))
            b[k] = b[k + 1] + self._block(k).T @ (y[rows] * self.sw[rows])
        return b


class SplitFitter:
    """Fits splits of one kernel for many (l_cut, theta_cut): the design matrix and the partial
    normal matrices are computed once.

    Parameters
    ----------
    kernel : RadialKernel or array of K_l
        The kernel to split.
    theta_max : float
        Largest theta_cut that will be asked for (radians).
    input_cl : scalar or array (>= lmax+1,), optional
        C_l^input of the maps to convolve (default 1: white noise); above its last entry
        it is continued with that entry.
    fit : "sphgpu" or "paper"
        Preset for the three settings below (:data:`FIT_PRESETS`); each may be overridden.
    l_fit : int, optional
        Fit rows l = 0..l_fit (>= lmax; above lmax the target is 0).
    oversample : float, optional
        Knots per pi / lmax of chord.
    rcond : float, optional
        Relative threshold on the singular values of A^T W A.
    alpha : float
        Error factor of Eq. 6 (default 5, the paper's).

    Raises
    ------
    TypeError
        If ``kernel`` is not a RadialKernel or an array.
    ValueError
        For an unknown ``fit``, ``theta_max`` outside (0, pi], ``l_fit`` below lmax, settings
        out of range, a bad ``input_cl``, or a kernel that is zero.
    """

    def __init__(self, kernel, theta_max, *, input_cl=None, fit="sphgpu", l_fit=None,
                 oversample=None, rcond=None, alpha=DEFAULT_ALPHA):
        self.kernel = _check_kernel(kernel)
        lmax = self.kernel.lmax
        preset = FIT_PRESETS.get(fit) if isinstance(fit, str) else None
        if preset is None:
            raise ValueError(f"fit must be one of {tuple(FIT_PRESETS)}, got {fit!r}")
        self.fit = fit
        oversample = preset["oversample"] if oversample is None else oversample
        rcond = preset["rcond"] if rcond is None else rcond
        if l_fit is None:
            l_fit = int(preset["l_fit_factor"] * lmax)
        self.theta_max = _check_angle("theta_max", theta_max)
        self.l_fit = check_int("l_fit", l_fit, minimum=lmax)
        if not (isinstance(oversample, (int, float)) and 0.1 <= oversample <= 64):
            raise ValueError(f"oversample must be a number in [0.1, 64], got {oversample!r}")
        if not (isinstance(rcond, (int, float)) and 0 <= rcond < 1):
            raise ValueError(f"rcond must be in [0, 1), got {rcond!r}")
        if not (isinstance(alpha, (int, float)) and alpha > 0 and math.isfinite(alpha)):
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.rcond = float(rcond)
        self.alpha = float(alpha)
        self.input_cl = _check_input_cl(input_cl, lmax, self.l_fit)
        self.h = math.pi / (oversample * max(lmax, 1))
        c_max = 2.0 * math.sin(0.5 * self.theta_max)
        self.n_max = int(math.floor(c_max / self.h + 1e-9))
        l = np.arange(self.l_fit + 1, dtype=np.float64)
        self.w = (2.0 * l + 1.0) * self.input_cl
        self.y = np.zeros(self.l_fit + 1)
        self.y[: lmax + 1] = self.kernel.bl
        self.norm2 = float(np.sum(self.w[: lmax + 1] * self.kernel.bl ** 2)) / (4 * math.pi)
        if not self.norm2 > 0:
            raise ValueError("the kernel is zero (for this input_cl): nothing to split")
        self._design = _Design.get(self.h, self.n_max, self.l_fit, self.w)
        self.A = self._design.A
        self._b = self._design.rhs_suffix(self.y)

    def n_basis(self, theta_cut) -> int:
        """Number of real-space basis functions for a support radius.

        Parameters
        ----------
        theta_cut : float
            Support radius in radians (capped at ``theta_max``).

        Returns
        -------
        int
            n, the basis functions whose support n h in chord fits within ``theta_cut``.
        """
        c = 2.0 * math.sin(0.5 * min(theta_cut, self.theta_max))
        return min(self.n_max, int(math.floor(c / self.h + 1e-9)))

    def _normal(self, l_cut, n):
        first = l_cut + 1
        if self._design.G is not None:
            k = (first + _BLOCK - 1) // _BLOCK            # first whole block at or after `first`
            G = self._design.G[k, :n, :n].copy()
            b = self._b[k, :n].copy()
            rows = slice(first, min(k * _BLOCK, self.l_fit + 1))
        else:
            G = np.zeros((n, n))
            b = np.zeros(n)
            rows = slice(first, self.l_fit + 1)
        if rows.stop > rows.start:
            sw = np.sqrt(self.w[rows])[:, None]
            M = self.A[rows, :n] * sw
            G += M.T @ M
            b += M.T @ (self.y[rows] * sw[:, 0])
        return G, b

    # ------------------------------------------------------------------ fitting
    def solve(self, l_cut: int, n: int):
        """The least-squares fit of one split.

        Parameters
        ----------
        l_cut : int
            Harmonic band limit (-1: none).
        n : int
            Real-space basis functions (:meth:`n_basis`).

        Returns
        -------
        x : ndarray, shape (n,), float64
            Real-space coefficients.
        resid : ndarray, shape (l_fit+1,), float64
            K~_l - K_l (0 for l <= l_cut).
        """
        x = np.zeros(n)
        if n > 0 and l_cut < self.l_fit:
            G, b = self._normal(l_cut, n)
            d = np.sqrt(np.diag(G))
            d[d == 0] = 1.0
            lam, V = np.linalg.eigh(G / np.outer(d, d))
            keep = lam > self.rcond * lam.max()
            if np.any(keep):
                Vk = V[:, keep]
                x = (Vk @ ((Vk.T @ (b / d)) / lam[keep])) / d
        resid = self.A[:, :n] @ x - self.y
        resid[: l_cut + 1] = 0.0                          # the harmonic part absorbs these
        return x, resid

    def relative_rms(self, l_cut: int, theta_cut: float) -> float:
        """Predicted fractional rms error of one split, without alpha.

        Parameters
        ----------
        l_cut : int
            Harmonic band limit.
        theta_cut : float
            Support radius in radians.

        Returns
        -------
        float
        """
        _, resid = self.solve(l_cut, self.n_basis(theta_cut))
        return math.sqrt(float(np.sum(self.w * resid ** 2)) / (4 * math.pi) / self.norm2)

    def error(self, l_cut: int, theta_cut: float) -> float:
        """The paper's sigma (Eq. 6) of one split: alpha times :meth:`relative_rms`.

        Parameters
        ----------
        l_cut : int
            Harmonic band limit.
        theta_cut : float
            Support radius in radians.

        Returns
        -------
        float
        """
        return self.alpha * self.relative_rms(l_cut, theta_cut)

    def split(self, l_cut: int, theta_cut: float) -> KernelSplit:
        """The full :class:`KernelSplit` of one split.

        Parameters
        ----------
        l_cut : int
            Harmonic band limit, -1 <= l_cut <= lmax.
        theta_cut : float
            Support radius in radians (0: no real-space part).

        Returns
        -------
        KernelSplit

        Raises
        ------
        ValueError
            If ``l_cut`` is out of range.
        """
        lmax = self.kernel.lmax
        l_cut = check_int("l_cut", l_cut, minimum=-1, maximum=lmax)
        theta_cut = float(theta_cut)
        n = self.n_basis(theta_cut) if theta_cut > 0 else 0
        x, resid = self.solve(l_cut, n)
        real_bl = self.A[:, :n] @ x
        harm = self.y[: l_cut + 1] - real_bl[: l_cut + 1]
        approx = real_bl.copy()
        approx[: l_cut + 1] += harm
        sigma_rms = math.sqrt(float(np.sum(self.w * resid ** 2)) / (4 * math.pi))
        compact = None
        if n > 0:
            compact = CompactKernel.from_bspline(
                self.h, x, name=f"real-space part of {self.kernel.name}")
        return KernelSplit(self.kernel, l_cut, compact.theta_cut if compact else 0.0, harm,
                           compact, real_bl, approx, sigma_rms,
                           sigma_rms / math.sqrt(self.norm2), self.alpha, self.l_fit,
                           self.input_cl)

    def smallest_l_cut(self, theta_cut: float, bound: float, lo: int = -1,
                       hint: int | None = None, search: str = "ripple") -> int | None:
        """Smallest l_cut in [lo, lmax - 1] whose error is within ``bound``; None if even
        lmax - 1 misses it.

        The error falls with l_cut overall but ripples with a period of about
        2 pi / theta_cut in l (the Legendre transform of a kernel confined to theta_cut), so a
        plain bisection, the paper's search (``search="bisect"``: between lo and lmax - 1,
        no hint), can stop on a ripple. The default ``search="ripple"``: a bisection (or, with
        a ``hint`` such as the answer at a neighbouring theta_cut, steps doubling away from it)
        finds a valid l_cut, then the ripple below it is probed at quarter-period steps
        and the lowest valid one is refined.

        Parameters
        ----------
        theta_cut : float
            Support radius in radians.
        bound : float
            Error bound (the paper's sigma, alpha included).
        lo : int
            Smallest l_cut to consider (-1: real space only).
        hint : int, optional
            A likely answer to start from ("ripple" only).
        search : {"ripple", "bisect"}
            How to search (see above).

        Returns
        -------
        int or None

        Raises
        ------
        ValueError
            For an unknown ``search``.
        """
        if search not in ("ripple", "bisect"):
            raise ValueError(f"search must be 'ripple' or 'bisect', got {search!r}")
        lmax = self.kernel.lmax
        top = lmax - 1
        if top < lo:
            return None

        def ok(l):
            return self.error(l, theta_cut) <= bound

        found = self._bracket(ok, lo, top, None if search == "bisect" else hint)
        if found is None or search == "bisect":
            return found
        period = 2.0 * math.pi / max(theta_cut, 1e-12)
        step = max(1, int(period / 4))
        best = found
        probe = found - step
        while probe >= lo and probe >= found - period:
            if ok(probe):
                best = probe
            probe -= step
        if best < found:                      # refine the lowest valid probe downwards
            bad = max(lo - 1, best - step)
            good = best
            while good - bad > 1:
                mid = (good + bad) // 2
                if mid >= lo and ok(mid):
                    good = mid
                else:
                    bad = mid
            best = good
        return best

    @staticmethod
    def _bracket(ok, lo, top, hint):
        """A valid l_cut by bisection between the last invalid and the first valid one found
        (from ``hint`` by doubling steps if given); None if ``top`` is invalid."""
        if hint is not None and lo < hint < top:
            step = 8
            if ok(hint):
                good, bad = hint, None
                while bad is None:
                    cand = max(lo, good - step)
                    if ok(cand):
                        good = cand
                        if cand == lo:
                            return lo
                    else:
                        bad = cand
                    step *= 2
            else:
                bad, good = hint, None
                while good is None:
                    cand = min(top, bad + step)
                    if ok(cand):
                        good = cand
                    elif cand == top:
                        return None
                    else:
                        bad = cand
                    step *= 2
        else:
            if not ok(top):
                return None
            if ok(lo):
                return lo
            bad, good = lo, top
        while good - bad > 1:
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
        return good


def split_kernel(kernel, l_cut, theta_cut, *, input_cl=None, alpha=DEFAULT_ALPHA,
                 fit="sphgpu", rcond=None, l_fit=None, oversample=None) -> KernelSplit:
    """Split ``kernel`` into a harmonic part up to ``l_cut`` and a real-space part within
    ``theta_cut`` (radians) by the paper's weighted least squares; returns a
    :class:`KernelSplit` with both truncated kernels and the predicted error (paper Eq. 6).

    Parameters
    ----------
    kernel : RadialKernel or array of K_l
        The kernel to split.
    l_cut : int
        -1 <= l_cut <= lmax (-1: real space only; lmax: the harmonic part is the whole kernel).
    theta_cut : float
        Radians, 0 < theta_cut <= pi.
    input_cl : scalar or array (>= lmax+1,), optional
        C_l^input of the maps to be convolved (default 1, white noise, as the paper).
    alpha, fit, rcond, l_fit, oversample
        See :class:`SplitFitter` (``fit="paper"``: the paper's literal set-up; the default
        "sphgpu" also fits above lmax, see :data:`FIT_PRESETS`).

    Returns
    -------
    KernelSplit

    Raises
    ------
    TypeError
        If ``kernel`` is not a RadialKernel or an array of K_l.
    ValueError
        If ``l_cut`` or ``theta_cut`` is out of range, or ``theta_cut`` is below one knot
        spacing of the real-space basis (a split with no real-space part).
    """
    kernel = _check_kernel(kernel)
    l_cut = check_int("l_cut", l_cut, minimum=-1, maximum=kernel.lmax)
    theta_cut = _check_angle("theta_cut", theta_cut)
    fitter = SplitFitter(kernel, theta_cut, input_cl=input_cl, fit=fit, l_fit=l_fit,
                         oversample=oversample, rcond=rcond, alpha=alpha)
    if fitter.n_max == 0:
        raise ValueError(f"theta_cut = {theta_cut / ARCMIN:.4g} arcmin is below one knot "
                         f"spacing of the real-space basis ({fitter.h / ARCMIN:.4g} arcmin at "
                         f"lmax {kernel.lmax}); raise theta_cut or oversample")
    return fitter.split(l_cut, theta_cut)
