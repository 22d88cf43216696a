"""sphgpu.testing's helpers, and how the conftest picks the simulator or the GPU."""

import math
import pathlib
import re

import numpy as np
import pytest

from sphgpu import AlmLayout
from sphgpu import testing

from .conftest import real_gpu_requested


def test_rel_err_and_assert_rel_close_name_the_quantity():
    want = np.array([3.0, 4.0])
    assert testing.rel_err(want * (1 + 1e-12), want) == pytest.approx(1e-12, rel=1e-3)
    testing.assert_rel_close(want * (1 + 1e-12), want, "vs_ducc0", "alm2map")
    with pytest.raises(AssertionError, match=r"alm2map: relative L2 error 0\.2 > 1e-11 "
                                             r"\(vs_ducc0\)"):
        testing.assert_rel_close(want + [0.0, 1.0], want, "vs_ducc0", "alm2map")
    with pytest.raises(AssertionError, match=r"maps: shape \(1, 2\), expected \(2,\)"):
        testing.assert_rel_close(want[None], want, 1e-3, "maps")


def test_every_tolerance_is_a_small_positive_number():
    assert all(isinstance(v, float) and 0 < v < 1e-6 for v in testing.TOL.values())


def test_every_tolerance_is_used_and_every_name_used_is_in_the_table():
    # a test names an entry as TOL["name"] or as the string given to assert_rel_close
    here = pathlib.Path(__file__).parent
    text = "\n".join(f.read_text() for f in sorted(here.rglob("*.py"))
                      if f.name != "test_testing.py")
    unused = [k for k in testing.TOL if f'"{k}"' not in text]
    assert not unused, f"TOL entries no test uses: {unused}"
    missing = sorted(set(re.findall(r'TOL\["(\w+)"\]', text)) - set(testing.TOL))
    assert not missing, f"TOL names a test uses but the table lacks: {missing}"


def test_random_inputs_are_seeded_and_shaped(rng):
    layout = AlmLayout(6, 4)
    a = testing.random_alm(rng, layout, k=2)
    assert a.shape == (2, layout.size) and a.dtype == np.complex128
    assert np.all(a[:, layout.lm()[1] == 0].imag == 0)
    p = testing.random_pol_alm(rng, layout)
    assert p.shape == (3, layout.size)
    assert np.all(p[1:, layout.lm()[0] < 2] == 0) and np.all(p[0] != 0)
    assert testing.random_map(rng, 3, k=4).shape == (4, 108)
    ra, dec = testing.random_catalog(rng, 500, dec=(-10.0, 20.0), ra=(350.0, 360.0))
    assert ra.shape == dec.shape == (500,)
    assert ra.min() >= 350 and ra.max() <= 360 and dec.min() >= -10 and dec.max() <= 20
    # uniform on the sphere: the mean of sin(dec) is the middle of the band
    assert abs(np.sin(np.deg2rad(dec)).mean() - (math.sin(math.radians(20)) -
                                                 math.sin(math.radians(10))) / 2) < 0.03
    np.testing.assert_array_equal(testing.default_rng().standard_normal(3),
                                  np.random.default_rng(testing.SEED).standard_normal(3))


def test_tests_run_in_the_simulator_unless_asked_for_the_gpu(monkeypatch, pytestconfig):
    asked = real_gpu_requested(pytestconfig.getoption("markexpr") or "")
    assert testing.using_simulator() is not asked
    if not asked:
        ok, why = testing.real_gpu()
        assert not ok and "pytest -m gpu" in why
    monkeypatch.delenv("SPHGPU_TEST_REAL_GPU", raising=False)
    for expr, want in [("", False), ("gpu", True), ("gpu and not slow", True),
                       ("not slow", False), ("not gpu", False), ("slow or gpu", True),
                       ("slow", False)]:
        assert real_gpu_requested(expr) is want, expr
    monkeypatch.setenv("SPHGPU_TEST_REAL_GPU", "0")
    assert real_gpu_requested("gpu") is False
    monkeypatch.setenv("SPHGPU_TEST_REAL_GPU", "1")
    assert real_gpu_requested("") is True
