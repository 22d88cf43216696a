"""Data that stays on the workers: inputs sent once, results left there, set-up kept per
worker, spectra reduced where the maps are, and warm-up of every worker at once. Each result
against the serial call (CPU workers in this process)."""

import pickle

import distributed
import numpy as np
import pytest

import sphgpu
import sphgpu.distributed as sd
from sphgpu import AlmLayout, RingGeometry
from sphgpu.convolve.parts import Parts
from sphgpu.distributed import _worker, warm
from sphgpu.distributed import convolution as dconv
from sphgpu.distributed import sht as dsht

from sphgpu.testing import TOL, random_alm, rel_err


def _serial_maps(alm, g, layout):
    return sphgpu.alm2map(alm, lmax=layout.lmax, mmax=layout.mmax, pol=False, geometry=g,
                          backend="cpu")


@pytest.fixture
def count_scatters(monkeypatch):
    """How many objects each call of cluster.scatter sends (one list entry per call)."""
    sent = []
    real = dsht._cluster.scatter

    def spy(client, data, resources=None):
        sent.append(len(data))
        return real(client, data, resources)

    monkeypatch.setattr(dsht._cluster, "scatter", spy)
    return sent


def test_inputs_sent_once_results_left_on_the_workers(client, rng, count_scatters):
    layout = AlmLayout(20, 17)
    g = RingGeometry.gauss_legendre(21)
    alms = random_alm(rng, layout, k=5)
    want = _serial_maps(alms, g, layout)
    futs = sd.to_workers(alms, client=client, per_future=2)
    assert count_scatters == [3]                     # one transfer per input, in one call
    assert [f.result().shape[0] for f in futs] == [2, 2, 1]
    maps = sd.alm2map_many(futs, lmax=20, mmax=17, geometry=g, client=client, gather=False)
    assert all(isinstance(f, distributed.Future) for f in maps) and len(maps) == 3
    assert count_scatters == [3]                     # futures in: nothing sent again
    assert rel_err(np.concatenate(client.gather(maps)), want) <= TOL["distributed"]
    # maps left on the workers -> a_lm left there -> gathered: the serial analysis
    back = sd.map2alm_many(maps, 20, 17, iter=1, geometry=g, client=client, gather=False)
    got = np.concatenate(client.gather(back))
    assert rel_err(got, sphgpu.map2alm(want, 20, 17, iter=1, pol=False, geometry=g,
                                       backend="cpu")) <= TOL["distributed"]
    # NumPy rows in groups of 2: one scatter of ceil(5 / 2) groups, never one per map
    sd.alm2map_many(alms, lmax=20, mmax=17, geometry=g, client=client, maps_per_task=2)
    assert count_scatters == [3, 3]


def test_a_single_future_is_a_batch_of_its_rows(client, rng):
    layout = AlmLayout(12)
    alms = random_alm(rng, layout, k=3)
    [f] = client.scatter([alms])
    got = sd.alm2map_many(f, 4, lmax=12, client=client)
    assert rel_err(np.concatenate(got) if isinstance(got, list) else got,
                   _serial_maps(alms, RingGeometry.healpix(4), layout)) <= TOL["distributed"]


def test_spectra_reduced_on_the_workers_equal_anafast(client, rng):
    nside, lmax = 8, 16
    g = RingGeometry.healpix(nside)
    maps = _serial_maps(random_alm(rng, AlmLayout(lmax), k=4), g, AlmLayout(lmax))
    want = np.stack([sphgpu.anafast(m, lmax=lmax, iter=2, backend="cpu") for m in maps])
    got = sd.anafast_many(maps, lmax, iter=2, client=client, maps_per_task=3)
    assert got.shape == (4, lmax + 1) and rel_err(got, want) <= TOL["distributed"]
    one = sd.anafast_many(maps[1], lmax, iter=2, client=client)
    assert one.shape == (lmax + 1,) and rel_err(one, want[1]) <= TOL["distributed"]
    # maps already on the workers: only the spectra come back
    futs = sd.to_workers(maps, client=client)
    left = sd.anafast_many(futs, lmax, iter=2, geometry=g, client=client, gather=False)
    assert rel_err(np.concatenate(client.gather(left)), want) <= TOL["distributed"]


def test_polarized_spectra_and_alm2cl_of_futures(client, rng):
    nside, lmax = 8, 16
    layout = AlmLayout(lmax)
    teb = np.stack([random_alm(rng, layout, k=3) for _ in range(2)])       # (2, 3, nalm)
    iqu = sphgpu.alm2map(teb, nside, lmax=lmax, pol=True, backend="cpu")    # (2, 3, npix)
    want = np.stack([sphgpu.anafast(m, lmax=lmax, iter=1, pol=True, backend="cpu")
                     for m in iqu])
    got = sd.anafast_many(iqu, lmax, iter=1, client=client)
    assert got.shape == (2, 6, lmax + 1) and rel_err(got, want) <= TOL["distributed"]
    assert rel_err(sd.anafast_many(iqu, lmax, iter=1, nspec=3, client=client),
                   want[:, :3]) <= TOL["distributed"]
    alms = random_alm(rng, layout, k=3)
    cl = sd.alm2cl_many(sd.to_workers(alms, client=client), lmax, client=client)
    assert rel_err(cl, sphgpu.alm2cl(alms[:, None, :], lmax=lmax)[:, 0]) <= TOL["distributed"]
    assert rel_err(sd.alm2cl_many(teb, client=client), sphgpu.alm2cl(teb)) \
        <= TOL["distributed"]


def test_each_worker_keeps_one_geometry_per_grid():
    """Two equal grids (distinct objects, as two unpickled task arguments are) give the
    worker one object, so a GPU plan cached by geometry identity is made once; HEALPix
    grids keep RingGeometry.healpix's own object."""
    _worker.clear()
    a, b = RingGeometry.gauss_legendre(9), RingGeometry.gauss_legendre(9)
    assert a is not b
    ra, rb = _worker.geometry_ref(a), _worker.geometry_ref(b)
    assert ra[1] == rb[1] and _worker.geometry(ra) is _worker.geometry(rb) is a
    other = _worker.geometry_ref(RingGeometry.gauss_legendre(10))
    assert other[1] != ra[1] and _worker.geometry(other) is not a
    assert _worker.geometry_ref(RingGeometry.healpix(4)) == ("healpix", 4)
    assert _worker.geometry(("healpix", 4)) is RingGeometry.healpix(4)
    made = []
    for i in range(_worker.KEEP + 1):                 # the least recently used goes first
        _worker.cached(("t", i), lambda i=i: made.append(i) or i)
    _worker.cached(("t", _worker.KEEP), lambda: made.append("again"))
    _worker.cached(("t", 0), lambda: made.append("again") or 0)
    assert made == list(range(_worker.KEEP + 1)) + ["again"]
    _worker.clear()


def test_tasks_of_one_grid_share_the_workers_geometry(client):
    g = RingGeometry.clenshaw_curtis(7)
    ref = _worker.geometry_ref(g)
    ids = client.gather([client.submit(lambda r: id(_worker.geometry(r)), ref, pure=False,
                                       workers=[w])
                         for w in sorted(client.scheduler_info()["workers"]) for _ in range(2)])
    # in-process workers share this process's cache: one object for all four tasks
    assert len(set(ids)) == 1
    # a convolution task's Parts arrive with a copy of their grid (pickled); they run on the
    # worker's own object, where the plans cached by grid are found again
    copy = pickle.loads(pickle.dumps(Parts(g, np.ones(3), None, "cpu", None)))
    assert copy.geometry is not g
    kept = dconv._kept(copy)
    assert kept.geometry is _worker.geometry(ref) and kept.bl is copy.bl


def test_on_device_needs_gpu_workers_and_futures_left_there(client, rng):
    alms = random_alm(rng, AlmLayout(6), k=2)
    with pytest.raises(ValueError, match="on_device"):
        sd.alm2map_many(alms, 2, client=client, on_device=True, gather=False)
    with pytest.raises(ValueError, match="on_device"):
        sd.to_workers(alms, client=client, on_device=True)
    with pytest.raises(TypeError, match="on_device"):
        sd.map2alm_many(np.zeros((2, 48)), client=client, on_device="yes", gather=False)
    with pytest.raises(ValueError, match="data"):
        sd.to_workers(alms[0], client=client)
    with pytest.raises(ValueError, match="geometry"):
        sd.anafast_many(sd.to_workers(np.zeros((2, 48)), client=client), client=client)


def test_warmup_runs_once_on_every_worker(client):
    warm._DONE.pop(client, None)
    first = sd.warmup(client, 4, steps=("sht",), batch=2, pol=True)
    assert sorted(first) == sorted(client.scheduler_info()["workers"])
    assert all(set(s) == {"sht"} for s in first.values())
    assert sd.warmup(client, 4, steps=("sht",), batch=2, pol=True) == {}      # all warm
    assert len(sd.warmup(client, 4, steps=("sht",), batch=2, pol=True, once=False)) == 2
    assert len(sd.warmup(client, 4, steps=("sht",), batch=3, pol=True)) == 2  # other sizes
    with pytest.raises(TypeError, match="pol"):
        sd.warmup(client, 4, pol="yes")
    with pytest.raises(ValueError, match="batch"):
        sd.warmup(client, 4, batch=0)
    with pytest.raises(ValueError, match="cost_model"):
        sd.warmup(client, steps=("cost_model",))


def test_warmup_of_batches_and_polarized_sets_runs_those_transforms(monkeypatch):
    """sphgpu.warmup(pol=True, batch=k) runs the transforms at the shapes a run will use."""
    import sphgpu.sht as sht
    from sphgpu.warmup import warmup

    seen = []
    real = sht.map2alm

    def spy(maps, *a, pol=True, **kw):
        seen.append((np.shape(maps), pol))
        return real(maps, *a, pol=pol, **kw)

    monkeypatch.setattr(sht, "map2alm", spy)
    warmup(2, steps=("sht",), batch=4, pol=True, backend="cpu", progress=False)
    assert seen == [((48,), True), ((4, 48), False), ((3, 48), True), ((4, 3, 48), True)]
