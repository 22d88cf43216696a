"""Monte Carlo panel: what it shows is what sphgpu.sims computes (spectra, decoupled
bandpowers, the coupling matrix, throughput, mask numbers), runs continue and stop, messages,
and the panel headless."""

import math
import threading

import numpy as np
import pytest

from sphgpu.data import planck2018_cl
from sphgpu.master import Bins, Workspace, coupling_matrix
from sphgpu.sims import MonteCarlo, latitude_cut_mask
from sphgpu.testing import TOL
from sphgpu.widgets.montecarlo import (APODIZATION_DEG, RATIO_LMIN, MonteCarloModel, bin_width,
                                       montecarlo_panel)

from .conftest import INTERACTION_BUDGET_S, png, timed

SMALL = dict(nsims=6, nside=8, fwhm_arcmin=120.0, cut_deg=20.0, noise_muK=30.0, seed=3,
             backend="cpu")


def direct(nsims, nside=8, fwhm_arcmin=120.0, cut_deg=20.0, noise_muK=30.0, seed=3):
    """The same simulations through sphgpu.sims directly."""
    mask = latitude_cut_mask(nside, cut_deg, apodization_deg=APODIZATION_DEG)
    return MonteCarlo(planck2018_cl(2 * nside), nside, 2 * nside, fwhm_arcmin=fwhm_arcmin,
                      mask=mask, noise_sigma=noise_muK, seed=seed,
                      backend="cpu").run(nsims, progress=False), mask


def test_shown_spectra_and_numbers_are_sphgpu_sims_results():
    m = MonteCarloModel(**SMALL)
    r = m.run()
    assert m.message == "" and r.nsims == 6 and r.ran == 6
    mc, mask = direct(6)
    np.testing.assert_allclose(r.spectra, mc.spectra[:, 0], rtol=TOL["sims_same_skies_rtol"],
                               atol=0)
    assert r.w2 == pytest.approx(np.mean(mask**2)) and r.fsky == pytest.approx(mask.mean())
    rows = dict(r.numbers())
    assert rows["simulations"] == "6 of 6"
    assert rows["throughput"].startswith(f"{6 / r.seconds:.3g} simulations/s")
    assert rows["mask: f_sky / w2"] == f"{mask.mean():.3f} / {np.mean(mask**2):.3f}"
    # lmax 16 < RATIO_LMIN: no ratio to the model is shown rather than an empty one
    assert not any(k.startswith("⟨C_hat") for k in rows)
    s = mc.spectra[:, 0, 2:]
    want = np.median(s.std(axis=0, ddof=1) / s.mean(axis=0)) / math.sqrt(6)
    assert r.error_of_mean() == pytest.approx(want)
    assert rows["error of the mean (median over ℓ)"] == f"{100 * want:.2g} %"


def test_ratio_to_the_model_is_computed_from_the_spectra():
    m = MonteCarloModel(**dict(SMALL, nside=16, nsims=4))
    r = m.run()
    ell = np.arange(RATIO_LMIN, 33)
    per_sim = [np.sum((2 * ell + 1) * s[ell] / r.model[ell]) / np.sum(2 * ell + 1)
               for s in r.spectra]
    ratio, sigma = r.ratio()
    assert ratio == pytest.approx(np.mean(per_sim))
    assert sigma == pytest.approx(np.std(per_sim, ddof=1) / 2)
    assert dict(r.numbers())[f"⟨C_hat / w2 (b² C + N)⟩, ℓ ≥ {RATIO_LMIN}"] == \
        f"{ratio:.4f} ± {sigma:.4f}"


def test_decoupled_bandpowers_and_coupling_shown_are_sphgpu_master_results():
    """The panel's bandpowers are the Monte Carlo's, and those are sphgpu.master's Workspace
    applied to the pseudo-spectra (noise bias removed) with the mask's coupling matrix."""
    m = MonteCarloModel(**dict(SMALL, nside=32, nsims=5))
    r = m.run()
    mask = latitude_cut_mask(32, 20.0, apodization_deg=APODIZATION_DEG)
    coupling = coupling_matrix(mask, 64)
    np.testing.assert_allclose(r.coupling, coupling.blocks["00"], rtol=1e-12, atol=1e-15)
    bins = Bins.linear(64, bin_width(64), lmin=2)
    np.testing.assert_array_equal(r.bin_edges, bins.edges)
    np.testing.assert_allclose(r.ell_eff, bins.ell_eff, rtol=1e-15)
    mc, _ = direct(5, nside=32)
    ws = Workspace(coupling, bins, beam=mc.beam[0])
    noise = 30.0 ** 2 * 4 * math.pi / mc.plan.npix * np.mean(mask ** 2)    # white, flat
    want = ws.decouple_cell(mc.spectra[:, 0] - noise)
    np.testing.assert_allclose(r.bandpowers, want, rtol=1e-8, atol=1e-10 * np.abs(want).max())
    np.testing.assert_allclose(r.expected, ws.bin_theory(planck2018_cl(64)), rtol=1e-12)
    # the decoupled ratio row, from those numbers
    keep = bins.ell_eff >= RATIO_LMIN
    modes = np.array([np.sum(2 * bins.ells(b) + 1) for b in np.flatnonzero(keep)])
    per_sim = (want[:, keep] / r.expected[keep]) @ modes / modes.sum()
    ratio, sigma = r.decoupled_ratio()
    assert ratio == pytest.approx(per_sim.mean(), rel=1e-8)
    assert sigma == pytest.approx(per_sim.std(ddof=1) / math.sqrt(5), rel=1e-6)
    assert keep.sum() == 8                   # bins from l = 30 to 61
    rows = dict(r.numbers())
    assert rows[f"⟨decoupled C_b / binned input⟩, ℓ ≥ {RATIO_LMIN}"] == \
        f"{ratio:.4f} ± {sigma:.4f}"
    dev = (ratio - 1) / sigma
    assert rows["decoupled (MASTER) bandpowers"].startswith(f"{abs(dev):.1f}σ")
    assert "15 bins of 4 ℓ" in rows["decoupled (MASTER) bandpowers"]


def test_the_decoupled_ratio_is_consistent_with_one_where_the_fsky_ratio_is_not():
    """A cut that hides 45 degrees around the equator, at nside 32: 1000 simulations put the
    f_sky-style ratio 1.2 % (7-8 sigma, seeds 1-3) below 1 and the decoupled one within 1 sigma
    of it (what the numbers table says)."""
    m = MonteCarloModel(nsims=1000, nside=32, fwhm_arcmin=60.0, cut_deg=45.0, noise_muK=5.0,
                        seed=1, backend="cpu")
    r = m.run()
    rows = dict(r.numbers())
    ratio, sigma = r.decoupled_ratio()
    assert abs(ratio - 1) < 3 * sigma
    assert "consistent with 1" in rows["decoupled (MASTER) bandpowers"]
    naive, naive_sigma = r.ratio()
    assert abs(naive - 1) > 4 * naive_sigma, (naive, naive_sigma)
    assert rows["why not exactly 1"].startswith(f"{abs(naive - 1) / naive_sigma:.1f}σ")


def test_figure_draws_the_bandpowers_and_the_coupling_matrix_on_a_log_scale():
    from matplotlib.colors import LogNorm

    m = MonteCarloModel(**dict(SMALL, nside=16, nsims=3))
    r = m.run()
    fig = m.figure()
    spectra_ax, matrix_ax = fig.axes[0], fig.axes[1]
    image = matrix_ax.images[0]
    assert isinstance(image.norm, LogNorm) and image.get_array().shape == (33, 33)
    np.testing.assert_allclose(np.asarray(image.get_array()).max(), np.abs(r.coupling).max())
    # the decoupled means are drawn as D_b at the bins' effective l
    lb = r.ell_eff
    drawn = [line.get_ydata() for line in spectra_ax.lines if len(line.get_xdata()) == len(lb)
             and np.allclose(line.get_xdata(), lb)]
    want = lb * (lb + 1) / (2 * np.pi) * r.bandpowers.mean(axis=0)
    assert any(np.allclose(y, want, rtol=1e-12) for y in drawn)


def test_more_simulations_continue_the_run_and_fewer_recompute_nothing():
    m = MonteCarloModel(**SMALL)
    first = m.run().spectra
    m.set(nsims=9)
    assert not m.live
    r = m.run()
    assert r.ran == 3 and r.nsims == 9
    np.testing.assert_array_equal(r.spectra[:6], first)
    # another run of the same skies: equal to rounding (ducc0 on several threads sums in an
    # order that varies between calls)
    np.testing.assert_allclose(r.spectra, direct(9)[0].spectra[:, 0],
                               rtol=TOL["sims_same_skies_rtol"], atol=0)
    m.set(nsims=4)
    assert m.live
    r = m.run()
    assert r.ran == 0 and r.rate == 0 and r.nsims == 4
    assert "none run" in dict(r.numbers())["throughput"]
    m.set(fwhm_arcmin=60.0)                 # another sky: not done yet
    assert not m.live


def test_progress_and_batches_are_reported():
    m = MonteCarloModel(**dict(SMALL, nsims=4))
    m._montecarlo().batch_size = 1
    seen, shown = [], []
    m.run(progress=lambda f, t="": seen.append((f, t)),
          on_batch=lambda r: shown.append(r.nsims))
    assert shown == [1, 2, 3, 4] and seen[-1] == (1.0, "4 of 4 simulations")
    assert [h[0] for h in m.result.history] == [1, 2, 3, 4]


@pytest.mark.parametrize("settings, words", [
    (dict(nsims=1), "nsims must be"),
    (dict(nside=1024), "nside 1024 is not allowed"),
    (dict(nside=1), "nside must be"),
    (dict(fwhm_arcmin=-1.0), "fwhm_arcmin must be"),
    (dict(cut_deg=70.0), "cut_deg must be"),
    (dict(noise_muK=-1.0), "noise_muK must be"),
    (dict(seed=-1), "seed must be"),
    (dict(backend="gpu"), "backend must be one of"),
])
def test_invalid_settings_give_a_message(settings, words):
    m = MonteCarloModel(**SMALL)
    assert not m.set(**settings) and words in m.message
    assert m.run() is None and m.figure() is None


def test_cuda_without_a_gpu_is_a_message(no_gpu):
    m = MonteCarloModel(**dict(SMALL, backend="cuda"))
    assert "the cuda backend cannot run here" in m.message


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_runs_in_the_background_and_shows_the_results():
    p = montecarlo_panel(**SMALL)
    assert "press Run" in p.message.value and png(p.figure) is None
    p.run_button.click()
    assert p.wait(60)
    assert png(p.figure) is not None and "6 of 6" in p.numbers.value
    assert p.progress.value == 1.0 and not p.run_button.disabled and p.stop_button.disabled
    img = png(p.figure)
    p.nsims.value = 4                        # done already: shown at once, nothing run
    assert "none run" in p.numbers.value and png(p.figure) != img
    p.fwhm.value = 60.0                      # another sky: stale until Run
    assert "press Run" in p.message.value and png(p.figure) is None
    p.nside.value = 32
    p.backend.value = "reference"            # the NumPy reference: nside <= 16
    assert "nside 32 is not allowed on the reference backend" in p.message.value


def test_stop_ends_the_run_and_run_continues():
    p = montecarlo_panel(**dict(SMALL, nsims=100_000))
    p.model._montecarlo().batch_size = 1
    started = threading.Event()
    real = p._batch

    def batch(result):
        real(result)
        started.set()

    p._batch = batch
    p.run_button.click()
    assert started.wait(60)
    p.stop_button.click()
    assert p.wait(60)
    n = p.model.result.nsims
    assert 1 <= n < 100_000 and p.model.result.stopped
    assert f"{n} of 100000 (stopped: Run continues)" in p.numbers.value
    started.clear()
    p.run_button.click()                    # the same settings: the run continues
    assert "stopped" not in p.numbers.value
    assert started.wait(60)
    p.stop_button.click()
    assert p.wait(60)
    n = p.model.result.nsims
    p.nsims.value = n + 2
    p.run_button.click()
    assert p.wait(60) and p.model.result.nsims == n + 2 and p.model.result.ran == 2


@pytest.mark.timing
def test_panel_interactions_answer_within_a_second():
    p = montecarlo_panel(**SMALL)
    p.run_button.click()
    assert p.wait(60)
    for control, value in [(p.nsims, 5), (p.fwhm, 30.0), (p.cut, 10.0), (p.nside, 16),
                           (p.nsims, 50)]:
        seconds = timed(lambda: setattr(control, "value", value))
        assert seconds < INTERACTION_BUDGET_S, (control.description, value, seconds)


def test_auto_backend_is_the_panels_default():
    from sphgpu.widgets._base import default_backend

    assert MonteCarloModel(**dict(SMALL, backend="auto")).backend == default_backend()


# -- settings changed while a run goes on -------------------------------------------------------
def test_a_run_whose_settings_change_describes_its_own_settings():
    m = MonteCarloModel(**dict(SMALL, nsims=4))
    m._montecarlo().batch_size = 1
    before = m.settings
    seen = []

    def on_batch(result):
        seen.append(result)
        if len(seen) == 1:                  # as the panel does from the main thread
            m.set(nside=16, noise_muK=0.0, fwhm_arcmin=30.0)
        if len(seen) == 2:
            m.set(nsims=1)                  # invalid: a message for the new settings only
        if len(seen) == 3:
            with pytest.raises(RuntimeError, match="already going"):
                m.run()                     # never two runs at once on one model

    r = m.run(on_batch=on_batch)
    assert r is not None and r is m.result
    assert "nsims must be" in m.message     # about the settings now, not about the run
    mc, mask = direct(4)
    w2 = np.mean(mask**2)
    want = w2 * (mc.beam[0] ** 2 * planck2018_cl(16) + 30.0**2 * 4 * math.pi / mc.plan.npix)
    for res in seen + [r]:
        assert res.settings == before and res.nside == 8 and res.lmax == 16
        assert res.target == 4 and res.backend == "cpu"
        np.testing.assert_allclose(res.model, want, rtol=1e-13)
        assert dict(res.numbers())["nside / lmax"] == "8 / 16"
    np.testing.assert_allclose(r.spectra, mc.spectra[:, 0], rtol=TOL["sims_same_skies_rtol"],
                               atol=0)
    assert m.settings != before and m.running is None


def _blocking_batches(panel, hold, hold_second=None):
    """Replace ``panel._batch`` so that the background run waits in its first batch until
    ``hold`` is set (and after its second until ``hold_second`` is, if given); returns events
    set in the first batch and after the second."""
    first, second = threading.Event(), threading.Event()
    real, calls = panel._batch, []

    def batch(result):
        calls.append(result)
        if len(calls) == 1:
            first.set()
            assert hold.wait(60)
        real(result)
        if len(calls) == 2:
            second.set()
            assert hold_second is None or hold_second.wait(60)

    panel._batch = batch
    panel.REDRAW_S = panel.REDRAW_GAP = 0.0  # every batch would redraw
    return first, second


def test_a_setting_changed_during_a_run_is_not_overwritten_by_the_run():
    p = montecarlo_panel(**dict(SMALL, nsims=100_000))
    p.model._montecarlo().batch_size = 1
    changed = threading.Event()
    first, second = _blocking_batches(p, changed)
    p.run_button.click()
    assert first.wait(60)
    p.fwhm.value = 60.0                     # another sky, not simulated yet
    changed.set()
    assert second.wait(60)                  # the old run redrew and reported progress since
    assert png(p.figure) is None and p.numbers.value == ""
    assert p.progress.value == 0.0 and p.progress_label.value == ""
    assert "take effect when it ends" in p.message.value and p.run_button.disabled
    p.stop_button.click()                   # Stop still ends the old run
    assert p.wait(60)
    assert "press Run" in p.message.value and png(p.figure) is None
    assert p.numbers.value == "" and p.progress.value == 0.0
    assert not p.run_button.disabled and p.stop_button.disabled
    r = p.model.result                      # the old run's result, saying so
    assert r.stopped and r.settings.fwhm_arcmin == 120.0 and r.settings.nsims == 100_000
    p.nsims.value = 3
    p.run_button.click()                    # Run now runs what the controls show
    assert p.wait(60) and "3 of 3" in p.numbers.value and p.model.result.ran == 3
    assert p.model.result.settings.fwhm_arcmin == 60.0


def test_done_settings_chosen_during_a_run_start_no_second_run_and_show_when_it_ends():
    p = montecarlo_panel(**SMALL)
    p.run_button.click()
    assert p.wait(60)                       # fwhm 120': 6 simulations done
    p.fwhm.value = 60.0
    p.nsims.value = 100_000
    p.model._montecarlo().batch_size = 1
    runs, active = [], []
    real_run = p.model.run

    def counted(*args, **kw):
        active.append(1)
        runs.append(len(active))
        try:
            return real_run(*args, **kw)
        finally:
            active.pop()

    p.model.run = counted
    changed = threading.Event()
    first, second = _blocking_batches(p, changed)
    p.run_button.click()
    assert first.wait(60)
    p.fwhm.value = 120.0
    p.nsims.value = 4                       # done already, but a run is going: wait for it
    changed.set()
    assert second.wait(60)
    assert max(runs) == 1 and png(p.figure) is None and p.numbers.value == ""
    assert "take effect when it ends" in p.message.value
    p.stop_button.click()
    assert p.wait(60)                       # when it ends, the done ones are shown at once
    assert max(runs) == 1
    assert "4 of 4" in p.numbers.value and "none run" in p.numbers.value
    assert p.model.result.settings == p.model.settings and png(p.figure) is not None
    assert p.progress.value == 1.0 and p.progress_label.value == "4 of 4 simulations"
    assert p.message.value == ""


def test_a_count_changed_during_the_final_redraw_is_what_is_shown():
    p = montecarlo_panel(**SMALL)
    ended, changed = threading.Event(), threading.Event()
    real_run = p.model.run

    def run(*args, **kw):
        r = real_run(*args, **kw)
        if threading.current_thread() is not threading.main_thread() and not ended.is_set():
            ended.set()                     # computed, not drawn yet
            assert changed.wait(60)
        return r

    p.model.run = run
    p.run_button.click()
    assert ended.wait(60)
    p.nsims.value = 3
    changed.set()
    assert p.wait(60)
    assert "3 of 3" in p.numbers.value and p.model.result.nsims == 3
    assert p.message.value == ""


def test_back_to_the_runs_settings_during_it_shows_its_batches_again():
    p = montecarlo_panel(**dict(SMALL, nsims=100_000))
    p.model._montecarlo().batch_size = 1
    changed, checked = threading.Event(), threading.Event()
    first, second = _blocking_batches(p, changed, checked)
    p.run_button.click()
    assert first.wait(60)
    p.fwhm.value = 60.0
    assert "take effect when it ends" in p.message.value
    p.fwhm.value = 120.0                    # the run's own settings again
    assert "next batch" in p.message.value and png(p.figure) is None
    changed.set()
    assert second.wait(60)
    assert png(p.figure) is not None and "2 of 100000" in p.numbers.value
    assert p.progress_label.value == "2 of 100000 simulations" and p.message.value == ""
    p.stop_button.click()
    checked.set()
    assert p.wait(60) and "2 of 100000 (stopped: Run continues)" in p.numbers.value


def test_stop_pressed_before_the_run_has_begun_still_ends_it():
    p = montecarlo_panel(**dict(SMALL, nsims=100_000))
    p.model._montecarlo().batch_size = 1
    go = threading.Event()
    real_run = p.model.run

    def run(*args, **kw):
        assert go.wait(60)                  # the thread has started, the model not yet
        return real_run(*args, **kw)

    p.model.run = run
    p.run_button.click()
    p.stop_button.click()
    go.set()
    assert p.wait(60)
    r = p.model.result
    assert r.stopped and r.nsims == 1 and "1 of 100000 (stopped" in p.numbers.value


def test_throughput_on_screen_counts_the_redraws():
    """"54.3 simulations/s (336 in 6.2 s)" was shown for a run that took 33 s on screen: the
    computing rate says that drawing is left out, and a second rate is over the wall time
    with the redraws of the run included."""
    import time as _time

    m = MonteCarloModel(**dict(SMALL, nsims=8))
    t0 = _time.perf_counter()
    r = m.run(on_batch=lambda res: _time.sleep(0.05))     # a slow redraw after each batch
    wall = _time.perf_counter() - t0
    batches = len(r.history)
    assert r.seconds <= r.wall_seconds <= wall
    assert r.wall_seconds - r.seconds >= 0.05 * batches * 0.9
    rows = dict(r.numbers())
    assert rows["throughput"] == (f"{r.rate:.3g} simulations/s (8 in {r.seconds:.2g} s of "
                                  f"computing, drawing left out)")
    assert rows["throughput on screen"].startswith(
        f"{8 / r.wall_seconds:.3g} simulations/s (8 in {r.wall_seconds:.2g} s of wall time")
    assert r.wall_rate < r.rate


def test_the_ratios_offset_from_one_is_explained_by_the_mask():
    m = MonteCarloModel(**dict(SMALL, nside=16, nsims=4))
    r = m.run()
    ratio, sigma = r.ratio()
    note = dict(r.numbers())["why not exactly 1"]
    assert f"{abs(ratio - 1) / sigma:.1f}σ" in note
    assert "mask couples multipoles" in note and "bandpowers" in note
    full = MonteCarloModel(**dict(SMALL, nside=16, nsims=4, cut_deg=0.0)).run()
    assert full.fsky == 1.0
    assert "full sky has no mode coupling" in dict(full.numbers())["why not exactly 1"]


def test_redraws_take_at_most_a_quarter_of_a_run():
    """Each redraw renders a PNG; on a slow machine it took longer than a batch and a redraw
    after every batch multiplied the run's time on screen: the next redraw waits at least
    REDRAW_GAP times the last one's duration."""
    import time as _time

    p = montecarlo_panel(**SMALL)
    drawing = [0.0]

    def slow_show(result):
        t = _time.perf_counter()
        _time.sleep(0.2)
        drawing[0] += _time.perf_counter() - t
        return True

    p._show = slow_show
    t0 = _time.perf_counter()
    while _time.perf_counter() - t0 < 2.5:
        p._batch(None)
        _time.sleep(0.01)                      # a batch of simulations
    elapsed = _time.perf_counter() - t0
    # (the first redraw comes at once; each later one after three times a redraw's time)
    assert drawing[0] - 0.2 <= 0.25 * elapsed + 0.05
    assert drawing[0] >= 0.4                   # but it does redraw
