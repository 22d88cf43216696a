"""PairCounts: pair counts in angular bins as an accumulator that adds, pickles and normalises.

Counts of disjoint sets of pairs add: the counts of a survey split into patches, or of a count
split over GPUs, are the sum of the parts (``a + b``, ``sum([...])``). So does every other
field, including the normalisation ``total`` (the number of pairs that could have been counted:
n1 * n2 for a cross count, n (n - 1) / 2 for an auto count) and the per-region arrays of the
jackknife. Adding counts made with different bins or region numbers raises ValueError.

Jackknife (the slides' "inverse jackknife"): ``region_counts[k]`` counts the pairs with at
least one point in region k, every pair entering once per region it touches. The counts with
region k left out are then ``counts - region_counts[k]`` -- exactly what recounting without
region k gives -- and ``region_total[k]`` is the matching normalisation.
"""

from __future__ import annotations

import numpy as np

from .bins import AngularBins

__all__ = ["PairCounts"]

_ARRAYS = ("counts", "weights", "region_counts", "region_weights", "region_total",
           "region_weighted_total")


class PairCounts:
    """Pair counts per angular bin, with optional weights and per-region (jackknife) counts.

    Attributes
    ----------
    bins : AngularBins
    counts : ndarray (nbins,), int64
        Number of pairs in each bin. Auto-correlations count each unique pair once (i < j,
        no self-pairs); Corrfunc's ``DDtheta_mocks`` with ``autocorr=1`` counts both orders
        (twice these numbers), TreeCorr's ``npairs`` counts each once as here.
    weights : ndarray (nbins,), float64, or None
        Sum of w_i * w_j over the pairs of each bin (when weights were given).
    n1, n2 : int
        Sizes of the catalogs (n2 == n1 for an auto count); summed when counts are added.
    auto : bool
        True for an auto count (summing auto and cross parts gives ``auto=False``).
    total : float
        Number of pairs that could be counted (n1 n2, or n1 (n1 - 1) / 2 for auto counts).
    weighted_total : float or None
        The same with weights: sum w1 * sum w2, or ((sum w)**2 - sum w**2) / 2.
    region_counts : ndarray (n_regions, nbins), int64, or None
        Pairs with at least one point in region k (see the module docstring).
    region_weights : ndarray (n_regions, nbins), float64, or None
    region_total, region_weighted_total : ndarray (n_regions,), float64, or None
        The normalisations of the pairs touching region k.
    pairs_compared, refined : int
        Diagnostics: pairs the backend compared after pruning, and of those how many the
        float32 path recomputed in float64.
    """

    def __init__(self, bins, counts, *, n1, n2, auto, total, weights=None, weighted_total=None,
                 region_counts=None, region_weights=None, region_total=None,
                 region_weighted_total=None, pairs_compared=0, refined=0):
        if not isinstance(bins, AngularBins):
            raise TypeError(f"bins must be an AngularBins, got {type(bins).__name__}")
        self.bins = bins
        self.counts = np.asarray(counts, dtype=np.int64)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.n1, self.n2, self.auto = int(n1), int(n2), bool(auto)
        self.total = float(total)
        self.weighted_total = None if weighted_total is None else float(weighted_total)
        self.region_counts = (None if region_counts is None
                              else np.asarray(region_counts, dtype=np.int64))
        self.region_weights = (None if region_weights is None
                               else np.asarray(region_weights, dtype=np.float64))
        self.region_total = (None if region_total is None
                             else np.asarray(region_total, dtype=np.float64))
        self.region_weighted_total = (None if region_weighted_total is None
                                      else np.asarray(region_weighted_total, dtype=np.float64))
        self.pairs_compared = int(pairs_compared)
        self.refined = int(refined)
        if self.counts.shape != (bins.nbins,):
            raise ValueError(f"counts must have shape ({bins.nbins},), got {self.counts.shape}")

    # --- shape of the data --------------------------------------------------------------------
    @property
    def nbins(self) -> int:
        return self.bins.nbins

    @property
    def is_weighted(self) -> bool:
        return self.weights is not None

    @property
    def n_regions(self) -> int:
        """Number of jackknife regions (0 without labels)."""
        return 0 if self.region_counts is None else self.region_counts.shape[0]

    # --- normalised counts --------------------------------------------------------------------
    def normalized(self, *, weighted=None):
        """Counts over the number of possible pairs, (nbins,) float64 (weights when weighted)."""
        if self._use_weights(weighted):
            return self.weights / self.weighted_total
        return self.counts / self.total

    def leave_one_out(self):
        """Counts without each region: (n_regions, nbins) int64, row k = counts - region k."""
        self._need_regions()
        return self.counts[None, :] - self.region_counts

    def leave_one_out_normalized(self, *, weighted=None):
        """Leave-one-out counts over their numbers of possible pairs, (n_regions, nbins)."""
        self._need_regions()
        if self._use_weights(weighted):
            num = self.weights[None, :] - self.region_weights
            den = self.weighted_total - self.region_weighted_total
        else:
            num = self.counts[None, :] - self.region_counts
            den = self.total - self.region_total
        with np.errstate(divide="ignore", invalid="ignore"):
            return num / den[:, None]

    def _use_weights(self, weighted):
        if weighted is None:
            return self.is_weighted
        if weighted and not self.is_weighted:
            raise ValueError("these counts carry no weights (give weights1/weights2)")
        return bool(weighted)

    def _need_regions(self):
        if self.region_counts is None:
            raise ValueError("these counts have no jackknife regions (give labels1/labels2)")

    # --- accumulation -------------------------------------------------------------------------
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

        def add(a, b):
            return None if a is None else a + b

        return PairCounts(
            self.bins, self.counts + other.counts, n1=self.n1 + other.n1,
            n2=self.n2 + other.n2, auto=False,     # a sum mixes auto and cross parts in general
            total=self.total + other.total, weights=add(self.weights, other.weights),
            weighted_total=add(self.weighted_total, other.weighted_total),
            region_counts=add(self.region_counts, other.region_counts),
            region_weights=add(self.region_weights, other.region_weights),
            region_total=add(self.region_total, other.region_total),
            region_weighted_total=add(self.region_weighted_total, other.region_weighted_total),
            pairs_compared=self.pairs_compared + other.pairs_compared,
            refined=self.refined + other.refined)

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
