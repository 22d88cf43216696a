"""Distributed transforms equal the serial ones (CPU workers in this process; the CUDA
simulator behind a GPU-resource worker)."""

import distributed
import numpy as np
import pytest

import sphgpu
import sphgpu.distributed as sd
from sphgpu import AlmLayout, RingGeometry

from sphgpu.testing import TOL, random_alm, random_pol_alm, rel_err


def _serial_maps(alm, g, layout):
    # 2-D a_lm here are batches of spin-0 sets (sd.*_many's reading), hence pol=False
    return sphgpu.alm2map(alm, lmax=layout.lmax, mmax=layout.mmax, pol=False, geometry=g,
                          backend="cpu")


@pytest.mark.parametrize("nside, lmax, mmax, per_task", [(1, 2, 2, 1), (5, 14, 9, 3),
                                                         (16, 47, 47, 2)])
def test_batches_equal_the_serial_transforms(client, nside, lmax, mmax, per_task, rng):
    layout = AlmLayout(lmax, mmax)
    g = RingGeometry.healpix(nside)
    alms = random_alm(rng, layout, k=5)
    want = _serial_maps(alms, g, layout)
    got = sd.alm2map_many(alms, nside, lmax, mmax, client=client, maps_per_task=per_task)
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]
    one = sd.alm2map_many(alms[2], nside, lmax, mmax, client=client)
    assert one.shape == (g.npix,) and rel_err(one, want[2]) <= TOL["distributed"]
    back = sd.map2alm_many(want, lmax, mmax, iter=2, client=client, maps_per_task=per_task)
    assert rel_err(back, sphgpu.map2alm(want, lmax, mmax, iter=2, pol=False, backend="cpu")) \
        <= TOL["distributed"]


def test_batches_on_an_existing_cluster_without_resources_and_as_default(plain_client, rng):
    layout = AlmLayout(12)
    alms = random_alm(rng, layout, k=3)
    want = _serial_maps(alms, RingGeometry.healpix(4), layout)
    assert rel_err(sd.alm2map_many(alms, 4, client=plain_client), want) <= TOL["distributed"]
    with plain_client.as_current():              # client=None: the current Dask client
        assert rel_err(sd.alm2map_many(alms, 4), want) <= TOL["distributed"]


def test_futures_in_and_out(client, rng):
    layout = AlmLayout(20)
    g = RingGeometry.gauss_legendre(21)
    alms = random_alm(rng, layout, k=3)
    want = _serial_maps(alms, g, layout)
    futs = client.scatter(list(alms))
    got = sd.alm2map_many(futs, lmax=20, geometry=g, client=client)
    assert rel_err(got, want) <= TOL["distributed"]
    out = sd.alm2map_many(alms, geometry=g, client=client, gather=False)
    assert len(out) == 3 and all(isinstance(f, distributed.Future) for f in out)
    assert rel_err(np.concatenate(client.gather(out)), want) <= TOL["distributed"]
    back = sd.map2alm_many(client.scatter(list(want)), 20, iter=0, geometry=g, client=client)
    assert rel_err(back, alms) <= TOL["gl_roundtrip"]      # exact quadrature: a round trip


GEOMETRIES = {
    "healpix1": (RingGeometry.healpix(1), 2, 2),
    "healpix3": (RingGeometry.healpix(3), 8, 5),
    "healpix16": (RingGeometry.healpix(16), 47, 47),
    "gauss": (RingGeometry.gauss_legendre(24), 23, 23),
    "clenshaw": (RingGeometry.clenshaw_curtis(17), 8, 6),
}


@pytest.mark.parametrize("pattern", ["m", "rings"])
@pytest.mark.parametrize("name", GEOMETRIES)
def test_one_transform_split_over_workers_equals_serial(client, name, pattern, rng):
    g, lmax, mmax = GEOMETRIES[name]
    layout = AlmLayout(lmax, mmax)
    alm = random_alm(rng, layout)
    want = _serial_maps(alm, g, layout)
    m = rng.standard_normal(g.npix)
    want_alm = sphgpu.map2alm(m, lmax, mmax, iter=3, geometry=g, backend="cpu")
    for nchunks in (2, 7):            # 7: more chunks than m or rings for the small grids
        got = sd.alm2map(alm, lmax=lmax, mmax=mmax, geometry=g, client=client, nchunks=nchunks,
                         pattern=pattern)
        assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]
        got_alm = sd.map2alm(m, lmax, mmax, iter=3, geometry=g, client=client,
                             nchunks=nchunks, pattern=pattern)
        assert rel_err(got_alm, want_alm) <= TOL["distributed"]


def test_one_transform_of_a_batch_and_with_default_chunks(client, rng):
    layout = AlmLayout(30, 20)
    alms = random_alm(rng, layout, k=2)
    want = _serial_maps(alms, RingGeometry.healpix(8), layout)
    got = sd.alm2map(alms, 8, 30, 20, pol=False, client=client)   # nchunks: 2 CPU slots
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]
    back = sd.map2alm(want, 30, 20, iter=1, pol=False, client=client, pattern="rings")
    assert back.shape == alms.shape
    assert rel_err(back, sphgpu.map2alm(want, 30, 20, iter=1, pol=False, backend="cpu")) \
        <= TOL["distributed"]
    with pytest.raises(ValueError, match="pol=False"):
        sd.alm2map(alms, 8, 30, 20, client=client)           # 2 rows: not T, E, B


def test_polarized_batches_and_rings_equal_serial(client, rng):
    layout = AlmLayout(20, 15)
    alms = random_pol_alm(rng, layout, 3)
    want = sphgpu.alm2map(alms, 8, 20, 15, backend="cpu")
    got = sd.alm2map_many(alms, 8, 20, 15, client=client, maps_per_task=2)
    assert got.shape == (3, 3, 768) and rel_err(got, want) <= TOL["distributed"]
    one = sd.alm2map(alms[1], 8, 20, 15, client=client, pattern="rings", nchunks=3)
    assert one.shape == (3, 768) and rel_err(one, want[1]) <= TOL["distributed"]
    masked = want.copy()
    masked[:, :, 40:90] = sphgpu.UNSEEN
    serial = sphgpu.map2alm(masked, 20, 15, iter=2, backend="cpu")
    back = sd.map2alm_many(masked, 20, 15, iter=2, client=client)
    assert back.shape == alms.shape and rel_err(back, serial) <= TOL["distributed"]
    back1 = sd.map2alm(masked[0], 20, 15, iter=2, client=client, pattern="rings", nchunks=2)
    assert rel_err(back1, serial[0]) <= TOL["distributed"]



@pytest.mark.parametrize("nchunks", [1, 3])
def test_polarized_m_pattern_equals_serial(client, rng, nchunks):
    """The paper's m-distribution for T, E, B: spin passes per m chunk, all-to-all, rings."""
    layout = AlmLayout(20, 15)
    alms = random_pol_alm(rng, layout, 2)
    want = sphgpu.alm2map(alms, 8, 20, 15, backend="cpu")
    got = sd.alm2map(alms, 8, 20, 15, client=client, pattern="m", nchunks=nchunks)
    assert got.shape == (2, 3, 768) and rel_err(got, want) <= TOL["distributed"]
    one = sd.alm2map(alms[1], 8, 20, 15, client=client, nchunks=nchunks)   # "m" by default
    assert one.shape == (3, 768) and rel_err(one, want[1]) <= TOL["distributed"]
    masked = want.copy()
    masked[:, :, 40:90] = sphgpu.UNSEEN
    serial = sphgpu.map2alm(masked, 20, 15, iter=2, backend="cpu")
    back = sd.map2alm(masked, 20, 15, iter=2, client=client, pattern="m", nchunks=nchunks)
    assert back.shape == alms.shape and rel_err(back, serial) <= TOL["distributed"]


def test_bad_requests_raise_clear_errors(client, rng):
    alm = random_alm(rng, AlmLayout(8))
    with pytest.raises(sd.NoGPUWorkerError, match="GPU"):
        sd.alm2map_many(alm[None], 4, client=client, backend="cuda")
    with pytest.raises(sd.NoGPUWorkerError, match="resources"):
        sd.alm2map(alm, 4, client=client, backend="cuda")
    with pytest.raises(ValueError, match="backend"):
        sd.alm2map_many(alm[None], 4, client=client, backend="gpu")
    with pytest.raises(ValueError, match="pattern"):
        sd.alm2map(alm, 4, client=client, pattern="l")
    with pytest.raises(ValueError, match="alms has 7 coefficients"):
        sd.alm2map_many(np.zeros((2, 7), complex), 4, client=client)
    with pytest.raises(ValueError, match="maps has 10 pixels"):
        sd.map2alm(np.zeros(10), client=client)
    with pytest.raises(ValueError, match="maps_per_task"):
        sd.alm2map_many(alm[None], 4, client=client, maps_per_task=0)
    with pytest.raises(TypeError, match="client"):
        sd.alm2map_many(alm[None], 4, client="tcp://nowhere")


def test_a_failing_task_raises_and_returns_nothing(client, rng):
    """A task error (here: the reference backend's lmax limit, hit on the worker) reaches the
    caller; no partial result comes back."""
    from sphgpu.sht.reference import MAX_LMAX

    layout = AlmLayout(MAX_LMAX + 1, 2)
    alms = np.zeros((2, layout.size), complex)
    with pytest.raises(ValueError, match="too large for the reference backend"):
        sd.alm2map_many(alms, 1, MAX_LMAX + 1, 2, client=client, backend="reference")


def test_gpu_tasks_run_only_on_gpu_workers():
    """A mixed cluster: tasks with backend "cuda" (here Numba's CUDA simulator) land on the GPU
    worker, CPU tasks on the CPU worker, and "auto" picks the GPU."""
    c = sd.local_cluster(gpus=["sim"], cpu_workers=1, threads_per_worker=1, processes=False,
                         dashboard_address=":0")
    try:
        info = sd.cluster_info(c)
        assert (info["workers"], info["gpu_workers"], info["cpu_slots"]) == (2, 1, 1)
        names = {a: w["name"] for a, w in sd.cluster.workers(c).items()}
        rng = np.random.default_rng(5)
        layout = AlmLayout(2)       # the simulator takes about a second per transform
        alms = random_alm(rng, layout, k=2)
        want = _serial_maps(alms, RingGeometry.healpix(1), layout)
        for backend, where in (("cuda", "gpu-0"), ("auto", "gpu-0"), ("cpu", "cpu-0")):
            futs = sd.alm2map_many(alms, 1, client=c, backend=backend, gather=False,
                                   maps_per_task=2)
            distributed.wait(futs)
            held = {names[a] for f in futs for a in c.who_has(f)[f.key]}
            assert held == {where}
            assert rel_err(np.concatenate(c.gather(futs)), want) <= TOL["vs_ducc0"]
        got = sd.alm2map(alms, 1, pol=False, client=c, backend="cuda", pattern="rings",
                         nchunks=2)
        assert rel_err(got, want) <= TOL["vs_ducc0"]
        got = sd.alm2map(alms, 1, pol=False, client=c, backend="cuda", pattern="m", nchunks=2)
        assert rel_err(got, want) <= TOL["vs_ducc0"]
        maps = np.random.default_rng(6).standard_normal((2, 12))
        assert rel_err(sd.map2alm(maps, 2, iter=1, pol=False, client=c, backend="cuda",
                                  pattern="m", nchunks=2),
                       sphgpu.map2alm(maps, 2, iter=1, pol=False, backend="cpu")) \
            <= TOL["vs_ducc0"]
    finally:
        c.shutdown()
        c.close()
