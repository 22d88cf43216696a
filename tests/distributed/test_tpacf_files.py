"""Pair counts of catalogs on disk (CatalogFiles: .npy columns or a FITS table) read by the
workers: equal as integers to the counts of the same catalogs in memory, per region pair too,
whatever the blocks and stripes; bad files raise errors that name them. CPU workers in this
process (they share the module, so BLOCK_ROWS is set for them by monkeypatch)."""

import os

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sphgpu.distributed as sd  # noqa: E402
from sphgpu.distributed import partition  # noqa: E402
from sphgpu.distributed import tpacf as dt  # noqa: E402
from sphgpu.distributed.tpacf import CatalogFiles  # noqa: E402
from sphgpu.testing import TOL  # noqa: E402
from sphgpu.tpacf import AngularBins, JackknifeRegions, pair_counts  # noqa: E402
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms  # noqa: E402

FOOT = (0.0, 100.0, -60.0, 0.0)
BINS = AngularBins.log(2.5 / 60, 250 / 60, 8, unit="deg")


@pytest.fixture(scope="module")
def cats():
    ra, dec = clustered_catalog(6000, FOOT, seed=21)
    rra, rdec = uniform_randoms(7000, FOOT, seed=22)
    reg = JackknifeRegions.kmeans(rra, rdec, 110, seed=0)
    w = np.random.default_rng(23).uniform(0.5, 2.0, ra.size)
    w[::41] = 0.0
    return dict(ra=ra, dec=dec, lab=reg.labels(ra, dec), w=w, rra=rra, rdec=rdec,
                rlab=reg.labels(rra, rdec))


def _save(folder, **cols):
    out = {}
    for k, v in cols.items():
        out[k] = os.path.join(folder, f"{k}.npy")
        np.save(out[k], v)
    return out


def _same(a, b):
    assert (a.n1, a.n2, a.auto, a.n_regions) == (b.n1, b.n2, b.auto, b.n_regions)
    for name in ("counts", "patch_counts", "region_counts"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)
    for name in ("total", "weighted_total", "self_total", "weighted_self_total", "weights",
                 "patch_total", "patch_weighted_total", "patch_weights", "mean_theta"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=TOL["pair_sums_rtol"], err_msg=name)


@pytest.mark.parametrize("block_rows,nchunks", [(1000, 3), (2**22, 6)])
def test_npy_catalogs_count_as_in_memory(client, cats, tmp_path, monkeypatch, block_rows,
                                         nchunks):
    monkeypatch.setattr(dt, "BLOCK_ROWS", block_rows)
    c = cats
    p = _save(str(tmp_path), ra=c["ra"], dec=c["dec"], lab=c["lab"].astype(np.int32), w=c["w"],
              rra=c["rra"], rdec=c["rdec"], rlab=c["rlab"])
    data = CatalogFiles(p["ra"], p["dec"], weights=p["w"], labels=p["lab"])
    rand = CatalogFiles(p["rra"], p["rdec"], labels=p["rlab"])
    kw = dict(bins=BINS, client=client, backend="cpu", nchunks=nchunks)
    got = sd.pair_counts(data, mean_theta=True, **kw)
    _same(got, pair_counts(c["ra"], c["dec"], bins=BINS, labels1=c["lab"], weights1=c["w"],
                           mean_theta=True, backend="cpu"))
    assert got.n_regions == 110 and got.counts.sum() > 10**5
    _same(sd.pair_counts(rand, **kw),
          sd.pair_counts(c["rra"], c["rdec"], labels1=c["rlab"], **kw))
    want = pair_counts(c["ra"], c["dec"], c["rra"], c["rdec"], bins=BINS, labels1=c["lab"],
                       weights1=c["w"], labels2=c["rlab"], backend="cpu")
    _same(sd.pair_counts(data, rand, **kw), want)
    # n_regions=0 ignores the labels columns, as for arrays
    _same(sd.pair_counts(data, rand, n_regions=0, **kw),
          pair_counts(c["ra"], c["dec"], c["rra"], c["rdec"], bins=BINS, weights1=c["w"],
                      backend="cpu"))


def test_the_workers_sample_the_rows_the_stripe_model_samples(cats, tmp_path, monkeypatch):
    monkeypatch.setattr(dt, "BLOCK_ROWS", 777)
    c = cats
    p = _save(str(tmp_path), ra=c["rra"], dec=c["rdec"])
    f = CatalogFiles(p["ra"], p["dec"])
    step = 13
    bounds = [0, 1000, 2501, 2502, 7000]
    parts = [dt._file_summary(f, a, b, step) for a, b in zip(bounds[:-1], bounds[1:])]
    s = dt._merge_summaries(parts)
    np.testing.assert_array_equal(s["dec"], c["rdec"][::step])
    np.testing.assert_array_equal(s["ra"], c["rra"][::step])
    assert s["n"] == s["nobj"] == c["rra"].size
    # the model at its own sampling: the same edges as from the whole arrays
    monkeypatch.setattr(partition, "STRIPE_SAMPLE", 500)
    step = c["rdec"].size // 500
    s = dt._merge_summaries([dt._file_summary(f, 0, c["rdec"].size, step)])
    theta = BINS.theta_max_rad
    np.testing.assert_array_equal(
        partition.declination_stripes(s["dec"], 5, theta, ra1=s["ra"]),
        partition.declination_stripes(c["rdec"], 5, theta, ra1=c["rra"]))


def test_a_fits_table_counts_as_in_memory(client, cats, tmp_path):
    fits = pytest.importorskip("astropy.io.fits")
    c = cats
    cols = [fits.Column(name="RA", format="D", array=c["ra"]),
            fits.Column(name="Dec", format="E", array=c["dec"].astype(np.float32)),
            fits.Column(name="W", format="D", array=c["w"]),
            fits.Column(name="PATCH", format="J", array=c["lab"].astype(np.int32))]
    path = str(tmp_path / "cat.fits")
    fits.BinTableHDU.from_columns(cols).writeto(path)
    f = CatalogFiles.fits(path, dec="DEC", weights="w", labels="patch")
    dec32 = c["dec"].astype(np.float32).astype(np.float64)     # what the table holds
    got = sd.pair_counts(f, bins=BINS, client=client, backend="cpu", nchunks=4)
    _same(got, pair_counts(c["ra"], dec32, bins=BINS, labels1=c["lab"], weights1=c["w"],
                           backend="cpu"))
    with pytest.raises(ValueError, match="column 'Z' not found"):
        sd.pair_counts(CatalogFiles.fits(path, ra="Z"), bins=BINS, client=client,
                       backend="cpu")
    with pytest.raises(ValueError, match="compressed"):
        CatalogFiles.fits(str(tmp_path / "cat.fits.gz"))


def test_bad_files_and_arguments_raise_clear_errors(client, cats, tmp_path):
    c = cats
    p = _save(str(tmp_path), ra=c["ra"], dec=c["dec"], lab=c["lab"], short=c["ra"][:10],
              bad=np.where(np.arange(c["dec"].size) == 4321, 95.0, c["dec"]),
              flab=c["lab"].astype(np.float64))
    kw = dict(bins=BINS, client=client, backend="cpu")
    with pytest.raises(FileNotFoundError, match="nothere.npy"):
        sd.pair_counts(CatalogFiles(p["ra"], str(tmp_path / "nothere.npy")), **kw)
    with pytest.raises(ValueError, match=r"bad\.npy.*\[-90, 90\]"):
        sd.pair_counts(CatalogFiles(p["ra"], p["bad"]), **kw)
    with pytest.raises(ValueError, match="differ in length"):
        sd.pair_counts(CatalogFiles(p["ra"], p["short"]), **kw)
    with pytest.raises(TypeError, match=r"flab\.npy.*integers"):
        sd.pair_counts(CatalogFiles(p["ra"], p["dec"], labels=p["flab"]), **kw)
    with pytest.raises(ValueError, match=r"\.npy"):
        CatalogFiles(p["ra"], str(tmp_path / "dec.csv"))
    with pytest.raises(TypeError, match="path"):
        CatalogFiles(p["ra"], c["dec"])
    f = CatalogFiles(p["ra"], p["dec"], labels=p["lab"])
    with pytest.raises(TypeError, match="CatalogFiles"):
        sd.pair_counts(f, (c["rra"], c["rdec"]), **kw)
    with pytest.raises(TypeError, match="weights1"):
        sd.pair_counts(f, weights1=np.ones(c["ra"].size), **kw)
    with pytest.raises(ValueError, match="labels column in both"):   # in one catalog only
        sd.pair_counts(f, CatalogFiles(p["ra"], p["dec"]), **kw)
    with pytest.raises(ValueError, match="n_regions"):
        sd.pair_counts(f, n_regions=5, **kw)


def test_progress_reports_reading_and_stripes(client, cats, tmp_path):
    c = cats
    p = _save(str(tmp_path), ra=c["ra"][:2000], dec=c["dec"][:2000])
    said = []
    sd.pair_counts(CatalogFiles(p["ra"], p["dec"]), bins=BINS, client=client, backend="cpu",
                   nchunks=3, progress=said.append)
    import time

    for _ in range(100):
        if any(m.endswith("3 of 3 done") and "stripes" in m for m in said):
            break
        time.sleep(0.05)
    assert "pair counts, stripes: 3 of 3 done" in said
    assert any(m.startswith("reading catalogs, blocks:") for m in said)


def test_report_of_a_count_of_files_has_every_stripe(client, cats, tmp_path):
    c = cats
    p = _save(str(tmp_path), ra=c["ra"], dec=c["dec"])
    got = []
    sd.pair_counts(CatalogFiles(p["ra"], p["dec"]), bins=BINS, client=client, backend="cpu",
                   nchunks=3, report=got.append)
    [steps] = got
    assert len(steps.stripes) == 3 and (steps.sent_bytes, steps.send_seconds) == (0, 0.0)
    # every point is held by the stripe it lies in, some by a stripe below too (its halo)
    assert c["ra"].size <= sum(st["points"] for st in steps.stripes) < 2 * c["ra"].size
    assert all(0 <= st["start_s"] <= st["end_s"] <= steps.seconds + 0.1
               for st in steps.stripes)


def test_only_the_workers_open_the_files(client, cats, tmp_path, monkeypatch):
    """In-process workers run tasks on threads of their own: every read happens there,
    none on the client's (main) thread."""
    import threading

    c = cats
    p = _save(str(tmp_path), ra=c["ra"], dec=c["dec"], lab=c["lab"])
    opened = []
    real = dt._Reader.__init__

    def spy(self, files):
        opened.append(threading.current_thread() is threading.main_thread())
        real(self, files)

    monkeypatch.setattr(dt._Reader, "__init__", spy)
    got = sd.pair_counts(CatalogFiles(p["ra"], p["dec"], labels=p["lab"]), bins=BINS,
                         client=client, backend="cpu", nchunks=3)
    assert opened and not any(opened)
    # a size task, blocks (2 per worker here), then one read per stripe
    assert len(opened) == 1 + 4 + 3
    assert got.n_regions == 110


def test_a_worker_killed_while_reading_a_stripe_costs_time_only(fresh_process_client, cats,
                                                                 tmp_path):
    from .test_faults import _killer

    client = fresh_process_client
    c = cats
    p = _save(str(tmp_path), ra=c["ra"], dec=c["dec"], lab=c["lab"])
    want = pair_counts(c["ra"], c["dec"], bins=BINS, labels1=c["lab"], backend="cpu")
    flag = str(tmp_path / "killed")
    client.register_plugin(_killer(flag, 1, once=True, prefix="sphgpu-paircount-file"),
                           name="killer")
    got = sd.pair_counts(CatalogFiles(p["ra"], p["dec"], labels=p["lab"]), bins=BINS,
                         client=client, backend="cpu", nchunks=3)
    assert os.path.exists(flag)
    _same(got, want)
