"""Bad input to the public tpacf functions raises a clear error naming the argument."""

import numpy as np
import pytest

from sphgpu.backends import BackendUnavailableError
from sphgpu.tpacf import (AngularBins, Catalog, CorrelationResult, JackknifeRegions,
                          angular_correlation, pair_counts)
from sphgpu.tpacf.mocks import uniform_randoms

B = AngularBins.log(0.1, 10, 5)
RA = np.array([10.0, 11.0, 12.0])
DEC = np.array([0.0, 1.0, 2.0])


@pytest.mark.parametrize("call, exc, match", [
    (lambda: pair_counts(RA, np.array([0.0, 91.0, 2.0]), bins=B), ValueError,
     r"dec1 must be in \[-90, 90\]"),
    (lambda: pair_counts(RA, DEC, RA, np.array([0.0, -90.5, 2.0]), bins=B), ValueError,
     r"dec2 must be in \[-90, 90\]"),
    (lambda: pair_counts(np.array([np.nan, 1.0, 2.0]), DEC, bins=B), ValueError,
     "ra1 contains NaN"),
    (lambda: pair_counts(RA, DEC, RA, np.array([0.0, np.inf, 2.0]), bins=B), ValueError,
     "dec2 contains NaN or infinite"),
    (lambda: pair_counts(np.array([]), np.array([]), bins=B), ValueError, "empty"),
    (lambda: pair_counts(RA, DEC, np.array([]), np.array([]), bins=B), ValueError,
     "ra2 and dec2 are empty"),
    (lambda: pair_counts(RA, DEC[:2], bins=B), ValueError, "same length"),
    (lambda: pair_counts(RA, DEC, bins=B, weights1=np.ones(2)), ValueError,
     r"weights1 must have one entry per point \(3\)"),
    (lambda: pair_counts(RA, DEC, RA, DEC, bins=B, weights2=np.ones(4)), ValueError,
     "weights2 must have one entry"),
    (lambda: pair_counts(RA, DEC, bins=B, weights1=np.array([1.0, np.nan, 1.0])), ValueError,
     "weights1 contains NaN"),
    (lambda: pair_counts(RA, DEC, bins=B, labels1=np.array([0, 1])), ValueError,
     "labels1 must have one entry"),
    (lambda: pair_counts(RA, DEC, RA, DEC, bins=B, labels1=np.zeros(3, int),
                         labels2=np.zeros(5, int)), ValueError, "labels2 must have one entry"),
    (lambda: pair_counts(RA, DEC, bins=B, labels1=np.array([0, -1, 0])), ValueError,
     "labels1 must be >= 0"),
    (lambda: pair_counts(RA, DEC, bins=B, labels1=np.array([0.5, 1, 0])), TypeError,
     "labels1 must hold integers"),
    (lambda: pair_counts(RA, DEC, RA, DEC, bins=B, labels1=np.zeros(3, int)), ValueError,
     "labels1 and labels2 must both be given"),
    (lambda: pair_counts(RA, DEC, bins=B, labels2=np.zeros(3, int)), ValueError,
     "labels2 was given without ra2"),
    (lambda: pair_counts(RA, DEC, RA, bins=B), ValueError, "give both ra2 and dec2"),
    (lambda: pair_counts(RA, bins=B), TypeError, "dec1 is missing"),
    (lambda: pair_counts(RA.reshape(3, 1), DEC, bins=B), ValueError, "ra1 must be 1-D"),
    (lambda: pair_counts(RA.astype(complex), DEC, bins=B), TypeError, "ra1 must hold real"),
    (lambda: pair_counts("ra", DEC, bins=B), TypeError, "ra1 must be a 1-D array"),
    (lambda: pair_counts(RA, DEC, bins=[0.1, 1.0]), TypeError, "bins must be an AngularBins"),
    (lambda: pair_counts(RA, DEC, bins=B, backend="gpu"), ValueError, "backend must be one of"),
    (lambda: pair_counts(RA, DEC, bins=B, precision="float16", backend="cpu"), ValueError,
     "precision must be one of"),
    (lambda: pair_counts(RA, DEC, bins=B, n_regions=3), ValueError, "n_regions was given"),
    (lambda: pair_counts(Catalog(RA, DEC), RA, bins=B), TypeError, "must be a Catalog or None"),
    (lambda: pair_counts(Catalog(RA, DEC), bins=B, weights1=np.ones(3)), TypeError,
     "weights1 must be None"),
    (lambda: pair_counts(Catalog(RA, DEC), Catalog(RA, DEC), bins=B, labels2=np.zeros(3, int)),
     TypeError, r"^labels2 must be None when catalogs are given as Catalog objects \(their "
     r"weights and labels live in the Catalog\)$"),
    (lambda: AngularBins.from_edges([1.0, 0.5]), ValueError, "strictly increasing"),
    (lambda: AngularBins.from_edges([-1.0, 0.5]), ValueError, ">= 0"),
    (lambda: AngularBins.log(1, 181, 3), ValueError, "theta_max must be <= 180"),
])
def test_bad_pair_counts_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


D = Catalog(*uniform_randoms(50, (0, 20, 0, 20), seed=1))
R = Catalog(*uniform_randoms(80, (0, 20, 0, 20), seed=2))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: angular_correlation(D, R, bins=B, estimator="hamilton"), ValueError,
     "estimator must be one of"),
    (lambda: angular_correlation(D, [], bins=B), ValueError, "randoms is an empty list"),
    (lambda: angular_correlation(D, R, bins=B, jackknife="healpix"), ValueError,
     "jackknife must be"),
    (lambda: angular_correlation(D, R, bins=B, jackknife=2.5), TypeError, "jackknife must be"),
    (lambda: angular_correlation(D, R, bins=B, jackknife="labels"), ValueError,
     "needs labels"),
    # the argument the user passed is named, not JackknifeRegions.kmeans's n_regions
    (lambda: angular_correlation(D, R, bins=B, jackknife=1), ValueError,
     r"^jackknife=1: k-means regions need 2 to .* \(80\)"),
    (lambda: angular_correlation(D, R, bins=B, jackknife=np.int64(81)), ValueError,
     r"^jackknife=81: "),
    (lambda: angular_correlation(42, R, bins=B), TypeError, "data must be a Catalog"),
    (lambda: angular_correlation(D, [R, 7], bins=B), TypeError, r"randoms\[1\] must be"),
    (lambda: angular_correlation((RA, DEC[:1]), R, bins=B), ValueError, "same length"),
    (lambda: JackknifeRegions.kmeans(RA, DEC, 5), ValueError, "n_regions must be between"),
    (lambda: JackknifeRegions.kmeans(RA, np.array([0, 0, 95.0]), 2), ValueError, "dec"),
])
def test_bad_correlation_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_cuda_without_a_gpu_raises(monkeypatch):
    from sphgpu import backends
    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no GPU here"))
    with pytest.raises(BackendUnavailableError, match="no GPU here"):
        pair_counts(RA, DEC, bins=B, backend="cuda")


@pytest.mark.parametrize("labels", [np.full(3, 2**63, np.uint64), np.full(3, 10**12)])
def test_huge_labels_name_the_argument(labels):
    # were "Maximum allowed dimension exceeded" / "'list' argument must have no negative
    # elements" / "key_bits must be <= 64" from deep inside NumPy and the sort
    with pytest.raises(ValueError, match="labels1 must be < 2"):
        pair_counts(RA, DEC, bins=B, labels1=labels)


@pytest.mark.parametrize("weights", [np.zeros(3), np.array([1.0, -1.0, 0.0])])
def test_weights_summing_to_zero_are_refused(weights):
    # the estimator divided by a total weight of zero: w came back all NaN, silently
    randoms = uniform_randoms(200, (8, 14, -2, 4), seed=1)
    with pytest.raises(ValueError, match="data weights sum to zero"):
        angular_correlation(Catalog(RA, DEC, weights=weights), randoms, bins=B)


@pytest.mark.parametrize("edges", [[0.0, 1e-170, 1.0], [1.0, 179.99999999999, 179.999999999995]])
def test_edges_that_collapse_in_chord_distance_are_refused(edges):
    # a bin of zero width in squared chord distance silently held no pairs
    with pytest.raises(ValueError, match="too close to tell apart"):
        AngularBins.from_edges(edges)


@pytest.mark.parametrize("call", [lambda: CorrelationResult.read(None),
                                  lambda: CorrelationResult.read(3)])
def test_result_read_names_path(call):
    # was "expected str, bytes or os.PathLike object, not NoneType"
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        call()
