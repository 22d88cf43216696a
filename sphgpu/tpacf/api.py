"""pair_counts and angular_correlation: argument checks, backend dispatch, normalisations.

Each backend module (``reference``, ``_cpu``, ``_cuda``) provides ``PRECISIONS``,
``DEFAULT_PRECISION`` and

    count_pairs(cat1, cat2_or_None, bins, *, n_regions, weighted, precision) -> RawCounts

(:class:`sphgpu.tpacf.reference.RawCounts`). Everything else is here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import backends
from .bins import AngularBins
from .catalog import Catalog, as_catalog
from .counts import PairCounts
from . import estimators as est
from .jackknife import JackknifeRegions, jackknife_covariance

__all__ = ["pair_counts", "angular_correlation", "CorrelationResult"]


def _check_bins(bins):
    if not isinstance(bins, AngularBins):
        raise TypeError("bins must be an AngularBins (e.g. AngularBins.log(0.01, 10, 20, "
                        f"unit='deg')), got {type(bins).__name__}")
    return bins


def _catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2):
    if isinstance(ra1, Catalog):
        if dec1 is not None and not isinstance(dec1, Catalog):
            raise TypeError("when ra1 is a Catalog the second argument must be a Catalog or "
                            f"None, got {type(dec1).__name__}")
        for name, v in (("ra2", ra2), ("dec2", dec2), ("weights1", weights1),
                        ("weights2", weights2), ("labels1", labels1), ("labels2", labels2)):
            if v is not None:
                raise TypeError(f"{name} must be None when catalogs are given as Catalog "
                                "objects (their weights and labels live in the Catalog)")
        return ra1, dec1
    if dec1 is None:
        raise TypeError("dec1 is missing: pass ra1, dec1 (degrees) or Catalog objects")
    # the arrays are only read during the call: borrowed, not copied
    cat1 = Catalog(ra1, dec1, weights=weights1, labels=labels1,
                   names=("ra1", "dec1", "weights1", "labels1"), copy=False)
    if ra2 is None and dec2 is None:
        for name, v in (("weights2", weights2), ("labels2", labels2)):
            if v is not None:
                raise ValueError(f"{name} was given without ra2/dec2 (an auto-correlation "
                                 "uses weights1 and labels1)")
        return cat1, None
    if ra2 is None or dec2 is None:
        raise ValueError("give both ra2 and dec2 for a cross-correlation, or neither")
    cat2 = Catalog(ra2, dec2, weights=weights2, labels=labels2,
                   names=("ra2", "dec2", "weights2", "labels2"), copy=False)
    return cat1, cat2


def _regions(cat1, cat2, n_regions):
    """Number of jackknife regions of a count (0: none). n_regions=0 ignores labels."""
    if isinstance(n_regions, (int, np.integer)) and not isinstance(n_regions, bool) \
            and n_regions == 0:
        return 0
    have = [c.labels is not None for c in (cat1, cat2) if c is not None]
    if not any(have):
        if n_regions is not None:
            raise ValueError("n_regions was given but no catalog has labels")
        return 0
    if not all(have):
        raise ValueError("labels1 and labels2 must both be given for jackknife counts "
                         "(one numbering of regions for both catalogs)")
    need = max(c.n_regions for c in (cat1, cat2) if c is not None)
    if n_regions is None:
        return need
    if isinstance(n_regions, bool) or not isinstance(n_regions, (int, np.integer)):
        raise TypeError(f"n_regions must be an integer, got {n_regions!r}")
    if n_regions < need:
        raise ValueError(f"n_regions={n_regions} but the labels go up to {need - 1}")
    return int(n_regions)


def _sums(cat, nreg):
    """Per region of a catalog (one region without labels): n, sum w, sum w**2, (R,) each."""
    r = max(nreg, 1)
    lab = cat.labels if nreg else None
    n = (np.array([float(cat.size)]) if lab is None
         else np.bincount(lab, minlength=r).astype(np.float64))
    w = cat.weights
    if w is None:                 # unit weights: no arrays to sum (this runs in every count)
        return n, n, n
    if lab is None:
        return n, np.array([w.sum()]), np.array([np.dot(w, w)])
    return n, np.bincount(lab, weights=w, minlength=r), np.bincount(lab, weights=w * w,
                                                                      minlength=r)


def _totals(cat1, cat2, nreg, weighted):
    """Possible pairs of each pair of regions (R, R) and, auto, what TreeCorr's normalisation
    adds on the diagonal (R,): unweighted and (when ``weighted``) weighted."""
    n1, s1, q1 = _sums(cat1, nreg)
    if cat2 is None:
        def auto(s, q):                       # pairs i < j: off the diagonal a < b
            t = np.triu(np.outer(s, s), 1)
            t[np.diag_indices_from(t)] = (s * s - q) / 2.0
            return t, q / 2.0
        t, st = auto(n1, n1)
        wt, wst = auto(s1, q1) if weighted else (None, None)
        return t, st, wt, wst
    n2, s2, _ = _sums(cat2, nreg)
    zero = np.zeros(max(nreg, 1))
    return (np.outer(n1, n2), zero, np.outer(s1, s2) if weighted else None,
            zero if weighted else None)


def _count(cat1, cat2, bins, *, n_regions=None, precision=None, backend="auto",
           mean_theta=False):
    bins = _check_bins(bins)
    nreg = _regions(cat1, cat2, n_regions)
    weighted = cat1.weights is not None or (cat2 is not None and cat2.weights is not None)
    impl = backends.load("tpacf", backend)
    if precision is None:
        precision = impl.DEFAULT_PRECISION
    if precision not in impl.PRECISIONS:
        raise ValueError(f"precision must be one of {impl.PRECISIONS} on this backend, got "
                         f"{precision!r}")
    raw = impl.count_pairs(cat1, cat2, bins, n_regions=nreg, weighted=weighted,
                           precision=precision, mean_theta=bool(mean_theta))
    return counts_from_raw(raw, cat1, cat2, bins, nreg, weighted)


def counts_from_raw(raw, cat1, cat2, bins, n_regions, weighted):
    """The PairCounts of a backend's RawCounts of ``cat1`` x ``cat2`` (None: auto), with the
    totals of those catalogs: written once here for every backend and the distributed
    counts."""
    t, st, wt, wst = _totals(cat1, cat2, n_regions, weighted)
    reg = n_regions > 0
    return PairCounts(
        bins, raw.counts, n1=cat1.size, n2=cat1.size if cat2 is None else cat2.size,
        auto=cat2 is None, total=t.sum(), self_total=st.sum(), weights=raw.weights,
        weighted_total=None if wt is None else wt.sum(),
        weighted_self_total=None if wst is None else wst.sum(),
        patch_counts=raw.patch_counts, patch_weights=raw.patch_weights,
        patch_total=t if reg else None, patch_weighted_total=wt if reg else None,
        patch_self_total=st if reg else None, patch_weighted_self_total=wst if reg else None,
        theta_sum=raw.theta_sum, log_theta_sum=raw.log_theta_sum,
        pairs_compared=raw.pairs_compared, refined=raw.refined)


def pair_counts(ra1, dec1=None, ra2=None, dec2=None, *, bins, weights1=None, weights2=None,
                labels1=None, labels2=None, n_regions=None, precision=None, mean_theta=False,
                backend="auto"):
    """Exact pair counts in angular bins: DD, DR or RR.

    Parameters
    ----------
    ra1, dec1 : array, shape (n1,), degrees
        First catalog (RA any finite value, Dec in [-90, 90]): NumPy arrays, or device arrays
        (CuPy, Numba), which the "cuda" backend prepares on the GPU without a host copy.
        ``ra1`` may instead be a :class:`Catalog`, and then ``dec1`` the second Catalog or
        None: what a backend prepares from a Catalog (the points sorted into sky cells, their
        unit vectors; kept on the GPU for "cuda") is cached on it, so counting the same
        Catalog again (a random catalog in several counts) skips that work.
    ra2, dec2 : array, shape (n2,), degrees, optional
        Second catalog; omit both for an auto-correlation, which counts each unique pair
        (i < j) once and no point with itself. (Corrfunc's ``DDtheta_mocks`` with
        ``autocorr=1`` counts both orders, so its counts are twice these.)
    bins : AngularBins
    weights1, weights2 : array, optional
        Weights; bins then also hold the sums of w_i * w_j (a catalog without weights counts
        with weight 1 when the other has them).
    labels1, labels2 : int array, optional
        Jackknife region of each point (both catalogs, one numbering). Adds the per-region
        counts (:attr:`PairCounts.region_counts`).
    n_regions : int, optional
        Number of regions (default 1 + the largest label); give it when adding counts made on
        catalogs that do not all reach the last region. 0 ignores the labels.
    precision : {"float64", "float32"}, optional
        Arithmetic of the fast path (backend default: float32 on "cuda", float64 on "cpu").
        Both give identical counts: float32 decides the bins of pairs far from every edge
        and recomputes the others in float64 (:mod:`sphgpu.tpacf.exact`).
    mean_theta : bool
        Also sum each bin's separations (float64, from the float64 squared chord) for
        :attr:`PairCounts.mean_theta` and :attr:`PairCounts.mean_log_theta`. Off by default:
        the counting loop then computes no angle at all.
    backend : {"auto", "cuda", "cpu", "reference"}

    Returns
    -------
    PairCounts
        ``counts[k]``: pairs with chord2_edges[k] <= d2 < chord2_edges[k+1] (see
        :mod:`sphgpu.tpacf.bins` for d2), equal as integers on every backend.

    Raises
    ------
    TypeError, ValueError
        For bad catalogs, bins, labels, precision or backend names (naming the argument).
    """
    cat1, cat2 = _catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2)
    return _count(cat1, cat2, bins, n_regions=n_regions, precision=precision, backend=backend,
                  mean_theta=mean_theta)


@dataclass
class CorrelationResult:
    """w(theta) with its counts and, with jackknife regions, errors and covariance.

    Attributes
    ----------
    bins : AngularBins
    theta : ndarray (nbins,), bin centres in ``bins.unit``
    w : ndarray (nbins,)
    estimator : str
    dd : PairCounts; dr, rr : list of PairCounts, one per random catalog (dr empty for the
        natural estimator)
    w_jackknife : ndarray (n_regions, nbins) or None, w with each region left out
    covariance : ndarray (nbins, nbins) or None, (K - 1) / K sum_k (w_k - mean)(w_k - mean)^T
        over the K regions that hold points
    sigma : ndarray (nbins,) or None, sqrt of the covariance diagonal
    regions : JackknifeRegions or None, when the regions were made here
    """

    bins: AngularBins
    theta: np.ndarray
    w: np.ndarray
    estimator: str
    dd: PairCounts
    dr: list
    rr: list
    w_jackknife: np.ndarray | None = None
    covariance: np.ndarray | None = None
    sigma: np.ndarray | None = None
    regions: JackknifeRegions | None = field(default=None, repr=False)


def _random_list(randoms):
    if isinstance(randoms, list):
        if not randoms:
            raise ValueError("randoms is an empty list: give at least one random catalog")
        return [as_catalog(r, f"randoms[{i}]") for i, r in enumerate(randoms)]
    return [as_catalog(randoms, "randoms")]


def angular_correlation(data, randoms, *, bins, estimator="landy-szalay", jackknife=None,
                        precision=None, backend="auto"):
    """The angular two-point correlation function w(theta) of a catalog.

    Parameters
    ----------
    data : Catalog, (ra, dec) tuple of arrays in degrees, or a file path (CSV, FITS, NPZ)
    randoms : the same, or a list of them: several random catalogs (the slides' loop over
        random files). DR and RR are counted for each.
    bins : AngularBins
    estimator : {"landy-szalay", "natural", "multi-random"}
        "natural": DD/RR - 1; "landy-szalay": (DD - 2 DR + RR) / RR with DR and RR pooled over
        the random catalogs; "multi-random": the slides' form, which averages each catalog's
        normalised DR and RR (see :mod:`sphgpu.tpacf.estimators`).
    jackknife : None, int, JackknifeRegions or "labels"
        An int K makes K k-means regions on the sphere from the first random catalog;
        a :class:`JackknifeRegions` (k-means or HEALPix) labels every catalog; "labels" uses
        the labels already in the Catalogs. Leave-one-out w and its covariance come from one
        pass of per-region counts (every pair counted once).
    precision, backend : as in :func:`pair_counts`

    Returns
    -------
    CorrelationResult
    """
    bins = _check_bins(bins)
    name = est.check_estimator(estimator)
    dcat = as_catalog(data, "data")
    rcats = _random_list(randoms)
    regions = None
    if jackknife is None:
        nreg = 0                                  # labels in the catalogs are ignored
    elif isinstance(jackknife, str):
        if jackknife != "labels":
            raise ValueError(f"jackknife must be None, an int, a JackknifeRegions or 'labels', "
                             f"got {jackknife!r}")
        if dcat.labels is None or any(r.labels is None for r in rcats):
            raise ValueError("jackknife='labels' needs labels in the data and every random "
                             "catalog")
        nreg = max(c.n_regions for c in [dcat] + rcats)
    else:
        if isinstance(jackknife, (int, np.integer)) and not isinstance(jackknife, bool):
            if not 2 <= jackknife <= rcats[0].size:
                raise ValueError(f"jackknife={jackknife}: k-means regions need 2 to the number "
                                 f"of points of the first random catalog ({rcats[0].size})")
            regions = JackknifeRegions.kmeans(rcats[0].ra, rcats[0].dec, int(jackknife))
        elif isinstance(jackknife, JackknifeRegions):
            regions = jackknife
        else:
            raise TypeError("jackknife must be None, an int, a JackknifeRegions or 'labels', "
                            f"got {type(jackknife).__name__}")
        dcat = dcat.with_labels(regions.labels(dcat.ra, dcat.dec))
        rcats = [r.with_labels(regions.labels(r.ra, r.dec)) for r in rcats]
        nreg = regions.n_regions

    kw = dict(n_regions=nreg, precision=precision, backend=backend)
    dd = _count(dcat, None, bins, **kw)
    rr = [_count(r, None, bins, **kw) for r in rcats]
    dr = [] if name == "natural" else [_count(dcat, r, bins, **kw) for r in rcats]
    w = est.estimate(name, dd, dr, rr)
    res = CorrelationResult(bins=bins, theta=bins.centers, w=w, estimator=name, dd=dd, dr=dr,
                            rr=rr, regions=regions)
    if nreg:
        res.w_jackknife = est.estimate(name, dd, dr, rr, leave_one_out=True)
        present = np.zeros(nreg, bool)
        for c in [dcat] + rcats:
            present |= np.bincount(c.labels, minlength=nreg) > 0
        _, res.covariance = jackknife_covariance(res.w_jackknife[present])
        res.sigma = np.sqrt(np.diag(res.covariance))
    return res
