"""The notebook progress bar of sphgpu.distributed: an ipywidgets bar fed by the futures'
completion (Dask's own notebook bar rendered empty in JupyterLab and raised at shutdown)."""

import time

import pytest

pytest.importorskip("ipywidgets")


def test_notebook_bar_counts_finished_futures(client, monkeypatch):
    import IPython.display

    from sphgpu.distributed import show_progress

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    futures = [client.submit(time.sleep, 0.05 * i, pure=False) for i in range(4)]
    show_progress(futures, notebook=True)
    (box,) = shown
    bar, label = box.children
    assert bar.max == 4
    client.gather(futures)
    deadline = time.monotonic() + 10
    while bar.value < 4 and time.monotonic() < deadline:   # callbacks run on the client's loop
        time.sleep(0.02)
    assert bar.value == 4 and label.value == "4 of 4 tasks" and bar.bar_style == "success"
