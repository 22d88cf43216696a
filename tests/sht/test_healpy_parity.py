"""healpy parity of the transform and spectra functions (issue 38): healpy's signatures,
HEALPix's ring and pixel weights and gal_cut, the beam_window parser, synalm of spectra that
are not a covariance, gauss_beam and huge sizes."""

import inspect
import math
import os
import warnings

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout
from sphgpu.sht import weights as weights_mod
from sphgpu.sht.beam_window import parse_beam_window
from sphgpu.sht.spectra import cholesky_factors
from sphgpu.testing import TOL, random_alm, rel_err

hp = pytest.importorskip("healpy")

DEBIAN = os.environ.get("SPHGPU_HEALPIX_DATA", "/usr/share/healpy/data")

# healpy arguments sphgpu gives a default healpy lacks (sphgpu also takes geometry= instead of
# nside, or fwhm_arcmin= instead of fwhm); everything else must be equal, name and default
_LOOSER = {("alm2map", "nside"), ("alm2map_spin", "nside"), ("alm2map_spin", "spin"),
           ("alm2map_spin", "lmax"), ("map2alm_spin", "spin"), ("alm2map_der1", "nside"),
           ("synfast", "nside"), ("gauss_beam", "fwhm")}
NAMES = ("alm2map", "map2alm", "alm2map_spin", "map2alm_spin", "alm2map_der1", "synalm",
         "synfast", "anafast", "alm2cl", "almxfl", "smoothing", "gauss_beam", "pixwin")


@pytest.mark.parametrize("name", NAMES)
def test_healpy_arguments_in_healpys_order_then_keyword_only(name):
    theirs = list(inspect.signature(getattr(hp, name)).parameters.values())
    ours = list(inspect.signature(getattr(sphgpu, name)).parameters.values())
    assert [p.name for p in ours[:len(theirs)]] == [p.name for p in theirs]
    for p, q in zip(theirs, ours):
        assert q.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD, (name, q.name)
        if (name, p.name) not in _LOOSER:
            assert q.default == p.default or (q.default is p.default), (name, p.name)
    assert all(q.kind == inspect.Parameter.KEYWORD_ONLY for q in ours[len(theirs):]), name


def test_alm2map_positional_arguments_mean_what_they_mean_in_healpy(rng):
    # issue 38: the fifth positional argument was pol; healpy's is pixwin (Q was 143 % off)
    nside, lmax = 8, 16
    teb = random_alm(rng, AlmLayout(lmax), 3)
    wt, wp = sphgpu.pixwin(nside, True, lmax)      # equal to healpy's (test_pixwin.py)
    windowed = np.array([hp.almxfl(teb[0], wt), hp.almxfl(teb[1], wp), hp.almxfl(teb[2], wp)])
    for args in [(lmax, None, False), (lmax, None, True), (lmax, None, False, 0.2),
                 (lmax, None, True, 0.0, 0.05), (lmax, None, False, 0.1, None, False)]:
        got = sphgpu.alm2map(teb, nside, *args)
        # healpy's own pixwin=True downloads its table: give it the windowed a_lm instead
        src = windowed if args[2] else teb
        want = hp.alm2map(src.copy(), nside, *args[:2], False, *args[3:])
        assert rel_err(got, want) <= TOL["vs_ducc0"], args
    assert rel_err(sphgpu.alm2map(teb, nside, lmax, None, False),
                   sphgpu.alm2map(teb, nside, lmax, pol=False)) > 0.5    # pol is not 5th


def test_alm2map_inplace_as_healpy(rng):
    teb = random_alm(rng, AlmLayout(10), 3)
    keep = teb.copy()
    sphgpu.alm2map(teb, 4, fwhm=0.3, pixwin=True)
    np.testing.assert_array_equal(teb, keep)             # inplace=False leaves alms alone
    sphgpu.alm2map(teb, 4, fwhm=0.3, inplace=True)
    want = keep.copy()
    hp.smoothalm(want, fwhm=0.3, inplace=True)
    np.testing.assert_allclose(teb, want, rtol=1e-14, atol=0)
    with pytest.raises(TypeError, match="inplace"):
        sphgpu.alm2map(keep, 4, inplace="yes")


def test_synfast_positional_arguments_and_healpys_random_stream():
    # healpy's order (cls, nside, lmax, mmax, alm, pol, pixwin, fwhm, sigma, new); with a
    # RandomState, sphgpu draws healpy's numbers: the whole result is healpy's
    cls = [np.linspace(1.0, 2.0, 25), np.linspace(0.5, 0.1, 25), np.full(25, 0.05),
           np.linspace(0.2, 0.0, 25)]
    args = (8, 20, None, True, True, False, 0.1, None, True)   # pixwin: healpy downloads
    np.random.seed(3)
    want_maps, want_alm = hp.synfast(cls, *args)
    maps, alm = sphgpu.synfast(cls, *args, seed=np.random.RandomState(3))
    assert rel_err(alm, want_alm) <= 1e-14
    assert rel_err(maps, want_maps) <= TOL["vs_ducc0"]
    np.random.seed(4)
    want = hp.synalm(cls[0], 20)
    np.testing.assert_allclose(sphgpu.synalm(cls[0], 20, seed=np.random.RandomState(4)), want,
                               rtol=1e-14, atol=1e-15)


# ------------------------------------------------------------------ weights and gal_cut
def _maps(rng, nside):
    return rng.standard_normal((3, 12 * nside * nside))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("kw", [dict(use_weights=True), dict(gal_cut=30),
                                dict(use_weights=True, gal_cut=12.5),
                                dict(use_pixel_weights=True),
                                dict(use_pixel_weights=True, gal_cut=30)])
def test_map2alm_weights_and_gal_cut_match_healpy(kw, backend, rng, tmp_path):
    # gal_cut=30 on nside 16: a ring lies exactly at latitude 30, which healpy cuts
    nside = 16
    maps = _maps(rng, nside)
    datapath = _healpy_datapath(tmp_path, nside) if kw.get("use_pixel_weights") else None
    for pol, m in ((True, maps), (False, maps[0])):
        got = sphgpu.map2alm(m, None, None, 3, pol, backend=backend, **kw)
        want = hp.map2alm(m, None, None, 3, pol, datapath=datapath, **kw)
        assert rel_err(got, want) <= TOL["vs_healpy_weights"], (kw, pol)


def _healpy_datapath(tmp_path, nside):
    """A datapath in healpy's layout holding the shipped pixel weights as a FITS file (healpy
    then reads the very numbers sphgpu ships, which equal HEALPix's files bit for bit)."""
    fits = pytest.importorskip("astropy.io.fits")
    folder = tmp_path / "full_weights"
    folder.mkdir(exist_ok=True)
    col = fits.Column(name="COMPRESSED PIXEL WEIGHTS", format="D",
                      array=np.asarray(weights_mod.compact_pixel_weights(nside)))
    hdu = fits.BinTableHDU.from_columns([col])
    hdu.header["NSIDE"] = nside
    hdu.writeto(folder / f"healpix_full_weights_nside_{nside:04d}.fits")
    return str(tmp_path)


def test_anafast_and_smoothing_take_the_weights(rng, tmp_path):
    nside = 16
    maps = _maps(rng, nside)
    for kw in (dict(use_weights=True), dict(use_pixel_weights=True)):
        dp = _healpy_datapath(tmp_path, nside) if "use_pixel_weights" in kw else None
        want = hp.anafast(maps, lmax=30, datapath=dp, **kw)
        got = sphgpu.anafast(maps, lmax=30, datapath=dp, **kw)
        assert rel_err(got, want) <= TOL["vs_healpy_weights"], kw
        want = hp.smoothing(maps, fwhm=0.1, datapath=dp, **kw)
        got = sphgpu.smoothing(maps, fwhm=0.1, datapath=dp, **kw)
        assert rel_err(got, want) <= TOL["vs_healpy_weights"], kw
    got = sphgpu.anafast(maps, None, None, 30, None, 3, False, True, False, None, 20.0)
    want = hp.anafast(maps, None, None, 30, None, 3, False, True, False, None, 20.0)
    assert rel_err(got, want) <= TOL["vs_healpy_weights"]


def test_ring_weights_on_the_cuda_kernels_under_the_simulator(rng):
    m = rng.standard_normal(48)                    # nside 2: a launch of a few threads
    got = sphgpu.map2alm(m, 5, iter=1, use_weights=True, gal_cut=20, backend="cuda")
    want = hp.map2alm(m, 5, iter=1, use_weights=True, gal_cut=20)
    assert rel_err(got, want) <= TOL["vs_healpy_weights"]
    teb = random_alm(rng, AlmLayout(4), 3)       # healpy's positions: pixwin, fwhm, sigma
    got = sphgpu.alm2map(teb, 2, 4, None, False, 0.3, None, True, backend="cuda")
    want = hp.alm2map(teb.copy(), 2, 4, None, False, 0.3, None, True)
    assert rel_err(got, want) <= TOL["vs_ducc0"]


def test_pixel_weight_map_equals_healpys_unfolding(tmp_path):
    # healpy multiplies each pixel by 1 + w: map2alm of a constant map with iter=0 and
    # pixel weights is (1 + w) folded, which gives the unfolding pixel by pixel through alm2map
    for nside in (16, 32, 64):
        w = weights_mod.pixel_weight_map(nside)
        assert w.shape == (12 * nside * nside,)
        # the symmetries HEALPix's compact form relies on: north-south mirror, 4-fold rotation
        geom = sphgpu.RingGeometry.healpix(nside)
        for r in range(2 * nside - 1):
            s = geom.nrings - 1 - r
            a = w[geom.ringstart[r]:geom.ringstart[r] + geom.nphi[r]]
            b = w[geom.ringstart[s]:geom.ringstart[s] + geom.nphi[s]]
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, np.roll(a, geom.nphi[r] // 4))
    dp = _healpy_datapath(tmp_path, 16)
    m = np.zeros(12 * 16 * 16)
    m[[0, 5, 100, 1000, 1500, 3071]] = 1.0
    got = sphgpu.map2alm(m, use_pixel_weights=True)
    want = hp.map2alm(m, use_pixel_weights=True, datapath=dp)
    assert rel_err(got, want) <= TOL["vs_healpy_weights"]


@pytest.mark.skipif(not os.path.isdir(DEBIAN), reason=f"no HEALPix data folder {DEBIAN} "
                    "(apt-get install healpy-data, or set SPHGPU_HEALPIX_DATA)")
def test_shipped_ring_weights_equal_healpix_files_and_larger_nside_read_from_them(rng):
    fits = pytest.importorskip("astropy.io.fits")
    from sphgpu.data import healpix_weights as shipped

    for nside in shipped.RING_NSIDES:
        with fits.open(os.path.join(DEBIAN, f"weight_ring_n{nside:05d}.fits")) as f:
            col = np.asarray(f[1].data.field(0), dtype=np.float64).ravel()
        np.testing.assert_array_equal(shipped.shipped_ring_weights(nside), col)
        np.testing.assert_array_equal(weights_mod.ring_weights(nside, DEBIAN), col)
    # nside 4096 is not shipped: read from the folder found on the system (only the table)
    assert weights_mod.ring_weights(4096).shape == (8192,)


def test_weight_errors_name_the_argument(rng, tmp_path, monkeypatch):
    m = np.zeros(12 * 16 * 16)
    with pytest.raises(ValueError, match="use_weights"):
        sphgpu.map2alm(m, use_weights=True, use_pixel_weights=True)
    with pytest.raises(FileNotFoundError, match="datapath"):
        sphgpu.map2alm(m, use_weights=True, datapath=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="datapath"):
        sphgpu.map2alm(m, use_pixel_weights=True, datapath=str(tmp_path))
    monkeypatch.setattr(weights_mod, "SYSTEM_DATA_DIRS", ())
    monkeypatch.delenv("SPHGPU_HEALPIX_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="use_pixel_weights=True: no HEALPix pixel"):
        sphgpu.map2alm(np.zeros(12 * 128 * 128), use_pixel_weights=True)
    with pytest.raises(FileNotFoundError, match="use_weights=True: no HEALPix ring"):
        sphgpu.map2alm(np.zeros(12 * 3 * 3), use_weights=True)
    with pytest.raises(ValueError, match="use_weights"):
        gl = sphgpu.RingGeometry.gauss_legendre(9)
        sphgpu.map2alm(np.zeros(gl.npix), geometry=gl, use_weights=True)
    for bad, exc in (("20", TypeError), (-1.0, ValueError), (math.nan, ValueError)):
        with pytest.raises(exc, match="gal_cut"):
            sphgpu.map2alm(m, gal_cut=bad)
    with pytest.raises(TypeError, match="use_weights"):
        sphgpu.map2alm(m, use_weights="yes")


# ------------------------------------------------------------------ beam_window
def test_smoothing_reads_a_transposed_polarized_beam_window(rng):
    # issue 38: (3, L) was read as 3 multipoles (beam zero above l = 2, result 100 % off)
    nside = 8
    iqu = rng.standard_normal((3, 12 * nside * nside))
    b = sphgpu.gauss_beam(0.2, 3 * nside - 1, pol=True)              # (L, 4)
    want = sphgpu.smoothing(iqu, beam_window=b)
    for layout in (b.T, b[:, :3].T, b[:, :3], np.c_[b, b[:, :1]]):  # (4, L) (3, L) (L, 3) (L, 5)
        got = sphgpu.smoothing(iqu, beam_window=layout)
        assert rel_err(got, want) <= 1e-14
    # healpy's own (L,) window on I, Q, U multiplies T, E and B alike
    bl = b[:, 0]
    assert rel_err(sphgpu.smoothing(iqu, beam_window=bl), hp.smoothing(iqu, beam_window=bl)) \
        <= TOL["vs_healpy_iter"]


@pytest.mark.parametrize("bad, exc, match", [
    (np.ones((24, 2)), ValueError, r"shape \(24, 2\)"),
    (np.ones((2, 24)), ValueError, "beam_window has shape"),
    (np.ones((3, 4, 24)), ValueError, "beam_window has shape"),
    ("gauss", TypeError, "beam_window must be an array"),
    (np.ones(24) + 0j, TypeError, "beam_window must be real"),
    ([np.ones(24), np.ones(20), np.ones(24)], ValueError, "beam_window is ragged"),
    (np.r_[1.0, np.nan, np.ones(22)], ValueError, "beam_window contains NaN"),
    (np.ones(24, dtype=bool), TypeError, "beam_window"),
    (np.ones(0), ValueError, "beam_window is empty"),
])
def test_bad_beam_windows_are_refused_naming_beam_window(bad, exc, match):
    iqu = np.zeros((3, 12 * 8 * 8))
    with pytest.raises(exc, match=match):
        sphgpu.smoothing(iqu, beam_window=bad)
    with pytest.raises(exc, match=match):
        sphgpu.sims.MonteCarlo(np.ones((4, 24)), 8, pol=True, beam_window=bad)


def test_beam_window_layouts_and_padding():
    b = np.arange(1.0, 7.0)
    np.testing.assert_array_equal(parse_beam_window(b, 7, True),
                                  np.tile(np.r_[b, 0.0, 0.0], (3, 1)))
    t = np.arange(12.0).reshape(4, 3)              # both axes <= 4: healpy's (L, n) layout
    np.testing.assert_array_equal(parse_beam_window(t, 3, True), t.T)
    np.testing.assert_array_equal(parse_beam_window(t, 3, False), t[:, :1].T)


def test_montecarlo_reads_a_transposed_polarized_beam_window():
    lmax = 23
    b = sphgpu.gauss_beam(0.1, lmax, pol=True)
    a = sphgpu.sims.MonteCarlo(np.ones((4, lmax + 1)), 8, pol=True, beam_window=b.T)
    c = sphgpu.sims.MonteCarlo(np.ones((4, lmax + 1)), 8, pol=True, beam_window=b[:, :3])
    np.testing.assert_array_equal(a.beam, b[:, :3].T)
    np.testing.assert_array_equal(c.beam, b[:, :3].T)


# ------------------------------------------------------------------ synalm's spectra
def _not_a_covariance(lmax=40):
    ell = np.arange(lmax + 1)
    tt = 1.0 / (ell + 1.0)
    ee = 0.1 * tt * np.where(ell % 3 == 0, -1.0, 1.0)           # negative EE at l = 0, 3, 6, ...
    bb = 0.01 * tt
    te = 0.5 * np.sqrt(tt * np.abs(ee)) * np.where(ell % 5 == 1, 3.0, 1.0)   # too big at l%5 == 1
    return [tt, ee, bb, te]


def _healpy_factor(cov_list, n, lmax):
    """healpy's per-l Cholesky factor, read from its _synalm with unit draws: a_lm of field i
    from a unit draw in field j only is res[i, j] at m = 0."""
    out = np.zeros((lmax + 1, n, n))
    nalm = hp.Alm.getsize(lmax)
    for j in range(n):
        alms = [np.zeros(nalm, complex) for _ in range(n)]
        alms[j][:] = 1.0
        hp.sphtfunc.sphtlib._synalm([None if c is None else np.asarray(c, float) for c in cov_list],
                           alms, lmax, lmax)
        for i in range(n):
            out[:, i, j] = alms[i][hp.Alm.getidx(lmax, np.arange(lmax + 1), 0)].real
    return out


def test_synalm_accepts_what_healpy_accepts_and_names_the_multipoles_changed():
    tt, ee, bb, te = _not_a_covariance()
    zero = np.zeros_like(tt)
    with pytest.warns(UserWarning, match=r"not positive semi-definite at l = 0, 1, 3, 6"):
        alm = sphgpu.synalm([tt, ee, bb, te], new=True, seed=1)
    assert alm.shape == (3, AlmLayout(40).size) and np.all(np.isfinite(alm))
    # the deterministic part is healpy's, entry by entry (row order TT TE TB EE EB BB)
    cov = np.zeros((3, 3, 41))
    for (i, j), c in zip([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)],
                         [tt, te, zero, ee, zero, bb]):
        cov[i, j] = cov[j, i] = c
    f, changed = cholesky_factors(cov)
    np.testing.assert_allclose(f, _healpy_factor([tt, te, zero, ee, zero, bb], 3, 40),
                               rtol=1e-15, atol=1e-300)
    assert set(np.flatnonzero(changed)) == {l for l in range(41) if l % 3 == 0 or l % 5 == 1}
    with pytest.warns(UserWarning, match="l = 0, 1, 3, 6"):
        sphgpu.synfast([tt, ee, bb, te], 8, new=True, seed=1)
    with pytest.warns(UserWarning, match="l = 1, 3"):              # one spectrum: C_l < 0
        a = sphgpu.synalm(np.array([1.0, -1.0, 2.0, -3.0]), seed=2)
    np.testing.assert_array_equal(a[[1, 3]], 0.0)                  # m = 0 of l = 1, 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")                             # a covariance: no warning
        sphgpu.synalm([tt, np.abs(ee), bb, 0 * te], new=True, seed=1)


def test_synalm_statistics_follow_the_clamped_covariance():
    tt, ee, bb, te = _not_a_covariance(24)
    cov = np.zeros((3, 3, 25))
    for (i, j), c in zip([(0, 0), (1, 1), (2, 2), (0, 1)], [tt, ee, bb, te]):
        cov[i, j] = cov[j, i] = c
    f, _ = cholesky_factors(cov)
    want = np.einsum("lik,ljk->ijl", f, f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sims = [sphgpu.alm2cl(sphgpu.synalm([tt, ee, bb, te], new=True, seed=s))
                for s in range(300)]
    mean = np.mean(sims, axis=0)               # TT EE BB TE EB TB
    ell = np.arange(25)
    for s, (i, j) in enumerate([(0, 0), (1, 1), (2, 2), (0, 1)]):
        sigma = np.sqrt((want[i, i] * want[j, j] + want[i, j] ** 2) / (2 * ell + 1) / 300)
        assert np.all(np.abs(mean[s, 2:] - want[i, j, 2:]) <= 5 * sigma[2:] + 1e-15), s


# ------------------------------------------------------------------ gauss_beam, sizes, misc
def test_gauss_beam_is_healpys_to_the_bit():
    for fwhm in (0.0, math.radians(10 / 60), 0.3):
        np.testing.assert_array_equal(sphgpu.gauss_beam(fwhm, 512, True),
                                      hp.gauss_beam(fwhm, 512, True))
        np.testing.assert_array_equal(sphgpu.gauss_beam(fwhm, 512), hp.gauss_beam(fwhm, 512))
    assert sphgpu.gauss_beam(0.1, 1e3).shape == (1001,)            # healpy takes lmax=1e3


def test_huge_sizes_are_clear_errors_before_allocating():
    with pytest.raises(MemoryError, match="lmax=10000000000"):
        sphgpu.gauss_beam(0.1, lmax=1e10)
    with pytest.raises(ValueError, match="lmax"):
        sphgpu.gauss_beam(0.1, lmax=10.5)
    with pytest.raises(MemoryError, match="nside=1048576"):
        sphgpu.synfast(np.ones(10), 2**20)
    with pytest.raises(ValueError, match="nside"):
        sphgpu.alm2map(np.zeros(6, complex), 2**30)
    with pytest.raises(MemoryError, match="lmax"):
        sphgpu.synalm(np.ones(10), lmax=10**7)


def test_alm2cl_lmax_out_beyond_lmax_as_healpy(rng):
    a = random_alm(rng, AlmLayout(10), 3)
    for lmax_out in (5, 10, 20):
        got = sphgpu.alm2cl(a, lmax_out=lmax_out)
        want = hp.alm2cl(a, lmax_out=lmax_out)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=TOL["alm2cl_rtol"])


def test_smoothing_nest_and_masked_lists_as_healpy(rng):
    nside = 8
    iqu = rng.standard_normal((3, 12 * nside * nside))
    got = sphgpu.smoothing(iqu, 0.2, None, None, True, 3, None, None, False, False, None, True,
                           True)
    want = hp.smoothing(iqu, 0.2, None, None, True, 3, None, None, False, False, None, True, True)
    assert rel_err(got, want) <= TOL["vs_healpy_iter"]
    masked = [hp.ma(m) for m in iqu]
    for m in masked:
        m.mask = np.arange(m.size) % 7 == 0
    got = sphgpu.smoothing(masked, fwhm=0.2)
    want = hp.smoothing(masked, fwhm=0.2)
    assert isinstance(got, np.ma.MaskedArray)
    np.testing.assert_array_equal(got.mask, want.mask)
    assert rel_err(got.filled(0), want.filled(0)) <= TOL["vs_healpy_iter"]


def test_spin_zero_transforms_as_healpy(rng):
    lmax, nside = 12, 8
    a = random_alm(rng, AlmLayout(lmax), 2)
    got = sphgpu.alm2map_spin(a, nside, 0, lmax)
    want = hp.alm2map_spin(list(a), nside, 0, lmax)
    assert rel_err(got, np.array(want)) <= TOL["vs_ducc0"]
    back = sphgpu.map2alm_spin(got, 0, lmax)
    want = hp.map2alm_spin(list(np.array(want)), 0, lmax)
    assert rel_err(back, np.array(want)) <= TOL["vs_ducc0"]


def test_pixwin_reads_healpys_datapath(tmp_path):
    if not os.path.isdir(DEBIAN):
        pytest.skip(f"no HEALPix data folder {DEBIAN}")
    np.testing.assert_array_equal(sphgpu.pixwin(64, True, None, DEBIAN)[1],
                                  sphgpu.pixwin(64, True)[1])
    with pytest.raises(FileNotFoundError, match="datapath"):
        sphgpu.pixwin(64, datapath=str(tmp_path))
