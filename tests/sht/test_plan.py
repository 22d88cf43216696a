"""The transform plan (sphgpu.SHT): the same numbers as the healpy-named functions (exactly: the
same code runs underneath), batches, ``out=``, pickling as a small description, reuse."""

import pickle

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry, SHT
from sphgpu.backends import cuda_available
from sphgpu.sht import plan as plan_mod, stages
from sphgpu.testing import random_alm

# (nside or geometry, lmax, mmax): HEALPix, odd lmax, mmax < lmax, an odd nside, a
# Gauss-Legendre grid (exact quadrature) and an equiangular one without poles
GL = RingGeometry.gauss_legendre(7)
GRIDS = [(4, 8, 8), (3, 7, 7), (5, 11, 6), (GL, 6, 6), (RingGeometry.equiangular(9, poles=False),
                                                        4, 3)]
HOST = ("cpu", "reference")


def _plan(grid, lmax, mmax, backend):
    if isinstance(grid, RingGeometry):
        return SHT(lmax=lmax, mmax=mmax, geometry=grid, backend=backend)
    return SHT(grid, lmax, mmax, backend=backend)


def _where(grid):
    return dict(geometry=grid) if isinstance(grid, RingGeometry) else dict(nside=grid)


def _pol_alm(rng, layout, k=None):
    shape = (3,) if k is None else (k, 3)
    a = random_alm(rng, layout, k=int(np.prod(shape))).reshape(shape + (layout.size,))
    a[..., :layout.lmax + 1] = a[..., :layout.lmax + 1].real     # real a_l0, as healpy reads
    return a


def _same(a, b):
    assert type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", HOST)
@pytest.mark.parametrize("grid, lmax, mmax", GRIDS)
def test_scalar_and_polarized_transforms_equal_the_functions(grid, lmax, mmax, backend, rng):
    sht = _plan(grid, lmax, mmax, backend)
    layout, where = sht.layout, _where(grid)
    assert (sht.lmax, sht.mmax, sht.nalm, sht.backend) == (lmax, mmax, layout.size, backend)
    kw = dict(lmax=lmax, mmax=mmax, backend=backend, **where)
    for alm, pol in ((random_alm(rng, layout), False), (random_alm(rng, layout, k=3), False),
                     (_pol_alm(rng, layout), True), (_pol_alm(rng, layout, k=2), True)):
        maps = sphgpu.alm2map(alm, pol=pol, **kw)
        _same(sht.alm2map(alm, pol=pol), maps)
        for it in (0, 2):
            want = sphgpu.map2alm(maps, lmax, mmax, iter=it, pol=pol, backend=backend,
                                  geometry=sht.geometry)
            _same(sht.map2alm(maps, iter=it, pol=pol), want)
    # healpy's defaults: pol=True, iter=3
    maps = sht.alm2map(_pol_alm(rng, layout))
    _same(sht.map2alm(maps), sphgpu.map2alm(maps, lmax, mmax, backend=backend,
                                            geometry=sht.geometry))


@pytest.mark.parametrize("backend", HOST)
@pytest.mark.parametrize("spin", [0, 1, 2, 3])
def test_spin_transforms_and_derivatives_equal_the_functions(spin, backend, rng):
    for grid, lmax, mmax in GRIDS[:4]:
        sht = _plan(grid, lmax, mmax, backend)
        kw = dict(lmax=lmax, mmax=mmax, backend=backend, **_where(grid))
        for k in (None, 2):
            eb = random_alm(rng, sht.layout, k=2 * (k or 1)).reshape(
                ((k,) if k else ()) + (2, sht.nalm))
            maps = sphgpu.alm2map_spin(eb, spin=spin, **kw)
            _same(sht.alm2map_spin(eb, spin), maps)
            want = sphgpu.map2alm_spin(maps, spin, lmax, mmax, iter=1, backend=backend,
                                       geometry=sht.geometry)
            _same(sht.map2alm_spin(maps, spin, iter=1), want)
        alm = random_alm(rng, sht.layout, k=2)
        _same(sht.alm2map_der1(alm), sphgpu.alm2map_der1(alm, **kw))
        _same(sht.alm2map_der1(alm[0]), sphgpu.alm2map_der1(alm[0], **kw))


@pytest.mark.parametrize("backend", HOST)
def test_legendre_and_ring_steps_equal_the_stages(backend, rng):
    for grid, lmax, mmax in GRIDS:
        sht = _plan(grid, lmax, mmax, backend)
        g, layout = sht.geometry, sht.layout
        alm = random_alm(rng, layout, k=2)
        leg = sht.alm2leg(alm)
        _same(leg, stages.alm2leg(alm, layout, g, backend=backend))
        assert leg.shape == (2, g.nrings, mmax + 1)
        _same(sht.leg2alm(leg), stages.leg2alm(leg, layout, g, backend=backend))
        maps = sht.leg2map(leg)
        _same(maps, stages.leg2map(leg, g, backend=backend))
        for quadrature in (True, False):
            _same(sht.map2leg(maps, quadrature=quadrature),
                  stages.map2leg(maps, g, mmax, quadrature=quadrature, backend=backend))
        # the two steps make a transform (to rounding: the whole transforms fuse them)
        np.testing.assert_allclose(maps, sht.alm2map(alm, pol=False), rtol=0, atol=1e-12)
        # one set: no batch axis
        _same(sht.alm2leg(alm[0]), sht.alm2leg(alm[:1])[0])


def test_a_plan_reused_gives_identical_results(rng):
    sht = SHT(4, 8, backend="cpu")
    alm = _pol_alm(rng, sht.layout, k=2)
    first = sht.alm2map(alm)
    back = sht.map2alm(first, iter=1)
    for _ in range(3):
        _same(sht.alm2map(alm), first)
        _same(sht.map2alm(first, iter=1), back)
    _same(sphgpu.alm2map(alm, 4, 8, backend="cpu"), first)


def test_defaults_and_description(rng):
    sht = SHT(4, backend="cpu")
    assert (sht.lmax, sht.mmax, sht.nside, sht.npix) == (11, 11, 4, 192)
    assert sht.geometry is RingGeometry.healpix(4)
    assert sht.description == (4, 11, 11, None, "cpu")
    assert repr(sht) == "SHT(nside=4, lmax=11, mmax=11, backend='cpu')"
    gl = SHT(geometry=GL, backend="reference")
    assert gl.lmax == 6 and gl.nside is None
    assert gl.description == (None, 6, 6, ("gauss-legendre", 7, 13), "reference")
    with sphgpu.use_backend("reference"):
        assert SHT(2).backend == "reference"          # "auto" resolved once, at construction


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="give nside"):
        SHT()
    with pytest.raises(ValueError, match="mmax must be <= 8"):
        SHT(4, 8, 9)
    with pytest.raises(TypeError, match="lmax must be an integer"):
        SHT(4, 8.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        SHT(4, backend="gpu")
    with pytest.raises(ValueError, match="disagrees"):
        SHT(4, geometry=GL)


def test_bad_inputs_are_named(rng):
    sht = SHT(2, 4, backend="cpu")
    alm = random_alm(rng, sht.layout, k=3)
    with pytest.raises(ValueError, match=r"alm has shape \(3, 14\), but lmax=4, mmax=4 needs 15"):
        sht.alm2map(alm[:, 1:], pol=False)
    with pytest.raises(TypeError, match="alm must be complex"):
        sht.alm2map(alm.real, pol=False)
    with pytest.raises(ValueError, match="with pol=True"):
        sht.alm2map(alm[:2])
    with pytest.raises(TypeError, match="pol must be True or False"):
        sht.alm2map(alm, pol=1)
    with pytest.raises(ValueError, match="maps has shape"):
        sht.map2alm(np.zeros((2, 47)), pol=False)
    with pytest.raises(TypeError, match="numpy.ma array"):
        sht.map2alm(np.ma.masked_equal(np.ones(48), 0.0))
    with pytest.raises(TypeError, match="maps must hold real numbers"):
        sht.map2alm(np.zeros(48, dtype=complex))
    with pytest.raises(ValueError, match="iter must be >= 0"):
        sht.map2alm(np.zeros(48), iter=-1)
    with pytest.raises(ValueError, match="give 2 rows"):
        sht.alm2map_spin(alm, 2)
    with pytest.raises(ValueError, match="spin must be >= 0"):
        sht.alm2map_spin(alm[:2], -1)
    with pytest.raises(ValueError, match="leg has shape"):
        sht.leg2map(np.zeros((2, 7, 4), dtype=complex))
    with pytest.raises(TypeError, match="alm is a GPU array; the CPU backends"):
        sht.alm2map(_FakeDevice((15,), np.complex128))


def test_lists_and_other_dtypes_are_read(rng):
    sht = SHT(2, 4, backend="cpu")
    alm = random_alm(rng, sht.layout, k=2)
    want = sht.alm2map(alm, pol=False)
    _same(sht.alm2map([list(a) for a in alm], pol=False), want)
    _same(sht.alm2map(alm.astype(np.complex64), pol=False),
          sphgpu.alm2map(alm.astype(np.complex64), 2, pol=False, backend="cpu"))
    maps = np.asfortranarray(np.ones((48, 2))).T                 # not C-contiguous
    _same(sht.map2alm(maps, pol=False), sphgpu.map2alm(maps, 4, pol=False, backend="cpu"))


class _FakeDevice:
    """Looks like a device array to sphgpu (it has __cuda_array_interface__)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.ndim = shape, np.dtype(dtype), len(shape)

    __cuda_array_interface__ = {}


@pytest.mark.parametrize("backend", HOST)
def test_out_receives_the_result(backend, rng):
    sht = SHT(3, 7, 5, backend=backend)
    alm = _pol_alm(rng, sht.layout, k=2)
    out = np.full((2, 3, sht.npix), np.nan)
    got = sht.alm2map(alm, out=out)
    assert got is out
    _same(out, sht.alm2map(alm))
    a_out = np.empty((2, 3, sht.nalm), dtype=np.complex128)
    assert sht.map2alm(out, iter=1, out=a_out) is a_out
    _same(a_out, sht.map2alm(out, iter=1))
    eb = alm[:, 1:]
    s_out = np.empty((2, 2, sht.npix))
    _same(sht.alm2map_spin(eb, 1, out=s_out), sht.alm2map_spin(eb, 1))
    s_alm = np.empty((2, 2, sht.nalm), dtype=complex)
    _same(sht.map2alm_spin(s_out, 0, out=s_alm), sht.map2alm_spin(s_out, 0))
    d_out = np.empty((3, sht.npix))
    _same(sht.alm2map_der1(alm[0, 0], out=d_out), sht.alm2map_der1(alm[0, 0]))
    leg = np.empty((2, sht.geometry.nrings, 6), dtype=complex)
    _same(sht.alm2leg(alm[:, 0], out=leg), sht.alm2leg(alm[:, 0]))
    m_out = np.empty((2, sht.npix))
    _same(sht.leg2map(leg, out=m_out), sht.leg2map(leg))
    l_out = np.empty_like(leg)
    _same(sht.map2leg(m_out, out=l_out), sht.map2leg(m_out))
    a2 = np.empty((2, sht.nalm), dtype=complex)
    _same(sht.leg2alm(leg, out=a2), sht.leg2alm(leg))
    # a view of a larger array is written where it lies
    big = np.zeros((3, sht.npix))
    sht.alm2map(alm[0, 0], pol=False, out=big[1])
    _same(big[1], sht.alm2map(alm[0, 0], pol=False))
    assert not big[0].any() and not big[2].any()


def test_a_wrong_out_is_named(rng):
    sht = SHT(2, 4, backend="cpu")
    alm = random_alm(rng, sht.layout, k=2)
    with pytest.raises(ValueError, match=r"out has shape \(2, 47\) but the maps have shape "
                                         r"\(2, 48\)"):
        sht.alm2map(alm, pol=False, out=np.empty((2, 47)))
    with pytest.raises(TypeError, match="out must have dtype float64 for the maps, got float32"):
        sht.alm2map(alm, pol=False, out=np.empty((2, 48), dtype=np.float32))
    with pytest.raises(TypeError, match="out must have dtype complex128 for the a_lm"):
        sht.map2alm(np.zeros(48), out=np.empty(15))
    with pytest.raises(TypeError, match="out must be a NumPy or GPU array, got list"):
        sht.alm2map(alm[0], out=[0.0] * 48)
    with pytest.raises(TypeError, match="out is a GPU array but the maps will be NumPy arrays"):
        sht.alm2map(alm, pol=False, out=_FakeDevice((2, 48), np.float64))
    ro = np.empty((2, 48))
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="out is read-only"):
        sht.alm2map(alm, pol=False, out=ro)


@pytest.mark.parametrize("make", [lambda: SHT(4, 8, backend="cpu"),
                                  lambda: SHT(3, 7, 4, backend="reference"),
                                  lambda: SHT(geometry=GL, lmax=5, backend="cpu"),
                                  lambda: SHT(geometry=RingGeometry.equiangular(6), backend="cpu"),
                                  lambda: SHT(geometry=RingGeometry.healpix(3).rings(slice(2, 7)),
                                              lmax=6, backend="cpu")])
def test_pickles_as_its_description(make, rng):
    sht = make()
    data = pickle.dumps(sht)
    custom = sht.description[3] is not None and sht.description[3][0] == "grid"
    if not custom:
        assert len(data) < 300                  # numbers and names, no arrays
    back = pickle.loads(data)
    assert back.description == sht.description
    assert pickle.loads(data) is back           # rebuilt once per process and description
    assert back.geometry.npix == sht.geometry.npix
    if sht.nside is not None:
        assert back.geometry is sht.geometry    # HEALPix grids are kept per nside
    alm = random_alm(rng, sht.layout, k=2)
    _same(back.alm2map(alm, pol=False), sht.alm2map(alm, pol=False))
    maps = sht.alm2map(alm, pol=False)
    _same(back.map2alm(maps, iter=1, pol=False), sht.map2alm(maps, iter=1, pol=False))


def test_recipes_rebuild_the_grids():
    for g in (RingGeometry.healpix(5), GL, RingGeometry.gauss_legendre(4, 9),
              RingGeometry.equiangular(6), RingGeometry.equiangular(5, 7, poles=False)):
        again = RingGeometry.from_recipe(g.recipe)
        for name in ("theta", "phi0", "nphi", "ringstart", "weight"):
            np.testing.assert_array_equal(getattr(again, name), getattr(g, name))
        assert again.kind == g.kind and again.recipe == g.recipe
    assert RingGeometry.healpix(3).rings(slice(0, 4)).recipe is None
    assert RingGeometry(GL.theta, GL.phi0, GL.nphi, GL.ringstart, GL.weight).recipe is None
    with pytest.raises(ValueError, match="recipe must be one of"):
        RingGeometry.from_recipe(("hexagons", 3))


def test_the_functions_share_cached_plans():
    g = RingGeometry.healpix(4)
    one = plan_mod.plan_for(g, AlmLayout(8), "cpu")
    assert plan_mod.plan_for(g, AlmLayout(8, 8), "auto") is one     # SPHGPU_BACKEND=cpu here
    assert plan_mod.plan_for(g, AlmLayout(8, 7), "cpu") is not one
    assert plan_mod.plan_for(g, AlmLayout(8), "reference") is not one


# ----------------------------------------------------------------------------- the cuda backend
cuda = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")


@cuda
def test_cuda_plan_equals_the_functions_and_holds_its_tables(rng):
    from sphgpu.sht import _cuda

    sht = SHT(4, 8, backend="cuda")
    alm = random_alm(rng, sht.layout)
    maps = sht.alm2map(alm)
    _same(maps, sphgpu.alm2map(alm, 4, backend="cuda"))
    out = np.empty(sht.nalm, dtype=complex)
    assert sht.map2alm(maps, iter=0, out=out) is out
    _same(out, sphgpu.map2alm(maps, 8, iter=0, backend="cuda"))
    held = sht._plan_of(0)
    assert isinstance(held, _cuda._Plan) and (held.lmax, held.mmax) == (8, 8)
    # the plan keeps its tables when the backend's cache lets them go
    _cuda.plan.cache_clear()
    _same(sht.alm2map(alm), maps)
    assert sht._plan_of(0) is held


@cuda
def test_cuda_polarized_spin_and_stage_plans_equal_the_functions(rng):
    sht = SHT(1, 3, backend="cuda")
    alm = _pol_alm(rng, sht.layout)
    maps = sht.alm2map(alm)
    _same(maps, sphgpu.alm2map(alm, 1, backend="cuda"))
    _same(sht.map2alm(maps, iter=1), sphgpu.map2alm(maps, 3, iter=1, backend="cuda"))
    s1 = sht.alm2map_spin(alm[1:], 1)
    _same(s1, sphgpu.alm2map_spin(alm[1:], 1, 1, backend="cuda"))
    _same(sht.map2alm_spin(s1, 1), sphgpu.map2alm_spin(s1, 1, 3, backend="cuda"))
    assert sht._plan_of(2).lmax == 5 and sht._plan_of(1).lmax == 4
    g, layout = sht.geometry, sht.layout
    leg = sht.alm2leg(alm)
    _same(leg, stages.alm2leg(alm, layout, g, backend="cuda"))
    _same(sht.leg2map(leg), stages.leg2map(leg, g, backend="cuda"))


@cuda
def test_cuda_plan_pickles_as_its_description():
    sht = SHT(2, 4, backend="cuda")
    back = pickle.loads(pickle.dumps(sht))
    assert back.description == (2, 4, 4, None, "cuda") and back.accepts_device_arrays


def test_a_plan_for_workers_loads_its_backend_where_it_runs(rng):
    g, layout = RingGeometry.healpix(2), AlmLayout(4)
    sht = plan_mod.plan_elsewhere(g, layout, "reference")
    assert sht._module is None                       # nothing looked for here
    back = pickle.loads(pickle.dumps(sht))
    assert back.description == (2, 4, 4, None, "reference")
    alm = random_alm(rng, layout, k=2)
    _same(back.alm2map(alm, pol=False), sphgpu.alm2map(alm, 2, pol=False, backend="reference"))
    with pytest.raises(ValueError, match="backend must be one of"):
        plan_mod.plan_elsewhere(g, layout, "gpu")
