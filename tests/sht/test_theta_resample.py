"""The theta resampling (Legendre steps on Fejer rings, resampled to the grid's rings): the NumPy
reference against the direct Legendre sum and trigonometric polynomials, its transpose, and the
CUDA kernels (Numba's simulator in CI) against the reference and against ducc0."""

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.backends import cuda_available
from sphgpu.sht import _cpu, theta_resample as tr
from sphgpu.testing import TOL, random_alm, rel_err

#: the resampling itself, on values of unit size: the kernel's truncation and the FFTs' rounding
#: (measured: 2.7e-14 to 6e-14 at lmax 32-256)
RESAMPLE_TOL = 2e-13


def _trig(theta, ce, co):
    """e(theta) = sum_k ce_k cos k theta and o(theta) = sum_k co_k sin k theta, (rings, 2)."""
    k = np.arange(ce.shape[0])
    return np.stack([np.cos(np.outer(theta, k)) @ ce, np.sin(np.outer(theta, k)) @ co], axis=1)


# (129, 257): a grid just under 2x (1024 points for band limit 257), as spin-2 transforms at
# lmax 4096 have (band limit 4098, 16384 points)
@pytest.mark.parametrize("nside, lmax", [(16, 32), (13, 26), (64, 128), (128, 256), (129, 257)])
def test_forward_interpolates_trigonometric_polynomials(nside, lmax, rng):
    g = RingGeometry.healpix(nside)
    rp = tr.resample_plan(g, lmax)
    assert rp.n >= lmax + 1 and rp.n % 2 == 0 and rp.N >= tr.OVERSAMPLING * 2 * lmax
    assert (rp.N < 4 * lmax) == (lmax == 257)
    ce = rng.standard_normal(lmax + 1) + 1j * rng.standard_normal(lmax + 1)
    co = rng.standard_normal(lmax + 1) + 1j * rng.standard_normal(lmax + 1)
    got = tr.forward(_trig(rp.fejer.theta, ce, co)[None], rp)[0]
    want = _trig(g.theta, ce, co)
    assert np.abs(got - want).max() <= RESAMPLE_TOL * np.abs(want).max()


@pytest.mark.parametrize("nside, lmax, mmax", [(16, 32, 32), (13, 26, 20), (32, 64, 63)])
def test_forward_equals_the_legendre_sum_on_the_grid(nside, lmax, mmax, rng):
    g = RingGeometry.healpix(nside)
    layout = AlmLayout(lmax, mmax)
    alm = random_alm(rng, layout, k=2)
    rp = tr.resample_plan(g, lmax)
    want = _cpu.twin_alm2leg(alm, layout, g)
    got = tr.forward(_cpu.twin_alm2leg(alm, layout, rp.fejer), rp)
    assert got.shape == want.shape
    assert rel_err(got, want) <= RESAMPLE_TOL


@pytest.mark.parametrize("nside, lmax, mmax", [(16, 32, 32), (13, 26, 21)])
def test_adjoint_is_the_transpose_and_gives_the_grids_leg2alm(nside, lmax, mmax, rng):
    g = RingGeometry.healpix(nside)
    layout = AlmLayout(lmax, mmax)
    rp = tr.resample_plan(g, lmax)
    x = rng.standard_normal((2, rp.n, mmax + 1)) + 1j * rng.standard_normal((2, rp.n, mmax + 1))
    y = rng.standard_normal((2, g.nrings, mmax + 1)) + 1j * rng.standard_normal((2, g.nrings, mmax + 1))
    lhs, rhs = np.vdot(y, tr.forward(x, rp)), np.vdot(tr.adjoint(y, rp), x)
    assert abs(lhs - rhs) <= 1e-13 * abs(lhs)
    want = _cpu.twin_leg2alm(y, layout, g)
    got = _cpu.twin_leg2alm(tr.adjoint(y, rp), layout, rp.fejer)
    assert rel_err(got, want) <= RESAMPLE_TOL


@pytest.mark.parametrize("nside, lmax", [(8, 16), (64, 128)])
def test_spread_ranges_hold_every_window_point_once(nside, lmax):
    g = RingGeometry.healpix(nside)
    rp = tr.resample_plan(g, lmax)
    j_d, lo_d, hi_d, j_m, lo_m, hi_m = tr.spread_ranges(rp)
    points = [set(), set()]
    for gp in range(rp.N):
        for side, (j, lo, hi) in enumerate(((j_d, lo_d, hi_d), (j_m, lo_m, hi_m))):
            for r in range(lo[gp], hi[gp]):
                t = j[gp] - rp.first[r]
                assert 0 <= t < rp.width and (j[gp] - (gp if side == 0 else -gp)) % rp.N == 0
                points[side].add((r, t))
    want = {(r, t) for r in range(g.nrings) for t in range(rp.width)}
    assert points[0] == want and points[1] == want


@pytest.mark.parametrize("nside, lmax", [(8, 16), (64, 128)])
def test_spread_taps_are_the_interpolations_entries_by_grid_point(nside, lmax):
    """The transpose's tables (``_cuda._spread_taps``), read back into the dense (ring, side,
    grid point) weights, equal the interpolation's windows: every entry once, at its ring and
    side, and nothing in the unused slots; the tiles' shared rows hold every ring named."""
    from sphgpu.sht import _cuda, _resample_kernels as RK

    g = RingGeometry.healpix(nside)
    rp = tr.resample_plan(g, lmax)
    ranges = tr.spread_ranges(rp)
    tiles, ring0 = _cuda._spread_tiles(*ranges[1:3], *ranges[4:6])
    rows, rings, weights = _cuda._spread_taps(rp, ranges, tiles, ring0)
    want = np.zeros((g.nrings, 2, rp.N))
    for r in range(g.nrings):
        j = rp.first[r] + np.arange(rp.width)
        want[r, 0, j % rp.N] += rp.weights[r]
        want[r, 1, -j % rp.N] += rp.weights[r]
    got = np.zeros_like(want)
    tile = np.searchsorted(tiles, np.arange(rp.N), side="right") - 1
    row = rows.astype(np.int64) // RK._ROW
    assert np.all(rows % RK._ROW == 0) and np.all(row < 2 * RK.SPREAD_RINGS)
    for gp, t in zip(*np.nonzero(weights)):
        side, rr = divmod(row[gp, t], RK.SPREAD_RINGS)
        assert rings[gp, t] == ring0[tile[gp]] + rr
        got[rings[gp, t], side, gp] += weights[gp, t]
    np.testing.assert_array_equal(got, want)
    assert np.all(weights[rings < 0] == 0)


def test_worth_it_only_for_many_rings():
    assert tr.worth_it(RingGeometry.healpix(2048), 4096)
    assert not tr.worth_it(RingGeometry.healpix(2048), 6143)        # 3 nside - 1: 8191 rings
    assert not tr.worth_it(RingGeometry.gauss_legendre(4097), 4096)
    assert not tr.worth_it(RingGeometry.healpix(1024), 2048)        # below MIN_LMAX


cuda = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")

# tiny sizes for the simulator: HEALPix with mmax < lmax and an odd number of orders, an odd
# nside, and more Fejer rings than grid rings (valid, only not worth it)
CASES = [(RingGeometry.healpix(4), 8, 8), (RingGeometry.healpix(3), 8, 5),
         (RingGeometry.healpix(5), 9, 9), (RingGeometry.healpix(2), 7, 6)]


@cuda
@pytest.mark.parametrize("geometry, lmax, mmax", CASES)
def test_cuda_resampling_matches_the_reference_and_ducc0(geometry, lmax, mmax, rng, monkeypatch):
    from sphgpu._device import array_module, to_host
    from sphgpu.sht import _cuda

    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", "1")
    layout = AlmLayout(lmax, mmax)
    pl = _cuda.plan(geometry, lmax, mmax)
    rs = _cuda._resampler(pl)
    xp = array_module()
    legf = rng.standard_normal((2, rs.rp.n, mmax + 1)) + 1j * rng.standard_normal((2, rs.rp.n, mmax + 1))
    got = to_host(_cuda._resample(xp.asarray(legf), rs, xp))
    assert rel_err(got, tr.forward(legf, rs.rp)) <= 1e-14
    legh = rng.standard_normal((2, geometry.nrings, mmax + 1)) + 0j
    got = to_host(_cuda._resample_adjoint(xp.asarray(legh), rs, xp))
    assert rel_err(got, tr.adjoint(legh, rs.rp)) <= 1e-14
    # whole public transforms through the resampling, against ducc0
    alms = random_alm(rng, layout, k=2)
    maps = sphgpu.alm2map(alms, lmax=lmax, mmax=mmax, pol=False, geometry=geometry, backend="cuda")
    assert rel_err(maps, _cpu.synthesis(alms, layout, geometry)) <= TOL["vs_ducc0"]
    back = sphgpu.map2alm(maps, lmax, mmax, iter=0, pol=False, geometry=geometry, backend="cuda")
    assert rel_err(back, _cpu.analysis(maps, layout, geometry)) <= TOL["vs_ducc0"]


def _check_polarized_against_ducc0(geometry, lmax, rng):
    """Polarized alm2map and map2alm (iter 0) on the cuda backend against ducc0's."""
    layout = AlmLayout(lmax, lmax)
    alms = np.stack([random_alm(rng, layout, k=1)[0] for _ in range(3)])[None]
    alms[:, :, :lmax + 1] = alms[:, :, :lmax + 1].real
    want = _cpu.synthesis_spin(alms, 2, layout, geometry)
    got = sphgpu.alm2map(alms[0], lmax=lmax, pol=True, geometry=geometry, backend="cuda")
    assert rel_err(got, want[0]) <= TOL["vs_ducc0"]
    back = sphgpu.map2alm(got, lmax, iter=0, pol=True, geometry=geometry, backend="cuda")
    assert rel_err(back, _cpu.analysis_spin(want, 2, layout, geometry)[0]) <= TOL["vs_ducc0"]


@cuda
def test_cuda_polarized_transforms_resample(rng, monkeypatch):
    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", "1")
    _check_polarized_against_ducc0(RingGeometry.healpix(4), 8, rng)


@cuda
def test_cuda_resampling_over_many_tiles(rng, monkeypatch):
    """Small tiles (the kernels' shared shapes follow the module's constants in the simulator),
    so that the interpolation and its transpose cross tiles of rings, grid points and pairs."""
    from sphgpu._device import SIMULATOR
    from sphgpu.sht import _cuda, _resample_kernels as RK

    if not SIMULATOR:
        pytest.skip("the tile sizes are compile-time constants on a GPU")
    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", "1")
    small = dict(TILE_PAIRS=4, SEGMENT=20, RING_TILE=24, SPAN=6, SPREAD_RINGS=24)
    # the shapes the kernels derive from them (module constants: a shared array's shape must
    # be one)
    small.update(_ROW=5, _SEG_ROW=21, _V_SIZE=2 * 24 * 5)
    for name, value in small.items():
        monkeypatch.setattr(RK, name, value)
    geometry, lmax = RingGeometry.healpix(6), 12
    _cuda.plan.cache_clear()
    try:
        rs = _cuda._resampler(_cuda.plan(geometry, lmax, lmax))
        assert rs is not None
        assert rs.interp_tiles.shape[0] > 3 and rs.spread_tiles.shape[0] > 3
        _check_both_directions(rs, 1, geometry.nrings, lmax, rng)
    finally:
        _cuda.plan.cache_clear()


def _check_both_directions(rs, k, nrings, mmax, rng):
    """The CUDA resampling of ``rs`` and its transpose against the NumPy reference, k maps."""
    from sphgpu._device import array_module, to_host
    from sphgpu.sht import _cuda

    xp = array_module()
    legf = rng.standard_normal((k, rs.rp.n, mmax + 1)) + 1j * rng.standard_normal((k, rs.rp.n, mmax + 1))
    got = to_host(_cuda._resample(xp.asarray(legf), rs, xp))
    assert rel_err(got, tr.forward(legf, rs.rp)) <= 1e-14
    legh = rng.standard_normal((k, nrings, mmax + 1)) + 1j * rng.standard_normal((k, nrings, mmax + 1))
    got = to_host(_cuda._resample_adjoint(xp.asarray(legh), rs, xp))
    assert rel_err(got, tr.adjoint(legh, rs.rp)) <= 1e-14


@cuda
@pytest.mark.parametrize("grid_row, phases", [(24, 2), (16, 3), (12, 4)])
def test_cuda_resampling_with_the_grid_in_phases(grid_row, phases, rng, monkeypatch):
    """Short grid rows (GRID_ROW), so that the N = 48 grid points go as 2, 3 or 4 phases."""
    from sphgpu.sht import _cuda

    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", "1")
    monkeypatch.setattr(_cuda, "GRID_ROW", grid_row)
    geometry, lmax, mmax = RingGeometry.healpix(6), 12, 11
    _cuda.plan.cache_clear()
    try:
        rs = _cuda._resampler(_cuda.plan(geometry, lmax, mmax))
        assert rs.rp.N == 48 and rs.phases == phases
        _check_both_directions(rs, 2, geometry.nrings, mmax, rng)
    finally:
        _cuda.plan.cache_clear()


def test_grid_phases_are_the_fewest_rows_that_fit():
    from sphgpu.sht import _cuda

    assert _cuda.GRID_ROW == 4096
    # lmax 4096: N = 16384 as 4 rows of 4096; lmax 3072: N = 12288 as 3; small grids whole
    assert [_cuda._grid_phases(N) for N in (16384, 12288, 48, 4096, 4098)] == [4, 3, 1, 1, 2]


@cuda
@pytest.mark.parametrize("rows", [2, 3])
def test_spin_transforms_take_the_polar_rings_on_their_own(rows, rng, monkeypatch):
    """In spin transforms (``rows`` a set: Q, U or T, Q, U) the spin rows' rings with
    sin(theta) < POLAR_SIN take the Legendre step on their own rings: the synthesis's spin rows
    there are the direct step's and its T rows the resampled ones, the adjoint's split
    (resampled part with those rings' weights zero in the spin rows, plus their own step) is
    the direct adjoint, and polarized transforms through it agree with ducc0."""
    from sphgpu._device import array_module, to_host
    from sphgpu.sht import _cuda

    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", "1")
    monkeypatch.setattr(_cuda, "POLAR_SIN", 0.6)
    geometry, lmax = RingGeometry.healpix(4), 8
    pl = _cuda.plan(geometry, lmax, lmax)
    rs = _cuda._resampler(pl)
    polar = rs.polar(_cuda.POLAR_SIN)
    ring = to_host(polar.rows)
    assert np.array_equal(ring, np.flatnonzero(np.sin(geometry.theta) < 0.6))
    assert 0 < ring.size < geometry.nrings
    xp = array_module()
    layout = AlmLayout(lmax, lmax)
    alm = xp.asarray(random_alm(rng, layout, k=2 * rows))
    direct = to_host(_cuda._alm2leg(alm, pl, xp))
    resampled = to_host(_cuda._resample(_cuda._alm2leg(alm, rs.plan, xp), rs, xp))
    both = to_host(_cuda._synthesis_legendre(alm, pl, xp, rows))
    spin = np.arange(2 * rows) % rows >= rows - 2
    np.testing.assert_array_equal(both[spin][:, ring], direct[spin][:, ring])
    np.testing.assert_array_equal(both[~spin], resampled[~spin])
    assert rel_err(both, direct) <= 1e-13
    leg = xp.asarray(rng.standard_normal((2 * rows, geometry.nrings, lmax + 1))
                     + 1j * rng.standard_normal((2 * rows, geometry.nrings, lmax + 1)))
    want = to_host(_cuda._leg2alm(leg, pl, xp))
    got = to_host(_cuda._analysis_legendre(leg, pl, xp, rows))
    assert rel_err(got, want) <= 1e-13
    plain = to_host(_cuda._leg2alm(_cuda._resample_adjoint(leg, rs, xp), rs.plan, xp))
    np.testing.assert_array_equal(got[~spin], plain[~spin])
    _check_polarized_against_ducc0(geometry, lmax, rng)
