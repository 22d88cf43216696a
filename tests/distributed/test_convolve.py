"""Distributed convolutions equal the serial ones (CPU workers in this process; the CUDA
simulator behind a GPU-resource worker for the real-space bands)."""

import distributed
import numpy as np
import pytest

import sphgpu
import sphgpu.distributed as sd
from sphgpu import RingGeometry
from sphgpu.convolve import ARCMIN, RadialKernel, convolve, split_kernel

from sphgpu.testing import TOL, rel_err

NSIDE, LMAX = 16, 32
KERNEL = RadialKernel.gaussian(240.0, LMAX)          # FWHM 4 degrees at nside 16
L_CUT, THETA_CUT = 12, 1500 * ARCMIN


@pytest.mark.parametrize("nbands", [None, 1, 3, 7])
def test_split_over_bands_equals_the_serial_split(client, nbands, rng):
    maps = rng.standard_normal((2, 12 * NSIDE ** 2))
    want = convolve(maps, KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                    backend="cpu")
    got = sd.convolve(maps, KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                      nbands=nbands, client=client)
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]
    one = sd.convolve(maps[1], KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                      nbands=nbands, client=client)
    assert one.shape == (maps.shape[1],) and rel_err(one, want[1]) <= TOL["distributed"]


def test_every_method_and_kernel_form_equals_serial(client, rng):
    m = rng.standard_normal(12 * NSIDE ** 2)
    split = split_kernel(KERNEL, L_CUT, THETA_CUT)
    compact = KERNEL.tabulate(0.4)
    cases = [
        (KERNEL, dict(method="harmonic")),
        (KERNEL, dict(method="harmonic", l_cut=20)),
        (KERNEL, dict(method="realspace", theta_cut=0.5)),
        (split, {}),
        (split_kernel(KERNEL, -1, 0.6), {}),      # nothing harmonic: real-space bands only
        (compact, dict(method="realspace")),
    ]
    for kernel, kw in cases:
        want = convolve(m, kernel, backend="cpu", **kw)
        got = sd.convolve(m, kernel, client=client, nbands=3, **kw)
        assert rel_err(got, want) <= TOL["distributed"], kw


def test_other_ring_grids(client, rng):
    g = RingGeometry.gauss_legendre(20)
    k = RadialKernel.gaussian(700.0, 19)
    m = rng.standard_normal(g.npix)
    want = convolve(m, k, method="split", l_cut=8, theta_cut=0.7, geometry=g, backend="cpu")
    got = sd.convolve(m, k, method="split", l_cut=8, theta_cut=0.7, geometry=g, nbands=4,
                      client=client)
    assert rel_err(got, want) <= TOL["distributed"]


def test_one_worker_runs_the_serial_split_there(rng):
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    try:
        m = rng.standard_normal(12 * NSIDE ** 2)
        want = convolve(m, KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                        backend="cpu")
        with distributed.get_task_stream(client=c) as ts:
            got = sd.convolve(m, KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                              client=c)
        assert rel_err(got, want) <= TOL["distributed"]
        assert [str(t["key"]).split("-")[1] for t in ts.data] == ["convolve"]
    finally:
        c.close()
        cluster.close()


def test_batches_futures_in_and_out(client, rng):
    maps = rng.standard_normal((5, 12 * NSIDE ** 2))
    kw = dict(method="split", l_cut=L_CUT, theta_cut=THETA_CUT)
    want = convolve(maps, KERNEL, backend="cpu", **kw)
    got = sd.convolve_many(maps, KERNEL, client=client, maps_per_task=2, **kw)
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]
    one = sd.convolve_many(maps[3], KERNEL, client=client, **kw)
    assert one.shape == maps[3].shape and rel_err(one, want[3]) <= TOL["distributed"]
    futs = sd.convolve_many(maps, KERNEL, client=client, gather=False, **kw)
    assert len(futs) == 5 and all(isinstance(f, distributed.Future) for f in futs)
    again = sd.convolve_many(futs, KERNEL, client=client, method="harmonic",
                             geometry=RingGeometry.healpix(NSIDE))
    assert rel_err(again, convolve(want, KERNEL, method="harmonic", backend="cpu")) \
        <= TOL["distributed"]
    with pytest.raises(ValueError, match="geometry"):
        sd.convolve_many(futs, KERNEL, client=client, method="harmonic")


def test_bad_requests_raise_clear_errors(client, rng):
    m = rng.standard_normal(12 * NSIDE ** 2)
    with pytest.raises(sd.NoGPUWorkerError, match="GPU"):
        sd.convolve(m, KERNEL, method="split", l_cut=L_CUT, theta_cut=THETA_CUT,
                    backend="cuda", client=client)
    with pytest.raises(ValueError, match="method"):
        sd.convolve(m, KERNEL, method="fast", client=client)
    with pytest.raises(ValueError, match="l_cut and theta_cut"):
        sd.convolve(m, KERNEL, method="split", l_cut=L_CUT, client=client)
    with pytest.raises(ValueError, match="nbands"):
        sd.convolve(m, KERNEL, method="harmonic", nbands=0, client=client)
    with pytest.raises(ValueError, match="maps has 10 pixels"):
        sd.convolve(np.zeros(10), KERNEL, method="harmonic", client=client)
    with pytest.raises(TypeError, match="kernel"):
        sd.convolve(m, "gauss", method="harmonic", client=client)


def test_bands_on_the_gpu_worker_harmonic_part_on_the_cpu_worker():
    """A mixed cluster: the real-space bands ask for the GPU (Numba's CUDA simulator here),
    the harmonic part runs on the CPU worker, both at once."""
    c = sd.local_cluster(gpus=["sim"], cpu_workers=1, threads_per_worker=1, processes=False,
                         dashboard_address=":0")
    try:
        nside, k = 2, RadialKernel.gaussian(2400.0, 6)
        m = np.random.default_rng(8).standard_normal(12 * nside ** 2)
        kw = dict(method="split", l_cut=3, theta_cut=1.0)
        want = convolve(m, k, backend="cpu", **kw)
        names = {a: w["name"] for a, w in sd.cluster.workers(c).items()}
        with distributed.get_task_stream(client=c) as ts:
            got = sd.convolve(m, k, backend="cuda", harmonic_backend="cpu", nbands=2,
                              client=c, **kw)
        assert rel_err(got, want) <= TOL["distributed"]
        ran = {(str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]).split("-")[1],
                names[t["worker"]]) for t in ts.data}
        assert ran == {("harmonic", "cpu-0"), ("band", "gpu-0")}
    finally:
        c.shutdown()
        c.close()


def test_an_optimizer_plan_runs_as_it_stands(client, rng):
    from sphgpu.convolve import optimize_split

    from ..convolve.test_optimize import _Toy

    plan = optimize_split(RadialKernel.cmb(640.0, 64), nside=32, cost_model=_Toy(0.1))
    assert plan.method == "split"
    m = rng.standard_normal(12 * 32 ** 2)
    want = plan.apply(m, backend="cpu")
    assert rel_err(sd.convolve(m, plan, client=client, nbands=2), want) <= TOL["distributed"]
    assert rel_err(sd.convolve_many(m[None], plan, client=client)[0], want) \
        <= TOL["distributed"]


def test_harmonic_weight_gives_the_harmonic_worker_a_smaller_band(client, rng):
    from sphgpu.distributed.convolution import _weighted_shares

    assert _weighted_shares(0.2, 1) == pytest.approx([0.4, 0.6])     # both finish at 0.6
    assert _weighted_shares(0.2, 3) == pytest.approx([0.1, 0.3, 0.3, 0.3])
    assert _weighted_shares(1.0, 1) is None                            # harmonic part alone
    m = rng.standard_normal(12 * NSIDE ** 2)
    kw = dict(method="split", l_cut=L_CUT, theta_cut=THETA_CUT)
    want = convolve(m, KERNEL, backend="cpu", **kw)
    names = {a: w["name"] for a, w in sd.cluster.workers(client).items()}
    with distributed.get_task_stream(client=client) as ts:
        got = sd.convolve(m, KERNEL, harmonic_weight=0.2, client=client, **kw)
    assert rel_err(got, want) <= TOL["distributed"]
    ran = [(str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]).split("-")[1],
            names[t["worker"]]) for t in ts.data]
    [(_, h)] = [r for r in ran if r[0] == "harmonic"]
    assert sorted(w for part, w in ran if part == "band") == ["cpu-0", "cpu-1"]   # one each
    [small] = [names[t["worker"]] for t in ts.data if isinstance(t["key"], tuple)
               and t["key"][1] == 0]
    assert small == h                     # the smaller band, next to the harmonic part
    with pytest.raises(ValueError, match="harmonic_weight"):
        sd.convolve(m, KERNEL, harmonic_weight=-1.0, client=client, **kw)


def test_masked_maps_come_back_unseen_like_the_serial_convolution(client, rng):
    from sphgpu.convolve import RadialKernel, convolve

    m = rng.standard_normal((2, 12 * 8**2))
    m[:, 50:90] = sphgpu.UNSEEN
    k = RadialKernel.gaussian(300.0, 23)
    want = convolve(m, k, method="harmonic", backend="cpu")
    got = sd.convolve_many(m, k, method="harmonic", backend="cpu", client=client)
    np.testing.assert_array_equal(got, want)
    assert np.all(got[:, 50:90] == sphgpu.UNSEEN)
