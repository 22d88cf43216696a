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


def test_dell_bins_bin_l_l_plus_1_cl_and_unbin_it(rng):
    lmax = 30
    w = rng.uniform(0.5, 2, lmax + 1)
    b = Bins([2, 9, 20, 31], weights=w, f_ell="dell")
    ell = np.arange(lmax + 1.0)
    dl = ell * (ell + 1) / (2 * np.pi)
    cl = rng.uniform(1, 2, (3, lmax + 1))
    want = np.stack([np.sum((dl * cl)[:, lo:hi] * w[lo:hi], axis=-1) / w[lo:hi].sum()
                     for lo, hi in [(2, 9), (9, 20), (20, 31)]], axis=-1)
    np.testing.assert_allclose(b.bin_cell(cl), want, rtol=1e-13)
    # unbinning gives C_l with D_l constant over each bin
    un = b.unbin_cell(want)
    np.testing.assert_allclose((un * dl)[:, 9:20], np.repeat(want[:, 1:2], 11, axis=1), rtol=1e-13)
    assert np.all(un[:, :2] == 0)
    # the effective l is the weights', without f_l; an array f_ell is the same as "dell"
    np.testing.assert_allclose(b.ell_eff, Bins([2, 9, 20, 31], weights=w).ell_eff)
    np.testing.assert_allclose(Bins([2, 9, 20, 31], weights=w, f_ell=dl).matrix, b.matrix)
    assert "D_l" in repr(b) and "D_l" not in repr(Bins([2, 9, 20, 31]))


@pytest.mark.parametrize("f_ell, lmin, match", [
    ("dell", 0, "start the bins at l >= 1"), ("cl", 2, 'f_ell must be "dell"'),
    (np.ones(5), 2, r"f_ell must have shape \(lmax \+ 1,\)"),
    (-np.ones(21), 2, "f_ell must be positive and finite")])
def test_bad_f_ell(f_ell, lmin, match):
    with pytest.raises(ValueError, match=match):
        Bins.linear(20, 4, lmin=lmin, f_ell=f_ell)


def test_dell_bins_decouple_exactly_and_nearer_the_binned_input():
    """MASTER is exact for spectra of the unbinning's shape (D_l constant in each bin with
    "dell"), and for the CMB's steep low-l C_l the D_l bins' expected bandpowers lie nearer the
    binned input than C_l bins' do."""
    from sphgpu import master
    from sphgpu.data import planck2018_cl

    from .cases import cut_mask

    nside, lmax = 16, 47
    mask = master.apodize_mask(cut_mask(nside, np.radians(20.0)), 10.0, apotype="C2")
    cpl = master.coupling_matrix(mask, lmax, backend="cpu")
    dell = Bins.linear(lmax, 6, lmin=2, f_ell="dell")
    plain = Bins.linear(lmax, 6, lmin=2)
    db = np.linspace(3.0, 1.0, dell.nbins)
    cl = dell.unbin_cell(db)
    ws = master.Workspace(cpl, dell)
    np.testing.assert_allclose(ws.decouple_cell(cpl.couple_cell(cl)), db, rtol=1e-10)
    tt = planck2018_cl(lmax)
    off = {}
    for name, b in (("dell", dell), ("plain", plain)):
        expected = master.Workspace(cpl, b).bin_theory(tt)
        off[name] = np.abs(expected / b.bin_cell(tt) - 1)
    assert off["dell"].max() < off["plain"].max()
    assert off["dell"][0] < 0.5 * off["plain"][0]
