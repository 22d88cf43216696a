"""pair_counts, angular_correlation(s): argument checks, backend dispatch, totals, budgets.

Each backend module (``reference``, ``_cpu``, ``_cuda``), found through the registry
(:func:`sphgpu.backends.load`), provides ``PRECISIONS``, ``DEFAULT_PRECISION`` and

    count_pairs(cat1, cat2_or_None, bins, *, n_regions, weighted, precision, mean_theta,
                max_device_bytes) -> RawCounts

(:class:`sphgpu.tpacf.reference.RawCounts`; raising :class:`sphgpu.tpacf.budget.BudgetExceeded`
when its plan is over the budget). Everything else is here once: the numbers of possible pairs
per pair of regions, the split of a count over its budget, the counts of a correlation.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _tuning, backends
from . import budget, slop as slop_
from .bins import AngularBins, check_bins
from .catalog import as_catalog, n_regions_of, pair_catalogs
from .counts import check_normalization, counts_from_raw
from .grid import MIN_BAND_DEG
from . import covariance as cov_
from . import estimators as est
from .jackknife import JackknifeRegions
from .reference import RawCounts
from .result import CorrelationResult

__all__ = ["pair_counts", "angular_correlation", "angular_correlations"]


def _counted(cat):
    """The points of ``cat`` that pairs are counted for: those of non-zero weight, as TreeCorr
    (whose ``npairs`` leaves w = 0 objects out); ``cat`` itself when every weight is non-zero,
    None when none is. Cached on ``cat``, so what a backend prepares from the subset is kept
    for the next count, as it is for whole catalogs."""
    if cat is None or cat.weights is None:
        return cat
    key = "nonzero weights"
    if key not in cat._cache:
        keep = cat.weights != 0
        cat._cache[key] = cat if keep.all() else (cat.subset(keep) if keep.any() else None)
    return cat._cache[key]


def _count(cat1, cat2, bins, *, n_regions=None, precision=None, backend="auto",
           mean_theta=False, max_device_bytes=None, progress=None, bin_slop=None):
    bins = check_bins(bins)
    s = slop_.check_bin_slop(bin_slop)
    nreg = n_regions_of(cat1, cat2, n_regions)
    weighted = cat1.weights is not None or (cat2 is not None and cat2.weights is not None)
    impl = backends.load("tpacf", backend)
    if not getattr(impl, "BIN_SLOP", False):
        # an exact count is within every bound bin_slop states; on the GPU the exact kernel
        # beat an approximate one at every size tried (benchmarks/tpacf_bin_slop.py)
        s = None
    if precision is None:
        precision = impl.DEFAULT_PRECISION
    if precision not in impl.PRECISIONS:
        raise ValueError(f"precision must be one of {impl.PRECISIONS} on this backend, got "
                         f"{precision!r}")
    if max_device_bytes is None:
        max_device_bytes = budget.DEFAULT_BUDGET
    if isinstance(max_device_bytes, bool) or not isinstance(max_device_bytes, (int, np.integer)) \
            or max_device_bytes <= 0:
        raise TypeError(f"max_device_bytes must be a positive integer, got {max_device_bytes!r}")
    points = budget.POINT_BYTES * (cat1.size + (0 if cat2 is None else cat2.size))
    if points > max_device_bytes:
        raise ValueError(f"max_device_bytes={max_device_bytes}: the prepared catalogs alone need "
                         f"{points} bytes; raise it or count over a cluster "
                         "(sphgpu.distributed.pair_counts)")
    kw = dict(n_regions=nreg, weighted=weighted, precision=precision,
              mean_theta=bool(mean_theta), max_device_bytes=int(max_device_bytes))
    c1, c2 = _counted(cat1), _counted(cat2)
    if c1 is None or (cat2 is not None and c2 is None):     # every weight 0: no pair counts
        raw = RawCounts.zeros(bins.nbins, nreg, weighted, bool(mean_theta))
    elif s is None:
        raw = _within_budget(impl, c1, c2, bins, kw, progress)
    else:
        raw = _slop_count(impl, c1, c2, bins, s, kw, progress)
    return counts_from_raw(raw, cat1, cat2, bins, nreg, weighted)


def _slop_count(impl, cat1, cat2, bins, s, kw, progress):
    """The approximate count (:mod:`sphgpu.tpacf.slop`): each group of bins on its own grid,
    what it prepared dropped after it (one grid's prepared catalogs held at a time)."""
    rho = min(slop_.density(c) for c in (cat1, cat2) if c is not None)
    runs = []                          # groups counted exactly are merged into one count
    for a, b, plan in slop_.groups(bins, s, math.radians(MIN_BAND_DEG), rho):
        if plan is None and runs and runs[-1][2] is None:
            runs[-1] = (runs[-1][0], b, None)
        else:
            runs.append((a, b, plan))
    parts = []
    for a, b, plan in runs:
        sub = AngularBins(bins.edges[a:b + 1], bins.unit, spacing=bins.spacing)
        if plan is None:
            parts.append(_within_budget(impl, cat1, cat2, sub, kw, progress))
            continue
        made = [(c, set(c._cache)) for c in (cat1, cat2) if c is not None]
        try:
            parts.append(_within_budget(impl, cat1, cat2, sub, dict(kw, slop=plan), progress))
        finally:
            for c, before in made:
                for key in set(c._cache) - before:
                    del c._cache[key]

    def cat(name):
        v = [getattr(p, name) for p in parts]
        return None if v[0] is None else np.concatenate(v, axis=-1)

    return RawCounts(**{f: cat(f) for f in ("counts", "weights", "patch_counts",
                                            "patch_weights", "theta_sum", "log_theta_sum")},
                     **{f: sum(getattr(p, f) for p in parts)
                        for f in ("refined", "pairs_compared", "at_once")})


def _within_budget(impl, cat1, cat2, bins, kw, progress):
    """The backend's count; over the budget, the counts of the halves of ``cat1`` (auto: of
    both halves and between them), recursively, with what the failed try prepared dropped."""
    made = [(c, set(c._cache)) for c in (cat1, cat2) if c is not None]
    try:
        return impl.count_pairs(cat1, cat2, bins, **kw)
    except budget.BudgetExceeded as exc:
        for c, before in made:                    # free the device copies made for this try
            for key in set(c._cache) - before:
                del c._cache[key]
        if cat1.size >= 2:
            a, b = _halves(cat1)
            parts = [(a, None), (b, None), (a, b)] if cat2 is None else [(a, cat2), (b, cat2)]
        elif cat2 is not None and cat2.size >= 2:
            parts = [(cat1, h) for h in _halves(cat2)]
        else:
            raise ValueError(f"max_device_bytes={kw['max_device_bytes']} is too small even "
                             f"for a count of single points ({exc.needed} bytes)") from None
        if progress:
            progress(f"pair counts over the memory budget ({exc.needed} > {exc.budget} "
                     f"bytes): counting in {len(parts)} parts")
        raws = [_within_budget(impl, x, y, bins, kw, progress) for x, y in parts]
        return sum(raws[1:], raws[0])


def _halves(cat):
    h = cat.size // 2
    return cat.part(0, h), cat.part(h, cat.size)


def pair_counts(ra1, dec1=None, ra2=None, dec2=None, *, bins, weights1=None, weights2=None,
                labels1=None, labels2=None, n_regions=None, precision=None, mean_theta=False,
                backend="auto", max_device_bytes=None, progress=False, bin_slop=None):
    """Pair counts in angular bins: DD, DR or RR; exact, or approximate with ``bin_slop``.

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
        with weight 1 when the other has them). Points of weight 0 are left out of every
        count, total and ``n1``/``n2``, as TreeCorr leaves w = 0 objects out of ``npairs``.
    labels1, labels2 : int array, optional
        Jackknife region of each point (both catalogs, one numbering). Adds the per-region
        counts (:attr:`PairCounts.region_counts`).
    n_regions : int, optional
        Number of regions (default 1 + the largest label); give it when adding counts made on
        catalogs that do not all reach the last region. 0 ignores the labels.
    precision : {"float64", "float32"}, optional
        Arithmetic of the fast path (default: float32 on "cuda" and "cpu", float64 on
        "reference").
        Both give identical counts: float32 decides the bins of pairs far from every edge
        and recomputes the others in float64 (:mod:`sphgpu.tpacf.exact`).
    mean_theta : bool
        Also sum each bin's separations (float64, from the float64 squared chord) for
        :attr:`PairCounts.mean_theta` and :attr:`PairCounts.mean_log_theta`. Off by default:
        the counting loop then computes no angle at all.
    backend : {"auto", "cuda", "cpu", "reference"}
    max_device_bytes : int, optional
        Memory budget of the count (default :data:`sphgpu.tpacf.budget.DEFAULT_BUDGET`, 8 GiB)
        on the device that counts (the GPU for "cuda", the host for "cpu"; "reference" has no
        plan and ignores it): the prepared catalogs (76 bytes a point) and the plan's work
        items and histograms stay within it. A count whose plan is larger is made in parts
        (:mod:`sphgpu.tpacf.budget`), with the same result; catalogs whose prepared points
        alone exceed it raise ValueError (count those over a cluster). What earlier counts
        left prepared on other Catalogs is not included.
    progress : bool or callable(str)
        Say when a count is split to fit the budget (True: a line on stdout).
    bin_slop : float >= 0, optional
        None or 0 (default): exact counts. s > 0: approximate counts, as TreeCorr's
        ``bin_slop``, on "cpu": pairs of small sky cells whose whole range of separations
        fits their bin up to the slop are counted at once. "cuda" and "reference" count
        exactly whatever the slop (an exact count is within the bound below; on the GPU the
        exact count is the faster one). With u = ln(theta) for log bins (theta otherwise) and Delta the bin
        width in u (:func:`sphgpu.tpacf.slop.bin_width`), bin k counts every pair inside it
        except that pairs within s * Delta of its edges, inside or outside, may be counted
        there or not: exact(k) - N_in(k) <= counts[k] <= exact(k) + N_out(k), N_in/N_out the
        pairs inside/outside bin k within s * Delta of its edges (weights likewise). With
        s <= 1 a pair moves at most to a neighbouring bin. Float64 arithmetic whatever
        ``precision``. :attr:`PairCounts.pairs_at_once` says how many pairs were counted at
        once (0 for an exact count).

    Returns
    -------
    PairCounts
        ``counts[k]``: pairs with chord2_edges[k] <= d2 < chord2_edges[k+1] (see
        :mod:`sphgpu.tpacf.bins` for d2), equal as integers on every backend (within the
        bound above with ``bin_slop``).

    Raises
    ------
    TypeError, ValueError
        For bad catalogs, bins, labels, precision, bin_slop or backend names (naming the
        argument).
    """
    cat1, cat2 = pair_catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2)
    return _count(cat1, cat2, bins, n_regions=n_regions, precision=precision, backend=backend,
                  mean_theta=mean_theta, max_device_bytes=max_device_bytes,
                  progress=_tuning.print_progress if progress is True else (progress or None),
                  bin_slop=bin_slop)


def _check_weight_sums(named):
    """An estimator divides by each catalog's total weight: refuse a total of zero (w would
    come back NaN)."""
    for name, cat in named.items():
        if cat.weights is not None and float(np.sum(cat.weights)) == 0.0:
            raise ValueError(f"{name} weights sum to zero: the estimator's normalisation "
                             "divides by the total weight")


def _random_list(randoms, name="randoms"):
    if isinstance(randoms, list):
        if not randoms:
            raise ValueError(f"{name} is an empty list: give at least one random catalog")
        return [as_catalog(r, f"{name}[{i}]") for i, r in enumerate(randoms)]
    return [as_catalog(randoms, name)]


def _label(named, jackknife, first_randoms):
    """Label every catalog of ``named`` ({argument name: Catalog}) by ``jackknife``.

    Returns the labelled catalogs (same keys), the number of regions (0: none) and the
    JackknifeRegions made here (or None)."""
    if jackknife is None:
        return dict(named), 0, None               # labels in the catalogs are ignored
    if isinstance(jackknife, str):
        if jackknife != "labels":
            raise ValueError(f"jackknife must be None, an int, a JackknifeRegions or 'labels', "
                             f"got {jackknife!r}")
        missing = [k for k, c in named.items() if c.labels is None]
        if missing:
            raise ValueError(f"jackknife='labels' needs labels in every catalog; {missing[0]} "
                             "has none")
        counts = {k: c.n_regions for k, c in named.items()}
        first = next(iter(counts))
        for k, r in counts.items():
            if r != counts[first]:
                raise ValueError(f"jackknife='labels': the patches differ between catalogs: "
                                 f"{first} has {counts[first]} regions but {k} has {r} (give "
                                 "every catalog labels of one numbering, with every region "
                                 "holding points of each, as TreeCorr's patches)")
        return dict(named), counts[first], None
    if isinstance(jackknife, (int, np.integer)) and not isinstance(jackknife, bool):
        if not 2 <= jackknife <= first_randoms.size:
            raise ValueError(f"jackknife={jackknife}: k-means regions need 2 to the number of "
                             f"points of the first random catalog ({first_randoms.size})")
        regions = JackknifeRegions.kmeans(first_randoms.ra, first_randoms.dec, int(jackknife))
    elif isinstance(jackknife, JackknifeRegions):
        regions = jackknife
    else:
        raise TypeError("jackknife must be None, an int, a JackknifeRegions or 'labels', got "
                        f"{type(jackknife).__name__}")
    out = {k: c.with_labels(regions.labels(c.ra, c.dec)) for k, c in named.items()}
    return out, regions.n_regions, regions


def _check_options(var_method, nreg, seed, normalization, cross_patch_weight):
    check_normalization(normalization)
    if var_method is None:
        var_method = "jackknife" if nreg else None
    if var_method is None:
        if cross_patch_weight is not None:
            raise ValueError("cross_patch_weight was given without a covariance: pass "
                             "jackknife= (regions) or var_method=")
        return None
    cov_.check_var_method(var_method)
    cov_.check_cross_patch_weight(cross_patch_weight, var_method)
    if var_method != "shot" and not nreg:
        raise ValueError(f"var_method={var_method!r} needs jackknife regions: pass jackknife= "
                         "(an int, a JackknifeRegions or 'labels')")
    if seed is not None and not isinstance(seed, (int, np.integer, np.random.Generator)):
        raise TypeError(f"seed must be an int, a numpy Generator or None, got "
                        f"{type(seed).__name__}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be a non-negative integer (numpy's default_rng takes no "
                         f"negative seed), got {seed}")
    return var_method


class _Counter:
    """Counts of one call, each pair of catalogs counted once (by object: a catalog shared by
    several correlations is prepared and counted once)."""

    def __init__(self, bins, nreg, precision, backend, max_device_bytes, progress, total,
                 bin_slop=None):
        self.kw = dict(n_regions=nreg, precision=precision, backend=backend,
                       max_device_bytes=max_device_bytes, bin_slop=bin_slop)
        self.bins, self.memo, self.progress, self.total = bins, {}, progress, total

    def __call__(self, label, c1, c2=None, *, mean_theta=False):
        key = (id(c1), None if c2 is None else id(c2), bool(mean_theta))
        if key not in self.memo:
            if self.progress:
                self.progress(f"counting {label} ({len(self.memo) + 1}/{self.total})")
            self.memo[key] = (c1, c2, _count(c1, c2, self.bins, mean_theta=mean_theta,
                                             progress=self.progress, **self.kw))
        return self.memo[key][2]


def _present(cats, nreg):
    present = np.zeros(nreg, bool)
    for c in cats:
        present |= np.bincount(c.labels, minlength=nreg) > 0
    return present


def _correlate(count, name, d1, r1, d2, r2, shared, *, normalization, mean_theta):
    """One correlation from the counter: auto (``d2`` None) or cross. ``shared``: r2 is r1."""
    if d2 is None:
        dd = count("DD", d1, mean_theta=mean_theta)
        rr = [count("RR", r) for r in r1]
        dr = [] if name == "natural" else [count("DR", d1, r) for r in r1]
        return dd, dr, rr, []
    if name == "multi-random":
        raise ValueError("estimator='multi-random' is for auto-correlations; use "
                         "'landy-szalay' or 'natural' with data2")
    if not shared and len(r1) != len(r2):
        raise ValueError(f"randoms and randoms2 must hold as many catalogs, got {len(r1)} and "
                         f"{len(r2)}")
    dd = count("D1D2", d1, d2, mean_theta=mean_theta)
    # a shared catalog's RR is counted once as an auto count, then used in both orders: R1R2
    # pairs a point of R1 with one of R2, and a selection by the first point's region (sample,
    # marked bootstrap) must see both orders, as TreeCorr's rr.process(r, r)
    rr = [count("RR", a).ordered() if shared else count("R1R2", a, b)
          for a, b in zip(r1, r2)]
    if sum(int(c.counts.sum()) for c in rr) == 0:
        raise ValueError("data2/randoms2: no pair of the two random catalogs lies within the "
                         "bins: the footprints of the two data sets do not overlap at these "
                         "separations, so their cross-correlation is undefined")
    if name == "natural":
        return dd, [], rr, []
    return dd, [count("D1R2", d1, r) for r in r2], rr, [count("R1D2", r, d2) for r in r1]


def _result(bins, name, terms, regions, present, normalization, var_method, seed,
            num_bootstrap, cross_patch_weight):
    dd, dr, rr, rd = terms
    w = est.combine(name, dd, dr, rr, rd=rd or None, normalization=normalization)
    res = CorrelationResult(bins=bins, theta=bins.centers, w=w, estimator=name, dd=dd, dr=dr,
                            rr=rr, rd=rd, normalization=normalization, regions=regions,
                            present=present, num_bootstrap=int(num_bootstrap))
    if var_method is not None:
        res._set_covariance(var_method, seed, num_bootstrap, cross_patch_weight)
    return res


def angular_correlation(data, randoms, *, bins, data2=None, randoms2=None,
                        estimator="landy-szalay", jackknife=None, var_method=None, seed=None,
                        num_bootstrap=cov_.NUM_BOOTSTRAP, cross_patch_weight=None,
                        normalization="pairs",
                        mean_theta=True, precision=None, backend="auto",
                        max_device_bytes=None, progress=False, bin_slop=None):
    """The angular two-point correlation function w(theta): auto, or cross with ``data2``.

    Parameters
    ----------
    data : Catalog, (ra, dec) tuple of arrays in degrees, or a file path (CSV, FITS, NPZ)
    randoms : the same, or a list of them
        Random catalogs of the data's footprint (the slides' loop over random files); DR and
        RR are counted for each.
    bins : AngularBins
    data2 : the same as ``data``, optional
        A second data set: the cross-correlation of ``data`` and ``data2``.
    randoms2 : the same as ``randoms``, optional
        Randoms of ``data2`` (as many catalogs as ``randoms``); default: ``randoms`` serve
        both data sets (one footprint).
    estimator : {"landy-szalay", "natural", "multi-random"}
        "natural": DD/RR - 1; "landy-szalay": (DD - 2 DR + RR) / RR, for a cross-correlation
        (D1D2 - D1R2 - R1D2 + R1R2) / R1R2, with DR and RR pooled over the random catalogs;
        "multi-random" (auto only): the slides' form, which averages each catalog's normalised
        DR and RR (see :mod:`sphgpu.tpacf.estimators`).
    jackknife : None, int, JackknifeRegions or "labels"
        Regions (patches) shared by every catalog: an int K makes K k-means regions on the
        sphere from the first random catalog; a :class:`JackknifeRegions` labels every
        catalog; "labels" uses the labels already in the Catalogs (the same number of regions
        in each). Every covariance comes from one pass of per-patch-pair counts.
    var_method : {None, "jackknife", "sample", "bootstrap", "marked_bootstrap", "shot"}
        How to estimate the covariance (TreeCorr's definitions, see
        :mod:`sphgpu.tpacf.covariance`); None: "jackknife" with regions, else no covariance.
    seed : int (>= 0), numpy Generator or None
        Seed of the bootstrap draws: the same seed gives the same covariance.
    num_bootstrap : int
        Number of bootstrap draws.
    cross_patch_weight : {None, "simple", "mean", "match", "geom"}
        TreeCorr's weighting of the pairs between a selected and a deselected patch (None:
        "simple", TreeCorr's default): "mean" and "match" for the jackknife, "mean" for
        sample and marked bootstrap, "mean" and "geom" for the bootstrap (see
        :mod:`sphgpu.tpacf.covariance`).
    normalization : {"pairs", "treecorr"}
        "pairs" (default) divides each count by its number of distinct pairs, n (n - 1) / 2
        for an auto count: the expected count of unclustered points, so w of a random catalog
        is 0 on average; "treecorr" divides auto counts by n**2 / 2 as TreeCorr does, which
        shifts w by about -1/n but reproduces TreeCorr's w and covariances to rounding.
    mean_theta : bool
        Sum the DD separations in the kernels for :attr:`CorrelationResult.mean_theta`
        (TreeCorr's ``meanr``); DR and RR are counted without.
    precision, backend : as in :func:`pair_counts`
    max_device_bytes : int, optional
        Memory budget of each count, as in :func:`pair_counts`.
    progress : bool or callable(str)
        Report each count as it starts (True: a line on stdout).
    bin_slop : float >= 0, optional
        Approximate counts with the bound stated in :func:`pair_counts` (None or 0: exact),
        for every count of the correlation.

    Returns
    -------
    CorrelationResult

    Raises
    ------
    TypeError, ValueError
        For bad catalogs or options (naming the argument): patches that differ between
        catalogs, a covariance method that needs regions without them, a bootstrap with fewer
        than 2 regions, cross-correlation catalogs whose footprints do not overlap.
    """
    bins = check_bins(bins)
    slop_.check_bin_slop(bin_slop)
    name = est.check_estimator(estimator)
    named = {"data": as_catalog(data, "data")}
    r1 = _random_list(randoms)
    named.update({f"randoms[{i}]" if len(r1) > 1 else "randoms": r for i, r in enumerate(r1)})
    shared = randoms2 is None
    if data2 is not None:
        named["data2"] = as_catalog(data2, "data2")
        if not shared:
            r2 = _random_list(randoms2, "randoms2")
            named.update({f"randoms2[{i}]": r for i, r in enumerate(r2)})
    elif not shared:
        raise ValueError("randoms2 was given without data2 (randoms2 are the second data set's)")
    _check_weight_sums(named)
    cats, nreg, regions = _label(named, jackknife, r1[0])
    var_method = _check_options(var_method, nreg, seed, normalization, cross_patch_weight)
    keys = list(cats)
    d1 = cats["data"]
    c_r1 = [cats[k] for k in keys if k.startswith("randoms") and not k.startswith("randoms2")]
    d2 = cats.get("data2")
    c_r2 = c_r1 if shared else [cats[k] for k in keys if k.startswith("randoms2")]
    say = _tuning.print_progress if progress is True else (progress or None)
    nterms = (1 + len(c_r1) * (1 if name == "natural" else 2) if d2 is None
              else 1 + len(c_r1) * (1 if name == "natural" else 3))
    count = _Counter(bins, nreg, precision, backend, max_device_bytes, say, nterms, bin_slop)
    terms = _correlate(count, name, d1, c_r1, d2, c_r2, shared, normalization=normalization,
                       mean_theta=mean_theta)
    present = _present(cats.values(), nreg) if nreg else None
    return _result(bins, name, terms, regions, present, normalization, var_method, seed,
                   num_bootstrap, cross_patch_weight)


def angular_correlations(catalogs, randoms, *, bins, estimator="landy-szalay", jackknife=None,
                         var_method=None, seed=None, num_bootstrap=cov_.NUM_BOOTSTRAP,
                         cross_patch_weight=None, normalization="pairs", mean_theta=True,
                         precision=None, backend="auto", max_device_bytes=None,
                         progress=False, bin_slop=None):
    """Every auto- and cross-correlation of k catalogs (tomographic bins) in one call.

    Each catalog is labelled and prepared once and each pair of catalogs counted once: DD of
    every pair i <= j, D_i R, R R (shared randoms) or D_i R_j, R_i R_j (randoms per catalog).

    Parameters
    ----------
    catalogs : list of Catalog, (ra, dec) tuples or file paths
        The k data sets.
    randoms : one catalog, or a list of k catalogs
        Randoms shared by every data set (one footprint), or one random catalog per data set
        (entry i for ``catalogs[i]``).
    bins : AngularBins
    estimator : {"landy-szalay", "natural"}
    jackknife : None, int, JackknifeRegions or "labels"
        As in :func:`angular_correlation`: the regions are shared by every catalog, so the
        results combine in :func:`joint_covariance`.
    var_method, seed, num_bootstrap, cross_patch_weight, normalization
        As in :func:`angular_correlation`.
    mean_theta, precision, backend
        As in :func:`angular_correlation`.
    max_device_bytes, progress, bin_slop
        As in :func:`angular_correlation`.

    Returns
    -------
    dict
        ``{(i, j): CorrelationResult}`` for 0 <= i <= j < k (auto on the diagonal).

    Raises
    ------
    TypeError, ValueError
        As :func:`angular_correlation`, and when ``randoms`` is a list of another length
        than ``catalogs``.
    """
    bins = check_bins(bins)
    slop_.check_bin_slop(bin_slop)
    name = est.check_estimator(estimator)
    if name == "multi-random":
        raise ValueError("estimator='multi-random' is for one auto-correlation; use "
                         "'landy-szalay' or 'natural'")
    if not isinstance(catalogs, (list, tuple)) or not catalogs:
        raise TypeError("catalogs must be a non-empty list of catalogs")
    k = len(catalogs)
    named = {f"catalogs[{i}]": as_catalog(c, f"catalogs[{i}]") for i, c in enumerate(catalogs)}
    per = isinstance(randoms, list)
    if per:
        if len(randoms) != k:
            raise ValueError(f"randoms must be one catalog or a list of one per catalog ({k}), "
                             f"got a list of {len(randoms)}")
        named.update({f"randoms[{i}]": as_catalog(r, f"randoms[{i}]")
                      for i, r in enumerate(randoms)})
    else:
        named["randoms"] = as_catalog(randoms, "randoms")
    _check_weight_sums(named)
    first = named["randoms[0]" if per else "randoms"]
    cats, nreg, regions = _label(named, jackknife, first)
    var_method = _check_options(var_method, nreg, seed, normalization, cross_patch_weight)
    d = [cats[f"catalogs[{i}]"] for i in range(k)]
    r = [cats[f"randoms[{i}]"] for i in range(k)] if per else [cats["randoms"]] * k
    say = _tuning.print_progress if progress is True else (progress or None)
    count = _Counter(bins, nreg, precision, backend, max_device_bytes, say,
                     k * (k + 1) // 2 * (1 if name == "natural" else 4), bin_slop)
    present = _present(cats.values(), nreg) if nreg else None
    out = {}
    for i in range(k):
        for j in range(i, k):
            if i == j:
                terms = _correlate(count, name, d[i], [r[i]], None, None, True,
                                   normalization=normalization, mean_theta=mean_theta)
            else:
                terms = _correlate(count, name, d[i], [r[i]], d[j], [r[j]], not per,
                                   normalization=normalization, mean_theta=mean_theta)
            out[(i, j)] = _result(bins, name, terms, regions, present, normalization,
                                  var_method, seed, num_bootstrap, cross_patch_weight)
    return out
