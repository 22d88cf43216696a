"""RadialKernel and CompactKernel against direct Legendre sums, healpy and SciPy quadrature."""

import math

import numpy as np
import pytest
from scipy.special import eval_legendre

import sphgpu
from sphgpu.convolve import CompactKernel, RadialKernel
from sphgpu.convolve import _series
from sphgpu.convolve.kernels import bspline_knots
from sphgpu.data import planck2018_cl

from sphgpu.testing import TOL


def _direct_profile(bl, theta):
    l = np.arange(bl.shape[0])
    return np.array([np.sum((2 * l + 1) / (4 * np.pi) * bl * eval_legendre(l, math.cos(t)))
                     for t in theta])


def test_gaussian_and_cmb_kernels():
    g = RadialKernel.gaussian(30.0, 200)
    np.testing.assert_allclose(g.bl, sphgpu.gauss_beam(fwhm_arcmin=30.0, lmax=200),
                               rtol=TOL["kernel_bl_rtol"])
    c = RadialKernel.cmb(30.0, 200)
    np.testing.assert_allclose(c.bl, np.sqrt(planck2018_cl(200)) * g.bl, rtol=TOL["kernel_bl_rtol"])
    own = RadialKernel.cmb(30.0, 10, cl=np.arange(20.0))
    np.testing.assert_allclose(own.bl, np.sqrt(np.arange(11.0)) * g.bl[:11])
    assert c.lmax == 200 and "30'" in c.name


def test_profile_is_the_legendre_sum(rng):
    bl = rng.standard_normal(40)
    theta = np.concatenate([[0.0, 1e-3], rng.uniform(0, math.pi, 6), [math.pi]])
    k = RadialKernel.from_bl(bl)
    np.testing.assert_allclose(k.profile(theta), _direct_profile(bl, theta),
                               atol=TOL["profile_vs_legendre_sum_atol"])


def test_profile_matches_healpy_bl2beam():
    hp = pytest.importorskip("healpy")
    k = RadialKernel.gaussian(20.0, 1000)
    theta = np.linspace(0, 2 * math.pi / 180, 50)
    np.testing.assert_allclose(k.profile(theta), hp.bl2beam(k.bl, theta),
                               rtol=TOL["profile_vs_healpy_rtol"],
                               atol=TOL["profile_vs_healpy_rtol"] * k.profile(np.zeros(1))[0])


def test_series_near_the_pole_keeps_full_precision():
    # at lmax 4096 the profile varies on du ~ 1e-8; the u-recurrence must not lose digits
    # there, where cos(theta) has already lost half of them. Compare with a long-double sum.
    k = RadialKernel.gaussian(5.0, 4096)
    theta = np.array([1e-6, 3e-5, 2e-4])
    u = 2 * np.sin(theta / 2) ** 2
    ld = np.longdouble
    ref = []
    for uu in u:
        z = ld(1) - ld(uu)
        p0, p1, acc = ld(1), z, ld(k.bl[0]) + 3 * ld(k.bl[1]) * z
        for l in range(1, 4096):
            p0, p1 = p1, ((2 * l + 1) * z * p1 - l * p0) / (l + 1)
            acc += (2 * l + 3) * ld(k.bl[l + 1]) * p1
        ref.append(float(acc / (4 * ld(math.pi))))
    np.testing.assert_allclose(k.profile(theta), ref, rtol=TOL["profile_vs_long_double_rtol"])


def test_series_derivative():
    bl = RadialKernel.gaussian(600.0, 30).bl
    u = np.array([0.0, 0.01, 0.5, 1.5])
    f, df = _series.series_and_derivative(bl, u)
    h = 1e-6
    fd = (_series.series(bl, u + h) - _series.series(bl, np.abs(u - h))) / (2 * h)
    np.testing.assert_allclose(df[1:], fd[1:], rtol=1e-6)
    np.testing.assert_allclose(f, _series.series(bl, u), rtol=0, atol=0)


def test_from_profile_recovers_a_band_limited_kernel():
    k = RadialKernel.gaussian(300.0, 64)
    theta = np.linspace(0, math.pi, 3001)
    back = RadialKernel.from_profile(theta, k.profile(theta), 64)
    np.testing.assert_allclose(back.bl, k.bl, atol=TOL["kernel_from_profile_atol"])


@pytest.mark.parametrize("fwhm, lmax, theta_cut", [(60.0, 128, 0.1), (10.0, 1024, 0.02),
                                                  (600.0, 20, math.pi)])
def test_tabulated_kernel_matches_the_exact_profile(fwhm, lmax, theta_cut, rng):
    k = RadialKernel.gaussian(fwhm, lmax)
    ck = k.tabulate(theta_cut)
    theta = np.concatenate([[0.0], rng.uniform(0, ck.theta_cut, 500)])
    scale = np.abs(k.profile(np.zeros(1)))[0]
    assert np.max(np.abs(ck(theta) - k.profile(theta))) <= TOL["kernel_table"] * scale
    assert ck.theta_cut == pytest.approx(theta_cut, rel=1e-12)
    assert ck(np.array([theta_cut * 1.001]))[0] == 0.0 or theta_cut == math.pi


def test_compact_kernel_legendre_transform_is_exact(rng):
    # against adaptive quadrature of the same piecewise polynomial, knot by knot
    from scipy.integrate import quad
    ck = CompactKernel.from_bspline(0.03, rng.standard_normal(9))
    bl = ck.bl(200)
    for l in (0, 7, 60, 199):
        ref = 2 * math.pi * quad(lambda t: ck(np.array([t]))[0] * eval_legendre(l, math.cos(t))
                                 * math.sin(t), 0, ck.theta_cut, limit=400, epsabs=1e-15,
                                 points=np.arcsin(np.arange(1, ck.n) * ck.h / 2) * 2)[0]
        assert bl[l] == pytest.approx(ref, rel=1e-9, abs=1e-13 * abs(bl[0]))


def test_bspline_conversion_matches_scipy(rng):
    from scipy.interpolate import BSpline
    h, n = 0.01, 12
    x = rng.standard_normal(n)
    ck = CompactKernel.from_bspline(h, x)
    t = bspline_knots(h, n + 3)
    ref = BSpline(t, np.concatenate([x, np.zeros(3)]), 3)
    c = rng.uniform(0, n * h, 300)
    np.testing.assert_allclose(ck.evaluate_chord(c), ref(0.5 * c * c),
                               atol=TOL["bspline_vs_scipy_atol"])
    # the last basis function ends at the support with zero value
    assert abs(ck.evaluate_chord(np.array([n * h * (1 - 1e-12)]))[0]) < TOL["bspline_end_atol"]
    assert ck.evaluate_chord(np.array([n * h * 1.01]))[0] == 0.0


def test_bspline_piece_values_match_scipy(rng):
    from scipy.interpolate import BSpline
    from sphgpu.convolve.kernels import bspline_piece_values
    h, n = 0.02, 9
    t = bspline_knots(h, n + 3)
    for i in (0, 1, 4, n - 1):
        u = rng.uniform(t[i + 3], t[i + 4], 50)
        got = bspline_piece_values(t, i, u)
        want = BSpline.design_matrix(u, t, 3).toarray()
        np.testing.assert_allclose(got, want[:, i:i + 4], rtol=1e-13, atol=1e-15)
        assert not np.delete(want, np.arange(i, i + 4), axis=1).any()
        np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-14)
    # several pieces at once, one point each
    pieces = np.arange(n)
    u = t[pieces + 3] + 0.3 * (t[pieces + 4] - t[pieces + 3])
    want = BSpline.design_matrix(u, t, 3).toarray()
    np.testing.assert_allclose(bspline_piece_values(t, pieces, u),
                               want[pieces[:, None], pieces[:, None] + np.arange(4)],
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("lmax", [0, 1, 2, 7, 300])
@pytest.mark.parametrize("want_derivative", [False, True])
def test_series_numpy_loop_equals_the_numba_kernel_bit_for_bit(lmax, want_derivative,
                                                               monkeypatch):
    """Before Numba's CPU compiler starts, small series run as NumPy loops (no Numba start-up
    in a first call), else in Numba: the same operations in the same order, so the results
    are identical."""
    rng = np.random.default_rng(lmax)
    bl = rng.standard_normal(lmax + 1)
    u = np.concatenate([[0.0, 1e-12, 2.0], rng.uniform(0, 2, 61)])
    monkeypatch.setattr(_series, "_numba_cpu_started", lambda: False)
    small = _series._run_series(bl, u, want_derivative)
    monkeypatch.setattr(_series, "NUMPY_WORK", -1)               # every size through Numba
    large = _series._run_series(bl, u, want_derivative)
    for a, b in zip(small, large):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("shared", [False, True])
def test_legendre_transform_of_a_sparse_basis_equals_column_by_column(shared, monkeypatch):
    """Functions nonzero on few pieces each (a B-spline basis) are summed piece by piece
    without the (lmax+1, nodes) matrix, pieces that share no column in parallel; the result
    equals transforming each column alone (the dense path). With a column live on every piece
    no such rounds exist and the dense path runs."""
    from sphgpu.convolve import kernels
    from sphgpu.convolve.kernels import _legendre_transform_pieces

    ncols, lmax = 40, 300
    edges = 0.5 * (np.arange(ncols + 1) * 0.01) ** 2
    used = []
    sparse = kernels._sparse_transform

    def spy(*args):
        out = sparse(*args)
        used.append(out is not None)
        return out

    monkeypatch.setattr(kernels, "_sparse_transform", spy)

    def basis(i, u):
        f = np.zeros((u.size, ncols))
        for j in range(max(0, i - 3), i + 1):           # 4 columns live on piece i
            f[:, j] = (1.0 + j) * (u - edges[i]) ** (i - j)
        if shared:
            f[:, ncols - 1] += u
        return f

    together = _legendre_transform_pieces(edges, basis, lmax, chunk_nodes=64)
    assert used == [not shared]
    for j in (0, 7, ncols - 1):
        alone = _legendre_transform_pieces(edges, lambda i, u: basis(i, u)[:, j], lmax)
        np.testing.assert_allclose(together[:, j], alone, rtol=1e-13,
                                   atol=1e-13 * np.max(np.abs(alone)))
