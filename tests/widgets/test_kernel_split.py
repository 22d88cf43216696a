"""Kernel-split tuner: the model against direct sphgpu.convolve calls, messages for invalid
settings, and the panel driven headless (controls, Optimize, Run, the one-second budget)."""

import html
import time

import numpy as np
import pytest

from sphgpu.convolve import (ARCMIN, PaperCostModel, RadialKernel, SplitFitter, optimize_split,
                             plan_for_cuts, split_kernel)
from sphgpu.widgets.kernel_split import KernelSplitModel, kernel_split_panel

from sphgpu.widgets._base import fmt_seconds

from .conftest import INTERACTION_BUDGET_S, png


def timed_here(action):
    """Like the shared ``timed`` helper but counting the CPU time of this thread only: the
    fits call LAPACK, whose OpenBLAS helper threads spin while they wait for a core, so on a
    loaded two-core machine the process's CPU time grows with the load as wall time does; the
    work the panel itself does is what the budget is about."""
    w0, t0 = time.perf_counter(), time.thread_time()
    action()
    return min(time.perf_counter() - w0, time.thread_time() - t0)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Measured cost constants go to a fresh directory: tests start unmeasured."""
    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))


def test_model_split_is_the_public_api_split():
    m = KernelSplitModel(nside=32, backend="cpu", l_cut=20, theta_cut_arcmin=3000.0)
    assert m.message == "" and m.lmax == 64 and m.fwhm_arcmin == pytest.approx(640.0)
    s = m.split()
    ref = split_kernel(RadialKernel.cmb(640.0, 64), 20, 3000.0 * ARCMIN)
    # (the model fits within its scan range, split_kernel within theta_cut: same basis, rounding)
    np.testing.assert_allclose(s.approx_bl, ref.approx_bl, rtol=0, atol=1e-11)
    assert s.predicted_error == pytest.approx(ref.predicted_error, rel=1e-6)
    # theta_cut is the support the fit has: whole knots within the 3000' asked for
    assert m.theta_cut_arcmin == pytest.approx(ref.theta_cut_arcmin, rel=1e-12)
    assert m.theta_cut_arcmin <= 3000.0
    ls, errs = m.error_curve()
    fit = SplitFitter(RadialKernel.cmb(640.0, 64), m._fitter().theta_max)
    assert errs[3] == pytest.approx(fit.error(int(ls[3]), m.theta_cut_arcmin * ARCMIN))
    assert dict(m.numbers())["plan"].startswith("split: l_cut 20")


def test_opens_on_the_optimizers_plan():
    m = KernelSplitModel(nside=32, backend="cpu", cost_model="paper")
    ref = optimize_split(RadialKernel.cmb(640.0, 64), nside=32, error_bound=1e-5,
                         cost_model="paper", theta_grid=m.scan_grid())
    p = m.plan
    assert (p.method, p.l_cut, p.time_total) == (ref.method, ref.l_cut, ref.time_total)
    assert m.all_harmonic == (ref.method == "harmonic")


def test_without_timings_it_opens_on_cuts_that_meet_the_bound():
    m = KernelSplitModel(nside=32, backend="cpu")          # measured costs, never timed here
    assert m.message == "" and m.plan is None
    assert m.split().predicted_error <= m.error_bound
    assert m.theta_cut_arcmin == pytest.approx(60.0 * 4096 / 64, rel=0.03)
    assert "not measured" in dict(m.numbers())["predicted times"]


def test_each_parameter_changes_the_prediction():
    m = KernelSplitModel(nside=32, backend="cpu", l_cut=20, theta_cut_arcmin=3000.0)
    base = m.split().predicted_error
    assert m.set(l_cut=40) and m.split().predicted_error < base
    m.set(l_cut=20, theta_cut_arcmin=1500.0)
    assert m.split().predicted_error != base
    m.set(theta_cut_arcmin=3000.0, fwhm_arcmin=900.0)
    assert m.split().predicted_error != base
    m.set(fwhm_arcmin=640.0, kernel="gaussian")
    assert m.split().predicted_error != base
    m.set(kernel="cmb", alpha=1.0)
    assert m.split().predicted_error == pytest.approx(base / 5)


def test_plan_of_hand_cuts_is_plan_for_cuts():
    m = KernelSplitModel(nside=32, backend="cpu", l_cut=20, theta_cut_arcmin=3000.0,
                         cost_model="paper")
    ref = plan_for_cuts(RadialKernel.cmb(640.0, 64), nside=32, l_cut=20,
                        theta_cut=m.theta_cut_arcmin * ARCMIN, cost_model=PaperCostModel())
    p = m.plan
    for name in ("method", "l_cut", "time_harmonic", "time_realspace", "time_total",
                 "time_all_harmonic", "speedup", "harmonic_backend", "realspace_backend"):
        assert getattr(p, name) == pytest.approx(getattr(ref, name)), name
    assert p.predicted_error == pytest.approx(ref.predicted_error, rel=1e-6)
    rows = dict(m.numbers())
    assert "paper's GPU" in rows["predicted harmonic / real space"]     # not "(cuda)"
    m.set(cost_model="measured")
    assert m.plan is None                                     # not timed here yet
    assert "not measured" in dict(m.numbers())["predicted times"]


def test_measured_costs_price_the_chosen_backend_alone():
    m = KernelSplitModel(nside=8, backend="cpu", cost_model="measured")
    assert m.optimize() is not None
    cm = m.plan.cost_model
    assert cm.harmonic_backends == ("cpu",) and cm.realspace_backends == ("cpu",)
    assert {m.plan.harmonic_backend, m.plan.realspace_backend} <= {"cpu", None}


def test_advice_points_the_right_way_where_raising_l_cut_raises_the_error():
    m = KernelSplitModel(nside=32, backend="cpu", cost_model="paper", l_cut=8,
                         theta_cut_arcmin=5760.0)
    fit, th = m._fitter(), m.theta_cut_arcmin * ARCMIN
    assert fit.error(9, th) > fit.error(8, th) > m.error_bound       # the ripple, here
    text = m.advice()
    assert "raising l_cut to 9 raises it" in text
    need = fit.smallest_l_cut(th, m.error_bound)
    assert f"l_cut {need} meets it" in text and fit.error(need, th) <= m.error_bound
    m.set(l_cut=need)
    assert m.advice() == "" and m.plan.meets_bound


def test_optimize_and_run_measure_the_plan():
    m = KernelSplitModel(nside=16, backend="cpu", cost_model="measured")
    plan = m.optimize()
    assert plan is not None and m.message == "" and m.plan is plan
    m.set(l_cut=16, theta_cut_arcmin=60.0 * 4096 / 32)
    hand = m.plan
    r = m.run()
    assert r is not None and m.message == "" and m.plan is r and r.measured is not None
    assert (r.l_cut, r.theta_cut, r.time_total) == (hand.l_cut, hand.theta_cut, hand.time_total)
    me = r.measured
    assert me.backend == "cpu" and me.spectrum_error <= 1e-5
    assert np.linalg.norm(me.plan_map - me.full_map) / np.linalg.norm(me.full_map) == \
        pytest.approx(me.map_error, rel=1e-6)
    assert m.map_figure() is not None and "measured speedup over all harmonic" in dict(m.numbers())


@pytest.mark.parametrize("settings, words", [
    (dict(l_cut=65), "l_cut must be a whole number from -1"),
    (dict(l_cut=-2), "l_cut must be a whole number from -1"),
    (dict(theta_cut_arcmin=0.0), "theta_cut must be above 0"),
    (dict(theta_cut_arcmin=20000.0), "at most 180 degrees"),
    (dict(theta_cut_arcmin=1.0), "too small"),
    (dict(nside=48, lmax=96), "nside must be a power of two"),
    (dict(nside=1024, lmax=2048), "not allowed on the cpu backend"),
    (dict(lmax=500), "lmax must be a whole number from 2 to 128"),
    (dict(fwhm_arcmin=-7.0), "fwhm_arcmin must be above 0"),
    (dict(error_bound=1e-20), "error_bound must be from 1e-12"),
    (dict(cost_model="fast"), "cost_model must be one of"),
])
def test_invalid_settings_give_a_message_not_an_exception(settings, words):
    m = KernelSplitModel(nside=32, backend="cpu", l_cut=20, theta_cut_arcmin=3000.0)
    assert not m.set(**settings)
    assert words in m.message
    assert m.split() is None and m.figure() is None and m.run() is None


def test_theta_above_the_scan_range_is_a_message():
    # the scan range is 12 steps of 30 arcmin scaled by 4096 / lmax: 2880 arcmin at lmax 512
    m = KernelSplitModel(nside=128, lmax=512, backend="cpu", l_cut=20, theta_cut_arcmin=2000.0)
    assert m.message == ""
    assert not m.set(theta_cut_arcmin=3000.0) and "too large: at most 2880" in m.message


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_controls_change_the_plot_and_numbers():
    p = kernel_split_panel(nside=32, backend="cpu", cost_model="paper", l_cut=20,
                           theta_cut_arcmin=3000.0)
    img, numbers = png(p.figure), p.numbers.value
    assert img is not None and "predicted error" in numbers
    p.l_cut.value = p.l_cut.value + 7
    assert png(p.figure) != img and p.numbers.value != numbers
    img = png(p.figure)
    p.theta.value = p.theta.max / 2
    assert png(p.figure) != img and p.model.theta_cut_arcmin == pytest.approx(p.theta.value)
    p.nside.value = 16                             # lmax follows: 2 nside
    assert p.l_cut.max == 32 and p.model.lmax == 32


def test_panel_messages_and_run_and_optimize():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="measured")
    p.l_cut.value = -1
    p.theta.value = p.theta.min
    assert "above the bound" in p.message.value
    p.optimize_button.click()
    assert p.model.plan is not None and p.progress.value == 1.0
    assert p.l_cut.value == p.model.l_cut
    p.l_cut.value = 16
    p.theta.value = 60.0 * 4096 / 32
    p.run_button.click()
    assert png(p.map_figure) is not None and "measured speedup" in p.numbers.value
    p.backend.value = "reference"                  # nside 16 is above the reference's limit
    assert "not allowed on the reference backend" in p.message.value
    assert png(p.figure) is None


@pytest.mark.timing
def test_panel_interactions_answer_within_a_second():
    # at the panel's default nside 64 (Binder size): each refit is 0.2-0.4 s on one core
    p = kernel_split_panel(backend="cpu", cost_model="paper")
    assert p.model.nside == 64
    p.l_cut.value = p.l_cut.value + 1                              # warm
    for control, value in [(p.l_cut, p.l_cut.value + 5), (p.theta, p.theta.value * 1.5),
                           (p.bound, 1e-6), (p.fwhm, 200.0), (p.kernel, "gaussian"),
                           (p.cost, "measured"), (p.nside, 128), (p.nside, 64)]:
        seconds = timed_here(lambda: setattr(control, "value", value))
        assert seconds < INTERACTION_BUDGET_S, (control.description, value, seconds)


def _shows_one_plan(p):
    """Sliders, numbers and the figure's marks of panel ``p`` are all its model's plan's."""
    m, plan = p.model, p.model.plan
    assert plan is not None
    html = p.numbers.value
    if plan.method == "harmonic":
        assert p.l_cut.value == m.lmax and p.theta.disabled and "all harmonic" in html
    else:
        assert p.l_cut.value == plan.l_cut and not p.theta.disabled
        assert p.theta.value == pytest.approx(plan.theta_cut_arcmin, rel=1e-9)
        assert f"theta_cut {plan.theta_cut_arcmin:.4g}′" in html
    assert f"{plan.predicted_error:.3g} (" in html
    assert f"{fmt_seconds(plan.time_total)} / {fmt_seconds(plan.time_all_harmonic)}" in html
    assert f"{plan.speedup:.3g}x" in html
    fig = m.figure()
    err_ax = next(a for a in fig.axes if a.get_xlabel() == "l_cut")
    stars = [ln for ln in err_ax.lines if ln.get_marker() == "*"]
    if plan.method == "harmonic":
        assert not stars
    else:
        (star,) = stars
        assert star.get_xdata()[0] == plan.l_cut
        assert star.get_ydata()[0] == pytest.approx(max(plan.predicted_error, 1e-16))
    if plan.measured is not None:
        me = plan.measured
        assert f"measured on {me.backend}" in html and f"{me.speedup:.3g}x" in html
        assert f"{fmt_seconds(me.time_total)} / {fmt_seconds(me.time_all_harmonic)}" in html


@pytest.mark.parametrize("backend, nside, cost", [("cpu", 16, "paper"), ("cpu", 8, "measured"),
                                                  ("reference", 8, "paper")])
def test_panel_shows_one_plan_after_optimize_slider_and_run(backend, nside, cost):
    p = kernel_split_panel(nside=nside, backend=backend, cost_model=cost)
    if cost == "measured":
        p.optimize_button.click()
    _shows_one_plan(p)                                  # opened on / after Optimize
    p.l_cut.value = max(0, p.model.lmax // 3)
    assert p.model.plan.method == "split" and p.model.plan.l_cut == p.l_cut.value
    _shows_one_plan(p)
    p.theta.value = p.theta.max * 0.55
    _shows_one_plan(p)
    p.run_button.click()
    assert p.model.plan.measured is not None and p.model.plan.measured.backend == backend
    _shows_one_plan(p)
    p.l_cut.value = p.model.lmax                        # all harmonic, shown as one
    _shows_one_plan(p)
    p.optimize_button.click()
    _shows_one_plan(p)


def test_all_harmonic_plan_from_optimize_is_shown_as_one():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper", l_cut=5,
                           theta_cut_arcmin=3000.0)
    assert p.model.plan.method == "split"
    p.optimize_button.click()
    assert p.model.plan.method == "harmonic"         # the paper's GPU costs 2.4 s to start
    _shows_one_plan(p)
    assert "1x" in p.numbers.value


def test_measured_times_exclude_the_first_runs_compilation(monkeypatch):
    """The first Run on a backend compiled kernels inside the timed calls (a split at nside 32
    on the CPU measured 17 s instead of 0.06 s, and a speedup of 0.001x): its first Run has an
    untimed warm-up round, later ones none, and the speedup says what it is over."""
    from sphgpu.widgets import _base, kernel_split

    monkeypatch.setattr(_base, "_TIMED", set())
    calls = []
    real = kernel_split.measure_plan
    monkeypatch.setattr(kernel_split, "measure_plan",
                        lambda plan, **kw: calls.append((kw["seed"], kw["warmup"]))
                        or real(plan, **kw))
    m = KernelSplitModel(nside=8, lmax=16, cost_model="paper", backend="cpu", l_cut=8,
                         theta_cut_arcmin=1500.0)
    assert m.message == "" and m.run() is not None
    assert calls == [(0, 1)]                      # one warm-up round, then the timed rounds
    m.set(seed=1)
    m.run()
    assert calls == [(0, 1), (1, 0)]
    rows = dict(m.numbers())
    assert "timed back to back per round" in rows["measured speedup over all harmonic"]
    assert "predicted speedup over all harmonic" in rows


def test_measured_speedup_is_repeated_timings_with_their_spread():
    """One run of each gave 0.0608x where repeated timing gave 0.0089x: Run times the whole
    kernel and the plan back to back in rounds, and shows the median speedup and its range,
    the same numbers as measure_plan's Ratio."""
    m = KernelSplitModel(nside=8, lmax=16, cost_model="paper", backend="cpu", l_cut=8,
                         theta_cut_arcmin=1500.0)
    r = m.run()
    me = r.measured
    ratio = me.speedup_ratio
    assert ratio is not None and ratio.n >= 2
    t = me.timings
    assert len(t["all harmonic"].seconds) == len(t["plan"].seconds) == ratio.n
    assert ratio.values == pytest.approx([a / b for a, b in zip(t["all harmonic"].seconds,
                                                                  t["plan"].seconds)])
    assert me.speedup == pytest.approx(ratio.median)
    assert me.time_total == pytest.approx(t["plan"].median)
    row = dict(m.numbers())["measured speedup over all harmonic"]
    assert row.startswith(ratio.text())
    assert f"over {ratio.n} pairs" in row or f"all {ratio.n} pairs" in row


def test_optimize_on_its_own_plan_says_so():
    m = KernelSplitModel(nside=16, backend="cpu", cost_model="paper")
    assert m.cuts_from[0] == "optimizer"          # opened on the optimizer's plan
    plan = m.optimize()
    assert plan is not None
    assert "already the fastest within the bound" in m.note and m.note in m.notes()
    m.set(l_cut=5, theta_cut_arcmin=3000.0)
    assert m.note == "" and m.cuts_from[0] == "hand"
    m.optimize()
    assert "already" not in m.note and "(was l_cut 5" in m.note


def test_panel_optimize_on_its_own_plan_shows_a_note():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper")
    p.optimize_button.click()
    assert "already the fastest" in p.message.value
    p.fwhm.value = p.fwhm.value + 20                  # any change clears the note
    assert "already the fastest" not in p.message.value


def test_theta_slider_says_why_it_is_off_while_all_harmonic():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper", l_cut=5,
                           theta_cut_arcmin=3000.0)
    assert not p.theta.disabled and p.theta_note.value == ""
    p.l_cut.value = p.model.lmax
    assert p.theta.disabled and "θ_cut unused: the plan is all harmonic" in p.theta_note.value
    p.l_cut.value = 5
    assert not p.theta.disabled and p.theta_note.value == ""


def test_a_run_whose_cuts_move_during_it_keeps_its_result_and_says_so():
    """In the browser a slider moved during Run reaches the kernel while (or right after) the
    run works: the measured plan must stay that of the cuts it ran, the cuts now shown must
    not be shown as measured, and the run's result is named, not dropped."""
    p = kernel_split_panel(nside=8, lmax=16, backend="cpu", cost_model="paper", l_cut=8,
                           theta_cut_arcmin=1500.0)
    moved = []

    def report(fraction, text=""):
        if not moved and fraction > 0.5:
            moved.append(True)
            p.l_cut.value = 6                         # the user moves l_cut mid-run
        type(p).report(p, fraction, text)

    p.report = report
    p.run_button.click()
    assert moved and p.l_cut.value == 6
    m = p.model
    assert m.plan.l_cut == 6 and m.plan.measured is None      # the new cuts: not measured
    assert m.last_run.l_cut == 8 and m.last_run.measured is not None
    assert "settings changed during the run" in p.message.value
    assert "last Run (other settings)" in p.numbers.value and "l_cut 8," in p.numbers.value
    m.set(l_cut=8)                                    # back to the cuts it ran: measured
    assert m.plan.measured is not None and m.plan.l_cut == 8


def test_after_nside_changes_the_optimizers_cuts_are_re_optimized():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper")
    assert p.model.cuts_from[0] == "optimizer"
    p.nside.value = 32
    m = p.model
    ref = optimize_split(m.radial_kernel(), nside=32, error_bound=m.error_bound,
                         cost_model="paper", theta_grid=m.scan_grid(), fitter=m._fitter())
    assert (m.plan.method, m.plan.l_cut) == (ref.method, ref.l_cut)
    assert m.cuts_from == ("optimizer", m.settings_key()) and m.stale_cuts() == ""
    assert "re-optimized" in p.message.value
    _shows_one_plan(p)


def test_after_nside_changes_cuts_that_cannot_be_re_optimized_are_called_stale():
    # hand cuts, and the optimizer's cuts where the measured cost model has no timings yet
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper", l_cut=5,
                           theta_cut_arcmin=3000.0)
    p.nside.value = 32
    assert "set by hand at nside 16: press Optimize" in p.message.value
    q = kernel_split_panel(nside=8, backend="cpu", cost_model="measured")
    q.optimize_button.click()
    assert q.model.cuts_from[0] == "optimizer"
    q.nside.value = 16                                # not timed at nside 16: no prices
    text = html.unescape(q.message.value)
    assert "the optimizer's plan for lmax 16, nside 8, not for these settings" in text
    assert "press Optimize" in text
    q.optimize_button.click()
    assert "the optimizer's plan for" not in html.unescape(q.message.value)
    assert q.model.cuts_from == ("optimizer", q.model.settings_key())


def test_panel_sliders_keep_the_models_settings():
    p = kernel_split_panel(nside=16, backend="cpu", cost_model="paper", fwhm_arcmin=0.3,
                           error_bound=1e-11)
    assert p.fwhm.value == 0.3 and p.bound.value == pytest.approx(1e-11)
    p.cost.value = "measured"
    assert p.model.fwhm_arcmin == 0.3 and p.model.error_bound == pytest.approx(1e-11)


def test_a_theta_cut_moved_to_the_fits_knots_is_said():
    m = KernelSplitModel(nside=16, backend="cpu", cost_model="paper")
    m.set(l_cut=10, theta_cut_arcmin=1000.0)
    assert m.message == "" and m.theta_cut_arcmin != 1000.0
    plan = dict(m.numbers())["plan"]
    assert f"theta_cut {m.theta_cut_arcmin:.4g}′ (taken at a knot of the fit" in plan
