"""MonteCarlo(..., bins=...): decoupled (MASTER) bandpowers of every simulation.

The mean over simulations of a cut sky (T and polarized, with a beam and white noise) agrees
with the input through the bandpower windows (a Hotelling T^2 test with the simulations' own
covariance), where the f_sky approximation fails the same test; the bandpowers equal
sphgpu.master's Workspace applied to the pseudo-spectra directly; the noise bias equals the
brute-force expectation; runs continue, stop and spread over Dask as the pseudo-spectra do;
bad input names the argument.
"""

import math

import numpy as np
import pytest

from sphgpu.master import Bins, Workspace, coupling_matrix
from sphgpu.sims import MonteCarlo, latitude_cut_mask, simulate_spectra
from sphgpu.testing import TOL

stats = pytest.importorskip("scipy.stats")

NSIDE, LMAX, FWHM, WIDTH = 32, 64, math.radians(1.5), 8
#: p-value below which the mean is declared biased (one false alarm in a thousand runs)
P_FAIL = 1e-3


def theory(lmax=LMAX):
    """TT, EE, BB, TE with peaks a few bins wide, which the mask smears (what the f_sky
    approximation misses), muK^2."""
    ell = np.arange(lmax + 1)
    tt = 1e3 * (1.0 + 0.8 * np.sin(ell / 4.0)) / (ell + 10.0) ** 2
    tt[:2] = 0.0
    return np.stack([tt, 0.3 * tt, 0.01 * tt, 0.4 * math.sqrt(0.3) * tt])


def cut_sky(nside=NSIDE):
    return latitude_cut_mask(nside, 20.0, apodization_deg=10.0)


def make(pol, nside=NSIDE, lmax=LMAX, bins=WIDTH, **kw):
    args = dict(pol=pol, mask=cut_sky(nside), fwhm=FWHM, noise_sigma=10.0, seed=11,
                backend="cpu", bins=bins)
    args.update(kw)
    cls = theory(lmax)
    return MonteCarlo(cls if pol else cls[0], nside, lmax, **args)


def hotelling(samples, expected):
    """p-value of the sample mean against ``expected`` with the samples' own covariance
    (Hotelling's T^2: n d^T S^-1 d (n - p) / (p (n - 1)) follows F(p, n - p))."""
    n = samples.shape[0]
    x = samples.reshape(n, -1)
    d = x.mean(axis=0) - np.ravel(expected)
    p = d.size
    t2 = n * d @ np.linalg.solve(np.cov(x, rowvar=False), d)
    return float(stats.f.sf(t2 * (n - p) / (p * (n - 1)), p, n - p))


@pytest.fixture(scope="module")
def temperature():
    return make(False).run(600, progress=False)


@pytest.fixture(scope="module")
def polarized():
    return make(True).run(600, progress=False)


def naive(mc):
    """The f_sky-style estimate: (pseudo-C - noise) / (w2 b^2), binned."""
    rows = [0, 1, 2, 0, 1, 0] if mc.plan.pol else [0]
    b2 = mc.beam[rows] * mc.beam[[0, 1, 2, 1, 2, 2] if mc.plan.pol else [0]]
    return mc.bins.bin_cell((mc.spectra - mc.noise_bias) / np.mean(mc.plan.mask ** 2) / b2)


# -- unbiased, where the f_sky approximation is not -------------------------------------------
def test_temperature_bandpowers_of_a_cut_sky_are_unbiased(temperature):
    mc = temperature
    assert mc.bandpowers.shape == (600, 1, mc.bins.nbins) and mc.bins.nbins == 7
    assert hotelling(mc.bandpowers, mc.expected_bandpowers) > P_FAIL
    # the test has power: the f_sky approximation fails it by far (p ~ 0), and so does the
    # decoupled estimate when the noise bias is left in
    assert hotelling(naive(mc), mc.bins.bin_cell(mc.input_spectra)) < P_FAIL
    biased = mc.workspaces[(0, 0)].decouple_cell(mc.spectra[:, 0])
    assert hotelling(biased[:, None], mc.expected_bandpowers) < P_FAIL


def test_polarized_bandpowers_of_a_cut_sky_are_unbiased(polarized):
    mc = polarized
    assert mc.names == ("TT", "EE", "BB", "TE", "EB", "TB")
    assert hotelling(mc.bandpowers, mc.expected_bandpowers) > P_FAIL       # 42 numbers
    for k, name in enumerate(mc.names):
        assert hotelling(mc.bandpowers[:, k], mc.expected_bandpowers[k]) > P_FAIL, name
    # E leaks into the pseudo-BB of the cut sky: the f_sky BB fails where the decoupled passes
    assert hotelling(naive(mc)[:, 2], mc.bins.bin_cell(mc.input_spectra[2])) < P_FAIL


def test_the_decoupled_ratio_is_consistent_with_one_where_the_fsky_ratio_is_not(temperature):
    """The panel's number: a mode-weighted mean ratio to the input over l >= 18."""
    mc = temperature
    keep = mc.bins.ell_eff >= 18
    weight = (2 * mc.bins.ell_eff + 1)[keep]

    def ratio(bandpowers, want):
        per_sim = (bandpowers[:, 0, keep] / want[keep]) @ weight / weight.sum()
        return per_sim.mean(), per_sim.std(ddof=1) / math.sqrt(len(per_sim))

    r, sigma = ratio(mc.bandpowers, mc.expected_bandpowers[0])
    assert abs(r - 1) < 4 * sigma
    r, sigma = ratio(naive(mc), mc.bins.bin_cell(mc.input_spectra[0]))
    assert abs(r - 1) > 10 * sigma


# -- what they are ------------------------------------------------------------------------------
def test_bandpowers_are_sphgpu_master_applied_to_the_pseudo_spectra():
    mc = make(True, nside=16, lmax=32, bins=Bins.linear(32, 5, lmin=2)).run(5, progress=False)
    cpl = coupling_matrix(cut_sky(16), 32, spins="all")
    beam = np.stack([mc.beam[0], mc.beam[1]])
    s = mc.spectra - mc.noise_bias
    tt, ee, bb, te, eb, tb = (s[:, i] for i in range(6))
    w00 = Workspace(cpl, mc.bins, spins=(0, 0), beam=beam)
    w02 = Workspace(cpl, mc.bins, spins=(0, 2), beam=beam)
    w22 = Workspace(cpl, mc.bins, spins=(2, 2), beam=beam)
    c22 = w22.decouple_cell(np.stack([ee, eb, eb, bb], axis=1))
    c02 = w02.decouple_cell(np.stack([te, tb], axis=1))
    want = np.stack([w00.decouple_cell(tt), c22[:, 0], c22[:, 3], c02[:, 0], c22[:, 1],
                     c02[:, 1]], axis=1)
    got = mc.bandpowers
    assert got.dtype == np.float64 and got.shape == (5, 6, 6)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(mc.bandpower_mean, want.mean(0), rtol=1e-12,
                               atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(mc.bandpower_std, want.std(0, ddof=1), rtol=1e-10)
    cov = mc.bandpower_covariance()
    assert cov.shape == (36, 36)
    np.testing.assert_allclose(cov, np.cov(want.reshape(5, -1), rowvar=False), rtol=1e-10,
                               atol=1e-12 * np.abs(cov).max())
    zero = np.zeros(33)
    inp = theory(32)
    np.testing.assert_allclose(
        mc.expected_bandpowers[[1, 2, 4]],
        w22.bin_theory(np.stack([inp[1], zero, zero, inp[2]]))[[0, 3, 1]], rtol=1e-12,
        atol=1e-15)


def test_full_sky_single_multipole_bins_are_the_spectra_over_the_beam():
    """Without a mask the coupling is the identity: a bin per l gives (C~ - N) / b^2."""
    mc = make(False, nside=8, lmax=16, bins=1, mask=None).run(3, progress=False)
    want = (mc.spectra[:, 0, 2:] - mc.noise_bias[0, 2:]) / mc.beam[0, 2:] ** 2
    np.testing.assert_allclose(mc.bandpowers[:, 0], want, rtol=1e-12)
    assert mc.bins.nbins == 15 and np.all(mc.noise_bias[0] == mc.noise_bias[0, 0])


@pytest.mark.parametrize("pol", [False, True])
def test_noise_bias_is_the_brute_force_expectation(pol):
    """White noise (a per-pixel map, different for Q and U) alone, masked: the exact mean
    pseudo-spectra (MonteCarlo.expected) equal noise_bias."""
    npix = 12 * 8 ** 2
    sigma = np.linspace(0.2, 1.0, npix)
    sigma = np.stack([sigma, 0.5 + 0 * sigma, sigma[::-1]]) if pol else sigma
    cls = 0 * theory(24)
    mc = MonteCarlo(cls if pol else cls[0], 8, 16, pol=pol, mask=cut_sky(8), noise_sigma=sigma,
                    backend="cpu", bins=4)
    exact = mc.expected()
    np.testing.assert_allclose(mc.noise_bias, exact, rtol=0, atol=1e-12 * np.abs(exact).max())
    assert np.abs(exact).max() > 0


# -- run, stop, run more, Dask -----------------------------------------------------------------
def test_bandpowers_follow_the_simulations_through_runs_and_batches():
    whole = make(True, nside=8, lmax=16, bins=4).run(6, progress=False)
    pieces = make(True, nside=8, lmax=16, bins=4, batch_size=2)
    pieces.run(2, progress=False).run(4, progress=False, batch_size=3)
    np.testing.assert_allclose(pieces.bandpowers, whole.bandpowers,
                               rtol=TOL["sims_same_skies_rtol"], atol=1e-12)
    np.testing.assert_allclose(whole.bandpowers, whole.decouple(whole.spectra), rtol=1e-14)
    assert pieces.bandpowers.shape == (6, 6, 3)


def test_simulate_spectra_passes_bins_through():
    mc = simulate_spectra(theory(24)[0], 8, 3, 16, progress=False, mask=cut_sky(8), fwhm=FWHM,
                          noise_sigma=10.0, seed=11, backend="cpu", bins=4)
    np.testing.assert_allclose(mc.bandpowers, make(False, nside=8, lmax=16, bins=4)
                               .run(3, progress=False).bandpowers,
                               rtol=TOL["sims_same_skies_rtol"], atol=1e-12)


def test_a_stopped_run_keeps_the_bandpowers_of_every_finished_batch():
    mc = make(False, nside=8, lmax=16, bins=4, batch_size=1)
    mc.run(50, progress=lambda done, total: mc.stop() if done == 3 else None)
    assert mc.stopped and mc.nsims == 3 and mc.bandpowers.shape == (3, 1, 3)
    np.testing.assert_allclose(mc.bandpowers, mc.decouple(mc.spectra), rtol=1e-14)
    mc.run(2, progress=False)
    assert mc.bandpowers.shape == (5, 1, 3)


def test_cluster_runs_give_the_same_bandpowers(client):
    here = make(True, nside=8, lmax=16, bins=4).run(4, progress=False)
    there = make(True, nside=8, lmax=16, bins=4).run(4, progress=False, client=client,
                                                     batch_size=2)
    np.testing.assert_allclose(there.bandpowers, here.bandpowers,
                               rtol=TOL["sims_same_skies_rtol"], atol=1e-12)


# -- bad input ----------------------------------------------------------------------------------
def test_bins_beyond_lmax_are_refused_naming_bins():
    with pytest.raises(ValueError, match=r"bins reach l = 37, beyond the Monte Carlo's lmax"):
        make(False, nside=8, lmax=16, bins=Bins.linear(40, 4))
    with pytest.raises(ValueError, match="bins .a bin width. must be at most"):
        make(False, nside=8, lmax=16, bins=16)
    with pytest.raises(TypeError, match="bins must be a sphgpu.master.Bins or an int"):
        make(False, nside=8, lmax=16, bins=[2, 6, 10])
    with pytest.raises(ValueError, match="bins must be >= 1"):
        make(False, nside=8, lmax=16, bins=0)


def test_bins_of_another_lmax_within_range_are_the_same_bins_here():
    b = Bins([2, 5, 9, 14], lmax=40, weights=np.arange(41.0) + 1)
    mc = make(False, nside=8, lmax=16, bins=b)
    assert mc.bins.lmax == 16
    np.testing.assert_allclose(mc.bins.matrix, b.matrix[:, :17], rtol=1e-15)


def test_a_mask_too_small_for_the_bins_names_bins_and_mask():
    tiny = latitude_cut_mask(16, 87.0)         # two polar caps of 3 degrees: 0.1 % of the sky
    with pytest.raises(ValueError, match=r"bins \(with this mask and beam.*cannot be inverted"):
        MonteCarlo(theory(32)[0], 16, 32, mask=tiny, backend="cpu", bins=1)


def test_spin_2_bins_below_l_2_are_refused():
    with pytest.raises(ValueError, match=r"bins \(with this mask and beam, spins \(0, 2\)"):
        make(True, nside=8, lmax=16, bins=Bins([0, 2, 6, 10, 14], lmax=16))


def test_bandpower_accessors_without_bins_say_how_to_get_them():
    mc = make(False, nside=8, lmax=16, bins=None).run(2, progress=False)
    for get in (lambda: mc.bandpowers, lambda: mc.bandpower_mean,
                lambda: mc.expected_bandpowers, mc.bandpower_covariance,
                lambda: mc.decouple(mc.spectra)):
        with pytest.raises(ValueError, match=r"bandpowers need bins: make the Monte Carlo"):
            get()
    assert mc.spectra.shape == (2, 1, 17)          # the pseudo-spectra as before


def test_decouple_checks_the_shape_and_covariance_needs_two():
    mc = make(False, nside=8, lmax=16, bins=4)
    with pytest.raises(ValueError, match=r"spectra must have shape \(\.\.\., 1, 17\)"):
        mc.decouple(np.zeros((2, 6, 17)))
    with pytest.raises(ValueError, match="at least 2 finished"):
        mc.bandpower_covariance()
    assert mc.bandpowers.shape == (0, 1, 3)


def test_different_e_and_b_beams_are_refused():
    ell = np.arange(17)
    rows = np.stack([np.exp(-ell / 50), np.exp(-ell / 40), np.exp(-ell / 30)])
    with pytest.raises(ValueError, match="bins: decoupling needs one beam for E and B"):
        make(True, nside=8, lmax=16, bins=4, fwhm=0.0, beam_window=rows)


# -- pure B (purify_b) --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def purified():
    # iter=3: the window's derivatives from its iterated analysis (with iter=0 sphgpu.master
    # warns that the 10 degree edge misses its resynthesis by 0.1, and 100 times more E leaks)
    return make(True, purify_b=True, iter=3, seed=3).run(600, progress=False)


def test_purified_bandpowers_of_a_cut_sky_are_unbiased(purified):
    """E and B, beam and white noise, pure B decoupled with coupling_matrix(purify_b=True)
    and the pure estimator's own noise bias subtracted."""
    mc = purified
    assert mc.plan.purify_b and mc.coupling.purify_b
    assert hotelling(mc.bandpowers, mc.expected_bandpowers) > P_FAIL       # 42 numbers
    for k, name in enumerate(mc.names):
        assert hotelling(mc.bandpowers[:, k], mc.expected_bandpowers[k]) > P_FAIL, name
    # the test has power: with the masked maps' noise bias instead of the pure estimator's
    # (smaller: it misses the derivative terms) the pure BB fails it
    plain = make(True, iter=3, seed=3)
    wrong = mc.spectra.copy()
    wrong[:, 2] -= plain.noise_bias[2] - mc.noise_bias[2]
    biased = mc.decouple(wrong)[:, 2]
    assert hotelling(biased, mc.expected_bandpowers[2]) < P_FAIL


def test_purification_removes_the_variance_of_leaked_e():
    """An E-only sky without noise: one sky's decoupled BB scatters by the leaked E; pure B
    scatters at least 500 times less in every bin (2300 to 70000 times at seed 4, 50 skies;
    55 to 900 times with iter=0)."""
    cls = theory()
    cls[2] = 0.0
    runs = [MonteCarlo(cls, NSIDE, LMAX, pol=True, mask=cut_sky(), fwhm=FWHM, seed=4, iter=3,
                       backend="cpu", bins=WIDTH, purify_b=pure).run(50, progress=False)
            for pure in (False, True)]
    standard, pure = (r.bandpower_std[2] for r in runs)
    assert np.all(pure * 500 < standard), standard / pure


def test_pure_b_noise_bias_is_the_brute_force_expectation():
    """Per-pixel white noise, different in Q and U, alone: the exact mean of the purified
    pipeline (MonteCarlo.expected) equals noise_bias, pure BB's included."""
    npix = 12 * 8 ** 2
    sigma = np.stack([np.linspace(0.2, 1.0, npix), np.full(npix, 0.5),
                      np.linspace(1.0, 0.3, npix)])
    mask = latitude_cut_mask(8, 20.0, apodization_deg=30.0)
    mc = MonteCarlo(np.zeros((4, 17)), 8, 16, pol=True, mask=mask, noise_sigma=sigma,
                    backend="cpu", bins=4, purify_b=True)
    plain = MonteCarlo(np.zeros((4, 17)), 8, 16, pol=True, mask=mask, noise_sigma=sigma,
                       backend="cpu", bins=4)
    with pytest.warns(UserWarning, match="not smooth"):       # nside 8: a steep window
        exact = mc.expected()
    np.testing.assert_allclose(mc.noise_bias, exact, rtol=0, atol=1e-12 * np.abs(exact).max())
    # the pure estimator's noise is not the masked maps': its derivative terms add to BB,
    # most at low l (their weights fall as 1/l^2 and 1/l^4)
    assert np.all(exact[2, 2:] > plain.noise_bias[2, 2:]) and exact[2, 2] > 10 * exact[2, -1]
    np.testing.assert_allclose(exact[1], plain.noise_bias[1], rtol=1e-12)


def test_purify_b_needs_pol_an_apodized_mask_and_a_bool():
    with pytest.raises(ValueError, match="purify_b=True purifies B: it needs pol=True"):
        make(False, nside=8, lmax=16, purify_b=True)
    with pytest.raises(ValueError, match="purify_b=True needs a mask"):
        make(True, nside=8, lmax=16, mask=None, purify_b=True)
    with pytest.raises(ValueError, match="mask is binary .0 and one other value.: purify_b"):
        make(True, nside=8, lmax=16, mask=latitude_cut_mask(8, 20.0), purify_b=True)
    with pytest.raises(TypeError, match="purify_b must be True or False"):
        make(True, nside=8, lmax=16, purify_b="yes")
