"""Approximate pair counts with a stated error bound: ``bin_slop`` (as TreeCorr's).

Definition. Let u(theta) = ln(theta) for log-spaced bins and u(theta) = theta otherwise (linear
or explicit edges), and Delta the bin width in u: ln(theta_max / theta_min) / nbins for log
bins, (theta_max - theta_min) / nbins for linear ones, the narrowest bin for explicit edges.
With ``bin_slop = s`` the count in bin k holds every pair whose separation lies in the bin,
except that a pair whose u lies within s * Delta of one of the bin's two edges, on either side,
may be counted in the bin or not. Hence, with N_in(k) the pairs inside bin k within s * Delta
of its edges and N_out(k) those outside it within s * Delta of its edges,

    exact(k) - N_in(k)  <=  approximate(k)  <=  exact(k) + N_out(k),

and with s <= 1 a pair can only move to a neighbouring bin (weighted sums: the same with each
pair's weight). s = 0 (or None) is the exact count.

How. Each bin range is counted on its own grid (:mod:`sphgpu.tpacf.grid`) whose cells (chunks:
at most :data:`CELL_POINTS` consecutive sorted points in one declination band and one RA cell)
are small against the bin widths there: bins are grouped from the top by factors of
:data:`GROUP_FACTOR` in theta, and a group's band height is
:data:`CELL_FRACTION` * (1/2 + s) * (bin width in theta at the group's lowest edge). No slop is
taken across a group's outer edges (L and U below are the edges themselves there), since two
groups decide on different cells and a pair near their common edge could be counted by both.
A group whose cells would hold fewer than :data:`MIN_CELL_POINTS` points on average (from the
catalogs' density) is counted exactly. A cell has a centre c (the mean of its float64 unit
vectors) and a radius rho >= max |x - c| over its points (Euclidean, padded against
rounding). By the triangle inequality in R^3, every pair of
two cells has a chord within [D - rho_a - rho_b, D + rho_a + rho_b], D = |c_a - c_b|. For a
work item (chunk a, range of the second catalog) and each cell b the range passes through, the
backends decide:

* k = bin of D (the exact rule on D**2); if that range of chords lies within
  [chord(L_k), chord(U_k)], u(L_k) = u(edge_k) - s Delta, u(U_k) = u(edge_{k+1}) + s Delta,
  the pairs of chunk a with the points of the range in cell b (weights: W_a times their
  weight sum) are added to bin k at once;
* if the range lies wholly below the first edge or wholly at or above the last one, nothing
  is counted (exact: none of those pairs is in a bin);
* otherwise the same decision is taken for chunk a and each point j of the part (a cell of
  radius 0): its n_a pairs with j counted at once in a bin, skipped, or, only if that is
  undecided too (and always for an auto count's pairs inside one chunk), counted exactly.

The decision uses only IEEE additions, multiplications and comparisons of float64 values
(``mul``/``add`` as :mod:`sphgpu.tpacf.sky` gives them: no FMA contraction). The "cpu" backend
counts this way; "cuda" counts exactly whatever the slop (an approximate GPU kernel was slower
than the exact one: :func:`sphgpu.tpacf.pair_counts`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._device import array_module, to_host
from .bins import AngularBins, chord2
from .grid import band_height

__all__ = ["check_bin_slop", "bin_width", "slop_edges", "groups", "density", "SlopPlan",
           "geometry_math",
           "decision_math", "EXACT", "SKIP", "CELL_POINTS"]

#: Bins are grouped so that theta_max / theta_min of a group is at most this: a group's cells
#: are sized for its lowest edge (too fine at its top), and no slop crosses a group's outer
#: edges (too few slop edges in narrow groups).
GROUP_FACTOR = 4.0
#: Cell (band) height over (1/2 + s) * the bin width in theta at a group's lowest edge.
#: GROUP_FACTOR and CELL_FRACTION: the fastest of {2, 3, 4} x {0.35, 0.7} on the cpu backend
#: (6e4 uniform points, 20 log bins 2.5'-250', s = 0.1, 0.5, 1; benchmarks/tpacf_bin_slop.py).
CELL_FRACTION = 0.7
#: Fewest points a cell should hold on average (from the catalogs' density) for a group of
#: bins to be counted with slop; sparser groups are counted exactly (cells of a point or less
#: save nothing and multiply the grid's work items: 2e4 full-sky points ran 6-13 times slower
#: than exact without this floor, tpacf_bin_slop.py --quick --backend cpu).
MIN_CELL_POINTS = 2.0
#: Points of a cell (chunk) at most, on every backend (the same cells give the same decisions).
CELL_POINTS = 256
#: Padding of a cell radius (relative, absolute chord units): far above the rounding of the
#: float64 distances involved (a few 1e-16 for chords <= 2), so decisions are conservative.
RHO_REL, RHO_ABS = 1e-12, 1e-14
#: Decision codes besides a bin index.
EXACT, SKIP = -1, -2


def check_bin_slop(bin_slop):
    """``bin_slop`` checked: a finite number >= 0 (float), or None for exact counts.

    Parameters
    ----------
    bin_slop : float or None

    Returns
    -------
    float or None
        None when the count is exact (None or 0).

    Raises
    ------
    TypeError
        If it is not a real number.
    ValueError
        If it is negative, NaN or infinite.
    """
    if bin_slop is None:
        return None
    if isinstance(bin_slop, (bool, np.bool_)) or not isinstance(bin_slop, numbers.Real):
        raise TypeError(f"bin_slop must be a number >= 0 or None, got {bin_slop!r}")
    s = float(bin_slop)
    if not math.isfinite(s) or s < 0:
        raise ValueError(f"bin_slop must be a finite number >= 0, got {bin_slop!r}")
    return s if s > 0 else None


def bin_width(bins: AngularBins):
    """(log, Delta): whether u is ln(theta), and the bin width in u (radians for linear u)."""
    e = bins.edges_rad
    if bins.spacing == "log":
        return True, math.log(e[-1] / e[0]) / bins.nbins
    if bins.spacing == "linear":
        return False, (e[-1] - e[0]) / bins.nbins
    return False, float(np.min(np.diff(e)))


def slop_edges(bins: AngularBins, s: float):
    """Angles L_k, U_k (nbins,) float64 radians within which a pair counted in bin k lies."""
    log, delta = bin_width(bins)
    e = bins.edges_rad
    if log:
        return e[:-1] * math.exp(-s * delta), e[1:] * math.exp(s * delta)
    return e[:-1] - s * delta, e[1:] + s * delta


def _chord_limits(lo_rad, hi_rad):
    """Chords of the slop edges, moved inward by a relative 1e-12 (conservative); -inf where
    the lower angle is <= 0 (no lower limit) and +inf where the upper one reaches 180 deg."""
    lo = np.where(lo_rad > 0, np.sqrt(chord2(np.maximum(lo_rad, 0.0))) * (1 + 1e-12), -np.inf)
    hi = np.where(hi_rad < math.pi, np.sqrt(chord2(np.minimum(hi_rad, math.pi))) * (1 - 1e-12),
                  np.inf)
    return lo, hi


@dataclass
class SlopPlan:
    """What a backend needs to count one group of bins approximately.

    ``h``: band height (radians) of the group's grid; ``lo``, ``hi`` (nbins,) float64: chords
    of the slop edges L_k, U_k of the group's bins; ``cmin``, ``cmax``: chords of the group's
    first and last edges (cmax +inf at 180 degrees)."""

    h: float
    lo: np.ndarray
    hi: np.ndarray
    cmin: float
    cmax: float


def density(cat) -> float:
    """Points per steradian of the sky a catalog occupies (its 1 x 1 degree RA/Dec cells
    holding points), where the catalog is held (NumPy or CuPy)."""
    xp = array_module() if cat.on_device else np
    ra, dec = cat.coordinates(xp)
    row = xp.clip(xp.floor(dec + 90.0), 0, 179).astype(np.int64)
    col = xp.clip(xp.floor(xp.mod(ra, 360.0)), 0, 359).astype(np.int64)
    occupied = to_host(xp.bincount(row * 360 + col, minlength=180 * 360)).reshape(180, 360) > 0
    lat = np.deg2rad(np.arange(181) - 90.0)
    row_area = np.deg2rad(1.0) * np.diff(np.sin(lat))
    return cat.size / max(float(np.sum(occupied * row_area[:, None])), 1e-300)


def groups(bins: AngularBins, s: float, min_band: float, density: float = math.inf):
    """The bins in groups counted on one grid each: a list of (a, b, SlopPlan or None) for
    bins a .. b - 1, from the bottom; None: count the group exactly (its cells would hold
    fewer than :data:`MIN_CELL_POINTS` at ``density`` points per steradian, or be finer
    than ``min_band`` radians)."""
    floor = max(min_band, math.sqrt(MIN_CELL_POINTS / density) if density > 0 else math.inf)
    e = bins.edges_rad
    log, delta = bin_width(bins)
    L, U = slop_edges(bins, s)
    out = []
    b = bins.nbins
    while b > 0:
        a = b - 1
        while a > 0 and e[b] <= GROUP_FACTOR * e[a - 1]:
            a -= 1
        width = e[a] * (math.exp(delta) - 1.0) if log else delta
        h = min(CELL_FRACTION * (0.5 + s) * width, band_height(e[b]))
        if h < floor:
            out.append((a, b, None))
            b = a
            continue
        nbands = max(1, math.ceil(math.pi / h))
        # no slop across a group's outer edges: a pair near one would be counted by both
        # groups' grids (each decides on its own cells), one-sidedly raising both bins
        lo_rad, hi_rad = L[a:b].copy(), U[a:b].copy()
        lo_rad[0], hi_rad[-1] = e[a], e[b]
        lo, hi = _chord_limits(lo_rad, hi_rad)
        c2 = bins.chord2_edges
        out.append((a, b, SlopPlan(h=math.pi / nbands, lo=lo, hi=hi,
                                   cmin=float(math.sqrt(c2[a])), cmax=float(math.sqrt(c2[b])))))
        b = a
    return out[::-1]


def geometry_math(jit, mul, add):
    """``cell(c, xyz, c_start, w, cen, rad, wcum)``: the centre cen[:, c] (mean of the float64
    unit vectors xyz[:, c_start[c]:c_start[c+1]]) and padded radius rad[c] of chunk c, and
    (w of length > 0) wcum[p], the sum of w over the chunk's points up to p inclusive; compiled
    by ``jit`` with the given float64 ``mul`` and ``add`` (no FMA contraction)."""

    @jit
    def cell(c, xyz, c_start, w, cen, rad, wcum):
        a = c_start[c]
        b = c_start[c + 1]
        if w.shape[0] > 0:
            acc = 0.0
            for p in range(a, b):
                acc = add(acc, w[p])
                wcum[p] = acc
        sx = 0.0
        sy = 0.0
        sz = 0.0
        for p in range(a, b):
            sx = add(sx, xyz[0, p])
            sy = add(sy, xyz[1, p])
            sz = add(sz, xyz[2, p])
        m = float(b - a)
        cx = sx / m
        cy = sy / m
        cz = sz / m
        r2 = 0.0
        for p in range(a, b):
            dx = xyz[0, p] - cx
            dy = xyz[1, p] - cy
            dz = xyz[2, p] - cz
            d = add(add(mul(dx, dx), mul(dy, dy)), mul(dz, dz))
            if d > r2:
                r2 = d
        cen[0, c] = cx
        cen[1, c] = cy
        cen[2, c] = cz
        rad[c] = add(mul(math.sqrt(r2), 1.0 + RHO_REL), RHO_ABS)

    return cell


def decision_math(jit, mul, add):
    """``decide(ax, ay, az, ra, bx, by, bz, rb, E, P, nb, lo, hi, cmin, cmax) -> int``: bin k
    (>= 0) to count a cell pair in at once, :data:`EXACT` or :data:`SKIP` (module docstring).
    Cells: centres (ax, ay, az), (bx, by, bz) and radii ra, rb; E (P,) the chord**2 edges
    padded with +inf; nb bins; lo, hi (nb,) chord limits; cmin, cmax the outer edge chords."""

    @jit
    def decide(ax, ay, az, ra, bx, by, bz, rb, E, P, nb, lo, hi, cmin, cmax):
        dx = ax - bx
        dy = ay - by
        dz = az - bz
        d2 = add(add(mul(dx, dx), mul(dy, dy)), mul(dz, dz))
        rho = add(ra, rb)
        pos = 0                              # #{E <= d2}: the exact rule's bin search
        step = P >> 1
        while step > 0:
            if E[pos + step - 1] <= d2:
                pos += step
            step >>= 1
        k = pos - 1
        if k < 0:                            # centre below the bins: all pairs below?
            t = add(cmin, -rho)
            if t > 0.0 and d2 < mul(t, t):
                return SKIP
            return EXACT
        if k >= nb:                          # centre above: all pairs at or above the top?
            t = add(cmax, rho)
            if d2 >= mul(t, t):
                return SKIP
            return EXACT
        t = add(lo[k], rho)
        if t > 0.0 and d2 < mul(t, t):
            return EXACT
        t = add(hi[k], -rho)
        if t <= 0.0 or d2 > mul(t, t):
            return EXACT
        return k

    return decide
