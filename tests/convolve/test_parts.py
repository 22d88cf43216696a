"""Parts, what a convolution runs, as data: made once at the public entry (backends resolved,
here or through resolved_by for work that runs elsewhere), run by the one executor
(run.execute)."""

import dataclasses

import numpy as np
import pytest

from sphgpu import RingGeometry
from sphgpu.convolve import RadialKernel, convolve, plan_for_cuts, split_kernel
from sphgpu.convolve.api import parts_of
from sphgpu.convolve.parts import Parts, resolved_by
from sphgpu.convolve.run import execute
from sphgpu.testing import TOL, rel_err


def test_parts_hold_the_resolved_parts_of_a_split():
    g = RingGeometry.healpix(4)
    k = RadialKernel.gaussian(1200.0, 12)
    split = split_kernel(k, 6, 0.9)
    both = Parts.of_split(g, split, backend="auto", harmonic_backend="cpu")
    # "auto" is resolved here, once (the tests run with SPHGPU_BACKEND=cpu)
    assert (both.harmonic_backend, both.realspace_backend) == ("cpu", "cpu")
    np.testing.assert_array_equal(both.bl, split.harmonic_bl)
    assert both.compact is split.realspace
    real = Parts.of_split(g, split_kernel(k, -1, 0.9), backend="reference")
    assert real.bl is None and real.harmonic_backend is None
    assert real.realspace_backend == "reference"
    with pytest.raises(dataclasses.FrozenInstanceError):
        both.bl = None
    with pytest.raises(ValueError, match="needs a harmonic part, a real-space part or both"):
        Parts.of(g)
    with pytest.raises(ValueError, match="backend must be one of"):
        Parts.of(g, bl=k.bl, backend="gpu")


def test_the_executor_runs_parts_as_convolve_does(rng):
    g = RingGeometry.healpix(4)
    k = RadialKernel.gaussian(1200.0, 12)
    m = rng.standard_normal((2, g.npix))
    parts = Parts.of_split(g, split_kernel(k, 6, 0.9), backend="cpu")
    np.testing.assert_array_equal(execute(parts, m),
                                  convolve(m, k, method="split", l_cut=6, theta_cut=0.9,
                                           backend="cpu"))
    harmonic = execute(Parts.of(g, bl=k.bl, backend="cpu"), m)
    assert rel_err(harmonic, convolve(m, k, method="harmonic", backend="cpu")) \
        <= TOL["convolve_same_path"]


def test_a_plan_says_its_parts(rng):
    nside = 4
    k = RadialKernel.gaussian(600.0, 12)
    plan = plan_for_cuts(k, nside=nside, l_cut=6, theta_cut=0.8, cost_model="paper")
    # a plan priced with the paper's model runs on "auto"; a named backend runs both parts
    parts = plan.parts("reference")
    assert (parts.harmonic_backend, parts.realspace_backend) == ("reference", "reference")
    assert parts.geometry.npix == 12 * nside**2 and parts.bl.shape == (7,)
    with pytest.raises(ValueError, match="maps has 100 pixels but the plan is for nside 4"):
        plan.parts(npix=100)
    m = rng.standard_normal(12 * nside**2)
    assert rel_err(plan.apply(m, backend="reference"), convolve(m, plan, backend="cpu")) \
        <= TOL["realspace_vs_brute_force"]


def test_resolved_by_decides_the_backends_of_the_parts_made_inside():
    g = RingGeometry.healpix(4)
    k = RadialKernel.gaussian(1200.0, 12)
    asked = []

    def elsewhere(request, capability):          # e.g. a cluster whose workers have GPUs
        asked.append((request, capability))
        return "cuda"

    with resolved_by(elsewhere):
        parts = Parts.of_split(g, split_kernel(k, 6, 0.9), harmonic_backend="cpu")
        # a Plan's parts go through the same resolution (its own backends, or "auto")
        plan = plan_for_cuts(k, nside=4, l_cut=6, theta_cut=0.8, cost_model="paper")
        from_plan = plan.parts()
    assert asked == [("cpu", "sht"), ("auto", "convolve"), ("auto", "sht"), ("auto", "convolve")]
    assert (parts.harmonic_backend, parts.realspace_backend) == ("cuda", "cuda")
    assert (from_plan.harmonic_backend, from_plan.realspace_backend) == ("cuda", "cuda")
    # outside the block this machine resolves again (the tests run with SPHGPU_BACKEND=cpu)
    assert Parts.of(g, bl=k.bl).harmonic_backend == "cpu"
    with pytest.raises(TypeError, match="resolve must be a function"):
        with resolved_by("cuda"):
            pass


def test_parts_of_makes_what_convolve_runs(rng):
    g = RingGeometry.healpix(4)
    k = RadialKernel.gaussian(1200.0, 12)
    m = rng.standard_normal((2, g.npix))
    kw = dict(method="split", l_cut=6, theta_cut=0.9, backend="cpu")
    parts = parts_of(k, g.npix, **kw)
    assert parts.geometry is g and parts.bl.shape == (7,) and parts.compact is not None
    np.testing.assert_array_equal(execute(parts, m), convolve(m, k, **kw))
    harmonic = parts_of(k, method="harmonic", l_cut=5, backend="cpu", geometry=g)
    assert harmonic.compact is None and harmonic.bl.shape == (6,)
    with pytest.raises(ValueError, match="method must be one of"):
        parts_of(k, g.npix, method="fast")
    with pytest.raises(ValueError, match="maps has 10 pixels"):
        parts_of(k, 10, method="harmonic")
