"""A Dask worker killed at any moment of a distributed pair count costs time, never the
result or a traceback: sphgpu.distributed.pair_counts and pair_counts_many with a process
worker SIGKILLed at several delays after the call begins (during the scatter of the catalogs,
the counting tasks, or the gathering), on CPU workers. (A broadcast scatter to a worker that
died once raised ``KeyError: 'tcp://...'``.)"""

import numpy as np
import pytest

import sphgpu.distributed as sd
from sphgpu.tpacf import AngularBins, Catalog, pair_counts

from .test_faults import TimedKill, lasting, quick_regather  # noqa: F401 (fixture)

BINS = AngularBins.log(0.05, 3.0, 6)


def _cats(n, seed):
    rng = np.random.default_rng(seed)
    ra = rng.uniform(0, 40, n)
    dec = np.rad2deg(np.arcsin(rng.uniform(np.sin(np.deg2rad(-20)), np.sin(np.deg2rad(20)), n)))
    return Catalog(ra, dec, labels=(ra // 10).astype(np.int64))


def _three(n):
    """The data and two random catalogs of about ``n`` points each."""
    return _cats(n, 1), _cats(n + n // 6, 2), _cats(n - n // 6, 3)


def _same(got, want):
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(got.patch_counts, want.patch_counts)
    assert got.total == want.total


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_pair_counts_survive_a_worker_killed_at_any_moment(fresh_process_client,
                                                           quick_regather, delay):
    client = fresh_process_client
    client.wait_for_workers(2, timeout=60)

    def split(n):
        d, r1, _ = _three(n)
        return (sd.pair_counts(d, bins=BINS, client=client, backend="cpu"),
                sd.pair_counts(d, r1, bins=BINS, client=client, backend="cpu"))

    # catalogs large enough that the two split counts outlast the latest kill three times
    # over, timed on workers that have compiled their counting code; the undisturbed counts
    # are the baseline (the split counts equal the serial ones: test_tpacf.py)
    split(500)
    n, (auto, cross) = lasting("tpacf split counts", split, 32000, seconds=2.4, most=2**22,
                               grow=1.4)           # the work grows as n**2
    d, r1, r2 = _three(n)
    want = {"auto": auto, "cross": cross, "many": [cross, pair_counts(d, r2, bins=BINS,
                                                                      backend="cpu")]}
    with TimedKill(client, delay) as k:
        got_auto = sd.pair_counts(d, bins=BINS, client=client, backend="cpu")
        got_cross = sd.pair_counts(d, r1, bins=BINS, client=client, backend="cpu")
    assert k.landed, "the kill came after the calls: make the catalogs larger"
    _same(got_auto, want["auto"])
    _same(got_cross, want["cross"])
    with TimedKill(client, delay) as k:
        many = sd.pair_counts_many(d, [r1, r2], bins=BINS, client=client, backend="cpu")
    for g, w in zip(many, want["many"]):
        _same(g, w)
