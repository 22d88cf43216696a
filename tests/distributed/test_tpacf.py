"""Distributed pair counts equal the serial ones as integers (CPU workers in this process)."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sphgpu.distributed as sd  # noqa: E402
from sphgpu.testing import TOL  # noqa: E402
from sphgpu.tpacf import AngularBins, pair_counts  # noqa: E402
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms  # noqa: E402

BINS = AngularBins.log(0.05, 20, 8, unit="deg")


def _same(a, b):
    np.testing.assert_array_equal(a.counts, b.counts)
    assert (a.n1, a.n2, a.auto) == (b.n1, b.n2, b.auto) and a.total == b.total
    for name in ("weights", "region_counts", "region_total", "patch_counts", "patch_total",
                 "mean_theta"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=TOL["pair_sums_rtol"])


@pytest.mark.parametrize("nchunks", [1, 3])
def test_auto_and_cross_counts_equal_the_serial_counts(client, nchunks):
    ra, dec = clustered_catalog(700, seed=3)
    rra, rdec = uniform_randoms(900, seed=4)
    labels = (np.arange(ra.size) % 5).astype(np.int64)
    rlabels = (np.arange(rra.size) % 5).astype(np.int64)
    w = np.linspace(0.5, 1.5, ra.size)
    for kw in ({}, {"labels1": labels}, {"weights1": w, "mean_theta": True}):
        want = pair_counts(ra, dec, bins=BINS, backend="cpu", **kw)
        got = sd.pair_counts(ra, dec, bins=BINS, nchunks=nchunks, client=client, **kw)
        _same(got, want)
    want = pair_counts(ra, dec, rra, rdec, bins=BINS, labels1=labels, labels2=rlabels,
                       backend="cpu")
    got = sd.pair_counts(ra, dec, rra, rdec, bins=BINS, labels1=labels, labels2=rlabels,
                         nchunks=nchunks, client=client)
    _same(got, want)
    assert got.counts.sum() > 0


def test_several_random_catalogs_in_parallel(client):
    data = clustered_catalog(500, seed=5)
    randoms = [uniform_randoms(600, seed=s) for s in range(3)]
    drs = sd.pair_counts_many(data, randoms, bins=BINS, client=client)
    rrs = sd.pair_counts_many(None, randoms, bins=BINS, client=client)
    for r, dr, rr in zip(randoms, drs, rrs):
        _same(dr, pair_counts(*data, *r, bins=BINS, backend="cpu"))
        _same(rr, pair_counts(*r, bins=BINS, backend="cpu"))
    with pytest.raises(ValueError, match="others"):
        sd.pair_counts_many(data, [], bins=BINS, client=client)
    with pytest.raises(TypeError, match=r"others\[0\]"):
        sd.pair_counts_many(data, [np.zeros(3)], bins=BINS, client=client)


def test_random_catalogs_made_on_the_workers(client):
    data = clustered_catalog(400, seed=6)
    futs = [client.submit(uniform_randoms, 500, seed=s, pure=False) for s in range(2)]
    drs = sd.pair_counts_many(data, futs, bins=BINS, client=client)
    for f, dr in zip(futs, drs):
        _same(dr, pair_counts(*data, *f.result(), bins=BINS, backend="cpu"))


def test_data_sent_once_as_a_future(client):
    from sphgpu.tpacf import Catalog

    data = clustered_catalog(300, seed=7)
    randoms = [uniform_randoms(400, seed=s) for s in (8, 9)]
    d = client.scatter(Catalog(*data), broadcast=True, hash=False)
    for _ in range(2):                       # the second call reuses the workers' copies
        drs = sd.pair_counts_many(d, randoms, bins=BINS, client=client)
        for r, dr in zip(randoms, drs):
            _same(dr, pair_counts(*data, *r, bins=BINS, backend="cpu"))


def test_one_task_per_worker_and_catalogs_sent_once(client):
    """Several random catalogs cost one task per worker holding them, and Catalog objects are
    sent once: the next call finds them on the workers; a call with others releases them."""
    import distributed

    from sphgpu.distributed import tpacf as T
    from sphgpu.tpacf import Catalog

    data = Catalog(*clustered_catalog(300, seed=11))
    randoms = [Catalog(*uniform_randoms(350, seed=s)) for s in range(5)]
    with distributed.get_task_stream(client=client) as ts:
        first = sd.pair_counts_many(data, randoms, bins=BINS, client=client)
    counted = [t for t in ts.data if "count_group" in str(t["key"])]
    assert len(counted) == 2                         # two workers, five catalogs
    def keys():
        return [T._SENT[client][id(c)][2].key for c in [data, *randoms]]

    sent = keys()
    second = sd.pair_counts_many(data, randoms, bins=BINS, client=client)
    assert keys() == sent
    for r, a, b in zip(randoms, first, second):
        want = pair_counts(data.ra, data.dec, r.ra, r.dec, bins=BINS, backend="cpu")
        _same(a, want)
        _same(b, want)
    rr = sd.pair_counts_many(None, randoms[:2], bins=BINS, client=client)
    assert list(T._SENT[client]) == [id(c) for c in randoms[:2]]     # the rest released
    _same(rr[1], pair_counts(randoms[1].ra, randoms[1].dec, bins=BINS, backend="cpu"))


def test_a_closed_client_raises_the_transforms_clear_error():
    """Issue 19: a closed Client gave an AttributeError about `scatter` (pair_counts) or a
    ZeroDivisionError (pair_counts_many); now the ValueError of every distributed function."""
    from sphgpu.alm import AlmLayout

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    c.close()
    cluster.close()
    ra, dec = uniform_randoms(20, seed=1)
    calls = [lambda: sd.pair_counts(ra, dec, bins=BINS, client=c),
             lambda: sd.pair_counts_many((ra, dec), [(ra, dec)], bins=BINS, client=c),
             lambda: sd.alm2map_many([np.zeros(AlmLayout(4).size, complex)], 2, client=c)]
    messages = []
    for call in calls:
        with pytest.raises(ValueError, match="client is closed") as info:
            call()
        messages.append(str(info.value))
    assert len(set(messages)) == 1


def test_report_says_what_was_cut_sent_and_counted_where(client):
    from sphgpu.tpacf import Catalog

    ra, dec = uniform_randoms(3000, seed=8)
    cat = Catalog(ra, dec)
    got = []
    first = sd.pair_counts(cat, bins=BINS, nchunks=3, client=client, report=got.append)
    again = sd.pair_counts(cat, bins=BINS, nchunks=3, client=client, report=got.append)
    _same(first, pair_counts(ra, dec, bins=BINS, backend="cpu"))
    _same(again, first)
    new, kept = got
    workers = set(client.scheduler_info()["workers"])
    for steps in got:
        assert len(steps.stripes) == 3
        assert {st["worker"] for st in steps.stripes} <= workers
        assert all(0 <= st["start_s"] <= st["end_s"] <= steps.seconds + 0.1
                   for st in steps.stripes)
        assert steps.task_seconds == [st["seconds"] for st in steps.stripes]
    # a stripe holds its own points and its halo: every point once, some twice
    assert cat.size < sum(st["points"] for st in new.stripes) < 2 * cat.size
    # the first call cut and sent 16 bytes a point held; the second found the stripes there
    assert new.sent_bytes == 16 * sum(st["points"] for st in new.stripes)
    assert new.split_seconds > 0 and new.send_seconds > 0 and new.send_rate > 0
    assert (kept.sent_bytes, kept.split_seconds, kept.send_seconds) == (0, 0.0, 0.0)
    assert kept.send_rate is None
    with pytest.raises(TypeError, match="report must be a function"):
        sd.pair_counts(cat, bins=BINS, client=client, report="yes")
