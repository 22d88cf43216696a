"""rotate_alm against healpy's (same Euler angles, matrices, T and T,E,B), against the exact
rotation of a dipole, and its errors."""

import math

import numpy as np
import pytest

import sphgpu
from sphgpu import AlmLayout
from sphgpu.sht.rotate import euler_from_matrix
from sphgpu.testing import random_alm

hp = pytest.importorskip("healpy")

#: largest max|ours - healpy's| / max|alm|: both are Wigner-d recursions in double precision
#: (ducc0's and HEALPix C++'s); measured up to 3e-15 at lmax 16
VS_HEALPY = 1e-12
#: rounding of a product of three 3x3 rotations
MATRIX_ATOL = 1e-14

ANGLES = [(0.3, 0.5, 0.7), (-2.0, 3.0, 5.5), (0.0, math.pi, 0.0), (1.0, 0.0, -1.0),
          (6.2, 1e-9, -6.2)]


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _healpy_rotated(alm, *args, **kw):
    out = np.array(alm, copy=True)
    hp.rotate_alm(out, *args, **kw)
    return out


@pytest.mark.parametrize("lmax", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("angles", ANGLES)
def test_angles_match_healpy(lmax, angles, rng):
    alm = random_alm(rng, AlmLayout(lmax))
    ours = alm.copy()
    assert sphgpu.rotate_alm(ours, *angles) is None          # in place, as healpy's
    assert _rel(ours, _healpy_rotated(alm, *angles)) <= VS_HEALPY


@pytest.mark.parametrize("lmax", [2, 5])
def test_teb_rows_match_healpy(lmax, rng):
    teb = random_alm(rng, AlmLayout(lmax), k=3)
    ours = teb.copy()
    sphgpu.rotate_alm(ours, 0.4, 1.1, -0.3, lmax=lmax, mmax=lmax)
    assert _rel(ours, _healpy_rotated(teb, 0.4, 1.1, -0.3)) <= VS_HEALPY
    # a list of arrays is rotated item by item, in place
    items = [row.copy() for row in teb]
    sphgpu.rotate_alm(items, 0.4, 1.1, -0.3)
    assert _rel(np.array(items), ours) <= VS_HEALPY      # ducc0 rounds batches differently


@pytest.mark.parametrize("rot", [[0.4, 0.2, 0.1], [2.0, 1.0, -1.0], [0.0, 0.0, 0.3],
                                 [-1.2, 3.0, 2.5]])
def test_matrix_matches_healpy(rot, rng):
    alm = random_alm(rng, AlmLayout(9))
    matrix = hp.Rotator(rot=rot, deg=False).mat
    ours = alm.copy()
    sphgpu.rotate_alm(ours, 1.0, 2.0, 3.0, matrix=matrix)   # the angles are then ignored
    assert _rel(ours, _healpy_rotated(alm, matrix=matrix)) <= VS_HEALPY


@pytest.mark.parametrize("coord", [["G", "C"], ["C", "G"], ["E", "G"], ["C", "E"]])
def test_coordinate_change_matches_healpy(coord, rng):
    teb = random_alm(rng, AlmLayout(12), k=3)
    matrix = hp.Rotator(coord=coord).mat
    ours = teb.copy()
    sphgpu.rotate_alm(ours, matrix=matrix)
    assert _rel(ours, _healpy_rotated(teb, matrix=matrix)) <= VS_HEALPY


def _dipole_alm(v, lmax):
    """Exact a_lm of the field f(n) = v . n (healpy's normalisation and Condon-Shortley sign)."""
    layout = AlmLayout(lmax)
    alm = np.zeros(layout.size, dtype=np.complex128)
    c = math.sqrt(4 * math.pi / 3)
    alm[layout.index(1, 0)] = c * v[2]
    alm[layout.index(1, 1)] = c * (-v[0] + 1j * v[1]) / math.sqrt(2)
    return alm


@pytest.mark.parametrize("lmax", [1, 4])
def test_matrix_rotates_the_field_actively(lmax, rng):
    # independent of healpy: the dipole along v, rotated by R, is the dipole along R v
    for _ in range(3):
        v = rng.standard_normal(3)
        matrix = hp.Rotator(rot=rng.uniform(-3, 3, 3), deg=False).mat
        alm = _dipole_alm(v, lmax)
        sphgpu.rotate_alm(alm, matrix=matrix)
        np.testing.assert_allclose(alm, _dipole_alm(matrix @ v, lmax), atol=1e-14)


def test_angles_compose_as_documented(rng):
    psi, theta, phi = 0.3, 1.2, -0.8
    v = rng.standard_normal(3)
    alm = _dipole_alm(v, 3)
    sphgpu.rotate_alm(alm, psi, theta, phi)
    want = _rz(phi) @ _ry(theta) @ _rz(psi) @ v
    np.testing.assert_allclose(alm, _dipole_alm(want, 3), atol=1e-14)


@pytest.mark.parametrize("theta", [0.0, 1e-13, 1e-9, 0.7, math.pi / 2, 2.5, math.pi - 1e-9,
                                   math.pi])
def test_euler_from_matrix_reproduces_the_matrix(theta, rng):
    for psi, phi in rng.uniform(-7, 7, (4, 2)):
        matrix = _rz(phi) @ _ry(theta) @ _rz(psi)
        a = euler_from_matrix(matrix)
        assert 0.0 <= a[1] <= math.pi
        np.testing.assert_allclose(_rz(a[2]) @ _ry(a[1]) @ _rz(a[0]), matrix, rtol=0,
                                   atol=MATRIX_ATOL)


def test_rotates_views_in_place(rng):
    alm = random_alm(rng, AlmLayout(6))
    buffer = np.zeros((alm.size, 2), dtype=np.complex128)
    buffer[:, 0] = alm
    sphgpu.rotate_alm(buffer[:, 0], 0.1, 0.2, 0.3)          # a strided view
    assert _rel(buffer[:, 0], _healpy_rotated(alm, 0.1, 0.2, 0.3)) <= VS_HEALPY
    assert not buffer[:, 1].any()


def test_rotation_then_inverse_is_identity(rng):
    alm = random_alm(rng, AlmLayout(20), k=3)
    out = alm.copy()
    sphgpu.rotate_alm(out, 0.5, 1.0, 1.5)
    sphgpu.rotate_alm(out, -1.5, -1.0, -0.5)
    assert _rel(out, alm) <= VS_HEALPY


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(psi=float("nan")), ValueError, "psi"),
    (dict(theta=float("inf")), ValueError, "theta"),
    (dict(phi="1"), TypeError, "phi"),
    (dict(matrix=np.eye(2)), ValueError, "matrix must have shape (3, 3)"),
    (dict(matrix=2 * np.eye(3)), ValueError, "rotation"),
    (dict(matrix=np.diag([1.0, 1.0, -1.0])), ValueError, "rotation"),     # a reflection
    (dict(matrix=np.full((3, 3), np.nan)), ValueError, "matrix"),
    (dict(lmax=5), ValueError, "lmax=5"),
    (dict(mmax=3), ValueError, "mmax"),
])
def test_bad_arguments_are_named(kwargs, exc, words, rng):
    alm = random_alm(rng, AlmLayout(7))
    before = alm.copy()
    with pytest.raises(exc, match=None) as info:
        sphgpu.rotate_alm(alm, **kwargs)
    assert words in str(info.value)
    np.testing.assert_array_equal(alm, before)


def test_bad_alm_is_named(rng):
    alm = random_alm(rng, AlmLayout(4))
    with pytest.raises(ValueError, match="alm has 14 coefficients"):
        sphgpu.rotate_alm(alm[:-1].copy(), 0.1, 0.2, 0.3)
    bad = alm.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="alm contains NaN"):
        sphgpu.rotate_alm(bad, 0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match="complex128"):
        sphgpu.rotate_alm(alm.astype(np.complex64), 0.1, 0.2, 0.3)
    with pytest.raises(TypeError, match="in place"):
        sphgpu.rotate_alm(list(alm), 0.1, 0.2, 0.3)          # a list of numbers would be lost
    frozen = alm.copy()
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        sphgpu.rotate_alm(frozen, 0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match=r"alm\[1\]"):
        sphgpu.rotate_alm([alm.copy(), alm[:-1].copy()], 0.1, 0.2, 0.3)


@pytest.mark.gpu
def test_device_array_is_rotated_in_place(rng):
    cupy = pytest.importorskip("cupy")
    alm = random_alm(rng, AlmLayout(8), k=3)
    dev = cupy.asarray(alm)
    sphgpu.rotate_alm(dev, 0.2, 0.4, 0.6)
    assert isinstance(dev, cupy.ndarray)
    assert _rel(dev.get(), _healpy_rotated(alm, 0.2, 0.4, 0.6)) <= VS_HEALPY
