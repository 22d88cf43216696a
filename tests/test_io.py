"""sphgpu.io against healpy 1.20.1: files written by one read by the other, bit for bit; the
files themselves byte for byte where healpy writes the same table; bad input; atomic writes.

CI sizes: nside 1, 2, 4, 16, 64, 256 (maps), lmax up to 64 (a_lm); the benchmark
(benchmarks/io_read_map.py) reads nside 2048.
"""

import gzip
import io
import os

import numpy as np
import pytest

import sphgpu
from sphgpu.io import fitsfile, maps as maps_mod

hp = pytest.importorskip("healpy")
fits = pytest.importorskip("astropy.io.fits")

NSIDES = [1, 2, 4, 16, 64, 256]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    na, nb = a.dtype.newbyteorder("="), b.dtype.newbyteorder("=")
    assert na == nb, (a.dtype, b.dtype)
    assert a.astype(na).tobytes() == b.astype(nb).tobytes()


def _maps(rng, nside, k, dtype, unseen=True):
    m = (rng.standard_normal((k, 12 * nside**2)) * 100).astype(dtype)
    if unseen:
        m[:, rng.integers(0, m.shape[1], max(1, m.shape[1] // 5))] = hp.UNSEEN
        m[:, :1] = hp.UNSEEN * (1 + 1e-7)       # within healpy's tolerance: read as UNSEEN
    return m


@pytest.fixture(autouse=True)
def _quiet_healpy(caplog):
    # healpy logs "setting the output map dtype" at every write
    caplog.set_level("ERROR", logger="healpy")


@pytest.mark.parametrize("nest", [False, True], ids=["RING", "NESTED"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nside", NSIDES)
def test_maps_round_trip_with_healpy_bit_for_bit(nside, dtype, nest, tmp_path, rng):
    m = _maps(rng, nside, 3, dtype)
    theirs, mine = tmp_path / "healpy.fits", tmp_path / "sphgpu.fits"
    hp.write_map(theirs, m, nest=nest, coord="G")
    sphgpu.write_map(mine, m, nest=nest, coord="G")
    assert mine.read_bytes() == theirs.read_bytes()          # the same file, byte for byte
    for field in (0, (1,), (0, 1, 2), None, (2, 0), ("Q_POLARISATION", "temperature")):
        for out_nest in (False, True, None):
            kw = dict(field=field, nest=out_nest)
            _same(sphgpu.read_map(theirs, **kw), hp.read_map(theirs, **kw))
    # a column name alone (healpy 1.20.1 takes names only in a sequence)
    _same(sphgpu.read_map(theirs, field="U_POLARISATION"), hp.read_map(theirs, field=(2,)))
    # one field, and the header as healpy gives it (healpy 1.20.1 names one map's column "T",
    # its documentation and sphgpu "TEMPERATURE": named here)
    kw = dict(nest=nest, overwrite=True, column_units="mK", column_names=["I_STOKES"],
              extra_header=[("TELESCOP", "WMAP", "the instrument")])
    hp.write_map(theirs, m[1], **kw)
    sphgpu.write_map(mine, m[1], **kw)
    assert mine.read_bytes() == theirs.read_bytes()
    a, ha = sphgpu.read_map(mine, h=True, dtype=np.float64)
    b, hb = hp.read_map(mine, h=True, dtype=np.float64)
    _same(a, b)
    assert ha == hb


@pytest.mark.parametrize("nest", [False, True], ids=["RING", "NESTED"])
@pytest.mark.parametrize("nside", [4, 16, 256])
def test_partial_maps_round_trip_with_healpy(nside, nest, tmp_path, rng):
    # healpy 1.20.1 cannot write a partial map whose largest pixel is 1 .. 128 (int8): nside >= 4
    m = _maps(rng, nside, 2, np.float32)
    m[:, : m.shape[1] // 3] = hp.UNSEEN                         # a cut sky
    theirs, mine = tmp_path / "healpy.fits", tmp_path / "sphgpu.fits"
    hp.write_map(theirs, m, nest=nest, partial=True)
    sphgpu.write_map(mine, m, nest=nest, partial=True)
    assert mine.read_bytes() == theirs.read_bytes()
    for out_nest in (False, True, None):
        _same(sphgpu.read_map(theirs, field=(0, 1), nest=out_nest),
              hp.read_map(theirs, field=(0, 1), nest=out_nest))
    with fits.open(mine) as f:
        h = f[1].header
        assert (h["INDXSCHM"], h["OBJECT"], h["NSIDE"]) == ("EXPLICIT", "PARTIAL", nside)
        assert f[1].columns.names == ["PIXEL", "Q_POLARISATION", "U_POLARISATION"]


def test_header_keywords_and_column_layout(tmp_path, rng):
    m = _maps(rng, 32, 3, np.float32)
    sphgpu.write_map(tmp_path / "m.fits", m, nest=True, coord="C")
    with fits.open(tmp_path / "m.fits") as f:
        h = f[1].header
        assert [k for k in h if k in ("PIXTYPE", "ORDERING", "COORDSYS", "EXTNAME", "NSIDE",
                                      "FIRSTPIX", "LASTPIX", "INDXSCHM", "OBJECT")] == \
            ["PIXTYPE", "ORDERING", "COORDSYS", "EXTNAME", "NSIDE", "FIRSTPIX", "LASTPIX",
             "INDXSCHM", "OBJECT"]
        assert (h["PIXTYPE"], h["ORDERING"], h["NSIDE"], h["LASTPIX"]) == \
            ("HEALPIX", "NESTED", 32, 12 * 32**2 - 1)
        assert f[1].columns.formats == ["1024E"] * 3
    sphgpu.write_map(tmp_path / "d.fits", m, fits_IDL=False, dtype=np.float64)
    with fits.open(tmp_path / "d.fits") as f:
        assert f[1].columns.formats == ["D"] * 3


def test_mixed_dtypes_integer_maps_and_dtype_argument(tmp_path, rng):
    i = rng.integers(-1000, 1000, 192).astype(np.int32)
    f = rng.standard_normal(192)
    hp.write_map(tmp_path / "m.fits", [i, f])
    got = sphgpu.read_map(tmp_path / "m.fits", field=(0, 1), dtype=[None, np.float32])
    want = hp.read_map(tmp_path / "m.fits", field=(0, 1), dtype=[None, np.float32])
    assert isinstance(got, list) and len(got) == 2
    for a, b in zip(got, want):
        _same(a, b)
    _same(sphgpu.read_map(tmp_path / "m.fits", field=0), i)
    _same(sphgpu.read_map(tmp_path / "m.fits", field=1, dtype=np.float32), f.astype(np.float32))


def test_masked_and_gzip_and_file_objects(tmp_path, rng):
    m = np.ma.masked_array(rng.standard_normal(768), mask=rng.random(768) < 0.2)
    sphgpu.write_map(tmp_path / "m.fits.gz", m)
    with gzip.open(tmp_path / "m.fits.gz") as g:          # really compressed
        assert g.read(6) == b"SIMPLE"
    want = m.filled(hp.UNSEEN)
    _same(sphgpu.read_map(tmp_path / "m.fits.gz"), want)
    _same(hp.read_map(tmp_path / "m.fits.gz"), want)
    sphgpu.write_map(tmp_path / "m.fits", m)
    data = (tmp_path / "m.fits").read_bytes()
    _same(sphgpu.read_map(io.BytesIO(data)), want)


def test_large_file_through_many_chunks(tmp_path, rng, monkeypatch):
    # small chunks: rows cut mid-way through the map, reordered chunk by chunk
    monkeypatch.setattr(maps_mod, "CHUNK_BYTES", 3 * 4096 * 5 + 7)
    m = _maps(rng, 64, 3, np.float32)
    hp.write_map(tmp_path / "n.fits", m, nest=True)
    for nest in (False, True):
        _same(sphgpu.read_map(tmp_path / "n.fits", field=None, nest=nest),
              hp.read_map(tmp_path / "n.fits", field=None, nest=nest))


def test_read_map_to_the_device_under_the_simulator(tmp_path, rng, monkeypatch):
    # under Numba's CUDA simulator device arrays are NumPy arrays: the chunk-by-chunk upload
    # and the scatter on the device path run here; on a GPU they give CuPy arrays
    monkeypatch.setattr(maps_mod, "CHUNK_BYTES", 4096 * 3 + 12)
    m = _maps(rng, 16, 3, np.float32)
    hp.write_map(tmp_path / "n.fits", m, nest=True)
    got = sphgpu.read_map(tmp_path / "n.fits", field=(0, 1, 2), device=True)
    _same(np.asarray(got), hp.read_map(tmp_path / "n.fits", field=(0, 1, 2)))
    with pytest.raises(TypeError, match="device must be True or False"):
        sphgpu.read_map(tmp_path / "n.fits", device="gpu0")


@pytest.mark.parametrize("lmax, mmax", [(0, 0), (7, 7), (20, 3), (64, 64), (33, 0)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_alm_round_trip_with_healpy(lmax, mmax, dtype, tmp_path, rng):
    n = hp.Alm.getsize(lmax, mmax)
    alm = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(dtype)
    theirs, mine = tmp_path / "healpy.fits", tmp_path / "sphgpu.fits"
    for kw in (dict(), dict(lmax=min(lmax, 5)), dict(mmax=min(mmax, 2)),
               dict(out_dtype=np.float64)):
        hp.write_alm(theirs, alm, mmax_in=mmax, overwrite=True, **kw)
        sphgpu.write_alm(mine, alm, mmax_in=mmax, overwrite=True, **kw)
        assert mine.read_bytes() == theirs.read_bytes()
        for hdu in (1, 3, (1, 2, 3)):
            a, ma = sphgpu.read_alm(theirs, hdu=hdu, return_mmax=True)
            b, mb = hp.read_alm(theirs, hdu=hdu, return_mmax=True)
            assert ma == mb
            _same(a, b)
    # healpy's read_alm on sphgpu's file, and the values where they belong
    sphgpu.write_alm(mine, alm[0], mmax_in=mmax, overwrite=True)
    _same(hp.read_alm(mine), alm[0])


@pytest.mark.parametrize("k", [1, 4, 6, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cl_round_trip_with_healpy(k, dtype, tmp_path, rng):
    cl = rng.random((k, 65)).astype(dtype)
    cl = cl[0] if k == 1 else cl
    theirs, mine = tmp_path / "healpy.fits", tmp_path / "sphgpu.fits"
    hp.write_cl(theirs, cl, column_units="K^2")
    sphgpu.write_cl(mine, cl, column_units="K^2")
    _same(sphgpu.read_cl(theirs), hp.read_cl(theirs))
    _same(hp.read_cl(mine), cl)
    _same(sphgpu.read_cl(mine), cl)
    with fits.open(theirs) as a, fits.open(mine) as b:
        assert a[1].columns.names == b[1].columns.names
        assert a[1].columns.units == b[1].columns.units
        # the same header but the creator's name
        assert [tuple(c) for c in a[1].header.cards if c.keyword != "CREATOR"] == \
            [tuple(c) for c in b[1].header.cards if c.keyword != "CREATOR"]


# ----------------------------------------------------------------------------- bad input
def test_not_a_fits_file(tmp_path):
    p = tmp_path / "notes.fits"
    p.write_text("just some text, not FITS\n" * 200)
    for read in (sphgpu.read_map, sphgpu.read_alm, sphgpu.read_cl):
        with pytest.raises(ValueError, match=r"notes\.fits.* is not a FITS file"):
            read(p)
    with pytest.raises(FileNotFoundError, match=r"missing\.fits.*no such file"):
        sphgpu.read_map(tmp_path / "missing.fits")


def test_fits_files_without_a_healpix_table(tmp_path):
    img = tmp_path / "image.fits"
    fits.HDUList([fits.PrimaryHDU(np.zeros((4, 4)))]).writeto(img)
    with pytest.raises(ValueError, match=r"image\.fits.* has no HDU 1"):
        sphgpu.read_map(img)
    with pytest.raises(ValueError, match=r"image\.fits.* no HEALPix map: HDU 0 is a PrimaryHDU"):
        sphgpu.read_map(img, hdu=0)
    cat = tmp_path / "catalog.fits"
    fits.BinTableHDU.from_columns([fits.Column(name="RA", format="D", array=np.zeros(10))]) \
        .writeto(cat)
    with pytest.raises(ValueError, match=r"catalog\.fits.* no NSIDE keyword and its first "
                                         r"column holds 10 values"):
        sphgpu.read_map(cat)
    other = tmp_path / "cube.fits"
    t = fits.BinTableHDU.from_columns([fits.Column(name="X", format="E", array=np.zeros(12))])
    t.header["PIXTYPE"] = "GLESP"
    t.writeto(other)
    with pytest.raises(ValueError, match=r"cube\.fits.* PIXTYPE='GLESP'"):
        sphgpu.read_map(other)


def test_npix_that_is_no_healpix_size(tmp_path, rng):
    with pytest.raises(ValueError, match="m has 100 pixels, which is not a HEALPix size"):
        sphgpu.write_map(tmp_path / "m.fits", np.zeros(100))
    p = tmp_path / "short.fits"
    t = fits.BinTableHDU.from_columns([fits.Column(name="T", format="E", array=np.zeros(40))])
    t.header["NSIDE"] = 2
    t.writeto(p)
    with pytest.raises(ValueError, match=r"short\.fits.* holds 40 values, but NSIDE=2 needs 48"):
        sphgpu.read_map(p)
    t.header["NSIDE"] = 0
    t.writeto(p, overwrite=True)
    with pytest.raises(ValueError, match=r"short\.fits.*NSIDE=0 is not a HEALPix nside"):
        sphgpu.read_map(p)


def test_truncated_file(tmp_path, rng):
    p = tmp_path / "cut.fits"
    sphgpu.write_map(p, _maps(rng, 64, 1, np.float32))
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut\.fits"):
        sphgpu.read_map(p)


def test_missing_field(tmp_path, rng):
    p = tmp_path / "iqu.fits"
    sphgpu.write_map(p, _maps(rng, 2, 3, np.float32))
    with pytest.raises(ValueError, match=r"iqu\.fits.* has no field 3: it has 3 map columns"):
        sphgpu.read_map(p, field=3)
    with pytest.raises(ValueError, match=r"iqu\.fits.* has no field 'E_MODE'; its columns are "
                                         r"\['TEMPERATURE'"):
        sphgpu.read_map(p, field="E_MODE")
    with pytest.raises(ValueError, match="dtype has 2 entries for 3 fields"):
        sphgpu.read_map(p, field=None, dtype=[np.float32, np.float64])


def test_existing_file_needs_overwrite(tmp_path, rng):
    p = tmp_path / "m.fits"
    m = _maps(rng, 2, 1, np.float64)
    sphgpu.write_map(p, m)
    before = p.read_bytes()
    for write, arg in ((sphgpu.write_map, m), (sphgpu.write_cl, np.ones(5)),
                       (sphgpu.write_alm, np.ones(6, complex))):
        with pytest.raises(FileExistsError, match=r"m\.fits.* exists; pass overwrite=True"):
            write(p, arg)
    assert p.read_bytes() == before
    sphgpu.write_map(p, m * 2, overwrite=True)
    assert p.read_bytes() != before
    _same(sphgpu.read_map(p), hp.read_map(p))


def test_unwritable_or_missing_folder(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"nowhere.*m\.fits.*does not exist"):
        sphgpu.write_map(tmp_path / "nowhere" / "m.fits", np.zeros(12))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            # root writes anywhere: the operating system's refusal, simulated
            import tempfile

            def refuse(*args, **kwargs):
                raise PermissionError(13, "Permission denied")

            monkeypatch.setattr(tempfile, "mkstemp", refuse)
        with pytest.raises(PermissionError, match=r"locked.*m\.fits.*not writable"):
            sphgpu.write_map(locked / "m.fits", np.zeros(12))
    finally:
        locked.chmod(0o700)


def test_interrupted_write_keeps_the_previous_file(tmp_path, rng, monkeypatch):
    p = tmp_path / "m.fits"
    sphgpu.write_map(p, _maps(rng, 16, 3, np.float32))
    before = p.read_bytes()

    def disk_full(self, target, *args, **kwargs):
        with open(target, "wb") as f:
            f.write(b"SIMPLE  =   T" + b" " * 5000)           # part of a file, then ENOSPC
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fits.HDUList, "writeto", disk_full)
    with pytest.raises(OSError, match=r"m\.fits.* failed part-way .*No space left on device.*"
                                      r"previous file.* intact"):
        sphgpu.write_map(p, _maps(rng, 16, 3, np.float32), overwrite=True)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.fits"]          # no temporary file left


def test_write_errors_name_the_argument(tmp_path):
    with pytest.raises(TypeError, match="dtype=.*FITS tables hold"):
        sphgpu.write_map(tmp_path / "m.fits", np.zeros(12), dtype=np.float16)
    with pytest.raises(ValueError, match="column_names has 1 entries for 3 maps"):
        sphgpu.write_map(tmp_path / "m.fits", np.zeros((3, 12)), column_names=["T"])
    with pytest.raises(ValueError, match="every pixel of the first map is UNSEEN"):
        sphgpu.write_map(tmp_path / "m.fits", np.full(12, hp.UNSEEN), partial=True)
    with pytest.raises(ValueError, match="alms has 7 coefficients"):
        sphgpu.write_alm(tmp_path / "a.fits", np.zeros(7, complex))
    with pytest.raises(ValueError, match="lmax=9 must lie in 0 .. 2"):
        sphgpu.write_alm(tmp_path / "a.fits", np.zeros(6, complex), lmax=9)
    assert not os.listdir(tmp_path)


def test_one_astropy_import_with_a_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_astropy(name, *args, **kwargs):
        if name.startswith("astropy"):
            raise ImportError("No module named 'astropy'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_astropy)
    with pytest.raises(ImportError, match="needs astropy: pip install astropy"):
        fitsfile.astropy_fits()


# ----------------------------------------------------------------------------- the real sky
def test_shipped_wmap_map_and_mask():
    iqu = sphgpu.io.wmap_map()
    mask = sphgpu.io.wmap_mask()
    assert iqu.shape == (3, 12 * 32**2) and iqu.dtype == np.float32
    _same(iqu, hp.read_map(sphgpu.io.data_path(sphgpu.io.sky.WMAP_MAP), field=(0, 1, 2)))
    assert set(np.unique(mask)) == {0.0, 1.0}
    assert mask.mean() == pytest.approx(0.6187, abs=1e-4)
    # the Galaxy is bright and masked: the unmasked sky is CMB-like (tens to a hundred uK rms)
    assert iqu[0][mask == 0].std() > 5 * iqu[0][mask == 1].std()
    assert 0.05 < iqu[0][mask == 1].std() < 0.2                # mK
    _same(sphgpu.io.wmap_map(0, nest=True), hp.reorder(iqu[0], r2n=True))
    with pytest.raises(FileNotFoundError, match="not a file shipped"):
        sphgpu.io.data_path("planck.fits")
    assert os.path.getsize(sphgpu.io.data_path(sphgpu.io.sky.WMAP_MAP)) == 155520


def test_read_sky_in_microkelvin(tmp_path, rng):
    m = _maps(rng, 4, 3, np.float32)
    sphgpu.write_map(tmp_path / "k.fits", m, column_units="K")
    sky, info = sphgpu.io.read_sky(tmp_path / "k.fits")
    assert info == {"nside": 4, "fields": (0, 1, 2), "unit": "K", "unit_from": "TUNIT1"}
    want = np.where(m == hp.UNSEEN, hp.UNSEEN, m.astype(np.float64) * 1e6)
    want[:, :1] = hp.UNSEEN                     # within healpy's tolerance: read as UNSEEN
    np.testing.assert_array_equal(sky, want)
    sky, info = sphgpu.io.read_sky(tmp_path / "k.fits", unit="uK")
    np.testing.assert_array_equal(sky[1], sphgpu.read_map(tmp_path / "k.fits", field=1,
                                                          dtype=np.float64))
    with pytest.raises(ValueError, match="unit='furlong'"):
        sphgpu.io.read_sky(tmp_path / "k.fits", unit="furlong")
