"""Result files are written whole or not at all, and a damaged one is a ValueError naming the
file and the format; a header-only CSV and a negative seed are named errors too."""

import errno
import json
import os

import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, Catalog, CorrelationResult, angular_correlation
from sphgpu.tpacf import result as result_mod
from sphgpu.tpacf.mocks import uniform_randoms

BOX = (0.0, 30.0, -15.0, 15.0)
BINS = AngularBins.log(0.5, 8.0, 5)


@pytest.fixture(scope="module")
def res():
    d, r = uniform_randoms(150, BOX, seed=1), uniform_randoms(250, BOX, seed=2)
    return angular_correlation(d, r, bins=BINS, jackknife=3, backend="cpu")


def _disk_full_open(real_open, after):
    """An ``open`` whose text files accept ``after`` characters, then raise ENOSPC."""
    class Full:
        def __init__(self, f):
            self.f, self.left = f, after

        def write(self, text):
            if len(text) > self.left:
                self.f.write(text[:self.left])
                self.f.flush()
                raise OSError(errno.ENOSPC, "No space left on device")
            self.left -= len(text)
            return self.f.write(text)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def fake(path, mode="r", *args, **kw):
        f = real_open(path, mode, *args, **kw)
        return Full(f) if "w" in mode else f
    return fake


def _leftovers(folder, keep):
    return sorted(set(os.listdir(folder)) - set(keep))


def test_ascii_write_failing_part_way_keeps_the_previous_file(res, tmp_path, monkeypatch):
    path = tmp_path / "w.txt"
    res.write(path)
    before = path.read_bytes()
    other = CorrelationResult.read(path)
    other.w = other.w + 1.0                      # a different result to (fail to) write
    monkeypatch.setattr(result_mod, "open", _disk_full_open(open, 1000), raising=False)
    with pytest.raises(OSError) as info:
        other.write(path)
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, ["w.txt"]) == []


@pytest.mark.parametrize("name", ["w.fits", "w.fits.gz"])
def test_fits_write_failing_part_way_keeps_the_previous_file(res, tmp_path, monkeypatch, name):
    pytest.importorskip("astropy")
    from astropy.io.fits.file import _File

    path = tmp_path / name
    res.write(path)
    before = path.read_bytes()
    calls = {"n": 0}
    real = _File.writearray

    def failing(self, array):                    # the third array written hits a full disk
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, array)
    monkeypatch.setattr(_File, "writearray", failing)
    with pytest.raises(OSError):
        res.write(path)
    assert calls["n"] == 3
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, [name]) == []
    monkeypatch.undo()
    back = CorrelationResult.read(path)
    np.testing.assert_array_equal(back.w, res.w)


def _ascii_variants(good):
    text = good.decode()
    head, state = text.split("# state: ")
    st = json.loads(state)
    bad_shape = json.loads(state)
    bad_shape["arrays"]["w"]["shape"] = [3, 7]
    w_len = json.loads(state)
    w_len["arrays"]["w"]["data"] = w_len["arrays"]["w"]["data"][:2]
    w_len["arrays"]["w"]["shape"] = [2]
    no_w = json.loads(state)
    del no_w["arrays"]["w"]
    wrong_format = json.loads(state)
    wrong_format["meta"]["format"] = "something else"
    no_terms = json.loads(state)
    del no_terms["meta"]["terms"]
    enc = (lambda d: (head + "# state: " + json.dumps(d) + "\n").encode())
    return {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "random bytes": np.random.default_rng(0).bytes(3000),
        "not UTF-8": good.replace(b"# sphgpu", b"# \xff\xfe sphgpu"),
        "wrong JSON": (head + "# state: {not json\n").encode(),
        "JSON list": (head + "# state: [1, 2]\n").encode(),
        "bad shape": enc(bad_shape),
        "w of the wrong length": enc(w_len),
        "no w": enc(no_w),
        "wrong format": enc(wrong_format),
        "no terms": enc(no_terms),
        "bad dtype": enc({**st, "arrays": {**st["arrays"],
                                           "w": {**st["arrays"]["w"], "dtype": "nonsense"}}}),
    }


def test_damaged_ascii_files_are_named_value_errors(res, tmp_path):
    good_path = tmp_path / "good.txt"
    res.write(good_path)
    for label, data in _ascii_variants(good_path.read_bytes()).items():
        path = tmp_path / "damaged.txt"
        path.write_bytes(data)
        with pytest.raises(ValueError, match="damaged.txt.*ASCII") as info:
            CorrelationResult.read(path)
        assert type(info.value) is ValueError, label        # not a JSON/Unicode subclass


def test_damaged_fits_files_are_named_value_errors(res, tmp_path):
    fits = pytest.importorskip("astropy.io.fits")
    good_path = tmp_path / "good.fits"
    res.write(good_path)
    good = good_path.read_bytes()
    variants = {"truncated": good[: len(good) // 3], "empty": b"",
                "random bytes": np.random.default_rng(1).bytes(5760)}
    other = tmp_path / "other.fits"
    fits.HDUList([fits.PrimaryHDU(np.zeros(3))]).writeto(other)
    variants["no SPHGPU card"] = other.read_bytes()
    with fits.open(good_path) as f:
        f[0].header["SPHGPU"] = "{not json"
        f.writeto(tmp_path / "badjson.fits")
    variants["bad JSON card"] = (tmp_path / "badjson.fits").read_bytes()
    for label, data in variants.items():
        path = tmp_path / "damaged.fits"
        path.write_bytes(data)
        with pytest.raises(ValueError, match="damaged.fits.*FITS") as info:
            CorrelationResult.read(path)
        assert type(info.value) is ValueError, label
    gz = tmp_path / "damaged.fits.gz"
    res.write(gz)
    gz.write_bytes(gz.read_bytes()[:200])
    with pytest.raises(ValueError, match="damaged.fits.gz.*FITS"):
        CorrelationResult.read(gz)


def test_a_missing_result_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        CorrelationResult.read(tmp_path / "nothing.txt")


def test_header_only_csv_is_an_empty_catalog_error(tmp_path):
    path = tmp_path / "cat.csv"
    path.write_text("ra,dec,w\n")
    with pytest.raises(ValueError, match=r"cat\.csv.*no rows.*empty catalog"):
        Catalog.from_csv(path)


def test_negative_bootstrap_seed_is_an_error_naming_seed(res):
    with pytest.raises(ValueError, match="seed"):
        res.estimate_cov("bootstrap", seed=-1, num_bootstrap=10)
    d, r = uniform_randoms(50, BOX, seed=1), uniform_randoms(60, BOX, seed=2)
    with pytest.raises(ValueError, match="seed"):
        angular_correlation(d, r, bins=BINS, jackknife=3, var_method="bootstrap", seed=-5,
                            backend="cpu")
