"""pytest plugin for TreeCorr's own test_nn.py: TreeCorr's exact NN counts made by sphgpu.

Loaded with ``-p sphgpu_as_treecorr`` in the subprocess that :mod:`test_treecorr_suite`
starts on TreeCorr's test file. It wraps ``NNCorrelation.process_auto`` and
``process_cross`` (which every ``process`` call, with or without patches, goes through): the
original runs first (so TreeCorr's bookkeeping, ``tot``, metric checks and errors stay its
own), then, when the count is exact and on the sphere -- ``brute=True`` or ``bin_slop=0``,
both catalogs spherical (ra/dec without r), metric "Euclidean" (chord) or "Arc", Log or
Linear bins, no rpar limits, not ``corr_only`` -- the bins' increments of ``npairs`` and
``weight`` are replaced by those of :func:`sphgpu.tpacf.pair_counts` (backend
``$SPHGPU_BACKEND``), and for "Arc" also ``meanr`` and ``meanlogr`` (sphgpu's sums of w theta
and w ln theta). For "Euclidean" TreeCorr bins the chord, so the chord edges become angle
edges 2 asin(c / 2); sphgpu sums angles, not chords, so ``meanr`` there stays TreeCorr's.
Every replaced count is logged; :func:`pytest_terminal_summary` prints how many, which the
suite asserts is not 0 for each selected test.
"""

from __future__ import annotations

import os

import numpy as np

CALLS = {"n": 0}
#: "file::test" -> reason: TreeCorr tests whose difference from sphgpu is documented in the
#: conventions page (docs/conventions.rst) (xfail, strict). None at present.
XFAIL: dict[str, str] = {}


def _exact(nn, cats, corr_only):
    return (not corr_only and (nn.brute is True or nn.brute in (1, 2) or nn.bin_slop == 0)
            and nn.bin_type in ("Log", "Linear") and nn.metric in ("Euclidean", "Arc")
            and not nn.min_rpar > -np.finfo(float).max and not nn.max_rpar < np.finfo(float).max
            and all(c.coords == "spherical" for c in cats))


def _bins(nn):
    from sphgpu.tpacf import AngularBins

    edges = np.append(nn.left_edges, nn.right_edges[-1]) * nn._sep_units     # radians
    if nn.metric == "Euclidean":                 # chord lengths on the unit sphere -> angles
        edges = 2.0 * np.arcsin(np.minimum(edges / 2.0, 1.0))
    return AngularBins(edges, "rad")


def _radec(c):
    return np.degrees(np.asarray(c.ra, float)), np.degrees(np.asarray(c.dec, float))


def _replace(nn, before, cats):
    from sphgpu.tpacf import pair_counts

    arc = nn.metric == "Arc"
    args, kw = [], {}
    for k, c in enumerate(cats, 1):
        args += _radec(c)
        if c.w is not None:
            kw[f"weights{k}"] = np.asarray(c.w, float)
    pc = pair_counts(*args, bins=_bins(nn), mean_theta=arc,
                     backend=os.environ.get("SPHGPU_BACKEND", "cpu"), **kw)
    nn.npairs[:] = before["npairs"] + pc.counts
    nn.weight[:] = before["weight"] + (pc.weights if pc.is_weighted else pc.counts)
    if arc:
        nn.meanr[:] = before["meanr"] + pc.theta_sum
        nn.meanlogr[:] = before["meanlogr"] + pc.log_theta_sum
    CALLS["n"] += 1


def _snapshot(nn):
    return {k: np.array(getattr(nn, k), copy=True)
            for k in ("npairs", "weight", "meanr", "meanlogr")}


def pytest_configure(config):
    import treecorr

    auto, cross = treecorr.NNCorrelation.process_auto, treecorr.NNCorrelation.process_cross

    def process_auto(self, cat, *, metric=None, num_threads=None, corr_only=False):
        before = _snapshot(self)
        auto(self, cat, metric=metric, num_threads=num_threads, corr_only=corr_only)
        if _exact(self, [cat], corr_only):
            _replace(self, before, [cat])

    def process_cross(self, cat1, cat2, *, metric=None, num_threads=None, corr_only=False):
        before = _snapshot(self)
        cross(self, cat1, cat2, metric=metric, num_threads=num_threads, corr_only=corr_only)
        if _exact(self, [cat1, cat2], corr_only):
            _replace(self, before, [cat1, cat2])

    treecorr.NNCorrelation.process_auto = process_auto
    treecorr.NNCorrelation.process_cross = process_cross


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        for key, reason in XFAIL.items():
            if item.nodeid.split("/")[-1].startswith(key):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"sphgpu counts used: {CALLS['n']}")
