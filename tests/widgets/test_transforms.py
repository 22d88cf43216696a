"""Transform explorer: the model against direct sphgpu calls (polarized: T, E, B <-> I, Q, U),
messages for invalid settings, and the panel driven headless."""

import numpy as np
import pytest

import sphgpu
from sphgpu.data import planck2018_cl
from sphgpu.widgets.transforms import TransformModel, transform_panel

from .conftest import INTERACTION_BUDGET_S, png, timed


SPECTRA4 = ("TT", "EE", "BB", "TE")


def _pipeline(nside, lmax, fwhm, seed, iter):
    """The explorer's sky written out with sphgpu's public functions: (a_lm, IQU, anafast)."""
    cl4 = planck2018_cl(lmax, spectra=SPECTRA4)
    bl = sphgpu.gauss_beam(fwhm_arcmin=fwhm, lmax=lmax, pol=True)
    teb = sphgpu.synalm(cl4, lmax, new=True, seed=seed)
    teb = np.stack([sphgpu.almxfl(teb[i], bl[:, i]) for i in range(3)])
    iqu = sphgpu.alm2map(teb, nside, lmax, backend="cpu")
    return teb, iqu, sphgpu.anafast(iqu, lmax=lmax, iter=iter, backend="cpu"), cl4, bl


def test_model_result_is_the_public_api_pipeline():
    m = TransformModel(nside=16, lmax=32, fwhm_arcmin=120.0, seed=7, iter=2, backend="cpu")
    r = m.run()
    assert m.message == "" and r is not None
    teb, iqu, cl6, cl4, bl = _pipeline(16, 32, 120.0, 7, 2)
    back = sphgpu.map2alm(iqu, 32, iter=2, backend="cpu")
    np.testing.assert_array_equal(r.maps, iqu)
    np.testing.assert_array_equal(r.map, iqu[0])                  # T is shown by default
    np.testing.assert_allclose(r.cl_hat, cl6, rtol=1e-12, atol=1e-30)
    assert r.cl_hat.shape == r.cl_model.shape == (6, 33)
    np.testing.assert_allclose(r.cl_model[0], cl4[0] * bl[:, 0] ** 2, rtol=1e-14)
    np.testing.assert_allclose(r.cl_model[1], cl4[1] * bl[:, 1] ** 2, rtol=1e-14)
    np.testing.assert_allclose(r.cl_model[2], cl4[2] * bl[:, 2] ** 2, rtol=1e-14)
    np.testing.assert_allclose(r.cl_model[3], cl4[3] * bl[:, 0] * bl[:, 1], rtol=1e-14)
    assert not r.cl_model[4:].any()                               # no EB, TB in the input
    assert r.roundtrip_error == pytest.approx(np.linalg.norm(back - teb) / np.linalg.norm(teb))
    assert r.synthesis_s > 0 and r.analysis_s > 0 and r.maps.shape == (3, 12 * 16**2)


def test_shown_map_and_its_numbers_follow_the_field_toggle_without_recomputing():
    m = TransformModel(nside=16, lmax=32, fwhm_arcmin=120.0, seed=7, backend="cpu")
    m.run()
    teb, iqu, *_ = _pipeline(16, 32, 120.0, 7, 3)
    misses = (m._synth.misses, m._analysis.misses)
    want = {"T": iqu[0], "Q": iqu[1], "U": iqu[2],
            # E-only / B-only skies: that a_lm alone, synthesized as a spin-0 field
            "E": sphgpu.alm2map(teb[1], 16, 32, backend="cpu"),
            "B": sphgpu.alm2map(teb[2], 16, 32, backend="cpu")}
    for field, sky in want.items():
        assert m.set(field=field)
        r = m.result
        np.testing.assert_allclose(r.map, sky, rtol=1e-12, atol=1e-12 * np.abs(sky).max())
        rms = dict(r.numbers())[f"map rms ({field})"]
        assert rms == f"{sky.std():.3g} μK"
    assert (m._synth.misses, m._analysis.misses) == misses
    # the polarization is sub-percent of the temperature, B below E: Planck's sky
    assert want["Q"].std() < 0.01 * want["T"].std() and want["B"].std() < want["E"].std()


def test_each_parameter_changes_the_output():
    m = TransformModel(nside=16, backend="cpu")
    base = m.run()
    assert m.set(seed=1) and not np.array_equal(m.run().map, base.map)
    m.set(seed=0)
    assert np.array_equal(m.run().map, base.map)                 # reproducible (and cached)
    m.set(fwhm_arcmin=300.0)
    assert m.run().map.std() < base.map.std()                    # a wider beam smooths
    m.set(fwhm_arcmin=60.0, iter=0)
    assert m.run().roundtrip_error > base.roundtrip_error        # Jacobi iterations help
    m.set(iter=3, lmax=20)
    r = m.run()
    assert r.cl_hat.shape == (6, 21) and r.lmax == 20
    m.set(nside=8, lmax=16)
    assert m.run().map.size == 12 * 8**2


def test_spectrum_ratio_is_the_mode_weighted_mean_where_the_beam_leaves_signal():
    m = TransformModel(nside=32, lmax=64, fwhm_arcmin=600.0, backend="cpu", seed=3)
    r = m.run()
    bl2 = sphgpu.gauss_beam(fwhm_arcmin=600.0, lmax=64) ** 2
    ell = np.arange(65)
    keep = (ell >= 2) & (bl2 >= 1e-3)
    assert r.ratio_range == (2, int(ell[keep][-1])) and r.ratio_range[1] < 64
    modes = 2 * ell[keep] + 1
    want = np.sum(modes * r.cl_hat[0, keep] / r.cl_model[0, keep]) / modes.sum()
    ratio, sigma = r.spectrum_ratio
    assert ratio == pytest.approx(want, rel=1e-12)
    assert sigma == pytest.approx(np.sqrt(2 / modes.sum()))
    label, text = [row for row in r.numbers() if row[0].startswith("⟨C_hat")][0]
    assert label == f"⟨C_hat / C b²⟩, ℓ 2–{r.ratio_range[1]}"
    assert text.startswith(f"{ratio:.3f} ± {sigma:.3f}")
    # EE and BB: their own beam columns choose the l (gauss_beam's E and B columns)
    bl = sphgpu.gauss_beam(fwhm_arcmin=600.0, lmax=64, pol=True)
    for row, spec in [(1, "EE"), (2, "BB")]:
        keep = (ell >= 2) & (bl[:, row] ** 2 >= 1e-3)
        lo, hi = r.ratio_range_of(spec)
        assert (lo, hi) == (2, int(ell[keep][-1]))
        modes = 2 * ell[keep] + 1
        want = np.sum(modes * r.cl_hat[row, keep] / r.cl_model[row, keep]) / modes.sum()
        assert r.ratio_of(spec)[0] == pytest.approx(want, rel=1e-12)
        label, text = [row for row in r.numbers() if row[0].startswith(f"{spec}: ⟨C_hat")][0]
        assert label.endswith(f"ℓ {lo}–{hi}") and text.startswith(f"{want:.3f} ±")


def _beams_offered():
    panel = transform_panel(nside=16, backend="cpu")
    s = panel.fwhm
    return [s.min, s.step, 30.0, 60.0, 180.0, s.max], [n for n in panel.nside.options
                                                       if n <= 512]


@pytest.mark.parametrize("seed", [0, pytest.param(2018, marks=pytest.mark.slow)])
def test_spectrum_ratio_is_near_one_for_every_nside_and_beam_offered(seed):
    """Issue 20: at nside 512 with a 60' beam the ratio read 5e10 (l where b_l^2 ~ 1e-24)."""
    beams, nsides = _beams_offered()
    assert min(nsides) == 16 and 512 in nsides
    for nside in nsides:
        for fwhm in (beams if nside <= 128 else [0.0, 60.0, 600.0]):
            m = TransformModel(nside=nside, fwhm_arcmin=fwhm, seed=seed, backend="cpu")
            r = m.run()
            for spec in ("TT", "EE", "BB"):
                ratio, _ = r.ratio_of(spec)
                assert 0.8 <= ratio <= 1.25, (spec, nside, fwhm, ratio, r.ratio_range_of(spec))


def test_results_are_cached():
    m = TransformModel(nside=16, backend="cpu")
    m.run()
    m.set(iter=1)
    m.run()
    assert m._synth.misses == 1 and m._analysis.misses == 2     # iter reuses the synthesis
    m.set(iter=3)
    m.run()
    assert m._analysis.misses == 2


@pytest.mark.parametrize("settings, words", [
    (dict(nside=16, lmax=65), "lmax must be a whole number from 2 to 64"),
    (dict(nside=0), "nside must be a whole number >= 1"),
    (dict(nside="16"), "nside must be a whole number"),
    (dict(nside=1024, backend="cpu"), "nside 1024 is not allowed on the cpu backend"),
    (dict(nside=64, backend="reference"), "at most 32"),
    (dict(backend="gpu"), "backend must be one of"),
    (dict(iter=-1), "iter must be"),
    (dict(fwhm_arcmin=-5.0), "fwhm_arcmin must be"),
    (dict(field="I"), "field must be one of T, Q, U, E, B"),
    (dict(spectrum="EB"), "spectrum must be one of TT, EE, BB, TE"),
])
def test_invalid_settings_give_a_message_not_an_exception(settings, words):
    m = TransformModel(nside=16, backend="cpu")
    assert not m.set(**settings)
    assert words in m.message
    assert m.run() is None and m.result is None and words in m.message


def test_cuda_without_a_gpu_is_a_message(no_gpu):
    m = TransformModel(nside=16, backend="cuda")
    assert "the cuda backend cannot run here" in m.message and m.run() is None


def test_live_only_at_small_sizes():
    m = TransformModel(nside=64, backend="cpu")
    assert m.live
    m.set(nside=128, lmax=256)
    assert not m.live and m.message == ""


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_controls_change_the_plot_and_numbers():
    p = transform_panel(nside=16, backend="cpu")
    img, numbers = png(p.figure), p.numbers.value
    assert img is not None and "μK" in numbers and p.message.value == ""
    p.seed.value = 5
    assert png(p.figure) != img and p.numbers.value != numbers
    img, numbers = png(p.figure), p.numbers.value
    p.iter.value = 0                               # only the analysis changes
    assert p.model.result.iter == 0 and p.numbers.value != numbers
    p.nside.value = 32                             # lmax follows nside: range 2..4 nside
    assert p.lmax.max == 128 and p.lmax.value == 64 and p.model.result.nside == 32
    p.lmax.value = 40
    assert p.model.result.lmax == 40


def test_panel_large_sizes_wait_for_run():
    p = transform_panel(nside=16, backend="cpu", live_max_nside=16)
    p.nside.value = 32
    assert "press Run" in p.message.value and png(p.figure) is None and p.numbers.value == ""
    p.run_button.click()
    assert png(p.figure) is not None and p.model.result.nside == 32
    assert p.progress.value == 1.0 and p.message.value == ""


def test_panel_shows_messages_for_invalid_settings(no_gpu):
    p = transform_panel(nside=16, backend="cpu")
    assert "cuda" not in p.backend.options                # no toggle for a GPU that is not here
    c = transform_panel(nside=16, backend="cuda")         # asked for by name: says why not
    assert "cuda backend cannot run here" in c.message.value and png(c.figure) is None
    c.backend.value = "cpu"
    assert c.message.value == "" and png(c.figure) is not None
    p.nside.value = 1024
    assert "not allowed on the cpu backend" in p.message.value
    p.run_button.click()                           # Run on invalid settings: still a message
    assert "not allowed" in p.message.value and png(p.figure) is None
    q = transform_panel(nside=16, lmax=500, backend="cpu")
    assert "lmax must be" in q.message.value


# The polarized panel redraws three axes (Mollweide map with graticule, zoom, spectrum):
# 0.95 s for a new sky at nside 64 on the 2-core CI machine alone, 1.07 s beside a second
# pytest worker, of which 0.72 s is matplotlib's drawing and 0.1 s the transforms. Its budget
# is 1.5 s, looser than the other panels' 1 s, until the drawing is made cheaper.
TRANSFORM_BUDGET_S = 1.5 * INTERACTION_BUDGET_S


@pytest.mark.timing
def test_panel_interactions_answer_within_the_budget():
    p = transform_panel(nside=64, backend="cpu")            # Binder size; warm
    p.seed.value = 1
    for control, value in [(p.seed, 2), (p.fwhm, 30.0), (p.iter, 1), (p.lmax, 100),
                           (p.field, "Q"), (p.spectrum, "EE"), (p.field, "B"),
                           (p.nside, 32), (p.nside, 128)]:
        seconds = timed(lambda: setattr(control, "value", value))
        assert seconds < TRANSFORM_BUDGET_S, (control.description, value, seconds)
    # the NumPy reference is the slow specification, offered for checking, not for speed:
    # switching to it must work, with no time budget (1.19 s on a loaded 2-core machine)
    p.nside.value = 32
    p.backend.value = "reference"
    assert "reference" in p.model.backend


def test_map_and_spectrum_toggles_change_the_plot_not_the_sky():
    p = transform_panel(nside=16, backend="cpu")
    misses = (p.model._synth.misses, p.model._analysis.misses)
    seen = {png(p.figure)}
    for field in ("Q", "U", "E", "B"):
        numbers = p.numbers.value
        p.field.value = field
        assert f"map rms ({field})" in p.numbers.value and p.numbers.value != numbers
        seen.add(png(p.figure))
    for spec in ("EE", "BB", "TE"):
        p.spectrum.value = spec
        seen.add(png(p.figure))
        sx = next(a for a in p.model.figure().axes if a.get_title().startswith(spec))
        assert sx.get_yscale() == ("linear" if spec == "TE" else "log")
        assert "μK²" in sx.get_ylabel()
    assert len(seen) == 8 and None not in seen                   # every toggle redrew
    assert (p.model._synth.misses, p.model._analysis.misses) == misses
    fig = p.model.figure()                                       # the colour bar names it
    assert any(a.get_title().startswith("B:") for a in fig.axes)
    assert any("B-mode" in a.get_xlabel() and "μK" in a.get_xlabel() for a in fig.axes)
    p.seed.value = 3                                             # a new sky keeps the view
    assert p.model.result.field == "B" and p.model.result.spectrum == "TE"


def test_zoom_redraws_the_shown_map_without_recomputing():
    p = transform_panel(nside=16, backend="cpu")
    img, misses = png(p.figure), (p.model._synth.misses, p.model._analysis.misses)
    p.zoom_lat.value = 45.0
    assert png(p.figure) != img
    assert (p.model._synth.misses, p.model._analysis.misses) == misses
    fig = p.model.figure()
    zoom = next(a for a in fig.axes if a.get_title().startswith("zoom"))
    assert "zoom on (0°, 45°)" in zoom.get_title() and "deg" in zoom.get_xlabel()
    p.zoom_width.value = 0.5                              # below the slider: clamped to 1
    assert p.zoom_width.value == 1.0 and p.message.value == ""
    assert not p.model.set(zoom_lat=95.0) and "zoom latitude" in p.model.message


def test_figure_title_is_of_the_sky_drawn_not_of_later_settings():
    m = TransformModel(nside=16, fwhm_arcmin=120.0, seed=3, backend="cpu")
    m.run()
    m.set(seed=5, fwhm_arcmin=60.0)                 # not run: the result is still seed 3
    title = m.figure().axes[0].get_title()
    assert "seed 3" in title and "120′ beam" in title


def test_timings_say_what_they_include(monkeypatch):
    from sphgpu.widgets import _base

    monkeypatch.setattr(_base, "_TIMED", set())
    m = TransformModel(nside=16, backend="cpu")
    rows = dict(m.run().numbers())
    syn = "alm2map (T, E, B → I, Q, U), one call, NumPy in and out"
    ana = "map2alm (iter=3), one call, NumPy in and out"
    assert "first call in this session" in rows[syn] and "first call" in rows[ana]
    m.set(seed=1)
    rows = dict(m.run().numbers())
    assert "first call" not in rows[syn] and "first call" not in rows[ana]


def test_panel_controls_keep_the_models_settings():
    """A slider whose range left out the model's value clamped it silently, and the next
    change of any control sent the clamped value to the model."""
    p = transform_panel(nside=16, seed=150, fwhm_arcmin=700.0, backend="cpu")
    assert p.seed.value == 150 and p.fwhm.value == 700.0
    p.iter.value = 1
    assert p.model.seed == 150 and p.model.fwhm_arcmin == 700.0
    assert "seed 150" in p.model.figure().axes[0].get_title()


# ----------------------------------------------------------------------------- open a map
def _upload_value(name, content):
    """What ipywidgets' FileUpload holds after a browser upload of one file."""
    import datetime

    return ({"name": name, "type": "application/fits", "size": len(content),
             "content": memoryview(content),
             "last_modified": datetime.datetime.now(datetime.timezone.utc)},)


def test_open_a_map_by_upload_shows_the_file_with_sphgpus_numbers():
    path = sphgpu.io.data_path(sphgpu.io.sky.WMAP_MAP)
    content = open(path, "rb").read()
    panel = transform_panel(nside=16, backend="cpu", fwhm_arcmin=13.2)
    panel.unit.value = "mK"                      # the WMAP file has no TUNIT: it is in mK
    panel.upload.value = _upload_value("wmap_w.fits", content)
    m = panel.model
    assert m.message == "" and m.opened["name"] == "wmap_w.fits"
    r = m.result
    assert r is not None and r.source == "wmap_w.fits" and r.nside == 32 == panel.nside.value
    # the maps are the file's, in μK, and the spectra sphgpu's own calls on them
    want = sphgpu.read_map(path, field=(0, 1, 2), dtype=np.float64) * 1e3
    np.testing.assert_array_equal(r.maps, want)
    alm = sphgpu.map2alm(want, 64, iter=m.iter, backend="cpu")
    np.testing.assert_allclose(r.cl_hat, sphgpu.alm2cl(alm), rtol=1e-12, atol=0)
    assert png(panel.figure) is not None
    numbers = panel.numbers.value
    assert "wmap_w.fits" in numbers and "read_map" in numbers
    # zoom and field toggles redraw the file's sky; "simulated sky" goes back
    panel.zoom_lat.value = 30.0
    panel.field.value = "Q"
    np.testing.assert_array_equal(m.result.map, want[1])
    panel.simulated.click()
    assert m.opened is None and m.message == "" and m.result.source == ""


def test_open_a_map_by_path_and_a_file_that_is_no_healpix_map(tmp_path):
    panel = transform_panel(nside=16, backend="cpu")
    sphgpu.write_map(tmp_path / "t.fits", np.arange(12 * 8**2, dtype=np.float64),
                     column_units="K")
    panel.path.value = str(tmp_path / "t.fits")
    panel.open_button.click()
    r = panel.model.result
    assert r is not None and r.nside == 8
    np.testing.assert_array_equal(r.maps[0], np.arange(12 * 8**2) * 1e6)   # TUNIT K -> μK
    assert not r.maps[1:].any()                                            # I only: Q = U = 0
    (tmp_path / "notes.fits").write_text("not a map\n" * 300)
    panel.upload.value = _upload_value("notes.fits", (tmp_path / "notes.fits").read_bytes())
    assert "notes.fits" in panel.message.value and "not a FITS file" in panel.message.value
    panel.path.value = str(tmp_path / "missing.fits")
    panel.open_button.click()
    assert "missing.fits" in panel.message.value and "no such file" in panel.message.value


# ------------------------------------------------------------- nside, lmax and the lmax pin
def test_lmax_follows_nside_until_pinned_and_a_pin_is_kept():
    m = TransformModel(nside=16, backend="cpu")
    assert not m.lmax_pinned and m.lmax == 32
    assert m.set(nside=64) and m.lmax == 128 and m.note == ""        # follows: 2 nside
    assert "follows nside" in m.pin_text() and "128" in m.pin_text()
    assert m.set(lmax=100) and m.lmax_pinned                         # set by hand: pinned
    assert m.set(nside=32) and m.lmax == 100                         # kept (valid: <= 128)
    assert "pinned at 100" in m.pin_text()
    assert "ℓ ≥ 3 nside = 96 alias" in m.pin_text()                  # 100 >= 96: said
    assert m.set(lmax_pinned=False) and m.lmax == 64                 # released: 2 nside
    assert not m.lmax_pinned and m.run().lmax == 64


def test_a_pinned_lmax_invalid_for_the_new_nside_is_clamped_with_a_note():
    m = TransformModel(nside=64, lmax=200, backend="cpu")            # given: pinned
    assert m.lmax_pinned and m.message == ""
    assert m.set(nside=16)                                            # 200 > 4 * 16
    assert m.lmax == 64 and m.lmax_pinned
    assert "pinned at 200" in m.note and "clamped to 64" in m.note
    r = m.run()
    assert r.lmax == 64 and r.nside == 16
    assert m.set(seed=1) and m.note == ""                             # said once


def test_ratios_and_round_trip_average_only_the_multipoles_the_map_holds():
    """Issue 40: at lmax = 4 nside the explorer printed a BB ratio of 28 as if it were 1 within
    cosmic variance; l >= 3 nside alias into every lower l."""
    nside, lmax = 16, 64
    m = TransformModel(nside=nside, lmax=lmax, fwhm_arcmin=0.0, seed=4, backend="cpu")
    r = m.run()
    assert r.aliased and r.held_lmax == 3 * nside - 1
    rows = dict(r.numbers())
    for spec in ("TT", "EE", "BB"):
        lo, hi = r.ratio_range_of(spec)
        assert hi == 3 * nside - 1                                    # not 4 nside
        label = "⟨C_hat / C b²⟩" if spec == "TT" else f"{spec}: ⟨C_hat / C b²⟩"
        text = rows[f"{label}, ℓ {lo}–{hi}"]
        ratio, sigma = r.ratio_of(spec)
        assert text.startswith(f"{ratio:.3f}, not an estimate of 1 ± {sigma:.3f}")
        assert "aliases" in text and "lmax < 48" in text
    # the BB ratio really is far from 1 here (E aliased into B): the words matter
    assert abs(r.ratio_of("BB")[0] - 1) > 10 * r.ratio_of("BB")[1]
    # the round trip over l < 3 nside, from sphgpu's calls directly
    teb, iqu, *_ = _pipeline(nside, lmax, 0.0, 4, m.iter)
    back = sphgpu.map2alm(iqu, lmax, iter=m.iter, backend="cpu")
    held = sphgpu.AlmLayout(lmax).lm()[0] < 3 * nside
    want = np.linalg.norm((back - teb)[:, held]) / np.linalg.norm(teb[:, held])
    assert r.roundtrip_error == pytest.approx(want, rel=1e-12)
    assert rows["round-trip error of a_lm, ℓ 0–47"].startswith(f"{want:.2e} (ℓ ≥ 48 left out")
    # the spectrum plot marks where the map stops holding the modes
    sx = next(a for a in m.figure().axes if a.get_title().startswith("TT"))
    assert "ℓ ≥ 3 nside = 48" in sx.get_title()
    assert any(list(line.get_xdata()) == [48, 48] for line in sx.get_lines())
    # below 3 nside: the usual cosmic-variance reading, no aliasing words
    m.set(lmax=47)
    r = m.run()
    assert not r.aliased
    text = dict(r.numbers())[f"BB: ⟨C_hat / C b²⟩, ℓ 2–47"]
    ratio, sigma = r.ratio_of("BB")
    assert text.startswith(f"{ratio:.3f} ± {sigma:.3f} (cosmic variance") and 0.8 < ratio < 1.25


def test_panel_lmax_follows_nside_and_shows_its_pin():
    p = transform_panel(nside=16, backend="cpu")
    assert not p.lmax_pin.value and "follows nside" in p.pin_label.value
    p.nside.value = 32                                    # follows: slider and sky
    assert p.lmax.value == 64 and p.lmax.max == 128 and p.model.result.lmax == 64
    img, numbers = png(p.figure), p.numbers.value
    p.lmax.value = 40                                     # moved by hand: pinned, shown
    assert p.lmax_pin.value and "pinned at 40" in p.pin_label.value
    assert p.model.result.lmax == 40 and png(p.figure) != img and p.numbers.value != numbers
    p.nside.value = 64                                    # the pin keeps lmax
    assert p.lmax.value == 40 and p.lmax.max == 256
    assert p.model.result.nside == 64 and p.model.result.lmax == 40
    assert "pinned at 40 (2 nside = 128)" in p.pin_label.value
    numbers = p.numbers.value
    p.lmax_pin.value = False                              # released: back to 2 nside
    assert p.lmax.value == 128 and p.model.result.lmax == 128 and p.numbers.value != numbers
    assert "follows nside: 2 × 64 = 128" in p.pin_label.value
    numbers = p.numbers.value
    p.lmax_pin.value = True                               # pinned where it is: nothing to redo
    assert p.model.lmax_pinned and p.numbers.value == numbers
    assert "lmax is unchanged" in p.message.value and "pinned at 128" in p.message.value


def test_panel_clamps_a_pinned_lmax_and_says_so():
    p = transform_panel(nside=64, backend="cpu")
    p.lmax.value = 250                                    # pinned, valid at nside 64
    p.nside.value = 16                                    # 250 > 4 * 16: clamped
    assert p.lmax.value == 64 and p.lmax.max == 64 and p.model.result.lmax == 64
    assert "clamped to 64" in p.message.value and "pinned at 250" in p.message.value
    assert "pinned at 64" in p.pin_label.value


def test_panel_controls_without_effect_on_an_open_map_say_why(tmp_path):
    panel = transform_panel(nside=16, backend="cpu")
    sphgpu.write_map(tmp_path / "t.fits", np.arange(12 * 8**2, dtype=np.float64))
    panel.path.value = str(tmp_path / "t.fits")
    panel.open_button.click()
    assert panel.model.result.source.endswith("t.fits")
    assert not panel.lmax_pin.value and panel.lmax.value == 16       # the file's nside: 8
    img, numbers = png(panel.figure), panel.numbers.value
    panel.seed.value = 9                                  # the file's sky has no seed
    assert png(panel.figure) == img and panel.numbers.value == numbers
    assert "seed draws the simulated sky" in panel.message.value
    assert "t.fits" in panel.message.value
    panel.unit.value = "mK"                               # read with the next file only
    assert "unit applies to the next Open or Upload" in panel.message.value
    panel.simulated.click()                               # the simulated sky takes the seed
    assert panel.model.result.seed == 9 and panel.message.value == ""


def _shown(panel):
    return png(panel.figure), panel.numbers.value, panel.message.value, panel.pin_label.value


def test_every_control_changes_the_view_or_says_why():
    p = transform_panel(nside=16, backend="cpu")
    moves = [(p.nside, 32), (p.lmax, 50), (p.lmax_pin, False), (p.lmax_pin, True),
             (p.fwhm, 120.0), (p.seed, 3), (p.iter, 1), (p.backend, "reference"),
             (p.backend, "cpu"), (p.zoom_lon, 40.0), (p.zoom_lat, -30.0), (p.zoom_width, 10.0),
             (p.field, "U"), (p.spectrum, "EE"), (p.unit, "K")]
    for control, value in moves:
        before = _shown(p)
        control.value = value
        assert control.value == value
        assert _shown(p) != before, (control.description, value)
        assert "unexpected error" not in p.message.value


def test_panel_numbers_are_sphgpus_functions_called_directly():
    import html
    import re

    p = transform_panel(nside=16, fwhm_arcmin=120.0, seed=7, backend="cpu")
    p.iter.value = 2
    teb, iqu, cl6, cl4, bl = _pipeline(16, 32, 120.0, 7, 2)
    shown = dict(re.findall(r"<td[^>]*>(.*?)</td><td><b>(.*?)</b></td>",
                            html.unescape(p.numbers.value)))
    assert shown["map rms (T)"] == f"{iqu[0].std():.3g} μK"
    model = cl4[0] * bl[:, 0] ** 2
    ell = np.arange(33)
    keep = (ell >= 2) & (bl[:, 0] ** 2 >= 1e-3) & (ell < 48)
    modes = 2 * ell[keep] + 1
    ratio = np.sum(modes * cl6[0, keep] / model[keep]) / modes.sum()
    label = f"⟨C_hat / C b²⟩, ℓ 2–{ell[keep][-1]}"
    assert shown[label].startswith(f"{ratio:.3f} ± {np.sqrt(2 / modes.sum()):.3f}")
    back = sphgpu.map2alm(iqu, 32, iter=2, backend="cpu")
    err = np.linalg.norm(back - teb) / np.linalg.norm(teb)
    assert shown["round-trip error of a_lm, ℓ 0–32"] == f"{err:.2e}"


def test_buttons_that_would_change_nothing_say_so():
    p = transform_panel(nside=16, backend="cpu")
    img, numbers = png(p.figure), p.numbers.value
    p.run_button.click()                                  # live: already computed
    assert "shown already" in p.message.value
    assert png(p.figure) == img and p.numbers.value == numbers
    p.simulated.click()                                   # no file is open
    assert "simulated sky is shown already" in p.message.value
    p.seed.value = 2                                      # a change is computed and shown
    assert p.message.value == "" and png(p.figure) != img
    big = transform_panel(nside=16, backend="cpu", live_max_nside=16)
    big.nside.value = 32                                  # stale: Run computes it
    big.run_button.click()
    assert big.model.result.nside == 32 and big.message.value == ""
    big.run_button.click()                                # again: nothing new
    assert "shown already" in big.message.value


def test_controls_moved_while_waiting_for_run_change_the_note():
    p = transform_panel(nside=16, backend="cpu", live_max_nside=16)
    p.nside.value = 32
    for control, value, words in [(p.lmax, 50, "lmax 50"), (p.fwhm, 30.0, "beam 30′"),
                                  (p.seed, 4, "seed 4"), (p.iter, 1, "iter 1"),
                                  (p.field, "Q", "the Q map"), (p.spectrum, "BB", "BB spectrum"),
                                  (p.zoom_lat, 20.0, "(0°, 20°)"), (p.zoom_width, 12.0, "12° wide")]:
        before = p.message.value
        control.value = value
        assert words in p.message.value and "press Run" in p.message.value, control.description
        assert p.message.value != before and png(p.figure) is None
    p.run_button.click()
    r = p.model.result
    assert (r.nside, r.lmax, r.fwhm_arcmin, r.seed, r.iter, r.field, r.spectrum) == (
        32, 50, 30.0, 4, 1, "Q", "BB")
