"""Bins: edges, weights, effective l, binning and unbinning, errors."""

import numpy as np
import pytest

from sphgpu.master import Bins


def test_linear_bins():
    b = Bins.linear(lmax=33, width=5, lmin=2)
    assert b.nbins == 6 and b.lmax == 33
    assert b.edges.tolist() == [2, 7, 12, 17, 22, 27, 32]     # l = 32, 33 in no bin
    np.testing.assert_allclose(b.ell_eff, [4, 9, 14, 19, 24, 29])
    assert b.ells(1).tolist() == [7, 8, 9, 10, 11]
    cl = np.arange(34.0)
    np.testing.assert_allclose(b.bin_cell(cl), b.ell_eff)
    un = b.unbin_cell(b.bin_cell(cl))
    assert un.shape == (34,) and np.all(un[:2] == 0) and np.all(un[32:] == 0)
    np.testing.assert_allclose(un[7:12], 9.0)


def test_log_bins_cover_lmin_to_lmax():
    b = Bins.log(lmax=200, nbins=10, lmin=2)
    assert b.edges[0] == 2 and b.edges[-1] == 201 and b.nbins <= 10
    assert np.all(np.diff(np.log(b.edges[1:])) > 0)
    small = Bins.log(lmax=5, nbins=20, lmin=1)               # duplicate edges merged
    assert small.edges.tolist() == [1, 2, 3, 4, 5, 6]


def test_weights_and_batches(rng):
    lmax = 20
    w = rng.uniform(0.5, 2, lmax + 1)
    b = Bins([0, 3, 10, 21], weights=w)
    assert b.lmax == 20
    cl = rng.standard_normal((4, 2, lmax + 1))
    got = b.bin_cell(cl)
    assert got.shape == (4, 2, 3)
    want = np.sum(cl[..., 3:10] * w[3:10], axis=-1) / w[3:10].sum()
    np.testing.assert_allclose(got[..., 1], want)
    ell = np.arange(lmax + 1)
    assert b.ell_eff[2] == pytest.approx(np.sum(ell[10:] * w[10:]) / w[10:].sum())
    # a spectrum constant over each bin survives bin -> unbin -> bin
    cb = rng.standard_normal(3)
    np.testing.assert_allclose(b.bin_cell(b.unbin_cell(cb)), cb)
    assert b.matrix.shape == (3, 21) and b.unbin_matrix.shape == (21, 3)
    np.testing.assert_allclose(b.matrix.sum(axis=1), 1.0)


def test_bad_bins_are_named():
    with pytest.raises(ValueError, match="edges must be strictly increasing"):
        Bins([2, 5, 5, 9])
    with pytest.raises(ValueError, match="edges must lie in 0..lmax"):
        Bins([2, 5, 12], lmax=10)
    with pytest.raises(ValueError, match="edges must lie in 0..lmax"):
        Bins([-1, 5])
    with pytest.raises(ValueError, match="edges must be a 1-d array"):
        Bins([3])
    with pytest.raises(ValueError, match="edges must be whole"):
        Bins([0.5, 3])
    with pytest.raises(ValueError, match="weights must have shape"):
        Bins([0, 4], lmax=5, weights=np.ones(3))
    with pytest.raises(ValueError, match="weights must be finite and non-negative"):
        Bins([0, 4], lmax=5, weights=-np.ones(6))
    with pytest.raises(ValueError, match="weights are zero over all of bin 1"):
        Bins([0, 2, 4], lmax=5, weights=[1, 1, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="no bin of width 50"):
        Bins.linear(20, 50)
    with pytest.raises(TypeError, match="width must be an integer"):
        Bins.linear(20, 2.0)
    b = Bins.linear(20, 4)
    with pytest.raises(ValueError, match="cl must have at least lmax"):
        b.bin_cell(np.ones(10))
    with pytest.raises(ValueError, match="cb must have nbins"):
        b.unbin_cell(np.ones(2))
