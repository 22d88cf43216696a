"""Estimators of w(theta): pure functions of PairCounts.

Counts are normalised by the number of pairs that could have been counted
(:meth:`PairCounts.normalized`: DD / (n (n-1) / 2), DR / (n_D n_R), RR / (n_R (n_R-1) / 2), or
the weighted equivalents), so catalogs of any sizes combine:

* natural (Peebles-Hauser):  w = DD / RR - 1
* Landy-Szalay:              w = (DD - 2 DR + RR) / RR        (or DD - DR - RD + RR for two
  data sets). With several random catalogs DR and RR are *pooled*: their counts and their
  normalisations are summed, so each catalog weighs by its number of pairs.
* multi-random (the slides'): each catalog's normalised DR_i and RR_i are *averaged*,
  w = (DD - 2 <DR> + <RR>) / <RR>, every random catalog weighing the same. In raw counts, with
  n_R catalogs of the data's size n and unique-pair DD and RR, this is exactly
  ``1 + (n_R DD - (n-1)/n sum_i DR_i) / sum_i RR_i``: the slides' loop. (Their listing writes
  ``random_count * 2 * DD``; with the unique-pair DD and RR of their own computeDD/computeRR
  loops that gives w = 1 for unclustered data, where n_R DD gives 0.) For random catalogs of
  equal sizes it equals the pooled Landy-Szalay.

Every function also takes ``leave_one_out=True`` and then returns one w per jackknife region,
(n_regions, nbins), from the leave-one-out normalised counts. Bins where RR is 0 give NaN.
"""

from __future__ import annotations

import numpy as np

from .counts import PairCounts

__all__ = ["natural", "landy_szalay", "multi_random", "estimate", "ESTIMATORS",
           "check_estimator"]

ESTIMATORS = ("landy-szalay", "natural", "multi-random")
_ALIASES = {"ls": "landy-szalay", "landy_szalay": "landy-szalay", "peebles-hauser": "natural",
            "multi_random": "multi-random"}


def check_estimator(name):
    if not isinstance(name, str):
        raise TypeError(f"estimator must be a string, got {type(name).__name__}")
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {name!r}")
    return key


def _list(x, name):
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if not xs or not all(isinstance(c, PairCounts) for c in xs):
        raise TypeError(f"{name} must be a PairCounts or a non-empty list of them")
    return xs


def _norm(pc, loo):
    return pc.leave_one_out_normalized() if loo else pc.normalized()


def _pooled(xs, loo):
    return _norm(sum(xs[1:], xs[0]), loo)


def _check_bins(*groups):
    first = groups[0][0]
    for g in groups:
        for c in g:
            if not c.bins.same_as(first.bins):
                raise ValueError("all counts must use the same bins")


def natural(dd, rr, *, leave_one_out=False):
    """w = DD / RR - 1 on normalised counts (several RR are pooled)."""
    dd_, rr_ = _list(dd, "dd"), _list(rr, "rr")
    _check_bins(dd_, rr_)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _norm(dd_[0], leave_one_out) / _pooled(rr_, leave_one_out) - 1.0


def landy_szalay(dd, dr, rr, *, rd=None, leave_one_out=False):
    """w = (DD - 2 DR + RR) / RR (or (DD - DR - RD + RR) / RR when ``rd`` is given), with
    several DR / RD / RR pooled."""
    dd_, dr_, rr_ = _list(dd, "dd"), _list(dr, "dr"), _list(rr, "rr")
    _check_bins(dd_, dr_, rr_)
    d, r = _norm(dd_[0], leave_one_out), _pooled(rr_, leave_one_out)
    x = _pooled(dr_, leave_one_out)
    y = x if rd is None else _pooled(_list(rd, "rd"), leave_one_out)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (d - x - y + r) / r


def multi_random(dd, drs, rrs, *, leave_one_out=False):
    """The slides' several-random-catalog estimator: (DD - 2 <DR> + <RR>) / <RR> with <.> the
    mean over random catalogs of the normalised counts (see the module docstring)."""
    dd_, dr_, rr_ = _list(dd, "dd"), _list(drs, "drs"), _list(rrs, "rrs")
    if len(dr_) != len(rr_):
        raise ValueError(f"drs and rrs must have one entry per random catalog, got "
                         f"{len(dr_)} and {len(rr_)}")
    _check_bins(dd_, dr_, rr_)
    d = _norm(dd_[0], leave_one_out)
    x = np.mean([_norm(c, leave_one_out) for c in dr_], axis=0)
    r = np.mean([_norm(c, leave_one_out) for c in rr_], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (d - 2.0 * x + r) / r


def estimate(name, dd, dr, rr, *, leave_one_out=False):
    """Dispatch by estimator name (see :data:`ESTIMATORS`)."""
    name = check_estimator(name)
    if name == "natural":
        return natural(dd, rr, leave_one_out=leave_one_out)
    if name == "landy-szalay":
        return landy_szalay(dd, dr, rr, leave_one_out=leave_one_out)
    return multi_random(dd, dr, rr, leave_one_out=leave_one_out)
