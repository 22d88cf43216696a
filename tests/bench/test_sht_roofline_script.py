"""benchmarks/sht_roofline.py at a tiny size under the simulator: every stage of both
directions is timed and placed on the roofline, and the stages are the public calls' path
(their output equals the public call's), with and without the theta resampling."""

import time

import numpy as np
import pytest

from sphgpu.bench.roofline import Ceilings
from tests.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def script():
    return load_benchmark("sht_roofline")


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


@pytest.mark.parametrize("resample", ["0", "1"])
def test_every_stage_is_on_the_public_path(script, monkeypatch, resample):
    from sphgpu.sht import _cuda

    monkeypatch.setenv("SPHGPU_THETA_RESAMPLE", resample)
    _cuda.plan.cache_clear()
    try:
        row = script.bench(4, 2, Ceilings(1e12, 1e11), _timed, lambda msg: None, xp=np)
    finally:
        _cuda.plan.cache_clear()
    names = ["alm2leg", "leg2map", "map2leg", "leg2alm"]
    if resample == "1":
        names[1:1] = ["resample"]
        names[4:4] = ["resample_adjoint"]
    assert list(row["stages"]) == names and row["resampled"] == (resample == "1")
    assert row["max_rel_diff_maps"] < 1e-12 and row["max_rel_diff_alm"] < 1e-12
    for p in row["stages"].values():
        assert p["flops"] > 0 and p["bytes"] > 0 and p["seconds"] > 0
        assert p["time_over_bound"] > 0
    assert row["stages_alm2map_s"] == pytest.approx(sum(
        row["stages"][n]["seconds"] for n in names[:len(names) // 2]))
