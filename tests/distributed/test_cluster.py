"""Finding GPUs, building local clusters, and what a client offers."""

import os

import pytest

import sphgpu.distributed as sd
from sphgpu.distributed import cluster as C

SMI = """GPU 0: NVIDIA H200 (UUID: GPU-1111)
GPU 1: NVIDIA H200 (UUID: GPU-2222)
  MIG 3g.71gb     Device  0: (UUID: MIG-aaaa)
  MIG 3g.71gb     Device  1: (UUID: MIG-bbbb)
GPU 2: NVIDIA H200 (UUID: GPU-3333)
"""


def test_nvidia_smi_listing_gives_indices_and_mig_instances():
    assert C._parse_nvidia_smi(SMI) == ["0", "MIG-aaaa", "MIG-bbbb", "2"]
    assert C._parse_nvidia_smi("") == []


def test_visible_gpus_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5")
    assert sd.visible_gpus() == ["2", "5"]
    for none in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", none)
        assert sd.visible_gpus() == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(C.shutil, "which", lambda exe: None)      # no nvidia-smi: no GPU
    assert sd.visible_gpus() == []


def test_gpu_requests_are_checked(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert C._choose_gpus("all") == ["0"] and C._choose_gpus(0) == []
    assert C._choose_gpus(["3", 4]) == ["3", "4"]
    with pytest.raises(ValueError, match="shows 1 GPU"):
        C._choose_gpus(2)
    with pytest.raises(ValueError, match="gpus"):
        C._choose_gpus("some")
    with pytest.raises(TypeError, match="gpus"):
        C._choose_gpus(True)
    with pytest.raises(ValueError, match="twice"):
        C._choose_gpus(["1", "1"])
    with pytest.raises(ValueError, match="processes=True"):
        sd.local_cluster(gpus=["0", "1"], processes=False)
    with pytest.raises(ValueError, match="no worker"):
        sd.local_cluster(gpus=0, cpu_workers=0, processes=False)
    with pytest.raises(ValueError, match="threads_per_worker"):
        sd.local_cluster(gpus=0, threads_per_worker=0, processes=False)


def test_client_summary_and_dashboard(client):
    info = sd.cluster_info(client)
    assert info == {"workers": 2, "gpu_workers": 0, "cpu_slots": 2, "threads": 2,
                    "dashboard": sd.dashboard_link(client)}
    assert info["dashboard"].startswith("http")
    assert C.task_resources(client, "cpu") == {"CPU": 1}
    with pytest.raises(sd.NoGPUWorkerError, match="cpu-0"):
        sd.require_gpu_worker(client)


def test_plain_cluster_cpu_tasks_ask_for_nothing(plain_client):
    assert C.task_resources(plain_client, "cpu") is None
    assert C.cpu_slots(plain_client) == 2


def test_no_client_anywhere_says_how_to_make_one(monkeypatch):
    import distributed

    def none():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "default_client", none)
    with pytest.raises(ValueError, match="local_cluster"):
        sd.get_client()


def test_process_workers_are_pinned_to_their_gpu():
    """Worker processes: each GPU worker sees only its device; CPU workers run one ducc0
    thread per task. (The device ids are not real GPUs: nothing here touches CUDA.)"""
    c = sd.local_cluster(gpus=["3", "5"], cpu_workers=1, threads_per_worker=2, processes=True,
                         dashboard_address=":0")
    try:
        seen = c.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"),
                              os.environ.get("SPHGPU_NUM_THREADS")))
        names = {a: w["name"] for a, w in C.workers(c).items()}
        by_name = {names[a]: v for a, v in seen.items()}
        assert by_name["gpu-0"][0] == "3" and by_name["gpu-1"][0] == "5"
        assert by_name["cpu-0"][1] == "1"
        ws = {w["name"]: w for w in C.workers(c).values()}
        assert ws["gpu-0"]["resources"] == {"GPU": 1} and ws["gpu-0"]["nthreads"] == 1
        assert ws["cpu-0"]["resources"] == {"CPU": 2}
        from distributed.system import MEMORY_LIMIT

        assert ws["gpu-1"]["memory_limit"] == MEMORY_LIMIT // 3      # an equal share each
        assert sorted(sd.gpu_workers(c)) == sorted(a for a, n in names.items()
                                                   if n.startswith("gpu"))
    finally:
        c.shutdown()
        c.close()


def test_one_view_asks_the_scheduler_once(client, monkeypatch):
    asked = []
    real = C._ask_workers
    monkeypatch.setattr(C, "_ask_workers", lambda c: asked.append(1) or real(c))
    with C.one_view(client):
        with C.one_view(client):                     # nested: still the same answer
            assert C.task_resources(client, "cpu") == {"CPU": 1}
        assert C.gpu_workers(client) == [] and len(C.workers(client)) == 2
    assert len(asked) == 1
    C.workers(client)                                # outside the block: asked again
    assert len(asked) == 2


def test_data_goes_straight_to_the_workers_of_a_local_cluster(client, plain_client):
    """local_cluster's client sends and gathers without the scheduler in between; another
    client does so when its scheduler runs on this machine, or when it asks to."""
    import numpy as np

    from types import SimpleNamespace

    assert client.direct_to_workers is True and C.direct(client)
    assert plain_client.direct_to_workers is None and C.direct(plain_client)   # in-process

    def fake(own, address):
        return SimpleNamespace(direct_to_workers=own, scheduler=SimpleNamespace(address=address))

    assert C.direct(fake(None, "tcp://127.0.0.1:8786"))
    assert C.direct(fake(None, "tcp://localhost:8786"))
    assert C.direct(fake(None, "tcp://[::1]:8786"))
    assert not C.direct(fake(None, "tcp://10.1.2.3:8786"))     # a scheduler elsewhere
    assert C.direct(fake(True, "tcp://10.1.2.3:8786"))
    assert not C.direct(fake(False, "tcp://127.0.0.1:8786"))   # the client's own word
    a = np.arange(1000.0)
    [f] = C.scatter(client, [a])
    np.testing.assert_array_equal(f.result(), a)


def test_tasks_submitted_in_one_message_run_with_their_own_arguments(client):
    from distributed import wait

    from sphgpu.distributed import tasks

    data = client.scatter([1, 2, 3], hash=False)
    key = tasks.key("add")
    futs = tasks.submit_each(client, lambda x, y, z=0: x * 10 + y + z, data, [4, 5, 6],
                             keys=[(key, i) for i in range(3)], z=100)
    wait(futs)
    assert [f.key for f in futs] == [(key, 0), (key, 1), (key, 2)]
    assert client.gather(futs) == [114, 125, 136]
    assert tasks.submit_each(client, abs, [], keys=[]) == []
    with pytest.raises(ValueError, match="one entry per key"):
        tasks.submit_each(client, abs, [1, 2], keys=[(key, 9)])
