"""A Dask worker killed at any moment of a distributed pair count costs time, never the
result or a traceback: sphgpu.distributed.pair_counts and pair_counts_many with a process
worker SIGKILLed at several delays after the call begins (during the scatter of the catalogs,
the counting tasks, or the gathering), on CPU workers. (A broadcast scatter to a worker that
died once raised ``KeyError: 'tcp://...'``.)"""

import numpy as np
import pytest

import sphgpu.distributed as sd
from sphgpu.tpacf import AngularBins, Catalog, pair_counts

from .test_faults import TimedKill, quick_regather  # noqa: F401 (fixture)

BINS = AngularBins.log(0.05, 3.0, 6)


def _cats(n, seed):
    rng = np.random.default_rng(seed)
    ra = rng.uniform(0, 40, n)
    dec = np.rad2deg(np.arcsin(rng.uniform(np.sin(np.deg2rad(-20)), np.sin(np.deg2rad(20)), n)))
    return Catalog(ra, dec, labels=(ra // 10).astype(np.int64))


@pytest.fixture(scope="module")
def catalogs():
    d, r1, r2 = _cats(6000, 1), _cats(7000, 2), _cats(5000, 3)
    want = {"auto": pair_counts(d, bins=BINS, backend="cpu"),
            "cross": pair_counts(d, r1, bins=BINS, backend="cpu"),
            "many": [pair_counts(d, r, bins=BINS, backend="cpu") for r in (r1, r2)]}
    return d, r1, r2, want


def _same(got, want):
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(got.patch_counts, want.patch_counts)
    assert got.total == want.total


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_pair_counts_survive_a_worker_killed_at_any_moment(fresh_process_client, catalogs,
                                                           quick_regather, delay):
    client = fresh_process_client
    d, r1, r2, want = catalogs
    client.wait_for_workers(2, timeout=60)
    landed = []
    with TimedKill(client, delay) as k:
        got_auto = sd.pair_counts(d, bins=BINS, client=client, backend="cpu")
        got_cross = sd.pair_counts(d, r1, bins=BINS, client=client, backend="cpu")
    landed.append(k.landed)
    _same(got_auto, want["auto"])
    _same(got_cross, want["cross"])
    with TimedKill(client, delay) as k:
        many = sd.pair_counts_many(d, [r1, r2], bins=BINS, client=client, backend="cpu")
    landed.append(k.landed)
    for g, w in zip(many, want["many"]):
        _same(g, w)
    assert any(landed)                 # the kill fell inside at least one of the calls
