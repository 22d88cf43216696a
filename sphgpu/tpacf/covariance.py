"""Covariances of w(theta) from one counting pass: jackknife, sample, bootstraps, shot noise.

Every patch-based estimate recomputes w on selections of the pairs of regions (patches),
weighted sums of the per-patch-pair counts of :class:`PairCounts` (``patch_counts[a, b]``), with
TreeCorr's definitions (its ``var_method`` and ``estimate_multi_cov``, default
``cross_patch_weight="simple"``); over the N regions that hold points, with v_k the w (of all
the results, concatenated, for a joint covariance) of selection k:

* ``"jackknife"``: selection k drops every pair touching region k;
  C = (N - 1) / N sum_k (v_k - <v>)(v_k - <v>)^T.
* ``"sample"``: selection k keeps the pairs whose first point is in region k (an auto count
  keeps each pair of regions {a, b} once, as (min, max));
  C = 1 / (N - 1) sum_k f_k (v_k - <v>)(v_k - <v>)^T, f_k the share of selection k in the sum
  over selections of RR scaled to DD's number of pairs.
* ``"bootstrap"``: B draws of N regions with replacement (multiplicities m_a); the pairs within
  region a count m_a times, those of regions a != b count m_a m_b times;
  C = 1 / (B - 1) sum_b (v_b - <v>)(v_b - <v>)^T.
* ``"marked_bootstrap"``: the same draws; the pairs whose first point is in region a count
  m_a times.
* ``"shot"``: diagonal, TreeCorr's shot-noise variance of each result: (1 + sum_X f_X
  <w>_X / <w>_DD)**2 <w>_DD / RR', with X over the random terms of the estimator, f_X = DD's
  number of pairs over X's, <w>_X the mean pair weight, RR' = RR f_RR.

Draws: ``numpy.random.default_rng(seed)``, one ``choice(N, N, replace=True)`` per draw, shared by
all the results of a joint covariance (so a seed gives the same draws as TreeCorr given
``rng=numpy.random.default_rng(seed)``).
"""

from __future__ import annotations

import numpy as np

from .estimators import _list, _normed, _parts, combine
from .jackknife import jackknife_covariance

__all__ = ["VAR_METHODS", "NUM_BOOTSTRAP", "covariance", "bootstrap_draws", "check_var_method"]

VAR_METHODS = ("jackknife", "sample", "bootstrap", "marked_bootstrap", "shot")
#: Draws of a bootstrap (TreeCorr's default num_bootstrap).
NUM_BOOTSTRAP = 500
_BATCH = 64                         # bootstrap selections evaluated at once (R*R each)


def check_var_method(var_method):
    """The method name, checked against :data:`VAR_METHODS` (ValueError otherwise)."""
    if var_method not in VAR_METHODS:
        raise ValueError(f"var_method must be one of {VAR_METHODS}, got {var_method!r}")
    return var_method


def bootstrap_draws(n_regions, num_bootstrap=NUM_BOOTSTRAP, seed=None):
    """Regions drawn with replacement for each bootstrap realisation.

    Parameters
    ----------
    n_regions : int
        N, the number of regions to draw from (>= 2).
    num_bootstrap : int
        B, the number of realisations (>= 2).
    seed : int, numpy.random.Generator or None
        Seed of ``numpy.random.default_rng``: the same seed gives the same draws.

    Returns
    -------
    ndarray, shape (B, N), int64

    Raises
    ------
    ValueError
        With fewer than 2 regions or draws.
    """
    if n_regions < 2:
        raise ValueError(f"a bootstrap needs at least 2 regions holding points (jackknife=), "
                         f"got {n_regions}")
    if isinstance(num_bootstrap, bool) or not isinstance(num_bootstrap, (int, np.integer)) \
            or num_bootstrap < 2:
        raise ValueError(f"num_bootstrap must be an integer >= 2, got {num_bootstrap!r}")
    rng = np.random.default_rng(seed)
    return np.array([rng.choice(np.arange(n_regions), size=n_regions, replace=True)
                     for _ in range(int(num_bootstrap))], dtype=np.int64)


def _rows(method, present, r, draws=None):
    """Weights (m, R, R) of the pairs of regions in each selection (not for the jackknife)."""
    if method == "sample":
        rows = np.zeros((present.size, r, r))
        rows[np.arange(present.size), present, :] = 1.0
        return rows
    mult = np.zeros((draws.shape[0], r))
    for b, d in enumerate(draws):
        np.add.at(mult[b], present[d], 1.0)
    if method == "marked_bootstrap":
        return np.repeat(mult[:, :, None], r, axis=2)
    rows = mult[:, :, None] * mult[:, None, :]
    idx = np.arange(r)
    rows[:, idx, idx] = mult
    return rows


def _terms(res):
    rd = res.rd if res.rd else None
    return res.estimator, res.dd, res.dr, res.rr, rd, res.normalization


def _design(res, select):
    """w of each selection, (m, nbins), and TreeCorr's weight of each selection (RR scaled to
    DD's number of pairs, summed over bins), (m,)."""
    name, dd, dr, rr, rd, norm = _terms(res)
    v = combine(name, dd, dr, rr, rd=rd, select=select, normalization=norm)
    d_tot = _parts(dd, select, norm)[1]
    r = _normed(_list(rr, "rr"), select, norm, name == "multi-random") * d_tot[:, None]
    # as TreeCorr: a bin without random pairs weighs 1
    return v, np.where((r == 0) | ~np.isfinite(r), 1.0, r).sum(axis=1)


def _shot(res):
    """TreeCorr's shot-noise variance of w, (nbins,)."""
    name, dd, dr, rr, rd, norm = _terms(res)

    def pooled(pcs):
        pcs = _list(pcs, "counts")
        num = sum(_parts(c, None, norm)[0][0] for c in pcs)
        tot = sum(_parts(c, None, norm)[1][0] for c in pcs)
        npairs = sum(c.counts for c in pcs).astype(np.float64)
        mean_np = npairs.mean()
        return num, tot, (1.0 if mean_np == 0 else num.mean() / mean_np)

    d_num, d_tot, d_w = pooled(dd)
    r_num, r_tot, r_w = pooled(rr)
    factor = 1.0 + (d_tot / r_tot) * r_w / d_w
    if name != "natural":
        x_num, x_tot, x_w = pooled(dr)
        if rd is None:
            factor += 2.0 * (d_tot / x_tot) * x_w / d_w
        else:
            y_num, y_tot, y_w = pooled(rd)
            factor += (d_tot / x_tot) * x_w / d_w + (d_tot / y_tot) * y_w / d_w
    den = r_num * (d_tot / r_tot)
    out = np.zeros_like(den)
    ok = den != 0
    out[ok] = d_w * factor ** 2 / den[ok]
    return out


def _check_same_regions(results):
    r = results[0].dd.n_regions
    for res in results[1:]:
        if res.dd.n_regions != r or not np.array_equal(res.present, results[0].present):
            raise ValueError("results must be counted with the same jackknife regions "
                             f"(one set of patches for every catalog), got {r} and "
                             f"{res.dd.n_regions} regions")
    if r == 0:
        raise ValueError("this var_method needs jackknife regions: pass jackknife= (an int, "
                         "a JackknifeRegions or 'labels') to angular_correlation")
    return r


def covariance(results, var_method, *, seed=None, num_bootstrap=NUM_BOOTSTRAP):
    """The covariance of the concatenated w of ``results`` (the core of
    :func:`sphgpu.tpacf.joint_covariance`), and the w of each selection.

    Parameters
    ----------
    results : list of CorrelationResult
    var_method : str
        One of :data:`VAR_METHODS`.
    seed : int, numpy Generator or None
    num_bootstrap : int

    Returns
    -------
    cov : ndarray, shape (n, n), n the total number of bins
    rows : ndarray, shape (m, n), or None for "shot"

    Raises
    ------
    ValueError
        As :func:`sphgpu.tpacf.joint_covariance`.
    """
    check_var_method(var_method)
    with np.errstate(invalid="ignore"):        # bins without random pairs stay NaN, quietly
        return _covariance(results, var_method, seed, num_bootstrap)


def _covariance(results, var_method, seed, num_bootstrap):
    if var_method == "shot":
        return np.diag(np.concatenate([_shot(r) for r in results])), None
    r = _check_same_regions(results)
    present = np.flatnonzero(results[0].present)
    n = present.size
    if var_method == "jackknife":
        if n < 2:
            raise ValueError(f"a jackknife needs at least 2 regions holding points, got {n}")
        v = np.hstack([_design(res, "jackknife")[0][present] for res in results])
        return jackknife_covariance(v)[1], v
    if var_method == "sample":
        if n < 2:
            raise ValueError(f"sample variance needs at least 2 regions holding points, got {n}")
        rows = _rows("sample", present, r)
        parts = [_design(res, rows) for res in results]
        v = np.hstack([p[0] for p in parts])
        f = sum(p[1] for p in parts)
        if np.any(f == 0):
            raise ValueError("sample variance needs pairs of random points in every region")
        f = f / f.sum()
        d = v - v.mean(axis=0)
        return (f * d.T) @ d / (n - 1), v
    draws = bootstrap_draws(n, num_bootstrap, seed)
    blocks = []
    for a in range(0, draws.shape[0], _BATCH):
        rows = _rows(var_method, present, r, draws[a:a + _BATCH])
        blocks.append(np.hstack([_design(res, rows)[0] for res in results]))
    v = np.vstack(blocks)
    d = v - v.mean(axis=0)
    return (d.T @ d) / (v.shape[0] - 1), v
