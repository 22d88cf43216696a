"""Pure B (Smith 2006): the estimator on a grid where quadrature is exact (no E at all, and its
exact linear map equals the pure coupling matrices), a slow twin by finite differences of the
window, E-only and B-only simulations on HEALPix, the one-call chain, and bad input."""

import math
import warnings

import numpy as np
import pytest

import sphgpu
from sphgpu.alm import AlmLayout
from sphgpu.geometry import RingGeometry
from sphgpu.master import (Bins, Workspace, apodize_mask, bandpowers_spin2, coupling_matrix,
                           mask_derivatives, pseudo_alm_spin2, pseudo_cl_spin2)
from sphgpu.master.coupling import pure_ratio

from .cases import cut_mask, random_mask_cl

stats = pytest.importorskip("scipy.stats")


def _n(l):
    """N_l = sqrt((l+2)!/(l-2)!), 0 below l = 2."""
    l = np.asarray(l, dtype=np.float64)
    return np.sqrt(np.maximum((l + 2) * (l + 1) * l * (l - 1), 0.0))


def _random_alm(rng, lmax, lmin=0):
    lay = AlmLayout(lmax)
    l, m = lay.lm()
    a = rng.normal(size=lay.size) + 1j * rng.normal(size=lay.size)
    a[m == 0] = a[m == 0].real
    a[l < lmin] = 0
    return a


# ------------------------------------------------------------------ exact (Gauss-Legendre grid)
# A window band-limited to LW and skies to L on Gauss-Legendre rings that integrate every product
# (degree LW + 2 L) exactly: the estimator is then its continuum form to rounding.
LW, L = 4, 10
GRID = RingGeometry.gauss_legendre(16, 40)


@pytest.fixture(scope="module")
def window():
    rng = np.random.default_rng(5)
    w = 0.08 * _random_alm(rng, LW)
    w[0] = 3.0                                   # positive everywhere (a weight)
    wmap = sphgpu.alm2map(w, lmax=LW, geometry=GRID)
    assert wmap.min() > 0.5
    return w, wmap


def _qu(e, b):
    return sphgpu.alm2map_spin(np.stack([e, b], axis=-2), spin=2, lmax=L, geometry=GRID)


def test_pure_b_holds_no_e_and_is_the_windowed_b_scalar_on_an_exact_grid(window, rng):
    w, wmap = window
    e = _random_alm(rng, L, lmin=2)
    b = _random_alm(rng, L, lmin=2)
    # E alone: the standard pseudo-B holds leaked E, pure B none (rounding)
    q, u = _qu(e, 0 * e)
    std = pseudo_alm_spin2(q, u, wmap, L, geometry=GRID)
    pure = pseudo_alm_spin2(q, u, wmap, L, purify_b=True, geometry=GRID)
    assert np.abs(std[1]).max() > 0.1 * np.abs(e).max()
    assert np.abs(pure[1]).max() < 1e-12 * np.abs(std[1]).max()
    np.testing.assert_allclose(pure[0], std[0], rtol=0, atol=1e-15)   # E is not purified
    # B alone: B^pure_lm = a_lm[W beta] / N_l with beta = sum N_l B_lm Y_lm (module docstring)
    q, u = _qu(0 * b, b)
    pure = pseudo_alm_spin2(q, u, wmap, L, purify_b=True, geometry=GRID)
    lb = AlmLayout(L).lm()[0]
    beta = sphgpu.alm2map(_n(lb) * b, lmax=L, geometry=GRID)
    a = sphgpu.map2alm(wmap * beta, L, iter=0, pol=False, geometry=GRID)
    want = np.where(lb >= 2, a / np.where(lb >= 2, _n(lb), 1.0), 0.0)
    np.testing.assert_allclose(pure[1], want, rtol=0, atol=1e-13 * np.abs(want).max())


def _expected(x, y, l_of):
    """sum_m Re(x_lm conj(y_lm)) / (2l + 1) over m = -l..l of real fields, per l, batched."""
    prod = (x * np.conj(y)).real
    prod = np.where(AlmLayout(L).lm()[1] == 0, prod, 2 * prod)
    out = np.zeros(prod.shape[:-1] + (L + 1,))
    for l in range(L + 1):
        out[..., l] = prod[..., l_of == l].sum(-1) / (2 * l + 1)
    return out


def test_pure_coupling_is_the_estimators_exact_expectation(window):
    # the expected pseudo-spectra of unit input spectra at each l', from the estimator's exact
    # linear map (every input coefficient, its variance), against Coupling.matrix
    w, wmap = window
    lay = AlmLayout(L)
    l_of, m_of = lay.lm()
    basis, var, col = [], [], []
    for i in range(lay.size):
        if l_of[i] < 2:
            continue
        for part, v in ((1.0, 1.0 if m_of[i] == 0 else 0.5), (1j, 0.5)):
            if m_of[i] == 0 and part == 1j:
                continue
            a = np.zeros(lay.size, complex)
            a[i] = part
            basis.append(a)
            var.append(v)
            col.append(l_of[i])
    basis = np.array(basis)
    var = np.array(var)
    col = np.array(col)
    z = 0 * basis
    from_e = pseudo_alm_spin2(*np.moveaxis(_qu(basis, z), -2, 0), wmap, L, purify_b=True,
                              geometry=GRID)
    from_b = pseudo_alm_spin2(*np.moveaxis(_qu(z, basis), -2, 0), wmap, L, purify_b=True,
                              geometry=GRID)
    t_of = sphgpu.map2alm(wmap * sphgpu.alm2map(basis, lmax=L, pol=False, geometry=GRID), L, iter=0,
                          pol=False, geometry=GRID)
    resp = {"E": from_e, "B": from_b}           # resp[X][:, 0] = E~, [:, 1] = B^pure
    n = L + 1
    got = np.zeros((4 * n, 4 * n))
    pairs = [("E", "E"), ("E", "B"), ("B", "E"), ("B", "B")]
    for j, (x_in, y_in) in enumerate(pairs):              # input spectrum <x y*>
        for i, (xo, yo) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):   # EE EB BE BB out
            per = _expected(resp[x_in][:, xo], resp[y_in][:, yo], l_of) * var[:, None]
            for lp in range(2, n):
                got[i * n:(i + 1) * n, j * n + lp] = per[col == lp].sum(0)
    wl = sphgpu.alm2cl(w)
    c = coupling_matrix(wl, L, spins="all", purify_b=True, is_cl=True, backend="reference")
    want = c.matrix((2, 2))
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    # T x pure B: TB~ = R M^00 TB
    tb = np.zeros((n, n))
    per = _expected(t_of, from_b[:, 1], l_of) * var[:, None]
    for lp in range(2, n):
        tb[:, lp] = per[col == lp].sum(0)
    want_tb = c.matrix((0, 2))[n:, n:]
    assert np.abs(tb - want_tb).max() <= 1e-12 * np.abs(want_tb).max()


# ------------------------------------------------------------- slow twin: finite differences
def _smooth_window(theta, phi):
    """A smooth window, a broad bump centred off the pole (so d/dphi matters)."""
    n0 = np.array([math.sin(0.7) * math.cos(0.4), math.sin(0.7) * math.sin(0.4), math.cos(0.7)])
    dot = (np.sin(theta) * np.cos(phi) * n0[0] + np.sin(theta) * np.sin(phi) * n0[1]
           + np.cos(theta) * n0[2])
    return np.exp((dot - 1.0) / 0.6)


def _fd_derivatives(theta, phi, h=1e-4):
    """edth W and edth^2 W by central differences in theta and phi (the formulas of
    sphgpu.master.mask_derivatives, written out)."""
    f = _smooth_window
    w_t = (f(theta + h, phi) - f(theta - h, phi)) / (2 * h)
    w_p = (f(theta, phi + h) - f(theta, phi - h)) / (2 * h)
    w_tt = (f(theta + h, phi) - 2 * f(theta, phi) + f(theta - h, phi)) / h ** 2
    w_pp = (f(theta, phi + h) - 2 * f(theta, phi) + f(theta, phi - h)) / h ** 2
    w_tp = (f(theta + h, phi + h) - f(theta + h, phi - h) - f(theta - h, phi + h)
            + f(theta - h, phi - h)) / (4 * h * h)
    s, cot = np.sin(theta), np.cos(theta) / np.sin(theta)
    edth = -(w_t + 1j * w_p / s)
    edth2 = (w_tt - cot * w_t - w_pp / s ** 2) + 2j / s * (w_tp - cot * w_p)
    return edth, edth2


def test_fast_path_matches_a_finite_difference_twin():
    nside = 16
    lmax = 2 * nside
    theta, phi = RingGeometry.healpix(nside).pixel_angles()
    wmap = _smooth_window(theta, phi)
    d1, d2 = _fd_derivatives(theta, phi)
    # the window's coefficients to 2 nside with 10 iterations: HEALPix analysis to 3 nside - 1
    # is not exact (3 iterations left 1e-3 of a pure l = 1 map in other coefficients)
    lw, it = 2 * nside, 10
    der = mask_derivatives(wmap, lmax_mask=lw, iter=it)
    # central differences lose digits near the poles (d_phi^2 / sin^2 theta of rounding):
    # 6.9e-6 of the largest |edth^2 W| at the first ring, 1e-7 elsewhere (measured)
    scale = np.abs(d2).max()
    assert np.abs(der[0, 0] + 1j * der[0, 1] - d1).max() < 2e-5 * scale
    assert np.abs(der[1, 0] + 1j * der[1, 1] - d2).max() < 2e-5 * scale
    # the estimator written as in the module docstring, on the NumPy reference transforms
    cl = np.zeros(lmax + 1)
    cl[2:] = 1.0 / np.arange(2, lmax + 1) ** 2
    _, q, u = sphgpu.synfast([cl, cl, cl, 0 * cl], nside, lmax=lmax, new=True, seed=3)
    p = q + 1j * u
    bar1 = np.conj(d1) * p                       # edth-bar W P, spin 1
    bar2 = np.conj(d2) * p                       # edth-bar^2 W P, spin 0
    std = sphgpu.map2alm_spin([wmap * q, wmap * u], 2, lmax, iter=it, backend="reference")
    spin1 = sphgpu.map2alm_spin([bar1.real, bar1.imag], 1, lmax, iter=it, backend="reference")
    spin0 = sphgpu.map2alm(bar2.imag, lmax, iter=it, pol=False, backend="reference")
    l = AlmLayout(lmax).lm()[0].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = std[1] + 2 / np.sqrt((l - 1) * (l + 2)) * spin1[1] - spin0 / _n(l)
    b[l < 2] = 0
    fast = pseudo_alm_spin2(q, u, wmap, lmax, purify_b=True, lmax_mask=lw, iter=it)
    np.testing.assert_allclose(fast[0], std[0], rtol=0, atol=1e-10 * np.abs(std[0]).max())
    assert np.abs(fast[1] - b).max() < 1e-6 * np.abs(b).max()


# --------------------------------------------------------------------- simulations on HEALPix
NSIDE, LMAX = 32, 64


def _cmb_like(lmax):
    ell = np.arange(lmax + 1)
    ee = np.zeros(lmax + 1)
    ee[2:] = 1.0 / (ell[2:] + 10.0) ** 2
    return ee


@pytest.fixture(scope="module")
def mask():
    return apodize_mask(cut_mask(NSIDE, math.radians(20)), 10.0, apotype="C2")


def test_e_only_sky_leaks_into_standard_b_and_not_into_pure_b(mask):
    ee = _cmb_like(LMAX)
    zero = 0 * ee
    nsims = 8
    q, u = np.empty((2, nsims, 12 * NSIDE ** 2))
    for i in range(nsims):
        _, q[i], u[i] = sphgpu.synfast([ee, ee, zero, zero], NSIDE, lmax=LMAX, new=True,
                                       seed=i)
    std = pseudo_cl_spin2(q, u, mask, LMAX)
    pure = pseudo_cl_spin2(q, u, mask, LMAX, purify_b=True)
    cut = mask == 0                                 # data: nothing known where the mask is 0
    data = pseudo_cl_spin2(np.where(cut, 0, q), np.where(cut, 0, u), mask, LMAX, purify_b=True)
    s, p, d = (x[:, 3].mean(0)[10:] for x in (std, pure, data))
    # the leak itself is large: 0.3-10 % of EE's pseudo-spectrum at l >= 10, median 1.5 %
    # (measured)
    assert np.median(s / (ee[10:] * np.mean(mask ** 2))) > 0.005
    # pure: median 5.8e-5 of the standard one, at most 1.2e-3 (measured; l >= 10)
    assert np.median(p / s) < 1e-3 and np.max(p / s) < 1e-2
    # zero outside the mask: median 7.9e-3, at most 0.031 (measured)
    assert np.median(d / s) < 3e-2 and np.max(d / s) < 0.1
    # decoupled: MASTER removes the leak from the mean of standard BB but keeps its scatter;
    # the mean pure BB is far below that scatter in every bin (at most 2.5e-3 of it, measured)
    bins = Bins.linear(LMAX, 8, lmin=2)
    cb_std = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2)), bins).decouple_cell(std)
    cb_pure = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2), purify_b=True),
                        bins).decouple_cell(pure)
    assert np.all(np.abs(cb_pure[:, 3].mean(0)) < 1e-2 * cb_std[:, 3].std(0))


def _hotelling_ok(samples, expected, level=0.999):
    """Hotelling's T^2 test of the sample mean against ``expected`` with the sample
    covariance: T^2 (n - p) / (p (n - 1)) follows F(p, n - p)."""
    n, p = samples.shape
    diff = samples.mean(0) - expected
    cov = np.cov(samples, rowvar=False) / n
    t2 = float(diff @ np.linalg.solve(cov, diff))
    return t2 * (n - p) / (p * (n - 1)) < stats.f.ppf(level, p, n - p), t2


def test_pure_b_bandpowers_are_unbiased_with_less_variance(mask):
    # E and B skies (BB = EE / 100): decoupled pure BB against the bandpower windows; the
    # standard MASTER BB is unbiased too, with the leaked E's variance
    ee = _cmb_like(LMAX)
    bb = 0.01 * ee
    zero = 0 * ee
    bins = Bins.linear(LMAX, 8, lmin=2)
    ws_pure = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2), purify_b=True), bins)
    ws_std = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2)), bins)
    nsims = 40
    q, u = np.empty((2, nsims, 12 * NSIDE ** 2))
    for i in range(nsims):
        _, q[i], u[i] = sphgpu.synfast([ee, ee, bb, zero], NSIDE, lmax=LMAX, new=True,
                                       seed=500 + i)
    pure = ws_pure.decouple_cell(pseudo_cl_spin2(q, u, mask, LMAX, purify_b=True))
    std = ws_std.decouple_cell(pseudo_cl_spin2(q, u, mask, LMAX))
    theory = np.stack([ee, zero, zero, bb])
    for cb, ws in ((pure, ws_pure), (std, ws_std)):
        want = ws.bin_theory(theory)
        for k in (0, 1, 3):                                     # EE, EB, BB
            ok, t2 = _hotelling_ok(cb[:, k], want[k])
            assert ok, (ws, ws.spectra[k], t2)
    # the point of purification: BB's scatter is 0.13-0.41 of the standard one (measured)
    ratio = pure[:, 3].std(0) / std[:, 3].std(0)
    assert np.all(ratio < 0.6), ratio


# ---------------------------------------------------------------- the coupling and the chain
def test_full_sky_pure_coupling_is_the_identity():
    lmax = 12
    wl = np.zeros(2 * lmax + 1)
    wl[0] = 4 * math.pi
    c = coupling_matrix(wl, lmax, spins="all", purify_b=True, is_cl=True, method="twin")
    assert c.purify_b and sorted(c.blocks) == sorted(["00", "02", "++", "--", "0p", "+p", "pp"])
    eye2 = np.diag((np.arange(lmax + 1) >= 2).astype(float))
    for b in ("0p", "+p", "pp"):
        np.testing.assert_allclose(c.blocks[b], eye2, atol=1e-13)
    np.testing.assert_allclose(c.matrix((2, 2)), np.kron(np.eye(4), eye2), atol=1e-13)


@pytest.mark.parametrize("spins, names", [((2, 2), ["++", "--", "+p", "pp"]),
                                          ((0, 2), ["02", "0p"]), ((2, 0), ["02", "0p"])])
def test_pure_blocks_are_rescaled_standard_blocks(spins, names, rng):
    lmax = 9
    wl = random_mask_cl(rng, lmax)
    pure = coupling_matrix(wl, lmax, spins=spins, purify_b=True, is_cl=True, method="twin")
    std = coupling_matrix(wl, lmax, spins="all", is_cl=True, method="twin")
    assert sorted(pure.blocks) == sorted(names)
    r = pure_ratio(lmax)
    src = {"0p": std.blocks["00"] * r, "+p": std.blocks["02"] * r,
           "pp": std.blocks["00"] * r * r}
    for b in names:
        np.testing.assert_allclose(pure.blocks[b], src.get(b, std.blocks.get(b)), rtol=1e-14)
    n = lmax + 1
    mat = pure.matrix()
    if spins == (2, 2):
        np.testing.assert_allclose(mat[3 * n:, :3 * n], 0)           # BB from nothing but BB
        np.testing.assert_allclose(mat[n:2 * n, n:2 * n], src["+p"])
    else:
        np.testing.assert_allclose(mat[n:, n:], src["0p"])


def test_one_call_chain_and_workspace_reuse(mask, rng):
    ee = _cmb_like(LMAX)
    zero = 0 * ee
    bins = Bins.linear(LMAX, 8, lmin=2)
    maps = np.stack([sphgpu.synfast([ee, ee, ee / 10, zero], NSIDE, lmax=LMAX, new=True,
                                    seed=s)[1:] for s in (1, 2)])     # (2 sims, Q/U, npix)
    q, u = maps[:, 0], maps[:, 1]
    cb = bandpowers_spin2(q, u, mask, bins, purify_b=True)
    assert cb.shape == (2, 4, bins.nbins)
    ws = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2), purify_b=True), bins)
    assert ws.purify_b and "purify_b=True" in repr(ws)
    by_hand = ws.decouple_cell(pseudo_cl_spin2(q, u, mask, LMAX, purify_b=True))
    np.testing.assert_allclose(cb, by_hand, rtol=1e-12)
    again = bandpowers_spin2(q[1], u[1], mask, workspace=ws, purify_b=True)
    np.testing.assert_allclose(again, cb[1], rtol=1e-12)
    # without purification the same call is plain MASTER
    plain = bandpowers_spin2(q[0], u[0], mask, bins)
    ws0 = Workspace(coupling_matrix(mask, LMAX, spins=(2, 2)), bins)
    np.testing.assert_allclose(plain, ws0.decouple_cell(
        sphgpu.master.pseudo_cl_spin2(q[0], u[0], mask, LMAX)), rtol=1e-12)
    with pytest.raises(ValueError, match="purify_b=False disagrees with the workspace"):
        bandpowers_spin2(q, u, mask, workspace=ws)
    with pytest.raises(ValueError, match="give bins or workspace"):
        bandpowers_spin2(q, u, mask, bins, workspace=ws, purify_b=True)
    with pytest.raises(ValueError, match="beam and pixwin belong to the workspace"):
        bandpowers_spin2(q, u, mask, workspace=ws, purify_b=True, beam=np.ones(LMAX + 1))


def test_unpurified_pseudo_alm_is_the_masked_maps_transform(mask, rng):
    _, q, u = sphgpu.synfast([_cmb_like(LMAX)] * 2 + [0 * _cmb_like(LMAX)] * 2, NSIDE,
                             lmax=LMAX, new=True, seed=9)
    got = pseudo_alm_spin2(q, u, mask, LMAX)
    want = sphgpu.map2alm_spin([mask * q, mask * u], 2, LMAX, iter=3)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * np.abs(want).max())
    cl = pseudo_cl_spin2(q, u, mask, LMAX)
    six = sphgpu.anafast(np.stack([0 * q, q, u]) * mask, lmax=LMAX)        # TT EE BB TE EB TB
    np.testing.assert_allclose(cl, six[[1, 4, 4, 2]], rtol=1e-10, atol=1e-20)


# ------------------------------------------------------------------------------- bad input
def test_binary_masks_are_refused_and_steep_ones_warned(rng):
    nside = 8
    binary = cut_mask(nside, 0.3)
    q, u = rng.normal(size=(2, 12 * nside ** 2))
    with pytest.raises(ValueError, match="mask is binary"):
        pseudo_alm_spin2(q, u, binary, purify_b=True)
    with pytest.raises(ValueError, match="mask is binary"):
        coupling_matrix(binary, spins=(2, 2), purify_b=True)
    with pytest.raises(ValueError, match="mask2 is binary"):
        coupling_matrix(apodize_mask(binary, 20.0), spins=(2, 2), purify_b=True, mask2=binary)
    pseudo_alm_spin2(q, u, binary)                         # standard B: any mask
    # weighted but not apodized: a step at the edge
    steep = binary * rng.uniform(0.9, 1.0, binary.size)
    with pytest.warns(UserWarning, match="mask is not smooth"):
        pseudo_alm_spin2(q, u, steep, purify_b=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pseudo_alm_spin2(q, u, apodize_mask(binary, 30.0, apotype="C2"), purify_b=True)


def test_wrong_sizes_and_spins_are_named(rng):
    nside = 8
    mask = apodize_mask(cut_mask(nside, 0.3), 30.0)
    npix = 12 * nside ** 2
    q, u = rng.normal(size=(2, npix))
    with pytest.raises(ValueError, match="q must have the mask's 768 pixels"):
        pseudo_alm_spin2(q[:100], u, mask)
    with pytest.raises(ValueError, match="u must have the mask's 768 pixels"):
        pseudo_alm_spin2(q, np.ones(12 * 4 ** 2), mask)
    with pytest.raises(ValueError, match="q and u must have the same shape"):
        pseudo_alm_spin2(np.stack([q, q]), u, mask)
    with pytest.raises(ValueError, match="mask must be a HEALPix map"):
        pseudo_alm_spin2(q, u, mask[:-1])
    with pytest.raises(ValueError, match="mask must be non-negative"):
        pseudo_alm_spin2(q, u, -mask, purify_b=True)
    with pytest.raises(ValueError, match="purify_b=True purifies the B of a spin-2 field"):
        coupling_matrix(mask, spins=(0, 0), purify_b=True)
    with pytest.raises(TypeError, match="purify_b must be True or False"):
        coupling_matrix(mask, spins=(2, 2), purify_b="yes")
    with pytest.raises(ValueError, match="spins must be"):
        coupling_matrix(mask, spins=(2, 1), purify_b=True)
    with pytest.raises(ValueError, match="lmax_mask must be >= 0"):
        pseudo_alm_spin2(q, u, mask, purify_b=True, lmax_mask=-1)
    with pytest.raises(ValueError, match="mask must be one real map of the geometry"):
        pseudo_alm_spin2(q, u, mask, geometry=RingGeometry.gauss_legendre(8))
    # a standard coupling's matrix has no pure blocks
    c = coupling_matrix(mask, spins=(2, 2))
    assert not c.purify_b



def test_derivatives_made_once_give_the_same_pure_b(rng):
    """pseudo_alm_spin2 with mask_derivatives made beforehand (what a Monte Carlo reuses over
    its batches) equals the call that makes them, bit for bit; wrong ones are named."""
    nside = 8
    mask = apodize_mask(cut_mask(nside, 0.3), 30.0, apotype="C2")
    q, u = rng.normal(size=(2, 3, 12 * nside ** 2))
    want = pseudo_alm_spin2(q, u, mask, purify_b=True, iter=1)
    derivatives = mask_derivatives(mask, iter=1)
    got = pseudo_alm_spin2(q, u, mask, purify_b=True, iter=1, derivatives=derivatives)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"derivatives must be mask_derivatives' float64 array "
                                         r"of shape \(2, 2, 768\)"):
        pseudo_alm_spin2(q, u, mask, purify_b=True, derivatives=derivatives[:1])


def test_a_pure_b_monte_carlo_makes_the_window_derivatives_once(monkeypatch):
    from sphgpu import master
    from sphgpu.sims import MonteCarlo, pipeline

    made = []
    real = master.mask_derivatives
    monkeypatch.setattr(master, "mask_derivatives",
                        lambda *a, **k: made.append(1) or real(*a, **k))
    pipeline._mask_derivatives.cache_clear()
    nside, lmax = 8, 16
    cls = np.zeros((4, lmax + 1))
    cls[1, 2:] = 1.0 / np.arange(2, lmax + 1) ** 2           # EE only
    mask = apodize_mask(cut_mask(nside, 0.3), 30.0, apotype="C2")
    mc = MonteCarlo(cls, nside, lmax, pol=True, mask=mask, purify_b=True, seed=3,
                    batch_size=2, backend="cpu").run(6, progress=False)
    assert mc.nsims == 6 and len(made) == 1
    pipeline._mask_derivatives.cache_clear()
