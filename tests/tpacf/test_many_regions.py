"""Counts with many jackknife regions (100-200, as survey covariances use) on every backend,
against the reference's brute force: the regions are part of the grid's sort keys and work
items, and of the patch-pair index of every histogram (CUDA in Numba's simulator at tiny
sizes; real sizes on the GPU machine with `pytest -m gpu`)."""

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, _cpu, budget, pair_counts
from sphgpu.tpacf.grid import build_plan
from sphgpu.tpacf.mocks import uniform_randoms

BINS = AngularBins.log(0.2, 6, 5, unit="deg")


def _same(got, ref):
    np.testing.assert_array_equal(got.counts, ref.counts)
    np.testing.assert_array_equal(got.patch_counts, ref.patch_counts)
    np.testing.assert_array_equal(got.region_counts, ref.region_counts)
    np.testing.assert_allclose(got.patch_total, ref.patch_total, rtol=0)
    assert (got.patch_weights is None) == (ref.patch_weights is None)
    if ref.patch_weights is not None:
        np.testing.assert_allclose(got.patch_weights, ref.patch_weights,
                                   rtol=TOL["pair_sums_rtol"])


def _catalogs(n1, n2, nreg, seed):
    """Two catalogs over 16 x 16 degrees with labels drawn at random from ``nreg`` regions, so
    every cell of the grid holds many labels (the hardest layout for the keys), and weights."""
    rng = np.random.default_rng(seed)
    ra, dec = uniform_randoms(n1, (20, 36, -8, 8), seed=seed)
    ra2, dec2 = uniform_randoms(n2, (20, 36, -8, 8), seed=seed + 1)
    return (ra, dec, rng.integers(0, nreg, n1), rng.uniform(0.5, 1.5, n1), ra2, dec2,
            rng.integers(0, nreg, n2))


@pytest.mark.slow
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
def test_cuda_with_130_regions_in_the_simulator():
    """Regions of about 1.6 x 1.2 degrees (a 10 x 13 grid, numbered up to 129), compact as
    patches are: few labels a cell, so the simulator runs few work items. Slow all the same:
    one simulated count of 30 points took 26 s with 130 regions against 5 s without, in the
    simulator's kernel runs."""
    ra, dec, _, w, ra2, dec2, _ = _catalogs(30, 20, 130, seed=3)

    def patch(r, d):
        return (np.floor((r - 20) / 1.6).astype(np.int64) * 13
                + np.floor((d + 8) / 1.6 * 13 / 10).astype(np.int64).clip(0, 12))

    lab, lab2 = patch(ra, dec), patch(ra2, dec2)
    assert lab.max() <= 129 and lab2.max() <= 129
    for args, kw in (((ra, dec), dict(labels1=lab, weights1=w)),
                     ((ra, dec, ra2, dec2), dict(labels1=lab, labels2=lab2))):
        ref = pair_counts(*args, bins=BINS, backend="reference", n_regions=130, **kw)
        assert ref.counts.sum() > 0 and ref.patch_counts.shape == (130, 130, 5)
        assert np.count_nonzero(ref.patch_counts.any(axis=2)) > 10
        _same(pair_counts(*args, bins=BINS, backend="cuda", n_regions=130, **kw), ref)


@pytest.mark.gpu
def test_cuda_with_200_regions_at_real_sizes():
    ra, dec, lab, w, ra2, dec2, lab2 = _catalogs(40000, 30000, 200, seed=5)
    for args, kw in (((ra, dec), dict(labels1=lab, weights1=w)),
                     ((ra, dec, ra2, dec2), dict(labels1=lab, labels2=lab2))):
        ref = pair_counts(*args, bins=BINS, backend="cpu", n_regions=200, **kw)
        _same(pair_counts(*args, bins=BINS, backend="cuda", n_regions=200, **kw), ref)


def test_cpu_with_200_regions_and_budget_splits():
    """200 regions, with a memory budget that makes the count split itself (the per-region
    histograms are part of the plan's bytes): the same counts as the brute force."""
    ra, dec, lab, w, ra2, dec2, lab2 = _catalogs(900, 700, 200, seed=7)
    ref = pair_counts(ra, dec, bins=BINS, labels1=lab, weights1=w, backend="reference",
                      n_regions=200)
    whole = pair_counts(ra, dec, bins=BINS, labels1=lab, weights1=w, backend="cpu",
                        n_regions=200)
    _same(whole, ref)
    # a budget over the histograms and points but under the whole plan: the count splits
    cat = Catalog(ra, dec, labels=lab, weights=w)
    plan = build_plan(cat, None, BINS, n_regions=200, i_tile=_cpu.I_TILE, j_max=_cpu.J_MAX)
    need = budget.POINT_BYTES * cat.size + budget.plan_bytes(plan, BINS.nbins, 200, True,
                                                             False)
    hist = 16 * 200 * 200 * BINS.nbins
    assert hist < need
    said = []
    split = pair_counts(ra, dec, bins=BINS, labels1=lab, weights1=w, backend="cpu",
                        n_regions=200, max_device_bytes=(hist + need) // 2,
                        progress=said.append)
    assert said, "the budget should have split the count"
    _same(split, ref)
