"""The on-disk tuning caches: no lost entries under concurrent writers, damaged files ignored."""

import json
import math
import os
import subprocess
import sys
import warnings

import pytest

from sphgpu import _tuning


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_tuning, "_reported", set())
    return tmp_path


_WRITER = """
import sys
from sphgpu import _tuning
who = sys.argv[1]
for i in range(300):
    _tuning.store("race", f"{who}-{i}", {"t": i})
"""


def test_concurrent_writers_keep_every_entry(cache_dir):
    env = dict(os.environ, SPHGPU_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, who], env=env)
             for who in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with open(cache_dir / "race.json") as f:
        data = json.load(f)
    assert len(data) == 600
    assert data["a-299"] == {"t": 299} and data["b-0"] == {"t": 0}
    # no temporary file left behind
    assert sorted(p.name for p in cache_dir.iterdir()) == ["race.json", "race.json.lock"]


@pytest.mark.parametrize("text", ["{not json", "[1, 2, 3]", "17", '"a string"'])
def test_damaged_file_is_reported_once_and_ignored(cache_dir, text):
    (cache_dir / "c.json").write_text(text)
    with pytest.warns(_tuning.CacheWarning, match="c.json"):
        assert _tuning.lookup("c", "k") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _tuning.lookup("c", "k") is None       # reported once only
        _tuning.store("c", "k", 1.5)                  # and rewritten by the next store
    assert _tuning.lookup("c", "k") == 1.5


@pytest.mark.parametrize("bad", [float("nan"), -1.0, "3", [1.0], None])
def test_damaged_entry_is_rejected_by_its_check(cache_dir, bad):
    _tuning.store("c", "good", 2.0)
    _tuning.store("c", "bad", bad)
    assert _tuning.lookup("c", "good", check=_tuning.nonnegative_number) == 2.0
    if bad is None:     # an absent value is just a miss
        assert _tuning.lookup("c", "bad", check=_tuning.nonnegative_number) is None
        return
    with pytest.warns(_tuning.CacheWarning, match="c.json"):
        assert _tuning.lookup("c", "bad", check=_tuning.nonnegative_number) is None


def test_nonnegative_number():
    assert _tuning.nonnegative_number(3) == 3.0
    for bad in (math.inf, math.nan, -0.5, True, "1"):
        with pytest.raises((ValueError, TypeError)):
            _tuning.nonnegative_number(bad)


def test_read_only_cache_dir_keeps_working(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    _tuning.store("c", "k", 1.0)          # nowhere to write: silently kept by the caller
    assert _tuning.lookup("c", "k") is None


@pytest.mark.parametrize("bad", [{"alm2leg": [128, 4]}, "x", [128, -4], [128.0, 4]])
def test_sht_launch_cache_damage_means_measuring_again(cache_dir, monkeypatch, bad, capsys):
    from sphgpu.sht import _cuda

    monkeypatch.setattr(_cuda, "SIMULATOR", False)
    monkeypatch.setattr(_tuning, "device_name", lambda: "Test GPU")
    measured = []

    def measure(pl, name, nmaps=1, slot=None):
        measured.append(name)
        return (64, 8)

    monkeypatch.setattr(_cuda, "_measure", measure)

    class FakePlan:             # just what _launch reads
        nrings, npix, lmax, mmax = 4, 48, 600, 600

        def __init__(self):
            self.launch = {}

    _tuning.store("sht_launch", "Test GPU|alm2leg|nrings=4|npix=48|lmax=600|mmax=600", bad)
    with pytest.warns(_tuning.CacheWarning, match="sht_launch.json"):
        assert _cuda._launch(FakePlan(), "alm2leg") == (64, 8)
    assert measured == ["alm2leg"]            # leg2alm is tuned only when it is needed
    assert capsys.readouterr().out == ("sphgpu: tuning the alm2leg kernel for lmax 600 on 48 "
                                       "pixels (once per GPU and size)\n")
    # measured again, stored and served from the cache from then on
    assert _cuda._launch(FakePlan(), "alm2leg") == (64, 8)
    assert _cuda._launch(FakePlan()) == {"alm2leg": (64, 8), "leg2alm": (64, 8)}
    assert measured == ["alm2leg", "leg2alm"]


def test_paused_is_per_thread_and_nests(monkeypatch):
    import threading

    monkeypatch.delenv("SPHGPU_AUTOTUNE", raising=False)
    seen = []
    with _tuning.paused():
        with _tuning.paused():
            assert not _tuning.enabled()
        assert not _tuning.enabled()
        t = threading.Thread(target=lambda: seen.append(_tuning.enabled()))
        t.start()
        t.join()
    assert seen == [True] and _tuning.enabled()
    monkeypatch.setenv("SPHGPU_AUTOTUNE", "0")
    assert not _tuning.enabled()
