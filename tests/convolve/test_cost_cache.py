"""The measured cost model's disk cache: damaged entries are reported and measured again, never
used to price a plan; timing stays within its budget and says what it does."""

import json
import math
import sys

import numpy as np
import pytest

from sphgpu import _tuning
from sphgpu.convolve import MeasuredCostModel, RadialKernel, optimize_split
from sphgpu.convolve.cost import cache_path


def _model(**kw):
    kw.setdefault("progress", False)
    return MeasuredCostModel(16, 32, sizes="quick", harmonic_backends=("cpu",),
                             realspace_backends=("cpu",), **kw)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_tuning, "_reported", set())
    return tmp_path


@pytest.mark.parametrize("damage", [
    {"a": float("nan"), "b": 1e-9, "points": []},
    {"a": 1e-3, "b": -1e-9, "points": []},
    {"a": 1e-3, "points": []},                        # no b
    {"a": 1e-3, "b": 1e-9, "points": [[1.0]]},        # a point without its time
    [1e-3, 1e-9],                                     # not an object
])
def test_damaged_entries_are_measured_again(cache_dir, damage):
    good = _model()
    cache = json.loads(open(cache_path()).read())
    assert len(cache) == 2
    for key in cache:
        cache[key] = damage
    with open(cache_path(), "w") as f:
        json.dump(cache, f)
    with pytest.warns(_tuning.CacheWarning, match="convolve_cost.json"):
        again = _model()
    for fit in (again.harmonic["cpu"], again.realspace["cpu"]):
        assert math.isfinite(fit.a) and fit.a >= 0 and math.isfinite(fit.b) and fit.b >= 0
    plan = optimize_split(RadialKernel.cmb(640.0, 32), nside=16, cost_model=again)
    assert math.isfinite(plan.time_total) and plan.time_total > 0
    # the re-measured constants replaced the damaged ones on disk
    fresh = json.loads(open(cache_path()).read())
    assert all(isinstance(v, dict) and v["b"] >= 0 for v in fresh.values())
    assert good.nside == again.nside


def test_damaged_file_is_measured_again(cache_dir):
    with open(cache_path(), "w") as f:
        f.write('{"truncated": ')
    with pytest.warns(_tuning.CacheWarning, match="convolve_cost.json"):
        cm = _model()
    assert cm.harmonic["cpu"].b >= 0


def test_timing_stops_at_the_budget_and_reports_progress(cache_dir, monkeypatch):
    from sphgpu.convolve import cost

    clock = iter(np.arange(0.0, 1000.0, 0.25))
    monkeypatch.setattr(cost.time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(cost, "_time", lambda fn, backend, **kw: 0.1)
    lines = []
    cm = MeasuredCostModel(16, 32, harmonic_backends=("cpu",), realspace_backends=("cpu",),
                           progress=lines.append, budget=0.5, use_cache=False)
    # two cases always; a third would need 3 * 0.1 s * (work ratio > 1) more than 0.5 s allows
    assert len(cm.harmonic["cpu"].points) == 2 and len(cm.realspace["cpu"].points) == 2
    assert len(lines) == 4 and lines[0].startswith("timing the harmonic part [cpu] at l_cut")
    generous = MeasuredCostModel(16, 32, harmonic_backends=("cpu",), realspace_backends=("cpu",),
                                 progress=False, budget=1e6, use_cache=False)
    assert len(generous.harmonic["cpu"].points) == 5


def test_default_progress_prints(cache_dir, capsys):
    _model(progress=None)
    out = capsys.readouterr().out
    assert "sphgpu: timing the harmonic part [cpu]" in out
    _model(progress=None)                     # cached: nothing to say
    assert capsys.readouterr().out == ""


def test_bad_budget():
    for bad in (-1.0, 0, float("nan"), "1"):
        with pytest.raises(ValueError, match="budget must be a positive number"):
            _model(budget=bad, use_cache=False)


def test_harmonic_slope_timed_at_a_quarter_of_the_resolution(cache_dir, monkeypatch):
    # a synthetic machine whose transforms cost exactly A * npix + B * nrings * (l_cut+1)^2:
    # the fit must recover the real resolution's constants from the quarter-resolution series
    # and one call at the real nside
    from sphgpu.convolve import cost, harmonic

    A, B = 1e-8, 1e-11
    calls = []

    def fake(maps, bl, geom, backend):
        assert not _tuning.enabled()          # no launch tuning for each timed size
        calls.append((geom.nside, len(bl) - 1))
        return A * geom.npix + B * geom.nrings * len(bl) ** 2

    monkeypatch.setattr(harmonic, "harmonic_convolve", fake)
    monkeypatch.setattr(cost, "_time", lambda fn, backend, **kw: fn())
    monkeypatch.setattr(MeasuredCostModel, "_measure_realspace",
                        lambda self, b: cost._Fit(0.0, 0.0))
    cm = MeasuredCostModel(256, 512, harmonic_backends=("cpu",), realspace_backends=("cpu",),
                           progress=False, budget=1e6)
    assert calls == [(64, 32), (64, 64), (64, 128), (64, 256), (64, 512), (256, 32)]
    fit = cm.harmonic["cpu"]
    assert fit.b == pytest.approx(B * (4 * 256 - 1), rel=1e-9)
    assert fit.a == pytest.approx(A * 12 * 256 ** 2, rel=1e-9)
    assert cm.harmonic_time(300, 256, 512, "cpu") == pytest.approx(
        A * 12 * 256 ** 2 + B * (4 * 256 - 1) * 301 ** 2, rel=1e-9)


def test_each_resolution_is_drawn_once_for_every_backend(cache_dir, monkeypatch):
    # at nside 2048 a 50M-pixel draw costs a large part of optimize_split's first call: the
    # backends' harmonic timings share one map per resolution
    from sphgpu.convolve import cost
    draws = []
    real = np.random.default_rng

    def counting(seed=None):
        draws.append(sys._getframe(1).f_code.co_name)      # who draws
        return real(seed)

    monkeypatch.setattr(cost.np.random, "default_rng", counting)
    cm = MeasuredCostModel(256, 64, sizes="quick", harmonic_backends=("cpu", "reference"),
                           realspace_backends=("cpu",), realspace_nside=16, progress=False)
    assert set(cm.harmonic) == {"cpu", "reference"}
    # the harmonic cases make a map at nside 64 (a quarter) and 256, once each for both backends
    assert draws.count("_repeated_noise") == 2 and cm._host_maps == {}


def test_timing_maps_repeat_one_block_of_noise():
    from sphgpu.convolve import cost
    m = cost._repeated_noise(3 * 1000 + 7, block=1000)
    assert m.shape == (3007,) and m.flags.c_contiguous
    np.testing.assert_array_equal(m[2000:3000], m[:1000])
    np.testing.assert_array_equal(m[3000:], m[:7])
    assert -0.5 <= m.min() < -0.4 and 0.4 < m.max() < 0.5
