"""Catalogs from NumPy arrays, CSV, NPZ and FITS files; unit vectors; the public API on them."""

import pickle

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, angular_correlation, pair_counts
from sphgpu.tpacf.catalog import unit_vectors

from .cases import sky

BINS = AngularBins.log(0.5, 10, 4)


def test_unit_vectors_and_ra_wrap():
    u = unit_vectors([0.0, 360.0, -1e-14, 90.0, 123.0], [0.0, 0.0, 0.0, 0.0, 90.0])
    np.testing.assert_array_equal(u[:, 0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(u[:, 1], u[:, 0])            # 360 is 0, bit for bit
    np.testing.assert_array_equal(u[:, 2], u[:, 0])            # tiny negatives wrap to 0
    np.testing.assert_allclose(u[:, 3], [0, 1, 0], atol=TOL["unit_vector_atol"])
    assert u[2, 4] == 1.0
    np.testing.assert_allclose(np.sum(u * u, axis=0), 1.0, rtol=TOL["unit_norm_rtol"])


def test_csv_npz_and_arrays_give_the_same_catalog(tmp_path, rng):
    ra, dec = sky(rng, 50, dec=(0, 20), ra=(0, 20))
    w, lab = rng.uniform(1, 2, 50), rng.integers(0, 3, 50)
    csv = tmp_path / "cat.csv"
    with open(csv, "w") as f:
        f.write("# a comment line\nRA,DEC,W,JK\n")
        for row in zip(ra, dec, w, lab):
            f.write(f"{float(row[0])!r},{float(row[1])!r},{float(row[2])!r},{row[3]}\n")
    c = Catalog.from_csv(csv, ra="RA", dec="DEC", weights="W", labels="JK")
    np.testing.assert_array_equal(c.ra, ra)
    np.testing.assert_array_equal(c.dec, dec)
    np.testing.assert_array_equal(c.weights, w)
    np.testing.assert_array_equal(c.labels, lab)
    nohead = tmp_path / "cat.txt"
    np.savetxt(nohead, np.stack([dec, ra], axis=1), delimiter=",")
    c2 = Catalog.from_csv(nohead, ra=1, dec=0)
    np.testing.assert_array_equal(c2.ra, ra)
    npz = tmp_path / "cat.npz"
    np.savez(npz, ra=ra, dec=dec)
    c3 = Catalog.read(npz)
    np.testing.assert_array_equal(c3.dec, dec)
    a = pair_counts(ra, dec, bins=BINS, backend="cpu")
    for cat in (c, c2, c3, pickle.loads(pickle.dumps(c3))):
        np.testing.assert_array_equal(pair_counts(cat, bins=BINS, backend="cpu").counts,
                                      a.counts)
    with pytest.raises(ValueError, match="column 'RAX' not found"):
        Catalog.from_csv(csv, ra="RAX", dec="DEC")
    with pytest.raises(ValueError, match="unknown catalog format"):
        Catalog.read(tmp_path / "cat.xlsx")
    # a path works wherever a catalog does
    res = angular_correlation(str(csv), str(npz), bins=BINS, backend="cpu")
    assert res.w.shape == (4,)


def test_fits_table(tmp_path, rng):
    fits = pytest.importorskip("astropy.io.fits")
    ra, dec = sky(rng, 40, dec=(0, 20), ra=(0, 20))
    w = rng.uniform(1, 2, 40)
    cols = [fits.Column(name="RA", format="D", array=ra),
            fits.Column(name="DEC", format="E", array=dec.astype(np.float32)),
            fits.Column(name="WEIGHT", format="D", array=w),
            fits.Column(name="JK", format="J", array=np.arange(40) % 3)]
    path = tmp_path / "cat.fits"
    fits.BinTableHDU.from_columns(cols).writeto(path)
    c = Catalog.read(path, weights="WEIGHT", labels="JK")
    np.testing.assert_array_equal(c.ra, ra)
    np.testing.assert_array_equal(c.dec, dec.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(c.labels, np.arange(40) % 3)
    assert c.ra.dtype == np.float64 and c.ra.dtype.isnative
    with pytest.raises(ValueError, match="column 'Z' not found"):
        Catalog.from_fits(path, ra="Z")


def test_catalog_helpers(rng):
    ra, dec = sky(rng, 30)
    c = Catalog(ra, dec, labels=np.arange(30) % 4)
    assert len(c) == 30 and c.n_regions == 4 and "4 regions" in repr(c)
    s = c.subset(c.labels != 1)
    assert s.size == 30 - np.count_nonzero(np.arange(30) % 4 == 1)
    assert c.with_labels(None).labels is None


def test_numba_device_arrays_make_the_same_catalog(rng):
    # under the simulator Numba's device arrays come back to the host (sphgpu._device.to_host)
    from sphgpu._device import SIMULATOR

    if not SIMULATOR:
        pytest.skip("simulator only")
    from numba import cuda

    ra, dec = sky(rng, 40, dec=(0, 20), ra=(0, 20))
    w, lab = rng.uniform(1, 2, 40), rng.integers(0, 3, 40)
    c = Catalog(*(cuda.to_device(x) for x in (ra, dec)), weights=cuda.to_device(w),
                labels=cuda.to_device(lab))
    np.testing.assert_array_equal(c.ra, ra)
    np.testing.assert_array_equal(c.dec, dec)
    np.testing.assert_array_equal(c.weights, w)
    np.testing.assert_array_equal(c.labels, lab)


def test_parts_and_pickled_copies_hold_the_checked_arrays():
    """A part is a view of its Catalog's arrays and an unpickled Catalog holds the pickled
    values, weights and labels included, with their dtypes: neither is checked or copied
    again (distributed counts make and unpickle stripes at every call)."""
    rng = np.random.default_rng(5)
    ra, dec = rng.uniform(0, 360, 50), rng.uniform(-90, 90, 50)
    c = Catalog(ra, dec, weights=rng.uniform(0.5, 2, 50), labels=np.arange(50) % 4)
    p = c.part(10, 30)
    assert p.size == 20 and np.shares_memory(p.ra, c.ra) and np.shares_memory(p.labels, c.labels)
    np.testing.assert_array_equal(p.weights, c.weights[10:30])
    for got in (pickle.loads(pickle.dumps(c)), pickle.loads(pickle.dumps(p))):
        want = c if got.size == 50 else p
        for name in ("ra", "dec", "weights", "labels"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    bare = pickle.loads(pickle.dumps(Catalog(ra, dec)))
    assert bare.weights is None and bare.labels is None and bare.size == 50
