"""Pure helpers of the scale row in benchmarks/tpacf.py: the uniform full-sky expectation that
checks a count too large for an exact twin, and the chunking of a count over a cluster."""

import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, budget, pair_counts
from sphgpu.tpacf.mocks import uniform_randoms
from tests.benchmark_scripts import load_benchmark

BINS = AngularBins.log(0.5, 60, 8)


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("tpacf")


def test_uniform_expectation_matches_counts(bench, rng):
    # 20 catalogs x 8 bins: the deviations in standard deviations must look like N(0, 1); the
    # mean of 160 z**2 is 1 +- 0.11, so a variance off by a factor 2 (or a mean off by a few
    # percent) falls outside (0.7, 1.4)
    n = 1500
    mean, sd = bench.uniform_rr_expected(n, BINS)
    z = []
    for _ in range(20):
        ra, dec = uniform_randoms(n, (0.0, 360.0, -90.0, 90.0), seed=int(rng.integers(2**31)))
        z.append((pair_counts(ra, dec, bins=BINS, backend="cpu").counts - mean) / sd)
    z = np.concatenate(z)
    assert np.max(np.abs(z)) < 5
    assert 0.7 < np.mean(z**2) < 1.4


def test_uniform_expectation_of_a_cap(bench):
    # pairs within 150 degrees: the cap's share of the sphere, (1 - cos 150) / 2
    mean, _ = bench.uniform_rr_expected(1001, AngularBins.from_edges([0, 30, 90, 150]))
    want = 1001 * 1000 / 2 * (1 - np.cos(np.deg2rad(150))) / 2
    assert mean.sum() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("n,workers", [(10**8, 1), (10**8, 4), (10**7, 8), (1, 1), (33, 2)])
def test_cluster_chunks_are_the_fewest_that_fit_and_feed_every_worker(bench, n, workers):
    def fits(k):       # two chunks' prepared points within half the budget, 4 tasks a worker
        return (2 * n / k * budget.POINT_BYTES <= budget.DEFAULT_BUDGET / 2
                and k * (k + 1) // 2 >= 4 * workers)

    k = bench.cluster_nchunks(n, workers, budget.DEFAULT_BUDGET, budget.POINT_BYTES)
    assert fits(k) and (k == 1 or not fits(k - 1))


def test_cluster_chunks_refuse_nothing_to_count(bench):
    with pytest.raises(ValueError, match="workers"):
        bench.cluster_nchunks(10, 0, budget.DEFAULT_BUDGET, budget.POINT_BYTES)
