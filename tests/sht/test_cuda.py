"""The "cuda" backend: kernels through Numba's simulator in CI (tiny sizes), the real GPU on the
GPU machine (`pytest -m gpu`), against the CPU backend (ducc0) and the numba twin."""

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout, RingGeometry
from sphgpu.backends import cuda_available
from sphgpu.sht import _cpu, reference

from sphgpu.testing import TOL, random_alm, random_map, rel_err

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")

# (geometry, lmax, mmax): HEALPix with rings shorter than 2*mmax+1, odd nside, mmax < lmax,
# a Gauss-Legendre grid with an unpaired equator ring, and HEALPix rings where one Bluestein
# length has two rings (one FFT row) and another one ring (a row of its own); nside 2 at
# mmax 70 folds 18-36 orders onto each mode of its 4-pixel rings, past the exact phase factor
# that the fold recomputes every FOLD_ANCHOR terms
_GL = RingGeometry.gauss_legendre(5)
CASES = [(RingGeometry.healpix(2), 70, 70), (RingGeometry.healpix(1), 3, 3), (RingGeometry.healpix(3), 8, 5),
         (RingGeometry.healpix(2), 7, 7), (_GL, 4, 4),
         (RingGeometry.healpix(3).rings(slice(1, 11)), 8, 8),
         # rings of one length stored in reverse order: their FFTs cannot run in place in the map
         (RingGeometry(_GL.theta, _GL.phi0, _GL.nphi, _GL.ringstart[::-1].copy(),
                       _GL.weight), 4, 4),
         # odd ring lengths, and two rings of one Bluestein row with different phi0
         (RingGeometry(np.array([0.4, 0.9, 2.2, 2.7]), np.array([0.1, 0.3, 0.2, 0.0]),
                       np.array([5, 7, 7, 5]), np.array([0, 5, 12, 19]),
                       np.full(4, 4 * np.pi / 24)), 6, 6)]


@pytest.mark.parametrize("geometry, lmax, mmax", CASES)
def test_cuda_matches_cpu(geometry, lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    alms = random_alm(rng, layout, k=2)
    want = _cpu.synthesis(alms, layout, geometry)
    got = sphgpu.alm2map(alms, lmax=lmax, mmax=mmax, pol=False, geometry=geometry,
                         backend="cuda")
    assert isinstance(got, np.ndarray) and got.shape == want.shape
    assert rel_err(got, want) <= TOL["vs_ducc0"]
    assert rel_err(got, reference.synthesis(alms, layout, geometry)) <= TOL["vs_ducc0"]
    maps = rng.standard_normal((2, geometry.npix))
    want = _cpu.analysis(maps, layout, geometry)
    got = sphgpu.map2alm(maps, lmax, mmax, iter=0, pol=False, geometry=geometry, backend="cuda")
    assert rel_err(got, want) <= TOL["vs_ducc0"]
    # device maps in: the ring FFTs read the map in place and must leave it as it was
    from sphgpu._device import array_module, to_host

    dev = array_module().asarray(maps)
    from_dev = sphgpu.map2alm(dev, lmax, mmax, iter=0, pol=False, geometry=geometry,
                              backend="cuda")
    assert rel_err(to_host(from_dev), want) <= TOL["vs_ducc0"]
    np.testing.assert_array_equal(to_host(dev), maps)
    assert rel_err(got, reference.analysis(maps, layout, geometry)) <= TOL["vs_ducc0"]


def _step(step, a, pl):
    """A private step of the CUDA backend on its own kind of arrays (NumPy in the simulator,
    CuPy on a GPU), NumPy in and out."""
    from sphgpu._device import array_module, to_host

    xp = array_module()
    return to_host(step(xp.asarray(a), pl, xp))


@pytest.mark.parametrize("geometry, lmax, mmax", CASES)
def test_imaginary_parts_of_the_m0_coefficients_are_ignored_as_healpy_does(geometry, lmax, mmax,
                                                                          rng):
    """Complex a_l0 (random coefficients drawn without care): healpy and ducc0 read only
    their real parts, and so must every ring step, the Bluestein rows (where the imaginary
    part would land in the row's other ring) and the real FFTs; scalar, polarized and spin."""
    layout = AlmLayout(lmax, mmax)
    alms = rng.standard_normal((3, layout.size)) + 1j * rng.standard_normal((3, layout.size))
    real0 = alms.copy()
    real0[:, :lmax + 1] = real0[:, :lmax + 1].real
    for pol in (False, True):
        got = sphgpu.alm2map(alms, lmax=lmax, mmax=mmax, pol=pol, geometry=geometry,
                             backend="cuda")
        want = sphgpu.alm2map(real0, lmax=lmax, mmax=mmax, pol=pol, geometry=geometry,
                              backend="cpu")
        assert rel_err(got, want) <= TOL["vs_ducc0"]
    got = sphgpu.alm2map_spin(alms[1:], spin=1, lmax=lmax, mmax=mmax, geometry=geometry,
                              backend="cuda")
    want = sphgpu.alm2map_spin(real0[1:], spin=1, lmax=lmax, mmax=mmax, geometry=geometry,
                               backend="cpu")
    assert rel_err(got, want) <= TOL["vs_ducc0"]


def test_bluestein_rows_pair_rings_of_one_length():
    from sphgpu.sht._cuda import _pair_rings

    nphi = np.array([4, 8, 8, 12, 4, 8, 4])
    a, b = _pair_rings(np.arange(7), nphi)
    assert sorted(np.concatenate([a, b[b >= 0]]).tolist()) == list(range(7))
    assert all(b[i] < 0 or nphi[a[i]] == nphi[b[i]] for i in range(a.size))
    assert (b < 0).sum() == 3          # one ring of lengths 4, 8 and 12 left over


def test_plan_tables_built_on_the_device_equal_the_host_tables_bit_for_bit():
    from sphgpu._device import to_host
    from sphgpu.sht import _cuda, legendre

    lmax, mmax = 37, 21
    pl = _cuda._Plan(RingGeometry.healpix(4), lmax, mmax)
    alpha, scale = legendre.coefficient_tables(lmax, mmax, AlmLayout(lmax, mmax).mstart())
    np.testing.assert_array_equal(to_host(pl.alpha), alpha)
    np.testing.assert_array_equal(to_host(pl.scale), scale)


def test_cuda_map2alm_iterations_match_cpu(rng):
    m = random_map(rng, 2)
    want = sphgpu.map2alm(m, 5, iter=2, backend="cpu")
    assert rel_err(sphgpu.map2alm(m, 5, iter=2, backend="cuda"), want) <= TOL["vs_healpy_iter"]


def test_legendre_kernel_matches_twin_with_three_maps(rng):
    # three maps: one launch of alm2leg_kernel(3), two launches of leg2alm_kernel
    from sphgpu.sht import _cuda
    g, layout = RingGeometry.healpix(2), AlmLayout(6, 4)
    alms = random_alm(rng, layout, k=3)
    pl = _cuda.plan(g, layout.lmax, layout.mmax)
    leg = _step(_cuda._alm2leg, alms, pl)
    assert rel_err(leg, _cpu.twin_alm2leg(alms, layout, g)) <= TOL["cuda_vs_twin"]
    back = _step(_cuda._leg2alm, leg, pl)
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= TOL["cuda_vs_twin"]


def test_blocks_of_negligible_ring_pairs_are_skipped_exactly(rng, monkeypatch):
    # Rings a few arcminutes from the poles: for large m their lambda_lm stays below 2**-300 up
    # to lmax, and with two pairs per block the kernels skip those blocks. Results must not
    # change: the twin runs every pair in full.
    from sphgpu._device import to_host
    from sphgpu.sht import _cuda
    monkeypatch.setattr(_cuda, "LAUNCH", {"alm2leg": (2, 1), "leg2alm": (2, 1)})
    theta = np.array([1e-3, 2e-3, 0.05, 1.0, np.pi - 2e-3, np.pi - 1e-3])
    g = RingGeometry(theta, np.zeros(6), np.full(6, 8), np.arange(6) * 8, np.ones(6))
    layout = AlmLayout(64)
    pl = _cuda.plan(g, 64, 64)
    first = to_host(pl.first)
    assert first[0] == 0 and first[64] >= 2        # the two polar pairs are dead at m = 64
    alms = random_alm(rng, layout, k=1)
    leg = _step(_cuda._alm2leg, alms, pl)
    assert rel_err(leg, _cpu.twin_alm2leg(alms, layout, g)) <= TOL["cuda_vs_twin"]
    assert np.all(leg[0, [0, 1, 4, 5], 64] == 0)
    back = _step(_cuda._leg2alm, leg, pl)
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= TOL["cuda_vs_twin"]


@pytest.mark.gpu
def test_device_arrays_stay_on_the_device(rng):
    cupy = pytest.importorskip("cupy")
    from numba import cuda
    layout, nside = AlmLayout(20), 8
    alm = random_alm(rng, layout)
    d_alm = cupy.asarray(alm)
    m = sphgpu.alm2map(d_alm, nside, backend="cuda")
    assert isinstance(m, cupy.ndarray)
    assert rel_err(m.get(), _cpu.synthesis(alm[None], layout, RingGeometry.healpix(nside))[0]) \
        <= TOL["vs_ducc0"]
    a = sphgpu.map2alm(cuda.as_cuda_array(m), 20, iter=3, backend="cuda")   # Numba array in
    assert cuda.is_cuda_array(a) and not isinstance(a, cupy.ndarray)
    assert rel_err(cupy.asarray(a).get(), sphgpu.map2alm(m.get(), 20, iter=3, backend="cpu")) \
        <= TOL["vs_healpy_iter"]
    bad = m.copy()
    bad[3] = cupy.nan
    with pytest.raises(ValueError, match="maps contains NaN"):
        sphgpu.map2alm(bad, 20, backend="cuda")
    with pytest.raises(ValueError, match="alms has"):
        sphgpu.alm2map(d_alm[:-1], nside, backend="cuda")
    with pytest.raises(TypeError, match="GPU array"):
        sphgpu.alm2map(d_alm, nside, backend="cpu")


@pytest.mark.gpu
def test_autotuner_measures_once_and_caches_on_disk(tmp_path, monkeypatch, rng):
    import json
    from sphgpu.sht import _cuda
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    g = RingGeometry.gauss_legendre(600)            # a geometry no other test uses
    pl = _cuda.plan(g, 599, 599)
    launch = _cuda._launch(pl)                      # both kernels, each tuned on first need
    cache = json.loads((tmp_path / "sht_launch.json").read_text())
    assert len(cache) == 2
    for name, choice in launch.items():
        (key, stored), = [(k, v) for k, v in cache.items() if f"|{name}|" in k]
        assert "lmax=599" in key and tuple(stored) == choice
        assert choice in _cuda._candidates(name, 1)
    fresh = _cuda._Plan(g, 599, 599)                # a new plan reads the file, measures nothing
    monkeypatch.setattr(_cuda, "_measure", lambda *a: pytest.fail("measured twice"))
    assert _cuda._launch(fresh) == launch


def test_launch_shapes_are_tuned_per_maps_a_launch(tmp_path, monkeypatch):
    """Launches of 1 and of 2 maps are tuned apart (registers and shared memory differ) and
    cached under keys of their own; the single-map key is the one written before."""
    import json
    from sphgpu.sht import _cuda
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cuda, "SIMULATOR", False)
    monkeypatch.setattr(_cuda._tuning, "device_name", lambda: "GPU")
    picks = {1: (32, 8), 2: (32, 8, 12)}
    measured = []

    def measure(pl, name, nmaps=1, slot=None):
        measured.append((name, nmaps, slot))
        return picks[nmaps]

    monkeypatch.setattr(_cuda, "_measure", measure)
    g = RingGeometry.gauss_legendre(600)
    pl = _cuda._Plan(g, 599, 599)
    assert _cuda._launch(pl, "leg2alm", 2) == (32, 8, 12)
    assert _cuda._launch(pl, "leg2alm") == (32, 8)
    assert _cuda._launch(pl, "leg2alm", 2) == (32, 8, 12)        # kept on the plan
    assert measured == [("leg2alm", 2, "leg2alm|maps=2"), ("leg2alm", 1, "leg2alm")]
    cache = json.loads((tmp_path / "sht_launch.json").read_text())
    assert cache == {"GPU|leg2alm|nrings=600|npix=%d|lmax=599|mmax=599|maps=2" % g.npix:
                     [32, 8, 12],
                     "GPU|leg2alm|nrings=600|npix=%d|lmax=599|mmax=599" % g.npix: [32, 8]}
    fresh = _cuda._Plan(g, 599, 599)
    assert _cuda._launch(fresh, "leg2alm", 2) == (32, 8, 12) and len(measured) == 2


@pytest.mark.gpu
def test_running_out_of_gpu_memory_is_a_clear_error(monkeypatch):
    cupy = pytest.importorskip("cupy")
    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: (1 << 20, 1 << 40))
    monkeypatch.setattr(cupy, "get_default_memory_pool",
                        lambda: type("Pool", (), {"free_bytes": lambda self: 0})())
    alms = np.zeros((2, AlmLayout(256).size), complex)
    with pytest.raises(MemoryError, match="GiB of GPU memory per map"):
        sphgpu.alm2map(alms, 128, pol=False, backend="cuda")
    # one map asks the driver nothing before it runs: CuPy's error on the way says the same
    monkeypatch.undo()
    from sphgpu.sht import _cuda

    def out_of_memory(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 1 << 30)

    monkeypatch.setattr(_cuda, "_leg2map", out_of_memory)
    with pytest.raises(MemoryError, match="GiB of GPU memory per map for lmax=256, npix=196608"):
        sphgpu.alm2map(alms[0], 128, backend="cuda")


def test_out_of_memory_inside_a_transform_is_named(monkeypatch):
    """A MemoryError subclass inside a transform (CuPy's OutOfMemoryError) comes out as the
    batches' MemoryError with the transform's size; a plain MemoryError passes as it is."""
    from sphgpu.sht import _cuda

    class OutOfMemory(MemoryError):
        pass

    monkeypatch.setattr(_cuda, "free_device_bytes", lambda: 3 << 29)
    pl = _cuda.plan(RingGeometry.healpix(4), 8, 8)
    with pytest.raises(MemoryError, match=r"per map for lmax=8, npix=192, but 1.50 GiB is free") as e:
        with _cuda._memory_named(pl):
            raise OutOfMemory("out of memory allocating 1 GiB")
    assert isinstance(e.value.__cause__, OutOfMemory)
    with pytest.raises(MemoryError, match="^as it was$"):
        with _cuda._memory_named(pl):
            raise MemoryError("as it was")


@pytest.mark.slow
@pytest.mark.parametrize("threads", [16, 2])
def test_values_starting_below_2_pow_minus_300_join_the_sums_at_the_right_l(threads, rng):
    # Rings at sin(theta) ~ 0.5 and m ~ 320: lambda_mm ~ 2**-320 starts at scale k = -1 and
    # the recurrence lifts it past 2**-300 before l = m / sin(theta) < lmax. The kernels check
    # the scale every CHECK_EVERY steps instead of every step; against the twin's per-step
    # recurrence the results must agree to rounding. Only the m below run (first[m] = npairs
    # makes the kernels skip every other m), to keep the simulator quick. Until a thread holds
    # a value past 2**-300 it runs the recurrence alone; with 2 threads a block (pairs 0 and 1)
    # starts with every thread so, and leg2alm skips the block's sums of those chunks.
    from sphgpu.sht import _cuda_kernels as K
    from sphgpu.sht import legendre
    lmax, ms = 700, [0, 7, 312, 340]
    theta = np.array([0.5, 0.53, 1.3])
    north, south = np.arange(3), np.array([5, 4, 3])
    x, s = np.cos(theta), np.sin(theta)
    m = np.arange(lmax + 1)
    mstart = m * (2 * lmax + 1 - m) // 2
    alpha, scale = legendre.coefficient_tables(lmax, lmax, mstart)
    mu = legendre.mu_table(lmax)
    first = np.full(lmax + 1, 3)
    first[ms] = 0
    assert legendre.start_value(mu[312], 312, s[0])[1] == -1    # starts below 2**-300
    nalm = int(mstart[-1]) + lmax + 1
    alm = rng.standard_normal((1, nalm)) + 1j * rng.standard_normal((1, nalm))
    leg = np.zeros((1, 6, lmax + 1), complex)
    args = (mstart, m, lmax, alpha, scale, mstart, mu, x, s, north, south, first)
    K.alm2leg_kernel(1, threads, 1)[(-(-3 // threads), lmax + 1), threads](alm, *args, leg)
    ring_leg = rng.standard_normal((1, 6, lmax + 1)) + 1j * rng.standard_normal((1, 6, lmax + 1))
    back = np.zeros((1, 2 * nalm))
    K.leg2alm_kernel(1, threads, 1)[(1, lmax + 1), threads](ring_leg, *args, back)
    back = back.view(complex)
    for mm in ms:
        sl = slice(mstart[mm] + mm, mstart[mm] + lmax + 1)
        want_alm = np.zeros((1, nalm), complex)
        for p in range(3):
            v, k = legendre.start_value(mu[mm], mm, s[p])
            out = np.zeros((1, 2), complex)
            legendre.legendre_sum(alm, mstart[mm], mm, lmax, alpha, scale, x[p], v, k, out)
            if mm >= 312 and p < 2:          # dead at l = m, alive before lmax
                assert k == -1 and np.abs(out).max() > 0.1
            np.testing.assert_allclose(leg[0, [north[p], south[p]], mm], out[0],
                                       rtol=TOL["cuda_ring_rtol"],
                                       atol=TOL["cuda_ring_atol"] * np.abs(out).max())
            two = ring_leg[:, [north[p], south[p]], mm]
            legendre.legendre_adjoint(two, mstart[mm], mm, lmax, alpha, scale, x[p], v, k,
                                      want_alm)
        assert np.abs(want_alm[0, sl]).max() > 0
        assert rel_err(back[0, sl], want_alm[0, sl]) <= TOL["cuda_vs_twin"]


def test_leg2alm_chunks_fit_shared_memory_and_the_rescaling_bound():
    # every launch shape the autotuner may pick compiles: two buffers of sums and three of
    # alpha_l, s_l within 48 KiB, and a chunk (the distance between rescaling checks) that is
    # even and at most CHECK_EVERY
    from sphgpu.sht import _cuda
    from sphgpu.sht import _cuda_kernels as K
    shapes = [(s, k) for k in range(1, K.LEG2ALM_MAX_MAPS + 1)
              for s in _cuda._candidates("leg2alm", k)]
    for (tpb, _, *chunk), nmaps in shapes:
        ch = chunk[0] if chunk else K._leg2alm_chunk(nmaps, tpb)
        assert ch % 2 == 0 and 2 <= ch <= K.CHECK_EVERY
        assert 8 * (2 * ch * 2 * nmaps * (tpb + 1) + 6 * ch) <= 48 * 1024
    with pytest.raises(ValueError, match="shared memory"):
        K._leg2alm_chunk(2, 4096)


@pytest.mark.parametrize("launch", [(4, 2, 4), (4, 3, 6), (2, 2, 2), (4, 2, 4, 168),
                                    (2, 1, 2, 168, 2), (2, 1, 4, 168, 3)])
def test_leg2alm_smaller_chunks_match_twin(rng, monkeypatch, launch):
    # chunks of 2-6 l values (the third launch parameter): the same sums; a fourth parameter,
    # the register limit, goes to the compiler (on a GPU; the simulator has none); a fifth,
    # blocks per m, splits each m's ring pairs over 2 or 3 blocks (here 6 pairs in groups of 2:
    # some blocks take one group, some two)
    from sphgpu.sht import _cuda
    g, layout = RingGeometry.healpix(2), AlmLayout(9, 6)
    monkeypatch.setattr(_cuda, "LAUNCH", {"alm2leg": (2, 3), "leg2alm": launch})
    pl = _cuda._Plan(g, layout.lmax, layout.mmax)
    leg = rng.standard_normal((3, g.nrings, 7)) + 1j * rng.standard_normal((3, g.nrings, 7))
    back = _step(_cuda._leg2alm, leg, pl)
    assert pl.launch["leg2alm"] == launch
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= TOL["cuda_vs_twin"]


def test_leg2alm_chunk_must_be_even_and_fit():
    from sphgpu.sht import _cuda_kernels as K
    for bad in (3, 18, 2 * K.CHECK_EVERY):
        with pytest.raises(ValueError, match="chunk"):
            K.leg2alm_kernel(2, 32, 8, bad)
    with pytest.raises(ValueError, match="split=0"):
        K.leg2alm_kernel(1, 32, 8, 16, 168, 0)


def test_odd_pairs_per_thread_match_twin(rng, monkeypatch):
    # an odd number of ring pairs per thread in both Legendre kernels
    from sphgpu.sht import _cuda
    g, layout = RingGeometry.healpix(2), AlmLayout(6, 4)
    monkeypatch.setattr(_cuda, "LAUNCH", {"alm2leg": (2, 3), "leg2alm": (4, 3)})
    pl = _cuda._Plan(g, layout.lmax, layout.mmax)
    alms = random_alm(rng, layout, k=1)
    assert rel_err(_step(_cuda._alm2leg, alms, pl), _cpu.twin_alm2leg(alms, layout, g)) \
        <= TOL["cuda_vs_twin"]
    leg = rng.standard_normal((1, g.nrings, 5)) + 1j * rng.standard_normal((1, g.nrings, 5))
    back = _step(_cuda._leg2alm, leg, pl)
    assert pl.launch["leg2alm"] == (4, 3)
    assert rel_err(back, _cpu.twin_leg2alm(leg, layout, g)) <= TOL["cuda_vs_twin"]


# the tensor-core alm2leg (FP64 mma through sphgpu._dmma; its simulator twin in CI): groups of
# 16, 8 and 4 maps and the rest by the plain kernel; lmax past one chunk of MMA_CHUNK l values;
# ring pairs that fill no whole tile; nside 13 with mmax < lmax; polar rings whose values start
# below 2**-300 and join the sums after a rescaling check
@pytest.mark.parametrize("geometry, lmax, mmax, k, shape", [
    (RingGeometry.healpix(2), 40, 40, 5, ("mma", 1)),
    (RingGeometry.healpix(13), 20, 9, 8, ("mma", 2)),
    (RingGeometry(np.array([1e-3, 2e-3, 0.05, 1.0, np.pi - 2e-3, np.pi - 1e-3]), np.zeros(6),
                  np.full(6, 8), np.arange(6) * 8, np.ones(6)), 48, 48, 4, ("mma", 2)),
])
def test_tensor_core_alm2leg_matches_twin(rng, monkeypatch, geometry, lmax, mmax, k, shape):
    from sphgpu.sht import _cuda
    layout = AlmLayout(lmax, mmax)
    pl = _cuda._Plan(geometry, lmax, mmax)
    monkeypatch.setattr(_cuda, "_tuned", lambda pl: True)
    pl.launch.update({f"alm2leg|maps={g}": shape for g in _cuda.MMA_MAPS})
    pl.launch["alm2leg"] = _cuda.LAUNCH["alm2leg"]        # the map left over
    alms = random_alm(rng, layout, k=k)
    leg = _step(_cuda._alm2leg, alms, pl)
    want = _cpu.twin_alm2leg(alms, layout, geometry)
    assert rel_err(leg, want) <= TOL["cuda_vs_twin"]
    # each map on its own: the same within rounding of the tensor cores' sums
    for i in range(k):
        assert rel_err(leg[i], want[i]) <= TOL["cuda_vs_twin"]


def test_tensor_core_launch_choices_are_candidates_for_4_8_16_maps_and_cache_as_lists():
    from sphgpu.sht import _cuda
    for name, k in (("alm2leg", 4), ("alm2leg", 8), ("alm2leg", 16), ("leg2alm", 8)):
        assert set(_cuda.MMA_CANDIDATES[name]) <= set(_cuda._candidates(name, k))
    for name, k in (("alm2leg", 1), ("alm2leg", 3), ("leg2alm", 2), ("leg2alm", 16)):
        assert not any(c[0] == "mma" for c in _cuda._candidates(name, k))
    # register-limited leg2alm shapes are tried for single-map launches only (they spill with
    # two maps); alm2leg has one list for all
    assert _cuda._candidates("leg2alm", 1) == _cuda.ONE_MAP_CANDIDATES["leg2alm"]
    assert all(len(c) == 5 for c in _cuda._candidates("leg2alm", 1))
    # (their one fifth entry, blocks per m, has 255 registers: no limit)
    assert all(len(c) < 4 or c[3] == 255 for k in (2, 3, 8)
               for c in _cuda._candidates("leg2alm", k))
    assert _cuda._candidates("alm2leg", 1) == _cuda.CANDIDATES["alm2leg"]
    assert _cuda._check_launch(["mma", 4]) == ("mma", 4)
    assert _cuda._check_launch(["mma", 8, 128]) == ("mma", 8, 128)
    assert _cuda._check_launch([128, 4]) == (128, 4)
    for bad in (["mma"], ["mma", 0], ["simd", 4], [], "mma"):
        with pytest.raises(ValueError):
            _cuda._check_launch(bad)


# the tensor-core leg2alm: a group of 8 maps and the rest by the plain kernel; two groups of
# ring pairs a block (nside 17: 34 pairs, one warp); polar rings whose values start below
# 2**-300; mmax < lmax; a register limit (the simulator ignores it; here the launch path)
@pytest.mark.parametrize("geometry, lmax, mmax, k, launch", [
    (RingGeometry.healpix(17), 20, 6, 9, ("mma", 1)),
    (RingGeometry.healpix(3), 33, 33, 8, ("mma", 2, 128)),
    (RingGeometry(np.array([1e-3, 2e-3, 0.05, 1.0, np.pi - 2e-3, np.pi - 1e-3]), np.zeros(6),
                  np.full(6, 8), np.arange(6) * 8, np.ones(6)), 40, 40, 8, ("mma", 1)),
])
def test_tensor_core_leg2alm_matches_twin(rng, monkeypatch, geometry, lmax, mmax, k, launch):
    from sphgpu.sht import _cuda
    pl = _cuda._Plan(geometry, lmax, mmax)
    monkeypatch.setattr(_cuda, "_tuned", lambda pl: True)
    pl.launch["leg2alm|maps=8"] = launch
    pl.launch["leg2alm"] = _cuda.LAUNCH["leg2alm"]        # the map left over
    shape = (k, geometry.nrings, mmax + 1)
    leg = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    back = _step(_cuda._leg2alm, leg, pl)
    want = _cpu.twin_leg2alm(leg, AlmLayout(lmax, mmax), geometry)
    for i in range(k):
        assert rel_err(back[i], want[i]) <= TOL["cuda_vs_twin"]


def test_public_batches_through_the_tensor_core_kernels_equal_single_maps(rng, monkeypatch):
    # alm2map and map2alm of 9 maps with the tuner's choice forced to the tensor-core kernels
    # (8 maps a group, the ninth by the plain kernels): each map as its own call gives the same
    # maps and a_lm to 1e-12, and both agree with ducc0
    from sphgpu.sht import _cuda
    geometry, lmax, mmax = RingGeometry.healpix(3), 9, 7
    layout = AlmLayout(lmax, mmax)

    def launch(pl, name=None, nmaps=1):
        if nmaps == 8:
            return ("mma", 1)
        return _cuda.LAUNCH[name]

    monkeypatch.setattr(_cuda, "_tuned", lambda pl: True)
    monkeypatch.setattr(_cuda, "_launch", launch)
    alms = random_alm(rng, layout, k=9)
    maps = sphgpu.alm2map(alms, lmax=lmax, mmax=mmax, pol=False, geometry=geometry,
                          backend="cuda")
    back = sphgpu.map2alm(maps, lmax, mmax, iter=0, pol=False, geometry=geometry, backend="cuda")
    for i in range(9):
        one = sphgpu.alm2map(alms[i], lmax=lmax, mmax=mmax, pol=False, geometry=geometry,
                             backend="cuda")
        assert rel_err(maps[i], one) <= 1e-12
        one = sphgpu.map2alm(maps[i], lmax, mmax, iter=0, pol=False, geometry=geometry,
                             backend="cuda")
        assert rel_err(back[i], one) <= 1e-12
    assert rel_err(maps, _cpu.synthesis(alms, layout, geometry)) <= TOL["vs_ducc0"]
    assert rel_err(back, _cpu.analysis(maps, layout, geometry)) <= TOL["vs_ducc0"]
