"""Correlation-function panel: the model against direct sphgpu.tpacf calls, uploads, messages
for invalid settings, and the panel driven headless."""

import datetime
import io

import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, Catalog, angular_correlation, pair_counts
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms
from sphgpu.widgets.correlation import (EXAMPLE_BOX, CorrelationModel, correlation_panel)

from .conftest import INTERACTION_BUDGET_S, png, timed

#: Small settings shared by the model tests (a few hundred points: counts take milliseconds).
SMALL = dict(n_points=400, seed=2, theta_min=0.1, theta_max=8.0, nbins=6, n_randoms=2,
             random_factor=2.0, jackknife=4, backend="cpu")


def _csv(ra, dec, header="ra,dec"):
    rows = "\n".join(f"{float(a)!r},{float(d)!r}" for a, d in zip(ra, dec))
    return f"# a comment\n{header}\n{rows}\n".encode()


def test_model_matches_angular_correlation():
    m = CorrelationModel(**SMALL)
    r = m.run()
    assert m.message == "" and r is not None
    data = Catalog(*clustered_catalog(400, EXAMPLE_BOX, seed=2, members=25,
                                      sigma_deg=(0.03, 1.0)))
    randoms = [Catalog(*uniform_randoms(800, EXAMPLE_BOX, seed=3 + i)) for i in range(2)]
    bins = AngularBins.log(0.1, 8.0, 6, unit="deg")
    ref = angular_correlation(data, randoms, bins=bins, estimator="landy-szalay", jackknife=4,
                              backend="cpu")
    np.testing.assert_array_equal(r.dd.counts, ref.dd.counts)
    for a, b in zip(r.dr + r.rr, ref.dr + ref.rr):
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.region_counts, b.region_counts)
    np.testing.assert_array_equal(r.w, ref.w)            # same counts, same arithmetic
    np.testing.assert_array_equal(r.sigma, ref.sigma)
    np.testing.assert_array_equal(r.theta, bins.centers)
    np.testing.assert_array_equal(r.covariance, ref.covariance)
    assert len(r.dr) == len(r.rr) == 2 and r.n_regions == 4 and r.n_random == 800
    assert type(r.result) is type(ref)                   # the panel shows tpacf's own result
    rows = dict(r.numbers())
    assert rows["DD pairs in bins"] == f"{int(ref.dd.counts.sum()):,}"
    assert rows["backend"] == "cpu" and r.seconds > 0
    k = int(np.argmax(np.isfinite(ref.w)))
    assert rows[f"w({ref.theta[k]:.3g}°)"] == f"{ref.w[k]:.4g} ± {ref.sigma[k]:.3g}"


def test_the_panel_holds_no_estimator_of_its_own():
    import sphgpu.widgets.correlation as corr

    for name in ("landy_szalay", "natural", "multi_random", "jackknife_covariance",
                 "pair_counts", "JackknifeRegions"):
        assert not hasattr(corr, name), name


@pytest.mark.parametrize("estimator", ["natural", "multi-random"])
def test_estimators_match_angular_correlation(estimator):
    m = CorrelationModel(**dict(SMALL, jackknife=0, estimator=estimator))
    r = m.run()
    ref = angular_correlation(m.data_catalog(), [m.random_catalog(0), m.random_catalog(1)],
                              bins=m.bins(), estimator=estimator, backend="cpu")
    np.testing.assert_array_equal(r.w, ref.w)
    assert r.sigma is None and (r.dr == []) == (estimator == "natural")


def test_each_control_changes_the_output():
    m = CorrelationModel(**SMALL)
    base = m.run()
    assert m.set(nbins=9) and m.run().w.shape == (9,)
    m.set(nbins=6, spacing="linear", theta_min=0.0)
    r = m.run()
    np.testing.assert_allclose(r.bins.edges, np.linspace(0, 8, 7))
    m.set(spacing="log", theta_min=0.1, theta_max=4.0)
    assert m.run().bins.edges[-1] == 4.0
    m.set(theta_max=8.0, seed=5)
    assert not np.array_equal(m.run().dd.counts, base.dd.counts)
    m.set(seed=2, n_points=300)
    assert m.run().n_data == 300 and m.result.dd.n1 == 300
    m.set(n_points=400, n_randoms=3)
    assert len(m.run().rr) == 3
    m.set(n_randoms=2, random_factor=1.5)
    assert m.run().rr[0].n1 == 600
    m.set(random_factor=2.0, jackknife=0)
    r = m.run()
    assert r.sigma is None and r.n_regions == 0
    np.testing.assert_array_equal(r.dd.counts, base.dd.counts)
    m.set(jackknife=6)
    assert m.run().w_jackknife.shape == (6, 6)
    m.set(jackknife=4, estimator="natural")
    r = m.run()
    assert r.dr == [] and not np.array_equal(r.w, base.w)


def test_results_are_cached_by_what_they_depend_on():
    m = CorrelationModel(**SMALL)
    first = m.run()
    assert m._runs.misses == 0 and len(m._runs._items) == 1
    m.set(yscale="linear")                               # a view setting: nothing recounted
    assert m.run() is first
    m.set(estimator="natural")
    assert m.run() is not first and len(m._runs._items) == 2
    m.set(estimator="landy-szalay")
    assert m.run() is first


def test_progress_is_reported():
    seen = []
    CorrelationModel(**SMALL).run(progress=lambda f, t="": seen.append((f, t)))
    assert any(t.startswith("counting DD, DR and RR") for _, t in seen)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


@pytest.mark.parametrize("settings, words", [
    (dict(theta_max=0.05), "must be larger than theta_min"),
    (dict(theta_max=0.1), "must be larger than theta_min"),
    (dict(theta_max=181.0), "theta_max must be at most 180"),
    (dict(theta_min=0.0), "theta_min must be > 0 for log bins"),
    (dict(theta_min=-1.0, spacing="linear"), "theta_min must be >= 0"),
    (dict(nbins=0), "number of bins must be a whole number from 1"),
    (dict(nbins=2.5), "number of bins must be a whole number"),
    (dict(n_randoms=0), "number of random catalogs"),
    (dict(random_factor=0.0), "randoms per catalog must be more than 0"),
    (dict(jackknife=1), "jackknife regions must be 0"),
    (dict(jackknife=401), "is more than allowed here"),
    (dict(n_points=300, random_factor=0.01, jackknife=4), "is more than allowed here"),
    (dict(n_points=1), "n_points must be a whole number >= 2"),
    (dict(n_points=10**7), "too many for the cpu backend"),
    (dict(estimator="davis-peebles"), "estimator must be one of"),
    (dict(backend="gpu"), "backend must be one of"),
    (dict(theta_max=float("nan")), "must be numbers of degrees"),
    (dict(source="upload"), "no catalog uploaded yet"),
])
def test_invalid_settings_give_a_message_not_an_exception(settings, words):
    m = CorrelationModel(**SMALL)
    assert not m.set(**settings)
    assert words in m.message, m.message
    assert m.run() is None and m.result is None and words in m.message
    assert m.figure() is None


def test_cuda_without_a_gpu_is_a_message(no_gpu):
    m = CorrelationModel(**dict(SMALL, backend="cuda"))
    assert "the cuda backend cannot run here" in m.message and m.run() is None


def test_errors_during_counting_become_the_message(monkeypatch):
    import sphgpu.widgets.correlation as corr

    def no_memory(*args, **kw):
        raise MemoryError("out of device memory (test)")

    m = CorrelationModel(**SMALL)
    monkeypatch.setattr(corr, "angular_correlation", no_memory)
    assert m.run() is None and m.result is None
    assert m.message == "correlation: out of device memory (test)"
    monkeypatch.undo()
    assert m.run() is not None and m.message == ""


def test_live_only_at_small_sizes():
    m = CorrelationModel(n_points=3000, n_randoms=2, random_factor=3.0, backend="cpu")
    assert m.live and m.size_note == ""
    m.set(theta_max=60.0)                          # wide bins: too many pairs to compare
    assert not m.live and m.message == "" and "press Run" in m.size_note
    m.set(theta_max=10.0, n_points=5000)
    assert not m.live and "5,000 points" in m.size_note
    m.set(n_points=1000, random_factor=10.0)
    assert not m.live


# -- uploads ------------------------------------------------------------------------------------
def test_uploaded_csv_is_parsed_and_counted():
    ra, dec = uniform_randoms(300, (10.0, 40.0, -5.0, 25.0), seed=9)
    m = CorrelationModel(**SMALL)
    assert m.load_file("my_galaxies.csv", _csv(ra, dec))
    assert m.source == "upload" and m.message == ""
    np.testing.assert_array_equal(m.uploaded.ra, ra)
    np.testing.assert_array_equal(m.uploaded.dec, dec)
    r = m.run()
    assert r.n_data == 300 and r.source == "my_galaxies.csv"
    rnd = m.random_catalog(0)
    assert rnd.ra.min() >= ra.min() and rnd.dec.max() <= dec.max()   # randoms on the footprint
    np.testing.assert_array_equal(r.dd.counts, pair_counts(ra, dec, bins=m.bins(),
                                                           backend="cpu").counts)


def test_uploaded_npz_with_column_names_in_any_case():
    ra, dec = uniform_randoms(200, (0.0, 30.0, 0.0, 30.0), seed=1)
    buf = io.BytesIO()
    np.savez(buf, ra=ra, dec=dec)
    m = CorrelationModel(**dict(SMALL, jackknife=0))
    assert m.load_file("cat.npz", buf.getvalue())
    np.testing.assert_array_equal(m.run().dd.counts,
                                  pair_counts(ra, dec, bins=m.bins(), backend="cpu").counts)
    text = _csv(ra, dec, header="RA,DEC")
    assert m.load_file("upper.csv", text) and m.uploaded.size == 200


@pytest.mark.parametrize("name, content, words", [
    ("empty.csv", b"", "the file is empty"),
    ("comments.csv", b"# nothing here\n", "comments.csv holds no data"),
    ("broken.csv", b"ra,dec\n1.0,2.0\n3.0,oops\n", "cannot read 'broken.csv'"),
    ("nocols.csv", b"x,y\n1.0,2.0\n3.0,4.0\n", "column 'ra' not found"),
    ("baddec.csv", b"ra,dec\n1.0,2.0\n3.0,95.0\n", "must be in [-90, 90]"),
    ("binary.csv", b"\xff\xfe\x00\x81ra", "cannot read 'binary.csv'"),
    ("cat.xlsx", b"PK\x03\x04", "unknown format"),
    ("bad.npz", b"not a zip file", "cannot read 'bad.npz'"),
    ("one.csv", b"ra,dec\n1.0,2.0\n", "at least 2 are needed"),
    ("line.csv", b"ra,dec\n1.0,2.0\n1.0,3.0\n", "spans no area"),
])
def test_broken_uploads_give_a_message(name, content, words):
    m = CorrelationModel(**SMALL)
    assert not m.load_file(name, content)
    assert words in m.message, m.message
    assert m.run() is None
    assert m.set(source="example") and m.run() is not None      # the example still works


def test_uploaded_npz_without_ra_gives_a_message():
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(3), dec=np.zeros(3))
    m = CorrelationModel(**SMALL)
    assert not m.load_file("x.npz", buf.getvalue()) and "no array named 'ra'" in m.message


def test_uploaded_fits_when_astropy_is_there():
    fits = pytest.importorskip("astropy.io.fits")
    ra, dec = uniform_randoms(150, (0.0, 20.0, 0.0, 20.0), seed=4)
    hdu = fits.BinTableHDU.from_columns([fits.Column(name="RA", format="D", array=ra),
                                         fits.Column(name="DEC", format="D", array=dec)])
    buf = io.BytesIO()
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(buf)
    m = CorrelationModel(**SMALL)
    assert m.load_file("cat.fits", buf.getvalue()), m.message
    np.testing.assert_array_equal(m.uploaded.ra, ra)


# -- the panel, headless ------------------------------------------------------------------------
def test_panel_controls_change_the_plot_and_numbers():
    p = correlation_panel(**SMALL)
    img, numbers = png(p.figure), p.numbers.value
    assert img is not None and "DD pairs in bins" in numbers and p.message.value == ""
    for control, value in [(p.nbins, 8), (p.estimator, "natural"), (p.jackknife, 0),
                           (p.n_randoms, 1), (p.spacing, "linear"), (p.theta_max, 5.0),
                           (p.seed, 7), (p.n_points, 500), (p.random_factor, 1.0)]:
        control.value = value
        assert p.message.value == "", (control.description, p.message.value)
        new_img, new_numbers = png(p.figure), p.numbers.value
        assert new_img is not None and new_img != img, control.description
        assert new_numbers != numbers, control.description
        img, numbers = new_img, new_numbers
    assert p.model.result.bins.nbins == 8 and p.model.result.n_data == 500
    shown = p.model.result
    p.yscale.value = "linear"                      # redraws only
    assert png(p.figure) != img and p.model.result is shown


def test_panel_shows_messages_for_invalid_settings(no_gpu):
    p = correlation_panel(**SMALL)
    p.theta_max.value = 0.05
    assert "must be larger than theta_min" in p.message.value and png(p.figure) is None
    assert p.numbers.value == ""
    p.theta_max.value = 200.0
    assert "at most 180" in p.message.value
    p.theta_max.value = 8.0
    assert p.message.value == "" and png(p.figure) is not None
    p.nbins.value = 0
    assert "number of bins" in p.message.value
    p.run_button.click()                           # Run on invalid settings: still a message
    assert "number of bins" in p.message.value and png(p.figure) is None
    p.nbins.value = 6
    p.jackknife.value = 10_000
    assert "jackknife regions" in p.message.value
    p.jackknife.value = 4
    p.source.value = "upload"
    assert "no catalog uploaded" in p.message.value
    q = correlation_panel(**dict(SMALL, backend="cuda"))
    assert "cuda backend cannot run here" in q.message.value


def test_panel_upload():
    p = correlation_panel(**SMALL)
    ra, dec = uniform_randoms(250, (5.0, 35.0, 0.0, 30.0), seed=3)
    p.upload.value = ({"name": "mine.csv", "type": "text/csv", "size": 1,
                       "content": memoryview(_csv(ra, dec)), "last_modified": datetime.datetime.now(datetime.timezone.utc)},)
    assert p.source.value == "upload" and p.message.value == ""
    assert p.model.result.n_data == 250 and "mine.csv" in p.numbers.value
    p.upload.value = ({"name": "bad.csv", "type": "text/csv", "size": 1,
                       "content": memoryview(b"ra,dec\n1,2\n3,x\n"), "last_modified": datetime.datetime.now(datetime.timezone.utc)},)
    assert "cannot read &#x27;bad.csv&#x27;" in p.message.value and png(p.figure) is None
    p.source.value = "example"
    assert p.message.value == "" and p.model.result.source == "example mock"


def test_panel_large_sizes_wait_for_run():
    p = correlation_panel(**SMALL, live_max_data=300)
    assert "press Run" in p.message.value and png(p.figure) is None
    p.run_button.click()
    assert png(p.figure) is not None and p.model.result.n_data == 400
    assert p.progress.value == 1.0 and p.message.value == ""
    p.nbins.value = 7                              # stale until Run
    assert png(p.figure) is None and "press Run" in p.message.value


@pytest.mark.timing
def test_panel_interactions_answer_within_a_second():
    # Binder size: 3000 points, 2 random catalogs of 3x, 10 jackknife regions (the default)
    p = correlation_panel(n_points=3000, backend="cpu")
    assert p.model.live and png(p.figure) is not None
    for control, value in [(p.estimator, "natural"), (p.nbins, 16), (p.theta_min, 0.02),
                           (p.jackknife, 16), (p.n_randoms, 1), (p.yscale, "linear"),
                           (p.spacing, "linear"), (p.theta_max, 200.0), (p.theta_max, 5.0),
                           (p.seed, 1), (p.theta_max, 60.0)]:
        seconds = timed(lambda: setattr(control, "value", value))
        assert seconds < INTERACTION_BUDGET_S, (control.description, value, seconds)


def test_a_view_change_does_not_bring_back_a_stale_figure():
    """After a setting changes, a panel that waits for Run shows no result; switching the w
    axis must not redraw the last result, which was counted with other settings."""
    p = correlation_panel(**SMALL, live_max_data=300)
    p.run_button.click()
    assert png(p.figure) is not None
    p.nbins.value = 7
    assert png(p.figure) is None
    p.yscale.value = "linear"
    assert png(p.figure) is None and "press Run" in p.message.value


def test_the_time_shown_says_what_it_includes(monkeypatch):
    from sphgpu.widgets import _base

    monkeypatch.setattr(_base, "_TIMED", set())
    m = CorrelationModel(**SMALL)
    first = dict(m.run().numbers())
    label = "time of angular_correlation (one call: counts, jackknife, estimator)"
    assert "first call in this session" in first[label]
    m.set(nbins=5)
    assert "first call" not in dict(m.run().numbers())[label]


def test_panel_keeps_a_large_seed():
    p = correlation_panel(**dict(SMALL, seed=5_000_000))
    assert p.seed.value == 5_000_000
    p.nbins.value = 5
    assert p.model.seed == 5_000_000 and p.model.result.n_data == 400


@pytest.mark.parametrize("shift", [0.0, -360.0])
def test_an_upload_crossing_ra_zero_gives_a_message(shift):
    """Randoms are drawn over the catalog's RA/Dec box: for points on both sides of RA 0° the
    box spans all RA, and w would be counted against randoms where the catalog has none."""
    ra, dec = uniform_randoms(300, (0.0, 20.0, -5.0, 25.0), seed=9)
    ra = np.mod(ra - 10.0, 360.0) + np.where(ra >= 10.0, 0.0, shift)   # 350..360 and 0..10
    m = CorrelationModel(**SMALL)
    assert not m.load_file("wraps.csv", _csv(ra, dec))
    assert ("crosses RA 0°" if shift == 0 else "must lie within 0-360°") in m.message
    assert m.run() is None
    # the same points rotated away from 0° are counted
    assert m.load_file("rotated.csv", _csv(np.mod(ra + 30.0, 360.0), dec)) and m.message == ""
    full_sky = uniform_randoms(400, (0.0, 360.0, -60.0, 60.0), seed=3)
    assert m.load_file("all_ra.csv", _csv(*full_sky)) and m.message == ""
