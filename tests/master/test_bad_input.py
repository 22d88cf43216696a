"""Issue 41's bad input, entry by entry: every public function of sphgpu.master (and
MonteCarlo's bins and mask) refuses masks of the wrong size, negative or not finite, bins
outside 0..lmax, a binned coupling that cannot be inverted, spins other than 0 and 2, and
non-finite spectra, with an error that names the argument. Nothing returns a silent NaN."""

import functools

import numpy as np
import pytest

import sphgpu
from sphgpu import master
from sphgpu.data import planck2018_cl
from sphgpu.sims import MonteCarlo

NSIDE = 8
NPIX = 12 * NSIDE**2
LMAX = 15


@functools.cache
def _maps():
    """(apodized mask, binary mask, q, u, a tiny mask of 4 pixels) at NSIDE."""
    binary = sphgpu.sims.latitude_cut_mask(NSIDE, 20.0)
    mask = master.apodize_mask(binary, 20.0, apotype="C2")
    rng = np.random.default_rng(41)
    tiny = np.zeros(NPIX)
    tiny[:4] = 1.0
    return mask, binary, rng.normal(size=NPIX), rng.normal(size=NPIX), tiny


def mask():
    return _maps()[0].copy()


def binary():
    return _maps()[1].copy()


def q():
    return _maps()[2]


def u():
    return _maps()[3]


def with_value(value, pixel=5):
    m = mask()
    m[pixel] = value
    return m


@functools.cache
def _couplings():
    return {s: master.coupling_matrix(mask(), LMAX, spins=s, backend="cpu")
            for s in ((0, 0), (2, 2))}


def bins(width=4, lmin=2, lmax=LMAX):
    return master.Bins.linear(lmax, width, lmin=lmin)


def ws(spins=(0, 0)):
    return master.Workspace(_couplings()[spins], bins())


def too_much_masked():
    """4 pixels of the sky seen, single multipoles from l = 0 of a spin-2 field."""
    return master.coupling_matrix(_maps()[4], LMAX, spins=(2, 2), backend="cpu")


def cl_tt():
    return planck2018_cl(LMAX, spectra=("TT",))[0]


def nan_at(shape, where=3, value=np.nan):
    a = np.ones(shape)
    a.flat[where] = value
    return a


# (id, call, exception, words that name the argument)
CASES = [
    # -- masks of the wrong size, negative, not finite, zero ----------------------------------
    ("coupling_matrix mask size", lambda: master.coupling_matrix(np.ones(100)), ValueError,
     r"mask must be a HEALPix map .* got 100 pixels"),
    ("coupling_matrix mask shape", lambda: master.coupling_matrix(np.ones((3, NPIX))),
     ValueError, r"mask must be one map of shape \(npix,\)"),
    ("coupling_matrix mask negative", lambda: master.coupling_matrix(with_value(-0.1)),
     ValueError, "mask must be non-negative"),
    ("coupling_matrix mask NaN", lambda: master.coupling_matrix(with_value(np.nan)),
     ValueError, "mask contains NaN or infinite"),
    ("coupling_matrix mask inf", lambda: master.coupling_matrix(with_value(np.inf)),
     ValueError, "mask contains NaN or infinite"),
    ("coupling_matrix mask zero", lambda: master.coupling_matrix(np.zeros(NPIX)), ValueError,
     "mask is zero everywhere"),
    ("coupling_matrix mask text", lambda: master.coupling_matrix(["a"] * NPIX), TypeError,
     "mask must be a real map"),
    ("coupling_matrix mask2 size", lambda: master.coupling_matrix(mask(), mask2=np.ones(100)),
     ValueError, "mask2 must be a HEALPix map"),
    ("coupling_matrix mask2 negative", lambda: master.coupling_matrix(
        mask(), mask2=with_value(-1.0)), ValueError, "mask2 must be non-negative"),
    ("coupling_matrix mask2 NaN", lambda: master.coupling_matrix(
        mask(), mask2=with_value(np.nan)), ValueError, "mask2 contains NaN"),
    ("coupling_matrix spectrum NaN", lambda: master.coupling_matrix(
        nan_at(9), is_cl=True), ValueError, r"mask \(a power spectrum\) contains NaN"),
    ("coupling_matrix spectrum W_0 <= 0", lambda: master.coupling_matrix(
        np.array([-1.0, 0.5, 0.1]), is_cl=True), ValueError, "mask .*must have W_0 > 0"),
    ("mask_spectrum mask NaN", lambda: master.mask_spectrum(with_value(np.nan)), ValueError,
     "mask contains NaN"),
    ("mask_spectrum mask2 nside", lambda: master.mask_spectrum(
        mask(), np.ones(12 * 16**2)), ValueError, r"mask2 must have the nside of mask \(8\)"),
    ("apodize_mask mask size", lambda: master.apodize_mask(np.ones(100), 5.0), ValueError,
     "mask must be a HEALPix map"),
    ("apodize_mask mask negative", lambda: master.apodize_mask(with_value(-1.0), 5.0),
     ValueError, "mask must be non-negative"),
    ("apodize_mask mask NaN", lambda: master.apodize_mask(with_value(np.nan), 5.0),
     ValueError, "mask contains NaN"),
    ("apodize_mask aposize 0", lambda: master.apodize_mask(binary(), 0.0), ValueError,
     "aposize_deg must be a positive number"),
    ("apodize_mask aposize NaN", lambda: master.apodize_mask(binary(), np.nan), ValueError,
     "aposize_deg must be a positive number"),
    ("apodize_mask aposize > 180", lambda: master.apodize_mask(binary(), 400.0), ValueError,
     "aposize_deg .* at most 180"),
    ("apodize_mask Smooth masks all", lambda: master.apodize_mask(binary(), 90.0,
                                                                   apotype="Smooth"),
     ValueError, "aposize_deg=90.0 with apotype 'Smooth' masks the whole sky"),
    ("apodize_mask apotype", lambda: master.apodize_mask(binary(), 5.0, apotype="C3"),
     ValueError, "apotype must be one of"),
    ("pseudo_alm_spin2 mask size", lambda: master.pseudo_alm_spin2(q(), u(), np.ones(100)),
     ValueError, "mask must be a HEALPix map"),
    ("pseudo_alm_spin2 mask negative", lambda: master.pseudo_alm_spin2(
        q(), u(), with_value(-1.0)), ValueError, "mask must be non-negative"),
    ("pseudo_alm_spin2 mask NaN", lambda: master.pseudo_alm_spin2(
        q(), u(), with_value(np.nan)), ValueError, "mask contains NaN"),
    ("pseudo_alm_spin2 q size", lambda: master.pseudo_alm_spin2(q()[:10], u(), mask()),
     ValueError, "q must have the mask's 768 pixels"),
    ("pseudo_alm_spin2 u NaN", lambda: master.pseudo_alm_spin2(q(), nan_at(NPIX), mask()),
     ValueError, "u contains NaN or infinite values"),
    ("pseudo_alm_spin2 purify_b not bool", lambda: master.pseudo_alm_spin2(
        q(), u(), mask(), purify_b="yes"), TypeError, "purify_b must be True or False"),
    ("pseudo_alm_spin2 binary mask pure", lambda: master.pseudo_alm_spin2(
        q(), u(), binary(), purify_b=True), ValueError, "mask is binary"),
    ("pseudo_cl_spin2 mask negative", lambda: master.pseudo_cl_spin2(
        q(), u(), with_value(-1.0)), ValueError, "mask must be non-negative"),
    ("pseudo_cl_spin2 q inf", lambda: master.pseudo_cl_spin2(
        nan_at(NPIX, value=np.inf), u(), mask()), ValueError, "q contains NaN or infinite"),
    ("pseudo_cl_spin2 purify_b not bool", lambda: master.pseudo_cl_spin2(
        q(), u(), mask(), purify_b=1), TypeError, "purify_b must be True or False"),
    ("bandpowers_spin2 mask size", lambda: master.bandpowers_spin2(
        q(), u(), np.ones(100), bins()), ValueError, "mask must be a HEALPix map"),
    ("bandpowers_spin2 mask NaN", lambda: master.bandpowers_spin2(
        q(), u(), with_value(np.nan), bins()), ValueError, "mask contains NaN"),
    ("bandpowers_spin2 mask negative", lambda: master.bandpowers_spin2(
        q(), u(), with_value(-1.0), bins()), ValueError, "mask must be non-negative"),
    ("bandpowers_spin2 workspace of another nside", lambda: master.bandpowers_spin2(
        q(), u(), mask(), workspace=master.Workspace(master.coupling_matrix(
            master.apodize_mask(sphgpu.sims.latitude_cut_mask(16, 20.0), 20.0), LMAX,
            spins=(2, 2), backend="cpu"), bins())),
     ValueError, "workspace was made for a mask of nside 16; mask has nside 8"),
    ("mask_derivatives mask size", lambda: master.mask_derivatives(np.ones(100)), ValueError,
     "mask must be a HEALPix map"),
    ("mask_derivatives mask negative", lambda: master.mask_derivatives(with_value(-1.0)),
     ValueError, "mask must be non-negative"),
    ("mask_derivatives mask NaN", lambda: master.mask_derivatives(with_value(np.inf)),
     ValueError, "mask contains NaN"),
    ("mask_derivatives lmax_mask", lambda: master.mask_derivatives(mask(), lmax_mask=-2),
     ValueError, "lmax_mask must be >= 0"),
    # -- bins outside 0..lmax -------------------------------------------------------------------
    ("Bins edges negative", lambda: master.Bins([-1, 5]), ValueError,
     r"edges must lie in 0..lmax \+ 1"),
    ("Bins edges beyond lmax", lambda: master.Bins([2, 50], lmax=10), ValueError,
     r"edges must lie in 0..lmax \+ 1 = 11 .* got 2..50"),
    ("Bins edges not increasing", lambda: master.Bins([0, 5, 3]), ValueError,
     "edges must be strictly increasing"),
    ("Bins edges NaN", lambda: master.Bins(np.array([0.0, np.nan])), ValueError,
     "edges must be whole multipoles"),
    ("Bins edges text", lambda: master.Bins(["a", "b"]), TypeError,
     "edges must be integer multipoles"),
    ("Bins lmax negative", lambda: master.Bins([0, 1], lmax=-3), ValueError,
     "lmax must be >= 0"),
    ("Bins.linear lmax negative", lambda: master.Bins.linear(-1, 2), ValueError,
     "lmax must be >= 0"),
    ("Bins.linear lmin beyond lmax", lambda: master.Bins.linear(10, 2, lmin=20), ValueError,
     r"no bin of width 2 fits in lmin..lmax = 20..10"),
    ("Bins.linear width 0", lambda: master.Bins.linear(10, 0), ValueError,
     "width must be >= 1"),
    ("Bins.log lmin beyond lmax", lambda: master.Bins.log(10, 3, lmin=20), ValueError,
     "lmin must be <= lmax"),
    ("Bins.log lmin 0", lambda: master.Bins.log(10, 3, lmin=0), ValueError,
     "lmin must be >= 1"),
    ("Bins.log nbins 0", lambda: master.Bins.log(10, 0), ValueError, "nbins must be >= 1"),
    ("Bins weights NaN", lambda: master.Bins([0, 5], weights=nan_at(5)), ValueError,
     "weights must be finite"),
    ("Bins.bin_cell cl NaN", lambda: bins().bin_cell(nan_at(LMAX + 1)), ValueError,
     "cl contains NaN or infinite"),
    ("Bins.unbin_cell cb inf", lambda: bins().unbin_cell(nan_at(3, 1, np.inf)), ValueError,
     "cb contains NaN or infinite"),
    ("Workspace bins of another lmax", lambda: master.Workspace(
        _couplings()[(0, 0)], bins(lmax=LMAX + 5)), ValueError,
     r"bins must cover l = 0..lmax of the coupling \(15\)"),
    ("bandpowers_spin2 bins not Bins", lambda: master.bandpowers_spin2(q(), u(), mask(), 4),
     TypeError, "bins must be a Bins"),
    # -- a binned coupling that cannot be inverted ----------------------------------------------
    ("Workspace too much masked", lambda: master.Workspace(
        too_much_masked(), bins(1, lmin=0)), ValueError,
     "cannot be inverted for these bins .* too much of the sky is masked"),
    ("decouple too much masked", lambda: master.decouple(
        np.ones((4, LMAX + 1)), too_much_masked(), bins(1, lmin=0)), ValueError,
     "cannot be inverted for these bins"),
    ("bandpowers_spin2 too much masked", lambda: master.bandpowers_spin2(
        q(), u(), _maps()[4], bins(1, lmin=0)), ValueError,
     "cannot be inverted for these bins"),
    # -- spins other than 0 and 2 ---------------------------------------------------------------
    ("coupling_matrix spins (1, 1)", lambda: master.coupling_matrix(mask(), spins=(1, 1)),
     ValueError, r"spins must be \(0, 0\), \(0, 2\), \(2, 0\), \(2, 2\) or 'all'"),
    ("coupling_matrix spins (0, 3)", lambda: master.coupling_matrix(mask(), spins=(0, 3)),
     ValueError, "spins must be"),
    ("coupling_matrix spins 2", lambda: master.coupling_matrix(mask(), spins=2), ValueError,
     "spins must be"),
    ("Coupling.matrix spins (1, 1)", lambda: _couplings()[(2, 2)].matrix((1, 1)), ValueError,
     "spins must be"),
    ("Workspace spins (2, 1)", lambda: master.Workspace(
        _couplings()[(2, 2)], bins(), spins=(2, 1)), ValueError, "spins must be"),
    ("decouple spins (1, 1)", lambda: master.decouple(
        np.ones(LMAX + 1), _couplings()[(0, 0)], bins(), spins=(1, 1)), ValueError,
     "spins must be"),
    # -- non-finite pseudo-spectra and theory spectra -------------------------------------------
    ("decouple pseudo_cl NaN", lambda: master.decouple(
        nan_at(LMAX + 1), _couplings()[(0, 0)], bins()), ValueError,
     "pseudo_cl contains NaN or infinite"),
    ("Workspace.decouple_cell pseudo_cl inf", lambda: ws((2, 2)).decouple_cell(
        nan_at((7, 4, LMAX + 1), 100, np.inf)), ValueError, "pseudo_cl contains NaN"),
    ("Workspace.couple_cell cl NaN", lambda: ws().couple_cell(nan_at(LMAX + 1)), ValueError,
     "cl contains NaN"),
    ("Workspace.bin_theory cl NaN", lambda: ws((2, 2)).bin_theory(nan_at((4, LMAX + 1))),
     ValueError, "cl contains NaN"),
    ("Coupling.couple_cell cl NaN", lambda: _couplings()[(0, 0)].couple_cell(
        nan_at(LMAX + 1)), ValueError, "cl contains NaN"),
    ("Workspace beam NaN", lambda: master.Workspace(
        _couplings()[(0, 0)], bins(), beam=nan_at(LMAX + 1)), ValueError,
     "beam contains NaN"),
    # -- MonteCarlo(bins=..., mask=...) ---------------------------------------------------------
    ("MonteCarlo mask size", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=np.ones(100)),
     ValueError, r"mask has shape \(100,\): give a HEALPix map of shape \(768,\)"),
    ("MonteCarlo mask negative", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX,
                                                    mask=with_value(-1.0)),
     ValueError, "mask must be >= 0"),
    ("MonteCarlo mask NaN", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=with_value(np.nan)),
     ValueError, "mask contains NaN or infinite"),
    ("MonteCarlo mask zero", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=np.zeros(NPIX)),
     ValueError, "mask is zero everywhere"),
    ("MonteCarlo bins beyond lmax", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=mask(),
                                                       bins=bins(lmax=40)),
     ValueError, "bins reach l = 37, beyond the Monte Carlo's lmax = 15"),
    ("MonteCarlo bins width beyond lmax", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=mask(),
                                                             bins=30),
     ValueError, "bins .a bin width. must be at most lmax - 1"),
    ("MonteCarlo bins not Bins", lambda: MonteCarlo(cl_tt(), NSIDE, LMAX, mask=mask(),
                                                    bins="wide"),
     TypeError, "bins must be a sphgpu.master.Bins or an int"),
    ("MonteCarlo bins too much masked", lambda: MonteCarlo(
        planck2018_cl(LMAX, spectra=("TT", "EE", "BB", "TE")), NSIDE, LMAX, pol=True,
        mask=_maps()[4], bins=bins(1, lmin=0)), ValueError,
     r"bins \(with this mask and beam, spins .*cannot be inverted"),
]


@pytest.mark.parametrize("call, error, words", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises_naming_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_nan_in_one_spectrum_of_a_batch_is_refused_not_spread():
    # one NaN among 7 x 4 pseudo-spectra: refused, where a product would make every
    # bandpower of that simulation NaN
    w = ws((2, 2))
    good = np.abs(np.random.default_rng(0).normal(size=(7, 4, LMAX + 1)))
    out = w.decouple_cell(good)
    assert out.shape == (7, 4, w.bins.nbins) and np.all(np.isfinite(out))
    bad = good.copy()
    bad[5, 3, 9] = np.nan
    with pytest.raises(ValueError, match="pseudo_cl contains NaN"):
        w.decouple_cell(bad)
