"""A worker killed in the middle of a batch: the result is still complete and identical; a
task that keeps killing workers raises instead of returning part of the batch.

Process workers (a killed worker takes only its own process down; its Nanny restarts it). The
kill comes from a worker plugin when a chosen task starts, so it lands mid-batch every time,
or from a timer in this process (SIGKILL) at a set delay after the call begins: during the
scatter of the inputs, the tasks, or the gathering of the results.
"""

import os
import signal
import threading
import time

import dask
import numpy as np
import pytest
from distributed import KilledWorker, WorkerPlugin

import sphgpu
import sphgpu.distributed as sd
from sphgpu import AlmLayout
from sphgpu.distributed import cluster

from sphgpu.testing import TOL, random_alm, random_map, rel_err


def _killer(flag, index, once, prefix="sphgpu-synthesis"):
    """A worker plugin (defined here, so it is sent by value) that ends its worker's process
    when the task ``(prefix..., index)`` (batch item ``index`` of a synthesis, by default), or
    the task whose key starts with ``f"{prefix}-{index}-"`` (a Monte Carlo batch), starts:
    once (guarded by the file ``flag``), or every time."""

    class Killer(WorkerPlugin):
        def transition(self, key, start, finish, **kwargs):
            if finish != "executing":
                return
            if isinstance(key, tuple):
                hit = str(key[0]).startswith(prefix) and key[1] == index
            else:
                hit = str(key).startswith(f"{prefix}-{index}-")
            if hit:
                if once and os.path.exists(flag):
                    return
                open(flag, "a").close()
                os._exit(1)

    return Killer()


def _worker_pids(client, n=2):
    """{address: pid} of the ``n`` workers, once all are up again after an earlier kill."""
    deadline = time.monotonic() + 60
    while True:
        try:
            client.wait_for_workers(n, timeout=60)
            pids = client.run(os.getpid)
            if len(pids) == n:
                return pids
        except OSError:             # a worker died or left between the two questions
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


class TimedKill:
    """``with TimedKill(client, delay):`` SIGKILLs one worker process ``delay`` seconds after
    the block begins; ``landed`` says whether that was before the block ended."""

    def __init__(self, client, delay):
        pids = _worker_pids(client)
        self.pid = pids[sorted(pids)[0]]
        self.at = self.end = None
        self.timer = threading.Timer(delay, self._kill)

    def _kill(self):
        self.at = time.monotonic()
        os.kill(self.pid, signal.SIGKILL)

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.end = time.monotonic()
        self.timer.join()

    @property
    def landed(self):
        return self.at is not None and self.at < self.end


_SIZES = {}      # what: the size lasting() found, so that each test after the first runs once


def lasting(what, run, size, seconds=3.0, most=2**14, grow=2.0):
    """(size, run(size)) with ``size`` doubled until one run takes ``seconds``: long enough
    for a kill after 1 s to land inside the call, on any machine. Three times the longest
    delay: the size found is reused by later tests, whose calls can run twice as fast (a
    quieter machine, workers that kept their transform plans); 1.4 s once let a call end
    before the kill. ``size`` grows ``grow`` times a step, up to ``most``."""
    size = _SIZES.get(what, size)
    while True:
        t0 = time.monotonic()
        out = run(size)
        if time.monotonic() - t0 >= seconds or size >= most:
            _SIZES[what] = size
            return size, out
        size = int(size * grow)


@pytest.fixture
def quick_regather(monkeypatch):
    """A gather caught on a killed worker is asked again after 1 s (5 s by default), so
    that the unlucky timing costs a test 1 s."""
    monkeypatch.setattr(cluster, "GATHER_TIMEOUT", 1.0, raising=False)


@pytest.fixture(scope="module")
def process_client():
    # allowed-failures: a task may see one worker die under it and still be retried once more
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        c = sd.local_cluster(gpus=0, cpu_workers=2, threads_per_worker=1, processes=True,
                             dashboard_address=":0")
    yield c
    c.shutdown()
    c.close()


def test_worker_killed_mid_batch_leaves_the_result_complete(process_client, tmp_path, rng):
    layout = AlmLayout(24)
    alms = random_alm(rng, layout, k=8)
    want = sphgpu.alm2map(alms, 8, pol=False, backend="cpu")
    flag = str(tmp_path / "killed")
    process_client.register_plugin(_killer(flag, 3, once=True), name="killer")
    try:
        got = sd.alm2map_many(alms, 8, client=process_client)
    finally:
        process_client.unregister_worker_plugin("killer")
    assert os.path.exists(flag)                      # a worker really died mid-batch
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]


def test_a_task_that_keeps_killing_workers_raises(process_client, tmp_path, rng):
    layout = AlmLayout(12)
    alms = random_alm(rng, layout, k=4)
    process_client.register_plugin(_killer(str(tmp_path / "k"), 2, once=False), name="killer")
    try:
        # KilledWorker when the task dies on workers that did not hold its input; else its
        # input dies with it, and sphgpu gives up after ATTEMPTS rounds
        with pytest.raises((KilledWorker, sd.WorkersLostError)):
            sd.alm2map_many(alms, 4, client=process_client)
    finally:
        process_client.unregister_worker_plugin("killer")
    process_client.wait_for_workers(2, timeout=60)
    # the cluster recovers and the same call now succeeds
    got = sd.alm2map_many(alms, 4, client=process_client)
    assert rel_err(got, sphgpu.alm2map(alms, 4, pol=False, backend="cpu")) <= TOL["distributed"]


def test_worker_killed_in_a_split_convolution_leaves_it_complete(process_client, tmp_path,
                                                                   rng):
    """The worker of one latitude band dies as the band starts: the convolution is sent and
    run again, complete and equal to the serial one."""
    from sphgpu.convolve import RadialKernel, convolve

    process_client.wait_for_workers(2, timeout=60)
    k = RadialKernel.gaussian(600.0, 16)
    m = random_map(rng, 8)
    kw = dict(method="split", l_cut=6, theta_cut=0.5)
    want = convolve(m, k, backend="cpu", **kw)
    flag = str(tmp_path / "killed")
    process_client.register_plugin(_killer(flag, 1, once=True, prefix="sphgpu-band"),
                                   name="killer")
    try:
        got = sd.convolve(m, k, client=process_client, nbands=3, **kw)
    finally:
        process_client.unregister_worker_plugin("killer")
    assert os.path.exists(flag)
    assert rel_err(got, want) <= TOL["distributed"]


@pytest.mark.parametrize("prefix, index", [("sphgpu-synthesis", 0),
                                           ("sphgpu-synthesis", 7),
                                           ("sphgpu-analysis", 4)])
def test_a_worker_killed_as_a_task_starts_costs_no_map(fresh_process_client, tmp_path, rng,
                                                       quick_regather, prefix, index):
    """The first, the last or a middle item of a batch: its worker dies as it starts (its
    scattered input dies with it); the result is complete and equal to an undisturbed run."""
    client = fresh_process_client
    layout = AlmLayout(24)
    alms = random_alm(rng, layout, k=8)
    maps = sphgpu.alm2map(alms, 8, pol=False, backend="cpu")
    if prefix == "sphgpu-synthesis":
        call = lambda: sd.alm2map_many(alms, 8, client=client)                  # noqa: E731
    else:
        call = lambda: sd.map2alm_many(maps, 24, iter=1, client=client)         # noqa: E731
    want = call()
    flag = str(tmp_path / "killed")
    client.register_plugin(_killer(flag, index, once=True, prefix=prefix), name="killer")
    got = call()
    assert os.path.exists(flag)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.5, 1.0])
def test_a_worker_killed_at_any_moment_of_a_batch_costs_time_only(fresh_process_client,
                                                                 quick_regather, delay):
    """SIGKILL after 0 s (as the inputs are scattered: the scheduler's KeyError for a worker
    that left had ended the call), 0.1, 0.5 or 1 s of a synthesis batch: the maps are all
    there and equal to an undisturbed run's."""
    client = fresh_process_client
    layout = AlmLayout(64)
    batch = lambda k: random_alm(np.random.default_rng(5), layout, k=k)          # noqa: E731
    k, want = lasting("synthesis", lambda k: sd.alm2map_many(batch(k), 32, client=client),
                      128)
    with TimedKill(client, delay) as kill:
        got = sd.alm2map_many(batch(k), 32, client=client)
    assert kill.landed, "the kill came after the call: make the batch longer"
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("pattern", ["m", "rings"])
def test_one_split_transform_survives_a_killed_worker(fresh_process_client, rng,
                                                      quick_regather, pattern):
    """A worker killed as one transform split over the workers starts (the rings pattern
    had broadcast its a_lm, and Dask's broadcast retries a dead worker without end)."""
    layout = AlmLayout(96)
    alm = random_alm(rng, layout, k=2)
    want = sphgpu.alm2map(alm, 48, pol=False, backend="cpu")
    with TimedKill(fresh_process_client, 0.0) as kill:
        got = sd.alm2map(alm, 48, pol=False, client=fresh_process_client, pattern=pattern,
                         nchunks=8)
    assert kill.landed
    assert rel_err(got, want) <= TOL["distributed"]


# ----------------------------------------------------------------------------- the mechanisms
class _Future:
    """A stand-in for a distributed.Future: ``result(timeout)`` plays ``script`` in turn."""

    def __init__(self, *script):
        self.script, self.timeouts = list(script), []

    def cancelled(self):
        return False

    def result(self, timeout=None):
        self.timeouts.append(timeout)
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step


def test_result_asks_again_a_gather_caught_on_a_dead_worker(monkeypatch):
    """A gather that began as its worker died waits out the connect timeout (30 s): it is cut
    and asked again, each time allowed twice as long; a cancelled future is LOST."""
    from distributed.client import FutureCancelledError

    monkeypatch.setattr(cluster, "GATHER_TIMEOUT", 0.5)
    f = _Future(TimeoutError(), TimeoutError(), "maps")
    assert cluster.result(f) == "maps" and f.timeouts == [0.5, 1.0, 2.0]
    lost = _Future(FutureCancelledError(key="x", reason="lost dependencies"))
    assert cluster.result(lost) is cluster.LOST
    with pytest.raises(ZeroDivisionError):                  # the task's own error
        cluster.result(_Future(ZeroDivisionError()))


class _Client:
    """Scatter fails with ``errors`` in turn, then succeeds."""

    def __init__(self, *errors):
        self.errors, self.calls = list(errors), []

    def scatter(self, data, workers=None, hash=True, direct=None):
        self.calls.append(list(workers))
        if self.errors:
            raise self.errors.pop(0)
        return ["future"]


def test_scatter_tries_again_when_a_listed_worker_has_left(monkeypatch):
    """The scheduler's KeyError naming a worker that left between listing and scattering."""
    listed = iter([["tcp://a", "tcp://b"], ["tcp://b"]])
    monkeypatch.setattr(cluster, "eligible_workers", lambda client, res: next(listed))
    monkeypatch.setattr(time, "sleep", lambda s: None)
    c = _Client(KeyError("tcp://a"))
    assert cluster.scatter(c, [1]) == ["future"] and c.calls == [["tcp://a", "tcp://b"],
                                                                   ["tcp://b"]]
    # a KeyError of anything else is not a departed worker: raised as it is
    monkeypatch.setattr(cluster, "eligible_workers", lambda client, res: ["tcp://a"])
    with pytest.raises(KeyError, match="'x'"):
        cluster.scatter(_Client(KeyError("x")), [1])
    with pytest.raises(sd.WorkersLostError, match="3 times"):
        cluster.scatter(_Client(*[KeyError("tcp://a")] * 3), [1])
