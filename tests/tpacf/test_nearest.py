"""The nearest-centre kernels of the jackknife labels (sphgpu/tpacf/_nearest.py) against their
NumPy twin: the argmax over the full (K, n) matrix of dot products."""

import numpy as np
import pytest

from sphgpu.sort.cells import healpix_cells
from sphgpu.tpacf import JackknifeRegions
from sphgpu.tpacf._nearest import BLOCK, nearest_radec, nearest_xyz
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.jackknife import _nearest


def twin(xyz, centers):
    """argmax over axis 0 of the (K, n) matrix x cx + y cy + z cz (the products in the kernel's
    order, so equal bit for bit): the first, lowest, index of the largest."""
    c = np.asarray(centers, dtype=np.float64)
    d = c[:, 0, None] * xyz[0] + c[:, 1, None] * xyz[1] + c[:, 2, None] * xyz[2]
    return np.argmax(d, axis=0)


def twin_last(xyz, centers):
    """The same with ties going to the HIGHEST index (the wrong rule, to show the cases tell the
    two apart)."""
    k = len(centers)
    return k - 1 - twin(xyz, np.asarray(centers)[::-1])


def random_radec(rng, n):
    return rng.uniform(0.0, 360.0, n), np.rad2deg(np.arcsin(rng.uniform(-1.0, 1.0, n)))


def centers_with_ties(rng, k, points_ra, points_dec):
    """k centres: random ones, every one of them twice (duplicates tie exactly), and the exact
    unit vectors of a few of the points (a point equal to a centre), shuffled."""
    ra, dec = random_radec(rng, k)
    c = unit_vectors(ra, dec).T
    own = unit_vectors(points_ra[:3], points_dec[:3]).T
    c = np.concatenate([c, c, own, own])
    return c[rng.permutation(len(c))].copy()


@pytest.mark.parametrize("n", [1, 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7, 10_007])
@pytest.mark.parametrize("k", [1, 2, 7, 100])
def test_kernels_equal_the_full_matrix_argmax_with_ties(rng, n, k):
    ra, dec = random_radec(rng, n)
    xyz = unit_vectors(ra, dec)
    centers = centers_with_ties(rng, k, ra, dec) if k > 1 else unit_vectors([10.0], [20.0]).T
    want = twin(xyz, centers)
    got = nearest_xyz(xyz, centers)
    assert got.dtype == np.int64 and got.shape == (n,)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(nearest_radec(ra, dec, centers), want)
    np.testing.assert_array_equal(_nearest(xyz, centers), want)
    if k > 1:
        # every label names the lower of two equal centres, so the tie rule is tested here
        assert not np.array_equal(want, twin_last(xyz, centers))
        # a point that is a centre goes to that centre (its lowest copy)
        for i in range(min(n, 3)):
            same = np.flatnonzero(np.all(centers == xyz[:, i], axis=1))
            assert got[i] == same.min()


def test_ties_go_to_the_lowest_index():
    # the pole is at the same distance from every centre on the equator: all products are 0
    on_equator = unit_vectors([90.0, 180.0, 0.0, 270.0], [0.0] * 4).T
    assert nearest_radec(np.array([33.0]), np.array([90.0]), on_equator)[0] == 0
    # duplicates: the first copy wins, wherever it stands
    c = unit_vectors([0.0, 50.0, 50.0, 50.0], [0.0, 10.0, 10.0, 10.0]).T
    ra, dec = np.array([50.0, 51.0, 1.0]), np.array([10.0, 10.5, 0.0])
    np.testing.assert_array_equal(nearest_radec(ra, dec, c), [1, 1, 0])
    np.testing.assert_array_equal(nearest_xyz(unit_vectors(ra, dec), c), [1, 1, 0])
    # all centres equal: every point gets 0
    same = np.repeat(c[1:2], 5, axis=0)
    np.testing.assert_array_equal(nearest_radec(*random_radec(np.random.default_rng(0), 1000),
                                                same), 0)


def test_labels_of_a_known_layout():
    # the six axis directions as centres, in this order
    centers = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0], [0, -1.0, 0], [0, 0, 1.0],
                        [0, 0, -1.0]])
    reg = JackknifeRegions(centers, kind="kmeans")
    ra = [0.0, 90.0, 180.0, 270.0, 123.0, 321.0, 20.0, 80.0, 359.0, 200.0, 250.0, 360.0]
    dec = [0.0, 0.0, 0.0, 0.0, 89.0, -89.0, 10.0, -40.0, 44.0, -30.0, 60.0, -1.0]
    np.testing.assert_array_equal(reg.labels(ra, dec), [0, 1, 2, 3, 4, 5, 0, 1, 0, 2, 4, 0])
    # lists, ints and non-contiguous views give the same labels
    ra_a, dec_a = np.repeat(ra, 2)[::2], np.repeat(dec, 2)[1::2]
    assert not ra_a.flags.c_contiguous
    np.testing.assert_array_equal(reg.labels(ra_a, dec_a), reg.labels(np.array(ra), dec))
    np.testing.assert_array_equal(reg.labels([90], [0]), [1])


def test_radec_kernel_makes_the_unit_vectors_of_unit_vectors_bit_for_bit():
    # centres +x and +y compare the point's x and y components themselves (the products are
    # x * 1 + y * 0 + z * 0 = x exactly): near RA 45 and 225 degrees a one-ulp difference from
    # unit_vectors flips labels; the offsets straddle those directions in small steps
    steps = np.arange(-2000, 2001) * 1e-15
    ra = np.concatenate([45.0 + steps, 225.0 + steps, 405.0 + steps, -315.0 + steps])
    dec = np.tile(np.linspace(-80.0, 80.0, steps.size), 4)
    centers = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0], [0, -1.0, 0]])
    want = twin(unit_vectors(ra, dec), centers)
    assert 0 < np.count_nonzero(want[:steps.size] == 0) < steps.size  # both sides of RA 45
    np.testing.assert_array_equal(nearest_radec(ra, dec, centers), want)
    # and near-duplicate centres a few ulp apart, around random points
    rng = np.random.default_rng(5)
    pra, pdec = random_radec(rng, 20)
    base = unit_vectors(pra, pdec).T
    nudged = [np.nextafter(base, base + s) for s in (-1.0, 1.0)]
    centers = np.concatenate([base] + nudged)
    ra = np.repeat(pra, 50) + rng.integers(-3, 4, 1000) * 1e-13
    dec = np.clip(np.repeat(pdec, 50) + rng.integers(-3, 4, 1000) * 1e-13, -90, 90)
    np.testing.assert_array_equal(nearest_radec(ra, dec, centers),
                                  twin(unit_vectors(ra, dec), centers))


def test_labels_check_the_coordinates():
    reg = JackknifeRegions(np.eye(3), kind="kmeans")
    for ra, dec, msg in [([0.0, np.nan], [0.0, 0.0], "finite"), ([0.0], [np.inf], "finite"),
                         ([0.0, 1.0], [0.0, 90.5], r"\[-90, 90\]"),
                         ([0.0, 1.0], [0.0], "one length"), ([], [], "non-empty"),
                         (1.0, 2.0, "1-D"), (np.zeros((2, 2)), np.zeros((2, 2)), "1-D")]:
        with pytest.raises(ValueError, match=msg):
            reg.labels(ra, dec)
    with pytest.raises(ValueError, match="centers"):
        nearest_xyz(np.zeros((3, 4)), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="xyz"):
        nearest_xyz(np.zeros((4, 3)), np.eye(3))


def test_kmeans_labels_equal_the_twin_and_are_reproducible(rng):
    ra, dec = random_radec(rng, 5003)
    reg = JackknifeRegions.kmeans(ra, dec, 13, seed=4)
    again = JackknifeRegions.kmeans(ra, dec, 13, seed=4)
    np.testing.assert_array_equal(again.centers, reg.centers)
    lab = reg.labels(ra, dec)
    np.testing.assert_array_equal(lab, twin(unit_vectors(ra, dec), reg.centers))
    assert np.bincount(lab, minlength=13).min() > 0


def test_healpix_labels_of_unseen_cells_go_to_the_nearest_centre():
    pytest.importorskip("healpy")
    rng = np.random.default_rng(2)
    ra, dec = rng.uniform(10.0, 50.0, 2000), rng.uniform(-20.0, 20.0, 2000)
    reg = JackknifeRegions.healpix(8, ra, dec)
    ora, odec = random_radec(rng, 3001)
    lab = reg.labels(ora, odec)
    fit = JackknifeRegions(reg.centers, kind="kmeans").labels(ora, odec)
    unseen = ~np.isin(healpix_cells(np.deg2rad(90.0 - odec), np.deg2rad(ora), 8), reg.cells)
    assert unseen.sum() > 1000
    np.testing.assert_array_equal(lab[unseen], fit[unseen])
    np.testing.assert_array_equal(lab[unseen], twin(unit_vectors(ora, odec)[:, unseen],
                                                    reg.centers))
