"""sphgpu.distributed.read_maps: FITS maps read by the workers, never through the client.

Each future holds what sphgpu.io.read_map returns for its file, bit for bit; the reads run in
tasks on the workers (spread over both), not in this process and not through a scatter; the
futures feed map2alm_many and anafast_many (polarized sets with pol=True) with the serial
transforms' results; bad files raise at result time naming the file, bad arguments here before
anything is submitted; a read whose worker is gone runs on another one. CPU workers in this
process (the spies below see their calls), and process workers for the killed worker.
"""

import os
import pathlib
import signal
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sphgpu  # noqa: E402
import sphgpu.distributed as sd  # noqa: E402
from sphgpu.distributed import maps_on_workers as mow  # noqa: E402
from sphgpu.io import maps as io_maps  # noqa: E402
from sphgpu.io import read_map, write_map  # noqa: E402
from sphgpu.testing import TOL, random_map, rel_err  # noqa: E402

NSIDE, LMAX = 4, 8
UNSEEN = -1.6375e30
G = sphgpu.RingGeometry.healpix(NSIDE)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small FITS maps: four single-field ones (float64, float32, a NESTED file, one with
    UNSEEN pixels) and two I, Q, U files, with the arrays written."""
    folder = tmp_path_factory.mktemp("maps")
    rng = np.random.default_rng(42)
    single = random_map(rng, NSIDE, k=4)
    single[3, ::7] = UNSEEN
    pol = random_map(rng, NSIDE, k=6).reshape(2, 3, -1)
    paths = [str(folder / f"t{i}.fits") for i in range(4)]
    write_map(paths[0], single[0])
    write_map(paths[1], single[1], dtype=np.float32)
    write_map(paths[2], single[2], nest=True)      # the file NESTED: read back to RING
    write_map(paths[3], single[3])
    pol_paths = [str(folder / f"iqu{i}.fits") for i in range(2)]
    for p, m in zip(pol_paths, pol):
        write_map(p, m)
    return dict(single=paths, pol=pol_paths, folder=folder)


@pytest.fixture
def reads(monkeypatch):
    """Where sphgpu.io.read_map ran: the address of the worker, or "client" (in-process
    workers share this module, so the spy sees their calls)."""
    seen = []
    real = io_maps.read_map

    def spy(filename, *args, **kw):
        try:
            seen.append((distributed.get_worker().address, os.path.basename(filename)))
        except ValueError:
            seen.append(("client", os.path.basename(filename)))
        return real(filename, *args, **kw)

    monkeypatch.setattr(io_maps, "read_map", spy)
    return seen


def _addresses(client):
    return sorted(client.scheduler_info()["workers"])


def test_futures_hold_read_map_bit_for_bit(client, files):
    paths = files["single"]
    futs = sd.read_maps(paths, client=client, backend="cpu")
    assert isinstance(futs, list) and len(futs) == len(paths)
    for f, p in zip(futs, paths):
        got, want = f.result(), read_map(p)
        assert got.dtype == want.dtype and got.shape == (12 * NSIDE ** 2,)
        np.testing.assert_array_equal(got, want)
    assert futs[1].result().dtype == np.float32       # the column's type, as read_map
    # every option read_map takes here, pathlib paths, and one path -> one future
    kw = dict(field=("Q_POLARISATION", 2), dtype=np.float32, nest=True, hdu="xtension")
    fut = sd.read_maps(pathlib.Path(files["pol"][0]), client=client, backend="cpu", **kw)
    assert isinstance(fut, distributed.Future)
    got, want = fut.result(), read_map(files["pol"][0], **kw)
    assert got.dtype == want.dtype == np.float32 and got.shape == (2, 12 * NSIDE ** 2)
    np.testing.assert_array_equal(got, want)
    for p, f in zip(files["pol"], sd.read_maps(files["pol"], field=None, nest=None,
                                               client=client, backend="cpu")):
        np.testing.assert_array_equal(f.result(), read_map(p, field=None, nest=None))
    # a relative path is the client's working directory's
    here = os.getcwd()
    try:
        os.chdir(files["folder"])
        [f] = sd.read_maps(["t0.fits"], client=client, backend="cpu")
    finally:
        os.chdir(here)
    np.testing.assert_array_equal(f.result(), read_map(paths[0]))


def test_the_workers_read_and_nothing_passes_through_the_client(client, files, reads,
                                                                monkeypatch):
    def no_scatter(*args, **kwargs):
        raise AssertionError("read_maps scattered data from the client")

    monkeypatch.setattr(client, "scatter", no_scatter)
    monkeypatch.setattr(client, "gather", no_scatter)
    paths = files["single"]
    futs = sd.read_maps(paths, client=client, backend="cpu")
    distributed.wait(futs, timeout=60)
    assert all(f.status == "finished" for f in futs)
    # keys of read tasks (a scatter's keys are the data's type and a token: "ndarray-...")
    assert all(isinstance(f.key, tuple) and f.key[0].startswith("sphgpu-read-map-")
               for f in futs)
    spec = client.run_on_scheduler(
        lambda dask_scheduler, keys: [dask_scheduler.tasks[k].run_spec is not None
                                      for k in keys], keys=[f.key for f in futs])
    assert all(spec)                 # computed by a task the scheduler can run again
    # read on the workers, each file once, evenly over both workers
    assert all(where != "client" for where, _ in reads)
    assert sorted(name for _, name in reads) == sorted(os.path.basename(p) for p in paths)
    holders = client.who_has(futs)
    per_worker = {}
    for f, (where, name) in zip(futs, sorted(reads, key=lambda r: r[1])):
        assert list(holders[f.key]) == [where]            # kept by the worker that read it
        per_worker[where] = per_worker.get(where, 0) + 1
    assert sorted(per_worker) == _addresses(client)
    assert sorted(per_worker.values()) == [2, 2]


def test_futures_feed_map2alm_many_and_anafast_many(client, files):
    paths = files["single"]
    futs = sd.read_maps(paths, client=client, backend="cpu")
    maps = np.stack([read_map(p) for p in paths])           # float32 and UNSEEN too
    want = sphgpu.map2alm(maps, LMAX, iter=1, pol=False, backend="cpu")
    got = sd.map2alm_many(futs, LMAX, iter=1, geometry=G, client=client, backend="cpu")
    assert got.shape == want.shape
    assert rel_err(got, want) <= TOL["distributed"]
    cls = sd.anafast_many(futs, LMAX, iter=1, geometry=G, client=client, backend="cpu")
    want_cl = np.stack([sphgpu.anafast(m, lmax=LMAX, iter=1, backend="cpu") for m in maps])
    assert rel_err(cls, want_cl) <= TOL["distributed"]


def test_polarized_files_are_polarized_sets_with_pol(client, files):
    paths = files["pol"]
    iqu = np.stack([read_map(p, field=(0, 1, 2)) for p in paths])       # (2, 3, npix)
    futs = sd.read_maps(paths, field=(0, 1, 2), pol=True, client=client, backend="cpu")
    for f, m in zip(futs, iqu):
        got = f.result()
        assert got.shape == (1, 3, 12 * NSIDE ** 2)
        np.testing.assert_array_equal(got[0], m)
    want = np.stack([sphgpu.map2alm(m, LMAX, iter=2, backend="cpu") for m in iqu])  # pol=True
    got = sd.map2alm_many(futs, LMAX, iter=2, geometry=G, client=client, backend="cpu")
    assert got.shape == (2, 3, LMAX * (LMAX + 3) // 2 + 1)
    assert rel_err(got, want) <= TOL["distributed"]
    cls = sd.anafast_many(futs, LMAX, iter=2, geometry=G, client=client, backend="cpu")
    want_cl = np.stack([sphgpu.anafast(m, lmax=LMAX, iter=2, backend="cpu") for m in iqu])
    assert cls.shape == (2, 6, LMAX + 1)
    assert rel_err(cls, want_cl) <= TOL["distributed"]
    # without pol, (3, npix) is read_map's shape: three temperature maps
    plain = sd.read_maps(paths, field=(0, 1, 2), client=client, backend="cpu")
    t = sd.map2alm_many(plain, LMAX, iter=0, geometry=G, client=client, backend="cpu")
    assert rel_err(t, sphgpu.map2alm(iqu.reshape(6, -1), LMAX, iter=0, pol=False,
                                     backend="cpu")) <= TOL["distributed"]


def test_bad_files_raise_at_result_time_naming_the_file(client, files, tmp_path):
    missing = str(tmp_path / "nowhere.fits")
    futs = sd.read_maps([files["single"][0], missing], client=client, backend="cpu")
    np.testing.assert_array_equal(futs[0].result(), read_map(files["single"][0]))
    with pytest.raises(FileNotFoundError, match=r"filenames\[1\].*nowhere\.fits.*shared"):
        futs[1].result()
    with pytest.raises(FileNotFoundError, match="nowhere.fits"):
        sd.map2alm_many(futs, LMAX, geometry=G, client=client, backend="cpu")
    t0 = os.path.basename(files["single"][0])
    for field, kind in ((1, ValueError), ("NOPE", ValueError)):
        f = sd.read_maps(files["single"][0], field=field, client=client, backend="cpu")
        with pytest.raises(kind, match=rf"filenames.*{t0}.*field"):
            f.result()
    # not a FITS file; pol=True on a file of one field
    junk = tmp_path / "junk.fits"
    junk.write_bytes(b"not fits at all" * 300)
    with pytest.raises(ValueError, match=r"filenames\[0\].*junk\.fits"):
        sd.read_maps([junk], client=client, backend="cpu")[0].result()
    with pytest.raises(ValueError, match=rf"filenames.*{t0}.*pol=True.*1 field"):
        sd.read_maps(files["single"][0], field=None, pol=True, client=client,
                     backend="cpu").result()


@pytest.mark.parametrize("kwargs,kind,match", [
    (dict(filenames=[]), ValueError, "filenames is empty"),
    (dict(filenames=()), ValueError, "filenames is empty"),
    (dict(filenames=3), TypeError, "filenames must be a path"),
    (dict(filenames=b"a.fits"), TypeError, "filenames must be a path"),
    (dict(filenames=["a.fits", 3]), TypeError, r"filenames\[1\] must be a path"),
    (dict(filenames=["a.fits", ""]), ValueError, r"filenames\[1\] is an empty path"),
    (dict(field=1.0), TypeError, "field"),
    (dict(field=True), TypeError, "field"),
    (dict(field=-1), ValueError, "field must be >= 0"),
    (dict(field=[]), ValueError, "field is an empty sequence"),
    (dict(field=(0, None)), TypeError, r"field\[1\]"),
    (dict(dtype="complex128"), TypeError, "dtype"),
    (dict(dtype="no such type"), TypeError, "dtype"),
    (dict(nest="yes"), TypeError, "nest"),
    (dict(partial=1), TypeError, "partial"),
    (dict(hdu=1.0), TypeError, "hdu"),
    (dict(hdu=-1), ValueError, "hdu"),
    (dict(pol=True), ValueError, "pol=True.*names 1"),
    (dict(pol=True, field=(0, 1)), ValueError, "pol=True.*names 2"),
    (dict(on_device=True), ValueError, "on_device=True"),
    (dict(on_device="yes"), TypeError, "on_device"),
    (dict(backend="cuda"), sd.NoGPUWorkerError, "GPU"),
    (dict(backend="nope"), ValueError, "nope"),
])
def test_bad_arguments_raise_here_before_anything_is_submitted(client, files, monkeypatch,
                                                               kwargs, kind, match):
    def no_submit(*args, **kw):
        raise AssertionError("submitted before the arguments were checked")

    monkeypatch.setattr(client, "submit", no_submit)
    kwargs = {"filenames": files["single"][:1], "backend": "cpu", **kwargs}
    with pytest.raises(kind, match=match):
        sd.read_maps(client=client, **kwargs)


def test_a_read_pinned_to_a_worker_that_left_runs_on_another(client, files, monkeypatch):
    # the worker chosen for the reads is gone by the time the scheduler places them (an
    # address no worker has): a strict pin would leave them waiting for ever
    monkeypatch.setattr(mow, "_read_targets", lambda c, r: ["tcp://127.0.0.1:9"])
    futs = sd.read_maps(files["single"][:2], client=client, backend="cpu")
    for f, p in zip(futs, files["single"]):
        np.testing.assert_array_equal(f.result(timeout=60), read_map(p))


def test_a_map_lost_with_its_worker_is_read_again(fresh_process_client, files):
    c = fresh_process_client
    paths = files["single"][:2]
    futs = sd.read_maps(paths, client=c, backend="cpu")
    distributed.wait(futs, timeout=60)
    holders = c.who_has(futs)
    assert len({w for f in futs for w in holders[f.key]}) == 2       # one on each worker
    [victim] = holders[futs[0].key]
    pid = c.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while victim in c.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert victim not in c.scheduler_info()["workers"]
    maps = np.stack([read_map(p) for p in paths])
    got = sd.map2alm_many(futs, LMAX, iter=1, geometry=G, client=c, backend="cpu")
    assert rel_err(got, sphgpu.map2alm(maps, LMAX, iter=1, pol=False, backend="cpu")) \
        <= TOL["distributed"]
    np.testing.assert_array_equal(futs[0].result(timeout=60), maps[0])


@pytest.mark.gpu
def test_on_device_reads_onto_the_workers_gpus(files):
    if not sd.visible_gpus():
        pytest.skip("no GPU visible")
    c = sd.local_cluster(gpus="all", dashboard_address=":0")
    try:
        futs = sd.read_maps(files["pol"], field=(0, 1, 2), pol=True, on_device=True, client=c)
        kinds = c.gather([c.submit(lambda m: type(m).__module__, f) for f in futs])
        assert all(k.startswith("cupy") for k in kinds)
        iqu = np.stack([read_map(p, field=(0, 1, 2)) for p in files["pol"]])
        for f, m in zip(futs, iqu):
            np.testing.assert_array_equal(f.result().get()[0], m)
        # device maps in, device a_lm out: a list of CuPy arrays, one (1, 3, nalm) a file
        got = sd.map2alm_many(futs, LMAX, iter=2, geometry=G, client=c)
        assert all(type(a).__module__.startswith("cupy") for a in got)
        got = np.concatenate([a.get() for a in got])
        want = np.stack([sphgpu.map2alm(m, LMAX, iter=2, backend="cpu") for m in iqu])
        assert rel_err(got, want) <= TOL["vs_ducc0"]
    finally:
        c.shutdown()
        c.close()
