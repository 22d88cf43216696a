"""Estimators of w(theta): pure functions of PairCounts.

Counts are normalised by the number of pairs that could have been counted
(:meth:`PairCounts.normalized`: DD / (n (n-1) / 2), DR / (n_D n_R), RR / (n_R (n_R-1) / 2), or
the weighted equivalents; ``normalization="treecorr"`` divides auto counts by n**2 / 2 as
TreeCorr does), so catalogs of any sizes combine:

* natural (Peebles-Hauser):  w = DD / RR - 1
* Landy-Szalay:              w = (DD - 2 DR + RR) / RR, and for two data sets (a cross
  correlation, ``rd`` given) w = (D1D2 - D1R2 - R1D2 + R1R2) / R1R2. With several random
  catalogs DR and RR are *pooled*: their counts and their normalisations are summed, so each
  catalog weighs by its number of pairs.
* multi-random (the slides'): each catalog's normalised DR_i and RR_i are *averaged*,
  w = (DD - 2 <DR> + <RR>) / <RR>, every random catalog weighing the same. In raw counts, with
  n_R catalogs of the data's size n and unique-pair DD and RR, this is exactly
  ``1 + (n_R DD - (n-1)/n sum_i DR_i) / sum_i RR_i``: the slides' loop. (Their listing writes
  ``random_count * 2 * DD``; with the unique-pair DD and RR of their own computeDD/computeRR
  loops that gives w = 1 for unclustered data, where n_R DD gives 0.) For random catalogs of
  equal sizes it equals the pooled Landy-Szalay.

Every function also takes ``leave_one_out=True`` and then returns one w per jackknife region,
(n_regions, nbins), from the leave-one-out normalised counts. Bins where RR is 0 have no w: NaN,
with a RuntimeWarning that names them (TreeCorr returns its un-normalised numerator there,
DD - 2 DR + ..., in units of DD's pair count, which is not an estimate of w).
:func:`combine` evaluates any estimator on any selection of patch pairs (the covariances of
:mod:`sphgpu.tpacf.covariance`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .counts import PairCounts, check_normalization

__all__ = ["natural", "landy_szalay", "multi_random", "estimate", "combine", "ESTIMATORS",
           "check_estimator"]

ESTIMATORS = ("landy-szalay", "natural", "multi-random")
_ALIASES = {"ls": "landy-szalay", "landy_szalay": "landy-szalay", "peebles-hauser": "natural",
            "multi_random": "multi-random"}


def check_estimator(name):
    """The estimator's canonical name.

    Parameters
    ----------
    name : str
        One of :data:`ESTIMATORS` or an alias ("ls", "landy_szalay", "peebles-hauser",
        "multi_random"), any case.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        For an unknown name.
    """
    if not isinstance(name, str):
        raise TypeError(f"estimator must be a string, got {type(name).__name__}")
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {name!r}")
    return key


def counts_list(x, name, empty=False):
    """``x`` (a PairCounts or a list or tuple of them) as a list, or TypeError naming ``name``;
    an empty list passes only where ``empty``."""
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if (not xs and not empty) or not all(isinstance(c, PairCounts) for c in xs):
        raise TypeError(f"{name} must be a PairCounts or a non-empty list of them")
    return xs


def count_parts(pc, select, normalization):
    """(num, tot) of one PairCounts: num (m, nbins), tot (m,), for ``select`` None (the whole
    count, m = 1), "jackknife" (leave each region out, m = R) or an (m, R, R) array of weights
    of the patch pairs."""
    extra = normalization == "treecorr"
    w = pc.is_weighted
    if select is None:
        num = (pc.weights if w else pc.counts)[None, :].astype(np.float64)
        tot = (pc.weighted_total + (pc.weighted_self_total or 0.0) * extra if w
               else pc.total + pc.self_total * extra)
        return num, np.array([tot])
    if isinstance(select, str):                  # "jackknife": the touching sums, O(R)
        return pc.leave_one_out_sums(normalization=normalization)
    return pc.patch_sums(select, normalization=normalization)


def normed_counts(pcs, select, normalization, mean):
    """Normalised counts of a list of catalogs' counts: pooled (sums of counts over sums of
    totals) or, ``mean``, the average of each one's normalised counts. (m, nbins)."""
    parts = [count_parts(c, select, normalization) for c in pcs]
    with np.errstate(divide="ignore", invalid="ignore"):
        if mean:
            return np.mean([n / t[:, None] for n, t in parts], axis=0)
        return sum(n for n, _ in parts) / sum(t for _, t in parts)[:, None]


def combine(name, dd, dr, rr, *, rd=None, select=None, normalization="pairs"):
    """Any estimator on any selection of the counts' patch pairs.

    Parameters
    ----------
    name : str
        An estimator (:func:`check_estimator`).
    dd : PairCounts
        DD, or D1D2 of a cross-correlation.
    dr : PairCounts or list of PairCounts
        DR (D1R2) per random catalog; may be empty for "natural".
    rr : PairCounts or list of PairCounts
        RR (R1R2) per random catalog.
    rd : PairCounts or list of PairCounts, optional
        R1D2 of a cross-correlation (None: the auto form, RD = DR).
    select : None, "jackknife" or array_like, shape (m, R, R)
        None: the whole counts; "jackknife": each region left out; an array: weights of the
        pairs of regions (a, b) in each of m selections.
    normalization : {"pairs", "treecorr"}

    Returns
    -------
    ndarray, shape (nbins,) for ``select`` None, else (m, nbins)

    Raises
    ------
    TypeError, ValueError
        For counts that are not PairCounts, with other bins, or an unknown name.
    """
    name = check_estimator(name)
    normalization = check_normalization(normalization)
    dd_, rr_ = counts_list(dd, "dd"), counts_list(rr, "rr")
    dr_ = counts_list(dr, "dr", empty=name == "natural")
    rd_ = None if rd is None else counts_list(rd, "rd")
    for c in dd_ + dr_ + rr_ + (rd_ or []):
        if not c.bins.same_as(dd_[0].bins):
            raise ValueError("all counts must use the same bins")
    if name == "multi-random" and len(dr_) != len(rr_):
        raise ValueError(f"drs and rrs must have one entry per random catalog, got "
                         f"{len(dr_)} and {len(rr_)}")
    mean = name == "multi-random"
    d = normed_counts(dd_, select, normalization, False)
    r = normed_counts(rr_, select, normalization, mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "natural":
            w = d / r - 1.0
        else:
            x = normed_counts(dr_, select, normalization, mean)
            y = x if rd_ is None else normed_counts(rd_, select, normalization, mean)
            w = (d - x - y + r) / r
    if select is None:
        w = w[0]
        empty = r[0] == 0
        if empty.any():
            w[empty] = np.nan
            b = dd_[0].bins
            names = ", ".join(f"{k} [{b.edges[k]:g}, {b.edges[k + 1]:g}) {b.unit}"
                              for k in np.flatnonzero(empty))
            warnings.warn(f"no random pairs (RR = 0) in bin {names}: w is NaN there "
                          "(undefined); widen those bins or use more randoms",
                          RuntimeWarning, stacklevel=3)
    return w


def natural(dd, rr, *, leave_one_out=False, normalization="pairs"):
    """w = DD / RR - 1 on normalised counts (several RR are pooled).

    Parameters
    ----------
    dd : PairCounts
    rr : PairCounts or list of PairCounts
    leave_one_out : bool
        One w per jackknife region left out.
    normalization : {"pairs", "treecorr"}

    Returns
    -------
    ndarray, shape (nbins,), or (n_regions, nbins) with ``leave_one_out``

    Raises
    ------
    TypeError
        If the counts are not PairCounts.
    """
    return combine("natural", dd, [], rr, select="jackknife" if leave_one_out else None,
                   normalization=normalization)


def landy_szalay(dd, dr, rr, *, rd=None, leave_one_out=False, normalization="pairs"):
    """w = (DD - 2 DR + RR) / RR, or (DD - DR - RD + RR) / RR when ``rd`` is given, with
    several DR / RD / RR pooled.

    Parameters
    ----------
    dd : PairCounts
    dr : PairCounts or list of PairCounts
    rr : PairCounts or list of PairCounts
    rd : PairCounts or list of PairCounts, optional
    leave_one_out : bool
        One w per jackknife region left out.
    normalization : {"pairs", "treecorr"}

    Returns
    -------
    ndarray, shape (nbins,), or (n_regions, nbins) with ``leave_one_out``

    Raises
    ------
    TypeError
        If the counts are not PairCounts.
    """
    return combine("landy-szalay", dd, dr, rr, rd=rd,
                   select="jackknife" if leave_one_out else None, normalization=normalization)


def multi_random(dd, drs, rrs, *, leave_one_out=False, normalization="pairs"):
    """The slides' several-random-catalog estimator: (DD - 2 <DR> + <RR>) / <RR> with <.> the
    mean over random catalogs of the normalised counts (see the module docstring).

    Parameters
    ----------
    dd : PairCounts
    drs, rrs : list of PairCounts
        One per random catalog.
    leave_one_out : bool
        One w per jackknife region left out.
    normalization : {"pairs", "treecorr"}

    Returns
    -------
    ndarray, shape (nbins,), or (n_regions, nbins) with ``leave_one_out``

    Raises
    ------
    ValueError
        If ``drs`` and ``rrs`` differ in length.
    """
    return combine("multi-random", dd, drs, rrs, select="jackknife" if leave_one_out else None,
                   normalization=normalization)


def estimate(name, dd, dr, rr, *, leave_one_out=False, normalization="pairs"):
    """Dispatch by estimator name (see :data:`ESTIMATORS`).

    Parameters
    ----------
    name : str
    dd : PairCounts
    dr, rr : list of PairCounts
    leave_one_out : bool
    normalization : {"pairs", "treecorr"}

    Returns
    -------
    ndarray, shape (nbins,), or (n_regions, nbins) with ``leave_one_out``

    Raises
    ------
    ValueError
        For an unknown estimator.
    """
    return combine(name, dd, dr, rr, select="jackknife" if leave_one_out else None,
                   normalization=normalization)
