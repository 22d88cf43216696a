"""Covariances of w(theta) from one counting pass: jackknife, sample, bootstraps, shot noise.

Every patch-based estimate recomputes w on selections of the pairs of regions (patches),
weighted sums of the per-patch-pair counts of :class:`PairCounts` (``patch_counts[a, b]``), with
TreeCorr's definitions (its ``var_method``, ``estimate_multi_cov`` and ``cross_patch_weight``);
over the N regions that hold points, with v_k the w (of all the results, concatenated, for a
joint covariance) of selection k. With ``cross_patch_weight="simple"`` (the default, as in
TreeCorr 5.1):

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

``cross_patch_weight`` (Mohammad & Percival 2022, TreeCorr's meanings) weighs the pairs that
cross between a selected and a deselected patch: "simple" 0 (and m_a m_b in a bootstrap);
"mean" 1/2 in a jackknife or a sample selection, (m_a + m_b) / 2 in a bootstrap, m_a / 2 (the
drawn first patch's multiplicity) in a marked bootstrap; "match" (jackknife only)
1 - N / (2 + sqrt(2) (N - 1)); "geom" (bootstrap only) sqrt(m_a m_b). Other combinations are a
ValueError, as in TreeCorr.

Draws: ``numpy.random.default_rng(seed)``, one ``choice(N, N, replace=True)`` per draw, shared by
all the results of a joint covariance (so a seed gives the same draws as TreeCorr given
``rng=numpy.random.default_rng(seed)``).

A selection that leaves a data set without pairs to count (no points of it in the selected
patches) has no w: it counts as w = 0 in every bin, TreeCorr's fallback for a selection without
pairs, with a RuntimeWarning that names the method and how many selections were empty. (TreeCorr
5.1 returns NaN for the whole covariance there, 0/0 in its random-pair factors.) A bin in which
some selection holds no random pairs has an undefined variance: its row and column of the
covariance are NaN, with a RuntimeWarning naming the bins.
"""

from __future__ import annotations

import warnings

import numpy as np

from .estimators import combine, count_parts, counts_list, normed_counts
from .jackknife import jackknife_covariance

__all__ = ["VAR_METHODS", "NUM_BOOTSTRAP", "CROSS_PATCH_WEIGHTS", "covariance", "bootstrap_draws",
           "check_var_method", "check_cross_patch_weight"]

VAR_METHODS = ("jackknife", "sample", "bootstrap", "marked_bootstrap", "shot")
#: The cross_patch_weight values each patch method accepts (TreeCorr 5.1's).
CROSS_PATCH_WEIGHTS = {"jackknife": ("simple", "mean", "match"), "sample": ("simple", "mean"),
                       "bootstrap": ("simple", "mean", "geom"),
                       "marked_bootstrap": ("simple", "mean"), "shot": ("simple",)}
#: Draws of a bootstrap (TreeCorr's default num_bootstrap).
NUM_BOOTSTRAP = 500
_BATCH = 64                         # bootstrap selections evaluated at once (R*R each)


def check_var_method(var_method):
    """The method name, checked against :data:`VAR_METHODS` (ValueError otherwise)."""
    if var_method not in VAR_METHODS:
        raise ValueError(f"var_method must be one of {VAR_METHODS}, got {var_method!r}")
    return var_method


def check_cross_patch_weight(cross_patch_weight, var_method):
    """``cross_patch_weight`` checked for ``var_method`` (None: "simple", TreeCorr's default).

    Parameters
    ----------
    cross_patch_weight : {None, "simple", "mean", "match", "geom"}
    var_method : str
        One of :data:`VAR_METHODS` ("shot" ignores the weight and takes any valid name).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For an unknown name, or one the method does not define (see
        :data:`CROSS_PATCH_WEIGHTS`).
    """
    if cross_patch_weight is None:
        return "simple"
    known = ("simple", "mean", "match", "geom")
    if cross_patch_weight not in known:
        raise ValueError(f"cross_patch_weight must be one of {known}, got "
                         f"{cross_patch_weight!r}")
    if var_method != "shot" and cross_patch_weight not in CROSS_PATCH_WEIGHTS[var_method]:
        raise ValueError(f"cross_patch_weight={cross_patch_weight!r} is not defined for "
                         f"var_method={var_method!r}; use one of "
                         f"{CROSS_PATCH_WEIGHTS[var_method]}")
    return cross_patch_weight


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


def _rows(method, present, r, draws=None, cpw="simple", ks=None):
    """Weights (m, R, R) of the pairs of regions (a, b) in each selection: the jackknife and
    sample selections of the present regions ``ks`` (default: all), or the bootstrap
    ``draws``."""
    idx = np.arange(r)
    if method in ("jackknife", "sample"):
        ks = present if ks is None else ks
        m = np.arange(ks.size)
        if method == "jackknife":
            cross = 0.0 if cpw == "simple" else (
                0.5 if cpw == "mean" else 1.0 - present.size / (2 + 2 ** 0.5 * (present.size - 1)))
            rows = np.ones((ks.size, r, r))
            rows[m, ks, :] = cross
            rows[m, :, ks] = cross
            rows[m, ks, ks] = 0.0
            return rows
        rows = np.zeros((ks.size, r, r))
        if cpw == "simple":                    # the pairs whose first point is in region k
            rows[m, ks, :] = 1.0
        else:                                  # half of each pair touching k, all of (k, k)
            rows[m, ks, :] = 0.5
            rows[m, :, ks] = 0.5
            rows[m, ks, ks] = 1.0
        return rows
    mult = np.zeros((draws.shape[0], r))
    for b, d in enumerate(draws):
        np.add.at(mult[b], present[d], 1.0)
    if method == "marked_bootstrap":
        if cpw == "simple":
            return np.repeat(mult[:, :, None], r, axis=2)
        rows = np.repeat(mult[:, :, None] / 2.0, r, axis=2)
        rows[:, idx, idx] = mult
        return rows
    if cpw == "simple":
        rows = mult[:, :, None] * mult[:, None, :]
    elif cpw == "mean":
        rows = (mult[:, :, None] + mult[:, None, :]) / 2.0
    else:
        rows = np.sqrt(mult[:, :, None] * mult[:, None, :])
    rows[:, idx, idx] = mult
    return rows


def _marked_upper(rows):
    """A marked bootstrap's "mean" rows for counts that hold only the upper triangle of their
    patch pairs: TreeCorr gives the pair of regions {a < b} half of each drawn end, m_a / 2 +
    m_b / 2, when no lower-triangle entry (even an empty one) exists to take m_b / 2."""
    out = rows.copy()
    iu = np.triu_indices(rows.shape[1], 1)
    out[:, iu[0], iu[1]] += np.swapaxes(rows, 1, 2)[:, iu[0], iu[1]]
    return out


def _terms(res):
    rd = res.rd if res.rd else None
    return res.estimator, res.dd, res.dr, res.rr, rd, res.normalization


def _design(res, select, marked_mean=False):
    """w of each selection, (m, nbins), TreeCorr's weight of each selection (RR scaled to DD's
    number of pairs, summed over bins), (m,), which selections leave a data set empty, (m,)
    bool, and which bins of which selections hold no random pairs, (m, nbins) bool."""
    name, dd, dr, rr, rd, norm = _terms(res)
    if marked_mean and name == "natural" and dd.auto:
        # an auto count holding only its upper triangle (TreeCorr's natural estimator, no DR
        # to add empty lower-triangle entries) takes the marked "mean" weights of both ends
        select = _marked_upper(select)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = combine(name, dd, dr, rr, rd=rd, select=select, normalization=norm)
        d_tot = count_parts(dd, select, norm)[1]
        r = normed_counts(counts_list(rr, "rr"), select, norm,
                          name == "multi-random") * d_tot[:, None]
    empty = d_tot == 0
    v[empty] = 0.0                     # TreeCorr's xi of a selection without pairs
    no_rr = ~empty[:, None] & ((r == 0) | ~np.isfinite(r))
    # as TreeCorr: a bin without random pairs weighs 1
    return v, np.where((r == 0) | ~np.isfinite(r), 1.0, r).sum(axis=1), empty, no_rr


def _shot(res):
    """TreeCorr's shot-noise variance of w, (nbins,)."""
    name, dd, dr, rr, rd, norm = _terms(res)

    def pooled(pcs):
        pcs = counts_list(pcs, "counts")
        num = sum(count_parts(c, None, norm)[0][0] for c in pcs)
        tot = sum(count_parts(c, None, norm)[1][0] for c in pcs)
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


def covariance(results, var_method, *, seed=None, num_bootstrap=NUM_BOOTSTRAP,
               cross_patch_weight=None):
    """The covariance of the concatenated w of ``results`` (the core of
    :func:`sphgpu.tpacf.joint_covariance`), and the w of each selection.

    Parameters
    ----------
    results : list of CorrelationResult
    var_method : str
        One of :data:`VAR_METHODS`.
    seed : int, numpy Generator or None
        Seed of the bootstrap draws (an int must be >= 0).
    num_bootstrap : int
    cross_patch_weight : {None, "simple", "mean", "match", "geom"}
        How pairs between a selected and a deselected patch weigh (module docstring); None:
        "simple", TreeCorr's default.

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
    cpw = check_cross_patch_weight(cross_patch_weight, var_method)
    if isinstance(seed, bool) or (isinstance(seed, (int, np.integer)) and seed < 0):
        raise ValueError(f"seed must be a non-negative integer, a numpy Generator or None, got "
                         f"{seed!r}")
    return _covariance(results, var_method, seed, num_bootstrap, cpw)


def _designs(results, rows_list, marked_mean=False):
    """Per batch of selections, the design of every result: (v (m, total bins), f (m,),
    empty (m,) bool: a data set of some result is empty, no_rr (m, total bins) bool)."""
    vs, fs, es, ns = [], [], [], []
    for rows in rows_list:
        parts = [_design(res, rows, marked_mean) for res in results]
        vs.append(np.hstack([p[0] for p in parts]))
        fs.append(sum(p[1] for p in parts))
        es.append(np.any([p[2] for p in parts], axis=0))
        ns.append(np.hstack([p[3] for p in parts]))
    return np.vstack(vs), np.concatenate(fs), np.concatenate(es), np.vstack(ns)


def _finish(var_method, v, empty, no_rr, results):
    """Warn about empty selections and bins without random pairs; NaN out those bins."""
    if empty.any():
        warnings.warn(f"var_method={var_method!r}: {int(empty.sum())} of {empty.size} "
                      "selections of patches leave a data set without pairs; their w counts "
                      "as 0 (TreeCorr's fallback), which biases the covariance: use fewer or "
                      "larger patches, or patches that every data set covers",
                      RuntimeWarning, stacklevel=4)
    bad = no_rr.any(axis=0)
    if bad.any():
        nb = results[0].bins.nbins
        where = [f"bin {k % nb}" + (f" of result {k // nb}" if len(results) > 1 else "")
                 for k in np.flatnonzero(bad)]
        warnings.warn(f"var_method={var_method!r}: some selections of patches hold no random "
                      f"pairs in {', '.join(where)}; the covariance is NaN there (its w is "
                      "undefined in those selections)", RuntimeWarning, stacklevel=4)
    return bad


def _covariance(results, var_method, seed, num_bootstrap, cpw):
    if var_method == "shot":
        return np.diag(np.concatenate([_shot(r) for r in results])), None
    r = _check_same_regions(results)
    present = np.flatnonzero(results[0].present)
    n = present.size
    if var_method in ("jackknife", "sample"):
        if n < 2:
            what = "a jackknife" if var_method == "jackknife" else "sample variance"
            raise ValueError(f"{what} needs at least 2 regions holding points, got {n}")
        loo = var_method == "jackknife" and cpw == "simple"
        if loo:                      # leave-one-out sums, O(R) each, instead of R x R weights
            rows_list = ["jackknife"]
        else:
            rows_list = [_rows(var_method, present, r, cpw=cpw, ks=present[a:a + _BATCH])
                         for a in range(0, n, _BATCH)]
        v, f, empty, no_rr = _designs(results, rows_list)
        if loo:                                    # one row per region, present or not
            v, f, empty, no_rr = v[present], f[present], empty[present], no_rr[present]
        bad = _finish(var_method, v, empty, no_rr, results)
        v[:, bad] = np.nan
        if var_method == "jackknife":
            return jackknife_covariance(v)[1], v
        if np.any(f == 0):
            raise ValueError("sample variance needs pairs of random points in every region")
        f = f / f.sum()
        d = v - v.mean(axis=0)
        return (f * d.T) @ d / (n - 1), v
    draws = bootstrap_draws(n, num_bootstrap, seed)
    rows_list = []
    for a in range(0, draws.shape[0], _BATCH):
        rows_list.append(_rows(var_method, present, r, draws[a:a + _BATCH], cpw=cpw))
    v, _, empty, no_rr = _designs(results, rows_list,
                                  marked_mean=var_method == "marked_bootstrap" and cpw == "mean")
    bad = _finish(var_method, v, empty, no_rr, results)
    v[:, bad] = np.nan
    d = v - v.mean(axis=0)
    return (d.T @ d) / (v.shape[0] - 1), v
