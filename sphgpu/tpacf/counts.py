"""PairCounts: pair counts in angular bins as an accumulator that adds, pickles and normalises.

Counts of disjoint sets of pairs add: the counts of a survey split into patches, or of a count
split over GPUs, are the sum of the parts (``a + b``, ``sum([...])``). So does every other
field, including the normalisation ``total`` (the number of pairs that could have been counted:
n1 * n2 for a cross count, n (n - 1) / 2 for an auto count), the sums of separations behind
:attr:`PairCounts.mean_theta`, and the per-patch arrays. Adding counts made with different bins
or region numbers raises ValueError.

Patches (jackknife regions): with labels, ``patch_counts[a, b]`` counts the pairs with the first
point in region a and the second in region b (an auto count keeps each unordered pair once, in
the upper triangle a <= b), and ``patch_total[a, b]`` is its number of possible pairs. Every
covariance estimate (:mod:`sphgpu.tpacf.covariance`: jackknife, sample, bootstraps) is a
weighted sum of these matrices, so one counting pass serves them all. The slides' "inverse
jackknife" is one of them: ``region_counts[k]`` counts the pairs with at least one point in
region k, so ``counts - region_counts[k]`` is exactly what recounting without region k gives.

Normalisations: ``"pairs"`` (default) divides by the number of distinct pairs, n (n - 1) / 2
for an auto count, which is the expected count of unclustered points per unit of bin
probability; ``"treecorr"`` divides auto counts by n**2 / 2 as TreeCorr does (with weights:
(sum w)**2 / 2 instead of ((sum w)**2 - sum w**2) / 2), which biases w by about -1/n but
matches TreeCorr's numbers exactly. Cross counts are divided by n1 n2 in both.
"""

from __future__ import annotations

import numpy as np

from .bins import UNITS, AngularBins

__all__ = ["PairCounts", "NORMALIZATIONS", "check_normalization", "catalog_sums",
           "counts_from_raw", "counts_from_sums"]

NORMALIZATIONS = ("pairs", "treecorr")

#: the fields of a PairCounts that add when counts add (None stays None); result files store
#: them (:mod:`sphgpu.tpacf.result`)
ADDITIVE = ("counts", "weights", "total", "weighted_total", "self_total",
             "weighted_self_total", "patch_counts", "patch_weights", "patch_total",
             "patch_weighted_total", "patch_self_total", "patch_weighted_self_total",
             "theta_sum", "log_theta_sum", "pairs_compared", "refined", "pairs_at_once")


def check_normalization(normalization):
    """The normalisation name, checked: one of :data:`NORMALIZATIONS`.

    Parameters
    ----------
    normalization : str

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For any other value.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got "
                         f"{normalization!r}")
    return normalization


def _fold(m):
    """An auto count's patch matrix with each unordered pair {a, b} in the upper triangle."""
    if m is None:
        return None
    if m.ndim == 2:
        return np.triu(m) + np.tril(m, -1).T
    t = np.moveaxis(m, 2, 0)                      # (nbins, R, R): fold each bin's matrix
    return np.moveaxis(np.triu(t) + np.swapaxes(np.tril(t, -1), 1, 2), 0, 2)


class PairCounts:
    """Pair counts per angular bin, with optional weights, separations and per-patch counts.

    Parameters
    ----------
    bins : AngularBins
    counts : array_like, shape (nbins,), int
    n1, n2 : int
        Numbers of points counted: those of non-zero weight (TreeCorr's ``nobj``; every point
        without weights). n2 == n1 for an auto count.
    auto : bool
        True for an auto count.
    total : float
        Number of pairs that could be counted (n1 n2, or n1 (n1 - 1) / 2 for auto counts).
    weights : array_like, shape (nbins,), optional
        Sum of w_i * w_j over the pairs of each bin.
    weighted_total : float, optional
        ``total`` with weights: sum w1 * sum w2, or ((sum w)**2 - sum w**2) / 2.
    self_total, weighted_self_total : float, optional
        What TreeCorr's normalisation adds to the totals: n / 2 and sum w**2 / 2 for an auto
        count, 0 for a cross count.
    patch_counts : array_like, shape (R, R, nbins), int, optional
        Pairs with the first point in region a and the second in region b (auto: folded into
        a <= b).
    patch_weights : array_like, shape (R, R, nbins), optional
    patch_total, patch_weighted_total : array_like, shape (R, R), optional
        Possible pairs (weighted) of each pair of regions (auto: folded into a <= b).
    patch_self_total, patch_weighted_self_total : array_like, shape (R,), optional
        Per region, the TreeCorr additions of the diagonal (n_a / 2 and sum w**2 / 2).
    theta_sum, log_theta_sum : array_like, shape (nbins,), optional
        Sums over the pairs of each bin of w_i w_j theta and w_i w_j ln(theta), theta in
        radians (unit weights without weights).
    pairs_compared, refined : int
        Diagnostics: pairs the backend compared after pruning, and of those how many the
        float32 path recomputed in float64.
    pairs_at_once : int
        Diagnostic of an approximate count (``bin_slop``): pairs counted at once, by cell
        pair, instead of by their own separation (0 in an exact count).

    Raises
    ------
    TypeError
        If ``bins`` is not an AngularBins.
    ValueError
        If an array has the wrong shape.

    Notes
    -----
    Auto counts count each unique pair (i < j, no self-pairs) once, as TreeCorr's ``npairs``;
    Corrfunc's ``DDtheta_mocks`` with ``autocorr=1`` counts both orders (twice these numbers).
    As in TreeCorr, points of weight 0 are not counted: ``counts`` equals TreeCorr's
    ``npairs`` on weighted catalogs too, and ``total`` is the number of possible pairs of the
    points of non-zero weight.
    """

    def __init__(self, bins, counts, *, n1, n2, auto, total, weights=None, weighted_total=None,
                 self_total=0.0, weighted_self_total=None, patch_counts=None,
                 patch_weights=None, patch_total=None, patch_weighted_total=None,
                 patch_self_total=None, patch_weighted_self_total=None, theta_sum=None,
                 log_theta_sum=None, pairs_compared=0, refined=0, pairs_at_once=0):
        if not isinstance(bins, AngularBins):
            raise TypeError(f"bins must be an AngularBins, got {type(bins).__name__}")

        def arr(a, dtype=np.float64):
            return None if a is None else np.asarray(a, dtype=dtype)

        self.bins = bins
        self.counts = np.asarray(counts, dtype=np.int64)
        self.weights = arr(weights)
        self.n1, self.n2, self.auto = int(n1), int(n2), bool(auto)
        self.total = float(total)
        self.weighted_total = None if weighted_total is None else float(weighted_total)
        self.self_total = float(self_total)
        self.weighted_self_total = (None if weighted_self_total is None
                                    else float(weighted_self_total))
        fold = _fold if self.auto else (lambda m: m)
        self.patch_counts = fold(arr(patch_counts, np.int64))
        self.patch_weights = fold(arr(patch_weights))
        self.patch_total = fold(arr(patch_total))
        self.patch_weighted_total = fold(arr(patch_weighted_total))
        self.patch_self_total = arr(patch_self_total)
        self.patch_weighted_self_total = arr(patch_weighted_self_total)
        self.theta_sum = arr(theta_sum)
        self.log_theta_sum = arr(log_theta_sum)
        self.pairs_compared = int(pairs_compared)
        self.refined = int(refined)
        self.pairs_at_once = int(pairs_at_once)
        nb = bins.nbins
        if self.counts.shape != (nb,):
            raise ValueError(f"counts must have shape ({nb},), got {self.counts.shape}")
        if self.patch_counts is not None:
            r = self.patch_counts.shape[0]
            if self.patch_counts.shape != (r, r, nb):
                raise ValueError(f"patch_counts must have shape (R, R, {nb}), got "
                                 f"{self.patch_counts.shape}")

    # --- shape of the data --------------------------------------------------------------------
    @property
    def nbins(self) -> int:
        """Number of bins."""
        return self.bins.nbins

    @property
    def is_weighted(self) -> bool:
        """Whether the counts carry weights."""
        return self.weights is not None

    @property
    def n_regions(self) -> int:
        """Number of jackknife regions (0 without labels)."""
        return 0 if self.patch_counts is None else self.patch_counts.shape[0]

    # --- mean separations ---------------------------------------------------------------------
    def _per_pair(self, s):
        if s is None:
            return None
        den = self.weights if self.is_weighted else self.counts
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den != 0, s / np.where(den != 0, den, 1), np.nan)

    @property
    def mean_theta(self):
        """Pair-weighted mean separation per bin, (nbins,) float64 in ``bins.unit``: TreeCorr's
        ``meanr``. NaN in empty bins; None when the count did not ask for separations
        (``mean_theta=True`` of :func:`~sphgpu.tpacf.pair_counts`)."""
        m = self._per_pair(self.theta_sum)
        return None if m is None else m / UNITS[self.bins.unit]

    @property
    def mean_log_theta(self):
        """Pair-weighted mean of ln(theta / unit) per bin, (nbins,) float64: TreeCorr's
        ``meanlogr``. NaN in empty bins (-inf in a bin from 0 holding pairs of coincident
        points); None without separations."""
        m = self._per_pair(self.log_theta_sum)
        return None if m is None else m - np.log(UNITS[self.bins.unit])

    # --- per-patch views ----------------------------------------------------------------------
    def _need_regions(self):
        if self.patch_counts is None:
            raise ValueError("these counts have no jackknife regions (give labels1/labels2)")

    @staticmethod
    def _touching(m):
        """Sums over the pairs with at least one point in region k, (R, ...)."""
        return m.sum(axis=1) + m.sum(axis=0) - np.diagonal(m, axis1=0, axis2=1).T \
            if m.ndim == 3 else m.sum(axis=1) + m.sum(axis=0) - np.diagonal(m)

    @property
    def region_counts(self):
        """Pairs with at least one point in region k, (R, nbins) int64, or None."""
        return None if self.patch_counts is None else self._touching(self.patch_counts)

    @property
    def region_weights(self):
        """Weighted :attr:`region_counts`, (R, nbins) float64, or None."""
        return None if self.patch_weights is None else self._touching(self.patch_weights)

    @property
    def region_total(self):
        """Possible pairs touching region k, (R,) float64, or None."""
        return None if self.patch_total is None else self._touching(self.patch_total)

    @property
    def region_weighted_total(self):
        """Weighted :attr:`region_total`, (R,) float64, or None."""
        return (None if self.patch_weighted_total is None
                else self._touching(self.patch_weighted_total))

    def patch_sums(self, rows, *, weighted=None, normalization="pairs"):
        """Counts and totals of weighted selections of patch pairs.

        Parameters
        ----------
        rows : array_like, shape (m, R, R)
            Weight of each pair of regions (a, b) in each of m selections.
        weighted : bool, optional
            Use the weighted sums (default: when the counts carry weights).
        normalization : {"pairs", "treecorr"}

        Returns
        -------
        num : ndarray, shape (m, nbins), float64
            sum_ab rows[:, a, b] * patch_counts[a, b] (or patch_weights).
        tot : ndarray, shape (m,), float64
            The same sums of the possible pairs.

        Raises
        ------
        ValueError
            Without regions, or when ``rows`` does not match them.
        """
        self._need_regions()
        r = self.n_regions
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 3 or rows.shape[1:] != (r, r):
            raise ValueError(f"rows must have shape (m, {r}, {r}), got {rows.shape}")
        w = self._use_weights(weighted)
        m = self.patch_weights if w else self.patch_counts
        t = self.patch_weighted_total if w else self.patch_total
        flat = rows.reshape(rows.shape[0], r * r)
        num = flat @ m.reshape(r * r, -1).astype(np.float64)
        tot = flat @ t.reshape(r * r)
        if check_normalization(normalization) == "treecorr":
            s = self.patch_weighted_self_total if w else self.patch_self_total
            tot = tot + np.diagonal(rows, axis1=1, axis2=2) @ s
        return num, tot

    # --- normalised counts --------------------------------------------------------------------
    def normalized(self, *, weighted=None, normalization="pairs"):
        """Counts over the number of possible pairs.

        Parameters
        ----------
        weighted : bool, optional
            Use the weighted sums (default: when the counts carry weights).
        normalization : {"pairs", "treecorr"}
            See the module docstring.

        Returns
        -------
        ndarray, shape (nbins,), float64

        Raises
        ------
        ValueError
            ``weighted=True`` on counts without weights, or an unknown normalization.
        """
        extra = check_normalization(normalization) == "treecorr"
        if self._use_weights(weighted):
            return self.weights / (self.weighted_total
                                   + (self.weighted_self_total or 0.0) * extra)
        return self.counts / (self.total + self.self_total * extra)

    def leave_one_out(self):
        """Counts without each region.

        Returns
        -------
        ndarray, shape (R, nbins), int64
            Row k: the counts of the pairs with no point in region k.

        Raises
        ------
        ValueError
            Without regions.
        """
        self._need_regions()
        return self.counts[None, :] - self.region_counts

    def leave_one_out_normalized(self, *, weighted=None, normalization="pairs"):
        """Leave-one-out counts over their numbers of possible pairs.

        Parameters
        ----------
        weighted : bool, optional
            Use the weighted sums (default: when the counts carry weights).
        normalization : {"pairs", "treecorr"}

        Returns
        -------
        ndarray, shape (R, nbins), float64

        Raises
        ------
        ValueError
            Without regions.
        """
        num, tot = self.leave_one_out_sums(weighted=weighted, normalization=normalization)
        with np.errstate(divide="ignore", invalid="ignore"):
            return num / tot[:, None]

    def leave_one_out_sums(self, *, weighted=None, normalization="pairs"):
        """Counts and numbers of possible pairs without each region (jackknife), O(R).

        Parameters
        ----------
        weighted : bool, optional
            Use the weighted sums (default: when the counts carry weights).
        normalization : {"pairs", "treecorr"}

        Returns
        -------
        num : ndarray, shape (R, nbins), float64
        tot : ndarray, shape (R,), float64

        Raises
        ------
        ValueError
            Without regions.
        """
        self._need_regions()
        extra = check_normalization(normalization) == "treecorr"
        if self._use_weights(weighted):
            num = self.weights[None, :] - self.region_weights
            tot = self.weighted_total - self.region_weighted_total
            if extra:
                tot = tot + self.weighted_self_total - self.patch_weighted_self_total
        else:
            num = (self.counts[None, :] - self.region_counts).astype(np.float64)
            tot = self.total - self.region_total
            if extra:
                tot = tot + self.self_total - self.patch_self_total
        return num, tot

    def _use_weights(self, weighted):
        if weighted is None:
            return self.is_weighted
        if weighted and not self.is_weighted:
            raise ValueError("these counts carry no weights (give weights1/weights2)")
        return bool(weighted)

    def ordered(self):
        """An auto count as the cross count of its catalog with itself (R1R2 with R2 = R1).

        A cross-correlation whose two data sets share one random catalog needs R1R2, which
        counts each pair of distinct points in both orders: every count, total and weighted sum
        doubles, and each patch matrix M (folded, a <= b) becomes M + M^T, so that a selection
        by the first point's region (sample, marked bootstrap) sees the pairs in both orders as
        TreeCorr's ``rr.process(r, r)`` does. Pairs of a point with itself are not counted
        (their separation is 0), but TreeCorr's normalisation of the diagonal (n_a**2 possible
        ordered pairs of region a) is kept in ``self_total``.

        Returns
        -------
        PairCounts
            A cross count (``auto=False``); ``self`` unchanged when it is already one.
        """
        if not self.auto:
            return self

        def sym(m):
            if m is None:
                return None
            return m + (m.T if m.ndim == 2 else np.swapaxes(m, 0, 1))

        def twice(x):
            return None if x is None else 2 * x

        return PairCounts(
            self.bins, 2 * self.counts, n1=self.n1, n2=self.n2, auto=False,
            total=2 * self.total, self_total=2 * self.self_total, weights=twice(self.weights),
            weighted_total=twice(self.weighted_total),
            weighted_self_total=twice(self.weighted_self_total),
            patch_counts=sym(self.patch_counts), patch_weights=sym(self.patch_weights),
            patch_total=sym(self.patch_total), patch_weighted_total=sym(self.patch_weighted_total),
            patch_self_total=twice(self.patch_self_total),
            patch_weighted_self_total=twice(self.patch_weighted_self_total),
            theta_sum=twice(self.theta_sum), log_theta_sum=twice(self.log_theta_sum),
            pairs_compared=self.pairs_compared, refined=self.refined,
            pairs_at_once=2 * self.pairs_at_once)

    # --- accumulation -------------------------------------------------------------------------
    def replace(self, **changes):
        """A copy with some constructor arguments changed.

        Parameters
        ----------
        **changes
            Constructor arguments (e.g. ``n1=, n2=, auto=``).

        Returns
        -------
        PairCounts
        """
        kw = {name: getattr(self, name) for name in ADDITIVE}
        kw.update(n1=self.n1, n2=self.n2, auto=self.auto)
        kw.update(changes)
        return PairCounts(self.bins, **kw)

    def __add__(self, other):
        if isinstance(other, int) and other == 0:        # sum([...]) starts from 0
            return self
        if not isinstance(other, PairCounts):
            return NotImplemented
        if not self.bins.same_as(other.bins):
            raise ValueError(f"cannot add PairCounts with different bins: {self.bins} and "
                             f"{other.bins}")
        if self.is_weighted != other.is_weighted:
            raise ValueError("cannot add weighted and unweighted PairCounts")
        if self.n_regions != other.n_regions:
            raise ValueError(f"cannot add PairCounts with {self.n_regions} and "
                             f"{other.n_regions} jackknife regions (pass n_regions= so that "
                             "every count uses the same numbering)")
        if (self.theta_sum is None) != (other.theta_sum is None):
            raise ValueError("cannot add PairCounts with and without mean separations "
                             "(count both with mean_theta=True)")
        kw = {}
        for name in ADDITIVE:
            a, b = getattr(self, name), getattr(other, name)
            kw[name] = None if a is None or b is None else a + b
        # a sum mixes auto and cross parts in general; folded auto matrices stay folded
        return PairCounts(self.bins, n1=self.n1 + other.n1, n2=self.n2 + other.n2, auto=False,
                          **kw)

    __radd__ = __add__

    def __repr__(self):
        extra = (", weighted" if self.is_weighted else "") + (
            f", {self.n_regions} regions" if self.n_regions else "")
        kind = "auto" if self.auto else "cross"
        return (f"PairCounts({kind}, n1={self.n1}, n2={self.n2}, {self.bins}, "
                f"{int(self.counts.sum())} pairs{extra})")

    # pickling: plain attributes (numpy arrays and an AngularBins) pickle as they are
    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


def _nobj(cat):
    """Number of points that are counted (non-zero weight): TreeCorr's ``nobj``."""
    return cat.size if cat.weights is None else int(np.count_nonzero(cat.weights))


def _region_sums(cat, nreg):
    """Per region of a catalog (one region without labels): n, sum w, sum w**2, (R,) each;
    n counts the points of non-zero weight (the only ones paired)."""
    r = max(nreg, 1)
    lab = cat.labels if nreg else None
    w = cat.weights
    if w is not None and lab is not None:
        lab_n = lab[w != 0]
    else:
        lab_n = lab
    n = (np.array([float(_nobj(cat))]) if lab is None
         else np.bincount(lab_n, minlength=r).astype(np.float64))
    if w is None:                 # unit weights: no arrays to sum (this runs in every count)
        return n, n, n
    if lab is None:
        return n, np.array([w.sum()]), np.array([np.dot(w, w)])
    return n, np.bincount(lab, weights=w, minlength=r), np.bincount(lab, weights=w * w,
                                                                      minlength=r)


def _totals_of_sums(sums1, sums2, nreg, weighted):
    """Possible pairs of each pair of regions (R, R) and, auto, what TreeCorr's normalisation
    adds on the diagonal (R,): unweighted and (when ``weighted``) weighted, from the catalogs'
    per-region sums (:func:`_region_sums`; ``sums2`` None: auto)."""
    n1, s1, q1 = sums1
    if sums2 is None:
        def auto(s, q):                       # pairs i < j: off the diagonal a < b
            t = np.triu(np.outer(s, s), 1)
            t[np.diag_indices_from(t)] = (s * s - q) / 2.0
            return t, q / 2.0
        t, st = auto(n1, n1)
        wt, wst = auto(s1, q1) if weighted else (None, None)
        return t, st, wt, wst
    n2, s2, _ = sums2
    zero = np.zeros(max(nreg, 1))
    return (np.outer(n1, n2), zero, np.outer(s1, s2) if weighted else None,
            zero if weighted else None)


def catalog_sums(cat, n_regions):
    """What the normalisation of a count needs of one catalog, as :func:`counts_from_sums`
    takes it: (nobj, (n, sum_w, sum_w2)).

    Parameters
    ----------
    cat : Catalog
        Its ``weights`` (None: unit weights) and ``labels`` are read.
    n_regions : int
        Jackknife regions of the count (0: none; labels are then ignored).

    Returns
    -------
    nobj : int
        Points of non-zero weight (the only ones paired): TreeCorr's ``nobj``.
    (n, sum_w, sum_w2) : three float64 arrays of shape (max(n_regions, 1),)
        Per region: those points, and the sums of the weights and of their squares.
    """
    return _nobj(cat), _region_sums(cat, n_regions)


def counts_from_raw(raw, cat1, cat2, bins, n_regions, weighted):
    """The :class:`PairCounts` of a backend's :class:`~sphgpu.tpacf.reference.RawCounts` of
    ``cat1`` x ``cat2`` (``cat2`` None: auto), with the totals of those catalogs: written once
    here for every backend and for :mod:`sphgpu.distributed.tpacf`.

    ``bins``: the AngularBins counted; ``n_regions``: int, jackknife regions (0: none);
    ``weighted``: bool, whether weighted totals are kept.
    """
    return counts_from_sums(raw, catalog_sums(cat1, n_regions),
                            None if cat2 is None else catalog_sums(cat2, n_regions),
                            bins, n_regions, weighted)


def counts_from_sums(raw, sums1, sums2, bins, n_regions, weighted):
    """:func:`counts_from_raw` from each catalog's :func:`catalog_sums` (``sums2`` None: auto),
    which a caller may have made without holding the catalog (summed over the chunks of a
    file that no single process reads whole)."""
    t, st, wt, wst = _totals_of_sums(sums1[1], None if sums2 is None else sums2[1],
                                     n_regions, weighted)
    reg = n_regions > 0
    return PairCounts(
        bins, raw.counts, n1=sums1[0], n2=(sums1 if sums2 is None else sums2)[0],
        auto=sums2 is None, total=t.sum(), self_total=st.sum(), weights=raw.weights,
        weighted_total=None if wt is None else wt.sum(),
        weighted_self_total=None if wst is None else wst.sum(),
        patch_counts=raw.patch_counts, patch_weights=raw.patch_weights,
        patch_total=t if reg else None, patch_weighted_total=wt if reg else None,
        patch_self_total=st if reg else None, patch_weighted_self_total=wst if reg else None,
        theta_sum=raw.theta_sum, log_theta_sum=raw.log_theta_sum,
        pairs_compared=raw.pairs_compared, refined=raw.refined, pairs_at_once=raw.at_once)
