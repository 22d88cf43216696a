"""The Dask form of the transforms: tasks ship an sphgpu.SHT plan (a small description) and
call its methods on the workers; inputs as futures, results left on the workers or reduced
there to spectra; one transfer per input, and the bytes and seconds moved reported. Every
result against the plain in-process call (CPU workers)."""

import pickle

import distributed
import numpy as np
import pytest

import sphgpu
import sphgpu.distributed as sd
from sphgpu import SHT, AlmLayout, RingGeometry
from sphgpu.distributed import sht as dsht
from sphgpu.distributed.sht import Transfer
from sphgpu.testing import TOL, random_alm, random_pol_alm, rel_err

NSIDE, LMAX = 8, 16


def _send(client, arrays):
    """Futures of ``arrays``, one each, under keys of their own (Dask's default keys hash the
    content, and equal content sent again right after its future was released may be
    forgotten with it)."""
    return client.scatter(list(arrays), hash=False)


@pytest.fixture
def plans_used(monkeypatch):
    """The descriptions of the plans whose alm2map and map2alm ran (in-process workers share
    this process's SHT class, so the spies see their calls)."""
    seen = []
    for method in ("alm2map", "map2alm"):
        real = getattr(SHT, method)

        def spy(self, data, *args, _real=real, _method=method, **kw):
            seen.append((_method, self.description, np.shape(data)))
            return _real(self, data, *args, **kw)

        monkeypatch.setattr(SHT, method, spy)
    return seen


def test_tasks_ship_a_plan_and_call_its_methods(client, rng, plans_used):
    layout = AlmLayout(LMAX)
    alms = random_alm(rng, layout, k=3)
    want = sphgpu.alm2map(alms, NSIDE, lmax=LMAX, pol=False, backend="cpu")
    got = sd.alm2map_many(alms, NSIDE, LMAX, client=client, backend="cpu", maps_per_task=2)
    assert rel_err(got, want) <= TOL["distributed"]
    desc = (NSIDE, LMAX, LMAX, None, "cpu")
    assert sorted(plans_used) == [("alm2map", desc, (1, layout.size)),
                                  ("alm2map", desc, (2, layout.size))]
    plans_used.clear()
    back = sd.map2alm_many(want, LMAX, iter=1, client=client, backend="cpu")
    assert rel_err(back, sphgpu.map2alm(want, LMAX, iter=1, pol=False, backend="cpu")) \
        <= TOL["distributed"]
    assert sorted(plans_used) == [("map2alm", desc, (1, 12 * NSIDE ** 2))] * 3
    # what a task carries: the description, a few numbers, which rebuilds the same plan
    plan = dsht._plan(RingGeometry.healpix(NSIDE), layout, "cpu")
    blob = pickle.dumps(plan)
    assert len(blob) < 300
    again = pickle.loads(blob)
    assert isinstance(again, SHT) and again.description == desc
    assert pickle.loads(blob) is again            # kept once per process


def test_a_process_worker_rebuilds_the_plan_from_its_description(fresh_process_client, rng):
    """Across processes the plan is unpickled from its description on the workers, each
    keeping one plan for all the tasks (and calls) that ship it."""
    from sphgpu.sht import plan as plan_module

    c = fresh_process_client
    g = RingGeometry.gauss_legendre(12)           # a grid sent by its recipe, not by nside
    layout = AlmLayout(11, 9)
    alms = random_pol_alm(rng, layout, 2)
    want = sphgpu.alm2map(alms, lmax=11, mmax=9, geometry=g, backend="cpu")
    for _ in range(2):
        got = sd.alm2map_many(alms, lmax=11, mmax=9, geometry=g, client=c)
        assert rel_err(got, want) <= TOL["distributed"]
    desc = dsht._plan(g, layout, "cpu").description
    kept = c.run(lambda: [key for key in plan_module._REBUILT._items])
    assert any(keys == [desc] for keys in kept.values())
    assert all(keys in ([], [desc]) for keys in kept.values())


def test_futures_in_and_out_equal_the_plain_calls(client, rng):
    layout = AlmLayout(LMAX, 12)
    g = RingGeometry.healpix(NSIDE)
    alms = random_alm(rng, layout, k=4)
    maps = sphgpu.alm2map(alms, NSIDE, LMAX, 12, pol=False, backend="cpu")
    back = sphgpu.map2alm(maps, LMAX, 12, iter=2, pol=False, backend="cpu")
    # futures as client.scatter makes them, one set each; lmax=None reads their length
    futs = _send(client, list(alms))
    out = sd.alm2map_many(futs, NSIDE, mmax=12, client=client, gather=False)
    assert len(out) == 4 and all(isinstance(f, distributed.Future) for f in out)
    assert rel_err(np.stack(client.gather(out)), maps) <= TOL["distributed"]
    # maps left on the workers -> a_lm left there -> spectra back, nothing else
    alm_f = sd.map2alm_many(out, LMAX, 12, iter=2, geometry=g, client=client, gather=False)
    assert rel_err(np.stack(client.gather(alm_f)), back) <= TOL["distributed"]
    cl = sd.alm2cl_many(alm_f, LMAX, 12, client=client)
    assert cl.shape == (4, LMAX + 1)
    assert rel_err(cl, np.stack([sphgpu.alm2cl(a, lmax=LMAX, mmax=12) for a in back])) \
        <= TOL["distributed"]
    # polarized sets, a batch in one future
    teb = random_pol_alm(rng, layout, 2)
    [f] = _send(client, [teb])
    iqu = sd.alm2map_many([f], NSIDE, LMAX, 12, client=client)
    assert rel_err(iqu, sphgpu.alm2map(teb, NSIDE, LMAX, 12, backend="cpu")) \
        <= TOL["distributed"]


def test_unseen_pixels_of_futures_count_as_zero(client, rng):
    g = RingGeometry.healpix(NSIDE)
    maps = rng.standard_normal((2, g.npix))
    maps[:, 100:180] = sphgpu.UNSEEN
    want = sphgpu.map2alm(maps, LMAX, iter=1, pol=False, backend="cpu")
    got = sd.map2alm_many(_send(client, list(maps)), LMAX, iter=1, geometry=g, client=client)
    assert rel_err(got, want) <= TOL["distributed"]


def test_futures_holding_bad_arrays_raise_naming_them(client, rng):
    g = RingGeometry.healpix(4)
    good, short = random_alm(rng, AlmLayout(8)), random_alm(rng, AlmLayout(7))
    with pytest.raises(ValueError, match=r"alms\[1\] has shape \(36,\), but lmax=8, mmax=8 "
                                         r"needs 45"):
        sd.alm2map_many(_send(client, [good, short]), 4, 8, client=client)
    with pytest.raises(ValueError, match=r"maps\[0\] has shape \(2, 100\)"):
        sd.map2alm_many(_send(client, [np.zeros((2, 100))]), geometry=g, client=client)
    with pytest.raises(ValueError, match=r"alms\[0\] has shape \(2, 4, 45\)"):
        sd.alm2map_many(_send(client, [np.zeros((2, 4, 45), complex)]), 4, 8, client=client)
    with pytest.raises(TypeError, match=r"alms\[0\] must be complex"):
        sd.alm2map_many(_send(client, [np.zeros(45)]), 4, 8, client=client)
    with pytest.raises(TypeError, match=r"alms\[0\] holds str"):
        sd.alm2map_many(_send(client, ["not a_lm"]), 4, client=client)   # lmax asked of it
    nan = np.zeros(g.npix)
    nan[3] = np.nan
    [f] = _send(client, [nan])
    with pytest.raises(ValueError, match=r"maps contains NaN"):         # a single future
        sd.anafast_many(f, geometry=g, client=client)
    with pytest.raises(ValueError, match=r"alms\[0\] has shape \(45,\), but lmax=5"):
        sd.alm2cl_many(_send(client, [good]), 5, client=client)
    [gone] = _send(client, [good])
    client.cancel(gone)                     # the caller's future cannot be sent again
    with pytest.raises(sd.WorkersLostError, match=r"alms\[0\]: future\(s\) whose data"):
        sd.alm2map_many([gone], 4, 8, client=client)
    with pytest.raises(TypeError, match="report"):
        sd.alm2map_many(good, 4, client=client, report="print")


def test_one_transfer_per_input_and_the_bytes_reported(client, rng, monkeypatch):
    calls = []
    real = dsht._cluster.scatter
    monkeypatch.setattr(dsht._cluster, "scatter",
                        lambda c, data, res=None: calls.append(len(data)) or real(c, data, res))
    layout = AlmLayout(LMAX)
    alms = random_alm(rng, layout, k=5)
    reports = []
    maps = sd.alm2map_many(alms, NSIDE, client=client, maps_per_task=2, report=reports.append)
    assert calls == [3]                               # ceil(5 / 2) groups, one scatter
    [r] = reports
    assert isinstance(r, Transfer) and r.tasks == 3
    assert (r.sent_bytes, r.received_bytes) == (alms.nbytes, maps.nbytes)
    assert 0 < r.send_seconds <= r.seconds and 0 < r.receive_seconds <= r.seconds
    assert r.send_rate == pytest.approx(r.sent_bytes / r.send_seconds)
    assert r.rate == pytest.approx((alms.nbytes + maps.nbytes)
                                   / (r.send_seconds + r.receive_seconds))
    # futures in, results left there: nothing crosses this process
    futs = sd.to_workers(alms, client=client, per_future=2, report=reports.append)
    assert calls == [3, 3] and reports[1].sent_bytes == alms.nbytes
    left = sd.alm2map_many(futs, NSIDE, LMAX, client=client, gather=False,
                           report=reports.append)
    assert calls == [3, 3]
    assert (reports[2].sent_bytes, reports[2].received_bytes, reports[2].tasks) == (0, 0, 3)
    assert reports[2].rate is None
    # reduced on the workers: only the spectra come back
    cl = sd.anafast_many(left, LMAX, iter=0, geometry=RingGeometry.healpix(NSIDE),
                         client=client, report=reports.append)
    assert (reports[3].sent_bytes, reports[3].received_bytes) == (0, cl.nbytes)
    want = np.stack([sphgpu.anafast(m, lmax=LMAX, iter=0, backend="cpu") for m in maps])
    assert rel_err(cl, want) <= TOL["distributed"]


@pytest.mark.parametrize("pattern", ["m", "rings"])
def test_one_split_transform_reports_its_transfers(client, rng, pattern):
    layout = AlmLayout(LMAX)
    alm = random_pol_alm(rng, layout)
    reports = []
    got = sd.alm2map(alm, NSIDE, client=client, nchunks=3, pattern=pattern,
                     report=reports.append)
    assert rel_err(got, sphgpu.alm2map(alm, NSIDE, backend="cpu")) <= TOL["distributed"]
    back = sd.map2alm(got, LMAX, iter=1, client=client, nchunks=3, pattern=pattern,
                      report=reports.append)
    assert rel_err(back, sphgpu.map2alm(got, LMAX, iter=1, backend="cpu")) \
        <= TOL["distributed"]
    syn, ana = reports
    # m pattern: the a_lm go out as m chunks; rings: whole, once
    assert syn.sent_bytes == alm.nbytes and syn.received_bytes == got.nbytes
    assert ana.sent_bytes == got.nbytes and ana.received_bytes == back.nbytes
