"""The optimizer: the paper's Table 1 with its cost model, injected and measured cost models,
plans that explain themselves, unreachable bounds."""

import json

import numpy as np
import pytest

from sphgpu.convolve import (ARCMIN, Candidate, CostModel, MeasuredCostModel, PaperCostModel,
                             RadialKernel, optimize_split)
from sphgpu.convolve.optimize import default_theta_grid, make_fitter

#: Sutter, Wandelt & Elsner, Table 1: FWHM (arcmin) -> (l_cut, theta_cut in arcmin), for
#: nside 2048, lmax 4096, C_l^input = 1, alpha = 5, error bound 1e-5 (WMAP7 C_l there). The
#: paper's theta_cut is the real-space support's full width (see PaperCostModel), twice the
#: radius that sphgpu calls theta_cut.
TABLE1 = {7: (1158, 390), 8: (1070, 390), 9: (1055, 360), 10: (979, 360), 11: (1014, 330),
          12: (960, 330), 13: (940, 330), 14: (929, 300), 15: (961, 270)}
#: Support radii of the paper's 30 arcmin steps of theta_cut (full width), up to 600 arcmin.
GRID = PaperCostModel().theta_grid(600.0)


@pytest.fixture(scope="module")
def table_plans():
    """One paper-cost-model optimisation per FWHM (5..15 arcmin), as in the paper."""
    return {fw: optimize_split(RadialKernel.cmb(fw, 4096), nside=2048, cost_model="paper",
                               theta_grid=GRID)
            for fw in [5, 6] + list(TABLE1)}


def test_paper_cost_model_formulas():
    cm = PaperCostModel()                       # Eq. 7 takes the full width: twice the radius
    assert cm.realspace_time(195 * ARCMIN, 2048) == pytest.approx(0.0232 * 390 + 2.428)
    radius = PaperCostModel(theta_cut_is="radius")
    assert radius.realspace_time(390 * ARCMIN, 2048) == pytest.approx(0.0232 * 390 + 2.428)
    assert cm.paper_theta_cut(195 * ARCMIN) == pytest.approx(390 * ARCMIN)
    assert cm.support_radius(cm.paper_theta_cut(0.1)) == pytest.approx(0.1)
    np.testing.assert_allclose(cm.theta_grid(90.0) / ARCMIN, [15.0, 30.0, 45.0])
    np.testing.assert_allclose(radius.theta_grid(90.0) / ARCMIN, [30.0, 60.0, 90.0])
    assert cm.harmonic_time(1158, 2048, 4096) == pytest.approx(160 * 1158 ** 2 * 4096 / 4096 ** 3)
    assert cm.harmonic_time(4096, 2048, 4096) == pytest.approx(160.0)
    assert cm.split_time(3.0, 5.0, "cpu", "cuda") == 5.0          # the parts run in parallel
    with pytest.raises(ValueError, match="theta_cut_is"):
        PaperCostModel(theta_cut_is="chord")
    p = optimize_split(RadialKernel.cmb(640.0, 64), nside=32, cost_model="paper",
                       cost_model_options=dict(theta_cut_is="radius"))
    assert p.cost_model.theta_cut_is == "radius"


def test_no_valid_split_below_7_arcmin(table_plans):
    # the paper: "Below 7' we could not find suitable truncations". Here a split that meets the
    # bound needs l_cut within a few multipoles of lmax (no gain) below 7 arcmin, and 7 arcmin
    # and above split with a speedup over 10 under the paper's cost model.
    for fw in (5, 6):
        p = table_plans[fw]
        assert p.method == "harmonic" or p.l_cut >= 4096 - 8
        assert p.speedup < 1.01
    for fw in TABLE1:
        p = table_plans[fw]
        assert p.method == "split" and p.predicted_error <= 1e-5 and p.speedup > 10


def test_papers_choices_sit_at_the_bound_and_ours_cost_no_more(table_plans):
    # Read with theta_cut as the full width, the paper's own pairs are at the bound in our fit
    # too (its optimum is where the error just meets the bound): within 10% above it, and not
    # far below. Where a pair meets the bound here, our plan costs no more than it.
    cm = PaperCostModel()
    for fw, (l_cut, theta) in TABLE1.items():
        fitter = make_fitter(RadialKernel.cmb(fw, 4096), GRID.max())
        err = fitter.error(l_cut, float(cm.support_radius(theta * ARCMIN)))
        assert 0.5e-5 <= err <= 1.1e-5
        if err <= 1e-5:
            papers = max(cm.harmonic_time(l_cut, 2048, 4096),
                         cm.realspace_time(float(cm.support_radius(theta * ARCMIN)), 2048))
            assert table_plans[fw].time_total <= papers * (1 + 1e-12)


def test_table1_within_15_percent(table_plans):
    # The paper's cost model with its theta_cut read as the support's full width (the default;
    # the radius reading lands on about half the paper's cuts: see
    # benchmarks/convolve_table1_variants.py). Our C_l is Planck 2018, the paper's WMAP7.
    for fw, (l_cut, theta) in TABLE1.items():
        p = table_plans[fw]
        assert p.l_cut == pytest.approx(l_cut, rel=0.15)
        assert p.paper_theta_cut_arcmin == pytest.approx(theta, rel=0.15)
        assert "in the paper's terms" in p.explain()


class _Toy(CostModel):
    """A cost model with chosen constants: harmonic ~ l_cut^2, real space ~ theta^2."""

    name = "toy"
    harmonic_backends = ("cpu",)
    realspace_backends = ("cuda",)

    def __init__(self, real_cost):
        self.real_cost = real_cost

    def harmonic_time(self, l_cut, nside, lmax, backend):
        return 0.0 if l_cut < 0 else 1.0 * ((l_cut + 1) / (lmax + 1)) ** 2

    def realspace_time(self, theta_cut, nside, backend):
        return 0.0 if theta_cut <= 0 else self.real_cost * theta_cut ** 2


def test_injected_cost_model_decides_the_method():
    k = RadialKernel.cmb(640.0, 64)
    cheap = optimize_split(k, nside=32, cost_model=_Toy(1e-3))
    assert cheap.method == "split" and cheap.cost_model.name == "toy"
    assert cheap.speedup > 1 and cheap.time_total < cheap.time_all_harmonic
    assert cheap.predicted_error <= 1e-5 and cheap.split is not None
    assert cheap.theta_cut_arcmin == pytest.approx(cheap.theta_cut / ARCMIN)
    dear = optimize_split(k, nside=32, cost_model=_Toy(1e3))
    assert dear.method == "harmonic" and dear.speedup == 1.0 and dear.split is None
    text = cheap.explain()
    assert f"l <= {cheap.l_cut}" in text and "speedup" in text and str(cheap) == text
    assert all(isinstance(c, Candidate) for c in cheap.candidates)
    assert "Plan(method='split'" in repr(cheap)


def test_a_compact_beam_can_go_all_real_space():
    k = RadialKernel.gaussian(900.0, 64)
    p = optimize_split(k, nside=32, cost_model=_Toy(1e-4), methods=("realspace",))
    assert p.method == "realspace" and p.l_cut == -1 and p.all_realspace is not None


def test_unreachable_bounds_say_what_is_reachable():
    k = RadialKernel.cmb(640.0, 64)
    with pytest.raises(ValueError, match="smallest reachable bound is 1e-12"):
        optimize_split(k, nside=32, cost_model=_Toy(1.0), error_bound=1e-14)
    with pytest.raises(ValueError, match=r"smallest reachable bound there is \d"):
        optimize_split(k, nside=32, cost_model=_Toy(1.0), error_bound=1e-11,
                       methods=("split",), theta_grid=[0.3])
    with pytest.raises(ValueError, match="error_bound must be a positive"):
        optimize_split(k, nside=32, cost_model=_Toy(1.0), error_bound=-1.0)
    with pytest.raises(ValueError, match="cost_model must be"):
        optimize_split(k, nside=32, cost_model="fast")


def test_a_kernel_of_lmax_0_is_refused_naming_its_lmax():
    """It had failed on the empty default theta_grid, an argument the caller never gave."""
    for k in (RadialKernel(np.array([1.0])), [2.0]):
        with pytest.raises(ValueError, match=r"kernel has lmax=0 .*method='harmonic'"):
            optimize_split(k, nside=4, cost_model="paper")


@pytest.mark.parametrize("lmax", [1, 5, 11])
def test_small_kernels_get_a_default_theta_grid(lmax):
    """Below lmax 12 the first 30 arcmin * 4096 / lmax step passes pi: the grid is the whole
    sphere instead of empty, and the optimizer answers."""
    np.testing.assert_array_equal(default_theta_grid(lmax), [np.pi])
    assert len(default_theta_grid(12)) == 1 and default_theta_grid(12)[0] < np.pi
    p = optimize_split(RadialKernel.gaussian(600.0, lmax), nside=4, cost_model="paper")
    assert p.method in ("harmonic", "split", "realspace")


def test_measured_cost_model_is_timed_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    cm = MeasuredCostModel(16, 32, sizes="quick", harmonic_backends=("cpu",),
                           realspace_backends=("cpu",))
    # timings on a shared machine are noisy: only the model's shape is certain
    assert cm.harmonic_time(31, 16, 32, "cpu") >= cm.harmonic_time(3, 16, 32, "cpu") > 0
    assert cm.realspace_time(0.5, 16, "cpu") >= cm.realspace_time(0.1, 16, "cpu") > 0
    assert len(cm.harmonic["cpu"].points) == 3 and len(cm.realspace["cpu"].points) == 3
    cache = json.loads((tmp_path / "convolve_cost.json").read_text())
    assert len(cache) == 2 and all("nside=16" in key for key in cache)
    monkeypatch.setattr(MeasuredCostModel, "_measure_harmonic", lambda *a: pytest.fail("again"))
    again = MeasuredCostModel(16, 32, sizes="quick", harmonic_backends=("cpu",),
                              realspace_backends=("cpu",))
    assert again.harmonic["cpu"].b == cm.harmonic["cpu"].b
    assert "harmonic [cpu]" in again.describe()
    with pytest.raises(ValueError, match="nside=16"):
        again.harmonic_time(10, 32, 64, "cpu")
    plan = optimize_split(RadialKernel.cmb(640.0, 32), nside=16, cost_model=again)
    assert plan.cost_model is again and plan.time_total > 0


def test_search_option():
    k = RadialKernel.cmb(640.0, 64)
    ripple = optimize_split(k, nside=32, cost_model=_Toy(1e-3))
    plain = optimize_split(k, nside=32, cost_model=_Toy(1e-3), search="bisect")
    assert plain.predicted_error <= 1e-5 and plain.time_total >= ripple.time_total
    with pytest.raises(ValueError, match="search must be"):
        optimize_split(k, nside=32, cost_model=_Toy(1e-3), search="scan")


# -- plans of hand-chosen cuts, and measured plans (the tuner panel's state) --------------------
def test_plan_for_cuts_prices_the_optimizers_choice_the_same():
    from sphgpu.convolve import plan_for_cuts

    k = RadialKernel.cmb(640.0, 64)
    best = optimize_split(k, nside=32, cost_model=_Toy(1e-3))
    # the optimizer prices the radius of its grid; the plan's theta_cut is the fitted support
    grid_theta = min((c for c in best.candidates if c.l_cut == best.l_cut),
                     key=lambda c: c.time_total).theta_cut
    same = plan_for_cuts(k, nside=32, l_cut=best.l_cut, theta_cut=grid_theta,
                         cost_model=_Toy(1e-3),
                         fitter=make_fitter(k, float(default_theta_grid(64).max())))
    assert (same.method, same.l_cut) == ("split", best.l_cut)
    assert same.theta_cut == pytest.approx(best.theta_cut, rel=1e-12)
    for name in ("predicted_error", "time_harmonic", "time_realspace", "time_total",
                 "time_all_harmonic", "speedup"):
        assert getattr(same, name) == pytest.approx(getattr(best, name), rel=1e-9), name
    assert same.meets_bound and same.split is not None


def test_plan_for_cuts_harmonic_realspace_and_missing_the_bound():
    from sphgpu.convolve import plan_for_cuts

    k = RadialKernel.cmb(640.0, 64)
    harm = plan_for_cuts(k, nside=32, l_cut=64, theta_cut=0.3, cost_model=_Toy(1e-3))
    assert harm.method == "harmonic" and harm.theta_cut == 0.0 and harm.l_cut == 64
    assert harm.predicted_error == 0.0 and harm.speedup == 1.0 and harm.split is None
    assert plan_for_cuts(k, nside=32, l_cut=10, theta_cut=0.0,
                         cost_model=_Toy(1e-3)).method == "harmonic"
    real = plan_for_cuts(k, nside=32, l_cut=-1, theta_cut=0.5, cost_model=_Toy(1e-3))
    assert real.method == "realspace" and real.time_harmonic == 0.0
    poor = plan_for_cuts(k, nside=32, l_cut=2, theta_cut=0.05, cost_model=_Toy(1e-3))
    assert poor.method == "split" and not poor.meets_bound and poor.predicted_error > 1e-5
    with pytest.raises(ValueError, match="theta_cut must be in"):
        plan_for_cuts(k, nside=32, l_cut=2, theta_cut=4.0, cost_model=_Toy(1e-3))
    with pytest.raises(ValueError, match="l_cut=-1"):
        plan_for_cuts(k, nside=32, l_cut=-1, theta_cut=0.0, cost_model=_Toy(1e-3))
    with pytest.raises(TypeError, match="theta_cut must be a number"):
        plan_for_cuts(k, nside=32, l_cut=2, theta_cut="1", cost_model=_Toy(1e-3))


def test_measure_plan_times_and_errors_against_measure_error():
    from sphgpu.convolve import measure_error, measure_plan, plan_for_cuts

    k = RadialKernel.cmb(640.0, 32)
    plan = plan_for_cuts(k, nside=16, l_cut=12, theta_cut=0.4, cost_model=_Toy(1e-3))
    done = measure_plan(plan, seed=3, backend="cpu")
    assert plan.measured is None and done.measured is not None and done.l_cut == 12
    m = done.measured
    assert m.backend == "cpu" and m.seed == 3
    assert m.time_total > 0 and m.time_harmonic > 0 and m.time_realspace > 0
    twin = measure_error(plan.split, 16, seed=3, backend="cpu")
    assert m.spectrum_error == pytest.approx(twin.spectrum, rel=1e-10)
    assert m.map_error == pytest.approx(twin.map, rel=1e-10)
    assert m.speedup == pytest.approx(m.time_all_harmonic / m.time_total)
    harm = measure_plan(plan_for_cuts(k, nside=16, l_cut=32, theta_cut=0.0,
                                      cost_model=_Toy(1e-3)), backend="cpu")
    assert harm.measured.spectrum_error == 0.0 and harm.measured.time_realspace == 0.0
    assert harm.measured.time_total == harm.measured.time_all_harmonic
