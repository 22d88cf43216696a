"""Coupling matrices: CPU twin and ducc0 against the exact reference and each other; full sky;
the public function's arguments and errors."""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu.master import Coupling, coupling_matrix, mask_spectrum
from sphgpu.master import _cpu, reference

from .cases import TOL, cut_mask, random_mask_cl, row_err

BLOCKS = ("00", "02", "++", "--")


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(7)
    out = {}
    for lmax in (10, 20):
        wl = random_mask_cl(rng, lmax)
        out[lmax] = wl, reference.coupling_blocks(wl, lmax, BLOCKS)
    return out


@pytest.mark.parametrize("lmax", [10, 20])
@pytest.mark.parametrize("method", ["twin", "ducc0"])
def test_cpu_matches_reference(small, lmax, method):
    wl, want = small[lmax]
    got = _cpu.coupling_blocks(wl, lmax, BLOCKS, method=method)
    for b in range(4):
        assert row_err(got[b], want[b]) <= TOL["coupling_vs_reference"], BLOCKS[b]


@pytest.mark.parametrize("lmax", [33, 200])
def test_twin_matches_ducc0(lmax, rng):
    wl = random_mask_cl(rng, lmax)
    twin = _cpu.coupling_blocks(wl, lmax, BLOCKS, method="twin")
    peer = _cpu.coupling_blocks(wl, lmax, BLOCKS, method="ducc0")
    for b in range(4):
        assert row_err(twin[b], peer[b]) <= TOL["coupling_vs_ducc0"], BLOCKS[b]


def test_blocks_in_any_order_and_a_short_spectrum(rng):
    # W_L given only to L = 7 (< 2 lmax): zero beyond, in every path
    lmax = 9
    wl = random_mask_cl(rng, lmax)[:8]
    want = reference.coupling_blocks(wl, lmax, ("--", "00"))
    for method in ("twin", "ducc0"):
        got = _cpu.coupling_blocks(wl, lmax, ("--", "00"), method=method)
        assert row_err(got[0], want[0]) <= TOL["coupling_vs_reference"]
        assert row_err(got[1], want[1]) <= TOL["coupling_vs_reference"]


def test_full_sky_is_the_identity():
    # a mask of ones: W_0 = 4 pi, nothing else; M^00 = 1, M^++ = 1 for l >= 2, M^-- = 0
    lmax = 12
    wl = np.zeros(2 * lmax + 1)
    wl[0] = 4 * math.pi
    c = coupling_matrix(wl, lmax, spins="all", is_cl=True, method="twin")
    eye = np.eye(lmax + 1)
    spin2 = np.diag((np.arange(lmax + 1) >= 2).astype(float))
    np.testing.assert_allclose(c.blocks["00"], eye, atol=1e-14)
    np.testing.assert_allclose(c.blocks["02"], spin2, atol=1e-14)
    np.testing.assert_allclose(c.blocks["++"], spin2, atol=1e-14)
    np.testing.assert_allclose(c.blocks["--"], 0, atol=1e-14)


def test_full_sky_map_gives_the_identity():
    # HEALPix quadrature is not exact: a map of ones at nside 8 has W_0 = 4 pi (1 - 1.2e-4)
    # and W_2 = 1.5e-8 (iter=3), so M^00 is the identity to 6.9e-5 (measured)
    nside = 8
    c = coupling_matrix(np.ones(12 * nside ** 2), spins=(0, 0), method="twin")
    assert c.lmax == 3 * nside - 1 and c.nside == nside
    np.testing.assert_allclose(c.blocks["00"], np.eye(c.lmax + 1), atol=1e-4)


@pytest.mark.parametrize("spins, names", [((0, 0), ["00"]), ((0, 2), ["02"]), ((2, 0), ["02"]),
                                          ((2, 2), ["++", "--"]), ("all", list(BLOCKS))])
def test_spins_choose_the_blocks(spins, names, rng):
    wl = random_mask_cl(rng, 6)
    c = coupling_matrix(wl, spins=spins, is_cl=True, backend="reference")
    assert isinstance(c, Coupling) and sorted(c.blocks) == sorted(names)
    assert c.lmax == 2 * 6


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_binary_and_apodized_map_masks_match_reference(backend):
    # the map path (mask spectrum by sphgpu.anafast) on both host backends; lmax 10, odd
    nside, lmax = 8, 10
    mask = cut_mask(nside, 0.3)
    apod = sphgpu.master.apodize_mask(mask, 15.0, apotype="C2")
    for m in (mask, apod):
        wl = mask_spectrum(m, lmax=min(2 * lmax, 3 * nside - 1))
        want = reference.coupling_blocks(wl, lmax, ("00", "++"))
        c = coupling_matrix(m, lmax, spins=(0, 0), backend=backend)
        assert row_err(c.blocks["00"], want[0]) <= TOL["coupling_vs_reference"]
        c = coupling_matrix(m, lmax, spins=(2, 2), backend=backend)
        assert row_err(c.blocks["++"], want[1]) <= TOL["coupling_vs_reference"]


def test_mask_spectrum_is_anafast_of_the_mask(rng):
    nside = 4
    m = rng.uniform(0, 1, 12 * nside ** 2)
    m2 = rng.uniform(0, 1, 12 * nside ** 2)
    np.testing.assert_allclose(mask_spectrum(m, lmax=7), sphgpu.anafast(m, lmax=7, pol=False))
    np.testing.assert_allclose(mask_spectrum(m, m2, lmax=7),
                               sphgpu.anafast(m, m2, lmax=7, pol=False))


def test_matrix_and_couple_cell(rng):
    lmax = 8
    wl = random_mask_cl(rng, lmax)
    c = coupling_matrix(wl, lmax, spins="all", is_cl=True, backend="reference")
    nl = lmax + 1
    full = c.matrix((2, 2))
    assert full.shape == (4 * nl, 4 * nl)
    ee, bb, eb = rng.uniform(1, 2, (3, nl))
    got = c.couple_cell(np.stack([ee, eb, eb, bb]), spins=(2, 2))
    p, m = c.blocks["++"], c.blocks["--"]
    np.testing.assert_allclose(got[0], p @ ee + m @ bb, rtol=1e-13)
    np.testing.assert_allclose(got[3], m @ ee + p @ bb, rtol=1e-13)
    np.testing.assert_allclose(got[1], p @ eb - m @ eb, rtol=1e-13)
    np.testing.assert_allclose(c.couple_cell(ee, spins=(0, 0)), c.blocks["00"] @ ee, rtol=1e-13)
    te = c.couple_cell(np.stack([ee, bb]), spins=(0, 2))
    np.testing.assert_allclose(te[1], c.blocks["02"] @ bb, rtol=1e-13)
    with pytest.raises(ValueError, match="spins must name one spin pair"):
        c.matrix()
    c00 = coupling_matrix(wl, lmax, spins=(0, 0), is_cl=True, backend="reference")
    with pytest.raises(ValueError, match="needs blocks"):
        c00.matrix((2, 2))


# ----------------------------------------------------------------------------- bad input
def test_bad_masks_are_named():
    with pytest.raises(ValueError, match="mask must be a HEALPix map"):
        coupling_matrix(np.ones(50))
    with pytest.raises(ValueError, match="mask must be non-negative"):
        coupling_matrix(-np.ones(48))
    with pytest.raises(ValueError, match="mask contains NaN"):
        coupling_matrix(np.full(48, np.nan))
    with pytest.raises(ValueError, match="mask is zero everywhere"):
        coupling_matrix(np.zeros(48))
    with pytest.raises(ValueError, match="mask must be one map"):
        coupling_matrix(np.ones((2, 48)))
    with pytest.raises(ValueError, match="mask2 must have the nside"):
        coupling_matrix(np.ones(48), mask2=np.ones(192))
    with pytest.raises(ValueError, match="mask \\(a power spectrum"):
        coupling_matrix(np.ones((2, 5)), is_cl=True)


@pytest.mark.parametrize("spins", [(0, 1), (2, 3), (1,), "EB", (0, 2, 2), 3])
def test_spins_other_than_0_and_2_are_named(spins):
    with pytest.raises(ValueError, match="spins must be"):
        coupling_matrix(np.ones(9), spins=spins, is_cl=True)


def test_other_bad_arguments():
    # purify_b needs a spin-2 field (tests/master/test_purify.py has the rest)
    with pytest.raises(ValueError, match="purify_b=True purifies the B of a spin-2 field"):
        coupling_matrix(np.ones(9), spins=(0, 0), purify_b=True, is_cl=True)
    assert coupling_matrix(np.ones(9), spins=(2, 2), purify_b=True, is_cl=True).purify_b
    with pytest.raises(TypeError, match="lmax must be an integer"):
        coupling_matrix(np.ones(9), 4.0, is_cl=True)
    with pytest.raises(ValueError, match="method must be one of"):
        coupling_matrix(np.ones(9), is_cl=True, backend="cpu", method="fast")
    with pytest.raises(ValueError, match="method='twin' is for the CPU backend"):
        coupling_matrix(np.ones(9), is_cl=True, backend="reference", method="twin")
