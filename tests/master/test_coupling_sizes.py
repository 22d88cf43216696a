"""Issue 41's coupling checks at its odd sizes (lmax 10, 33, 200), for binary and apodized
masks, all four blocks: the public coupling_matrix (ducc0 and the Numba twin of the CUDA
kernel) against each other to 1e-12 and against a brute-force reference.

Two references: the exact-arithmetic one (sphgpu.master.reference, Racah's sum; seconds at lmax
33) and, where that is too slow, a real-space quadrature that shares nothing with the Wigner-3j
recursions: with xi(x) = sum_L (2L+1)/(4 pi) W_L P_L(x) and Gauss-Legendre nodes enough to
integrate the polynomials exactly,

    M^00_ll' = (2l'+1)/2 int P_l P_l' xi dx,          M^02_ll' = (2l'+1)/2 int d^l_20 d^l'_20 xi dx,
    M^+-_ll' = (2l'+1)/4 int (d^l_22 d^l'_22 +- d^l_2,-2 d^l'_2,-2) xi dx,

which follow from d^l1_(m1 n1) d^l2_(m2 n2) = sum_L (2L+1) (l1 l2 L; m1 m2 .)(l1 l2 L; n1 n2 .)
d^L_(m1+m2, n1+n2) and the orthogonality of the P_L. Wigner's d-functions come from their
three-term recursion in l at fixed angle; the nodes from Newton's method on P_n.
"""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu.master import _cpu, apodize_mask, coupling_matrix, mask_spectrum, reference

from .cases import TOL, cut_mask, random_mask_cl, row_err

BLOCKS = ("00", "02", "++", "--")


def gauss_legendre(n):
    """Nodes and weights of the n-point Gauss-Legendre rule on [-1, 1] (Newton on P_n from
    Tricomi's first guess; numpy's leggauss weights were off by 1e-11 relative at n = 402)."""
    x = np.cos(math.pi * (np.arange(n) + 0.75) / (n + 0.5))

    def legendre(x):
        p0, p1 = np.ones_like(x), x.copy()
        for k in range(1, n):
            p0, p1 = p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1)
        return p1, n * (x * p1 - p0) / (x * x - 1)      # P_n, P_n'

    for _ in range(50):
        p, dp = legendre(x)
        step = p / dp
        x = x - step
        if np.max(np.abs(step)) < 1e-16:
            break
    _, dp = legendre(x)
    return x, 2.0 / ((1.0 - x * x) * dp * dp)


def wigner_d(lmax, m, mp, x):
    """d^l_(m m')(arccos x), shape (lmax + 1, x.size), for (m, m') = (0, 0), (2, 2), (2, -2),
    (2, 0); zero for l < max(|m|, |m'|)."""
    out = np.zeros((lmax + 1, x.size))
    if (m, mp) == (0, 0):                                # Legendre's recursion
        out[0] = 1.0
        if lmax >= 1:
            out[1] = x
        for l in range(1, lmax):
            out[l + 1] = ((2 * l + 1) * x * out[l] - l * out[l - 1]) / (l + 1)
        return out
    c, s = (1 + x) / 2, (1 - x) / 2                     # cos^2(beta / 2), sin^2(beta / 2)
    out[2] = {(2, 2): c * c, (2, -2): s * s, (2, 0): math.sqrt(6.0) * c * s}[(m, mp)]
    for l in range(2, lmax):
        up = math.sqrt(((l + 1) ** 2 - m * m) * ((l + 1) ** 2 - mp * mp))
        down = math.sqrt((l * l - m * m) * (l * l - mp * mp))
        out[l + 1] = ((2 * l + 1) * (l * (l + 1) * x - m * mp) * out[l]
                      - (l + 1) * down * out[l - 1]) / (l * up)
    return out


def quadrature_blocks(wl, lmax):
    """The four blocks (4, lmax + 1, lmax + 1) by the real-space quadrature of the module
    docstring; W_L (zero beyond its length) enters up to L = 2 lmax."""
    wl = np.asarray(wl, dtype=np.float64)[:2 * lmax + 1]
    x, w = gauss_legendre(2 * lmax + 2)                  # exact to degree 4 lmax + 3
    ell = np.arange(wl.size)
    wx = w * np.polynomial.legendre.legval(x, (2 * ell + 1) / (4 * math.pi) * wl)
    col = (2 * np.arange(lmax + 1) + 1.0)[None, :]
    p, d20 = wigner_d(lmax, 0, 0, x), wigner_d(lmax, 2, 0, x)
    d22, d2m2 = wigner_d(lmax, 2, 2, x), wigner_d(lmax, 2, -2, x)
    a, b = (d22 * wx) @ d22.T, (d2m2 * wx) @ d2m2.T
    return np.stack([(p * wx) @ p.T * col / 2, (d20 * wx) @ d20.T * col / 2,
                     (a + b) * col / 4, (a - b) * col / 4])


def pair_err(got, want, b):
    """row_err, except for "--": M^-- = (a - b)/4 is the small difference of two integrals
    each as exact as M^++ = (a + b)/4, so the quadrature's "--" is measured against the ++
    row's scale (its rows were 1e-3 of M^++ for a smooth W_L: 6e-12 of the "--" row at lmax
    200 is 1e-14 of the pair's)."""
    if BLOCKS[b] != "--":
        return row_err(got[b], want[b])
    scale = np.abs(want[2]).max(axis=-1)
    diff = np.abs(got[3] - want[3]).max(axis=-1)
    keep = scale > 0
    assert np.all(diff[~keep] == 0)
    return float(np.max(diff[keep] / scale[keep]))


@pytest.mark.parametrize("lmax", [10, 33])
def test_quadrature_reference_is_the_exact_reference(lmax, rng):
    wl = random_mask_cl(rng, lmax)
    exact = reference.coupling_blocks(wl, lmax, BLOCKS)
    quad = quadrature_blocks(wl, lmax)
    for b in range(4):
        # measured at lmax 33: 2.2e-14 (00), 2.9e-15 (02), 9.2e-15 (++), 8.6e-15 of the ++
        # row for "--" (1.8e-13 of its own row)
        assert pair_err(quad, exact, b) <= TOL["coupling_vs_reference"], BLOCKS[b]
    # and ducc0 and the twin at lmax 33 (tests/master/test_coupling.py: 10 and 20)
    for method in ("ducc0", "twin"):
        got = _cpu.coupling_blocks(wl, lmax, BLOCKS, method=method)
        for b in range(4):
            assert row_err(got[b], exact[b]) <= TOL["coupling_vs_reference"], (method, b)


#: nside for each lmax: W_L up to min(2 lmax, 3 nside - 1)
NSIDES = {10: 8, 33: 32, 200: 128}


def _mask(kind, nside):
    binary = cut_mask(nside, math.radians(25.0))
    if kind == "binary":
        return binary
    return apodize_mask(binary, 10.0, apotype="C2")


@pytest.mark.parametrize("kind", ["binary", "apodized"])
@pytest.mark.parametrize("lmax", [10, 33, 200])
def test_map_masks_at_odd_sizes_against_ducc0_and_brute_force(kind, lmax):
    nside = NSIDES[lmax]
    mask = _mask(kind, nside)
    ducc = coupling_matrix(mask, lmax, spins="all", backend="cpu")          # ducc0
    twin = coupling_matrix(mask, lmax, spins="all", backend="cpu", method="twin")
    got = {"ducc0": np.stack([ducc.blocks[b] for b in BLOCKS]),
           "twin": np.stack([twin.blocks[b] for b in BLOCKS])}
    for b in range(4):
        # the issue's 1e-12 of ducc0's coupling_matrix_rect, max over rows
        assert row_err(got["twin"][b], got["ducc0"][b]) <= TOL["coupling_vs_ducc0"], BLOCKS[b]
    wl = mask_spectrum(mask, lmax=min(2 * lmax, 3 * nside - 1))
    np.testing.assert_array_equal(ducc.mask_cl, wl)       # the same W_L went in
    brute = (reference.coupling_blocks(wl, lmax, BLOCKS) if lmax <= 33
             else quadrature_blocks(wl, lmax))
    # measured: twin vs ducc0 at most 9.1e-14 (lmax 200, "--"); either against the brute
    # force at most 1.2e-13 (lmax 200, "00")
    for name, blocks in got.items():
        for b in range(4):
            err = (row_err(blocks[b], brute[b]) if lmax <= 33
                   else pair_err(blocks, brute, b))
            assert err <= TOL["coupling_vs_ducc0"], (name, BLOCKS[b], err)


def test_quadrature_reference_sees_a_wrong_block():
    # the comparison has power: a coupling of another mask, or one block in place of another,
    # misses by far more than the tolerance
    lmax, nside = 33, 32
    wl = mask_spectrum(_mask("apodized", nside), lmax=2 * lmax)
    quad = quadrature_blocks(wl, lmax)
    other = coupling_matrix(_mask("binary", nside), lmax, spins="all", backend="cpu")
    assert row_err(other.blocks["00"], quad[0]) > 1e-3
    assert row_err(quad[2], quad[3]) > 1e-3 and row_err(quad[1], quad[0]) > 1e-3
    # the full sky: every block the identity (spin 2 from l = 2), M^-- zero
    full = np.zeros(2 * lmax + 1)
    full[0] = 4 * math.pi
    q = quadrature_blocks(full, lmax)
    spin2 = np.diag((np.arange(lmax + 1) >= 2).astype(float))
    np.testing.assert_allclose(q[0], np.eye(lmax + 1), atol=1e-13)
    for b in (1, 2):
        np.testing.assert_allclose(q[b], spin2, atol=1e-13)
    np.testing.assert_allclose(q[3], 0.0, atol=1e-13)
    assert sphgpu.master.coupling_matrix(full, lmax, spins="all", is_cl=True).lmax == lmax
