"""The Monte Carlo's batch holds a transform plan (sphgpu.SHT) in its SimulationPlan and runs
the plan's methods, not the healpy-named functions."""

import pickle

import numpy as np

from sphgpu import SHT
from sphgpu.sht import plan as plan_mod
from sphgpu.sims import MonteCarlo, simulate_batch


def _mc(**kw):
    ell = np.arange(17)
    cl = 1.0 / (ell + 2.0) ** 2
    return MonteCarlo([cl, 0.3 * cl, 0.05 * cl, 0.1 * cl], 4, 8, pol=True, noise_sigma=0.1,
                      seed=3, iter=1, backend="cpu", **kw)


def test_the_batch_runs_on_the_plans_transform_plan(monkeypatch):
    mc = _mc()
    want = simulate_batch(mc.plan, [0, 5], "cpu")
    sht = mc.plan.transforms("cpu")
    assert isinstance(sht, SHT) and sht is mc.plan.transforms("cpu")
    assert sht.description == (4, 8, 8, None, "cpu")

    def refused(*args, **kwargs):
        raise AssertionError("the batch went back up through the healpy-named functions")

    monkeypatch.setattr(plan_mod, "plan_for", refused)
    np.testing.assert_array_equal(simulate_batch(mc.plan, [0, 5], "cpu"), want)


def test_a_pickled_simulation_plan_leaves_its_transform_plans_behind():
    mc = _mc()
    want = simulate_batch(mc.plan, [1, 2], "cpu")
    copy = pickle.loads(pickle.dumps(mc.plan))
    assert mc.plan._transforms and not copy._transforms
    np.testing.assert_array_equal(simulate_batch(copy, [1, 2], "cpu"), want)
    assert copy.transforms("cpu").description == mc.plan.transforms("cpu").description
