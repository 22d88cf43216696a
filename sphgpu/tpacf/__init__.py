"""Angular two-point correlation functions: exact DD/DR/RR pair counts, estimators, jackknife.

:func:`pair_counts` counts pairs of points (RA/Dec in degrees) in :class:`AngularBins`, exactly:
a pair's bin is decided on its float64 squared chord distance (never on ``acos`` of a rounded
dot product), identically on every backend -- "cuda" (Numba CUDA), "cpu" (Numba, parallel) and
"reference" (NumPy brute force). Grid pruning (:mod:`sphgpu.tpacf.grid`) makes the cost follow
the pairs inside theta_max. The result is a :class:`PairCounts` accumulator (adds with ``+``,
pickles) with optional weights and per-region jackknife counts.

:func:`angular_correlation` runs DD, DR and RR over one or several random catalogs and applies
the natural, Landy-Szalay or the slides' multi-random estimator; with ``data2`` it is the
cross-correlation of two data sets, and :func:`angular_correlations` makes every auto and cross
correlation of k catalogs in one call. Covariances (jackknife, sample, bootstrap, marked
bootstrap, shot noise; :func:`joint_covariance` of several results) come from one counting pass
of per-patch counts (:class:`JackknifeRegions` makes k-means or HEALPix regions), with
TreeCorr's definitions; ``normalization="treecorr"`` reproduces TreeCorr's numbers. A
:class:`CorrelationResult` holds w, its counts, covariance and mean separations, writes and
reads FITS or ASCII files and plots itself.
:mod:`sphgpu.tpacf.mocks` draws uniform and clustered mock catalogs.
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from . import budget, mocks
from .api import angular_correlation, angular_correlations, pair_counts
from .bins import AngularBins
from .catalog import Catalog
from .counts import PairCounts
from .estimators import landy_szalay, multi_random, natural
from .jackknife import JackknifeRegions, jackknife_covariance
from .result import CorrelationResult, joint_covariance

__all__ = ["AngularBins", "PairCounts", "pair_counts", "angular_correlation",
           "angular_correlations", "Catalog", "CorrelationResult", "JackknifeRegions",
           "jackknife_covariance", "joint_covariance", "natural", "landy_szalay",
           "multi_random", "mocks"]
