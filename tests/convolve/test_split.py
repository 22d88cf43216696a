"""The least-squares split: its algebra against a direct joint solve, its bookkeeping, and the
error model."""

import math

import numpy as np
import pytest

from sphgpu.convolve import ARCMIN, RadialKernel, SplitFitter, split_kernel
from sphgpu.testing import TOL


def test_eliminating_the_harmonic_unknowns_solves_the_joint_system():
    # the paper's system: unknowns K^_l (l <= l_cut) and the real-space coefficients, all rows
    # l = 0..lmax weighted by 2l+1. Without truncation the reduced solve must reach the same
    # minimum as a direct least-squares solve of the joint system.
    k = RadialKernel.cmb(900.0, 40)
    f = SplitFitter(k, 1.0, fit="paper", rcond=0.0)
    l_cut, n = 12, f.n_basis(1.0)
    A = np.hstack([np.eye(41)[:, :l_cut + 1], f.A[:, :n]])
    sw = np.sqrt(2 * np.arange(41) + 1.0)
    x, *_ = np.linalg.lstsq(A * sw[:, None], k.bl * sw, rcond=None)
    joint = np.sum((2 * np.arange(41) + 1) * (A @ x - k.bl) ** 2)
    _, resid = f.solve(l_cut, n)
    reduced = np.sum((2 * np.arange(41) + 1) * resid ** 2)
    assert reduced == pytest.approx(joint, rel=1e-6, abs=1e-14 * np.sum(k.bl ** 2))


def test_split_bookkeeping():
    k = RadialKernel.cmb(300.0, 128)
    s = split_kernel(k, 30, 1200 * ARCMIN)
    assert s.harmonic_bl.shape == (31,)
    np.testing.assert_allclose(s.approx_bl[:31], s.harmonic_bl + s.realspace_bl[:31],
                               rtol=TOL["split_parts_sum_rtol"],
                               atol=TOL["split_parts_sum_rtol"] * np.abs(k.bl).max())
    np.testing.assert_allclose(s.approx_bl[31:], s.realspace_bl[31:], rtol=0, atol=0)
    # the spline that will be convolved has exactly the fitted Legendre transform
    np.testing.assert_allclose(s.realspace.bl(s.l_fit), s.realspace_bl,
                               atol=TOL["spline_bl_vs_fit_atol"] * np.abs(s.realspace_bl).max())
    # the default fit runs to l_fit = 4 lmax, where the target is 0
    assert s.l_fit == 4 * 128
    l = np.arange(s.l_fit + 1)
    target = np.concatenate([k.bl, np.zeros(s.l_fit - 128)])
    rel = math.sqrt(np.sum((2 * l + 1) * (s.approx_bl - target) ** 2)
                    / np.sum((2 * l + 1) * target ** 2))
    assert s.relative_rms == pytest.approx(rel, rel=1e-10)
    assert s.predicted_error == pytest.approx(5 * rel)
    assert s.theta_cut <= 1200 * ARCMIN and s.theta_cut_arcmin > 1100
    assert np.isfinite(s.relative_error_per_l()[2:]).all()


def test_error_falls_as_either_cut_grows():
    k = RadialKernel.cmb(600.0, 64)
    f = SplitFitter(k, 2400 * ARCMIN)
    e_l = [f.error(lc, 1200 * ARCMIN) for lc in (5, 15, 30, 50)]
    assert all(a > b for a, b in zip(e_l, e_l[1:]))
    e_t = [f.error(10, t * ARCMIN) for t in (600, 1200, 2400)]
    assert e_t[0] > e_t[-1]
    assert f.error(64, 600 * ARCMIN) == 0.0            # all harmonic: no error at all


def test_real_space_only_and_input_spectrum():
    k = RadialKernel.gaussian(900.0, 64)               # a compact beam: real space alone works
    s = split_kernel(k, -1, 60 * 60 * ARCMIN)
    assert s.harmonic_bl.shape == (0,) and s.predicted_error < 1e-5
    red = split_kernel(k, 10, 600 * ARCMIN, input_cl=1.0 / (1.0 + np.arange(65.0)))
    flat = split_kernel(k, 10, 600 * ARCMIN)
    assert red.relative_rms != pytest.approx(flat.relative_rms, rel=1e-3)


def test_search_finds_the_lowest_valid_l_cut_up_to_a_ripple():
    # the error ripples in l_cut with period ~ 2 pi / theta_cut; the search may miss a valid
    # window far below, but not by more than about two periods, and its answer is always valid
    k = RadialKernel.cmb(400.0, 128)
    f = SplitFitter(k, 1800 * ARCMIN)
    for theta in (900 * ARCMIN, 1500 * ARCMIN):
        errors = [f.error(lc, theta) for lc in range(-1, 128)]
        lowest = next(lc for lc, e in zip(range(-1, 128), errors) if e <= 1e-5)
        for hint in (None, 10, 60, 100):
            got = f.smallest_l_cut(theta, 1e-5, hint=hint)
            assert f.error(got, theta) <= 1e-5
            assert lowest <= got <= lowest + 4 * math.pi / theta


def test_plain_bisection_is_the_papers_search_and_never_beats_the_ripple_search():
    k = RadialKernel.cmb(400.0, 128)
    f = SplitFitter(k, 1800 * ARCMIN)
    for theta in (900 * ARCMIN, 1500 * ARCMIN):
        plain = f.smallest_l_cut(theta, 1e-5, search="bisect")
        assert f.error(plain, theta) <= 1e-5 < f.error(plain - 1, theta)
        assert f.smallest_l_cut(theta, 1e-5) <= plain
    with pytest.raises(ValueError, match="search must be"):
        f.smallest_l_cut(theta, 1e-5, search="linear")
