"""Workspace and decouple: exact recovery of piecewise-constant spectra, window functions,
batches, beams and pixel windows, and the errors of bins a coupling cannot be inverted for."""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu.master import Bins, Workspace, coupling_matrix, decouple

from .cases import healpix_theta, random_mask_cl

LMAX = 30


@pytest.fixture(scope="module")
def coupling():
    wl = random_mask_cl(np.random.default_rng(3), LMAX)
    return coupling_matrix(wl, LMAX, spins="all", is_cl=True, method="twin")


@pytest.mark.parametrize("spins", [(0, 0), (0, 2), (2, 2)])
def test_piecewise_constant_spectra_come_back_exactly(coupling, spins, rng):
    bins = Bins.linear(LMAX, 4, lmin=2)
    beam = np.exp(-0.5 * (np.arange(LMAX + 1) * 0.03) ** 2)
    ws = Workspace(coupling, bins, spins=spins, beam=beam)
    n = len(ws.spectra)
    cb = rng.uniform(1, 2, (n, bins.nbins))
    cl = bins.unbin_cell(cb)                     # constant in bins, 0 outside them
    pseudo = coupling.couple_cell(cl * beam ** 2, spins=spins)
    got = ws.decouple_cell(pseudo if n > 1 else pseudo[0])
    np.testing.assert_allclose(got if n > 1 else got[None], cb, rtol=1e-12)
    # the window functions say the same, and sum to one over each bin's own spectrum
    np.testing.assert_allclose(ws.bin_theory(cl if n > 1 else cl[0]),
                               cb if n > 1 else cb[0], rtol=1e-12)
    w = ws.window
    assert w.shape == (n, bins.nbins, n, LMAX + 1)
    q = bins.unbin_matrix
    for i in range(n):
        np.testing.assert_allclose(w[i, :, i] @ q, np.eye(bins.nbins), atol=1e-12)


def test_window_functions_give_the_mean_of_any_spectrum(coupling, rng):
    bins = Bins.log(LMAX, 6, lmin=2)
    ws = Workspace(coupling, bins, spins=(2, 2))
    cl = rng.uniform(0, 1, (4, LMAX + 1))
    np.testing.assert_allclose(ws.decouple_cell(ws.couple_cell(cl)), ws.bin_theory(cl),
                               rtol=1e-12)
    # a spectrum that is not constant in bins is not returned as its plain bin average
    assert not np.allclose(ws.bin_theory(cl), bins.bin_cell(cl), rtol=1e-3)


def test_batches_and_decouple(coupling, rng):
    bins = Bins.linear(LMAX, 5)
    ws = Workspace(coupling, bins, spins=(0, 2))
    pseudo = rng.uniform(0, 1, (3, 2, 2, LMAX + 5))            # longer spectra are cut
    got = ws.decouple_cell(pseudo)
    assert got.shape == (3, 2, 2, bins.nbins)
    np.testing.assert_allclose(got[2, 1], ws.decouple_cell(pseudo[2, 1]), rtol=1e-14)
    np.testing.assert_allclose(decouple(pseudo, coupling, bins, spins=(0, 2)), got, rtol=1e-14)
    ws0 = Workspace(coupling, bins, spins=(0, 0))
    assert ws0.decouple_cell(pseudo[0, 0, 0]).shape == (bins.nbins,)
    assert ws0.decouple_cell(pseudo[:, :, :1]).shape == (3, 2, 1, bins.nbins)


def test_pixel_window_and_beam_pairs(rng):
    nside, lmax = 8, 20
    c = coupling_matrix(np.ones(12 * nside ** 2), lmax, spins=(0, 2), method="twin")
    bins = Bins.linear(lmax, 3)
    t, p = sphgpu.pixwin(nside, pol=True, lmax=lmax)
    b1, b2 = rng.uniform(0.5, 1, (2, lmax + 1))
    ws = Workspace(c, bins, beam=(b1, b2), pixwin=True)
    np.testing.assert_allclose(ws.transfer, b1 * b2 * t * p)
    ws2 = Workspace(c, bins, beam=(b1, b2), pixwin=np.stack([t, p]))
    np.testing.assert_allclose(ws2.transfer, ws.transfer)


def test_uninvertible_bins_are_named(coupling):
    # bins over l < 2 of a spin-2 field: no mode there, K is singular
    with pytest.raises(ValueError, match="cannot be inverted for these bins"):
        Workspace(coupling, Bins.linear(LMAX, 1, lmin=0), spins=(2, 2))
    # a 0.5 % sky (an 8 deg cap): single-multipole bins fail (condition number 6e12),
    # 16-wide bins work (4.1; bandpowers.COND_MAX)
    nside = 32
    cap = (healpix_theta(nside) < math.radians(8)).astype(float)
    c = coupling_matrix(cap, 80, spins=(0, 0))
    with pytest.raises(ValueError, match="too much of the sky is masked"):
        Workspace(c, Bins.linear(80, 1, lmin=2))
    assert Workspace(c, Bins.linear(80, 16, lmin=2)).bins.nbins == 4


def test_bad_arguments_are_named(coupling, rng):
    with pytest.raises(ValueError, match="bins must cover l = 0..lmax"):
        Workspace(coupling, Bins.linear(LMAX - 1, 4))
    with pytest.raises(TypeError, match="coupling must be a Coupling"):
        Workspace(np.eye(LMAX + 1), Bins.linear(LMAX, 4))
    with pytest.raises(TypeError, match="bins must be a Bins"):
        Workspace(coupling, [0, 4, 8])
    with pytest.raises(ValueError, match="spins must name one spin pair"):
        Workspace(coupling, Bins.linear(LMAX, 4))
    ws = Workspace(coupling, Bins.linear(LMAX, 4), spins=(2, 2))
    with pytest.raises(ValueError, match="pseudo_cl must have shape"):
        ws.decouple_cell(np.ones((3, LMAX + 1)))
    with pytest.raises(ValueError, match="beam must have shape"):
        Workspace(coupling, Bins.linear(LMAX, 4), spins=(0, 0), beam=np.ones(5))
    with pytest.raises(ValueError, match="pixwin=True needs nside"):
        Workspace(coupling, Bins.linear(LMAX, 4), spins=(0, 0), pixwin=True)


def test_row_binning_equals_the_dense_kronecker_products(rng):
    """Workspace bins M row by row (_bin_rows); the dense kron(eye(n), P) @ M @ kron(eye(n), Q)
    is its slow twin, with uneven bins, a zero weight and multipoles left out of every bin."""
    from sphgpu.master.bandpowers import _bin_rows

    lmax, n = 40, 4
    weights = rng.uniform(0.5, 2.0, lmax + 1)
    weights[7] = 0.0
    bins = Bins([3, 5, 9, 20, 33], lmax=lmax, weights=weights)
    m = rng.standard_normal((n * (lmax + 1), n * (lmax + 1)))
    P = np.kron(np.eye(n), bins.matrix)
    Q = np.kron(np.eye(n), bins.unbin_matrix)
    pm = _bin_rows(bins.matrix, m, n)
    np.testing.assert_allclose(pm, P @ m, rtol=0, atol=1e-13 * np.abs(m).max())
    k = _bin_rows(bins.unbin_matrix.T, pm.T, n).T
    np.testing.assert_allclose(k, P @ m @ Q, rtol=0, atol=1e-12 * np.abs(m).max())
