"""The Legendre and ring-FFT stages, on subsets of m and rings, against whole transforms."""

import numpy as np
import pytest

from sphgpu import AlmLayout, RingGeometry
from sphgpu.backends import cuda_available
from sphgpu.distributed.partition import alm_slice, m_chunks
from sphgpu.sht import _cpu, stages

from sphgpu.testing import TOL, random_alm, rel_err

CASES = [(1, 2, 2), (3, 8, 5), (16, 40, 30), (16, 47, 47)]
BACKENDS = ["cpu", "reference"]


def _geometries(nside):
    return [RingGeometry.healpix(nside), RingGeometry.gauss_legendre(nside + 2)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("nside, lmax, mmax", CASES)
def test_stages_compose_to_the_whole_transforms(nside, lmax, mmax, backend, rng):
    layout = AlmLayout(lmax, mmax)
    for g in _geometries(nside):
        alm = random_alm(rng, layout, k=2)
        maps = rng.standard_normal((2, g.npix))
        leg = stages.alm2leg(alm, layout, g, backend=backend)
        assert leg.shape == (2, g.nrings, mmax + 1)
        assert rel_err(stages.leg2map(leg, g, backend=backend),
                       _cpu.synthesis(alm, layout, g)) <= TOL["vs_ducc0"]
        got = stages.leg2alm(stages.map2leg(maps, g, mmax, backend=backend), layout, g,
                             backend=backend)
        assert rel_err(got, _cpu.analysis(maps, layout, g)) <= TOL["vs_ducc0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_m_subsets_are_the_columns_of_the_whole(backend, rng):
    layout = AlmLayout(40, 30)
    g = RingGeometry.healpix(16)
    alm = random_alm(rng, layout, k=2)
    maps = rng.standard_normal((2, g.npix))
    whole_leg = stages.alm2leg(alm, layout, g, backend=backend)
    whole_adj = stages.map2leg(maps, g, layout.mmax, backend=backend)
    whole_alm = stages.leg2alm(whole_adj, layout, g, backend=backend)
    for r in m_chunks(layout.lmax, layout.mmax, 3):
        sl = alm_slice(layout.lmax, r)
        assert stages.packed_size(layout, r) == sl.stop - sl.start
        part = stages.alm2leg(alm[:, sl], layout, g, r, backend=backend)
        np.testing.assert_allclose(part, whole_leg[:, :, r.start:r.stop], rtol=0,
                                   atol=TOL["same_path_atol"])
        adj = stages.map2leg(maps, g, layout.mmax, r, backend=backend)
        np.testing.assert_allclose(adj, whole_adj[:, :, r.start:r.stop], rtol=0,
                                   atol=TOL["same_path_adjoint_atol"])
        np.testing.assert_allclose(stages.leg2alm(adj, layout, g, r, backend=backend),
                                   whole_alm[:, sl], rtol=0, atol=TOL["same_path_adjoint_atol"])
    # scattered orders (not a range), packed in the order given
    m = np.array([7, 2, 30])
    packed = np.concatenate([alm[:, alm_slice(layout.lmax, range(i, i + 1))] for i in m], 1)
    np.testing.assert_allclose(stages.alm2leg(packed, layout, g, m, backend=backend),
                               whole_leg[:, :, m], rtol=0, atol=TOL["same_path_atol"])
    # a part of the orders gives that part of the map; the parts add up to the whole
    lo, hi = np.arange(0, 11), np.arange(11, 31)
    total = (stages.leg2map(whole_leg[:, :, lo], g, lo, backend=backend)
             + stages.leg2map(whole_leg[:, :, hi], g, hi, backend=backend))
    assert rel_err(total, stages.leg2map(whole_leg, g, backend=backend)) <= TOL["vs_ducc0"]


def test_ring_subsets_and_the_plain_adjoint(rng):
    layout = AlmLayout(20)
    g = RingGeometry.healpix(8)
    alm = random_alm(rng, layout, k=1)
    leg = stages.alm2leg(alm, layout, g)
    full = stages.leg2map(leg, g)
    sub = g.rings(slice(4, 19))
    part = stages.leg2map(leg[:, 4:19], sub)
    np.testing.assert_allclose(part, full[:, sub.pixel_offset:sub.pixel_offset + sub.npix],
                               rtol=0, atol=TOL["same_path_atol"])
    # quadrature=False is the exact adjoint of leg2map: <leg2map(L), M> == <L, map2leg(M)>
    maps = rng.standard_normal((1, g.npix))
    adj = stages.map2leg(maps, g, layout.mmax, quadrature=False)
    lhs = np.vdot(full, maps)
    w = np.ones(layout.mmax + 1)
    w[1:] = 2.0                       # m > 0 appear twice (m and -m) in a real map
    rhs = np.sum(w * np.real(np.conj(adj) * leg))
    assert abs(lhs - rhs) <= TOL["adjoint_identity"] * abs(lhs)


def test_bad_input_is_refused_by_name(rng):
    layout = AlmLayout(10)
    g = RingGeometry.healpix(4)
    with pytest.raises(ValueError, match="alm must have shape"):
        stages.alm2leg(np.zeros((1, 5), complex), layout, g)
    with pytest.raises(ValueError, match="mvals"):
        stages.alm2leg(np.zeros((1, 11), complex), layout, g, [11])
    with pytest.raises(ValueError, match="mvals must not repeat"):
        stages.alm2leg(np.zeros((1, 22), complex), layout, g, [0, 0])
    with pytest.raises(ValueError, match="leg must have shape"):
        stages.leg2alm(np.zeros((1, 3, 11), complex), layout, g)
    with pytest.raises(ValueError, match="mvals names"):
        stages.leg2map(np.zeros((1, g.nrings, 3), complex), g, [0, 1])
    with pytest.raises(ValueError, match="maps must have shape"):
        stages.map2leg(np.zeros((1, 7)), g, 10)


@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")
def test_cuda_stages_equal_the_cpu_stages(rng, monkeypatch):
    # small blocks keep the simulator quick; scattered orders, a ring subset and both adjoints
    from sphgpu.sht import _cuda
    monkeypatch.setattr(_cuda, "LAUNCH", {"alm2leg": (16, 1), "leg2alm": (16, 1)})
    layout = AlmLayout(12, 9)
    for g in (RingGeometry.healpix(3), RingGeometry.gauss_legendre(7)):
        alm = random_alm(rng, layout, k=2)
        maps = rng.standard_normal((2, g.npix))
        m = np.array([7, 2, 9])
        packed = np.concatenate([alm[:, alm_slice(layout.lmax, range(i, i + 1))] for i in m], 1)
        want = stages.alm2leg(packed, layout, g, m, backend="cpu")
        leg = stages.alm2leg(packed, layout, g, m, backend="cuda")
        assert isinstance(leg, np.ndarray) and rel_err(leg, want) <= TOL["vs_ducc0"]
        adj = stages.map2leg(maps, g, layout.mmax, m, backend="cuda")
        assert rel_err(adj, stages.map2leg(maps, g, layout.mmax, m, backend="cpu")) \
            <= TOL["vs_ducc0"]
        plain = stages.map2leg(maps, g, layout.mmax, quadrature=False, backend="cuda")
        assert rel_err(plain, stages.map2leg(maps, g, layout.mmax, quadrature=False)) \
            <= TOL["vs_ducc0"]
        assert rel_err(stages.leg2alm(adj, layout, g, m, backend="cuda"),
                       stages.leg2alm(adj, layout, g, m, backend="cpu")) <= TOL["vs_ducc0"]
        sub = g.rings(slice(1, g.nrings - 1))
        part = stages.leg2map(leg[:, 1:-1], sub, m, backend="cuda")
        assert rel_err(part, stages.leg2map(leg[:, 1:-1], sub, m, backend="cpu")) \
            <= TOL["vs_ducc0"]
